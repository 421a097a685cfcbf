"""Tests of the commands of README.md and docs/ as written, and the benchmarks' imports."""
