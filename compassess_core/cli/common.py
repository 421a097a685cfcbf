"""Helpers the commands share: reading a run by its flag, printing a ranking, a file's column map."""

from __future__ import annotations

import argparse
import json
import sys

from .. import api
from ..export import neutralise_frame


def _load_run(args) -> api.Run:
    return api.open_store(args.db).get_run(args.run)


def _print_ranking(df, fmt: str, run_name: str, fields: dict, header: str, rows: str) -> None:
    if fmt == "csv":
        neutralise_frame(df).to_csv(sys.stdout, index=False)
    elif fmt == "json":
        print(json.dumps({"run": run_name, **fields, rows: json.loads(df.to_json(orient="records"))},
                         indent=2, default=lambda o: None))
    else:
        print(header)
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
