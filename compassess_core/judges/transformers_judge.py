"""Judge backends on transformers: causal chat models (prefix-cached, batched) and seq2seq (FlanT5).

``p_ij`` follows eq. 3 of Liusie et al. 2024 (EACL): the label words' probabilities under the
model's next-token distribution after the primed answer. Label-word log-probabilities are always
computed in fp32 from the final hidden state of the last position only (one hidden x vocab matmul
per prompt for the full-softmax normaliser), even when the model runs in bf16: bf16 logits quantise
p to a handful of values and break ties and tau. ``bf16-weights`` keeps the matrices in bf16 and
computes everything in fp32 (``loading.StoredLinear``): half the memory, p as batch-invariant as
fp32.

Causal models reuse shared prompt prefixes exactly: prompts are tokenised in full, the shared
prefixes are found by comparing token ids (``prefix_tree.plan_prefixes``), each prefix's key/value
cache is computed once and extended per first candidate, and only the remaining suffixes run per
pair, batched by length with right padding. This module must never write results anywhere or
decide which pairs to compare.
"""

from __future__ import annotations

import gc
import json
import os
import time
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np
import torch

from ..errors import InputError
from ..types import ComparisonPrompt, Judgement
from .base import (collect_judgements, collect_rows, deduplicate, expand_duplicates,
                   judgements_from_logprobs, timed)
from .loading import LoadedModel, dtype_name, precision_name
from .direct_decoder import DirectDecoder
from .prefix_tree import PrefixNode, plan_prefixes
from .tokens import SharedOpeningEncoder

#: Label words read after the primer "Answer: Summary" (causal) / at the first decoder step (seq2seq).
CAUSAL_LABEL_WORDS = (" A", " B")
SEQ2SEQ_LABEL_WORDS = ("A", "B")


def _configure_cpu_attention() -> None:
    # Grouped-query attention (SmolLM2: 9 query heads on 3 key/value heads; Qwen2.5, Llama 3)
    # computed by SDPA itself instead of transformers copying every key and value head per query
    # head first (``repeat_kv``). transformers only does so without a mask, and the judge's
    # batches always carry one (padding, tree attention); on CPU the masked GQA kernel gives the
    # same p to the bit and judged SummEval 11% faster (one thread). Not on a GPU, where a mask
    # sends GQA to the slow math kernel. A value the user set is left alone.
    os.environ.setdefault(SDPA_FORCE_GQA, "1")


#: transformers' switch for the above (``integrations.sdpa_attention.use_gqa_in_sdpa``).
SDPA_FORCE_GQA = "TRANSFORMERS_SDPA_FORCE_GQA"


def _configure_cpu_threads() -> None:
    # COMPASSESS_THREADS (or `compassess run --threads`) wins: on a machine shared with other busy
    # processes one thread can beat two, whose OpenMP barriers stall whenever a core is taken.
    wanted = os.environ.get("COMPASSESS_THREADS", "").strip()
    if wanted.isdigit() and int(wanted) > 0:
        torch.set_num_threads(int(wanted))
        return
    # torch defaults to the physical core count; honour a narrower CPU affinity (containers, taskset).
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    if torch.get_num_threads() > n:
        torch.set_num_threads(n)



def distinct_label_ids(words: Sequence[str], one_token) -> tuple[int, ...]:
    """The token id ``one_token(word)`` gives each label word (it raises for a word that is not
    one token); two words on one token could not be told apart.

    Raises
    ------
    InputError
        A word that is not one token, or two words on the same token.
    """
    ids = tuple(one_token(w) for w in words)
    if len(set(ids)) != len(ids):
        raise InputError(f"label words {tuple(words)} map to the same token")
    return ids

_OOM_WORDS = ("out of memory", "can't allocate memory", "not enough memory", "cannot allocate memory")
_T = TypeVar("_T")
#: ``memory_guard(rows, tokens)`` is called before every forward pass with the rows of the batch and
#: the tokens it holds keys and values for (cached prefix + padded suffix, summed over rows); it may
#: raise an out-of-memory error (tests simulate a memory limit with it).
MemoryGuard = Callable[[int, int], None]


def is_out_of_memory(error: BaseException) -> bool:
    """An allocation failure: ``torch.OutOfMemoryError`` (CUDA), ``MemoryError``, or the
    RuntimeError torch's CPU allocator raises ("DefaultCPUAllocator: not enough memory")."""
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if isinstance(error, MemoryError) or (oom is not None and isinstance(error, oom)):
        return True
    return isinstance(error, RuntimeError) and any(w in str(error).lower() for w in _OOM_WORDS)


