"""Paired tests: is judge A better than judge B on the *same* pairs?

Two judges (two runs, a panel and its best member, a tuned wording and T1) that judged the same
pairs are compared on those pairs, so that what the pairs share (an easy context, a hard pair)
cancels out of the difference:

- **The paired cluster bootstrap of a difference** (Koehn, *Statistical Significance Tests for
  Machine Translation Evaluation*, EMNLP 2004, for the paired resampling; Davison and Hinkley,
  *Bootstrap Methods and their Application*, 1997, sec. 3.8, for the two-stage resampling of
  clustered data): every replicate resamples the contexts with replacement, then the units
  (pairs) within each drawn context with replacement, and recomputes both judges' statistic
  on the *same* resampled units; the percentile interval of the replicates' differences is the
  interval of the difference. Units cluster within contexts (every candidate of a context
  shares its source), so resampling units alone would make the interval too narrow.
- **McNemar's exact test** (McNemar, *Psychometrika* 12, 1947; the exact, conditional form of
  Agresti, *Categorical Data Analysis*, 2002, sec. 10.1.4): of the units where exactly one of
  the two judges succeeds (``n_a_only``, ``n_b_only``), under "the judges are equally good"
  each is A's with probability 1/2, so the two-sided p-value is the binomial test of
  ``n_a_only`` successes in ``n_a_only + n_b_only`` draws at 1/2 (``scipy.stats.binomtest``;
  it equals ``statsmodels``' ``mcnemar(exact=True)``). It ignores the clustering, which the
  bootstrap interval does not: read the two together.
- **ZEPO's fairness with its noise**: the A-rate of a wording is the mean over contexts of each
  context's share of decisions for the first position (cambridgeltl/zepo,
  ``pairs/pairs_eval.py``, ``get_a_rate``), its fairness ``-|A-rate - 1/2|`` (Zhou et al., EMNLP
  2024, sec. 3), with an interval from the same two-stage bootstrap, and the paired difference
  of two wordings' fairness on the ordered pairs both judged.

Small typed numpy functions (vectorised over the bootstrap replicates; Python loops run over
contexts, never over pairs), then the pandas adapters that build the units from a run's
comparisons and the human labels. Pure: no I/O, no store, no UI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import binomtest

from . import agreement
from ..errors import InputError, LengthMismatchError
from ..types import ComparisonTable, FloatArray, IntArray

__all__ = ["PAIRED_BOOT", "PAIRED_LEVEL", "Interval", "McNemar", "PairedDifference",
           "cluster_codes", "two_stage_weights", "percentile_interval", "paired_mean_difference",
           "mcnemar_exact", "per_context_rate", "rate_interval", "fairness_interval",
           "paired_fairness_difference", "pair_correctness", "paired_accuracy",
           "paired_first_position", "first_position_units"]

#: Bootstrap replicates and coverage of every paired interval.
PAIRED_BOOT = 1000
PAIRED_LEVEL = 0.95
#: Most replicates one call may ask for (bounded input).
MAX_PAIRED_BOOT = 20_000


# ------------------------------------------------------------------------------ the results

@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval (``level`` coverage)."""

    estimate: float
    low: float
    high: float

    @property
    def covers_zero(self) -> bool:
        """The interval holds 0 (or is undefined): the difference is not established."""
        return not (self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on the discordant units: ``n_a_only`` where only A succeeds,
    ``n_b_only`` where only B does; ``p_value`` two-sided (1.0 without a discordant unit)."""

    n_a_only: int
    n_b_only: int
    p_value: float

    @property
    def n_discordant(self) -> int:
        return self.n_a_only + self.n_b_only


@dataclass(frozen=True)
class PairedDifference:
    """A paired comparison of two judges, labelled for print: ``measure`` (what each judge's
    number is, e.g. "accuracy with the people's majority"), ``unit`` of the difference,
    ``computed_on`` (the units both judged), the two judges' values, ``difference`` (A - B, in
    ``unit``) with its ``level`` interval from ``n_boot`` two-stage bootstrap replicates over
    ``n_contexts`` contexts and ``n_pairs`` units, and McNemar's exact test (None where the
    measure is no success/failure per unit)."""

    measure: str
    unit: str
    computed_on: str
    name_a: str
    name_b: str
    value_a: float
    value_b: float
    difference: float
    low: float
    high: float
    level: float
    n_boot: int
    n_contexts: int
    n_pairs: int
    mcnemar: McNemar | None = None
    #: What a unit's success is, for McNemar's discordant counts ("was right": the judge matched
    #: the people; "chose the first position").
    success: str = "was right"

    @property
    def indistinguishable(self) -> bool:
        """The interval of the difference holds 0: the data do not tell the two apart."""
        return Interval(self.difference, self.low, self.high).covers_zero

    def sentence(self) -> str:
        """The comparison in one line, every number with its unit and base."""
        scale = 100.0 if self.unit == "percentage points" else 1.0
        spec = ".1f" if scale == 100.0 else ".3f"

        def f(v: float) -> str:
            return "n/a" if not np.isfinite(v) else format(v * scale, spec)
        text = (f"{self.name_a} - {self.name_b}, {self.measure}: {f(self.difference)} "
                f"{self.unit} [{100 * self.level:.0f}% {f(self.low)}, {f(self.high)}] "
                f"({f(self.value_a)} vs {f(self.value_b)}; paired bootstrap over "
                f"{self.n_contexts:,} context(s) and {self.n_pairs:,} {self.computed_on})")
        if self.mcnemar is not None:
            m = self.mcnemar
            text += (f"; McNemar's exact p = {m.p_value:.3g} on {m.n_discordant:,} discordant "
                     f"pairs ({m.n_a_only:,} where only {self.name_a} {self.success}, "
                     f"{m.n_b_only:,} where only {self.name_b} did)")
        if self.indistinguishable:
            text += "; indistinguishable: the interval holds 0"
        return text

    def row(self) -> dict:
        """One labelled row for a table of paired tests (the pages show these): values and
        difference in the ``unit`` (percentage points x100), McNemar's counts and p-value."""
        scale = 100.0 if self.unit == "percentage points" else 1.0
        m = self.mcnemar
        nan = float("nan")
        return {"A": self.name_a, "B": self.name_b, "measure": self.measure,
                "A value": self.value_a * scale, "B value": self.value_b * scale,
                f"A - B ({self.unit})": self.difference * scale,
                f"{100 * self.level:.0f}% low": self.low * scale,
                f"{100 * self.level:.0f}% high": self.high * scale,
                "McNemar exact p": nan if m is None else m.p_value,
                f"only A {self.success}": None if m is None else m.n_a_only,
                f"only B {self.success}": None if m is None else m.n_b_only,
                "contexts": self.n_contexts, "pairs": self.n_pairs,
                "computed on": self.computed_on,
                "indistinguishable": self.indistinguishable}

    def to_dict(self) -> dict:
        """JSON-able (NaN as None)."""
        def num(v):
            return None if v is None or not np.isfinite(v) else float(v)
        m = self.mcnemar
        return dict(measure=self.measure, unit=self.unit, computed_on=self.computed_on,
                    a=self.name_a, b=self.name_b, value_a=num(self.value_a),
                    value_b=num(self.value_b), difference=num(self.difference),
                    low=num(self.low), high=num(self.high), level=self.level,
                    n_boot=self.n_boot, n_contexts=self.n_contexts, n_pairs=self.n_pairs,
                    indistinguishable=self.indistinguishable, success=self.success,
                    mcnemar=None if m is None else dict(
                        n_a_only=m.n_a_only, n_b_only=m.n_b_only, p_value=num(m.p_value)))


