"""Tests of the command line (compassess_core/cli)."""
