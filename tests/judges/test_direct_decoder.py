"""The judge's host-side shortcuts compute the same p: the direct decoder against transformers'
forward, passes sharing the full-vocabulary head against a head per pass, the blocked CPU head
against a log-softmax in float64, and the chat template applied once against per prompt.

Tiny random-initialised models of the architectures' own transformers classes (as
``tests/judges/test_exact_architectures.py``, whose word-level tokenizer and prompts these reuse);
nothing is downloaded.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from compassess_core.judges.direct_decoder import DirectDecoder
from compassess_core.judges.loading import LoadedModel
from compassess_core.judges.transformers_judge import CausalJudge, _FP32Head
from tests.judges.test_exact_architectures import ARCHITECTURES, _model, _prompts, _tokenizer

#: fp32 noise on the label log-odds (the architectures' test allows 1e-4 against the naive recipe).
TOL = 1e-5


@pytest.fixture(scope="module")
def prompts():
    return _prompts()


@pytest.fixture(scope="module")
def tokenizer(prompts):
    return _tokenizer(prompts)


def _loaded(arch: str, tokenizer, dtype=torch.float32) -> LoadedModel:
    model = _model(arch, tokenizer).to(dtype)
    return LoadedModel(model, tokenizer, f"tiny-{arch}@random", f"tiny-{arch}", False,
                       torch.device("cpu"), dtype)


def _log_odds(judge: CausalJudge, prompts) -> np.ndarray:
    return np.array([j.logp_a - j.logp_b for j in judge.judge(prompts)])


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_direct_decoder_takes_only_the_layers_it_computes_exactly(arch, tokenizer):
    loaded = _loaded(arch, tokenizer)
    judge = CausalJudge(loaded, batch_size=4)
    assert (judge._direct is not None) == (arch in ("llama", "qwen2"))
    assert CausalJudge(loaded, direct=False)._direct is None
    # never on another dtype or device
    assert not DirectDecoder.supports(loaded.model, torch.device("cpu"), torch.bfloat16)
    assert not DirectDecoder.supports(loaded.model, torch.device("cuda"), torch.float32)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("settings", [
    dict(batch_size=4, min_saving=4, fuse_suffix=8),          # fused passes, tree attention
    dict(batch_size=3, min_saving=4, fuse_suffix=0),          # rows of several caches per batch
    dict(batch_size=4, min_saving=4, fuse_suffix=0, thin=6),  # lifted onto a parent's cache
    dict(batch_size=2, token_budget=5, min_saving=4),         # long suffixes in pieces
], ids=["fused", "mixed-caches", "thin", "pieces"])
def test_the_direct_decoder_gives_transformers_p(arch, settings, prompts, tokenizer):
    loaded = _loaded(arch, tokenizer)
    direct = CausalJudge(loaded, **settings)
    assert direct._direct is not None
    reference = _log_odds(CausalJudge(loaded, direct=False, **settings), prompts)
    got = _log_odds(direct, prompts)
    assert np.std(reference) > 0.5
    assert np.max(np.abs(got - reference)) < TOL


def test_the_direct_decoder_merges_a_cache_exactly(tokenizer):
    """Rows continuing two different caches and a row without one, against one forward pass
    of the whole sequence each (the log-sum-exp merge of the two attention parts)."""
    model = _loaded("llama", tokenizer).model
    dec = DirectDecoder(model)
    gen = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    with torch.inference_mode():
        a, b = torch.randint(0, vocab, (1, 30), generator=gen), torch.randint(0, vocab, (1, 21), generator=gen)
        _, kv_a = dec.forward(a, torch.arange(30)[None])
        _, kv_b = dec.forward(b, torch.arange(21)[None])
        new = torch.randint(0, vocab, (4, 6), generator=gen)
        pos = torch.stack([torch.arange(30, 36), torch.arange(30, 36), torch.arange(21, 27),
                           torch.arange(0, 6)])
        h, _ = dec.forward(new, pos, [(kv_a, 0, 2), (kv_b, 2, 3), (None, 3, 4)])
        for r, before in enumerate([a, a, b, None]):
            seq = new[r:r + 1] if before is None else torch.cat([before, new[r:r + 1]], dim=1)
            want = model.model(input_ids=seq).last_hidden_state[0, -6:]
            assert torch.allclose(h[r], want, atol=1e-4, rtol=1e-5), r


def test_passes_sharing_the_head_give_each_row_its_own_p(prompts, tokenizer):
    """A judge whose layers are far smaller than its vocabulary matrix (made so here: this
    word-level vocabulary is tiny) lets its passes wait for one call of the head (fewer head
    calls than passes); one whose passes are real work calls it per pass: the same p."""
    loaded = _loaded("llama", tokenizer)
    shared = CausalJudge(loaded, batch_size=2, min_saving=4, fuse_suffix=0)
    shared._layer_weights = 1
    calls = []
    head = shared._head.label_logprobs
    shared._head.label_logprobs = lambda h, ids: calls.append(len(h)) or head(h, ids)
    got = _log_odds(shared, prompts)
    assert len(calls) < shared.stats["forward_passes"] and max(calls) > 2
    each = CausalJudge(loaded, batch_size=2, min_saving=4, fuse_suffix=0)
    each._layer_weights = 10 ** 12  # every pass is "real work": the head runs per pass
    calls.clear()
    head2 = each._head.label_logprobs
    each._head.label_logprobs = lambda h, ids: calls.append(len(h)) or head2(h, ids)
    want = _log_odds(each, prompts)
    assert max(calls) <= 2
    assert np.max(np.abs(got - want)) < TOL


@pytest.mark.parametrize("extras", [{}, dict(bias=True), dict(softcap=5.0, logit_scale=0.5)],
                         ids=["plain", "bias", "softcap"])
def test_the_blocked_cpu_head_is_the_full_log_softmax(extras):
    """The running log-sum-exp over vocabulary blocks against log_softmax in float64, on a
    vocabulary of several blocks and one partial block."""
    torch.manual_seed(0)
    vocab, width = 3 * _FP32Head.CPU_BLOCK + 123, 16

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.out = torch.nn.Linear(width, vocab, bias=bool(extras.get("bias")))
            self.config = type("C", (), dict(final_logit_softcapping=extras.get("softcap"),
                                             logit_scale=extras.get("logit_scale")))()

        def get_output_embeddings(self):
            return self.out

    model = Tiny()
    with torch.no_grad():
        model.out.weight.normal_(0, 1.0)
    head = _FP32Head(model)
    h = torch.randn(7, width) * 2
    ids = (5, vocab - 1)
    weight = model.out.weight.detach().double()
    logits = h.double() @ weight.T
    if model.out.bias is not None:
        logits = logits + model.out.bias.detach().double()
    if extras.get("logit_scale"):
        logits = logits * extras["logit_scale"]
    if extras.get("softcap"):
        logits = torch.tanh(logits / extras["softcap"]) * extras["softcap"]
    want = torch.log_softmax(logits, dim=-1)[:, list(ids)].numpy()
    got = head.label_logprobs(h, ids)
    assert np.max(np.abs(got - want)) < 1e-4


VERBATIM = ("{% for m in messages %}<|user|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
TRIMMING = ("{% for m in messages %}<|user|>\n{{ m['content'] | trim }}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


@pytest.mark.parametrize("template", [VERBATIM, TRIMMING], ids=["verbatim", "trimming"])
def test_the_chat_template_applied_once_equals_per_prompt(template, prompts):
    tok = _tokenizer(prompts)
    tok.chat_template = template
    judge = CausalJudge(LoadedModel(_model("llama", tok), tok, "tiny@random", "tiny", False,
                                    torch.device("cpu"), torch.float32))
    assert (judge._chat_frame() is not None) == (template is VERBATIM)
    # texts with spaces and newlines at their edges (a trimming template changes them)
    odd = [type(p)(text=f"  {p.text}\n", primer=p.primer) for p in prompts[:3]]
    for batch in (prompts, odd):
        assert judge.render_all(batch) == [judge.render(p) for p in batch]
