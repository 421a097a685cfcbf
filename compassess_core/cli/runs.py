"""Starting runs (``run``, ``score``, ``worker``) and reading them back (``rank``, ``evaluate``, ``export``)."""

from __future__ import annotations

import sys

from ..runs import absolute
from .. import api
from ..errors import RunCancelled, RunInterrupted
from ..runs.options import (AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions,
                            for_aspects, run_options)
from ..runs.run_kinds import build_settings, kind_of
from ..runs.settings import GenerationOptions
from ..runs.executor import ConsoleReporter
from ..worker import EXIT_INTERRUPTED, EXIT_OK
from .common import _dumps, _load_run, _output_file, _print_ranking, _print_warnings, _warnings
from .results import _calibration_note, _rank_with_humans
from ..report_text import counted


# ------------------------------------------------------------------------------- starting runs

# The flags that fill each options object's fields: one function per object.

def _model_options(args) -> ModelOptions:
    return ModelOptions(model=args.model, device=args.device, dtype=args.dtype,
                        batch_size=args.batch_size, contexts=args.contexts,
                        truncate_context=args.truncate_context, chunk_size=args.chunk_size,
                        threads=args.threads)


def _aspects(args) -> list[str]:
    """``--aspect``'s aspects: one, or several separated by commas."""
    return [a.strip() for a in args.aspect.split(",")] if "," in args.aspect else [args.aspect]


def _run_options(args) -> list[ComparativeOptions | ScoringOptions]:
    first = run_options(args.mode, aspect=_aspects(args)[0], template=args.template,
                        task=args.task, strategy=args.strategy, budget=args.budget,
                        seed=args.seed)
    return for_aspects(first, _aspects(args))


def _absolute_options(args) -> list[AbsoluteOptions]:
    return for_aspects(AbsoluteOptions(
        aspect=_aspects(args)[0], n_levels=args.references,
        reference_set=absolute.UPLOADED if args.anchors else "generated", task=args.task,
        variant=args.variant, orders=args.orders, seed=args.seed,
        generation=GenerationOptions(max_new_tokens=args.max_new_tokens, sample=args.sample,
                                     temperature=args.temperature)), _aspects(args))


#: Options whose flag is not ``--`` and the field's name with dashes.
_FLAGS = {"n_levels": "--references", "reference_set": "--anchors"}


def _flag(field: str) -> str:
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


def _start(args, kind_options: list, anchors: str | None = None) -> int:
    """Execute a run of the options in this process (``api.Store.start``: the kind's advice
    is printed as warnings first; nothing is stored when the judge cannot load or a prompt does
    not fit it) and print its name; several options (one per aspect): one run each, judged
    together, their names printed one a line."""
    model_options = _model_options(args)
    store = api.open_store(args.db)
    dataset, _ = store.read_data(args.data, column_map=args.map)
    settings = [build_settings(dataset.name, o, model_options, text_columns=dataset.text_columns)
                for o in kind_options]
    kind = kind_of(settings[0])
    try:
        runs = store.start(dataset, settings if len(settings) > 1 else settings[0],
                           name=args.run, anchors=anchors,
                           progress=ConsoleReporter(kind.unit, kind.rate_unit),
                           chunk_size=model_options.chunk_size, threads=model_options.threads)
    except (RunCancelled, RunInterrupted):
        return EXIT_INTERRUPTED
    for run in runs if isinstance(runs, list) else [runs]:
        print(run.name)
    return EXIT_OK


def cmd_run(args) -> int:
    if args.mode == "comparative" and args.template:  # a named template of the store
        args.template = api.open_store(args.db).resolve_template(args.template)
    return _start(args, _run_options(args))


def cmd_score(args) -> int:
    return _start(args, _absolute_options(args), anchors=args.anchors)


def cmd_worker(args) -> int:
    """The run job executed in this process, as the worker process executes it (``Job.execute``;
    ``compassess job start run NAME`` hands it to one instead)."""
    job = api.open_store(args.db).job("run", list(args.run), chunk_size=args.chunk_size)
    try:
        job.execute(progress=job.reporter())
    except (RunCancelled, RunInterrupted):
        return EXIT_INTERRUPTED
    return EXIT_OK


# --------------------------------------------------------------------------- reading runs back


def cmd_rank(args) -> int:
    run = _load_run(args)
    if args.calibrate:
        run = run.calibrated()
    if args.with_humans:
        return _rank_with_humans(args, run)
    df = run.rankings(args.method, args.debias, ci=args.ci, context=args.context, score=args.score,
                      threshold=args.threshold)
    df = df.drop(columns=["text"])
    if not args.ci:
        df = df.drop(columns=["ci_low", "ci_high"], errors="ignore")
    fields = run.ranking_metadata(args.method, args.debias, score=args.score,
                                  threshold=args.threshold)
    kind = kind_of(run.info.settings)
    header = kind.ranking_header(run.name, run.results, run.settings, fields, len(df))
    if run.calibration is not None:
        header += _calibration_note(run.calibration)
    if "pass" in df.columns:  # absolute scores at a threshold
        header += (f"\n# {int(df['pass'].sum())}/{counted(len(df), 'candidate')} pass at "
                   f"{args.score} "
                   f">= {args.threshold:g}")
    _print_ranking(df, args.format, run.name, fields, header, kind.ranked_rows)
    # On stderr for csv and json, which other programs read; with the table otherwise.
    _print_warnings(_warnings(run, args.debias), None if args.format == "table" else sys.stderr)
    return EXIT_OK


def cmd_evaluate(args) -> int:
    run = _load_run(args)
    if args.calibrate:
        run = run.calibrated()
    report = run.evaluation(args.method, args.debias, reference=args.reference, score=args.score,
                            threshold=args.threshold)
    partial = run.partial_note
    if args.json:
        out = report.to_dict()
        out.setdefault("run", run.name)
        out["partial_run"] = partial
        if run.calibration is not None:
            out["calibration"] = run.calibration
        print(_dumps(out, indent=2, default=lambda o: None))
    else:
        kind_of(run.info.settings).print_evaluation(report, sys.stdout)
        if run.calibration is not None:
            print(_calibration_note(run.calibration).lstrip("; "))
        for line in [partial, *getattr(report, "warnings", [])]:
            if line:
                print(f"warning: {line}")
    return EXIT_OK


def cmd_export(args) -> int:
    _output_file(args.output)
    run = _load_run(args)
    if args.calibrate:
        run = run.calibrated()
    paths = run.export(args.output, args.what, format=args.format, method=args.method,
                       debias=args.debias, ci=args.ci, score=args.score, threshold=args.threshold)
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    if args.what == "rankings":
        _print_warnings(_warnings(run, args.debias), sys.stderr)
    return EXIT_OK
