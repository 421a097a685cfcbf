"""The leaderboard of judges: every run and panel on a dataset and aspect, ranked by agreement
with people (Cohen's kappa of the debiased verdicts with the humans' decisive majority, with
bootstrap intervals over labelled pairs), else by Spearman x100 with a reference-score column.

One row per judge (:data:`JUDGE_COLUMNS`) from what the judge's own reads give
(:class:`JudgeEntry`: its comparisons, positional and length bias, speed), plus what this module
computes from its comparisons and the labels: accuracy and kappa with intervals
(``panel.human_agreement_interval``) and the log-loss and expected calibration error of the raw
and the held-out calibrated p (``calibration.calibrate``), and each judge against the top one on the same labelled
pairs (``paired``: the paired difference of accuracy with people, its cluster-bootstrap interval
and McNemar's exact p; "indistinguishable from the best" when the interval holds 0).

Pure numpy/pandas: this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from . import paired
from .agreement import json_records
from .analysis import resolve_tau
from .calibration import calibrate
from ..errors import InputError
from .panel import human_agreement_interval
from .ranking import rank_scores
from ..types import ComparisonTable

__all__ = ["JUDGE_COLUMNS", "JudgeEntry", "JudgesLeaderboard", "judge_row", "rank_judges"]

#: Columns of :attr:`JudgesLeaderboard.frame`.
JUDGE_COLUMNS = (
    "rank", "judge", "kind", "model", "template", "members", "n_comparisons", "n_labelled_pairs",
    "accuracy", "accuracy_low", "accuracy_high", "kappa", "kappa_low", "kappa_high",
    "log_loss_raw", "log_loss_calibrated", "ece_raw", "ece_calibrated", "spearman_x100",
    "p_a_raw", "flip_rate_raw", "longer_wins", "length_slope_per_doubling",
    "comparisons_per_s", "tokens_per_comparison", "held_out", "note") + (
    # the paired test against the top judge (``paired_with_best``)
    "vs_best_pp", "vs_best_low_pp", "vs_best_high_pp", "vs_best_mcnemar_p", "vs_best_n_pairs",
    "vs_best_n_contexts", "indistinguishable_from_best")


@dataclass(frozen=True)
class JudgeEntry:
    """One judge as its reads give it: ``kind`` is ``run`` or ``panel`` (a panel has
    ``members`` and no single ``model`` or ``template``); ``table`` its comparisons;
    ``held_out``, for a panel that uses labels, the call that gives its p on held-out folds
    (it may raise ``InputError``); ``spearman_x100`` against the reference (None: no reference);
    P(A) and the flip rate at tau = 0.5; the longer text's share of wins and the length slope
    at the balanced tau*; comparisons per second and prompt tokens per comparison (None: not
    measured); ``partial_note`` when the run stopped before its plan was complete."""

    name: str
    kind: str
    model: str | None
    template: str | None
    members: str | None
    n_comparisons: int
    table: ComparisonTable
    held_out: Callable[[], ComparisonTable] | None
    spearman_x100: float | None
    p_a_raw: float
    flip_rate_raw: float
    longer_wins: float
    length_slope_per_doubling: float
    comparisons_per_s: float | None
    tokens_per_comparison: float | None
    partial_note: str | None


@dataclass(frozen=True)
class JudgesLeaderboard:
    """Every run and panel on a dataset and aspect, best first (``compassess judges``).

    ``basis`` says what they are ranked by: ``kappa`` (Cohen's kappa of the debiased pair verdicts
    with the humans' decisive majority, ties left out, with ``level`` bootstrap intervals over
    labelled pairs) when the dataset's aspect has human labels, else ``spearman_x100`` against the
    ``reference`` column. ``frame`` has one row per judge (:data:`JUDGE_COLUMNS`): accuracy and
    kappa with intervals; log-loss (nats) and expected calibration error of the raw p and of p
    calibrated on held-out folds; Spearman x100 with the reference at the balanced tau*; P(A) and
    flip rate at tau = 0.5; the longer text's share of wins and the length slope (log-odds per
    doubling); comparisons per second as measured (a panel: all its members' comparisons over
    their seconds together); prompt tokens per comparison, counted with the judge's tokenizer
    when the run was planned (a panel: all its members' tokens over all their comparisons).
    ``held_out`` is True where a panel uses labels (learnt weights, calibrated members) and its
    agreement is that of held-out folds.
    """

    dataset: str
    aspect: str
    basis: str
    reference: str | None
    n_labels: int
    n_boot: int
    level: float
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    #: The paired test of each judge against the top one (``paired_with_best``), by name.
    paired: dict = field(default_factory=dict)

    @property
    def best(self) -> str | None:
        """The top judge's name (rank 1)."""
        return None if self.frame.empty else str(self.frame.iloc[0]["judge"])

    def to_dict(self) -> dict:
        """JSON-able (NaN as None): what ``compassess judges --json`` prints."""
        rows = json_records(self.frame)
        return dict(dataset=self.dataset, aspect=self.aspect, basis=self.basis,
                    reference=self.reference, n_labels=self.n_labels, n_boot=self.n_boot,
                    level=self.level, judges=rows, notes=list(self.notes), best=self.best,
                    paired_with_best={k: v.to_dict() for k, v in self.paired.items()})


def judge_row(judge: JudgeEntry, human: pd.DataFrame, *, n_boot: int, level: float,
              seed: int) -> dict:
    """One judge's row of :class:`JudgesLeaderboard`: its agreement with ``human`` (the stored
    human judgements; empty: none) at its balanced tau* with intervals, its calibration, and
    what ``judge`` carries."""
    nan = float("nan")
    row = dict(judge=judge.name, kind=judge.kind, model=judge.model, template=judge.template,
               members=judge.members, n_comparisons=judge.n_comparisons,
               n_labelled_pairs=0, accuracy=nan, accuracy_low=nan, accuracy_high=nan, kappa=nan,
               kappa_low=nan, kappa_high=nan, log_loss_raw=nan, log_loss_calibrated=nan,
               ece_raw=nan, ece_calibrated=nan, spearman_x100=nan, held_out=False, note="")
    notes = []
    if len(human):
        table = judge.table
        if judge.held_out is not None:
            try:
                table = judge.held_out()
                row["held_out"] = True
            except InputError as e:
                notes.append(str(e))
        try:
            tau = resolve_tau("balanced", table.p)
            a = human_agreement_interval(human, table, tau, n_boot=n_boot, level=level, seed=seed)
            row.update(n_labelled_pairs=a.n_pairs, accuracy=a.accuracy,
                       accuracy_low=a.accuracy_low, accuracy_high=a.accuracy_high,
                       kappa=a.kappa, kappa_low=a.kappa_low, kappa_high=a.kappa_high)
            # The board shows the point values only: no bootstrap intervals to compute (they
            # were 3 x CALIBRATION_BOOT replicates per judge, nine tenths of a row's time).
            cal = calibrate(table, human, n_boot=0)
            row.update(log_loss_raw=cal.raw.log_loss, log_loss_calibrated=cal.calibrated.log_loss,
                       ece_raw=cal.raw.ece, ece_calibrated=cal.calibrated.ece)
        except InputError as e:
            notes.append(str(e))
    if judge.spearman_x100 is not None:
        row["spearman_x100"] = float(judge.spearman_x100)
    row.update(p_a_raw=judge.p_a_raw, flip_rate_raw=judge.flip_rate_raw,
               longer_wins=judge.longer_wins,
               length_slope_per_doubling=judge.length_slope_per_doubling,
               comparisons_per_s=judge.comparisons_per_s or nan,
               tokens_per_comparison=judge.tokens_per_comparison or nan)
    if judge.partial_note:
        notes.append(judge.partial_note)
    row["note"] = "; ".join(notes)
    return row


def _labelled_view(judge: JudgeEntry) -> tuple[ComparisonTable, float] | None:
    """The comparisons a judge's agreement with people is measured on (a panel that uses labels:
    its held-out p) and their balanced tau*; None when they cannot be had."""
    table = judge.table
    if judge.held_out is not None:
        try:
            table = judge.held_out()
        except InputError:
            return None
    try:
        return table, resolve_tau("balanced", table.p)
    except InputError:
        return None


def paired_with_best(judges: list[JudgeEntry], frame: pd.DataFrame, human: pd.DataFrame, *,
                     n_boot: int, level: float, seed: int) -> tuple[pd.DataFrame, dict]:
    """Each judge against the top judge of ``frame`` (rank 1) on the labelled pairs both judged:
    accuracy with the people's decisive majority, this judge minus the top one, in percentage
    points with its paired cluster-bootstrap interval and McNemar's exact p
    (``paired.paired_accuracy``); ``indistinguishable_from_best`` when the interval holds 0.
    Returns ``frame`` with the ``vs_best_*`` columns filled and the tests by judge name (empty
    without labels: the paired test needs them)."""
    out = frame.copy()
    tests: dict = {}
    if len(human) == 0 or len(frame) < 2:
        return out, tests
    out["indistinguishable_from_best"] = out["indistinguishable_from_best"].astype(object)
    by_name = {j.name: j for j in judges}
    top = by_name.get(frame.iloc[0]["judge"])
    best = None if top is None else _labelled_view(top)
    if best is None:
        return out, tests
    for k, row in out.iterrows():
        judge = by_name.get(row["judge"])
        if judge is None or judge is top:
            continue
        view = _labelled_view(judge)
        if view is None:
            continue
        try:
            test = paired.paired_accuracy(human, view[0], view[1], best[0], best[1],
                                          name_a=judge.name, name_b=top.name, n_boot=n_boot,
                                          level=level, seed=seed)
        except InputError:
            continue
        tests[judge.name] = test
        out.loc[k, ["vs_best_pp", "vs_best_low_pp", "vs_best_high_pp", "vs_best_mcnemar_p",
                    "vs_best_n_pairs", "vs_best_n_contexts"]] = [
            100 * test.difference, 100 * test.low, 100 * test.high, test.mcnemar.p_value,
            test.n_pairs, test.n_contexts]
        out.loc[k, "indistinguishable_from_best"] = test.indistinguishable
    return out, tests


def rank_judges(judges: list[JudgeEntry], human: pd.DataFrame, *, dataset: str, aspect: str,
                reference: str | None, n_boot: int, level: float, seed: int,
                notes: list[str]) -> JudgesLeaderboard:
    """Every judge's :func:`judge_row`, best first by kappa with ``human`` when there are
    labels, else by Spearman x100 with ``reference`` (ties keep the given order)."""
    rows = [judge_row(j, human, n_boot=n_boot, level=level, seed=seed) for j in judges]
    basis = "kappa" if len(human) else "spearman_x100"
    frame = pd.DataFrame(rows)
    frame = frame.sort_values(basis, ascending=False, na_position="last", kind="stable")
    # equal scores share the smallest rank; a judge without a score ranks last
    frame.insert(0, "rank", rank_scores(frame[basis].to_numpy(dtype=np.float64)))
    frame = frame.reindex(columns=list(JUDGE_COLUMNS)).reset_index(drop=True)
    frame, tests = paired_with_best(judges, frame, human, n_boot=n_boot, level=level, seed=seed)
    return JudgesLeaderboard(dataset=dataset, aspect=aspect, basis=basis, reference=reference,
                             n_labels=int(len(human)), n_boot=n_boot, level=level, frame=frame,
                             notes=notes, paired=tests)
