"""``compassess`` command line: it parses options and prints; the Python API does the work.

Commands: run, score, rank, evaluate, export, leaderboard, compare, report, import-labels,
agreement, calibrate, models, datasets, runs, delete-run, rename-run, delete-dataset,
rename-dataset, campaign, panel, judges, tune, templates, explain, worker, fetch-model. Exit codes: 0 ok, 2 bad input (message on
stderr naming the problem), 1 other failure, 130 interrupted (everything computed so far is stored;
the same command resumes).
Every command goes through ``compassess_core.api`` (what a notebook calls), which reaches the
store through ``sink.open_store`` (an entry point): the CLI never imports ``db``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from . import __version__, absolute, api, campaigns, panel
from .access import local_identity
from .agreement import AGREEMENT_BOOT
from .calibration import DEFAULT_FOLDS, ECE_BINS
from .explanations import EXPLAIN_TOKENS
from .errors import CompAssessError, InputError, RunCancelled, RunInterrupted
from .export import neutralise_frame
from .leaderboard import DEFAULT_METHOD, STRENGTH_UNITS
from .model_catalog import RECOMMENDED, catalog, catalog_frame, models_folder
from .models import default_model_path, fetch_default_model
from .prompts import TASKS
from .ranking import METHODS
from .options import (AbsoluteOptions, ComparativeOptions, ModelOptions, OptionError,
                      ScoringOptions, for_aspects, run_options)
from .report_text import fmt as _fmt, table as _table
from .report import EXAMPLES
from .run_kinds import build_settings, kind_of
from .run_loop import PHASE_TEXT, is_active, state_text, worker_state
from .selection import STRATEGIES
from .settings import GenerationOptions, ReferenceOptions, RunSettings
from .tuning import TuningOptions
from .worker import EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, ConsoleReporter


# ------------------------------------------------------------------------------------ the parser

def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="SQLAlchemy URL or a .db file (default: $COMPASSESS_DATABASE_URL or the SQLite "
                        "file in $COMPASSESS_HOME)")


def _model_args(p: argparse.ArgumentParser) -> None:
    """Options of every command that runs a model (run, score)."""
    p.add_argument("--model", default=None, help="a .gguf file, a local model folder, a hub id or "
                   "openai:URL#NAME (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--contexts", type=int, default=None, help="only the first N contexts")
    p.add_argument("--seed", type=int, default=RunSettings.seed)
    p.add_argument("--batch-size", type=int, default=RunSettings.batch_size,
                   help="prompts per forward pass (requests in flight for a served judge)")
    p.add_argument("--device", default=RunSettings.device, choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", default=RunSettings.dtype,
                   choices=["auto", "float32", "bfloat16", "float16", "bf16-weights"],
                   help="bf16-weights: matrices kept in bf16, computed in fp32 (half the memory)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the model (default: all cores; 1 can be faster on a busy machine)")
    p.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help="prompts per judge call (default 128): the scope of the judge's prefix cache; "
                        "results are stored after every micro-batch whatever this is")
    p.add_argument("--truncate-context", action="store_true",
                   help="cut a context passage that would not fit the model's context window (recorded "
                        "with the run) instead of refusing the run")
    p.add_argument("--run", default=None, metavar="NAME",
                   help="run name (default: derived from the settings); an existing name resumes")
    _db_arg(p)


#: What ``--debias`` takes, everywhere it is taken (``analysis.DEBIAS_CHOICES`` or a number).
DEBIAS_METAVAR = "none|balanced|balanced-per-context|TAU"
DEBIAS_HELP = ("decision threshold (eq. 10): none = 0.5; balanced = the global tau* (P(A) = 0.5 "
               "over all comparisons); balanced-per-context = each context's own tau*; or a "
               "number in (0, 1)")


def _read_args(p: argparse.ArgumentParser, *, debias: str) -> None:
    """Options of the commands that read a run back (rank, evaluate, export)."""
    p.add_argument("--run", required=True, metavar="NAME")
    p.add_argument("--method", default="win-ratio", choices=list(METHODS))
    p.add_argument("--debias", default=debias, metavar=DEBIAS_METAVAR, help=DEBIAS_HELP)
    p.add_argument("--score", default="level", choices=list(absolute.SCORES),
                   help="absolute runs: 'level' (calibrated, 1..N) or 'score' (the paper's s)")
    p.add_argument("--threshold", type=float, default=None,
                   help="absolute runs: pass/fail at score >= THRESHOLD")
    p.add_argument("--calibrate", action="store_true",
                   help="pairwise runs: read the judge's p calibrated on the stored human labels of "
                        "the run's dataset and aspect (bias and temperature, `compassess calibrate`)")
    _db_arg(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compassess", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"compassess {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="judge pairs of candidates with an LLM and store every comparison")
    r.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    r.add_argument("--aspect", required=True, help="preset (coherence, consistency, fluency, relevance, "
                   "engagingness, naturalness, continuity, understandable, grammar, overall) or your own "
                   "adjective; several separated by commas (coherence,fluency,...): one run each, "
                   "judged together in one pass (named RUN-ASPECT with --run)")
    r.add_argument("--mode", default="comparative", choices=["comparative", "scoring"],
                   help="comparative: pairwise judgements (default); scoring: the paper's prompt-scoring "
                   "baseline, a 1-10 score per candidate from the score-token distribution (argmax and "
                   "G-Eval expected score)")
    r.add_argument("--template", default=None, help="t1, t2, a file holding a template with {context} {a} {b} "
                   "{aspect}, or the name of a stored template (`compassess templates`, e.g. a "
                   "tuning's pick) (default t1); with --mode scoring: s1 or s2 (default s1)")
    r.add_argument("--task", default="auto", choices=["auto", *TASKS],
                   help="wording of t1/t2 and s1/s2 (prompts.TASK_WORDING): summary, dialogue, "
                        "story, instruction, qa, code or text (auto: from the data's column "
                        "names, else the aspect)")
    r.add_argument("--strategy", default=RunSettings.strategy, choices=list(STRATEGIES))
    r.add_argument("--budget", type=int, default=None,
                   help="comparisons per context (random, no-repeat, symmetric, poe, adaptive)")
    _model_args(r)

    s = sub.add_parser("score", help="absolute score per candidate: compare it with synthetic "
                       "references of quality 1..N (thresholdable)")
    s.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    s.add_argument("--aspect", required=True, help="preset (coherence, ...) or your own adjective; "
                   "several separated by commas: one run each, judged together in one pass")
    s.add_argument("--references", type=int, default=ReferenceOptions.n_levels, metavar="N",
                   help=f"reference quality levels 1..N (default {ReferenceOptions.n_levels})")
    s.add_argument("--anchors", default=None, metavar="CSV",
                   help="your own reference texts (columns context_id, level, text) instead of generated ones")
    s.add_argument("--task", default="auto", choices=["auto", *absolute.TASKS],
                   help="wording (prompts.TASK_WORDING): summary, dialogue, story, instruction, qa, "
                        "code or text (auto: from the data's column names, else the aspect)")
    s.add_argument("--variant", default=ReferenceOptions.variant, choices=list(absolute.VARIANTS),
                   help="bws: read P(Better/Worse/Similar); yes-no: the paper's Yes/No ablation")
    s.add_argument("--orders", default=ReferenceOptions.orders, choices=list(absolute.ORDERS),
                   help="judge target-first, reference-first or both (averaged: removes positional bias)")
    s.add_argument("--max-new-tokens", type=int, default=GenerationOptions.max_new_tokens,
                   help="length limit of generated references")
    s.add_argument("--sample", action="store_true", help="sample references (default greedy); seeded by --seed")
    s.add_argument("--temperature", type=float, default=GenerationOptions.temperature)
    _model_args(s)

    k = sub.add_parser("rank", help="rank the candidates of a run")
    _read_args(k, debias="none")
    k.add_argument("--format", default="table", choices=["table", "csv", "json"])
    k.add_argument("--context", default=None, metavar="ID", help="only this context")
    k.add_argument("--ci", action="store_true", help="add bootstrap 95%% intervals")
    k.add_argument("--with-humans", action="store_true",
                   help="fuse the judge's comparisons with the stored human labels of the run's "
                        "dataset and aspect (Gaussian product of experts)")
    k.add_argument("--human-weight", default=None, metavar="W|inf",
                   help="with --with-humans: one vote counts as W judge comparisons (inf: the humans "
                        "alone; default: chosen by leave-one-out cross-validation over the votes)")
    k.add_argument("--level", default="context", choices=["context", "system"],
                   help="with --with-humans: rank the candidates of each context, or the systems")

    e = sub.add_parser("evaluate", help="correlation with reference scores, positional bias, flip rate")
    _read_args(e, debias="balanced")
    e.add_argument("--reference", default=None, metavar="COLUMN",
                   help="reference-score column (default: the aspect's column if present)")
    e.add_argument("--json", action="store_true", help="print one JSON object")

    x = sub.add_parser("export", help="write rankings or all comparisons with the run's settings")
    _read_args(x, debias="none")
    x.add_argument("--what", required=True, choices=["rankings", "comparisons"])
    x.add_argument("--format", required=True, choices=["csv", "json", "parquet"])
    x.add_argument("-o", "--output", required=True, metavar="FILE")
    x.add_argument("--no-ci", dest="ci", action="store_false",
                   help="rankings without the bootstrap 95%% intervals (faster on large runs)")

    lb = sub.add_parser("leaderboard", help="one row per system across all contexts: strength, win "
                        "rate, 95%% context-bootstrap intervals, length bias")
    lb.add_argument("--run", required=True, metavar="NAME")
    lb.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS))
    lb.add_argument("--debias", default="balanced", metavar=DEBIAS_METAVAR, help=DEBIAS_HELP)
    lb.add_argument("--reference", default=None, metavar="COLUMN",
                    help="reference-score column (default: the aspect's column if present)")
    lb.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system: add each system's win rate against it (95%% interval) and "
                         "the length-controlled win rate against it, as AlpacaEval")
    lb.add_argument("--bootstrap", type=int, default=1000, metavar="B",
                    help="context-bootstrap replicates of the 95%% intervals (default 1000)")
    lb.add_argument("--format", default="table", choices=["table", "csv", "json"])
    _db_arg(lb)

    cp = sub.add_parser("compare", help="two runs on the same dataset: verdict agreement, kappa, "
                        "rank correlation, the pairs they disagree on")
    cp.add_argument("--run", required=True, action="append", metavar="NAME",
                    help="give it twice: --run A --run B")
    cp.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS))
    cp.add_argument("--debias", default="balanced", metavar=DEBIAS_METAVAR,
                    help="each run's threshold (balanced: each run's own tau*; "
                         "balanced-per-context: each run's tau* of each context)")
    cp.add_argument("--json", action="store_true")
    _db_arg(cp)

    rp = sub.add_parser("report", help="the audit report of one or several pairwise runs: one "
                        "self-contained HTML file (setup, leaderboard, positional and length bias, "
                        "human agreement, evaluation, the most order-dependent and disputed "
                        "comparisons with their prompts, methods) that opens offline")
    rp.add_argument("--run", required=True, action="append", metavar="NAME",
                    help="a run to report; give it again for several (--run A --run B): each "
                         "gets its section, and runs on the same dataset are compared")
    rp.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rp.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS))
    rp.add_argument("--debias", default="balanced", metavar=DEBIAS_METAVAR, help=DEBIAS_HELP)
    rp.add_argument("--bootstrap", type=int, default=200, metavar="B",
                    help="context-bootstrap replicates of the leaderboard's 95%% intervals "
                         "(default 200, as the app)")
    rp.add_argument("--examples", type=int, default=EXAMPLES, metavar="N",
                    help=f"order-dependent and human-disputed comparisons shown with their prompts "
                         f"(default {EXAMPLES} each)")
    rp.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system to report each system's win rate against (with its 95%% "
                         "interval and the length-controlled win rate), as `leaderboard "
                         "--baseline`")
    _db_arg(rp)

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
    il.add_argument("--annotator", metavar="NAME",
                    help="attribute every label to NAME (default: the file's annotator column; "
                         "rows without one: 'imported')")
    il.add_argument("--map", metavar="COLUMN=LABEL,...", type=_label_map,
                    help="the file's columns for the label columns, e.g. question_id=context_id,"
                         "model_a=candidate_a,model_b=candidate_b,judge=annotator (a winner of "
                         "model_a/model_b then names that side)")
    _db_arg(il)

    ag = sub.add_parser("agreement", help="LLM vs human labels: accuracy, Cohen's kappa, raw and debiased")
    ag.add_argument("--run", required=True, metavar="NAME")
    ag.add_argument("--labels", default="stored", metavar="FILE_OR_STORED",
                    help="a labels file, or 'stored' for the labels in the store (same dataset and aspect)")
    ag.add_argument("--debias", default="balanced", metavar=DEBIAS_METAVAR, help=DEBIAS_HELP)
    ag.add_argument("--bootstrap", type=int, default=AGREEMENT_BOOT, metavar="B",
                    help=f"resamples of the 95%% bootstrap intervals of accuracy, kappa (pairs "
                         f"resampled) and the ranking correlation (contexts) (default "
                         f"{AGREEMENT_BOOT})")
    ag.add_argument("--json", action="store_true")
    _db_arg(ag)

    cal = sub.add_parser("calibrate", help="fit the judge's bias and temperature on human A/B labels; "
                         "accuracy, log-loss and calibration error before and after (held-out folds)")
    cal.add_argument("--run", required=True, metavar="NAME")
    cal.add_argument("--aspect", default=None, help="aspect of the human labels (default: the run's)")
    cal.add_argument("--folds", type=int, default=DEFAULT_FOLDS, help="cross-validation folds of "
                     f"labelled pairs (default {DEFAULT_FOLDS})")
    cal.add_argument("--seed", type=int, default=0, help="seed of the folds")
    cal.add_argument("--json", action="store_true", help="print one JSON object")
    _db_arg(cal)

    mo = sub.add_parser("models", help="the judges on this machine (the bundled one and the models "
                        "folder) with size, context window and the speed measured here")
    mo.add_argument("--json", action="store_true")
    _db_arg(mo)

    w = sub.add_parser("worker", help="execute (or resume) runs stored in the database from their settings")
    w.add_argument("--run", required=True, metavar="NAME", action="append",
                   help="a run's name; give several (--run A --run B) to judge them together in one "
                        "pass with one judge")
    w.add_argument("--chunk-size", type=int, default=None, metavar="N")
    _db_arg(w)
    _manage_parsers(sub)
    _tuning_parsers(sub)
    return parser


def _manage_parsers(sub) -> None:
    """delete-run, rename-run, delete-dataset, rename-dataset."""
    yes_help = ("delete without asking (needed when the input is not a terminal; without it the "
                "command only prints what would be deleted and exits with code 2)")
    for what, noun, delete_help, rename_help in (
            ("run", "--run", "delete a stored run with its results (asks first)",
             "give a stored run another name"),
            ("dataset", "--dataset", "delete a stored dataset with its runs, results, human "
             "labels, guidelines and reference texts (asks first)",
             "give a stored dataset another name (its runs follow)")):
        delete = sub.add_parser(f"delete-{what}", help=delete_help)
        delete.add_argument(noun, required=True, metavar="NAME")
        delete.add_argument("--yes", action="store_true", help=yes_help)
        _db_arg(delete)
        rename = sub.add_parser(f"rename-{what}", help=rename_help)
        rename.add_argument(noun, required=True, metavar="NAME")
        rename.add_argument("--to", required=True, metavar="NEW")
        _db_arg(rename)

    cg = sub.add_parser("campaign", help="annotation campaigns: pairs of a dataset assigned to "
                        "named annotators, several per pair")
    csub = cg.add_subparsers(dest="campaign_command", required=True)
    cc = csub.add_parser("create", help="create an open campaign (its pairs are fixed now)")
    cc.add_argument("--name", required=True, metavar="NAME")
    cc.add_argument("--dataset", required=True, metavar="NAME")
    cc.add_argument("--aspect", required=True)
    cc.add_argument("--annotator", action="append", default=[], metavar="IDENTITY",
                    help="a person who labels the campaign's pairs (repeat the flag)")
    cc.add_argument("--overlap", type=int, default=2, help="people per pair (default 2)")
    cc.add_argument("--pairs", default="all", choices=list(campaigns.SELECTIONS),
                    help="every pair, a seeded sample of --n-pairs, or the --n-pairs most "
                         "informative for the ranking")
    cc.add_argument("--n-pairs", type=int, default=None, metavar="K")
    cc.add_argument("--seed", type=int, default=0)
    cc.add_argument("--run", default=None, metavar="NAME",
                    help="--pairs informative: also weigh this run's comparisons (default: the "
                         "stored labels alone)")
    cc.add_argument("--guidelines", default=None, metavar="FILE",
                    help="a plain-text file of guidelines shown to the annotators")
    cc.add_argument("--created-by", default=None, metavar="IDENTITY",
                    help="who creates it (default: this account)")
    _db_arg(cc)
    ca_ = csub.add_parser("assign", help="assign (or with --remove, unassign) people")
    ca_.add_argument("--name", required=True, metavar="NAME")
    ca_.add_argument("--annotator", action="append", required=True, metavar="IDENTITY")
    ca_.add_argument("--remove", action="store_true",
                     help="take them off the campaign (their answers stay)")
    _db_arg(ca_)
    cs = csub.add_parser("status", help="progress per annotator and inter-annotator agreement")
    cs.add_argument("--name", required=True, metavar="NAME")
    cs.add_argument("--json", action="store_true")
    _db_arg(cs)
    cx = csub.add_parser("export", help="write the campaign's labels (answers and adjudications)")
    cx.add_argument("--name", required=True, metavar="NAME")
    cx.add_argument("--format", default="csv", choices=["csv", "json"])
    cx.add_argument("-o", "--output", required=True, metavar="FILE")
    _db_arg(cx)
    cl = csub.add_parser("close", help="close a campaign: no new answer (adjudication still possible)")
    cl.add_argument("--name", required=True, metavar="NAME")
    _db_arg(cl)

    pn = sub.add_parser("panel", help="panels of judges: several runs on the same dataset and "
                        "aspect combined into one debiased verdict per pair")
    psub = pn.add_subparsers(dest="panel_command", required=True)
    pc = psub.add_parser("create", help="store a panel of two or more runs")
    pc.add_argument("--name", required=True, metavar="NAME")
    pc.add_argument("--run", action="append", required=True, metavar="NAME",
                    help="a member run (repeat the flag; at least two)")
    pc.add_argument("--weights", default="equal", metavar="equal|learnt|W,W,...",
                    help="member weights: equal (default), learnt from the stored human labels, "
                         "or one number per --run")
    pc.add_argument("--combine", default="poe", choices=list(panel.COMBINERS),
                    help="poe: product of experts on the debiased log-odds (default); vote: "
                         "majority of the members' debiased verdicts")
    pc.add_argument("--scaling", default="balanced", choices=list(panel.MEMBER_SCALINGS),
                    help="each member debiased at its own tau* (balanced, default), calibrated "
                         "on the human labels, or calibrated where labels exist (auto)")
    _db_arg(pc)
    pr = psub.add_parser("rank", help="rank the candidates by the panel's combined verdicts")
    pr.add_argument("--name", required=True, metavar="NAME")
    pr.add_argument("--method", default="win-ratio", choices=list(METHODS))
    pr.add_argument("--debias", default="none", metavar="none|balanced|TAU",
                    help="threshold on the combined p (its members are debiased already)")
    pr.add_argument("--format", default="table", choices=["table", "csv", "json"])
    _db_arg(pr)
    pe = psub.add_parser("evaluate", help="the panel's Spearman and positional bias beside each "
                         "member's, and how the members agree")
    pe.add_argument("--name", required=True, metavar="NAME")
    pe.add_argument("--method", default="win-ratio", choices=list(METHODS))
    pe.add_argument("--debias", default="balanced", metavar="none|balanced|TAU")
    pe.add_argument("--reference", default=None, metavar="COLUMN")
    pe.add_argument("--json", action="store_true", help="print one JSON object")
    _db_arg(pe)
    pp = psub.add_parser("report", help="the panel's audit report: one self-contained HTML "
                         "file (its members, leaderboard, bias, agreement with people, the most "
                         "order-dependent and disputed comparisons with each member's p)")
    pp.add_argument("--name", required=True, metavar="NAME")
    pp.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    pp.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS))
    pp.add_argument("--debias", default="none", metavar="none|balanced|TAU",
                    help="threshold on the combined p (default none: its members are debiased "
                         "already)")
    pp.add_argument("--bootstrap", type=int, default=200, metavar="B",
                    help="context-bootstrap replicates of the leaderboard's 95%% intervals")
    pp.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system to report each system's win rate against")
    _db_arg(pp)
    pl = psub.add_parser("list", help="list stored panels")
    _db_arg(pl)
    pd_ = psub.add_parser("delete", help="delete a panel's definition (its runs stay)")
    pd_.add_argument("--name", required=True, metavar="NAME")
    _db_arg(pd_)

    jg = sub.add_parser("judges", help="the leaderboard of judges: every run and panel on a "
                        "dataset and aspect, ranked by agreement with people (or the reference)")
    jg.add_argument("--dataset", required=True, metavar="NAME")
    jg.add_argument("--aspect", required=True)
    jg.add_argument("--reference", default=None, metavar="COLUMN",
                    help="without human labels: rank by Spearman with this column (default: the "
                         "aspect's column)")
    jg.add_argument("--bootstrap", type=int, default=1000, metavar="B",
                    help="bootstrap resamples of the labelled pairs for the 95%% intervals")
    jg.add_argument("--json", action="store_true", help="print one JSON object")
    _db_arg(jg)


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
    dataset, _ = store.read_data(args.data)
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
    store = api.open_store(args.db)
    runs = [store.get_run(name) for name in args.run]
    kind = kind_of(runs[0].info.settings)
    try:
        store.execute(runs, progress=ConsoleReporter(kind.unit, kind.rate_unit),
                      chunk_size=args.chunk_size)
    except (RunCancelled, RunInterrupted):
        return EXIT_INTERRUPTED
    return EXIT_OK


# --------------------------------------------------------------------------- reading runs back

def _load_run(args) -> api.Run:
    return api.open_store(args.db).get_run(args.run)


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
        header += (f"\n# {int(df['pass'].sum())}/{len(df)} candidates pass at {args.score} "
                   f">= {args.threshold:g}")
    _print_ranking(df, args.format, run.name, fields, header, kind.ranked_rows)
    return EXIT_OK


def _print_ranking(df, fmt: str, run_name: str, fields: dict, header: str, rows: str) -> None:
    if fmt == "csv":
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif fmt == "json":
        print(json.dumps({"run": run_name, **fields, rows: json.loads(df.to_json(orient="records"))},
                         indent=2, default=lambda o: None))
    else:
        print(header)
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


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
        print(json.dumps(out, indent=2, default=lambda o: None))
    else:
        kind_of(run.info.settings).print_evaluation(report, sys.stdout)
        if run.calibration is not None:
            print(_calibration_note(run.calibration).lstrip("; "))
        for line in [partial, *getattr(report, "warnings", [])]:
            if line:
                print(f"warning: {line}")
    return EXIT_OK


def cmd_export(args) -> int:
    run = _load_run(args)
    if args.calibrate:
        run = run.calibrated()
    paths = run.export(args.output, args.what, format=args.format, method=args.method,
                       debias=args.debias, ci=args.ci, score=args.score, threshold=args.threshold)
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return EXIT_OK


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
        print(f"{d.name}\t{d.n_contexts} contexts\t{d.n_candidates} candidates\t"
              f"scores: {', '.join(d.score_columns) or '-'}")
    return EXIT_OK


def cmd_runs(args) -> int:
    store = api.open_store(args.db).backend
    runs = store.list_runs()
    if args.json:
        print(json.dumps([dict(name=r.name, dataset=r.dataset_name, status=r.status,
                               state=worker_state(r), kind=kind_of(r.settings).name,
                               unit=kind_of(r.settings).unit, done=r.done, total=r.total,
                               n_comparisons=r.n_comparisons, judge=r.judge_key,
                               rate=r.rate, judge_s=r.judge_s, token_rate=r.token_rate,
                               phase=r.phase if is_active(worker_state(r)) else None,
                               phase_at=(r.phase_at.isoformat() if r.phase_at is not None
                                         and is_active(worker_state(r)) else None))
                          for r in runs], indent=2))
        return EXIT_OK
    for r in runs:
        # the state, not the stored status: a run whose worker died is not "running"; a run
        # that ended says its rate over its seconds of judging (its last session)
        kind = kind_of(r.settings)
        took = (f", {r.rate:.2f} {kind.rate_unit} over {r.judge_s:.0f} s of judging"
                if r.rate and r.judge_s and not is_active(worker_state(r)) else "")
        doing = (f" ({PHASE_TEXT.get(r.phase, r.phase)})" if r.phase and is_active(worker_state(r))
                 else "")
        print(f"{r.name}\t{r.dataset_name}\t{state_text(r)}{doing}\t{r.done}/{r.total or '?'} "
              f"{kind.unit}{took}")
    return EXIT_OK


def _label_map(text: str) -> dict[str, str]:
    """``--map question_id=context_id,model_a=candidate_a``: label column -> the file's column."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        column, sep, label = part.rpartition("=")
        if not sep or not column.strip() or not label.strip():
            raise argparse.ArgumentTypeError(f"'{part}' is not FILE_COLUMN=LABEL_COLUMN")
        if label.strip() in mapping:
            raise argparse.ArgumentTypeError(f"'{label.strip()}' is mapped twice")
        mapping[label.strip()] = column.strip()
    return mapping


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


