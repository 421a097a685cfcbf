"""Checking a file before it is stored: a candidate upload (:meth:`Uploads.check_upload`, saved
with :meth:`Uploads.save_upload`) and a file of human labels (:meth:`Uploads.check_labels`,
stored with ``Store.import_labels``). Each check reads the file once and says everything the
Upload and Annotate pages show, and what a notebook or a script wants to know first: the rows,
the suggested column mapping, every problem with its file, row and column, and what would be
stored. Nothing is stored by a check.

Wiring: ``data`` reads and validates, ``markup`` finds and strips HTML, ``prompts`` names the
task, ``labels`` maps and validates label files; this module only puts their answers together.
:class:`Uploads` is a part of :class:`~compassess_core.api.Store`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..data.candidates import (Source, column_choices, context_reason, empty_text_rows,
                               ignored_columns, load_candidates, missing_scores, parse_table, source_bytes,
                               source_label, suggest_column_map)
from ..errors import InputError, Problem, ValidationError
from ..data.labels import (LABEL_COLUMNS, OPTIONAL_LABEL_COLUMNS, HumanLabel, annotator_counts,
                      attribute, load_human_labels, suggest_label_map)
from ..limits import MAX_NAME_CHARS, max_upload_bytes, name_problem
from ..data.markup import MarkupReport, find_markup, strip_dataset_markup
from ..runs.prompts import TASK_WORDING, task_from_columns
from ..types import Dataset


def _file(source: Source, file_label: str | None, max_bytes: int | None) -> tuple[bytes, str, int]:
    """The file's bytes (a DataFrame as the CSV it would be written to), its label in problems
    and the size limit applied (default: the app's upload limit, ``COMPASSESS_MAX_UPLOAD_MB``)."""
    label = file_label or source_label(source)
    limit = max_upload_bytes() if max_bytes is None else int(max_bytes)
    if isinstance(source, pd.DataFrame):
        source = source.to_csv(index=False).encode("utf-8")
    return source_bytes(source, label, max_bytes=limit), label, limit


def _file_key(raw: bytes) -> str:
    """A file's identity: the first 16 hex digits of the SHA-256 of its bytes (the same file
    uploaded again has the same key; any other file another)."""
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class FileCheck:
    """What every checked file shows beside its own findings: its ``file_label`` and
    ``file_key``, its ``table`` (None: unreadable), the column ``mapping`` checked and the one
    ``suggested``, and its ``problems``, each with the file, row and column."""

    file_label: str
    file_key: str
    table: pd.DataFrame | None = None
    suggested: Mapping[str, str] = field(default_factory=dict)
    mapping: Mapping[str, str | None] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    @property
    def columns(self) -> list[str]:
        """The file's columns, in file order."""
        return [] if self.table is None else [str(c) for c in self.table.columns]

    @property
    def mapping_at_fault(self) -> bool:
        """Some problem goes away with another column mapping (``cause == "mapping"``)."""
        return any(p.cause == "mapping" for p in self.problems)


@dataclass(frozen=True)
class UploadCheck(FileCheck):
    """What :meth:`Uploads.check_upload` found in a candidate file.

    ``file_key`` identifies the file's content (widgets that belong to one file are keyed by
    it); ``table`` holds its rows as read (all strings; None when it could not be read);
    ``suggested`` the column mapping proposed from its names and content (canonical name ->
    file column, or ``data.GENERATE_IDS``); ``mapping`` the mapping that was checked;
    ``problems`` every problem (each with file, row, column, and ``cause`` ``mapping`` when
    another mapping fixes it), empty when the file can be stored; ``dataset`` what would be
    stored (None with problems), with the markup stripped when asked (``stripped``);
    ``markup`` the HTML found before stripping; ``task`` the task its column names say (what
    the Run page's wording ``auto`` chooses) and ``reads`` how the judge then reads it;
    ``ignored`` the columns used neither as mapped nor as scores, each with why;
    ``name_problem`` what is wrong with the dataset's name; ``stored_as`` the ``(id, name)`` of
    a stored dataset with the same content (saving adds nothing then); ``missing_scores`` how
    many candidates have no score in each reference column (an empty cell, ``n/a``, ``NA``,
    ``-``, ...: ``data.MISSING_MARKERS``, read as missing). ``empty_texts``: the rows whose
    mapped text is empty (a system that wrote nothing), each a problem unless the check was
    asked to leave them out (``dropped_empty``: then the dataset does not hold them, and its
    source names them). ``context_why``: one line on why the mapped context column is the
    context when another column's name says context too (``dialog`` beside ``history``).
    """

    dataset: Dataset | None = None
    markup: MarkupReport | None = None
    stripped: bool = False
    task: str | None = None
    reads: str | None = None
    ignored: Mapping[str, str] = field(default_factory=dict)
    name_problem: str | None = None
    stored_as: tuple[int, str] | None = None
    missing_scores: Mapping[str, int] = field(default_factory=dict)
    empty_texts: tuple[int, ...] = ()
    dropped_empty: bool = False
    context_why: str | None = None

    @property
    def ok(self) -> bool:
        """The file can be stored: no problem, and a usable name."""
        return not self.problems and self.dataset is not None and self.name_problem is None

    def choices(self, canon: str) -> list[str]:
        """The file's columns as a picker for ``canon`` offers them: the suggested one first,
        then the likely ones (``data.column_choices``)."""
        return [] if self.table is None else column_choices(canon, self.table, self.suggested)



@dataclass(frozen=True)
class DatasetSaved:
    """What :meth:`Uploads.save_upload` stored: the dataset's ``id`` and ``name`` in the store;
    ``new`` False when the same content was stored already (under ``name``, which may differ
    from the name asked for)."""

    id: int
    name: str
    new: bool


@dataclass(frozen=True)
class LabelsCheck(FileCheck):
    """What :meth:`Uploads.check_labels` found in a file of human A/B labels for a dataset.

    ``suggested``: the file's columns proposed for ``context_id, candidate_a, candidate_b,
    winner, annotator`` (``labels.suggest_label_map``: ``question_id, model_a, model_b, winner,
    judge`` map at once); ``mapping`` the mapping checked; ``problems`` every problem with its
    row and column (empty when the labels can be stored); ``labels`` the labels read (empty with
    problems); ``annotators`` labels per annotator as the file names them. :meth:`attributed`
    says who the labels would be stored as.
    """

    dataset: str
    dataset_id: int
    aspect: str
    labels: tuple[HumanLabel, ...] = ()
    annotators: Mapping[str, int] = field(default_factory=dict)

    #: The label columns a mapping names, required first.
    COLUMNS = LABEL_COLUMNS + OPTIONAL_LABEL_COLUMNS

    @property
    def ok(self) -> bool:
        """The labels can be stored: the file has labels and no problem."""
        return not self.problems and bool(self.labels)


    def attributed(self, annotator: str | None = None,
                   annotators: Mapping[str, str] | None = None,
                   people: Sequence[str] = ()) -> dict[str, int]:
        """Labels per person as ``Store.import_labels`` with the same ``annotator``,
        ``annotators`` and ``people`` would store them (``labels.attribute``); with none of
        them, the file's own names."""
        if annotator is None and not annotators and not people:
            return dict(self.annotators)
        return annotator_counts(attribute(list(self.labels), annotator, annotators, people))


class Uploads:
    """Checking files before they are stored (a part of ``Store``, whose ``backend`` and
    ``_dataset_id`` it uses)."""

    def check_upload(self, source: Source, *, file_label: str | None = None,
                     mapping: Mapping[str, str | None] | None = None,
                     score_columns: Sequence[str] | None = None, strip_markup: bool = False,
                     name: str | None = None, max_bytes: int | None = None,
                     drop_empty_text: bool = False) -> UploadCheck:
        """Check a candidate file (a path, its bytes, a file object or a DataFrame) as the
        Upload page does, storing nothing: its rows, the suggested column mapping, every
        problem with ``mapping`` (default: the suggested one), and what would be stored.

        ``score_columns``: the reference-score columns (default: every numeric column left);
        ``strip_markup``: strip HTML tags and decode entities before storing (recorded in the
        dataset's source); ``name``: the dataset's name (default: the file's stem);
        ``max_bytes``: the largest file read (default: the app's upload limit);
        ``drop_empty_text``: leave out the candidates whose text is empty (``empty_texts``; by
        default each is a problem naming its row), the dataset's source naming them. Save a check
        with :meth:`save_upload`. Never raises for the file's problems: they are in
        ``problems``.
        """
        try:
            raw, label, limit = _file(source, file_label, max_bytes)
        except ValidationError as err:
            return UploadCheck(file_label=file_label or source_label(source), file_key="",
                               problems=tuple(err.problems))
        key = _file_key(raw)
        table, problems = parse_table(raw, label, max_bytes=limit)
        if problems or table is None:
            return UploadCheck(file_label=label, file_key=key, problems=tuple(problems))
        suggested = suggest_column_map(list(table.columns), table)
        used = dict(suggested if mapping is None else mapping)
        scores = list(score_columns) if score_columns else None
        name = (name or "").strip() or Path(label).stem[:MAX_NAME_CHARS]
        text_column = used.get("text")
        empty = tuple(empty_text_rows(table, text_column if text_column in table.columns
                                      else None))
        found = dict(file_label=label, file_key=key, table=table, suggested=suggested,
                     mapping=used, empty_texts=empty,
                     dropped_empty=bool(drop_empty_text and empty),
                     context_why=context_reason(table, used))
        try:
            dataset = load_candidates(raw, name=name, column_map=used, file_label=label,
                                      score_columns=scores, max_bytes=limit,
                                      drop_empty_text=drop_empty_text)
        except ValidationError as err:
            return UploadCheck(**found, problems=tuple(err.problems))
        markup = find_markup(dataset)
        stripped = bool(strip_markup and markup.found)
        if stripped:
            try:
                dataset = strip_dataset_markup(dataset)
            except ValidationError as err:   # a text that is nothing but markup
                return UploadCheck(**found, markup=markup, stripped=True,
                                   problems=tuple(err.problems))
        task = task_from_columns(dataset.text_columns)
        stored = next(((d.id, d.name) for d in self.backend.list_datasets()
                       if dataset.content_hash and d.content_hash == dataset.content_hash), None)
        return UploadCheck(**found, dataset=dataset, markup=markup, stripped=stripped, task=task,
                           reads=TASK_WORDING[task].reads() if task else None,
                           ignored=ignored_columns(table, used, scores),
                           name_problem=name_problem(dataset.name, "dataset name"),
                           stored_as=stored, missing_scores=missing_scores(dataset))

    def save_upload(self, check: UploadCheck) -> DatasetSaved:
        """Store the dataset a :meth:`check_upload` found fit (idempotent by content: the same
        content is stored once, under its first name).

        Raises
        ------
        InputError
            The check found problems (nothing is stored), or another dataset has the name.
        """
        if not check.ok:
            first = check.name_problem or (str(check.problems[0]) if check.problems
                                           else "nothing to store")
            raise InputError(f"{check.file_label} cannot be stored: {first}")
        known = {d.content_hash for d in self.backend.list_datasets()}
        dataset_id = self.backend.save_dataset(check.dataset)
        name = next(d.name for d in self.backend.list_datasets() if d.id == dataset_id)
        return DatasetSaved(id=dataset_id, name=name,
                            new=check.dataset.content_hash not in known)

    def check_labels(self, source: Source, *, dataset: str | int,
                     mapping: Mapping[str, str | None] | None = None, aspect: str = "overall",
                     file_label: str | None = None, max_bytes: int | None = None) -> LabelsCheck:
        """Check a file of human A/B labels (a path, its bytes, a file object or a DataFrame)
        against a stored dataset, storing nothing: its rows, the suggested column mapping onto
        ``context_id, candidate_a, candidate_b, winner[, annotator]``, every problem with
        ``mapping`` (default: the suggested one), the labels and who they name. Store them
        with ``Store.import_labels(..., mapping=...)``.

        A ``winner`` names one of the pair's candidate ids, ``tie`` or ``both_bad``, or a side
        by its column's name (``model_a`` when ``model_a`` holds ``candidate_a``):
        ``labels.winner_of``. Never raises for the file's problems: they are in ``problems``.

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        dataset_id, ds = self._stored_dataset(dataset)
        base = dict(dataset=ds.name, dataset_id=dataset_id, aspect=aspect)
        try:
            raw, label, limit = _file(source, file_label, max_bytes)
        except ValidationError as err:
            return LabelsCheck(file_label=file_label or source_label(source), file_key="",
                               problems=tuple(err.problems), **base)
        table, problems = parse_table(raw, label, max_bytes=limit)
        found = dict(base, file_label=label, file_key=_file_key(raw), table=table)
        if table is None:
            return LabelsCheck(**found, problems=tuple(problems))
        suggested = suggest_label_map(list(table.columns))
        used = dict(suggested if mapping is None else mapping)
        found.update(suggested=suggested, mapping=used)
        try:
            labels = load_human_labels(raw, ds, file_label=label, max_bytes=limit,
                                       column_map=used)
        except ValidationError as err:
            return LabelsCheck(**found, problems=tuple(err.problems))
        return LabelsCheck(**found, labels=tuple(labels), annotators=annotator_counts(labels))
