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
        # A column with nothing in it (no system in the file) is left out, and a missing value
        # (an unranked candidate's score, a missing reference score) is blank, not None or NaN.
        df = df[[c for c in df.columns if df[c].notna().any()]]
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep=""))


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


#: The commands that bring new data into a store and so may start one: a ``--db`` naming a
#: SQLite file that does not exist yet creates it (its folder too with ``--create``). Every other
#: command reads or changes what is stored, and a store that does not exist holds nothing: a
#: mistyped ``--db`` is refused instead of answered from a new empty store ("no runs").
CREATES_STORE = frozenset({"run", "score", "tune", "import-labels", "worker", "campaign create",
                           "job start"})
#: Commands that need no store (``models`` reads measured speeds from one only when it exists).
NEEDS_NO_STORE = frozenset({"models", "fetch-model"})


def command_name(args: argparse.Namespace) -> str:
    """The command as typed: ``runs``, ``campaign create``, ``panel rank``, ``job start``."""
    sub = next((getattr(args, d) for d in ("campaign_command", "panel_command", "job_command")
                if getattr(args, d, None)), None)
    return f"{args.command} {sub}" if sub else args.command


def sqlite_file(db: str | None) -> Path | None:
    """The SQLite file a ``--db`` names (a path ending in .db, .sqlite or .sqlite3, or a
    ``sqlite:///`` URL); None for no ``--db``, an in-memory store or another database (a
    PostgreSQL URL is not a file)."""
    if db is None:
        return None
    text = db.strip()
    if text.lower().startswith("sqlite:///"):
        path = text[len("sqlite:///"):].split("?", 1)[0]
        return None if not path or path == ":memory:" else Path(path).expanduser()
    if "://" not in text and text.lower().endswith((".db", ".sqlite", ".sqlite3")):
        return Path(text).expanduser()
    return None


def missing_store(args: argparse.Namespace) -> str | None:
    """Why the command cannot run on the store its ``--db`` names (a SQLite file that does not
    exist, for a command that only reads or changes what is stored, without ``--create``), as a
    plain message naming the path; None when it may run."""
    file = sqlite_file(getattr(args, "db", None))
    name = command_name(args)
    if (file is None or file.exists() or getattr(args, "create", False)
            or name in CREATES_STORE or name in NEEDS_NO_STORE):
        return None
    return (f"--db {args.db}: no store at {file} (`compassess {name}` creates none: "
            "`compassess run` or `import-labels` does, or give --create to start an empty store "
            "there)")
