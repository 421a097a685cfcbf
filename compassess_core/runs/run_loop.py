"""The one run loop: plan -> compute -> store -> progress -> heartbeat -> cancel, for every run kind.

A run kind (``run_kinds.RUN_KINDS``: comparative, scoring, absolute) turns a dataset and settings
into a :class:`WorkPlan`: what is left to compute, chunk by chunk, how to prompt for it and how
to compute it with the loaded judge. :func:`run_group` then drives any plans the same way, one
run (:func:`run_plan`) or several judged together by one worker (the aspects of one dataset):

* a chunk's judgements already stored by any run for the same judge, label words and prompt
  (the cache) are stored for this run without calling the judge;
* the rest is computed as a stream of micro-batches (``Judge.judge_stream``), the prompts of
  every run of a group that computes with the same judge in one call, so their shared opening
  tokens (context and candidates) are computed once; every micro-batch is stored the moment it
  is computed, with each run's progress, so a crash, a kill or a cancel loses at most one
  micro-batch, and a rerun repeats nothing that was stored;
* the rate (and the ETA from it) is measured over a moving window of batches with the plan's
  estimate as its prior (``pacing.window_rate``), so it starts at the plan's estimate and moves
  smoothly; the micro-batches may be sized to take a few seconds each (``pacing.BatchPacer``);
* a heartbeat thread refreshes each run's status every ``HEARTBEAT_S`` seconds, so a UI can tell a
  busy worker from a dead one even during a slow micro-batch;
* a cancel (an event set by a signal handler, or a request in the store for any run of the
  group) is looked for after every micro-batch: the loop stops, marks the runs cancelled and
  raises :class:`RunCancelled`.

This module must never import the store, a UI or a kind: it talks to a ``sink.ResultSink`` and
to the plans it is given.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import RunCancelled
from .pacing import RateWindow
from ..types import ComparisonPrompt, IntArray

#: Seconds between heartbeats (status, progress and rate rewritten while a batch computes).
HEARTBEAT_S = 2.0
#: Prompts of the first judged batch of a session: the shortest of the first chunk (with the
#: same comparisons of the other runs judged together: one pair's aspects), so the first progress
#: (and the first rate) comes within seconds of the judge being loaded, even when the prompts
#: are long stories.
FIRST_BATCH_PROMPTS = 1
#: What a run's message says while its judge computes (the worker says "loading the judge" and
#: "planning" before; a finished run's status says the rest).
JUDGING_MESSAGE = "judging"
#: The phases of a worker, as its status records them (``set_run_status(phase=...)``, with the
#: time each began), in order, with what each means for a person (the Run page, the CLI).
PHASE_TEXT = {
    "starting": "starting the worker",
    "loading": "loading the judge",
    "planning": "planning the run",
    "judging": "judging",
}
STARTING_PHASE, LOADING_PHASE, PLANNING_PHASE, JUDGING_PHASE = PHASE_TEXT
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
    candidates scored, reference comparisons: the run kind's unit), over a moving window of its
    latest batches with the plan's estimate as the prior (``pacing.window_rate``; the judge's
    loading and planning left out); ``eta_s`` None until known; ``judging_s``: seconds since
    the session's first judged batch began."""

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


def combined_progress(parts: Sequence[Progress]) -> Progress:
    """The progress of runs judged together as one (what a group's console line shows): counts
    and rates summed, the ETA of the run that finishes last."""
    if len(parts) == 1:
        return parts[0]
    etas = [p.eta_s for p in parts if p.done < p.total]
    return Progress(sum(p.done for p in parts), sum(p.total for p in parts),
                    sum(p.computed for p in parts), sum(p.cached for p in parts),
                    max(p.elapsed_s for p in parts), sum(p.rate for p in parts),
                    None if any(e is None for e in etas) else max(etas, default=0.0),
                    max(p.judging_s for p in parts))


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
    its key as the sink stores it. Plans whose ``compute`` is the same (``==``: the same judge's
    ``judge_stream``) may be computed in one call: what runs judged together share.
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


@dataclass
class Member:
    """One run of a group judged together: its id, its plan, and the plan's estimate of its
    rate (units per second; None when there is none), the prior of its ETA."""

    run_id: int
    plan: WorkPlan
    prior_rate: float | None = None


