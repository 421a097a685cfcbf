"""Load and validate a candidate file (CSV or JSON Lines) or a pandas DataFrame into a
:class:`~compassess_core.types.Dataset`.

One row per candidate: ``context_id``, ``context``, ``candidate_id``, ``text``, optional ``system``,
and any number of numeric reference-score columns (e.g. ``coherence``). Other column names are
mapped with ``column_map`` (canonical name -> column in the file); :func:`suggest_column_map`
proposes one.

Validation reports *every* problem it finds (file, row, column) in one
:class:`~compassess_core.errors.ValidationError`; rows are numbered as a spreadsheet shows them
(header = row 1, first data row = row 2) and JSONL rows by line number; a DataFrame's rows are
numbered as the CSV ``df.to_csv(index=False)`` writes would show them (its first row is row 2).

This module must never return a half-built dataset, never read a file larger than ``max_bytes``
into memory, and never import ``streamlit`` or ``db``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import sys
from bisect import bisect_left
from pathlib import Path
from typing import BinaryIO, Callable, Mapping, Sequence, TypeVar

import numpy as np
import pandas as pd

from .errors import Problem, ValidationError
from .limits import MAX_ID_CHARS, id_problem
from .prompts import ASPECT_ADJECTIVES
from .types import Candidate, Context, Dataset

CANONICAL: tuple[str, ...] = ("context_id", "context", "candidate_id", "text")
OPTIONAL: tuple[str, ...] = ("system",)
#: A column map value for ``candidate_id``: no column holds the ids, generate ``c1, c2, ...`` per
#: context in file order. (A NUL character: no file column can be named so.)
GENERATE_IDS = "\x00generate candidate ids"
#: Canonical names one file column may serve together: a column of system names is also a fine
#: candidate id when every context has one candidate per system.
SHARED_COLUMNS = frozenset({"candidate_id", "system"})
_GENERATED_COLUMN = "candidate_id (generated)"
MAX_FILE_BYTES: int = 512 * 1024 * 1024

Source = str | Path | bytes | bytearray | BinaryIO | pd.DataFrame

_ID_COLUMNS = ("context_id", "candidate_id")
_ROW_INDEX_NAME = "row"
_MAX_ROWS_NAMED = 10

# Synonyms in priority order; the canonical name itself always matches first.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "context_id": ("id", "doc_id", "document_id", "article_id", "source_id", "passage_id",
                   "dialogue_id", "conversation_id", "question_id", "prompt_id", "example_id",
                   "item_id"),
    "context": ("source", "document", "doc", "article", "passage", "dialogue", "dialog",
                "conversation", "question", "prompt", "input"),
    "candidate_id": ("cand_id", "summary_id", "response_id", "output_id", "answer_id",
                     "hypothesis_id", "story_id", "generation_id"),
    "text": ("summary", "response", "output", "candidate", "answer", "hypothesis", "generation",
             "completion", "story", "essay", "continuation", "reply", "model_output",
             "generated_text"),
    "system": ("model", "system_id", "model_id", "system_name", "model_name"),
}

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
# Characters an id may not hold (limits.id_problem says why), as a pattern for whole columns.
_ID_FORBIDDEN = r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"
# Column names that say "this is a score": with one number in it, such a column is a score column
# and a word in it is an error, not a reason to ignore the column.
_SCORE_NAME = re.compile(r"(score|rating|grade|rank|label)s?$|^(human|expert|gold|ref)_")
_UNNAMED = re.compile(r"^(unnamed_\d+|Unnamed: \d+)$")


# ---------------------------------------------------------------------------------------------
# column names


def column_key(name: str) -> str:
    """Column name folded for matching: case, surrounding space, inner spaces/hyphens/dots."""
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


def suggest_column_map(columns: Sequence[str], table: pd.DataFrame | None = None) -> dict[str, str]:
    """Propose which file column holds each canonical column.

    Matching ignores case and spaces (``"Context ID"`` matches ``context_id``); failing an exact
    match, common synonyms are tried in order (``doc_id``/``article_id`` -> ``context_id``,
    ``summary``/``response``/``story`` -> ``text``, ``model`` -> ``system``, ...). A file column is
    proposed for at most one canonical name, except that a system column may also be proposed
    as ``candidate_id`` (:data:`SHARED_COLUMNS`).

    With the file's ``table``, what names leave open is filled from the content: ``text`` is the
    longest free-text column whose values are mostly distinct, ``context`` the longest free-text
    column whose values repeat (one passage, several candidates); id-like columns (``*_id``) are
    never proposed as text. Without a ``candidate_id`` column, a system column that names each
    context's candidates uniquely serves as the id, else :data:`GENERATE_IDS` is proposed.

    Parameters
    ----------
    columns
        Column names as they appear in the file.
    table
        The file's rows (all strings, as :func:`read_table` gives them), for the content rules.

    Returns
    -------
    dict[str, str]
        Canonical name -> file column (or :data:`GENERATE_IDS`), only for the canonical names a
        column was found for.
    """
    by_norm: dict[str, str] = {}
    for col in columns:
        by_norm.setdefault(column_key(col), col)
    taken: set[str] = set()
    found: dict[str, str] = {}
    # Exact (normalised) matches first so a synonym never steals a column named canonically.
    for canon in CANONICAL + OPTIONAL:
        col = by_norm.get(canon)
        if col is not None:
            found[canon] = col
            taken.add(col)
    for canon in CANONICAL + OPTIONAL:
        if canon in found:
            continue
        for syn in _SYNONYMS[canon]:
            col = by_norm.get(syn)
            if col is not None and col not in taken:
                found[canon] = col
                taken.add(col)
                break
    if table is not None and len(table):
        found.update(_suggest_from_content(table, found, taken))
    return found


def _suggest_from_content(table: pd.DataFrame, found: dict[str, str], taken: set[str]
                          ) -> dict[str, str]:
    """``text``/``context``/``candidate_id`` proposals from what the columns hold."""
    more: dict[str, str] = {}
    free = []
    for col in table.columns:
        if col in taken or _looks_like_id(str(col)):
            continue
        values = _as_strings(table[col])
        numbers, empty, unparsed = _parse_scores(values)
        filled = int((~empty).sum())
        if not filled or (filled - int(unparsed.sum())) / filled > 0.5:
            continue  # empty or numeric: a reference score, not a text
        free.append((col, float(values.str.len().mean()), values.nunique() / len(values)))
    free.sort(key=lambda item: -item[1])
    if "text" not in found:
        distinct = [c for c, _, unique in free if unique > 0.5]
        if distinct:
            more["text"] = distinct[0]
    if "context" not in found:
        repeated = [c for c, _, unique in free if unique <= 0.5 and c != more.get("text")]
        if repeated:
            more["context"] = repeated[0]
    if "candidate_id" not in found:
        ctx_col, sys_col = found.get("context_id"), found.get("system")
        if ctx_col is not None and sys_col is not None and not table.duplicated([ctx_col, sys_col]).any():
            more["candidate_id"] = sys_col
        else:
            more["candidate_id"] = GENERATE_IDS
    return more


def _resolve_columns(columns: list[str], column_map: Mapping[str, str] | None,
                     file_label: str) -> tuple[dict[str, str], list[Problem]]:
    """Canonical name -> file column, applying ``column_map`` then case/space-insensitive names."""
    problems: list[Problem] = []
    column_map = dict(column_map or {})
    have = ", ".join(f"'{c}'" for c in columns) or "(none)"
    for key in column_map:
        if key not in CANONICAL + OPTIONAL:
            problems.append(Problem(
                file_label, f"column map key '{key}' is not a canonical column; use one of "
                f"{', '.join(CANONICAL + OPTIONAL)}", column=key))
    by_norm: dict[str, str] = {}
    for col in columns:
        by_norm.setdefault(column_key(col), col)
    suggestions = suggest_column_map(columns)
    resolved: dict[str, str] = {}
    for canon in CANONICAL + OPTIONAL:
        if canon in column_map:
            col = column_map[canon]
            if col is None:
                if canon in CANONICAL:  # an optional column mapped to nothing stays unmapped
                    problems.append(Problem(
                        file_label, f"no column is chosen for the required '{canon}'; map one of: "
                        f"{have}", column=canon, cause="mapping"))
            elif col in columns or (canon == "candidate_id" and col == GENERATE_IDS):
                resolved[canon] = col
            else:
                problems.append(Problem(
                    file_label, f"the column map maps '{canon}' to '{col}', but the file has no "
                    f"column '{col}'; it has: {have}", column=canon, cause="mapping"))
            continue
        if canon in columns:
            resolved[canon] = canon
        elif canon in by_norm:
            resolved[canon] = by_norm[canon]
        elif canon in CANONICAL:
            hint = (f"e.g. column_map={{'{canon}': '{suggestions[canon]}'}}"
                    if canon in suggestions else f"column_map={{'{canon}': '<column>'}}")
            problems.append(Problem(
                file_label, f"missing required column '{canon}'; the file has: {have}. Rename a "
                f"column or map one to '{canon}' with the column map ({hint})", column=canon,
                cause="mapping"))
    used: dict[str, str] = {}
    for canon, col in resolved.items():
        if col in used and {used[col], canon} != SHARED_COLUMNS:
            problems.append(Problem(
                file_label, f"column '{col}' is mapped to both '{used[col]}' and '{canon}'; each "
                "canonical column needs its own file column (only candidate_id and system may "
                "share one)", column=col, cause="mapping"))
        used.setdefault(col, canon)
    return resolved, problems


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


# ---------------------------------------------------------------------------------------------
# validation


def sorted_problems(problems: list[Problem]) -> list[Problem]:
    """File-level problems first, then by row; the order of checks is kept within a row."""
    return sorted(problems, key=lambda p: -1 if p.row is None else p.row)


def source_rows(df: pd.DataFrame) -> np.ndarray:
    """Source rows of ``df``: its ``row`` index from :func:`read_table`, else as if a CSV."""
    if df.index.name == _ROW_INDEX_NAME and pd.api.types.is_integer_dtype(df.index):
        return df.index.to_numpy(dtype=np.int64)
    return np.arange(len(df), dtype=np.int64) + 2


def _rows_text(rows: np.ndarray) -> str:
    shown = ", ".join(str(r) for r in rows[:_MAX_ROWS_NAMED])
    return shown + (f" and {len(rows) - _MAX_ROWS_NAMED} more" if len(rows) > _MAX_ROWS_NAMED
                    else "")


def _as_strings(s: pd.Series) -> pd.Series:
    return s.fillna("").astype(str)


def _looks_like_id(column: str) -> bool:
    n = column_key(column)
    return n in ("id", "index", "idx") or n.endswith("_id") or bool(_UNNAMED.match(column))


def _parse_scores(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float values of a column and masks of empty and unparseable cells (NaN/inf stay as such)."""
    stripped = values.str.strip()
    empty = (stripped == "").to_numpy()
    numbers = pd.to_numeric(stripped, errors="coerce").to_numpy(np.float64)
    # to_numeric turns both "abc" and "nan" into NaN; only the literal spellings are NaN values.
    literal_nan = stripped.str.lower().isin(("nan", "+nan", "-nan")).to_numpy()
    unparsed = np.isnan(numbers) & ~empty & ~literal_nan
    return numbers, empty, unparsed


