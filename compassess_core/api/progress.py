"""How a run executed from the API shows its progress: a ``tqdm`` bar (:class:`ProgressBar`),
nothing (``progress=False``), or any :class:`Reporter` the caller gives; and where a stored run
stands as its watcher reads it from the store (:class:`RunProgress`, ``Run.progress()``)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from ..runs.run_kinds import RunKind
from ..runs.run_loop import JUDGING_PHASE, PHASE_TEXT, Progress, is_active, worker_state
from ..judges.speed import human_duration
from ..runs.executor import Reporter

# ------------------------------------------------------------------------------ progress

#: What a worker's message says in each phase, for runs stored before phases were recorded.
MESSAGE_PHASES = {"worker starting": "starting", "loading the judge": "loading",
                  "planning the run": "planning", "judging": JUDGING_PHASE}


def phase_of(info) -> str | None:
    """The phase a stored run's worker records (``run_loop.PHASE_TEXT``'s keys), else the one
    its message names; None when neither says."""
    return getattr(info, "phase", None) or MESSAGE_PHASES.get(info.message or "")


def phase_seconds(info, now: datetime | None = None) -> float | None:
    """Seconds since the run's worker began its phase (None when it records no start)."""
    since = getattr(info, "phase_at", None)
    if since is None:
        return None
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return max(((now or datetime.now(timezone.utc)) - since).total_seconds(), 0.0)


def has_live_worker(info) -> bool:
    """Whether a worker is judging the stored run ``info`` (a ``RunInfo``) now: its status is
    running and its heartbeat is recent (``run_loop.worker_state``)."""
    return is_active(worker_state(info))


@dataclass(frozen=True)
class RunProgress:
    """Where a stored run stands, as its watcher (the Run page, a notebook polling a worker)
    reads it from the store: ``Run.progress()``.

    ``state``: the worker state (``run_loop.worker_state``: working, cancelling, stale,
    completed, cancelled, failed, pending) and ``state_text`` it in words; ``done``/``total``
    in ``unit``; ``rate`` the worker's own speed (``rate_unit``: units per second of judging in
    its last session, the judge's loading left out) and ``eta_s`` the seconds left at that
    rate while a worker is alive (None until measured); ``judge_s`` the seconds of judging of
    its last session; ``phase`` what a live worker is doing (``run_loop.PHASE_TEXT``'s keys:
    ``starting``, ``loading``, ``planning``, ``judging``; None when it is not alive or records
    no phase) and ``phase_s`` the seconds since that phase began; ``message`` the run's last
    message (a worker's, a server's or an error's words).
    """

    state: str
    state_text: str
    done: int
    total: int
    unit: str
    rate_unit: str
    rate: float | None
    eta_s: float | None
    judge_s: float | None
    phase: str | None
    message: str | None
    phase_s: float | None = None

    @property
    def active(self) -> bool:
        """A worker is alive (nobody may start another)."""
        return self.state in ("working", "cancelling")

    @property
    def fraction(self) -> float | None:
        """``done / total`` (None while the total is not known)."""
        return min(self.done / self.total, 1.0) if self.total else None

    @property
    def judged_for(self) -> str | None:
        """:attr:`judge_s` as people say it (``45 s``, ``12 min``, ``2.5 h``)."""
        return None if self.judge_s is None else human_duration(self.judge_s)

    @property
    def judged_line(self) -> str | None:
        """How a run that ended was judged, in words, for the line under its progress bar:
        its rate and seconds of judging (loading the judge not included). Only its last
        session's time is recorded, so a run resumed after a stop says which part that was
        (None: nothing measured)."""
        if not self.rate or not self.judge_s:
            return None
        last = int(round(self.rate * self.judge_s))
        if last >= 0.95 * self.done:
            return (f"{self.rate:.2f} {self.rate_unit} over {self.judged_for} of judging "
                    "(loading the judge not included)")
        return (f"its last session judged {last:,} of them at {self.rate:.2f} {self.rate_unit} "
                f"in {self.judged_for}; the other {max(self.done - last, 0):,} were stored "
                "without judging them then (by an earlier session of this run, or reused from "
                "this judge's earlier judgements of the same prompts), whose time is not kept")

    @property
    def doing(self) -> str | None:
        """What a live worker does and for how long (``loading the judge · 12 s``); None when
        no worker is alive or it records no phase."""
        if self.phase is None:
            return None
        text = PHASE_TEXT.get(self.phase, self.phase)
        return text if self.phase_s is None else f"{text} · {self.phase_s:.0f} s"

    @property
    def line(self) -> str:
        """The progress in one line, as the Run page's bar and ``compassess runs`` say it:
        done/total, then (live) the phase with its time and, while judging, the rate and the
        ETA (a resumed run's stored rate is not its rate while its judge loads); (ended) its
        own rate and judging time."""
        share = (f"{self.done:,}/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f}%)"
                 if self.total else f"{self.done:,} {self.unit}")
        if self.active:
            # a worker that stores results is judging, whether or not it records its phase
            if (self.phase or (JUDGING_PHASE if self.done else None)) == JUDGING_PHASE:
                if self.rate and self.total:
                    eta = "…" if self.eta_s is None else f"{self.eta_s:.0f}"
                    return f"{share} · {self.rate:.2f} {self.rate_unit} · ETA {eta} s"
                return f"{share} · {'judging' if self.done else 'judging the first batch'}"
            return f"{share} · {self.doing or 'waiting for the worker'}"
        if self.judged_line and self.total:   # a run that ended: its own rate and time
            return f"{share} · {self.judged_line}"
        return share

    @property
    def can_cancel(self) -> bool:
        return self.state == "working"

    @property
    def silent(self) -> bool:
        """Marked running, but no heartbeat for ``run_loop.STALE_AFTER_S``: its worker died, or
        it lives on a machine too loaded to let it beat in time (a start, a judge's load) and
        will beat again. A watcher keeps looking, less often, so that it sees either."""
        return self.state == "stale"

    @property
    def can_resume(self) -> bool:
        """No live worker, and something planned is not stored (or nothing started yet)."""
        return self.state in ("stale", "cancelled", "failed", "pending") or (
            self.state == "completed" and self.done < self.total)


