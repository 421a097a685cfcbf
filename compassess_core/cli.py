"""``compassess`` command line: run, rank, evaluate, export (and fetch-model, datasets, runs, worker).

Exit codes: 0 ok, 2 bad input (message on stderr naming the problem), 1 other failure,
130 interrupted (everything computed so far is stored; the same command resumes).
The CLI reaches the store through ``sink.open_store`` (an entry point), never by importing ``db``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

from . import __version__
from .errors import CompAssessError, InputError, RunCancelled

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="SQLAlchemy URL (default: $COMPASSESS_DATABASE_URL or the SQLite file in $COMPASSESS_HOME)")


def build_parser() -> argparse.ArgumentParser:
    from .ranking import METHODS
    from .selection import STRATEGIES

    parser = argparse.ArgumentParser(prog="compassess", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"compassess {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="judge pairs of candidates with an LLM and store every comparison")
    r.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    r.add_argument("--aspect", required=True, help="preset (coherence, consistency, fluency, relevance, "
                   "engagingness, naturalness, continuity, understandable, grammar, overall) or your own adjective")
    r.add_argument("--mode", default="comparative", choices=["comparative", "scoring"],
                   help="comparative: pairwise judgements (default); scoring: the paper's prompt-scoring "
                   "baseline, a 1-10 score per candidate from the score-token distribution (argmax and "
                   "G-Eval expected score)")
    r.add_argument("--template", default=None, help="t1, t2 or a file holding a template with {context} {a} {b} "
                   "{aspect} (default t1); with --mode scoring: s1 or s2 (default s1)")
    r.add_argument("--task", default="auto", choices=["auto", "summary", "dialogue"],
                   help="wording of t1/t2: Summary/passage or Response/conversation (auto: from the aspect)")
    r.add_argument("--model", default=None, help="a .gguf file, a local model folder or a hub id (default: bundled SmolLM2-135M-Instruct)")
    r.add_argument("--strategy", default="full", choices=list(STRATEGIES))
    r.add_argument("--budget", type=int, default=None, help="comparisons per context (random, no-repeat, symmetric)")
    r.add_argument("--contexts", type=int, default=None, help="only the first N contexts")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--batch-size", type=int, default=8)
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    r.add_argument("--run", default=None, metavar="NAME", help="run name (default: derived from the settings); an existing name resumes")
    r.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help="prompts per judge call and per store write (default 128): smaller loses less "
                        "on a crash, larger keeps the judge's prefix cache warm longer")
    r.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the model (default: all cores; 1 can be faster on a busy machine)")
    _db_arg(r)

    _score_parser(sub)

    k = sub.add_parser("rank", help="rank the candidates of a run")
    k.add_argument("--run", required=True, metavar="NAME")
    k.add_argument("--method", default="win-ratio", choices=list(METHODS))
    k.add_argument("--debias", default="none", metavar="none|balanced|TAU")
    k.add_argument("--format", default="table", choices=["table", "csv", "json"])
    k.add_argument("--context", default=None, metavar="ID", help="only this context")
    k.add_argument("--ci", action="store_true", help="add bootstrap 95%% intervals")
    _absolute_args(k)
    _db_arg(k)

    e = sub.add_parser("evaluate", help="correlation with reference scores, positional bias, flip rate")
    e.add_argument("--run", required=True, metavar="NAME")
    e.add_argument("--reference", default=None, metavar="COLUMN", help="reference-score column (default: the aspect's column if present)")
    e.add_argument("--method", default="win-ratio", choices=list(METHODS))
    e.add_argument("--debias", default="balanced", metavar="balanced|TAU")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    _absolute_args(e)
    _db_arg(e)

    x = sub.add_parser("export", help="write rankings or all comparisons with the run's settings")
    x.add_argument("--run", required=True, metavar="NAME")
    x.add_argument("--what", required=True, choices=["rankings", "comparisons"])
    x.add_argument("--format", required=True, choices=["csv", "json", "parquet"])
    x.add_argument("-o", "--output", required=True, metavar="FILE")
    x.add_argument("--method", default="win-ratio", choices=list(METHODS))
    x.add_argument("--debias", default="none", metavar="none|balanced|TAU")
    _absolute_args(x)
    _db_arg(x)

    f = sub.add_parser("fetch-model", help="download the bundled default model into the cache (offline afterwards)")
    f.add_argument("--print-path", action="store_true")

    d = sub.add_parser("datasets", help="list stored datasets")
    _db_arg(d)
    u = sub.add_parser("runs", help="list stored runs")
    u.add_argument("--json", action="store_true")
    _db_arg(u)

    il = sub.add_parser("import-labels", help="store human A/B labels from a CSV/JSONL file "
                        "(context_id, candidate_a, candidate_b, winner[, annotator])")
    il.add_argument("file", metavar="FILE")
    il.add_argument("--dataset", required=True, metavar="NAME", help="stored dataset the labels refer to")
    il.add_argument("--aspect", default="overall", help="aspect the people judged (default: overall)")
    _db_arg(il)

    ag = sub.add_parser("agreement", help="LLM vs human labels: accuracy, Cohen's kappa, raw and debiased")
    ag.add_argument("--run", required=True, metavar="NAME")
    ag.add_argument("--labels", default="stored", metavar="FILE_OR_STORED",
                    help="a labels file, or 'stored' for the labels in the store (same dataset and aspect)")
    ag.add_argument("--debias", default="balanced", metavar="balanced|TAU")
    ag.add_argument("--json", action="store_true")
    _db_arg(ag)

    w = sub.add_parser("worker", help="execute (or resume) a run stored in the database from its settings")
    w.add_argument("--run", required=True, metavar="NAME")
    _db_arg(w)
    return parser


# ---------------------------------------------------------------------------------------- helpers

def _open_store(url):
    from .sink import open_store
    return open_store(url)


def _progress_printer(stream=None, *, unit: str = "comparisons", rate_unit: str | None = None):
    """A progress callback printing ``done/total UNIT (x%) | rate RATE_UNIT | ETA``.

    ``unit`` names what is counted ("comparisons" for pairwise runs, "candidates scored" for
    prompt-scoring runs); ``rate_unit`` defaults to ``comparisons/s``-style from its first word.
    """
    stream = stream or sys.stderr  # looked up now: a caller (or pytest) may have replaced it
    rate_unit = rate_unit or f"{unit.split()[0]}/s"
    tty = stream.isatty()
    last = {"t": 0.0}

    def show(pr) -> None:
        now = time.monotonic()
        final = pr.done >= pr.total
        if not tty and not final and now - last["t"] < 5:
            return
        last["t"] = now
        width = 30
        filled = int(width * pr.fraction)
        eta = "--:--" if pr.eta_s is None else time.strftime("%H:%M:%S", time.gmtime(pr.eta_s))
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {pr.done}/{pr.total} {unit} "
                f"({100 * pr.fraction:.0f}%) | {pr.rate:.2f} {rate_unit} | ETA {eta}"
                + (f" | {pr.cached} from cache" if pr.cached else ""))
        stream.write(("\r" + line) if tty else (line + "\n"))
        if tty and final:
            stream.write("\n")
        stream.flush()
    return show


def _resolve_dataset(store, data: str):
    from .data import load_candidates
    path = Path(data)
    if path.exists():
        dataset = load_candidates(path)
        dataset_id = store.save_dataset(dataset)
        return store.load_dataset(dataset_id), dataset_id
    try:
        ds = store.load_dataset(data)
    except CompAssessError:
        raise InputError(f"'{data}' is neither a file nor a stored dataset "
                         "(see `compassess datasets`)") from None
    info = [d for d in store.list_datasets() if d.name == ds.name]
    return ds, info[0].id


def _check_run_options(args) -> None:
    """Options every model-running command shares (run, run --mode scoring, score)."""
    if args.batch_size < 1:
        raise InputError("--batch-size must be at least 1")
    if args.threads < 0:
        raise InputError("--threads must be 0 (all cores) or more")
    if args.threads:
        os.environ["COMPASSESS_THREADS"] = str(args.threads)
    if args.contexts is not None and args.contexts < 1:
        raise InputError("--contexts must be at least 1")
    if getattr(args, "chunk_size", None) is not None and args.chunk_size < 1:
        raise InputError("--chunk-size must be at least 1")


def _check_model_key(store, run, settings, judge, verb: str = "judged"):
    """Fill in the judge identity of a run created before its model was loaded (the app does
    that), and refuse to resume a run with a model whose files changed since it started."""
    if not settings.model_key:
        store.set_run_model_key(run.id, judge.model_key)
        return settings.__class__.from_dict({**settings.to_dict(), "model_key": judge.model_key})
    if settings.model_key != judge.model_key:
        raise InputError(f"run '{run.name}' was {verb} by {settings.model_key}, but '{settings.model}' "
                         f"now loads as {judge.model_key}: the model changed; start a new run")
    return settings


def _load_worker_judge(store, run, settings, loader=None, verb: str = "judged"):
    """The judge (or, with ``loader=load_scorer``, the scorer) of a stored run, loaded from its
    settings; a model that fails to load or no longer matches the run's judge identity marks the
    run failed (the app shows the message)."""
    if loader is None:
        from .judges import load_judge as loader
    try:
        model = None if settings.model.startswith("bundled:") else settings.model
        judge = loader(model, device=settings.device, dtype=settings.dtype,
                       batch_size=settings.batch_size)
    except BaseException as e:
        store.set_run_status(run.id, "failed", message=f"could not load the model: {e}")
        raise
    try:
        return _check_model_key(store, run, settings, judge, verb), judge
    except InputError as e:
        store.set_run_status(run.id, "failed", message=str(e))
        raise


def _execute(store, dataset, settings, run_id: int, judge, chunk_prompts: int | None = None) -> int:
    from .runner import DEFAULT_CHUNK_PROMPTS, run_comparisons

    def on_term(signum, frame):  # turn SIGTERM into the same clean stop as Ctrl-C
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_term)
    try:
        summary = run_comparisons(dataset, settings, judge, store, run_id, progress=_progress_printer(),
                                  chunk_prompts=chunk_prompts or DEFAULT_CHUNK_PROMPTS)
    except (KeyboardInterrupt, RunCancelled):
        print("\nstopped: every comparison computed so far is stored; run the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old)
    print(f"done: {summary.total} comparisons in the run ({summary.already_stored} already stored, "
          f"{summary.computed} computed, {summary.cached} from cache) in {summary.elapsed_s:.1f} s",
          file=sys.stderr)
    return EXIT_OK


# ---------------------------------------------------------------------------------------- commands

def cmd_run(args) -> int:
    from .judges import load_judge
    from .prompts import Aspect, resolve_template
    from .settings import RunSettings

    if args.mode == "scoring":
        return _cmd_run_scoring(args)
    args.template = args.template or "t1"
    _check_run_options(args)
    aspect = Aspect.from_name(args.aspect)
    template = resolve_template(args.template, aspect, args.task)
    if args.strategy != "full" and args.budget is None:
        raise InputError(f"--strategy {args.strategy} needs --budget R (comparisons per context)")
    store = _open_store(args.db)
    dataset, dataset_id = _resolve_dataset(store, args.data)
    _warn_small_budget(args, dataset)
    judge = load_judge(args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    settings = RunSettings(
        dataset=dataset.name, aspect=aspect.name, aspect_adjective=aspect.adjective,
        template_name=template.name, template_text=template.text, primer=template.primer,
        model=args.model or "bundled:SmolLM2-135M-Instruct", model_key=judge.model_key,
        label_words=tuple(judge.label_words), strategy=args.strategy,
        budget=None if args.strategy == "full" else args.budget, contexts=args.contexts,
        seed=args.seed, batch_size=args.batch_size, device=args.device, dtype=args.dtype)
    name = args.run or settings.default_run_name()
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    run = store.get_run(run_id)
    _check_model_key(store, run, RunSettings.from_dict(run.settings), judge)
    print(f"run '{name}' on dataset '{dataset.name}' with {judge.description}", file=sys.stderr)
    code = _execute(store, dataset, settings, run_id, judge, args.chunk_size)
    if code == EXIT_OK:
        print(name)
    return code


def _warn_small_budget(args, dataset) -> None:
    """Below one comparison per candidate some candidates are never compared (and poe's greedy
    variance criterion builds long chains there: docs/results.md, section 2)."""
    if args.strategy == "full":
        return
    contexts = dataset.contexts[:args.contexts] if args.contexts else dataset.contexts
    largest = max((len(c.candidates) for c in contexts), default=0)
    if args.budget < largest:
        print(f"warning: --budget {args.budget} is below one comparison per candidate ({largest} in the "
              f"largest context): some candidates cannot be ranked; at least {2 * largest} is "
              "recommended", file=sys.stderr)


def cmd_worker(args) -> int:
    from .settings import RunSettings

    store = _open_store(args.db)
    run = store.get_run(args.run)
    if run.settings.get("kind") == "absolute":
        return _absolute_worker(store, run)
    settings = RunSettings.from_dict(run.settings)
    dataset = store.load_dataset(run.dataset_id)
    if settings.kind == "scoring":
        return _worker_scoring(store, run, settings, dataset)
    settings, judge = _load_worker_judge(store, run, settings)
    return _execute(store, dataset, settings, run.id, judge)


def _load_run(store, name):
    from .settings import RunSettings
    run = store.get_run(name)
    return run, RunSettings.from_dict(run.settings), store.load_dataset(run.dataset_id)


def cmd_rank(args) -> int:
    from .analysis import rank_contexts, resolve_tau
    store = _open_store(args.db)
    run, settings, dataset = _load_run(store, args.run)
    if settings.kind == "absolute":
        return _absolute_rank(args, store, run, settings, dataset)
    if settings.kind == "scoring":
        return _rank_scoring(args, store, run, dataset)
    table = store.comparison_table(run.id)
    if args.context:
        try:
            dataset.context(args.context)
        except KeyError:
            raise InputError(f"context '{args.context}' is not in dataset '{dataset.name}'") from None
        table = table.for_context(args.context)
    tau = resolve_tau(args.debias, table.p)
    df = rank_contexts(dataset, table, method=args.method, tau=tau, with_ci=args.ci)
    df = df.drop(columns=["text"])
    if not args.ci:
        df = df.drop(columns=["ci_low", "ci_high"])
    if args.format == "csv":
        from .export import neutralise_frame
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif args.format == "json":
        print(json.dumps({"run": run.name, "method": args.method, "tau": tau,
                          "rankings": json.loads(df.to_json(orient="records"))}, indent=2))
    else:
        print(f"# run {run.name}: {args.method} scores at tau = {tau:.4f} "
              f"({len(table)} comparisons)")
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return EXIT_OK


def _fmt(v, spec=".1f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, spec)


def cmd_evaluate(args) -> int:
    from .analysis import evaluate_run
    store = _open_store(args.db)
    run, settings, dataset = _load_run(store, args.run)
    if settings.kind == "absolute":
        return _absolute_evaluate(args, store, run, settings, dataset)
    reference = args.reference
    if reference is None and settings.aspect in dataset.score_columns:
        reference = settings.aspect
    if settings.kind == "scoring":
        return _evaluate_scoring(args, store, run, dataset, reference)
    table = store.comparison_table(run.id)
    report = evaluate_run(dataset, table, run=run.name, method=args.method, reference=reference,
                          debias=args.debias)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=lambda o: None))
        return EXIT_OK
    r, d = report.raw, report.debiased
    print(f"run {report.run}: {report.n_comparisons} comparisons over {report.n_contexts} contexts; "
          f"ranking method {report.method}; reference column: {report.reference or 'none'}")
    rows = [
        ("threshold tau", _fmt(r.tau, ".4f"), _fmt(d.tau, ".4f")),
        ("Spearman x100 (per-context mean)", _fmt(r.spearman_x100), _fmt(d.spearman_x100)),
        ("Kendall x100 (per-context mean)", _fmt(r.kendall_x100), _fmt(d.kendall_x100)),
        ("system-level Spearman x100", _fmt(r.system_spearman_x100), _fmt(d.system_spearman_x100)),
        ("pooled Spearman x100 (all candidates)", _fmt(r.pooled_spearman_x100), _fmt(d.pooled_spearman_x100)),
        ("pairwise accuracy (pairs with different reference)", _fmt(r.pairwise_accuracy, ".3f"), _fmt(d.pairwise_accuracy, ".3f")),
        ("P(A) first position wins", _fmt(r.p_a, ".3f"), _fmt(d.p_a, ".3f")),
        ("P(B) second position wins", _fmt(r.p_b, ".3f"), _fmt(d.p_b, ".3f")),
    ]
    w = max(len(x[0]) for x in rows)
    print(f"{'':{w}}  {'raw':>10}  {'debiased':>10}")
    for name, a, b in rows:
        print(f"{name:{w}}  {a:>10}  {b:>10}")
    print(f"balancing threshold tau* = {report.balanced_tau:.4f}; flip rate (verdict changes with order, "
          f"tau = 0.5) = {_fmt(report.flip_rate, '.3f')} over {report.n_pairs_both_orders} pairs judged in both orders")
    if r.contexts_skipped:
        print(f"{r.contexts_skipped} context(s) skipped: all reference scores equal")
    for note in report.notes:
        print(f"note: {note}")
    return EXIT_OK


def cmd_export(args) -> int:
    from .analysis import rank_contexts, resolve_tau
    from .export import write_table
    store = _open_store(args.db)
    run, settings, dataset = _load_run(store, args.run)
    if settings.kind == "absolute":
        return _absolute_export(args, store, run, settings, dataset)
    table = store.comparison_table(run.id)
    meta = {"run": run.name, "dataset": dataset.name, "settings": run.settings,
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "compassess_version": __version__}
    if settings.kind == "scoring":
        from .scoring import rank_scored
        st = store.score_table(run.id)
        if args.what == "rankings":
            df = rank_scored(dataset, st)
            meta.update(method="g-eval expected score")
        else:
            df = rank_scored(dataset, st).drop(columns=["rank", "score"])
    elif args.what == "rankings":
        tau = resolve_tau(args.debias, table.p)
        df = rank_contexts(dataset, table, method=args.method, tau=tau, with_ci=True)
        meta.update(method=args.method, tau=tau, debias=args.debias)
    else:
        df = store.comparisons_frame(run.id)
    paths = write_table(df, args.output, args.format, what=args.what, metadata=meta)
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return EXIT_OK


def cmd_fetch_model(args) -> int:
    from .models import default_model_path, fetch_default_model
    path = default_model_path()
    if not path.exists():
        path = fetch_default_model()
    print(path if args.print_path else f"bundled model ready: {path}")
    return EXIT_OK


def cmd_datasets(args) -> int:
    store = _open_store(args.db)
    for d in store.list_datasets():
        print(f"{d.name}\t{d.n_contexts} contexts\t{d.n_candidates} candidates\t"
              f"scores: {', '.join(d.score_columns) or '-'}")
    return EXIT_OK


def cmd_runs(args) -> int:
    store = _open_store(args.db)
    runs = store.list_runs()
    if args.json:
        print(json.dumps([dict(name=r.name, dataset=r.dataset_name, status=r.status,
                               kind=r.settings.get("kind", "comparative"), done=r.done,
                               total=r.total, n_comparisons=r.n_comparisons) for r in runs], indent=2))
        return EXIT_OK
    # `done` is the run loop's own count, right for every kind (comparisons, prompt scores,
    # absolute judgements); n_comparisons counts the pairwise table only.
    from .settings import run_unit
    for r in runs:
        print(f"{r.name}\t{r.dataset_name}\t{r.status}\t{r.done}/{r.total or '?'} {run_unit(r.settings)}")
    return EXIT_OK


def _dataset_id(store, name: str) -> int:
    for d in store.list_datasets():
        if d.name == name or str(d.id) == name:
            return d.id
    raise InputError(f"no stored dataset named '{name}' (see `compassess datasets`)")


def cmd_import_labels(args) -> int:
    from .labels import load_human_labels, store_rows
    store = _open_store(args.db)
    dataset_id = _dataset_id(store, args.dataset)
    dataset = store.load_dataset(dataset_id)
    labels = load_human_labels(Path(args.file), dataset)
    n = store.add_human_judgements(dataset_id, store_rows(labels, aspect=args.aspect))
    print(f"stored {n} human labels for dataset '{dataset.name}', aspect '{args.aspect}'", file=sys.stderr)
    return EXIT_OK


def cmd_agreement(args) -> int:
    from .agreement import human_table_from_labels, agreement_summary
    from .analysis import resolve_tau
    from .labels import load_human_labels
    store = _open_store(args.db)
    run, settings, dataset = _load_run(store, args.run)
    table = store.comparison_table(run.id)
    if args.labels == "stored":
        human = store.human_judgements_frame(run.dataset_id, settings.aspect)
        source = f"stored labels for aspect '{settings.aspect}'"
    else:
        human = human_table_from_labels(load_human_labels(Path(args.labels), dataset))
        source = args.labels
    if len(human) == 0:
        raise InputError(f"no human labels for dataset '{dataset.name}' and aspect '{settings.aspect}'; "
                         "import some with `compassess import-labels` or annotate in the app")
    tau = resolve_tau(args.debias, table.p)
    summary = agreement_summary(human, table, dataset, tau)
    summary = {"run": run.name, "labels": source, **summary}
    if args.json:
        print(json.dumps(summary, indent=2, default=lambda o: None))
        return EXIT_OK
    llm = summary["llm_vs_human"]
    print(f"run {run.name} vs {source}: {llm['n_pairs_matched']} pairs judged by both "
          f"({llm['n_judgements']} human judgements, {llm['n_skipped']} skips left out)")
    for at in ("raw", "debiased"):
        m = llm[at]
        print(f"{at:>8} (tau = {m['tau']:.4f}): accuracy {_fmt(m['accuracy_without_ties'], '.3f')} / "
              f"Cohen's kappa {_fmt(m['kappa_without_ties'], '.3f')} without ties (n = {m['n_without_ties']}); "
              f"accuracy {_fmt(m['accuracy_with_ties'], '.3f')} / kappa {_fmt(m['kappa_with_ties'], '.3f')} "
              f"with ties (n = {m['n_with_ties']}, {m['n_human_ties']} human ties)")
    pb = summary["positional_bias"]
    print(f"positional bias: people picked the left text in {_fmt(pb['human_share_left'], '.3f')} of "
          f"{pb['human_n']} decisive judgements; LLM P(A) {pb['llm_p_a_raw']:.3f} raw, "
          f"{pb['llm_p_a_debiased']:.3f} at tau")
    hh = summary["human_human"]
    if hh["n_items"]:
        print(f"human vs human on {hh['n_items']} pairs: agreement {_fmt(hh['percent_agreement'], '.3f')}, "
              f"Krippendorff's alpha {_fmt(hh['krippendorff_alpha'], '.3f')}"
              + (f", Cohen's kappa {hh['cohen_kappa']:.3f}" if hh["cohen_kappa"] is not None else ""))
    rc = summary["ranking_correlation"]
    if rc["n_used"]:
        print(f"LLM vs human-only Bradley-Terry ranking: Spearman x100 {_fmt(rc['spearman_x100'])} "
              f"(mean over {rc['n_used']} contexts)")
    for note in llm["notes"]:
        print(f"note: {note}")
    return EXIT_OK


# ------------------------------------------------------------------ issue 6: prompt-scoring runs

def _cmd_run_scoring(args) -> int:
    from .prompts import Aspect
    from .scoring import load_scorer, scoring_settings, scoring_template

    _check_run_options(args)
    if args.strategy != "full" or args.budget is not None:
        raise InputError("--mode scoring scores every candidate once: --strategy and --budget do not apply")
    aspect = Aspect.from_name(args.aspect)
    template = scoring_template(args.template or "s1", aspect, args.task)
    store = _open_store(args.db)
    dataset, dataset_id = _resolve_dataset(store, args.data)
    scorer = load_scorer(args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    settings = scoring_settings(dataset.name, aspect, template,
                                args.model or "bundled:SmolLM2-135M-Instruct", scorer.model_key,
                                contexts=args.contexts, batch_size=args.batch_size,
                                device=args.device, dtype=args.dtype)
    name = args.run or settings.default_run_name()
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    print(f"scoring run '{name}' on dataset '{dataset.name}' with {scorer.description}", file=sys.stderr)
    code = _execute_scoring(store, dataset, settings, run_id, scorer)
    if code == EXIT_OK:
        print(name)
    return code


def _execute_scoring(store, dataset, settings, run_id: int, scorer) -> int:
    from .scoring import run_scoring

    def on_term(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_term)
    try:
        summary = run_scoring(dataset, settings, scorer, store, run_id,
                              progress=_progress_printer(unit="candidates scored"))
    except (KeyboardInterrupt, RunCancelled):
        print("\nstopped: every score computed so far is stored; run the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old)
    print(f"done: {summary.total} candidates in the run ({summary.already_stored} already stored, "
          f"{summary.computed} computed, {summary.cached} from cache) in {summary.elapsed_s:.1f} s",
          file=sys.stderr)
    return EXIT_OK


def _worker_scoring(store, run, settings, dataset) -> int:
    from .scoring import load_scorer
    settings, scorer = _load_worker_judge(store, run, settings, load_scorer, "scored")
    return _execute_scoring(store, dataset, settings, run.id, scorer)


def _rank_scoring(args, store, run, dataset) -> int:
    from .scoring import rank_scored
    df = rank_scored(dataset, store.score_table(run.id))
    if args.context:
        if args.context not in {c.context_id for c in dataset.contexts}:
            raise InputError(f"context '{args.context}' is not in dataset '{dataset.name}'")
        df = df[df["context_id"] == args.context]
    df = df.drop(columns=["text"])
    if args.format == "csv":
        from .export import neutralise_frame
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif args.format == "json":
        print(json.dumps({"run": run.name, "method": "g-eval expected score",
                          "rankings": json.loads(df.to_json(orient="records"))}, indent=2))
    else:
        print(f"# scoring run {run.name}: ranked by the G-Eval expected score ({len(df)} candidates)")
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return EXIT_OK


def _evaluate_scoring(args, store, run, dataset, reference) -> int:
    from .scoring import evaluate_scores
    report = {"run": run.name, "kind": "scoring",
              **evaluate_scores(dataset, store.score_table(run.id), reference)}
    if args.json:
        print(json.dumps(report, indent=2, default=lambda o: None))
        return EXIT_OK
    print(f"scoring run {run.name}: {report['n_scored']} candidates scored; reference column: "
          f"{reference or 'none'}; mean mass on the scores 1-10: {_fmt(report['mean_label_mass'], '.3f')}")
    for label, name in (("prompt_scoring", "prompt scoring (argmax)"), ("g_eval", "G-Eval (expected)")):
        if label in report:
            r = report[label]
            print(f"{name}: Spearman x100 {_fmt(r['spearman_x100'])} (per-context mean over "
                  f"{r['contexts_used']} contexts), system-level {_fmt(r['system_spearman_x100'])}, "
                  f"pooled {_fmt(r['pooled_spearman_x100'])}")
    return EXIT_OK


# ------------------------------------------------------------------ issue 7: absolute scores

def _score_parser(sub) -> None:
    from .absolute import DEFAULT_LEVELS, ORDERS, TASKS, VARIANTS
    s = sub.add_parser("score", help="absolute score per candidate: compare it with synthetic "
                       "references of quality 1..N (thresholdable)")
    s.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    s.add_argument("--aspect", required=True, help="preset (coherence, ...) or your own adjective")
    s.add_argument("--references", type=int, default=DEFAULT_LEVELS, metavar="N",
                   help=f"reference quality levels 1..N (default {DEFAULT_LEVELS})")
    s.add_argument("--anchors", default=None, metavar="CSV",
                   help="your own reference texts (columns context_id, level, text) instead of generated ones")
    s.add_argument("--task", default="auto", choices=["auto", *TASKS],
                   help="wording: summary/passage, dialogue response/conversation or story/prompt")
    s.add_argument("--variant", default="bws", choices=list(VARIANTS),
                   help="bws: read P(Better/Worse/Similar); yes-no: the paper's Yes/No ablation")
    s.add_argument("--orders", default="both", choices=list(ORDERS),
                   help="judge target-first, reference-first or both (averaged: removes positional bias)")
    s.add_argument("--model", default=None, help="a .gguf file, a local model folder or a hub id (default: bundled SmolLM2-135M-Instruct)")
    s.add_argument("--max-new-tokens", type=int, default=96, help="length limit of generated references")
    s.add_argument("--sample", action="store_true", help="sample references (default greedy); seeded by --seed")
    s.add_argument("--temperature", type=float, default=0.7)
    s.add_argument("--contexts", type=int, default=None, help="only the first N contexts")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--batch-size", type=int, default=8)
    s.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the model (default: all cores; 1 can be faster on a busy machine)")
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    s.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    s.add_argument("--run", default=None, metavar="NAME", help="run name (default: derived from the settings); an existing name resumes")
    _db_arg(s)


def _absolute_args(p) -> None:
    p.add_argument("--score", default="level", choices=["level", "score"],
                   help="absolute runs: 'level' (calibrated, 1..N) or 'score' (the paper's s)")
    p.add_argument("--threshold", type=float, default=None,
                   help="absolute runs: pass/fail at score >= THRESHOLD")


def _run_absolute(store, dataset, dataset_id, settings, run_id, judge) -> int:
    from .absolute import execute

    def on_term(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_term)
    try:
        summary = execute(store, dataset, dataset_id, settings, run_id, judge,
                          progress=_progress_printer(),
                          on_reference=lambda cid, n: n and print(
                              f"wrote {n} reference(s) for context {cid}", file=sys.stderr))
    except (KeyboardInterrupt, RunCancelled):
        print("\nstopped: everything computed so far is stored; run the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old)
    print(f"done: {summary.total} comparisons with references ({summary.already_stored} already "
          f"stored, {summary.computed} computed, {summary.cached} from cache) in "
          f"{summary.elapsed_s:.1f} s", file=sys.stderr)
    return EXIT_OK


def cmd_score(args) -> int:
    from .absolute import UPLOADED, absolute_settings, parse_anchor_file
    from .judges import load_judge
    from .prompts import Aspect

    _check_run_options(args)
    aspect = Aspect.from_name(args.aspect)
    anchors = parse_anchor_file(args.anchors, n_levels=args.references) if args.anchors else None
    store = _open_store(args.db)
    dataset, dataset_id = _resolve_dataset(store, args.data)
    judge = load_judge(args.model, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    settings = absolute_settings(
        dataset.name, aspect, model=args.model or "bundled:SmolLM2-135M-Instruct",
        model_key=judge.model_key, n_levels=args.references, task=args.task, variant=args.variant,
        orders=args.orders, reference_set=UPLOADED if anchors else "generated",
        max_new_tokens=args.max_new_tokens, sample=args.sample, temperature=args.temperature,
        contexts=args.contexts, seed=args.seed, batch_size=args.batch_size, device=args.device,
        dtype=args.dtype)
    if anchors:
        n = store.save_references(dataset_id, aspect.name, UPLOADED, anchors)
        print(f"stored {n} anchor text(s) from {args.anchors}", file=sys.stderr)
    name = args.run or settings.default_run_name()
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    print(f"absolute run '{name}' on dataset '{dataset.name}' with {judge.description}", file=sys.stderr)
    code = _run_absolute(store, dataset, dataset_id, settings, run_id, judge)
    if code == EXIT_OK:
        print(name)
    return code


def _absolute_worker(store, run) -> int:
    from .settings import RunSettings
    settings = RunSettings.from_dict(run.settings)
    dataset = store.load_dataset(run.dataset_id)
    settings, judge = _load_worker_judge(store, run, settings)
    return _run_absolute(store, dataset, run.dataset_id, settings, run.id, judge)


def _absolute_scores(args, store, run, settings, dataset):
    from .absolute import ORDERS, score_table
    frame = store.absolute_frame(run.id)
    table = score_table(dataset, frame, int(settings.extra.get("n_levels", 5)),
                        ORDERS[settings.extra.get("orders", "both")])
    return frame, table


def _ranked_scores(table, score: str, threshold):
    from .absolute import passes
    out = table.sort_values(["context_id", score], ascending=[True, False], kind="stable",
                            na_position="last")
    out.insert(1, "rank", out.groupby("context_id", sort=False).cumcount() + 1)
    if threshold is not None:
        out["pass"] = passes(out[score].to_numpy(), threshold)
    return out


def _absolute_rank(args, store, run, settings, dataset) -> int:
    frame, table = _absolute_scores(args, store, run, settings, dataset)
    if args.context:
        if args.context not in {c.context_id for c in dataset.contexts}:
            raise InputError(f"context '{args.context}' is not in dataset '{dataset.name}'")
        table = table[table["context_id"] == args.context]
    df = _ranked_scores(table, args.score, args.threshold).drop(columns=["text"])
    if args.format == "csv":
        from .export import neutralise_frame
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif args.format == "json":
        print(json.dumps({"run": run.name, "score": args.score, "threshold": args.threshold,
                          "scores": json.loads(df.to_json(orient="records"))}, indent=2))
    else:
        n_levels = settings.extra.get("n_levels", 5)
        print(f"# run {run.name}: absolute scores ('{args.score}'; level = calibrated 1..{n_levels}, "
              f"score = the paper's s) from {len(frame)} comparisons with references")
        if args.threshold is not None:
            print(f"# {int(df['pass'].sum())}/{len(df)} candidates pass at {args.score} >= {args.threshold:g}")
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return EXIT_OK


def _absolute_evaluate(args, store, run, settings, dataset) -> int:
    from .absolute import evaluate_scores
    frame, table = _absolute_scores(args, store, run, settings, dataset)
    reference = args.reference
    if reference is None and settings.aspect in dataset.score_columns:
        reference = settings.aspect
    ev = evaluate_scores(table, frame, score=args.score, reference=reference, threshold=args.threshold)
    if args.json:
        print(json.dumps({"run": run.name, **ev.to_dict()}, indent=2, default=lambda o: None))
        return EXIT_OK
    print(f"run {run.name}: absolute scores ('{ev.score}') for {ev.n_scored}/{ev.n_candidates} "
          f"candidates from {len(frame)} comparisons; reference column: {reference or 'none'}")
    rows = [("sample-level Spearman x100 (per-context mean)", _fmt(ev.sample_spearman_x100)),
            ("sample-level Kendall x100 (per-context mean)", _fmt(ev.sample_kendall_x100)),
            ("system-level Spearman x100 (per-system means)", _fmt(ev.system_spearman_x100)),
            ("summary-level Spearman x100 (all candidates pooled)", _fmt(ev.summary_spearman_x100)),
            ("P(Better) about the first text", _fmt(ev.p_first_better, ".3f")),
            ("P(Worse) about the first text", _fmt(ev.p_first_worse, ".3f")),
            ("mean |level target-first - level reference-first|", _fmt(ev.order_gap, ".3f"))]
    if args.threshold is not None:
        rows.append((f"pass rate at {ev.score} >= {args.threshold:g}",
                     f"{ev.n_pass}/{ev.n_scored} = {_fmt(ev.pass_rate, '.3f')}"))
    w = max(len(r[0]) for r in rows)
    for name, v in rows:
        print(f"{name:{w}}  {v:>10}")
    return EXIT_OK


def _absolute_export(args, store, run, settings, dataset) -> int:
    from .export import write_table
    meta = {"run": run.name, "dataset": dataset.name, "settings": run.settings,
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "compassess_version": __version__}
    frame, table = _absolute_scores(args, store, run, settings, dataset)
    if args.what == "rankings":
        df = _ranked_scores(table, args.score, args.threshold)
        meta.update(score=args.score, threshold=args.threshold)
    else:
        df = frame
    paths = write_table(df, args.output, args.format, what=args.what, metadata=meta)
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return EXIT_OK


COMMANDS = {"score": cmd_score, "import-labels": cmd_import_labels, "agreement": cmd_agreement, "run": cmd_run, "rank": cmd_rank, "evaluate": cmd_evaluate, "export": cmd_export,
            "fetch-model": cmd_fetch_model, "datasets": cmd_datasets, "runs": cmd_runs,
            "worker": cmd_worker}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `compassess rank ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - the last line of defence prints, not a traceback
        if os.environ.get("COMPASSESS_DEBUG"):
            raise
        print(f"error: {type(e).__name__}: {e} (set COMPASSESS_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
