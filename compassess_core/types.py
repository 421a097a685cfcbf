"""The vocabulary shared by engine, store and UI: datasets, pairs, judgements, comparison tables.

Plain frozen dataclasses and numpy arrays only; nothing here does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class Outcome(enum.Enum):
    """Outcome of one pairwise judgement, seen from the candidate shown first (A)."""

    A = "A"
    B = "B"
    TIE = "tie"
    SKIP = "skip"
    # Neither text is acceptable: no preference between the two (a tie in the 3-class agreement
    # and in rankings), kept apart so a campaign can count how often both were bad.
    BOTH_BAD = "both_bad"


@dataclass(frozen=True)
class Candidate:
    candidate_id: str
    text: str
    system: str | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    row: int | None = None  # row in the source file, for error messages


@dataclass(frozen=True)
class Context:
    context_id: str
    text: str
    candidates: tuple[Candidate, ...]

    @property
    def candidate_ids(self) -> list[str]:
        return [c.candidate_id for c in self.candidates]


@dataclass(frozen=True)
class Dataset:
    """A validated candidate file: contexts in file order, candidates in file order within each."""

    name: str
    contexts: tuple[Context, ...]
    score_columns: tuple[str, ...] = ()
    source: str = ""
    content_hash: str = ""

    def context(self, context_id: str) -> Context:
        for c in self.contexts:
            if c.context_id == context_id:
                return c
        raise KeyError(context_id)

    @property
    def n_candidates(self) -> int:
        return sum(len(c.candidates) for c in self.contexts)

    def head(self, n_contexts: int | None) -> "Dataset":
        """The first ``n_contexts`` contexts (all when None)."""
        if n_contexts is None:
            return self
        return Dataset(self.name, self.contexts[:n_contexts], self.score_columns, self.source,
                       self.content_hash)


@dataclass(frozen=True)
class PairKey:
    """One ordered comparison: candidate ``a_id`` in the first position, ``b_id`` in the second."""

    context_id: str
    a_id: str
    b_id: str


@dataclass(frozen=True)
class CandidateKey:
    """One candidate of one context: what a prompt-scoring run scores once."""

    context_id: str
    candidate_id: str


@dataclass(frozen=True)
class ComparisonPrompt:
    """What a judge receives for one comparison.

    ``text`` is the rendered template (the user message); ``primer`` is the start of the answer the
    model is made to continue (e.g. ``"Answer: Summary"``) so the next token is a label word.
    """

    text: str
    primer: str


@dataclass(frozen=True)
class Judgement:
    """A judge's verdict on one ordered pair.

    ``p`` is P(A wins) = P(w_A) / (P(w_A) + P(w_B)) (eq. 3 of Liusie et al. 2024, EACL).
    ``logp_a``/``logp_b`` are the label words' log-probabilities under the full next-token
    distribution (fp32), ``label_mass`` = P(w_A) + P(w_B), a sanity signal: a small mass means the
    model wanted to say something else. For judges without log-probabilities (sampling, eq. 5) the
    log-probs are NaN and ``label_mass`` is the share of parseable answers.
    """

    p: float
    logp_a: float
    logp_b: float
    label_mass: float
    latency_ms: float = float("nan")


@dataclass(frozen=True)
class ComparisonResult:
    """A judgement tied to its pair, as written to a sink."""

    key: PairKey
    judgement: Judgement
    prompt_hash: str


@dataclass(frozen=True)
class ComparisonTable:
    """All comparisons of a run as aligned arrays (one entry per stored ordered pair).

    ``context_ids``, ``a_ids``, ``b_ids`` are object arrays of strings; ``p`` etc. float64.
    """

    context_ids: NDArray[np.object_]
    a_ids: NDArray[np.object_]
    b_ids: NDArray[np.object_]
    p: FloatArray
    logp_a: FloatArray
    logp_b: FloatArray
    label_mass: FloatArray

    def __len__(self) -> int:
        return len(self.p)

    def for_context(self, context_id: str) -> "ComparisonTable":
        m = self.context_ids == context_id
        return ComparisonTable(self.context_ids[m], self.a_ids[m], self.b_ids[m], self.p[m],
                               self.logp_a[m], self.logp_b[m], self.label_mass[m])

    @staticmethod
    def empty() -> "ComparisonTable":
        o = np.array([], dtype=object)
        f = np.array([], dtype=np.float64)
        return ComparisonTable(o, o, o, f, f, f, f)
