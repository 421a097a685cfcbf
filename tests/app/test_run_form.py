"""The Run page's form belongs to the dataset on screen, and the run it watches is the run it
shows: another dataset shows its own contexts, aspect and template (``Store.run_defaults``),
values typed for a dataset come back with it, a renamed run stays watched, and Cancel on a run
renamed since it was shown is refused. Plus the API the page plans, starts and watches runs with
(``Store.plan_run``, ``Run.start_worker``, ``Run.progress``, ``Run.worker_log``,
``Run.chat_prompt``), on a real SQLite store. The judge is never loaded, except by the test
marked ``model``, which checks the chat form against the real bundled SmolLM2.
"""

from __future__ import annotations

import sys

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.judges.models import default_model_path
from db.store import Store
from tests.app.test_app_pages import APP, SAMPLE, app_env, seed_run, settings_for, texts  # noqa: F401


def twelve_contexts() -> bytes:
    """Twelve dialogues of two responses, with human engagement scores."""
    rows = [dict(context_id=f"D{k}", context=f"Speaker 1: tell me about topic {k}.",
                 candidate_id=c, text=f"Reply {c} about topic {k}" + "!" * j,
                 engagement=j + 1)
            for k in range(12) for j, c in enumerate(("r1", "r2"))]
    return pd.DataFrame(rows).to_csv(index=False).encode()


def form(at: AppTest) -> dict:
    """What the form shows, found by label as a person reads it."""
    contexts = next(n for n in at.number_input if n.label.startswith("Contexts to judge"))
    return dict(contexts=contexts.value, of=contexts.label,
                aspect=next(s for s in at.selectbox if s.label == "Aspect").value,
                template=next(r for r in at.radio if r.label == "Template").value)


def pick(at: AppTest, dataset_id: int) -> None:
    at.selectbox(key="dataset_pick_w").set_value(dataset_id).run()
    assert not at.exception, at.exception


