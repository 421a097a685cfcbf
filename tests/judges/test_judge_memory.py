"""A judge's memory: the estimate and the GPU batch sizing (pure arithmetic on real headers), the
out-of-memory retry under a simulated memory limit (the real engine on FAKE weights: a tiny random
Llama and a tiny random T5), the tensor-by-tensor GGUF conversion against transformers' own GGUF
loading (same weights, same p), and the real SmolLM2 judge with bf16 weights."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch

from compassess_core.judges import memory as mem
from compassess_core.judges import model_catalog as mc
from compassess_core.errors import ModelLoadError
from compassess_core.judges.loading import LoadedModel, _load_dir, load_model
from compassess_core.judges.transformers_judge import CausalJudge, Seq2SeqJudge, is_out_of_memory
from compassess_core.judges.models import default_model_path, fetch_default_model
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.types import ComparisonPrompt
from tests.fakes import fake_tiny_llama, fake_word_tokenizer

QWEN15 = mem.ModelShape(parameters=1_777_088_000, layers=28, hidden=1536, heads=12, kv_heads=2,
                        intermediate=8960, vocab=151936)


# ---------------------------------------------------------------- pure arithmetic
def test_batch_sizing_from_free_memory():
    # A row of the 1.5B model in bf16 (2 bytes), 2048-token prefix, 256-token suffix:
    # per suffix token: keys/values 2 x 28 x 256 x 2 = 28,672 B; one layer's activations
    # 2 x (4 x 1536 + 3 x 8960 + 1536 + 2 x 256) = 70,144 B; attention row 4 x 12 x 2048 = 98,304 B.
    # Row = 256 x 197,120 + prefix 2048 x 28,672 + logits 12 x 151,936 = 111,006,208 B.
    row = 256 * (28_672 + 70_144 + 98_304) + 2048 * 28_672 + 12 * 151_936
    assert row == 111_006_208
    s = mem.batch_sizing(10 * row, QWEN15, "bf16", headroom=1.0)
    assert (s.batch_size, s.token_budget) == (10, 10 * 256)
    assert mem.batch_sizing(60e9, QWEN15, "bf16").batch_size == 256  # the cap
    assert mem.batch_sizing(0, QWEN15, "bf16").batch_size == 1      # never zero
    fp32 = mem.batch_sizing(10e9, QWEN15, "fp32").batch_size
    bf16 = mem.batch_sizing(10e9, QWEN15, "bf16").batch_size
    assert fp32 < bf16
    longer = mem.batch_sizing(10e9, QWEN15, "bf16", context_tokens=8192).batch_size
    assert longer < bf16
    with pytest.raises(ValueError, match="negative"):
        mem.batch_sizing(-1, QWEN15, "bf16")
    with pytest.raises(ValueError, match="unknown dtype"):
        mem.batch_sizing(1e9, QWEN15, "int3")


def _write_gguf(path: Path) -> None:
    """A small real GGUF with the shape keys a llama-family file states."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny judge")
    w.add_context_length(512)
    w.add_block_count(2)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_token_list(["<s>", "a", "b", "c", "d"])
    w.add_tensor("token_embd.weight", np.zeros((5, 8), dtype=np.float32))
    w.add_tensor("output.weight", np.zeros((5, 8), dtype=np.float32))
    w.add_tensor("blk.0.ffn_up.weight", np.zeros((16, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_shape_and_estimate_from_a_gguf_header(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "tiny.gguf"
    _write_gguf(path)
    shape = mc.model_shape(path)
    assert shape == mem.ModelShape(parameters=40 + 40 + 128, layers=2, hidden=8, heads=2,
                                   kv_heads=1, intermediate=16, vocab=5, largest_tensor=128,
                                   file_bytes=path.stat().st_size, gguf=True)
    assert shape.kv_width == 4  # 1 key/value head of 8 / 2
    need = mc.memory_needed(path, "fp32", "cpu", batch_size=1, context_tokens=10)
    assert need.weights == 208 * 4 and need.head == 0
    assert need.working == mem.working_bytes(shape, "fp32", 1, 10)
    # Not converted yet: the first use converts (runtime + file + a shard + the largest tensor twice).
    assert need.conversion == (mem.RUNTIME_BYTES + shape.file_bytes + mem.CONVERSION_SHARD_BYTES
                               + 2 * 4 * 128)
    half = mc.memory_needed(path, "bf16", "cpu", batch_size=1, context_tokens=10)
    assert half.weights == 208 * 2 and half.head == 5 * 8 * 4  # the label head's fp32 block
    assert mc.memory_needed(path, "auto", "cpu").dtype == "fp32"
    assert mc.model_shape("org/some-hub-id") is None
    assert mc.memory_plan("openai:http://localhost:1/v1#m").need is None


def test_folder_shape_from_config_and_safetensors(tmp_path):
    from safetensors.numpy import save_file
    folder = tmp_path / "judge"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 3, "hidden_size": 16,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 32,
        "vocab_size": 10}))
    save_file({"a": np.zeros((10, 16), np.float32), "b": np.zeros(7, np.float32)},
              str(folder / "model.safetensors"))
    shape = mc.model_shape(folder)
    assert (shape.parameters, shape.layers, shape.kv_width, shape.largest_tensor, shape.gguf) == \
        (167, 3, 8, 160, False)
    assert mc.memory_needed(folder, "fp32", "cpu").conversion == 0


def test_memory_problem_refuses_with_a_clear_message():
    need = mc.memory_needed("x", "fp32", "cpu", shape=QWEN15)
    assert need.weights == 1_777_088_000 * 4
    assert mem.memory_problem(need, need.peak) is None
    assert mem.memory_problem(need, None) is None  # cannot tell: never refuse
    msg = mem.memory_problem(need, 6 * 10**9)
    assert "needs about" in msg and "6.0 GB of memory available" in msg
    assert "with --dtype bf16-weights" in msg  # 3.6 GB of weights + batch + runtime fit in 6 GB
    assert "choose a smaller judge" in mem.memory_problem(need, 2 * 10**9)
    plan = mem.MemoryPlan(need, 6 * 10**9, msg)
    assert not plan.fits and plan.line().startswith("Memory: about")


# ---------------------------------------------------------------- out of memory, retried
class MemoryLimit:
    """A simulated device: a forward pass holding more than ``tokens`` tokens runs out of memory."""

    def __init__(self, tokens: int, error=MemoryError):
        self.tokens, self.error = tokens, error
        self.refused = 0

    def __call__(self, rows: int, tokens: int) -> None:
        if tokens > self.tokens:
            self.refused += 1
            raise self.error(f"simulated: {tokens} tokens > {self.tokens} (out of memory)")


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    if not default_model_path().is_file():
        try:
            fetch_default_model()
        except ModelLoadError as e:
            pytest.skip(f"bundled SmolLM2 model absent and could not be fetched: {e}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_model(default_model_path(), device="cpu", dtype="fp32")
    torch.set_num_threads(threads)


def _prompts(aspects: tuple[str, ...] = ("coherence",), repeat: int = 1) -> list[ComparisonPrompt]:
    texts = ["The council discussed a new park and the mayor will decide this month.",
             "Residents want trees.", "A meeting happened; a decision follows by month's end.",
             "The mayor promised a playground, trees and a decision after Tuesday's meeting."]
    ctx = ("The city council met on Tuesday to discuss the new park. Residents asked for more "
           "trees and a playground; the mayor promised a decision by the end of the month.")
    tpl = builtin_template("t1", "summary")
    texts = [" ".join([t] * repeat) for t in texts]
    return [tpl.render(ctx, a, b, Aspect.from_name(asp)) for i, a in enumerate(texts)
            for k, b in enumerate(texts) if i != k for asp in aspects]


@pytest.fixture(scope="module")
def fake_judge() -> LoadedModel:
    """FAKE weights (``tests.fakes.fake_tiny_llama``) for the out-of-memory tests: they are about
    what the engine retries and in what order (every comparison once, the p of an unlimited run),
    which is the same code for any weights; the real judge's arithmetic only made them slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    prompts = [p for repeat in (1, 4) for p in _prompts(repeat=repeat)]
    yield fake_tiny_llama(fake_word_tokenizer([t for p in prompts for t in (p.text, p.primer)]))
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def unlimited(loaded) -> np.ndarray:
    """The bundled judge's p of the prompts with no memory limit (the batches of 8 the judge cuts
    by itself)."""
    return np.array([j.p for j in CausalJudge(loaded, batch_size=8).judge(_prompts())])


@pytest.fixture(scope="module")
def fake_unlimited(fake_judge) -> np.ndarray:
    """The FAKE weights' p of the prompts with no memory limit."""
    return np.array([j.p for j in CausalJudge(fake_judge, batch_size=8).judge(_prompts())])


@pytest.mark.parametrize("error", [MemoryError, torch.OutOfMemoryError,
                                   lambda m: RuntimeError(f"DefaultCPUAllocator: not enough memory: {m}")])
def test_out_of_memory_halves_the_batch_and_loses_nothing(fake_judge, fake_unlimited, error):
    prompts = _prompts()
    limit = MemoryLimit(tokens=300, error=error)   # the passes hold 38, 435 and 240 tokens
    judge = CausalJudge(fake_judge, batch_size=8, memory_guard=limit)
    seen: list[int] = []
    got = np.full(len(prompts), np.nan)
    for idx, js in judge.judge_stream(prompts):
        seen += [int(i) for i in idx]
        got[idx] = [j.p for j in js]
    assert sorted(seen) == list(range(len(prompts)))  # every comparison exactly once
    assert limit.refused > 0 and judge.stats["out_of_memory_retries"] == limit.refused
    assert judge.batch_size < 8 and judge.token_budget < 8192  # later batches start smaller
    assert np.max(np.abs(got - fake_unlimited)) < 1e-5  # fp32: only the batch's rounding order differs


class FullWhileWaiting:
    """A simulated device whose memory is full of the caches of prompts still waiting: the first
    single-row pass made while ``judge`` holds waiting prompts runs out of memory, once."""

    def __init__(self):
        self.judge, self.passes, self.refused = None, [], 0

    def __call__(self, rows: int, tokens: int) -> None:
        waiting = self.judge.waiting
        self.passes.append((rows, waiting))
        if rows == 1 and waiting and not self.refused:
            self.refused += 1
            raise torch.OutOfMemoryError("simulated: CUDA out of memory (caches of waiting prompts)")


@pytest.mark.parametrize("repeat", [1, 4], ids=["short texts: a fused pass fails",
                                                "long texts: a cache extension fails"])
def test_running_out_of_memory_while_prompts_wait_runs_them_first(fake_judge, repeat):
    """On a real GPU (an H200 capped 1 GiB above the weights) a batch of 256 ran out of memory on
    a single cache extension: the memory was held by the caches of prompts waiting for their
    micro-batch, and halving one item is not possible. The judge now runs the waiting prompts
    (freeing their caches), halves its batch size and tries the item again: every comparison
    comes once, with the p of an unlimited run."""
    prompts = _prompts(repeat=repeat)
    guard = FullWhileWaiting()
    judge = CausalJudge(fake_judge, batch_size=1, memory_guard=guard)
    guard.judge = judge
    reference = np.array([j.p for j in CausalJudge(fake_judge, batch_size=1).judge(prompts)])
    seen: list[int] = []
    got = np.full(len(prompts), np.nan)
    for idx, js in judge.judge_stream(prompts):
        seen += [int(i) for i in idx]
        got[idx] = [j.p for j in js]
    assert guard.refused == 1 and judge.stats["out_of_memory_retries"] == 1
    assert sorted(seen) == list(range(len(prompts)))  # every comparison exactly once
    assert np.max(np.abs(got - reference)) < 1e-5


def test_a_prompt_that_never_fits_is_an_error_and_other_errors_pass_through(fake_judge):
    prompts = _prompts()[:3]
    with pytest.raises(MemoryError, match="simulated"):
        CausalJudge(fake_judge, memory_guard=MemoryLimit(tokens=10)).judge(prompts)

    def broken(rows, tokens):
        raise ValueError("not a memory problem")
    with pytest.raises(ValueError, match="not a memory problem"):
        CausalJudge(fake_judge, memory_guard=broken).judge(prompts)
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_cpu_sizing_keeps_the_measured_defaults(fake_judge):
    judge = CausalJudge(fake_judge, batch_size=None, token_budget=None)
    assert (judge.batch_size, judge.token_budget) == (mem.CPU_BATCH_SIZE, mem.CPU_TOKEN_BUDGET)


def test_seq2seq_out_of_memory_retry():
    from transformers import T5Config, T5ForConditionalGeneration
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["<pad>", "</s>", "<unk>", "A", "B", *"abcdefghij"])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="</s>",
                                  unk_token="<unk>")
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(vocab), d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=2,
                   pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = T5ForConditionalGeneration(cfg).eval()
    lm = LoadedModel(model, tok, "tiny-t5@random", "tiny-t5", True, torch.device("cpu"), torch.float32)
    prompts = [ComparisonPrompt(text=" ".join("abcdefghij"[: 1 + k % 10]), primer="") for k in range(9)]
    want = np.array([j.p for j in Seq2SeqJudge(lm, batch_size=8).judge(prompts)])
    limit = MemoryLimit(tokens=12)
    judge = Seq2SeqJudge(lm, batch_size=8, memory_guard=limit)
    got = np.array([j.p for j in judge.judge(prompts)])
    assert limit.refused > 0
    assert np.max(np.abs(got - want)) < 1e-5


