"""Tuning the judge's instruction without labels: the wording whose raw preferences are fairest.

The same judge answers differently to wordings of the same question. ZEPO (Zhou, Wan, Liu,
Collier, Vulić and Korhonen, *Fairer Preferences Elicit Improved Human-Aligned Large Language
Model Judgments*, EMNLP 2024) picks the wording whose raw preferences are least lopsided, with
an objective that needs no label:

    fairness(w) = -| A-rate_w - 1/2 |                                            (ZEPO, sec. 3)

where ``A-rate_w`` is, as the authors' code computes it (cambridgeltl/zepo,
``pairs/pairs_eval.py``, ``get_a_rate``), the mean over contexts of each context's share of
preference decisions for the first position (a comparison with ``p > 0.5`` is a decision for
A, ``p < 0.5`` for B, ``p = 0.5`` no decision). It is *not* the pooled share of all decisions
(:func:`preference_share`, shown as P(A) raw): the two differ when contexts have unequal numbers
of decisions. 0 is a fair judge, -0.5 one that always answers the same position. Whether a
fairer wording agrees better with people is ZEPO's finding on its judges, not a law: measure it
on held-out labels (``holdout``) before trusting a pick.

A tuning that knows its noise: every wording's fairness has a 95% interval (a bootstrap over
contexts, then decisions within them: ``paired``), and a wording replaces T1 only when it beats
T1 outside the *paired* 95% interval of the difference on the same ordered pairs; otherwise T1
is kept and the result says why. Fewer than :data:`MIN_CONTEXTS` contexts or
:data:`MIN_DECISIONS` decisions per wording gives a warning. A judge that answers the same
position everywhere ties every wording at -0.5; the continuous tie-breaker, the distance of its
balanced threshold tau* (eq. 10) from 0.5, then says which wording is least saturated (the one
whose p sit closest to 0.5), for the greedy search's choice of the wording to paraphrase.

This module holds the pure parts: the candidate wordings (the library's T1/T2 for the task, a
few built-in paraphrases of T1's question, and paraphrases a writer model writes of the whole
instruction of the best wording so far, as ZEPO's optimiser does), fairness, a wording's scores
(fairness with its interval, flip rate and P(A) on the tuning contexts, the paired comparison
with T1; agreement with reference scores or human labels on held-out contexts the pick never
sees), the pick and the greedy search over rounds within a budget. Judging a wording is a run
like any other (the Python API's ``Store.tune`` makes one per wording, so every comparison is
stored, resumable and reused through the cache); this module never judges, stores or loads
anything, and never imports the store or a UI.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ..stats import bias, paired, ranking
from ..stats.agreement import correlation_interval, llm_vs_human
from ..stats.analysis import split_by_context
from ..errors import InputError
from ..stats.metrics import per_context_correlation
from ..judges.models import BUNDLED_MODEL
from .options import OptionError
from ..errors import TemplateError
from .prompts import (TASKS, Aspect, Template, builtin_template, more_adjective, task_wording,
                      validate_template_text)
from .settings import RunSettings
from ..types import ComparisonTable, Dataset, FloatArray

#: Where a wording comes from.
LIBRARY, BUILT_IN, WRITTEN = "library", "built-in paraphrase", "written by the writer"
#: The key of the baseline every wording is compared with: the library's T1, judged first.
BASELINE = "w1"
#: Below these (tuning contexts, decisions per wording) a tuning warns that its fairness rests
#: on too little to pick by: ZEPO tunes on a few dozen contexts of 16 candidates each.
MIN_CONTEXTS, MIN_DECISIONS = 8, 200
#: ``writer`` option: no writer (the starting wordings only), or the judge itself.
NO_WRITER, JUDGE_WRITER = "", "judge"

#: Built-in paraphrases of T1's question, in the task's words (``prompts.TaskWording.fields``;
#: ``{{aspect}}`` stays a placeholder). They keep T1's body (the context under its heading, then
#: the two texts) and its answer ("... A or ... B"), so the primer "Answer: <noun>" still reads
#: the judge's choice at the next token.
BUILT_IN_QUESTIONS: tuple[str, ...] = (
    "Compare {noun} A and {noun} B fairly; the order in which they are shown does not matter. "
    "Which {noun} is more {{aspect}}, {noun} A or {noun} B?",
    "Considering the {source} above, which {noun} is more {{aspect}}: {noun} A or {noun} B?",
    "A careful human rater reads the {source} and both texts. Which {noun} does the rater find "
    "more {{aspect}}, {noun} A or {noun} B?",
    "Read {noun} A and {noun} B to the end before deciding. Which {noun} is more {{aspect}} "
    "given the {source}, {noun} A or {noun} B?",
    "Judge only how {{aspect}} each {lower} is, not where it is shown or how long it is. Which "
    "{noun} is more {{aspect}}, {noun} A or {noun} B?",
)

#: Longest question a written paraphrase may have (characters): a rambling reply is no wording.
MAX_QUESTION_CHARS = 400
#: Default paraphrases the writer is asked for in each round after the first.
PER_ROUND = 3
#: Bounds of a tuning's rounds and paraphrases per round (each wording is a run of its own).
MAX_ROUNDS, MAX_PER_ROUND = 10, 10
#: Longest writer model name (a path, a hub id or a served model's spec).
MAX_WRITER_CHARS = 1000
#: How the writer writes paraphrases: sampled (a greedy writer would write the same one k
#: times), seeded per round and paraphrase so a resumed tuning could write them again.
PARAPHRASE_TOKENS, PARAPHRASE_TEMPERATURE = 96, 0.9


# --------------------------------------------------------------------------------- options

@dataclass(frozen=True)
class TuningOptions:
    """What a tuning is asked to do, checked when made (``OptionError`` names the field).

    ``contexts``: the first N contexts the wordings are judged on and picked by (fairness needs
    no label); ``holdout``: the next M contexts, judged too, where each wording's agreement
    with the reference scores or human labels is measured (never used to pick; 0: none);
    ``pairs``: comparisons per context, both orders of each pair (``symmetric`` selection;
    None: every ordered pair); ``rounds``: greedy rounds after the starting wordings, each
    asking the judge to write ``per_round`` paraphrases of the fairest wording so far;
    ``budget``: most comparisons over all wordings (None: no cap); ``task`` the wording of the
    library's templates (``auto``: from the data and the aspect); ``writer`` who writes the
    paraphrases: "" none (the starting wordings only), ``judge`` the judge itself (only by this
    choice: a small judge writes few usable ones), or a model as a run names it (a served
    ``openai:BASE_URL#MODEL`` or a local model). The model options are a run's.
    """

    model: str = BUNDLED_MODEL
    task: str = "auto"
    contexts: int = 8
    holdout: int = 0
    pairs: int | None = None
    rounds: int = 1
    per_round: int = PER_ROUND
    budget: int | None = None
    seed: int = 0
    batch_size: int | None = RunSettings.batch_size
    device: str = RunSettings.device
    dtype: str = RunSettings.dtype
    truncate_context: bool = False
    writer: str = NO_WRITER

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", BUNDLED_MODEL)
        object.__setattr__(self, "writer", str(self.writer or "").strip())
        if len(self.writer) > MAX_WRITER_CHARS:
            raise OptionError("writer", f"{{field}} has at most {MAX_WRITER_CHARS} characters, "
                                        f"not {len(self.writer)}")
        if self.task not in ("auto", *TASKS):
            raise OptionError("task", f"unknown {{field}} '{self.task}'; choose one of auto, "
                                      f"{', '.join(TASKS)}")
        for name, least in (("contexts", 1), ("holdout", 0), ("pairs", 2), ("rounds", 0),
                            ("per_round", 1), ("budget", 1), ("seed", 0), ("batch_size", 1)):
            value = getattr(self, name)
            if value is not None and value < least:
                raise OptionError(name, f"{{field}} must be at least {least}, not {value}")
        if self.per_round > MAX_PER_ROUND:
            raise OptionError("per_round", f"{{field}} must be at most {MAX_PER_ROUND}, not "
                                           f"{self.per_round}")
        if self.rounds > MAX_ROUNDS:
            raise OptionError("rounds", f"{{field}} must be at most {MAX_ROUNDS}, not {self.rounds}")

    def to_dict(self) -> dict:
        """The options as stored; no writer is left out, so a tuning stored before writers
        could be chosen resumes with the same options."""
        d = asdict(self)
        if d["writer"] == NO_WRITER:
            del d["writer"]
        return d

    @staticmethod
    def from_dict(d: dict) -> "TuningOptions":
        unknown = set(d) - {f.name for f in fields(TuningOptions)}
        if unknown:
            raise InputError(f"unknown tuning options: {', '.join(sorted(unknown))}")
        return TuningOptions(**d)


# --------------------------------------------------------------------------------- fairness

def preference_share(p: FloatArray) -> float:
    """``P(A)`` pooled: the share of all preference decisions that go to the first position
    (``p > 0.5``) among all decisions (``p != 0.5``); NaN without a decision. Shown beside
    fairness; ZEPO's A-rate is :func:`a_rate` (per context, then averaged)."""
    p = np.asarray(p, dtype=np.float64)
    p = p[np.isfinite(p)]
    a, b = int(np.sum(p > 0.5)), int(np.sum(p < 0.5))
    return a / (a + b) if a + b else float("nan")


def decisions(p: FloatArray, contexts: ArrayLike | None = None
              ) -> tuple[FloatArray, NDArray[np.object_]]:
    """The decisions among ``p`` (finite, ``!= 0.5``) as 1.0 for the first position and 0.0 for
    the second, with their contexts (one context for all when ``contexts`` is None)."""
    p = np.asarray(p, dtype=np.float64)
    ctx = (np.zeros(len(p), dtype=object) if contexts is None
           else np.asarray(contexts, dtype=object))
    keep = np.isfinite(p) & (p != 0.5)
    return (p[keep] > 0.5).astype(np.float64), ctx[keep]


def a_rate(p: FloatArray, contexts: ArrayLike | None = None) -> float:
    """ZEPO's A-rate: the mean over contexts of each context's share of decisions for the first
    position (``paired.per_context_rate``; contexts without a decision are left out); with
    ``contexts`` None, the pooled share. NaN without a decision."""
    first, ctx = decisions(p, contexts)
    return paired.per_context_rate(first, ctx)[0] if len(first) else float("nan")


def fairness(p: FloatArray, contexts: ArrayLike | None = None) -> float:
    """ZEPO's fairness of a judge's raw preferences: ``-|A-rate - 1/2|`` of :func:`a_rate`
    (module docstring; 0 is fair, -0.5 always the same position); NaN without a decision."""
    rate = a_rate(p, contexts)
    return 0.0 - abs(rate - 0.5) if np.isfinite(rate) else float("nan")


def saturation_gap(p: FloatArray) -> float:
    """The continuous tie-breaker for a saturated judge: ``|tau* - 1/2|``, the distance of the
    balanced threshold (eq. 10, the median p) from 0.5; small when the judge's p sit around 0.5
    even where every verdict at 0.5 goes the same way. NaN without a finite p."""
    p = np.asarray(p, dtype=np.float64)
    p = p[np.isfinite(p)]
    return abs(float(bias.balanced_threshold(p)) - 0.5) if len(p) else float("nan")


# --------------------------------------------------------------------------------- wordings

@dataclass(frozen=True)
class Wording:
    """One wording of the judge's instruction: a comparison template (``text``, with the
    placeholders ``{context} {a} {b} {aspect}``) and the noun its answer names.

    ``key`` names it within a tuning (``w1``, ``w2``, ...; the run that judges it is named after
    it); ``origin`` is :data:`LIBRARY`, :data:`BUILT_IN` or :data:`WRITTEN`; ``label`` says which
    (``t1``, ``paraphrase 3``, ``round 2``); ``round`` is 0 for the starting wordings, then the
    round whose writer wrote it; ``parent`` the key of the wording it paraphrases.
    """

    key: str
    text: str
    noun: str
    origin: str
    label: str
    round: int = 0
    parent: str | None = None

    @property
    def question(self) -> str:
        """The instruction's last paragraph: the question the judge answers."""
        return split_question(self.text)[1]

    def template(self, name: str) -> Template:
        """The wording as a template named ``name``."""
        return Template(name=name, text=self.text, noun=self.noun)

    def to_dict(self) -> dict:
        return dict(key=self.key, text=self.text, noun=self.noun, origin=self.origin,
                    label=self.label, round=self.round, parent=self.parent)

    @staticmethod
    def from_dict(d: dict) -> "Wording":
        return Wording(key=str(d["key"]), text=str(d["text"]), noun=str(d["noun"]),
                       origin=str(d["origin"]), label=str(d.get("label", "")),
                       round=int(d.get("round", 0)), parent=d.get("parent"))


def split_question(text: str) -> tuple[str, str]:
    """A template's body (everything before its last blank line) and its question (the last
    paragraph); the body is "" when the template is one paragraph."""
    head, sep, tail = text.rstrip().rpartition("\n\n")
    return (head, tail) if sep else ("", text.strip())


def starting_wordings(task: str) -> list[Wording]:
    """The wordings a tuning starts from: the library's T1 and T2 in the wording of ``task``
    (``prompts.TASK_WORDING``), then :data:`BUILT_IN_QUESTIONS` on T1's body. Keys ``w1``,
    ``w2``, ... in this order (T1 first: it wins a draw)."""
    words = task_wording(task)
    t1, t2 = builtin_template("t1", task), builtin_template("t2", task)
    body = split_question(t1.text)[0]
    out = [Wording("w1", t1.text, t1.noun, LIBRARY, "t1"),
           Wording("w2", t2.text, t2.noun, LIBRARY, "t2")]
    for k, question in enumerate(BUILT_IN_QUESTIONS, 1):
        out.append(Wording(f"w{len(out) + 1}", f"{body}\n\n{question.format(**words.fields())}",
                           t1.noun, BUILT_IN, f"paraphrase {k}", parent="w1"))
    return out


#: Markers that stand for the texts in a paraphrase request (the writer keeps them in place;
#: they become the template's placeholders again).
MARKERS: dict[str, str] = {"{context}": "[[SOURCE]]", "{a}": "[[TEXT A]]", "{b}": "[[TEXT B]]"}
#: Longest instruction a written paraphrase may have (characters, markers included).
MAX_INSTRUCTION_CHARS = 2000


def _render(text: str, aspect: Aspect) -> str:
    """A template's text as the judge reads it for ``aspect`` ("more good" read as "better"),
    its text placeholders left as they are."""
    text = text.replace("{{", "\x00").replace("}}", "\x01")
    text = text.replace("more {aspect}", more_adjective(aspect.adjective))
    text = text.replace("{aspect}", aspect.adjective)
    return text.replace("\x00", "{").replace("\x01", "}")


def rendered_instruction(wording: Wording, aspect: Aspect) -> str:
    """The whole instruction as the judge reads it for ``aspect``, with :data:`MARKERS` where
    the source and the two texts go."""
    text = _render(wording.text.replace("{{", "\x02").replace("}}", "\x03"), aspect)
    for placeholder, marker in MARKERS.items():
        text = text.replace(placeholder, marker)
    return text.replace("\x02", "{").replace("\x03", "}")


def paraphrase_request(wording: Wording, aspect: Aspect) -> str:
    """What the writer (an LLM) is asked, as ZEPO asks it ("Paraphrase the following instruction
    for a pairwise comparison task. Do not change the keyword ..."): rewrite the *whole*
    instruction, keeping the aspect's word, the two answers' names and the markers where the
    texts go, ending with the question. A writer that rewrites the question alone is taken too
    (:func:`parse_paraphrase`)."""
    word = more_adjective(aspect.adjective).removeprefix("more ")
    present = [m for ph, m in MARKERS.items() if ph in wording.text]
    return (f"Paraphrase the following instruction for a pairwise comparison task, all of it; be "
            f"diverse and creative. Keep the word \"{word}\" and the names \"{wording.noun} A\" "
            f"and \"{wording.noun} B\" exactly as they are, keep each of the markers "
            f"{', '.join(present)} exactly once where the texts go, and end with the question "
            f"that asks for {wording.noun} A or {wording.noun} B. Reply with the new instruction "
            f"only.\n\nInstruction:\n{rendered_instruction(wording, aspect)}")


def rendered_question(wording: Wording, aspect: Aspect) -> str:
    """The question as the judge reads it for ``aspect`` ("more good" read as "better")."""
    return _render(wording.question, aspect)


def _aspect_placeholder(text: str, aspect: Aspect) -> str | None:
    """``text`` (braces already escaped) with the aspect's word made the ``{aspect}``
    placeholder again; None when the word is missing."""
    better = more_adjective(aspect.adjective) == "better"
    pattern = r"\bbetter\b" if better else re.escape(aspect.adjective)
    if not re.search(pattern, text, flags=re.IGNORECASE):
        return None
    return re.sub(pattern, "more {aspect}" if better else "{aspect}", text, flags=re.IGNORECASE)


def _usable_question(question: str, noun: str) -> bool:
    return (10 <= len(question) <= MAX_QUESTION_CHARS and question.endswith("?")
            and f"{noun} A" in question and f"{noun} B" in question)


def _parse_instruction(reply: str, parent: Wording, aspect: Aspect) -> str | None:
    """A whole written instruction: every marker of the parent once, a last paragraph that is a
    question naming both answers and the aspect's word; the markers become placeholders."""
    text = re.sub(r"^```\w*\s*|\s*```$", "", str(reply).strip())
    text = re.sub(r"^(new instruction|instruction|paraphrase|output)\s*:\s*", "", text,
                  flags=re.IGNORECASE).strip()
    if not text or len(text) > MAX_INSTRUCTION_CHARS:
        return None
    text = text.replace("{", "{{").replace("}", "}}")
    for placeholder, marker in MARKERS.items():
        wanted = 1 if placeholder in parent.text else 0
        if text.count(marker) != wanted:
            return None
        text = text.replace(marker, placeholder)
    question = split_question(text)[1]
    if not _usable_question(question, parent.noun):
        return None  # the judge's answer must follow a question naming both answers
    if _aspect_placeholder(question, aspect) is None:
        return None
    text = _aspect_placeholder(text, aspect)
    try:
        validate_template_text(text, source="a written paraphrase")
    except TemplateError:
        return None
    return text


def parse_paraphrase(reply: str, parent: Wording, aspect: Aspect) -> str | None:
    """The template a writer's ``reply`` makes of ``parent``.

    A whole instruction (every marker of :func:`paraphrase_request` once; its last paragraph a
    question naming "<noun> A", "<noun> B" and the aspect's word) becomes the template, the
    markers its placeholders again. Otherwise the reply's first non-empty line is read as a new
    question (without a leading label or quotes; a quoted question inside the line is taken
    when it names both answers) under the parent's body. The aspect's word becomes the
    ``{aspect}`` placeholder again. None when the reply is neither: it drops "<noun> A",
    "<noun> B" or the aspect's word, does not end with a question mark, or is empty or too
    long."""
    whole = _parse_instruction(reply, parent, aspect)
    if whole is not None:
        return whole
    lines = [ln.strip() for ln in str(reply).splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[0]
    # 'The new question is: "Which ...?"': the quoted question, when one names both answers
    for quoted in re.findall(r"[\"“]([^\"”]+)(?:[\"”]|$)", line):
        if f"{parent.noun} A" in quoted and f"{parent.noun} B" in quoted:
            line = quoted
            break
    line = re.sub(r"^(new question|question|rewritten question|answer)\s*:\s*", "", line,
                  flags=re.IGNORECASE).strip().strip("\"'`“”").strip()
    if not _usable_question(line, parent.noun):
        return None  # a question asks: a statement about the texts is no wording
    question = _aspect_placeholder(line.replace("{", "{{").replace("}", "}}"), aspect)
    if question is None:
        return None
    body = split_question(parent.text)[0]
    return f"{body}\n\n{question}" if body else question


def written_wordings(replies: Iterable[str], parent: Wording, aspect: Aspect, *, round: int,
                     first_key: int, known: Iterable[str] = ()) -> list[Wording]:
    """The usable, new wordings among a writer's ``replies`` (:func:`parse_paraphrase`), keyed
    ``w<first_key>``, ``w<first_key + 1>``, ...; a text in ``known`` or given twice is left out."""
    seen = set(known)
    out = []
    for reply in replies:
        text = parse_paraphrase(reply, parent, aspect)
        if text is None or text in seen:
            continue
        seen.add(text)
        out.append(Wording(f"w{first_key + len(out)}", text, parent.noun, WRITTEN,
                           f"round {round}", round=round, parent=parent.key))
    return out


# --------------------------------------------------------------------------------- scores

@dataclass(frozen=True)
class Agreement:
    """Agreement of one wording with people on the held-out contexts: ``metric`` is
    ``spearman_x100`` (per-context Spearman x100 with the reference column, averaged, the
    paper's §4; interval: contexts resampled) or ``kappa`` (Cohen's kappa with the majority of
    the human A/B labels, ties left out; interval: pairs resampled), raw (tau = 0.5) and at the
    held-out comparisons' balanced tau* (eq. 10), each with its 95% percentile bootstrap
    interval; ``n`` the contexts (Spearman) or labelled pairs (kappa) it rests on."""

    metric: str
    raw: float
    raw_low: float
    raw_high: float
    balanced: float
    balanced_low: float
    balanced_high: float
    n: int


@dataclass(frozen=True)
class WordingScore:
    """A wording judged, on the tuning contexts: ``fairness`` (ZEPO's, of the per-context
    A-rate) with its 95% interval (``fairness_low``, ``fairness_high``: two-stage bootstrap over
    contexts and decisions), ``a_rate`` (ZEPO's per-context A-rate), ``p_a_raw`` (pooled share
    of decisions for A), flip rate (at tau = 0.5, over pairs judged in both orders),
    ``saturation`` (:func:`saturation_gap`, the tie-breaker), the comparisons, decisions and
    contexts they rest on; ``vs_baseline`` the paired comparison of its fairness with T1's on
    the ordered pairs both decided (None for T1 itself, or without T1's comparisons);
    agreement on the held-out contexts (None: no held-out context, or nothing to agree with)."""

    wording: Wording
    fairness: float
    p_a_raw: float
    flip_rate: float
    n_tune: int
    n_holdout: int
    agreement: Agreement | None = None
    fairness_low: float = float("nan")
    fairness_high: float = float("nan")
    a_rate: float = float("nan")
    saturation: float = float("nan")
    n_decisions: int = 0
    n_contexts: int = 0
    vs_baseline: paired.PairedDifference | None = None

    @property
    def key(self) -> str:
        return self.wording.key

    @property
    def beats_baseline(self) -> bool:
        """Fairer than T1 outside the paired 95% interval of the difference."""
        return self.vs_baseline is not None and self.vs_baseline.low > 0


def table_for_contexts(table: ComparisonTable, context_ids: Iterable[str]) -> ComparisonTable:
    """The comparisons of ``table`` in ``context_ids``."""
    keep = np.isin(table.context_ids, np.array(list(context_ids), dtype=object))
    return ComparisonTable(table.context_ids[keep], table.a_ids[keep], table.b_ids[keep],
                           table.p[keep], table.logp_a[keep], table.logp_b[keep],
                           table.label_mass[keep])


def split_contexts(dataset: Dataset, n_tune: int, n_holdout: int) -> tuple[list[str], list[str]]:
    """The tuning contexts (the first ``n_tune``) and the held-out ones (the next
    ``n_holdout``), by id.

    Raises
    ------
    InputError
        ``n_tune < 1``, ``n_holdout < 0`` or more contexts than the dataset has.
    """
    if n_tune < 1 or n_holdout < 0:
        raise InputError(f"tuning needs at least 1 context and 0 or more held out, not "
                         f"{n_tune} and {n_holdout}")
    ids = [c.context_id for c in dataset.contexts]
    if n_tune + n_holdout > len(ids):
        raise InputError(f"dataset '{dataset.name}' has {len(ids)} context(s): {n_tune} to tune "
                         f"on and {n_holdout} held out do not fit")
    return ids[:n_tune], ids[n_tune:n_tune + n_holdout]


def _flip_rate(dataset: Dataset, table: ComparisonTable) -> float:
    """Share of the pairs judged in both orders whose verdict at 0.5 flips with the order."""
    flips = total = 0
    for cc in split_by_context(dataset, table):
        *_, flipped = bias.flip_pairs(cc.i, cc.j, cc.p, 0.5)
        flips += int(flipped.sum())
        total += len(flipped)
    return flips / total if total else float("nan")


def reference_agreement(dataset: Dataset, table: ComparisonTable, reference: str, *,
                        n_boot: int = 1000, seed: int = 0) -> Agreement | None:
    """Per-context Spearman x100 of the win ratio (eq. 6) with ``reference``, raw and at tau*
    (:class:`Agreement`); None when no context has comparisons and varied reference scores."""
    parts = split_by_context(dataset, table)
    if not parts:
        return None
    all_p = np.concatenate([cc.p for cc in parts])
    values = []
    for tau in (0.5, float(bias.balanced_threshold(all_p))):
        preds = [ranking.win_ratio(cc.n, cc.i, cc.j, cc.p, tau=tau).scores for cc in parts]
        refs = [np.array([c.scores.get(reference, np.nan) for c in cc.context.candidates],
                         dtype=np.float64) for cc in parts]
        corr = per_context_correlation(preds, refs, method="spearman")
        low, high = correlation_interval(corr.per_context, n_boot=n_boot, seed=seed)
        # contexts that could be ranked against the reference: a constant prediction counts (n/a)
        values.append((corr.mean_x100, low, high, corr.n_used + corr.n_constant_prediction))
    (raw, raw_low, raw_high, n_raw), (bal, bal_low, bal_high, n_bal) = values
    # A judge whose verdicts rank nothing (every context constant) has an undefined
    # correlation (n/a), which the table shows, not no agreement at all.
    n = max(n_raw, n_bal)
    if n == 0:
        return None
    return Agreement("spearman_x100", raw, raw_low, raw_high, bal, bal_low, bal_high, n)


def label_agreement(table: ComparisonTable, human: pd.DataFrame, *, n_boot: int = 1000,
                    seed: int = 0) -> Agreement | None:
    """Cohen's kappa with the majority of the human A/B labels (ties left out), raw and at tau*
    (:class:`Agreement`); None when no labelled pair was judged."""
    if len(table) == 0 or len(human) == 0:
        return None
    tau = float(bias.balanced_threshold(table.p[np.isfinite(table.p)]))
    report = llm_vs_human(human, table, tau, n_boot=n_boot, seed=seed)
    raw, at = report.raw.majority, report.debiased.majority
    if raw.n_without_ties == 0:
        return None
    nan = (float("nan"), float("nan"))
    raw_low, raw_high = raw.intervals.get("kappa_without_ties", nan)
    at_low, at_high = at.intervals.get("kappa_without_ties", nan)
    return Agreement("kappa", raw.kappa_without_ties, raw_low, raw_high, at.kappa_without_ties,
                     at_low, at_high, raw.n_without_ties)


def _first_positions(table: ComparisonTable) -> pd.DataFrame:
    """The decided ordered pairs of ``table`` (``paired.first_position_units`` at 0.5)."""
    units = paired.first_position_units(table, 0.5)
    return units[units["decided"]]


def baseline_difference(table: ComparisonTable, baseline: ComparisonTable, *, name: str,
                        baseline_name: str = "T1", n_boot: int = 1000,
                        seed: int = 0) -> paired.PairedDifference | None:
    """Fairness of a wording minus T1's on the ordered pairs both decided (tuning contexts), with
    the paired two-stage bootstrap interval (``paired.paired_fairness_difference``), and
    McNemar's exact test of equal P(A) on the pairs where one wording chose the first position
    and the other the second; None when no ordered pair was decided under both."""
    key = ["context_id", "first", "second"]
    both = _first_positions(table).merge(_first_positions(baseline), on=key,
                                         suffixes=("_w", "_t"))
    if len(both) == 0:
        return None
    xw, xt = both["first_pos_w"].to_numpy(), both["first_pos_t"].to_numpy()
    fw, ft, d = paired.paired_fairness_difference(xw, xt, both["context_id"], n_boot=n_boot,
                                                  seed=seed)
    return paired.PairedDifference(
        measure="fairness -|A-rate - 1/2| (A-rate: mean over contexts of each context's share "
                "of decisions for the first position)",
        unit="on the A-rate scale", computed_on="ordered pairs decided under both wordings",
        name_a=name, name_b=baseline_name, value_a=fw.estimate, value_b=ft.estimate,
        difference=d.estimate, low=d.low, high=d.high, level=paired.PAIRED_LEVEL,
        n_boot=int(n_boot), n_contexts=paired.cluster_codes(both["context_id"])[1],
        n_pairs=len(both), mcnemar=paired.mcnemar_exact(xw, xt),
        success="chose the first position")


def score_wording(wording: Wording, dataset: Dataset, table: ComparisonTable,
                  tune_ids: Sequence[str], holdout_ids: Sequence[str], *,
                  reference: str | None = None, human: pd.DataFrame | None = None,
                  baseline: ComparisonTable | None = None, n_boot: int = 1000,
                  seed: int = 0) -> WordingScore:
    """Score a wording from its comparisons ``table``: fairness with its interval, A-rate, P(A),
    flip rate and the tie-breaker on the tuning contexts ``tune_ids``; the paired comparison
    with T1's comparisons ``baseline`` (left out for T1 itself); agreement on the held-out
    ``holdout_ids`` with the human labels ``human`` when any are given (kappa), else with the
    ``reference`` column (Spearman), else none."""
    tune = table_for_contexts(table, tune_ids)
    held = table_for_contexts(table, holdout_ids)
    agreement = None
    if len(held):
        if human is not None and len(human):
            held_human = human[human["context_id"].isin(list(holdout_ids))]
            agreement = label_agreement(held, held_human, n_boot=n_boot, seed=seed)
        elif reference is not None:
            agreement = reference_agreement(dataset, held, reference, n_boot=n_boot, seed=seed)
    first, ctx = decisions(tune.p, tune.context_ids)
    nan = float("nan")
    interval = (paired.fairness_interval(first, ctx, n_boot=n_boot, seed=seed) if len(first)
                else paired.Interval(nan, nan, nan))
    vs = None
    if baseline is not None and wording.key != BASELINE:
        vs = baseline_difference(tune, table_for_contexts(baseline, tune_ids),
                                 name=f"{wording.key} ({wording.label})", n_boot=n_boot,
                                 seed=seed)
    return WordingScore(wording, fairness(tune.p, tune.context_ids), preference_share(tune.p),
                        _flip_rate(dataset, tune), len(tune), len(held), agreement,
                        fairness_low=interval.low, fairness_high=interval.high,
                        a_rate=a_rate(tune.p, tune.context_ids),
                        saturation=saturation_gap(tune.p), n_decisions=int(len(first)),
                        n_contexts=int(len(set(ctx.tolist()))), vs_baseline=vs)


def sample_warnings(scores: Sequence[WordingScore]) -> list[str]:
    """What a tuning should say about its sample: too few tuning contexts or decisions per
    wording for its fairness to pick by (:data:`MIN_CONTEXTS`, :data:`MIN_DECISIONS`), and a
    judge saturated under every wording."""
    out = []
    if not scores:
        return out
    contexts = max(s.n_contexts for s in scores)
    fewest = min(s.n_decisions for s in scores)
    if contexts < MIN_CONTEXTS:
        out.append(f"only {contexts} tuning context(s), fewer than {MIN_CONTEXTS}: fairness "
                   "intervals are wide and a pick rests on little (raise --contexts)")
    if fewest < MIN_DECISIONS:
        out.append(f"a wording rests on {fewest} decision(s), fewer than {MIN_DECISIONS}: "
                   "fairness intervals are wide (raise --contexts or --pairs)")
    finite = [s.fairness for s in scores if np.isfinite(s.fairness)]
    if finite and max(finite) <= -0.5:
        out.append("the judge answers the same position under every wording (fairness -0.5): "
                   "wordings are told apart only by the tie-breaker |tau* - 0.5|, and no pick "
                   "can beat T1")
    return out


# --------------------------------------------------------------------------------- picking

def _order_key(s: WordingScore) -> tuple[float, float]:
    """Fairest first; among equally fair wordings, the least saturated (:func:`saturation_gap`)."""
    gap = s.saturation if np.isfinite(s.saturation) else np.inf
    return (s.fairness, -gap)


def fairest(scores: Sequence[WordingScore]) -> WordingScore | None:
    """The fairest wording, the tie-breaker deciding between equal fairness (a saturated judge
    ties every wording at -0.5); a full draw keeps the earlier one; None without a decision.
    The greedy search paraphrases this one; the pick is :func:`decide`'s."""
    best = None
    for s in scores:
        if np.isfinite(s.fairness) and (best is None or _order_key(s) > _order_key(best)):
            best = s
    return best


@dataclass(frozen=True)
class Decision:
    """The pick and why: ``picked`` the wording to use (T1 unless another beats it outside the
    paired interval), ``fairest`` the fairest wording judged (:func:`fairest`), ``reason`` in
    words."""

    picked: WordingScore | None
    fairest: WordingScore | None
    reason: str


def decide(scores: Sequence[WordingScore]) -> Decision:
    """A wording replaces T1 (:data:`BASELINE`) only when it is fairer than T1 outside the paired
    95% interval of the difference (:attr:`WordingScore.beats_baseline`); of those, the fairest
    (:func:`fairest`). Otherwise T1 is kept, and the reason names the fairest other wording and
    its interval. Without T1's scores (a tuning stopped before it): the fairest, said so."""
    best = fairest(scores)
    t1 = next((s for s in scores if s.key == BASELINE), None)
    if t1 is None or not np.isfinite(t1.fairness):
        return Decision(best, best, "T1 was not judged (or gave no decision): the fairest "
                                    "wording, without a paired test")
    winners = [s for s in scores if s.beats_baseline]
    if winners:
        chosen = fairest(winners)
        d = chosen.vs_baseline
        return Decision(chosen, best, (
            f"{chosen.key} ({chosen.wording.label}) is fairer than T1 by {d.difference:+.3f} "
            f"[95% {d.low:+.3f}, {d.high:+.3f}] on {d.n_pairs:,} ordered pairs in "
            f"{d.n_contexts} context(s)"))
    others = [s for s in scores if s.key != BASELINE and s.vs_baseline is not None]
    if not others:
        return Decision(t1, best, "T1 kept: no other wording was compared with it")
    top = fairest(others) or others[0]
    d = top.vs_baseline
    return Decision(t1, best, (
        f"T1 kept: no wording beats it outside the paired 95% interval; the fairest other, "
        f"{top.key} ({top.wording.label}), differs by {d.difference:+.3f} [95% {d.low:+.3f}, "
        f"{d.high:+.3f}] on {d.n_pairs:,} ordered pairs in {d.n_contexts} context(s)"))


def pick(scores: Sequence[WordingScore]) -> WordingScore | None:
    """The wording to use: :func:`decide`'s pick (T1 unless another beats it outside the
    paired interval); None when no wording has a decision."""
    return decide(scores).picked


def best_in_hindsight(scores: Sequence[WordingScore], *, balanced: bool = False
                      ) -> WordingScore | None:
    """The wording with the highest held-out agreement (raw, or at tau* with ``balanced``): the
    pick a person with every label would have made, an upper bound for the label-free pick
    (chosen on the very contexts it is measured on, so it flatters itself)."""
    best = None
    for s in scores:
        if s.agreement is None:
            continue
        value = s.agreement.balanced if balanced else s.agreement.raw
        if np.isfinite(value) and (best is None or value > (
                best.agreement.balanced if balanced else best.agreement.raw)):
            best = s
    return best


@dataclass
class SearchState:
    """What a greedy search has judged so far (in order) and why it stopped before its last
    round ("" when it ran every round: :attr:`outcome` says so)."""

    scores: list[WordingScore] = field(default_factory=list)
    rounds_done: int = 0
    stopped: str = ""

    @property
    def outcome(self) -> str:
        """How the search ended, as a sentence for its reader: "stopped early: <why>" or
        "finished: ..." (every starting wording and every round judged)."""
        if self.stopped:
            return f"stopped early: {self.stopped}"
        return (f"finished: {len(self.scores)} wording(s) judged, {self.rounds_done} round(s) "
                "of paraphrases")


def greedy_search(start: Sequence[Wording], evaluate: Callable[[Wording], WordingScore],
                  write: Callable[[Wording, int], list[Wording]] | None, *, rounds: int = 0,
                  max_wordings: int | None = None,
                  cancelled: Callable[[], bool] = lambda: False,
                  judge_together: Callable[[list[Wording]], None] | None = None) -> SearchState:
    """ZEPO's greedy search: judge the ``start`` wordings, then for each of ``rounds`` rounds ask
    ``write(best, round)`` for paraphrases of the fairest wording so far (:func:`fairest`, the
    tie-breaker deciding among equals) and judge the new ones;
    never more than ``max_wordings`` wordings in all (the budget), and a text is judged once.
    ``write`` None (a judge that cannot write) or a round that writes nothing usable ends the
    search. ``cancelled`` is asked before each wording. ``judge_together``, when given, is
    handed the wordings of each step that ``evaluate`` will then score (the starting ones, then
    each round's, within the budget), before the first of them is scored: the caller judges
    them in one pass (the prompts of the same pair under several wordings share the context
    and both texts in the judge's prefix cache), and ``evaluate`` reads what was stored."""
    state = SearchState()
    tried: set[str] = set()

    def to_judge(wordings: Sequence[Wording]) -> list[Wording]:
        """The wordings ``judge_all`` scores, in order (the budget, a text once)."""
        todo: list[Wording] = []
        texts = set(tried)
        for w in wordings:
            if max_wordings is not None and len(state.scores) + len(todo) >= max_wordings:
                break
            if w.text not in texts:
                texts.add(w.text)
                todo.append(w)
        return todo

    def judge_all(wordings: Sequence[Wording]) -> bool:
        if judge_together is not None and not cancelled():
            todo = to_judge(wordings)
            if todo:
                judge_together(todo)
        for w in wordings:
            if max_wordings is not None and len(state.scores) >= max_wordings:
                state.stopped = f"the budget allows {max_wordings} wording(s)"
                return False
            if cancelled():
                state.stopped = "cancelled"
                return False
            if w.text in tried:
                continue
            tried.add(w.text)
            state.scores.append(evaluate(w))
        return True

    if not judge_all(start):
        return state
    for r in range(1, rounds + 1):
        best = fairest(state.scores)
        if best is None:
            state.stopped = "no wording gave a decision to paraphrase"
            return state
        if write is None:
            state.stopped = "no writer: no paraphrases written (choose a writer)"
            return state
        new = [w for w in write(best.wording, r) if w.text not in tried]
        state.rounds_done = r
        if not new:
            state.stopped = f"round {r} wrote no usable new wording"
            return state
        if not judge_all(new):
            return state
    return state


# --------------------------------------------------------------------------------- the table

#: Columns of :func:`tuning_table`.
TABLE_COLUMNS = ("wording", "label", "origin", "question", "fairness", "fairness_low",
                 "fairness_high", "a_rate", "p_a_raw", "flip_rate", "saturation",
                 "vs_t1", "vs_t1_low", "vs_t1_high", "vs_t1_mcnemar_p", "beats_t1",
                 "agreement_metric", "agreement_raw", "agreement_raw_low", "agreement_raw_high",
                 "agreement_balanced", "agreement_balanced_low", "agreement_balanced_high",
                 "contexts_tune", "decisions_tune", "comparisons_tune", "comparisons_holdout",
                 "picked")


def tuning_table(scores: Sequence[WordingScore], aspect: Aspect) -> pd.DataFrame:
    """One row per wording judged, in the order judged: key, label, origin, the question as the
    judge reads it, fairness with its 95% interval, ZEPO's per-context A-rate, P(A) raw
    (pooled), flip rate, the tie-breaker |tau* - 0.5|, the paired difference of fairness with T1
    (95% interval, McNemar's exact p of equal P(A)) and whether it beats T1, agreement (raw and
    at tau*, 95% intervals), the contexts, decisions and comparisons it rests on, and whether it
    is the pick (:func:`decide`)."""
    picked = pick(scores)
    rows = []
    nan = float("nan")
    for s in scores:
        a, v = s.agreement, s.vs_baseline
        rows.append(dict(
            wording=s.key, label=s.wording.label, origin=s.wording.origin,
            question=rendered_question(s.wording, aspect), fairness=s.fairness,
            fairness_low=s.fairness_low, fairness_high=s.fairness_high, a_rate=s.a_rate,
            p_a_raw=s.p_a_raw, flip_rate=s.flip_rate, saturation=s.saturation,
            vs_t1=v.difference if v else nan, vs_t1_low=v.low if v else nan,
            vs_t1_high=v.high if v else nan,
            vs_t1_mcnemar_p=v.mcnemar.p_value if v and v.mcnemar else nan,
            beats_t1=s.beats_baseline,
            agreement_metric=a.metric if a else "", agreement_raw=a.raw if a else nan,
            agreement_raw_low=a.raw_low if a else nan, agreement_raw_high=a.raw_high if a else nan,
            agreement_balanced=a.balanced if a else nan,
            agreement_balanced_low=a.balanced_low if a else nan,
            agreement_balanced_high=a.balanced_high if a else nan,
            contexts_tune=s.n_contexts, decisions_tune=s.n_decisions,
            comparisons_tune=s.n_tune, comparisons_holdout=s.n_holdout,
            picked=picked is not None and s.key == picked.key))
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def with_key(wording: Wording, key: str) -> Wording:
    """``wording`` under another key."""
    return replace(wording, key=key)
