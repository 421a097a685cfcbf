"""Tests of compassess_core/people."""
