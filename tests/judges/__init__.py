"""Tests of compassess_core/judges."""