def _looks_like_score(column: str) -> bool:
    n = column_key(column)
    return n in ASPECT_ADJECTIVES or bool(_SCORE_NAME.search(n))


def _detect_score_columns(df: pd.DataFrame, exclude: set[str]) -> list[str]:
    """Numeric-looking columns: at least half of their non-empty cells are numbers, or one is and
    the name says score (an aspect such as ``coherence``, ``*_score``, ``rating``, ...); ids and
    mapped columns excluded. A word in such a column is then reported, never silently dropped."""
    found: list[str] = []
    for col in df.columns:
        if col in exclude or _looks_like_id(col):
            continue
        numbers, empty, unparsed = _parse_scores(_as_strings(df[col]))
        filled = int((~empty).sum())
        parsed = filled - int(unparsed.sum())
        if filled and (parsed / filled >= 0.5 or (parsed and _looks_like_score(str(col)))):
            found.append(col)
    return found


#: Why a column is not used (:func:`ignored_columns`).
MOSTLY_TEXT = "mostly text, so not a reference score"
NOT_CHOSEN = "numbers, not chosen as a reference score"


def ignored_columns(df: pd.DataFrame, column_map: Mapping[str, str] | None = None,
                    score_columns: Sequence[str] | None = None) -> dict[str, str]:
    """The columns of ``df`` that :func:`validate_frame` would neither map nor use as scores,
    each with why (:data:`MOSTLY_TEXT` for text metadata such as a ``fact`` column,
    :data:`NOT_CHOSEN` for numbers left out of an explicit ``score_columns``): what an upload
    page lists as not used."""
    columns = [str(c) for c in df.columns]
    cols, _ = _resolve_columns(columns, column_map, "")
    used = set(cols.values())
    numeric = set(_detect_score_columns(df, used))
    scores = set(score_columns) if score_columns is not None else numeric
    return {c: NOT_CHOSEN if c in numeric else MOSTLY_TEXT
            for c in columns if c not in used and c not in scores}


