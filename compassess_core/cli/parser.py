"""The argument parser of ``compassess``: every command's flags and help."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import __version__
from ..runs import absolute
from ..people import campaigns
from ..stats import panel
from ..stats.agreement import AGREEMENT_BOOT
from ..stats.calibration import DEFAULT_FOLDS
from ..runs.explanations import EXPLAIN_TOKENS
from ..stats.leaderboard import DEFAULT_METHOD
from ..limits import MAX_BOOTSTRAP
from ..runs.prompts import TASKS
from ..stats.ranking import METHODS
from ..report.audit import EXAMPLES
from ..runs.selection import STRATEGIES
from ..runs.settings import GenerationOptions, ReferenceOptions, RunSettings
from ..runs.tuning import TuningOptions
from .common import _column_map


# ------------------------------------------------------------------------------------ the parser

def _bootstrap(text: str) -> int:
    """A ``--bootstrap`` count: a whole number in 1..``limits.MAX_BOOTSTRAP`` (argparse names
    the flag; a huge count would exhaust memory instead of failing plainly)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= MAX_BOOTSTRAP:
        raise argparse.ArgumentTypeError(f"{value:,} replicates: give 1 to {MAX_BOOTSTRAP:,}")
    return value


#: What the ranking and verdict commands read by default, everywhere (rank, evaluate, export,
#: leaderboard, compare, report, agreement): the app's Bradley-Terry at the balanced tau*.
DEFAULT_DEBIAS = "balanced"

#: One line per choice of the flags that name a method, a strategy or a format.
METHOD_HELP = ("ranking method: bradley-terry = Bradley-Terry strengths fitted to fractional "
               "wins p (reweighted at the threshold by eq. 9; evalica); win-ratio = share of "
               "comparisons won at the threshold (the paper's eq. 6); avg-prob = mean reweighted "
               "p against the others; poe = Gaussian product of experts on the reweighted p")
STRATEGY_HELP = ("which ordered pairs to judge per context: full = every ordered pair, n(n-1); "
                 "random = --budget ordered pairs drawn at random; no-repeat = --budget pairs, "
                 "each in one random order; symmetric = --budget/2 pairs, each in both orders; "
                 "poe = the pairs that most reduce a product-of-experts ranking's uncertainty; "
                 "adaptive = chosen batch by batch from the verdicts so far")
RANK_FORMAT_HELP = ("table = aligned text for reading; csv = one row per candidate; json = one "
                    "object with the settings and the rows")


