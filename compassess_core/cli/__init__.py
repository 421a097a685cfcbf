"""``compassess`` command line: it parses options and prints; the Python API does the work.

One module per group of commands (``parser``, ``runs``, ``stored``, ``results``, ``manage``,
``tuning``, ``jobs``); ``main`` dispatches to them.

Commands: run, score, rank, evaluate, export, leaderboard, compare, report, import-labels,
agreement, calibrate, models, datasets, runs, delete-run, rename-run, delete-dataset,
rename-dataset, campaign, panel, judges, tune, tunings, delete-tuning, rename-tuning,
templates, explain, worker, job, fetch-model. Exit codes: 0 ok, 2 bad input (message on
stderr naming the problem), 1 other failure, 130 interrupted (everything computed so far is stored;
the same command resumes).
Every command goes through ``compassess_core.api`` (what a notebook calls), which reaches the
store through ``sink.open_store`` (an entry point): the CLI never imports ``db``.
"""


from __future__ import annotations

import os
import re
import sys

from ..errors import InputError, ValidationError
from ..runs.options import OptionError
from ..worker import EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK
from .common import missing_store
from .jobs import cmd_job
from .manage import (cmd_campaign, cmd_delete_dataset, cmd_delete_run, cmd_delete_tuning,
                     cmd_judges, cmd_panel, cmd_rename_dataset, cmd_rename_run, cmd_rename_tuning,
                     cmd_tunings)
from .parser import build_parser, parse_args
from .results import cmd_calibrate, cmd_compare, cmd_leaderboard, cmd_models, cmd_report
from .runs import _flag, cmd_evaluate, cmd_export, cmd_rank, cmd_run, cmd_score, cmd_worker
from .stored import (cmd_agreement, cmd_datasets, cmd_fetch_model, cmd_import_labels,
                     cmd_runs)
from .tuning import cmd_explain, cmd_templates, cmd_tune

__all__ = ["main", "build_parser", "COMMANDS"]


COMMANDS = {"tune": cmd_tune, "templates": cmd_templates, "explain": cmd_explain,
            "campaign": cmd_campaign, "panel": cmd_panel, "judges": cmd_judges, "run": cmd_run, "score": cmd_score, "rank": cmd_rank, "evaluate": cmd_evaluate,
            "export": cmd_export, "import-labels": cmd_import_labels, "agreement": cmd_agreement,
            "calibrate": cmd_calibrate, "models": cmd_models,
            "fetch-model": cmd_fetch_model, "datasets": cmd_datasets, "runs": cmd_runs,
            "worker": cmd_worker, "leaderboard": cmd_leaderboard, "compare": cmd_compare,
            "report": cmd_report,
            "delete-run": cmd_delete_run, "rename-run": cmd_rename_run,
            "delete-dataset": cmd_delete_dataset, "rename-dataset": cmd_rename_dataset,
            "tunings": cmd_tunings, "delete-tuning": cmd_delete_tuning,
            "rename-tuning": cmd_rename_tuning, "job": cmd_job}


#: The engine's plain hint ("Rename a column to 'text' or map one to it (the likeliest is
#: 'response')"), said on the command line as the --map flag that does it.
_MAP_HINT = re.compile(r"column to '([^']+)' or map one to it(?: \(the likeliest is '([^']*)'\))?")


def _as_map_flag(text: str) -> tuple[str, list[str]]:
    """The engine's mapping hints said as the ``--map`` flag (``--map response=text``), and the
    suggested ``FILE_COLUMN=OURS`` items."""
    found: list[str] = []

    def flag(m: re.Match) -> str:
        ours, theirs = m.group(1), m.group(2)
        if not theirs:
            return f"column to '{ours}' or map one to it with --map (--map FILE_COLUMN={ours})"
        found.append(f"{theirs}={ours}")
        return f"column to '{ours}' or map one to it with --map (e.g. --map {theirs}={ours})"
    return _MAP_HINT.sub(flag, text), found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    refused = missing_store(args)
    if refused is not None:  # a mistyped --db, not a new empty store
        print(f"error: {refused}", file=sys.stderr)
        return EXIT_INPUT
    try:
        return COMMANDS[args.command](args)
    except OptionError as e:  # named by its flag
        print(f"error: {e.naming(_flag(e.field))}", file=sys.stderr)
        return EXIT_INPUT
    except InputError as e:
        mapping = (hasattr(args, "map") and isinstance(e, ValidationError)
                   and any(p.cause == "mapping" for p in e.problems))
        # The engine's hint names the Python column_map; on the command line it is --map.
        text, found = _as_map_flag(str(e)) if mapping else (str(e), [])
        print(f"error: {text}", file=sys.stderr)
        if mapping:
            example = (",".join(found) if found else
                       "qid=context_id,left=candidate_a,right=candidate_b"
                       if args.command == "import-labels" else "summary=text,doc=context_id")
            print(f"Map the file's columns with --map FILE_COLUMN=OUR_COLUMN,... (e.g. --map "
                  f"{example}).", file=sys.stderr)
        return EXIT_INPUT
    except PermissionError as e:  # a file or folder named on the command line: bad input
        print(f"error: {e.filename or e}: permission denied (choose a file this user may "
              "read or write)", file=sys.stderr)
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

