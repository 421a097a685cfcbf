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
    n = max(len(r) - 1 for r in rows)
    # each column as wide as its widest cell (at least 10), so a long cell shifts nothing
    widths = [max([10, *(len(str(r[k + 1])) for r in rows if len(r) > k + 1),
                   *([len(head[k])] if head and k < len(head) else [])]) for k in range(n)]
    if head:
        print(f"{'':{w}}  " + "  ".join(f"{h:>{widths[k]}}" for k, h in enumerate(head)),
              file=out)
    for name, *values in rows:
        print(f"{name:{w}}  " + "  ".join(f"{v:>{widths[k]}}" for k, v in enumerate(values)),
              file=out)


def counted(n, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: ``1 context``, ``3 contexts``, ``1,200
    pairs`` (``plural``: default the noun with an s); a missing count as ``?``."""
    many = plural or noun + "s"
    if n is None or isinstance(n, str):
        return f"{n or '?'} {many}"
    shown = f"{int(n):,}" if float(n).is_integer() else str(n)
    return f"{shown} {noun if n == 1 else many}"
