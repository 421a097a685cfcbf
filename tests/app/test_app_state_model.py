"""A model-based test of the app: does it act on what it shows?

Hypothesis drives the real app (``AppTest`` on ``app.py``, a real SQLite store) through random
sequences of page switches, dataset and run switches, renames and deletes (on Home's Manage
section, and "in another tab" through the API), answers on Annotate and links opened in a new
session, and after every step checks what a person checked by hand:

* nothing raises;
* every answer is stored under the dataset, aspect and pair the page showed (the aspect box,
  the dataset picker and the pair on screen), and a Rename on Home renames the run the picker
  showed, nothing else;
* every number shown belongs to the object named in the URL: a result page's run picker shows
  the URL's run, and its caption's tau* and comparison count are that run's (each seeded run has
  its own);
* a link to a deleted run says so and shows no number of another run.

``make test`` runs a bounded number of steps; a longer run:
``COMPASSESS_STATE_MODEL_EXAMPLES=200 .venv/bin/python -m pytest tests/app/test_app_state_model.py``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule)
from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.data.candidates import load_candidates
from compassess_core.types import ComparisonResult, Judgement, PairKey
from db.store import Store
from tests.app.test_app_pages import APP, SAMPLE, settings_for
from tests.answer_buttons import answer_key, manage_key

RESULT_PAGES = ("rankings", "bias", "leaderboard", "matrix", "export", "agreement")
PAGES = ("home", "annotate", "compare", *RESULT_PAGES)
EXAMPLES = int(os.environ.get("COMPASSESS_STATE_MODEL_EXAMPLES", "4"))
STEPS = int(os.environ.get("COMPASSESS_STATE_MODEL_STEPS", "14"))


def _seed(url: str) -> None:
    """Two datasets (the sample, and the sample with other context ids), and three runs whose
    p differ, so each has its own tau* (and comparison count) to recognise it by."""
    store = Store(url)
    sample = load_candidates(SAMPLE, name="sample_summeval")
    other_csv = SAMPLE.read_text(encoding="utf-8")
    for k in range(3):
        other_csv = other_csv.replace(f"A{k},", f"B{k},")
    other = load_candidates(other_csv.encode(), name="other_articles")
    ids = [store.save_dataset(sample), store.save_dataset(other)]
    for k, (dataset_id, dataset, name) in enumerate([(ids[0], sample, "run-a"),
                                                     (ids[0], sample, "run-b"),
                                                     (ids[1], other, "run-c")]):
        settings = settings_for(dataset.name, seed=k)
        run_id = store.create_run(name, dataset_id, settings.to_dict())
        results = []
        for c, ctx in enumerate(dataset.contexts[: 3 - k]):  # 60, 40 and 20 comparisons
            for x in ctx.candidates:
                for y in ctx.candidates:
                    if x is not y:
                        better = x.scores["coherence"] > y.scores["coherence"]
                        p = (0.9 - 0.1 * k) if better else 0.55
                        results.append(ComparisonResult(
                            PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                            Judgement(p, float(np.log(0.6 * p)), float(np.log(0.6 * (1 - p))),
                                      0.6), f"h-{k}-{ctx.context_id}-{x.candidate_id}-"
                                            f"{y.candidate_id}"))
        store.add_results(run_id, "comparative", results)
        store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    store.close()


def _param(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def _widget(widgets, key: str):
    return next((w for w in widgets if w.key == key), None)


def _answer_button(at, key: str):
    """The answer button ``key`` on the pair shown (keyed by the pair too), or None."""
    return next((b for b in at.button if answer_key(b.key) == key), None)


class AppActsOnWhatItShows(RuleBasedStateMachine):
    """The app under random use, beside a model of the store: the runs that exist (id -> name)
    and those deleted."""

    @initialize()
    def open_app(self) -> None:
        self.folder = tempfile.TemporaryDirectory()
        self.url = f"sqlite:///{Path(self.folder.name) / 'compassess.db'}"
        os.environ["COMPASSESS_DATABASE_URL"] = self.url
        os.environ["COMPASSESS_HOME"] = str(Path(self.folder.name) / "home")
        _seed(self.url)
        self.store = api.open_store(self.url)
        self.runs = {r.id: r.name for r in self.store.list_runs()}
        self.deleted: set[int] = set()
        self.renames = 0
        self.at = AppTest.from_file(APP, default_timeout=60).run()
        self.page = "home"

    def teardown(self) -> None:
        self.store.close()
        self.folder.cleanup()

    # ------------------------------------------------------------------------------- moving

    @rule()
    def rerun(self) -> None:
        """The next interaction with the page as it is (after another tab changed the store)."""
        self.at.run()

    @rule(page=st.sampled_from(PAGES))
    def switch_page(self, page: str) -> None:
        self.at.switch_page(f"pages/{page}.py").run()
        self.page = page

    @rule(data=st.data())
    def choose_dataset(self, data) -> None:
        picker = _widget(self.at.sidebar.selectbox, "dataset_pick_w")
        if picker is None or not picker.options:
            return
        ids = [d.id for d in self.store.list_datasets()]
        picker.set_value(data.draw(st.sampled_from(ids))).run()

    @rule(data=st.data())
    def choose_run(self, data) -> None:
        picker = _widget(self.at.sidebar.selectbox, "run_pick_w")
        if picker is None:
            return
        offered = [i for i in self.runs if picker.format_func(i) is not None
                   and any(picker.format_func(i) == o for o in picker.options)]
        if offered:
            picker.set_value(data.draw(st.sampled_from(offered))).run()

    # ----------------------------------------------------------------------------- changing

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def rename_in_another_tab(self, data) -> None:
        run_id = data.draw(st.sampled_from(sorted(self.runs)))
        self.renames += 1
        new = f"renamed-{self.renames}"
        self.store.rename_run(run_id, new)
        self.runs[run_id] = new

    @precondition(lambda self: len(self.runs) > 1)
    @rule(data=st.data())
    def delete_in_another_tab(self, data) -> None:
        run_id = data.draw(st.sampled_from(sorted(self.runs)))
        self.store.delete_run(run_id)
        del self.runs[run_id]
        self.deleted.add(run_id)

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def rename_on_home(self, data) -> None:
        self.at.switch_page("pages/home.py").run()
        self.page = "home"
        kind = _widget(self.at.radio, "manage_kind")
        if kind.value != "run":
            kind.set_value("run").run()
        picker = _widget(self.at.selectbox, "manage_target_run")
        run_id = data.draw(st.sampled_from(sorted(self.runs)))
        picker.set_value(run_id).run()
        self.renames += 1
        new = f"home-renamed-{self.renames}"
        _widget(self.at.text_input, manage_key(self.at, "run", run_id, "new_name")).input(new)
        next(b for b in self.at.button if b.label == "Rename").click().run()
        assert not self.at.exception, self.at.exception
        stored = {r.id: r.name for r in self.store.list_runs()}
        # exactly the run the picker showed was renamed; every other run kept its name
        assert stored == {**self.runs, run_id: new}, (stored, self.runs, run_id)
        self.runs[run_id] = new

    @rule(choice=st.sampled_from(["answer_a", "answer_b", "answer_tie", "answer_skip"]))
    def answer(self, choice: str) -> None:
        if self.page != "annotate" or _answer_button(self.at, choice) is None:
            return
        dataset_id = _widget(self.at.sidebar.selectbox, "dataset_pick_w").value
        aspect = _widget(self.at.sidebar.selectbox, f"aspect_w_{dataset_id}").value
        shown = self.at.session_state["annotate_current"]
        before = len(self.store.human_labels(dataset_id))
        _answer_button(self.at, choice).click().run()
        labels = self.store.human_labels(dataset_id)
        if len(labels) > before:  # stored: under what the page showed
            newest = labels.sort_values("id").iloc[-1]
            assert newest["aspect"] == aspect
            assert (newest["context_id"], newest["candidate_left"], newest["candidate_right"]) \
                == (shown["context_id"], shown["left"], shown["right"])
        else:
            assert self.at.error or "Not saved" in " ".join(str(e.value) for e in self.at.info) \
                or "already judged" in " ".join(str(e.value) for e in self.at.info), \
                "an answer was neither stored nor refused with a message"

    @rule(data=st.data(), page=st.sampled_from(RESULT_PAGES))
    def open_a_link(self, data, page: str) -> None:
        """A link to any run that ever existed, opened in a new session (a bookmark, a shared
        URL): an existing run is shown, a deleted one is said to be gone."""
        run_id = data.draw(st.sampled_from(sorted(set(self.runs) | self.deleted)))
        self.at = AppTest.from_file(APP, default_timeout=60)
        self.at.query_params["run"] = str(run_id)
        self.at.run()
        self.at.switch_page(f"pages/{page}.py").run()
        self.page = page
        assert not self.at.exception, self.at.exception
        picker = _widget(self.at.sidebar.selectbox, "run_pick_w")
        if run_id in self.deleted:
            assert "is not in the store" in " ".join(w.value for w in self.at.warning)
            assert picker is None or picker.value is None
            assert not self.at.metric, "a deleted run's link shows numbers"
        else:
            assert picker is not None and picker.value == run_id

    # ----------------------------------------------------------------------------- checking

    @invariant()
    def nothing_raised(self) -> None:
        assert not self.at.exception, self.at.exception

    @invariant()
    def numbers_belong_to_the_run_in_the_url(self) -> None:
        if self.page not in RESULT_PAGES:
            return
        picker = _widget(self.at.sidebar.selectbox, "run_pick_w")
        if picker is None or picker.value is None or picker.value in self.deleted:
            return  # (a run deleted in another tab since this page was drawn: until it reruns)
        assert _param(self.at, "run") == str(picker.value)
        run = self.store.get_run(picker.value)
        assert run.name == self.runs[picker.value]
        caption = " ".join(c.value for c in self.at.sidebar.caption)
        found = re.search(r"global tau\* = ([0-9.]+) on ([0-9,]+) comparisons", caption)
        if found:
            assert float(found.group(1)) == pytest.approx(run.tau("balanced"), abs=1e-4)
            assert int(found.group(2).replace(",", "")) == run.n_comparisons

    @invariant()
    def the_aspect_shown_is_the_aspect_used(self) -> None:
        if self.page != "annotate":
            return
        picker = _widget(self.at.sidebar.selectbox, "dataset_pick_w")
        if picker is None or picker.value is None:
            return
        box = _widget(self.at.sidebar.selectbox, f"aspect_w_{picker.value}")
        if box is not None:
            assert _param(self.at, "aspect") == box.value
            assert _param(self.at, "dataset") == str(picker.value)


AppActsOnWhatItShows.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_the_app_acts_on_what_it_shows = AppActsOnWhatItShows.TestCase
