"""The vocabulary shared by engine, store and UI: datasets, pairs, judgements, comparison tables.

Plain frozen dataclasses and numpy arrays only; nothing here does I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Generic, Mapping, TypeVar

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
    #: What the file called its context and text columns (``story_prompt``, ``story``): the
    #: prompt library reads the task from them. Empty for data stored before they were kept.
    text_columns: tuple[str, ...] = ()

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
                       self.content_hash, self.text_columns)


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


KeyT = TypeVar("KeyT")
JudgementT = TypeVar("JudgementT")


@dataclass(frozen=True)
class Result(Generic[KeyT, JudgementT]):
    """A judge's answer tied to what it answered (its ``key``) and the hash of the prompt that
    asked it, as written to a sink; one subclass per run kind."""

    key: KeyT
    judgement: JudgementT
    prompt_hash: str

    @property
    def context_id(self) -> str:
        """The context of the key (every kind of key names one)."""
        return self.key.context_id


@dataclass(frozen=True)
class ComparisonResult(Result[PairKey, Judgement]):
    """A judgement tied to its pair, as written to a sink."""


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


# ------------------------------------------------------------------------ every run kind's records
#
# The result records of every run kind live here, beside the comparative ones, so the store and
# the sinks read and write them without importing a run kind (whose modules pull in the metrics
# and model stacks).

#: Presentation orders of an absolute comparison (who is shown first).
TARGET_FIRST, REFERENCE_FIRST = "target-first", "reference-first"

#: Columns of a comparative run's detailed results (``ResultSink.read_results(..., detail=True)``).
COMPARISON_COLUMNS = ("context_id", "a_id", "b_id", "p", "logp_a", "logp_b", "label_mass",
                      "latency_ms", "prompt_hash", "created_at")

#: Columns of an absolute run's results (``ResultSink.read_results(run_id, "absolute")``).
ABSOLUTE_COLUMNS = ("context_id", "candidate_id", "level", "order", "p_better", "p_worse",
                    "p_similar", "logp_better", "logp_worse", "logp_similar", "label_mass",
                    "latency_ms", "prompt_hash", "reference_hash", "created_at")


@dataclass(frozen=True)
class ScoreJudgement:
    """A scorer's verdict on one candidate (``probabilities`` over the scores 1..10)."""

    score_argmax: float
    score_expected: float
    probabilities: tuple[float, ...]
    label_mass: float
    latency_ms: float = float("nan")


@dataclass(frozen=True)
class ScoreResult(Result[CandidateKey, ScoreJudgement]):
    """A scorer's judgement tied to its candidate, as written to a sink."""

    @property
    def candidate_id(self) -> str:
        return self.key.candidate_id


@dataclass(frozen=True)
class ScoreTable:
    """All stored scores of a scoring run as aligned arrays (one entry per candidate)."""

    context_ids: np.ndarray
    candidate_ids: np.ndarray
    score_argmax: FloatArray
    score_expected: FloatArray
    label_mass: FloatArray
    probabilities: FloatArray = field(default_factory=lambda: np.empty((0, 10)))

    def __len__(self) -> int:
        return len(self.score_argmax)


@dataclass(frozen=True)
class Reference:
    """A reference text of known quality ``level`` (1 = worst .. N = best) for one context.

    ``source`` is ``generated``, ``edited`` (a generated text the user changed) or ``uploaded``;
    ``generation`` records how a generated text was made (prompt, decoding, seed, model).
    """

    context_id: str
    level: int
    text: str
    source: str = "generated"
    generation: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class AbsoluteKey:
    """One comparison of a target candidate with the reference of ``level``, in ``order``."""

    context_id: str
    candidate_id: str
    level: int
    order: str  # TARGET_FIRST or REFERENCE_FIRST


@dataclass(frozen=True)
class AbsoluteJudgement:
    """The judge's answer about the text shown first (A), normalised over the label words.

    ``p_better`` = P("Better") / (P("Better") + P("Worse") + P("Similar")) under the full softmax
    (likewise ``p_worse``, ``p_similar``); for the yes-no variant P("Yes") and P("No") normalised
    over the two words, and ``p_similar`` = 0. ``logp_*`` are the raw label log-probabilities
    (``logp_similar`` NaN for yes-no); ``label_mass`` their summed probability.
    """

    p_better: float
    p_worse: float
    p_similar: float
    logp_better: float
    logp_worse: float
    logp_similar: float
    label_mass: float
    latency_ms: float = float("nan")


@dataclass(frozen=True)
class AbsoluteResult(Result[AbsoluteKey, AbsoluteJudgement]):
    """An absolute judgement tied to its comparison and the reference text it was made with."""

    reference_hash: str


#: Aspect presets -> adjective, as in the authors' code. "overall" -> "good", and "more good" is
#: rewritten to "better" at render time (so "is more good" reads "is better").
ASPECT_ADJECTIVES: dict[str, str] = {
    "coherence": "coherent",
    "consistency": "consistent",
    "fluency": "fluent",
    "relevance": "relevant",
    "naturalness": "natural",
    "engagingness": "engaging",
    "understandable": "understandable",
    "grammar": "grammatically correct",
    "continuity": "good a continuation",
    "overall": "good",
}
