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

import hashlib
import json
import re
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import Problem
# The one table reader (bytes, files, DataFrames; CSV, TSV, JSONL, JSON) lives in tables; its
# names stay importable from here.
from .tables import (MAX_FILE_BYTES, Source, load_table, parse_table, read_table,  # noqa: F401
                     sorted_problems, source_bytes, source_label)
from ..limits import MAX_ID_CHARS, id_problem
from ..types import ASPECT_ADJECTIVES, Candidate, Context, Dataset

CANONICAL: tuple[str, ...] = ("context_id", "context", "candidate_id", "text")
OPTIONAL: tuple[str, ...] = ("system",)
#: A column map value for ``candidate_id``: no column holds the ids, generate ``c1, c2, ...`` per
#: context in file order. (A NUL character: no file column can be named so.)
GENERATE_IDS = "\x00generate candidate ids"
#: Canonical names one file column may serve together: a column of system names is also a fine
#: candidate id when every context has one candidate per system.
SHARED_COLUMNS = frozenset({"candidate_id", "system"})
_GENERATED_COLUMN = "candidate_id (generated)"

_ID_COLUMNS = ("context_id", "candidate_id")
_ROW_INDEX_NAME = "row"
_MAX_ROWS_NAMED = 10

# Synonyms in priority order; the canonical name itself always matches first.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "context_id": ("id", "doc_id", "document_id", "article_id", "source_id", "passage_id",
                   "dialogue_id", "conversation_id", "question_id", "prompt_id", "example_id",
                   "item_id", "triple_id", "task_id", "sample_id", "instance_id", "topic_id"),
    "context": ("source", "document", "doc", "article", "passage", "dialogue", "dialog",
                "conversation", "question", "prompt", "input", "instruction", "triples",
                "source_text", "input_text", "history", "dialogue_history", "dialog_history",
                "conversation_history", "chat_history"),
    "candidate_id": ("cand_id", "summary_id", "response_id", "output_id", "answer_id",
                     "hypothesis_id", "story_id", "generation_id"),
    "text": ("summary", "response", "output", "candidate", "answer", "hypothesis", "generation",
             "completion", "story", "essay", "continuation", "reply", "model_output",
             "generated_text"),
    "system": ("model", "system_id", "model_id", "system_name", "model_name", "team",
               "assistant", "participant", "submission"),
}

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
    column whose values repeat (one passage, several candidates); id-like columns (``*_id``) and
    columns of short labels are never proposed as text; a label column that names one passage
    each is proposed as ``context_id``, one that recurs across contexts once in each as
    ``system`` (``_suggest_from_content``). Without a ``candidate_id`` column, a system column
    that names each context's candidates uniquely serves as the id, else :data:`GENERATE_IDS`
    is proposed.

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
        _recheck_context(table, found, taken)
        found.update(_suggest_from_content(table, found, taken))
    return found


_PAIR_ENDS = (("_1", "_2"), ("_a", "_b"), ("1", "2"), ("_left", "_right"), ("_x", "_y"))


def side_by_side(columns: Sequence[str]) -> tuple[str, str] | None:
    """Two columns that hold a pair's two candidates side by side (``output_1``/``output_2``,
    ``response_a``/``response_b``: a pairwise preference file such as MT-Bench's or LLMBar's),
    or None: what a file of one row per candidate is not."""
    keys = {column_key(c): c for c in columns}
    for key, col in keys.items():
        for first, second in _PAIR_ENDS:
            if key.endswith(first) and len(key) > len(first):
                other = keys.get(key[: -len(first)] + second)
                if other is not None and not _looks_like_id(col):
                    return col, other
    return None


def _fits_context(table: pd.DataFrame, col: str, context_id: str | None) -> bool:
    """Whether ``col`` reads as the passage the candidates answer: free text (not an id or a
    short label), filled, and the same on every row of one ``context_id`` (with none, repeated:
    one passage, several candidates)."""
    values = _as_strings(table[col])
    if _looks_like_id(col) or not _is_prose(values) or (values.str.strip() == "").any():
        return False
    if context_id is not None and context_id in table.columns:
        return bool((values.groupby(_as_strings(table[context_id]), sort=False).nunique()
                     <= 1).all())
    return values.nunique() <= 0.5 * len(values)


