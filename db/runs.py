"""Runs in the store: create or resume by name, status and heartbeat, cancel, the judge's
identity; and one stored comparison (``get_comparison``). Whole runs are read through
``db.results`` (``read_results``); deleting and renaming is ``db.manage``.

A run's settings are stored as the JSON they were given (after a round trip); the store only
compares them when a run of the same name is created again, and copies the ones pages filter on
into columns. Which judge executed a run is not a setting: ``record_judge`` sets it once.

This module must never interpret settings beyond copying those columns (what a setting means is
the engine's business), never compute statistics and never import a UI.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from sqlalchemy import Delete, Row, Select, Update, case, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.limits import check_name
from compassess_core.runs.settings import NON_RESULT_KEYS, label_words_key
from compassess_core.types import COMPARISON_COLUMNS

from .connection import StoreBase, py_float
from .results import comparison_select
from .schema import (RUN_STATUSES, ComparisonRow, ContextRow,
                     DatasetRow, RunRow, utcnow)

#: Statuses after which a run's cancel request has been honoured or no longer matters.
TERMINAL_STATUSES = frozenset({"completed", "cancelled", "failed"})

#: Settings copied into columns of ``runs`` when a run is created (pages filter on them).
SETTING_COLUMNS = ("model", "label_words", "aspect", "template_name", "strategy", "budget", "seed")


def stored_message(message: str) -> str:
    """A status message as it is stored: without an API key or anything shaped like one
    (``servers.redact_secrets``). Messages carry exceptions' words, and a judge server may
    echo the request's key in its error; whoever wrote the message, the store keeps none."""
    from compassess_core.judges.servers import redact_secrets
    return redact_secrets(message)


@dataclass(frozen=True)
class RunInfo:
    """A run as listed: settings, live status and progress.

    ``n_comparisons`` counts the pairwise comparisons stored (0 for other kinds); ``judge_key`` is
    the identity of the judge that executed the run (None until a worker recorded it); ``rate``
    the worker's speed in the run kind's units per second of judging; ``plan`` what planning found
    (context window, longest prompt, ``truncated_contexts``: context id -> characters kept, the
    prompt tokens and characters the judge processes); ``judge_s`` the seconds of judging from
    the worker's first judged batch (judge loading excluded); ``token_rate`` the prompt tokens
    the judge processed per second of it; ``phase`` what the worker does now (starting,
    loading, planning, judging) and ``phase_at`` when it began.
    """

    id: int
    name: str
    dataset_id: int
    dataset_name: str
    settings: dict
    status: str
    done: int
    total: int | None
    message: str | None
    heartbeat_at: datetime | None
    created_at: datetime
    n_comparisons: int
    cancel_requested: bool = False
    worker_pid: int | None = None
    judge_key: str | None = None
    rate: float | None = None
    plan: dict | None = None
    judge_s: float | None = None
    token_rate: float | None = None
    phase: str | None = None
    phase_at: datetime | None = None


def settings_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Result-changing settings that differ, as ``key: old -> new`` lines (batch size, device ignored)."""
    keys = sorted((set(old) | set(new)) - NON_RESULT_KEYS)
    return [f"{k}: {_short(old.get(k, '(unset)'))} -> {_short(new.get(k, '(unset)'))}"
            for k in keys if old.get(k) != new.get(k)]


def _short(value: Any, limit: int = 60) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _setting_columns(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``runs`` columns copied from a run's settings (``SETTING_COLUMNS``)."""
    columns = {k: settings.get(k) for k in SETTING_COLUMNS}
    words = columns["label_words"]
    if words is not None and not isinstance(words, str):
        columns["label_words"] = label_words_key(words)
    return columns