# ------------------------------------------------------------------------------ the math

def _check_boot(n_boot: int, level: float) -> None:
    if not 1 <= int(n_boot) <= MAX_PAIRED_BOOT or not 0.0 < float(level) < 1.0:
        raise InputError(f"n_boot must be in 1..{MAX_PAIRED_BOOT} and level in (0, 1), got "
                         f"{n_boot}, {level}")


def cluster_codes(contexts: ArrayLike) -> tuple[IntArray, int]:
    """Each unit's context as a code ``0..K-1`` (in order of first appearance) and ``K``."""
    codes, uniques = pd.factorize(pd.Series(np.asarray(contexts, dtype=object).reshape(-1)),
                                  sort=False)
    return codes.astype(np.int64), int(len(uniques))


def two_stage_weights(codes: IntArray, n_clusters: int, n_boot: int,
                      rng: np.random.Generator) -> FloatArray:
    """Bootstrap weights ``(n_boot, n)``: how often each unit is drawn in each replicate of the
    two-stage (cluster) bootstrap (Davison and Hinkley 1997, sec. 3.8, strategy 2): draw ``K``
    contexts with replacement, then in each drawn context its ``n_k`` units with replacement.
    A context drawn ``m`` times contributes ``m`` independent within-context resamples, whose
    pooled counts are one multinomial draw of ``m n_k`` units, so one draw per context and
    replicate gives the same distribution."""
    n = len(codes)
    weights = np.zeros((n_boot, n), dtype=np.float64)
    if n == 0 or n_clusters == 0:
        return weights
    times = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)
    for k in range(n_clusters):  # a loop over contexts, vectorised over replicates and units
        idx = np.flatnonzero(codes == k)
        weights[:, idx] = rng.multinomial(times[:, k] * len(idx),
                                          np.full(len(idx), 1.0 / len(idx)))
    return weights


