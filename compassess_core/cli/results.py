"""Leaderboards, comparisons of runs, the audit report, calibration and fusion with people, and the judges on this machine (``leaderboard``, ``compare``, ``report``, ``calibrate``, ``models``)."""

from __future__ import annotations

import math
import sys

from .. import api
from ..stats.calibration import ECE_BINS
from ..errors import CompAssessError, InputError
from ..data.export import neutralise_frame
from ..stats.leaderboard import STRENGTH_UNITS
from ..stats.length_bias import LC_FOLDS
from ..judges.model_catalog import RECOMMENDED, catalog, catalog_frame, models_folder
from ..report_text import fmt as _fmt, table as _table
from ..worker import EXIT_OK
from .common import _dumps, _load_run, _output_file, _print_ranking, _warnings, sqlite_file
from ..report_text import counted


# ------------------------------------------------------------------- leaderboard and compare

def cmd_leaderboard(args) -> int:
    run = _load_run(args)
    try:
        board = run.leaderboard(args.method, args.debias, reference=args.reference,
                                baseline=args.baseline, n_boot=args.bootstrap)
    except api.NoSystemsError as e:   # the app names its page; the CLI names its command
        raise InputError(f"{e} (`compassess rank --run {run.name}`)") from e
    warnings = _warnings(run, args.debias)
    reference = board.reference
    if args.format == "json":  # an unranked system's rank (no comparison in the run) is null
        out = {"run": run.name, "dataset": run.dataset.name, "settings": run.info.settings,
               **board.to_dict(), "warnings": warnings}
        print(_dumps(out, indent=2))
        return EXIT_OK
    frame = board.frame.astype({"rank": object})   # an unranked system's rank is blank
    frame.loc[frame["rank"].isna(), "rank"] = ""
    if args.format == "csv":
        neutralise_frame(frame).to_csv(sys.stdout, index=False)
        return EXIT_OK
    lb, lc = board.length, board.length_controlled
    print(f"# run {run.name}: {counted(len(frame), 'system')}, "
          f"{counted(board.n_comparisons, 'comparison')} over "
          f"{counted(board.n_contexts, 'context')}; strength = {STRENGTH_UNITS[board.method]} at "
          f"{run.threshold_label(args.debias)}; win rate = share of comparisons won; "
          f"{int(board.level * 100)}% intervals from {board.n_boot} bootstrap replicates "
          "(contexts resampled, then the comparisons within each)")
    if board.baseline is not None:
        print(f"# baseline {board.baseline}: win_rate_vs_baseline = share of the system's "
              f"comparisons with {board.baseline} it won at tau (both orders, contexts where both "
              "appear; p == tau is a win for the second text), n_vs_baseline of them; "
              "lc_win_rate_vs_baseline (with lc_win_rate_vs_baseline_se, AlpacaEval's "
              f"lc_standard_error) = {board.alpaca_lc.estimator}, NaN below "
              f"{LC_FOLDS} contexts with the baseline; the baseline's own row is NaN (not 0.5)")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"# votes per pair of systems: comparisons and wins of each at "
          f"{run.threshold_label(args.debias)}")
    print(board.pair_counts.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if board.system_spearman_x100 is not None:
        print(f"system-level Spearman x100 of strength vs mean '{reference}': "
              f"{_fmt(board.system_spearman_x100)} (Kendall x100 {_fmt(board.system_kendall_x100)}, "
              f"{counted(len(frame), 'system')})")
    print(f"length bias: the longer text wins {_fmt(100 * lb.longer_wins)}% of "
          f"{counted(lb.n_length_differs, 'comparison')} ({run.threshold_label(args.debias)}); "
          f"{_fmt(lb.slope_per_doubling, '+.3f')} log-odds per doubling of len(A)/len(B); "
          f"joint length-adjusted GLM (lc_strength, lc_win_rate; CompAssess's, not AlpacaEval's): "
          f"length term {_fmt(lc.length_coef, '+.3f')}, "
          f"position term {_fmt(lc.position_coef, '+.3f')} log-odds")
    for note in board.notes:
        print(f"note: {note}")
    for line in warnings:
        print(f"warning: {line}")
    return EXIT_OK


def cmd_compare(args) -> int:
    if len(args.run) != 2:
        raise InputError(f"compare needs exactly two runs (--run A --run B), got {len(args.run)}")
    store = api.open_store(args.db)
    run_a, run_b = (store.get_run(name) for name in args.run)
    result = run_a.compare(run_b, args.method, args.debias)
    partial = [f"{r.name}: {w}" for r in (run_a, run_b) for w in _warnings(r, args.debias)]
    if args.json:
        print(_dumps({**result.to_dict(run_a.name, run_b.name), "warnings": partial}, indent=2))
        return EXIT_OK
    print(f"runs {run_a.name} (A, {run_a.threshold_label(args.debias)}) and {run_b.name} "
          f"(B, {run_b.threshold_label(args.debias)}) on "
          f"dataset '{run_a.dataset.name}': {result.n_shared:,} ordered pairs judged by both")
    _table([
        ("verdict agreement (share of shared pairs)", _fmt(result.agreement, ".3f")),
        ("Cohen's kappa of the verdicts", _fmt(result.kappa, ".3f")),
        ("Pearson r of p on shared pairs", _fmt(result.p_pearson, ".3f")),
        (f"P(A) of {run_a.name} at its tau", _fmt(result.p_a_first, ".3f")),
        (f"P(A) of {run_b.name} at its tau", _fmt(result.p_b_first, ".3f")),
        (f"rank Spearman x100, mean over {result.n_contexts_ranked} context(s) ({result.method})",
         _fmt(result.rank_spearman_x100)),
        (f"system-level Spearman x100 ({counted(result.n_systems, 'system')})",
         _fmt(result.system_spearman_x100)),
    ])
    _print_paired(result)
    dis = result.disagreements
    print(f"{counted(len(dis), 'pair')} with different verdicts; the most confident first:")
    if len(dis):
        print(dis.head(20)[["context_id", "first", "second", "p_a", "p_b", "winner_a", "winner_b"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for line in partial:
        print(f"warning: {line}")
    return EXIT_OK


def _print_paired(result) -> None:
    """The paired tests of ``compare``: A minus B on the same pairs, with the interval and
    McNemar's exact p-value (``paired.PairedDifference.sentence``)."""
    print("paired tests (A - B on the same pairs, 95% cluster-bootstrap interval over contexts):")
    for test in (result.paired_people, result.paired_position):
        if test is not None:
            print(f"  {test.sentence()}")
    if result.people_note:
        print(f"  with people: {result.people_note}")


def cmd_report(args) -> int:
    _write_report(args.output, lambda: api.open_store(args.db).report(
        args.run, method=args.method, debias=args.debias, n_boot=args.bootstrap,
        examples=args.examples, baseline=args.baseline), f"{len(args.run)} run(s)")
    return EXIT_OK


def _write_report(output: str, make, what: str) -> None:
    """Write the audit report ``make()`` returns to ``output`` (its folder checked first, so a
    mistyped path fails before the report is computed) and say so on stderr."""
    out = _output_file(output)
    data = make()
    out.write_bytes(data)
    print(f"wrote {out} ({len(data) / 1024:,.0f} KiB; {what})", file=sys.stderr)


# ---------------------------------------------------- calibration, fusion with humans, models

def _calibration_note(calibration: dict) -> str:
    return (f"; p calibrated on {calibration['n_pairs']} human-labelled pairs (bias "
            f"{calibration['bias']:.3f} log-odds, temperature {calibration['temperature']:.3f})")


def _human_weight(text: str | None) -> float | None:
    if text is None:
        return None
    if text.strip().lower() in ("inf", "humans", "humans-only"):
        return math.inf
    try:
        weight = float(text)
    except ValueError:
        raise InputError(f"--human-weight must be a number >= 0 or 'inf', not '{text}'") from None
    if not weight >= 0:
        raise InputError(f"--human-weight must be >= 0, got {text}")
    return weight


def _rank_with_humans(args, run: api.Run) -> int:
    fused = run.fused_rankings(args.level, args.debias, weight=_human_weight(args.human_weight))
    # best first: by rank within each context (contexts in the dataset's order), as `rank`
    df = fused.by_rank().drop(columns=["text"], errors="ignore")
    if args.context and args.level == "context":
        if args.context not in {c.context_id for c in run.dataset.contexts}:
            raise InputError(f"context '{args.context}' is not in dataset '{run.dataset.name}'")
        df = df[df["context_id"] == args.context]
    choice, tau = fused.choice, run.tau(args.debias)
    weight = "the humans alone" if math.isinf(choice.weight) else f"{choice.weight:g} judge comparisons"
    header = (f"# run {run.name}: {args.level}-level ranking fused from {len(run.results)} judge "
              f"comparisons ({run.threshold_label(args.debias)}) and {choice.n_votes} human votes of aspect "
              f"'{run.settings.aspect}'; one vote = {weight} ({choice.chosen_by})"
              + (_calibration_note(run.calibration) if run.calibration else ""))
    fields = {"method": "fused product of experts (judge + humans)", "level": args.level,
              "tau": None if math.isnan(tau) else tau, "debias": str(args.debias),
              "human_weight": choice.to_dict(), "calibration": run.calibration}
    _print_ranking(df, args.format, run.name, fields, header, "rankings")
    return EXIT_OK


def cmd_calibrate(args) -> int:
    run = _load_run(args)
    aspect = args.aspect or run.settings.aspect
    report = run.calibrate(aspect, folds=args.folds, seed=args.seed)
    out = {"run": run.name, "dataset": run.dataset.name, "aspect": aspect,
           "model": run.settings.model, **report.to_dict()}
    if args.json:
        print(_dumps(out, indent=2))
        return EXIT_OK
    cal, raw, deb, held = report.calibration, report.raw, report.debiased, report.calibrated
    print(f"run {run.name} vs human labels of aspect '{aspect}': "
          f"{counted(raw.n_comparisons, 'comparison')} of "
          f"{cal.n_pairs} labelled pairs; {report.folds}-fold cross-validation by pair (seed "
          f"{report.seed})")
    spread = out["fold_spread"]
    print(f"fitted on all labels: p_cal = sigmoid((logit p - b) / T) with bias b = {cal.bias:.3f} "
          f"log-odds, temperature T = {cal.temperature:.3f} (sd over folds: {spread['bias_sd']:.3f}, "
          f"{spread['temperature_sd']:.3f})")
    def cell(x, name: str) -> str:
        """The score with its 95% interval when one was computed."""
        lo_hi = x.intervals.get(name)
        return _fmt(getattr(x, name), ".3f") + (
            f" [{_fmt(lo_hi[0], '.3f')}, {_fmt(lo_hi[1], '.3f')}]" if lo_hi else "")

    _table([
        ("accuracy (per comparison, p > 0.5)", *(cell(x, "accuracy") for x in (raw, deb, held))),
        ("log-loss (nats per comparison)", *(cell(x, "log_loss") for x in (raw, deb, held))),
        (f"expected calibration error ({ECE_BINS} bins)", *(_fmt(x.ece, ".3f") for x in (raw, deb, held))),
        (f"pair raw agreement, ties left out (n = {held.n_pairs})",
         *(cell(x, "pair_accuracy") for x in (raw, deb, held))),
        ("pair kappa (both orientations), ties left out",
         *(cell(x, "pair_kappa") for x in (raw, deb, held))),
    ], head=("raw", f"tau*={report.tau:.3f}", "calibrated"))
    print("calibrated = held-out folds (each fold calibrated by a fit on the others); "
          "tau* = eq. 9 reweighting at the balanced threshold (no labels); [low, high]: 95% "
          "cluster-bootstrap intervals (contexts, then labelled pairs; tau* held fixed)")
    rel = report.reliability["calibrated"]
    print("reliability of the calibrated p (held out): "
          + ", ".join(f"[{r.bin_low:.1f},{r.bin_high:.1f}) n={r.n} p={_fmt(r.mean_p, '.2f')} "
                      f"freq={_fmt(r.frequency, '.2f')}" for r in rel.itertuples() if r.n))
    for note in report.notes:
        print(f"note: {note}")
    return EXIT_OK


def cmd_models(args) -> int:
    try:  # a --db file that does not exist is left uncreated: no measured speeds
        missing = sqlite_file(args.db) is not None and not sqlite_file(args.db).exists()
        runs = [] if missing else api.open_store(args.db).backend.list_runs()
    except CompAssessError:
        runs = []  # the list of models does not need the store; only measured speeds do
    entries = catalog(runs)
    folder = models_folder()
    if args.json:
        print(_dumps({
            "models_folder": str(folder),
            "models": [dict(name=e.name, model=e.spec, kind=e.kind, available=e.available,
                            path=str(e.path) if e.path else None, size_bytes=e.size_bytes,
                            parameters=e.parameters, context_window=e.context_window,
                            architecture=e.architecture, problem=e.problem,
                            comparisons_per_s=e.speed.rate if e.speed else None,
                            scoring_candidates_per_s=e.scoring_speed.rate if e.scoring_speed else None,
                            runs_measured=e.speed.n_runs if e.speed else 0) for e in entries],
            "recommended": [dict(hardware=r.hardware, hub_id=r.hub_id, why=r.why)
                            for r in RECOMMENDED]}, indent=2))
        return EXIT_OK
    print(f"models folder: {folder}" + ("" if folder.is_dir() else ", which does not exist yet")
          + " (COMPASSESS_MODELS_DIR; one .gguf file or transformers folder per model)")
    print(catalog_frame(entries).to_string(index=False))
    print("speeds: median of this model's earlier runs in the store (none: never run here)")
    print("\nrecommended hub ids (need the model hub or a local copy):")
    for r in RECOMMENDED:
        print(f"  {r.hardware}: {r.hub_id} - {r.why}")
    return EXIT_OK