class RunStore(StoreBase):
    """Run records (create, read, status, cancel, judge identity) and comparison reads.

    Deleting and renaming a run: ``db.manage``.
    """

    # -------------------------------------------------------------------- create, read

    def create_run(self, name: str, dataset_id: int, settings: dict) -> int:
        """A new run, or the existing run of that name when it has the same dataset and settings.

        Settings are compared after a JSON round trip, ignoring ``batch_size`` and ``device``
        (``compassess_core.runs.settings.NON_RESULT_KEYS``); the stored ones are updated to the new
        values of those keys. A new run's judge is unknown until ``record_judge``.

        Raises
        ------
        InputError
            When the name is empty or too long, ``settings`` is not JSON-serialisable, or a run
            of that name exists with another dataset or with different settings (the message
            lists which keys differ).
        RunNotFoundError
            When the dataset does not exist.
        """
        _check_run_name(name)
        try:
            canonical = json.loads(json.dumps(settings, sort_keys=True, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise InputError(f"the settings of run '{name}' cannot be stored as JSON: {e}") from None
        for attempt in range(2):
            try:
                with self._write() as conn:
                    ds_name = conn.execute(select(DatasetRow.name).where(
                        DatasetRow.id == dataset_id)).scalar_one_or_none()
                    if ds_name is None:
                        raise RunNotFoundError(f"no dataset with id {dataset_id} in {self!r}")
                    row = conn.execute(select(RunRow.id, RunRow.dataset_id, RunRow.settings)
                                       .where(RunRow.name == name)).first()
                    if row is None:
                        return conn.execute(insert(RunRow).values(
                            name=name, dataset_id=dataset_id, settings=canonical, status="pending",
                            done=0, cancel_requested=False, created_at=utcnow(),
                            **_setting_columns(canonical))).inserted_primary_key[0]
                    if row.dataset_id != dataset_id:
                        other = conn.execute(select(DatasetRow.name).where(
                            DatasetRow.id == row.dataset_id)).scalar_one_or_none()
                        raise InputError(f"run '{name}' already exists on dataset '{other}', not "
                                         f"'{ds_name}'; choose another run name")
                    diff = settings_differences(row.settings, canonical)
                    if diff:
                        raise InputError(
                            f"run '{name}' already exists with different settings; choose another "
                            "run name or delete the run. Differences (stored -> given):\n  "
                            + "\n  ".join(diff))
                    if row.settings != canonical:
                        conn.execute(update(RunRow).where(RunRow.id == row.id)
                                     .values(settings=canonical))
                    return row.id
            except IntegrityError as e:
                if attempt == 0:  # another process created the same name first: compare with it
                    continue
                raise InputError(f"run '{name}' could not be created: {e.orig}") from e
        raise AssertionError("unreachable")

    def get_run(self, name_or_id: str | int) -> RunInfo:
        """A run by id (int, or a string of digits that is not a run name) or by name.

        Raises
        ------
        RunNotFoundError
            When no run matches.
        """
        with self._read() as conn:
            return _run_info(self._named_row(conn, _run_select(), RunRow, name_or_id, "run"))

    def list_runs(self, dataset_id: int | None = None) -> list[RunInfo]:
        """Every run (of one dataset when given), oldest first."""
        return [_run_info(r) for r in self._oldest_first(_run_select(), RunRow, dataset_id)]

    # -------------------------------------------------------------------- the judge's identity

    def record_judge(self, run_id: int, judge_key: str) -> None:
        """Record which judge executed the run (the ``runs.model_key`` column).

        Results are cached under this key, so it is set once: when the run has none yet. The same
        key again does nothing; an empty key names no judge and records nothing (an unnamed
        model may be any model, so its results are never served from the cache).

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        InputError
            When the run was judged by a different judge (nothing is changed): its results and
            a resume with the new model would mix two judges.
        """
        with self._write() as conn:
            row = conn.execute(select(RunRow.name, RunRow.model_key)
                               .where(RunRow.id == run_id)).first()
            if row is None:
                raise RunNotFoundError(f"no run with id {run_id} in {self!r}")
            if not judge_key or row.model_key == judge_key:
                return
            if row.model_key:
                raise InputError(f"run '{row.name}' was judged by {row.model_key}, but its model "
                                 f"now loads as {judge_key}: the model changed; start a new run")
            conn.execute(update(RunRow).where(RunRow.id == run_id).values(model_key=judge_key))

    def record_plan(self, run_id: int, plan: Mapping[str, Any]) -> None:
        """Record what planning found (replacing an earlier plan of the run: a resume plans again).

        Raises
        ------
        InputError
            When ``plan`` is not JSON-serialisable.
        RunNotFoundError
            When the run does not exist.
        """
        try:
            canonical = json.loads(json.dumps(dict(plan), sort_keys=True, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise InputError(f"the plan of run {run_id} cannot be stored as JSON: {e}") from None
        self._change_run(run_id, update(RunRow).values(plan=canonical))

    # -------------------------------------------------------------------- status, cancel

    def set_run_status(self, run_id: int, status: str, *, done: int | None = None,
                       total: int | None = None, message: str | None = None,
                       rate: float | None = None, judge_s: float | None = None,
                       token_rate: float | None = None, phase: str | None = None) -> None:
        """Record status, progress, the worker's rate (units per second), its seconds of judging
        and prompt tokens per second, and a heartbeat (now, with this process's pid); ``phase``
        with the time it began when it is not the stored one (None keeps it).

        ``message=None`` keeps the current message while the status stays the same and clears it
        when the status changes. A terminal status (completed, cancelled, failed) clears the
        cancel request, so the run can be resumed.

        Raises
        ------
        InputError
            When ``status`` is not one of ``db.schema.RUN_STATUSES``.
        RunNotFoundError
            When the run does not exist.
        """
        if status not in RUN_STATUSES:
            raise InputError(f"unknown run status '{status}'; expected one of "
                             f"{', '.join(RUN_STATUSES)}")
        values: dict[str, Any] = dict(status=status, heartbeat_at=utcnow(), worker_pid=os.getpid())
        values["message"] = (stored_message(message) if message is not None
                             else case((RunRow.status == status, RunRow.message), else_=None))
        if done is not None:
            values["done"] = int(done)
        if total is not None:
            values["total"] = int(total)
        if rate is not None:
            values["rate"] = float(rate)
        if judge_s is not None:
            values["judge_s"] = float(judge_s)
        if token_rate is not None:
            values["token_rate"] = float(token_rate)
        if phase is not None:
            values["phase"] = phase
            values["phase_at"] = case((RunRow.phase == phase, RunRow.phase_at),
                                      else_=values["heartbeat_at"])
        if status in TERMINAL_STATUSES:
            values["cancel_requested"] = False
        self._change_run(run_id, update(RunRow).values(**values))

    def request_cancel(self, run_id: int) -> None:
        """Ask the run's worker (any process) to stop after the micro-batch it is computing.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        self._change_run(run_id, update(RunRow).values(cancel_requested=True))

    def cancel_requested(self, run_id: int) -> bool:
        """True when a cancel was requested, or the run was deleted while running."""
        with self._read() as conn:
            flag = conn.execute(select(RunRow.cancel_requested)
                                .where(RunRow.id == run_id)).scalar_one_or_none()
        return True if flag is None else bool(flag)

    def _change_run(self, run_id: int, stmt: Update | Delete) -> None:
        """Run an UPDATE or DELETE of ``runs`` on one run, in its own write transaction.

        Raises
        ------
        RunNotFoundError
            When no run has this id (nothing changed).
        """
        with self._write() as conn:
            n = conn.execute(stmt.where(RunRow.id == run_id)).rowcount
        if n == 0:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")

    # -------------------------------------------------------------------- one comparison

    def get_comparison(self, run_id: int, context_id: str, a_id: str,
                       b_id: str) -> dict | None:
        """One stored comparison as a dict of ``COMPARISON_COLUMNS``, or None when not stored."""
        stmt = comparison_select(run_id)
        a_key, b_key = stmt.selected_columns[1], stmt.selected_columns[2]
        with self._read() as conn:
            row = conn.execute(stmt.where(ContextRow.key == context_id, a_key == a_id,
                                          b_key == b_id)).first()
        if row is None:
            return None
        d = dict(zip(COMPARISON_COLUMNS, row))
        for k in ("p", "logp_a", "logp_b", "label_mass", "latency_ms"):
            d[k] = py_float(d[k])
        return d


def _check_run_name(name: str) -> None:
    # Bounded, printable and not option-like: a run name reaches log file names, messages and
    # (as `compassess worker --run NAME`) command lines.
    check_name(name, "run name")


def _run_select() -> Select:
    n = (select(func.count()).select_from(ComparisonRow)
         .where(ComparisonRow.run_id == RunRow.id).scalar_subquery())
    return (select(RunRow.id, RunRow.name, RunRow.dataset_id, DatasetRow.name.label("ds_name"),
                   RunRow.settings, RunRow.status, RunRow.done, RunRow.total, RunRow.message,
                   RunRow.heartbeat_at, RunRow.created_at, n.label("n"),
                   RunRow.cancel_requested, RunRow.worker_pid, RunRow.model_key, RunRow.rate,
                   RunRow.plan, RunRow.judge_s, RunRow.token_rate, RunRow.phase,
                   RunRow.phase_at)
            .join(DatasetRow, DatasetRow.id == RunRow.dataset_id))


def _run_info(r: Row) -> RunInfo:
    return RunInfo(r.id, r.name, r.dataset_id, r.ds_name, dict(r.settings), r.status, r.done,
                   r.total, r.message, r.heartbeat_at, r.created_at, int(r.n),
                   bool(r.cancel_requested), r.worker_pid, r.model_key, r.rate,
                   dict(r.plan) if r.plan else None, r.judge_s, r.token_rate, r.phase,
                   r.phase_at)
