"""Tunings of the judge's instruction and named templates in the store.

``tunings``: a tuning's options and the wordings it tried (each judged by a run of its own, so
its scores are computed from those runs when read), with a status and heartbeat like a run's.
``templates``: named comparison templates that runs take by name (what a tuning picked, or a
template saved by hand). ``explanations``: what a judge wrote when asked for the reasons of a
stored verdict, keyed by the judge and the prompt like the comparison cache.

This module must never judge, score or pick anything, and never import a UI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import delete, select, update

from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.limits import check_name

from .connection import StoreBase, by_name_or_id, insert_ignore, py_float
from .runs import stored_message
from .schema import DatasetRow, ExplanationRow, TemplateRow, TuningRow, utcnow

#: States of a tuning (a run's, less ``pending`` once a worker picked it up).
TUNING_STATUSES = ("pending", "running", "completed", "cancelled", "failed")


@dataclass(frozen=True)
class TemplateInfo:
    """A named template as stored."""

    id: int
    name: str
    text: str
    noun: str
    tuning: str | None
    source: str
    created_by: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class TuningInfo:
    """A tuning as stored: its options, the wordings it tried (JSON records, in order) and its
    live status."""

    id: int
    name: str
    dataset_id: int
    dataset_name: str
    aspect: str
    options: dict
    wordings: list
    status: str
    message: str | None
    cancel_requested: bool
    heartbeat_at: datetime | None
    created_by: str
    created_at: datetime


class TuningNotFoundError(RunNotFoundError):
    """No tuning of that name or id."""


def _canonical(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise InputError(f"{what} cannot be stored as JSON: {e}") from None


class TuningStore(StoreBase):
    """Named templates, tunings and the judge's explanations."""

    # ------------------------------------------------------------------------ templates

    def save_template(self, name: str, text: str, noun: str, *, tuning: str | None = None,
                      source: str = "", created_by: str = "") -> int:
        """Store template ``name`` (returns its id). The same text again changes nothing; a
        tuning may replace the template it saved itself (``tuning`` names it), nothing else.

        Raises
        ------
        InputError
            A bad name, or the name is taken by another template.
        """
        check_name(name, "template name", dash_first=True)
        with self._write() as conn:
            row = conn.execute(select(TemplateRow.id, TemplateRow.text, TemplateRow.noun,
                                      TemplateRow.tuning)
                               .where(TemplateRow.name == name)).first()
            if row is None:
                now = utcnow()
                return int(conn.execute(TemplateRow.__table__.insert().returning(TemplateRow.id),
                                        [dict(name=name, text=text, noun=noun, tuning=tuning,
                                              source=source, created_by=created_by,
                                              created_at=now, updated_at=now)]).scalar_one())
            if row.text == text and row.noun == noun:
                return int(row.id)
            if tuning is None or row.tuning != tuning:
                raise InputError(f"a template named '{name}' already exists with another text; "
                                 "choose another name or delete it first")
            conn.execute(update(TemplateRow).where(TemplateRow.id == row.id)
                         .values(text=text, noun=noun, source=source, updated_at=utcnow()))
            return int(row.id)

    def get_template(self, name_or_id: str | int) -> TemplateInfo | None:
        """A named template (None when there is none of that name or id)."""
        with self._read() as conn:
            row = by_name_or_id(conn, select(TemplateRow), TemplateRow, name_or_id)
        return None if row is None else _template_info(row)

    def list_templates(self) -> list[TemplateInfo]:
        """Every named template, oldest first."""
        with self._read() as conn:
            return [_template_info(r) for r in conn.execute(select(TemplateRow)
                                                            .order_by(TemplateRow.id))]

    def delete_template(self, name: str) -> bool:
        """Delete a named template (runs that used it keep their own copy of its text)."""
        with self._write() as conn:
            return bool(conn.execute(delete(TemplateRow)
                                     .where(TemplateRow.name == name)).rowcount)

    # ------------------------------------------------------------------------ tunings

    def create_tuning(self, name: str, dataset_id: int, aspect: str, options: dict, *,
                      created_by: str = "") -> int:
        """Store a new tuning, or return the id of the tuning of that name with the same
        dataset, aspect and options (to be resumed).

        Raises
        ------
        InputError
            A bad name, or a tuning of that name with another dataset, aspect or options.
        """
        check_name(name, "tuning name", dash_first=True)
        options = _canonical(dict(options), "the tuning's options")
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            row = conn.execute(select(TuningRow.id, TuningRow.dataset_id, TuningRow.aspect,
                                      TuningRow.options).where(TuningRow.name == name)).first()
            if row is not None:
                if (row.dataset_id, row.aspect, dict(row.options)) == (int(dataset_id), aspect,
                                                                       options):
                    return int(row.id)
                changed = [k for k in sorted(set(options) | set(row.options))
                           if options.get(k) != row.options.get(k)]
                if row.dataset_id != int(dataset_id):
                    changed.insert(0, "dataset")
                if row.aspect != aspect:
                    changed.insert(0, "aspect")
                raise InputError(f"a tuning named '{name}' already exists with other settings "
                                 f"({', '.join(changed)}): choose another name to tune anew, "
                                 "or the same settings to resume it")
            return int(conn.execute(TuningRow.__table__.insert().returning(TuningRow.id), [dict(
                name=name, dataset_id=int(dataset_id), aspect=aspect, options=options,
                wordings=[], status="pending", message=None, cancel_requested=False,
                heartbeat_at=None, created_by=created_by, created_at=utcnow())]).scalar_one())

    def get_tuning(self, name_or_id: str | int) -> TuningInfo:
        """A tuning by name or id.

        Raises
        ------
        TuningNotFoundError
            No tuning of that name or id.
        """
        with self._read() as conn:
            return _tuning_info(self._named_row(conn, _tuning_select(), TuningRow, name_or_id,
                                                "tuning", TuningNotFoundError))

    def list_tunings(self, dataset_id: int | None = None) -> list[TuningInfo]:
        """Every tuning (of one dataset when given), oldest first."""
        return [_tuning_info(r) for r in self._oldest_first(_tuning_select(), TuningRow, dataset_id)]

    def set_tuning_wordings(self, tuning_id: int, wordings: Sequence[dict]) -> None:
        """Record the wordings a tuning tried or will try (JSON records, in order)."""
        value = _canonical(list(wordings), "the tuning's wordings")
        self._change_tuning(tuning_id, wordings=value)

    def set_tuning_status(self, tuning_id: int, status: str, *, message: str | None = None,
                          heartbeat: bool = True, clear_cancel: bool = False) -> None:
        """Record a tuning's status and message (and a heartbeat, unless told otherwise);
        ``clear_cancel``: forget an earlier cancel request (a resume starts).

        Raises
        ------
        InputError
            An unknown status.
        """
        if status not in TUNING_STATUSES:
            raise InputError(f"unknown tuning status '{status}'")
        values: dict[str, Any] = dict(status=status, message=None if message is None
                                      else stored_message(message))
        if heartbeat:
            values["heartbeat_at"] = utcnow()
        if clear_cancel:
            values["cancel_requested"] = False
        self._change_tuning(tuning_id, **values)

    def touch_tuning(self, tuning_id: int) -> None:
        """A tuning worker's heartbeat."""
        self._change_tuning(tuning_id, heartbeat_at=utcnow())

    def request_tuning_cancel(self, tuning_id: int) -> None:
        """Ask the tuning's worker to stop (after the wording run in flight stops)."""
        self._change_tuning(tuning_id, cancel_requested=True)

    def tuning_cancel_requested(self, tuning_id: int) -> bool:
        with self._read() as conn:
            return bool(conn.execute(select(TuningRow.cancel_requested)
                                     .where(TuningRow.id == int(tuning_id))).scalar())

    def delete_tuning(self, tuning_id: int) -> bool:
        """Delete a tuning's record (its runs and the template it saved stay)."""
        with self._write() as conn:
            return bool(conn.execute(delete(TuningRow)
                                     .where(TuningRow.id == int(tuning_id))).rowcount)

    def rename_tuning(self, tuning_id: int, new_name: str) -> None:
        """Give a tuning another name (its runs and template are renamed by the caller).

        Raises
        ------
        InputError
            A bad name, or another tuning has it.
        """
        check_name(new_name, "tuning name", dash_first=True)
        with self._write() as conn:
            taken = conn.execute(select(TuningRow.id).where(TuningRow.name == new_name,
                                                            TuningRow.id != int(tuning_id))).first()
            if taken is not None:
                raise InputError(f"a tuning named '{new_name}' already exists")
        self._change_tuning(tuning_id, name=new_name)

    def _change_tuning(self, tuning_id: int, **values: Any) -> None:
        with self._write() as conn:
            n = conn.execute(update(TuningRow).where(TuningRow.id == int(tuning_id))
                             .values(**values)).rowcount
        if not n:
            raise TuningNotFoundError(f"no tuning with id {tuning_id} in {self!r}")

    # ------------------------------------------------------------------------ explanations

    def get_explanation(self, prompt_hash: str, judge_key: str, max_tokens: int) -> dict | None:
        """The stored explanation of a judge's verdict on one prompt (``text``, ``verdict``,
        ``p``, ``created_at``), None when none is stored."""
        E = ExplanationRow
        with self._read() as conn:
            row = conn.execute(select(E.text, E.verdict, E.p, E.created_at)
                               .where(E.prompt_hash == prompt_hash, E.judge_key == judge_key,
                                      E.max_tokens == int(max_tokens))).first()
        if row is None:
            return None
        return dict(text=row.text, verdict=row.verdict, p=py_float(row.p),
                    created_at=row.created_at)

    def save_explanation(self, dataset_id: int, context_id: str, a_id: str, b_id: str, *,
                         prompt_hash: str, judge_key: str, max_tokens: int, verdict: str,
                         p: float, text: str) -> bool:
        """Store what the judge wrote for one verdict (once: a second one for the same judge,
        prompt and bound is ignored); returns whether it was added.

        Raises
        ------
        InputError
            A context or candidate the dataset lacks.
        """
        with self._write() as conn:
            keys = self._dataset_keys(conn, int(dataset_id))
            ctx = keys.contexts.get(context_id)
            a, b = keys.candidates.get((context_id, a_id)), keys.candidates.get((context_id, b_id))
            if ctx is None or a is None or b is None:
                raise InputError(f"context '{context_id}' with candidates '{a_id}' and '{b_id}' "
                                 f"is not in dataset {dataset_id}")
            stmt = insert_ignore(conn, ExplanationRow.__table__,
                                 ["prompt_hash", "judge_key", "max_tokens"])
            n = conn.execute(stmt, [dict(context_id=ctx, a_id=a, b_id=b, prompt_hash=prompt_hash,
                                         judge_key=judge_key, max_tokens=int(max_tokens),
                                         verdict=verdict, p=float(p), text=text,
                                         created_at=utcnow())]).rowcount
        return bool(n)


def _template_info(r) -> TemplateInfo:
    return TemplateInfo(r.id, r.name, r.text, r.noun, r.tuning, r.source or "", r.created_by or "",
                        r.created_at, r.updated_at)


def _tuning_select():
    return (select(TuningRow.id, TuningRow.name, TuningRow.dataset_id,
                   DatasetRow.name.label("ds_name"), TuningRow.aspect, TuningRow.options,
                   TuningRow.wordings, TuningRow.status, TuningRow.message,
                   TuningRow.cancel_requested, TuningRow.heartbeat_at, TuningRow.created_by,
                   TuningRow.created_at)
            .join(DatasetRow, DatasetRow.id == TuningRow.dataset_id))


def _tuning_info(r) -> TuningInfo:
    return TuningInfo(r.id, r.name, r.dataset_id, r.ds_name, r.aspect, dict(r.options or {}),
                      list(r.wordings or []), r.status, r.message, bool(r.cancel_requested),
                      r.heartbeat_at, r.created_by or "", r.created_at)


__all__ = ["TuningStore", "TemplateInfo", "TuningInfo", "TuningNotFoundError", "TUNING_STATUSES"]