def _score_problems(df: pd.DataFrame, col: str, rows: np.ndarray, label: str
                    ) -> tuple[np.ndarray, list[Problem]]:
    values = _as_strings(df[col])
    numbers, empty, unparsed = _parse_scores(values)
    problems: list[Problem] = []
    for i in np.flatnonzero(empty | unparsed | ~np.isfinite(numbers)):
        if empty[i]:
            msg = "empty reference score"
        elif unparsed[i]:
            msg = f"reference score {values.iloc[i]!r} is not a number"
        else:
            msg = f"reference score {values.iloc[i]!r} is not a finite number"
        problems.append(Problem(label, msg, row=int(rows[i]), column=col))
    return numbers, problems


def _id_problems(df: pd.DataFrame, cols: dict[str, str], rows: np.ndarray,
                 label: str) -> list[Problem]:
    """Ids (context, candidate, system) that are too long or hold a control character
    (``limits.id_problem``), found column-wise so a large file stays fast."""
    problems: list[Problem] = []
    for canon in ("context_id", "candidate_id", "system"):
        if canon not in cols:
            continue
        values = _as_strings(df[cols[canon]]).str.strip()
        suspect = ((values.str.len() > MAX_ID_CHARS)
                   | values.str.contains(_ID_FORBIDDEN, regex=True)).to_numpy()
        for i in np.flatnonzero(suspect):
            problem = id_problem(values.iloc[i], canon)
            if problem is not None:
                problems.append(Problem(label, problem, row=int(rows[i]), column=cols[canon]))
    return problems


