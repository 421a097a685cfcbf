"""Annotate in chromium at a person's pace and faster: every answer is stored on the pair, dataset
and aspect the page showed when the key was pressed, or not at all (and the page says so).

The sequences a walk through the app found wrong: keys pressed 0.3 s and 1 s after switching the
sidebar's dataset (answers went to the previous dataset's pair, or under another dataset's aspect,
or nowhere with nothing said), and a run's aspect ignored (a run of engagingness asked about
coherence and stored its labels there). Each step asserts the store.

One server and one browser for the module (``tests/browser_walk.py``); a real SQLite store with
three datasets and runs by a fake judge. Skipped when ``/usr/bin/chromium`` is absent, unless
``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import pytest

from test_browser import playwright_api  # noqa: F401, I001 - first: skips
from browser_walk import (annotate_world, Ledger, Reruns, Screen, blur, keys_heard, pick_option,
                          press_and_check)

pytestmark = pytest.mark.browser

#: A person's pace between a change and a key press (not a wait for state: the app may still
#: be redrawing, which is the point).
PACES = (0.3, 1.0)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with annotate_world(tmp_path_factory.mktemp("annotate_switch")) as shared:
        yield shared


@pytest.fixture
def walk(world):
    """A fresh tab (a fresh session) and a fresh ledger of the store's rows."""
    page = world["browser"].new_page(viewport={"width": 1400, "height": 1300})
    reruns = Reruns(page)
    ledger = Ledger(world["db_url"], world["datasets"])
    ledger.new_rows()  # what earlier tests stored is not this test's
    yield page, reruns, ledger
    page.close()


def open_page(page, reruns: Reruns, url: str, keys: bool = True) -> Screen:
    n = reruns.sent
    page.goto(url)
    assert reruns.wait_sent(n, 60), f"{url} never ran"
    reruns.wait_idle()
    page.locator('[data-testid="stSelectbox"]').first.wait_for()
    if keys:  # a page loaded in the tab: its scripts first (not the change under test)
        keys_heard(page)
    return Screen.read(page)


def settled(page, reruns: Reruns) -> Screen:
    reruns.wait_idle()
    return Screen.read(page)


def switch_dataset(page, reruns: Reruns, name: str, pace: float) -> None:
    """Pick ``name`` in the sidebar's Dataset box, then wait ``pace`` s as a person would."""
    reruns.wait_idle()
    pick_option(page, "Dataset", f"{name} (")
    blur(page)
    page.wait_for_timeout(int(pace * 1000))


@pytest.mark.parametrize("pace", PACES)
def test_keys_after_a_dataset_switch_go_to_the_pair_shown_or_nowhere(walk, world, pace):
    page, reruns, ledger = walk
    coherence_run = world["runs"]["sample-coh-fakejudge"]
    shown = open_page(page, reruns, f"{world['url']}/annotate?run={coherence_run}")
    assert (shown.dataset, shown.aspect) == ("sample_summeval", "coherence"), shown
    assert shown.has_pair, shown

    # Dataset = instruct_user, press A.
    switch_dataset(page, reruns, "instruct_user", pace)
    press_and_check(page, reruns, ledger, "A")
    now = settled(page, reruns)
    assert (now.dataset, now.aspect) == ("instruct_user", "overall"), now

    # Dataset = sample_summeval, press B, then T: both under the sample's run aspect.
    switch_dataset(page, reruns, "sample_summeval", pace)
    press_and_check(page, reruns, ledger, "B")
    now = settled(page, reruns)
    assert (now.dataset, now.aspect) == ("sample_summeval", "coherence"), now
    page.wait_for_timeout(int(pace * 1000))
    _, stored = press_and_check(page, reruns, ledger, "T")
    assert stored and stored[0]["aspect"] == "coherence", stored  # settled: stored, as shown

    # Dataset = instruct_user, press A: never on the sample's pair.
    switch_dataset(page, reruns, "instruct_user", pace)
    press_and_check(page, reruns, ledger, "A")
    page.wait_for_timeout(int(pace * 1000))
    _, stored = press_and_check(page, reruns, ledger, "B")
    assert stored and stored[0]["dataset_id"] == world["datasets"]["instruct_user"], stored
    assert {r["aspect"] for r in ledger.checked} <= {"coherence", "overall"}, ledger.checked


@pytest.mark.parametrize("pace", PACES)
def test_annotate_asks_about_and_stores_under_the_runs_aspect(walk, world, pace):
    page, reruns, ledger = walk
    runs, hanna = world["runs"], world["datasets"]["hanna_user"]

    # A link to the engagingness run: that run, its aspect, its question.
    shown = open_page(page, reruns, f"{world['url']}/annotate?run={runs['hanna-eng-fakejudge']}")
    assert (shown.dataset, shown.aspect) == ("hanna_user", "engagingness"), shown
    assert shown.run == "hanna-eng-fakejudge" and shown.question == "Which text is more engaging?"
    page.wait_for_timeout(int(pace * 1000))
    _, stored = press_and_check(page, reruns, ledger, "A")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "engagingness")]

    # The coherence run of the same dataset in the link: coherence, even though the newest run
    # of the dataset judges engagingness.
    shown = open_page(page, reruns, f"{world['url']}/annotate?run={runs['hanna-coh-fakejudge']}")
    assert (shown.aspect, shown.run) == ("coherence", "hanna-coh-fakejudge"), shown
    assert shown.question == "Which text is more coherent?"
    page.wait_for_timeout(int(pace * 1000))
    _, stored = press_and_check(page, reruns, ledger, "B")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "coherence")]

    # The LLM run picked on the page: the aspect follows it, and so do the answers.
    reruns.wait_idle()
    pick_option(page, "LLM run", "hanna-eng-fakejudge")
    blur(page)
    page.wait_for_timeout(int(pace * 1000))
    press_and_check(page, reruns, ledger, "T")
    now = settled(page, reruns)
    assert (now.aspect, now.run) == ("engagingness", "hanna-eng-fakejudge"), now
    press_and_check(page, reruns, ledger, "A")
    assert {r["aspect"] for r in ledger.checked} == {"engagingness", "coherence"}

    # From Rankings of the engagingness run to Annotate: that run's aspect.
    open_page(page, reruns, f"{world['url']}/rankings?run={runs['hanna-eng-fakejudge']}",
              keys=False)
    n = reruns.sent
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Annotate", exact=True).click()
    assert reruns.wait_sent(n)
    reruns.wait_idle()  # a page change, not the change under test: the pair is there first
    keys_heard(page)
    page.wait_for_timeout(int(pace * 1000))
    press_and_check(page, reruns, ledger, "B")
    now = settled(page, reruns)
    assert (now.dataset, now.aspect, now.question) == (
        "hanna_user", "engagingness", "Which text is more engaging?"), now
    _, stored = press_and_check(page, reruns, ledger, "A")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "engagingness")]
