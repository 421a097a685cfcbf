"""Tuning the judge's wording, named templates and the judge's reasons (``tune``, ``templates``, ``explain``)."""

from __future__ import annotations

import json

from .. import api
from ..access import local_identity
from ..errors import InputError, RunCancelled, RunInterrupted
from ..report_text import fmt as _fmt, table as _table
from ..tuning import TuningOptions
from ..worker import EXIT_INTERRUPTED, EXIT_OK, ConsoleReporter


def cmd_tune(args) -> int:
    store = api.open_store(args.db)
    data = store.read_data(args.data, column_map=args.map)[0] if args.map else args.data
    if args.contexts is None:  # the default, or all the data has beside the held-out contexts
        n = len(store.read_data(data)[0].contexts)
        args.contexts = max(1, min(TuningOptions.contexts, n - args.holdout))
    if args.plan:  # the cost, storing nothing (not the dataset, not the tuning)
        plan = store.plan_tuning(
            data, aspect=args.aspect, model=args.model, task=args.task, contexts=args.contexts,
            holdout=args.holdout, pairs=args.pairs, rounds=args.rounds,
            per_round=args.per_round, budget=args.budget, seed=args.seed,
            batch_size=args.batch_size, device=args.device, dtype=args.dtype,
            truncate_context=args.truncate_context)
        print(f"tuning '{args.name or '(default name)'}' (a plan: nothing stored): "
              f"{plan.sentence()}")
        return EXIT_OK
    tuning = store.create_tuning(
        data, aspect=args.aspect, name=args.name, model=args.model, task=args.task,
        contexts=args.contexts, holdout=args.holdout, pairs=args.pairs, rounds=args.rounds,
        per_round=args.per_round, budget=args.budget, seed=args.seed,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype,
        truncate_context=args.truncate_context, created_by=local_identity())
    try:
        result = tuning.execute(progress=ConsoleReporter("comparisons"),
                                threads=args.threads or None)
    except (RunCancelled, RunInterrupted):
        return EXIT_INTERRUPTED
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return EXIT_OK
    _print_tuning(result)
    return EXIT_OK


def _print_tuning(result) -> None:
    """The table of a tuning as ``compassess tune`` prints it."""
    t = result.table
    metric = next((m for m in t["agreement_metric"] if m), "")
    name = {"spearman_x100": "Spearman", "kappa": "kappa"}.get(metric, "agreement")
    rows = []
    for r in t.itertuples():
        def ci(value, low, high, spec):
            return (_fmt(value, spec) + (f" [{_fmt(low, spec)}, {_fmt(high, spec)}]"
                                         if low == low and high == high else ""))
        rows.append((f"{'*' if r.picked else ' '} {r.wording} {r.label}",
                     _fmt(r.fairness, ".3f"), _fmt(r.p_a_raw, ".3f"), _fmt(r.flip_rate, ".2f"),
                     ci(r.agreement_raw, r.agreement_raw_low, r.agreement_raw_high,
                        ".1f" if metric == "spearman_x100" else ".3f"),
                     ci(r.agreement_balanced, r.agreement_balanced_low,
                        r.agreement_balanced_high, ".1f" if metric == "spearman_x100" else ".3f"),
                     f"{r.comparisons_tune:,}"))
    if rows:
        _table(rows, head=("fairness", "P(A) raw", "flip rate", f"{name} raw [95%]",
                           f"{name} tau* [95%]", "compared"))
    print(f"agreement: {result.agreement_with}")
    print(f"comparisons: {result.comparisons_tune:,} on the tuning contexts, "
          f"{result.comparisons_holdout:,} held out")
    if result.picked is not None:
        print(f"picked: {result.picked.key} ({result.picked.label}); template: "
              f"{result.template or 'not saved yet'}")
        print(result.picked.text)
    if result.message:
        print(f"stopped: {result.message}")


def cmd_templates(args) -> int:
    store = api.open_store(args.db)
    if args.delete:
        if not store.delete_template(args.delete):
            raise InputError(f"no template named '{args.delete}'")
        print(f"deleted template '{args.delete}'")
        return EXIT_OK
    frame = store.templates()
    if args.show:
        rows = frame[frame["name"] == args.show]
        if rows.empty:
            raise InputError(f"no template named '{args.show}' (see `compassess templates`)")
        print(rows.iloc[0]["text"])
        return EXIT_OK
    for r in frame.itertuples():
        print(f"{r.name}\t{r.noun}\t{r.source}")
    return EXIT_OK


def cmd_explain(args) -> int:
    run = api.open_store(args.db).get_run(args.run)
    if args.stored:
        found = run.explanation(args.context, args.a, args.b, max_tokens=args.max_tokens)
    else:
        found = run.explain(args.context, args.a, args.b, max_tokens=args.max_tokens)
    if args.json:
        print(json.dumps(found.to_dict(), indent=2))
        return EXIT_OK
    for order in found.orders:
        print(f"{order.first} in position A, {order.second} in B: p = {order.p:.3f}, the judge "
              f"answered {order.verdict}")
        print(order.text if order.text is not None else "(no reasons stored yet)")
        print()
    if found.reverse is None:
        print("the swapped order was not compared in this run")
    return EXIT_OK