def _group_problems(cids: pd.Series, cands: pd.Series, ctx: pd.Series | None, rows: np.ndarray,
                    valid: np.ndarray, cols: dict[str, str], label: str) -> list[Problem]:
    """Duplicate candidates, contexts whose text disagrees, contexts with fewer than 2 candidates."""
    problems: list[Problem] = []
    # Ids from a column chosen in the mapping (e.g. the system column) that repeat within a
    # context are the mapping's fault: another column, or generated ids, would do.
    id_cause = "file" if column_key(cols["candidate_id"]) == "candidate_id" else "mapping"
    sub = pd.DataFrame({"cid": cids[valid].to_numpy(), "cand": cands[valid].to_numpy(),
                        "row": rows[valid]})
    if ctx is not None:
        sub["ctx"] = ctx[valid].str.strip().to_numpy()
    if sub.empty:
        return problems
    first_row = sub.groupby(["cid", "cand"], sort=False)["row"].transform("first").to_numpy()
    repeated = sub.duplicated(["cid", "cand"], keep="first").to_numpy()
    with_repeats = set(sub.loc[repeated, "cid"])
    for i in np.flatnonzero(repeated):
        problems.append(Problem(
            label, f"duplicate candidate: candidate_id '{sub['cand'].iat[i]}' in context "
            f"'{sub['cid'].iat[i]}' is already on row {first_row[i]}", row=int(sub["row"].iat[i]),
            column=cols["candidate_id"], cause=id_cause))
    if ctx is not None:
        first_ctx = sub.groupby("cid", sort=False)["ctx"].transform("first")
        differs = (sub["ctx"] != first_ctx).to_numpy()
        for cid in pd.unique(sub.loc[differs, "cid"]):
            in_ctx = (sub["cid"] == cid).to_numpy()
            same = sub["row"].to_numpy()[in_ctx & ~differs]
            other = sub["row"].to_numpy()[in_ctx & differs]
            problems.append(Problem(
                label, f"context '{cid}' has different context text on different rows: rows "
                f"{_rows_text(same)} agree with each other, rows {_rows_text(other)} differ; a "
                "context_id must always carry the same context", row=int(other[0]),
                column=cols["context"]))
    counts = sub.groupby("cid", sort=False).agg(n=("cand", "nunique"), row=("row", "first"))
    for cid, n, row in zip(counts.index, counts["n"], counts["row"]):
        if n < 2:
            problems.append(Problem(
                label, f"context '{cid}' has only {n} candidate; comparative assessment needs "
                "at least 2 candidates per context", row=int(row), column=cols["context_id"],
                cause=id_cause if cid in with_repeats else "file"))
    return problems


