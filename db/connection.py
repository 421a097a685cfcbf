"""The store's connection to its database: URLs, engines, transactions, migrations, shared helpers.

``StoreBase`` is the part every other part of the store builds on. It opens the database named by
a URL (or a ``.db`` file path), brings its schema to the newest migration under a lock, and hands
out short transactions: ``_write()`` takes the write lock from its first statement, ``_read()``
only reads. It also keeps each dataset's string-id <-> integer-key maps, which every result read
and write goes through.

Several processes (a run worker, the Streamlit UI, annotators) may open the same database at once:
SQLite is used in WAL mode with a busy timeout, write transactions begin with ``BEGIN IMMEDIATE``,
and migrations are serialised (PostgreSQL: an advisory lock). Nothing here is SQLite-only SQL, so a
PostgreSQL URL works the same way.

This module must never know about datasets, runs or results beyond the id maps, never compute
statistics and never import a UI or the engine's run loop.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import re
import sqlite3
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import (Connection, Engine, Insert, Row, Table, create_engine, event, select,
                        text)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from compassess_core.errors import InputError, RunNotFoundError

from .schema import CandidateRow, ContextRow, DatasetRow, RunRow

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: How long a writer waits for another process's write lock before giving up (SQLite).
SQLITE_BUSY_TIMEOUT_S = 30.0

#: File name endings that ``database_url`` takes to mean a SQLite file.
SQLITE_FILE_SUFFIXES = (".db", ".sqlite", ".sqlite3")

_WRITE_OPTION = "compassess_write"
# Arbitrary constant key of the PostgreSQL advisory lock that serialises migrations.
_MIGRATION_LOCK_KEY = 0x436F6D70
# Bound parameters per IN (...) list: far below SQLite's and PostgreSQL's limits.
_IN_CHUNK = 500


# ------------------------------------------------------------------------------------- URLs

def default_database_url() -> str:
    """The database used when none is given.

    ``COMPASSESS_DATABASE_URL`` if set, else ``sqlite:///$COMPASSESS_HOME/compassess.db`` with
    ``COMPASSESS_HOME`` defaulting to ``~/.local/share/compassess`` (created if missing).
    """
    url = os.environ.get("COMPASSESS_DATABASE_URL", "").strip()
    if url:
        return url
    home = Path(os.environ.get("COMPASSESS_HOME", "").strip()
                or Path.home() / ".local" / "share" / "compassess").expanduser()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # the store is the owner's only
    return f"sqlite:///{home / 'compassess.db'}"


def database_url(url_or_path: str) -> str:
    """A SQLAlchemy URL, or a file path ending in .db, .sqlite or .sqlite3 taken as a SQLite file
    (``runs.db`` -> ``sqlite:////abs/runs.db``): users type paths, and SQLAlchemy cannot parse
    them. Anything else is passed on, so a mistyped URL still fails with its own message."""
    stripped = url_or_path.strip()
    if "://" not in stripped and stripped.lower().endswith(SQLITE_FILE_SUFFIXES):
        return "sqlite:///" + str(Path(stripped).expanduser().resolve())
    return stripped


def alembic_config() -> Config:
    """Alembic's configuration for the store's migrations (no ini file: the store runs them)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


# The password of a URL in any text: scheme://user:PASSWORD@host.
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^:/@\s]*:)[^@\s]*@")