class _FP32Head:
    """Full-vocabulary log-softmax of the last position, in fp32, from the final hidden state.

    An fp32 output embedding is used as it is; a narrower one (bf16 model, bf16-weights) is
    upcast a block of ``HEAD_ROWS`` vocabulary rows at a time (exact: bf16 values upcast
    exactly), so this is the model's own head evaluated without rounding the logits and without
    a second, fp32 copy of the vocabulary matrix.
    """

    HEAD_ROWS = 16384
    #: Vocabulary rows per block of the running log-sum-exp on CPU (:meth:`label_logprobs`).
    CPU_BLOCK = 4096

    def __init__(self, model: torch.nn.Module, scale: float = 1.0):
        head = model.get_output_embeddings()
        self.weight = head.weight.detach()
        bias = getattr(head, "bias", None)
        fb = getattr(model, "final_logits_bias", None)  # BART-style seq2seq
        b = bias.detach().float() if bias is not None else None
        if fb is not None:
            b = fb.detach().float().reshape(-1) + (b if b is not None else 0)
        self.bias = b
        self.scale = scale
        cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        self.logit_scale = getattr(cfg, "logit_scale", None)

    def _logits(self, h: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if w.dtype == torch.float32:
            return h @ w.T
        return torch.cat([h @ w[i:i + self.HEAD_ROWS].float().T
                          for i in range(0, w.shape[0], self.HEAD_ROWS)], dim=1)

    def logprobs(self, hidden: torch.Tensor, ids: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """(logp_a, logp_b) for hidden states (B, H) of the positions that predict the label word."""
        out = self.label_logprobs(hidden, ids)
        return out[:, 0], out[:, 1]

    def label_logprobs(self, hidden: torch.Tensor, ids: Sequence[int]) -> np.ndarray:
        """Log-probabilities (B, k) of ``k`` label tokens under the full fp32 next-token softmax.

        On CPU the normaliser is a running log-sum-exp over blocks of ``CPU_BLOCK`` vocabulary
        rows (each block's logits stay in the core's cache instead of a (B, vocabulary)
        matrix written to memory and read back three times: 8-rows calls cost the same, 64-120
        rows 1.6-3.7x less on a loaded machine); the label tokens' logits are computed on their
        own. The same sum, up to fp32 rounding."""
        h = hidden.float()
        if self.scale != 1.0:
            h = h * self.scale
        if self.weight.device.type != "cpu":
            logits = self._finish(self._logits(h), slice(None))
            lse = torch.logsumexp(logits, dim=-1)
            return (logits[:, list(ids)] - lse[:, None]).double().cpu().numpy()
        w, step = self.weight, self.CPU_BLOCK
        maxes, sums = [], []
        for i in range(0, w.shape[0], step):
            block = self._finish(h @ w[i:i + step].float().T, slice(i, i + step))
            top = block.amax(dim=-1, keepdim=True).clamp_(min=torch.finfo(torch.float32).min)
            maxes.append(top)
            sums.append(block.sub_(top).exp_().sum(dim=-1, keepdim=True))
        top, sums = torch.cat(maxes, dim=1), torch.cat(sums, dim=1)
        most = top.amax(dim=-1, keepdim=True)
        lse = (sums * (top - most).exp()).sum(dim=-1, keepdim=True).log() + most
        cols = list(ids)
        labels = self._finish(h @ w[cols].float().T, cols)
        return (labels - lse).double().cpu().numpy()

    def _finish(self, logits: torch.Tensor, cols) -> torch.Tensor:
        """The model's own steps after the head's matmul, on the vocabulary columns ``cols``."""
        if self.bias is not None:
            logits = logits + self.bias[cols]
        if self.logit_scale is not None:
            logits = logits * self.logit_scale
        if self.softcap is not None:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits


def _model_key(identity: str, precision: str, label_words: tuple[str, str]) -> str:
    return f"{identity}|{precision}|labels={json.dumps(list(label_words))}"


def _context_window(loaded: LoadedModel) -> int | None:
    """The longest prompt, in tokens, the model was built for (None when it does not say)."""
    cfg = loaded.model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    window = getattr(cfg, "max_position_embeddings", None)
    if window is None and loaded.is_seq2seq:
        # T5-style relative positions have no hard limit; the tokenizer states the trained length.
        window = getattr(loaded.tokenizer, "model_max_length", None)
    return int(window) if window and window < 10_000_000 else None


class _LocalJudge:
    """What both local judges share: model handles, the cache key, and the streaming API.

    Judgements come back one forward micro-batch at a time (``judge_stream``), so a caller can
    store each batch, report progress and stop between batches; ``judge`` collects them.
    """

    kind = "local"

    def _setup(self, loaded: LoadedModel, label_words: Sequence[str], batch_size: int | None,
               token_budget: int | None, memory_guard: MemoryGuard | None = None) -> None:
        if batch_size is not None and batch_size < 1:
            raise InputError(f"batch size must be at least 1, got {batch_size}")
        self.loaded = loaded
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.device = loaded.device
        self.label_words = tuple(label_words)
        sizing = self._sizing() if batch_size is None or token_budget is None else None
        self.batch_size = batch_size if batch_size is not None else sizing.batch_size
        self.token_budget = max(token_budget if token_budget is not None else sizing.token_budget, 1)
        self.memory_guard = memory_guard
        self._label_ids = self._resolve_label_ids()
        self.model_key = _model_key(loaded.identity, precision_name(loaded), self.label_words)
        self.description = (f"{loaded.name} ({self.kind}, {loaded.device.type}, "
                            f"{precision_name(loaded)})")
        self.context_window = _context_window(loaded)
        self.stats = {"prompt_tokens": 0, "model_tokens": 0, "forward_passes": 0,
                      "out_of_memory_retries": 0}
        if self.device.type == "cpu":
            _configure_cpu_threads()
            _configure_cpu_attention()

    def _sizing(self):
        """The micro-batch size when the caller leaves it open: the CPU defaults (sized for
        speed), or on a GPU from its free memory once the weights are on it
        (``memory.batch_sizing``)."""
        from .memory import (CPU_BATCH_SIZE, CPU_TOKEN_BUDGET, Sizing, batch_sizing,
                             shape_from_config)
        if self.device.type != "cuda":
            return Sizing(CPU_BATCH_SIZE, CPU_TOKEN_BUDGET)
        free, _ = torch.cuda.mem_get_info(self.device)
        params = sum(p.numel() for p in self.model.parameters())
        shape = shape_from_config(self.model.config, params)
        return batch_sizing(int(free), shape, dtype_name(self.loaded.dtype))

    def _guarded(self, run: Callable[[list], _T], items: list,
                 tokens: Callable[[list], int],
                 make_room: Callable[[], Iterator[_T]] | None = None) -> Iterator[_T]:
        """``run`` over ``items`` in parts within the current batch size and token budget; a part
        that runs out of memory halves both and is run again as two halves, so every item is
        run (and reported) exactly once. ``tokens(part)``: its padded suffix tokens.
        ``make_room``: what frees memory when a single item does not fit (the prompts waiting
        with their caches, run now: its items are yielded too); the item is then tried once more.

        Raises
        ------
        MemoryError and the like
            A single item that does not fit, even after ``make_room`` (nothing smaller to try).
        """
        queue = [items]
        while queue:
            part = queue.pop(0)
            if len(part) > 1 and (len(part) > self.batch_size or tokens(part) > self.token_budget):
                cut = self.batch_size if len(part) > self.batch_size else len(part) // 2
                queue[0:0] = [part[:cut], part[cut:]]  # sizes shrank since the part was cut
                continue
            failed = False
            try:
                out = run(part)
            except Exception as e:  # noqa: BLE001 - only an allocation failure is retried
                if not is_out_of_memory(e) or (len(part) == 1 and make_room is None):
                    raise
                failed = True
            if failed and len(part) == 1:  # one item: free what waits, then its last try
                yield from self._made_room(make_room)
                make_room = None
                queue.insert(0, part)
                continue
            if failed:  # outside the except block, so the failed pass's tensors are freed
                self._release()
                self.stats["out_of_memory_retries"] += 1
                half = len(part) // 2
                self.batch_size = max(1, min(self.batch_size, half))
                self.token_budget = max(1, min(self.token_budget, tokens(part)) // 2)
                queue[0:0] = [part[:half], part[half:]]
                continue
            yield out

    def _made_room(self, make_room: Callable[[], Iterator]) -> Iterator:
        """After an out-of-memory error: the batch size halved (fewer prompts wait with their
        caches from now on) and ``make_room``'s prompts run, their caches freed."""
        self._release()
        self.stats["out_of_memory_retries"] += 1
        self.batch_size = max(1, self.batch_size // 2)
        yield from make_room()
        self._release()

    def _with_room(self, attempt: Callable[[], Iterator], make_room: Callable[[], Iterator]) -> Iterator:
        """``yield from attempt()`` (a cache extension: it yields checkpoints only, so it may be
        run again); when it runs out of memory, :meth:`_made_room` and one more try."""
        try:
            return (yield from attempt())
        except Exception as e:  # noqa: BLE001 - only an allocation failure is retried
            if not is_out_of_memory(e):
                raise
        yield from self._made_room(make_room)  # outside the except block: the failed pass is freed
        return (yield from attempt())

    def _release(self) -> None:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _check_memory(self, rows: int, tokens: int) -> None:
        if self.memory_guard is not None:
            self.memory_guard(rows, tokens)

    def _unique_stream(self, seqs: list[list[int]],
                       label_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    def render(self, prompt: ComparisonPrompt) -> str:
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        raise NotImplementedError

    def render_all(self, prompts: Sequence[ComparisonPrompt]) -> list[str]:
        """:meth:`render` of every prompt."""
        return [self.render(p) for p in prompts]

    def _split(self, widths: np.ndarray) -> list[np.ndarray]:
        """Cut length-sorted items into micro-batches within batch_size and token_budget."""
        out, cur = [], []
        for pos in range(len(widths)):
            longest = int(widths[pos])  # ascending: the newcomer is the longest so far
            if cur and (len(cur) >= self.batch_size or (len(cur) + 1) * longest > self.token_budget):
                out.append(np.asarray(cur))
                cur = []
            cur.append(pos)
        if cur:
            out.append(np.asarray(cur))
        return out

    def prompt_tokens(self, prompts: Sequence[ComparisonPrompt]) -> np.ndarray:
        """Exact token counts of prompts as the model sees them (template and primer included)."""
        return np.array([len(s) for s in self.encode(self.render_all(prompts))],
                        dtype=np.int64)

    def label_stream(self, seqs: list[list[int]],
                     label_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(indices, log-probs (len(indices), k))`` per micro-batch, over every input sequence;
        identical sequences are computed once and reported for each of their indices."""
        self.stats["prompt_tokens"] += sum(len(s) for s in seqs)
        unique, inverse = deduplicate(seqs)
        yield from expand_duplicates(self._unique_stream(unique, label_ids), inverse)

    def label_logprobs_for_ids(self, seqs: list[list[int]], label_ids: Sequence[int]) -> np.ndarray:
        """Log-probabilities (n, k) of ``k`` label tokens after each token sequence."""
        return collect_rows(self.label_stream(seqs, label_ids), len(seqs), len(label_ids))

    def logprobs_for_ids(self, seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """(logp_a, logp_b) for token sequences; identical sequences are computed once."""
        out = self.label_logprobs_for_ids(seqs, self._label_ids)
        return out[:, 0], out[:, 1]

    def label_logprobs_stream(self, prompts: Sequence[ComparisonPrompt], words: Sequence[str]
                              ) -> Iterator[tuple[np.ndarray, np.ndarray, float]]:
        """``(indices, log-probs of words (len(indices), k), ms per prompt)`` per micro-batch.

        The primer of the first prompt is used to tokenise the words (all prompts share it).
        """
        if not prompts:
            return
        ids = self.label_token_ids(words, prompts[0].primer)
        seqs = self.encode(self.render_all(prompts))
        yield from timed(self.label_stream(seqs, ids))

    def label_logprobs(self, prompts: Sequence[ComparisonPrompt],
                       words: Sequence[str]) -> tuple[np.ndarray, float]:
        """Log-probabilities (n, k) of ``words`` after each prompt's primer, and ms per prompt."""
        if not prompts:
            return np.empty((0, len(words))), float("nan")
        t0 = time.perf_counter()
        rows = collect_rows(((i, lp) for i, lp, _ in self.label_logprobs_stream(prompts, words)),
                            len(prompts), len(words))
        return rows, (time.perf_counter() - t0) * 1000.0 / len(prompts)

    def judge_stream(self, prompts: Sequence[ComparisonPrompt]
                     ) -> Iterator[tuple[np.ndarray, list[Judgement]]]:
        """Eq. 3 for the prompts, ``(indices, judgements)`` one forward micro-batch at a time;
        ``latency_ms`` = the micro-batch's time / its size."""
        if not prompts:
            return
        seqs = self.encode(self.render_all(prompts))
        for idx, lp, ms in timed(self.label_stream(seqs, self._label_ids)):
            yield idx, judgements_from_logprobs(lp[:, 0], lp[:, 1], ms)

    def judge(self, prompts: Sequence[ComparisonPrompt]) -> list[Judgement]:
        """Eq. 3 for every prompt, in input order."""
        return collect_judgements(self.judge_stream(prompts), len(prompts))

    def close(self) -> None:
        self.model = self._head = None  # type: ignore[assignment]
        self.loaded = None  # type: ignore[assignment]
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


#: At most this many mask values are kept for reuse (``CausalJudge._causal_after``): 64 MB in fp32.
MASK_CACHE_ELEMENTS = 1 << 24

#: Rows that may wait for one call of the full-vocabulary head (``CausalJudge._shared_head``).
HEAD_ROWS = 64

#: A forward pass's fixed host cost on CPU in multiply-adds of arithmetic (about a millisecond
#: of one core: the direct decoder's passes cost 0.7-1 ms of host work each), and the context
#: length a recomputed token attends to in that estimate (``CausalJudge._cpu_thin``).
PASS_HOST_MACS = 25_000_000
THIN_CONTEXT = 1024

#: ``CausalJudge.thin`` on a GPU: up to this many tokens of a candidate's opening are recomputed
#: per row so that the aspects of a pair's siblings fill one fused pass.
THIN_ON_GPU = 48


class CausalJudge(_LocalJudge):
    """A causal chat model judging with its chat template, a primed answer and prefix-cached batches.

    Parameters
    ----------
    loaded
        The model and tokenizer (``loading.load_model``).
    label_words
        Read at the position after the primer; each must be one token there (see ``_label_ids``).
    batch_size
        Suffixes run together per forward pass (sorted by length so padding stays small); None:
        8 on CPU, on a GPU sized from its free memory (``memory.batch_sizing``).
    token_budget
        Upper bound on batch size x padded suffix length, to bound activation memory for long
        texts; None: 8192 on CPU, sized with the batch on a GPU. A micro-batch that runs out of
        memory halves both and is run again as two halves (no comparison lost or repeated).
    prefix_cache
        Reuse shared prefixes' key/value caches (exact); False runs every prompt in full (batched).
    min_saving
        A prefix gets its own cache only if that saves at least this many prompt tokens.
    fuse_suffix
        A cached prefix whose prompts all end within this many tokens of it (the aspects of one
        pair: only the question differs) is computed together with those endings in one
        forward pass (:meth:`_run_fused`), instead of a cache and then a batch of short suffixes
        on copies of it.
    thin
        A child prefix at most this many tokens longer than its parent gets no cache of its
        own: its fusable descendants join the parent's fused passes, and its prompts (and
        those of its thin descendants) run as suffixes on the parent's cache
        (:meth:`_fused_and_cached`). None: on CPU the tokens whose arithmetic costs what a
        pass costs the host (:meth:`_cpu_thin`: 0 for any real judge, whose recomputed tokens
        cost more than the saved passes gain; up to 48 for a tiny test model), and
        ``THIN_ON_GPU`` on a GPU, where a small forward pass costs its
        launches, not its tokens (an H200 ran one pass per pair, and with one aspect 64 passes
        for 240 SummEval comparisons: 3 now).
    window
        Leaves wait in a window of ``window * batch_size`` before being length-sorted into
        batches; larger windows pad less but keep more prefix caches alive. They wait no longer
        than the prefix caches built meanwhile take one ``token_budget`` of tokens: a caller
        that sizes the budget by time (``pacing.BatchPacer``) hears from the judge every
        budget's worth of work.
    memory_guard
        Called with (rows, tokens) before every forward pass (``MemoryGuard``); tests simulate a
        memory limit with it.
    direct
        Run the passes with ``direct_decoder.DirectDecoder`` (each row's attention to its
        cached prefix without a mask or a copy of the cache) where it supports the model
        (Llama and Qwen2 shapes, fp32 on CPU); None or True: wherever supported, False: never
        (transformers' forward, the reference the tests compare it with).
    """

    kind = "causal"

    def __init__(self, loaded: LoadedModel, label_words: tuple[str, str] = CAUSAL_LABEL_WORDS,
                 batch_size: int | None = 8, token_budget: int | None = 8192,
                 prefix_cache: bool = True, min_saving: int = 32, window: int = 4,
                 fuse_suffix: int = 48, thin: int | None = None, memory_guard: MemoryGuard | None = None,
                 direct: bool | None = None):
        self._setup(loaded, label_words, batch_size, token_budget, memory_guard)
        self.min_saving = min_saving
        self.window = window
        self.fuse_suffix = fuse_suffix
        self._thin_arg = thin
        self.thin = thin if thin is not None else THIN_ON_GPU if self.device.type == "cuda" else 0
        # Prompt tokens computed (prefix caches) since the last micro-batch was handed out.
        self._unreported = 0
        self._head = _FP32Head(self.model)
        self._base = self.model.get_decoder() if hasattr(self.model, "get_decoder") else self.model.base_model
        self._pad_id = self._pad_token_id()
        self.prefix_cache = prefix_cache and self._plain_cache()
        self._encoder = SharedOpeningEncoder(self.tokenizer)
        supported = DirectDecoder.supports(self.model, self.device, self.loaded.dtype)
        self._head_shared = False
        emb = self.model.get_input_embeddings()
        self._head_weights = int(self._head.weight.numel())
        self._layer_weights = max(sum(p.numel() for p in self._base.parameters())
                                  - (emb.weight.numel() if emb is not None else 0), 1)
        if self._thin_arg is None and self.device.type != "cuda":
            self.thin = self._cpu_thin()
        self._direct = DirectDecoder(self.model) if (direct is None or direct) and supported else None

    def _cpu_thin(self) -> int:
        """``thin`` on CPU: the tokens per row whose arithmetic costs about what a forward
        pass costs the host (``PASS_HOST_MACS``), at most ``THIN_ON_GPU``. Recomputing a thin
        prefix's tokens in each of its rows saves that prefix's own pass: worth it for a
        judge whose layers are tiny, never for a real one (SmolLM2-135M: a token is ~140
        million multiply-adds, so 0, as before)."""
        cfg = self.model.config
        cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        layers = int(getattr(cfg, "num_hidden_layers", 1) or 1)
        width = int(getattr(cfg, "hidden_size", 1) or 1)
        per_token = self._layer_weights + 2 * layers * width * THIN_CONTEXT
        return int(min(THIN_ON_GPU, PASS_HOST_MACS // per_token))

    # ------------------------------------------------------------------ rendering and tokens
    def render(self, prompt: ComparisonPrompt) -> str:
        """Chat template around the user message ``text`` with the generation prompt, then ``primer``.

        A tokenizer without a chat template gets ``text + "\\n\\n" + primer``.
        """
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            head = tok.apply_chat_template([{"role": "user", "content": prompt.text}], tokenize=False,
                                           add_generation_prompt=True)
            return head + prompt.primer
        return prompt.text + "\n\n" + prompt.primer

    def render_all(self, prompts: Sequence[ComparisonPrompt]) -> list[str]:
        """:meth:`render` of every prompt, the chat template applied once.

        A template that places the user message verbatim (the same text before and after it,
        whatever the message: checked with two probe messages with spaces, newlines and
        template syntax at their edges, which a template that trims, escapes or inspects its
        content would change) is rendered once and each prompt's text put between its two
        halves; the first prompt of every call is also checked against a full rendering. Any
        other template is applied per prompt (:meth:`render`)."""
        frame = self._chat_frame()
        if frame is None or not prompts:
            return [self.render(p) for p in prompts]
        head, tail = frame
        out = [head + p.text + tail + p.primer for p in prompts]
        if out[0] != self.render(prompts[0]):
            self.__dict__["_frame"] = None  # not verbatim after all: per prompt from now on
            return [self.render(p) for p in prompts]
        return out

    def _chat_frame(self) -> tuple[str, str] | None:
        """(before, after) the user message in the chat template's rendering, when the template
        places the message verbatim (:meth:`render_all`); None otherwise."""
        if "_frame" in self.__dict__:
            return self.__dict__["_frame"]
        frame = None
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            probes = (" \n{{ x }} probe \u00e9 one\n ", "\n\n{% raw %}' probe\" two ")
            parts = []
            for probe in probes:
                text = tok.apply_chat_template([{"role": "user", "content": probe}], tokenize=False,
                                               add_generation_prompt=True)
                parts.append(tuple(text.split(probe)) if text.count(probe) == 1 else None)
            if parts[0] is not None and parts[0] == parts[1]:
                frame = parts[0]
        self.__dict__["_frame"] = frame
        return frame

    # ------------------------------------------------------------------ writing text
    def generate(self, prompts: Sequence[str], options, *,
                 seeds: Sequence[int | None] | None = None) -> list[str]:
        """``base.TextGenerator.generate``: each prompt on its own (no padding, so a greedy reply
        does not depend on the other prompts), the reply's special tokens dropped."""
        tok = self.tokenizer
        chat = bool(getattr(tok, "chat_template", None))
        kw = dict(max_new_tokens=options.max_new_tokens, do_sample=options.sample,
                  pad_token_id=tok.pad_token_id or tok.eos_token_id)
        if options.sample:
            kw.update(temperature=options.temperature, top_p=options.top_p)
        else:
            kw.update(temperature=None, top_p=None, top_k=None)
        out = []
        for k, prompt in enumerate(prompts):
            rendered = (tok.apply_chat_template([{"role": "user", "content": prompt}],
                                                tokenize=False, add_generation_prompt=True)
                        if chat else prompt + "\n\n")
            enc = tok(rendered, return_tensors="pt", add_special_tokens=not chat)
            enc = {name: v.to(self.loaded.device) for name, v in enc.items()}
            seed = None if seeds is None else seeds[k]
            if options.sample and seed is not None:
                torch.manual_seed(int(seed))
            with torch.inference_mode():
                ids = self.model.generate(**enc, **kw)
            out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
        return out

    def generation_record(self, options) -> dict:
        """``base.TextGenerator.generation_record``."""
        return dict(model=self.loaded.identity, max_new_tokens=options.max_new_tokens,
                    sample=options.sample, temperature=options.temperature if options.sample else None,
                    top_p=options.top_p if options.sample else None)

    def _add_special(self, text: str) -> bool:
        # A chat template writes its own BOS/special tokens; plain text gets the tokenizer's.
        bos = getattr(self.tokenizer, "bos_token", None)
        if getattr(self.tokenizer, "chat_template", None):
            return False
        return not (bos and text.startswith(bos))

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of rendered prompts, exactly as a one-at-a-time forward pass would see them."""
        add = [self._add_special(t) for t in texts]
        out: list[list[int] | None] = [None] * len(texts)
        for flag in (True, False):
            idx = [i for i, a in enumerate(add) if a == flag]
            if idx:
                # A chunk's shared opening (header, context) is tokenised once (``tokens``).
                enc = self._encoder.encode([texts[i] for i in idx], flag)
                for i, ids in zip(idx, enc):
                    out[i] = ids
        return out  # type: ignore[return-value]

    def _resolve_label_ids(self) -> tuple[int, ...]:
        # Tokenised in context so SentencePiece-style word-initial pieces come out right.
        return self.label_token_ids(self.label_words, "Answer: Summary")

    def _pad_token_id(self) -> int:
        tok = self.tokenizer
        for cand in (tok.pad_token_id, tok.eos_token_id, 0):
            if cand is not None:
                return int(cand if not isinstance(cand, list) else cand[0])
        return 0

    def _plain_cache(self) -> bool:
        # Sliding-window / chunked layers drop old keys: a reused prefix cache would not be exact.
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer
        try:
            cache = DynamicCache(config=self.model.config)
        except Exception:
            return False
        return all(type(layer) is DynamicLayer for layer in cache.layers)

    # ------------------------------------------------------------------ model calls
    def _make_cache(self, kv: list[tuple[torch.Tensor, torch.Tensor]], batch: int):
        """A DynamicCache over a batch-1 prefix, broadcast to ``batch`` rows without copying.

        The layers' update concatenates new keys onto these views, producing fresh tensors, so the
        prefix cache itself is never modified and can be reused.
        """
        from transformers import DynamicCache
        cache = DynamicCache(config=self.model.config)
        for layer, (k, v) in zip(cache.layers, kv):
            layer.lazy_initialization(k, v)
            layer.keys = k.expand(batch, -1, -1, -1) if batch > 1 else k
            layer.values = v.expand(batch, -1, -1, -1) if batch > 1 else v
        return cache

    def _checkpoint(self, label_ids) -> tuple[np.ndarray, np.ndarray]:
        """An empty micro-batch: a point within a long prompt where a caller may stop."""
        return np.empty(0, dtype=np.int64), np.empty((0, len(label_ids)))

    def _prefill(self, seq: list[int], start: int, end: int, kv, label_ids) -> Iterator:
        """The cache of ``seq[:end]`` from the cache ``kv`` of ``seq[:start]`` (None when
        ``start`` is 0), one ``token_budget`` of tokens per forward pass, with a checkpoint
        (:meth:`_checkpoint`) after each but the last: a text longer than one micro-batch may
        hold (a long story) is computed in pieces a caller can stop between, each taking about
        as long as a micro-batch. Returns (``yield from``'s value) the cache as ``[(keys,
        values)]`` per layer. The pieces attend to everything before them, at their own
        positions (the cache's length), so the cache is that of one pass up to fp32 rounding."""
        from transformers import DynamicCache
        step = max(int(self.token_budget), 1)
        cache = self._make_cache(kv, 1) if kv is not None else DynamicCache(config=self.model.config)
        for lo in range(start, end, step):
            hi = min(lo + step, end)
            self._check_memory(1, hi)
            self.stats["model_tokens"] += hi - lo
            self.stats["forward_passes"] += 1
            ids = torch.tensor([seq[lo:hi]], dtype=torch.long).to(self.device)
            if self._direct is not None:
                _, new = self._direct.forward(ids, torch.arange(lo, hi, device=self.device)[None],
                                              [(kv, 0, 1)] if kv is not None else ())
                kv = new if kv is None else [(torch.cat([k0, k], dim=2), torch.cat([v0, v], dim=2))
                                             for (k0, v0), (k, v) in zip(kv, new)]
            else:
                self._base(input_ids=ids, past_key_values=cache, use_cache=True)
            if hi < end:
                self._unreported = 0
                yield self._checkpoint(label_ids)
        if self._direct is not None:
            return kv
        return [(layer.keys, layer.values) for layer in cache.layers]

    def _extend(self, seqs, nodes: list[PrefixNode], base: int, kv, label_ids) -> Iterator:
        """Caches of ``nodes`` (siblings sharing the cache ``kv`` of ``base`` tokens), in as few
        forward passes as memory allows (``_guarded``), as ``yield from``'s value; one node
        longer than the token budget: :meth:`_prefill`, with checkpoints between its pieces."""
        if len(nodes) == 1 and nodes[0].prefix_len - base > self.token_budget:
            return [(yield from self._prefill(seqs[nodes[0].rep], base, nodes[0].prefix_len, kv,
                                              label_ids))]
        width = lambda part: len(part) * max(n.prefix_len - base for n in part)  # noqa: E731
        return [c for caches in self._guarded(lambda part: self._extend_pass(seqs, part, base, kv),
                                              list(nodes), width) for c in caches]

    def _extend_pass(self, seqs, nodes: list[PrefixNode], base: int, kv) -> list:
        """Caches of ``nodes`` (siblings sharing the cache ``kv`` of ``base`` tokens), one forward.

        The extensions are right-padded into one batch; each node's cache is the view of its row
        up to its own prefix length, so the pads after it are never part of it.
        """
        from transformers import DynamicCache
        lens = [n.prefix_len - base for n in nodes]
        ids_np = np.full((len(nodes), max(lens)), self._pad_id, dtype=np.int64)
        for r, n in enumerate(nodes):
            ids_np[r, :lens[r]] = seqs[n.rep][base:n.prefix_len]
        ids = torch.from_numpy(ids_np)
        self._check_memory(len(nodes), len(nodes) * (base + max(lens)))
        self.stats["model_tokens"] += sum(lens)
        self.stats["forward_passes"] += 1
        self._unreported += sum(lens)
        if self._direct is not None:
            pos = torch.arange(base, base + max(lens), device=self.device)[None].expand(len(nodes), -1)
            _, new = self._direct.forward(ids.to(self.device), pos,
                                          [(kv, 0, len(nodes))] if kv is not None else ())
            return [[(k[r:r + 1, :, :lens[r]], v[r:r + 1, :, :lens[r]]) if kv is None else
                     (torch.cat([k0, k[r:r + 1, :, :lens[r]]], dim=2),
                      torch.cat([v0, v[r:r + 1, :, :lens[r]]], dim=2))
                     for (k0, v0), (k, v) in zip(kv or [(None, None)] * len(new), new)]
                    for r in range(len(nodes))]
        cache = self._make_cache(kv, len(nodes)) if kv is not None else DynamicCache(config=self.model.config)
        self._base(input_ids=ids.to(self.device), past_key_values=cache, use_cache=True)
        return [[(layer.keys[r:r + 1, :, :n.prefix_len], layer.values[r:r + 1, :, :n.prefix_len])
                 for layer in cache.layers] for r, n in enumerate(nodes)]

    def _flush(self, seqs, pending: list, label_ids, final: bool) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Run pending leaves in length-sorted micro-batches, yielding each batch's (rows, log-probs);
        keep an unfilled last batch unless final.

        Leaves of different cached prefixes share a batch (``_run_batch`` pads their caches), so
        small groups (6 TopicalChat responses, first candidates split by a shared opening word)
        still fill whole batches.
        """
        if not pending:
            return
        pending.sort(key=lambda it: len(seqs[it[0]]) - it[1])
        widths = np.array([len(seqs[i]) - start for i, start, _ in pending], dtype=np.int64)
        batches = self._split(widths)
        if not final and len(batches[-1]) < self.batch_size:
            keep = [pending[p] for p in batches[-1]]
            batches = batches[:-1]
        else:
            keep = []
        ready = list(pending)
        pending[:] = keep
        for b in batches:
            yield from self._run_batch(seqs, [ready[p] for p in b], label_ids)

    def _run_batch(self, seqs, items: list, label_ids) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """:meth:`_run_batch_now` in as few forward passes as memory allows (``_guarded``: a
        micro-batch that runs out of memory is halved and run again); one suffix longer than
        the token budget runs all but its last budget of tokens first in pieces
        (:meth:`_prefill`, checkpoints between them)."""
        if len(items) == 1:
            i, start, kv = items[0]
            cut = len(seqs[i]) - min(max(int(self.token_budget), 1), len(seqs[i]) - start)
            if cut > start:
                kv = yield from self._prefill(seqs[i], start, cut, kv, label_ids)
                items = [(i, cut, kv)]
        width = lambda part: len(part) * max(len(seqs[i]) - st for i, st, _ in part)  # noqa: E731
        yield from self._guarded(lambda part: self._run_batch_now(seqs, part, label_ids), items,
                                 width)

    def _run_batch_now(self, seqs, items: list, label_ids) -> tuple[np.ndarray, np.ndarray]:
        """One forward pass over the suffixes of ``items`` = [(seq index, cached length, kv)]:
        the rows computed and their label log-probabilities (rows, k).

        Suffixes are right-padded: causal attention never lets a real token see the pads after it.
        When all items share one cache it is broadcast (no mask needed); otherwise the caches are
        stacked, right-padded to the longest, and an attention mask hides each row's cache padding
        while explicit position ids continue each row from its own cache length.
        """
        if self._direct is not None:
            items = self._by_cache(items)
        rows = [i for i, _, _ in items]
        starts = np.array([st for _, st, _ in items], dtype=np.int64)
        lens = np.array([len(seqs[i]) for i in rows], dtype=np.int64) - starts
        width = int(lens.max())
        b = len(items)
        ids_np = np.full((b, width), self._pad_id, dtype=np.int64)
        for r, (i, st, _) in enumerate(items):
            ids_np[r, :lens[r]] = seqs[i][st:]
        ids = torch.from_numpy(ids_np)
        self._check_memory(b, b * (int(starts.max()) + width))
        ids = ids.to(self.device)
        self.stats["model_tokens"] += int(lens.sum())
        self.stats["forward_passes"] += 1
        kv0 = items[0][2]
        if self._direct is not None:
            hidden = self._direct_batch(ids, items, starts)
        elif all(it[2] is kv0 for it in items) and kv0 is None:
            out = self._base(input_ids=ids, use_cache=False)
        elif all(it[2] is kv0 for it in items):
            # One cache for every row, broadcast; the mask is the shape's (``_causal_after``),
            # built once per shape, so transformers builds none per pass.
            past = int(kv0[0][0].shape[-2])  # the cache's own length (= every row's start)
            mask = self._causal_after(past, width, additive=True).expand(b, -1, -1, -1)
            out = self._base(input_ids=ids, past_key_values=self._make_cache(kv0, b), use_cache=True,
                             attention_mask=mask)
        else:
            out = self._base(**self._mixed_inputs(ids, items, starts, lens))
        if self._direct is None:
            hidden = out.last_hidden_state
        h = hidden[torch.arange(b, device=hidden.device), torch.as_tensor(lens - 1, device=hidden.device)]
        self._unreported = 0  # handed out now
        return np.asarray(rows, dtype=np.int64), self._label_rows(h, label_ids)

    def _direct_batch(self, ids: torch.Tensor, items: list, starts: np.ndarray) -> torch.Tensor:
        """:meth:`_run_batch_now`'s pass on the direct decoder (``items`` grouped by cache:
        :meth:`_by_cache`): the rows of each cache attend to it in one call (no copy, no
        mask), positions continue each row from its cache."""
        spans, lo = [], 0
        for r in range(1, len(items) + 1):
            if r == len(items) or items[r][2] is not items[lo][2]:
                spans.append((items[lo][2] if starts[lo] else None, lo, r))
                lo = r
        width = ids.shape[1]
        pos = torch.as_tensor(starts, device=ids.device)[:, None] + torch.arange(width, device=ids.device)
        return self._direct.forward(ids, pos, spans)[0]

    @staticmethod
    def _by_cache(items: list) -> list:
        """``items`` with the rows of one cache next to each other (in first-seen order)."""
        first: dict[int, int] = {}
        for it in items:
            first.setdefault(id(it[2]), len(first))
        return sorted(items, key=lambda it: first[id(it[2])])

    def _causal_after(self, past: int, width: int, additive: bool = False) -> torch.Tensor:
        """The attention mask (1, 1, width, past + width) of ``width`` new tokens after a cache
        of ``past`` tokens: every cached key, then the new ones causally; boolean (True:
        attend) or ``additive`` (:meth:`_attention_mask`). Built once per shape on the device
        and reused; the cache of them is emptied when it would hold more than
        ``MASK_CACHE_ELEMENTS`` values (device memory is for caches and activations)."""
        key = (past, width, additive)
        masks = self.__dict__.setdefault("_masks", {})
        mask = masks.get(key)
        if mask is None:
            if sum(m.numel() for m in masks.values()) + width * (past + width) > MASK_CACHE_ELEMENTS:
                masks.clear()
            dev = self.device
            q = torch.arange(width, device=dev)[:, None]
            k = torch.arange(past + width, device=dev)[None, :]
            mask = (k <= q + past)[None, None]
            mask = masks[key] = self._attention_mask(mask) if additive else mask
        return mask

    def _mixed_inputs(self, ids: torch.Tensor, items: list, starts: np.ndarray, lens: np.ndarray) -> dict:
        """Inputs of a batch whose rows continue different caches: the caches stacked and
        right-padded with zeros, a 4-D mask (each row's cache up to its own length, then its
        suffix causally) and position ids continuing each row from its cache length.

        The rows that continue one cache get it in one indexed copy per layer (not one per
        row), and the mask and positions are built by broadcasting on the device from the
        shape's causal block (:meth:`_causal_after`); the mask goes to the attention as it is
        (transformers builds none: a pass's fixed cost)."""
        from transformers import DynamicCache
        b, width = ids.shape
        lmax = int(starts.max())
        dev = ids.device
        cache = DynamicCache(config=self.model.config)
        ref = next(it[2] for it in items if it[2] is not None)
        groups: dict[int, tuple[list, int, list]] = {}  # id(kv) -> (kv, its length, rows)
        for r, (_, st, kv) in enumerate(items):
            if kv is not None and st:
                groups.setdefault(id(kv), (kv, int(st), []))[2].append(r)
        at = [(kv, st, torch.as_tensor(rows, device=dev) if len(rows) > 1 else rows[0])
              for kv, st, rows in groups.values()]
        for li, layer in enumerate(cache.layers):
            k0, v0 = ref[li]
            # Zeros, not empty memory: a masked key must not be NaN (NaN * 0 weight is still NaN).
            k = k0.new_zeros((b, k0.shape[1], lmax, k0.shape[3]))
            v = v0.new_zeros((b, v0.shape[1], lmax, v0.shape[3]))
            for kv, st, rows in at:
                k[rows, :, :st] = kv[li][0][0]
                v[rows, :, :st] = kv[li][1][0]
            layer.lazy_initialization(k, v)
            layer.keys, layer.values = k, v
        start = torch.as_tensor(starts, device=dev)
        # Each row sees its cache up to its own length, then its suffix causally.
        seen = self._causal_after(lmax, width).expand(b, -1, -1, -1).clone()
        seen[:, 0, :, :lmax] = (torch.arange(lmax, device=dev)[None, :] < start[:, None])[:, None, :]
        pos = start[:, None] + torch.arange(width, device=dev)[None, :]
        return dict(input_ids=ids, past_key_values=cache, use_cache=True,
                    attention_mask=self._attention_mask(seen), position_ids=pos)

    def _attention_mask(self, seen: torch.Tensor) -> torch.Tensor:
        """The additive 4-D mask of ``seen`` (True: attend): 0, or the lowest value of the dtype
        the model computes in (bf16-weights: fp32). Additive, not boolean: every attention
        takes it as it is (a boolean mask is converted per layer and pass by SDPA on CPU)."""
        dtype = self.loaded.dtype
        return torch.zeros(seen.shape, dtype=dtype, device=seen.device).masked_fill_(
            ~seen, torch.finfo(dtype).min)

    def _run_node(self, seqs, node: PrefixNode, kv, pending: list,
                  label_ids) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Queue ``node``'s leaves on its cache ``kv``; build its children's caches in waves.

        A wave is at most ``batch_size`` children extended in one forward pass; its subtrees run
        before the next wave, so only a wave's caches plus those referenced by pending leaves
        (a window of ``window * batch_size``) are alive at once, whatever the chunk size.
        """
        fused, kids, lifted = self._fused_and_cached(seqs, node)
        pending.extend((i, node.prefix_len, kv) for i in node.leaves + lifted)
        # When one more cache does not fit, the prompts waiting with theirs run first (a GPU
        # near its limit: the sizing left the waiting caches out of its count).
        run_waiting = lambda: self._flush(seqs, pending, label_ids, final=True)  # noqa: E731
        fused.sort(key=lambda c: self._fused_width(seqs, c, node.prefix_len))
        widths = np.array([self._fused_width(seqs, c, node.prefix_len) for c in fused],
                          dtype=np.int64)
        for wave in self._split(widths):
            group = [fused[p] for p in wave]
            if len(group) == 1 and widths[wave[0]] > self.token_budget:
                # one pair longer than a micro-batch: its second text first, in pieces
                one = group[0]
                one_kv = yield from self._prefill(seqs[one.rep], node.prefix_len, one.prefix_len,
                                                  kv, label_ids)
                yield self._run_fused(seqs, group, one.prefix_len, one_kv, label_ids)
            else:  # a wave that runs out of memory is halved and run again (``_guarded``)
                fused_width = lambda part: len(part) * max(  # noqa: E731
                    self._fused_width(seqs, c, node.prefix_len) for c in part)
                yield from self._guarded(
                    lambda part: self._run_fused(seqs, part, node.prefix_len, kv, label_ids),
                    group, fused_width, make_room=run_waiting)
        kids.sort(key=lambda c: c.prefix_len)
        for wave in self._split(np.array([c.prefix_len - node.prefix_len for c in kids], dtype=np.int64)):
            group = [kids[p] for p in wave]
            caches = yield from self._with_room(
                lambda: self._extend(seqs, group, node.prefix_len, kv, label_ids), run_waiting)
            for child, child_kv in zip(group, caches):
                yield from self._run_node(seqs, child, child_kv, pending, label_ids)
            if len(pending) >= self.window * self.batch_size:
                yield from self._flush(seqs, pending, label_ids, final=False)
            elif pending and self._unreported >= self.token_budget:
                # The caches built since the last micro-batch took a whole token budget (long
                # texts, or many prompts per cache: the aspects of one pair): hand out what is
                # ready, so a caller hears from the judge (progress, a cancel) every budget.
                yield from self._flush(seqs, pending, label_ids, final=True)

    @property
    def waiting(self) -> int:
        """Prompts queued with their caches for a micro-batch (what holds memory between passes)."""
        return len(getattr(self, "_pending", ()))

    def _fused_and_cached(self, seqs, node: PrefixNode
                          ) -> tuple[list[PrefixNode], list[PrefixNode], list[int]]:
        """``node``'s descendants run fused on its cache (:meth:`_fusable` children, and those
        below a thin child: one at most ``thin`` tokens longer than ``node``), the children
        that get a cache of their own (:meth:`_extend`), and the prompts of thin children, which
        run as suffixes on ``node``'s cache with the rest of the waiting prompts (lifted).

        Why thin children are looked through: the candidates after a pair's first text share
        the template's words and often their own first words ("the", "a"), which split them
        into small subtrees; fused or cached per subtree, the waves held one or two pairs and
        a GPU ran one forward pass per pair (SummEval with one aspect: 64 passes for 240
        comparisons). Run from ``node``'s cache, each row recomputes its thin ancestors' few
        tokens instead (the same keys at the same positions: the same p). ``thin`` is 0 on
        CPU for any real judge (:meth:`_cpu_thin`), where nothing is looked through.
        """
        fused: list[PrefixNode] = []
        cached: list[PrefixNode] = []
        lifted: list[int] = []

        def reach(child: PrefixNode) -> None:
            if self._fusable(seqs, child):
                fused.append(child)
            elif child.prefix_len - node.prefix_len > self.thin:
                cached.append(child)
            else:  # thin: its prompts and its children's run from ``node``'s cache
                lifted.extend(child.leaves)
                for g in child.children:
                    reach(g)

        for child in node.children:
            reach(child)
        return fused, cached, lifted

    def _fusable(self, seqs, node: PrefixNode) -> bool:
        """Whether ``node`` and its prompts' endings run in one pass (:meth:`_run_fused`): no
        deeper cache, two prompts or more, each ending within ``fuse_suffix`` tokens of it."""
        return (not node.children and len(node.leaves) >= 2
                and all(len(seqs[i]) - node.prefix_len <= self.fuse_suffix for i in node.leaves))

    @staticmethod
    def _fused_width(seqs, node: PrefixNode, base: int) -> int:
        """Tokens of ``node``'s fused row: its extension of ``base`` and every prompt's ending."""
        return node.prefix_len - base + sum(len(seqs[i]) - node.prefix_len for i in node.leaves)

    def _run_fused(self, seqs, nodes: list[PrefixNode], base: int, kv,
                   label_ids) -> tuple[np.ndarray, np.ndarray]:
        """One forward pass over ``nodes`` (siblings on the cache ``kv`` of ``base`` tokens), each
        row its node's extension followed by the endings of its prompts (tree attention).

        An attention mask lets an extension token see the cache and the extension before it,
        and an ending's token see the cache, the whole extension and its own ending before it
        (never another prompt's ending); position ids continue each ending from the node's
        length. Each prompt's last token so sees exactly the keys, at exactly the positions, it
        sees when run alone: the same p, without a cache for the node and a batch of short
        suffixes on copies of it. Returns the prompts' rows and label log-probabilities.
        """
        b = len(nodes)
        width = max(self._fused_width(seqs, n, base) for n in nodes)
        # Built in numpy and sent once; the mask is built from them on the device.
        ids = np.full((b, width), self._pad_id, dtype=np.int64)
        pos = np.zeros((b, width), dtype=np.int64)
        part = np.full((b, width), -2, dtype=np.int64)   # -1 extension, k prompt k, -2 pad
        rows, ends_r, ends_c = [], [], []
        for r, node in enumerate(nodes):
            n = node.prefix_len - base
            ids[r, :n] = seqs[node.rep][base:node.prefix_len]
            pos[r, :n] = np.arange(base, node.prefix_len)
            part[r, :n] = -1
            for k, i in enumerate(node.leaves):
                end = seqs[i][node.prefix_len:]
                ids[r, n:n + len(end)] = end
                pos[r, n:n + len(end)] = np.arange(node.prefix_len, node.prefix_len + len(end))
                part[r, n:n + len(end)] = k
                n += len(end)
                rows.append(i)
                ends_r.append(r)
                ends_c.append(n - 1)
        model_tokens = int((part > -2).sum())
        dev = self.device
        part = torch.from_numpy(part).to(dev)
        q, k = part[:, :, None], part[:, None, :]
        order = torch.arange(width, device=dev)
        seen = (order[None, None, :] <= order[None, :, None]) & ((k == -1) | (k == q))
        seen |= (q == -2) & (order[None, None, :] == order[None, :, None])  # a pad sees itself
        self._check_memory(b, b * (base + width))
        self.stats["model_tokens"] += model_tokens
        self.stats["forward_passes"] += 1
        self._unreported = 0  # handed out now
        at_r = torch.tensor(ends_r, device=dev)
        at_c = torch.tensor(ends_c, device=dev)
        if self._direct is not None:  # the tree mask among the row's own tokens only
            hidden, _ = self._direct.forward(torch.from_numpy(ids).to(dev), torch.from_numpy(pos).to(dev),
                                             [(kv, 0, b)] if kv is not None else (),
                                             inner=self._attention_mask(seen[:, None]))
            return np.asarray(rows, dtype=np.int64), self._label_rows(hidden[at_r, at_c], label_ids)
        if kv is not None:
            seen = torch.cat([torch.ones((b, width, base), dtype=torch.bool, device=dev), seen], dim=2)
        mask = self._attention_mask(seen[:, None])
        from transformers import DynamicCache
        cache = self._make_cache(kv, b) if kv is not None else DynamicCache(config=self.model.config)
        out = self._base(input_ids=torch.from_numpy(ids).to(dev), past_key_values=cache,
                         use_cache=True, attention_mask=mask,
                         position_ids=torch.from_numpy(pos).to(dev))
        hidden = out.last_hidden_state
        return np.asarray(rows, dtype=np.int64), self._label_rows(hidden[at_r, at_c], label_ids)

    def _label_rows(self, hidden: torch.Tensor, label_ids) -> np.ndarray | torch.Tensor:
        """The label log-probabilities of a pass's last positions, or, while passes share the
        head (:meth:`_shared_head`), their hidden states, for the head to run on later."""
        if self._head_shared:
            return hidden
        return self._head.label_logprobs(hidden, label_ids)

    def _shared_head(self, stream: Iterator, label_ids) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The passes' hidden states through the full-vocabulary head several passes at a time.

        The fp32 head reads the whole vocabulary matrix once per call whatever the rows (49,152 x
        576 for SmolLM2), so on CPU a call of 8 rows costs nearly what one of 64 does. When the
        layers' own arithmetic per pass is smaller than that matrix (a small model, short
        suffixes), the rows of several passes wait and share one call: at most ``HEAD_ROWS``
        rows, and only while the passes since the last call computed fewer than ``HEAD_ROWS``
        times the head's weights in layer weights x tokens, so a judge whose passes are real
        work (any real judge on CPU: its layers are most of its weights) hands out every pass
        as before. Checkpoints and the end of the stream hand out what waits. Each row's log-
        probabilities are its own (the same arithmetic per row in any batch)."""
        rows_w: list[np.ndarray] = []
        hid_w: list[torch.Tensor] = []
        waiting = 0
        since = self.stats["model_tokens"]

        def hand_out():
            nonlocal waiting, since
            out = (np.concatenate(rows_w), self._head.label_logprobs(torch.cat(hid_w), label_ids))
            rows_w.clear()
            hid_w.clear()
            waiting, since = 0, self.stats["model_tokens"]
            return out

        for rows, values in stream:
            if isinstance(values, torch.Tensor):
                rows_w.append(rows)
                hid_w.append(values)
                waiting += len(rows)
                work = (self.stats["model_tokens"] - since) * self._layer_weights
                if waiting >= HEAD_ROWS or work >= HEAD_ROWS * self._head_weights:
                    yield hand_out()
                continue
            if rows_w:
                yield hand_out()
            yield rows, values
        if rows_w:
            yield hand_out()

    @torch.inference_mode()
    def _unique_stream(self, seqs: list[list[int]],
                       label_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Label log-probabilities of distinct sequences, one forward micro-batch at a time
        (several when they share the head: :meth:`_shared_head`)."""
        self._head_shared = True
        try:
            yield from self._shared_head(self._planned_stream(seqs, label_ids), label_ids)
        finally:
            self._head_shared = False

    def _planned_stream(self, seqs: list[list[int]],
                        label_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The plan's passes: (rows, label log-probabilities or hidden states) per pass."""
        pending: list = []
        self._pending = pending
        if self.prefix_cache:
            root = plan_prefixes(seqs, self.min_saving)
            kv = ((yield from self._extend(seqs, [root], 0, None, label_ids))[0]
                  if root.prefix_len > 0 else None)
            yield from self._run_node(seqs, root, kv, pending, label_ids)
        else:
            pending = [(i, 0, None) for i in range(len(seqs))]
        yield from self._flush(seqs, pending, label_ids, final=True)

    def label_token_ids(self, words: Sequence[str], primer: str) -> tuple[int, ...]:
        """Token ids of label words as they follow ``primer`` (each must be one token there).

        A word is tokenised as ``primer + word`` minus the tokens of the primer; a word that is
        more than one token there, or merges with the primer, is rejected: p would not be the
        probability of the word.

        Raises
        ------
        InputError
            A word that is several tokens after the primer, merges with it, or repeats another.
        """
        base = self.tokenizer(primer, add_special_tokens=False)["input_ids"]

        def one_token(w: str) -> int:
            full = self.tokenizer(primer + w, add_special_tokens=False)["input_ids"]
            extra = full[len(base):]
            if full[:len(base)] != base or len(extra) != 1:
                pieces = self.tokenizer.convert_ids_to_tokens(extra if full[:len(base)] == base else full)
                raise InputError(
                    f"label word {w!r} is not a single token after {primer!r} for this tokenizer "
                    f"(it becomes {pieces}); choose label words that are one token each, "
                    f"e.g. {CAUSAL_LABEL_WORDS}")
            return extra[0]
        return distinct_label_ids(words, one_token)

    def close(self) -> None:
        self._base = None
        super().close()


class Seq2SeqJudge(_LocalJudge):
    """An encoder-decoder model (FlanT5) reading the first decoder step at the label words.

    The encoder is bidirectional, so a shared prompt prefix has different encoder states in every
    prompt and cannot be reused; instead prompts are deduplicated, sorted by length and batched
    with right padding and an attention mask (T5's relative positions need no position offsets),
    and the decoder runs a single step.
    """

    kind = "seq2seq"

    def __init__(self, loaded: LoadedModel, label_words: tuple[str, str] = SEQ2SEQ_LABEL_WORDS,
                 batch_size: int | None = 8, token_budget: int | None = 8192,
                 memory_guard: MemoryGuard | None = None):
        self._setup(loaded, label_words, batch_size, token_budget, memory_guard)
        cfg = self.model.config
        scale = cfg.d_model ** -0.5 if getattr(cfg, "scale_decoder_outputs", False) else 1.0
        self._head = _FP32Head(self.model, scale=scale)
        start = cfg.decoder_start_token_id
        self._start_id = int(start if start is not None else cfg.pad_token_id)
        self._pad_id = int(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0)

    def render(self, prompt: ComparisonPrompt) -> str:
        """The encoder input: the prompt text itself (no chat template, no primer)."""
        return prompt.text

    def _resolve_label_ids(self) -> tuple[int, ...]:
        return self.label_token_ids(self.label_words)

    @torch.inference_mode()
    def _unique_stream(self, seqs: list[list[int]],
                       label_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Length-sorted micro-batches (right-padded, masked) through the encoder and one
        decoder step."""
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        order = np.argsort(lens, kind="stable")
        width = lambda part: len(part) * int(lens[part].max())  # noqa: E731
        for part in self._split(lens[order]):
            yield from self._guarded(lambda rows: self._run_batch(seqs, rows, lens, label_ids),
                                     list(order[part]), width)

    def _run_batch(self, seqs, rows: list, lens: np.ndarray,
                   label_ids) -> tuple[np.ndarray, np.ndarray]:
        """One encoder pass and one decoder step over the prompts ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        width = int(lens[rows].max())
        self._check_memory(len(rows), len(rows) * width)
        ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            ids[r, :lens[i]] = torch.tensor(seqs[i], dtype=torch.long)
            mask[r, :lens[i]] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        self.stats["model_tokens"] += int(lens[rows].sum())
        self.stats["forward_passes"] += 1
        enc = self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        dec_ids = torch.full((len(rows), 1), self._start_id, dtype=torch.long, device=self.device)
        dec = self.model.get_decoder()(input_ids=dec_ids, encoder_hidden_states=enc,
                                       encoder_attention_mask=mask, use_cache=False).last_hidden_state
        return rows, self._head.label_logprobs(dec[:, -1], label_ids)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(x) for x in self.tokenizer(list(texts))["input_ids"]]

    def label_token_ids(self, words: Sequence[str], primer: str = "") -> tuple[int, ...]:
        """Token ids of one-token label words read at the first decoder step (no primer here)."""
        def one_token(w: str) -> int:
            enc = self.tokenizer(w, add_special_tokens=False)["input_ids"]
            if len(enc) != 1:
                raise InputError(
                    f"label word {w!r} is {len(enc)} tokens for this tokenizer "
                    f"({self.tokenizer.convert_ids_to_tokens(enc)}); the first decoder step can only "
                    f"read one-token label words, e.g. {SEQ2SEQ_LABEL_WORDS}")
            return enc[0]
        return distinct_label_ids(words, one_token)
