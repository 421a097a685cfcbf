"""The judge's p equals the naive recipe on every supported decoder architecture.

The naive recipe: one prompt, one forward pass of the architecture's own transformers model,
``model(input_ids).logits`` at the last position, log-softmax over the vocabulary, the two label
tokens' log-probabilities; p is eq. 3 of Liusie et al. 2024 on them. The engine under test instead
shares prompt prefixes between prompts (a prefix tree of key/value caches), batches with padding,
and applies the output head itself (``_FP32Head``), so the reference shares nothing with it but
the weights and the token ids.

Each architecture is a tiny random-initialised model built from its transformers config class
(2 layers, width 64), with a word-level tokenizer over the prompts' words (``tests.fakes.fake_word_tokenizer``): nothing is
downloaded. Llama (the bundled SmolLM2's shape), Qwen2 (biases in q/k/v, tied embeddings), Gemma
(scaled embeddings, (1 + w) RMSNorm, GeGLU), Phi-3 (fused qkv and gate/up projections) and Mistral
(sliding-window attention, with a window shorter than the prompts).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from compassess_core.judges.loading import LoadedModel
from compassess_core.judges.transformers_judge import CausalJudge
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.types import ComparisonPrompt
from tests.fakes import fake_word_tokenizer

#: Tolerance on the log-odds log P(A) - log P(B), fp32 on CPU.
TOL_LOG_ODDS = 1e-4

CONTEXTS = [
    ("The city council met on Tuesday to discuss the new park . Residents asked for more trees "
     "and a playground ; the mayor promised a decision by the end of the month .",
     ["The council discussed a new park and the mayor will decide this month .",
      "Residents want trees .",
      "A meeting happened . The mayor promised a playground and trees and a decision by the end "
      "of the month after residents asked on Tuesday ."]),
    ("A storm closed the coastal road for two days ; crews cleared fallen trees and the road "
     "reopened on Friday morning .",
     ["The coastal road reopened on Friday after a storm .",
      "Crews cleared trees .",
      "A storm closed a road for two days and crews cleared fallen trees before Friday ."]),
]


def _prompts() -> list[ComparisonPrompt]:
    tpl = builtin_template("t1", "summary")
    asp = Aspect.from_name("coherence")
    return [tpl.render(ctx, a, b, asp) for ctx, texts in CONTEXTS
            for ia, a in enumerate(texts) for ib, b in enumerate(texts) if ia != ib]


def _tokenizer(prompts: list[ComparisonPrompt]):
    """A word-level tokenizer over the prompts' words (``tests.fakes.fake_word_tokenizer``), so
    the label words " A" and " B" are one token each after the primer."""
    return fake_word_tokenizer([t for p in prompts for t in (p.text, p.primer)])


def _config(arch: str, vocab: int):
    import transformers as tf

    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2, initializer_range=0.3)
    if arch == "llama":
        return tf.LlamaForCausalLM, tf.LlamaConfig(**common, tie_word_embeddings=False)
    if arch == "qwen2":  # q/k/v projections carry biases in Qwen2 by construction
        return tf.Qwen2ForCausalLM, tf.Qwen2Config(**common, tie_word_embeddings=True)
    if arch == "gemma":
        return tf.GemmaForCausalLM, tf.GemmaConfig(**common, head_dim=16)
    if arch == "phi3":
        return tf.Phi3ForCausalLM, tf.Phi3Config(**common, tie_word_embeddings=False)
    if arch == "mistral":  # a window shorter than every prompt: old keys must drop out
        return tf.MistralForCausalLM, tf.MistralConfig(**common, sliding_window=24,
                                                       tie_word_embeddings=False)
    raise ValueError(arch)


ARCHITECTURES = ["llama", "qwen2", "gemma", "phi3", "mistral"]


@pytest.fixture(scope="module")
def prompts() -> list[ComparisonPrompt]:
    return _prompts()


@pytest.fixture(scope="module")
def tokenizer(prompts):
    return _tokenizer(prompts)


def _model(arch: str, tokenizer) -> torch.nn.Module:
    cls, cfg = _config(arch, len(tokenizer))
    cfg._attn_implementation = "eager"  # the reference forward: the plainest attention
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():  # random weights large enough that the label log-odds vary visibly
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.normal_(0.0, 0.5)
    return model


def _naive_log_odds(model: torch.nn.Module, seqs: list[list[int]], ids: tuple[int, int]
                    ) -> np.ndarray:
    out = []
    with torch.inference_mode():
        for seq in seqs:
            logits = model(torch.tensor([seq])).logits[0, -1].double()
            lp = torch.log_softmax(logits, dim=-1)
            out.append(float(lp[ids[0]] - lp[ids[1]]))
    return np.array(out)


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("prefix_cache", [True, False], ids=["prefix-cache", "batched"])
def test_p_equals_the_architectures_own_forward(arch, prefix_cache, prompts, tokenizer):
    model = _model(arch, tokenizer)
    loaded = LoadedModel(model, tokenizer, f"tiny-{arch}@random", f"tiny-{arch}", False,
                         torch.device("cpu"), torch.float32)
    judge = CausalJudge(loaded, batch_size=4, prefix_cache=prefix_cache, min_saving=4,
                        fuse_suffix=8)
    seqs = judge.encode([judge.render(p) for p in prompts])
    assert min(len(s) for s in seqs) > 24  # longer than Mistral's window
    ids = judge._label_ids
    want = _naive_log_odds(model, seqs, ids)
    got = np.array([j.logp_a - j.logp_b for j in judge.judge(prompts)])
    # initializer_range 0.3: log-odds spread over several units (measured sd 1.8-2.6), so a
    # misplaced position or a wrong head would show far above the tolerance
    assert np.std(want) > 0.5, "the random model should give the prompts different log-odds"
    assert np.max(np.abs(got - want)) < TOL_LOG_ODDS, (arch, np.abs(got - want).max())


def test_every_architecture_has_a_distinct_shape(tokenizer):
    """The five configurations really are five architectures (not five Llamas)."""
    kinds = {type(_model(a, tokenizer).model.layers[0].self_attn).__name__ for a in ARCHITECTURES}
    assert len(kinds) == len(ARCHITECTURES)


def test_mistral_window_is_in_force(prompts, tokenizer):
    """The sliding window changes the naive forward on these prompts, so the Mistral case above
    checks the window and not only a Llama-like attention."""
    model = _model("mistral", tokenizer)
    judge = CausalJudge(LoadedModel(model, tokenizer, "tiny-mistral@random", "tiny-mistral", False,
                                    torch.device("cpu"), torch.float32), batch_size=4)
    seqs = judge.encode([judge.render(p) for p in prompts[:3]])
    windowed = _naive_log_odds(model, seqs, judge._label_ids)
    model.config.sliding_window = None
    full = _naive_log_odds(model, seqs, judge._label_ids)
    assert np.max(np.abs(windowed - full)) > 1e-3
