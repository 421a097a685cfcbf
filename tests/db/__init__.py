"""Tests of the store (db/): the SQL schema and queries on a real SQLite file."""