def percentile_interval(values: FloatArray, level: float = PAIRED_LEVEL) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates (Efron and Tibshirani 1993, ch. 13),
    non-finite replicates left out; NaN without any."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - level) / 2.0
    return float(np.percentile(v, tail)), float(np.percentile(v, 100.0 - tail))


def _units(x_a: ArrayLike, x_b: ArrayLike, contexts: ArrayLike
           ) -> tuple[FloatArray, FloatArray, IntArray, int]:
    a = np.asarray(x_a, dtype=np.float64).reshape(-1)
    b = np.asarray(x_b, dtype=np.float64).reshape(-1)
    c = np.asarray(contexts, dtype=object).reshape(-1)
    if not len(a) == len(b) == len(c):
        raise LengthMismatchError(f"paired units differ in length: {len(a)}, {len(b)} and "
                                  f"{len(c)} contexts")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("paired units must be finite numbers")
    codes, k = cluster_codes(c)
    return a, b, codes, k


def paired_mean_difference(x_a: ArrayLike, x_b: ArrayLike, contexts: ArrayLike, *,
                           n_boot: int = PAIRED_BOOT, level: float = PAIRED_LEVEL,
                           seed: int = 0) -> tuple[Interval, Interval, Interval]:
    """The paired difference of two means over the same units (``x_a[i]``, ``x_b[i]``: each
    judge's value on unit ``i`` of context ``contexts[i]``, e.g. 1.0 when its verdict matches
    the people): ``mean(x_a) - mean(x_b)`` with the percentile interval of the two-stage
    bootstrap (:func:`two_stage_weights`; both means on the same resampled units, Koehn 2004).
    Returns (A's mean, B's mean, the difference), each an :class:`Interval`.

    Raises
    ------
    LengthMismatchError, InputError
        Arrays of different lengths, no unit, non-finite values or bad ``n_boot``/``level``.
    """
    _check_boot(n_boot, level)
    a, b, codes, k = _units(x_a, x_b, contexts)
    if len(a) == 0:
        raise InputError("no unit judged by both: nothing to compare")
    w = two_stage_weights(codes, k, int(n_boot), np.random.default_rng(seed))
    total = w.sum(axis=1)
    mean_a, mean_b = (w @ a) / total, (w @ b) / total
    return (Interval(float(a.mean()), *percentile_interval(mean_a, level)),
            Interval(float(b.mean()), *percentile_interval(mean_b, level)),
            Interval(float(a.mean() - b.mean()), *percentile_interval(mean_a - mean_b, level)))


def mcnemar_exact(success_a: ArrayLike, success_b: ArrayLike) -> McNemar:
    """McNemar's exact test of two judges' successes on the same units (module docstring): the
    two-sided binomial test of the discordant units at 1/2 (``scipy.stats.binomtest``).

    Raises
    ------
    LengthMismatchError
        Arrays of different lengths.
    """
    a = np.asarray(success_a).astype(bool).reshape(-1)
    b = np.asarray(success_b).astype(bool).reshape(-1)
    if len(a) != len(b):
        raise LengthMismatchError(f"McNemar's test needs the same units: {len(a)} and {len(b)}")
    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    n = a_only + b_only
    p = float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return McNemar(a_only, b_only, p)


def per_context_rate(first: ArrayLike, contexts: ArrayLike) -> tuple[float, FloatArray]:
    """ZEPO's A-rate: each context's share of decisions for the first position (``first[i]``
    1.0 for a decision for A, 0.0 for B; undecided comparisons are left out by the caller),
    then their mean over contexts (cambridgeltl/zepo ``get_a_rate``: ``np.mean(A_rate_list)``).
    Returns the mean and the per-context rates (in order of first appearance); NaN without a
    decision."""
    x = np.asarray(first, dtype=np.float64).reshape(-1)
    codes, k = cluster_codes(contexts)
    if k == 0:
        return float("nan"), np.zeros(0)
    rates = np.bincount(codes, weights=x, minlength=k) / np.bincount(codes, minlength=k)
    return float(rates.mean()), rates