# ---------------------------------------------------------------- weight-only precision
@pytest.mark.model
def test_bf16_weights_compute_in_fp32_and_stay_batch_invariant(unlimited):
    prompts = _prompts()
    half = load_model(default_model_path(), device="cpu", dtype="bf16-weights")
    matrices = [m.weight for m in half.model.modules() if type(m).__name__.startswith("Stored")]
    assert matrices and all(w.dtype == torch.bfloat16 for w in matrices)
    others = [p for n, p in half.model.named_parameters() if all(p is not w for w in matrices)]
    assert others and all(p.dtype == torch.float32 for p in others)  # norms computed in fp32
    judge = CausalJudge(half, batch_size=8)
    assert judge.model_key.endswith('|bf16-weights|labels=[" A", " B"]')
    assert "bf16-weights" in judge.description
    got = np.array([j.p for j in judge.judge(prompts)])
    judge.batch_size = 3
    again = np.array([j.p for j in judge.judge(prompts)])
    assert np.max(np.abs(got - again)) < 1e-5   # fp32 arithmetic: the batch does not matter
    assert 0 < np.max(np.abs(got - unlimited)) < 1e-2  # the rounded weights do (measured 4.2e-3)


@pytest.mark.model
def test_bf16_weights_judge_the_aspects_of_one_pair_in_one_pass(loaded):
    """The aspects of one pair run fused (one attention mask over the pair and its questions);
    with matrices stored in bf16 the mask is in the dtype the model computes in (fp32)."""
    ctx = "The city council met on Tuesday to discuss the new park and a playground."
    tpl = builtin_template("t1", "summary")
    prompts = [tpl.render(ctx, "A park was discussed.", "Residents want trees.",
                          Aspect.from_name(a)) for a in ("coherence", "fluency", "relevance")]
    full = np.array([j.p for j in CausalJudge(loaded, batch_size=8).judge(prompts)])
    half = load_model(default_model_path(), device="cpu", dtype="bf16-weights")
    got = np.array([j.p for j in CausalJudge(half, batch_size=8).judge(prompts)])
    assert np.max(np.abs(got - full)) < 1e-2


