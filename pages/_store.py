"""The app's one way into its data: the Python API's store (``compassess_core.api.Store``) on the
app's database, opened once per process.

Every page, the sign-in gate and the page helpers read and write through this handle, as the CLI
and a notebook do, so the three show the same numbers by construction. A module of its own so that
the gate (``pages/_auth.py``) and the helpers (``pages/_common.py``) reach it without importing
each other. No page imports ``db``.
"""

from __future__ import annotations

import os

import streamlit as st

from compassess_core import api


@st.cache_resource(show_spinner=False)
def _open_api_store(database_url: str, home: str) -> api.Store:
    # Keyed by the variables that choose the database, which open_store(None) reads.
    return api.open_store(database_url or None)


def api_store() -> api.Store:
    """The Python API's store on the app's database: ``COMPASSESS_DATABASE_URL``, else the
    SQLite file in ``COMPASSESS_HOME`` (what ``compassess`` opens without ``--db``)."""
    return _open_api_store(os.environ.get("COMPASSESS_DATABASE_URL", "").strip(),
                           os.environ.get("COMPASSESS_HOME", "").strip())


def db_url() -> str:
    """The app's database URL (a cache key of the pages; it may hold a password: never shown)."""
    return api_store().url
