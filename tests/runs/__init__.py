"""Tests of compassess_core/runs."""
