"""What a run and a panel of judges read back as (:class:`Verdicts`): rankings, evaluation,
positional and length bias, the leaderboard of systems, agreement with people, calibration,
exports and the audit report, every number computed by the engine (``analysis``, ``leaderboard``,
``agreement``, ``calibration``, ``report``...) on the stored p."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .. import __version__
from ..stats import analysis
from ..data import export
from ..runs import prompts
from ..runs.absolute import AbsoluteEvaluation
from ..stats.agreement import (AGREEMENT_BOOT, AgreementReport, HumanAgreement, agreement_summary,
                         disagreements, human_human_agreement, human_rankings,
                         human_table_from_labels, llm_vs_human, positional_bias_side_by_side)
from ..stats.analysis import Evaluation, EvaluationReport
from ..stats.calibration import DEFAULT_FOLDS, Calibration, CalibrationReport, calibrate
from ..stats.compare import RunComparison, compare_runs
from ..data.candidates import Source
from ..stats.diagnosis import PositionDiagnosis, partial_run_note
from ..limits import MAX_ID_CHARS
from ..errors import InputError
from ..data.export import FORMATS
from ..stats.fusion import FusedRanking, fused_rankings, fused_system_ranking
from ..data.labels import load_human_labels
from ..stats.leaderboard import DEFAULT_METHOD, Leaderboard, NoSystemsError, leaderboard
from ..stats.length_bias import (LengthBias, comparison_lengths, fitted_curve, length_bias,
                           log2_length_ratio, longer_wins_share)
from ..report.audit import EXAMPLES, RunAudit, ShownComparison
from ..runs.run_kinds import ReadOptions, RunKind, kind_of
from ..runs.run_loop import worker_state
from ..runs.scoring import ScoringEvaluation
from ..runs.settings import RunSettings
from ..types import Dataset
from .records import info_field
from .handle import StoreHandle
from ..report_text import counted


#: Label-file columns that tell a label table (validated like a file) from the store's table.
_LABEL_FILE_COLUMNS = {"candidate_a", "candidate_b"}

@dataclass(frozen=True)
class ExportFile:
    """One export of a run (:meth:`Run.export_bytes`): the file's bytes, its ``.settings.json``
    sidecar for CSV and Parquet (None for JSON, which holds the settings), the table it was
    written from, and the settings recorded with it."""

    data: bytes
    sidecar: bytes | None
    frame: pd.DataFrame
    metadata: dict


@dataclass(frozen=True)
class PositionalBias:
    """A pairwise run's positional bias at one threshold (the Bias page's gauges): P(A) and P(B)
    (eq. 8) raw (tau = 0.5) and at ``tau``, the flip rate at ``tau`` over the pairs judged in
    both orders, tau* and the counts they rest on."""

    tau: float
    tau_star: float
    p_a_raw: float
    p_b_raw: float
    p_a: float
    p_b: float
    flip_rate: float
    n_pairs_both_orders: int
    n_comparisons: int
    #: The threshold in words (``tau = 0.4123``; ``tau`` is NaN under per-context balancing,
    #: whose label gives the range of the contexts' tau*).
    threshold: str = ""
    #: The lowest and highest P(A) of a single context at ``tau`` (:meth:`Run.bias`): how far
    #: the global tau* leaves contexts from 0.5.
    p_a_context_min: float = float("nan")
    p_a_context_max: float = float("nan")


# ---------------------------------------------------------------------------------- a run

@dataclass(frozen=True)
class Agreement:
    """A run's comparisons against human A/B labels (``compassess agreement``, the Agreement
    page), raw (tau = 0.5) and at ``tau``.

    ``summary`` is what ``compassess agreement --json`` prints (accuracy and Cohen's kappa with
    and without ties, human-human agreement, positional bias of both, the correlation of the
    LLM's Bradley-Terry ranking with the human-only one); ``report`` the same LLM-vs-human
    numbers typed, per annotator too, with confusion matrices; ``positional_bias``,
    ``human_rankings`` and ``disagreements`` the tables behind them.
    """

    labels: str
    tau: float
    summary: dict
    report: AgreementReport
    human_human: HumanAgreement
    positional_bias: pd.DataFrame
    human_rankings: pd.DataFrame
    disagreements: pd.DataFrame
    #: The threshold in words (``tau`` is NaN under per-context balancing).
    threshold: str = ""

    def to_dict(self) -> dict:
        """The summary as JSON-able values, with where the labels came from."""
        return {"labels": self.labels, **self.summary}


def _pairwise_only(what: str):
    """A :class:`Run` method that needs pairwise comparisons: on a run of another kind it raises
    ``InputError`` saying that ``what`` needs them (one guard, declared where the method is)."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            self._pairwise(what)
            return method(self, *args, **kwargs)
        return guarded
    return wrap


class Verdicts:
    """What a run and a panel of judges share: p per ordered pair over a dataset, read back as
    DataFrames and typed reports (the numbers ``compassess rank|evaluate|leaderboard|compare|
    agreement|export|report`` print). :class:`Run` adds what one judge's stored run has (its
    prompts, stored comparisons, execution, renaming); :class:`Panel` what a panel has (its
    members). The dataset and the results are read once and kept.

    ``debias`` options take ``"none"`` (tau = 0.5, eq. 3), ``"balanced"`` (tau*, the threshold
    that makes P(A) = P(B) = 0.5, eq. 10), ``"balanced-per-context"`` or a number in (0, 1).
    """

    #: The threshold a ranking or export reads at when none is named: the balanced tau*, the
    #: default of the app and of every command, so a notebook reads the same ranking.
    default_debias: str = "balanced"

    def _debias(self, debias: str | float | None) -> str | float:
        """``debias`` as given, else :attr:`default_debias` (scoring and absolute runs have no
        threshold: ``"none"``)."""
        if debias is not None:
            return debias
        return self.default_debias if self._kind.is_pairwise else "none"

    def __init__(self, store: StoreHandle, info, *, dataset: Dataset | None = None,
                 results: Any = None, parts: tuple | None = None) -> None:
        """``info`` is the store's record of the run. A caller that already holds them (the
        app's caches) may give the ``dataset``, the ``results`` as the run's kind reads them, and
        a pairwise run's ``parts``: ``analysis.split_by_context`` of its comparisons with their
        concatenated p."""
        self.store = store
        self.info = info
        self._dataset = dataset
        self._results = results
        self._parts = parts
        self._length_cache = None
        self._views: dict[str, tuple] = {}
        #: How this view's p were calibrated (what :meth:`calibrated` fitted), else None.
        self.calibration: dict | None = None

    def __repr__(self) -> str:
        return (f"<Run {self.name!r}: {self.kind}, {self.status}, {self.info.done}/"
                f"{self.info.total if self.info.total is not None else '?'} {self._kind.unit}>")

    # ------------------------------------------------------------------------ what it is

    name = info_field("name", "The run's name (unique in its store).")
    id = info_field("id", "The run's id in its store.")
    status = info_field("status", "``pending``, ``running``, ``completed``, ``cancelled`` or "
                                  "``failed`` (as last read).")

    @property
    def state(self) -> str:
        """Whether a worker is alive for the run (as last read; ``run_loop.worker_state``):
        ``working``, ``cancelling``, ``stale`` (marked running, but its worker stopped sending
        heartbeats: it died; :meth:`execute` or ``compassess worker`` resumes), else the status."""
        return worker_state(self.info)

    @property
    def settings(self) -> RunSettings:
        """Everything the run was asked to do (stored with it, in every export)."""
        return RunSettings.from_dict(self.info.settings)

    @property
    def _kind(self) -> RunKind:
        return kind_of(self.info.settings)

    @property
    def kind(self) -> str:
        """``comparative``, ``scoring`` or ``absolute``."""
        return self._kind.name

    @property
    def run_kind(self) -> RunKind:
        """The run's kind (``run_kinds.RUN_KINDS``): its ``label``, the ``unit`` its progress
        counts and the ``rate_unit`` of its speed, ``is_pairwise``, its ``results_page``."""
        return self._kind

    @property
    def dataset(self) -> Dataset:
        """The dataset the run judged (read once)."""
        if self._dataset is None:
            self._dataset = self.store.backend.load_dataset(self.info.dataset_id)
        return self._dataset

    @property
    def results(self) -> Any:
        """The stored results as the run's kind ranks them: a ``ComparisonTable`` (comparative),
        a ``ScoreTable`` (scoring), or ``(comparisons, scores)`` DataFrames (absolute)."""
        if self._results is None:
            self._results = self._kind.read(self.store.backend, self.id, self.dataset,
                                             self.settings)
        return self._results

    def _pairwise(self, what: str) -> None:
        """Refuse ``what`` for a run whose kind does not judge pairs (``_pairwise_only``)."""
        if not self._kind.is_pairwise:
            raise InputError(f"run '{self.name}' is a {self._kind.label} run: {what} needs "
                             "pairwise comparisons")

    def _split(self) -> tuple[list, np.ndarray]:
        """The comparisons split by context, with their p concatenated (read once)."""
        if self._parts is None:
            self._parts = analysis.split_with_p(self.dataset, self.results)
        return self._parts

    def _at(self, debias: str | float) -> tuple[analysis.ThresholdView, list, np.ndarray]:
        """The comparisons as ``debias`` reads them (``analysis.threshold_view``: the run's own
        table at one tau, or eq. 9's reweighted p at 0.5 for ``balanced-per-context``), split by
        context with their p concatenated (read once per mode)."""
        key = str(debias)
        if key not in self._views:
            view = analysis.threshold_view(self.results, debias)
            split = (analysis.split_with_p(self.dataset, view.table) if view.per_context
                     else self._split())
            self._views[key] = (view, *split)
        return self._views[key]

    @property
    def default_reference(self) -> str | None:
        """The reference-score column a run is checked against by default: the one named like
        its aspect or a synonym of it (``prompts.reference_column``: ``engagement`` for
        ``engagingness``); None when the dataset has none."""
        return prompts.reference_column(self.settings.aspect, self.dataset.score_columns)

    def _options(self, *, method: str = "win-ratio", debias: str | float = "none",
                 ci: bool = False, which: str = "expected", score: str = "level",
                 threshold: float | None = None, reference: str | None = None) -> ReadOptions:
        if reference is None:  # the aspect's column, or its synonym's (engagement)
            reference = self.default_reference
        return ReadOptions(method=method, debias=str(debias), ci=ci, which=which, score=score,
                           threshold=threshold, reference=reference)

    # ----------------------------------------------------------------------- reading back

    def comparisons(self) -> pd.DataFrame:
        """Every result as a table (the 'comparisons' export)."""
        raise NotImplementedError

    @_pairwise_only("a decision threshold")
    def tau(self, debias: str | float = "balanced") -> float:
        """The decision threshold ``debias`` names on this run's comparisons (``balanced``:
        tau*, the median of p; eq. 10). NaN for ``balanced-per-context``, which has one tau*
        per context: :meth:`thresholds`."""
        if analysis.is_per_context(debias):
            return float("nan")
        return self._at(debias)[0].tau

    @_pairwise_only("a decision threshold")
    def thresholds(self, debias: str | float = "balanced") -> dict[str, float]:
        """Context id -> the threshold its comparisons are decided at under ``debias``: one
        tau* per context (eq. 10 applied context by context) for ``balanced-per-context``, the
        same tau everywhere otherwise."""
        return dict(self._at(debias)[0].context_taus)

    @_pairwise_only("a decision threshold")
    def threshold_label(self, debias: str | float = "balanced", digits: int = 4) -> str:
        """The threshold ``debias`` uses, in words: ``tau = 0.4123``, or ``tau* per context
        (0.3100 to 0.6200)``."""
        return self._at(debias)[0].label(digits)

    @_pairwise_only("what the threshold moves")
    def tau_effect(self, method: str = "win-ratio", debias: str | float = "balanced"
                   ) -> analysis.TauEffect:
        """Which numbers moving the threshold changes for ``method`` on this run's design, and
        how many contexts ``debias`` ranks differently than tau = 0.5 (``analysis.tau_effect``):
        the win ratio counts eq. 10 verdicts; soft methods on the full design (every pair judged
        once in each order) barely move."""
        view, parts_at, _ = self._at(debias)
        return analysis.tau_effect(self._split()[0], view, parts_at, method)

    def rankings(self, method: str = DEFAULT_METHOD, debias: str | float | None = None, *,
                 ci: bool = False, context: str | None = None, which: str = "expected",
                 score: str = "level", threshold: float | None = None) -> pd.DataFrame:
        """One row per candidate, ranked within its context (rank 1 = best): ``compassess rank``.

        Comparative runs: ``method`` (:data:`RANKING_METHODS`: win ratio, eq. 6; average
        probability; Bradley-Terry; product of experts) at the threshold ``debias``, with
        bootstrap 95% intervals when ``ci``; by default Bradley-Terry at :attr:`default_debias`
        (a run's balanced tau*), as ``compassess rank`` and the app. Scoring runs: ranked by ``which`` (``expected``
        = G-Eval, ``argmax``). Absolute runs: by ``score`` (``level``, calibrated 1..N, or the
        paper's ``score``), with ``pass`` at ``score >= threshold`` when given. ``context``:
        one context only. Every reference-score column of the dataset is alongside.

        Raises
        ------
        InputError
            An unknown method, threshold, score or context.
        """
        debias = self._debias(debias)
        frame = self._kind.rank(self.dataset, self.results,
                                self._options(method=method, debias=debias, ci=ci, which=which,
                                              score=score, threshold=threshold))
        if context is not None:
            if context not in {c.context_id for c in self.dataset.contexts}:
                # an id is at most MAX_ID_CHARS long: a longer value is named by its start only
                shown = (context if len(context) <= MAX_ID_CHARS
                         else f"{context[:40]}... ({len(context):,} characters)")
                raise InputError(f"context '{shown}' is not in dataset '{self.dataset.name}'")
            frame = frame[frame["context_id"] == context].reset_index(drop=True)
        return frame

    def ranking_metadata(self, method: str = DEFAULT_METHOD, debias: str | float | None = None, *,
                         which: str = "expected", score: str = "level",
                         threshold: float | None = None) -> dict:
        """How :meth:`rankings` with these options ranks (what a rankings export records):
        method and tau (and the calibration of a :meth:`calibrated` view), the scoring run's
        score, or the absolute run's score and threshold."""
        if self.kind == "scoring":
            return {"method": "g-eval expected score" if which == "expected" else "argmax score"}
        if self.kind == "absolute":
            return {"score": score, "threshold": threshold}
        view = self._at(self._debias(debias))[0]
        fields = {"method": method, "debias": view.debias,
                  "tau": None if view.per_context else view.tau}
        if view.per_context:
            fields["threshold"] = view.label(4)
            fields["tau_per_context"] = dict(view.context_taus)
        if self.calibration is not None:
            fields["calibration"] = self.calibration
        return fields

    def evaluation(self, method: str = DEFAULT_METHOD, debias: str | float = "balanced", *,
                   reference: str | None = None, score: str = "level",
                   threshold: float | None = None
                   ) -> EvaluationReport | ScoringEvaluation | AbsoluteEvaluation:
        """Agreement with a reference-score column and positional bias: ``compassess evaluate``.

        ``reference`` defaults to the column named like the run's aspect or a synonym of it
        (``prompts.reference_column``: ``engagement`` for ``engagingness``), when the dataset
        has one. A comparative run gives an :class:`EvaluationReport`: Spearman and Kendall x100
        per context (mean), system level and pooled, pairwise accuracy, P(A)/P(B), raw (tau =
        0.5) and at ``debias``, with tau* and the flip rate. A scoring run gives a
        :class:`ScoringEvaluation` (prompt scoring and G-Eval), an absolute run an
        :class:`AbsoluteEvaluation` (``score``, pass rate at ``threshold``). ``to_dict()``
        gives what ``compassess evaluate --json`` prints.

        Raises
        ------
        InputError
            A reference column the dataset lacks, an unknown method or threshold.
        """
        options = self._options(method=method, debias=debias, score=score, threshold=threshold,
                                reference=reference)
        return self._kind.evaluate(self.dataset, self.results, options, run=self.name)

    @_pairwise_only("an evaluation at one threshold")
    def evaluation_at(self, debias: str | float = "none", *, method: str = "win-ratio",
                      reference: str | None = None) -> Evaluation:
        """The numbers of :meth:`evaluation` at one threshold only (``report.raw`` is
        ``evaluation_at("none")``): cheaper when only one is needed, as for a live tau control.

        Raises
        ------
        InputError
            Not a pairwise run, a reference column the dataset lacks, an unknown method or
            threshold.
        """
        options = self._options(method=method, debias=debias, reference=reference)
        analysis.check_reference(self.dataset, options.reference)
        view, parts, all_p = self._at(options.debias)
        return analysis.evaluate_at(self.dataset, parts, method=method,
                                    reference=options.reference, tau=view.tau, all_p=all_p,
                                    balanced=view.debias == "balanced")

    @_pairwise_only("positional bias")
    def bias(self, debias: str | float = "none") -> pd.DataFrame:
        """Positional bias per context at the threshold ``debias``: P(A) (share won by the
        first position, eq. 8), P(B), the flip rate (share of pairs judged in both orders whose
        verdict changes with the order) and the counts they were computed on, with the threshold
        ``tau`` each context was decided at (its own tau* under ``balanced-per-context``)."""
        return analysis.bias_by_context(self.dataset, self.results, str(debias))

    @_pairwise_only("order dependence")
    def order_dependence(self, debias: str | float = "none") -> pd.DataFrame:
        """Pairs judged in both orders, most order-dependent first: p both ways,
        ``inconsistency`` = |p_ij - (1 - p_ji)| and whether the verdict flips at ``debias``."""
        view = self._at(debias)[0]
        return analysis.order_dependence(self.dataset, self.results,
                                         view.context_taus if view.per_context else view.tau)

    @_pairwise_only("a comparison matrix")
    def matrix(self, context_id: str) -> pd.DataFrame:
        """The p_ij of one context: rows the first position, columns the second (NaN: not
        compared)."""
        ids, m = analysis.context_matrix(self.dataset, self.results, context_id)
        return pd.DataFrame(m, index=pd.Index(ids, name="first"),
                            columns=pd.Index(ids, name="second"))

    def decision_matrix(self, context_id: str, debias: str | float = "none") -> pd.DataFrame:
        """The eq. 10 verdicts of one context at the threshold ``debias``: 1 where the first
        position (row) wins, 0 where the second (column) wins, NaN where not compared."""
        m = self.matrix(context_id)
        view = self._at(debias)[0]
        tau = view.context_taus.get(context_id, 0.5) if view.per_context else view.tau
        return pd.DataFrame(analysis.decision_matrix(m.to_numpy(), tau),
                            index=m.index, columns=m.columns)

    def consistency_matrix(self, context_id: str) -> pd.DataFrame:
        """``p_ij - (1 - p_ji)`` of one context: 0 where the two orders agree, NaN where either
        order was not compared."""
        m = self.matrix(context_id)
        return pd.DataFrame(analysis.consistency_matrix(m.to_numpy()), index=m.index,
                            columns=m.columns)

    @property
    def prompt_tokens_per_comparison(self) -> float | None:
        """Mean prompt tokens the judge reads per unit of the plan (a comparison, or a candidate
        for prompt scoring), counted with the judge's own tokenizer when the worker planned the
        run (``plan['work_tokens']`` over the plan's units); None when not counted (a served
        judge without a tokenizer, a run made before this was recorded)."""
        tokens = (self.info.plan or {}).get("work_tokens")
        return float(tokens) / self.info.total if tokens and self.info.total else None

    @property
    def n_comparisons(self) -> int:
        """Stored comparisons that match the run's dataset (0 for other kinds)."""
        if not self._kind.is_pairwise:
            return 0
        return int(len(self._split()[1]))

    @property
    def context_ids(self) -> list[str]:
        """The contexts with stored results, in the dataset's order."""
        if self._kind.is_pairwise:
            return [cc.context.context_id for cc in self._split()[0]]
        return [c.context_id for c in self.dataset.contexts]

    @property
    def truncated_contexts(self) -> dict[str, int]:
        """Contexts the run cut to fit the model's context window: id -> characters kept."""
        return dict((self.info.plan or {}).get("truncated_contexts") or {})

    @_pairwise_only("probabilities")
    def probabilities(self) -> np.ndarray:
        """Every stored p_ij = P(first position wins) that matches the dataset (eq. 3), in the
        order of :meth:`context_ids`: the histogram of the Bias page."""
        return self._split()[1].copy()

    @_pairwise_only("positional bias")
    def positional_bias(self, debias: str | float = "balanced") -> PositionalBias:
        """P(A) and P(B) (eq. 8) raw and at ``debias``, the flip rate at ``debias`` and tau*:
        the Bias page's gauges."""
        diagnosis = self.position_diagnosis(debias)
        per_context = self.bias(debias)["p_a"].to_numpy(dtype=np.float64)
        per_context = per_context[np.isfinite(per_context)]
        return PositionalBias(
            tau=self.tau(debias), tau_star=self.tau("balanced"), p_a_raw=diagnosis.p_a_raw,
            p_b_raw=1.0 - diagnosis.p_a_raw, p_a=diagnosis.p_a_at_tau,
            p_b=1.0 - diagnosis.p_a_at_tau, flip_rate=diagnosis.flip_rate_at_tau,
            n_pairs_both_orders=diagnosis.n_pairs_both_orders,
            n_comparisons=diagnosis.n_comparisons, threshold=self.threshold_label(debias),
            p_a_context_min=float(per_context.min()) if len(per_context) else float("nan"),
            p_a_context_max=float(per_context.max()) if len(per_context) else float("nan"))

    @_pairwise_only("a positional-bias diagnosis")
    def position_diagnosis(self, debias: str | float = "balanced") -> PositionDiagnosis:
        """What a judge that answers by position looks like in numbers (P(A) and the flip rate,
        raw and at ``debias``), with the message and the remedy the result pages show."""
        return self._diagnosis(debias)

    def _diagnosis(self, debias: str | float) -> PositionDiagnosis:
        view, parts_at, _ = self._at(debias)
        if not view.per_context:
            return analysis.position_diagnosis(self._split()[0], view.tau)
        return analysis.position_diagnosis(self._split()[0], view.tau, parts_at, view.label(3))

    @_pairwise_only("length bias")
    def length_bias(self, debias: str | float = "none") -> LengthBias:
        """How much the judge prefers the longer text: the longer text's share of wins at
        ``debias``, the logistic slope of p on log2(len A / len B) and its intercept (position
        at equal length), on every comparison."""
        fit = length_bias(*self._lengths(), 0.5 if analysis.is_per_context(debias)
                          else self._at(debias)[0].tau)
        if not analysis.is_per_context(debias):
            return fit
        # the slope and intercept are the judge's own (no threshold); the share of wins by the
        # longer text follows each context's tau*, i.e. eq. 9's reweighted p read at 0.5
        len_a, len_b, _ = self._lengths()
        share, n_used = longer_wins_share(len_a, len_b, self._at(debias)[2], 0.5)
        return dataclasses.replace(fit, longer_wins=share, n_length_differs=n_used,
                                   tau=float("nan"))

    def length_points(self, debias: str | float = "none") -> tuple[pd.DataFrame, pd.DataFrame]:
        """The length scatter of the Bias page: every comparison's ``log2_ratio`` (> 0 when the
        first text is longer) and ``p``, and the fitted logistic ``curve`` (``log2_ratio``,
        ``p``) of :meth:`length_bias`."""
        len_a, len_b, p = self._lengths()
        ratio = log2_length_ratio(len_a, len_b)
        fit = self.length_bias(debias)
        grid, curve = fitted_curve(ratio, fit.slope_per_doubling, fit.position_log_odds)
        return (pd.DataFrame({"log2_ratio": ratio, "p": p}),
                pd.DataFrame({"log2_ratio": grid, "p": curve}))

    def _lengths(self):
        if self._length_cache is None:
            self._length_cache = comparison_lengths(self.dataset, self.results)
        return self._length_cache

    def _stored_labels(self, aspect: str | None) -> pd.DataFrame:
        aspect = aspect or self.settings.aspect
        human = self.human_labels(aspect)
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{aspect}'; import some or annotate "
                             "pairs first")
        return human

    @_pairwise_only("calibration on human A/B labels")
    def calibrate(self, aspect: str | None = None, *, labels: pd.DataFrame | None = None,
                  folds: int = DEFAULT_FOLDS, seed: int = 0) -> CalibrationReport:
        """How well a bias and a temperature fitted on the stored human labels calibrate the
        judge: ``compassess calibrate``. Accuracy, log-loss and expected calibration error of
        the raw p, of the balanced threshold (no labels) and of the calibrated p on held-out
        folds of pairs, with the reliability diagrams and the fit on all labels. ``labels``: a
        table of human judgements as :meth:`human_labels` gives (default: the stored ones).

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, too few labelled pairs for ``folds``.
        """
        human = self._stored_labels(aspect) if labels is None else labels
        return calibrate(self.results, human, folds=folds, seed=seed)

    @_pairwise_only("a ranking with human labels")
    def fused_rankings(self, level: str = "context", debias: str | float = "none", *,
                       weight: float | None = None, aspect: str | None = None) -> FusedRanking:
        """Rankings from the judge's comparisons and the stored human labels together
        (``compassess rank --with-humans``): a Gaussian product-of-experts fit in which a
        human vote counts as ``weight`` judge comparisons (None: chosen by leave-one-out
        cross-validation over the votes; ``inf``: the humans alone), per context or at
        ``level="system"``.

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, an unknown level or a negative weight.
        """
        if level not in ("context", "system"):
            raise InputError(f"level must be 'context' or 'system', not '{level}'")
        rank = fused_system_ranking if level == "system" else fused_rankings
        view = self._at(debias)[0]
        return rank(self.dataset, view.table, self._stored_labels(aspect), tau=view.tau,
                    weight=weight)

    @property
    def partial_note(self) -> str | None:
        """A warning when the run stopped before its plan was complete ("Partial run
        (cancelled): 40 of 60 planned comparisons ..."); None for a complete or live run."""
        return partial_run_note(self.status, self.info.done, self.info.total, self._kind.unit)

    @_pairwise_only("a positional-bias diagnosis")
    def position_warning(self, debias: str | float = "balanced") -> str | None:
        """What the result pages warn about a judge that answers by position (P(A) far from 0.5
        or a high flip rate), raw and at ``debias``; None when the judge looks at content."""
        return self._diagnosis(debias).warning()

    @_pairwise_only("a leaderboard")
    def leaderboard(self, method: str = DEFAULT_METHOD, debias: str | float = "balanced", *,
                    reference: str | None = None, baseline: str | None = None, n_boot: int = 200,
                    level: float = 0.95, seed: int = 0) -> Leaderboard:
        """One row per system across every context: ``compassess leaderboard``.

        Strength by ``method`` (default Bradley-Terry through evalica) and win rate against the
        field at the threshold ``debias``, with ``level`` bootstrap intervals that resample
        contexts, then comparisons within each; mean text length, a length-adjusted strength
        (CompAssess's joint GLM) and, with a reference column (default: the one named like the run's aspect), each
        system's mean reference score and the system-level correlation. Always the comparisons
        and wins of every pair of systems (``pair_counts``).

        With a ``baseline`` system (AlpacaEval's reference model), each other system's win rate
        against it (``win_rate_vs_baseline`` with ``_low``/``_high``, the same context bootstrap),
        the number of those comparisons (``n_vs_baseline``) and AlpacaEval 2.0's
        length-controlled win rate against it (``lc_win_rate_vs_baseline`` with its standard
        error ``lc_win_rate_vs_baseline_se``; ``board.alpaca_lc`` holds the fit and names the
        estimator); the baseline's own row is NaN, not 0.5.

        Raises
        ------
        NoSystemsError
            The candidates have no ``system`` (an :class:`InputError`; rank per context).
        InputError
            Not a pairwise run, an unknown method, reference column or baseline system (the
            message names the run's systems), ``n_boot < 1``.
        """
        options = self._options(method=method, debias=debias, reference=reference)
        view = self._at(debias)[0]
        board = leaderboard(self.dataset, view.table, method=method, tau=view.tau,
                            reference=options.reference, baseline=baseline, n_boot=n_boot,
                            level=level, seed=seed, tau_star=view.debias == "balanced")
        # one tau* per context is no single tau (the export says which: debias, threshold)
        return dataclasses.replace(board, tau=float("nan")) if view.per_context else board

    def leaderboard_bytes(self, fmt: str = "csv", method: str = DEFAULT_METHOD,
                          debias: str | float = "balanced", *, reference: str | None = None,
                          baseline: str | None = None, n_boot: int = 200, level: float = 0.95,
                          seed: int = 0) -> ExportFile:
        """:meth:`leaderboard` as a ``fmt`` file (``csv``, ``json``, ``parquet``) with the run's
        settings and the leaderboard's method, tau, baseline, pair counts and interval settings
        (inside JSON, in the ``.settings.json`` sidecar of CSV and Parquet): the Leaderboard
        page's download."""
        if fmt not in FORMATS:
            raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
        board = self.leaderboard(method, debias, reference=reference, baseline=baseline,
                                 n_boot=n_boot, level=level, seed=seed)
        meta = {"run": self.name, "dataset": self.dataset.name,
                **{k: v for k, v in board.to_dict().items() if k != "systems"},
                "debias": str(debias), "threshold": self.threshold_label(debias),
                "settings": self.info.settings}
        data, sidecar = export.table_bytes(board.frame, fmt, what="leaderboard", metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=board.frame, metadata=meta)

    @_pairwise_only("compare")
    def compare(self, other: "Verdicts", method: str = DEFAULT_METHOD,
                debias: str | float = "balanced") -> RunComparison:
        """This run (A) against ``other`` (B) on the same dataset: ``compassess compare``.
        Verdict agreement and Cohen's kappa on the ordered pairs both judged (each at its own
        threshold ``debias``), rank correlation per context and at system level by ``method``,
        P(A) of each, the pairs they disagree on, and the paired tests (``paired``): P(A), and
        accuracy with the stored human labels of the aspect, A minus B on the same pairs.

        Raises
        ------
        InputError
            Either run is not pairwise, the datasets differ, or no pair was judged by both.
        """
        other._pairwise("compare")
        view_a, view_b = self._at(debias)[0], other._at(debias)[0]
        same_aspect = self.settings.aspect == other.settings.aspect
        result = compare_runs(self.dataset, view_a.table, other.dataset, view_b.table,
                              tau_a=view_a.tau, tau_b=view_b.tau, method=method,
                              human=self.human_labels() if same_aspect else None,
                              names=(self.name, other.name))
        if not same_aspect:
            result = dataclasses.replace(result, people_note=(
                f"the runs judge different aspects ('{self.settings.aspect}' and "
                f"'{other.settings.aspect}'): no paired comparison with people"))
        return result

    def human_labels(self, aspect: str | None = None) -> pd.DataFrame:
        """The human judgements stored for this run's dataset and aspect (``aspect`` to pick
        another), as :meth:`Store.human_labels`."""
        return self.store.backend.human_judgements_frame(
            self.info.dataset_id, aspect or self.settings.aspect)

    @_pairwise_only("agreement with human A/B labels")
    def agreement(self, labels: Source | None = None, debias: str | float = "balanced", *,
                  aspect: str | None = None, n_boot: int = AGREEMENT_BOOT,
                  seed: int = 0, ties: str = "none", tie_band: float = 0.0) -> Agreement:
        """The run against human A/B labels: ``compassess agreement``.

        ``ties``: the LLM's tie verdict (``agreement.TIE_MODES``): ``none``, or ``flip`` (a
        pair whose verdict flips with the order is a tie, FastChat's rule); ``tie_band`` delta
        also makes a tie of every pair with ``|p_avg - 0.5| < delta``.

        ``labels``: None for the labels stored for this dataset and the run's aspect (or
        ``aspect``); a label file, its bytes or a DataFrame with its columns (validated, not
        stored); or a table of human judgements as :meth:`human_labels` gives.

        Raises
        ------
        ValidationError
            A label file with problems (every one, with its row and column).
        InputError
            Not a pairwise run, or no labels.
        """
        aspect = aspect or self.settings.aspect
        if labels is None:
            human = self.human_labels(aspect)
            source = f"stored labels for aspect '{aspect}'"
        elif isinstance(labels, pd.DataFrame) and not _LABEL_FILE_COLUMNS <= set(labels.columns):
            human, source = labels, f"{len(labels)} human judgements"
        else:
            human = human_table_from_labels(load_human_labels(labels, self.dataset))
            source = (os.fspath(labels) if isinstance(labels, (str, os.PathLike))
                      else f"{counted(len(human), 'label')}")
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{aspect}'; import some or annotate "
                             "pairs first")
        table, dataset = self.results, self.dataset
        view = self._at(debias)[0]
        tau, at = view.tau, view.table
        label = view.label(4)
        report = llm_vs_human(human, table, tau, table_at=at, n_boot=n_boot, seed=seed,
                              ties=ties, tie_band=tie_band)
        summary = agreement_summary(human, table, dataset, tau, table_at=at, threshold=label,
                                    n_boot=n_boot, seed=seed, report=report)
        return Agreement(
            labels=source, tau=self.tau(debias), summary=summary, report=report,
            human_human=human_human_agreement(human),
            positional_bias=positional_bias_side_by_side(
                human, table, tau, table_at=at, threshold=label if view.per_context else ""),
            human_rankings=human_rankings(human, dataset),
            disagreements=disagreements(human, at, tau, ties=ties, tie_band=tie_band),
            threshold=label)

    def export_bytes(self, what: str = "rankings", fmt: str = "csv", *,
                     method: str = DEFAULT_METHOD, debias: str | float | None = None, ci: bool = True, which: str = "expected",
                     score: str = "level", threshold: float | None = None) -> ExportFile:
        """The export of the rankings (as :meth:`rankings` with these options, with 95%
        intervals when ``ci``) or of every stored result (``what="comparisons"``), as the bytes of
        a ``fmt`` file (``csv``, ``json`` or ``parquet``) with the run's settings: what
        ``compassess export`` writes and the app's Export page downloads, byte for byte. CSV and
        Parquet come with a ``.settings.json`` sidecar, JSON holds the settings. CSV cells a
        spreadsheet would execute are neutralised.

        Raises
        ------
        InputError
            An unknown format, ``what``, method or threshold.
        """
        if fmt not in FORMATS:
            raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)} "
                             "(or name the file with one of those suffixes)")
        meta = {"run": self.name, "dataset": self.dataset.name, "settings": self.info.settings,
                "judge": self.info.judge_key, "compassess_version": __version__}
        debias = self._debias(debias)
        if what == "rankings":
            frame = self.rankings(method, debias, ci=ci, which=which, score=score,
                                  threshold=threshold)
            meta.update(self.ranking_metadata(method, debias, which=which, score=score,
                                              threshold=threshold))
            if self._kind.is_pairwise:
                meta.update(debias=str(debias), tau_star=self.tau("balanced"),
                            n_comparisons=self.n_comparisons)
                # In the table too: a CSV read without its sidecar still says how it was ranked
                # (each row's own context's tau* under per-context balancing).
                taus = self.thresholds(debias)
                frame = frame.assign(method=meta["method"],
                                     tau=frame["context_id"].map(taus).astype(float))
                if ci:
                    meta["ci"] = ("ci_low/ci_high: 95% percentile bootstrap, 200 resamples of "
                                  "each context's comparisons")
        elif what == "comparisons":
            frame = self.comparisons()
            if self.calibration is not None:
                frame["p_calibrated"] = Calibration(self.calibration["bias"],
                                                    self.calibration["temperature"]).apply(frame["p"])
        else:
            raise InputError(f"unknown export '{what}'; choose rankings or comparisons")
        if self.calibration is not None:
            meta["calibration"] = self.calibration
        data, sidecar = export.table_bytes(frame, fmt, what=what, metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=frame, metadata=meta)

    def export(self, path: str | os.PathLike, what: str = "rankings", *,
               format: str | None = None, method: str = DEFAULT_METHOD,
               debias: str | float | None = None, ci: bool = True, which: str = "expected",
               score: str = "level", threshold: float | None = None) -> list[Path]:
        """Write :meth:`export_bytes` to ``path`` (``format``: ``csv``, ``json`` or ``parquet``,
        default from the file's suffix) and, for CSV and Parquet, its ``.settings.json`` sidecar
        beside it: ``compassess export``. Returns the paths written.

        Raises
        ------
        InputError
            An unknown format or ``what``, or a folder that does not exist.
        """
        path = Path(path)
        fmt = format or path.suffix.lstrip(".").lower()
        if path.parent and not path.parent.exists():
            raise InputError(f"output folder '{path.parent}' does not exist")
        exported = self.export_bytes(what, fmt, method=method, debias=debias, ci=ci, which=which,
                                     score=score, threshold=threshold)
        path.write_bytes(exported.data)
        if exported.sidecar is None:
            return [path]
        sidecar = path.with_name(export.sidecar_name(path.name))
        sidecar.write_bytes(exported.sidecar)
        return [path, sidecar]

    # ------------------------------------------------------------------- the audit report

    @_pairwise_only("an audit report")
    def audit(self, method: str = DEFAULT_METHOD, debias: str | float = "balanced", *,
              n_boot: int = 200, examples: int = EXAMPLES,
              baseline: str | None = None) -> RunAudit:
        """Everything the audit report shows of this run, computed by this class's methods with
        ``method`` and the threshold ``debias``: the setup, :meth:`leaderboard` (``n_boot``
        replicates, each system's win rate against ``baseline`` when one is named; without
        systems the per-context :meth:`rankings`),
        :meth:`positional_bias`, :meth:`position_diagnosis` and :meth:`bias` raw and at tau,
        :meth:`length_bias` and :meth:`length_points`, one :meth:`evaluation` per reference
        column (the aspect's first), :meth:`agreement` and :meth:`calibrate` on the stored human
        labels of the run's aspect (when there are any), and the ``examples`` most
        order-dependent (:meth:`order_dependence`) and most human-disputed comparisons with
        their exact :meth:`prompt`.

        Raises
        ------
        InputError
            Not a pairwise run, a calibrated view (:meth:`calibrated`), no comparison that
            matches the dataset, an unknown method or threshold.
        """
        if self.calibration is not None:
            raise InputError("the audit report reads the judge's own p (its calibration on the "
                             "human labels is a section of it): report the run, not its "
                             "calibrated view")
        if self.n_comparisons == 0:
            raise InputError(f"run '{self.name}' has no comparison that matches its dataset: "
                             "nothing to report")
        tau = self.tau(debias)
        board = rankings = no_systems = None
        try:
            board = self.leaderboard(method, debias, baseline=baseline, n_boot=n_boot)
        except NoSystemsError as e:
            no_systems = str(e)
            rankings = self.rankings(method, debias)
        columns = list(self.dataset.score_columns)
        asked = prompts.reference_column(self.settings.aspect, columns)
        if asked is not None:  # the column the run was asked about first
            columns.remove(asked)
            columns.insert(0, asked)
        evaluations = tuple(self.evaluation(method, debias, reference=c) for c in columns)
        agreement = calibration = no_labels = no_calibration = None
        aspect = self.settings.aspect
        if len(self.human_labels(aspect)) == 0:
            no_labels = (f"none are stored for dataset '{self.dataset.name}' and aspect "
                         f"'{aspect}' (import some or annotate pairs "
                         "first)")
        else:
            try:
                agreement = self.agreement(None, debias)
            except InputError as e:
                no_labels = str(e)
        if agreement is not None:
            try:
                calibration = self.calibrate(aspect)
            except InputError as e:  # too few labelled pairs for the folds
                no_calibration = str(e)
        dep = self.order_dependence(debias)
        order_dependent = tuple(self._shown(r, r["first"], r["second"])
                                for r in dep.head(examples).to_dict(orient="records"))
        dis = agreement.disagreements if agreement is not None else pd.DataFrame()
        # A disputed pair is shown in an order the run judged (x first unless only y-x was).
        disputed = tuple(self._shown(r, *((r["x"], r["y"]) if np.isfinite(r["p_xy"])
                                          else (r["y"], r["x"])))
                         for r in dis.head(examples).to_dict(orient="records"))
        points, curve = self.length_points(debias)
        return RunAudit(
            name=self.name, status=self.status, partial_note=self.partial_note,
            dataset=self.dataset, settings=dict(self.info.settings),
            judge_key=self.info.judge_key, done=int(self.info.done or 0), total=self.info.total,
            truncated_contexts=self.truncated_contexts, method=method, debias=str(debias),
            tau=tau, n_boot=n_boot, n_comparisons=self.n_comparisons,
            n_contexts=len(self.context_ids), position=self.positional_bias(debias),
            diagnosis=self.position_diagnosis(debias), bias_raw=self.bias("none"),
            bias_at_tau=self.bias(debias), probabilities=self.probabilities(),
            length=self.length_bias(debias), length_points=points, length_curve=curve,
            leaderboard=board, no_systems=no_systems, rankings=rankings,
            evaluations=evaluations, agreement=agreement, no_labels=no_labels,
            calibration=calibration, no_calibration=no_calibration,
            order_dependent=order_dependent, n_order_pairs=len(dep), disputed=disputed,
            n_disputed=len(dis),
            threshold=self.threshold_label(debias) if analysis.is_per_context(debias) else "")

    def _shown(self, row: Mapping, first: str, second: str) -> ShownComparison:
        """A comparison the audit report shows, ``first`` (A) against ``second``."""
        raise NotImplementedError

    def report_html(self, *others: "Verdicts | str | int", method: str = DEFAULT_METHOD,
                    debias: str | float = "balanced", n_boot: int = 200,
                    examples: int = EXAMPLES, baseline: str | None = None,
                    generated_at: datetime | None = None) -> bytes:
        """The audit report of this run (and of ``others``, runs of the same store, compared
        with it where they judged the same dataset) as the bytes of one self-contained HTML file:
        :meth:`Store.report` (``compassess report --run NAME -o report.html``, the Export page's
        download), byte for byte for the same options and ``generated_at``."""
        return self.store.report([self, *others], method=method, debias=debias, n_boot=n_boot,
                                 examples=examples, baseline=baseline, generated_at=generated_at)