def cmd_agreement(args) -> int:
    run = _load_run(args)
    found = run.agreement(None if args.labels == "stored" else args.labels, args.debias,
                          n_boot=args.bootstrap)
    summary = {"run": run.name, **found.to_dict()}
    if args.json:
        print(json.dumps(summary, indent=2, default=lambda o: None))
        return EXIT_OK
    source = found.labels
    llm = summary["llm_vs_human"]
    print(f"run {run.name} vs {source}: {llm['n_pairs_matched']} pairs judged by both "
          f"({llm['n_judgements']} human judgements, {llm['n_skipped']} skips left out)")
    for at in ("raw", "debiased"):
        m = llm[at]
        where = "tau = 0.5000" if at == "raw" else m["threshold"]
        print(f"{at:>8} ({where}): accuracy {_fmt(m['accuracy_without_ties'], '.3f')}"
              f"{_ci(m, 'accuracy_without_ties')} / Cohen's kappa "
              f"{_fmt(m['kappa_without_ties'], '.3f')}{_ci(m, 'kappa_without_ties')} without ties "
              f"(n = {m['n_without_ties']} pairs); accuracy {_fmt(m['accuracy_with_ties'], '.3f')}"
              f"{_ci(m, 'accuracy_with_ties')} / kappa {_fmt(m['kappa_with_ties'], '.3f')}"
              f"{_ci(m, 'kappa_with_ties')} with ties (n = {m['n_with_ties']}, "
              f"{m['n_human_ties']} human ties)")
    pb = summary["positional_bias"]
    print(f"positional bias: people picked the left text in {_fmt(pb['human_share_left'], '.3f')} of "
          f"{pb['human_n']} decisive judgements; LLM P(A) {pb['llm_p_a_raw']:.3f} raw, "
          f"{pb['llm_p_a_debiased']:.3f} at {llm['debiased']['threshold']}")
    hh = summary["human_human"]
    if hh["n_items"]:
        print(f"human vs human on {hh['n_items']} pairs: agreement {_fmt(hh['percent_agreement'], '.3f')}, "
              f"Krippendorff's alpha {_fmt(hh['krippendorff_alpha'], '.3f')}"
              + (f", Cohen's kappa {hh['cohen_kappa']:.3f}" if hh["cohen_kappa"] is not None else ""))
    rc = summary["ranking_correlation"]
    if rc["n_used"]:
        print(f"LLM vs human-only Bradley-Terry ranking: Spearman x100 {_fmt(rc['spearman_x100'])}"
              f"{_ci(rc, 'spearman_x100', '.1f')} (mean over {rc['n_used']} contexts)")
    for line in summary["caution"]:
        print(f"caution: {line}")
    print(f"intervals: {int(100 * summary['intervals']['level'])}% "
          f"{summary['intervals']['method']}, {summary['intervals']['n_boot']} resamples")
    for note in llm["notes"]:
        print(f"note: {note}")
    return EXIT_OK