def _replicate_rates(w: FloatArray, x: FloatArray, codes: IntArray, k: int) -> FloatArray:
    """Per replicate, the mean over the drawn contexts of each drawn context's rate: a context's
    copies each hold ``n_k`` draws, so the mean over copies is ``sum_k (w_k . x_k) / n_k / K``."""
    onehot = np.zeros((len(codes), k))
    onehot[np.arange(len(codes)), codes] = 1.0
    sizes = onehot.sum(axis=0)
    return ((w * x) @ onehot / sizes).sum(axis=1) / k


def rate_interval(first: ArrayLike, contexts: ArrayLike, *, n_boot: int = PAIRED_BOOT,
                  level: float = PAIRED_LEVEL, seed: int = 0) -> tuple[Interval, FloatArray]:
    """:func:`per_context_rate` with its two-stage bootstrap interval; also the replicates."""
    _check_boot(n_boot, level)
    x = np.asarray(first, dtype=np.float64).reshape(-1)
    codes, k = cluster_codes(contexts)
    if k == 0:
        nan = float("nan")
        return Interval(nan, nan, nan), np.full(int(n_boot), nan)
    reps = _replicate_rates(two_stage_weights(codes, k, int(n_boot),
                                              np.random.default_rng(seed)), x, codes, k)
    return Interval(per_context_rate(x, contexts)[0], *percentile_interval(reps, level)), reps


def _fairness(rate: FloatArray | float) -> FloatArray | float:
    """ZEPO's fairness of an A-rate: ``-|rate - 1/2|``."""
    return 0.0 - np.abs(np.asarray(rate, dtype=np.float64) - 0.5)


def fairness_interval(first: ArrayLike, contexts: ArrayLike, *, n_boot: int = PAIRED_BOOT,
                      level: float = PAIRED_LEVEL, seed: int = 0) -> Interval:
    """ZEPO's fairness ``-|A-rate - 1/2|`` of the per-context A-rate, with the percentile
    interval of the two-stage bootstrap over contexts and decisions within them."""
    rate, reps = rate_interval(first, contexts, n_boot=n_boot, level=level, seed=seed)
    return Interval(float(_fairness(rate.estimate)), *percentile_interval(_fairness(reps), level))


def paired_fairness_difference(first_a: ArrayLike, first_b: ArrayLike, contexts: ArrayLike, *,
                               n_boot: int = PAIRED_BOOT, level: float = PAIRED_LEVEL,
                               seed: int = 0) -> tuple[Interval, Interval, Interval]:
    """Two wordings' fairness on the same ordered pairs (``first_x[i]`` 1.0 when wording x
    decided for the first position on unit ``i``; units where either is undecided are left out
    by the caller): fairness(A) - fairness(B), both recomputed on the same two-stage bootstrap
    resample (paired). Returns (A's fairness, B's, the difference) as :class:`Interval`."""
    _check_boot(n_boot, level)
    a, b, codes, k = _units(first_a, first_b, contexts)
    if k == 0:
        raise InputError("no ordered pair decided under both wordings: nothing to compare")
    w = two_stage_weights(codes, k, int(n_boot), np.random.default_rng(seed))
    fa, fb = (_fairness(_replicate_rates(w, x, codes, k)) for x in (a, b))
    pa, pb = (float(_fairness(per_context_rate(x, contexts)[0])) for x in (a, b))
    return (Interval(pa, *percentile_interval(fa, level)),
            Interval(pb, *percentile_interval(fb, level)),
            Interval(pa - pb, *percentile_interval(fa - fb, level)))


# ------------------------------------------------------------------------------ from tables

_PAIR = ["context_id", "x", "y"]


def pair_correctness(human: pd.DataFrame, table: ComparisonTable, tau: float) -> pd.DataFrame:
    """One row per labelled pair the judge judged, whose people have a decisive majority:
    ``context_id, x, y, correct`` (1.0 when the judge's verdict at ``tau``, eq. 9-10, is the
    majority's choice: ``agreement.pair_outcomes`` without the pairs people call a tie). The one
    place that reads a judge's per-pair success against people from ``agreement``."""
    outcomes = agreement.pair_outcomes(human, table, tau)
    decisive = outcomes.loc[outcomes["human"] != agreement.TIE_CODE]
    return decisive[_PAIR + ["correct"]].reset_index(drop=True)


