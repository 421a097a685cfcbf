"""The app's store handle: which database the pages work on, opened once per process.

A module of its own so that the sign-in gate (``pages/_auth.py``) and the page helpers
(``pages/_common.py``) can both reach the store without importing each other.
"""

from __future__ import annotations

import streamlit as st


def db_url() -> str:
    """The database the app works on (``COMPASSESS_DATABASE_URL`` or the default SQLite file)."""
    from db.store import default_database_url
    return default_database_url()


@st.cache_resource(show_spinner=False)
def _open_store(url: str):
    from db.store import Store
    return Store(url)


def store():
    return _open_store(db_url())
