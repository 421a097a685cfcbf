"""Annotate in chromium at a person's pace and faster: every answer is stored on the pair, dataset
and aspect the page showed when the key was pressed, or not at all (and the page says so).

The sequences a walk through the app found wrong (and the mouse's: a click on the answer button
of the pair the browser still shows, while the app has drawn the next dataset's pair): keys pressed 0.3 s and 1 s after switching the
sidebar's dataset (answers went to the previous dataset's pair, or under another dataset's aspect,
or nowhere with nothing said), and a run's aspect ignored (a run of engagingness asked about
coherence and stored its labels there). Each step asserts the store.

One server and one browser for the module (``tests/browser_walk.py``); a real SQLite store with
three datasets and runs by a fake judge. Skipped when ``/usr/bin/chromium`` is absent, unless
``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import pytest

from tests.browser.test_browser import (STATE_WAIT_MS, at_rest,  # noqa: F401, I001 - first: skips
                                        pause_as_a_person, playwright_api)
from tests.browser_walk import (annotate_world, Ledger, Reruns, Screen, SlowLink, blur, keys_heard,
                          pick_option, press_and_check)

pytestmark = pytest.mark.browser

#: A person's pace between a change and a key press (not a wait for state: the app may still
#: be redrawing, which is the point).
PACES = (0.3, 1.0)


@pytest.fixture(scope="module")
def world(tmp_path_factory, chromium_browser):
    with annotate_world(tmp_path_factory.mktemp("annotate_switch"), chromium_browser) as shared:
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
    assert reruns.wait_sent(n), f"{url} never ran"
    reruns.wait_idle()
    page.locator('[data-testid="stSelectbox"]').first.wait_for()
    if keys:  # a page loaded in the tab: its scripts first (not the change under test)
        keys_heard(page)
    return Screen.read(page)


def settled(page, reruns: Reruns) -> Screen:
    """What the page shows once the app has run every rerun asked for and the browser has drawn
    it: the run's last message can arrive a frame before React draws it (a click's next pair),
    so the page is also waited at rest (nothing greyed, no script running, steady)."""
    reruns.wait_idle()
    at_rest(page)
    return Screen.read(page)


def switch_dataset(page, reruns: Reruns, name: str, pace: float) -> None:
    """Pick ``name`` in the sidebar's Dataset box, then wait ``pace`` s as a person would."""
    reruns.wait_idle()
    pick_option(page, "Dataset", f"{name} (")
    blur(page)
    pause_as_a_person(page, pace)


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
    pause_as_a_person(page, pace)
    _, stored = press_and_check(page, reruns, ledger, "T")
    assert stored and stored[0]["aspect"] == "coherence", stored  # settled: stored, as shown

    # Dataset = instruct_user, press A: never on the sample's pair.
    switch_dataset(page, reruns, "instruct_user", pace)
    press_and_check(page, reruns, ledger, "A")
    pause_as_a_person(page, pace)
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
    pause_as_a_person(page, pace)
    _, stored = press_and_check(page, reruns, ledger, "A")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "engagingness")]

    # The coherence run of the same dataset in the link: coherence, even though the newest run
    # of the dataset judges engagingness.
    shown = open_page(page, reruns, f"{world['url']}/annotate?run={runs['hanna-coh-fakejudge']}")
    assert (shown.aspect, shown.run) == ("coherence", "hanna-coh-fakejudge"), shown
    assert shown.question == "Which text is more coherent?"
    pause_as_a_person(page, pace)
    _, stored = press_and_check(page, reruns, ledger, "B")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "coherence")]

    # The LLM run picked on the page: the aspect follows it, and so do the answers.
    reruns.wait_idle()
    pick_option(page, "LLM run", "hanna-eng-fakejudge")
    blur(page)
    pause_as_a_person(page, pace)
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
    pause_as_a_person(page, pace)
    press_and_check(page, reruns, ledger, "B")
    now = settled(page, reruns)
    assert (now.dataset, now.aspect, now.question) == (
        "hanna_user", "engagingness", "Which text is more engaging?"), now
    _, stored = press_and_check(page, reruns, ledger, "A")
    assert [(r["dataset_id"], r["aspect"]) for r in stored] == [(hanna, "engagingness")]


