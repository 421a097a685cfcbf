"""Tuning the judge's instruction without labels: the wording whose raw preferences are fairest.

The same judge answers differently to wordings of the same question, and the wordings whose raw
preferences are least lopsided tend to agree best with people: that is the finding of ZEPO (Zhou,
Wan, Liu, Collier, Vulić and Korhonen, *Fairer Preferences Elicit Improved Human-Aligned Large
Language Model Judgments*, EMNLP 2024). Its objective needs no label:

    fairness(w) = -| P_w(A) - 1/2 |                                              (ZEPO, sec. 3)

where ``P_w(A)`` is the share of the judge's preference decisions under wording ``w`` that go to
the first position (a comparison with ``p > 0.5`` is a decision for A, ``p < 0.5`` for B, and
``p = 0.5`` no decision), the deviation of the decisions from the uniform prior over the two
answers; the authors' code computes exactly this ("Fairness" = -|A rate - 0.5|, A rate = A
decisions / (A + B decisions), cambridgeltl/zepo ``pairs/pairs_eval.py``). 0 is a fair judge,
-0.5 one that always answers the same position.

This module holds the pure parts: the candidate wordings (the library's T1/T2 for the task, a
few built-in paraphrases of T1's question, and paraphrases an LLM writes of the best wording so
far, as ZEPO's optimiser does), the fairness of a table of p, a wording's scores (fairness, flip
rate and P(A) on the tuning contexts; agreement with reference scores or human labels on
held-out contexts the pick never sees), the pick (fairest first; ties keep the earlier wording,
so T1 wins a draw) and the greedy search over rounds within a budget. Judging a wording is a
run like any other (the Python API's ``Store.tune`` makes one per wording, so every comparison
is stored, resumable and reused through the cache); this module never judges, stores or loads
anything, and never imports the store or a UI.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from . import bias, ranking
from .agreement import correlation_interval, llm_vs_human
from .analysis import split_by_context
from .errors import InputError
from .metrics import per_context_correlation
from .models import BUNDLED_MODEL
from .options import OptionError
from .prompts import TASKS, Aspect, Template, builtin_template, more_adjective, task_wording
from .settings import RunSettings
from .types import ComparisonTable, Dataset, FloatArray

#: Where a wording comes from.
LIBRARY, BUILT_IN, WRITTEN = "library", "built-in paraphrase", "written by the judge"

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
    library's templates (``auto``: from the data and the aspect). The model options are a run's.
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

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", BUNDLED_MODEL)
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
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "TuningOptions":
        unknown = set(d) - {f.name for f in fields(TuningOptions)}
        if unknown:
            raise InputError(f"unknown tuning options: {', '.join(sorted(unknown))}")
        return TuningOptions(**d)


# --------------------------------------------------------------------------------- fairness

def preference_share(p: FloatArray) -> float:
    """``P(A)``: the share of preference decisions that go to the first position (``p > 0.5``)
    among all decisions (``p != 0.5``), as ZEPO counts them; NaN without a decision."""
    p = np.asarray(p, dtype=np.float64)
    p = p[np.isfinite(p)]
    a, b = int(np.sum(p > 0.5)), int(np.sum(p < 0.5))
    return a / (a + b) if a + b else float("nan")


def fairness(p: FloatArray) -> float:
    """ZEPO's fairness of a judge's raw preferences: ``-|P(A) - 1/2|`` (module docstring; 0 is
    fair, -0.5 always the same position); NaN without a decision."""
    share = preference_share(p)
    return 0.0 - abs(share - 0.5) if np.isfinite(share) else float("nan")


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


def paraphrase_request(wording: Wording, aspect: Aspect) -> str:
    """What the writer (an LLM) is asked, in ZEPO's manner: rewrite the wording's question in
    other words, keeping the aspect's word and the two answers' names, one line only."""
    question = rendered_question(wording, aspect)
    word = more_adjective(aspect.adjective).removeprefix("more ")
    return (f"Rewrite this question about two texts in different words. Keep the word "
            f"\"{word}\" and the names \"{wording.noun} A\" and \"{wording.noun} B\" exactly as "
            "they are. Reply with the new question only, on one line.\n\n"
            f"Question: {question}")


def rendered_question(wording: Wording, aspect: Aspect) -> str:
    """The question as the judge reads it for ``aspect`` ("more good" read as "better")."""
    question = wording.question.replace("{{", "\x00").replace("}}", "\x01")
    question = question.replace("more {aspect}", more_adjective(aspect.adjective))
    question = question.replace("{aspect}", aspect.adjective)
    return question.replace("\x00", "{").replace("\x01", "}")


def parse_paraphrase(reply: str, parent: Wording, aspect: Aspect) -> str | None:
    """The template a writer's ``reply`` makes of ``parent``: its first non-empty line, without
    a leading label or quotes, as the new question under the parent's body, with the aspect's
    word made the ``{aspect}`` placeholder again (a quoted question inside the line is taken
    when it names both answers). None when the reply is no usable question: it drops "<noun> A",
    "<noun> B" or the aspect's word, does not end with a question mark, or is empty or too long."""
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
    if not 10 <= len(line) <= MAX_QUESTION_CHARS or not line.endswith("?"):
        return None  # a question asks: a statement about the texts is no wording
    if f"{parent.noun} A" not in line or f"{parent.noun} B" not in line:
        return None
    escaped = line.replace("{", "{{").replace("}", "}}")
    better = more_adjective(aspect.adjective) == "better"
    pattern = r"\bbetter\b" if better else re.escape(aspect.adjective)
    if not re.search(pattern, escaped, flags=re.IGNORECASE):
        return None
    question = re.sub(pattern, "more {aspect}" if better else "{aspect}", escaped,
                      flags=re.IGNORECASE)
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
    """A wording judged: fairness, P(A) (decisions for the first position) and flip rate (at
    tau = 0.5, over pairs judged in both orders) on the tuning contexts, with the comparisons
    they rest on; agreement on the held-out contexts (None: no held-out context, or nothing to
    agree with)."""

    wording: Wording
    fairness: float
    p_a_raw: float
    flip_rate: float
    n_tune: int
    n_holdout: int
    agreement: Agreement | None = None

    @property
    def key(self) -> str:
        return self.wording.key


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
        values.append((corr.mean_x100, low, high, corr.n_used))
    (raw, raw_low, raw_high, n), (bal, bal_low, bal_high, _) = values
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


