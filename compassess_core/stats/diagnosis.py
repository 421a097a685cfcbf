"""What a run's numbers rest on, said plainly: a judge that answers by position, a partial run.

A result computed on a judge whose verdicts follow the position of the texts (P(A) or P(B) far
from 0.5, eq. 8 of Liusie, Manakul, Gales, EACL 2024) or flip when the order is swapped says more
about the judge than about the texts; a result of a cancelled run rests on part of its plan. Every
result page and ``compassess evaluate`` show these diagnoses with their numbers and the remedy.

Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .bias import positional_bias

__all__ = ["PositionDiagnosis", "diagnose_position", "partial_run_note",
           "SKEWED_SHARE", "DEGENERATE_SHARE", "HIGH_FLIP_RATE"]

#: P(A) or P(B) at or above this is a strong positional bias: the paper's judges reached 0.80
#: (Liusie et al. 2024, Table 9), and at 0.70 more than two verdicts in five follow the position.
SKEWED_SHARE = 0.70
#: At or above this the judge answers by position, not content (the bundled 135M model gives
#: 1.00 on the sample: every comparison goes to the first text).
DEGENERATE_SHARE = 0.95
#: A judge without any content signal flips half of the pairs judged in both orders; at 0.40
#: most of the verdicts it gives in one order are not confirmed in the other.
HIGH_FLIP_RATE = 0.40


@dataclass(frozen=True)
class PositionDiagnosis:
    """A run's positional bias and order consistency, raw (tau = 0.5) and at the threshold used.

    Attributes
    ----------
    p_a_raw : float
        P(A) at tau = 0.5 (eq. 8) over ``n_comparisons``.
    flip_rate_raw : float
        Share of the ``n_pairs_both_orders`` pairs judged in both orders whose verdict changes
        with the order, at tau = 0.5 (NaN when none).
    tau : float
        The threshold the page or command uses.
    p_a_at_tau, flip_rate_at_tau : float
        The same at ``tau``.
    """

    # Fields, then yes/no properties: alike in shape to prompts.TaskWording by accident.
    p_a_raw: float
    flip_rate_raw: float
    n_comparisons: int
    n_pairs_both_orders: int
    tau: float
    p_a_at_tau: float
    flip_rate_at_tau: float
    #: How the threshold in use reads when it is not one tau (per-context balancing), else "".
    threshold: str = ""

    @property
    def skewed(self) -> bool:
        """P(A) or P(B) at tau = 0.5 is at least :data:`SKEWED_SHARE`."""
        return bool(np.isfinite(self.p_a_raw)
                    and max(self.p_a_raw, 1.0 - self.p_a_raw) >= SKEWED_SHARE)

    @property
    def degenerate(self) -> bool:
        """P(A) or P(B) at tau = 0.5 is at least :data:`DEGENERATE_SHARE`."""
        return bool(np.isfinite(self.p_a_raw)
                    and max(self.p_a_raw, 1.0 - self.p_a_raw) >= DEGENERATE_SHARE)

    @property
    def flips_often(self) -> bool:
        """The flip rate at the threshold used is at least :data:`HIGH_FLIP_RATE`."""
        return bool(np.isfinite(self.flip_rate_at_tau) and self.flip_rate_at_tau >= HIGH_FLIP_RATE)

    @property
    def balanced(self) -> bool:
        """The threshold used balances the positions (P(A) within 0.05 of 0.5)."""
        return bool(np.isfinite(self.p_a_at_tau) and abs(self.p_a_at_tau - 0.5) <= 0.05)

    @property
    def needs_warning(self) -> bool:
        return self.skewed or self.flips_often

    def message(self) -> str | None:
        """A plain warning with the numbers, or None when the judge looks sound."""
        if not self.needs_warning:
            return None
        side = "first (A)" if self.p_a_raw >= 0.5 else "second (B)"
        share = max(self.p_a_raw, 1.0 - self.p_a_raw)
        parts = []
        if self.degenerate:
            parts.append(f"At tau = 0.5 this judge answers by position, not content: the {side} "
                         f"text wins {share:.0%} of {self.n_comparisons:,} comparisons.")
        elif self.skewed:
            parts.append(f"Strong positional bias: at tau = 0.5 the {side} text wins "
                         f"{share:.0%} of {self.n_comparisons:,} comparisons (0.5 = none).")
        if (self.tau != 0.5 or self.threshold) and np.isfinite(self.p_a_at_tau):
            parts.append(f"At the threshold in use ({self.threshold or f'tau = {self.tau:.3f}'}) P(A) = "
                         f"{self.p_a_at_tau:.2f}"
                         + (f" and the verdict flips with the order in "
                            f"{self.flip_rate_at_tau:.0%} of {self.n_pairs_both_orders:,} pairs "
                            "judged in both orders" if np.isfinite(self.flip_rate_at_tau) else "")
                         + ".")
        elif np.isfinite(self.flip_rate_at_tau):
            parts.append(f"The verdict flips with the order in {self.flip_rate_at_tau:.0%} of "
                         f"{self.n_pairs_both_orders:,} pairs judged in both orders.")
        if self.flips_often:
            parts.append("A judge without any content signal flips 50%.")
        return " ".join(parts)

    def remedy(self) -> str | None:
        """What to do about it, in words (the UI offers it as a button, the CLI as an option);
        None when the threshold in use already removes the bias and the verdicts hold in both
        orders."""
        if not self.balanced:
            return ("Remedy: the balanced threshold tau* (eq. 10), which makes P(A) = P(B) = 0.5: "
                    "'balanced' in the sidebar, `--debias balanced` on the command line.")
        if self.flips_often:
            return ("The balanced threshold re-centres the verdicts but cannot add content signal: "
                    "treat these rankings with caution; prefer a larger judge, or a template the "
                    "judge answers consistently in both orders.")
        return None

    def warning(self) -> str | None:
        """:meth:`message` and :meth:`remedy` as one text (what ``evaluate`` prints)."""
        message = self.message()
        if message is None:
            return None
        remedy = self.remedy()
        return f"{message} {remedy}" if remedy else message


def diagnose_position(i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float,
                      p_at: ArrayLike | None = None, threshold: str = "") -> PositionDiagnosis:
    """:class:`PositionDiagnosis` of comparisons ``(i, j, p)`` with globally unique candidate
    indices (``analysis._global_pairs``), at tau = 0.5 and at ``tau``.

    ``p_at``: the p to read at ``tau`` when they differ from ``p`` (per-context balancing reads
    eq. 9's reweighted p at 0.5, ``analysis.ThresholdView``); ``threshold`` names it in words.

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.stats.bias.flip_rate`.
    """
    from .bias import flip_rate

    pp = np.asarray(p, dtype=np.float64)
    if len(pp) == 0:
        nan = float("nan")
        return PositionDiagnosis(nan, nan, 0, 0, float(tau), nan, nan)
    qq = pp if p_at is None else np.asarray(p_at, dtype=np.float64)
    raw_a, _ = positional_bias(pp, 0.5)
    at_a, _ = positional_bias(qq, tau)
    raw_flip, n_both = flip_rate(i, j, pp, 0.5)
    at_flip, _ = flip_rate(i, j, qq, tau)
    return PositionDiagnosis(raw_a, raw_flip, int(len(pp)), int(n_both), float(tau), at_a, at_flip,
                             threshold)


def partial_run_note(status: str, done: int | None, total: int | None, unit: str = "comparisons"
                     ) -> str | None:
    """``"Partial run (cancelled): 40 of 60 planned comparisons (67%) ..."`` when a run that is
    not running stopped before its plan was complete; None for a complete or live run."""
    done_n, total_n = int(done or 0), int(total or 0)
    if status == "running" or not total_n or done_n >= total_n:
        return None
    reason = "stopped early" if status == "completed" else status
    return (f"Partial run ({reason}): {done_n:,} of {total_n:,} planned {unit} "
            f"({done_n / total_n:.0%}); every number here rests on those only. Resume it to "
            "complete it.")
