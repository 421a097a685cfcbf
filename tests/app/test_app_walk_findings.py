"""What a walk of the app as a new user found, each checked on the real app (AppTest) and a
real SQLite store: a tuning's runs listed apart from a person's runs and left out of an aspect's
count of runs; Explain's time stated before it starts; an error making a report shown at once;
column proposals read from the content; empty candidate texts left out only when asked."""

from __future__ import annotations

from compassess_core import api
from compassess_core.runs.tuning import Wording
from db.store import Store
from tests.app.test_app_pages import SAMPLE, app_env, open_page, seed_run, settings_for  # noqa: F401


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
    from compassess_core.runs.explanations import explanation_request
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


# ------------------------------------------------------------------ uploads: proposals, empty texts

#: A data-to-text benchmark laid out as its teams' outputs are: a triple set per id, one output
#: per team, one team's output empty (it wrote nothing for that input).
VERBALISATIONS = ("triple_id,triples,team,text\n"
                  "Id1,Alan Bean | occupation | Test pilot,ADAPT,Alan Bean was a test pilot.\n"
                  "Id1,Alan Bean | occupation | Test pilot,UPF-FORGe,Alan Bean flew as a test pilot.\n"
                  "Id1,Alan Bean | occupation | Test pilot,Baseline,\n"
                  "Id2,Rome | country | Italy,ADAPT,Rome is in Italy.\n"
                  "Id2,Rome | country | Italy,UPF-FORGe,Rome lies in Italy.\n"
                  "Id2,Rome | country | Italy,Baseline,Rome is Italy.\n")
#: Instructions with a task label and one answer per assistant.
INSTRUCTIONS = ("task,instruction,assistant,output\n"
                "writing,Write a haiku about rain in spring.,gpt-4,Soft rain on new leaves falls.\n"
                "writing,Write a haiku about rain in spring.,alpaca-7b,Rain is here today again.\n"
                "math,What is 12 times 7? Explain briefly.,gpt-4,12 times 7 is 84: 12 x 7 = 84.\n"
                "math,What is 12 times 7? Explain briefly.,alpaca-7b,It is 84.\n")


def test_the_proposals_read_ids_labels_and_texts_from_the_content():
    from compassess_core.data.candidates import read_table, suggest_column_map
    from compassess_core.data.labels import suggest_label_map
    table = read_table(VERBALISATIONS.encode(), file_label="webnlg.csv")
    assert suggest_column_map(list(table.columns), table) == {
        "context_id": "triple_id", "context": "triples", "text": "text", "system": "team",
        "candidate_id": "team"}
    table = read_table(INSTRUCTIONS.encode(), file_label="instructions.csv")
    assert suggest_column_map(list(table.columns), table) == {
        "context_id": "task", "context": "instruction", "text": "output",
        "system": "assistant", "candidate_id": "assistant"}
    # a column of short labels or ids is never proposed as a text, whatever else is missing
    table = read_table(b"item,label,who\nq1,yes,ann\nq1,no,bob\nq2,yes,ann\n", file_label="x.csv")
    mapping = suggest_column_map(list(table.columns), table)
    assert "text" not in mapping and "context" not in mapping
    assert suggest_label_map(["triple_id", "left", "right", "preferred"]) == {
        "context_id": "triple_id", "candidate_a": "left", "candidate_b": "right",
        "winner": "preferred"}


def test_empty_texts_are_problems_until_the_person_leaves_them_out(app_env):
    """A file with an empty candidate text: each is a problem naming file, row and column and
    nothing is saved; ticking the offer leaves those candidates out, the page names the rows,
    and the stored dataset's source does too."""
    from streamlit.testing.v1 import AppTest
    from tests.app.test_app_pages import APP, texts
    from tests.data.test_upload_mapping import upload
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "webnlg.csv", VERBALISATIONS)
    assert "empty text" in texts(at.error) or any(
        "empty text" in str(v) for d in at.dataframe for v in d.value.astype(str).values.ravel())
    assert "tick 'Leave out ...' above" in texts(at.error)   # the way out, said where it is
    assert not [b for b in at.button if b.label == "Save to the store"]
    [offer] = [c for c in at.checkbox if (c.key or "").startswith("drop_empty_")]
    assert "Leave out the 1 candidate(s) whose text is empty (row(s) 4 of column" in offer.label
    offer.check().run()
    assert not at.exception, at.exception
    assert "left out of the dataset: row(s) 4" in texts(at.warning)
    assert "No problem found: 2 contexts, 5 candidates" in texts(at.success)
    [b for b in at.button if b.label == "Save to the store"][0].click().run()
    [info] = Store(app_env).list_datasets()
    assert "1 candidate(s) with an empty text left out: row(s) 4" in info.source
    assert Store(app_env).load_dataset(info.id).n_candidates == 5


def test_chart_line_labels_say_where_close_lines_are():
    """A balanced tau of 0.496 beside the 0.5 line: its label says 0.496, never '= 0.5'."""
    from pages._common import line_labels
    assert line_labels([(0.5, "0.5", "k"), (0.4957, "tau*", "g"), (0.4957, "current tau", "o")]) \
        == [(0.4957, "tau* = current tau = 0.496", "g"), (0.5, "0.5", "k")]
    assert line_labels([(0.5, "0.5", "k"), (0.725, "tau*", "g"), (0.5, "current tau", "o")]) \
        == [(0.5, "0.5 = current tau", "k"), (0.725, "tau* = 0.725", "g")]


def test_a_prepared_report_replaces_its_prepare_button(app_env):
    seed_run(app_env)
    at = open_page("export")
    [prepare] = [b for b in at.button if b.label == "Prepare the audit report"]
    prepare.click().run()
    assert not at.exception, at.exception
    assert not [b for b in at.button if b.label == "Prepare the audit report"]
    assert "Download the audit report (HTML)" in [b.proto.label for b in
                                                  at.get("download_button")]


def test_the_agreement_methods_show_their_products_not_italics(app_env):
    """The chance model d1*d2/2 + t1*t2 in the Agreement page's methods: its asterisks are
    escaped, so markdown shows them instead of setting the rest of the caption in italics."""
    from tests.app.test_app_agreement import agreement_page, label_first_article
    store, dataset_id, _ = seed_run(app_env)
    label_first_article(store, dataset_id)
    at = agreement_page()
    methods = next(c.value for c in at.caption if "chance agreement" in c.value)
    assert r"d1\*d2/2 + t1\*t2" in methods and r"kappa = 2\*agreement - 1" in methods


def test_the_ranking_with_human_labels_is_best_first_in_each_context(app_env):
    from tests.app.test_app_agreement import label_first_article
    store, dataset_id, _ = seed_run(app_env)
    label_first_article(store, dataset_id)
    at = open_page("rankings")
    fused = next(d.value for d in at.dataframe if "n_votes" in d.value.columns)
    contexts = list(dict.fromkeys(fused["context_id"]))
    for ctx in contexts:
        ranks = list(fused.loc[fused["context_id"] == ctx, "rank"])
        assert ranks == sorted(ranks), (ctx, ranks)
    # contexts stay in the dataset's order, each one block
    assert [c for c in fused["context_id"]] == sorted(fused["context_id"], key=contexts.index)
