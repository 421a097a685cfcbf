"""Panels of judges in the store: a panel's definition (name, dataset, aspect, how its members
are combined, their weights, how each member is debiased) and its member runs, in order.

Only the definition is stored; ``compassess_core.stats.panel`` computes the combined verdicts when a
panel is read. A run on a panel is not deleted (``db.manage.delete_run`` refuses and names the
panels); deleting the dataset deletes its panels with its runs.

This module must never combine judgements or compute any statistic, and never import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import Connection, select

from compassess_core.errors import InputError
from compassess_core.limits import check_name

from .connection import StoreBase
from .schema import DatasetRow, PanelMemberRow, PanelRow, RunRow, utcnow


@dataclass(frozen=True)
class PanelInfo:
    """One stored panel with its members' run ids and names, in the panel's order."""

    id: int
    name: str
    dataset_id: int
    dataset: str
    aspect: str
    combine: str
    weights: Any
    scaling: str
    created_by: str
    created_at: datetime
    run_ids: tuple[int, ...]
    run_names: tuple[str, ...]


class PanelNotFoundError(InputError):
    """No panel of that name or id."""


class PanelStore(StoreBase):
    """Panels and their member runs."""

    def create_panel(self, name: str, dataset_id: int, aspect: str, run_ids: Sequence[int], *,
                     combine: str, weights: Any, scaling: str, created_by: str = "") -> int:
        """Store a new panel of the runs ``run_ids`` (in this order); returns its id.

        Raises
        ------
        InputError
            The name is invalid or taken, a run does not exist or is not on the dataset.
        """
        check_name(name, "panel name", dash_first=True)
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            if conn.execute(select(PanelRow.id).where(PanelRow.name == name)).first():
                raise InputError(f"a panel named '{name}' already exists; choose another name "
                                 "or delete it first")
            for rid in run_ids:
                row = conn.execute(select(RunRow.name, RunRow.dataset_id)
                                   .where(RunRow.id == int(rid))).first()
                if row is None:
                    raise InputError(f"no run numbered {rid} for panel '{name}'")
                if row.dataset_id != int(dataset_id):
                    raise InputError(f"run '{row.name}' is not on the panel's dataset")
            panel_id = conn.execute(PanelRow.__table__.insert().returning(PanelRow.id), [dict(
                name=name, dataset_id=int(dataset_id), aspect=str(aspect), combine=str(combine),
                weights=weights, scaling=str(scaling), created_by=str(created_by),
                created_at=utcnow())]).scalar_one()
            conn.execute(PanelMemberRow.__table__.insert(),
                         [dict(panel_id=panel_id, run_id=int(r), position=k)
                          for k, r in enumerate(run_ids)])
        return int(panel_id)

    def list_panels(self, dataset_id: int | None = None) -> list[PanelInfo]:
        """Every panel (of one dataset when given), oldest first."""
        with self._read() as conn:
            stmt = select(PanelRow.id).order_by(PanelRow.id)
            if dataset_id is not None:
                stmt = stmt.where(PanelRow.dataset_id == int(dataset_id))
            return [self._panel_info(conn, i) for i in conn.execute(stmt).scalars().all()]

    def get_panel(self, name_or_id: str | int) -> PanelInfo:
        """A panel by name (or id, as a number or digits that are no panel's name); a
        :class:`PanelNotFoundError` when there is none."""
        with self._read() as conn:
            return self._panel_info(conn, self._panel_id(conn, name_or_id))

    def panels_of_run(self, run_id: int) -> list[str]:
        """The names of the panels the run is on."""
        with self._read() as conn:
            return _panels_of_run(conn, int(run_id))

    def delete_panel(self, name_or_id: str | int) -> dict[str, int]:
        """Delete a panel's definition (its runs stay); returns the rows deleted per table."""
        from sqlalchemy import delete
        with self._write() as conn:
            pid = self._panel_id(conn, name_or_id)
            n = conn.execute(delete(PanelMemberRow).where(PanelMemberRow.panel_id == pid)).rowcount
            conn.execute(delete(PanelRow).where(PanelRow.id == pid))
        return {"panels": 1, "panel_members": int(n)}

    def _panel_id(self, conn: Connection, name_or_id: str | int) -> int:
        return int(self._named_row(conn, select(PanelRow.id), PanelRow, name_or_id, "panel",
                                   PanelNotFoundError)[0])

    def _panel_info(self, conn: Connection, panel_id: int) -> PanelInfo:
        p = conn.execute(select(PanelRow.__table__, DatasetRow.name.label("dataset"))
                           .join(DatasetRow, DatasetRow.id == PanelRow.dataset_id)
                           .where(PanelRow.id == panel_id)).one()
        members = conn.execute(select(RunRow.id, RunRow.name)
                               .join(PanelMemberRow, PanelMemberRow.run_id == RunRow.id)
                               .where(PanelMemberRow.panel_id == panel_id)
                               .order_by(PanelMemberRow.position)).all()
        return PanelInfo(id=p.id, name=p.name, dataset_id=p.dataset_id, dataset=p.dataset,
                         aspect=p.aspect, combine=p.combine, weights=p.weights,
                         scaling=p.scaling, created_by=p.created_by, created_at=p.created_at,
                         run_ids=tuple(int(m.id) for m in members),
                         run_names=tuple(m.name for m in members))


def _panels_of_run(conn: Connection, run_id: int) -> list[str]:
    return list(conn.execute(select(PanelRow.name)
                             .join(PanelMemberRow, PanelMemberRow.panel_id == PanelRow.id)
                             .where(PanelMemberRow.run_id == run_id)
                             .order_by(PanelRow.id)).scalars().all())
