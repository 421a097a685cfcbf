"""Where the test suite's CPU goes: a pytest plugin that records when each test ran, and a
report that splits the whole machine's busy CPU among the tests running at each moment.

``--durations`` and ``--cpu-durations`` see a test's own process (and the subprocesses it
waited for); a browser test's cost is mostly in Chromium and the Streamlit server, which they do
not see. Here the machine's busy CPU (``/proc/stat``, every second) is split among the tests that
ran during that second, in proportion to how long each ran in it: a test's *machine share*. Its
sum over the run is the machine's busy CPU. Whether the cores stayed busy (the workers had work)
is the first line of the report, per 30 s.

Record (the plugin in every xdist worker; the sampler in the controlling process)::

    SUITE_TIMELINE=/tmp/suite PYTHONPATH=. make test PYTEST_ARGS="-p benchmarks.suite_timeline"

Report::

    .venv/bin/python benchmarks/suite_timeline.py /tmp/suite [--by test] [--top 40]

Linux only (``/proc/stat``). Without ``SUITE_TIMELINE`` the plugin records nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

ENV = "SUITE_TIMELINE"
#: Seconds between two readings of /proc/stat.
SAMPLE_S = 1.0


# ------------------------------------------------------------------------------ the plugin

def _out() -> str | None:
    return os.environ.get(ENV) or None


def _record(item, t0: float, c0: float) -> None:
    out = _out()
    if out is None:
        return
    rec = dict(worker=os.environ.get("PYTEST_XDIST_WORKER", "main"), test=item.nodeid,
               start=t0, end=time.time(), cpu=time.process_time() - c0)
    with open(f"{out}.tests.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


try:
    import pytest as _pytest

    @_pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item, nextitem):   # noqa: ARG001 - the hook's signature
        """Record the test's start and end (seconds since the epoch) and its process's CPU
        seconds, setup and teardown included."""
        t0, c0 = time.time(), time.process_time()
        try:
            return (yield)
        finally:
            _record(item, t0, c0)
except ImportError:   # the report alone needs no pytest
    pass


def _sample_forever(path: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        while True:
            with open("/proc/stat", encoding="ascii") as stat:
                f.write(f"{time.time()} {stat.readline()}")
            f.flush()
            time.sleep(SAMPLE_S)


def pytest_configure(config):
    out = _out()
    if out is not None and not hasattr(config, "workerinput"):   # once, in the controller
        threading.Thread(target=_sample_forever, args=(f"{out}.stat",), daemon=True,
                         name="suite-timeline-sampler").start()


# ------------------------------------------------------------------------------ the report

def busy_cpu_seconds(stat_lines: list[str], ticks_per_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Reading times and the machine's busy CPU seconds between consecutive readings, from lines
    ``"<time> cpu user nice system idle iowait irq softirq steal ..."`` (``/proc/stat``'s first
    line; busy = user + nice + system + irq + softirq + steal, idle and iowait left out)."""
    times, busy = [], []
    for line in stat_lines:
        parts = line.split()
        ticks = np.array(parts[2:10], dtype=np.int64)
        times.append(float(parts[0]))
        busy.append(ticks.sum() - ticks[3] - ticks[4])
    return np.array(times), np.diff(np.array(busy)) / ticks_per_s


def machine_share(starts: np.ndarray, ends: np.ndarray, times: np.ndarray,
                  busy: np.ndarray) -> np.ndarray:
    """Each test's share of the machine's busy CPU: interval k (``times[k]`` to ``times[k+1]``,
    ``busy[k]`` CPU seconds) is split among the tests running in it in proportion to the time each
    ran in it. Intervals no test ran in count for none. Vectorised over tests x intervals."""
    lo, hi = times[:-1], times[1:]
    overlap = np.clip(np.minimum(ends[:, None], hi[None, :])
                      - np.maximum(starts[:, None], lo[None, :]), 0.0, None)
    total = overlap.sum(axis=0)
    weight = np.divide(overlap, total[None, :], out=np.zeros_like(overlap), where=total > 0)
    return weight @ busy


def report(path: str, by: str = "module", top: int = 40, window_s: float = 30.0) -> str:
    tests = [json.loads(line) for line in Path(f"{path}.tests.jsonl").read_text().splitlines()]
    times, busy = busy_cpu_seconds(Path(f"{path}.stat").read_text().splitlines(),
                                   os.sysconf("SC_CLK_TCK"))
    starts = np.array([t["start"] for t in tests])
    ends = np.array([t["end"] for t in tests])
    share = machine_share(starts, ends, times, busy)
    first, last = starts.min(), ends.max()
    cores = os.cpu_count() or 1
    lines = [f"{len(tests)} tests in {last - first:.0f} s of wall clock on {cores} cores; the "
             f"machine's busy CPU in the seconds they ran {share.sum():.0f} s "
             f"({100 * share.sum() / (last - first):.0f}% of one core on average)",
             "", f"busy CPU per {window_s:.0f} s (100% = one core):"]
    edges = np.arange(first, last + window_s, window_s)
    for a, b in zip(edges[:-1], edges[1:]):
        k = (times[:-1] >= a) & (times[1:] <= b)
        span = times[1:][k].max() - times[:-1][k].min() if k.any() else 0.0
        if span > 0:
            lines.append(f"  {a - first:5.0f} s  {100 * busy[k].sum() / span:4.0f}%")
    key = (lambda t: t["test"]) if by == "test" else (lambda t: t["test"].split("::")[0])
    machine, own, wall = Counter(), Counter(), Counter()
    for t, s in zip(tests, share):
        machine[key(t)] += s
        own[key(t)] += t["cpu"]
        wall[key(t)] += t["end"] - t["start"]
    lines += ["", f"{'machine CPU s':>14} {'own CPU s':>10} {'wall s':>8}  {by}"]
    lines += [f"{s:14.1f} {own[k]:10.1f} {wall[k]:8.1f}  {k}" for k, s in machine.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help=f"the {ENV} prefix the suite recorded under")
    ap.add_argument("--by", choices=["module", "test"], default="module")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    for suffix in (".tests.jsonl", ".stat"):
        if not Path(args.path + suffix).is_file():
            print(f"suite_timeline: {args.path + suffix} not found: record a run first "
                  f"({ENV}=... with -p benchmarks.suite_timeline)", file=sys.stderr)
            return 2
    print(report(args.path, args.by, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
