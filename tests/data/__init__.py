"""Tests of compassess_core/data."""