class HelpFormatter(argparse.HelpFormatter):
    """Every option's default in its help, unless the help states it already or there is none
    to state (a flag that is off, an option that is unset)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or not action.option_strings or action.default is None
                or action.default is False or action.default is argparse.SUPPRESS
                or action.default == []):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`HelpFormatter` for the command and every
    subcommand (subparsers are made of the parent's class)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="SQLAlchemy URL or a .db file (default: $COMPASSESS_DATABASE_URL or the SQLite "
                        "file in $COMPASSESS_HOME); a file whose folder does not exist is an error "
                        "unless --create is given")
    p.add_argument("--create", action="store_true",
                   help="create a --db file that does not exist yet (and its folder): a command "
                        "that only reads the store refuses a missing file without it")


def _data_args(p: argparse.ArgumentParser) -> None:
    """The candidates a command judges (run, score, tune): a file or a stored dataset, and the
    map of a file whose columns are named otherwise."""
    p.add_argument("data", metavar="DATA", help="candidate CSV/JSONL file, or the name of a stored dataset")
    p.add_argument("--map", metavar="FILE_COLUMN=OURS,...", type=_column_map, default=None,
                   help="the file's columns for ours (context_id, context, candidate_id, text, "
                        "system), e.g. doc=context_id,article=context,summary=text; a file "
                        "only, not a stored dataset")


def _model_args(p: argparse.ArgumentParser) -> None:
    """Options of every command that runs a model (run, score)."""
    p.add_argument("--model", default=None, help="a .gguf file, a local model folder, a hub id or "
                   "openai:URL#NAME (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--contexts", type=int, default=None, help="only the first N contexts")
    p.add_argument("--seed", type=int, default=RunSettings.seed,
                   help="seed of the pair selection and of sampled text: the same seed judges the "
                        "same pairs")
    p.add_argument("--batch-size", type=int, default=RunSettings.batch_size,
                   help="prompts per forward pass, requests in flight for a served judge "
                        "(default: 8 on CPU, sized from free memory on a GPU)")
    p.add_argument("--device", default=RunSettings.device, choices=["auto", "cpu", "cuda"],
                   help=DEVICE_HELP)
    p.add_argument("--dtype", default=RunSettings.dtype,
                   choices=["auto", "float32", "bfloat16", "float16", "bf16-weights"],
                   help=DTYPE_HELP + "; bf16-weights = matrices kept in bf16, computed in fp32 "
                        "(half the memory)")
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


DEVICE_HELP = "where the judge runs: auto = a GPU when there is one, else the CPU; cpu; cuda"
DTYPE_HELP = ("the judge's number format: auto = bfloat16 on a GPU that has it (float16 on one that "
              "has not), float32 on the CPU; "
              "float32, bfloat16, float16")

#: What ``--debias`` takes, everywhere it is taken (``analysis.DEBIAS_CHOICES`` or a number).
DEBIAS_METAVAR = "none|balanced|balanced-per-context|TAU"
DEBIAS_HELP = ("decision threshold (eq. 10): none = 0.5; balanced = the global tau* (P(A) = 0.5 "
               "over all comparisons); balanced-per-context = each context's own tau*; or a "
               "number in (0, 1)")


#: Flags that several commands take with one meaning, by name: ``_shared(p, "method", "json")``
#: (and ``"db"``, the store's flags).
SHARED_FLAGS: dict[str, tuple[str, dict]] = {
    "run": ("--run", dict(required=True, metavar="NAME", help="the stored run's name")),
    "method": ("--method", dict(default=DEFAULT_METHOD, choices=list(METHODS), help=METHOD_HELP)),
    "debias": ("--debias", dict(default=DEFAULT_DEBIAS, metavar=DEBIAS_METAVAR, help=DEBIAS_HELP)),
    "reference": ("--reference", dict(default=None, metavar="COLUMN", help="reference-score column "
                                      "(default: the aspect's column if present)")),
    "format": ("--format", dict(default="table", choices=["table", "csv", "json"],
                                help=RANK_FORMAT_HELP)),
    "json": ("--json", dict(action="store_true", help="print one JSON object")),
}


def _shared(p: argparse.ArgumentParser, *names: str) -> None:
    """Add the :data:`SHARED_FLAGS` ``names`` in that order (``db``: :func:`_db_arg`'s)."""
    for name in names:
        if name == "db":
            _db_arg(p)
        else:
            flag, options = SHARED_FLAGS[name]
            p.add_argument(flag, **options)


def _named(p: argparse.ArgumentParser, what: str, *shared: str) -> None:
    """The ``--name`` of the stored object (panel, campaign, tuning) a command acts on, then
    the ``shared`` flags."""
    p.add_argument("--name", required=True, metavar="NAME", help=f"the {what}'s name")
    _shared(p, *shared)


def _read_args(p: argparse.ArgumentParser) -> None:
    """Options of the commands that read a run back (rank, evaluate, export)."""
    _shared(p, "run", "method", "debias")
    p.add_argument("--score", default="level", choices=list(absolute.SCORES),
                   help="absolute runs: 'level' (calibrated, 1..N) or 'score' (the paper's s)")
    p.add_argument("--threshold", type=float, default=None,
                   help="absolute runs: pass/fail at score >= THRESHOLD")
    p.add_argument("--calibrate", action="store_true",
                   help="pairwise runs: read the judge's p calibrated on the stored human labels of "
                        "the run's dataset and aspect (bias and temperature, `compassess calibrate`)")
    _db_arg(p)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="compassess",
        description="LLM comparative assessment: an LLM judges pairs of candidate texts, every "
                    "judgement is stored, judgements become rankings, and the judge's positional "
                    "bias is measured and removed. Try: compassess run "
                    "assets/sample_summeval.csv --aspect coherence; then compassess evaluate "
                    "--run NAME. `compassess COMMAND -h` shows a command's options.",
        epilog="Exit codes: 0 ok; 2 bad input (the message names what and where); 1 other "
               "failure; 130 interrupted (everything computed is stored: the same command "
               "resumes).")
    parser.add_argument("--version", action="version", version=f"compassess {__version__}")
    # `compassess --db runs.db run ...` as well as `compassess run ... --db runs.db`: the
    # store is named before the command the way git's -C is (`parse_args` folds it in).
    parser.add_argument("--db", dest="db_before_command", metavar="URL", default=None,
                        help="the store, for any command (as its own --db)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="judge pairs of candidates with an LLM and store every comparison")
    _data_args(r)
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
    r.add_argument("--strategy", default=RunSettings.strategy, choices=list(STRATEGIES),
                   help=STRATEGY_HELP)
    r.add_argument("--budget", type=int, default=None,
                   help="comparisons per context (random, no-repeat, symmetric, poe, adaptive)")
    _model_args(r)

    s = sub.add_parser("score", help="absolute score per candidate: compare it with synthetic "
                       "references of quality 1..N (thresholdable)")
    _data_args(s)
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
    s.add_argument("--temperature", type=float, default=GenerationOptions.temperature,
                   help="sampling temperature of the references with --sample")
    _model_args(s)

    k = sub.add_parser("rank", help="rank the candidates of a run")
    _read_args(k)
    _shared(k, "format")
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
    _read_args(e)
    _shared(e, "reference", "json")

    x = sub.add_parser("export", help="write rankings or all comparisons with the run's settings")
    _read_args(x)
    x.add_argument("--what", required=True, choices=["rankings", "comparisons"],
                   help="rankings = one row per candidate with its rank and score at --method "
                        "and --debias; comparisons = every stored comparison with its p")
    x.add_argument("--format", required=True, choices=["csv", "json", "parquet"],
                   help="csv (with a FILE.settings.json sidecar of the run's settings); json (one "
                        "object, settings inside); parquet (with the sidecar)")
    x.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")
    x.add_argument("--no-ci", dest="ci", action="store_false",
                   help="rankings without the bootstrap 95%% intervals (faster on large runs)")

    lb = sub.add_parser("leaderboard", help="one row per system across all contexts: strength, win "
                        "rate, 95%% context-bootstrap intervals, length bias")
    _shared(lb, "run", "method", "debias", "reference")
    lb.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system: add each system's win rate against it (95%% interval) and "
                         "AlpacaEval 2.0's length-controlled win rate against it (its GLM "
                         "regularised toward the baseline only with its verbose and concise "
                         "rewrites in the run)")
    lb.add_argument("--bootstrap", type=_bootstrap, default=1000, metavar="B",
                    help="context-bootstrap replicates of the 95%% intervals (default 1000)")
    lb.add_argument("--format", default="table", choices=["table", "csv", "json"],
                    help="table = aligned text with the notes; csv = one row per system; json = "
                         "one object with every table")
    _db_arg(lb)

    cp = sub.add_parser("compare", help="two runs on the same dataset: verdict agreement, kappa, "
                        "rank correlation, the pairs they disagree on")
    cp.add_argument("--run", required=True, action="append", metavar="NAME",
                    help="give it twice: --run A --run B")
    cp.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS),
                    help=METHOD_HELP + " (for the rank correlations)")
    cp.add_argument("--debias", default=DEFAULT_DEBIAS, metavar=DEBIAS_METAVAR,
                    help="each run's threshold (none = 0.5; balanced: each run's own tau*; "
                         "balanced-per-context: each run's tau* of each context; or a number)")
    _shared(cp, "json", "db")

    rp = sub.add_parser("report", help="the audit report of one or several pairwise runs: one "
                        "self-contained HTML file (setup, leaderboard, positional and length bias, "
                        "human agreement, evaluation, the most order-dependent and disputed "
                        "comparisons with their prompts, methods) that opens offline")
    rp.add_argument("--run", required=True, action="append", metavar="NAME",
                    help="a run to report; give it again for several (--run A --run B): each "
                         "gets its section, and runs on the same dataset are compared")
    rp.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    _shared(rp, "method", "debias")
    rp.add_argument("--bootstrap", type=_bootstrap, default=200, metavar="B",
                    help="context-bootstrap replicates of the leaderboard's 95%% intervals "
                         "(default 200, as the app)")
    rp.add_argument("--examples", type=int, default=EXAMPLES, metavar="N",
                    help=f"order-dependent and human-disputed comparisons shown with their prompts "
                         f"(default {EXAMPLES} each)")
    rp.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system to report each system's win rate against (with its 95%% "
                         "interval and AlpacaEval's length-controlled win rate), as `leaderboard "
                         "--baseline`")
    _db_arg(rp)

    f = sub.add_parser("fetch-model", help="download the bundled default model into the cache (offline afterwards)")
    f.add_argument("--print-path", action="store_true",
                   help="print where the model is stored (fetching it first when missing)")

    d = sub.add_parser("datasets", help="list stored datasets")
    _db_arg(d)
    u = sub.add_parser("runs", help="list stored runs")
    _shared(u, "json", "db")

    il = sub.add_parser("import-labels", help="store human A/B labels from a CSV/JSONL file "
                        "(context_id, candidate_a, candidate_b, winner[, annotator])")
    il.add_argument("file", metavar="FILE")
    il.add_argument("--dataset", required=True, metavar="NAME", help="stored dataset the labels refer to")
    il.add_argument("--aspect", default="overall", help="aspect the people judged (default: overall)")
    il.add_argument("--annotator", metavar="NAME",
                    help="attribute every label to NAME (default: the file's annotator column; "
                         "rows without one: 'imported')")
    il.add_argument("--map", metavar="FILE_COLUMN=LABEL_COLUMN,...", type=_column_map,
                    help="the file's columns for the label columns, e.g. question_id=context_id,"
                         "model_a=candidate_a,model_b=candidate_b,judge=annotator (a winner of "
                         "model_a/model_b then names that side)")
    _db_arg(il)

    ag = sub.add_parser("agreement", help="LLM vs human labels: accuracy, Cohen's kappa, raw and debiased")
    _shared(ag, "run")
    ag.add_argument("--labels", default="stored", metavar="FILE_OR_STORED",
                    help="a labels file, or 'stored' for the labels in the store (same dataset and aspect)")
    _shared(ag, "debias")
    ag.add_argument("--bootstrap", type=_bootstrap, default=AGREEMENT_BOOT, metavar="B",
                    help=f"replicates of the 95%% intervals of accuracy and kappa (cluster "
                         f"bootstrap: contexts, then pairs within them) and the ranking "
                         f"correlation (contexts) (default {AGREEMENT_BOOT})")
    ag.add_argument("--ties", choices=("none", "flip"), default="none",
                    help="the LLM's tie verdict: none (always A or B), or flip: a pair whose "
                         "verdict changes with the order is a tie (FastChat's rule)")
    ag.add_argument("--tie-band", type=float, default=0.0, metavar="DELTA",
                    help="also call a tie when |p_avg - 0.5| < DELTA (default 0: no band)")
    _shared(ag, "json", "db")

    cal = sub.add_parser("calibrate", help="fit the judge's bias and temperature on human A/B labels; "
                         "accuracy, log-loss and calibration error before and after (held-out folds)")
    _shared(cal, "run")
    cal.add_argument("--aspect", default=None, help="aspect of the human labels (default: the run's)")
    cal.add_argument("--folds", type=int, default=DEFAULT_FOLDS, help="cross-validation folds of "
                     f"labelled pairs (default {DEFAULT_FOLDS})")
    cal.add_argument("--seed", type=int, default=0, help="seed of the folds")
    _shared(cal, "json", "db")

    mo = sub.add_parser("models", help="the judges on this machine (the bundled one and the models "
                        "folder) with size, context window and the speed measured here")
    _shared(mo, "json", "db")

    w = sub.add_parser("worker", help="execute (or resume) runs stored in the database from their settings")
    w.add_argument("--run", required=True, metavar="NAME", action="append",
                   help="a run's name; give several (--run A --run B) to judge them together in one "
                        "pass with one judge")
    w.add_argument("--chunk-size", type=int, default=None, metavar="N",
                   help="prompts per judge call (default 128): the scope of the judge's prefix "
                        "cache; results are stored after every micro-batch whatever this is")
    _db_arg(w)
    _manage_parsers(sub)
    _tuning_parsers(sub)
    _job_parsers(sub)
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
        delete.add_argument(noun, required=True, metavar="NAME", help=f"the stored {what}'s name")
        delete.add_argument("--yes", action="store_true", help=yes_help)
        _db_arg(delete)
        rename = sub.add_parser(f"rename-{what}", help=rename_help)
        rename.add_argument(noun, required=True, metavar="NAME", help=f"the stored {what}'s name")
        rename.add_argument("--to", required=True, metavar="NEW", help="its new name")
        _db_arg(rename)

    cg = sub.add_parser("campaign", help="annotation campaigns: pairs of a dataset assigned to "
                        "named annotators, several per pair")
    csub = cg.add_subparsers(dest="campaign_command", required=True)
    cc = csub.add_parser("create", help="create an open campaign (its pairs are fixed now)")
    _named(cc, "campaign")
    cc.add_argument("--dataset", required=True, metavar="NAME",
                    help="the stored dataset whose pairs are labelled")
    cc.add_argument("--aspect", required=True, help="what people judge (coherence, overall, ...)")
    cc.add_argument("--annotator", action="append", default=[], metavar="IDENTITY",
                    help="a person who labels the campaign's pairs (repeat the flag)")
    cc.add_argument("--overlap", type=int, default=2, help="people per pair (default 2)")
    cc.add_argument("--pairs", default="all", choices=list(campaigns.SELECTIONS),
                    help="all = every pair of every context; sample = a seeded sample of "
                         "--n-pairs; informative = the --n-pairs that most reduce the ranking's "
                         "uncertainty")
    cc.add_argument("--n-pairs", type=int, default=None, metavar="K",
                    help="pairs to label with --pairs sample or informative")
    cc.add_argument("--seed", type=int, default=0, help="seed of --pairs sample")
    cc.add_argument("--run", default=None, metavar="NAME",
                    help="--pairs informative: also weigh this run's comparisons (default: the "
                         "stored labels alone)")
    cc.add_argument("--guidelines", default=None, metavar="FILE",
                    help="a plain-text file of guidelines shown to the annotators")
    cc.add_argument("--created-by", default=None, metavar="IDENTITY",
                    help="who creates it (default: this account)")
    _db_arg(cc)
    ca_ = csub.add_parser("assign", help="assign (or with --remove, unassign) people")
    _named(ca_, "campaign")
    ca_.add_argument("--annotator", action="append", required=True, metavar="IDENTITY",
                     help="a person to assign (repeat the flag)")
    ca_.add_argument("--remove", action="store_true",
                     help="take them off the campaign (their answers stay)")
    _db_arg(ca_)
    cs = csub.add_parser("status", help="progress per annotator and inter-annotator agreement")
    _named(cs, "campaign", "json", "db")
    cx = csub.add_parser("export", help="write the campaign's labels (answers and adjudications)")
    _named(cx, "campaign")
    cx.add_argument("--format", default="csv", choices=["csv", "json"],
                    help="csv (with a FILE.settings.json sidecar naming the campaign) or json (one "
                         "object, the campaign inside)")
    cx.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")
    _db_arg(cx)
    cl = csub.add_parser("close", help="close a campaign: no new answer (adjudication still possible)")
    _named(cl, "campaign", "db")

    pn = sub.add_parser("panel", help="panels of judges: several runs on the same dataset and "
                        "aspect combined into one debiased verdict per pair")
    psub = pn.add_subparsers(dest="panel_command", required=True)
    pc = psub.add_parser("create", help="store a panel of two or more runs")
    _named(pc, "panel")
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
    _named(pr, "panel", "method")
    pr.add_argument("--debias", default="none", metavar="none|balanced|TAU",
                    help="threshold on the combined p (default none: its members are debiased "
                         "already)")
    _shared(pr, "format")
    pr.add_argument("--json", action="store_true", help="print one JSON object (as --format json)")
    _db_arg(pr)
    pe = psub.add_parser("evaluate", help="the panel's Spearman and positional bias beside each "
                         "member's, how the members agree, and the panel against its best "
                         "member on the same labelled pairs (paired interval, McNemar's p)")
    _named(pe, "panel", "method")
    pe.add_argument("--debias", default=DEFAULT_DEBIAS, metavar="none|balanced|TAU",
                    help="threshold on the combined p and on each member's")
    _shared(pe, "reference")
    pe.add_argument("--bootstrap", type=_bootstrap, default=1000, metavar="N",
                    help="resamples of the paired interval against the best member")
    _shared(pe, "json", "db")
    pp = psub.add_parser("report", help="the panel's audit report: one self-contained HTML "
                         "file (its members, leaderboard, bias, agreement with people, the most "
                         "order-dependent and disputed comparisons with each member's p)")
    _named(pp, "panel")
    pp.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    _shared(pp, "method")
    pp.add_argument("--debias", default="none", metavar="none|balanced|TAU",
                    help="threshold on the combined p (default none: its members are debiased "
                         "already)")
    pp.add_argument("--bootstrap", type=_bootstrap, default=200, metavar="B",
                    help="context-bootstrap replicates of the leaderboard's 95%% intervals")
    pp.add_argument("--baseline", default=None, metavar="SYSTEM",
                    help="a system to report each system's win rate against")
    _db_arg(pp)
    pl = psub.add_parser("list", help="list stored panels")
    _shared(pl, "json", "db")
    pd_ = psub.add_parser("delete", help="delete a panel's definition (its runs stay)")
    _named(pd_, "panel")
    pd_.add_argument("--json", action="store_true", help="print what was deleted as one JSON object")
    _db_arg(pd_)

    jg = sub.add_parser("judges", help="the leaderboard of judges: every run and panel on a "
                        "dataset and aspect, ranked by agreement with people (or the reference)")
    jg.add_argument("--dataset", required=True, metavar="NAME", help="the stored dataset")
    jg.add_argument("--aspect", required=True, help="the aspect the runs judged")
    jg.add_argument("--reference", default=None, metavar="COLUMN",
                    help="without human labels: rank by Spearman with this column (default: the "
                         "aspect's column)")
    jg.add_argument("--bootstrap", type=_bootstrap, default=1000, metavar="B",
                    help="bootstrap resamples of the labelled pairs for the 95%% intervals")
    _shared(jg, "json", "db")




