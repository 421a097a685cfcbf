"""Bradley-Terry bootstrap: evalica's solver called with numbered comparisons (what
``ranking.bradley_terry`` does) against ``evalica.bradley_terry`` itself (labels mapped through
pandas at every fit), on the same replicates, in the same process.

    python benchmarks/bradley_terry_bootstrap.py [--candidates 16] [--comparisons 240] [--replicates 200] [--repeats 5]

A percentile bootstrap refits the model once per replicate (``ranking.bootstrap_ci``: 200 by
default), so the cost of one small fit is what a Rankings page waits for. Prints the CPU time
of each way, their ratio and the largest difference of the strengths (0: the same solver on the
same numbers). It measures, it never asserts a time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compassess_core.stats.ranking import evalica_bradley_terry  # noqa: E402


def replicates(candidates: int, comparisons: int, count: int, seed: int = 0):
    """``count`` bootstrap replicates of one context's comparisons: every candidate against every
    other in both orders until ``comparisons``, p from a logistic model of random strengths."""
    rng = np.random.default_rng(seed)
    pairs = np.array([(a, b) for a in range(candidates) for b in range(candidates) if a != b])
    pairs = pairs[rng.permutation(len(pairs))[:comparisons]]
    strength = rng.normal(size=candidates)
    p = 1 / (1 + np.exp(-(strength[pairs[:, 0]] - strength[pairs[:, 1]])))
    out = []
    for _ in range(count):
        pick = rng.integers(0, len(pairs), len(pairs))
        x, y = pairs[pick, 0], pairs[pick, 1]
        if len(np.union1d(x, y)) == candidates:   # the fit is over compared candidates only
            out.append((x, y, np.clip(p[pick], 1e-3, 1 - 1e-3)))
    return out


def timed(reps, candidates: int, solver: str) -> tuple[float, list[np.ndarray]]:
    start = time.process_time()
    got = [evalica_bradley_terry(x, y, p, candidates, tolerance=1e-10, limit=1000, solver=solver)
           for x, y, p in reps]
    return time.process_time() - start, got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--comparisons", type=int, default=240)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    reps = replicates(args.candidates, args.comparisons, args.replicates)
    timed(reps[:5], args.candidates, "direct")   # warm: imports and the extension loaded
    public_s = direct_s = 0.0
    diff = 0.0
    for _ in range(args.repeats):   # alternated, so a slower minute of the machine hits both
        s_pub, by_public = timed(reps, args.candidates, "public")
        s_dir, by_direct = timed(reps, args.candidates, "direct")
        public_s, direct_s = public_s + s_pub, direct_s + s_dir
        diff = max(diff, max(float(np.max(np.abs(a - b))) for a, b in zip(by_public, by_direct)))
    per = 1000 / (args.repeats * len(reps))
    print(f"{len(reps)} replicates of {args.comparisons} comparisons among {args.candidates} "
          f"candidates, {args.repeats} repeats, CPU time per fit:")
    print(f"  evalica.bradley_terry (labels through pandas): {public_s * per:.3f} ms")
    print(f"  evalica's solver on numbered comparisons:      {direct_s * per:.3f} ms")
    print(f"  ratio: {public_s / direct_s:.1f}x; largest |difference| of the strengths: {diff:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