# ---------------------------------------------------------------- first-use conversion
@pytest.mark.model
@pytest.mark.slow
def test_streamed_conversion_equals_transformers_gguf_loading(tmp_path, monkeypatch):
    """The tensor-by-tensor conversion writes exactly the weights ``from_pretrained(gguf_file=)``
    computes (the previous conversion path), so p is identical; its bf16 copy holds what casting
    at load gives."""
    from transformers import AutoModelForCausalLM

    gguf_path = default_model_path()
    if not gguf_path.is_file():
        pytest.skip("bundled SmolLM2 model absent (make setup)")
    monkeypatch.setenv("COMPASSESS_CACHE", str(tmp_path))
    parses = []
    real_init = gguf.GGUFReader.__init__
    monkeypatch.setattr(gguf.GGUFReader, "__init__",
                        lambda self, *a, **k: parses.append(a) or real_init(self, *a, **k))
    maps = []
    real_map_init = gguf.tensor_mapping.TensorNameMap.__init__
    monkeypatch.setattr(gguf.tensor_mapping.TensorNameMap, "__init__",
                        lambda self, *a, **k: maps.append(a) or real_map_init(self, *a, **k))
    streamed = load_model(gguf_path, device="cpu", dtype="fp32")  # converts into tmp_path
    assert len(parses) == 1, parses  # the tokenizer, the config and the tensors: one parse
    assert len(maps) == 1, len(maps)  # the tensor-name map built once, not once per module
    folder = next((tmp_path / "converted").iterdir())
    assert (folder / "model.safetensors.index.json").is_file()  # sharded: written in parts
    reference = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                     dtype=torch.float32).eval()
    ref_state = reference.state_dict()
    new_state = streamed.model.state_dict()
    assert set(ref_state) == set(new_state)
    assert all(torch.equal(ref_state[k], new_state[k]) for k in ref_state)
    # The same config, but for where it came from and what saving a model names (as before).
    skip = {"quantization_config", "_name_or_path", "architectures"}
    ref_config = {k: v for k, v in reference.config.to_dict().items() if k not in skip}
    assert {k: v for k, v in streamed.model.config.to_dict().items() if k not in skip} == ref_config
    assert streamed.model.config.architectures == ["LlamaForCausalLM"]
    ref_loaded = LoadedModel(reference, streamed.tokenizer, streamed.identity, streamed.name, False,
                             streamed.device, torch.float32)
    # The weights and the configuration are equal (above): p on the first context's first four
    # pairs shows the model is the same in use (one pair is as good a witness as twelve).
    prompts = _prompts()[:4]
    p_new = np.array([j.p for j in CausalJudge(streamed).judge(prompts)])
    p_ref = np.array([j.p for j in CausalJudge(ref_loaded).judge(prompts)])
    assert np.max(np.abs(p_new - p_ref)) == 0.0

    # bf16 loads a bf16 copy of the conversion written beside it, with the values from_pretrained
    # would cast the fp32 folder to: the same p as casting at load.
    narrow = load_model(gguf_path, device="cpu", dtype="bf16")
    assert (folder.parent / f"{folder.name}-bf16" / "compassess_source.json").is_file()
    assert narrow.identity == streamed.identity
    cast = _load_dir(folder, streamed.identity, streamed.name, torch.device("cpu"), torch.bfloat16)
    assert all(torch.equal(a, b) for a, b in zip(narrow.model.state_dict().values(),
                                                 cast.model.state_dict().values()))
    p_narrow = np.array([j.p for j in CausalJudge(narrow).judge(prompts)])
    p_cast = np.array([j.p for j in CausalJudge(cast).judge(prompts)])
    assert np.max(np.abs(p_narrow - p_cast)) == 0.0
