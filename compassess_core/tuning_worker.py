"""``python -m compassess_core.tuning_worker --tuning-id N``: execute (resume) a stored tuning of
the judge's instruction (``api.Tuning.execute``) in a process of its own, as the app does (a
judge is never run in the web server). Its output goes to the log file its starter gave it; the
exit code is the CLI's (0 ok, 2 bad input, 1 other failure, 130 stopped)."""

from __future__ import annotations

import argparse
import os
import sys

from . import background
from .worker import ConsoleReporter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compassess_core.tuning_worker",
                                     description="execute (or resume) a stored tuning")
    parser.add_argument("--tuning-id", type=int, required=True)
    args = parser.parse_args(argv)
    url = background.prepare_process()
    from .api import open_store

    def execute() -> None:
        tuning = open_store(url or None).tuning(args.tuning_id)
        # The app's allowlist of judge servers holds here too: a stored tuning whose judge is a
        # server not configured for this deployment is refused before any request, as runs are.
        tuning.refuse_unconfigured_judge()
        reporter = ConsoleReporter("comparisons", stream=sys.stdout)
        reporter.message(f"tuning worker {os.getpid()} "
                         f"({os.environ['COMPASSESS_THREADS']} CPU thread(s)) on '{tuning.name}'")
        tuning.execute(progress=reporter)
    return background.exit_code(execute)


if __name__ == "__main__":
    sys.exit(main())
