"""The store: datasets, runs, comparisons and human judgements in any SQLAlchemy database.

``Store`` is the only code in CompAssess that issues SQL. It implements
``compassess_core.sink.ResultSink`` so the run loop streams comparisons into it, and it hands the
engine back its own types (``Dataset``, ``ComparisonTable``), mapping the file's string ids to
integer keys on the way in and back on the way out.

Several processes (a run worker, the Streamlit UI, annotators) may open the same database at once:
SQLite is used in WAL mode with a busy timeout, write transactions take the write lock up front
(``BEGIN IMMEDIATE``), and opening a store migrates it to the newest schema under a lock. Nothing
here is SQLite-only SQL, so a PostgreSQL URL works the same way.

This module must never compute rankings or statistics, and never import a UI.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import (Connection, Engine, Select, String, Table, case, create_engine, delete,
                        event, func, insert, select, text, type_coerce, update)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError
from sqlalchemy.orm import aliased
from sqlalchemy.pool import StaticPool

from compassess_core.data import content_hash as dataset_content_hash
from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.settings import NON_RESULT_KEYS
from compassess_core.types import (Candidate, ComparisonResult, ComparisonTable, Context, Dataset,
                                   Judgement, Outcome, PairKey)

from .schema import (RUN_STATUSES, CandidateRow, ComparisonRow, ContextRow, DatasetRow,
                     GuidelineRow, HumanJudgementRow, ReferenceScoreRow, RunRow, utcnow)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: How long a writer waits for another process's write lock before giving up (SQLite).
SQLITE_BUSY_TIMEOUT_S = 30.0

#: Statuses after which a run's cancel request has been honoured or no longer matters.
TERMINAL_STATUSES = frozenset({"completed", "cancelled", "failed"})

#: Keys of the rows ``add_human_judgements`` accepts (``candidate_a``/``candidate_b`` are aliases
#: of left/right, as in the import CSV).
HUMAN_JUDGEMENT_KEYS = frozenset({"context_id", "candidate_left", "candidate_right", "candidate_a",
                                  "candidate_b", "winner", "annotator", "aspect", "seconds",
                                  "shown_order", "source", "created_at"})
SHOWN_ORDERS = frozenset({"ab", "ba"})

#: Longest dataset or run name (the width of their columns in db/schema.py).
MAX_NAME_LENGTH = 255

_WRITE_OPTION = "compassess_write"
# Arbitrary constant key of the PostgreSQL advisory lock that serialises migrations.
_MIGRATION_LOCK_KEY = 0x436F6D70
# Bound parameters per IN (...) list: far below SQLite's and PostgreSQL's limits.
_IN_CHUNK = 500

COMPARISON_COLUMNS = ("context_id", "a_id", "b_id", "p", "logp_a", "logp_b", "label_mass",
                      "latency_ms", "prompt_hash", "created_at")
HUMAN_COLUMNS = ("id", "context_id", "candidate_left", "candidate_right", "shown_order", "winner",
                 "annotator", "aspect", "seconds", "source", "created_at")


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    n_contexts: int
    n_candidates: int
    score_columns: list[str]
    source: str
    content_hash: str
    created_at: datetime


@dataclass(frozen=True)
class RunInfo:
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


@dataclass(frozen=True)
class _DatasetKeys:
    """A dataset's string ids -> integer keys. Datasets never change once saved, so this is cached."""

    contexts: dict[str, int]
    candidates: dict[tuple[str, str], int]
    # Reverse maps as arrays: key_of[id - offset] is the string id of integer key ``id``.
    context_offset: int = 0
    context_key_of: np.ndarray = dataclasses.field(default_factory=lambda: np.array([], object))
    candidate_offset: int = 0
    candidate_key_of: np.ndarray = dataclasses.field(default_factory=lambda: np.array([], object))

    def context_keys(self, ids: np.ndarray) -> np.ndarray:
        return self.context_key_of[ids - self.context_offset]

    def candidate_keys(self, ids: np.ndarray) -> np.ndarray:
        return self.candidate_key_of[ids - self.candidate_offset]


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
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'compassess.db'}"


def label_words_key(label_words: Sequence[str] | str | None) -> str | None:
    """The runs.label_words column: the same key as ``compassess_core.runner.label_words_key``."""
    if label_words is None:
        return None
    if isinstance(label_words, str):
        return label_words
    return json.dumps(list(label_words))


