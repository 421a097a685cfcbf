"""One Chromium per browser test module, shared by its tests: every test opens its pages in it,
each page in a context of its own (its own cookies, so its own Streamlit session).

Playwright and its Chromium stop when the module ends: while Playwright's sync API is started it
keeps an asyncio loop marked running in the worker's main thread, so a later test of another
module on the same worker that calls ``asyncio.run`` (the sign-in guard's ASGI tests) would fail
with "cannot be called from a running event loop".
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def chromium_browser():
    """The module's Chromium; closing it at the module's end closes the contexts (pages,
    sessions) the module opened, and Playwright stops."""
    from tests.browser.test_browser import CHROMIUM, CHROMIUM_ARGS, playwright_api
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def chromium(chromium_browser):
    """The module's Chromium; the contexts (and so the pages and sessions) a test opened are
    closed after it."""
    yield chromium_browser
    for context in chromium_browser.contexts:
        context.close()
