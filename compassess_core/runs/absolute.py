"""Absolute scores from pairwise comparisons with synthetic references (Lawrence et al. 2025,
"Direct-Scoring NLG Evaluators Can Use Pairwise Comparisons Too", arXiv:2509.05440).

For each context and aspect, N references of known quality 1..N are written by the model (the
worst and the best first, then each in-between level from its two neighbours, recursively), or
uploaded by the user. A candidate ("target") is compared with every reference; the judge's
next-token probabilities of the words "Better", "Worse", "Similar" (or "Yes"/"No", the paper's
ablation) give an absolute, thresholdable score

    s = sum_i ( i * P(Better | i) - i * P(Worse | i) )          (the paper's score)

and a calibrated variant on the 1..N scale, the expected level (see :func:`expected_level`).
Both presentation orders (target first / reference first) can be judged and averaged, which removes
the positional bias the same way as comparing both orders in pairwise runs.

The module holds the prompts, the pure score math, the reference generator and the run kind
(:class:`AbsoluteKind`), whose plan the one run loop (``run_loop``) drives. It reads and writes
references only through the small ``ReferenceBook`` protocol below, and must never import ``db``
or a UI.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np
import pandas as pd

from ..stats import metrics
from ..errors import InputError, Problem, RunCancelled
from ..judges.base import TextGenerator
from .comparative import context_seed
from .context_window import ContextFit, fit_contexts
from ..data.candidates import column_key, source_rows
from ..data.tables import MAX_FILE_BYTES, Source, load_table
from .prompts import TASK_WORDING, Aspect, TaskWording, infer_task, more_adjective
from ..report_text import fmt, table
from .run_loop import WorkPlan
from .settings import GenerationOptions, ReferenceOptions, RunSettings, label_words_key
from ..types import (ABSOLUTE_COLUMNS, REFERENCE_FIRST, TARGET_FIRST,  # noqa: F401
                     AbsoluteJudgement, AbsoluteKey, AbsoluteResult, ComparisonPrompt, Context,
                     Dataset, FloatArray, Reference)
from ..report_text import counted

# ------------------------------------------------------------------------------- vocabulary

KIND = "absolute"
DEFAULT_LEVELS = ReferenceOptions.n_levels
#: ``--orders`` choices -> the presentation orders judged for every (candidate, reference).
ORDERS: dict[str, tuple[str, ...]] = {
    "both": (TARGET_FIRST, REFERENCE_FIRST),
    TARGET_FIRST: (TARGET_FIRST,),
    REFERENCE_FIRST: (REFERENCE_FIRST,),
}
#: Label words per prompt variant: "bws" reads Better/Worse/Similar, "yes-no" the paper's ablation.
VARIANTS: dict[str, tuple[str, ...]] = {
    "bws": (" Better", " Worse", " Similar"),
    "yes-no": (" Yes", " No"),
}
PRIMER = "Answer:"
#: Reference set of user-uploaded anchor texts (generated sets are named by the model identity).
UPLOADED = "upload"
#: Score columns of :func:`score_table`: the paper's s and the calibrated 1..N level.
SCORES = ("level", "score")

#: Tasks an absolute run words its prompts for (``prompts.TASK_WORDING``).
TASKS = tuple(TASK_WORDING)


class ReferenceBook(Protocol):
    """Stored references, per dataset, aspect and reference set."""

    def load_references(self, dataset_id: int, aspect: str, reference_set: str) -> list[Reference]:
        ...

    def save_references(self, dataset_id: int, aspect: str, reference_set: str,
                        references: list[Reference]) -> int:
        ...


# ------------------------------------------------------------------------------------ prompts

def _wording(task: str) -> TaskWording:
    if task not in TASK_WORDING:
        raise InputError(f"unknown task '{task}' for absolute scores; choose one of {', '.join(TASKS)}")
    return TASK_WORDING[task]


def generation_plan(n_levels: int) -> list[tuple[int, int | None, int | None]]:
    """The order references are written in: ``(level, lower, upper)`` (the paper's recursion).

    Level 1 and level N come first from the context alone; then each gap ``(lo, hi)`` with room
    in between gets its middle level ``(lo + hi) // 2`` written from its two neighbours, breadth
    first. N = 5 gives 1, 5, 3 (from 1 and 5), 2 (from 1 and 3), 4 (from 3 and 5).

    Raises
    ------
    InputError
        Fewer than 2 levels.
    """
    if n_levels < 2:
        raise InputError(f"absolute scores need at least 2 reference levels, got {n_levels}")
    plan: list[tuple[int, int | None, int | None]] = [(1, None, None), (n_levels, None, None)]
    gaps = [(1, n_levels)]
    while gaps:
        nxt = []
        for lo, hi in gaps:
            if hi - lo < 2:
                continue
            mid = (lo + hi) // 2
            plan.append((mid, lo, hi))
            nxt += [(lo, mid), (mid, hi)]
        gaps = nxt
    return plan


def generation_prompt(context: str, level: int, n_levels: int, aspect: Aspect, task: str,
                      lower: str | None = None, upper: str | None = None,
                      lower_level: int | None = None, upper_level: int | None = None) -> str:
    """The instruction that makes the model write the reference of ``level`` (1..N).

    Worst and best are asked for from the context alone; an in-between level is asked for with its
    two already-written neighbours shown, so it lands between them (the paper's recursive scheme,
    wording ours: the paper's exact prompt text was not available to us).
    """
    w = _wording(task)
    noun, low = w.noun, w.lower
    head = f"{w.source_label}:\n{context}\n\n"
    scale = f"on a scale of 1 (worst) to {n_levels} (best) for being {aspect.adjective}"
    if lower is None or upper is None:
        if level == 1:
            ask = (f"Write a very poor {low} {w.of} the {w.source} above: it must deserve a score "
                   f"of 1 {scale}, that is it should be as little {aspect.adjective} as possible.")
        else:
            ask = (f"Write an excellent {low} {w.of} the {w.source} above: it must deserve a score "
                   f"of {n_levels} {scale}, that is it should be as {aspect.adjective} as possible.")
        return head + ask + f" Reply with the {low} only."
    return (head + f"{noun} with a score of {lower_level} {scale}:\n{lower}\n\n"
            f"{noun} with a score of {upper_level}:\n{upper}\n\n"
            f"Write a new {low} {w.of} the {w.source} that deserves a score of {level}: "
            f"{more_adjective(aspect.adjective)} than the first {low} and less so than the second. "
            f"Reply with the {low} only.")


def comparison_template(variant: str, task: str) -> str:
    """The comparison prompt with ``{context} {a} {b} {aspect}`` placeholders (A is shown first).

    ``bws`` asks for Better/Worse/Similar about A relative to B; ``yes-no`` asks whether A is more
    {aspect} than B (the paper's ablation).
    """
    w = _wording(task)
    n = w.noun
    head = f"{w.source_label}:\n{{context}}\n\n{n} A: {{a}}\n\n{n} B: {{b}}\n\n"
    if variant == "bws":
        return head + (f"Compared with {n} B, is {n} A better, worse or similar in how {{aspect}} "
                       "it is? Answer with one word: Better, Worse or Similar.")
    if variant == "yes-no":
        return head + f"Is {n} A {{more_aspect}} than {n} B? Answer Yes or No."
    raise InputError(f"unknown absolute-score variant '{variant}'; choose one of {', '.join(VARIANTS)}")


def comparison_prompt(template: str, context: str, target: str, reference: str, aspect: Aspect,
                      order: str) -> ComparisonPrompt:
    """The prompt comparing ``target`` with ``reference`` in ``order`` (who is shown first)."""
    a, b = (target, reference) if order == TARGET_FIRST else (reference, target)
    text = template.format(context=context, a=a, b=b, aspect=aspect.adjective,
                           more_aspect=more_adjective(aspect.adjective))
    return ComparisonPrompt(text=text, primer=PRIMER)


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def absolute_prompt_hash(prompt: ComparisonPrompt, variant: str) -> str:
    """Cache identity of an absolute comparison (rendered prompt, primer and variant)."""
    return _sha("absolute", variant, prompt.text, prompt.primer)


def reference_hash(text: str) -> str:
    return _sha(text)[:16]


# --------------------------------------------------------------------------------------- math

def label_probabilities(logp: FloatArray, variant: str) -> tuple[FloatArray, FloatArray]:
    """Normalise label-word log-probabilities to (P(Better), P(Worse), P(Similar)), and the mass.

    The three words' probabilities are renormalised to sum to 1 over the three words (the paper
    reads them off the full next-token distribution; normalising makes the score independent of
    how much mass the model puts elsewhere, and ``label_mass`` keeps that signal). For ``yes-no``,
    Yes -> Better and No -> Worse normalised over the two words, and P(Similar) = 0.

    Parameters
    ----------
    logp : (n, k) float array
        Log-probabilities of the variant's label words, in ``VARIANTS[variant]`` order.

    Returns
    -------
    probs : (n, 3) float array
    mass : (n,) float array
        Sum of the raw label-word probabilities.
    """
    lp = np.asarray(logp, dtype=np.float64).reshape(len(logp), -1)
    top = lp.max(axis=1, keepdims=True)
    e = np.exp(lp - top)  # stable: the largest term is 1
    probs = e / e.sum(axis=1, keepdims=True)
    mass = np.exp(lp).sum(axis=1)
    if variant == "yes-no":
        probs = np.column_stack([probs[:, 0], probs[:, 1], np.zeros(len(probs))])
    return probs, mass


def judgements_from_logprobs(logp: FloatArray, variant: str,
                             latency_ms: float = float("nan")) -> list[AbsoluteJudgement]:
    probs, mass = label_probabilities(logp, variant)
    lp = np.asarray(logp, dtype=np.float64)
    sim = lp[:, 2] if lp.shape[1] > 2 else np.full(len(lp), np.nan)
    return [AbsoluteJudgement(float(probs[k, 0]), float(probs[k, 1]), float(probs[k, 2]),
                              float(lp[k, 0]), float(lp[k, 1]), float(sim[k]), float(mass[k]),
                              float(latency_ms)) for k in range(len(lp))]


def target_view(p_better: FloatArray, p_worse: FloatArray, p_similar: FloatArray,
                target_first: Sequence[bool] | np.ndarray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Answers about the first text, turned into P(target better), P(target worse), P(similar).

    With the reference shown first, "Better" says the reference is better, i.e. the target worse:
    the two columns swap; "Similar" is symmetric.
    """
    tf = np.asarray(target_first, dtype=bool)
    pb, pw = np.asarray(p_better, np.float64), np.asarray(p_worse, np.float64)
    return np.where(tf, pb, pw), np.where(tf, pw, pb), np.asarray(p_similar, np.float64)


def paper_score(p_better: FloatArray, p_worse: FloatArray,
                levels: Sequence[int] | None = None) -> FloatArray:
    """The paper's absolute score ``s = sum_i (i * P(Better|i) - i * P(Worse|i))``.

    Parameters
    ----------
    p_better, p_worse : (m, N) float arrays
        P(target better / worse than the reference of level i), one row per target.
    levels : sequence of int, optional
        The level of each column (default 1..N).

    Returns
    -------
    (m,) float array in [-N(N+1)/2, N(N+1)/2].
    """
    pb = np.atleast_2d(np.asarray(p_better, np.float64))
    pw = np.atleast_2d(np.asarray(p_worse, np.float64))
    lv = np.arange(1, pb.shape[1] + 1, dtype=np.float64) if levels is None else np.asarray(levels, np.float64)
    return (pb - pw) @ lv


def expected_level(p_better: FloatArray, p_similar: FloatArray) -> FloatArray:
    """Calibrated score on the 1..N scale: where the target sits among the N references.

    ``level = clip(1/2 + sum_i [P(Better|i) + P(Similar|i) / 2], 1, N)``: the expected number of
    references the target beats, counting a "similar" as half a win, plus one half. A target that
    is surely better than levels 1..k-1, similar to level k and worse than the rest scores exactly
    k; one better than every reference scores N, one worse than every reference 1; in between it
    interpolates linearly in the probabilities.

    Parameters
    ----------
    p_better, p_similar : (m, N) float arrays

    Returns
    -------
    (m,) float array in [1, N].
    """
    pb = np.atleast_2d(np.asarray(p_better, np.float64))
    ps = np.atleast_2d(np.asarray(p_similar, np.float64))
    n = pb.shape[1]
    return np.clip(0.5 + (pb + 0.5 * ps).sum(axis=1), 1.0, float(n))


def comparisons_in_target_view(frame: pd.DataFrame) -> pd.DataFrame:
    """A run's stored comparisons (``ABSOLUTE_COLUMNS``) with ``pb_target``, ``pw_target``,
    ``ps_target`` (see :func:`target_view`) and each comparison's contribution to the paper's
    score, ``level * (pb_target - pw_target)``."""
    out = frame.copy()
    pb, pw, ps = target_view(out["p_better"].to_numpy(), out["p_worse"].to_numpy(),
                             out["p_similar"].to_numpy(), (out["order"] == TARGET_FIRST).to_numpy())
    out["pb_target"], out["pw_target"], out["ps_target"] = pb, pw, ps
    out["contribution"] = out["level"].to_numpy(np.float64) * (pb - pw)
    return out


def score_table(dataset: Dataset, frame: pd.DataFrame, n_levels: int,
                orders: Sequence[str] = (TARGET_FIRST, REFERENCE_FIRST)) -> pd.DataFrame:
    """One row per candidate of the dataset's judged contexts: both scores and their parts.

    The probabilities of the judged orders are averaged per (candidate, level) before scoring
    (averaging both orders cancels a positional preference), then ``score`` = :func:`paper_score`
    and ``level`` = :func:`expected_level`; ``score_<order>``/``level_<order>`` use one order only
    (when both were judged, their gap measures positional bias). A candidate missing any level of
    any judged order (an unfinished run) gets NaN scores.

    Returns
    -------
    DataFrame with context_id, candidate_id, system, text, level, score, per-order columns,
    n_comparisons, and the dataset's reference-score columns.
    """
    view = comparisons_in_target_view(frame) if len(frame) else frame.assign(
        pb_target=[], pw_target=[], ps_target=[])
    judged = set(view["context_id"]) if len(view) else set()
    rows = []
    for ctx in dataset.contexts:
        if ctx.context_id not in judged:
            continue
        for c in ctx.candidates:
            rows.append(dict(context_id=ctx.context_id, candidate_id=c.candidate_id,
                             system=c.system, text=c.text, **dict(c.scores)))
    base = pd.DataFrame(rows, columns=["context_id", "candidate_id", "system", "text",
                                       *dataset.score_columns])
    if base.empty:
        for col in ("level", "score", "n_comparisons"):
            base[col] = pd.Series(dtype=float)
        return base
    levels = np.arange(1, n_levels + 1)
    idx = pd.MultiIndex.from_frame(base[["context_id", "candidate_id"]])

    def matrix(sub: pd.DataFrame, col: str) -> np.ndarray:
        # (candidates, levels), mean over the orders present; NaN where missing.
        piv = sub.pivot_table(index=["context_id", "candidate_id"], columns="level", values=col,
                              aggfunc="mean")
        return piv.reindex(index=idx, columns=levels).to_numpy(np.float64)

    def scores(sub: pd.DataFrame, complete: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pb, pw, ps = (matrix(sub, c) for c in ("pb_target", "pw_target", "ps_target"))
        s, lv = paper_score(np.nan_to_num(pb), np.nan_to_num(pw), levels), \
            expected_level(np.nan_to_num(pb), np.nan_to_num(ps))
        return np.where(complete, s, np.nan), np.where(complete, lv, np.nan)

    counts = view.groupby(["context_id", "candidate_id"]).size()
    need = n_levels * len(orders)
    n_cmp = counts.reindex(idx).fillna(0).to_numpy(np.int64)
    complete = n_cmp >= need
    out = base.copy()
    out["score"], out["level"] = scores(view, complete)
    if len(orders) > 1:
        for o in orders:
            sub = view[view["order"] == o]
            c = sub.groupby(["context_id", "candidate_id"]).size().reindex(idx).fillna(0).to_numpy() >= n_levels
            out[f"score_{o}"], out[f"level_{o}"] = scores(sub, c)
    out["n_comparisons"] = n_cmp
    return out


def passes(scores: FloatArray, threshold: float) -> np.ndarray:
    """Pass/fail at a threshold: ``score >= threshold`` (NaN, an unscored candidate, fails)."""
    s = np.asarray(scores, np.float64)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(s, nan=-np.inf) >= threshold


def score_range(score: str, n_levels: int) -> tuple[float, float]:
    """The possible range of a score column: ``level`` in [1, N], ``score`` in +-N(N+1)/2."""
    if score == "level":
        return 1.0, float(n_levels)
    top = n_levels * (n_levels + 1) / 2.0
    return -top, top


@dataclass(frozen=True)
class AbsoluteEvaluation:
    """Agreement of absolute scores with a reference column, and pass rates.

    * ``sample_spearman_x100``: Spearman within each context, averaged over contexts, x100
      ("sample level"; contexts with a constant reference are skipped, metrics module).
    * ``system_spearman_x100``: Spearman of the per-system mean scores across all contexts
      ("system level"; needs a ``system`` column).
    * ``summary_spearman_x100``: Spearman over all candidates of all contexts pooled ("summary
      level", Liusie et al. 2024 appendix B): the one that rewards scores that are comparable
      across contexts, which is what an absolute score is for.
    * ``pass_rate``: share of scored candidates with ``score >= threshold``.
    """

    score: str
    reference: str | None
    n_candidates: int
    n_scored: int
    sample_spearman_x100: float
    sample_kendall_x100: float
    system_spearman_x100: float
    summary_spearman_x100: float
    contexts_used: int
    threshold: float | None
    n_pass: int
    pass_rate: float
    order_gap: float
    p_first_better: float
    p_first_worse: float

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


def evaluate_scores(table: pd.DataFrame, frame: pd.DataFrame, *, score: str = "level",
                    reference: str | None = None, threshold: float | None = None) -> AbsoluteEvaluation:
    """Sample-, system- and summary-level Spearman x100 of ``table[score]`` with ``reference``,
    pass rate at ``threshold``, and positional bias of the raw comparisons.

    ``order_gap`` is the mean |level_target-first - level_reference-first| over candidates judged
    in both orders (NaN otherwise); ``p_first_better``/``p_first_worse`` are the mean P(Better) /
    P(Worse) answered about the first text over all comparisons (with both orders judged, an
    order-blind judge has them equal: the analogue of P(A) = P(B)).

    Raises
    ------
    InputError
        Unknown score column, or a reference column not in the table.
    """
    if score not in SCORES:
        raise InputError(f"unknown score '{score}'; choose one of {', '.join(SCORES)}")
    if reference is not None and reference not in table.columns:
        raise InputError(f"reference column '{reference}' is not in the dataset")
    s = table[score].to_numpy(np.float64) if len(table) else np.array([])
    scored = ~np.isnan(s)
    nan = float("nan")
    samp = kend = sysl = summ = nan
    used = 0
    if reference is not None and scored.any():
        t = table[scored]
        groups = [g for _, g in t.groupby("context_id", sort=False)]
        pred = [g[score].to_numpy(np.float64) for g in groups]
        ref = [g[reference].to_numpy(np.float64) for g in groups]
        r = metrics.per_context_correlation(pred, ref, "spearman")
        samp, used = r.mean_x100, r.n_used
        kend = metrics.per_context_correlation(pred, ref, "kendall").mean_x100
        summ = metrics.pooled_correlation(pred, ref, "spearman")
        if t["system"].notna().all():
            sysl = metrics.system_level_correlation(pred, ref, [g["system"].to_numpy(object)
                                                                for g in groups])
    n_pass = int(passes(s, threshold).sum()) if threshold is not None else 0
    rate = n_pass / int(scored.sum()) if threshold is not None and scored.any() else nan
    gap = nan
    a, b = f"level_{TARGET_FIRST}", f"level_{REFERENCE_FIRST}"
    if a in table.columns and b in table.columns and len(table):
        d = np.abs(table[a].to_numpy(np.float64) - table[b].to_numpy(np.float64))
        gap = float(np.nanmean(d)) if np.isfinite(d).any() else nan
    pfb = float(frame["p_better"].mean()) if len(frame) else nan
    pfw = float(frame["p_worse"].mean()) if len(frame) else nan
    return AbsoluteEvaluation(score, reference, len(table), int(scored.sum()), samp, kend, sysl,
                              summ, used, threshold, n_pass, rate, gap, pfb, pfw)


# ----------------------------------------------------------------------------------- settings

def absolute_settings(dataset: str, aspect: Aspect, *, model: str,
                      n_levels: int = ReferenceOptions.n_levels, task: str = "auto",
                      variant: str = ReferenceOptions.variant, orders: str = ReferenceOptions.orders,
                      reference_set: str = ReferenceOptions.reference_set,
                      max_new_tokens: int = GenerationOptions.max_new_tokens,
                      sample: bool = GenerationOptions.sample,
                      temperature: float = GenerationOptions.temperature,
                      top_p: float = GenerationOptions.top_p, contexts: int | None = None,
                      seed: int = RunSettings.seed, batch_size: int | None = RunSettings.batch_size,
                      device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                      truncate_context: bool = False) -> RunSettings:
    """The ``RunSettings`` of an absolute run (``kind="absolute"``, the specifics in ``references``).

    ``reference_set`` is ``generated`` (the judge model writes the references, stored per
    context, aspect and model and reused) or ``upload`` (the user's anchor texts).

    Raises
    ------
    InputError
        Bad level count, order, variant, task or decoding setting.
    """
    if task == "auto":
        task = infer_task(aspect)
    _wording(task)
    template = comparison_template(variant, task)
    if orders not in ORDERS:
        raise InputError(f"unknown orders '{orders}'; choose one of {', '.join(ORDERS)}")
    generation_plan(n_levels)
    if n_levels > 20:
        raise InputError(f"at most 20 reference levels, got {n_levels}")
    if max_new_tokens < 1:
        raise InputError("--max-new-tokens must be at least 1")
    if reference_set not in ("generated", UPLOADED):
        raise InputError(f"reference set must be 'generated' or '{UPLOADED}', not '{reference_set}'")
    options = ReferenceOptions(
        n_levels=int(n_levels), task=task, variant=variant, orders=orders,
        reference_set=reference_set,
        generation=GenerationOptions(max_new_tokens=int(max_new_tokens), sample=bool(sample),
                                     temperature=float(temperature), top_p=float(top_p)))
    return RunSettings(
        dataset=dataset, aspect=aspect.name, aspect_adjective=aspect.adjective,
        template_name=f"absolute-{variant}-{task}", template_text=template, primer=PRIMER,
        model=model, label_words=VARIANTS[variant], contexts=contexts, seed=seed,
        batch_size=batch_size, device=device, dtype=dtype, kind=KIND,
        truncate_context=truncate_context, references=options)


def is_absolute(settings: RunSettings | Mapping) -> bool:
    kind = settings.get("kind") if isinstance(settings, Mapping) else settings.kind
    return kind == KIND


def reference_set_key(settings: RunSettings, judge_key: str | None) -> str:
    """The stored reference set a run uses: ``upload``, or the generating model's identity
    (the judge's key without its label words; ``judge_key``: a loaded judge's ``model_key`` or
    the judge identity the store recorded for the run, None before a worker ran it)."""
    if settings.reference_options.reference_set == UPLOADED:
        return UPLOADED
    return (judge_key or settings.model).split("|labels=")[0]


# -------------------------------------------------------------------------------- references

ANCHOR_COLUMNS = ("context_id", "level", "text")


def validate_anchor_frame(df: pd.DataFrame, *, file_label: str, n_levels: int | None = None,
                          context_ids: Iterable[str] | None = None
                          ) -> tuple[list[Reference] | None, list[Problem]]:
    """Anchor texts from a table read by ``data.parse_table`` (columns ``context_id, level,
    text``, matched as candidate columns are), every problem with its row and column: a missing
    column, a level that is not an integer in 1..N, an empty context id or text, a context not in
    ``context_ids`` (when given), a (context_id, level) given twice."""
    by_key = {}
    for col in df.columns:
        by_key.setdefault(column_key(col), col)
    missing = [c for c in ANCHOR_COLUMNS if c not in by_key]
    if missing:
        return None, [Problem(file_label, f"missing column(s): {', '.join(missing)} "
                                          "(expected context_id, level, text)")]
    known = None if context_ids is None else set(context_ids)
    problems, out, seen = [], [], set()
    columns = [df[by_key[c]].fillna("").astype(str).tolist() for c in ANCHOR_COLUMNS]
    for k, cid, lvl, txt in zip(source_rows(df).tolist(), *columns):
        cid, lvl = cid.strip(), lvl.strip()
        try:
            level = int(lvl)
        except ValueError:
            problems.append(Problem(file_label, f"level '{lvl}' is not an integer", k, "level"))
            continue
        if level < 1 or (n_levels is not None and level > n_levels):
            problems.append(Problem(file_label, f"level {level} is outside 1..{n_levels or 'N'}",
                                    k, "level"))
            continue
        if not cid:
            problems.append(Problem(file_label, "empty context_id", k, "context_id"))
            continue
        if known is not None and cid not in known:
            problems.append(Problem(file_label, f"context '{cid}' is not in the dataset", k,
                                    "context_id"))
            continue
        if not txt.strip():
            problems.append(Problem(file_label, "empty text", k, "text"))
            continue
        if (cid, level) in seen:
            problems.append(Problem(file_label, f"level {level} of context '{cid}' appears twice",
                                    k, "level"))
            continue
        seen.add((cid, level))
        out.append(Reference(cid, level, txt, source="uploaded"))
    if problems:
        return None, problems
    if not out:
        return None, [Problem(file_label, "no anchor rows")]
    return out, []


def parse_anchor_file(source: Source, *, file_label: str | None = None,
                      n_levels: int | None = None, context_ids: Iterable[str] | None = None,
                      max_bytes: int = MAX_FILE_BYTES) -> list[Reference]:
    """Read user anchor texts (CSV, TSV or JSON Lines with ``context_id, level, text``) through
    the one table reader (``data.load_table``: size limit, encoding, formats).

    Raises
    ------
    ValidationError
        The file cannot be read, or :func:`validate_anchor_frame` finds problems; every problem
        is reported with its row and column.
    """
    if file_label is None and isinstance(source, (bytes, bytearray)):
        file_label = "anchors.csv"  # bytes have no name; anchor files are CSV unless named
    return load_table(source, lambda frame, label: validate_anchor_frame(
        frame, file_label=label, n_levels=n_levels, context_ids=context_ids),
        file_label=file_label, max_bytes=max_bytes)


def missing_levels(refs: Iterable[Reference], context_ids: Iterable[str],
                   n_levels: int) -> dict[str, list[int]]:
    """Context -> the levels 1..N it has no reference for (contexts with none missing left out)."""
    have: dict[str, set[int]] = {}
    for r in refs:
        have.setdefault(r.context_id, set()).add(r.level)
    out = {}
    for cid in context_ids:
        miss = [lv for lv in range(1, n_levels + 1) if lv not in have.get(cid, set())]
        if miss:
            out[cid] = miss
    return out


def _text_generator(judge) -> TextGenerator:
    if not isinstance(judge, TextGenerator):
        raise InputError("references can only be generated with a local causal (chat) model; "
                         "upload your own anchor texts for this judge instead")
    return judge


def clean_generation(text: str) -> str:
    """Strip whitespace, a leading "Summary:"-style label and wrapping quotes from a generation."""
    t = text.strip()
    for label in ("Summary:", "Response:", "Story:", "Answer:"):
        if t.lower().startswith(label.lower()):
            t = t[len(label):].strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t


def generate_references(dataset: Dataset, settings: RunSettings, judge,
                        existing: Sequence[Reference] = (), *,
                        on_context: Callable[[str, list[Reference]], None] | None = None,
                        cancel: Callable[[], bool] | None = None,
                        context_texts: Mapping[str, str] | None = None) -> list[Reference]:
    """Write the references each context of the run still lacks, in :func:`generation_plan` order.

    ``judge`` writes them (a ``judges.base.TextGenerator``); greedy unless the run's generation
    options sample, then each text with its own seed derived from the run seed, the context and
    the level, so a rerun writes the same texts. Existing (stored, edited or uploaded) texts are
    kept and used as neighbours of the levels written around them. ``on_context(context_id, new_refs)`` is called after each context (the
    caller stores them at once, so an interruption loses at most one context).
    ``context_texts``: the passages as the run uses them (cut to fit the model), by context id.

    Returns
    -------
    list[Reference]
        Only the newly written references.
    """
    n = settings.reference_options.n_levels
    task = settings.reference_options.task
    options = settings.reference_options.generation
    aspect = settings.aspect_obj
    writer = _text_generator(judge)
    record = dict(writer.generation_record(options), seed=settings.seed)
    by_ctx: dict[str, dict[int, str]] = {}
    for r in existing:
        by_ctx.setdefault(r.context_id, {})[r.level] = r.text
    new: list[Reference] = []
    for ctx in dataset.head(settings.contexts).contexts:
        have = by_ctx.setdefault(ctx.context_id, {})
        if all(lv in have for lv in range(1, n + 1)):
            continue
        if cancel is not None and cancel():
            raise RunCancelled("cancelled while writing references")
        made: list[Reference] = []
        for level, lo, hi in generation_plan(n):
            if level in have:
                continue
            passage = context_texts.get(ctx.context_id, ctx.text) if context_texts else ctx.text
            prompt = generation_prompt(passage, level, n, aspect, task,
                                       have.get(lo) if lo else None, have.get(hi) if hi else None,
                                       lo, hi)
            seed = (int(context_seed(settings.seed, f"{ctx.context_id}#{level}")
                        .integers(0, 2**31 - 1)) if options.sample else None)
            text = clean_generation(writer.generate([prompt], options, seeds=[seed])[0])
            have[level] = text
            made.append(Reference(ctx.context_id, level, text, "generated",
                                  dict(record, prompt=prompt, lower=lo, upper=hi)))
        new += made
        if on_context is not None:
            on_context(ctx.context_id, made)
    return new


# ----------------------------------------------------------------------------------- run kind

@dataclass(frozen=True)
class AbsoluteStream:
    """An absolute plan's ``compute``: the label words' log-probabilities of ``variant`` as
    judgements; equal for the same judge and variant, so the runs of one pass over several
    aspects are judged in one call (``run_loop.run_group``)."""

    judge: object
    variant: str

    def __call__(self, prompts: list[ComparisonPrompt]):
        for rows, logp, ms in self.judge.label_logprobs_stream(prompts, VARIANTS[self.variant]):
            if not len(rows):   # a checkpoint within a long prompt: the caller may stop here
                yield rows, []
                continue
            yield rows, judgements_from_logprobs(logp, self.variant, ms)


def planned_keys(dataset: Dataset, settings: RunSettings) -> list[AbsoluteKey]:
    """Every (context, candidate, level, order) the run compares, grouped so that prompts sharing
    their first text are adjacent (the judge's prefix cache then reuses them)."""
    n = settings.reference_options.n_levels
    orders = ORDERS[settings.reference_options.orders]
    keys = []
    for ctx in dataset.head(settings.contexts).contexts:
        for order in orders:
            if order == TARGET_FIRST:
                keys += [AbsoluteKey(ctx.context_id, c.candidate_id, lv, order)
                         for c in ctx.candidates for lv in range(1, n + 1)]
            else:
                keys += [AbsoluteKey(ctx.context_id, c.candidate_id, lv, order)
                         for lv in range(1, n + 1) for c in ctx.candidates]
    return keys


def references_by_context(refs: Iterable[Reference]) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for r in refs:
        out.setdefault(r.context_id, {})[r.level] = r.text
    return out


def ensure_references(job, context_texts: Mapping[str, str]) -> dict[str, dict[int, str]]:
    """The references of every context of the run, writing (and storing, one context at a time)
    the levels a generated set lacks; ``job`` is a ``run_kinds.RunJob`` whose store is a
    ``ReferenceBook``.

    Raises
    ------
    InputError
        Uploaded anchors missing for some context (there is nothing to generate them with).
    RunCancelled
        A cancel asked for between two contexts; what was written is kept.
    """
    settings, store = job.settings, job.store
    options = settings.reference_options
    ref_set = reference_set_key(settings, job.judge.model_key)
    existing = store.load_references(job.dataset_id, settings.aspect, ref_set)
    ctx_ids = [c.context_id for c in job.dataset.head(settings.contexts).contexts]
    lacking = missing_levels(existing, ctx_ids, options.n_levels)
    if lacking and ref_set == UPLOADED:
        cid, lv = next(iter(lacking.items()))
        raise InputError(f"uploaded anchors lack {len(lacking)} context(s), e.g. '{cid}' levels "
                         f"{lv}; upload a CSV (context_id, level, text) covering levels "
                         f"1..{options.n_levels}")
    if lacking:
        _text_generator(job.judge)
        job.report(f"writing references for {len(lacking)} context(s)")

        def save(cid: str, made: list[Reference]) -> None:
            if made:
                store.save_references(job.dataset_id, settings.aspect, ref_set, made)
            job.report(f"wrote {len(made)} reference(s) for context {cid}")

        generate_references(job.dataset, settings, job.judge, existing, on_context=save,
                            cancel=job.cancelled, context_texts=context_texts)
        existing = store.load_references(job.dataset_id, settings.aspect, ref_set)
    return references_by_context(existing)


class AbsoluteKind:
    """Absolute scores: every candidate compared with references of quality 1..N (both orders)."""

    # the RunKind protocol's names: the kind, what its progress counts, its speed, its title
    name, unit, rate_unit, label = KIND, "reference comparisons", "comparisons/s", "absolute scores"
    is_pairwise = False
    results_page = "scores"
    ranked_rows = "scores"
    completed_is_final = False  # its reference texts may be edited later

    def settings(self, dataset: str, options, model) -> RunSettings:
        """The settings of a run on dataset ``dataset`` (its name) from its
        ``options.AbsoluteOptions`` and ``options.ModelOptions`` (:func:`absolute_settings`)."""
        g = options.generation
        return absolute_settings(
            dataset, options.aspect, n_levels=options.n_levels, task=options.task,
            variant=options.variant, orders=options.orders, reference_set=options.reference_set,
            max_new_tokens=g.max_new_tokens, sample=g.sample, temperature=g.temperature,
            top_p=g.top_p, seed=options.seed, **model.settings_fields())

    def advice(self, dataset: Dataset, settings: RunSettings) -> list[str]:
        """Nothing to warn about: every candidate meets every reference."""
        return []

    def check(self, settings: RunSettings) -> None:
        options = settings.reference_options
        generation_plan(options.n_levels)
        if options.orders not in ORDERS:
            raise InputError(f"unknown orders '{options.orders}'; choose one of {', '.join(ORDERS)}")
        if options.variant not in VARIANTS:
            raise InputError(f"unknown variant '{options.variant}'; choose one of {', '.join(VARIANTS)}")

    def judge_label_words(self, settings: RunSettings) -> None:
        return None  # the variant's words are read with label_logprobs, whatever the judge's own

    def judge_key(self, judge) -> str:
        return judge.model_key

    def preflight(self, dataset: Dataset, settings: RunSettings, judge,
                  references: Mapping[str, Mapping[int, str]] | None = None) -> ContextFit:
        """Check the settings, the judge and that every prompt fits it; references not known yet
        count as ``max_new_tokens`` tokens.

        Raises
        ------
        InputError
            Bad settings, a judge that cannot read label words, or prompts too long.
        """
        self.check(settings)
        if not hasattr(judge, "label_logprobs_stream"):
            raise InputError(f"judge {getattr(judge, 'description', judge)!r} cannot read label-word "
                             "probabilities; absolute scores need a local transformers model")
        return fit_contexts(dataset.head(settings.contexts).contexts,
                            self.longest_prompts(settings, references or {}), judge,
                            truncate=settings.truncate_context)

    def longest_prompts(self, settings: RunSettings, references: Mapping[str, Mapping[int, str]]):
        """The ``context_window.LongestPrompts`` of an absolute run: its longest candidates
        against the longest reference (a reference yet to be written counts as
        ``max_new_tokens`` tokens), and the prompt that writes a middle reference."""
        options = settings.reference_options
        placeholder = " x" * options.generation.max_new_tokens
        aspect = settings.aspect_obj

        def offer(ctx: Context, text: str, count) -> list[tuple[str, ComparisonPrompt]]:
            refs = list((references.get(ctx.context_id) or {}).values()) or [placeholder]
            longest_ref = refs[int(np.argmax(count(refs)))]
            lengths = count([c.text for c in ctx.candidates])
            out = [(f"the prompt comparing '{ctx.candidates[k].candidate_id}' with a reference",
                    comparison_prompt(settings.template_text, text, ctx.candidates[k].text,
                                      longest_ref, aspect, TARGET_FIRST))
                   for k in np.argsort(-lengths, kind="stable")[:3]]
            if options.reference_set != UPLOADED:
                writing = generation_prompt(text, 2, max(options.n_levels, 3), aspect, options.task,
                                            placeholder, placeholder, 1, 3)
                out.append(("the prompt writing a reference (with the reference it writes)",
                            ComparisonPrompt(text=writing, primer=placeholder)))
            return out
        return offer

    def example_prompt(self, dataset: Dataset, settings: RunSettings) -> None:
        """``RunKind.example_prompt``: none before the run (its prompts hold references that
        the judge writes first)."""
        return None

    def planned_total(self, dataset: Dataset, settings: RunSettings) -> int:
        """Comparisons with references the run plans (references to write come on top), known
        before a judge is loaded."""
        return len(planned_keys(dataset, settings))

    def prompt_work(self, dataset: Dataset, settings: RunSettings) -> list[tuple[str, float]]:
        """``RunKind.prompt_work`` of the comparisons with references (writing them is not
        counted): each passage once, each candidate once per comparison it is in, and a reference
        as long as the candidate beside it (references are written later, of that length), the
        template's words once per comparison."""
        options = settings.reference_options
        per_candidate = float(options.n_levels * len(ORDERS[options.orders]))
        contexts = dataset.head(settings.contexts).contexts
        empty = comparison_prompt(settings.template_text, "", "", "", settings.aspect_obj,
                                  TARGET_FIRST)
        work = [(ctx.text, 1.0) for ctx in contexts]
        work += [(c.text, 2 * per_candidate) for ctx in contexts for c in ctx.candidates]
        work.append((empty.text + empty.primer,
                     per_candidate * sum(len(c.candidates) for c in contexts)))
        return work

    def plan(self, job) -> WorkPlan:
        """Write the references the contexts lack, then every (candidate, reference, order) the
        run lacks or whose reference changed since (``job``: a ``run_kinds.RunJob``).

        Raises
        ------
        InputError
            A judge that cannot read label-word probabilities, or missing uploaded anchors.
        """
        settings, judge = job.settings, job.judge
        options = settings.reference_options
        variant, words = options.variant, VARIANTS[options.variant]
        contexts = job.dataset.head(settings.contexts).contexts
        uploaded = (job.store.load_references(job.dataset_id, settings.aspect, UPLOADED)
                    if options.reference_set == UPLOADED else [])
        fit = self.preflight(job.dataset, settings, judge, references_by_context(uploaded))
        context_text = {c.context_id: fit.context_text(c) for c in contexts}
        references = ensure_references(job, context_text)
        fit = self.preflight(job.dataset, settings, judge, references)
        context_text = {c.context_id: fit.context_text(c) for c in contexts}
        texts = {(c.context_id, x.candidate_id): x.text for c in contexts for x in c.candidates}
        aspect = settings.aspect_obj

        def prompt(k: AbsoluteKey) -> ComparisonPrompt:
            return comparison_prompt(settings.template_text, context_text[k.context_id],
                                     texts[(k.context_id, k.candidate_id)],
                                     references[k.context_id][k.level], aspect, k.order)

        def prompt_hash(p: ComparisonPrompt) -> str:
            return absolute_prompt_hash(p, variant)

        keys = planned_keys(job.dataset, settings)
        todo = [k for k in keys
                if getattr(job.stored.get(k), "prompt_hash", None) != prompt_hash(prompt(k))]
        step = job.chunk_prompts
        return WorkPlan(
            kind=self.name, unit=self.unit, total=len(keys), already=len(keys) - len(todo),
            batches=(todo[i:i + step] for i in range(0, len(todo), step)), prompt=prompt,
            prompt_hash=prompt_hash, compute=AbsoluteStream(judge, variant),
            result=lambda k, j, h: AbsoluteResult(k, j, h, reference_hash(
                references[k.context_id][k.level])),
            judge_key=self.judge_key(judge), label_words_key=label_words_key(words),
            notes=fit.to_dict())

    # ------------------------------------------------------------------ reading a run back
    def read(self, reader, run_id: int, dataset: Dataset, settings: RunSettings
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(comparisons, scores)``: the stored comparisons and one row of scores per candidate."""
        frame = reader.read_results(run_id, self.name)
        options = settings.reference_options
        return frame, score_table(dataset, frame, options.n_levels, ORDERS[options.orders])

    def rank(self, dataset: Dataset, results, options) -> pd.DataFrame:
        """Candidates by score within their context, with pass/fail at the options' threshold."""
        _, table = results
        out = table.sort_values(["context_id", options.score], ascending=[True, False],
                                kind="stable", na_position="last")
        # ties share the smallest rank (scipy's rankdata method="min", as ranking.rank_scores);
        # a candidate without a score ranks after every scored one
        out.insert(1, "rank", out.groupby("context_id", sort=False)[options.score].rank(
            method="min", ascending=False, na_option="bottom").astype(np.int64))
        if options.threshold is not None:
            out["pass"] = passes(out[options.score].to_numpy(), options.threshold)
        return out.reset_index(drop=True)

    def evaluate(self, dataset: Dataset, results, options, *, run: str = "") -> "AbsoluteEvaluation":
        frame, table = results
        return evaluate_scores(table, frame, score=options.score, reference=options.reference,
                               threshold=options.threshold)

    def results_frame(self, reader, run_id: int, dataset: Dataset, settings: RunSettings):
        return reader.read_results(run_id, self.name, detail=True)

    # ------------------------------------------------------------------ how it reads as text
    def ranking_header(self, run: str, results, settings: RunSettings, fields: dict,
                       n_rows: int) -> str:
        """What ``compassess rank`` prints above the table."""
        frame, _ = results
        return (f"# run {run}: absolute scores ('{fields['score']}'; level = calibrated "
                f"1..{settings.reference_options.n_levels}, score = the paper's s) from "
                f"{counted(len(frame), 'comparison')} with references")

    def print_evaluation(self, ev, out) -> None:
        """``compassess evaluate``'s text: correlations, label probabilities, the pass rate."""
        print(f"absolute scores ('{ev.score}') for "
              f"{ev.n_scored}/{counted(ev.n_candidates, 'candidate')}; "
              f"reference column: {ev.reference or 'none'}", file=out)
        rows = [("sample-level Spearman x100 (per-context mean)", fmt(ev.sample_spearman_x100)),
                ("sample-level Kendall x100 (per-context mean)", fmt(ev.sample_kendall_x100)),
                ("system-level Spearman x100 (per-system means)", fmt(ev.system_spearman_x100)),
                ("summary-level Spearman x100 (all candidates pooled)",
                 fmt(ev.summary_spearman_x100)),
                ("P(Better) about the first text", fmt(ev.p_first_better, ".3f")),
                ("P(Worse) about the first text", fmt(ev.p_first_worse, ".3f")),
                ("mean |level target-first - level reference-first|", fmt(ev.order_gap, ".3f"))]
        if ev.threshold is not None:
            rows.append((f"pass rate at {ev.score} >= {ev.threshold:g}",
                         f"{ev.n_pass}/{ev.n_scored} = {fmt(ev.pass_rate, '.3f')}"))
        table(rows, out=out)

    def summary_line(self, info) -> str:
        """How much a stored run holds, as a run picker shows it (``info``: the store's record)."""
        return f"{self.label}, {info.done or 0} {self.unit}"