class _Tracker:
    """Counts of a run in progress and its rates.

    The rate the ETA uses is the window rate (``pacing.RateWindow``): units computed per second
    over the latest batches, each batch timed from the end of the run's previous one (the first
    from the moment judging began), with the plan's estimate as the prior, so the ETA starts at
    the plan's and moves smoothly. What a finished run records is its session rate: units
    computed per second since the first judged batch began (loading the judge, planning and
    results found in the cache are start-up, not judging). ``tokens_per_unit``: the prompt tokens
    the judge processes per unit of the plan (``WorkPlan.notes['work_tokens']`` over its total),
    for the token rate."""

    def __init__(self, total: int, already: int, tokens_per_unit: float | None = None,
                 prior_rate: float | None = None) -> None:
        self.total, self.already, self.done = total, already, already
        self.computed = self.cached = 0
        self.tokens_per_unit = tokens_per_unit
        self.start = time.perf_counter()
        self.judge_start: float | None = None
        self.window = RateWindow(prior_rate)
        self._last: float | None = None

    def judging(self) -> None:
        """A judged batch begins: the judging clock starts at the first one."""
        if self.judge_start is None:
            self.judge_start = self._last = time.perf_counter()

    def add(self, n: int, *, computed: bool) -> None:
        self.done += n
        if computed:
            self.computed += n
            now = time.perf_counter()
            self.window.add(n, now - (self._last if self._last is not None else now))
            self._last = now
        else:
            self.cached += n

    @property
    def judging_s(self) -> float:
        return 0.0 if self.judge_start is None else time.perf_counter() - self.judge_start

    @property
    def session_rate(self) -> float:
        seconds = self.judging_s
        return self.computed / seconds if self.computed and seconds > 0 else 0.0

    @property
    def rate(self) -> float:
        return self.window.rate

    @property
    def token_rate(self) -> float | None:
        rate = self.session_rate
        return rate * self.tokens_per_unit if self.tokens_per_unit and rate else None

    def snapshot(self) -> Progress:
        rate = self.rate
        eta = (self.total - self.done) / rate if rate > 0 else None
        return Progress(self.done, self.total, self.computed, self.cached,
                        time.perf_counter() - self.start, rate, eta, self.judging_s)

    def status(self) -> dict:
        """What a heartbeat writes: progress, the rate the ETA uses, seconds of judging and the
        token rate."""
        return dict(done=self.done, total=self.total, rate=self.rate or None,
                    judge_s=self.judging_s if self.computed else None,
                    token_rate=self.token_rate)

    def final_status(self) -> dict:
        """What a finished run records: its session rate (what later estimates take)."""
        return {**self.status(), "rate": self.session_rate or None}

    def summary(self, status: str) -> RunSummary:
        return RunSummary(status, self.total, self.already, self.computed, self.cached,
                          time.perf_counter() - self.start, self.judging_s)


class Heartbeat:
    """A thread that rewrites the status of runs every ``interval`` seconds while they work.

    ``run_ids``: one run or several (a group judged together). ``beat(run_id)`` gives the keyword
    arguments of ``set_run_status`` (progress, rate) at each beat; without it a beat only says
    the worker is alive. :meth:`finish` takes a run out of the beat and writes its final status
    under the same lock, so a late beat never marks a finished run running again.
    """

    def __init__(self, sink, run_ids: int | Sequence[int], interval: float | None = None,
                 beat: Callable[[int], dict] | None = None) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sink, self._beat_kwargs = sink, beat or (lambda run_id: {})
        self._run_ids = [int(run_ids)] if isinstance(run_ids, int) else [int(r) for r in run_ids]
        self._interval = HEARTBEAT_S if interval is None else interval
        self._thread = threading.Thread(target=self._beat, name="compassess-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                for run_id in list(self._run_ids):
                    try:
                        self._sink.set_run_status(run_id, "running", **self._beat_kwargs(run_id))
                    except Exception:  # noqa: BLE001 - a heartbeat must never kill the run
                        pass

    def finish(self, run_id: int, write: Callable[[], None]) -> None:
        """Stop beating ``run_id`` and call ``write`` (its final status) under the beat's lock."""
        with self._lock:
            if run_id in self._run_ids:
                self._run_ids.remove(run_id)
            write()

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 1)


