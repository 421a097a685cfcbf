"""How fast a run goes, measured as it goes: a steady rate for the ETA, and micro-batches sized to
take a few seconds each.

Two small pieces the run loop (``run_loop``) uses while it judges:

* :func:`window_rate`: the rate over the most recent batches covering ``window_s`` seconds of
  judging, the plan's estimate filling the part of the window not observed yet. At the first
  batch the rate is the plan's estimate, after ``window_s`` seconds of judging it is the measured
  rate of the last ``window_s`` seconds, and in between a blend weighted by time; one slow or fast
  batch moves it by its share of the window only, so the ETA moves smoothly.
* :func:`batch_token_budget` and :class:`BatchPacer`: a judge that cuts its work into micro-batches
  by a token budget (the local judges: ``token_budget``, padded tokens per forward pass) gets the
  budget that makes one micro-batch take about ``target_s`` at its measured token rate, within the
  budget its memory allows. A Cancel, looked for after every micro-batch, is then honoured within
  seconds whatever the length of the texts, and short texts still fill whole batches.

Pure numpy and a little state; this module must never import torch, the store or a UI.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

#: Seconds of judging the rate is measured over (the ETA's window).
RATE_WINDOW_S = 60.0
#: Seconds one micro-batch should take: a Cancel waits for at most about this long.
TARGET_BATCH_S = 2.0
#: The smallest token budget the pacer sets: below it a forward pass is mostly overhead.
MIN_BATCH_TOKENS = 256
#: How many times larger one micro-batch may be than the one before it: a fast judge (a GPU)
#: reaches its full budget in a few batches, and one lucky measurement cannot make a batch
#: overshoot the target time by more than this factor.
MAX_GROWTH = 2.0


def window_rate(units: Sequence[float], seconds: Sequence[float], prior_rate: float | None,
                window_s: float = RATE_WINDOW_S) -> float:
    """Units per second over the latest batches covering ``window_s`` seconds, with the prior.

    Batches are given oldest first (``units[k]`` done in ``seconds[k]``). The window takes the
    newest batches until their seconds reach ``window_s`` (the oldest one taken in part, pro
    rata); the seconds the window still lacks, ``m = max(window_s - S_w, 0)``, are filled at the
    prior rate ``r0``::

        rate = (U_w + r0 * m) / (S_w + m)

    where ``U_w`` and ``S_w`` are the units and seconds inside the window. Without a prior (None
    or not positive) the rate is ``U_w / S_w`` (0 before any batch).
    """
    u = np.asarray(units, dtype=np.float64)[::-1]
    s = np.asarray(seconds, dtype=np.float64)[::-1]
    before = np.concatenate(([0.0], np.cumsum(s)[:-1]))  # seconds of the newer batches
    share = np.clip((window_s - before) / np.where(s > 0, s, np.inf), 0.0, 1.0)
    share[(s <= 0) & (before < window_s)] = 1.0
    seen_u, seen_s = float(np.dot(u, share)), float(np.dot(s, share))
    missing = max(window_s - seen_s, 0.0)
    if prior_rate is None or not prior_rate > 0:
        return seen_u / seen_s if seen_s > 0 else 0.0
    return (seen_u + prior_rate * missing) / (seen_s + missing)


class RateWindow:
    """The batches of a run in progress and their :func:`window_rate` (``prior_rate``: the
    plan's estimate in units per second, None when there is none)."""

    def __init__(self, prior_rate: float | None = None, window_s: float = RATE_WINDOW_S,
                 keep: int = 512) -> None:
        self.prior_rate = prior_rate
        self.window_s = window_s
        self._batches: deque[tuple[float, float]] = deque(maxlen=keep)

    def add(self, units: float, seconds: float) -> None:
        self._batches.append((float(units), float(seconds)))

    @property
    def rate(self) -> float:
        if not self._batches:
            return float(self.prior_rate or 0.0)
        u, s = zip(*self._batches)
        return window_rate(u, s, self.prior_rate, self.window_s)


def batch_token_budget(token_rate: float, target_s: float = TARGET_BATCH_S, *,
                       least: int = MIN_BATCH_TOKENS, most: int | None = None) -> int:
    """Tokens one micro-batch may hold to take about ``target_s`` at ``token_rate`` tokens per
    second: ``clip(token_rate * target_s, least, most)`` (``most``: what memory allows)."""
    budget = max(int(token_rate * target_s), least)
    return min(budget, most) if most else budget


class BatchPacer:
    """Sizes a judge's micro-batches by its measured token rate, so each takes about ``target_s``.

    For a judge that cuts its work by ``token_budget`` (tokens per forward pass) and counts the
    tokens it runs in ``stats['model_tokens']`` (the local judges); for any other judge (a served
    one) it does nothing. The budget the judge was loaded with is the most it may get (what its
    memory allows); ``prior_token_rate`` (the plan's estimate) sizes the first batch only.
    :meth:`paced` wraps a ``judge_stream``-like iterator: after each micro-batch it measures
    tokens per second over the recent batches (:class:`RateWindow` without a prior, a short
    window) and sets the budget the judge's next cut uses, at most ``MAX_GROWTH`` times the last
    one. The prior is left out of the window on purpose: a plan's default rate is a CPU's, and a
    GPU judge thousands of times faster would otherwise run tiny batches until seconds of them
    had filled the window. A budget someone else lowered meanwhile (the judge itself, after
    running out of memory) becomes the most it may get from then on.
    """

    def __init__(self, judge: Any, prior_token_rate: float | None = None,
                 target_s: float = TARGET_BATCH_S, window_s: float = 2 * TARGET_BATCH_S) -> None:
        self.judge = judge
        stats = getattr(judge, "stats", None)
        self.active = isinstance(getattr(judge, "token_budget", None), int) and \
            isinstance(stats, dict) and "model_tokens" in stats
        self.most = int(judge.token_budget) if self.active else None
        self.target_s = target_s
        self.window = RateWindow(None, window_s)
        self._last_set: int | None = None
        if self.active and prior_token_rate:
            self._set(prior_token_rate)

    def _set(self, token_rate: float) -> None:
        now = int(self.judge.token_budget)
        if self._last_set is not None and now < self._last_set:
            self.most = now  # lowered by someone else (memory): never raised above it again
        budget = batch_token_budget(token_rate, self.target_s, most=self.most)
        if self._last_set is not None:
            budget = min(budget, max(int(MAX_GROWTH * self._last_set), MIN_BATCH_TOKENS))
        self._last_set = budget
        self.judge.token_budget = self._last_set

    @property
    def token_budget(self) -> int | None:
        return int(self.judge.token_budget) if self.active else None

    def paced(self, stream: Iterable) -> Iterator:
        """``stream``'s items unchanged, the judge's budget set again after each."""
        if not self.active:
            yield from stream
            return
        tokens = self.judge.stats["model_tokens"]
        start = time.perf_counter()
        for item in stream:
            now, count = time.perf_counter(), self.judge.stats["model_tokens"]
            self.window.add(count - tokens, now - start)
            self._set(self.window.rate)
            yield item
            tokens, start = self.judge.stats["model_tokens"], time.perf_counter()

    def restore(self) -> None:
        """Give the judge back the budget it was loaded with."""
        if self.active:
            self.judge.token_budget = self.most
