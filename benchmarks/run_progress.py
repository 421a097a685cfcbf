"""How a run reports progress, and how fast it stops when asked: a measurement, not a test.

Each measurement starts ``compassess run DATA --aspect coherence`` in a subprocess on a fresh
temporary SQLite database and watches it only through the store (``Store.get_run`` every 0.1 s),
as the app does, so the script works unchanged whatever the run engine looks like inside.
Per workload it reports, as median / min / max over ``--repeat`` runs:

* start-up: seconds from process start to the run's first ``running`` status, and to the first
  progress update (first poll with ``done > 0`` or ``n_comparisons > 0``), also counted from
  ``running``;
* progress while computing: polls where ``done`` or ``n_comparisons`` grew, per minute between
  ``running`` and the end, and the largest gap in seconds between ``running``, the updates and
  the end (a run that shows nothing until it finishes has one gap: its whole run);
* stopping, each in its own run: 3 s after ``running`` (or, with ``--stop-when computing``, 1 s
  after the first progress update, while the judge computes), ``Store.request_cancel`` (the app's
  Cancel button) or SIGTERM to the CLI process; then seconds from the request to status
  ``cancelled`` and to process exit. A run that completes instead is reported as "not honoured",
  with the seconds from the request to completion.

It also reports the seconds from the judge being loaded (the worker's ``planning`` phase begins,
as the run's status records it) to the first progress update.

Workloads: ``sample`` (assets/sample_summeval.csv, 3 contexts x 5 summaries, 60 comparisons),
``summeval`` (summeval.csv in ``--data-dir``, first context, 16 summaries, 240 comparisons;
skipped with a message when the file is absent) and ``stories`` (HANNA-length stories: 4 story
prompts x 6 stories of about 1,000 words, made from the SummEval articles, else from the
sample's, joined to that length; 120 comparisons of about 2,800 prompt tokens each). The judge
is the bundled default model.

    PYTHONPATH=. .venv/bin/python benchmarks/run_progress.py --repeat 3
    PYTHONPATH=. .venv/bin/python benchmarks/run_progress.py --workloads sample --repeat 1 --json out.json
    PYTHONPATH=. .venv/bin/python benchmarks/run_progress.py --workloads sample,stories --stop-when computing

``compassess`` is taken from the interpreter's folder (else PATH) and loads this checkout's code
(the repository root is put on PYTHONPATH). Times depend on the machine's load; the script never
asserts anything. About 10-15 minutes per workload at ``--repeat 3`` on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compassess_core.errors import RunNotFoundError  # noqa: E402
from db.store import RunInfo, Store  # noqa: E402

POLL_S = 0.1
STOP_AFTER_S = 3.0       # the cancel / SIGTERM is sent this long after the run shows `running`
STATUS_GRACE_S = 3.0     # after the process exits, how long to wait for a final status
RUN_TIMEOUT_S = 1800.0   # a run that takes longer is killed and reported
TERMINAL = frozenset({"completed", "cancelled", "failed"})
RUN_NAME = "bench-run-progress"


@dataclass(frozen=True)
class Workload:
    name: str
    data: Path
    contexts: int | None


@dataclass(frozen=True)
class Poll:
    t: float              # seconds since the CLI process was started
    status: str | None    # None while the run does not exist yet (model still loading)
    done: int
    n: int
    wall: float = 0.0     # time.time() of the poll
    phase: str | None = None
    phase_at: float | None = None   # when the phase began (the worker's clock), time.time()


@dataclass
class Trace:
    """What one run looked like from the store, plus when the process exited."""
    polls: list[Poll] = field(default_factory=list)
    exit_t: float | None = None
    returncode: int | None = None
    stop_t: float | None = None    # when the cancel / SIGTERM was sent
    stderr_tail: str = ""

    def first(self, pred: Callable[[Poll], bool]) -> Poll | None:
        return next((p for p in self.polls if pred(p)), None)

    @property
    def final_status(self) -> str | None:
        return self.polls[-1].status if self.polls else None


def cli_path() -> str:
    # The console script next to the interpreter is the one of this virtualenv.
    here = Path(sys.executable).parent / "compassess"
    found = str(here) if here.exists() else shutil.which("compassess")
    if not found:
        sys.exit("compassess not found next to the interpreter or on PATH")
    return found


def start_cli(work: Workload, url: str, threads: int | None, log: Path) -> subprocess.Popen:
    cmd = [cli_path(), "run", str(work.data), "--aspect", "coherence", "--run", RUN_NAME,
           "--db", url]
    if work.contexts:
        cmd += ["--contexts", str(work.contexts)]
    if threads:
        cmd += ["--threads", str(threads)]
    env = dict(os.environ)
    # The CLI must run this checkout's code, not whatever the virtualenv has installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with open(log, "wb") as err:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)


def read_run(store: Store, t: float) -> tuple[Poll, RunInfo | None]:
    wall = time.time()
    try:
        info = store.get_run(RUN_NAME)
    except RunNotFoundError:
        return Poll(t, None, 0, 0, wall), None
    phase_at = getattr(info, "phase_at", None)
    return Poll(t, info.status, int(info.done or 0), int(info.n_comparisons or 0), wall,
                getattr(info, "phase", None),
                phase_at.timestamp() if phase_at is not None else None), info


def observe(work: Workload, threads: int | None, stop: Callable[[subprocess.Popen, Store, RunInfo],
            None] | None = None, stop_when: str = "running") -> Trace:
    """One run on a fresh database, polled until it ends; ``stop`` is called 3 s after `running`
    (``stop_when="running"``) or 1 s after the first progress update (``"computing"``: the judge
    is then busy with a batch; a run that shows no progress before it ends is never stopped)."""
    tmp = Path(tempfile.mkdtemp(prefix="compassess-bench-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    # Opened (and so migrated) before the CLI starts, so polling never waits on a migration.
    store = Store(url)
    trace = Trace()
    t0 = time.monotonic()
    proc = start_cli(work, url, threads, tmp / "stderr.log")

    def wait_exit() -> None:  # exact exit time, not rounded to the poll interval
        trace.returncode = proc.wait()
        trace.exit_t = time.monotonic() - t0
    waiter = threading.Thread(target=wait_exit, daemon=True)
    waiter.start()
    running_t: float | None = None
    progress_t: float | None = None
    try:
        while True:
            tick = time.monotonic()
            poll, info = read_run(store, tick - t0)
            trace.polls.append(poll)
            if running_t is None and poll.status == "running":
                running_t = poll.t
            if progress_t is None and (poll.done > 0 or poll.n > 0):
                progress_t = poll.t
            due = (running_t + STOP_AFTER_S if stop_when == "running" and running_t is not None
                   else progress_t + 1.0 if stop_when == "computing" and progress_t is not None
                   else None)
            if (stop and trace.stop_t is None and info is not None and due is not None
                    and poll.status not in TERMINAL and poll.t >= due):
                trace.stop_t = time.monotonic() - t0
                stop(proc, store, info)
            if trace.exit_t is not None and (poll.status in TERMINAL
                                             or poll.t > trace.exit_t + STATUS_GRACE_S):
                break
            if poll.t > RUN_TIMEOUT_S:
                trace.stderr_tail = f"killed after {RUN_TIMEOUT_S:.0f} s"
                break
            time.sleep(max(0.0, POLL_S - (time.monotonic() - tick)))
    finally:
        if proc.poll() is None:  # never leave a worker behind, whatever went wrong
            proc.kill()
        waiter.join()
        store.close()
        lines = (tmp / "stderr.log").read_text(errors="replace").strip().splitlines()
        trace.stderr_tail = trace.stderr_tail or "\n".join(lines[-3:])
        shutil.rmtree(tmp, ignore_errors=True)
    return trace


def progress_metrics(tr: Trace) -> dict[str, float]:
    out: dict[str, float] = {}
    running = tr.first(lambda p: p.status == "running")
    progressed = tr.first(lambda p: p.done > 0 or p.n > 0)
    end = tr.first(lambda p: p.status in TERMINAL)
    end_t = end.t if end else tr.exit_t
    if running:
        out["start -> running (s)"] = running.t
    if progressed:
        out["start -> first progress (s)"] = progressed.t
        if running:
            out["running -> first progress (s)"] = progressed.t - running.t
    planning = tr.first(lambda p: p.phase == "planning" and p.phase_at is not None)
    if planning and progressed:
        out["judge loaded -> first progress (s)"] = progressed.wall - planning.phase_at
    if running and end_t is not None and end_t > running.t:
        updates = [b.t for a, b in zip(tr.polls, tr.polls[1:]) if b.done > a.done or b.n > a.n]
        out["progress updates per minute"] = len(updates) / ((end_t - running.t) / 60)
        marks = [running.t, *updates, end_t]
        out["largest gap between updates (s)"] = max(b - a for a, b in zip(marks, marks[1:]))
    return out


def stop_metrics(tr: Trace, how: str) -> tuple[dict[str, float], str | None]:
    """Seconds from the stop request to `cancelled` and to exit, or why there are none."""
    if tr.stop_t is None:
        return {}, f"{how}: the run ended ({tr.final_status}) before the request could be sent"
    out: dict[str, float] = {}
    cancelled = tr.first(lambda p: p.t >= tr.stop_t and p.status == "cancelled")
    completed = tr.first(lambda p: p.t >= tr.stop_t and p.status == "completed")
    if cancelled:
        out[f"{how}: request -> cancelled (s)"] = cancelled.t - tr.stop_t
    if tr.exit_t is not None:
        out[f"{how}: request -> process exit (s)"] = tr.exit_t - tr.stop_t
    if completed and not cancelled:
        out[f"{how}: NOT honoured, request -> completed (s)"] = completed.t - tr.stop_t
    note = None if cancelled or completed else (
        f"{how}: final status {tr.final_status!r}, exit code {tr.returncode}")
    return out, note


def request_cancel(proc: subprocess.Popen, store: Store, info: RunInfo) -> None:
    store.request_cancel(info.id)


def send_sigterm(proc: subprocess.Popen, store: Store, info: RunInfo) -> None:
    proc.send_signal(signal.SIGTERM)


def measure(work: Workload, repeat: int, threads: int | None,
            results: dict[tuple[str, str], list[float]], notes: list[str],
            stop_when: str = "running", stops_only: bool = False,
            hows: tuple[str, ...] = ("store cancel", "SIGTERM")) -> None:
    def record(values: dict[str, float]) -> None:
        for metric, v in values.items():
            results.setdefault((work.name, metric), []).append(v)

    # Interleaved, so a burst of load on the shared machine hits every kind of run alike.
    for i in range(1, repeat + 1):
        for how, stop in (("progress", None), ("store cancel", request_cancel),
                          ("SIGTERM", send_sigterm)):
            if (how == "progress" and stops_only) or (how != "progress" and how not in hows):
                continue
            print(f"[{work.name} {i}/{repeat}] {how} ...", file=sys.stderr, flush=True)
            tr = observe(work, threads, stop, stop_when)
            if stops_only:  # the start-up of a stopped run is a start-up like any other
                record({k: v for k, v in progress_metrics(tr).items() if "->" in k
                        and "first progress" in k})
            if how == "progress":
                record(progress_metrics(tr))
                if tr.final_status != "completed" or tr.returncode != 0:
                    notes.append(f"{work.name} #{i} progress run: status {tr.final_status!r}, exit "
                                 f"{tr.returncode}: {tr.stderr_tail}")
            else:
                values, note = stop_metrics(tr, how)
                record(values)
                if note:
                    notes.append(f"{work.name} #{i} {note}: {tr.stderr_tail}")
            print(f"    done in {tr.polls[-1].t:.1f} s, status {tr.final_status}, exit "
                  f"{tr.returncode}", file=sys.stderr, flush=True)


def workloads(names: list[str], data_dir: Path) -> list[Workload]:
    out = []
    for name in names:
        if name == "sample":
            out.append(Workload("sample", ROOT / "assets" / "sample_summeval.csv", None))
        elif name == "summeval":
            path = data_dir / "summeval.csv"
            if path.exists():
                out.append(Workload("summeval", path, 1))
            else:
                print(f"skipping summeval: {path} does not exist (see --data-dir)", file=sys.stderr)
        elif name == "stories":
            out.append(Workload("stories", story_file(data_dir), None))
        else:
            sys.exit(f"unknown workload {name!r}: use sample, summeval and/or stories")
    return out


STORY_WORDS = 1000


def story_file(data_dir: Path, n_prompts: int = 4, n_stories: int = 6) -> Path:
    """A candidate file of HANNA's size: ``n_prompts`` story prompts x ``n_stories`` stories of
    about ``STORY_WORDS`` words (real English: the SummEval articles, else the sample's, joined
    to that length), written to a temporary folder."""
    import csv
    source = data_dir / "summeval.csv"
    if not source.exists():
        source = ROOT / "assets" / "sample_summeval.csv"
    with open(source, newline="", encoding="utf-8") as f:
        articles = list(dict.fromkeys(row["context"] for row in csv.DictReader(f)))
    words = " ".join(articles).split()
    out = Path(tempfile.mkdtemp(prefix="compassess-stories-")) / "stories.csv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["context_id", "context", "candidate_id", "text", "system"])
        for c in range(n_prompts):
            prompt = f"Write a story about {' '.join(words[37 * c: 37 * c + 12])}."
            for k in range(n_stories):
                start = (STORY_WORDS * (c * n_stories + k) + 101 * k) % max(len(words) - STORY_WORDS, 1)
                w.writerow([f"p{c}", prompt, f"p{c}-s{k}", " ".join(words[start:start + STORY_WORDS]),
                            f"writer{k}"])
    return out


def summary_rows(results: dict[tuple[str, str], list[float]]) -> list[dict]:
    return [{"workload": w, "metric": m, "median": statistics.median(v), "min": min(v),
             "max": max(v), "n": len(v), "values": v} for (w, m), v in results.items()]


def print_table(rows: list[dict], notes: list[str]) -> None:
    print("| workload | metric | median | min | max | n |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['workload']} | {r['metric']} | {r['median']:.2f} | {r['min']:.2f} | "
              f"{r['max']:.2f} | {r['n']} |")
    for note in notes:
        print(f"\n* {note}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (default 3)")
    ap.add_argument("--workloads", default="sample,summeval",
                    help="comma-separated: sample, summeval, stories (default sample,summeval)")
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data",
                    help="folder holding summeval.csv (default ../shared/data from the repository)")
    ap.add_argument("--threads", type=int, help="passed on to compassess run --threads")
    ap.add_argument("--stop-when", choices=["running", "computing"], default="running",
                    help="send the cancel / SIGTERM 3 s after the run shows `running` (default) or "
                         "1 s after its first progress update, while the judge computes a batch")
    ap.add_argument("--stops-only", action="store_true",
                    help="no full run: only the stopped ones (their start-up is measured too)")
    ap.add_argument("--stops", default="store cancel,SIGTERM",
                    help="comma-separated: which stops to send (default both)")
    ap.add_argument("--json", type=Path, metavar="FILE",
                    help="also write the results (every value) and notes as JSON to FILE")
    args = ap.parse_args(argv)

    results: dict[tuple[str, str], list[float]] = {}
    notes: list[str] = []
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for work in workloads(names, args.data_dir):
        measure(work, args.repeat, args.threads, results, notes, args.stop_when, args.stops_only,
                tuple(h.strip() for h in args.stops.split(",")))
    if not results:
        print("nothing was measured", file=sys.stderr)
        return 1
    rows = summary_rows(results)
    print_table(rows, notes)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "notes": notes}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
