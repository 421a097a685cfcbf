"""CompAssess: the Streamlit audit app (``streamlit run app.py`` or ``make run``).

This file only declares the pages; each page lives in ``pages/``. It must never compute anything or
touch the database itself. Who may see which page is ``pages/_auth.py``'s: its gate runs before the
pages are declared, so with sign-in configured an anonymous visitor gets the sign-in page and no
data on every URL, and a person gets only the pages of their role.

It is read twice, in two roles:

* ``streamlit run app.py`` finds the ``app = st.App(...)`` below (Streamlit's ASGI app discovery
  parses the file, ``streamlit/web/server/app_discovery.py``) and imports this file once as the
  module ``app``, in the server process, before the server accepts a connection. That import only
  switches off Streamlit's legacy ``pages/`` folder mode (see below), decides once whether sign-in
  is required and refuses to start with a broken sign-in configuration or without sign-in on a
  non-loopback address (``_auth.check_serving``), applies the upload limit and builds the ASGI app
  with ``_http_guard``'s middleware (localhost Host names only in local mode, no metrics
  endpoint, files and uploads behind sign-in).
* For every session Streamlit then executes this same file as ``__main__`` (as ``AppTest`` does);
  that run declares the pages with ``st.navigation``.

Why the switch must happen at import, before any session (Streamlit 1.67, pinned):
``PagesManager.__init__`` (``runtime/pages_manager.py``, when the first session is created) sets the
process-wide ``PagesManager.uses_pages_directory`` to whether a folder named ``pages/`` lies beside
the entry script, and only ``st.navigation`` (``commands/navigation.py``) sets it back to False.
While it is True, ``ScriptRunner`` (``runtime/scriptrunner/script_runner.py``, ``if
PagesManager.uses_pages_directory: _mpa_v1(...)``) does not run this file at all: ``_mpa_v1`` builds
an old-style navigation out of ``pages/*.py`` (``_common.py`` included) and runs the requested page
script bare. So on a fresh server the first deep link (``/annotate?annotator=alice``) got the bare
page without this file's navigation and layout, and so did every session that started before some
run reached ``st.navigation``. Setting the flag to False here, before the first session exists,
means no session ever takes the legacy branch.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app.py` from a fresh clone works even before `pip install -e .`.
ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The app's layout beside Streamlit's defaults (Streamlit 1.67's element names): narrower page
#: margins, so a 1024 px window shows a table's key columns, and labels of metrics that wrap
#: onto a second line instead of ending in an ellipsis; a select box's long options (a run's
#: name) wrap in its list instead of being cut.
LAYOUT_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 3rem 2rem 4rem 2rem; }
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important; }
[role="listbox"] [role="option"] { height: auto !important; min-height: 2.5rem; }
[role="listbox"] [role="option"] > div { white-space: normal !important;
  overflow-wrap: anywhere; height: auto !important; overflow: visible !important; }
</style>"""

if __name__ == "__main__":
    # A session's run (and AppTest's): who is looking, then the pages of their role, then the one
    # the URL asks for (a page outside their role does not exist for them).
    from pages import _auth

    # An emoji icon: Streamlit draws it into a data: URL. A ":material/...:" page icon would be
    # fetched from a third-party font host by every browser, telling it who uses the app.
    st.set_page_config(page_title="CompAssess", page_icon="⚖️", layout="wide")
    # Room for tables and labels at 1024 px (the app's own style, no user text): Streamlit's
    # wide layout pads the page by 5 rem a side and cuts a metric's label to one line.
    st.html(LAYOUT_CSS)
    viewer = _auth.gate()
    # The view state (dataset, run, method, tau, ...) from the link, then back into the URL:
    # every page's URL reproduces what it shows (pages/_view.py).
    from pages import _view
    _view.sync()
    PAGES = [  # (file, title, icon)
        ("pages/home.py", "Home", ":material/home:"),
        ("pages/upload.py", "Upload", ":material/upload_file:"),
        ("pages/run.py", "Run", ":material/play_arrow:"),
        ("pages/leaderboard.py", "Leaderboard", ":material/emoji_events:"),
        ("pages/rankings.py", "Rankings", ":material/leaderboard:"),
        ("pages/scores.py", "Scores", ":material/speed:"),
        ("pages/matrix.py", "Matrix", ":material/grid_on:"),
        ("pages/bias.py", "Bias", ":material/balance:"),
        ("pages/compare.py", "Compare runs", ":material/compare_arrows:"),
        ("pages/panel.py", "Panel", ":material/groups:"),
        ("pages/judge_leaderboard.py", "Judges", ":material/military_tech:"),
        ("pages/tune.py", "Tune wording", ":material/tune:"),
        ("pages/annotate.py", "Annotate", ":material/rate_review:"),
        ("pages/campaigns.py", "Campaigns", ":material/assignment:"),
        ("pages/agreement.py", "Agreement", ":material/handshake:"),
        ("pages/export.py", "Export", ":material/download:"),
        ("pages/people.py", "People", ":material/group:"),
    ]
    pages = [st.Page(path, title=title, icon=icon, default=path == "pages/home.py")
             for path, title, icon in PAGES if _auth.allowed(path, viewer)]
    if not _auth.allowed("pages/home.py", viewer):
        # No Home for this role: "/" opens their first page, which keeps its own URL (a default
        # page would only be served at "/").
        pages.insert(0, st.Page(lambda: st.switch_page(pages[1]), title="Start", url_path="start",
                                default=True, visibility="hidden"))
    # expanded: with more than ten pages Streamlit would hide the rest behind "View more".
    st.navigation(pages, expanded=True).run()
else:
    # The server's one import (`streamlit run app.py`, or `uvicorn app:app`), before any session.
    from streamlit.runtime.pages_manager import PagesManager

    from pages import _auth, _http_guard

    local = _auth.check_serving()
    _http_guard.harden_server(local)
    _http_guard.apply_upload_limit()
    PagesManager.uses_pages_directory = False
    # Local mode answers localhost Host names only; /_stcore/metrics is closed; files and uploads
    # need what the pages need (pages/_http_guard.py).
    app = st.App(__file__, middleware=_http_guard.serving_middleware())