class ProgressBar:
    """A :class:`Reporter` drawing a ``tqdm.auto`` progress bar: a widget in Jupyter (a text bar
    where ipywidgets is missing), a redrawn line in a terminal, lines in a log.

    It shows done/total in the run kind's unit, the run's own rate (units per second of judging,
    not counting what came from the cache or was stored before) and the ETA: the numbers
    ``compassess run`` prints. Messages (the judge loaded, truncated contexts, how the run
    ended) are written above the bar.
    """

    def __init__(self, unit: str = "comparisons", rate_unit: str | None = None, *,
                 file=None) -> None:
        self.unit = unit
        self.rate_unit = rate_unit or f"{unit.split()[0]}/s"
        self.file = file
        self._bar = None

    def loaded(self, description: str) -> None:
        """Say which judge was loaded."""
        self.message(f"judge: {description}")

    def message(self, text: str) -> None:
        """Write a line above the bar."""
        _tqdm().write(text, file=self.file or sys.stderr)

    def progress(self, progress: Progress) -> None:
        """Redraw the bar at ``progress`` (closed once everything is done)."""
        rate = (f"{progress.rate:.2f} {self.rate_unit}" if progress.computed
                else f"-- {self.rate_unit}")
        eta = ("--:--:--" if progress.eta_s is None
               else time.strftime("%H:%M:%S", time.gmtime(progress.eta_s)))
        postfix = f"{rate}, ETA {eta}" + (f", {progress.cached} from cache" if progress.cached
                                          else "")
        if self._bar is None:
            self._bar = _tqdm()(
                total=progress.total, initial=progress.done, unit=f" {self.unit}", file=self.file,
                dynamic_ncols=True, leave=True, postfix=postfix,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}{postfix}]")
        self._bar.total = progress.total
        self._bar.n = progress.done
        self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.refresh()
        if progress.done >= progress.total:
            self.close()

    def close(self) -> None:
        """Close the bar (a run that stops early leaves it where it stopped)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _tqdm():
    """``tqdm.auto.tqdm``: the widget in Jupyter, the text bar elsewhere (and in a notebook without
    ipywidgets, where tqdm's warning about it is left out: the text bar works there too)."""
    import warnings

    from tqdm import TqdmWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    return tqdm


class _Quiet:
    """A reporter that says nothing (``progress=False``)."""

    def loaded(self, description: str) -> None:
        pass

    def progress(self, progress: Progress) -> None:
        pass

    def message(self, text: str) -> None:
        pass


def _reporter(progress: bool | Reporter, kind: RunKind) -> Reporter:
    if progress is True:
        return ProgressBar(kind.unit, kind.rate_unit)
    if progress is False or progress is None:
        return _Quiet()
    return progress