def content_hash(contexts: Sequence[Context]) -> str:
    """sha256 of a dataset's content (ids, texts, systems, scores), independent of file layout.

    Column order, file format and score-column order do not change it; row order does.
    """
    payload = [[c.context_id, c.text,
                [[k.candidate_id, k.system, k.text, sorted(k.scores.items())]
                 for k in c.candidates]] for c in contexts]
    blob = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _build(df: pd.DataFrame, cols: dict[str, str], score_cols: list[str],
           scores: dict[str, np.ndarray], rows: np.ndarray, name: str, label: str) -> Dataset:
    cids = _as_strings(df[cols["context_id"]]).str.strip().to_numpy()
    cands = _as_strings(df[cols["candidate_id"]]).str.strip().to_numpy()
    texts = _as_strings(df[cols["text"]]).to_numpy()
    ctx_texts = _as_strings(df[cols["context"]]).to_numpy()
    systems = (_as_strings(df[cols["system"]]).str.strip().to_numpy() if "system" in cols
               else np.full(len(df), "", dtype=object))
    contexts: list[Context] = []
    groups = pd.Series(cids).groupby(cids, sort=False).indices
    for cid in pd.unique(cids):
        idx = groups[cid]
        cand_objs = tuple(
            Candidate(candidate_id=str(cands[i]), text=str(texts[i]),
                      system=str(systems[i]) or None,
                      scores={c: float(scores[c][i]) for c in score_cols}, row=int(rows[i]))
            for i in idx)
        contexts.append(Context(str(cid), str(ctx_texts[idx[0]]), cand_objs))
    return Dataset(name=name, contexts=tuple(contexts), score_columns=tuple(score_cols),
                   source=label, content_hash=content_hash(contexts),
                   text_columns=(str(cols["context"]), str(cols["text"])))