def run_plan(plan: WorkPlan, sink, run_id: int, *,
             progress: Callable[[Progress], None] | None = None,
             cancel: threading.Event | None = None,
             heartbeat_s: float | None = None, prior_rate: float | None = None,
             pace: Callable[[Iterable], Iterator] | None = None) -> RunSummary:
    """Compute and store everything ``plan`` lacks for run ``run_id`` (:func:`run_group` of one).

    Raises
    ------
    RunCancelled
        When ``cancel`` is set or the sink reports a cancel request; what was computed is stored
        and the run is marked cancelled.
    Exception
        Whatever the judge or the sink raised; the run is marked failed with its message.
    """
    return run_group([Member(run_id, plan, prior_rate)], sink, progress=progress, cancel=cancel,
                     heartbeat_s=heartbeat_s, pace=pace)[0]


@dataclass
class _Part:
    """What one run of a group needs computed in one step: its keys, prompts and their hashes."""

    member: Member
    keys: list
    prompts: list[ComparisonPrompt]
    hashes: list[str]

    def split(self, chosen: set) -> tuple["_Part", "_Part"]:
        """(the part's keys in ``chosen``, the others), each in its order."""
        inside = [k in chosen for k in self.keys]

        def part(keep: bool) -> "_Part":
            at = [i for i, x in enumerate(inside) if x == keep]
            return _Part(self.member, [self.keys[i] for i in at], [self.prompts[i] for i in at],
                         [self.hashes[i] for i in at])
        return part(True), part(False)


def _first_steps(same: list[_Part], n: int = FIRST_BATCH_PROMPTS) -> list[list[_Part]]:
    """A session's first step in two: the ``n`` shortest prompts of the lead run (by characters)
    with the other runs' prompts of the same keys, then the rest of the chunk."""
    lead = same[0]
    shortest = sorted(range(len(lead.keys)), key=lambda i: len(lead.prompts[i].text))
    chosen = {lead.keys[i] for i in shortest[:n]}
    halves = [p.split(chosen) for p in same]
    return [[h[0] for h in halves], [h[1] for h in halves]]


def run_group(members: Sequence[Member], sink, *,
              progress: Callable[[Progress], None] | None = None,
              cancel: threading.Event | None = None, heartbeat_s: float | None = None,
              pace: Callable[[Iterable], Iterator] | None = None) -> list[RunSummary]:
    """Compute and store everything the plans of ``members`` lack, judged together.

    The plans advance in step, chunk by chunk; each step's prompts of plans with the same
    ``compute`` (the same judge) go to the judge in one call, so prompts of several runs that
    share their opening tokens (the same context and candidates, another aspect in the question)
    share the judge's prefix cache. Each micro-batch's judgements are stored for the runs they
    belong to, each run with its own progress and status; a run whose plan is done is marked
    completed at once. A cancel (``cancel`` set, or a request in the sink for any run of the
    group) stops the group after the micro-batch in flight: every run not completed is marked
    cancelled, and each resumes on its own or together again. ``pace`` wraps each judge stream
    (``pacing.BatchPacer.paced``: micro-batches sized to take a few seconds). ``progress`` gets
    the group's :func:`combined_progress`.

    Raises
    ------
    RunCancelled
        Stopped on request; what was computed is stored, the runs not completed are marked
        cancelled.
    Exception
        Whatever the judge or the sink raised; the runs not completed are marked failed.
    """
    trackers: dict[int, _Tracker] = {}
    for m in members:
        work_tokens = m.plan.notes.get("work_tokens")
        trackers[m.run_id] = _Tracker(
            m.plan.total, m.plan.already,
            work_tokens / m.plan.total if work_tokens and m.plan.total else None, m.prior_rate)
    live = list(members)
    summaries: dict[int, RunSummary] = {}

    def report() -> None:
        if progress:
            progress(combined_progress([trackers[m.run_id].snapshot() for m in members]))

    def stop_if_asked() -> None:
        # Every micro-batch: a signal's event, then the store's flag of each run (small reads).
        if (cancel is not None and cancel.is_set()) or any(sink.cancel_requested(m.run_id)
                                                           for m in live):
            done = ", ".join(f"{trackers[m.run_id].done}/{trackers[m.run_id].total}" for m in live)
            raise RunCancelled(f"run(s) {', '.join(str(m.run_id) for m in live)} cancelled at "
                               f"{done}")

    def store(m: Member, results: list, *, computed: bool) -> None:
        sink.add_results(m.run_id, m.plan.kind, results)
        if m.plan.on_results is not None:
            m.plan.on_results(results)
        tracker = trackers[m.run_id]
        tracker.add(len(results), computed=computed)
        sink.set_run_status(m.run_id, "running", **tracker.status())
        report()

    # The message says what the worker does now; the one it said while loading must not stay.
    # The rate starts at the plan's estimate: no rate of an earlier session stays up.
    for m in members:
        t = trackers[m.run_id]
        sink.set_run_status(m.run_id, "running", done=t.done, total=t.total,
                            message=JUDGING_MESSAGE, phase=JUDGING_PHASE, rate=t.rate or None)
    report()
    chunks = {m.run_id: iter(m.plan.batches) for m in members}
    try:
        with Heartbeat(sink, [m.run_id for m in members], heartbeat_s,
                       lambda run_id: trackers[run_id].status()) as heart:
            while live:
                stop_if_asked()
                parts: list[_Part] = []
                for m in list(live):
                    keys = next(chunks[m.run_id], None)
                    if keys is None:  # this run's plan is done: completed now, not at the end
                        t = trackers[m.run_id]
                        heart.finish(m.run_id, lambda m=m, t=t: sink.set_run_status(
                            m.run_id, "completed", message=None, **t.final_status()))
                        summaries[m.run_id] = t.summary("completed")
                        live.remove(m)
                        continue
                    part = _missing(m, list(keys), sink, store)
                    if part.keys:
                        parts.append(part)
                for same in _by_compute(parts):
                    # The session's first judged batch is small (its first progress comes
                    # quickly); the rest of its chunk follows as usual.
                    first = all(trackers[p.member.run_id].judge_start is None for p in same)
                    steps = _first_steps(same) if first else [same]
                    for step in steps:
                        step = [p for p in step if p.keys]
                        if not step:
                            continue
                        for p in step:
                            trackers[p.member.run_id].judging()
                        _compute_and_store(step, store, stop_if_asked, pace)
    except (RunCancelled, KeyboardInterrupt):
        for m in live:
            t = trackers[m.run_id]
            sink.set_run_status(m.run_id, "cancelled", done=t.done, total=t.total,
                                message=CANCELLED_MESSAGE)
        raise
    except BaseException as e:
        for m in live:
            t = trackers[m.run_id]
            sink.set_run_status(m.run_id, "failed", done=t.done, total=t.total,
                                message=f"{type(e).__name__}: {e}")
        raise
    return [summaries[m.run_id] for m in members]


