"""Managing what is stored: delete or rename a run or a dataset.

A delete removes the object and every row that belongs to it, in one transaction, children
first. What belongs to it is read from the schema itself (``Base.metadata``): every row whose
foreign key points at a row being deleted, transitively. A table added later is therefore
covered without a change here, and no orphan is left even where a backend would not cascade
(the schema declares ``ON DELETE CASCADE`` everywhere, but SQLite only honours it with
``PRAGMA foreign_keys=ON``). Deleting children first also gives the exact count of each table's
rows, which is what a delete reports (and what a dry run previews).

A delete is refused while a worker executes the run (or a run of the dataset): the worker would
keep writing results of a run that no longer exists. A rename is allowed at any time: workers,
caches and result reads address runs and datasets by id, never by name.

This module must never compute statistics or interpret a run's settings beyond the dataset name
they record, and never import a UI.
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
from sqlalchemy import ColumnElement, Connection, Row, Table, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.limits import check_name
from compassess_core.runs.run_loop import is_active, worker_state

from .connection import StoreBase
from .schema import Base, DatasetRow, RunRow

class ManageStore(StoreBase):
    """Deleting and renaming runs and datasets (by name or id)."""

    # -------------------------------------------------------------------- runs

    def delete_run(self, run: str | int, *, dry_run: bool = False) -> dict[str, int]:
        """Delete a run with everything that belongs to it (its comparisons, scores, absolute
        comparisons: every row that references it), in one transaction.

        The comparison cache (``cached_results``) reads other runs' stored judgements of the same
        judge and prompts: deleting a run simply removes its rows from that cache; runs that
        already copied results from it keep their own copies.

        Returns the rows deleted per table (``runs`` first, then its dependants); with
        ``dry_run`` the rows that would be deleted, deleting nothing.

        Raises
        ------
        RunNotFoundError
            When no run has this name or id.
        InputError
            When a worker is executing the run (a live heartbeat): cancel it first. A run whose
            worker died (no heartbeat for ``run_loop.STALE_AFTER_S``) may be deleted. When the
            run is a member of a panel: delete the panel first.
        """
        with self._write() as conn:
            row = _run_row(conn, run, self)
            _refuse_live(conn, RunRow.id == row.id, f"run '{row.name}'")
            _refuse_panel_member(conn, row)
            return _delete_owned(conn, RunRow.__table__, RunRow.id == row.id, dry_run)

    def rename_run(self, run: str | int, new_name: str) -> None:
        """Give a run another name (the same rules as a new run's name).

        Allowed while a worker executes the run: the worker, the results and the cache address
        the run by id. Renaming a run to its own name does nothing.

        Raises
        ------
        RunNotFoundError
            When no run has this name or id.
        InputError
            When the new name is invalid, or another run already has it.
        """
        self._rename(RunRow.__table__, "run", lambda conn: _run_row(conn, run, self), new_name)

    # -------------------------------------------------------------------- datasets

    def delete_dataset(self, dataset: str | int, *, dry_run: bool = False) -> dict[str, int]:
        """Delete a dataset with everything that belongs to it, in one transaction: its
        contexts, candidates and reference scores, its runs and their results, its human
        judgements, guidelines and reference texts.

        Returns and raises as :meth:`delete_run` (``datasets`` first in the counts; refused
        while a worker executes any run of the dataset, and when no dataset has this name or id).
        """
        with self._write() as conn:
            ds = self._dataset_row(conn, dataset)
            _refuse_live(conn, RunRow.dataset_id == ds.id, f"dataset '{ds.name}'")
            counts = _delete_owned(conn, DatasetRow.__table__, DatasetRow.id == ds.id, dry_run)
        if not dry_run:
            self._forget_keys(ds.id)
        return counts

    def rename_dataset(self, dataset: str | int, new_name: str) -> None:
        """Give a dataset another name (the same rules as saving one).

        The dataset name recorded in the settings of its runs (``settings["dataset"]``) is
        renamed with it, in the same transaction, so running the same settings on the renamed
        dataset resumes those runs. Allowed while a worker executes one of its runs (it reads
        its dataset by id). Renaming a dataset to its own name does nothing. Raises as
        :meth:`rename_run` (no such dataset, an invalid name, a name another dataset has).
        """
        def rename_in_run_settings(conn: Connection, ds: Row) -> None:
            runs = conn.execute(select(RunRow.id, RunRow.settings)
                                .where(RunRow.dataset_id == ds.id)).all()
            for r in runs:
                if "dataset" in r.settings and r.settings["dataset"] != new_name:
                    conn.execute(update(RunRow).where(RunRow.id == r.id)
                                 .values(settings={**r.settings, "dataset": new_name}))

        self._rename(DatasetRow.__table__, "dataset",
                     lambda conn: self._dataset_row(conn, dataset), new_name,
                     also=rename_in_run_settings)

    def _rename(self, table: Table, noun: str, row_of, new_name: str, also=None) -> None:
        """Rename the row ``row_of(conn)`` of ``table`` (a run or a dataset) in one transaction,
        with ``also(conn, row)`` in the same one; nothing when the name does not change.

        Raises
        ------
        InputError
            When the new name is invalid, or another row of ``table`` already has it.
        """
        check_name(new_name, f"{noun} name")
        try:
            with self._write() as conn:
                row = row_of(conn)
                if row.name == new_name:
                    return
                taken = conn.execute(select(table.c.id).where(
                    table.c.name == new_name)).scalar_one_or_none()
                if taken is not None:
                    raise InputError(f"cannot rename {noun} '{row.name}' to '{new_name}': another "
                                     f"{noun} (id {taken}) is named '{new_name}'; choose another name")
                conn.execute(update(table).where(table.c.id == row.id).values(name=new_name))
                if also is not None:
                    also(conn, row)
        except IntegrityError as e:  # another process took the name between check and update
            raise InputError(f"cannot rename {noun} to '{new_name}': another {noun} is named "
                             f"'{new_name}'; choose another name") from e


# ------------------------------------------------------------------------ helpers

def _run_row(conn: Connection, run: str | int, store: StoreBase) -> Row:
    """A run's id and name by id (int, or digits that are not a run's name) or by name.

    Raises
    ------
    RunNotFoundError
        When no run matches.
    """
    stmt = select(RunRow.id, RunRow.name)
    if isinstance(run, (int, np.integer)):
        row = conn.execute(stmt.where(RunRow.id == int(run))).first()
    else:
        row = conn.execute(stmt.where(RunRow.name == run)).first()
        if row is None and str(run).isdigit():
            row = conn.execute(stmt.where(RunRow.id == int(run))).first()
    if row is None:
        raise RunNotFoundError(f"no run named or numbered {run!r} in {store!r}")
    return row


def _refuse_live(conn: Connection, which: ColumnElement[bool], what: str) -> None:
    """Raise when a worker is executing one of the runs ``which`` selects.

    On PostgreSQL the runs' rows are locked until the transaction ends, so a worker's next
    heartbeat waits for the delete and then finds its run gone (and stops); SQLite's write
    transaction already holds the whole database.

    Raises
    ------
    InputError
        Naming the live run and saying to cancel it first.
    """
    rows = conn.execute(select(RunRow.id, RunRow.name, RunRow.status, RunRow.heartbeat_at,
                               RunRow.cancel_requested, RunRow.worker_pid)
                        .where(which).order_by(RunRow.id).with_for_update()).all()
    now = datetime.now(timezone.utc)
    for r in rows:
        if is_active(worker_state(r, now)):
            pid = f" (pid {r.worker_pid})" if r.worker_pid else ""
            of = "" if what == f"run '{r.name}'" else f"; it belongs to {what}"
            raise InputError(f"run '{r.name}' is being executed by a worker{pid}{of}: cancel the "
                             "run first and delete once it has stopped")


def _refuse_panel_member(conn: Connection, row: Row) -> None:
    """Raise when the run is on a panel: a panel's verdicts rest on its members, so the panel
    is deleted first (deliberately, by name) rather than silently left with fewer judges.

    Raises
    ------
    InputError
        Naming the panels and how to delete them.
    """
    from .panels import _panels_of_run
    names = _panels_of_run(conn, row.id)
    if names:
        listed = ", ".join(f"'{n}'" for n in names)
        raise InputError(f"run '{row.name}' is a member of panel(s) {listed}: delete the "
                         "panel(s) first (the run stays; a panel only combines runs)")


def _delete_owned(conn: Connection, root: Table, where: ColumnElement[bool],
                  dry_run: bool) -> dict[str, int]:
    """Delete (or with ``dry_run`` count) the rows of ``root`` that ``where`` selects and every
    row that references them through a foreign key, transitively; children first.

    Returns the rows per table, ``root`` first then in schema order (parents before children).
    """
    tables = Base.metadata.sorted_tables  # parents before children
    owned: dict[Table, ColumnElement[bool]] = {root: where}
    for table in tables:
        if table is root:
            continue
        conditions = [fk.parent.in_(select(fk.column).where(owned[fk.column.table]))
                      for fk in table.foreign_keys if fk.column.table in owned]
        if conditions:
            owned[table] = or_(*conditions)
    order = [t for t in tables if t in owned]
    counts: dict[str, int] = {}
    for table in reversed(order):  # children first: nothing is left pointing at a deleted row
        if dry_run:
            n = conn.execute(select(func.count()).select_from(table)
                             .where(owned[table])).scalar_one()
        else:
            n = conn.execute(delete(table).where(owned[table])).rowcount
        counts[table.name] = int(n)
    return {t.name: counts[t.name] for t in [root, *(t for t in order if t is not root)]}
