"""Audit one judge against another: two runs on the same dataset (two models, two templates, two
aspects) compared pair by pair and ranking by ranking.

On the ordered pairs both runs judged: how often their eq. 10 verdicts agree (Liusie, Manakul,
Gales, EACL 2024), Cohen's kappa of the verdicts (Cohen 1960), the correlation of their
probabilities, and the pairs they disagree on; per context, the Spearman correlation of the two
runs' rankings (averaged over contexts, x100, as the paper's per-context protocol); at system
level, the Spearman correlation of the two runs' system strengths; and each run's positional bias
P(A) (eq. 8).

Paired tests (``paired``): on the same pairs, the difference of the two runs' P(A) and, where
the dataset has human A/B labels, of their accuracy with the people's majority, each with its
cluster-bootstrap interval over contexts and McNemar's exact p-value.

Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import pearsonr

from . import analysis, metrics, paired as paired_tests
from .agreement import cohen_kappa
from .bias import positional_bias
from ..errors import InputError
from .leaderboard import NoSystemsError, system_strengths
from ..types import ComparisonTable, Dataset

__all__ = ["RunComparison", "shared_pairs", "compare_runs"]

PAIR = ["context_id", "first", "second"]


def _pairs(table: ComparisonTable) -> pd.DataFrame:
    frame = pd.DataFrame({"context_id": table.context_ids, "first": table.a_ids,
                          "second": table.b_ids, "p": table.p})
    frame = frame[np.isfinite(frame["p"].to_numpy(dtype=np.float64))]
    # An ordered pair judged twice (a merged store) counts once, with its mean p.
    return frame.groupby(PAIR, sort=False, as_index=False)["p"].mean()


def shared_pairs(table_a: ComparisonTable, table_b: ComparisonTable, tau_a: float = 0.5,
                 tau_b: float = 0.5) -> pd.DataFrame:
    """The ordered pairs both runs judged, with both probabilities and verdicts.

    Returns
    -------
    pandas.DataFrame
        ``context_id, first, second, p_a, p_b, winner_a, winner_b, agree`` (``p_x`` = P(first
        better) in run x; ``winner_x`` = the candidate id run x picks at its tau, eq. 10), one row
        per shared ordered pair, in run A's order.
    """
    both = _pairs(table_a).merge(_pairs(table_b), on=PAIR, suffixes=("_a", "_b"))
    first_a = both["p_a"].to_numpy(dtype=np.float64) > tau_a
    first_b = both["p_b"].to_numpy(dtype=np.float64) > tau_b
    both["winner_a"] = np.where(first_a, both["first"], both["second"])
    both["winner_b"] = np.where(first_b, both["first"], both["second"])
    both["agree"] = first_a == first_b
    return both


@dataclass(frozen=True)
class RunComparison:
    """Two runs side by side (every number says what it was computed on).

    Attributes
    ----------
    n_shared : int
        Ordered pairs judged by both runs (the base of ``agreement``, ``kappa``, ``p_pearson``).
    n_a, n_b : int
        Comparisons of each run.
    tau_a, tau_b : float
        Each run's decision threshold.
    agreement : float
        Share of shared pairs with the same verdict.
    kappa : float
        Cohen's kappa of the two verdicts (first wins / second wins) on the shared pairs.
    p_pearson : float
        Pearson correlation of the two runs' p on the shared pairs.
    p_a_first, p_b_first : float
        Each run's P(A) at its tau over all its comparisons (eq. 8).
    rank_spearman_x100 : float
        Spearman x100 of the two runs' per-context scores (``method``), mean over contexts.
    n_contexts_ranked : int
        Contexts in that mean (both runs ranked at least two candidates, not all tied).
    system_spearman_x100 : float or None
        Spearman x100 of the two runs' system strengths; None without systems.
    n_systems : int
    method : str
    pairs : pandas.DataFrame
        :func:`shared_pairs`; ``disagreements`` is its rows with different verdicts, the most
        confident disagreement first (``|p_a - tau_a| + |p_b - tau_b|``).
    paired_position : PairedDifference or None
        P(A) of A minus P(A) of B on the shared ordered pairs (percentage points), with its
        paired cluster-bootstrap interval and McNemar's exact test.
    paired_people : PairedDifference or None
        Accuracy with the people's decisive majority, A minus B, on the labelled pairs both
        judged; None without human labels (``people_note`` says why).
    """

    n_shared: int
    n_a: int
    n_b: int
    tau_a: float
    tau_b: float
    agreement: float
    kappa: float
    p_pearson: float
    p_a_first: float
    p_b_first: float
    rank_spearman_x100: float
    n_contexts_ranked: int
    system_spearman_x100: float | None
    n_systems: int
    method: str
    pairs: pd.DataFrame = field(repr=False)
    paired_position: paired_tests.PairedDifference | None = None
    paired_people: paired_tests.PairedDifference | None = None
    people_note: str = ""

    @property
    def paired(self) -> paired_tests.PairedDifference | None:
        """The headline paired test: accuracy with people where there are labels, else P(A)."""
        return self.paired_people or self.paired_position

    @property
    def disagreements(self) -> pd.DataFrame:
        d = self.pairs.loc[~self.pairs["agree"]].copy()
        d["confidence"] = ((d["p_a"] - self.tau_a).abs() + (d["p_b"] - self.tau_b).abs())
        return d.sort_values("confidence", ascending=False, kind="stable").reset_index(drop=True)

    def to_dict(self, run_a: str = "A", run_b: str = "B", limit: int = 50) -> dict:
        """What ``compassess compare --json`` prints (NaN as null; the first ``limit``
        disagreements)."""
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)
        dis = self.disagreements.head(limit)
        return dict(
            run_a=run_a, run_b=run_b, method=self.method, tau_a=self.tau_a, tau_b=self.tau_b,
            n_comparisons_a=self.n_a, n_comparisons_b=self.n_b, n_shared_pairs=self.n_shared,
            verdict_agreement=num(self.agreement), cohen_kappa=num(self.kappa),
            p_pearson=num(self.p_pearson), p_a_first_a=num(self.p_a_first),
            p_a_first_b=num(self.p_b_first),
            rank_spearman_x100=num(self.rank_spearman_x100),
            n_contexts_ranked=self.n_contexts_ranked,
            system_spearman_x100=num(self.system_spearman_x100), n_systems=self.n_systems,
            n_disagreements=int((~self.pairs["agree"]).sum()),
            paired_people=None if self.paired_people is None else self.paired_people.to_dict(),
            paired_position=(None if self.paired_position is None
                             else self.paired_position.to_dict()),
            people_note=self.people_note, disagreements=json_rows(dis))


def json_rows(frame: pd.DataFrame) -> list[dict]:
    """Rows of a frame as JSON-ready dicts (NaN as None)."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")


