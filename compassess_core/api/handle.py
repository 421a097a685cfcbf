"""What an object of the API (a run, a panel, a campaign, a tuning, a background job) holds to
reach its store: a :class:`StoreHandle`. ``store.Store`` is one; the objects are given it when
they are made and never import ``store`` (nor each other's modules for it), so the API package
has no import circle: ``store`` imports the objects' modules, never the reverse
(``tests/api/test_api_imports.py`` checks it).

This module imports nothing of the API: it is the bottom of the package.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StoreHandle(Protocol):
    """The part of ``api.Store`` that the API's objects use: the persistent store behind it
    (``backend``), its URL (for a worker process: it may hold a password, never print it),
    whether it is in memory (no other process can reach it), and the few verbs objects ask of
    it. Everything else an object needs it asks ``backend``."""

    backend: Any

    @property
    def url(self) -> str: ...

    @property
    def in_memory(self) -> bool: ...

    def get_run(self, name_or_id: str | int, *, expect_name: str | None = None) -> Any: ...

    def list_runs(self, dataset: str | int | None = None) -> list: ...

    def create_run(self, data: Any, settings: Any, *, name: str | None = None) -> Any: ...

    def delete_run(self, name_or_id: str | int, *, dry_run: bool = False,
                   expect_name: str | None = None) -> Any: ...

    def tuning(self, name_or_id: str | int) -> Any: ...

    def job(self, kind: str, target: Any, **params: Any) -> Any: ...

    def read_data(self, data: Any, **kw: Any) -> tuple: ...

    def estimate_time(self, data: Any, settings: Any) -> Any: ...

    def delete_panel(self, name: str | int, *, expect_name: str | None = None) -> Any: ...

    def report(self, runs: Any, **options: Any) -> Any: ...


__all__ = ["StoreHandle"]
