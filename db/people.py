"""People and their roles in the store: who may use a shared app, as an admin or an annotator,
and when each last signed out.

A signed-in person's identity (``compassess_core.people.access.identity_from_claims``) is looked up here
on every page; admins add, change and remove people on the People page. There is always at least
one admin once one exists: the last admin can be neither demoted nor removed.

This module must never decide what a role may do (that is the app's policy,
``compassess_core.people.access``), never talk to the identity provider, and never import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update

from compassess_core.people.access import ADMIN, ROLES
from compassess_core.errors import InputError

from .connection import StoreBase, insert_ignore, upsert
from .schema import PersonRow, SignOutRow, utcnow


@dataclass(frozen=True)
class Person:
    """One row of the people table."""

    identity: str
    role: str
    added_by: str
    created_at: datetime
    updated_at: datetime


class PeopleStore(StoreBase):
    """People (identity -> role), changed by admins."""

    def list_people(self) -> list[Person]:
        """Everyone with a role, admins first, then by identity."""
        P = PersonRow
        with self._read() as conn:
            rows = conn.execute(select(P.identity, P.role, P.added_by, P.created_at,
                                       P.updated_at).order_by(P.role, P.identity)).all()
        return [Person(*r) for r in rows]

    def role_of(self, identity: str) -> str | None:
        """The role of ``identity`` (as ``access.normalise_identity`` spells it), or None."""
        with self._read() as conn:
            return conn.execute(select(PersonRow.role).where(
                PersonRow.identity == identity)).scalar_one_or_none()

    def set_role(self, identity: str, role: str, added_by: str) -> None:
        """Give ``identity`` the ``role`` (adding the person when new).

        Raises
        ------
        InputError
            An unknown role, an empty or over-long identity, or demoting the last admin.
        """
        _check(identity, role)
        P = PersonRow
        now = utcnow()
        with self._write() as conn:
            conn.execute(insert_ignore(conn, P.__table__, ["identity"]), [dict(
                identity=identity, role=role, added_by=added_by, created_at=now,
                updated_at=now)])
            current = conn.execute(select(P.role).where(P.identity == identity)).scalar_one()
            if current == role:
                return
            if current == ADMIN:
                self._keep_an_admin(conn, identity, "demote")
            conn.execute(update(P).where(P.identity == identity)
                         .values(role=role, added_by=added_by, updated_at=now))

    def remove_person(self, identity: str) -> bool:
        """Remove ``identity``'s role; returns whether someone was removed.

        Raises
        ------
        InputError
            When ``identity`` is the last admin.
        """
        P = PersonRow
        with self._write() as conn:
            role = conn.execute(select(P.role).where(P.identity == identity)).scalar_one_or_none()
            if role == ADMIN:
                self._keep_an_admin(conn, identity, "remove")
            gone = conn.execute(delete(P).where(P.identity == identity))
        return gone.rowcount == 1

    def signed_out_through(self, identity: str) -> int | None:
        """The newest ID-token issue time (seconds since the epoch) that no longer signs
        ``identity`` in, since their last sign-out (None: never signed out here)."""
        with self._read() as conn:
            return conn.execute(select(SignOutRow.signed_out_through).where(
                SignOutRow.identity == identity)).scalar_one_or_none()

    def record_sign_out(self, identity: str, through: int) -> None:
        """``identity`` signed out: tokens of theirs issued at or before ``through`` (seconds
        since the epoch, ``access.signed_out_through``) no longer sign them in. Never moves
        backwards (a late sign-out of an old cookie keeps the newer value)."""
        if not identity or len(identity) > 255:
            raise InputError("an identity is an e-mail address (or the provider's subject) of 1 "
                             "to 255 characters")
        S = SignOutRow
        with self._write() as conn:
            current = conn.execute(select(S.signed_out_through).where(
                S.identity == identity)).scalar_one_or_none()
            if current is not None and current >= through:
                return
            conn.execute(upsert(conn, S.__table__, ["identity"],
                                ["signed_out_through", "updated_at"]),
                         [dict(identity=identity, signed_out_through=int(through),
                               updated_at=utcnow())])

    @staticmethod
    def _keep_an_admin(conn, identity: str, what: str) -> None:
        admins = conn.execute(select(func.count()).select_from(PersonRow)
                              .where(PersonRow.role == ADMIN)).scalar_one()
        if admins <= 1:
            raise InputError(f"cannot {what} {identity}: they are the last admin (make someone "
                             "else an admin first)")


def _check(identity: str, role: str) -> None:
    if role not in ROLES:
        raise InputError(f"unknown role {role!r}; a person is one of: {', '.join(ROLES)}")
    if not identity or len(identity) > 255:
        raise InputError("an identity is an e-mail address (or the provider's subject) of 1 to "
                         "255 characters")
