"""What a walk of the app as a new user found, each checked on the real app (AppTest) and a
real SQLite store: a tuning's runs listed apart from a person's runs and left out of an aspect's
count of runs."""

from __future__ import annotations

from compassess_core import api
from compassess_core.tuning import Wording
from db.store import Store
from test_app_pages import SAMPLE, app_env, open_page, seed_run, settings_for  # noqa: F401


def _tuning_with_a_run(db_url: str, dataset_id: int) -> int:
    """A tuning ``tz`` whose wording ``w1`` has its run ``tune-tz-w1`` (completed); its id."""
    store = api.open_store(db_url)
    tuning = store.create_tuning(dataset_id, aspect="coherence", name="tz", contexts=2)
    Store(db_url).set_tuning_wordings(tuning.id, [Wording(
        key="w1", text="{context} {a} {b} Which is more {aspect}, A or B?", noun="summary",
        origin="library", label="t1").to_dict()])
    run_id = Store(db_url).create_run("tune-tz-w1", dataset_id,
                                      settings_for("sample_summeval", seed=7).to_dict())
    Store(db_url).set_run_status(run_id, "completed", done=0, total=0)
    return run_id


def test_a_tunings_runs_are_listed_apart_and_not_counted_as_the_aspects_runs(app_env):
    _, dataset_id, run_id = seed_run(app_env)
    tuned = _tuning_with_a_run(app_env, dataset_id)
    store = api.open_store(app_env)
    assert store.tuning_runs() == {tuned: "tz"}
    coherence = next(a for a in store.aspects(dataset_id) if a.aspect == "coherence")
    assert coherence.n_runs == 1 and "1 run" in coherence.evidence
    at = open_page("home")
    own, by_tuning = [d.value for d in at.dataframe if "status" in d.value.columns]
    assert list(own["name"]) == ["hand-run"]
    assert list(by_tuning["name"]) == ["tune-tz-w1"] and list(by_tuning["tuning"]) == ["tz"]
    assert any(e.label.startswith("Runs made by tunings (1") for e in at.expander)


def test_explain_states_its_time_before_it_starts(app_env):
    """The comparison view says how long asking for the judge's reasons takes before the
    button is pressed: the requests of both orders read, and 150 new tokens written for each,
    at the rate the Run page's estimate uses."""
    from compassess_core.explanations import explanation_request
    from tests.fakes import FakeWritingJudge
    judge = FakeWritingJudge()
    store = api.open_store(app_env)
    run = store.run(SAMPLE, aspect="coherence", contexts=1, judge=judge, progress=False,
                    name="explained")
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    took = run.explain_estimate(ctx.context_id, a, b)
    # by hand: each order's request in characters at the estimate's characters per token, and
    # 150 written tokens each, at its token rate
    chars = sum(len(explanation_request(run.prompt(ctx.context_id, x, y),
                                        float(run.comparison(ctx.context_id, x, y)["p"])))
                for x, y in ((a, b), (b, a)))
    tokens = chars / took.chars_per_token + 2 * 150
    assert abs(took.tokens - tokens) < 1e-6
    assert abs(took.seconds - tokens / took.token_rate) < 1e-9
    at = open_page("matrix")
    at.selectbox(key="pick_first").set_value(a).run()
    at.selectbox(key="pick_second").set_value(b).run()
    at.button(key="open_pick").click().run()
    assert not at.exception, at.exception
    shown = "\n".join(c.value for c in at.caption)
    assert f"about {took.tokens:,.0f} tokens read and written" in shown
    assert "Time: at least about" in shown
    run.explain(ctx.context_id, a, b, judge=judge)   # stored: nothing left to time
    assert run.explain_estimate(ctx.context_id, a, b).tokens == 0


def test_an_error_making_the_report_shows_at_once_under_its_button(app_env, monkeypatch):
    """The audit report is made in the page's run when asked: an error shows there and then,
    in plain words, and no download of a file that was never made is offered."""
    from compassess_core.errors import InputError
    seed_run(app_env)

    def broken(self, **kw):
        raise InputError("the store could not be read (disk full)")
    monkeypatch.setattr(api.Run, "report_html", broken)
    at = open_page("export")
    assert "Download the audit report (HTML)" not in [b.proto.label for b in
                                                        at.get("download_button")]
    [prepare] = [b for b in at.button if b.label == "Prepare the audit report"]
    prepare.click().run()
    assert not at.exception, at.exception
    assert any("Could not prepare the audit report: the store could not be read (disk full)"
               in e.value for e in at.error)
    assert "Download the audit report (HTML)" not in [b.proto.label for b in
                                                        at.get("download_button")]
    # every download on the page downloads without a rerun, so its file stays the one shown
    assert all(b.proto.ignore_rerun for b in at.get("download_button"))