def _context_candidates(table: pd.DataFrame, found: Mapping[str, str]) -> list[str]:
    """The file's columns that could be the context (:func:`_fits_context`) and are not mapped
    to another canonical name; named ones (a context synonym) first, then the longest."""
    used = {c for k, c in found.items() if k != "context"}
    ctx_id = found.get("context_id")
    named = set(_SYNONYMS["context"]) | {"context"}
    fits = [str(c) for c in table.columns
            if str(c) not in used and _fits_context(table, str(c), ctx_id)]
    return sorted(fits, key=lambda c: (column_key(c) not in named,
                                       -float(_as_strings(table[c]).str.len().mean())))


def _recheck_context(table: pd.DataFrame, found: dict[str, str], taken: set[str]) -> None:
    """A context column proposed by its name (``dialog``) that does not read as one passage per
    context (it differs between the rows of one context_id, or holds ids) gives way to the
    column that does (``history``), when there is one; the name-matched column is then free. A
    column named ``context`` itself is never second-guessed."""
    col = found.get("context")
    if (col is None or column_key(col) == "context"   # named so: the file says it is
            or _fits_context(table, col, found.get("context_id"))):
        return
    better = _context_candidates(table, found)
    if better:
        taken.discard(col)
        found["context"] = better[0]
        taken.add(better[0])


def context_reason(table: pd.DataFrame | None, mapping: Mapping[str, str | None]) -> str | None:
    """One line on why the mapped context column is the context, when another text column's
    name says context too (``dialog`` beside ``history``); None when no other column does."""
    col = mapping.get("context")
    if table is None or not col or col not in table.columns:
        return None
    ctx_id = mapping.get("context_id")
    ctx_id = ctx_id if ctx_id in table.columns else None
    if not _fits_context(table, col, ctx_id):
        return None   # not one passage per context: the validation report says what is wrong
    used = {c for k, c in mapping.items() if c and k != "context"}
    others = [str(c) for c in table.columns
              if str(c) not in used and str(c) != col
              and column_key(str(c)) in (*_SYNONYMS["context"], "context")]
    if not others:
        return None
    where = f"every row of one {ctx_id}" if ctx_id else "the rows of one context"
    short = [c for c in others if _looks_like_id(c) or not _is_prose(_as_strings(table[c]))]
    same = [c for c in others if c not in short and _fits_context(table, c, ctx_id)]
    differ = [c for c in others if c not in short and c not in same]
    told = [f"{col} is the context: the same passage on {where}"]
    if short:
        told.append(f"{', '.join(short)} {'holds' if len(short) == 1 else 'hold'} ids or short "
                    "labels, not a passage")
    if differ:
        told.append(f"{', '.join(differ)} {'differs' if len(differ) == 1 else 'differ'} "
                    f"between those rows, so {'it is' if len(differ) == 1 else 'they are'} not "
                    "one passage")
    if same:
        told.append(f"{', '.join(same)} also {'repeats' if len(same) == 1 else 'repeat'}: "
                    "choose it if the judge should read it instead")
    return "; ".join(told) + "."


def _is_prose(values: pd.Series) -> bool:
    """Whether a column's filled cells read as free text (most hold a space, or they are long),
    not as labels or ids (``ADAPT``, ``gpt-4``, ``T17``)."""
    filled = values[values.str.strip() != ""]
    if filled.empty:
        return False
    return bool(filled.str.contains(r"\s", regex=True).mean() >= 0.5
                or filled.str.len().mean() >= 40)