def compare_runs(dataset_a: Dataset, table_a: ComparisonTable, dataset_b: Dataset,
                 table_b: ComparisonTable, *, tau_a: float = 0.5, tau_b: float = 0.5,
                 method: str = "bradley-terry", human: pd.DataFrame | None = None,
                 names: tuple[str, str] = ("A", "B"), n_boot: int = paired_tests.PAIRED_BOOT,
                 seed: int = 0) -> RunComparison:
    """Compare two runs of the same dataset (see :class:`RunComparison`); ``human``: the
    human A/B labels of the aspect (None or empty: no paired comparison with people).

    Raises
    ------
    InputError
        The runs are on datasets of different content, no ordered pair was judged by both, or
        an unknown ``method``.
    """
    if dataset_a.content_hash != dataset_b.content_hash:
        raise InputError(f"the runs are on different datasets ('{dataset_a.name}' and "
                         f"'{dataset_b.name}'): comparing judges needs the same candidates")
    pairs = shared_pairs(table_a, table_b, tau_a, tau_b)
    if len(pairs) == 0:
        raise InputError("the two runs have no ordered pair in common (different contexts or a "
                         "sparse selection): nothing to compare pair by pair")
    first_a = (pairs["p_a"].to_numpy(dtype=np.float64) > tau_a).astype(np.int64)
    first_b = (pairs["p_b"].to_numpy(dtype=np.float64) > tau_b).astype(np.int64)
    pa, pb = pairs["p_a"].to_numpy(dtype=np.float64), pairs["p_b"].to_numpy(dtype=np.float64)
    pearson = (float(pearsonr(pa, pb).statistic)
               if len(pa) > 1 and pa.std() > 0 and pb.std() > 0 else float("nan"))
    rank_a = analysis.rank_contexts(dataset_a, table_a, method=method, tau=tau_a)
    rank_b = analysis.rank_contexts(dataset_b, table_b, method=method, tau=tau_b)
    joined = rank_a.merge(rank_b, on=["context_id", "candidate_id"], suffixes=("_a", "_b"))
    groups = [g for _, g in joined.groupby("context_id", sort=False)]
    per = metrics.per_context_correlation([g["score_a"].to_numpy() for g in groups],
                                          [g["score_b"].to_numpy() for g in groups])
    try:
        sa = system_strengths(dataset_a, table_a, method=method, tau=tau_a)
        sb = system_strengths(dataset_b, table_b, method=method, tau=tau_b)
        common = sa.index.intersection(sb.index)
        system = (100.0 * metrics.correlation(sa[common].to_numpy(), sb[common].to_numpy())
                  if len(common) > 2 else None)
        n_systems = len(common)
    except NoSystemsError:
        system, n_systems = None, 0
    position = paired_tests.paired_first_position(table_a, tau_a, table_b, tau_b,
                                                  name_a=names[0], name_b=names[1],
                                                  n_boot=n_boot, seed=seed)
    people, people_note = None, "no human A/B labels for this dataset and aspect"
    if human is not None and len(human):
        try:
            people = paired_tests.paired_accuracy(human, table_a, tau_a, table_b, tau_b,
                                                  name_a=names[0], name_b=names[1],
                                                  n_boot=n_boot, seed=seed)
            people_note = ""
        except InputError as e:
            people_note = str(e)
    p_all_a = table_a.p[np.isfinite(table_a.p)]
    p_all_b = table_b.p[np.isfinite(table_b.p)]
    return RunComparison(
        n_shared=len(pairs), n_a=int(len(p_all_a)), n_b=int(len(p_all_b)), tau_a=float(tau_a),
        tau_b=float(tau_b), agreement=float(pairs["agree"].mean()),
        kappa=cohen_kappa(first_a, first_b), p_pearson=pearson,
        p_a_first=positional_bias(p_all_a, tau_a)[0], p_b_first=positional_bias(p_all_b, tau_b)[0],
        rank_spearman_x100=per.mean_x100, n_contexts_ranked=per.n_used,
        system_spearman_x100=system, n_systems=n_systems, method=method, pairs=pairs,
        paired_position=position, paired_people=people, people_note=people_note)
