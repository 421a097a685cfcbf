"""Tuning the judge's wording, named templates and the judge's reasons (``tune``, ``templates``, ``explain``)."""

from __future__ import annotations


from .. import api
from ..people.access import local_identity
from ..errors import InputError, RunCancelled, RunInterrupted
from ..runs.explanations import REASONS_LABEL, REASONS_NOTE
from ..report_text import fmt as _fmt, table as _table
from ..runs.tuning import TuningOptions
from .common import _dumps
from ..worker import EXIT_INTERRUPTED, EXIT_OK


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
            truncate_context=args.truncate_context, writer=args.writer)
        print(f"tuning '{args.name or '(default name)'}' (a plan: nothing stored): "
              f"{plan.sentence()}")
        return EXIT_OK
    tuning = store.create_tuning(
        data, aspect=args.aspect, name=args.name, model=args.model, task=args.task,
        contexts=args.contexts, holdout=args.holdout, pairs=args.pairs, rounds=args.rounds,
        per_round=args.per_round, budget=args.budget, seed=args.seed,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype,
        truncate_context=args.truncate_context, writer=args.writer, created_by=local_identity())
    # The tuning job executed in this process, as the worker process executes it
    # (``compassess job start tuning NAME`` hands it to one instead).
    job = store.job("tuning", tuning, threads=args.threads or None)
    try:
        result = job.execute(progress=job.reporter())
    except (RunCancelled, RunInterrupted):
        return EXIT_INTERRUPTED
    if args.json:
        print(_dumps(result.to_dict(), indent=2))
        return EXIT_OK
    _print_tuning(result)
    return EXIT_OK


def _print_tuning(result) -> None:
    """The table of a tuning as ``compassess tune`` prints it: per wording, fairness with its
    95% interval, the per-context A-rate, P(A) pooled, flip rate, the paired difference with T1
    and McNemar's p, agreement; then the pick and why, the paired test behind it, warnings."""
    t = result.table
    metric = next((m for m in t["agreement_metric"] if m), "")
    name = {"spearman_x100": "Spearman", "kappa": "kappa"}.get(metric, "agreement")

    def ci(value, low, high, spec):
        return (_fmt(value, spec) + (f" [{_fmt(low, spec)}, {_fmt(high, spec)}]"
                                     if low == low and high == high else ""))
    rows = []
    for r in t.itertuples():
        rows.append((f"{'*' if r.picked else ' '} {r.wording} {r.label}",
                     ci(r.fairness, r.fairness_low, r.fairness_high, ".3f"),
                     _fmt(r.a_rate, ".3f"), _fmt(r.p_a_raw, ".3f"), _fmt(r.flip_rate, ".2f"),
                     _fmt(r.saturation, ".3f"),
                     ci(r.vs_t1, r.vs_t1_low, r.vs_t1_high, "+.3f"),
                     _fmt(r.vs_t1_mcnemar_p, ".3g"),
                     ci(r.agreement_raw, r.agreement_raw_low, r.agreement_raw_high,
                        ".1f" if metric == "spearman_x100" else ".3f"),
                     ci(r.agreement_balanced, r.agreement_balanced_low,
                        r.agreement_balanced_high, ".1f" if metric == "spearman_x100" else ".3f"),
                     f"{r.decisions_tune:,}/{r.contexts_tune}"))
    if rows:
        _table(rows, head=("fairness [95%]", "A-rate", "P(A) pooled", "flip rate",
                           "|tau*-0.5|", "vs T1 [95%]", "McNemar p", f"{name} raw [95%]",
                           f"{name} tau* [95%]", "decisions/contexts"))
    print("fairness = -|A-rate - 0.5|, A-rate = mean over the tuning contexts of each context's "
          "share of decisions for the first position (ZEPO); intervals: bootstrap over contexts, "
          "then decisions within them; vs T1: fairness minus T1's on the ordered pairs both "
          "decided (paired), McNemar's exact p of equal P(A) there")
    print(f"agreement: {result.agreement_with}")
    print(f"comparisons: {result.comparisons_tune:,} on the tuning contexts, "
          f"{result.comparisons_holdout:,} held out")
    print(f"writer: {result.writer or 'none'}")
    if result.picked is not None:
        print(f"picked: {result.picked.key} ({result.picked.label}); template: "
              f"{result.template or 'not saved yet'}")
        print(f"why: {result.reason}")
        if result.vs_t1 is not None:
            print(f"paired test: {result.vs_t1.sentence()}")
        print(result.picked.text)
    for line in result.warnings:
        print(f"warning: {line}")
    if result.message:  # how it ended: "finished: ..." or "stopped early: <why>"
        print(result.message)


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
    store = api.open_store(args.db)
    if args.stored:
        found = store.get_run(args.run).explanation(args.context, args.a, args.b,
                                                    max_tokens=args.max_tokens,
                                                    debias=args.debias)
    else:   # the explanation job executed in this process, as the worker process executes it
        job = store.job("explanation", args.run, context=args.context, first=args.a,
                        second=args.b, max_tokens=args.max_tokens)
        job.execute(progress=job.reporter())
        # what it stored, with each order's verdict read at the threshold asked for
        found = store.get_run(args.run).explanation(args.context, args.a, args.b,
                                                    max_tokens=args.max_tokens,
                                                    debias=args.debias)
    if args.json:
        print(_dumps(found.to_dict(), indent=2))
        return EXIT_OK
    print(f"# {REASONS_LABEL}: {REASONS_NOTE}")
    if found.contradiction is not None:
        print(f"# ! {found.contradiction}")
    print()
    for order in found.orders:
        print(f"{found.summary(order)}; its {REASONS_LABEL}:")
        print(order.text if order.text is not None else "(no reasons stored yet)")
        print()
    if found.reverse is None:
        print("the swapped order was not compared in this run (whether the judge contradicts "
              "itself cannot be seen)")
    return EXIT_OK