def _suggest_from_content(table: pd.DataFrame, found: dict[str, str], taken: set[str]
                          ) -> dict[str, str]:
    """``text``/``context``/``context_id``/``system``/``candidate_id`` proposals from what the
    columns hold, for what the names left open.

    * ``text``: the longest free-text column whose values are mostly distinct; ``context``: the
      longest free-text column whose values repeat. Free text reads as prose (:func:`_is_prose`);
      id-like columns (``*_id``) and columns of short labels are never proposed as either.
    * ``context_id``: a column of labels or ids that repeats and names one context text each
      (``triple_id``, ``task``), an id-like name first.
    * ``system``: a column of labels that recurs across contexts and names each context's
      candidates at most once (``team``, ``assistant``).
    * ``candidate_id``: the system column when it names each context's candidates uniquely,
      else generated ids.
    """
    more: dict[str, str] = {}
    free, labels = [], []
    for col in table.columns:
        if col in taken:
            continue
        values = _as_strings(table[col])
        numbers, missing, unparsed = _parse_scores(values)
        filled = int((~missing).sum())
        numeric = not filled or (filled - int(unparsed.sum())) / filled > 0.5
        if _looks_like_id(str(col)) or (not numeric and not _is_prose(values)):
            labels.append(col)     # an id or a short label: never a text
        elif not numeric:
            free.append((col, float(values.str.len().mean()), values.nunique() / len(values)))
        # otherwise empty or numeric: a reference score, not a text
    free.sort(key=lambda item: -item[1])
    if "text" not in found:
        distinct = [c for c, _, unique in free if unique > 0.5]
        if distinct:
            more["text"] = distinct[0]
    if "context" not in found:
        repeated = [c for c, _, unique in free if unique <= 0.5 and c != more.get("text")]
        if repeated:
            more["context"] = repeated[0]
    context = found.get("context") or more.get("context")
    filled = {c: _as_strings(table[c]).str.strip() for c in labels}
    if "context_id" not in found:
        fits = []
        for col in labels:
            v = filled[col]
            if (v == "").any() or v.nunique() >= len(v):
                continue   # an id of a context repeats, on every row
            if context is not None:
                ctx = _as_strings(table[context])
                if (ctx.groupby(v, sort=False).nunique() > 1).any():
                    continue   # one id with two passages: not a context's id
                gap = abs(v.nunique() - ctx.nunique())
            elif not _looks_like_id(str(col)):
                continue       # with no passage to check it against, only a name says so
            else:
                gap = 0
            fits.append((not _looks_like_id(str(col)), gap, col))
        if fits:
            more["context_id"] = min(fits)[2]
    ctx_col = found.get("context_id") or more.get("context_id")
    if "system" not in found and ctx_col is not None:
        fits = []
        for col in labels:
            if col == ctx_col or _looks_like_id(str(col)):
                continue
            v = filled[col]
            if ((v == "").any() or v.nunique() < 2 or v.nunique() >= len(v)
                    or table.assign(_s=v).duplicated([ctx_col, "_s"]).any()):
                continue   # a system recurs across contexts, once in each
            fits.append((v.nunique(), col))
        if fits:
            more["system"] = min(fits)[1]
    if "candidate_id" not in found:
        sys_col = found.get("system") or more.get("system")
        if ctx_col is not None and sys_col is not None and not table.duplicated([ctx_col, sys_col]).any():
            more["candidate_id"] = sys_col
        else:
            more["candidate_id"] = GENERATE_IDS
    return more


