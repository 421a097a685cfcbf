"""The one table reader every upload goes through: a file path, bytes, a file object or a pandas
DataFrame, as CSV, TSV, JSON Lines or a JSON array, into a DataFrame of strings whose index is the
row a spreadsheet shows (header = row 1; JSONL by line number), with every problem of the file
(size, encoding, not a text file, ragged rows, duplicate column names) reported with its file,
row and column. ``data`` (candidates), ``labels`` (human labels) and ``absolute`` (anchors)
validate what it reads.

This module must never read a file larger than ``max_bytes`` into memory, and never import
``streamlit`` or ``db``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from bisect import bisect_left
from pathlib import Path
from typing import BinaryIO, Callable, TypeVar

import numpy as np
import pandas as pd

from ..errors import Problem, ValidationError

MAX_FILE_BYTES: int = 512 * 1024 * 1024

Source = str | Path | bytes | bytearray | BinaryIO | pd.DataFrame

_ROW_INDEX_NAME = "row"

# Magic numbers of formats people upload by mistake instead of a CSV.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel .xls / Office document"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"PAR1", "a Parquet file"),
    (b"SQLite format 3\x00", "an SQLite database"),
)
_SURROGATES = re.compile("[\udc80-\udcff]")

# ---------------------------------------------------------------------------------------------
# reading bytes


def source_label(source: Source) -> str:
    """The name of ``source`` in problems: the file name, ``DataFrame`` or ``upload``."""
    if isinstance(source, pd.DataFrame):
        return "DataFrame"
    if isinstance(source, (str, Path)):
        return Path(source).name
    name = getattr(source, "name", None)
    if isinstance(name, str) and name:
        return Path(name).name
    return "upload"


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"  # unreachable


def _too_big(label: str, size: int, max_bytes: int) -> ValidationError:
    return ValidationError([Problem(
        label, f"file is {_human_bytes(size)}, larger than the {_human_bytes(max_bytes)} limit; "
        "split it into smaller files or raise max_bytes")])


def _read_bytes(source: Source, label: str, max_bytes: int) -> bytes:
    """All bytes of ``source``, refusing up front (by size, not by reading) what exceeds the limit.

    Raises
    ------
    ValidationError
        The file does not exist or is larger than ``max_bytes``.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) > max_bytes:
            raise _too_big(label, len(source), max_bytes)
        return bytes(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise ValidationError([Problem(label, f"no such file: {path}")]) from None
        if path.is_dir():
            raise ValidationError([Problem(label, f"{path} is a directory, not a file")])
        if size > max_bytes:
            raise _too_big(label, size, max_bytes)
        return path.read_bytes()
    try:
        start = source.tell()
        end = source.seek(0, os.SEEK_END)
        source.seek(start)
        size = end - start
    except (AttributeError, OSError, io.UnsupportedOperation):
        size = None
    if size is not None:
        if size > max_bytes:
            raise _too_big(label, size, max_bytes)
        return source.read()
    # Unseekable stream: read one byte past the limit, never the whole stream.
    data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValidationError([Problem(
            label, f"stream is larger than the {_human_bytes(max_bytes)} limit; split it into "
            "smaller files or raise max_bytes")])
    return data


def source_bytes(source: Source, file_label: str | None = None, *,
                 max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """All bytes of a file ``source`` (a path, bytes or a file object), refused from its size
    alone when larger than ``max_bytes`` (``ValidationError``): an upload read once."""
    return _read_bytes(source, file_label or source_label(source), max_bytes)


def _not_text(raw: bytes, label: str) -> Problem | None:
    """A problem when ``raw`` is plainly not a text table (binary, archive, image, HTML...)."""
    if raw[:4] == b"PK\x03\x04" and (b"[Content_Types].xml" in raw[:4096] or b"xl/" in raw[:4096]):
        what = "an Excel .xlsx workbook (a zip archive)"
        return Problem(label, f"this is {what}, not a CSV or JSON Lines file; in Excel use "
                       "File > Save As > 'CSV UTF-8 (Comma delimited)'")
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            return Problem(label, f"this is {what}, not a CSV or JSON Lines file")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return Problem(label, "the file is UTF-16 encoded; save it as UTF-8 (in Excel: "
                       "'CSV UTF-8 (Comma delimited)')")
    nul = raw.find(b"\x00")
    if nul >= 0:
        return Problem(label, f"binary content (a NUL byte at byte offset {nul}); this is not a "
                       "CSV or JSON Lines text file")
    head = raw[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<body")):
        return Problem(label, "this is an HTML/XML page, not a CSV or JSON Lines file (a "
                       "download link may have saved the web page instead of the file)")
    return None


def _decode(raw: bytes) -> tuple[str, list[tuple[int, int]]]:
    """UTF-8 text of ``raw`` (BOM dropped) and the (byte offset, byte value) of each invalid byte.

    Invalid bytes become U+FFFD in the text so the rest of the file can still be checked.
    """
    text = raw.decode("utf-8", errors="surrogateescape")
    bad: list[tuple[int, int]] = []
    if _SURROGATES.search(text):
        offset, prev = 0, 0
        for m in _SURROGATES.finditer(text):
            # Incremental so the cost stays linear in the file size however many bytes are bad.
            offset += len(text[prev:m.start()].encode("utf-8", errors="surrogateescape"))
            bad.append((offset, ord(m.group()) - 0xDC00))
            offset += 1
            prev = m.end()
        text = _SURROGATES.sub("\ufffd", text)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, bad


def _detect_format(label: str, text: str) -> str:
    """``csv``, ``tsv``, ``jsonl`` or ``json`` (an array of objects), by extension else content."""
    ext = Path(label).suffix.lower()
    first = text.lstrip()[:1]
    if ext in (".jsonl", ".ndjson", ".json"):
        return "json" if first == "[" else "jsonl"
    if ext in (".tsv", ".tab"):
        return "tsv"
    if ext == ".csv" or first not in ("{", "["):
        header = text.lstrip("\r\n").split("\n", 1)[0]
        # Spreadsheets often save tab-separated text under a .csv name.
        return "tsv" if "\t" in header and "," not in header else "csv"
    return "jsonl" if first == "{" else "json"


# ---------------------------------------------------------------------------------------------
# parsing


def _frame(columns: list[str], records: list[list[str]], rows: list[int]) -> pd.DataFrame:
    data = {c: [r[i] for r in records] for i, c in enumerate(columns)}
    return pd.DataFrame(data, columns=columns,
                        index=pd.Index(rows, name=_ROW_INDEX_NAME, dtype=np.int64), dtype=str)


def _unique_names(header: list[str], label: str) -> tuple[list[str], list[Problem]]:
    """Header with empty names filled in; repeated names are problems (which one would be meant?)."""
    problems: list[Problem] = []
    names: list[str] = []
    seen: dict[str, int] = {}
    for i, raw_name in enumerate(header, start=1):
        name = raw_name.strip() or f"unnamed_{i}"
        if name in seen:
            problems.append(Problem(label, f"column name '{name}' appears more than once (columns "
                                    f"{seen[name]} and {i}); rename one", row=1, column=name))
            name = f"{name}.{i}"
        else:
            seen[name] = i
        names.append(name)
    return names, problems


def _parse_csv(text: str, label: str, delimiter: str
               ) -> tuple[pd.DataFrame | None, list[Problem], list[int]]:
    """Parse CSV text; returns the frame, problems, and the last physical line of each record."""
    # csv's per-field limit is process-wide; only ever raise it so a long article fits.
    if csv.field_size_limit() < len(text) + 1:
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1, max(len(text) + 1, 131072)))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    problems: list[Problem] = []
    end_lines: list[int] = []
    header: list[str] | None = None
    records: list[list[str]] = []
    rows: list[int] = []
    row = 0
    try:
        for rec in reader:
            row += 1
            end_lines.append(reader.line_num)
            if header is None:
                if not rec or not any(f.strip() for f in rec):
                    problems.append(Problem(label, "the first row (the header) is empty; it must "
                                            "name the columns", row=row))
                    return None, problems, end_lines
                header = rec
                continue
            if not rec or not any(f.strip() for f in rec):
                continue  # blank spreadsheet row: no data, nothing to report
            if len(rec) != len(header):
                swallowed = any("\n" in f for f in rec)
                problems.append(Problem(
                    label, f"row has {len(rec)} field(s) but the header has {len(header)}"
                    + ("; an unclosed quote may have joined several lines into this row"
                       if swallowed else "; check quoting and delimiters"), row=row))
                continue
            records.append(rec)
            rows.append(row)
    except csv.Error as exc:
        problems.append(Problem(label, f"not a readable CSV: {exc}", row=row + 1))
        return None, problems, end_lines
    if header is None:
        problems.append(Problem(label, "the file is empty"))
        return None, problems, end_lines
    if text.count('"') % 2 and _ends_inside_quotes(text, delimiter):
        problems.append(Problem(
            label, "a double quote opened on this row is never closed, so the rest of the file "
            "was read as one field; close the quote (a literal quote inside a quoted field is "
            "written twice: \"\")", row=row))
        return None, problems, end_lines
    names, name_problems = _unique_names(header, label)
    problems.extend(name_problems)
    return _frame(names, records, rows), problems, end_lines


def _ends_inside_quotes(text: str, delimiter: str) -> bool:
    """Whether the CSV ends inside a quoted field (lenient parsing silently swallows the rest)."""
    # Only strict mode tells an unclosed quote apart from a literal quote in an unquoted field.
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


def _cell(value: object) -> str:
    """A JSON value as the string a CSV cell would hold."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _objects_frame(objects: list[dict], rows: list[int]) -> pd.DataFrame:
    """Objects as a table: columns in first-appearance order, a missing key an empty cell."""
    columns: dict[str, None] = {}
    for obj in objects:
        columns.update(dict.fromkeys(obj))
    names = list(columns)
    return _frame(names, [[_cell(obj.get(c)) for c in names] for obj in objects], rows)


def _frame_cell(value: object) -> str:
    """A DataFrame cell as the string a CSV cell would hold (missing values are empty)."""
    if isinstance(value, str):
        return value
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):  # a list or an array in a cell: not a missing value
        pass
    return str(value)


def _parse_frame(df: pd.DataFrame, label: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    """A user's DataFrame as the all-string table a file gives: the same checks follow."""
    if len(df.columns) == 0:
        return None, [Problem(label, "the DataFrame has no columns")]
    names, problems = _unique_names([str(c) for c in df.columns], label)
    records = [[_frame_cell(v) for v in row] for row in df.itertuples(index=False, name=None)]
    return _frame(names, records, list(range(2, len(df) + 2))), problems


def _parse_jsonl(text: str, label: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    problems: list[Problem] = []
    objects: list[dict] = []
    rows: list[int] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(label, f"line is not valid JSON: {exc.msg} (character "
                                    f"{exc.colno})", row=line_no))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(label, f"line is a JSON {type(obj).__name__}, not an object "
                                    "({\"context_id\": ..., ...})", row=line_no))
            continue
        objects.append(obj)
        rows.append(line_no)
    if not objects and not problems:
        return None, [Problem(label, "the file is empty")]
    return _objects_frame(objects, rows), problems


