"""One Chromium per browser test module, shared by its tests: every test opens its pages in it,
each page in a context of its own (its own cookies, so its own Streamlit session).

Playwright and its Chromium stop when the module ends: while Playwright's sync API is started it
keeps an asyncio loop marked running in the worker's main thread, so a later test of another
module on the same worker that calls ``asyncio.run`` (the sign-in guard's ASGI tests) would fail
with "cannot be called from a running event loop". A Chromium that died within a module is
started again for its next test.
"""

from __future__ import annotations

import pytest


class _Chromium:
    """Playwright and the Chromium it drives, started on first use."""

    def __init__(self) -> None:
        self._pw = self._manager = self._browser = None

    def get(self):
        from tests.browser.test_browser import CHROMIUM, CHROMIUM_ARGS, playwright_api
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self._pw is None:
            self._manager = playwright_api.sync_playwright()
            self._pw = self._manager.start()
        self._browser = self._pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        return self._browser

    def close_contexts(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            for context in self._browser.contexts:
                context.close()

    def stop(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            self._browser.close()
        if self._pw is not None:
            self._pw.stop()
        self._pw = self._browser = None


@pytest.fixture(scope="session")
def _session_chromium():
    chromium = _Chromium()
    yield chromium
    chromium.stop()


@pytest.fixture(scope="module")
def chromium_browser(_session_chromium):
    """The module's Chromium; the contexts (pages, sessions) the module opened are closed after
    it, and Playwright is stopped."""
    yield _session_chromium.get()
    _session_chromium.close_contexts()
    _session_chromium.stop()   # no running asyncio loop left behind for the next module's tests


@pytest.fixture
def chromium(chromium_browser):
    """The process's Chromium; the contexts (and so the pages and sessions) a test opened are
    closed after it."""
    yield chromium_browser
    for context in chromium_browser.contexts:
        context.close()