def paired_accuracy(human: pd.DataFrame, table_a: ComparisonTable, tau_a: float,
                    table_b: ComparisonTable, tau_b: float, *, name_a: str = "A",
                    name_b: str = "B", n_boot: int = PAIRED_BOOT, level: float = PAIRED_LEVEL,
                    seed: int = 0) -> PairedDifference:
    """Two judges' accuracy with the people's decisive majority on the labelled pairs both
    judged (:func:`pair_correctness`, each at its own threshold): the paired difference in
    percentage points with its cluster-bootstrap interval, and McNemar's exact test.

    Raises
    ------
    InputError
        No labelled pair judged by both (or bad ``n_boot``/``level``).
    """
    both = pair_correctness(human, table_a, tau_a).merge(
        pair_correctness(human, table_b, tau_b), on=_PAIR, suffixes=("_a", "_b"))
    if len(both) == 0:
        raise InputError("no labelled pair with a decisive human majority was judged by both: "
                         "no paired comparison with people")
    return _paired_units(both["correct_a"].to_numpy(), both["correct_b"].to_numpy(),
                         both["context_id"], measure="accuracy with the people's decisive majority",
                         computed_on="labelled pairs judged by both", success="was right",
                         name_a=name_a, name_b=name_b, n_boot=n_boot, level=level, seed=seed)


def _paired_units(xa: FloatArray, xb: FloatArray, contexts, *, measure: str, computed_on: str,
                  success: str, name_a: str, name_b: str, n_boot: int, level: float,
                  seed: int) -> PairedDifference:
    """The :class:`PairedDifference` of two 0/1 outcomes on the same units (pairs) clustered in
    ``contexts``: means, their difference with its cluster-bootstrap interval, and McNemar's
    exact test on the discordant units."""
    ia, ib, d = paired_mean_difference(xa, xb, contexts, n_boot=n_boot, level=level, seed=seed)
    return PairedDifference(
        measure=measure, unit="percentage points", computed_on=computed_on, name_a=name_a,
        name_b=name_b, value_a=ia.estimate, value_b=ib.estimate, difference=d.estimate,
        low=d.low, high=d.high, level=float(level), n_boot=int(n_boot),
        n_contexts=cluster_codes(contexts)[1], n_pairs=len(xa), mcnemar=mcnemar_exact(xa, xb),
        success=success)


def first_position_units(table: ComparisonTable, tau: float = 0.5) -> pd.DataFrame:
    """One row per ordered pair judged (the mean p where judged twice): ``context_id, first,
    second, p, decided`` (``p != tau``) and ``first_pos`` (1.0 when ``p > tau``: a decision for
    the first position, eq. 10)."""
    frame = pd.DataFrame({"context_id": table.context_ids, "first": table.a_ids,
                          "second": table.b_ids, "p": np.asarray(table.p, dtype=np.float64)})
    frame = frame[np.isfinite(frame["p"].to_numpy())]
    frame = frame.groupby(["context_id", "first", "second"], sort=False,
                          as_index=False)["p"].mean()
    p = frame["p"].to_numpy()
    frame["decided"] = p != tau
    frame["first_pos"] = (p > tau).astype(np.float64)
    return frame


def paired_first_position(table_a: ComparisonTable, tau_a: float, table_b: ComparisonTable,
                          tau_b: float, *, name_a: str = "A", name_b: str = "B",
                          n_boot: int = PAIRED_BOOT, level: float = PAIRED_LEVEL,
                          seed: int = 0) -> PairedDifference:
    """Two judges' P(A) (share of verdicts for the first position, eq. 8, each at its own
    threshold) on the ordered pairs both judged: the paired difference in percentage points
    with its cluster-bootstrap interval, and McNemar's exact test of marginal homogeneity (the
    discordant pairs: one judge chose the first position, the other the second).

    Raises
    ------
    InputError
        No ordered pair judged by both.
    """
    key = ["context_id", "first", "second"]
    both = first_position_units(table_a, tau_a).merge(first_position_units(table_b, tau_b),
                                                      on=key, suffixes=("_a", "_b"))
    if len(both) == 0:
        raise InputError("no ordered pair was judged by both: nothing to compare")
    return _paired_units(both["first_pos_a"].to_numpy(), both["first_pos_b"].to_numpy(),
                         both["context_id"],
                         measure="P(A), share of verdicts for the first position",
                         computed_on="ordered pairs judged by both",
                         success="chose the first position", name_a=name_a, name_b=name_b,
                         n_boot=n_boot, level=level, seed=seed)