def _parse_json_array(text: str, label: str) -> tuple[pd.DataFrame | None, list[Problem]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [Problem(label, f"not valid JSON: {exc.msg} (line {exc.lineno}, character "
                              f"{exc.colno}); use JSON Lines: one object per line", row=exc.lineno)]
    if not isinstance(data, list):
        return None, [Problem(label, "a JSON file must be an array of objects or JSON Lines")]
    problems = [Problem(label, f"element {i} of the array is a JSON {type(o).__name__}, not an "
                        "object", row=i) for i, o in enumerate(data, start=1)
                if not isinstance(o, dict)]
    keep = [(i, o) for i, o in enumerate(data, start=1) if isinstance(o, dict)]
    if not keep and not problems:
        return None, [Problem(label, "the file is empty")]
    return _objects_frame([o for _, o in keep], [i for i, _ in keep]), problems


def _encoding_problems(bad: list[tuple[int, int]], raw: bytes, label: str,
                       end_lines: list[int] | None) -> list[Problem]:
    """One problem per row holding invalid UTF-8, naming the first bad byte and its offset."""
    problems: list[Problem] = []
    by_row: dict[int, list[tuple[int, int, int]]] = {}
    line, counted_to = 1, 0
    for offset, value in bad:
        line += raw.count(b"\n", counted_to, offset)
        counted_to = offset
        row = line if end_lines is None else bisect_left(end_lines, line) + 1
        by_row.setdefault(row, []).append((offset, value, line))
    for row, items in by_row.items():
        offset, value, line = items[0]
        more = f" ({len(items)} invalid bytes on this row)" if len(items) > 1 else ""
        problems.append(Problem(
            label, f"not valid UTF-8: byte 0x{value:02X} at byte offset {offset} (line {line})"
            f"{more}; save the file as UTF-8", row=row))
    return problems


def parse_table(source: Source, file_label: str | None = None, *,
                max_bytes: int = MAX_FILE_BYTES) -> tuple[pd.DataFrame | None, list[Problem]]:
    """Read a CSV/TSV/JSONL/JSON-array file (or a DataFrame) into an all-string frame, collecting
    every problem.

    The frame's index (named ``row``) holds each record's source row: the spreadsheet row for
    CSV (header = row 1) and the line number for JSONL. Cells are strings exactly as in the file
    (missing JSON keys and ``null`` become ``""``). Invalid UTF-8 bytes become U+FFFD and are
    reported with their byte offset; ragged CSV rows are reported and left out.

    Returns
    -------
    tuple[pandas.DataFrame | None, list[Problem]]
        The frame (``None`` when nothing table-like could be read) and the problems found.

    Raises
    ------
    ValidationError
        Only when the file must not be read at all: missing, or larger than ``max_bytes``.
    """
    label = file_label or source_label(source)
    if isinstance(source, pd.DataFrame):
        return _parse_frame(source, label)
    raw = _read_bytes(source, label, max_bytes)
    if not raw.strip(b" \t\r\n\xef\xbb\xbf"):
        return None, [Problem(label, "the file is empty")]
    not_text = _not_text(raw, label)
    if not_text is not None:
        return None, [not_text]
    text, bad = _decode(raw)
    fmt = _detect_format(label, text)
    end_lines: list[int] | None = None
    if fmt in ("csv", "tsv"):
        frame, problems, end_lines = _parse_csv(text, label, "," if fmt == "csv" else "\t")
    elif fmt == "jsonl":
        frame, problems = _parse_jsonl(text, label)
    else:
        frame, problems = _parse_json_array(text, label)
    if bad:
        problems = _encoding_problems(bad, raw, label, end_lines) + problems
    return frame, sorted_problems(problems)


def read_table(source: Source, file_label: str | None = None, *,
               max_bytes: int = MAX_FILE_BYTES) -> pd.DataFrame:
    """The raw table of a candidate file, all strings, for previews and column mapping.

    Same reading as :func:`parse_table`; the index (``row``) is the source row number.

    Raises
    ------
    ValidationError
        If the file cannot be read cleanly (too large, empty, not a text table, invalid UTF-8,
        ragged rows, lines that are not JSON objects), with every problem found.
    """
    frame, problems = parse_table(source, file_label, max_bytes=max_bytes)
    if problems or frame is None:
        raise ValidationError(problems)
    return frame


T = TypeVar("T")


def load_table(source: Source, validate: Callable[[pd.DataFrame, str], tuple[T | None, list[Problem]]],
               *, file_label: str | None = None, max_bytes: int = MAX_FILE_BYTES) -> T:
    """Read a table file with :func:`parse_table` and validate it: the one way every upload
    (candidates, human labels, anchor texts) is read.

    ``validate(frame, label)`` returns what the rows make (or None) and the problems it found,
    each with its row (``source_rows``) and column. Reading and validation problems are reported
    together, file-level first, then by row.

    Raises
    ------
    ValidationError
        With every problem found (too large, not a text table, bad encoding, bad rows).
    """
    label = file_label or source_label(source)
    frame, problems = parse_table(source, label, max_bytes=max_bytes)
    if frame is None:
        raise ValidationError(problems)
    value, more = validate(frame, label)
    problems = sorted_problems(problems + more)
    if problems or value is None:
        raise ValidationError(problems)
    return value


def sorted_problems(problems: list[Problem]) -> list[Problem]:
    """File-level problems first, then by row; the order of checks is kept within a row."""
    return sorted(problems, key=lambda p: -1 if p.row is None else p.row)
