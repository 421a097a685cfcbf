"""The Run page's live view of a worker: its phase with the time spent in it, the progress of
every run it judges (several aspects in one pass), and one Start, Cancel and Resume for them all.

A worker records its phase (``run_loop.PHASE_TEXT``: starting, loading the judge, planning,
judging) with the time it began, and the runs it judges together in each run's plan
(``run_group``); this module only reads those through the Python API and starts or stops the
worker through it. The rate and the ETA are shown while judging only: while a resumed run's
judge loads, the rate stored by its previous session is not its rate. Names and messages go
through ``plain``. It must never compute a statistic, issue SQL or import ``db``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from compassess_core import api
from compassess_core.errors import InputError
from compassess_core.run_loop import JUDGING_PHASE, PHASE_TEXT, is_active, worker_state
from compassess_core.speed import human_duration
from pages._common import (REPO_ROOT, api_store, check_app_model, fmt, plain, rate_and_eta,
                           worker_log_path)

#: What the worker's message says in each phase, for runs stored before phases were recorded.
MESSAGE_PHASES = {"worker starting": "starting", "loading the judge": "loading",
                  "planning the run": "planning", "judging": JUDGING_PHASE}


def phase_of(info) -> str | None:
    """The phase a running worker is in (``run_loop.PHASE_TEXT``'s keys), None when unknown."""
    return getattr(info, "phase", None) or MESSAGE_PHASES.get(info.message or "")


def phase_line(info, now: datetime | None = None) -> str | None:
    """What a live worker does and for how long: ``loading the judge · 12 s``; None when the
    run records no phase."""
    phase = phase_of(info)
    if phase is None:
        return None
    text = PHASE_TEXT.get(phase, phase)
    since = getattr(info, "phase_at", None)
    if since is None:
        return text
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    elapsed = max(((now or datetime.now(timezone.utc)) - since).total_seconds(), 0.0)
    return f"{text} · {elapsed:.0f} s"


def progress_text(run: api.Run, state: str, now: datetime | None = None) -> str:
    """The text of a run's progress bar: done/total, then (live) the phase with its time and,
    while judging, the rate and the ETA; (ended) its own rate and judging time."""
    info = run.info
    total, done = int(info.total or 0), int(info.done or 0)
    unit, rate_unit = run.run_kind.unit, run.run_kind.rate_unit
    share = (f"{done:,}/{total:,} {unit} ({100 * done / total:.0f}%)" if total
             else f"{done:,} {unit}")
    if is_active(state):
        phase = phase_of(info)
        line = phase_line(info, now) or "waiting for the worker"
        rate, eta = rate_and_eta(info)
        if phase == JUDGING_PHASE and rate and total:
            return f"{share} · {fmt(rate, '.2f', '…')} {rate_unit} · ETA {fmt(eta, '.0f', '…')} s"
        if phase == JUDGING_PHASE and not done:
            return f"{share} · judging the first batch"
        return f"{share} · {line}"
    if info.rate and info.judge_s and total:  # a run that ended: its own rate and time, no ETA
        return (f"{share} · {info.rate:.2f} {rate_unit} over {human_duration(info.judge_s)}"
                " of judging (its last session, loading the judge not included)")
    return share


def together_with(run: api.Run) -> list[api.Run]:
    """The runs judged in one pass with ``run`` (its plan's ``run_group``, in its order; those
    still stored), ``run`` among them; just ``run`` when it was judged alone."""
    ids = [int(i) for i in (run.info.plan or {}).get("run_group") or []]
    if run.id not in ids:
        return [run]
    group = []
    for run_id in ids:
        if run_id == run.id:
            group.append(run)
            continue
        try:
            group.append(api_store().get_run(run_id))
        except InputError:  # deleted since
            continue
    return group


def start_together(runs: Sequence[api.Run]):
    """Start one worker for ``runs`` (judged together; one run: as ``Run.start_worker``),
    writing to the first run's log; a served judge not configured for the app is refused
    (``InputError``) and nothing starts."""
    fresh = [api_store().get_run(r.id) for r in runs]
    for r in fresh:
        check_app_model(str(r.settings.model or ""))
    log = worker_log_path(fresh[0].id)
    if len(fresh) == 1:
        fresh[0].start_worker(log, cwd=REPO_ROOT)
    else:
        api_store().start_worker(fresh, log, cwd=REPO_ROOT)
    return log


def resumable(run: api.Run, state: str) -> bool:
    """A run Resume may start: not live, and not complete."""
    if is_active(state):
        return False
    return state != "completed" or int(run.info.done or 0) < int(run.info.total or 0)


def group_states(runs: Sequence[api.Run]) -> list[str]:
    return [worker_state(r.info) for r in runs]


def log_of(runs: Sequence[api.Run]):
    """The log of the worker that judged ``runs`` last: the newest of their log files (a
    worker of several runs writes to the first one's)."""
    paths = [worker_log_path(r.id) for r in runs]
    existing = [p for p in paths if p.exists()]
    return max(existing, key=lambda p: p.stat().st_mtime) if existing else paths[0]
