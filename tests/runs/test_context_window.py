"""Prompts longer than the judge's context window: refused when the run is planned (naming the
context, the candidates and the token count), or the context passage cut to fit on request.

Fast tests use the FAKE judge of ``tests/fakes.py`` (one token per character); the real-model
tests check the same on the bundled SmolLM2 through the CLI, where nothing may be stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from compassess_core.runs.comparative import ComparativeKind
from compassess_core.runs.context_window import (RESERVED_TOKENS, TRUNCATION_MARK,
                                            UNDECLARED_WINDOW_TOKENS, ContextTooLong,
                                            fit_contexts, truncated_text)
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.runs.run_kinds import RunJob
from compassess_core.runs.settings import RunSettings
from compassess_core.runs.sink import MemorySink
from compassess_core.types import Candidate, Context, Dataset
from tests.fakes import FakeLengthJudge
from tests import warm_cli

ROOT = Path(__file__).resolve().parents[2]


def settings(**kw) -> RunSettings:
    t, a = builtin_template("t1"), Aspect.from_name("coherence")
    return RunSettings(dataset="d", aspect=a.name, aspect_adjective=a.adjective, template_name=t.name,
                       template_text=t.text, primer=t.primer, model="fake", **kw)


def dataset(context_chars: int = 100, long_candidate: int = 0) -> Dataset:
    return Dataset("d", (
        Context("short", "A short passage.", (Candidate("a", "one"), Candidate("b", "two"))),
        Context("long", "word " * (context_chars // 5), (
            Candidate("a", "first summary"), Candidate("b", "x" * long_candidate or "second"),
            Candidate("c", "third one")))))


def longest(ds: Dataset, s: RunSettings, judge, fit) -> dict[str, int]:
    """The exact token count of every prompt of the run, per context (the fake counts chars)."""
    kind = ComparativeKind()
    plan = kind.plan(RunJob(dataset=ds, dataset_id=1, settings=s, judge=judge, run_id=1, stored={},
                            store=MemorySink()))
    keys = [k for chunk in plan.batches for k in chunk]
    out: dict[str, int] = {}
    for k in keys:
        out[k.context_id] = max(out.get(k.context_id, 0), len(judge.render(plan.prompt(k))))
    return out


def test_a_prompt_over_the_window_is_refused_naming_context_candidates_and_tokens():
    judge = FakeLengthJudge(context_window=600)
    ds = dataset(context_chars=1000)
    with pytest.raises(ContextTooLong) as e:
        ComparativeKind().preflight(ds, settings(), judge)
    assert len(e.value.problems) == 1
    p = e.value.problems[0]
    assert p.context_id == "long" and "'a'" in p.what and "'c'" in p.what  # the two longest
    s = settings()
    worst = max(len(judge.render(s.template.render(ds.contexts[1].text, x.text, y.text, s.aspect_obj)))
                for x in ds.contexts[1].candidates for y in ds.contexts[1].candidates if x is not y)
    assert p.tokens == worst, "the count is exact: the longest prompt as the judge sees it"
    message = str(e.value)
    assert "context window of fake length judge (tests only) (600 tokens" in message
    assert "--truncate-context" in message


def test_truncation_cuts_the_passage_just_enough_and_records_it():
    judge = FakeLengthJudge(context_window=600)
    ds, s = dataset(context_chars=1000), settings(truncate_context=True)
    fit = ComparativeKind().preflight(ds, s, judge)
    assert set(fit.truncated) == {"long"} and 0 < fit.truncated["long"] < len(ds.contexts[1].text)
    text = fit.context_text(ds.contexts[1])
    assert text.endswith(TRUNCATION_MARK) and ds.contexts[1].text.startswith(text[:fit.truncated["long"]].rstrip())
    lengths = longest(ds, s, judge, fit)
    assert lengths["long"] <= 600 - RESERVED_TOKENS
    assert lengths["long"] > 600 - RESERVED_TOKENS - 12, "cut just enough, not more"
    assert fit.to_dict()["truncated_contexts"] == {"long": fit.truncated["long"]}
    assert fit.context_text(ds.contexts[0]) == ds.contexts[0].text


def test_truncation_cannot_save_a_candidate_longer_than_the_window():
    judge = FakeLengthJudge(context_window=600)
    with pytest.raises(ContextTooLong, match="candidates alone do not fit"):
        ComparativeKind().preflight(dataset(long_candidate=900), settings(truncate_context=True), judge)


def test_a_judge_without_a_declared_window_is_held_to_a_bound(monkeypatch):
    prompts = ComparativeKind().longest_prompts(settings())
    # The default bound takes ordinary prompts, not a 100,000-token passage.
    assert fit_contexts(dataset(1_000).contexts, prompts, FakeLengthJudge(context_window=None),
                        truncate=False).window == UNDECLARED_WINDOW_TOKENS
    with pytest.raises(ContextTooLong, match=f"{UNDECLARED_WINDOW_TOKENS:,}"):
        fit_contexts(dataset(100_000).contexts, prompts, FakeLengthJudge(context_window=None),
                     truncate=False)
    monkeypatch.setenv("COMPASSESS_MAX_PROMPT_TOKENS", "200000")
    assert fit_contexts(dataset(100_000).contexts, prompts, FakeLengthJudge(context_window=None),
                        truncate=False).truncated == {}
    # The variable lowers a declared window too.
    monkeypatch.setenv("COMPASSESS_MAX_PROMPT_TOKENS", "300")
    assert fit_contexts(dataset(100).contexts, prompts, FakeLengthJudge(context_window=600),
                        truncate=False).window == 300


def test_truncated_text_is_the_identity_when_nothing_was_cut():
    assert truncated_text("abc", None) == "abc" and truncated_text("abc", 3) == "abc"
    assert truncated_text("abc def", 3) == "abc" + TRUNCATION_MARK


# ------------------------------------------------------------------------- the real model, CLI

def _cli(*args, db: str, env: dict | None = None) -> warm_cli.Completed:
    """``compassess ARGS --db DB`` in a process of its own, forked from the warm command line
    with the bundled judge loaded."""
    return warm_cli.run(*args, "--db", db, model=True, cwd=ROOT, timeout=600,
                        env=None if env is None else {**os.environ, **env})


@pytest.mark.model
def test_a_200kb_candidate_is_refused_before_anything_is_stored(tmp_path, bundled_model):
    data = tmp_path / "huge.csv"
    huge = "The committee met again. " * 8000  # 200 KB
    data.write_text("context_id,context,candidate_id,text\n"
                    f"D1,A short article.,small,A short summary.\nD1,A short article.,huge,\"{huge}\"\n",
                    encoding="utf-8")
    db_file = tmp_path / "x.db"
    out = _cli("run", str(data), "--aspect", "coherence", db=f"sqlite:///{db_file}")
    assert out.returncode == 2, out.stderr
    assert "context 'D1'" in out.stderr and "'huge'" in out.stderr and "8,192 tokens" in out.stderr
    assert "--truncate-context" in out.stderr
    con = sqlite3.connect(db_file)
    assert con.execute("SELECT count(*) FROM datasets").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


@pytest.mark.model
@pytest.mark.slow
def test_a_long_context_is_truncated_on_request_and_the_run_records_it(tmp_path, bundled_model):
    data = tmp_path / "long.csv"
    # Over the window: the model's 8,192 tokens, lowered to 512 here so the test judges short
    # prompts (COMPASSESS_MAX_PROMPT_TOKENS caps a declared window the same way).
    article = "The council discussed the new bridge at length. " * 80  # ~800 tokens
    data.write_text("context_id,context,candidate_id,text\n"
                    f"D1,\"{article}\",s1,The council discussed a bridge.\n"
                    f"D1,\"{article}\",s2,A bridge was discussed at length by the council.\n",
                    encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'x.db'}"
    out = _cli("run", str(data), "--aspect", "coherence", "--run", "cut", "--truncate-context", db=db,
               env={"COMPASSESS_MAX_PROMPT_TOKENS": "512"})
    assert out.returncode == 0, out.stderr
    assert "context 'D1' truncated to its first" in out.stderr
    runs = json.loads(_cli("runs", "--json", db=db).stdout)
    assert runs[0]["status"] == "completed" and runs[0]["done"] == 2