def settings_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Result-changing settings that differ, as ``key: old -> new`` lines (batch size, device ignored)."""
    keys = sorted((set(old) | set(new)) - NON_RESULT_KEYS)
    out = []
    for k in keys:
        # A model_key not known yet (the app creates runs before a worker loads the model) is
        # filled in later by set_run_model_key; it matches whatever the run already has.
        if k == "model_key" and not (new.get(k) and old.get(k)):
            continue
        if old.get(k) != new.get(k):
            out.append(f"{k}: {_short(old.get(k, '(unset)'))} -> {_short(new.get(k, '(unset)'))}")
    return out


def _short(value: Any, limit: int = 60) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _db_float(x: float | None) -> float | None:
    # NaN is stored as NULL: SQLite cannot keep NaN, and one convention must hold on every backend.
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _py_float(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _chunks(items: Sequence[str], size: int = _IN_CHUNK) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


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


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small tuples.

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


SQLITE_FILE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def database_url(url_or_path: str) -> str:
    """A SQLAlchemy URL, or a file path ending in .db, .sqlite or .sqlite3 taken as a SQLite file
    (``runs.db`` -> ``sqlite:////abs/runs.db``): users type paths, and SQLAlchemy cannot parse
    them. Anything else is passed on, so a mistyped URL still fails with its own message."""
    text = url_or_path.strip()
    if "://" not in text and text.lower().endswith(SQLITE_FILE_SUFFIXES):
        return "sqlite:///" + str(Path(text).expanduser().resolve())
    return text


def _make_engine(url: str, echo: bool) -> Engine:
    try:
        u = make_url(url)
        if u.get_backend_name() != "sqlite":
            return create_engine(u, echo=echo, pool_pre_ping=True)
    except (ArgumentError, NoSuchModuleError, ImportError) as e:
        raise InputError(f"cannot open the database URL {url!r}: {e} (e.g. "
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
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(u, echo=echo, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
    _configure_sqlite(engine, wal=not in_memory)
    return engine


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    busy_ms = int(SQLITE_BUSY_TIMEOUT_S * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, connection_record) -> None:  # noqa: ANN001
        # pysqlite's own implicit BEGIN cannot take the write lock up front; we emit BEGIN below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
        if wal:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes fails at once (SQLITE_BUSY, no wait)
        # when another process wrote in between; IMMEDIATE waits for the lock instead.
        immediate = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


class Store:
    """Persistence of CompAssess in the database at ``url`` (default: ``default_database_url()``).

    Opening a store brings its schema to the newest migration. The store is safe to share between
    threads; every method runs in its own short transaction.

    Raises
    ------
    InputError
        When the database was written by a newer CompAssess (unknown schema revision).
    """

    def __init__(self, url: str | None = None, *, echo: bool = False):
        self.url: str = database_url(url) if url else default_database_url()
        self.engine: Engine = _make_engine(self.url, echo)
        self.dialect: str = self.engine.dialect.name
        if self.dialect not in ("sqlite", "postgresql"):
            self.engine.dispose()
            raise InputError(f"database '{self.dialect}' is not supported: use SQLite or PostgreSQL")
        self._keys: dict[int, _DatasetKeys] = {}
        self._keys_lock = threading.Lock()
        self._upgrade()

    def __repr__(self) -> str:
        return f"Store({make_url(self.url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- plumbing

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction that holds the write lock from its first statement (SQLite)."""
        with self.engine.connect() as conn:
            conn.execution_options(**{_WRITE_OPTION: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def _upgrade(self) -> None:
        """``alembic upgrade head``, serialised between processes that open the store together."""
        cfg = _alembic_config()
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

    def _insert_ignore(self, table: Table, conflict_columns: list[str]):
        dialect = sqlite if self.dialect == "sqlite" else postgresql
        return dialect.insert(table).on_conflict_do_nothing(index_elements=conflict_columns)

    def _upsert(self, table: Table, key_columns: list[str], update_columns: list[str]):
        dialect = sqlite if self.dialect == "sqlite" else postgresql
        stmt = dialect.insert(table)
        return stmt.on_conflict_do_update(
            index_elements=key_columns, set_={c: stmt.excluded[c] for c in update_columns})

    def _dataset_keys(self, conn: Connection, dataset_id: int) -> _DatasetKeys:
        with self._keys_lock:
            cached = self._keys.get(dataset_id)
        if cached is not None:
            return cached
        keys = self._query_keys(conn, dataset_id)
        if keys.contexts:  # an absent dataset is not cached: it may be saved later under that id
            with self._keys_lock:
                self._keys[dataset_id] = keys
        return keys

    @staticmethod
    def _query_keys(conn: Connection, dataset_id: int) -> _DatasetKeys:
        contexts = {k: i for k, i in conn.execute(
            select(ContextRow.key, ContextRow.id).where(ContextRow.dataset_id == dataset_id))}
        candidates = {(ck, k): i for ck, k, i in conn.execute(
            select(ContextRow.key, CandidateRow.key, CandidateRow.id)
            .join(ContextRow, ContextRow.id == CandidateRow.context_id)
            .where(CandidateRow.dataset_id == dataset_id))}
        return _DatasetKeys(contexts, candidates, *_reverse(contexts.items()),
                            *_reverse(((k[1], i) for k, i in candidates.items())))

    def _dataset_row(self, conn: Connection, name_or_id: str | int):
        cols = (DatasetRow.id, DatasetRow.name, DatasetRow.n_contexts, DatasetRow.n_candidates,
                DatasetRow.score_columns, DatasetRow.source, DatasetRow.content_hash,
                DatasetRow.created_at)
        row = None
        if isinstance(name_or_id, (int, np.integer)):
            row = conn.execute(select(*cols).where(DatasetRow.id == int(name_or_id))).first()
        else:
            row = conn.execute(select(*cols).where(DatasetRow.name == name_or_id)).first()
            if row is None and str(name_or_id).isdigit():
                row = conn.execute(select(*cols).where(DatasetRow.id == int(name_or_id))).first()
        if row is None:
            raise RunNotFoundError(f"no dataset named or numbered {name_or_id!r} in {self!r}")
        return row

    def _run_dataset_id(self, conn: Connection, run_id: int) -> int:
        dataset_id = conn.execute(
            select(RunRow.dataset_id).where(RunRow.id == run_id)).scalar_one_or_none()
        if dataset_id is None:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")
        return dataset_id

    # ---------------------------------------------------------------- datasets

    def save_dataset(self, dataset: Dataset) -> int:
        """Store a dataset in one transaction and return its id.

        Idempotent: a dataset with the same ``content_hash`` is not stored twice, its existing id is
        returned (and the first name kept). An empty ``content_hash`` is computed from the content.

        Raises
        ------
        InputError
            When a different dataset already has this name, or the content cannot be stored
            (e.g. a repeated id); nothing is stored then.
        """
        if not dataset.name.strip():
            raise InputError("a dataset needs a non-empty name to be saved")
        if len(dataset.name) > MAX_NAME_LENGTH:
            raise InputError(f"the dataset name '{dataset.name[:40]}...' is longer than "
                             f"{MAX_NAME_LENGTH} characters")
        if not dataset.contexts:
            raise InputError(f"dataset '{dataset.name}' has no contexts: nothing to save")
        chash = dataset.content_hash or dataset_content_hash(dataset.contexts)
        for attempt in range(2):
            try:
                with self._write() as conn:
                    existing = conn.execute(select(DatasetRow.id).where(
                        DatasetRow.content_hash == chash)).scalar_one_or_none()
                    if existing is not None:
                        return existing
                    clash = conn.execute(select(DatasetRow.id).where(
                        DatasetRow.name == dataset.name)).scalar_one_or_none()
                    if clash is not None:
                        raise InputError(
                            f"a different dataset named '{dataset.name}' is already stored "
                            f"(id {clash}); save this one under another name")
                    return self._insert_dataset(conn, dataset, chash)
            except IntegrityError as e:
                # Another process may have saved the same content between our check and insert
                # (PostgreSQL takes no lock up front); then its id is the answer.
                if attempt == 0:
                    with self._read() as conn:
                        found = conn.execute(select(DatasetRow.id).where(
                            DatasetRow.content_hash == chash)).scalar_one_or_none()
                    if found is not None:
                        return found
                    if "name" in str(e.orig) and "datasets" in str(e.orig):
                        continue
                raise InputError(f"dataset '{dataset.name}' could not be saved and nothing was "
                                 f"stored: {e.orig}") from e
        raise AssertionError("unreachable")

    def _insert_dataset(self, conn: Connection, dataset: Dataset, chash: str) -> int:
        dataset_id = conn.execute(insert(DatasetRow).values(
            name=dataset.name, content_hash=chash, source=dataset.source,
            score_columns=list(dataset.score_columns), n_contexts=len(dataset.contexts),
            n_candidates=dataset.n_candidates, created_at=utcnow())).inserted_primary_key[0]
        conn.execute(insert(ContextRow), [
            dict(dataset_id=dataset_id, key=c.context_id, position=i, text=c.text)
            for i, c in enumerate(dataset.contexts)])
        ctx_ids = dict(conn.execute(select(ContextRow.key, ContextRow.id)
                                    .where(ContextRow.dataset_id == dataset_id)).all())
        cand_rows = [dict(dataset_id=dataset_id, context_id=ctx_ids[c.context_id], key=k.candidate_id,
                          position=j, text=k.text, system=k.system, source_row=k.row)
                     for c in dataset.contexts for j, k in enumerate(c.candidates)]
        if cand_rows:
            conn.execute(insert(CandidateRow), cand_rows)
        # Not cached: if this transaction rolls back, SQLite hands the same id out again.
        keys = self._query_keys(conn, dataset_id)
        score_rows = [dict(candidate_id=keys.candidates[(c.context_id, k.candidate_id)], name=name,
                           value=_db_float(value))
                      for c in dataset.contexts for k in c.candidates
                      for name, value in k.scores.items()]
        if score_rows:
            conn.execute(insert(ReferenceScoreRow), score_rows)
        return dataset_id

    def list_datasets(self) -> list[DatasetInfo]:
        with self._read() as conn:
            rows = conn.execute(select(
                DatasetRow.id, DatasetRow.name, DatasetRow.n_contexts, DatasetRow.n_candidates,
                DatasetRow.score_columns, DatasetRow.source, DatasetRow.content_hash,
                DatasetRow.created_at).order_by(DatasetRow.id)).all()
        return [DatasetInfo(r.id, r.name, r.n_contexts, r.n_candidates, list(r.score_columns),
                            r.source, r.content_hash, r.created_at) for r in rows]

    def load_dataset(self, name_or_id: str | int) -> Dataset:
        """The stored dataset, rebuilt exactly (file order, scores, systems, source rows).

        Raises
        ------
        RunNotFoundError
            When no dataset has this name or id.
        """
        with self._read() as conn:
            ds = self._dataset_row(conn, name_or_id)
            contexts = conn.execute(select(ContextRow.id, ContextRow.key, ContextRow.text)
                                    .where(ContextRow.dataset_id == ds.id)
                                    .order_by(ContextRow.position)).all()
            candidates = conn.execute(
                select(CandidateRow.id, CandidateRow.context_id, CandidateRow.key,
                       CandidateRow.text, CandidateRow.system, CandidateRow.source_row)
                .where(CandidateRow.dataset_id == ds.id)
                .order_by(CandidateRow.context_id, CandidateRow.position)).all()
            scores = conn.execute(
                select(ReferenceScoreRow.candidate_id, ReferenceScoreRow.name,
                       ReferenceScoreRow.value)
                .join(CandidateRow, CandidateRow.id == ReferenceScoreRow.candidate_id)
                .where(CandidateRow.dataset_id == ds.id)).all()
        order = {c: i for i, c in enumerate(ds.score_columns)}
        by_candidate: dict[int, list[tuple[str, float]]] = {}
        for cand_id, name, value in scores:
            by_candidate.setdefault(cand_id, []).append((name, _py_float(value)))
        by_context: dict[int, list[Candidate]] = {}
        for r in candidates:
            items = sorted(by_candidate.get(r.id, []), key=lambda kv: (order.get(kv[0], len(order)),
                                                                         kv[0]))
            by_context.setdefault(r.context_id, []).append(
                Candidate(candidate_id=r.key, text=r.text, system=r.system, scores=dict(items),
                          row=r.source_row))
        return Dataset(
            name=ds.name,
            contexts=tuple(Context(c.key, c.text, tuple(by_context.get(c.id, ())))
                           for c in contexts),
            score_columns=tuple(ds.score_columns), source=ds.source, content_hash=ds.content_hash)

    def delete_dataset(self, name_or_id: str | int) -> None:
        """Delete a dataset with its runs, comparisons, judgements and guidelines."""
        with self._write() as conn:
            ds = self._dataset_row(conn, name_or_id)
            conn.execute(delete(DatasetRow).where(DatasetRow.id == ds.id))
        with self._keys_lock:
            self._keys.pop(ds.id, None)

    # ---------------------------------------------------------------- runs

    def create_run(self, name: str, dataset_id: int, settings: dict) -> int:
        """A new run, or the existing run of that name when it has the same dataset and settings.

        Settings are compared after a JSON round trip, ignoring ``batch_size`` and ``device``
        (``compassess_core.settings.NON_RESULT_KEYS``); the stored ones are updated to the new
        values of those keys.

        Raises
        ------
        InputError
            When ``settings`` is not JSON-serialisable, or a run of that name exists with another
            dataset or with different settings (the message lists which keys differ).
        RunNotFoundError
            When the dataset does not exist.
        """
        if not name or not name.strip():
            raise InputError("a run needs a non-empty name")
        if len(name) > MAX_NAME_LENGTH:
            raise InputError(f"the run name '{name[:40]}...' is longer than {MAX_NAME_LENGTH} "
                             "characters")
        try:
            canonical = json.loads(json.dumps(settings, sort_keys=True, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise InputError(f"the settings of run '{name}' cannot be stored as JSON: {e}") from None
        columns = dict(
            model=canonical.get("model"), model_key=canonical.get("model_key"),
            label_words=label_words_key(canonical.get("label_words")),
            aspect=canonical.get("aspect"), template_name=canonical.get("template_name"),
            strategy=canonical.get("strategy"), budget=canonical.get("budget"),
            seed=canonical.get("seed"))
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
                            **columns)).inserted_primary_key[0]
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

    def _run_select(self) -> Select:
        n = (select(func.count()).select_from(ComparisonRow)
             .where(ComparisonRow.run_id == RunRow.id).scalar_subquery())
        return (select(RunRow.id, RunRow.name, RunRow.dataset_id, DatasetRow.name.label("ds_name"),
                       RunRow.settings, RunRow.status, RunRow.done, RunRow.total, RunRow.message,
                       RunRow.heartbeat_at, RunRow.created_at, n.label("n"),
                       RunRow.cancel_requested, RunRow.worker_pid)
                .join(DatasetRow, DatasetRow.id == RunRow.dataset_id))

    @staticmethod
    def _run_info(r) -> RunInfo:  # noqa: ANN001
        return RunInfo(r.id, r.name, r.dataset_id, r.ds_name, dict(r.settings), r.status, r.done,
                       r.total, r.message, r.heartbeat_at, r.created_at, int(r.n),
                       bool(r.cancel_requested), r.worker_pid)

    def get_run(self, name_or_id: str | int) -> RunInfo:
        """A run by id (int, or a string of digits that is not a run name) or by name.

        Raises
        ------
        RunNotFoundError
            When no run matches.
        """
        stmt = self._run_select()
        with self._read() as conn:
            if isinstance(name_or_id, (int, np.integer)):
                row = conn.execute(stmt.where(RunRow.id == int(name_or_id))).first()
            else:
                row = conn.execute(stmt.where(RunRow.name == name_or_id)).first()
                if row is None and str(name_or_id).isdigit():
                    row = conn.execute(stmt.where(RunRow.id == int(name_or_id))).first()
        if row is None:
            raise RunNotFoundError(f"no run named or numbered {name_or_id!r} in {self!r}")
        return self._run_info(row)

    def list_runs(self, dataset_id: int | None = None) -> list[RunInfo]:
        stmt = self._run_select().order_by(RunRow.id)
        if dataset_id is not None:
            stmt = stmt.where(RunRow.dataset_id == dataset_id)
        with self._read() as conn:
            return [self._run_info(r) for r in conn.execute(stmt)]

    def set_run_model_key(self, run_id: int, model_key: str) -> None:
        """Record the judge's identity once a worker has loaded it (settings JSON and column), so
        later runs of the same model find this run's comparisons in the cache."""
        with self._write() as conn:
            row = conn.execute(select(RunRow.settings).where(RunRow.id == run_id)).first()
            if row is None:
                raise RunNotFoundError(f"no run with id {run_id}")
            settings = dict(row[0] or {})
            settings["model_key"] = model_key
            conn.execute(update(RunRow).where(RunRow.id == run_id)
                         .values(settings=settings, model_key=model_key))

    def request_cancel(self, run_id: int) -> None:
        """Ask the run's worker (any process) to stop at its next chunk."""
        with self._write() as conn:
            n = conn.execute(update(RunRow).where(RunRow.id == run_id)
                             .values(cancel_requested=True)).rowcount
        if n == 0:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")

    def delete_run(self, run_id: int) -> None:
        """Delete a run and its comparisons."""
        with self._write() as conn:
            n = conn.execute(delete(RunRow).where(RunRow.id == run_id)).rowcount
        if n == 0:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")

    # ---------------------------------------------------------------- ResultSink

    def stored_pairs(self, run_id: int) -> set[PairKey]:
        """Ordered pairs already stored for the run (``ResultSink``)."""
        A, B = aliased(CandidateRow), aliased(CandidateRow)
        stmt = (select(ContextRow.key, A.key, B.key).select_from(ComparisonRow)
                .join(ContextRow, ContextRow.id == ComparisonRow.context_id)
                .join(A, A.id == ComparisonRow.a_id).join(B, B.id == ComparisonRow.b_id)
                .where(ComparisonRow.run_id == run_id))
        with self._read() as conn, _gc_paused():
            self._run_dataset_id(conn, run_id)
            return {PairKey(c, a, b) for c, a, b in conn.execute(stmt)}

    def cached_judgements(self, model_key: str, label_words: str,
                          prompt_hashes: Iterable[str]) -> dict[str, ComparisonResult]:
        """Results any run stored for the same model key, label words and rendered prompt.

        ``label_words`` is the key of ``compassess_core.runner.label_words_key`` (JSON list). The
        result's key is the pair it was first stored for; the run loop re-keys it. An empty
        ``model_key`` matches nothing: an unnamed model may be any model.
        """
        hashes = list(dict.fromkeys(prompt_hashes))
        if not model_key or not hashes:
            return {}
        A, B = aliased(CandidateRow), aliased(CandidateRow)
        base = (select(ComparisonRow.prompt_hash, ContextRow.key, A.key, B.key, ComparisonRow.p,
                       ComparisonRow.logp_a, ComparisonRow.logp_b, ComparisonRow.label_mass,
                       ComparisonRow.latency_ms)
                .select_from(ComparisonRow)
                .join(RunRow, RunRow.id == ComparisonRow.run_id)
                .join(ContextRow, ContextRow.id == ComparisonRow.context_id)
                .join(A, A.id == ComparisonRow.a_id).join(B, B.id == ComparisonRow.b_id)
                .where(RunRow.model_key == model_key, RunRow.label_words == label_words)
                .order_by(ComparisonRow.id))
        out: dict[str, ComparisonResult] = {}
        with self._read() as conn:
            for chunk in _chunks(hashes):
                for h, c, a, b, p, la, lb, mass, lat in conn.execute(
                        base.where(ComparisonRow.prompt_hash.in_(list(chunk)))):
                    if h not in out:
                        out[h] = ComparisonResult(
                            PairKey(c, a, b),
                            Judgement(_py_float(p), _py_float(la), _py_float(lb), _py_float(mass),
                                      _py_float(lat)), h)
        return out

    def add_comparisons(self, run_id: int, results: list[ComparisonResult]) -> None:
        """Store results in one transaction; a (run, ordered pair) already stored is ignored.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        InputError
            When a result names a context or candidate that is not in the run's dataset (nothing
            is stored then).
        """
        if not results:
            return
        with self._write() as conn, _gc_paused():
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows, unknown = [], []
            for r in results:
                k, j = r.key, r.judgement
                ctx = keys.contexts.get(k.context_id)
                a = keys.candidates.get((k.context_id, k.a_id))
                b = keys.candidates.get((k.context_id, k.b_id))
                if ctx is None or a is None or b is None:
                    unknown.append(k)
                    continue
                rows.append(dict(run_id=run_id, context_id=ctx, a_id=a, b_id=b, p=_db_float(j.p),
                                 logp_a=_db_float(j.logp_a), logp_b=_db_float(j.logp_b),
                                 label_mass=_db_float(j.label_mass),
                                 latency_ms=_db_float(j.latency_ms), prompt_hash=r.prompt_hash))
            if unknown:
                shown = ", ".join(f"({k.context_id}, {k.a_id}, {k.b_id})" for k in unknown[:5])
                raise InputError(f"{len(unknown)} comparison(s) for run {run_id} name a context or "
                                 f"candidate not in its dataset, e.g. {shown}; nothing was stored")
            # The database's clock, as SQL: a bound Python datetime costs a conversion per row.
            stmt = self._insert_ignore(ComparisonRow.__table__, ["run_id", "a_id", "b_id"])
            conn.execute(stmt.values(created_at=func.current_timestamp()), rows)

    def set_run_status(self, run_id: int, status: str, *, done: int | None = None,
                       total: int | None = None, message: str | None = None) -> None:
        """Record status, progress and a heartbeat (now, with this process's pid).

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
        values["message"] = (message if message is not None
                             else case((RunRow.status == status, RunRow.message), else_=None))
        if done is not None:
            values["done"] = int(done)
        if total is not None:
            values["total"] = int(total)
        if status in TERMINAL_STATUSES:
            values["cancel_requested"] = False
        with self._write() as conn:
            n = conn.execute(update(RunRow).where(RunRow.id == run_id).values(**values)).rowcount
        if n == 0:
            raise RunNotFoundError(f"no run with id {run_id} in {self!r}")

    def cancel_requested(self, run_id: int) -> bool:
        """True when a cancel was requested, or the run was deleted while running."""
        with self._read() as conn:
            flag = conn.execute(select(RunRow.cancel_requested)
                                .where(RunRow.id == run_id)).scalar_one_or_none()
        return True if flag is None else bool(flag)

    # ---------------------------------------------------------------- reading comparisons

    def _comparison_select(self, run_id: int, raw_time: bool = False) -> Select:
        A, B = aliased(CandidateRow), aliased(CandidateRow)
        # raw_time: the backend's own value (text on SQLite), which pandas parses vectorised,
        # far faster than one Python conversion per row.
        created = (type_coerce(ComparisonRow.created_at, String) if raw_time
                   else ComparisonRow.created_at)
        cols = [ContextRow.key, A.key, B.key, ComparisonRow.p, ComparisonRow.logp_a,
                ComparisonRow.logp_b, ComparisonRow.label_mass, ComparisonRow.latency_ms,
                ComparisonRow.prompt_hash, created]
        return (select(*cols).select_from(ComparisonRow)
                .join(ContextRow, ContextRow.id == ComparisonRow.context_id)
                .join(A, A.id == ComparisonRow.a_id).join(B, B.id == ComparisonRow.b_id)
                .where(ComparisonRow.run_id == run_id).order_by(ComparisonRow.id))

    def comparison_table(self, run_id: int) -> ComparisonTable:
        """All comparisons of a run, in the order stored, as aligned arrays (NULL -> NaN).

        One SELECT of integer keys and floats, turned into arrays column by column; the string
        ids come from the dataset's cached key arrays (a join would double the time).

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        C = ComparisonRow
        with self._read() as conn, _gc_paused():
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows = conn.execute(select(C.context_id, C.a_id, C.b_id, C.p, C.logp_a, C.logp_b,
                                       C.label_mass)
                                .where(C.run_id == run_id).order_by(C.id)).all()
            if not rows:
                return ComparisonTable.empty()
            cols = list(zip(*rows))
            del rows
            ctx, a, b = (np.fromiter(c, dtype=np.int64, count=len(c)) for c in cols[:3])
            num = [np.array(c, dtype=np.float64) for c in cols[3:]]
        return ComparisonTable(keys.context_keys(ctx), keys.candidate_keys(a),
                               keys.candidate_keys(b), *num)

    def comparisons_frame(self, run_id: int) -> pd.DataFrame:
        """All comparisons of a run with latency, prompt hash and time (``COMPARISON_COLUMNS``)."""
        with self._read() as conn, _gc_paused():
            self._run_dataset_id(conn, run_id)
            rows = conn.execute(self._comparison_select(run_id, raw_time=True)).all()
        cols = list(zip(*rows)) if rows else [()] * len(COMPARISON_COLUMNS)
        data: dict[str, Any] = {}
        for name, values in zip(COMPARISON_COLUMNS, cols):
            if name in ("context_id", "a_id", "b_id", "prompt_hash"):
                data[name] = pd.Series(values, dtype="str")
            elif name == "created_at":
                data[name] = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
            else:
                data[name] = np.array(values, dtype=np.float64)
        return pd.DataFrame(data, columns=list(COMPARISON_COLUMNS))

    def get_comparison(self, run_id: int, context_id: str, a_id: str,
                       b_id: str) -> dict | None:
        """One stored comparison as a dict of ``COMPARISON_COLUMNS``, or None when not stored."""
        stmt = self._comparison_select(run_id)
        A, B = stmt.selected_columns[1], stmt.selected_columns[2]
        with self._read() as conn:
            row = conn.execute(stmt.where(ContextRow.key == context_id, A == a_id,
                                          B == b_id)).first()
        if row is None:
            return None
        d = dict(zip(COMPARISON_COLUMNS, row))
        for k in ("p", "logp_a", "logp_b", "label_mass", "latency_ms"):
            d[k] = _py_float(d[k])
        return d

    # ---------------------------------------------------------------- human judgements

    def add_human_judgements(self, dataset_id: int, rows: list[dict]) -> int:
        """Store people's A/B judgements in one transaction; returns how many were stored.

        Each row has ``context_id``, ``candidate_left`` and ``candidate_right`` (or
        ``candidate_a``/``candidate_b``), ``winner`` (an ``Outcome`` or its value: A = left
        better, B, tie, skip) and optionally ``annotator``, ``aspect``, ``seconds``,
        ``shown_order`` ("ab"/"ba"), ``source`` ("app" by default, "import"), ``created_at``.

        Raises
        ------
        InputError
            Listing every bad row (unknown key, id or winner); nothing is stored then.
        RunNotFoundError
            When the dataset does not exist.
        """
        if not rows:
            return 0
        now = utcnow()
        outcomes = {o.value.lower(): o.value for o in Outcome}
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            keys = self._dataset_keys(conn, int(dataset_id))
            values, problems = [], []
            for i, r in enumerate(rows):
                row_problems = []
                extra = set(r) - HUMAN_JUDGEMENT_KEYS
                left = r.get("candidate_left", r.get("candidate_a"))
                right = r.get("candidate_right", r.get("candidate_b"))
                ctx_key = str(r.get("context_id"))
                winner = r.get("winner")
                winner = winner.value if isinstance(winner, Outcome) else winner
                winner = outcomes.get(str(winner).strip().lower()) if winner is not None else None
                ctx = keys.contexts.get(ctx_key)
                lid = keys.candidates.get((ctx_key, str(left)))
                rid = keys.candidates.get((ctx_key, str(right)))
                shown = r.get("shown_order")
                if extra:
                    row_problems.append(f"unknown key(s) {', '.join(sorted(extra))}")
                if ctx is None:
                    row_problems.append(f"context '{ctx_key}' is not in the dataset")
                elif lid is None or rid is None:
                    row_problems.append(f"candidate '{left if lid is None else right}' is not in "
                                        f"context '{ctx_key}'")
                elif lid == rid:
                    row_problems.append(f"a candidate cannot be compared with itself ('{left}')")
                if winner is None:
                    row_problems.append(f"winner {r.get('winner')!r} is not one of "
                                        f"{', '.join(o.value for o in Outcome)}")
                if shown is not None and shown not in SHOWN_ORDERS:
                    row_problems.append(f"shown_order {shown!r} is not 'ab', 'ba' or None")
                if row_problems:
                    problems.extend(f"row {i}: {m}" for m in row_problems)
                    continue
                values.append(dict(
                    dataset_id=int(dataset_id), context_id=ctx, left_id=lid, right_id=rid,
                    shown_order=shown, winner=winner, annotator=str(r.get("annotator") or ""),
                    aspect=str(r.get("aspect") or ""), seconds=_db_float(r.get("seconds")),
                    source=str(r.get("source") or "app"), created_at=r.get("created_at") or now))
            if problems:
                shown_problems = "\n  ".join(problems[:20])
                more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
                raise InputError(f"{len(problems)} problem(s) in human judgements, nothing was "
                                 f"stored:\n  {shown_problems}{more}")
            conn.execute(insert(HumanJudgementRow), values)
        return len(values)

    def human_judgements_frame(self, dataset_id: int, aspect: str | None = None) -> pd.DataFrame:
        """A dataset's human judgements (``HUMAN_COLUMNS``), in the order stored."""
        L, R = aliased(CandidateRow), aliased(CandidateRow)
        H = HumanJudgementRow
        stmt = (select(H.id, ContextRow.key, L.key, R.key, H.shown_order, H.winner, H.annotator,
                       H.aspect, H.seconds, H.source, H.created_at)
                .select_from(H).join(ContextRow, ContextRow.id == H.context_id)
                .join(L, L.id == H.left_id).join(R, R.id == H.right_id)
                .where(H.dataset_id == dataset_id).order_by(H.id))
        if aspect is not None:
            stmt = stmt.where(H.aspect == aspect)
        with self._read() as conn:
            rows = conn.execute(stmt).all()
        df = pd.DataFrame([tuple(r) for r in rows], columns=list(HUMAN_COLUMNS))
        df["seconds"] = df["seconds"].astype(np.float64)
        df["created_at"] = pd.to_datetime(df["created_at"], utc=True)
        return df

    def delete_human_judgement(self, judgement_id: int, annotator: str) -> bool:
        """Delete one human judgement (the annotate page's undo); returns whether a row went.

        Only a row written by ``annotator`` is deleted, so one person's undo can never remove
        another person's answer; a row already gone (undone from another tab) returns False.
        """
        H = HumanJudgementRow
        with self._write() as conn:
            gone = conn.execute(delete(H).where(H.id == int(judgement_id),
                                                H.annotator == str(annotator)))
        return gone.rowcount == 1

    def get_guidelines(self, dataset_id: int) -> str:
        """The dataset's annotation guidelines ("" when none were written)."""
        with self._read() as conn:
            found = conn.execute(select(GuidelineRow.text).where(
                GuidelineRow.dataset_id == dataset_id)).scalar_one_or_none()
        return found or ""

    def set_guidelines(self, dataset_id: int, text: str) -> None:
        """Replace the dataset's annotation guidelines.

        Raises
        ------
        RunNotFoundError
            When the dataset does not exist.
        """
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            conn.execute(self._upsert(GuidelineRow.__table__, ["dataset_id"], ["text", "updated_at"]),
                         [dict(dataset_id=int(dataset_id), text=text, updated_at=utcnow())])

    # ---------------------------------------------------------------- issue 6: adaptive selection
    # and prompt scoring (candidate_scores, migration 0002). Schema classes and engine types are
    # imported inside the methods to keep this section self-contained.

    def stored_probabilities(self, run_id: int) -> dict[PairKey, float]:
        """p of every ordered pair stored for the run (NaN for NULL): what adaptive selection
        conditions on. The optional sink method of ``compassess_core.efficient``."""
        t = self.comparison_table(run_id)
        return {PairKey(c, a, b): float(p)
                for c, a, b, p in zip(t.context_ids, t.a_ids, t.b_ids, t.p)}

    def stored_scores(self, run_id: int) -> set[tuple[str, str]]:
        """(context_id, candidate_id) already scored by a scoring run (``ScoreSink``)."""
        from .schema import CandidateScoreRow as S
        stmt = (select(ContextRow.key, CandidateRow.key).select_from(S)
                .join(ContextRow, ContextRow.id == S.context_id)
                .join(CandidateRow, CandidateRow.id == S.candidate_id)
                .where(S.run_id == run_id))
        with self._read() as conn:
            self._run_dataset_id(conn, run_id)
            return {(c, k) for c, k in conn.execute(stmt)}

    def cached_scores(self, model_key: str, prompt_hashes: Iterable[str]) -> dict:
        """Scores any run stored for the same scorer model key and rendered prompt (hash -> judgement)."""
        from compassess_core.scoring import ScoreJudgement

        from .schema import CandidateScoreRow as S
        hashes = list(dict.fromkeys(prompt_hashes))
        if not model_key or not hashes:
            return {}
        base = (select(S.prompt_hash, S.score_argmax, S.score_expected, S.probabilities,
                       S.label_mass, S.latency_ms).select_from(S)
                .join(RunRow, RunRow.id == S.run_id)
                .where(RunRow.model_key == model_key).order_by(S.id))
        out: dict = {}
        with self._read() as conn:
            for chunk in _chunks(hashes):
                for h, arg, exp, probs, mass, lat in conn.execute(
                        base.where(S.prompt_hash.in_(list(chunk)))):
                    if h not in out:
                        out[h] = ScoreJudgement(_py_float(arg), _py_float(exp),
                                                tuple(_py_float(x) for x in probs),
                                                _py_float(mass), _py_float(lat))
        return out

    def add_scores(self, run_id: int, results: list) -> None:
        """Store ``ScoreResult``s in one transaction; a (run, candidate) already stored is ignored.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        InputError
            When a result names a context or candidate not in the run's dataset (nothing stored).
        """
        from .schema import CandidateScoreRow as S
        if not results:
            return
        with self._write() as conn:
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows, unknown = [], []
            for r in results:
                ctx = keys.contexts.get(r.context_id)
                cand = keys.candidates.get((r.context_id, r.candidate_id))
                if ctx is None or cand is None:
                    unknown.append((r.context_id, r.candidate_id))
                    continue
                j = r.judgement
                rows.append(dict(run_id=run_id, context_id=ctx, candidate_id=cand,
                                 prompt_hash=r.prompt_hash, score_argmax=_db_float(j.score_argmax),
                                 score_expected=_db_float(j.score_expected),
                                 probabilities=[_db_float(x) for x in j.probabilities],
                                 label_mass=_db_float(j.label_mass),
                                 latency_ms=_db_float(j.latency_ms)))
            if unknown:
                raise InputError(f"{len(unknown)} score(s) for run {run_id} name a context or "
                                 f"candidate not in its dataset, e.g. {unknown[:5]}; nothing was stored")
            stmt = self._insert_ignore(S.__table__, ["run_id", "candidate_id"])
            conn.execute(stmt.values(created_at=func.current_timestamp()), rows)

    def score_table(self, run_id: int):
        """All stored scores of a scoring run as a ``compassess_core.scoring.ScoreTable``.

        Raises
        ------
        RunNotFoundError
            When the run does not exist.
        """
        from compassess_core.scoring import ScoreTable

        from .schema import CandidateScoreRow as S
        with self._read() as conn:
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows = conn.execute(select(S.context_id, S.candidate_id, S.score_argmax,
                                       S.score_expected, S.label_mass, S.probabilities)
                                .where(S.run_id == run_id).order_by(S.id)).all()
        if not rows:
            e = np.array([], dtype=object)
            f = np.array([], dtype=np.float64)
            return ScoreTable(e, e, f, f, f, np.empty((0, 10)))
        ctx = np.array([r[0] for r in rows], dtype=np.int64)
        cand = np.array([r[1] for r in rows], dtype=np.int64)
        num = [np.array([_py_float(r[k]) for r in rows]) for k in (2, 3, 4)]
        probs = np.array([[_py_float(x) for x in r[5]] for r in rows], dtype=np.float64)
        return ScoreTable(keys.context_keys(ctx), keys.candidate_keys(cand), *num, probs)

    # ---------------------------------------------------------------- issue 7: absolute scores

    def save_references(self, dataset_id: int, aspect: str, reference_set: str,
                        references: list) -> int:
        """Store (or replace) reference texts of a dataset's contexts for an aspect and set.

        ``references`` are ``compassess_core.absolute.Reference``; a (context, aspect, set, level)
        already stored gets the new text, source and generation record. Returns the rows written.

        Raises
        ------
        InputError
            A reference names a context that is not in the dataset (nothing is stored then).
        RunNotFoundError
            The dataset does not exist.
        """
        from .schema import SyntheticReferenceRow as R
        if not references:
            return 0
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            keys = self._dataset_keys(conn, int(dataset_id))
            unknown = sorted({r.context_id for r in references if r.context_id not in keys.contexts})
            if unknown:
                raise InputError(f"{len(unknown)} reference context(s) are not in the dataset, e.g. "
                                 f"{', '.join(repr(u) for u in unknown[:5])}; nothing was stored")
            now = utcnow()
            rows = [dict(context_id=keys.contexts[r.context_id], aspect=aspect,
                         reference_set=reference_set, level=int(r.level), text=r.text,
                         source=r.source, generation=dict(r.generation), updated_at=now)
                    for r in references]
            conn.execute(self._upsert(R.__table__, ["context_id", "aspect", "reference_set", "level"],
                                      ["text", "source", "generation", "updated_at"]), rows)
        return len(rows)

    def load_references(self, dataset_id: int, aspect: str, reference_set: str) -> list:
        """The stored references of a dataset for an aspect and set, by context key and level."""
        from compassess_core.absolute import Reference

        from .schema import SyntheticReferenceRow as R
        with self._read() as conn:
            rows = conn.execute(
                select(ContextRow.key, R.level, R.text, R.source, R.generation)
                .join(ContextRow, ContextRow.id == R.context_id)
                .where(ContextRow.dataset_id == int(dataset_id), R.aspect == aspect,
                       R.reference_set == reference_set)
                .order_by(ContextRow.position, R.level)).all()
        return [Reference(c, int(lv), t, s, dict(g or {})) for c, lv, t, s, g in rows]

    def reference_sets(self, dataset_id: int) -> list[tuple[str, str, int]]:
        """``(aspect, reference_set, n_texts)`` of every stored reference set of a dataset."""
        from .schema import SyntheticReferenceRow as R
        with self._read() as conn:
            rows = conn.execute(
                select(R.aspect, R.reference_set, func.count())
                .join(ContextRow, ContextRow.id == R.context_id)
                .where(ContextRow.dataset_id == int(dataset_id))
                .group_by(R.aspect, R.reference_set).order_by(R.aspect, R.reference_set)).all()
        return [(a, s, int(n)) for a, s, n in rows]

    def delete_references(self, dataset_id: int, aspect: str, reference_set: str,
                          context_id: str | None = None) -> int:
        """Delete a set's references (of one context when given), so a run writes them afresh."""
        from .schema import SyntheticReferenceRow as R
        with self._write() as conn:
            ctx = select(ContextRow.id).where(ContextRow.dataset_id == int(dataset_id))
            if context_id is not None:
                ctx = ctx.where(ContextRow.key == context_id)
            return conn.execute(delete(R).where(R.aspect == aspect, R.reference_set == reference_set,
                                                R.context_id.in_(ctx))).rowcount

    def stored_absolute(self, run_id: int) -> dict:
        """``AbsoluteKey`` -> prompt hash of every comparison stored for an absolute run."""
        from compassess_core.absolute import REFERENCE_FIRST, TARGET_FIRST, AbsoluteKey

        from .schema import AbsoluteComparisonRow as X
        with self._read() as conn, _gc_paused():
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows = conn.execute(select(X.context_id, X.candidate_id, X.level, X.target_first,
                                       X.prompt_hash).where(X.run_id == run_id)).all()
        if not rows:
            return {}
        ctx = keys.context_keys(np.array([r[0] for r in rows], dtype=np.int64))
        cand = keys.candidate_keys(np.array([r[1] for r in rows], dtype=np.int64))
        return {AbsoluteKey(c, k, int(r[2]), TARGET_FIRST if r[3] else REFERENCE_FIRST): r[4]
                for c, k, r in zip(ctx, cand, rows)}

    def cached_absolute(self, model_key: str, label_words: str, prompt_hashes) -> dict:
        """Absolute judgements any run stored for the same model key, label words and prompt."""
        from compassess_core.absolute import AbsoluteJudgement

        from .schema import AbsoluteComparisonRow as X
        hashes = list(dict.fromkeys(prompt_hashes))
        if not model_key or not hashes:
            return {}
        base = (select(X.prompt_hash, X.p_better, X.p_worse, X.p_similar, X.logp_better,
                       X.logp_worse, X.logp_similar, X.label_mass, X.latency_ms)
                .join(RunRow, RunRow.id == X.run_id)
                .where(RunRow.model_key == model_key, RunRow.label_words == label_words)
                .order_by(X.id))
        out: dict = {}
        with self._read() as conn:
            for chunk in _chunks(hashes):
                for h, *vals in conn.execute(base.where(X.prompt_hash.in_(list(chunk)))):
                    if h not in out:
                        out[h] = AbsoluteJudgement(*(_py_float(v) for v in vals))
        return out

    def add_absolute(self, run_id: int, results: list) -> None:
        """Store absolute comparisons in one transaction; one already stored for the same
        (run, candidate, level, order) is replaced (its reference was edited or regenerated).

        Raises
        ------
        InputError
            A result names a context or candidate not in the run's dataset (nothing is stored).
        """
        from compassess_core.absolute import TARGET_FIRST

        from .schema import AbsoluteComparisonRow as X
        if not results:
            return
        cols = ["context_id", "p_better", "p_worse", "p_similar", "logp_better", "logp_worse",
                "logp_similar", "label_mass", "latency_ms", "prompt_hash", "reference_hash",
                "created_at"]
        with self._write() as conn, _gc_paused():
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows, unknown = [], []
            now = utcnow()
            for r in results:
                k, j = r.key, r.judgement
                ctx = keys.contexts.get(k.context_id)
                cand = keys.candidates.get((k.context_id, k.candidate_id))
                if ctx is None or cand is None:
                    unknown.append((k.context_id, k.candidate_id))
                    continue
                rows.append(dict(run_id=run_id, context_id=ctx, candidate_id=cand, level=int(k.level),
                                 target_first=k.order == TARGET_FIRST,
                                 p_better=_db_float(j.p_better), p_worse=_db_float(j.p_worse),
                                 p_similar=_db_float(j.p_similar),
                                 logp_better=_db_float(j.logp_better),
                                 logp_worse=_db_float(j.logp_worse),
                                 logp_similar=_db_float(j.logp_similar),
                                 label_mass=_db_float(j.label_mass),
                                 latency_ms=_db_float(j.latency_ms), prompt_hash=r.prompt_hash,
                                 reference_hash=r.reference_hash, created_at=now))
            if unknown:
                raise InputError(f"{len(unknown)} absolute comparison(s) for run {run_id} name a "
                                 f"context or candidate not in its dataset, e.g. {unknown[:5]}; "
                                 "nothing was stored")
            conn.execute(self._upsert(X.__table__, ["run_id", "candidate_id", "level", "target_first"],
                                      cols), rows)

    def absolute_frame(self, run_id: int) -> pd.DataFrame:
        """All comparisons of an absolute run (``compassess_core.absolute.ABSOLUTE_COLUMNS``),
        NULL -> NaN, ``order`` as ``target-first``/``reference-first``, sorted by context,
        candidate, order and level."""
        from compassess_core.absolute import ABSOLUTE_COLUMNS, REFERENCE_FIRST, TARGET_FIRST

        from .schema import AbsoluteComparisonRow as X
        with self._read() as conn, _gc_paused():
            keys = self._dataset_keys(conn, self._run_dataset_id(conn, run_id))
            rows = conn.execute(select(X.context_id, X.candidate_id, X.level, X.target_first,
                                       X.p_better, X.p_worse, X.p_similar, X.logp_better,
                                       X.logp_worse, X.logp_similar, X.label_mass, X.latency_ms,
                                       X.prompt_hash, X.reference_hash, X.created_at)
                                .where(X.run_id == run_id).order_by(X.id)).all()
        if not rows:
            return pd.DataFrame({c: pd.Series(dtype=object if c in ("context_id", "candidate_id",
                                 "order", "prompt_hash", "reference_hash") else float)
                                 for c in ABSOLUTE_COLUMNS})
        cols = list(zip(*rows))
        data: dict[str, Any] = {
            "context_id": keys.context_keys(np.array(cols[0], dtype=np.int64)),
            "candidate_id": keys.candidate_keys(np.array(cols[1], dtype=np.int64)),
            "level": np.array(cols[2], dtype=np.int64),
            "order": np.where(np.array(cols[3], dtype=bool), TARGET_FIRST, REFERENCE_FIRST),
        }
        for name, values in zip(ABSOLUTE_COLUMNS[4:12], cols[4:12]):
            data[name] = np.array([_py_float(v) for v in values], dtype=np.float64)
        data["prompt_hash"], data["reference_hash"] = list(cols[12]), list(cols[13])
        data["created_at"] = pd.to_datetime(pd.Series(cols[14], dtype=object), utc=True)
        frame = pd.DataFrame(data, columns=list(ABSOLUTE_COLUMNS))
        return frame.sort_values(["context_id", "candidate_id", "order", "level"],
                                 kind="stable").reset_index(drop=True)