def column_choices(canon: str, table: pd.DataFrame, suggested: Mapping[str, str] | None = None
                   ) -> list[str]:
    """The file's columns in the order a mapping picker offers them for ``canon``: the suggested
    column first, then the likely ones (id-like columns for an id, free text for ``context`` and
    ``text``), then the rest in file order; nothing is left out."""
    columns = [str(c) for c in table.columns]
    wants_id = canon in _ID_COLUMNS or canon == "system"

    def likely(col: str) -> bool:
        if wants_id:
            return _looks_like_id(col) or column_key(col) in _SYNONYMS.get(canon, ())
        if _looks_like_id(col):
            return False
        _, missing, unparsed = _parse_scores(_as_strings(table[col]))
        return bool((unparsed & ~missing).any())   # some cell is text, not a number

    first = [(suggested or {}).get(canon)]
    ordered = [c for c in columns if c in first] + [c for c in columns if c not in first and likely(c)]
    return ordered + [c for c in columns if c not in ordered]


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
            # Plain words: the app's mapping, the CLI's --map and the API's column_map all say
            # "map a column to it"; a hint in one of their syntaxes would mislead the others.
            hint = (f" (the likeliest is '{suggestions[canon]}')" if canon in suggestions
                    else "")
            pair = side_by_side(columns)
            if pair is not None and canon == "context_id":
                hint += (f". This file holds two candidates side by side ('{pair[0]}' and "
                         f"'{pair[1]}'): a candidate file has one row per candidate (context_id, "
                         "context, candidate_id, text), so give each of the two a row of its "
                         "own; a column saying which one people preferred is a human label, "
                         "stored with import-labels")
            problems.append(Problem(
                file_label, f"missing required column '{canon}'; the file has: {have}. Rename a "
                f"column to '{canon}' or map one to it{hint}", column=canon,
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
# validation


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


#: Cells of a score column that mean "no score here" (any case, spaces around ignored): what
#: spreadsheets, R and pandas write for a missing value. They are read as missing (NaN), never as
#: a problem; every measure leaves a missing reference out (``metrics.correlation`` drops NaN
#: pairs), and the validation report counts them (:func:`missing_scores`).
MISSING_MARKERS = frozenset({"", "n/a", "na", "nan", "+nan", "-nan", "-", "--", "null", "none",
                             "?", "#n/a", "missing"})


def _parse_scores(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float values of a column (NaN where missing) and masks of its missing cells (empty or a
    :data:`MISSING_MARKERS` spelling) and of its cells that are no number (inf stays inf)."""
    stripped = values.str.strip()
    missing = stripped.str.lower().isin(MISSING_MARKERS).to_numpy()
    numbers = np.where(missing, np.nan, pd.to_numeric(stripped.where(~missing, ""),
                                                       errors="coerce").to_numpy(np.float64))
    unparsed = np.isnan(numbers) & ~missing
    return numbers, missing, unparsed


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
        numbers, missing, unparsed = _parse_scores(_as_strings(df[col]))
        filled = int((~missing).sum())
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
    numbers, missing, unparsed = _parse_scores(values)
    problems: list[Problem] = []
    for i in np.flatnonzero(unparsed | (~missing & ~np.isfinite(numbers))):
        if unparsed[i]:
            msg = (f"reference score {values.iloc[i]!r} is not a number (leave the cell empty, "
                   "or write n/a, where a candidate has no score)")
        else:
            msg = f"reference score {values.iloc[i]!r} is not a finite number"
        problems.append(Problem(label, msg, row=int(rows[i]), column=col))
    return numbers, problems


def missing_scores(dataset: Dataset) -> dict[str, int]:
    """How many candidates of ``dataset`` have no score in each reference column (a cell left
    empty or written as one of :data:`MISSING_MARKERS`); columns with none left out."""
    counts = {col: sum(1 for ctx in dataset.contexts for c in ctx.candidates
                       if not np.isfinite(c.scores.get(col, np.nan)))
              for col in dataset.score_columns}
    return {col: n for col, n in counts.items() if n}


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
                   # object dtype: Python's re. Arrow-backed strings use RE2 in some pandas
                   # versions, which rejects the \u escapes and surrogates of the pattern.
                   | values.astype(object).str.contains(_ID_FORBIDDEN, regex=True)).to_numpy()
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
    counts = sub.groupby("cid", sort=False).agg(n=("cand", "nunique"), rows=("row", "size"),
                                                row=("row", "first"))
    for cid, n, n_rows, row in zip(counts.index, counts["n"], counts["rows"], counts["row"]):
        if n < 2:
            # rows that repeat one id are one candidate: say so, or "only 1" reads as a miscount
            only = sub.loc[sub["cid"] == cid, "cand"].iat[0]
            held = f" (its {n_rows} rows all repeat candidate_id '{only}')" if n_rows > n else ""
            problems.append(Problem(
                label, f"context '{cid}' has only {n} distinct candidate{held}; comparative "
                "assessment needs at least 2 candidates per context", row=int(row),
                column=cols["context_id"], cause=id_cause if cid in with_repeats else "file"))
    return problems


def content_hash(contexts: Sequence[Context]) -> str:
    """sha256 of a dataset's content (ids, texts, systems, scores), independent of file layout.

    Column order, file format and score-column order do not change it; row order does.
    """
    # A missing score (NaN) is hashed as null: JSON has no NaN.
    payload = [[c.context_id, c.text,
                [[k.candidate_id, k.system, k.text,
                  sorted((n, None if v != v else v) for n, v in k.scores.items())]
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


def empty_text_rows(df: pd.DataFrame, text_column: str | None) -> list[int]:
    """The rows (numbered as :func:`source_rows` numbers them) whose ``text_column`` is empty or
    only whitespace: candidates with nothing to judge (a system that wrote nothing). Empty when
    the column is not in ``df``."""
    if text_column is None or text_column not in df.columns:
        return []
    empty = (_as_strings(df[text_column]).str.strip() == "").to_numpy()
    return [int(r) for r in source_rows(df)[empty]]


def empty_text_note(rows: Sequence[int]) -> str:
    """What a dataset's ``source`` says of the candidates left out for an empty text."""
    return (f"{len(rows):,} candidate(s) with an empty text left out: row(s) "
            f"{_rows_text(np.asarray(rows))}")


def validate_frame(df: pd.DataFrame, *, file_label: str,
                   column_map: Mapping[str, str] | None = None,
                   score_columns: Sequence[str] | None = None,
                   name: str | None = None,
                   drop_empty_text: bool = False) -> tuple[Dataset | None, list[Problem]]:
    """Validate a table of candidates and build the dataset when it has no problem.

    Checks (each failure is one :class:`Problem` with row and column): required columns present;
    no empty/whitespace-only id, context or text; ids (context, candidate, system) at most
    ``limits.MAX_ID_CHARS`` characters without control characters (``limits.id_problem``); no
    duplicate (context_id, candidate_id); one context text per context_id; at least 2 candidates
    per context; reference scores numeric and finite, or missing (an empty cell, or a marker of
    :data:`MISSING_MARKERS` such as ``n/a``, ``NA``, ``-``: read as NaN and counted by
    :func:`missing_scores`).

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
    drop_empty_text
        Leave out the rows whose text is empty (:func:`empty_text_rows`) instead of reporting
        each as a problem; the dataset's ``source`` names them (:func:`empty_text_note`). The
        other checks apply to the rows kept (a context left with one candidate is a problem).

    Returns
    -------
    tuple[Dataset | None, list[Problem]]
        The dataset (``None`` whenever there is a problem) and every problem, file-level first.
    """
    rows = source_rows(df)
    columns = [str(c) for c in df.columns]
    cols, problems = _resolve_columns(columns, column_map, file_label)
    dropped: list[int] = []
    if drop_empty_text and "text" in cols and len(df):
        dropped = empty_text_rows(df, cols["text"])
        keep = ~np.isin(rows, dropped)
        df, rows = df[keep], rows[keep]
        if len(df) == 0:
            problems.append(Problem(file_label, "every row's text is empty: nothing is left to "
                                    "compare", column=cols["text"]))
            return None, sorted_problems(problems)
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
    label = f"{file_label} ({empty_text_note(dropped)})" if dropped else file_label
    return _build(df, cols, score_cols, scores, rows, dataset_name, label), []


def load_candidates(source: Source, *, name: str | None = None,
                    column_map: Mapping[str, str] | None = None, file_label: str | None = None,
                    score_columns: Sequence[str] | None = None,
                    max_bytes: int = MAX_FILE_BYTES, drop_empty_text: bool = False) -> Dataset:
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
    drop_empty_text
        Leave out the candidates whose text is empty, named in the dataset's ``source``
        (default: each is a problem; :func:`validate_frame`).

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
        frame, file_label=label, column_map=column_map, score_columns=score_columns, name=name,
        drop_empty_text=drop_empty_text), file_label=file_label, max_bytes=max_bytes)