def _tuning_parsers(sub) -> None:
    """``tune``, ``templates`` and ``explain``: the judge's wording tuned without labels, the
    named templates, the judge's reasons for a stored verdict."""
    t = sub.add_parser("tune", help="tune the judge's instruction without labels: judge the "
                       "library's wordings, built-in paraphrases and paraphrases a writer model "
                       "writes; a wording replaces T1 only when it is fairer (per-context A-rate "
                       "closer to 0.5, ZEPO) outside the paired 95%% interval; save the pick as a "
                       "named template")
    _data_args(t)
    t.add_argument("--aspect", required=True, help="preset (coherence, ...) or your own adjective")
    t.add_argument("--task", default="auto", choices=["auto", *TASKS],
                   help="wording of the library's templates (auto: from the data and the aspect)")
    t.add_argument("--contexts", type=int, default=None, metavar="N",
                   help=f"tune on the first N contexts (default {TuningOptions.contexts}, or as "
                        "many as the data has beside the --holdout ones when it has fewer)")
    t.add_argument("--holdout", type=int, default=0, metavar="M",
                   help="also judge the next M contexts and measure each wording's agreement with "
                        "the human labels or reference scores there (never used to pick)")
    t.add_argument("--pairs", type=int, default=None, metavar="K",
                   help="comparisons per context, both orders of each pair (default: every "
                        "ordered pair)")
    t.add_argument("--rounds", type=int, default=TuningOptions.rounds, metavar="R",
                   help="greedy rounds of paraphrases the writer writes of the fairest wording "
                        f"(default {TuningOptions.rounds}; 0: the starting wordings only)")
    t.add_argument("--writer", default="", metavar="MODEL",
                   help="who writes the paraphrases: a model as --model names it (a served "
                        "openai:BASE_URL#MODEL or a local model), or 'judge' for the judge "
                        "itself (default: none, the starting wordings only)")
    t.add_argument("--per-round", type=int, default=TuningOptions.per_round, metavar="K",
                   help=f"paraphrases asked for per round (default {TuningOptions.per_round})")
    t.add_argument("--budget", type=int, default=None, metavar="N",
                   help="most comparisons over all wordings (default: no cap)")
    t.add_argument("--name", default=None, metavar="NAME",
                   help="the tuning's name and the template it saves (default: "
                        "dataset-aspect-model); the same name resumes")
    t.add_argument("--model", default=None, help="the judge, as `compassess run --model`")
    t.add_argument("--seed", type=int, default=0,
                   help="seed of the pairs judged with --pairs and of the judge's paraphrases")
    t.add_argument("--batch-size", type=int, default=RunSettings.batch_size,
                   help="as `compassess run --batch-size`")
    t.add_argument("--device", default=RunSettings.device, choices=["auto", "cpu", "cuda"],
                   help=DEVICE_HELP)
    t.add_argument("--dtype", default=RunSettings.dtype,
                   choices=["auto", "float32", "bfloat16", "float16"], help=DTYPE_HELP)
    t.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads for the model (default: all cores)")
    t.add_argument("--truncate-context", action="store_true",
                   help="cut a context passage that would not fit the model's context window "
                        "instead of refusing")
    t.add_argument("--plan", action="store_true",
                   help="print the cost and stop; nothing is stored")
    t.add_argument("--json", action="store_true", help="print the result as one JSON object")
    _db_arg(t)

    tl = sub.add_parser("tunings", help="list stored tunings (name, dataset, aspect, status, "
                        "wordings, runs)")
    tl.add_argument("--dataset", default=None, metavar="NAME", help="only this dataset's")
    _shared(tl, "json", "db")
    td = sub.add_parser("delete-tuning", help="delete a stored tuning with the runs of its "
                        "wordings (asks first; the template it saved stays)")
    _named(td, "tuning")
    td.add_argument("--yes", action="store_true",
                    help="delete without asking (needed when the input is not a terminal; "
                         "without it the command only prints what would be deleted and exits "
                         "with code 2)")
    _db_arg(td)
    tr = sub.add_parser("rename-tuning", help="give a stored tuning another name (its runs and "
                        "its template follow)")
    _named(tr, "tuning")
    tr.add_argument("--to", required=True, metavar="NEW", help="its new name")
    _db_arg(tr)

    tp = sub.add_parser("templates", help="list the named templates (a tuning's pick, or your own)")
    tp.add_argument("--show", default=None, metavar="NAME", help="print one template's text")
    tp.add_argument("--delete", default=None, metavar="NAME", help="delete a named template")
    _db_arg(tp)

    ex = sub.add_parser("explain", help="the judge's reasons for its verdict on a stored "
                        "comparison, in both orders (asked once, then stored)")
    _shared(ex, "run")
    ex.add_argument("--context", required=True, metavar="ID", help="the context's id")
    ex.add_argument("--a", required=True, metavar="ID", help="the candidate in position A")
    ex.add_argument("--b", required=True, metavar="ID", help="the candidate in position B")
    ex.add_argument("--max-tokens", type=int, default=EXPLAIN_TOKENS, metavar="N",
                    help=f"tokens the judge may write per order (default {EXPLAIN_TOKENS})")
    ex.add_argument("--stored", action="store_true",
                    help="only print what is stored; never load the judge")
    _shared(ex, "debias", "json", "db")


