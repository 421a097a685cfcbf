"""Import human pairwise labels (CSV or JSON Lines) and validate them against a candidate dataset.

A label file has columns ``context_id``, ``candidate_a``, ``candidate_b``, ``winner`` and optionally
``annotator``; ``winner`` is one of the two candidate ids or ``tie`` (any case). A file with other
column names is read through a column map (canonical name -> the file's column); a column not
mapped and not named canonically is found by its common other names (:func:`suggest_label_map`:
MT-Bench's and Chatbot Arena's ``question_id, model_a, model_b, winner, judge``), so such a file
imports as it is. Every problem is reported with file, row and
column in one :class:`~compassess_core.errors.ValidationError`.

Which text won, read from ``winner`` in this order: one of the row's two candidate ids (an id
always wins over a word); ``tie`` or ``both_bad`` (any case), and Chatbot Arena's ``tie
(bothbad)`` as ``both_bad``; else a word naming a side: the name of the file column that holds
that side's candidate (``model_a`` when ``model_a`` is mapped to ``candidate_a``) or the
canonical name itself (``candidate_a``/``candidate_b``), compared as column names are (case,
spaces and hyphens folded). Anything else is a problem of its row.

This module must never return labels from a file that has any problem, never write anything
(storing labels is ``db``'s job), and never import ``streamlit`` or ``db``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .candidates import column_key, source_rows
from .tables import MAX_FILE_BYTES, Source, load_table, sorted_problems
from ..errors import Problem
from ..limits import MAX_ID_CHARS, name_problem
from ..types import Dataset, Outcome

TIE = "tie"
#: Neither text is acceptable (``Outcome.BOTH_BAD``): no preference, counted as a tie.
BOTH_BAD = Outcome.BOTH_BAD.value
LABEL_COLUMNS: tuple[str, ...] = ("context_id", "candidate_a", "candidate_b", "winner")
OPTIONAL_LABEL_COLUMNS: tuple[str, ...] = ("annotator",)
DEFAULT_ANNOTATOR = "imported"
#: Other names of the label columns, in priority order (folded by ``data.column_key``): MT-Bench
#: human judgements and Chatbot Arena name them ``question_id, model_a, model_b, winner, judge``.
LABEL_SYNONYMS: dict[str, tuple[str, ...]] = {
    "context_id": ("question_id", "prompt_id", "doc_id", "document_id", "article_id",
                   "dialogue_id", "conversation_id", "example_id", "item_id", "triple_id",
                   "task_id", "sample_id", "instance_id", "id"),
    "candidate_a": ("model_a", "system_a", "candidate_1", "cand_a", "response_a_id", "output_a",
                    "left", "candidate_left", "system_left", "model_left"),
    "candidate_b": ("model_b", "system_b", "candidate_2", "cand_b", "response_b_id", "output_b",
                    "right", "candidate_right", "system_right", "model_right"),
    "winner": ("preference", "preferred", "choice", "label", "better", "verdict"),
    "annotator": ("judge", "rater", "annotator_id", "worker_id", "user", "labeler"),
}
#: Winner words that mean "neither": Chatbot Arena's "tie (bothbad)" is both_bad.
_BOTH_BAD_WORDS = frozenset({BOTH_BAD, "tie_(bothbad)", "tie(bothbad)", "bothbad"})


@dataclass(frozen=True)
class HumanLabel:
    """One human verdict on an unordered pair: ``winner`` is ``candidate_a``, ``candidate_b``,
    ``"tie"`` or ``"both_bad"``.

    ``row`` is the source row (spreadsheet row for CSV, line for JSONL).
    """

    context_id: str
    candidate_a: str
    candidate_b: str
    winner: str
    annotator: str = DEFAULT_ANNOTATOR
    row: int | None = None

    @property
    def outcome(self) -> Outcome:
        """The verdict seen from ``candidate_a`` shown first."""
        if self.winner == TIE:
            return Outcome.TIE
        if self.winner == BOTH_BAD:
            return Outcome.BOTH_BAD
        return Outcome.A if self.winner == self.candidate_a else Outcome.B


def suggest_label_map(columns: Sequence[str]) -> dict[str, str]:
    """Propose which file column holds each label column: its own name first (case and spaces
    folded), then :data:`LABEL_SYNONYMS` in order; a file column is proposed once. Only the
    canonical names a column was found for are in the answer."""
    by_norm: dict[str, str] = {}
    for col in columns:
        by_norm.setdefault(column_key(col), col)
    found: dict[str, str] = {}
    for canon in LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS:
        if canon in by_norm:
            found[canon] = by_norm[canon]
    taken = set(found.values())
    for canon in LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS:
        if canon in found:
            continue
        col = next((by_norm[s] for s in LABEL_SYNONYMS[canon]
                    if s in by_norm and by_norm[s] not in taken), None)
        if col is not None:
            found[canon] = col
            taken.add(col)
    return found


def _resolve(columns: list[str], file_label: str, column_map: Mapping[str, str | None] | None
             ) -> tuple[dict[str, str], list[Problem]]:
    """Canonical name -> file column: ``column_map`` where it names one (None: an optional column
    left out), else the file's own canonical names (case and spaces folded), else a common other
    name (:func:`suggest_label_map`). Problems a different map fixes have ``cause="mapping"``."""
    by_norm: dict[str, str] = {}
    for col in columns:
        by_norm.setdefault(column_key(col), col)
    have = ", ".join(f"'{c}'" for c in columns) or "(none)"
    column_map = dict(column_map or {})
    resolved: dict[str, str] = {}
    problems: list[Problem] = []
    for key in column_map:
        if key not in LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS:
            problems.append(Problem(
                file_label, f"column map key '{key}' is not a label column; use one of "
                f"{', '.join(LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS)}", column=key,
                cause="mapping"))
    suggested = suggest_label_map(columns)
    for canon in LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS:
        if canon in column_map:
            col = column_map[canon]
            if col is None:
                if canon in LABEL_COLUMNS:
                    problems.append(Problem(
                        file_label, f"no column is chosen for the required '{canon}'; map one "
                        f"of: {have}", column=canon, cause="mapping"))
            elif col in columns:
                resolved[canon] = col
            else:
                problems.append(Problem(
                    file_label, f"the column map maps '{canon}' to '{col}', but the file has no "
                    f"column '{col}'; it has: {have}", column=canon, cause="mapping"))
        elif canon in by_norm:
            resolved[canon] = by_norm[canon]
        elif canon in suggested and suggested[canon] not in column_map.values():
            resolved[canon] = suggested[canon]   # a common other name (model_a, question_id)
        elif canon in LABEL_COLUMNS:
            problems.append(Problem(
                file_label, f"missing required column '{canon}'; the file has: {have}. A label "
                f"file needs columns {', '.join(LABEL_COLUMNS)} (and optionally annotator), or "
                "a column map naming the file's column for each", column=canon,
                cause="mapping"))
    used: dict[str, str] = {}
    for canon, col in resolved.items():
        if col in used:
            problems.append(Problem(
                file_label, f"column '{col}' is mapped to both '{used[col]}' and '{canon}'; each "
                "label column needs its own file column", column=col, cause="mapping"))
        used.setdefault(col, canon)
    return resolved, problems


def winner_of(value: str, candidate_a: str, candidate_b: str, column_a: str = "candidate_a",
              column_b: str = "candidate_b") -> str | None:
    """What ``winner`` says (see the module's rules): ``candidate_a``'s or ``candidate_b``'s id,
    ``tie`` or ``both_bad``; None when it names neither candidate nor a side. ``column_a`` and
    ``column_b``: the file columns holding the two candidates (their names are side words)."""
    if value in (candidate_a, candidate_b):
        return value
    key = column_key(value)
    if key == TIE:
        return TIE
    if key in _BOTH_BAD_WORDS:
        return BOTH_BAD
    if key in {column_key(column_a), "candidate_a"}:
        return candidate_a
    if key in {column_key(column_b), "candidate_b"}:
        return candidate_b
    return None


def validate_labels_frame(df: pd.DataFrame, dataset: Dataset, *, file_label: str,
                          default_annotator: str = DEFAULT_ANNOTATOR,
                          column_map: Mapping[str, str | None] | None = None
                          ) -> tuple[list[HumanLabel] | None, list[Problem]]:
    """Check a table of human labels against ``dataset``; build the labels only if all is well.

    Problems (each with row and column): missing columns (or a column map naming columns the
    file lacks); empty values; unknown context; a candidate not in that context;
    ``candidate_a == candidate_b``; a winner that is neither candidate, a side nor a tie
    (:func:`winner_of`); the same annotator labelling the same unordered pair twice.

    Parameters
    ----------
    df
        All-string table from :func:`compassess_core.data.candidates.parse_table` (its ``row`` index gives
        row numbers).
    dataset
        The candidates the labels refer to.
    file_label
        File name used in problems.
    default_annotator
        Annotator for rows without one (or files without the column).
    column_map
        Label column -> the file's column (:func:`suggest_label_map` proposes one); None for an
        optional column maps it to nothing.

    Returns
    -------
    tuple[list[HumanLabel] | None, list[Problem]]
        The labels in file order (``None`` whenever there is a problem) and every problem.
    """
    rows = source_rows(df)
    cols, problems = _resolve([str(c) for c in df.columns], file_label, column_map)
    if problems:
        return None, problems
    if len(df) == 0:
        return None, [Problem(file_label, "the file has a header but no labels")]

    def column(name: str) -> np.ndarray:
        return df[cols[name]].fillna("").astype(str).str.strip().to_numpy()

    cid, a, b, win = (column(c) for c in LABEL_COLUMNS)
    ann = column("annotator") if "annotator" in cols else np.full(len(df), "", dtype=object)
    known = {c.context_id: set(c.candidate_ids) for c in dataset.contexts}
    first_seen: dict[tuple[str, str, frozenset[str]], int] = {}
    labels: list[HumanLabel] = []
    for i in range(len(df)):
        row, before = int(rows[i]), len(problems)
        for canon, values in zip(LABEL_COLUMNS, (cid, a, b, win)):
            if not values[i]:
                problems.append(Problem(file_label, f"empty {canon}", row=row, column=cols[canon]))
        if len(problems) > before:
            continue
        if cid[i] not in known:
            problems.append(Problem(file_label, f"unknown context '{cid[i]}': not in dataset "
                                    f"'{dataset.name}'", row=row, column=cols["context_id"]))
            continue
        for canon, cand in (("candidate_a", a[i]), ("candidate_b", b[i])):
            if cand not in known[cid[i]]:
                problems.append(Problem(
                    file_label, f"unknown candidate '{cand}' in context '{cid[i]}' (it has: "
                    f"{', '.join(sorted(known[cid[i]]))})", row=row, column=cols[canon]))
        if a[i] == b[i]:
            problems.append(Problem(file_label, f"candidate_a and candidate_b are both '{a[i]}'; "
                                    "a label compares two different candidates", row=row,
                                    column=cols["candidate_b"]))
        winner = winner_of(win[i], a[i], b[i], cols["candidate_a"], cols["candidate_b"])
        if winner is None:
            sides = " or ".join(dict.fromkeys(f"'{c}'" for c in (cols["candidate_a"],
                                                                  cols["candidate_b"])))
            problems.append(Problem(
                file_label, f"winner '{win[i]}' is neither candidate_a ('{a[i]}'), candidate_b "
                f"('{b[i]}'), a side ({sides}), 'tie' nor 'both_bad'", row=row,
                column=cols["winner"]))
        annotator = ann[i] or default_annotator
        bad_name = name_problem(annotator, "annotator", MAX_ID_CHARS, dash_first=True)
        if bad_name is not None:
            problems.append(Problem(file_label, bad_name, row=row,
                                    column=cols.get("annotator", "annotator")))
        key = (annotator, cid[i], frozenset((a[i], b[i])))
        if key in first_seen:
            problems.append(Problem(
                file_label, f"annotator '{annotator}' labelled the pair '{a[i]}' / '{b[i]}' of "
                f"context '{cid[i]}' twice: rows {first_seen[key]} and {row}", row=row,
                column=cols.get("annotator", cols["candidate_a"])))
        else:
            first_seen[key] = row
        if len(problems) == before:
            labels.append(HumanLabel(cid[i], a[i], b[i], winner, annotator, row))
    if problems:
        return None, sorted_problems(problems)
    return labels, []


def load_human_labels(source: Source, dataset: Dataset, *, file_label: str | None = None,
                      default_annotator: str = DEFAULT_ANNOTATOR,
                      max_bytes: int = MAX_FILE_BYTES,
                      column_map: Mapping[str, str | None] | None = None) -> list[HumanLabel]:
    """Read and validate a human pairwise-label file against ``dataset``.

    Parameters
    ----------
    source
        A path, the file's bytes, a binary file object, or a pandas DataFrame with the file's
        columns.
    dataset
        The candidate dataset the labels refer to.
    file_label
        Name used in problems; defaults to the file name (its extension picks CSV or JSONL).
    default_annotator
        Annotator of rows that name none.
    max_bytes
        Larger files are refused from their size alone.
    column_map
        Label column -> the file's column (see :func:`validate_labels_frame`).

    Returns
    -------
    list[HumanLabel]
        Labels in file order.

    Raises
    ------
    ValidationError
        With every problem found in the file.
    """
    return load_table(source, lambda frame, label: validate_labels_frame(
        frame, dataset, file_label=label, default_annotator=default_annotator,
        column_map=column_map),
        file_label=file_label, max_bytes=max_bytes)


def labels_frame(labels: list[HumanLabel]) -> pd.DataFrame:
    """Labels as a table with the import columns (for export and display)."""
    return pd.DataFrame(
        [(x.context_id, x.candidate_a, x.candidate_b, x.winner, x.annotator) for x in labels],
        columns=list(LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS))




#: What a file's annotator name that is also a person here is filed as (:func:`attribute`).
KEPT_APART = "{name} (from the file)"


def attribute(labels: list[HumanLabel], to: str | None = None,
              mapping: Mapping[str, str] | None = None,
              people: Sequence[str] = ()) -> list[HumanLabel]:
    """The labels with their annotators as an import files them: a file's annotator named in
    ``mapping`` becomes ``mapping[name]``; everyone else becomes ``to`` when given (one person
    credited with the whole file), else keeps the file's own name (a label without one is
    :data:`DEFAULT_ANNOTATOR`'s, ``imported``).

    A file never speaks for a person without the importer's explicit choice: a file name that
    is one of ``people`` (the identities of this store's people, the importer's included) is
    filed as :data:`KEPT_APART` (``bob (from the file)``) unless ``mapping`` credits it.
    """
    mapping = dict(mapping or {})
    reserved = set(people)

    def who(name: str) -> str:
        if name in mapping:
            return mapping[name]
        if to is not None:
            return to
        return KEPT_APART.format(name=name) if name in reserved else name

    return [replace(lb, annotator=who(lb.annotator)) for lb in labels]


def annotator_counts(labels: list[HumanLabel]) -> dict[str, int]:
    """Labels per annotator, most first (what an import reports it attributed)."""
    return dict(Counter(lb.annotator for lb in labels).most_common())


def store_rows(labels: list[HumanLabel], *, aspect: str) -> list[dict]:
    """Rows for ``Store.add_human_judgements``: an imported label has no screen order, so
    ``shown_order`` stays None and ``source`` is ``"import"`` (left out of human positional bias)."""
    return [dict(context_id=lb.context_id, candidate_left=lb.candidate_a,
                 candidate_right=lb.candidate_b, winner=lb.outcome.value, annotator=lb.annotator,
                 aspect=aspect, source="import") for lb in labels]
