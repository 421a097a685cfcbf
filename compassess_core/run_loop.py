"""The one run loop: plan -> compute -> store -> progress -> heartbeat -> cancel, for every run kind.

A run kind (``run_kinds.RUN_KINDS``: comparative, scoring, absolute) turns a dataset and settings
into a :class:`WorkPlan`: what is left to compute, chunk by chunk, how to prompt for it and how
to compute it with the loaded judge. :func:`run_plan` then drives any plan the same way:

* a chunk's judgements already stored by any run for the same judge, label words and prompt
  (the cache) are stored for this run without calling the judge;
* the rest is computed as a stream of micro-batches (``Judge.judge_stream``); every micro-batch is
  stored the moment it is computed, with the run's progress, so a crash, a kill or a cancel loses
  at most one micro-batch, and a rerun repeats nothing that was stored;
* a heartbeat thread refreshes the run's status every ``HEARTBEAT_S`` seconds, so a UI can tell a
  busy worker from a dead one even during a slow micro-batch;
* a cancel (an event set by a signal handler, or a request in the store) is looked for after
  every micro-batch: the loop stops, marks the run cancelled and raises :class:`RunCancelled`.

This module must never import the store, a UI or a kind: it talks to a ``sink.ResultSink`` and
to the plan it is given.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence

from .errors import RunCancelled
from .types import ComparisonPrompt, IntArray

#: Seconds between heartbeats (status, progress and rate rewritten while a batch computes).
HEARTBEAT_S = 2.0
#: Prompts of the first judged batch of a session: a small one, so the first progress (and the
#: first rate) comes within seconds of the judge being loaded, even when the prompts are long.
FIRST_BATCH_PROMPTS = 2
#: What a run's message says while its judge computes (the worker says "loading the judge" and
#: "planning" before; a finished run's status says the rest).
JUDGING_MESSAGE = "judging"
#: What a cancelled run's status message says.
CANCELLED_MESSAGE = "stopped on request; resuming it continues where it stopped"
#: A run marked running whose heartbeat is older than this has no live worker: it died, or its
#: machine slept. The worker beats every HEARTBEAT_S from before it loads the model; 30 s leaves
#: room for a slow process start.
STALE_AFTER_S = 30.0
#: What each :func:`worker_state` means, for a person (the app, ``compassess runs``).
WORKER_STATE_TEXT = {
    "working": "running",
    "cancelling": "cancelling…",
    "stale": "worker stopped responding",
    "completed": "completed",
    "cancelled": "cancelled",
    "failed": "failed",
    "pending": "not started",
}


def heartbeat_age_s(run: Any, now: datetime | None = None) -> float | None:
    """Seconds since ``run.heartbeat_at`` (a stored run; naive times are UTC); None without one."""
    hb = getattr(run, "heartbeat_at", None)
    if hb is None:
        return None
    if hb.tzinfo is None:
        hb = hb.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - hb).total_seconds()


def worker_state(run: Any, now: datetime | None = None) -> str:
    """Whether a stored run has a live worker, from its status, heartbeat and cancel request:
    ``working``, ``cancelling`` (asked to stop, finishing its micro-batch), ``stale`` (marked
    running but silent for :data:`STALE_AFTER_S`), else the stored status (``completed``,
    ``cancelled``, ``failed``, ``pending``)."""
    if run.status == "running":
        age = heartbeat_age_s(run, now)
        if age is None or age >= STALE_AFTER_S:
            return "stale"
        return "cancelling" if getattr(run, "cancel_requested", False) else "working"
    return run.status


def state_text(run: Any, now: datetime | None = None) -> str:
    """A stored run's :func:`worker_state` in words (``WORKER_STATE_TEXT``): what a list of runs
    shows instead of the stored status, which still says ``running`` after its worker died."""
    state = worker_state(run, now)
    return WORKER_STATE_TEXT.get(state, state)


def is_active(state: str) -> bool:
    """A worker is alive for this run (a :func:`worker_state`): nobody may start another."""
    return state in ("working", "cancelling")


def remaining_s(done: int, total: int, rate: float | None) -> float | None:
    """Seconds left of a run at ``rate`` units per second: ``(total - done) / rate``; None
    without a measured rate."""
    if not rate or rate <= 0:
        return None
    return max(int(total) - int(done), 0) / float(rate)


@dataclass(frozen=True)
class Progress:
    """Where a run stands. ``rate``: units per second of judging in this session (comparisons,
    candidates scored, reference comparisons: the run kind's unit), over the wall-clock time
    since the first judged batch began (``judging_s``; the judge's loading and planning left
    out); ``eta_s`` None until known."""

    done: int
    total: int
    computed: int
    cached: int
    elapsed_s: float
    rate: float
    eta_s: float | None
    judging_s: float = 0.0

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


@dataclass(frozen=True)
class RunSummary:
    status: str
    total: int
    already_stored: int
    computed: int
    cached: int
    elapsed_s: float
    judging_s: float = 0.0


@dataclass
class WorkPlan:
    """What a run still has to compute, and how (made by a run kind's ``plan``).

    ``batches`` yields chunks of keys not stored yet (a generator may choose the next chunk from
    the results of the previous ones, which ``on_results`` hands it); ``compute`` streams
    ``(indices into the prompts, judgements)`` per micro-batch; ``result`` ties a judgement to
    its key as the sink stores it.
    """

    kind: str
    unit: str
    total: int
    already: int
    batches: Iterable[Sequence[Hashable]]
    prompt: Callable[[Any], ComparisonPrompt]
    prompt_hash: Callable[[ComparisonPrompt], str]
    compute: Callable[[list[ComparisonPrompt]], Iterator[tuple[IntArray, list]]]
    result: Callable[[Any, Any, str], Any]
    judge_key: str
    label_words_key: str
    on_results: Callable[[list], None] | None = None
    notes: dict = field(default_factory=dict)


class _Tracker:
    """Counts of a run in progress and its rate: units computed per second of wall-clock time
    since the first judged batch began. Time before it (loading the judge, planning, results
    found in the cache) is start-up, not judging: counting it made the first ETA ten times too
    long. ``tokens_per_unit``: the prompt tokens the judge processes per unit of the plan
    (``WorkPlan.notes['work_tokens']`` over its total), for the token rate."""

    def __init__(self, total: int, already: int, tokens_per_unit: float | None = None) -> None:
        self.total, self.already, self.done = total, already, already
        self.computed = self.cached = 0
        self.tokens_per_unit = tokens_per_unit
        self.start = time.perf_counter()
        self.judge_start: float | None = None

    def judging(self) -> None:
        """A judged batch begins: the judging clock starts at the first one."""
        if self.judge_start is None:
            self.judge_start = time.perf_counter()

    def add(self, n: int, *, computed: bool) -> None:
        self.done += n
        if computed:
            self.computed += n
        else:
            self.cached += n

    @property
    def judging_s(self) -> float:
        return 0.0 if self.judge_start is None else time.perf_counter() - self.judge_start

    @property
    def rate(self) -> float:
        seconds = self.judging_s
        return self.computed / seconds if self.computed and seconds > 0 else 0.0

    @property
    def token_rate(self) -> float | None:
        return self.rate * self.tokens_per_unit if self.tokens_per_unit and self.rate else None

    def snapshot(self) -> Progress:
        rate = self.rate
        eta = (self.total - self.done) / rate if rate > 0 else None
        return Progress(self.done, self.total, self.computed, self.cached,
                        time.perf_counter() - self.start, rate, eta, self.judging_s)

    def status(self) -> dict:
        """What a heartbeat writes: progress, rate, seconds of judging and the token rate."""
        return dict(done=self.done, total=self.total, rate=self.rate or None,
                    judge_s=self.judging_s if self.computed else None,
                    token_rate=self.token_rate)

    def summary(self, status: str) -> RunSummary:
        return RunSummary(status, self.total, self.already, self.computed, self.cached,
                          time.perf_counter() - self.start, self.judging_s)


class Heartbeat:
    """A thread that rewrites a run's status every ``interval`` seconds while it works.

    ``beat()`` gives the keyword arguments of ``set_run_status`` (progress, rate) at each beat.
    """

    def __init__(self, sink, run_id: int, interval: float | None = None,
                 beat: Callable[[], dict] = dict) -> None:
        self._stop = threading.Event()
        self._sink, self._run_id, self._beat_kwargs = sink, run_id, beat
        self._interval = HEARTBEAT_S if interval is None else interval
        self._thread = threading.Thread(target=self._beat, name="compassess-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._sink.set_run_status(self._run_id, "running", **self._beat_kwargs())
            except Exception:  # noqa: BLE001 - a heartbeat must never kill the run
                pass

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 1)


def run_plan(plan: WorkPlan, sink, run_id: int, *,
             progress: Callable[[Progress], None] | None = None,
             cancel: threading.Event | None = None,
             heartbeat_s: float | None = None) -> RunSummary:
    """Compute and store everything ``plan`` lacks for run ``run_id``.

    Raises
    ------
    RunCancelled
        When ``cancel`` is set or the sink reports a cancel request; what was computed is stored
        and the run is marked cancelled.
    Exception
        Whatever the judge or the sink raised; the run is marked failed with its message.
    """
    work_tokens = plan.notes.get("work_tokens")
    tracker = _Tracker(plan.total, plan.already,
                       work_tokens / plan.total if work_tokens and plan.total else None)

    def stop_if_asked() -> None:
        # Every micro-batch: a signal's event, then the store's flag (one small read).
        if (cancel is not None and cancel.is_set()) or sink.cancel_requested(run_id):
            raise RunCancelled(f"run {run_id} cancelled at {tracker.done}/{tracker.total}")

    def store(results: list, *, computed: bool) -> None:
        sink.add_results(run_id, plan.kind, results)
        if plan.on_results is not None:
            plan.on_results(results)
        tracker.add(len(results), computed=computed)
        sink.set_run_status(run_id, "running", **tracker.status())
        if progress:
            progress(tracker.snapshot())

    # The message says what the worker does now; the one it said while loading must not stay.
    sink.set_run_status(run_id, "running", done=tracker.done, total=tracker.total,
                        message=JUDGING_MESSAGE)
    if progress:
        progress(tracker.snapshot())
    try:
        with Heartbeat(sink, run_id, heartbeat_s, tracker.status):
            for keys in plan.batches:
                stop_if_asked()
                prompts = [plan.prompt(k) for k in keys]
                hashes = [plan.prompt_hash(p) for p in prompts]
                hits = sink.cached_results(plan.kind, plan.judge_key, plan.label_words_key, hashes)
                if hits:
                    store([plan.result(k, hits[h], h) for k, h in zip(keys, hashes) if h in hits],
                          computed=False)
                missing = [i for i, h in enumerate(hashes) if h not in hits]
                # The session's first judged batch is small (its first progress comes quickly);
                # the rest of its chunk follows as usual.
                parts = ([missing[:FIRST_BATCH_PROMPTS], missing[FIRST_BATCH_PROMPTS:]]
                         if tracker.judge_start is None else [missing])
                for part in filter(None, parts):
                    tracker.judging()
                    _compute_and_store(plan, [keys[i] for i in part], [prompts[i] for i in part],
                                       [hashes[i] for i in part], store, stop_if_asked)
    except (RunCancelled, KeyboardInterrupt):
        sink.set_run_status(run_id, "cancelled", done=tracker.done, total=tracker.total,
                            message=CANCELLED_MESSAGE)
        raise
    except BaseException as e:
        sink.set_run_status(run_id, "failed", done=tracker.done, total=tracker.total,
                            message=f"{type(e).__name__}: {e}")
        raise
    final = tracker.status()
    sink.set_run_status(run_id, "completed", message=None, **final)
    return tracker.summary("completed")


def _compute_and_store(plan: WorkPlan, keys: list, prompts: list[ComparisonPrompt],
                       hashes: list[str], store, stop_if_asked: Callable[[], None]) -> None:
    """Stream one chunk through the judge; store each micro-batch, then look for a cancel."""
    stream = plan.compute(prompts)
    try:
        for rows, judgements in stream:
            store([plan.result(keys[r], j, hashes[r]) for r, j in zip(rows, judgements)],
                  computed=True)
            stop_if_asked()
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
