"""Tests of compassess_core/report."""