def score_wording(wording: Wording, dataset: Dataset, table: ComparisonTable,
                  tune_ids: Sequence[str], holdout_ids: Sequence[str], *,
                  reference: str | None = None, human: pd.DataFrame | None = None,
                  n_boot: int = 1000, seed: int = 0) -> WordingScore:
    """Score a wording from its comparisons ``table``: fairness, P(A) and flip rate on the
    tuning contexts ``tune_ids``; agreement on the held-out ``holdout_ids`` with the human
    labels ``human`` when any are given (kappa), else with the ``reference`` column (Spearman),
    else none."""
    tune = table_for_contexts(table, tune_ids)
    held = table_for_contexts(table, holdout_ids)
    agreement = None
    if len(held):
        if human is not None and len(human):
            held_human = human[human["context_id"].isin(list(holdout_ids))]
            agreement = label_agreement(held, held_human, n_boot=n_boot, seed=seed)
        elif reference is not None:
            agreement = reference_agreement(dataset, held, reference, n_boot=n_boot, seed=seed)
    return WordingScore(wording, fairness(tune.p), preference_share(tune.p),
                        _flip_rate(dataset, tune), len(tune), len(held), agreement)


# --------------------------------------------------------------------------------- picking

def pick(scores: Sequence[WordingScore]) -> WordingScore | None:
    """The fairest wording (highest :func:`fairness`); a draw keeps the earlier one (T1 comes
    first); None when no wording has a decision."""
    best = None
    for s in scores:
        if np.isfinite(s.fairness) and (best is None or s.fairness > best.fairness):
            best = s
    return best


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
    """What a greedy search has judged so far (in order) and why it stopped."""

    scores: list[WordingScore] = field(default_factory=list)
    rounds_done: int = 0
    stopped: str = ""


def greedy_search(start: Sequence[Wording], evaluate: Callable[[Wording], WordingScore],
                  write: Callable[[Wording, int], list[Wording]] | None, *, rounds: int = 0,
                  max_wordings: int | None = None,
                  cancelled: Callable[[], bool] = lambda: False) -> SearchState:
    """ZEPO's greedy search: judge the ``start`` wordings, then for each of ``rounds`` rounds ask
    ``write(best, round)`` for paraphrases of the fairest wording so far and judge the new ones;
    never more than ``max_wordings`` wordings in all (the budget), and a text is judged once.
    ``write`` None (a judge that cannot write) or a round that writes nothing usable ends the
    search. ``cancelled`` is asked before each wording."""
    state = SearchState()
    tried: set[str] = set()

    def judge_all(wordings: Sequence[Wording]) -> bool:
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
        best = pick(state.scores)
        if best is None:
            state.stopped = "no wording gave a decision to paraphrase"
            return state
        if write is None:
            state.stopped = "no writer: the judge cannot write paraphrases"
            return state
        new = [w for w in write(best.wording, r) if w.text not in tried]
        state.rounds_done = r
        if not new:
            state.stopped = f"round {r} wrote no usable new wording"
            return state
        if not judge_all(new):
            return state
    state.stopped = state.stopped or "done"
    return state


# --------------------------------------------------------------------------------- the table

#: Columns of :func:`tuning_table`.
TABLE_COLUMNS = ("wording", "label", "origin", "question", "fairness", "p_a_raw", "flip_rate",
                 "agreement_metric", "agreement_raw", "agreement_raw_low", "agreement_raw_high",
                 "agreement_balanced", "agreement_balanced_low", "agreement_balanced_high",
                 "comparisons_tune", "comparisons_holdout", "picked")


def tuning_table(scores: Sequence[WordingScore], aspect: Aspect) -> pd.DataFrame:
    """One row per wording judged, in the order judged: key, label, origin, the question as the
    judge reads it, fairness, P(A) raw, flip rate, agreement (raw and at tau*, 95% intervals),
    comparisons on the tuning and held-out contexts, and whether it is the pick."""
    picked = pick(scores)
    rows = []
    nan = float("nan")
    for s in scores:
        a = s.agreement
        rows.append(dict(
            wording=s.key, label=s.wording.label, origin=s.wording.origin,
            question=rendered_question(s.wording, aspect), fairness=s.fairness,
            p_a_raw=s.p_a_raw, flip_rate=s.flip_rate,
            agreement_metric=a.metric if a else "", agreement_raw=a.raw if a else nan,
            agreement_raw_low=a.raw_low if a else nan, agreement_raw_high=a.raw_high if a else nan,
            agreement_balanced=a.balanced if a else nan,
            agreement_balanced_low=a.balanced_low if a else nan,
            agreement_balanced_high=a.balanced_high if a else nan,
            comparisons_tune=s.n_tune, comparisons_holdout=s.n_holdout,
            picked=picked is not None and s.key == picked.key))
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def with_key(wording: Wording, key: str) -> Wording:
    """``wording`` under another key."""
    return replace(wording, key=key)
