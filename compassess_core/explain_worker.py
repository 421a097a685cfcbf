"""``python -m compassess_core.explain_worker --run-id N --context=C --first=X --second=Y``: ask
a run's judge for the reasons of its verdicts on one pair (``api.Run.explain``) in a process of
its own, as the app does (a judge is never run in the web server), and store them. Its output
goes to the log file its starter gave it; the exit code is the CLI's (0 ok, 2 bad input, 1 other
failure)."""

from __future__ import annotations

import argparse
import sys

from . import background


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compassess_core.explain_worker",
                                     description="ask a run's judge for its reasons on one pair")
    parser.add_argument("--run-id", type=int, required=True)
    parser.add_argument("--context", required=True)
    parser.add_argument("--first", required=True)
    parser.add_argument("--second", required=True)
    parser.add_argument("--max-tokens", type=int, default=None)
    args = parser.parse_args(argv)
    url = background.prepare_process()
    from .api import open_store
    from .explanations import EXPLAIN_TOKENS

    def explain() -> None:
        run = open_store(url or None).get_run(args.run_id)
        print(f"asking the judge of run '{run.name}' for its reasons on '{args.first}' vs "
              f"'{args.second}' in context '{args.context}'", flush=True)
        done = run.explain(args.context, args.first, args.second,
                           max_tokens=args.max_tokens or EXPLAIN_TOKENS)
        print(f"stored: {sum(o.text is not None for o in done.orders)} order(s)", flush=True)
    return background.exit_code(explain)


if __name__ == "__main__":
    sys.exit(main())
