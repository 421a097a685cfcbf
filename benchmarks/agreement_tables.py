"""Speed of the tables every LLM-vs-human agreement figure starts from: the run's probabilities per
pair (``agreement.pair_probabilities``), the human labels brought to one shape and one vote per
annotator and pair (``agreement.normalise_human_labels``), and a whole ``llm_vs_human`` report
without intervals (what the Agreement page, the Judges board and the paired tests compute for every
run shown), on made-up data (no store, no model).

The data: ``--contexts`` contexts x ``--candidates`` candidates, every ordered comparison judged
once (p uniform), half of the unordered pairs labelled by three annotators (x, y or tie). The
baseline is the former pandas code (a pivot table; frames filled column by column), kept below;
``llm_vs_human`` is timed once as it is and once with the baseline tables swapped in. Results are
checked equal first; the ratio is printed. It measures, it never asserts a time:

    python benchmarks/agreement_tables.py
    python benchmarks/agreement_tables.py --contexts 100 --candidates 6   # 3,000 comparisons

``--repeat``: calls per measurement (20), the fastest kept.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compassess_core.errors import InputError  # noqa: E402
from compassess_core.stats import agreement, bias  # noqa: E402
from compassess_core.stats.agreement import (_PAIR, BOTH_BAD, SKIP, TIE, TIE_CODE,  # noqa: E402
                                             X_BETTER, Y_BETTER)
from compassess_core.types import ComparisonTable  # noqa: E402


def make_data(n_contexts: int, n_candidates: int, seed: int = 0
              ) -> tuple[ComparisonTable, pd.DataFrame]:
    """Every ordered comparison of every context, and three annotators' labels on half the pairs."""
    rng = np.random.default_rng(seed)
    rows = [(f"c{c}", f"s{i}", f"s{j}") for c in range(n_contexts) for i in range(n_candidates)
            for j in range(n_candidates) if i != j]
    ctx, a, b = (np.array(col, dtype=object) for col in zip(*rows))
    p = rng.uniform(0.05, 0.95, len(rows))
    table = ComparisonTable(ctx, a, b, p, np.log(p), np.log1p(-p), np.ones_like(p))
    pairs = [(f"c{c}", f"s{i}", f"s{j}") for c in range(n_contexts) for i in range(n_candidates)
             for j in range(i + 1, n_candidates)]
    labels = [(c, x, y, rng.choice([x, y, "tie"], p=[0.45, 0.45, 0.1]), who)
              for c, x, y in pairs[: len(pairs) // 2] for who in ("ann1", "ann2", "ann3")]
    return table, pd.DataFrame(labels, columns=["context_id", "left_id", "right_id", "winner_id",
                                                "annotator"])


# ----------------------------------------------------------------------------- the baseline

def baseline_pair_probabilities(table: ComparisonTable) -> pd.DataFrame:
    """The former ``pair_probabilities``: a pivot table of the two orders' means."""
    cid, a, b, p = agreement.judged_comparisons(table)   # the same comparisons as now
    fwd = a < b
    df = pd.DataFrame({"context_id": cid, "x": np.where(fwd, a, b), "y": np.where(fwd, b, a),
                       "order": np.where(fwd, "p_xy", "p_yx"), "p": p})
    wide = df.pivot_table(index=_PAIR, columns="order", values="p", aggfunc="mean", sort=True)
    wide = wide.reindex(columns=["p_xy", "p_yx"])
    wide.columns.name = None
    return wide.reset_index()


def baseline_as_human_table(df: pd.DataFrame) -> pd.DataFrame:
    """The former ``as_human_table`` (the canonical shape only, which this data has): a frame
    filled column by column."""
    out = pd.DataFrame(index=pd.RangeIndex(len(df)))
    out["context_id"] = df["context_id"].astype(str).to_numpy()
    out["left_id"] = df["left_id"].astype(str).to_numpy()
    out["right_id"] = df["right_id"].astype(str).to_numpy()
    win = df["winner_id"].astype(str).str.strip().to_numpy(dtype=object)
    lower = np.char.lower(win.astype(str))
    out["winner_id"] = np.where(np.isin(lower, [TIE, SKIP, BOTH_BAD]), lower, win)
    out["annotator"] = df["annotator"].fillna("").astype(str).to_numpy()
    out["seconds"] = np.nan
    if (out["left_id"].to_numpy() == out["right_id"].to_numpy()).any():
        raise InputError("a pair compares a candidate with itself")
    ok = ((out["winner_id"] == out["left_id"]) | (out["winner_id"] == out["right_id"])
          | out["winner_id"].isin([TIE, SKIP, BOTH_BAD])).to_numpy()
    if not ok.all():
        raise InputError("a winner is neither candidate")
    return out


def baseline_normalise(df: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The former ``_normalise``: columns set one by one on the filtered frame."""
    t = baseline_as_human_table(df)
    skipped = (t["winner_id"] == SKIP).to_numpy()
    t = t.loc[~skipped].reset_index(drop=True)
    t["winner_id"] = t["winner_id"].where(t["winner_id"] != BOTH_BAD, TIE)
    left, right = t["left_id"].to_numpy(dtype=object), t["right_id"].to_numpy(dtype=object)
    left_first = (t["left_id"] < t["right_id"]).to_numpy()
    t["x"] = np.where(left_first, left, right)
    t["y"] = np.where(left_first, right, left)
    win = t["winner_id"].to_numpy(dtype=object)
    t["label"] = np.select([win == TIE, win == t["x"].to_numpy()], [TIE_CODE, X_BETTER],
                           default=Y_BETTER).astype(np.int64)
    t["preferred"] = win
    t["left_picked"] = np.where(win == TIE, np.nan, (win == left).astype(np.float64))
    before = len(t)
    t = t.drop_duplicates(["annotator", *_PAIR], keep="last").reset_index(drop=True)
    return t, int(skipped.sum()), before - len(t)


# ----------------------------------------------------------------------------- measuring

def fastest_ms(call: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best * 1000


def report_figures(report: agreement.AgreementReport) -> list:
    return [(at.tau, at.majority.accuracy_with_ties, at.majority.kappa_with_ties,
             at.votes.accuracy_without_ties, sorted(at.per_annotator))
            for at in (report.raw, report.debiased)] + [report.n_pairs_matched]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=10)
    ap.add_argument("--candidates", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    table, labels = make_data(args.contexts, args.candidates)
    tau = float(bias.balanced_threshold(np.asarray(table.p)))

    def as_before(call: Callable[[], object]) -> Callable[[], object]:
        """``call`` with the baseline tables in the agreement module."""
        def run():
            saved = agreement.pair_probabilities, agreement._normalise
            agreement.pair_probabilities, agreement._normalise = (baseline_pair_probabilities,
                                                                  baseline_normalise)
            try:
                return call()
            finally:
                agreement.pair_probabilities, agreement._normalise = saved
        return run

    report = lambda: agreement.llm_vs_human(labels, table, tau, n_boot=0)  # noqa: E731
    pd.testing.assert_frame_equal(baseline_pair_probabilities(table),
                                  agreement.pair_probabilities(table), check_exact=False,
                                  rtol=0, atol=1e-15)
    pd.testing.assert_frame_equal(baseline_normalise(labels)[0],
                                  agreement.normalise_human_labels(labels))
    assert report_figures(as_before(report)()) == report_figures(report())
    print(f"{len(table.p)} comparisons, {len(labels)} labels; CPU ms per call, fastest of "
          f"{args.repeat}")
    print(f"{'':34s}{'baseline':>10s}{'now':>10s}{'ratio':>8s}")
    for name, before, now in [
            ("pair_probabilities", lambda: baseline_pair_probabilities(table),
             lambda: agreement.pair_probabilities(table)),
            ("normalise_human_labels", lambda: baseline_normalise(labels),
             lambda: agreement.normalise_human_labels(labels)),
            ("llm_vs_human (no intervals)", as_before(report), report)]:
        b, n = fastest_ms(before, args.repeat), fastest_ms(now, args.repeat)
        print(f"{name:34s}{b:10.2f}{n:10.2f}{b / n:7.1f}x")


if __name__ == "__main__":
    main()
