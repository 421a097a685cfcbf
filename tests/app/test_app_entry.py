"""app.py as ``streamlit run app.py`` loads it (no browser, no server).

Streamlit's ASGI app discovery must find ``app = st.App(...)`` in app.py, so that the server imports
app.py once, before its first session, and that import must leave Streamlit's legacy ``pages/``
folder mode (the reason is in app.py's docstring). The browser tests check the effect: deep links as
the first requests of a fresh server (``tests/browser/test_browser_annotate.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_streamlit_run_serves_app_py_as_an_asgi_app():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"


def test_the_servers_import_of_app_py_leaves_the_legacy_pages_folder_mode():
    # A fresh interpreter, importing app.py the way `streamlit run` does (uvicorn's "app:app").
    code = ("import streamlit as st\n"
            "from streamlit.runtime.pages_manager import PagesManager\n"
            "assert PagesManager.uses_pages_directory is None\n"
            "import app\n"
            "assert isinstance(app.app, st.App), app.app\n"
            "assert not hasattr(app, 'PAGES')  # the page declarations are for session runs only\n"
            "print(PagesManager.uses_pages_directory)\n")
    # Imported outside `streamlit run`, the app cannot see where it is served: it serves without
    # sign-in only when told that anonymous access is intended.
    env = dict(os.environ, PYTHONPATH=str(ROOT), COMPASSESS_ALLOW_ANONYMOUS="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