def _missing(m: Member, keys: list, sink, store) -> _Part:
    """Store the judgements of ``keys`` any run cached for the same judge, label words and
    prompt; what is left to compute."""
    plan = m.plan
    prompts = [plan.prompt(k) for k in keys]
    hashes = [plan.prompt_hash(p) for p in prompts]
    hits = sink.cached_results(plan.kind, plan.judge_key, plan.label_words_key, hashes)
    if hits:
        store(m, [plan.result(k, hits[h], h) for k, h in zip(keys, hashes) if h in hits],
              computed=False)
    left = [i for i, h in enumerate(hashes) if h not in hits]
    return _Part(m, [keys[i] for i in left], [prompts[i] for i in left],
                 [hashes[i] for i in left])


def _by_compute(parts: list[_Part]) -> list[list[_Part]]:
    """The parts whose plans compute the same way (one judge call each), in order."""
    groups: list[list[_Part]] = []
    for p in parts:
        same = next((g for g in groups if g[0].member.plan.compute == p.member.plan.compute), None)
        if same is None:
            groups.append([p])
        else:
            same.append(p)
    return groups


def _compute_and_store(parts: list[_Part], store, stop_if_asked: Callable[[], None],
                       pace: Callable[[Iterable], Iterator] | None) -> None:
    """Stream the parts' prompts through their judge in one call; store each micro-batch's
    judgements for the runs they belong to, then look for a cancel."""
    prompts = [q for p in parts for q in p.prompts]
    offsets = np.cumsum([0] + [len(p.prompts) for p in parts])
    stream = parts[0].member.plan.compute(prompts)
    paced = pace(stream) if pace is not None else stream
    try:
        for rows, judgements in paced:
            rows = np.asarray(rows, dtype=np.int64)
            owner = np.searchsorted(offsets, rows, side="right") - 1
            for k in dict.fromkeys(owner.tolist()):
                part, base = parts[k], int(offsets[k])
                plan = part.member.plan
                store(part.member, [plan.result(part.keys[r - base], j, part.hashes[r - base])
                                    for r, j, o in zip(rows.tolist(), judgements, owner) if o == k],
                      computed=True)
            stop_if_asked()
    finally:
        for s in (paced, stream):
            close = getattr(s, "close", None)
            if close is not None:
                close()
