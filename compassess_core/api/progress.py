"""How a run executed from the API shows its progress: a ``tqdm`` bar (:class:`ProgressBar`),
nothing (``progress=False``), or any :class:`Reporter` the caller gives."""

from __future__ import annotations

import sys
import time

from ..run_kinds import RunKind
from ..run_loop import Progress
from ..worker import Reporter

# ------------------------------------------------------------------------------ progress

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

