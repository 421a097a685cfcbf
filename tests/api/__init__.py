"""Tests of the Python API, its jobs and the worker (compassess_core/api, compassess_core/worker.py)."""