# ------------------------------------------------------------------- leaderboard and compare

def cmd_leaderboard(args) -> int:
    run = _load_run(args)
    board = run.leaderboard(args.method, args.debias, reference=args.reference,
                            baseline=args.baseline, n_boot=args.bootstrap)
    warnings = [w for w in (run.partial_note, run.position_warning(args.debias)) if w]
    reference = board.reference
    if args.format == "json":
        print(json.dumps({"run": run.name, "dataset": run.dataset.name, "settings": run.info.settings,
                          **board.to_dict(), "warnings": warnings}, indent=2))
        return EXIT_OK
    frame = board.frame
    if args.format == "csv":
        neutralise_frame(frame).to_csv(sys.stdout, index=False)
        return EXIT_OK
    lb, lc = board.length, board.length_controlled
    print(f"# run {run.name}: {len(frame)} systems, {board.n_comparisons:,} comparisons over "
          f"{board.n_contexts} contexts; strength = {STRENGTH_UNITS[board.method]} at "
          f"{run.threshold_label(args.debias)}; win rate = share of comparisons won; "
          f"{int(board.level * 100)}% intervals from {board.n_boot} bootstrap replicates "
          "(contexts resampled, then the comparisons within each)")
    if board.baseline is not None:
        print(f"# baseline {board.baseline}: win_rate_vs_baseline = share of the system's "
              f"comparisons with {board.baseline} it won at tau (both orders, contexts where both "
              "appear; p == tau is a win for the second text), n_vs_baseline of them; "
              "lc_win_rate_vs_baseline = sigmoid of the length-controlled strength difference "
              "(AlpacaEval 2.0); the baseline's own row is NaN (not 0.5)")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"# votes per pair of systems: comparisons and wins of each at "
          f"{run.threshold_label(args.debias)}")
    print(board.pair_counts.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if board.system_spearman_x100 is not None:
        print(f"system-level Spearman x100 of strength vs mean '{reference}': "
              f"{_fmt(board.system_spearman_x100)} (Kendall x100 {_fmt(board.system_kendall_x100)}, "
              f"{len(frame)} systems)")
    print(f"length bias: the longer text wins {_fmt(100 * lb.longer_wins)}% of "
          f"{lb.n_length_differs:,} comparisons ({run.threshold_label(args.debias)}); "
          f"{_fmt(lb.slope_per_doubling, '+.3f')} log-odds per doubling of len(A)/len(B); "
          f"length-controlled GLM: length term {_fmt(lc.length_coef, '+.3f')}, "
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
    partial = [n for n in (run_a.partial_note, run_b.partial_note) if n]
    if args.json:
        print(json.dumps({**result.to_dict(run_a.name, run_b.name), "warnings": partial}, indent=2))
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
        (f"rank Spearman x100, mean over {result.n_contexts_ranked} contexts ({result.method})",
         _fmt(result.rank_spearman_x100)),
        (f"system-level Spearman x100 ({result.n_systems} systems)",
         _fmt(result.system_spearman_x100)),
    ])
    dis = result.disagreements
    print(f"{len(dis):,} pairs with different verdicts; the most confident first:")
    if len(dis):
        print(dis.head(20)[["context_id", "first", "second", "p_a", "p_b", "winner_a", "winner_b"]]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for line in partial:
        print(f"warning: {line}")
    return EXIT_OK


def cmd_report(args) -> int:
    _write_report(args.output, lambda: api.open_store(args.db).report(
        args.run, method=args.method, debias=args.debias, n_boot=args.bootstrap,
        examples=args.examples, baseline=args.baseline), f"{len(args.run)} run(s)")
    return EXIT_OK


def _write_report(output: str, make, what: str) -> None:
    """Write the audit report ``make()`` returns to ``output`` (its folder checked first, so a
    mistyped path fails before the report is computed) and say so on stderr."""
    out = Path(output)
    if not out.parent.is_dir():
        raise InputError(f"output folder '{out.parent}' does not exist")
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
    df = fused.frame.drop(columns=["text"], errors="ignore")
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
        print(json.dumps(out, indent=2))
        return EXIT_OK
    cal, raw, deb, held = report.calibration, report.raw, report.debiased, report.calibrated
    print(f"run {run.name} vs human labels of aspect '{aspect}': {raw.n_comparisons} comparisons of "
          f"{cal.n_pairs} labelled pairs; {report.folds}-fold cross-validation by pair (seed "
          f"{report.seed})")
    spread = out["fold_spread"]
    print(f"fitted on all labels: p_cal = sigmoid((logit p - b) / T) with bias b = {cal.bias:.3f} "
          f"log-odds, temperature T = {cal.temperature:.3f} (sd over folds: {spread['bias_sd']:.3f}, "
          f"{spread['temperature_sd']:.3f})")
    _table([
        ("accuracy (per comparison, p > 0.5)", *(_fmt(x.accuracy, ".3f") for x in (raw, deb, held))),
        ("log-loss (nats per comparison)", *(_fmt(x.log_loss, ".3f") for x in (raw, deb, held))),
        (f"expected calibration error ({ECE_BINS} bins)", *(_fmt(x.ece, ".3f") for x in (raw, deb, held))),
        (f"pair accuracy, ties left out (n = {held.n_pairs})",
         *(_fmt(x.pair_accuracy, ".3f") for x in (raw, deb, held))),
        ("pair Cohen's kappa, ties left out", *(_fmt(x.pair_kappa, ".3f") for x in (raw, deb, held))),
    ], head=("raw", f"tau*={report.tau:.3f}", "calibrated"))
    print("calibrated = held-out folds (each fold calibrated by a fit on the others); "
          "tau* = eq. 9 reweighting at the balanced threshold (no labels)")
    rel = report.reliability["calibrated"]
    print("reliability of the calibrated p (held out): "
          + ", ".join(f"[{r.bin_low:.1f},{r.bin_high:.1f}) n={r.n} p={_fmt(r.mean_p, '.2f')} "
                      f"freq={_fmt(r.frequency, '.2f')}" for r in rel.itertuples() if r.n))
    for note in report.notes:
        print(f"note: {note}")
    return EXIT_OK


def cmd_models(args) -> int:
    try:
        runs = api.open_store(args.db).backend.list_runs()
    except CompAssessError:
        runs = []  # the list of models does not need the store; only measured speeds do
    entries = catalog(runs)
    folder = models_folder()
    if args.json:
        print(json.dumps({
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
        guidelines = (Path(args.guidelines).read_text(encoding="utf-8")
                      if args.guidelines else "")
        created_by = args.created_by or local_identity()
        c = store.create_campaign(args.name, args.dataset, args.aspect, args.annotator,
                                  overlap=args.overlap, pairs=args.pairs, n_pairs=args.n_pairs,
                                  guidelines=guidelines, created_by=created_by, seed=args.seed,
                                  run=args.run)
        print(f"created campaign '{c.name}': {c.info.n_pairs} pairs of dataset "
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
            print(json.dumps(summary, indent=2, default=str))
            return EXIT_OK
        print(f"campaign '{c.name}' ({c.status}): dataset '{c.dataset_name}', aspect "
              f"'{c.aspect}', {c.info.n_pairs} pairs, overlap {c.overlap}; "
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
        out = store.campaign(args.name).export(Path(args.output), args.format)
        print(out)
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
        print(frame.to_string(index=False) if len(frame) else "no panels stored")
    elif what == "delete":
        print(f"deleted {store.delete_panel(args.name)}")
    elif what == "report":
        _write_report(args.output, lambda: store.panel(args.name).report_html(
            method=args.method, debias=args.debias, n_boot=args.bootstrap,
            baseline=args.baseline), f"panel '{args.name}'")
    elif what == "rank":
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
        if args.json:
            print(json.dumps(out, indent=2, default=lambda o: None))
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
              f"{agree.n_pairs_all} pairs all judged; Krippendorff's alpha "
              f"{_fmt(agree.krippendorff_alpha, '.2f')} on {agree.n_pairs_alpha} pairs; "
              f"{out['n_split_pairs']} pairs split")
    return EXIT_OK


def cmd_judges(args) -> int:
    board = api.open_store(args.db).judges(args.dataset, args.aspect, reference=args.reference,
                                           n_boot=args.bootstrap)
    if args.json:
        print(json.dumps(board.to_dict(), indent=2, default=str))
        return EXIT_OK
    basis = ("Cohen's kappa with the human majority (ties left out), 95% bootstrap intervals "
             f"over labelled pairs ({board.n_labels} labels)" if board.basis == "kappa"
             else f"Spearman x100 with reference column '{board.reference}' (no human labels)")
    print(f"judges of dataset '{board.dataset}', aspect '{board.aspect}', ranked by {basis}")
    rows = []
    for r in board.frame.to_dict(orient="records"):
        rows.append((f"{r['rank']}. {r['judge']}" + (" (panel)" if r["kind"] == "panel" else ""),
                     f"{_fmt(r['kappa'], '.2f')} [{_fmt(r['kappa_low'], '.2f')}, "
                     f"{_fmt(r['kappa_high'], '.2f')}]", _fmt(r["accuracy"], ".2f"),
                     _fmt(r["log_loss_raw"], ".3f"), _fmt(r["spearman_x100"], ".1f"),
                     _fmt(r["p_a_raw"], ".2f"), _fmt(r["flip_rate_raw"], ".2f"),
                     _fmt(r["comparisons_per_s"], ".2f"), _fmt(r["tokens_per_comparison"], ".0f"),
                     str(r["n_comparisons"])))
    _table(rows, head=("kappa [95%]", "accuracy", "log-loss", "Spearman", "P(A) raw",
                       "flip rate", "comp./s", "tokens/comp.", "compared"))
    for note in board.notes:
        print(f"note: {note}")
    return EXIT_OK


def _tuning_parsers(sub) -> None:
    """``tune``, ``templates`` and ``explain``: the judge's wording tuned without labels, the
    named templates, the judge's reasons for a stored verdict."""
    t = sub.add_parser("tune", help="tune the judge's instruction without labels: judge the "
                       "library's wordings, built-in paraphrases and paraphrases the judge writes, "
                       "pick the fairest (raw P(A) closest to 0.5, ZEPO) and save it as a named "
                       "template")
    t.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    t.add_argument("--aspect", required=True, help="preset (coherence, ...) or your own adjective")
    t.add_argument("--task", default="auto", choices=["auto", *TASKS],
                   help="wording of the library's templates (auto: from the data and the aspect)")
    t.add_argument("--contexts", type=int, default=TuningOptions.contexts, metavar="N",
                   help=f"tune on the first N contexts (default {TuningOptions.contexts})")
    t.add_argument("--holdout", type=int, default=0, metavar="M",
                   help="also judge the next M contexts and measure each wording's agreement with "
                        "the human labels or reference scores there (never used to pick)")
    t.add_argument("--pairs", type=int, default=None, metavar="K",
                   help="comparisons per context, both orders of each pair (default: every "
                        "ordered pair)")
    t.add_argument("--rounds", type=int, default=TuningOptions.rounds, metavar="R",
                   help="greedy rounds of paraphrases the judge writes of the fairest wording "
                        f"(default {TuningOptions.rounds}; 0: the starting wordings only)")
    t.add_argument("--per-round", type=int, default=TuningOptions.per_round, metavar="K",
                   help=f"paraphrases asked for per round (default {TuningOptions.per_round})")
    t.add_argument("--budget", type=int, default=None, metavar="N",
                   help="most comparisons over all wordings (default: no cap)")
    t.add_argument("--name", default=None, metavar="NAME",
                   help="the tuning's name and the template it saves (default: "
                        "dataset-aspect-model); the same name resumes")
    t.add_argument("--model", default=None, help="the judge, as `compassess run --model`")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--batch-size", type=int, default=RunSettings.batch_size)
    t.add_argument("--device", default=RunSettings.device, choices=["auto", "cpu", "cuda"])
    t.add_argument("--dtype", default=RunSettings.dtype,
                   choices=["auto", "float32", "bfloat16", "float16"])
    t.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the model (default: all cores)")
    t.add_argument("--truncate-context", action="store_true")
    t.add_argument("--plan", action="store_true", help="print the cost and stop")
    t.add_argument("--json", action="store_true", help="print the result as one JSON object")
    _db_arg(t)

    tp = sub.add_parser("templates", help="list the named templates (a tuning's pick, or your own)")
    tp.add_argument("--show", default=None, metavar="NAME", help="print one template's text")
    tp.add_argument("--delete", default=None, metavar="NAME", help="delete a named template")
    _db_arg(tp)

    ex = sub.add_parser("explain", help="the judge's reasons for its verdict on a stored "
                        "comparison, in both orders (asked once, then stored)")
    ex.add_argument("--run", required=True, metavar="NAME")
    ex.add_argument("--context", required=True, metavar="ID")
    ex.add_argument("--a", required=True, metavar="ID", help="the candidate in position A")
    ex.add_argument("--b", required=True, metavar="ID", help="the candidate in position B")
    ex.add_argument("--max-tokens", type=int, default=EXPLAIN_TOKENS, metavar="N",
                    help=f"tokens the judge may write per order (default {EXPLAIN_TOKENS})")
    ex.add_argument("--stored", action="store_true",
                    help="only print what is stored; never load the judge")
    ex.add_argument("--json", action="store_true")
    _db_arg(ex)


def cmd_tune(args) -> int:
    store = api.open_store(args.db)
    tuning = store.create_tuning(
        args.data, aspect=args.aspect, name=args.name, model=args.model, task=args.task,
        contexts=args.contexts, holdout=args.holdout, pairs=args.pairs, rounds=args.rounds,
        per_round=args.per_round, budget=args.budget, seed=args.seed,
        batch_size=args.batch_size, device=args.device, dtype=args.dtype,
        truncate_context=args.truncate_context, created_by=local_identity())
    if args.plan:
        print(f"tuning '{tuning.name}': {tuning.plan().sentence()}")
        return EXIT_OK
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


def _nan_none(x):
    return None if x is None or (isinstance(x, float) and x != x) else float(x)


COMMANDS = {"tune": cmd_tune, "templates": cmd_templates, "explain": cmd_explain,
            "campaign": cmd_campaign, "panel": cmd_panel, "judges": cmd_judges, "run": cmd_run, "score": cmd_score, "rank": cmd_rank, "evaluate": cmd_evaluate,
            "export": cmd_export, "import-labels": cmd_import_labels, "agreement": cmd_agreement,
            "calibrate": cmd_calibrate, "models": cmd_models,
            "fetch-model": cmd_fetch_model, "datasets": cmd_datasets, "runs": cmd_runs,
            "worker": cmd_worker, "leaderboard": cmd_leaderboard, "compare": cmd_compare,
            "report": cmd_report,
            "delete-run": cmd_delete_run, "rename-run": cmd_rename_run,
            "delete-dataset": cmd_delete_dataset, "rename-dataset": cmd_rename_dataset}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except OptionError as e:  # named by its flag
        print(f"error: {e.naming(_flag(e.field))}", file=sys.stderr)
        return EXIT_INPUT
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
