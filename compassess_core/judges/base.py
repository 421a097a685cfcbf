"""The judge interface the run loop and the app call, and the eq. 3 arithmetic shared by backends.

A judge turns ``ComparisonPrompt``s into ``Judgement``s: ``p_ij`` from the label words'
log-probabilities (eq. 3 of Liusie et al. 2024). This module must never load a model or import
torch: backends live beside it (``transformers_judge.py``) and are chosen by ``load_judge``.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ..types import ComparisonPrompt, Judgement


@runtime_checkable
class Judge(Protocol):
    """What the run loop needs from a judge backend.

    ``model_key`` identifies the model for the comparison cache (model file/directory/hub id with
    its content hash, dtype and label words) and is stable across processes. ``judge`` returns
    one ``Judgement`` per prompt, in input order; callers hand it chunks that belong to one context,
    sorted by first candidate, so backends can reuse shared prompt prefixes.
    """

    model_key: str
    label_words: tuple[str, str]
    description: str

    def render(self, prompt: ComparisonPrompt) -> str:
        """The exact text fed to the model (chat template applied, primer appended)."""

    def judge(self, prompts: Sequence[ComparisonPrompt]) -> list[Judgement]:
        """Judge every prompt; same order as the input; ``latency_ms`` = chunk time / chunk size."""

    def close(self) -> None:
        """Release the model (memory, threads)."""


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
