"""The shared-opening tokeniser gives exactly the tokenizer's own ids (``judges.tokens``).

Checked with the bundled judge's tokenizer (byte-level BPE, the one the encoder shares
openings for) on the real prompt shapes and, as a property, on random texts built to share
long openings and to cut anywhere: inside words, whitespace runs, digits, punctuation,
non-ASCII letters and the chat template's special tokens.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compassess_core.judges.tokens import MIN_SHARED_CHARS, SharedOpeningEncoder, _common_prefix_len


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from compassess_core.judges.loading import convert_gguf
    from compassess_core.judges.models import cached_sha256, default_model_path
    gguf = default_model_path()
    if not gguf.is_file():
        from compassess_core.judges.models import fetch_default_model
        fetch_default_model()
    return AutoTokenizer.from_pretrained(str(convert_gguf(gguf, cached_sha256(gguf))))


@pytest.fixture(scope="module")
def encoder(tokenizer):
    """One encoder for the property tests' examples: it holds only what it read from the
    tokenizer's pipeline when made (~0.1 s of parsing it), never anything of a text it encoded."""
    return SharedOpeningEncoder(tokenizer)


def full(tokenizer, texts, add=False):
    return [list(x) for x in tokenizer(list(texts), add_special_tokens=add)["input_ids"]]


def test_common_prefix_len():
    assert _common_prefix_len("abcdef", "abcxyz") == 3
    assert _common_prefix_len("abc", "abc") == 3
    assert _common_prefix_len("", "abc") == 0
    assert _common_prefix_len("ab", "abc") == 2


def test_the_bundled_tokenizer_shares_openings(tokenizer):
    assert SharedOpeningEncoder(tokenizer).shares


def test_real_prompts_get_the_tokenizers_ids(tokenizer):
    from compassess_core.data.candidates import load_candidates
    from compassess_core.runs.prompts import Aspect, builtin_template
    ds = load_candidates("assets/sample_summeval.csv")
    t1 = builtin_template("t1", "summary")
    texts = []
    for ctx in ds.contexts:
        for a in ctx.candidates:
            for b in ctx.candidates:
                if a is not b:
                    for x in ("coherence", "fluency"):
                        p = t1.render(ctx.text, a.text, b.text, Aspect.from_name(x))
                        head = tokenizer.apply_chat_template([{"role": "user", "content": p.text}],
                                                             tokenize=False, add_generation_prompt=True)
                        texts.append(head + p.primer)
    enc = SharedOpeningEncoder(tokenizer)
    assert enc.encode(texts, False) == full(tokenizer, texts)
    # with special tokens added, and a single text, it is the tokenizer's call itself
    assert enc.encode(texts[:3], True) == full(tokenizer, texts[:3], True)
    assert enc.encode(texts[:1], False) == full(tokenizer, texts[:1])
    assert enc.encode([], False) == []


_PIECES = st.sampled_from(["the", " the", "  ", " ", "\n", "\n\n", " \n", "\t", "123", "4567", "'s",
                           "'ll", ".", "...", "!\n", ",", "é", "日本", " naïve", "<|im_start|>",
                           "<|im_end|>", "user", "Summary A:", "\u00a0", "--", "x", "Hello"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(opening=st.lists(_PIECES, min_size=100, max_size=160),
       endings=st.lists(st.lists(_PIECES, min_size=0, max_size=12), min_size=2, max_size=6),
       middle=st.lists(_PIECES, min_size=0, max_size=80))
def test_random_texts_with_shared_openings_get_the_tokenizers_ids(tokenizer, encoder, opening, endings,
                                                                   middle):
    start = "".join(opening)
    mid = "".join(middle)
    texts = [start + ("".join(e) if k % 2 else mid + "".join(e)) for k, e in enumerate(endings)]
    assert len(start) >= MIN_SHARED_CHARS // 2  # mostly above it: the opening is shared
    assert encoder.encode(texts, False) == full(tokenizer, texts)


def test_the_bundled_tokenizer_cuts_lines(tokenizer):
    assert SharedOpeningEncoder(tokenizer).lines


_LINE_PIECES = st.sampled_from(["\n", "\n\n", " \n", "\r\n", "\t\n", "\u00a0\n", "\u2028", "\x0b", "\x1c",
                                "\u3000", " ", "  ", "A", "Summary B:", "the", " the", "x", "1", "'s",
                                ".", " .", "!", "é", "日本", "<|im_end|>", "<|im_start|>", "\nuser",
                                "\nHello", "\n't", "\n1", "\n.", "\n é"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(_LINE_PIECES, min_size=0, max_size=40).map("".join), min_size=2,
                      max_size=8))
def test_texts_cut_into_lines_get_the_tokenizers_ids(tokenizer, encoder, texts):
    """Lines (cut before a newline and an ASCII letter) tokenised alone and joined: the
    tokenizer's ids of the whole texts, whatever whitespace or token surrounds the cut."""
    assert encoder._by_lines(texts) == full(tokenizer, texts)
    assert encoder.encode(texts, False) == full(tokenizer, texts)