def test_switching_dataset_shows_that_datasets_own_form(app_env):
    store, small, _ = seed_run(app_env)                         # the sample: 3 contexts
    big = store.save_dataset(api.load_candidates(twelve_contexts(), name="dialogues",
                                                 file_label="dialogues.csv"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    pick(at, small)
    assert form(at) == dict(contexts=3, of="Contexts to judge (first N of 3)",
                            aspect="coherence", template="T1")
    next(n for n in at.number_input if n.label.startswith("Contexts to judge")).set_value(2).run()
    next(s for s in at.selectbox if s.label == "Aspect").set_value("fluency").run()
    next(r for r in at.radio if r.label == "Template").set_value("T2").run()
    pick(at, big)
    # all twelve contexts, the aspect its engagement column is about, T1: nothing of the sample's
    assert form(at) == dict(contexts=12, of="Contexts to judge (first N of 12)",
                            aspect="engagingness", template="T1")
    assert "**Plan: 24 comparisons** on 12 context(s)" in texts(at.info)
    assert "dialogues-engagingness-t1-dialogue" in next(
        t for t in at.text_input if t.label == "Run name").value
    # a visit to another page, then back to the sample: its own values as they were typed
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/run.py").run()
    pick(at, small)
    assert form(at) == dict(contexts=2, of="Contexts to judge (first N of 3)",
                            aspect="fluency", template="T2")
    pick(at, big)
    assert form(at)["contexts"] == 12 and form(at)["aspect"] == "engagingness"


def test_a_dataset_with_human_labels_starts_at_their_aspect(app_env):
    store, dataset_id, _ = seed_run(app_env)
    d = store.load_dataset(dataset_id)
    c = d.contexts[0]
    store.add_human_judgements(dataset_id, [dict(
        context_id=c.context_id, candidate_left=c.candidate_ids[0],
        candidate_right=c.candidate_ids[1], winner="A", annotator="ann", aspect="relevance")])
    defaults = api.open_store(app_env).run_defaults(dataset_id)
    assert (defaults.aspect, defaults.aspect_from) == ("relevance", "its human labels of relevance")
    assert defaults.contexts == 3 and defaults.budget == 10 and defaults.template == "t1"
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    assert form(at)["aspect"] == "relevance"


def test_the_watched_run_survives_a_rename_and_cancel_acts_on_the_run_shown(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "running", done=10, total=60)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    assert at.selectbox(key="watch_w").value == run_id
    store.rename_run(run_id, "renamed-run")        # elsewhere: another tab, the CLI
    at.run()
    assert at.selectbox(key="watch_w").value == run_id          # still the same run, new name
    assert "Status: running" in texts(at.markdown)
    store.rename_run(run_id, "renamed-again")      # after the page showed "renamed-run"
    at.button(key=f"cancel_{run_id}").click().run()
    assert not at.exception, at.exception
    assert "is now called 'renamed-again'" in texts(at.error)
    assert not store.get_run(run_id).cancel_requested           # nothing was changed
    at.button(key=f"cancel_{run_id}").click().run()             # the page shows the new name now
    assert store.get_run(run_id).cancel_requested


# ------------------------------------------------------------------------------------ the API

def test_plan_run_says_what_the_page_shows(app_env):
    store = api.open_store(app_env)
    dataset = store.add_dataset(SAMPLE, name="sample_summeval")
    plan = store.plan_run("sample_summeval", aspect="coherence", strategy="symmetric", budget=6,
                          contexts=2)
    assert (plan.planned, plan.unit, plan.n_contexts, plan.kind) == (12, "comparisons", 2,
                                                                     "comparative")
    assert plan.settings == api.run_settings("sample_summeval", aspect="coherence",
                                             strategy="symmetric", budget=6, contexts=2)
    assert plan.reads == "Passage, then Summary A and Summary B (task summary, from the aspect " \
                         "coherence)"
    assert plan.reference == "coherence" and plan.judge_problem is None
    assert plan.preview.context_id == "A0" and plan.preview.text.startswith("Passage:\n")
    assert plan.preview.primer == "Answer: Summary"
    assert "no run of this model has measured its speed" in plan.estimate.sentence()
    assert plan.default_name.startswith("sample_summeval-coherence-t1-summary")
    assert plan.name_problem("  ") is not None and plan.name_problem("mine") is None
    assert store.runs().empty                                    # planning stores nothing
    scoring = store.plan_run(dataset, api.ScoringOptions(aspect="fluency", template="s2"),
                             api.ModelOptions(contexts=1))
    assert (scoring.planned, scoring.unit) == (5, "candidates scored")
    assert scoring.reads.startswith("Passage, then one summary at a time")
    assert len(scoring.preview.candidate_ids) == 1 and "{aspect_noun}" in scoring.preview.template
    own = store.plan_run(dataset, api.ComparativeOptions(
        aspect="coherence", template=api.template_from_text("{context} X: {a} Y: {b} {aspect}?")))
    assert own.reads == "your own template" and own.preview.text.endswith("coherent?")
    with pytest.raises(api.InputError, match="even budget"):
        store.plan_run(dataset, aspect="coherence", strategy="symmetric", budget=5)
    with pytest.raises(api.InputError, match="beside an options object"):
        store.plan_run(dataset, api.ComparativeOptions(aspect="coherence"), budget=4)


def test_a_served_judge_outside_the_allowlist_is_refused_before_anything_starts(app_env,
                                                                               monkeypatch):
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    store = api.open_store(app_env)
    dataset = store.add_dataset(SAMPLE, name="sample_summeval")
    servers = api.judge_servers()
    assert [s.base_url for s in servers.servers] == ["http://127.0.0.1:8000/v1"]
    spec = servers.spec("http://127.0.0.1:8000/v1", "qwen2.5-7b", "completions")
    assert spec == "openai-completions:http://127.0.0.1:8000/v1#qwen2.5-7b"
    with pytest.raises(api.InputError, match="not configured"):
        servers.spec("http://evil.example/v1", "m")
    with pytest.raises(api.InputError, match="letters, digits"):
        servers.spec("http://127.0.0.1:8000/v1", "m?samples=1")
    assert store.plan_run(dataset, aspect="coherence", model=spec).judge_problem is None
    elsewhere = store.plan_run(dataset, aspect="coherence", model="openai:http://evil.example/v1#m")
    assert "not configured for this app" in elsewhere.judge_problem
    run = store.create_run(dataset, elsewhere.settings, name="elsewhere")
    with pytest.raises(api.InputError, match="not configured for this app"):
        run.start_worker()
    assert run.refresh().state == "pending" and not run.worker_log_path.exists()


def test_a_worker_is_started_and_watched_through_the_api(app_env, tmp_path, monkeypatch):
    """A worker the API starts (here on a run whose model cannot load, so it fails at once and
    loads nothing) writes its log under COMPASSESS_HOME, and progress() reads its state."""
    store = api.open_store(app_env)
    dataset = store.add_dataset(SAMPLE, name="sample_summeval")
    settings = api.run_settings(dataset, aspect="coherence", contexts=1,
                                model=str(tmp_path / "missing.gguf"))
    run = store.create_run(dataset, settings, name="no-model")
    assert run.progress().state == "pending" and run.progress().can_resume
    assert run.worker_log() == ""
    proc = run.start_worker()
    assert run.worker_log_path == tmp_path / "home" / "logs" / f"worker-{run.id}.log"
    with pytest.raises(api.InputError, match="already has a live worker"):
        run.start_worker()                       # marked running at once: no second worker
    proc.wait(timeout=120)
    progress = run.progress()
    assert progress.state == "failed" and not progress.active and progress.can_resume
    assert "missing.gguf" in progress.message and progress.eta_s is None
    assert "missing.gguf" in run.worker_log(50)


def test_progress_of_a_live_run_has_its_rate_and_time_left(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "running", done=10, total=60, rate=2.0,
                         message="judging")
    progress = api.open_store(app_env).get_run(run_id).progress()
    assert (progress.state, progress.state_text, progress.active) == ("working", "running", True)
    assert (progress.done, progress.total, progress.fraction) == (10, 60, pytest.approx(1 / 6))
    assert progress.rate == 2.0 and progress.eta_s == pytest.approx(25.0)
    assert progress.phase == "judging" and progress.can_cancel and not progress.can_resume


@pytest.mark.model
@pytest.mark.skipif(not default_model_path().is_file(),
                    reason=f"bundled model not fetched ({default_model_path()}); run `make model`")
def test_chat_prompt_is_the_judges_own_rendering_without_its_weights(app_env, monkeypatch):
    store, _, run_id = seed_run(app_env)
    run = api.open_store(app_env).get_run(run_id)
    prompt = run.prompt("A0", run.dataset.contexts[0].candidate_ids[0],
                        run.dataset.contexts[0].candidate_ids[1])
    from compassess_core.judges import loading

    def no_weights(*a, **k):
        raise AssertionError("the chat form must not load the model")
    monkeypatch.setattr(loading, "load_model", no_weights)
    shown = run.chat_prompt("A0", run.dataset.contexts[0].candidate_ids[0],
                            run.dataset.contexts[0].candidate_ids[1])
    assert "<|im_start|>user" in shown and shown.endswith(prompt.primer)
    assert prompt.text in shown
    monkeypatch.undo()
    from compassess_core.judges import load_judge
    assert shown == load_judge(None, device="cpu", batch_size=1).render(prompt)
    assert "torch" in sys.modules   # (the judge above; the chat form itself loads no weights)
    # The judge's GGUF is converted now: the chat form reads the tokenizer the judge loads from
    # the conversion, without parsing the GGUF's vocabulary again, and shows the same text.
    import gguf
    from compassess_core.judges import chat_template

    def no_parse(*a, **k):
        raise AssertionError("a converted GGUF's tokenizer is read from its conversion")
    monkeypatch.setattr(gguf.GGUFReader, "__init__", no_parse)
    chat_template._tokenizer.cache_clear()
    assert run.chat_prompt("A0", run.dataset.contexts[0].candidate_ids[0],
                           run.dataset.contexts[0].candidate_ids[1]) == shown


@pytest.mark.model
@pytest.mark.skipif(not default_model_path().is_file(),
                    reason=f"bundled model not fetched ({default_model_path()}); run `make model`")
def test_the_comparison_view_shows_the_chat_form_without_loading_the_judge(app_env, monkeypatch):
    from compassess_core.judges import loading

    def no_weights(*a, **k):
        raise AssertionError("the web server must not load the judge")
    monkeypatch.setattr(loading, "load_model", no_weights)
    seed_run(app_env)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/matrix.py").run()
    at.button(key="open_pick").click().run()
    [chat] = [c for c in at.checkbox if "chat template" in c.label]
    chat.check().run()
    assert not at.exception, at.exception
    assert any("<|im_start|>user" in c.value and c.value.endswith("Answer: Summary")
               for c in at.code)
