"""Tests of the real app in Chromium (one server per module)."""
