"""Numbers and tables as the command line prints them: the helpers each run kind's evaluation
printer (``RunKind.print_evaluation``) and the CLI's other reports share."""

from __future__ import annotations

import math
import sys
from typing import TextIO


def fmt(v, spec: str = ".1f") -> str:
    """``v`` formatted by ``spec``; ``n/a`` for a missing number (None or NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, spec)


def table(rows: list[tuple[str, ...]], head: tuple[str, ...] | None = None,
          out: TextIO | None = None) -> None:
    """Rows of a name and values, the names left-aligned, the values right-aligned in columns
    under ``head``, printed to ``out`` (default: standard output at the time of the call)."""
    out = out or sys.stdout
    w = max(len(r[0]) for r in rows)
    if head:
        print(f"{'':{w}}  " + "  ".join(f"{h:>10}" for h in head), file=out)
    for name, *values in rows:
        print(f"{name:{w}}  " + "  ".join(f"{v:>10}" for v in values), file=out)
