"""Persistence of CompAssess: SQLAlchemy 2.0 schema (``db.schema``), alembic migrations
(``db/migrations``) and ``db.store.Store``, the only code that issues SQL.

Nothing here computes rankings or statistics; import ``db.store`` explicitly (this package
imports nothing, so the engine's lightweight imports stay light).
"""
