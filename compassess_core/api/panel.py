"""A panel of judges through the API (:class:`Panel`): its members' stored comparisons fitted
and combined by ``compassess_core.stats.panel`` (``fit_panel``), read back as a run's verdicts are
(:class:`Verdicts`), with what only a panel has (members, their agreement, held-out p)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit

from ..data import export
from ..stats import paired, panel  # noqa: F401 - paired: the type vs_best_member returns
from ..stats.analysis import resolve_tau
from ..stats.calibration import DEFAULT_FOLDS
from ..errors import InputError
from ..stats.leaderboard import DEFAULT_METHOD
from ..report.audit import EXAMPLES, RunAudit, ShownComparison
from ..types import ComparisonTable
from .records import Deleted, check_shown_name
from .run import Run
from .verdicts import ExportFile, Verdicts
from .handle import StoreHandle


# ------------------------------------------------------------------------- panels of judges

@dataclass(frozen=True)
class PanelMember:
    """A run on a panel: its ``name``, the ``weight`` it has in the panel (normalised to sum to
    one over the members), how its p was put on the common scale (``scaling``, in words) and
    its comparisons."""

    name: str
    run_id: int
    weight: float
    scaling: str
    n_comparisons: int


class Panel(Verdicts):
    """A panel of judges (``compassess panel``): two or more runs on the same dataset and aspect
    combined into one debiased verdict per pair (``compassess_core.stats.panel``). It reads back as a
    run does (:class:`Verdicts`) (``rankings``, ``evaluation``, ``leaderboard``, ``bias``,
    ``positional_bias``, ``agreement``, ``calibrate``, ``export_bytes``...), on the panel's
    combined p; and what only a panel has: :attr:`members`, :meth:`member_agreement`,
    :meth:`split_pairs`, :meth:`member_evaluations`, :meth:`held_out`.

    Its comparisons have no prompt, log-probabilities or label mass (they belong to one judge),
    and it executes nothing (its runs did): those are :class:`Run`'s. Get one from
    :meth:`Store.panel` or :meth:`Store.create_panel`.
    """

    #: A panel's p are its members' debiased verdicts combined: read at 0.5 unless told.
    default_debias = "none"

    def __init__(self, store: StoreHandle, info) -> None:
        self.panel_info = info
        self.member_runs = [Run(store, store.backend.get_run(r)) for r in info.run_ids]
        first = self.member_runs[0]
        for run in self.member_runs:
            run._pairwise("a panel")
        human = (store.backend.human_judgements_frame(info.dataset_id, info.aspect)
                 if info.scaling != "balanced" or info.weights == "learnt" else None)
        self._fit = panel.fit_panel([r.results for r in self.member_runs], scaling=info.scaling,
                                    weights=info.weights, combine_with=info.combine,
                                    human_df=human, who=f"panel '{info.name}'",
                                    labels_of=f"dataset '{info.dataset}' and aspect "
                                              f"'{info.aspect}'")
        table = self._fit.table
        n = len(table)
        rate = panel.pooled_rate([r.n_comparisons for r in self.member_runs],
                                 [r.info.rate for r in self.member_runs])
        run_info = replace(first.info, id=-int(info.id), name=info.name,
                           status=self._status(), done=n, total=n, message=None,
                           judge_key=f"panel of {', '.join(info.run_names)}", rate=rate,
                           plan=None, n_comparisons=n, settings=dict(first.info.settings))
        super().__init__(store, run_info, dataset=first.dataset, results=table)

    # --------------------------------------------------------------------- its definition

    def __repr__(self) -> str:
        return (f"<Panel {self.name!r}: {', '.join(self.panel_info.run_names)}; "
                f"{self.panel_info.combine}, weights {panel.weights_label(self.panel_info.weights)}>")

    @property
    def kind(self) -> str:
        return "panel"

    @property
    def combine(self) -> str:
        """``poe`` (product of experts on the log-odds) or ``vote`` (majority of verdicts)."""
        return self.panel_info.combine

    @property
    def weights_mode(self) -> str:
        """``equal``, ``learnt`` or ``set by hand``."""
        w = self.panel_info.weights
        return w if isinstance(w, str) else "set by hand"

    @property
    def members(self) -> tuple[PanelMember, ...]:
        """The member runs, in order, with their weights and scales."""
        return tuple(PanelMember(r.name, r.id, float(w), s.how, r.n_comparisons)
                     for r, w, s in zip(self.member_runs, self._fit.weights, self._fit.scalings))

    def definition(self) -> dict:
        """What the panel is, JSON-able (exports and ``--json`` carry it)."""
        return dict(panel=self.name, dataset=self.dataset.name, aspect=self.panel_info.aspect,
                    combine=self.combine, weights=self.panel_info.weights,
                    scaling=self.panel_info.scaling,
                    members=[dict(run=m.name, weight=m.weight, scaling=m.scaling,
                                  n_comparisons=m.n_comparisons) for m in self.members])

    def _status(self) -> str:
        statuses = {r.status for r in self.member_runs}
        return "completed" if statuses == {"completed"} else ", ".join(sorted(statuses))

    @property
    def prompt_tokens_per_comparison(self) -> float | None:
        """Prompt tokens per comparison of the whole panel: every member's prompt tokens over
        every member's comparisons (None when a member's were not counted)."""
        return panel.pooled_per_unit([r.info.total for r in self.member_runs],
                                     [r.prompt_tokens_per_comparison for r in self.member_runs])

    # --------------------------------------------------------------- what only a panel has

    def member_agreement(self) -> "panel.MemberAgreement":
        """How the members agree on the pairs' verdicts: pairwise Cohen's kappa, Fleiss' kappa,
        Krippendorff's alpha, and each member's agreement with the panel."""
        pairs, lo = panel.pair_verdicts(self._fit.keys, self._fit.z)
        return panel.member_agreement([r.name for r in self.member_runs], lo,
                                      panel.own_pair_log_odds(self.results, pairs))

    def split_pairs(self) -> pd.DataFrame:
        """The pairs where the members' verdicts differ, most evenly split first: the panel's
        verdict, the count each way and each member's verdict."""
        pairs, lo = panel.pair_verdicts(self._fit.keys, self._fit.z)
        return panel.split_pairs(pairs, [r.name for r in self.member_runs], lo,
                                 panel.own_pair_log_odds(self.results, pairs))

    def member_evaluations(self, method: str = "win-ratio", debias: str | float = "balanced",
                           *, reference: str | None = None) -> dict:
        """The panel's :meth:`evaluation` (Spearman, Kendall, P(A), flip rate) beside each
        member's, with the same options: ``compassess panel evaluate --json``."""
        return dict(definition=self.definition(),
                    panel=self.evaluation(method, debias, reference=reference).to_dict(),
                    members={r.name: r.evaluation(method, debias, reference=reference).to_dict()
                             for r in self.member_runs})

    def vs_best_member(self, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
                       ) -> tuple["paired.PairedDifference | None", str]:
        """Is the panel better than its best member? The panel's accuracy with the stored human
        labels minus its best member's (the member most often right), on the labelled pairs
        both judged, each at its balanced tau*; the panel's p held out where it uses labels
        (:meth:`held_out`). The paired difference with its cluster-bootstrap interval and
        McNemar's exact p (``panel.panel_vs_best_member``), and a note ("" when computed; else
        why not: no labels, no labelled pair judged)."""
        if len(self.human_labels()) == 0:
            return None, (f"no human labels for dataset '{self.dataset.name}' and aspect "
                          f"'{self.panel_info.aspect}': the panel cannot be compared with its "
                          "best member pair by pair")
        uses_labels = self.weights_mode == "learnt" or self.panel_info.scaling != "balanced"
        try:
            table = self.held_out() if uses_labels else self.results
            members = [(r.name, r.results, resolve_tau("balanced", r.results.p))
                       for r in self.member_runs]
            return panel.panel_vs_best_member(
                self.human_labels(), (self.name, table, resolve_tau("balanced", table.p)),
                members, n_boot=n_boot, level=level, seed=seed), ""
        except InputError as e:
            return None, str(e)

    def member_warnings(self) -> dict[str, str]:
        """What the result pages warn about each member that answers by position (P(A) far
        from 0.5 or a high flip rate, raw and at its tau*), by member name; members that look at
        content are left out. Each member is debiased at its own tau* in the panel, but a judge
        that only answers by position adds little after debiasing, and the panel says so."""
        found = {r.name: r.position_warning("balanced") for r in self.member_runs}
        return {name: text for name, text in found.items() if text}

    def held_out(self, *, folds: int = DEFAULT_FOLDS, seed: int = 0,
                 weights: str | Sequence[float] | None = None, combine: str | None = None
                 ) -> ComparisonTable:
        """The panel's p on every labelled ordered pair, each predicted without its own pair's
        labels (members calibrated and weights learnt on the other folds, where the panel uses
        labels at all): the honest basis of its agreement with people. ``weights`` and
        ``combine`` override the panel's (a benchmark compares variants on the same runs).

        Raises
        ------
        InputError
            No stored labels, or fewer than 2 labelled pairs the members judged.
        """
        human = self.human_labels()
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{self.panel_info.aspect}'")
        mode = self.panel_info.weights if weights is None else weights
        raw = [(self._fit.z[:, m] * s.temperature) + s.offset
               for m, s in enumerate(self._fit.scalings)]
        held = panel.cross_validated_panel(
            raw, [r.results.p for r in self.member_runs], self._fit.keys, human,
            method=combine or self.combine, learn_weights=mode == "learnt",
            calibrate_members=self.panel_info.scaling != "balanced",
            weights=None if isinstance(mode, str) else mode, folds=folds, seed=seed)
        keys = self._fit.keys.iloc[held.rows]
        return panel.panel_table(keys.reset_index(drop=True), held.p)

    # ------------------------------------------------------------ read as a run is

    def comparisons(self) -> pd.DataFrame:
        """The panel's combined p per ordered pair, with each member's p beside it (NaN: that
        member did not judge the pair)."""
        frame = pd.DataFrame({"context_id": self.results.context_ids,
                              "a_id": self.results.a_ids, "b_id": self.results.b_ids,
                              "p": self.results.p})
        members = self._fit.keys.copy()
        p = panel.member_probabilities(self._fit)
        for m, run in enumerate(self.member_runs):
            members[f"p_{run.name}"] = p[:, m]
        return frame.merge(members, on=["context_id", "a_id", "b_id"], how="left")

    def export_bytes(self, what: str = "rankings", fmt: str = "csv", **options) -> ExportFile:
        """As :meth:`Run.export_bytes`, with the panel's definition in the recorded settings."""
        out = super().export_bytes(what, fmt, **options)
        meta = {**out.metadata, "panel": self.definition()}
        data, sidecar = export.table_bytes(out.frame, fmt, what=what, metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=out.frame, metadata=meta)

    def refresh(self) -> "Panel":
        """Read the panel and its members again."""
        fresh = Panel(self.store, self.store.backend.get_panel(self.panel_info.id))
        self.__dict__.update(fresh.__dict__)
        return self

    def audit(self, method: str = DEFAULT_METHOD, debias: str | float = "none", *,
              n_boot: int = 200, examples: int = EXAMPLES,
              baseline: str | None = None) -> RunAudit:
        """The audit report's content for the panel (:meth:`Run.audit` on the combined p, at
        tau = 0.5 by default since the members are debiased already), its setup the panel's
        definition with each member's model and template; a shown comparison has each member's
        debiased p instead of a prompt (every member had its own)."""
        audit = super().audit(method, debias, n_boot=n_boot, examples=examples,
                              baseline=baseline)
        definition = self.definition()
        for member, run in zip(definition["members"], self.member_runs):
            member.update(model=run.settings.model, template=run.settings.template_name)
        return replace(audit, panel=definition)

    def _shown(self, row: Mapping, first: str, second: str) -> ShownComparison:
        keys = self._fit.keys
        at = np.flatnonzero((keys["context_id"].to_numpy(dtype=object) == str(row["context_id"]))
                            & (keys["a_id"].to_numpy(dtype=object) == str(first))
                            & (keys["b_id"].to_numpy(dtype=object) == str(second)))
        z = self._fit.z[at[0]] if len(at) else np.full(len(self.member_runs), np.nan)
        members = {r.name: (None if not np.isfinite(v) else float(expit(v)))
                   for r, v in zip(self.member_runs, z)}
        return ShownComparison(row=row, first=first, second=second, prompt=None,
                               members=members)

    def report_html(self, *others: "Run | str | int", method: str = DEFAULT_METHOD,
                    debias: str | float = "none", n_boot: int = 200,
                    examples: int = EXAMPLES, baseline: str | None = None,
                    generated_at: datetime | None = None) -> bytes:
        """The panel's audit report (:meth:`Run.report_html`, at tau = 0.5 by default: the
        members are debiased already); ``compassess panel report``."""
        return super().report_html(*others, method=method, debias=debias, n_boot=n_boot,
                                   examples=examples, baseline=baseline,
                                   generated_at=generated_at)

    def delete(self, *, dry_run: bool = False) -> Deleted:
        """Delete the panel's definition (:meth:`Store.delete_panel`); its runs stay."""
        return self.store.delete_panel(self.panel_info.id)


