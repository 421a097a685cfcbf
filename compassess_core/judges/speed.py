"""How fast a judge runs on this machine, from what earlier runs recorded: for estimates before Start.

Every run's worker records its rate (``runs.rate``: the run kind's units per second of judging)
and its token rate (``runs.token_rate``: prompt tokens the judge processed per second of
judging, from its first judged batch on), with the size of its work in tokens and characters
(``runs.plan``: ``work_tokens``, ``work_chars``). A comparison of two long stories costs far more
than one of two short replies, so the time a plan states comes from the size of its prompts
(``RunKind.prompt_work``) at the model's measured token rate: the median of its earlier runs on
this device, so an estimate needs no benchmark of its own and follows the machine it runs on.
When nothing is measured the estimate says it uses the rough defaults below. This module must
never read the store itself: callers hand it the runs (``Store.list_runs()``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np

#: Characters per prompt token when no run of the model measured its own: English text in the
#: tokenizers of the bundled and catalogued models runs at about 4.
ROUGH_CHARS_PER_TOKEN = 4.0
#: Prompt tokens per second of judging when no run of the model measured its own: a round figure
#: between what the bundled 135M judge measured on the shared 2-core development machine under
#: other load (11-53 tokens/s, tests/runs/test_honest_time.py's runs) and what its comparisons/s on a
#: quiet one imply (docs/results.md section 4: several hundred). Only an order of magnitude: the
#: Run page says so; a larger model is slower, a GPU much faster.
ROUGH_TOKENS_PER_S = 200.0
#: The same on a GPU, for a plan made before any run there: an order of magnitude below what an
#: H200 measured (24,000-63,000 prompt tokens/s for judges of 135M to 8B parameters, the engine
#: host-bound: docs/performance.md), so a first plan on a smaller GPU is not far too short.
ROUGH_GPU_TOKENS_PER_S = 5_000.0


def rough_token_rate(device: str | None) -> float:
    """The rough default for ``device`` (``auto`` resolved as a judge loading there would)."""
    from .memory import resolve_device_name
    on_gpu = device is not None and resolve_device_name(device) == "cuda"
    return ROUGH_GPU_TOKENS_PER_S if on_gpu else ROUGH_TOKENS_PER_S


class RecordedRun(Protocol):
    settings: dict
    rate: float | None


@dataclass(frozen=True)
class Speed:
    """``rate``: median units per second over ``n_runs`` earlier runs of the model and kind."""

    rate: float
    n_runs: int

    def seconds_for(self, units: int) -> float:
        return units / self.rate


def measured_speed(runs: Iterable[RecordedRun], model: str, kind: str = "comparative",
                   device: str | None = None) -> Speed | None:
    """The model's recorded speed for runs of ``kind`` (and ``device``), None when never measured."""
    rates = [float(r.rate) for r in runs
             if r.rate and r.rate > 0 and r.settings.get("model") == model
             and (r.settings.get("kind") or "comparative") == kind
             and (device is None or r.settings.get("device", "auto") == device)]
    if not rates:
        return None
    return Speed(float(np.median(rates)), len(rates))


def human_duration(seconds: float) -> str:
    """A duration as people say it: ``"45 s"``, ``"12 min"``, ``"2.5 h"``."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def work_size(work: Sequence[tuple[str, float]], count: Callable[[list[str]], np.ndarray]) -> float:
    """The size of a run's work (``RunKind.prompt_work``: texts and how many times each is run),
    each text counted by ``count`` (tokens, or :func:`characters`): sum_i times_i * count(text_i)."""
    if not work:
        return 0.0
    texts = [t for t, _ in work]
    times = np.array([n for _, n in work], dtype=np.float64)
    return float(np.dot(np.asarray(count(texts), dtype=np.float64), times))


def shared_work(works: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The work of runs judged together (each ``RunKind.prompt_work``, e.g. the aspects of one
    dataset): a text the runs share is run through the model as often as the run that needs it
    most does (their prompts share it in the judge's prefix cache), a text of one run only as
    often as that run needs it. Per text: ``max_r sum_{(t, n) in work_r, t = text} n``."""
    merged: dict[str, float] = {}
    for work in works:
        mine: dict[str, float] = {}
        for text, times in work:
            mine[text] = mine.get(text, 0.0) + float(times)
        for text, times in mine.items():
            merged[text] = max(merged.get(text, 0.0), times)
    return list(merged.items())


def characters(texts: list[str]) -> np.ndarray:
    """Each text's length in characters (what :func:`work_size` counts before a tokenizer is at hand)."""
    return np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))


@dataclass(frozen=True)
class TimeEstimate:
    """How long judging a plan takes (the judge's loading not included): ``tokens`` prompt tokens
    (its characters at ``chars_per_token``) at ``token_rate`` tokens per second; ``n_runs`` the
    earlier runs of the model these were measured on, 0 when both are the rough defaults."""

    seconds: float
    tokens: float
    token_rate: float
    chars_per_token: float
    n_runs: int

    @property
    def measured(self) -> bool:
        return self.n_runs > 0

    @property
    def duration(self) -> str:
        """``seconds`` in words ("about 3 min" reads ``3 min``): what a page shows."""
        return human_duration(self.seconds)

    def share(self, fraction: float) -> "TimeEstimate":
        """This estimate for ``fraction`` of the work (what is left of a run partly stored)."""
        return replace(self, seconds=self.seconds * fraction, tokens=self.tokens * fraction)

    def sentence(self) -> str:
        """The estimate in words, with what it rests on (the Run page, ``compassess run``)."""
        basis = (f"{self.token_rate:,.0f} prompt tokens/s and {self.chars_per_token:.1f} "
                 f"characters per token, the median of {self.n_runs} earlier run(s) of this model "
                 "on this machine" if self.measured else
                 f"a rough default of {self.token_rate:,.0f} prompt tokens/s and "
                 f"{self.chars_per_token:.0f} characters per token: no run of this model has "
                 "measured its speed on this machine yet (the first run does)")
        return (f"about {human_duration(self.seconds)} of judging (loading the judge not "
                f"included) for about {self.tokens:,.0f} prompt tokens at {basis}")


def estimate_time(work: Sequence[tuple[str, float]], runs: Iterable[RecordedRun], model: str,
                  device: str | None = None) -> TimeEstimate:
    """The judging time of a plan's ``work`` (``RunKind.prompt_work``) for ``model``: its size in
    characters over the model's measured characters per token, at the median token rate of its
    earlier runs (on ``device`` when given; any run kind: a prompt token costs the same); the
    rough defaults when no run measured them."""
    measured = [r for r in runs
                if getattr(r, "token_rate", None) and r.token_rate > 0
                and r.settings.get("model") == model
                and (device is None or r.settings.get("device", "auto") == device)]
    ratios = [float(r.plan["work_chars"]) / float(r.plan["work_tokens"]) for r in measured
              if (getattr(r, "plan", None) or {}).get("work_tokens")
              and r.plan.get("work_chars")]
    chars_per_token = float(np.median(ratios)) if ratios else ROUGH_CHARS_PER_TOKEN
    token_rate = (float(np.median([r.token_rate for r in measured])) if measured
                  else rough_token_rate(device))
    tokens = work_size(work, characters) / chars_per_token
    return TimeEstimate(tokens / token_rate, tokens, token_rate, chars_per_token, len(measured))
