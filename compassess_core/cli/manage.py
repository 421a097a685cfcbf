"""Managing what is stored and judged together: deleting and renaming, annotation campaigns, panels of judges and the leaderboard of judges (``delete-run``, ``rename-run``, ``delete-dataset``, ``rename-dataset``, ``campaign``, ``panel``, ``judges``)."""

from __future__ import annotations

import dataclasses
import json
import sys

from .. import api
from ..data import export
from ..people.access import local_identity
from ..errors import InputError
from ..report_text import fmt as _fmt, table as _table
from ..worker import EXIT_OK
from .common import _dumps, _input_file, _nan_none, _output_file, _print_ranking
from .results import _write_report
from ..report_text import counted


# ------------------------------------------------------------------- managing what is stored

def _confirmed(what: str, preview: api.Deleted, yes: bool) -> bool:
    """Whether to delete: ``--yes``, or a "y" typed at a terminal after the preview.

    Raises
    ------
    InputError
        Without ``--yes`` when the input is not a terminal (a script must say so explicitly);
        the preview has been printed.
    """
    if yes:
        return True
    print(f"deleting {what} would delete: {preview}")
    if not sys.stdin.isatty():
        raise InputError(f"{what} was not deleted: pass --yes to delete without asking")
    try:
        answer = input("delete? [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _delete(what: str, delete, yes: bool) -> int:
    """Delete with ``delete(dry_run=...)`` once :func:`_confirmed` says so."""
    if not _confirmed(what, delete(dry_run=True), yes):
        print(f"{what} was not deleted")
        return EXIT_OK
    print(f"deleted {what}: {delete(dry_run=False)}")
    return EXIT_OK


def cmd_delete_run(args) -> int:
    store = api.open_store(args.db)
    run = store.get_run(args.run)
    return _delete(f"run '{run.name}'", lambda dry_run: store.delete_run(run.id, dry_run=dry_run),
                   args.yes)


def cmd_rename_run(args) -> int:
    run = api.open_store(args.db).get_run(args.run)
    old = run.name
    print(f"renamed run '{old}' to '{run.rename(args.to).name}'")
    return EXIT_OK


def cmd_tunings(args) -> int:
    frame = api.open_store(args.db).tunings_frame(args.dataset)
    if args.json:
        print(_dumps({"tunings": json.loads(frame.to_json(orient="records",
                                                              date_format="iso"))}, indent=2))
    else:
        print(frame.to_string(index=False) if len(frame) else "no tunings stored")
    return EXIT_OK


def cmd_delete_tuning(args) -> int:
    store = api.open_store(args.db)
    t = store.tuning(args.name)
    return _delete(f"tuning '{t.name}'",
                   lambda dry_run: store.delete_tuning(t.id, dry_run=dry_run), args.yes)


def cmd_rename_tuning(args) -> int:
    t = api.open_store(args.db).rename_tuning(args.name, args.to)
    print(f"renamed tuning '{args.name}' to '{t.name}' (its runs and template follow)")
    return EXIT_OK


def cmd_delete_dataset(args) -> int:
    store = api.open_store(args.db)
    return _delete(f"dataset '{args.dataset}'",
                   lambda dry_run: store.delete_dataset(args.dataset, dry_run=dry_run), args.yes)


def cmd_rename_dataset(args) -> int:
    api.open_store(args.db).rename_dataset(args.dataset, args.to)
    print(f"renamed dataset '{args.dataset}' to '{args.to}'")
    return EXIT_OK


def cmd_campaign(args) -> int:
    store = api.open_store(args.db)
    what = args.campaign_command
    if what == "create":
        guidelines = (_input_file(args.guidelines, "--guidelines").read_text(encoding="utf-8")
                      if args.guidelines else "")
        created_by = args.created_by or local_identity()
        c = store.create_campaign(args.name, args.dataset, args.aspect, args.annotator,
                                  overlap=args.overlap, pairs=args.pairs, n_pairs=args.n_pairs,
                                  guidelines=guidelines, created_by=created_by, seed=args.seed,
                                  run=args.run)
        print(f"created campaign '{c.name}': {counted(c.info.n_pairs, 'pair')} of dataset "
              f"'{c.dataset_name}', aspect '{c.aspect}', overlap {c.overlap}, annotators: "
              f"{', '.join(c.annotators) or '(none yet)'}")
    elif what == "assign":
        if args.remove:
            n = store.unassign(args.name, args.annotator)
            print(f"{n} annotator(s) taken off campaign '{args.name}'")
        else:
            n = store.assign(args.name, args.annotator, by=local_identity())
            print(f"{n} annotator(s) added to campaign '{args.name}'")
    elif what == "close":
        store.close(args.name)
        print(f"campaign '{args.name}' closed")
    elif what == "status":
        c = store.campaign(args.name)
        progress, agree = c.progress(), c.agreement()
        disputed = c.disagreements()
        summary = dict(
            campaign=c.name, dataset=c.dataset_name, aspect=c.aspect, status=c.status,
            overlap=c.overlap, pairs=c.info.n_pairs, completed_pairs=c.completed(),
            annotators=progress.to_dict("records"),
            agreement=dict(n_items=agree.n_items, n_annotators=agree.n_annotators,
                           percent_agreement=_nan_none(agree.percent_agreement),
                           cohen_kappa=_nan_none(agree.cohen_kappa),
                           krippendorff_alpha=_nan_none(agree.krippendorff_alpha)),
            disagreements=len(disputed),
            adjudicated=int(disputed["adjudicated"].notna().sum()) if len(disputed) else 0)
        if args.json:
            print(_dumps(summary, indent=2, default=str))
            return EXIT_OK
        print(f"campaign '{c.name}' ({c.status}): dataset '{c.dataset_name}', aspect "
              f"'{c.aspect}', {counted(c.info.n_pairs, 'pair')}, overlap {c.overlap}; "
              f"{summary['completed_pairs']} pairs fully labelled")
        if summary["annotators"]:
            _table([(str(r["annotator"]), "yes" if r["assigned"] else "no", str(r["labelled"]),
                     str(r["target"]), str(r["remaining"])) for r in summary["annotators"]],
                   head=("assigned", "labelled", "target", "remaining"))
        a = summary["agreement"]
        print(f"agreement on {a['n_items']} shared pairs: percent "
              f"{_fmt(a['percent_agreement'], '.2f')}, Cohen's kappa "
              f"{_fmt(a['cohen_kappa'], '.2f')}, Krippendorff's alpha "
              f"{_fmt(a['krippendorff_alpha'], '.2f')}")
        print(f"{summary['disagreements']} disagreement(s), {summary['adjudicated']} adjudicated")
    else:  # export
        target = _output_file(args.output)
        out = store.campaign(args.name).export(target, args.format)
        sidecar = out.with_name(export.sidecar_name(out.name))
        print(f"wrote {out}" + (f", {sidecar} (the campaign's settings)"
                                if args.format == "csv" and sidecar.exists() else ""))
    return EXIT_OK


def cmd_panel(args) -> int:
    store = api.open_store(args.db)
    what = args.panel_command
    if what == "create":
        p = store.create_panel(args.name, args.run, weights=args.weights, combine=args.combine,
                               scaling=args.scaling, created_by=local_identity())
        print(f"created panel '{p.name}' on dataset '{p.dataset.name}', aspect "
              f"'{p.panel_info.aspect}': {p.combine}, weights {p.weights_mode}")
        _table([(m.name, f"{m.weight:.3f}", str(m.n_comparisons), m.scaling) for m in p.members],
               head=("weight", "compared", "scale"))
    elif what == "list":
        frame = store.panels()
        if args.json:
            print(_dumps({"panels": json.loads(frame.to_json(orient="records"))}, indent=2))
        else:
            print(frame.to_string(index=False) if len(frame) else "no panels stored")
    elif what == "delete":
        deleted = store.delete_panel(args.name)
        if args.json:
            print(_dumps({"panel": args.name, "deleted": dataclasses.asdict(deleted),
                              "summary": str(deleted)}, indent=2))
        else:
            print(f"deleted {deleted}")
    elif what == "report":
        _write_report(args.output, lambda: store.panel(args.name).report_html(
            method=args.method, debias=args.debias, n_boot=args.bootstrap,
            baseline=args.baseline), f"panel '{args.name}'")
    elif what == "rank":
        if args.json:
            args.format = "json"
        p = store.panel(args.name)
        df = p.rankings(args.method, args.debias).drop(columns=["text", "ci_low", "ci_high"],
                                                       errors="ignore")
        fields = {**p.ranking_metadata(args.method, args.debias), "panel": p.definition()}
        header = (f"# panel '{p.name}' ({p.combine}, weights {p.weights_mode}) of "
                  f"{', '.join(m.name for m in p.members)}: {args.method} at tau = "
                  f"{fields['tau']:.3f} on {p.n_comparisons} combined comparisons")
        _print_ranking(df, args.format, p.name, fields, header, "rankings")
    else:  # evaluate
        p = store.panel(args.name)
        out = p.member_evaluations(args.method, args.debias, reference=args.reference)
        agree = p.member_agreement()
        out["agreement"] = agree.to_dict()
        out["n_split_pairs"] = int(len(p.split_pairs()))
        vs_best, vs_note = p.vs_best_member(n_boot=args.bootstrap)
        out["vs_best_member"] = None if vs_best is None else vs_best.to_dict()
        out["vs_best_member_note"] = vs_note
        if args.json:
            print(_dumps(out, indent=2, default=lambda o: None))
            return EXIT_OK
        evaluations = {p.name: out["panel"], **out["members"]}
        print(f"panel '{p.name}' ({p.combine}, weights {p.weights_mode}); reference "
              f"'{out['panel']['reference']}', {args.method} at each judge's {args.debias} tau")
        _table([(name, _fmt(e["debiased"]["spearman_x100"], ".1f"),
                 _fmt(e["raw"]["p_a"], ".2f"), _fmt(e["debiased"]["p_a"], ".2f"),
                 _fmt(e["flip_rate"], ".2f"), str(e["n_comparisons"]))
                for name, e in evaluations.items()],
               head=("Spearman", "P(A) raw", "P(A) deb.", "flip rate", "compared"))
        print(f"members' agreement: Fleiss' kappa {_fmt(agree.fleiss_kappa, '.2f')} on "
              f"{counted(agree.n_pairs_all, 'pair')} all judged; Krippendorff's alpha "
              f"{_fmt(agree.krippendorff_alpha, '.2f')} on {counted(agree.n_pairs_alpha, 'pair')}; "
              f"{counted(out['n_split_pairs'], 'pair')} split")
        print("panel vs its best member (paired, A - B on the same pairs, 95% cluster-bootstrap "
              "interval over contexts): "
              + (vs_best.sentence() if vs_best is not None else vs_note))
    return EXIT_OK


def cmd_judges(args) -> int:
    board = api.open_store(args.db).judges(args.dataset, args.aspect, reference=args.reference,
                                           n_boot=args.bootstrap)
    if args.json:
        print(_dumps(board.to_dict(), indent=2, default=str))
        return EXIT_OK
    basis = ("Cohen's kappa with the human majority (ties left out; every pair counted in both "
             "orientations, chance = either candidate with probability 1/2) beside the raw "
             "agreement, 95% cluster-bootstrap intervals (contexts, then labelled pairs; tau* "
             f"re-estimated in each) ({counted(board.n_labels, 'label')})" if board.basis == "kappa"
             else f"Spearman x100 with reference column '{board.reference}' (no human labels)")
    print(f"judges of dataset '{board.dataset}', aspect '{board.aspect}', ranked by {basis}")
    rows = []
    for r in board.frame.to_dict(orient="records"):
        rows.append((f"{r['rank']}. {r['judge']}" + (" (panel)" if r["kind"] == "panel" else ""),
                     f"{_fmt(r['kappa'], '.2f')} [{_fmt(r['kappa_low'], '.2f')}, "
                     f"{_fmt(r['kappa_high'], '.2f')}]",
                     "n/a" if r["accuracy"] != r["accuracy"] else
                     f"{100 * r['accuracy']:.1f}% [{_fmt(100 * r['accuracy_low'], '.1f')}, "
                     f"{_fmt(100 * r['accuracy_high'], '.1f')}]",
                     _fmt(r["log_loss_raw"], ".3f"), _fmt(r["spearman_x100"], ".1f"),
                     _fmt(r["p_a_raw"], ".2f"), _fmt(r["flip_rate_raw"], ".2f"),
                     _fmt(r["comparisons_per_s"], ".2f"), _fmt(r["tokens_per_comparison"], ".0f"),
                     str(r["n_comparisons"])))
    _table(rows, head=("kappa [95%]", "raw agreement [95%]", "log-loss", "Spearman", "P(A) raw",
                       "flip rate", "comp./s", "tokens/comp.", "compared"))
    _print_paired_with_best(board)
    for note in board.notes:
        print(f"note: {note}")
    return EXIT_OK


def _print_paired_with_best(board) -> None:
    """Each judge against the top one on the same labelled pairs (``JudgesLeaderboard.paired``):
    the paired difference of accuracy with people, its interval and McNemar's exact p."""
    if not board.paired:
        if board.n_labels == 0 and len(board.frame) > 1:
            print("paired tests against the best: need human labels (none for this aspect)")
        return
    print(f"paired with the best ({board.best}): accuracy with the people's decisive majority, "
          f"judge minus best, in percentage points [{100 * board.level:.0f}% cluster-bootstrap "
          "interval over contexts], McNemar's exact p, on the labelled pairs both judged:")
    for name, test in board.paired.items():
        mark = "; indistinguishable from the best" if test.indistinguishable else ""
        print(f"  {name}: {100 * test.difference:+.1f} [{100 * test.low:+.1f}, "
              f"{100 * test.high:+.1f}] pp, p = {test.mcnemar.p_value:.3g} "
              f"({counted(test.n_pairs, 'pair')} in {counted(test.n_contexts, 'context')}){mark}")
