"""Tests of compassess_core/stats."""
