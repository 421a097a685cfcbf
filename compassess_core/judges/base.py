"""The judge interface the run loop and the app call, and the eq. 3 arithmetic shared by backends.

A judge turns ``ComparisonPrompt``s into ``Judgement``s: ``p_ij`` from the label words'
log-probabilities (eq. 3 of Liusie et al. 2024). This module must never load a model or import
torch: backends live beside it (``transformers_judge.py``) and are chosen by ``load_judge``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterable, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ..errors import LengthMismatchError
from ..types import ComparisonPrompt, FloatArray, IntArray, Judgement

if TYPE_CHECKING:
    from ..runs.settings import GenerationOptions


@runtime_checkable
class Judge(Protocol):
    """What the run loop needs from a judge backend.

    ``model_key`` identifies the model for the comparison cache (model file/directory/hub id with
    its content hash, dtype and label words) and is stable across processes. Callers hand
    ``judge_stream`` chunks of whole first-candidate groups, so backends can reuse shared prompt
    prefixes; ``context_window`` is the longest prompt in tokens the model takes (None: unknown,
    e.g. a served model), and local judges also count a prompt's tokens (``prompt_tokens``).
    """

    model_key: str
    label_words: tuple[str, ...]
    description: str
    context_window: int | None

    def render(self, prompt: ComparisonPrompt) -> str:
        """The exact text fed to the model (chat template applied, primer appended)."""

    def judge_stream(self, prompts: Sequence[ComparisonPrompt]
                     ) -> Iterator[tuple[IntArray, list[Judgement]]]:
        """Judge the prompts one micro-batch (or group of finished requests) at a time:
        ``(indices into prompts, their judgements)``. Closing the iterator stops the work after
        the batch in flight; every index comes exactly once when it runs to the end. A batch
        may be empty: a checkpoint within a prompt longer than a micro-batch, where a caller
        may stop (nothing of that prompt is kept)."""

    def judge(self, prompts: Sequence[ComparisonPrompt]) -> list[Judgement]:
        """Judge every prompt; same order as the input (``judge_stream`` collected)."""

    def close(self) -> None:
        """Release the model (memory, threads)."""


@runtime_checkable
class TextGenerator(Protocol):
    """A judge that also writes text: what an absolute run writes its synthetic references with.

    Local causal chat models have it (``CausalJudge``); a judge without it can only use uploaded
    anchor texts.
    """

    def generate(self, prompts: Sequence[str], options: "GenerationOptions", *,
                 seeds: Sequence[int | None] | None = None) -> list[str]:
        """The model's replies to user messages (its chat template applied), one per prompt:
        greedy unless ``options.sample``; a sampled reply is drawn after seeding with its seed,
        so the same seed writes the same text."""

    def generation_record(self, options: "GenerationOptions") -> dict:
        """How a text was written (model identity and decoding), stored with each reference."""


def judgements_from_logprobs(logp_a: NDArray[np.float64], logp_b: NDArray[np.float64],
                             latency_ms: float = float("nan")) -> list[Judgement]:
    """Eq. 3 of Liusie et al. 2024: ``p = P(w_A) / (P(w_A) + P(w_B))``, vectorised.

    Parameters
    ----------
    logp_a, logp_b
        Log-probabilities of the two label words under the full next-token softmax, shape (n,).
    latency_ms
        Written into every judgement (the caller's batch time / batch size).

    Returns
    -------
    list[Judgement]
        ``p`` is computed as ``sigmoid(logp_a - logp_b)`` (the same ratio, without overflow when
        both probabilities are tiny); ``label_mass = P(w_A) + P(w_B)``.
    """
    la = np.asarray(logp_a, dtype=np.float64)
    lb = np.asarray(logp_b, dtype=np.float64)
    d = la - lb
    # Stable logistic: exp of a non-positive number only.
    e = np.exp(-np.abs(d))
    p = np.where(d >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    mass = np.exp(la) + np.exp(lb)
    return [Judgement(p=float(p[k]), logp_a=float(la[k]), logp_b=float(lb[k]),
                      label_mass=float(mass[k]), latency_ms=float(latency_ms))
            for k in range(len(p))]


# --------------------------------------------------------------------------- streaming helpers

def deduplicate(seqs: Sequence[Sequence[int]]) -> tuple[list[list[int]], IntArray]:
    """Distinct token sequences (first-seen order) and, per input, the index of its distinct one."""
    uniq: dict[tuple[int, ...], int] = {}
    inverse = np.empty(len(seqs), dtype=np.int64)
    for k, s in enumerate(seqs):
        inverse[k] = uniq.setdefault(tuple(s), len(uniq))
    return [list(t) for t in uniq], inverse


def expand_duplicates(stream: Iterable[tuple[IntArray, FloatArray]], inverse: IntArray
                      ) -> Iterator[tuple[IntArray, FloatArray]]:
    """Turn ``(distinct rows, values)`` batches back into ``(input indices, values)`` batches."""
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(inverse.max() + 2 if len(inverse) else 1))
    for rows, values in stream:
        rows = np.asarray(rows, dtype=np.int64)
        counts = bounds[rows + 1] - bounds[rows]
        members = np.concatenate([order[bounds[r]:bounds[r + 1]] for r in rows]) if len(rows) else rows
        yield members, np.repeat(np.asarray(values), counts, axis=0)


def timed(stream: Iterable[tuple[IntArray, FloatArray]]) -> Iterator[tuple[IntArray, FloatArray, float]]:
    """Add each batch's milliseconds per row (time since the previous batch with rows: an empty
    one, a checkpoint within a long prompt, counts towards the batch it is part of) to a stream."""
    t0 = time.perf_counter()
    for rows, values in stream:
        now = time.perf_counter()
        yield rows, values, (now - t0) * 1000.0 / max(len(rows), 1)
        if len(rows):
            t0 = time.perf_counter()


def collect_rows(stream: Iterable[tuple[IntArray, FloatArray]], n: int, k: int) -> FloatArray:
    """A whole ``(n, k)`` array from a stream of ``(indices, rows)`` batches (NaN where missing)."""
    out = np.full((n, k), np.nan)
    for rows, values in stream:
        out[rows] = values
    return out


def collect_judgements(stream: Iterable[tuple[IntArray, list]], n: int) -> list:
    """All judgements of a ``judge_stream`` in input order.

    Raises
    ------
    LengthMismatchError
        The stream left an input without a judgement (a backend bug).
    """
    out: list = [None] * n
    for rows, judgements in stream:
        for r, j in zip(rows, judgements):
            out[int(r)] = j
    missing = [k for k, j in enumerate(out) if j is None]
    if missing:
        raise LengthMismatchError(f"the judge returned no judgement for {len(missing)} of {n} "
                                  f"prompts (e.g. index {missing[0]})")
    return out
