"""Helpers the commands share: reading a run by its flag, printing a ranking, a file's column map."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from .. import api
from ..errors import InputError
from ..data.export import neutralise_frame


def _finite(obj):
    """``obj`` with every NaN or infinite float (an undefined number: n/a) as None, so that the
    JSON printed is JSON (``NaN`` is not) and an undefined number reads null everywhere."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _dumps(obj, *, indent: int | None = 2, default=lambda o: None) -> str:
    """JSON as every ``--json`` prints it: undefined numbers (NaN) as null, never ``NaN``."""
    return json.dumps(_finite(json.loads(json.dumps(obj, default=default))), indent=indent,
                      allow_nan=False)


def _load_run(args) -> api.Run:
    return api.open_store(args.db).get_run(args.run)


def _print_ranking(df, fmt: str, run_name: str, fields: dict, header: str, rows: str) -> None:
    if fmt == "csv":
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif fmt == "json":
        print(_dumps({"run": run_name, **fields, rows: json.loads(df.to_json(orient="records"))},
                         indent=2, default=lambda o: None))
    else:
        print(header)
        if "rank" in df.columns:   # an unranked row (never compared) has a blank rank
            df = df.assign(rank=df["rank"].astype(object).where(df["rank"].notna(), ""))
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def _nan_none(x):
    return None if x is None or (isinstance(x, float) and x != x) else float(x)


def _column_map(text: str) -> dict[str, str]:
    """``--map question_id=context_id,summary=text``: our column -> the file's column (what
    ``column_map`` takes in Python), for label files and candidate files alike."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        column, sep, ours = part.rpartition("=")
        if not sep or not column.strip() or not ours.strip():
            raise argparse.ArgumentTypeError(f"'{part}' is not FILE_COLUMN=OUR_COLUMN")
        if ours.strip() in mapping:
            raise argparse.ArgumentTypeError(f"'{ours.strip()}' is mapped twice")
        mapping[ours.strip()] = column.strip()
    return mapping


def _warnings(run, debias) -> list[str]:
    """What a result read at ``debias`` rests on that its reader must know: a partial
    (cancelled) run, a judge that answers by position. Nothing for a run that is not pairwise
    (its verdicts have no position)."""
    notes = [run.partial_note]
    if run.run_kind.is_pairwise:
        notes.append(run.position_warning(debias))
    return [n for n in notes if n]


def _print_warnings(lines: list[str], stream=None) -> None:
    for line in lines:
        print(f"warning: {line}", file=stream or sys.stdout)


def _input_file(path: str, flag: str) -> Path:
    """A file a flag names, which must exist and be readable: else a plain InputError (exit 2)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{flag} {path}: no such file" if not file.exists()
                         else f"{flag} {path}: not a file")
    return file


def _output_file(path: str, flag: str = "-o") -> Path:
    """A file a command writes: its folder must exist and it must not be a folder (InputError,
    exit 2, before anything is computed)."""
    out = Path(path)
    if out.is_dir():
        raise InputError(f"{flag} {path}: is a folder; give a file name")
    if not out.parent.is_dir():
        raise InputError(f"{flag} {path}: the folder '{out.parent}' does not exist")
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InputError(f"{flag} {path}: permission denied (choose a file this user may write)")
    return out
