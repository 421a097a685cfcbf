"""CompAssess: the Streamlit audit app (``streamlit run app.py`` or ``make run``).

This file only declares the pages; each page lives in ``pages/``. It must never compute anything or
touch the database itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app.py` from a fresh clone works even before `pip install -e .`.
ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

st.set_page_config(page_title="CompAssess", page_icon=":material/compare_arrows:", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:"),
    st.Page("pages/run.py", title="Run", icon=":material/play_arrow:"),
    st.Page("pages/rankings.py", title="Rankings", icon=":material/leaderboard:"),
    st.Page("pages/scores.py", title="Scores", icon=":material/speed:"),
    st.Page("pages/matrix.py", title="Matrix", icon=":material/grid_on:"),
    st.Page("pages/bias.py", title="Bias", icon=":material/balance:"),
    st.Page("pages/annotate.py", title="Annotate", icon=":material/rate_review:"),
    st.Page("pages/agreement.py", title="Agreement", icon=":material/handshake:"),
    st.Page("pages/export.py", title="Export", icon=":material/download:"),
]

# Tells pages/_common.ensure_app_navigation that this run came through the navigation.
st.session_state["_compassess_via_app"] = True
st.navigation(PAGES).run()
