"""What the store holds: the bundled model, datasets, runs, imported labels and their agreement (``fetch-model``, ``datasets``, ``runs``, ``import-labels``, ``agreement``)."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import api
from ..judges.models import default_model_path, fetch_default_model
from ..report_text import fmt as _fmt
from ..runs.run_kinds import kind_of
from ..runs.run_loop import PHASE_TEXT
from ..api.jobs import listed_run_status
from ..worker import EXIT_OK
from .common import _dumps, _load_run
from ..report_text import counted


# -------------------------------------------------------------------------------- the store

def cmd_fetch_model(args) -> int:
    path = default_model_path()
    if not path.exists():
        path = fetch_default_model()
    print(path if args.print_path else f"bundled model ready: {path}")
    return EXIT_OK


def cmd_datasets(args) -> int:
    store = api.open_store(args.db).backend
    for d in store.list_datasets():
        print(f"{d.name}\t{counted(d.n_contexts, 'context')}\t"
              f"{counted(d.n_candidates, 'candidate')}\t"
              f"scores: {', '.join(d.score_columns) or '-'}")
    return EXIT_OK


def cmd_runs(args) -> int:
    # Each run's own job status (what `compassess job status run NAME` says), from one listing.
    listed = [(run.info, listed_run_status(run)) for run in api.open_store(args.db).list_runs()]
    if args.json:
        print(_dumps([dict(name=r.name, dataset=r.dataset_name, status=r.status,
                               state=job.state, kind=kind_of(r.settings).name,
                               unit=kind_of(r.settings).unit, done=r.done, total=r.total,
                               n_comparisons=r.n_comparisons, judge=r.judge_key,
                               rate=r.rate, judge_s=r.judge_s, token_rate=r.token_rate,
                               phase=r.phase if job.active else None,
                               phase_at=(r.phase_at.isoformat() if r.phase_at is not None
                                         and job.active else None))
                          for r, job in listed], indent=2))
        return EXIT_OK
    for r, job in listed:
        # the state, not the stored status: a run whose worker died is not "running"; a run
        # that ended says its rate over its seconds of judging (its last session)
        kind = kind_of(r.settings)
        took = (f", {r.rate:.2f} {kind.rate_unit} over {r.judge_s:.0f} s of judging"
                if r.rate and r.judge_s and not job.active else "")
        doing = f" ({PHASE_TEXT.get(r.phase, r.phase)})" if r.phase and job.active else ""
        print(f"{r.name}\t{r.dataset_name}\t{job.detail.state_text}{doing}\t"
              f"{r.done}/{r.total or '?'} {kind.unit}{took}")
    return EXIT_OK


def cmd_import_labels(args) -> int:
    done = api.open_store(args.db).import_labels(Path(args.file), dataset=args.dataset,
                                                 aspect=args.aspect, annotator=args.annotator,
                                                 mapping=args.map)
    who = ", ".join(f"{name} ({n})" for name, n in done.attributed.items())
    print(f"{done.stored + done.already_stored} human labels for dataset '{done.dataset}', aspect "
          f"'{done.aspect}': {done.already_stored} already stored, {done.stored} added; attributed "
          f"to {who} ({'--annotator' if args.annotator else done.attributed_by})", file=sys.stderr)
    return EXIT_OK


def _ci(numbers: dict, key: str, spec: str = ".3f") -> str:
    """`` [95% CI low, high]`` of ``key`` in an agreement summary (nothing when not computed)."""
    lo_hi = numbers.get(f"{key}_ci95")
    if not lo_hi:
        return ""
    return f" [95% CI {_fmt(lo_hi[0], spec)}, {_fmt(lo_hi[1], spec)}]"


def _pct(share) -> str:
    """A share as a percentage with one decimal (``n/a`` when undefined)."""
    return "n/a" if share is None or share != share else f"{100.0 * share:.1f}%"


def cmd_agreement(args) -> int:
    run = _load_run(args)
    found = run.agreement(None if args.labels == "stored" else args.labels, args.debias,
                          n_boot=args.bootstrap, ties=args.ties, tie_band=args.tie_band)
    summary = {"run": run.name, **found.to_dict()}
    if args.json:
        print(_dumps(summary, indent=2, default=lambda o: None))
        return EXIT_OK
    source = found.labels
    llm = summary["llm_vs_human"]
    print(f"run {run.name} vs {source}: {counted(llm['n_pairs_matched'], 'pair')} judged by both "
          f"({llm['n_judgements']} human judgements, {llm['n_skipped']} skips left out)")
    tie_rule = ("the LLM never says tie" if llm["ties"] == "none" and not llm["tie_band"] else
                "LLM ties: " + ", ".join(
                    (["a verdict that flips with the order (FastChat's rule)"]
                     if llm["ties"] == "flip" else [])
                    + ([f"|p_avg - 0.5| < {llm['tie_band']:g}"] if llm["tie_band"] else [])))
    print(f"majority vote per pair; accuracy = raw agreement (share of pairs); {tie_rule}")
    for at in ("raw", "debiased"):
        m = llm[at]
        where = "tau = 0.5000" if at == "raw" else m["threshold"]
        print(f"{at:>8} ({where}): accuracy {_fmt(m['accuracy_without_ties'], '.3f')}"
              f"{_ci(m, 'accuracy_without_ties')} / kappa "
              f"{_fmt(m['kappa_without_ties'], '.3f')}{_ci(m, 'kappa_without_ties')} without ties "
              f"(n = {counted(m['n_without_ties'], 'pair')}); accuracy "
              f"{_fmt(m['accuracy_with_ties'], '.3f')}"
              f"{_ci(m, 'accuracy_with_ties')} / kappa {_fmt(m['kappa_with_ties'], '.3f')}"
              f"{_ci(m, 'kappa_with_ties')} with ties (n = {m['n_with_ties']}, "
              f"{m['n_human_ties']} human ties, {m['n_llm_ties']} LLM ties)")
        v = m.get("votes")
        if v:
            print(f"{'':>8} every vote against the LLM (FastChat's unit): agreement "
                  f"{_pct(v['accuracy_with_ties'])} with ties (n = {v['n_with_ties']} votes), "
                  f"{_pct(v['accuracy_without_ties'])} without (n = {v['n_without_ties']})")
    pb = summary["positional_bias"]
    print(f"positional bias: people picked the left text in {_fmt(pb['human_share_left'], '.3f')} of "
          f"{pb['human_n']} decisive judgements; LLM P(A) {pb['llm_p_a_raw']:.3f} raw, "
          f"{pb['llm_p_a_debiased']:.3f} at {llm['debiased']['threshold']}")
    hh = summary["human_human"]
    if hh["n_items"]:
        print(f"human vs human on {counted(hh['n_items'], 'pair')}: raw agreement "
              f"{_pct(hh['percent_agreement'])}, Krippendorff's alpha {_fmt(hh['krippendorff_alpha'], '.3f')}"
              + (f", Cohen's kappa {hh['cohen_kappa']:.3f}" if hh["cohen_kappa"] is not None else ""))
    rc = summary["ranking_correlation"]
    if rc["n_used"]:
        print(f"LLM vs human-only Bradley-Terry ranking: Spearman x100 {_fmt(rc['spearman_x100'])}"
              f"{_ci(rc, 'spearman_x100', '.1f')} (mean over {rc['n_used']} context(s))")
    for line in summary["caution"]:
        print(f"caution: {line}")
    print(f"intervals: {int(100 * summary['intervals']['level'])}% "
          f"{summary['intervals']['method']}, {summary['intervals']['n_boot']} replicates")
    print(f"kappa: {summary['kappa_chance_model']}")
    for note in llm["notes"]:
        print(f"note: {note}")
    return EXIT_OK
