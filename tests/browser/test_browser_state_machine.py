"""A randomised walk through Annotate in chromium: every stored answer is what the page showed
when its key was pressed.

A seeded sequence of steps, each one of: switch the sidebar's dataset, switch the LLM run, press
an answer key (0.05 s or 0.3 s after the step before, faster than a person and a fast one, while
the app may still redraw; or once the page is at rest, what a person at a usual pace sees),
rename a dataset or a run (in "another tab": through the API), delete a run (another one is
judged by the fake judge in its place), open a link (``/annotate?run=N`` or ``?dataset=N``, also
to a deleted run). After every key press the store is checked: at most one new row, and that row
is the dataset, aspect, context and left/right pair the page showed when the key was pressed; a
press that stores nothing must say so on the page. When a run is shown in the LLM-run box, the
aspect asked about is that run's.

``COMPASSESS_BROWSER_STEPS`` sets the number of steps (200 by default, what CI runs) and
``COMPASSESS_BROWSER_SEED`` the seed (a failure prints both, to replay it). One server and one
browser for the module (``tests/browser_walk.py``). Skipped when ``/usr/bin/chromium`` is absent,
unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.browser.test_browser import (at_rest, pause_as_a_person,  # noqa: F401, I001 - first: skips
                          playwright_api)
from tests.browser_walk import (annotate_world, Ledger, Reruns, Screen, blur, fake_judge_run, keys_heard,
                          pick_one_of, press_and_check)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STEPS = int(os.environ.get("COMPASSESS_BROWSER_STEPS", "200"))
SEED = int(os.environ.get("COMPASSESS_BROWSER_SEED", "20261127"))
#: When the key is pressed after the step before: 0.05 s or 0.3 s later (test input: a pace
#: faster than a person's, the app may still be redrawing, which is the point), or once the page
#: is at rest (Streamlit idle, nothing greyed, steady: what a person at a usual pace sees).
AT_REST = "at rest"
PACES = (0.05, 0.3, AT_REST)
ASPECTS = ("coherence", "overall", "engagingness", "fluency")
#: How often each step is drawn.
WEIGHTS = dict(press=10, switch_dataset=3, switch_run=2, rename=1, delete=1, open_link=2)


@pytest.fixture(scope="module")
def world(tmp_path_factory, chromium_browser):
    with annotate_world(tmp_path_factory.mktemp("annotate_walk"), chromium_browser) as shared:
        yield shared


class Walk:
    def __init__(self, world, rng: random.Random) -> None:
        self.world, self.rng = world, rng
        self.page = world["browser"].new_page(viewport={"width": 1400, "height": 1300})
        self.reruns = Reruns(self.page)
        self.ledger = Ledger(world["db_url"], world["datasets"])
        self.ledger.new_rows()
        self.store = self.ledger.store
        self.names = {v: k for k, v in world["datasets"].items()}  # dataset id -> name now
        self.run_ids = set(world["runs"].values())
        self.gone_runs: set[int] = set()
        self.serial = 0
        self.presses = self.stored = 0
        self.log: list[str] = []
        self._runs: dict | None = None   # the store's runs by name (only the walk changes them)

    # ---------------------------------------------------------------------------- helpers

    def fresh(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}-w{self.serial}"

    def idle(self) -> None:
        self.reruns.wait_idle()

    def open(self, path: str) -> None:
        n = self.reruns.sent
        self.page.goto(f"{self.world['url']}{path}")
        assert self.reruns.wait_sent(n), f"{path} never ran"
        self.idle()
        if Screen.read(self.page).has_pair:
            keys_heard(self.page)   # a page loaded in the tab: its scripts load first

    def check_run_aspect(self) -> None:
        """With a run in the LLM-run box, the aspect asked about is that run's."""
        now = Screen.read(self.page)
        if not now.run or now.run == "(none)" or not now.has_pair:
            return
        if self._runs is None:
            self._runs = {r.name: r for r in self.store.list_runs()}
        runs = self._runs
        if now.run in runs:
            assert now.aspect == runs[now.run].settings.aspect, (
                f"the page shows run {now.run} ({runs[now.run].settings.aspect}) but asks "
                f"about {now.aspect}")

    # ------------------------------------------------------------------------------ steps

    def switch_dataset(self) -> None:
        self.idle()
        # What the box offers (a dataset renamed in another tab keeps its old name here until
        # the page runs again).
        choice = pick_one_of(self.page, "Dataset", self.rng.choice)
        blur(self.page)
        self.log.append(f"dataset {choice}")

    def switch_run(self) -> None:
        self.idle()
        if not Screen.read(self.page).run:
            return
        choice = pick_one_of(self.page, "LLM run", self.rng.choice)
        blur(self.page)
        self.log.append(f"run {choice}")

    def press(self) -> None:
        pace = self.rng.choice(PACES)
        if pace == AT_REST:
            self.idle()
            at_rest(self.page)
        else:
            pause_as_a_person(self.page, pace)
        if not Screen.read(self.page).has_pair:
            self.idle()
            if not Screen.read(self.page).has_pair:
                return   # nothing to answer (every pair judged, or a link to nothing)
            keys_heard(self.page)
        letter = self.rng.choice("ABTS")
        _, stored = press_and_check(self.page, self.reruns, self.ledger, letter)
        self.presses += 1
        self.stored += len(stored)
        when = pace if pace == AT_REST else f"after {pace} s"
        self.log.append(f"press {letter} {when}: {'stored' if stored else 'refused'}")
        self.check_run_aspect()

    def rename(self) -> None:
        self._runs = None
        if self.rng.random() < 0.5:
            ds_id = self.rng.choice(sorted(self.names))
            new = self.fresh(self.names[ds_id].split("-w")[0])
            self.store.rename_dataset(ds_id, new)
            self.names[ds_id] = new
            self.ledger.renamed(ds_id, new)
            self.log.append(f"rename dataset {ds_id} to {new}")
        else:
            run_id = self.rng.choice(sorted(self.run_ids))
            new = self.fresh(self.store.get_run(run_id).name.split("-w")[0])
            self.store.rename_run(run_id, new)
            self.log.append(f"rename run {run_id} to {new}")

    def delete(self) -> None:
        self._runs = None
        if len(self.run_ids) > 2:
            run_id = self.rng.choice(sorted(self.run_ids))
            self.store.delete_run(run_id)
            self.run_ids.discard(run_id)
            self.gone_runs.add(run_id)
            self.log.append(f"delete run {run_id}")
        ds_id = self.rng.choice(sorted(self.names))
        aspect = self.rng.choice(ASPECTS)
        new = fake_judge_run(self.world["db_url"], ds_id, aspect, self.fresh(f"fake-{aspect}"),
                             seed=self.serial)
        self.run_ids.add(new)
        self.log.append(f"new run {new} ({aspect}) on dataset {ds_id}")

    def open_link(self) -> None:
        if self.rng.random() < 0.7:
            run_id = self.rng.choice(sorted(self.run_ids | self.gone_runs))
            path = f"/annotate?run={run_id}"
        else:
            path = f"/annotate?dataset={self.rng.choice(sorted(self.names))}"
        self.open(path)
        self.log.append(f"open {path}")
        self.check_run_aspect()


def test_random_walk_stores_only_what_the_page_showed(world):
    rng = random.Random(SEED)
    walk = Walk(world, rng)
    walk.open(f"/annotate?run={world['runs']['sample-coh-fakejudge']}")
    steps, weights = zip(*WEIGHTS.items())
    try:
        for k in range(STEPS):
            getattr(walk, rng.choices(steps, weights)[0])()
    except AssertionError as e:
        raise AssertionError(f"step {k + 1} of {STEPS} (seed {SEED}); the steps before: "
                             f"{walk.log[-8:]}\n{e}") from None
    finally:
        walk.page.close()
    # The walk exercised what it is about: answers stored and answers refused.
    assert walk.presses >= STEPS // 4 and walk.stored >= 1, (walk.presses, walk.stored)
    assert len(walk.ledger.checked) == walk.stored