def redact_url(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***`` (for messages)."""
    return _URL_PASSWORD.sub(r"\1***@", text)


# ---------------------------------------------------------------------------------- engines

def _create_private(path: Path) -> None:
    """Create a SQLite file that does not exist yet (and its missing folder) readable by the owner
    only: 0600, folder 0700. SQLite gives its -wal and -shm files the mode of the database file.
    An existing file keeps the mode its owner chose."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.fchmod(fd, 0o600)
    os.close(fd)


def make_engine(url: str, echo: bool = False) -> Engine:
    """A SQLAlchemy engine for ``url``; SQLite ones get the pragmas of ``_configure_sqlite``.

    Raises
    ------
    InputError
        When the URL cannot be parsed or its driver is not installed.
    """
    try:
        u = make_url(url)
        if u.get_backend_name() != "sqlite":
            return create_engine(u, echo=echo, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError, ImportError) as e:
        # Neither the URL nor the driver's message may show its password.
        raise InputError(f"cannot open the database URL {redact_url(repr(url))}: "
                         f"{redact_url(str(e))} (e.g. "
                         "sqlite:////path/compassess.db, a file path ending in .db, or "
                         "postgresql+psycopg://user@host/db with its driver installed)") from None
    database = u.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in str(u.query)
    if in_memory:
        # One shared connection, or each thread (the run loop's heartbeat) sees its own empty db.
        engine = create_engine(u, echo=echo, poolclass=StaticPool,
                               connect_args={"check_same_thread": False,
                                             "timeout": SQLITE_BUSY_TIMEOUT_S})
    else:
        if not database.startswith("file:"):
            _create_private(Path(database).expanduser())
        engine = create_engine(u, echo=echo, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
    _configure_sqlite(engine, wal=not in_memory)
    return engine


def _ensure_wal(cursor: sqlite3.Cursor, timeout_s: float) -> None:
    """Put the database file in WAL mode, waiting up to ``timeout_s`` for other processes.

    Changing the journal mode needs the file to itself, and SQLite answers "database is locked"
    at once instead of calling its busy handler: two processes opening a fresh file together
    (one of them already migrating it) would otherwise fail. A file already in WAL mode is left
    as it is, which needs no lock at all."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    busy_ms = int(SQLITE_BUSY_TIMEOUT_S * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, connection_record) -> None:  # noqa: ANN001
        # pysqlite's own implicit BEGIN cannot take the write lock up front; we emit BEGIN below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
        if wal:
            _ensure_wal(cursor, SQLITE_BUSY_TIMEOUT_S)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes fails at once (SQLITE_BUSY, no wait)
        # when another process wrote in between; IMMEDIATE waits for the lock instead.
        immediate = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# --------------------------------------------------------------------------- SQL helpers

def _dialect_insert(conn: Connection, table: Table) -> Insert:
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    return dialect.insert(table)


def insert_ignore(conn: Connection, table: Table, conflict_columns: Sequence[str]) -> Insert:
    """INSERT that skips a row whose ``conflict_columns`` (a unique constraint) are already stored."""
    return _dialect_insert(conn, table).on_conflict_do_nothing(index_elements=list(conflict_columns))


def upsert(conn: Connection, table: Table, key_columns: Sequence[str],
           update_columns: Sequence[str]) -> Insert:
    """INSERT that overwrites ``update_columns`` of a row whose ``key_columns`` are already stored."""
    stmt = _dialect_insert(conn, table)
    return stmt.on_conflict_do_update(index_elements=list(key_columns),
                                      set_={c: stmt.excluded[c] for c in update_columns})


def run_rows(conn: Connection, table: Table, run_id: int, columns: Sequence[str]) -> list[Row]:
    """One run's rows of a result table as tuples of ``columns``, in the order stored."""
    return conn.execute(select(*(table.c[c] for c in columns))
                        .where(table.c.run_id == run_id).order_by(table.c.id)).all()


def by_name_or_id(conn: Connection, stmt, table, name_or_id: str | int) -> Row | None:
    """The first row of ``stmt`` for the object ``name_or_id`` names: by id when it is an int;
    else by name, then by id when the name is digits that no object is named (the CLI's
    ``--run 12``). One rule for datasets, runs, panels and campaigns."""
    if isinstance(name_or_id, (int, np.integer)):
        return conn.execute(stmt.where(table.id == int(name_or_id))).first()
    row = conn.execute(stmt.where(table.name == str(name_or_id))).first()
    if row is None and str(name_or_id).isdigit():
        row = conn.execute(stmt.where(table.id == int(name_or_id))).first()
    return row


def chunks(items: Sequence[str], size: int = _IN_CHUNK) -> Iterator[list[str]]:
    """``items`` in lists short enough for one ``IN (...)`` of bound parameters."""
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


# ----------------------------------------------------------------------- NaN <-> NULL

def db_float(x: float | None) -> float | None:
    """A float as stored: NaN becomes NULL (SQLite cannot keep NaN, and one convention must hold
    on every backend)."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def db_floats(values: Sequence[float | None]) -> list[float | None]:
    """A column of floats as stored, NaN -> NULL (``db_float`` without a Python call per value)."""
    return [None if x != x else x for x in np.array(values, dtype=np.float64).tolist()]


def py_float(x: float | None) -> float:
    """A stored float as read: NULL becomes NaN."""
    return float("nan") if x is None else float(x)


def py_floats(values: Sequence[float | None]) -> list[float]:
    """A column of stored floats as Python floats, NULL -> NaN (vectorised: numpy maps None to NaN)."""
    return np.array(values, dtype=np.float64).tolist()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Fetching 100k rows allocates 100k+ tuples that hold no cycles; each allocation burst triggers
    full collections that otherwise cost more than the query itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ----------------------------------------------------------------------- dataset id maps

def _reverse(pairs: Iterable[tuple[str, int]]) -> tuple[int, np.ndarray]:
    """``(offset, key_of)`` with ``key_of[id - offset] == key``: integer keys of a dataset are dense."""
    pairs = list(pairs)
    if not pairs:
        return 0, np.array([], dtype=object)
    ids = np.fromiter((i for _, i in pairs), dtype=np.int64, count=len(pairs))
    offset = int(ids.min())
    key_of = np.full(int(ids.max()) - offset + 1, None, dtype=object)
    key_of[ids - offset] = [k for k, _ in pairs]
    return offset, key_of


@dataclass(frozen=True)
class DatasetKeys:
    """A dataset's string ids -> integer keys. Datasets never change once saved, so this is cached."""

    contexts: dict[str, int]
    candidates: dict[tuple[str, str], int]
    # Reverse maps as arrays: key_of[id - offset] is the string id of integer key ``id``.
    context_offset: int = 0
    context_key_of: np.ndarray = dataclasses.field(default_factory=lambda: np.array([], object))
    candidate_offset: int = 0
    candidate_key_of: np.ndarray = dataclasses.field(default_factory=lambda: np.array([], object))

    def context_keys(self, ids: np.ndarray) -> np.ndarray:
        """The string ids of integer context keys (an object array aligned with ``ids``)."""
        return self.context_key_of[np.asarray(ids, dtype=np.int64) - self.context_offset]

    def candidate_keys(self, ids: np.ndarray) -> np.ndarray:
        """The string ids of integer candidate keys (an object array aligned with ``ids``)."""
        return self.candidate_key_of[np.asarray(ids, dtype=np.int64) - self.candidate_offset]

    @staticmethod
    def query(conn: Connection, dataset_id: int) -> "DatasetKeys":
        """Read a dataset's maps (empty maps for a dataset that does not exist)."""
        contexts = {k: i for k, i in conn.execute(
            select(ContextRow.key, ContextRow.id).where(ContextRow.dataset_id == dataset_id))}
        candidates = {(ck, k): i for ck, k, i in conn.execute(
            select(ContextRow.key, CandidateRow.key, CandidateRow.id)
            .join(ContextRow, ContextRow.id == CandidateRow.context_id)
            .where(CandidateRow.dataset_id == dataset_id))}
        return DatasetKeys(contexts, candidates, *_reverse(contexts.items()),
                           *_reverse(((k[1], i) for k, i in candidates.items())))


# ------------------------------------------------------------------------------ the base

class StoreBase:
    """Persistence of CompAssess in the database at ``url`` (default: ``default_database_url()``).

    Opening a store brings its schema to the newest migration. The store is safe to share between
    threads; every method runs in its own short transaction.

    Raises
    ------
    InputError
        When the URL cannot be opened (no server answers, a file that is no database), the
        database is neither SQLite nor PostgreSQL, or it was written by a newer CompAssess
        (unknown schema revision).
    """

    def __init__(self, url: str | None = None, *, echo: bool = False):
        self.url: str = database_url(url) if url else default_database_url()
        self.engine: Engine = make_engine(self.url, echo)
        self.dialect: str = self.engine.dialect.name
        if self.dialect not in ("sqlite", "postgresql"):
            self.engine.dispose()
            raise InputError(f"database '{self.dialect}' is not supported: use SQLite or PostgreSQL")
        self._keys: dict[int, DatasetKeys] = {}
        self._keys_lock = threading.Lock()
        # An in-memory SQLite database is one shared connection (StaticPool): two threads (the
        # run loop and its heartbeat) must take turns, or one BEGINs inside the other's
        # transaction. A file or a server database gives each thread its own connection.
        self._one_connection = (threading.RLock() if isinstance(self.engine.pool, StaticPool)
                                else nullcontext())
        try:
            self._upgrade()
        except DatabaseError as e:  # a server that does not answer, a file that is no database
            self.engine.dispose()
            reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
            raise InputError(f"cannot open the database {self!r}: {redact_url(reason)}") from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({make_url(self.url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Close every pooled connection (the store can still be used; it reconnects)."""
        self.engine.dispose()

    def __enter__(self) -> "StoreBase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------- transactions

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction that holds the write lock from its first statement (SQLite)."""
        with self._one_connection, self.engine.connect() as conn:
            conn.execution_options(**{_WRITE_OPTION: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        """A connection for reads (its implicit transaction ends with the block)."""
        with self._one_connection, self.engine.connect() as conn:
            yield conn

    def _upgrade(self) -> None:
        """``alembic upgrade head``, serialised between processes that open the store together.

        Raises
        ------
        InputError
            When the database's revision is unknown to this version (written by a newer one).
        """
        cfg = alembic_config()
        script = ScriptDirectory.from_config(cfg)
        head = script.get_current_head()
        with self._read() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
        if current == head:
            return
        if current is not None:
            try:
                script.get_revision(current)
            except CommandError:
                raise InputError(
                    f"the database {self!r} has schema revision '{current}', unknown to this "
                    f"version of CompAssess (newest known: '{head}'); upgrade CompAssess") from None
        with self._write() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            # Another process may have migrated while we waited for the lock: alembic re-reads
            # the version inside this transaction and then has nothing to do.
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    # -------------------------------------------------------------------- id maps, lookups

    def _dataset_keys(self, conn: Connection, dataset_id: int) -> DatasetKeys:
        """The dataset's id maps, from the cache or read on ``conn``."""
        with self._keys_lock:
            cached = self._keys.get(dataset_id)
        if cached is not None:
            return cached
        keys = DatasetKeys.query(conn, dataset_id)
        if keys.contexts:  # an absent dataset is not cached: it may be saved later under that id
            with self._keys_lock:
                self._keys[dataset_id] = keys
        return keys

    def _forget_keys(self, dataset_id: int) -> None:
        """Drop a deleted dataset's id maps (its integer keys are never handed out again)."""
        with self._keys_lock:
            self._keys.pop(dataset_id, None)

    def _dataset_row(self, conn: Connection, name_or_id: str | int) -> Row:
        """A dataset's row by id (int, or digits that are not a dataset's name) or by name.

        Raises
        ------
        RunNotFoundError
            When no dataset matches.
        """
        cols = (DatasetRow.id, DatasetRow.name, DatasetRow.n_contexts, DatasetRow.n_candidates,
                DatasetRow.score_columns, DatasetRow.source, DatasetRow.content_hash,
                DatasetRow.created_at, DatasetRow.text_columns)
        return self._named_row(conn, select(*cols), DatasetRow, name_or_id, "dataset")

    def _named_row(self, conn: Connection, stmt, table, name_or_id: str | int, what: str,
                   error: type[Exception] = RunNotFoundError) -> Row:
        """The row of ``stmt`` for the ``what`` (dataset, run, tuning, panel, campaign) that
        ``name_or_id`` names (:func:`by_name_or_id`); ``error`` saying so when there is none."""
        row = by_name_or_id(conn, stmt, table, name_or_id)
        if row is None:
            raise error(f"no {what} named or numbered {name_or_id!r} in {self!r}")
        return row

    def _oldest_first(self, stmt, table, dataset_id: int | None) -> list[Row]:
        """The rows of ``stmt`` in the order they were made (of one dataset when given)."""
        stmt = stmt.order_by(table.id)
        if dataset_id is not None:
            stmt = stmt.where(table.dataset_id == int(dataset_id))
        with self._read() as conn:
            return list(conn.execute(stmt))

    def _run_dataset_id(self, conn: Connection, run_id: int) -> int:
        """The dataset of a run.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        dataset_id = conn.execute(
            select(RunRow.dataset_id).where(RunRow.id == run_id)).scalar_one_or_none()
        if dataset_id is None:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")
        return dataset_id

    def _run_keys(self, conn: Connection, run_id: int) -> DatasetKeys:
        """The id maps of a run's dataset.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        return self._dataset_keys(conn, self._run_dataset_id(conn, run_id))

    def _run_rows(self, run_id: int, table: Table,
                  columns: Sequence[str]) -> tuple[DatasetKeys, list[Row]]:
        """The id maps of a run's dataset, and the run's rows of a result table (``run_rows``).

        The rows hold integer keys; callers map them to string ids through the id maps, which is
        about twice as fast as joining the dataset's tables. Pause the garbage collector
        (``gc_paused``) around the call and the building of records from large runs.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        with self._read() as conn:
            return self._run_keys(conn, run_id), run_rows(conn, table, run_id, columns)

