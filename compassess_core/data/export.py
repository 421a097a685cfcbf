"""Writing rankings and comparisons to CSV, JSON and Parquet, with the run's settings alongside.

CSV cells that a spreadsheet would execute (starting with ``=``, ``+``, ``-``, ``@``, tab or CR) are
neutralised with a leading apostrophe (OWASP "CSV injection"); numbers are left as numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ..errors import InputError

FORMATS = ("csv", "json", "parquet")
_DANGEROUS_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: The file beside a CSV or Parquet export that holds its settings (JSON holds them inside).
SIDECAR_SUFFIX = ".settings.json"


def sidecar_name(file_name: str) -> str:
    """The settings sidecar's name of the export ``file_name`` (``rankings.csv.settings.json``)."""
    return file_name + SIDECAR_SUFFIX


def file_name(*parts: str, suffix: str = "") -> str:
    """A download's file name from ``parts`` that people named (runs, datasets, aspects), joined
    by ``-``: every character but letters, digits, ``-``, ``_`` and ``.`` becomes ``_``, so no
    name can reach another folder or carry a control character; ``suffix`` (``.csv``) as is."""
    stem = "-".join(str(p) for p in parts)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) + suffix


def neutralise_cell(value):
    """Prefix a string cell that a spreadsheet would read as a formula; leave everything else."""
    if isinstance(value, str) and value.startswith(_DANGEROUS_PREFIXES):
        return "'" + value
    return value


def neutralise_frame(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralise_cell)
    out.columns = [neutralise_cell(str(c)) for c in out.columns]
    return out


def _json_safe(v):
    """A cell as JSON holds it: a missing or undefined number (NaN, pandas' NA) is null."""
    if v is pd.NA or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def write_table(df: pd.DataFrame, path: str | Path, fmt: str, *, what: str, metadata: dict) -> list[Path]:
    """Write ``df`` as ``fmt``; JSON embeds ``metadata``, CSV and Parquet get a ``.settings.json`` sidecar.

    Returns the paths written.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise InputError(f"output folder '{path.parent}' does not exist")
    written = [path]
    if fmt == "json":
        records = [{k: _json_safe(v) for k, v in r.items()} for r in df.to_dict(orient="records")]
        payload = {"what": what, **metadata, what: records}
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        return written
    if fmt == "csv":
        neutralise_frame(df).to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    sidecar = path.with_name(sidecar_name(path.name))
    sidecar.write_text(json.dumps({"what": what, **metadata}, indent=2, default=str), encoding="utf-8")
    written.append(sidecar)
    return written


def table_bytes(df: pd.DataFrame, fmt: str, *, what: str, metadata: dict) -> tuple[bytes, bytes | None]:
    """The bytes :func:`write_table` would write, for downloads: ``(file, sidecar)``.

    The sidecar (``.settings.json``) is None for JSON, which embeds ``metadata`` itself.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="compassess-export-") as tmp:
        paths = write_table(df, Path(tmp) / f"{what}.{fmt}", fmt, what=what, metadata=metadata)
        data = paths[0].read_bytes()
        sidecar = paths[1].read_bytes() if len(paths) > 1 else None
    return data, sidecar