def _job_parsers(sub) -> None:
    """``job start|status|cancel|log KIND NAME``: any background job, the app's way."""
    from ..api.jobs import JOB_KINDS
    jb = sub.add_parser("job", help="start a run, a tuning or the judge's reasons in a worker "
                        "process of its own, as the app does; watch, cancel or resume it")
    jsub = jb.add_subparsers(dest="job_command", required=True)
    for action, text in (("start", "start (or resume) it in a worker process; returns at once"),
                         ("status", "where it stands: state, done/total, its last message"),
                         ("cancel", "ask its worker to stop (what it did is kept)"),
                         ("log", "the last lines its worker wrote")):
        p = jsub.add_parser(action, help=text)
        p.add_argument("kind", choices=list(JOB_KINDS),
                       help="run (several names: judged together), tuning, or explanation "
                            "(a run's name and a pair)")
        p.add_argument("name", nargs="+", metavar="NAME", help="the stored run's or tuning's name")
        for kind in JOB_KINDS.values():   # each kind's parameters; another kind's is refused
            for param in kind.params:
                p.add_argument(f"--{param.name.replace('_', '-')}", dest=param.name,
                               type=param.type, default=None, help=f"{kind.name}: {param.help}")
        if action == "status":
            p.add_argument("--json", action="store_true", help="print one JSON object")
        if action == "log":
            p.add_argument("--lines", type=int, default=20, metavar="N",
                           help="how many of its last lines (default 20)")
        _db_arg(p)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The parsed command line, with a ``--db`` given before the command folded into the
    command's own ``--db`` (the same store named twice is fine; two stores are an error)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    command = _command_parser(parser, args)
    if extra:  # the usage of the command it was given to, not the top level's
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    before = args.__dict__.pop("db_before_command")
    if before is not None:
        if getattr(args, "db", None) not in (None, before):
            parser.error(f"--db names two stores: '{before}' before the command and "
                         f"'{args.db}' after it")
        args.db = before
    if getattr(args, "db", None) is not None:
        folder = sqlite_folder(args.db)
        if folder is not None and not folder.is_dir():
            if not getattr(args, "create", False):
                command.error(f"--db {args.db}: the folder '{folder}' does not exist (give "
                              "--create to create it and a new store in it)")
            folder.mkdir(parents=True, exist_ok=True)
    return args


def _command_parser(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command ``args`` was parsed for (``panel rank``'s for ``compassess
    panel rank ...``)."""
    current = parser
    while True:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or getattr(args, subs[0].dest, None) not in subs[0].choices:
            return current
        current = subs[0].choices[getattr(args, subs[0].dest)]


def sqlite_folder(db: str) -> Path | None:
    """The folder of a SQLite file that ``--db`` names (a path ending in .db, .sqlite or
    .sqlite3, or a ``sqlite:///`` URL); None for an in-memory store or another database."""
    text = db.strip()
    if text.lower().startswith("sqlite:///"):
        path = text[len("sqlite:///"):].split("?", 1)[0]
        if not path or path == ":memory:":
            return None
        return Path(path).expanduser().resolve().parent
    if "://" not in text and text.lower().endswith((".db", ".sqlite", ".sqlite3")):
        return Path(text).expanduser().resolve().parent
    return None