def click_answer(page, reruns: Reruns, label: str) -> None:
    """Click the answer button ``label`` the browser shows now."""
    n = reruns.sent
    page.locator('[data-testid="stMain"] [data-testid="stButton"] button').filter(
        has_text=label).first.click()
    assert reruns.wait_sent(n), f"the click on {label} sent nothing"


def check_click(ledger: Ledger, shown: Screen, letter: str) -> list:
    """The store after a click on the screen ``shown``: nothing new, or one row on the pair it
    showed (its context and both texts, the winner of the button)."""
    fresh = ledger.new_rows()
    assert len(fresh) <= 1, f"one click stored {len(fresh)} rows: {fresh}"
    for row in fresh:
        wrong = ledger.matches(row, shown, letter)
        wrong = [w for w in wrong if not w.startswith("dataset ")]  # the box moves first
        ds_of_context = {ds for (ds, ctx, _), _t in ledger.text.items() if ctx == row["context_id"]}
        assert not wrong and ds_of_context == {row["dataset_id"]}, (
            f"the click on the pair {shown} stored {row}: {wrong}")
        ledger.checked.append(row)
    return fresh


@pytest.mark.parametrize("pace", PACES)
def test_a_click_after_a_dataset_switch_goes_to_the_pair_shown_or_nowhere(world, pace):
    """Annotate with the mouse: Dataset = instruct_user, then a click on "A is better" ``pace``
    s later, while the browser still shows the sample's pair (the app has drawn instruct_user's
    and the link has not brought it yet): the answer is stored on the sample's pair shown, or
    nowhere; never on instruct_user's pair that the person has not seen. Then, once the new pair
    is shown, a click stores on it."""
    page = world["browser"].new_page(viewport={"width": 1400, "height": 1300})
    link = SlowLink(page)
    reruns = Reruns(page)
    ledger = Ledger(world["db_url"], world["datasets"])
    ledger.new_rows()
    run = world["runs"]["sample-coh-fakejudge"]
    shown = open_page(page, reruns, f"{world['url']}/annotate?run={run}", keys=False)  # mouse
    assert (shown.dataset, shown.aspect) == ("sample_summeval", "coherence") and shown.has_pair

    for target, back in (("instruct_user", "sample_summeval"), ("sample_summeval", None)):
        before = settled(page, reruns)
        assert before.has_pair, before
        # The switch reaches the app; what it draws is held on the way back.
        link.hold(everything=True)
        reruns.wait_idle()
        pick_option(page, "Dataset", f"{target} (")
        blur(page)
        link.wait_held(page)
        pause_as_a_person(page, pace)
        on_screen = Screen.read(page)
        assert on_screen.contexts == before.contexts, (on_screen, before)  # the old pair
        ended = link.server_finished
        click_answer(page, reruns, "A is better")
        link.wait_app_finished(page, ended + 1)   # the click's run, its callbacks first
        link.release()
        reruns.wait_idle()
        check_click(ledger, on_screen, "A")
        # The browser draws what it was held from: the target's pair, then the person reads it.
        target_id = world["datasets"][target]
        page.wait_for_function(
            """(ids) => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdown"]')]
                 .some(e => { const t = e.innerText.trim();
                              return t.startsWith('Context ') && ids.includes(t.slice(8).trim()); })""",
            arg=sorted({ctx for (ds, ctx, _) in ledger.text if ds == target_id}), timeout=STATE_WAIT_MS)
        now = settled(page, reruns)
        assert now.dataset == target and now.has_pair, now

        # The new pair, shown: a click ``pace`` s later stores on it.
        pause_as_a_person(page, pace)
        click_answer(page, reruns, "B is better")
        reruns.wait_idle()
        stored = check_click(ledger, now, "B")
        assert stored and stored[0]["dataset_id"] == world["datasets"][target], stored
    page.close()