def _with_generated_ids(df: pd.DataFrame, cols: dict[str, str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """``df`` with a candidate-id column ``c1, c2, ...`` numbering each context's rows in file
    order (no context column mapped: every row is its own ``c1``, and the group checks report it)."""
    out = df.copy()
    if "context_id" in cols:
        ordinal = out.groupby(_as_strings(out[cols["context_id"]]).str.strip(), sort=False).cumcount() + 1
    else:
        ordinal = pd.Series(1, index=out.index)
    out[_GENERATED_COLUMN] = "c" + ordinal.astype(str)
    return out, {**cols, "candidate_id": _GENERATED_COLUMN}


def validate_frame(df: pd.DataFrame, *, file_label: str,
                   column_map: Mapping[str, str] | None = None,
                   score_columns: Sequence[str] | None = None,
                   name: str | None = None) -> tuple[Dataset | None, list[Problem]]:
    """Validate a table of candidates and build the dataset when it has no problem.

    Checks (each failure is one :class:`Problem` with row and column): required columns present;
    no empty/whitespace-only id, context or text; ids (context, candidate, system) at most
    ``limits.MAX_ID_CHARS`` characters without control characters (``limits.id_problem``); no
    duplicate (context_id, candidate_id); one context text per context_id; at least 2 candidates
    per context; reference scores numeric and finite.

    Score columns are ``score_columns`` when given; otherwise every column that is not canonical,
    not mapped, not id-like (``*_id``, ``id``, unnamed) and numeric-looking: at least half of its
    non-empty cells are numbers, or one is and its name says score (an aspect preset such as
    ``coherence``, ``*_score``, ``rating``). A word in a score column is a problem; columns that
    are mostly text (e.g. ``fact``) are metadata and ignored (:func:`ignored_columns` lists them).

    Parameters
    ----------
    df
        All-string table, ideally from :func:`read_table` (its ``row`` index gives row numbers;
        other frames are numbered as a CSV: first row = 2).
    file_label
        File name used in problems and stored as ``Dataset.source``.
    column_map
        Canonical name -> column of ``df``; ``None`` for ``system`` means no system column even
        if one is named so; ``candidate_id`` may be :data:`GENERATE_IDS`, and may share its column
        with ``system``.
    score_columns
        Explicit score columns (``[]`` for none); ``None`` to detect them.
    name
        Dataset name; defaults to the stem of ``file_label``.

    Returns
    -------
    tuple[Dataset | None, list[Problem]]
        The dataset (``None`` whenever there is a problem) and every problem, file-level first.
    """
    rows = source_rows(df)
    columns = [str(c) for c in df.columns]
    cols, problems = _resolve_columns(columns, column_map, file_label)
    if len(df) == 0:
        problems.append(Problem(file_label, "the file has a header but no data rows"))
        return None, sorted_problems(problems)
    if cols.get("candidate_id") == GENERATE_IDS:
        df, cols = _with_generated_ids(df, cols)

    valid = np.ones(len(df), dtype=bool)
    for canon in CANONICAL:
        if canon not in cols:
            valid[:] = False
            continue
        values = _as_strings(df[cols[canon]])
        empty = (values.str.strip() == "").to_numpy()
        what = "id" if canon in _ID_COLUMNS else "text"
        for i in np.flatnonzero(empty):
            problems.append(Problem(file_label, f"empty {canon} (a {what} is required on every "
                                    "row)", row=int(rows[i]), column=cols[canon]))
        if canon in _ID_COLUMNS or canon == "context":
            valid &= ~empty

    problems += _id_problems(df, cols, rows, file_label)

    if "context_id" in cols and "candidate_id" in cols:
        problems += _group_problems(
            _as_strings(df[cols["context_id"]]).str.strip(),
            _as_strings(df[cols["candidate_id"]]).str.strip(),
            _as_strings(df[cols["context"]]) if "context" in cols else None,
            rows, valid, cols, file_label)

    mapped = set(cols.values())
    if score_columns is None:
        score_cols = _detect_score_columns(df, mapped)
    else:
        score_cols = []
        have = ", ".join(f"'{c}'" for c in columns)
        for col in score_columns:
            if col not in columns:
                problems.append(Problem(file_label, f"score column '{col}' is not in the file; it "
                                        f"has: {have}", column=col))
            elif col in mapped:
                problems.append(Problem(file_label, f"column '{col}' is a canonical column and "
                                        "cannot also be a score column", column=col))
            else:
                score_cols.append(col)
    scores: dict[str, np.ndarray] = {}
    for col in score_cols:
        problem = id_problem(col, f"the name of score column '{col[:40]}'")
        if problem is not None:
            problems.append(Problem(file_label, problem, column=col[:MAX_ID_CHARS]))
        scores[col], more = _score_problems(df, col, rows, file_label)
        problems += more

    if problems:
        return None, sorted_problems(problems)
    dataset_name = name or Path(file_label).stem or "dataset"
    return _build(df, cols, score_cols, scores, rows, dataset_name, file_label), []


def load_candidates(source: Source, *, name: str | None = None,
                    column_map: Mapping[str, str] | None = None, file_label: str | None = None,
                    score_columns: Sequence[str] | None = None,
                    max_bytes: int = MAX_FILE_BYTES) -> Dataset:
    """Load and validate a candidate file (CSV, TSV, JSON Lines or a JSON array of objects).

    Parameters
    ----------
    source
        A path, the file's bytes, a binary file object (e.g. an upload), or a pandas DataFrame
        (its cells are read as the CSV it would be written to: missing values are empty).
    name
        Dataset name; defaults to the file stem (``DataFrame`` for a DataFrame).
    column_map
        Canonical name -> column in the file (see :func:`suggest_column_map`).
    file_label
        Name used in problems and stored as ``Dataset.source``; defaults to the file name. Its
        extension picks the format; without one the content is sniffed.
    score_columns
        Reference-score columns; ``None`` detects them (see :func:`validate_frame`).
    max_bytes
        Larger files are refused from their size alone, before reading.

    Returns
    -------
    Dataset
        Contexts in first-appearance order, candidates in file order, ``Candidate.row`` the
        source row, ``content_hash`` independent of column order and file format.

    Raises
    ------
    ValidationError
        With every problem found (reading and validation together).
    """
    return load_table(source, lambda frame, label: validate_frame(
        frame, file_label=label, column_map=column_map, score_columns=score_columns, name=name),
        file_label=file_label, max_bytes=max_bytes)
