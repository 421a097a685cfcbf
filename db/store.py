"""The store: datasets, runs, results and human judgements in any SQLAlchemy database.

``Store`` is the only code in CompAssess that issues SQL. It is composed of parts, one module each:

- ``db.connection``: URLs, engines, transactions, migrations, the dataset id maps (``StoreBase``);
- ``db.datasets``: save, list and load datasets;
- ``db.runs``: runs (create, status, cancel, the judge's identity) and one stored comparison;
- ``db.manage``: delete (with everything that belongs to it) and rename a run or a dataset;
- ``db.results``: the one result sink of every run kind (``stored_results``, ``cached_results``,
  ``add_results``, ``read_results``) over the registry ``RESULT_TABLES``;
- ``db.labels``: human judgements and annotation guidelines;
- ``db.people``: people and their roles in a shared app;
- ``db.campaigns``: annotation campaigns (annotators, fixed pair lists, the answers given in them);
- ``db.panels``: panels of judges (their definition and member runs);
- ``db.scores``: the synthetic references of absolute runs;
- ``db.tuning``: tunings of the judge's instruction, named templates and the judge's explanations.

It hands the engine back its own types (``Dataset``, ``ComparisonTable``, result records), mapping
the file's string ids to integer keys on the way in and back on the way out. Callers import from
here; the names below are the store's public vocabulary.

This module and its parts must never compute rankings or statistics, and never import a UI.
"""

from __future__ import annotations

from .campaigns import (ADJUDICATION, CAMPAIGN_LABEL_COLUMNS, CampaignError, CampaignInfo,
                        CampaignStore)
from .connection import (MIGRATIONS_DIR, SQLITE_BUSY_TIMEOUT_S, SQLITE_FILE_SUFFIXES,
                         alembic_config, database_url, default_database_url)
from .datasets import DatasetInfo, DatasetStore
from .labels import HUMAN_COLUMNS, HUMAN_JUDGEMENT_KEYS, SHOWN_ORDERS, LabelStore
from .manage import ManageStore
from .panels import PanelInfo, PanelNotFoundError, PanelStore
from .people import PeopleStore, Person
from .results import RESULT_TABLES, ResultStore, ResultTable
from .runs import (COMPARISON_COLUMNS, SETTING_COLUMNS, TERMINAL_STATUSES, RunInfo, RunStore,
                   settings_differences)
from .schema import MAX_NAME_LENGTH
from .scores import ScoreStore
from .tuning import TemplateInfo, TuningInfo, TuningNotFoundError, TuningStore

__all__ = [
    "Store", "default_database_url", "database_url", "alembic_config", "RunInfo", "DatasetInfo",
    "COMPARISON_COLUMNS", "HUMAN_COLUMNS", "HUMAN_JUDGEMENT_KEYS", "SHOWN_ORDERS",
    "MAX_NAME_LENGTH", "TERMINAL_STATUSES", "SETTING_COLUMNS", "SQLITE_BUSY_TIMEOUT_S",
    "SQLITE_FILE_SUFFIXES", "MIGRATIONS_DIR", "RESULT_TABLES", "ResultTable",
    "settings_differences", "Person", "CampaignInfo", "CampaignError", "ADJUDICATION",
    "CAMPAIGN_LABEL_COLUMNS", "PanelInfo", "PanelNotFoundError", "TemplateInfo", "TuningInfo",
    "TuningNotFoundError",
]


class Store(DatasetStore, RunStore, ResultStore, LabelStore, ScoreStore, PeopleStore,
            ManageStore, CampaignStore, PanelStore, TuningStore):
    """Persistence of CompAssess in the database at ``url`` (default: ``default_database_url()``).

    Opening a store brings its schema to the newest migration. The store is safe to share between
    threads; every method runs in its own short transaction. A run loop of any kind writes
    through ``record_judge``, ``stored_results``, ``cached_results``, ``add_results``,
    ``set_run_status`` and ``cancel_requested``.

    Raises
    ------
    InputError
        When the URL cannot be opened, the database is neither SQLite nor PostgreSQL, or it was
        written by a newer CompAssess (unknown schema revision).
    """

    def __enter__(self) -> "Store":
        return self