class Panels:
    """The panels of judges of a :class:`Store` (its mixin): create, get, list and delete
    (``compassess panel``)."""


    def create_panel(self, name: str, runs: Sequence[str | int | "Run"], *,
                     weights: str | Sequence[float] = "equal", combine: str = "poe",
                     scaling: str = "balanced", created_by: str = "") -> "Panel":
        """Store a panel of judges (``compassess panel create``): two or more pairwise runs on
        the same dataset and aspect, combined per pair by ``combine`` (``poe``: Gaussian product
        of experts on the debiased log-odds; ``vote``: majority of debiased verdicts), with
        ``weights`` ``equal``, ``learnt`` (from the stored human labels) or one number per run;
        ``scaling``: each member debiased at its own tau* (``balanced``), calibrated on the
        human labels (``calibrated``), or calibrated where labels exist (``auto``).

        Raises
        ------
        InputError
            Fewer than two runs, a run given twice, runs on different datasets or aspects, a run
            that is not pairwise, an unknown combination, scaling or weights, a taken name, or
            learnt weights / calibrated members without human labels (nothing is stored).
        """
        handles = [r if isinstance(r, Verdicts) else self.get_run(r) for r in runs]
        panel.member_names([r.name for r in handles])
        for r in handles:
            r._pairwise("a panel")
            if isinstance(r, Panel):
                raise InputError(f"'{r.name}' is a panel: a panel's members are runs")
        first = handles[0]
        for r in handles[1:]:
            if r.info.dataset_id != first.info.dataset_id:
                raise InputError(f"run '{r.name}' judged dataset '{r.info.dataset_name}', run "
                                 f"'{first.name}' dataset '{first.info.dataset_name}': a panel's "
                                 "runs judge the same dataset")
            if r.settings.aspect != first.settings.aspect:
                raise InputError(f"run '{r.name}' judged aspect '{r.settings.aspect}', run "
                                 f"'{first.name}' aspect '{first.settings.aspect}': a panel's "
                                 "runs judge the same aspect")
        if combine not in panel.COMBINERS:
            raise InputError(f"unknown combination '{combine}'; choose one of "
                             f"{', '.join(panel.COMBINERS)}")
        if scaling not in panel.MEMBER_SCALINGS:
            raise InputError(f"unknown scaling '{scaling}'; choose one of "
                             f"{', '.join(panel.MEMBER_SCALINGS)}")
        parsed = panel.parse_weights(weights, len(handles))
        panel_id = self.backend.create_panel(
            name, first.info.dataset_id, first.settings.aspect, [r.id for r in handles],
            combine=combine, weights=parsed, scaling=scaling, created_by=created_by)
        try:
            return Panel(self, self.backend.get_panel(panel_id))
        except InputError:
            self.backend.delete_panel(panel_id)
            raise

    def panel(self, name: str | int) -> "Panel":
        """A stored panel by name (or id), read back like a :class:`Run`.

        Raises
        ------
        InputError
            No such panel, or it cannot be combined (e.g. learnt weights and the labels gone).
        """
        return Panel(self, self.backend.get_panel(name))

    def panels(self, dataset: str | int | None = None) -> pd.DataFrame:
        """One row per stored panel (of one dataset when given): id, name, dataset, aspect,
        combine, weights, scaling, members, created_at (``compassess panel list``) and
        dataset_id (what a link to the panel opens)."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        rows = [dict(id=p.id, name=p.name, dataset=p.dataset, aspect=p.aspect,
                     combine=p.combine, weights=panel.weights_label(p.weights),
                     scaling=p.scaling, members=", ".join(p.run_names), created_at=p.created_at,
                     dataset_id=p.dataset_id)
                for p in self.backend.list_panels(dataset_id)]
        return pd.DataFrame(rows, columns=["id", "name", "dataset", "aspect", "combine",
                                           "weights", "scaling", "members", "created_at",
                                           "dataset_id"])

    def delete_panel(self, name: str | int, *, expect_name: str | None = None) -> Deleted:
        """Delete a panel's definition (``compassess panel delete``); its runs stay.
        ``expect_name``: the name it was shown under, refused (``ObjectChanged``) when the panel
        is now called otherwise."""
        info = self.backend.get_panel(name)
        check_shown_name("panel", info.id, info.name, expect_name)
        return Deleted.from_rows(self.backend.delete_panel(info.id))
