"""The OpenAI-compatible judge against a real HTTP server on localhost (tests/openai_server.py).

Pure parts (answer parsing, eq. 3 from top-k log-probs, eq. 5, spec parsing) are checked on
hand-worked values. Protocol behaviour (concurrency, retries on each injected fault, typed errors,
resume after the server dies) runs against the server's FAKE backend, whose answers are a pure
function of the prompt. The real SmolLM2 backend checks that completions mode reproduces the local
judge's p and that ``compassess run --model openai:...`` works end to end without the API key
reaching the database or the exports.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.openai_server import FakeBackend, OpenAIServer  # noqa: E402

from compassess_core.errors import InputError, ModelLoadError  # noqa: E402
from compassess_core.judges.openai_judge import (ServerUnavailableError,  # noqa: E402
                                                 label_logprobs, load_openai_judge, parse_choice,
                                                 parse_retry_after, sampled_probability)
from compassess_core.judges.servers import parse_spec  # noqa: E402
from compassess_core.runs.prompts import Aspect, builtin_template  # noqa: E402
from compassess_core.types import Candidate, ComparisonPrompt, Context, Dataset  # noqa: E402

KEY = "sk-test-DO-NOT-STORE-1f9c2e"
PROMPTS = [ComparisonPrompt(f"Passage: p{i}\n\nSummary A: x{i}\n\nSummary B: y{i}\n\nWhich?",
                            "Answer: Summary") for i in range(8)]


@pytest.fixture
def fake_server():
    # A "slow" answer waits 4 s, twice the 2 s the fault test's client waits: the client gives up
    # on it, while an answer merely delayed by a loaded machine still comes within the 2 s.
    with OpenAIServer(FakeBackend(0.0), model_name="fake", retry_after=1, slow_s=4.0) as srv:
        yield srv


def fast(srv, mode="openai", **kw):
    kw.setdefault("max_retries", 4)
    kw.setdefault("backoff_s", 0.01)
    return load_openai_judge(f"{mode}:{srv.base_url}#{srv.model_name}", **kw)


# ------------------------------------------------------------------------------ pure functions

@pytest.mark.parametrize("answer,choice", [
    ("A", 0), ("b", 1), (" B.", 1), ("**A**", 0), ("Summary A", 0), ("summary b", 1),
    ("Response A is better", 0), ("Answer: Response B", 1), ("A is more coherent.", 0),
    ("I prefer Summary B over Summary A", 1), ("(B)", 1), ("Neither", -1), ("", -1),
    ("a summary of the text", -1), ("Abyss", -1), ("The cat sat.", -1),
])
def test_parse_choice(answer, choice):
    assert parse_choice(answer) == choice


def test_eq5_share_of_parseable_answers():
    # 3 A, 1 B, 1 unparseable: p = 3/4, parseable share 4/5
    assert sampled_probability([0, 0, 1, -1, 0]) == (0.75, 0.8)
    assert sampled_probability([-1, -1]) == (0.5, 0.0)


def test_eq3_reads_the_token_after_a_preamble_and_sums_variants():
    la, lb = math.log(0.5), math.log(0.25)
    positions = [("Summary", -0.1, {"Summary": -0.1, "A": -4.0}),
                 (" A", la, {" A": la, "A": math.log(0.1), " B": lb, " C": -3.0})]
    a, b, missing = label_logprobs(positions, ("A", "B"), exact=False)
    # position 1 is the answer; " A" and "A" are one answer: P(A) = 0.6, P(B) = 0.25
    assert missing == 0
    assert a == pytest.approx(math.log(0.6)) and b == pytest.approx(math.log(0.25))
    # exact matching (completions, like the local judge) takes " A" only, at the first position
    a2, b2, m2 = label_logprobs(positions[1:], (" A", " B"), exact=True)
    assert (a2, b2, m2) == (pytest.approx(la), pytest.approx(lb), 0)


def test_eq3_bounds_a_missing_word_and_gives_up_without_both():
    top = {"A": math.log(0.7), "Summary": math.log(0.2), "The": math.log(0.05)}
    a, b, missing = label_logprobs([("A", math.log(0.7), top)], ("A", "B"), exact=False)
    assert missing == 1 and a == pytest.approx(math.log(0.7))
    assert b == pytest.approx(math.log(0.05))  # B ranks below every listed token
    assert label_logprobs([("The", -0.1, {"The": -0.1, "Sent": -2.0})], ("A", "B"), exact=False) is None


def test_parse_spec_and_refusals():
    s = parse_spec("openai:http://127.0.0.1:8000/v1/#Qwen/Qwen2.5-7B-Instruct?samples=4")
    assert (s.endpoint, s.base_url, s.model, s.options) == (
        "chat", "http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B-Instruct", {"samples": "4"})
    assert parse_spec("openai-completions:https://h/v1#m").endpoint == "completions"
    for bad, words in [("openai:http://127.0.0.1:8000/v1", "names no model"),
                       ("openai:ftp://h/v1#m", "http(s)"),
                       (f"openai:http://user:{KEY}@h/v1#m", "credentials"),
                       (f"openai:http://h/v1?api_key={KEY}#m", "query string"),
                       ("openai:http://h/v1#m?bogus=1", "unknown option")]:
        with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")) as e:
            parse_spec(bad)
        assert KEY not in str(e.value)


def test_parse_retry_after():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now=1445412480.0) == pytest.approx(5.0)


# ------------------------------------------------------------------------------ fake server

def test_chat_and_completions_eq3_over_http(fake_server):
    for mode in ("openai", "openai-completions"):
        j = fast(fake_server, mode)
        out = j.judge(PROMPTS)
        for pr, jd in zip(PROMPTS, out):
            text = j.render(pr)
            sent = (FakeBackend().render_chat([{"role": "user", "content": text}])
                    if mode == "openai" else text)
            qa = FakeBackend()._q(sent)
            # the fake gives P(A) = 0.95 q and P(B) = 0.95 (1 - q): eq. 3 recovers q exactly
            assert jd.p == pytest.approx(qa, abs=1e-12)
            assert jd.label_mass == pytest.approx(0.95)
        assert j.stats["logprob_answers"] == len(PROMPTS) and j.retries == 0
        j.close()
    assert fake_server.posts == 2 * len(PROMPTS)


def test_requests_run_concurrently():
    with OpenAIServer(FakeBackend(0.2), model_name="fake") as srv:
        j = fast(srv, concurrency=8)
        t0 = time.perf_counter()
        j.judge(PROMPTS * 2)
        elapsed = time.perf_counter() - t0
        j.close()
    # 16 requests of 0.2 s: serially 3.2 s at least; 8 in flight: two waves, ~0.4 s. The state
    # (8 requests held by the server at once) is the proof; the time only has to beat the
    # serial sleeps alone, which no load on the machine can make shorter.
    assert srv.max_in_flight == 8
    assert elapsed < 16 * 0.2


@pytest.mark.parametrize("fault", ["429", "500", "drop", "malformed", "slow"])
def test_each_fault_is_retried_and_recovered(fake_server, fault):
    j = fast(fake_server, concurrency=1, timeout_s=2.0)
    clean = [x.p for x in j.judge(PROMPTS[:2])]
    fake_server.inject(fault, fault)
    t0 = time.perf_counter()
    again = [x.p for x in j.judge(PROMPTS[:2])]
    elapsed = time.perf_counter() - t0
    assert again == clean
    assert j.retries == 2 and not fake_server.faults
    if fault == "429":
        assert elapsed >= 2 * 1.0  # Retry-After: 1 honoured twice
    j.close()


def test_retries_exhausted_is_a_clear_error(fake_server):
    j = fast(fake_server, max_retries=2)
    fake_server.inject("500", "500", "500")
    with pytest.raises(ServerUnavailableError, match=r"failed 3 time\(s\).*HTTP 500.*resume"):
        j.judge(PROMPTS[:1])
    j.close()


def test_bad_key_url_and_model_fail_at_load(monkeypatch):
    with OpenAIServer(FakeBackend(0.0), model_name="fake", api_key=KEY) as srv:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", "sk-wrong")
        with pytest.raises(ModelLoadError, match=r"HTTP 401.*COMPASSESS_OPENAI_API_KEY"):
            fast(srv)
        monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
        with pytest.raises(ModelLoadError, match=r"'nope' is not served .* it serves: fake") as e:
            load_openai_judge(f"openai:{srv.base_url}#nope")
        assert KEY not in str(e.value)
        # The key is bound to its base URL: a wrong path is another server and gets no key.
        monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", f"http://127.0.0.1:{srv.port}/api")
        with pytest.raises(ModelLoadError, match=r"HTTP 404.*/v1"):
            j = load_openai_judge(f"openai:http://127.0.0.1:{srv.port}/api#fake")
            j.judge(PROMPTS[:1])
        monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", srv.base_url)
        j = fast(srv)
        assert KEY not in j.model_key + j.description + repr(j) + repr(j._client)
        srv.api_key = "rotated"  # the key stops working mid-run: a typed error, not a retry loop
        with pytest.raises(ModelLoadError, match="HTTP 401") as e:
            j.judge(PROMPTS[:2])
        assert KEY not in str(e.value) and j.retries == 0
        j.close()
    with pytest.raises(ModelLoadError, match="cannot reach the judge server"):
        load_openai_judge(f"openai:http://127.0.0.1:{srv.port}/v1#fake", backoff_s=0.01)


@pytest.mark.parametrize("mode", ["reject", "omit"])
def test_without_logprobs_eq5_sampling(fake_server, mode):
    fake_server.logprobs = mode
    j = fast(fake_server, samples=20)
    out = j.judge(PROMPTS[:3])
    assert not j.logprobs_available
    for jd in out:
        assert math.isnan(jd.logp_a) and math.isnan(jd.logp_b)
        assert jd.label_mass == 1.0 and (jd.p * 20) == pytest.approx(round(jd.p * 20))
    assert j.stats["sampled_prompts"] == 3 and j.stats["samples"] == 60
    assert j.stats["unparseable_samples"] == 0
    # the server seeds sampling: the same prompts give the same eq. 5 answers
    assert [x.p for x in j.judge(PROMPTS[:3])] == [x.p for x in out]
    j.close()


def test_a_server_capping_logprobs_at_5_is_asked_for_5(fake_server):
    fake_server.max_logprobs = 5
    j = fast(fake_server, "openai-completions")
    out = j.judge(PROMPTS[:3])
    assert j.top_logprobs == 5 and j.logprobs_available
    assert all(math.isfinite(x.logp_a) for x in out) and j.stats["logprob_answers"] == 3
    j.close()


def test_missing_label_words_fall_back_and_are_counted(fake_server):
    # the fake never says "1"/"2": no label word in the top-k, every sampled answer unparseable
    j = fast(fake_server, samples=4, label_words=("1", "2"))
    out = j.judge(PROMPTS[:2])
    assert [(x.p, x.label_mass) for x in out] == [(0.5, 0.0), (0.5, 0.0)]
    assert j.stats["labels_missing"] == 2 and j.stats["unparseable_samples"] == 8
    j.close()
    j = fast(fake_server, label_words=("1", "2"), fallback="none")
    assert [(x.p, x.label_mass) for x in j.judge(PROMPTS[:1])] == [(0.5, 0.0)]
    assert j.stats["sampled_prompts"] == 0
    j.close()


def _dataset(n_contexts: int = 3, n_candidates: int = 4) -> Dataset:
    return Dataset("toy", tuple(
        Context(f"C{c}", f"context {c}", tuple(Candidate(f"x{k}", f"candidate {k} of {c}")
                                               for k in range(n_candidates)))
        for c in range(n_contexts)), ())


def test_resume_after_the_server_dies_part_way(store):
    from compassess_core.runs.settings import RunSettings
    from compassess_core.runs.executor import execute_with

    ds = _dataset()
    t, a = builtin_template("t1"), Aspect.from_name("coherence")
    first = OpenAIServer(FakeBackend(0.0), model_name="fake", die_after=10)
    spec = f"openai:{first.base_url}#fake"
    judge = load_openai_judge(spec, concurrency=2, max_retries=1, backoff_s=0.01)
    rs = RunSettings(dataset="toy", aspect=a.name, aspect_adjective=a.adjective, template_name=t.name,
                     template_text=t.text, primer=t.primer, model=spec, label_words=judge.label_words)
    ds_id = store.save_dataset(ds)
    rid = store.create_run("remote", ds_id, rs.to_dict())
    with pytest.raises(ServerUnavailableError):
        execute_with(store, ds, rs, judge, rid, dataset_id=ds_id, chunk_prompts=3)
    judge.close()
    failed = store.get_run(rid)
    assert failed.status == "failed" and "ServerUnavailableError" in failed.message
    kept = store.comparison_table(rid)
    assert 0 < len(kept) < 36  # every answer that came back before the server died

    with OpenAIServer(FakeBackend(0.0), model_name="fake", port=first.port) as second:
        judge = load_openai_judge(spec, concurrency=2)
        assert store.create_run("remote", store.get_run(rid).dataset_id, rs.to_dict()) == rid
        summary = execute_with(store, ds, rs, judge, rid, dataset_id=ds_id, chunk_prompts=3)
        judge.close()
    assert (summary.status, summary.total, summary.already_stored) == ("completed", 36, len(kept))
    assert second.posts == 36 - len(kept)
    done = store.comparison_table(rid)
    assert len(done) == 36 and len(set(zip(done.context_ids, done.a_ids, done.b_ids))) == 36
    before = dict(zip(zip(kept.context_ids, kept.a_ids, kept.b_ids), kept.p))
    after = dict(zip(zip(done.context_ids, done.a_ids, done.b_ids), done.p))
    assert all(after[k] == v for k, v in before.items())


# ------------------------------------------------------------------------------ real SmolLM2

@pytest.fixture(scope="module")
def smol_server(request):
    request.getfixturevalue("bundled_model")
    from tests.openai_server import SmolBackend
    backend = SmolBackend()
    with OpenAIServer(backend, model_name="smollm2", api_key=KEY) as srv:
        yield srv
    backend.judge.close()


@pytest.mark.model
def test_completions_mode_matches_the_local_judge(smol_server, tiny_dataset, monkeypatch):
    """Same model, same rendered text, same label tokens: p agrees to 1e-4.

    Both sides compute fp32 log-softmax over the full vocabulary; the local judge runs prompts in
    prefix-cached right-padded batches and the server one prompt at a time, so only the summation
    order differs (observed |dp| ~ 1e-6); 1e-4 leaves room without hiding a real mismatch (a
    wrong template or token moves p by > 1e-2).
    """
    from compassess_core.runs.comparative import render_prompt
    from compassess_core.runs.settings import RunSettings

    monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", smol_server.base_url)
    local = smol_server.backend.judge
    t, a = builtin_template("t1"), Aspect.from_name("coherence")
    rs = RunSettings(dataset="tiny", aspect=a.name, aspect_adjective=a.adjective,
                     template_name=t.name, template_text=t.text, primer=t.primer, model="x")
    ctx = tiny_dataset.contexts[0]
    prompts = [render_prompt(ctx, i, j, rs) for i in range(3) for j in range(3) if i != j]
    tokenizer = local.tokenizer.name_or_path
    remote = load_openai_judge(f"openai-completions:{smol_server.base_url}#smollm2?tokenizer={tokenizer}",
                               concurrency=2)
    assert [remote.render(p) for p in prompts] == [local.render(p) for p in prompts]
    got, want = remote.judge(prompts), local.judge(prompts)
    np.testing.assert_allclose([g.p for g in got], [w.p for w in want], atol=1e-4, rtol=0)
    np.testing.assert_allclose([g.logp_a for g in got], [w.logp_a for w in want], atol=1e-3)
    assert remote.stats["logprob_answers"] == 6 and remote.label_words == local.label_words
    remote.close()


@pytest.fixture
def openai_dispatch():
    """``load_judge("openai:...")`` as the CLI calls it must reach the served-judge backend (a
    closed port answers with the backend's own 'judge server' error, not a model-path error)."""
    import compassess_core.judges as judges

    with pytest.raises(ModelLoadError, match="judge server"):
        judges.load_judge("openai:http://127.0.0.1:9/v1#probe")
    return True


@pytest.mark.model
def test_cli_run_end_to_end_never_stores_the_key(smol_server, tiny_dataset, tmp_path, monkeypatch,
                                                  openai_dispatch, capsys):
    import json

    import pandas as pd

    from compassess_core.cli import main

    rows = [dict(context_id=c.context_id, context=c.text, candidate_id=k.candidate_id, text=k.text,
                 coherence=k.scores["coherence"]) for c in tiny_dataset.contexts for k in c.candidates]
    data = tmp_path / "tiny.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    db_file = tmp_path / "e2e.db"
    db = f"sqlite:///{db_file}"
    spec = f"openai:{smol_server.base_url}#smollm2?samples=2&sample_tokens=3&answer_tokens=2"
    monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", smol_server.base_url)
    code = main(["run", str(data), "--aspect", "coherence", "--contexts", "1", "--model", spec,
                 "--batch-size", "4", "--run", "remote", "--db", db])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "smollm2 at http://127.0.0.1" in out.err and KEY not in out.out + out.err

    assert main(["export", "--run", "remote", "--what", "comparisons", "--format", "csv",
                 "-o", str(tmp_path / "cmp.csv"), "--db", db]) == 0
    assert main(["export", "--run", "remote", "--what", "rankings", "--format", "json",
                 "-o", str(tmp_path / "rank.json"), "--db", db]) == 0
    assert main(["runs", "--json", "--db", db]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["status"], r["n_comparisons"]) for r in runs] == [("remote", "completed", 6)]
    cmp = pd.read_csv(tmp_path / "cmp.csv")
    assert len(cmp) == 6 and cmp.p.between(0, 1).all()
    sampled = cmp.logp_a.isna()
    # eq. 3 rows carry both log-probs; eq. 5 rows have p in {0, 1/2, 1} from K = 2 answers
    assert np.allclose(cmp.p[~sampled], 1 / (1 + np.exp(cmp.logp_b[~sampled] - cmp.logp_a[~sampled])))
    assert cmp.p[sampled].isin([0.0, 0.5, 1.0]).all()

    written = [p for p in tmp_path.iterdir() if p.is_file()]
    assert db_file in written and any(p.suffix == ".json" for p in written)
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path


def test_a_served_judge_writes_text_through_the_judge_protocol(fake_server):
    from compassess_core.judges.base import TextGenerator
    from compassess_core.runs.settings import GenerationOptions
    judge = fast(fake_server)
    try:
        assert isinstance(judge, TextGenerator)
        greedy = judge.generate(["Write a summary.", "Write another."], GenerationOptions())
        assert len(greedy) == 2 and all(isinstance(t, str) and t for t in greedy)
        sampled = GenerationOptions(sample=True)
        assert judge.generate(["Write."], sampled, seeds=[7]) == \
            judge.generate(["Write."], sampled, seeds=[7])
        record = judge.generation_record(GenerationOptions(max_new_tokens=24))
        assert record["max_new_tokens"] == 24 and record["model"].endswith("#fake")
    finally:
        judge.close()
