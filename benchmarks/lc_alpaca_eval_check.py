"""AlpacaEval 2.0's length-controlled win rate: CompAssess's implementation against the
``alpaca-eval`` package's own ``get_length_controlled_winrate`` on the same annotations, and beside
the joint length-adjusted GLM the leaderboard used before (docs/results.md, section 3).

Simulated runs (every system judged against a baseline in both orders over ``--contexts``
contexts, a judge that likes length, a per-context difficulty and a position bias; soft p as a
logprob judge gives), so the test environment (``pip install -r requirements-dev.txt``) is all it
needs:

    python benchmarks/lc_alpaca_eval_check.py --seeds 5 --systems 5 --contexts 60
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from compassess_core.stats.leaderboard import lc_win_rates_against  # noqa: E402
from compassess_core.stats.length_bias import (alpaca_eval_lc_win_rates,  # noqa: E402
                                               baseline_annotations, length_controlled_strengths)
from tests.stats.test_length_bias_alpaca_eval import (_alpaca_glm, _annotations_frame,  # noqa: E402
                                          _simulated_run)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--systems", type=int, default=5, help="including the baseline")
    ap.add_argument("--contexts", type=int, default=60)
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # alpaca_eval's sklearn arguments
    glm = _alpaca_glm()
    table = Path("/tmp") / "compassess-lc-difficulty.csv"
    glm.hf_hub_download = lambda **kw: str(table)  # the run's own difficulties, not the hub's
    worst, rows = 0.0, []
    for seed in range(args.seeds):
        i, j, p, ctx, la, lb = _simulated_run(args.systems, args.contexts, seed=100 + seed)
        ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
        ours = alpaca_eval_lc_win_rates(args.systems, 0, ann, args.contexts)
        import pandas as pd
        pd.DataFrame({"model": "none", "index": np.arange(args.contexts),
                      "instruction_difficulty": ours.difficulty}).to_csv(table, index=False)
        joint = lc_win_rates_against(
            length_controlled_strengths(args.systems, i, j, p, la, lb).strengths, 0)
        for s in range(1, args.systems):
            ref = glm.get_length_controlled_winrate(
                _annotations_frame(ann, s), glm_name="length_controlled_noreg",
                save_weights_dir=None, is_warn_extreme_changes=False)
            diff = abs(100 * ours.win_rate[s] - ref["length_controlled_winrate"])
            worst = max(worst, diff)
            rows.append((seed, s, ref["win_rate"], ref["length_controlled_winrate"],
                         100 * ours.win_rate[s], 100 * joint[s]))
    print("seed system  raw_win_rate  alpaca_eval_LC  compassess_LC  old_joint_GLM  (points)")
    for seed, s, raw, ref, mine, old in rows:
        print(f"{seed:4d} {s:6d} {raw:13.2f} {ref:15.4f} {mine:14.4f} {old:14.2f}")
    old_gap = [abs(r[3] - r[5]) for r in rows]
    print(f"max |CompAssess - alpaca_eval| = {worst:.2e} points over {len(rows)} systems; "
          f"the old joint GLM differed from alpaca_eval by {np.mean(old_gap):.1f} points on "
          f"average (max {np.max(old_gap):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
