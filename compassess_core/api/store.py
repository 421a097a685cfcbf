"""A store through the API (:class:`Store`, :func:`open_store`): datasets, runs, labels,
people, reference texts, campaigns, panels and the leaderboard of judges. Every verb the CLI's
writing commands and the app's pages use. Wiring: it delegates to the engine and reaches the
store only through ``sink.open_store`` (the ``compassess.stores`` entry point)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import __version__
from ..runs import absolute
from ..people import access, annotation
from ..stats import analysis
from ..data import export
from ..data.candidates import Source, content_hash, load_candidates
from ..errors import CompAssessError, InputError, ObjectChanged
from ..data.labels import (DEFAULT_ANNOTATOR, annotator_counts, attribute, load_human_labels,
                      store_rows)
from ..stats.leaderboard import DEFAULT_METHOD
from ..limits import check_name
from ..runs.options import (AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions,
                       for_aspects)
from ..report.audit import EXAMPLES, RunsCompared, render_report
from ..runs.run_kinds import build_settings, kind_of
from ..runs.run_loop import worker_state
from ..runs.settings import (NON_RESULT_KEYS, GenerationOptions, ReferenceOptions, RunSettings,
                        run_names)
from ..runs.sink import open_store as _open_backend
from ..judges.speed import TimeEstimate, estimate_time, shared_work
from ..people.annotation import ShownPair
from ..types import Dataset
from ..runs import executor
from ..runs.executor import Reporter
from .progress import _reporter
from .jobs import Job
from .run import Run
from .planning import Planning
from .settings import _check_at_least, _model_options, _run_options, _score_options
from .tunings import Tunings
from .uploads import Uploads
from .verdicts import ExportFile, Verdicts
from .campaign import Campaigns
from .judges_board import JudgesBoard
from .panel import Panels
from .records import (_DELETED_FIELDS, Deleted, LabelsImported,  # noqa: F401
                      check_answer_on_screen, check_shown_name)

#: What ``open_store`` takes for a throwaway in-memory store.
_MEMORY = (":memory:", "sqlite://")


def _report_time(given: datetime | None) -> datetime:
    """The date an audit report states: ``given``, else ``$SOURCE_DATE_EPOCH`` (seconds since
    1970, the reproducible-builds convention) when set, else now; in UTC."""
    if given is not None:
        return given if given.tzinfo else given.replace(tzinfo=timezone.utc)
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise InputError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, not "
                             f"'{epoch}'") from None
    return datetime.now(timezone.utc).replace(microsecond=0)


def open_store(url: str | os.PathLike | None = None) -> "Store":
    """Open (creating and migrating it when needed) the store at ``url``.

    Parameters
    ----------
    url
        ``None``: ``$COMPASSESS_DATABASE_URL``, else the SQLite file in ``$COMPASSESS_HOME``
        (the app's and the CLI's default store); a file path ending in ``.db``, ``.sqlite`` or
        ``.sqlite3``; any SQLAlchemy URL (``postgresql+psycopg://...``); or ``":memory:"`` for a
        throwaway in-memory store (gone when the process ends; no worker process can use it).

    Raises
    ------
    InputError
        A URL that cannot be opened, or a database written by a newer CompAssess.
    """
    if url is not None:
        url = os.fspath(url)
        if url.strip() in _MEMORY:
            url = "sqlite://"
    return Store(_open_backend(url))



class Store(Uploads, Planning, Campaigns, Panels, JudgesBoard, Tunings):
    """A CompAssess store: datasets, runs and their results, human labels.

    Open one with :func:`open_store`. ``backend`` is the persistent store behind it (the
    ``compassess.stores`` entry point, ``db.store.Store``), for what this API does not cover.
    Checking files before storing them is :class:`~compassess_core.api.uploads.Uploads`'s,
    planning a run and the judges on this machine :class:`~compassess_core.api.planning.Planning`'s.
    """

    def __init__(self, backend) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"compassess_core.Store({self.backend!r})"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The store's database URL (it may hold a password: do not print it)."""
        return self.backend.url

    @property
    def in_memory(self) -> bool:
        """True for a throwaway in-memory store (``open_store(":memory:")``)."""
        url = self.url
        return url.rstrip("/") in ("sqlite:", "sqlite:///:memory:") or "mode=memory" in url

    # ---------------------------------------------------------------------------- datasets

    def datasets(self) -> pd.DataFrame:
        """One row per stored dataset: id, name, contexts, candidates, score_columns, source,
        created_at (``compassess datasets``)."""
        rows = [dict(id=d.id, name=d.name, contexts=d.n_contexts, candidates=d.n_candidates,
                     score_columns=", ".join(d.score_columns), source=d.source,
                     created_at=d.created_at) for d in self.backend.list_datasets()]
        return pd.DataFrame(rows, columns=["id", "name", "contexts", "candidates",
                                           "score_columns", "source", "created_at"])

    def dataset(self, name_or_id: str | int) -> Dataset:
        """A stored dataset (contexts, candidates, reference scores).

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``).
        """
        return self.backend.load_dataset(name_or_id)

    def add_dataset(self, source: Source | Dataset, *, name: str | None = None,
                    column_map: Mapping[str, str] | None = None,
                    score_columns: Sequence[str] | None = None) -> Dataset:
        """Validate candidates (a file, its bytes or a DataFrame, as :func:`load_candidates`)
        and store them; returns the dataset as stored.

        Storing is idempotent: the same content is stored once, under the name it was first
        stored with (the returned dataset carries that name).

        Raises
        ------
        ValidationError
            Every problem of the input, each with its row and column; nothing is stored.
        InputError
            A different dataset already has this name.
        """
        dataset = (source if isinstance(source, Dataset)
                   else load_candidates(source, name=name, column_map=column_map,
                                        score_columns=score_columns))
        return self.backend.load_dataset(self.backend.save_dataset(dataset))

    def read_data(self, data: Source | Dataset | int, *,
                  column_map: Mapping[str, str] | None = None) -> tuple[Dataset, int | None]:
        """What a run's ``data`` names: a :class:`Dataset`, a stored dataset (name or id), or
        candidates to validate (a file path, bytes, a file object, a DataFrame; ``column_map``
        as :func:`load_candidates` takes it), with the stored dataset's id (None for data not
        stored yet: a run stores it when it starts).

        Raises
        ------
        ValidationError
            Candidates with problems (every one, with row and column).
        InputError
            A string that is neither an existing file nor a stored dataset's name, or a
            ``column_map`` for data that is not a file (a stored dataset's columns are mapped).
        """
        if isinstance(data, (str, os.PathLike)) and Path(data).exists():
            return load_candidates(Path(data), column_map=column_map), None
        if isinstance(data, (Dataset, int, np.integer, str, os.PathLike)):
            dataset, dataset_id = self._known_data(data)
            if column_map:
                raise InputError(f"a column map applies to candidates read from a file, not to "
                                 f"{'a Dataset' if dataset_id is None else 'the stored dataset'} "
                                 f"'{dataset.name}' (its columns were mapped when it was read)")
            return dataset, dataset_id
        return load_candidates(data, column_map=column_map), None

    def _known_data(self, data: Dataset | int | str | os.PathLike) -> tuple[Dataset, int | None]:
        """A :class:`Dataset` as it is, or a stored dataset by id or name, with its id."""
        if isinstance(data, Dataset):
            return data, None
        if isinstance(data, (int, np.integer)):
            return self.backend.load_dataset(int(data)), int(data)
        try:
            dataset = self.backend.load_dataset(os.fspath(data))
        except CompAssessError:
            raise InputError(f"'{os.fspath(data)}' is neither a file nor a stored "
                             "dataset") from None
        return dataset, next(d.id for d in self.backend.list_datasets() if d.name == dataset.name)

    # -------------------------------------------------------------------------------- runs

    def runs(self) -> pd.DataFrame:
        """One row per stored run, oldest first: name, dataset, kind, status, state, done, total,
        unit, n_comparisons, judge, created_at (``compassess runs``). ``state`` is
        :attr:`Run.state`: it tells a run whose worker died (``stale``) from a live one."""
        rows = [dict(name=r.name, dataset=r.dataset_name, kind=kind_of(r.settings).name,
                     status=r.status, state=worker_state(r), done=r.done, total=r.total,
                     unit=kind_of(r.settings).unit, n_comparisons=r.n_comparisons,
                     judge=r.judge_key, created_at=r.created_at)
                for r in self.backend.list_runs()]
        return pd.DataFrame(rows, columns=["name", "dataset", "kind", "status", "state", "done",
                                           "total", "unit", "n_comparisons", "judge", "created_at"])

    def get_run(self, name_or_id: str | int, *, expect_name: str | None = None) -> "Run":
        """A stored run by name or id; ``expect_name``: the name it was shown under (a page
        acting on what it shows), refused when the run is now called otherwise.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``).
        ObjectChanged
            The run is not named ``expect_name`` (renamed since).
        """
        info = self.backend.get_run(name_or_id)
        check_shown_name("run", info.id, info.name, expect_name)
        return Run(self, info)

    def estimate_time(self, data: Source | Dataset | int,
                      settings: RunSettings | Sequence[RunSettings]) -> TimeEstimate:
        """How long judging a run of ``settings`` on ``data`` takes on this machine (the judge's
        loading not included): the size of its prompts in tokens at the model's median prompt
        tokens per second over its earlier runs here that are not running any more
        (``speed.estimate_time``; rough defaults,
        which ``TimeEstimate.measured`` and ``sentence()`` say, when none measured it). What the
        Run page's plan and ``compassess run`` state before judging. Several settings (the
        aspects of one pass): the runs judged together, what they share counted once
        (``speed.shared_work``)."""
        dataset = data if isinstance(data, Dataset) else self.read_data(data)[0]
        # A run still judging has no rate of its own yet worth a median: finished runs only.
        finished = [r for r in self.backend.list_runs() if r.status != "running"]
        many = [settings] if isinstance(settings, RunSettings) else list(settings)
        work = shared_work([kind_of(s).prompt_work(dataset, s) for s in many])
        return estimate_time(work, finished, many[0].model, many[0].device)

    def create_run(self, data: Source | Dataset | int, settings: RunSettings, *,
                   name: str | None = None) -> "Run":
        """Store ``data`` (when it is not stored yet) and a run of ``settings`` on it, without
        executing it: :meth:`Run.execute` executes it here, :meth:`Run.start_worker` in a
        process of its own. ``name`` defaults to one derived from the settings; an existing run
        of the same name, dataset and settings is returned (to be resumed).

        Raises
        ------
        InputError
            A run of that name exists with other settings or another dataset (the message
            lists the differences), or the name is empty or too long.
        """
        if isinstance(data, (int, np.integer)):
            return self._create_run(None, int(data), settings, name)
        return self._create_run(*self.read_data(data), settings, name)

    def create_runs(self, data: Source | Dataset | int, settings: Sequence[RunSettings], *,
                    name: str | None = None) -> list["Run"]:
        """:meth:`create_run` for runs to be judged together in one pass (the same data and
        judge, e.g. one settings per aspect): named ``name-ASPECT`` each (default: each one's
        own default name). :meth:`execute` or :meth:`start_worker` then judges them together.

        Raises
        ------
        InputError
            As :meth:`create_run`.
        """
        if isinstance(data, (int, np.integer)):
            dataset, dataset_id = None, int(data)
        else:
            dataset, dataset_id = self.read_data(data)
            if dataset_id is None:
                dataset_id = self.backend.save_dataset(dataset)
        return [self._create_run(dataset, dataset_id, s, n)
                for s, n in zip(settings, run_names(name, settings))]

    def execute(self, runs: Sequence["Run | str | int"], *, judge=None,
                progress: bool | Reporter = True, chunk_size: int | None = None) -> list["Run"]:
        """Execute (or resume) stored runs together in this process: one judge, loaded once
        (unless given), judges them in one pass, the prompts of the same pair sharing their
        context and candidates in its prefix cache (``runs.executor.execute_runs``); each run is
        stored, resumable and read back on its own. Returns the runs, refreshed. The run job's
        own execution (``store.job("run", runs).execute()``), as the worker process's.

        Raises
        ------
        RunInterrupted, RunCancelled, InputError
            As :meth:`Run.execute` (a cancel of any of the runs stops them all; each resumes);
            runs that need different judges are an ``InputError``.
        """
        _check_at_least("chunk_size", chunk_size, 1)
        handles = [r if isinstance(r, Run) else self.get_run(r) for r in runs]
        self.job("run", handles, chunk_size=chunk_size).execute(judge=judge, progress=progress)
        return [r.refresh() for r in handles]

    def start_worker(self, runs: Sequence["Run | str | int"],
                     log_path: str | os.PathLike | None = None, *,
                     cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Execute stored runs together in one worker process of its own (as the app does for
        several aspects): :meth:`execute` there, writing to ``log_path`` (default: the first
        run's :attr:`Run.worker_log_path`): ``store.job("run", runs).start()``. A cancel of any
        of the runs stops the worker; each run resumes on its own or together again.

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach; a run with a live worker, or
            whose judge is served by a server that is not configured here (nothing starts).
        """
        return self.job("run", runs).start(log_path, cwd=cwd)

    def job(self, kind: str, target, **params) -> Job:
        """A background job of ``kind`` (``run``, ``tuning``, ``explanation``: the registry
        ``api.jobs.JOB_KINDS``) on ``target`` (runs, a tuning, a run: objects, names or ids),
        with the kind's ``params`` (an explanation's ``context``, ``first``, ``second``,
        ``max_tokens``): the one way the app, the CLI and a notebook start (:meth:`Job.start`,
        a worker process), execute (:meth:`Job.execute`, here), watch (:meth:`Job.status`,
        :meth:`Job.log`), cancel (:meth:`Job.cancel`) and resume any of them.

        Raises
        ------
        InputError
            An unknown kind, a target not stored, a parameter the kind does not take or
            a missing one.
        """
        return Job(self, kind, target, params)

    def _create_run(self, dataset: Dataset | None, dataset_id: int | None, settings: RunSettings,
                    name: str | None) -> "Run":
        if dataset_id is None:
            dataset_id = self.backend.save_dataset(dataset)
        # The same content may be stored under another name: the run names the stored one.
        stored = next(d.name for d in self.backend.list_datasets() if d.id == dataset_id)
        settings = settings.with_changes(dataset=stored)
        name = settings.default_run_name() if name is None else name
        return Run(self, self.backend.get_run(
            self.backend.create_run(name, dataset_id, settings.to_dict())),
            dataset=dataset if dataset is not None and dataset.name == stored else None)

    def start(self, data: Source | Dataset | int,
              settings: RunSettings | Sequence[RunSettings], *,
              name: str | None = None, judge=None, anchors: Source | None = None,
              progress: bool | Reporter = True, chunk_size: int | None = None,
              threads: int | None = None) -> "Run | list[Run]":
        """Execute a run of ``settings`` on ``data`` in this process and return it, finished:
        what :meth:`run` and :meth:`score` do once their settings are built. A sequence of
        settings (one per aspect) makes one run each, judged together in one pass by one judge
        (:meth:`execute`), named ``name-ASPECT``; the list of runs is returned.

        The judge is loaded (unless given) and every prompt checked against its context window
        before anything is stored (the kind's advice, such as a budget too small to rank every
        candidate, is reported first, as warnings); then the dataset, the anchor texts of an
        absolute run with
        ``anchors`` (a CSV of ``context_id, level, text``) and the run are stored, and the run
        executes, storing every micro-batch the moment it is computed. A run of the same name
        and settings resumes: nothing stored is computed again. ``chunk_size``: prompts per
        judge call; ``threads``: CPU threads of a local model (process-wide; 0 = all cores).

        Raises
        ------
        RunInterrupted
            Ctrl-C or a notebook's stop button (a ``KeyboardInterrupt``): the run stops after
            the micro-batch in flight (a second press: at once) and is marked cancelled;
            everything computed is stored, and the same call resumes it.
        RunCancelled
            The run was cancelled in the store (e.g. from the app).
        ValidationError, InputError
            Bad data, settings, model, or prompts too long for the model (nothing stored).
        """
        model_options = ModelOptions(chunk_size=chunk_size, threads=threads)  # checks them
        if name is not None:  # before a judge loads (creating the run checks it again)
            check_name(name, "run name")
        return self._start(*self.read_data(data), settings, name=name, judge=judge,
                           anchors=anchors, progress=progress, model_options=model_options)

    def _start(self, dataset: Dataset, dataset_id: int | None,
               settings: RunSettings | Sequence[RunSettings], *,
               name: str | None, judge, anchors: Source | None, progress: bool | Reporter,
               model_options: ModelOptions) -> "Run | list[Run]":
        """Execute a run of checked ``settings`` (several: together); of ``model_options`` only
        what is not in the settings applies here (``chunk_size``, ``threads``)."""
        if not isinstance(settings, RunSettings):
            return self._start_together(dataset, dataset_id, list(settings), name=name,
                                        judge=judge, anchors=anchors, progress=progress,
                                        model_options=model_options)
        kind = kind_of(settings)
        kind.check(settings)
        references = None
        if anchors is not None:
            if isinstance(anchors, pd.DataFrame):
                anchors = anchors.to_csv(index=False).encode()
            references = absolute.parse_anchor_file(
                anchors, n_levels=settings.reference_options.n_levels,
                context_ids=[c.context_id for c in dataset.contexts])
        reporter = _reporter(progress, kind)
        for line in kind.advice(dataset, settings):
            reporter.message(f"warning: {line}")
        done = None if references else self._completed_run(dataset, dataset_id, settings, name)
        if done is not None:  # nothing left: said, and the judge not loaded
            return done.execute(progress=reporter)
        if model_options.threads:  # process-wide: the judge reads it when it loads
            os.environ["COMPASSESS_THREADS"] = str(model_options.threads)
        judge = judge if judge is not None else executor.load_run_judge(settings)
        kind.preflight(dataset, settings, judge)
        run = self._create_run(dataset, dataset_id, settings, name)
        if references:
            n = self.backend.save_references(run.info.dataset_id, settings.aspect,
                                             absolute.UPLOADED, references)
            where = f" from {os.fspath(anchors)}" if isinstance(anchors, (str, os.PathLike)) else ""
            reporter.message(f"stored {n} anchor text(s){where}")
        reporter.message(f"{kind.label} run '{run.name}' on dataset '{run.info.dataset_name}': "
                         f"{kind.planned_total(dataset, settings):,} {kind.unit}, "
                         f"{self.estimate_time(dataset, settings).sentence()}")
        return run.execute(judge=judge, progress=reporter, chunk_size=model_options.chunk_size)

    def _completed_run(self, dataset: Dataset, dataset_id: int | None, settings: RunSettings,
                       name: str | None) -> "Run | None":
        """The stored run that starting ``settings`` on ``dataset`` as ``name`` would resume,
        when it is completed (nothing is left to compute, so no judge need load); else None.
        Read only: nothing is stored."""
        stored = self.backend.list_datasets()
        if dataset_id is None:  # a file: stored already when a dataset has the same content
            chash = dataset.content_hash or content_hash(dataset.contexts)
            dataset_id = next((d.id for d in stored if d.content_hash == chash), None)
            if dataset_id is None:
                return None
        settings = settings.with_changes(
            dataset=next(d.name for d in stored if d.id == dataset_id))
        name = settings.default_run_name() if name is None else name
        try:
            info = self.backend.get_run(name)
        except CompAssessError:
            return None
        if (info.name != name or info.dataset_id != dataset_id or info.status != "completed"
                or not kind_of(settings).completed_is_final):
            return None
        ours = json.loads(json.dumps(settings.to_dict(), sort_keys=True))
        if ({k: v for k, v in ours.items() if k not in NON_RESULT_KEYS}
                != {k: v for k, v in info.settings.items() if k not in NON_RESULT_KEYS}):
            return None
        return Run(self, info)

    def _start_together(self, dataset: Dataset, dataset_id: int | None,
                        settings: list[RunSettings], *, name: str | None, judge,
                        anchors: Source | None, progress: bool | Reporter,
                        model_options: ModelOptions) -> list["Run"]:
        """:meth:`_start` of several settings: one judge loaded and every prompt of every run
        checked against it before anything is stored, then the runs judged together."""
        if len(settings) == 1:
            return [self._start(dataset, dataset_id, settings[0], name=name, judge=judge,
                                anchors=anchors, progress=progress, model_options=model_options)]
        if anchors is not None:
            raise InputError("anchor texts belong to one aspect: score several aspects with "
                             "anchors one run at a time")
        names = run_names(name, settings)
        executor.check_one_judge(settings, names)
        kind = kind_of(settings[0])
        reporter = _reporter(progress, kind)
        for s in settings:
            kind_of(s).check(s)
            for line in dict.fromkeys(kind_of(s).advice(dataset, s)):
                reporter.message(f"warning: {s.aspect}: {line}")
        done = [self._completed_run(dataset, dataset_id, s, n) for s, n in zip(settings, names)]
        if all(r is not None for r in done):  # nothing left: said, and the judge not loaded
            return self.execute(done, progress=reporter)
        if model_options.threads:  # process-wide: the judge reads it when it loads
            os.environ["COMPASSESS_THREADS"] = str(model_options.threads)
        judge = judge if judge is not None else executor.load_run_judge(settings[0].with_changes(
            batch_size=executor.largest_batch_size(settings)))
        for s in settings:
            kind_of(s).preflight(dataset, s, judge)
        if dataset_id is None:
            dataset_id = self.backend.save_dataset(dataset)
        runs = [self._create_run(dataset, dataset_id, s, n) for s, n in zip(settings, names)]
        reporter.message(f"{len(runs)} runs of {kind.label} on dataset "
                         f"'{runs[0].info.dataset_name}', judged together: " + ", ".join(
                             f"'{r.name}' ({kind_of(s).planned_total(dataset, s):,} "
                             f"{kind_of(s).unit})" for r, s in zip(runs, settings))
                         + f"; {self.estimate_time(dataset, settings).sentence()}")
        return self.execute(runs, judge=judge, progress=reporter,
                            chunk_size=model_options.chunk_size)

    def run(self, data: Source | Dataset | int, *, aspect: str | Sequence[str] | None = None,
            mode: str = "comparative", template: str | None = None, task: str = "auto",
            strategy: str = RunSettings.strategy, budget: int | None = None,
            model: str | None = None, contexts: int | None = None,
            seed: int = RunSettings.seed, batch_size: int | None = RunSettings.batch_size,
            device: str = RunSettings.device, dtype: str = RunSettings.dtype,
            truncate_context: bool = False, name: str | None = None, judge=None,
            progress: bool | Reporter = True, chunk_size: int | None = None,
            threads: int | None = None,
            options: ComparativeOptions | ScoringOptions | None = None,
            model_options: ModelOptions | None = None) -> "Run":
        """Judge ``data`` with an LLM and store every judgement: ``compassess run``.

        ``data`` is a candidate file, its bytes, a DataFrame (validated as an upload is), a
        :class:`Dataset`, or the name or id of a stored dataset. The options are
        :func:`run_settings`'s (keywords, or ``options`` and ``model_options`` objects);
        ``name`` names the run (default: derived from the settings; an existing name with the
        same settings resumes it). ``judge``: a judge already loaded
        (``compassess_core.judges.load_judge``), to reuse one model across runs.
        ``progress``: a progress bar (True), nothing (False) or your own :class:`Reporter`.
        ``chunk_size``: prompts per judge call (the scope of its prefix cache). ``threads``: CPU
        threads of a local model (process-wide; 0 = all cores).

        ``aspect`` a list of aspects (``["coherence", "fluency", ...]``): one run per aspect,
        named ``name-ASPECT`` (default: each its own default name), judged together in one pass
        by one judge: the prompts of the same pair share the context and both candidates in the
        judge's prefix cache, only the question differs. Each run is stored, resumable and read
        back as if run alone (p equal to a separate run's up to fp32 rounding), and the list of
        runs is returned.

        Returns the finished :class:`Run` (a list for a list of aspects); see :meth:`start`
        for what is raised.
        """
        if mode == "comparative":  # a named template of the store (a tuning's pick)
            template = self.resolve_template(template)
            if isinstance(options, ComparativeOptions) and isinstance(options.template, str):
                options = dataclasses.replace(options,
                                              template=self.resolve_template(options.template))
        aspects = None if aspect is None or isinstance(aspect, str) else list(aspect)
        kind_options = _run_options(options, Store.run,
                                    aspect=aspects[0] if aspects else aspect, mode=mode,
                                    template=template, task=task, strategy=strategy,
                                    budget=budget, seed=seed)
        model_options = _model_options(
            model_options, Store.run, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, for_aspects(kind_options, aspects) if aspects is not None
                                else kind_options, model_options, name=name, judge=judge,
                                anchors=None, progress=progress)

    def _start_with(self, data, kind_options, model_options: ModelOptions, *, name, judge,
                    anchors, progress) -> "Run | list[Run]":
        """:meth:`start` on ``data`` with the settings its options build (``run``, ``score``;
        a list of options: one run each, judged together)."""
        dataset, dataset_id = self.read_data(data)

        def settings(options):
            return build_settings(dataset.name, options, model_options,
                                  text_columns=dataset.text_columns)
        built = ([settings(o) for o in kind_options] if isinstance(kind_options, list)
                 else settings(kind_options))
        return self._start(dataset, dataset_id, built, name=name, judge=judge, anchors=anchors,
                           progress=progress, model_options=model_options)

    # Repeats score_settings's keywords and run's tail on purpose: help() shows every option.
    def score(self, data: Source | Dataset | int, *, aspect: str | Sequence[str] | None = None,
              references: int = ReferenceOptions.n_levels, anchors: Source | None = None,
              task: str = "auto", variant: str = ReferenceOptions.variant,
              orders: str = ReferenceOptions.orders,
              max_new_tokens: int = GenerationOptions.max_new_tokens,
              sample: bool = GenerationOptions.sample,
              temperature: float = GenerationOptions.temperature, model: str | None = None,
              contexts: int | None = None, seed: int = RunSettings.seed,
              batch_size: int | None = RunSettings.batch_size, device: str = RunSettings.device,
              dtype: str = RunSettings.dtype, truncate_context: bool = False,
              name: str | None = None, judge=None, progress: bool | Reporter = True,
              chunk_size: int | None = None, threads: int | None = None,
              options: AbsoluteOptions | None = None,
              model_options: ModelOptions | None = None) -> "Run":
        """Absolute scores: every candidate compared with synthetic references of quality
        1..``references``: ``compassess score``.

        ``anchors``: your own reference texts (a CSV file or its bytes, or a DataFrame, with
        columns ``context_id, level, text``) instead of references the model writes. The other
        options are :func:`score_settings`'s and :meth:`run`'s (keywords, or ``options`` and
        ``model_options`` objects); a list of aspects makes one run each, judged together (as
        :meth:`run`). Returns the finished :class:`Run` (a list for a list of aspects); see
        :meth:`start` for what is raised.
        """
        aspects = None if aspect is None or isinstance(aspect, str) else list(aspect)
        kind_options = _score_options(
            options, Store.score, aspect=aspects[0] if aspects else aspect, references=references,
            anchors=anchors is not None, task=task, variant=variant, orders=orders,
            max_new_tokens=max_new_tokens, sample=sample, temperature=temperature, seed=seed)
        if anchors is not None and kind_options.reference_set != absolute.UPLOADED:
            raise InputError("anchors were given, but the options' reference_set is "
                             f"'{kind_options.reference_set}': set it to '{absolute.UPLOADED}'")
        model_options = _model_options(
            model_options, Store.score, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, for_aspects(kind_options, aspects) if aspects is not None
                                else kind_options, model_options, name=name, judge=judge,
                                anchors=anchors, progress=progress)

    # ---------------------------------------------------------------------- human labels

    def _dataset_id(self, dataset: str | int, *, expect_name: str | None = None) -> int:
        """A stored dataset's id from its id, its name, or its id as text; ``expect_name``: the
        name it was shown under, refused (``ObjectChanged``) when it is now called otherwise."""
        infos = self.backend.list_datasets()
        by_name = [] if isinstance(dataset, (int, np.integer)) else [d for d in infos
                                                                      if d.name == dataset]
        for d in by_name or [d for d in infos if str(d.id) == str(dataset)]:
            check_shown_name("dataset", d.id, d.name, expect_name)
            return d.id
        if expect_name is not None:   # shown under a name: say it by that name
            raise InputError(f"dataset '{expect_name}' is no longer in the store (deleted?)")
        if isinstance(dataset, (int, np.integer)):
            raise InputError(f"no stored dataset has the id {int(dataset)} (deleted?)")
        raise InputError(f"no stored dataset named '{dataset}'")

    def _stored_dataset(self, dataset: str | int) -> tuple[int, Dataset]:
        """A stored dataset's id and content, from its name or id."""
        dataset_id = self._dataset_id(dataset)
        return dataset_id, self.backend.load_dataset(dataset_id)

    def import_labels(self, source: Source, *, dataset: str | int, aspect: str = "overall",
                      annotator: str | None = None,
                      annotators: Mapping[str, str] | None = None,
                      mapping: Mapping[str, str | None] | None = None,
                      file_label: str | None = None,
                      expect_name: str | None = None,
                      people: Sequence[str] = ()) -> LabelsImported:
        """Validate human A/B labels (a file, its bytes or a DataFrame with columns
        ``context_id, candidate_a, candidate_b, winner[, annotator]``; ``winner`` one of the two
        ids, ``tie``, or the side's column name) against a stored dataset and store them for
        ``aspect``: ``compassess import-labels``. ``mapping``: label column -> the file's column
        for a file named otherwise (``{"context_id": "question_id", "candidate_a": "model_a",
        ...}``; :meth:`check_labels` suggests one). Importing the same labels again adds nothing
        (the store keeps one judgement per person, pair and aspect).

        Who the labels are from: by default the file's ``annotator`` column (a label without
        one is ``imported``'s); ``annotators`` maps a file's name to someone explicitly; with
        ``annotator`` every other label is attributed to that one name. ``people``: identities
        a file may not speak for (the app passes its people and the importer): a file's name
        that is one of them is filed as ``"<name> (from the file)"`` unless ``annotators``
        credits it (``labels.attribute``).

        Raises
        ------
        ValidationError
            Every problem of the labels, each with its row and column; nothing is stored.
        InputError
            No stored dataset of that name or id, or a bad annotator name.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        dataset_id = self._dataset_id(dataset, expect_name=expect_name)
        ds = self.backend.load_dataset(dataset_id)
        labels = load_human_labels(source, ds, file_label=file_label, column_map=mapping)
        named = any(lb.annotator != DEFAULT_ANNOTATOR for lb in labels)
        attributed_by = ("the file's annotator column" if named else
                         f"'{DEFAULT_ANNOTATOR}': the file names no annotator") + (
            ", with names mapped explicitly" if annotators else "")
        if annotator is not None:
            annotator = check_name(annotator, "annotator", dash_first=True)
            attributed_by = f"the importer ({annotator})" + (
                ", with the file's names mapped explicitly" if annotators else "")
        if annotator is not None or annotators or people:
            labels = attribute(labels, annotator, annotators, people)
        added = self.backend.add_human_judgements(dataset_id, store_rows(labels, aspect=aspect))
        return LabelsImported(stored=added, already_stored=len(labels) - added, dataset=ds.name,
                              aspect=aspect, attributed=annotator_counts(labels),
                              attributed_by=attributed_by)

    def human_labels(self, dataset: str | int, aspect: str | None = None) -> pd.DataFrame:
        """The human judgements stored for a dataset (of one aspect when given), in the order
        stored, one row each: ``id, context_id, candidate_left, candidate_right, shown_order``
        (``ab``/``ba``; empty for an import), ``winner`` (``A``/``B`` = left/right, ``tie``,
        ``both_bad``, ``skip``), ``annotator, aspect, seconds`` (NaN: not timed), ``source``
        (``app``: the Annotate page or a campaign; ``import``: a label file;
        ``adjudication``: an admin's ruling in a campaign), ``created_at`` (UTC) and
        ``revision`` (a person's later answer on the same pair is a new revision)."""
        return self.backend.human_judgements_frame(self._dataset_id(dataset), aspect)

    def human_labels_bytes(self, dataset: str | int, aspect: str, fmt: str = "csv") -> ExportFile:
        """:meth:`human_labels` of ``aspect`` as the bytes of a ``fmt`` file (``csv``, ``json``,
        ``parquet``) with the dataset, aspect and count recorded (inside JSON, in the sidecar of
        CSV and Parquet): the Agreement page's download. CSV cells a spreadsheet would execute
        are neutralised.

        Raises
        ------
        InputError
            An unknown dataset or format.
        """
        dataset_id = self._dataset_id(dataset)
        frame = self.backend.human_judgements_frame(dataset_id, aspect)
        name = next(d.name for d in self.backend.list_datasets() if d.id == dataset_id)
        meta = dict(dataset=name, aspect=aspect, n_judgements=len(frame))
        data, sidecar = export.table_bytes(frame, fmt, what="human_judgements", metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=frame, metadata=meta)

    # ------------------------------------------------------------------- the audit report

    def report(self, runs: Sequence[str | int | Verdicts], *, method: str = DEFAULT_METHOD,
               debias: str | float = "balanced", n_boot: int = 200,
               examples: int = EXAMPLES, baseline: str | None = None,
               generated_at: datetime | None = None) -> bytes:
        """The audit report of one or several pairwise runs (names, ids or :class:`Run`
        handles): one self-contained HTML file, UTF-8 (``compassess report``, the Export page's
        download). Each run's section is :meth:`Run.audit` with these options (a ``baseline``
        system adds each system's win rate against it to every run's leaderboard); every two
        runs on the same dataset are compared (:meth:`Run.compare`).

        ``generated_at``: the date the report states (default ``$SOURCE_DATE_EPOCH`` when set,
        else now); the same runs, options and date give the same bytes.

        Raises
        ------
        InputError
            No run, a run given twice, a run that is not pairwise or has no comparison that
            matches its dataset, an unknown method or threshold, ``n_boot < 1``, a baseline
            that is not a system of a run with systems.
        """
        handles = [r if isinstance(r, Verdicts) else self.get_run(r) for r in runs]
        if not handles:
            raise InputError("an audit report needs at least one run")
        ids = [r.id for r in handles]
        twice = sorted({r.name for r in handles if ids.count(r.id) > 1})
        if twice:
            raise InputError(f"run '{twice[0]}' is given twice")
        _check_at_least("n_boot", n_boot, 1)
        _check_at_least("examples", examples, 0)
        audits = [r.audit(method, debias, n_boot=n_boot, examples=examples, baseline=baseline)
                  for r in handles]
        compared = []
        for a, b in itertools.combinations(handles, 2):
            if a.info.dataset_id != b.info.dataset_id:
                compared.append(RunsCompared(
                    a.name, b.name, reason=f"run '{a.name}' judged dataset "
                    f"'{a.info.dataset_name}', run '{b.name}' dataset '{b.info.dataset_name}'"))
                continue
            try:
                thresholds = (f"A: {a.threshold_label(debias)}; B: {b.threshold_label(debias)}"
                              if analysis.is_per_context(debias) else "")
                compared.append(RunsCompared(a.name, b.name, a.compare(b, method, debias),
                                             thresholds=thresholds))
            except InputError as e:  # no pair judged by both
                compared.append(RunsCompared(a.name, b.name, reason=str(e)))
        text = render_report(audits, compared, version=__version__,
                             generated_at=_report_time(generated_at))
        return text.encode("utf-8")

    # ------------------------------------------------------------- managing what is stored

    def delete_run(self, name_or_id: str | int, *, dry_run: bool = False,
                   expect_name: str | None = None) -> Deleted:
        """Delete a stored run with its results (``compassess delete-run``), in one
        transaction; returns what was deleted. ``dry_run=True`` deletes nothing and returns what
        would be deleted.

        Other runs of the same judge that took results from this run's (the cache) keep their
        own copies; later runs no longer find this run's judgements in the cache.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``), or a worker is executing the run
            (its heartbeat is live): cancel it (:meth:`Run.cancel`) and delete it once it has
            stopped. A run whose worker died may be deleted.
        ObjectChanged
            The run is not named ``expect_name`` (the name it was shown under).
        """
        run = self.get_run(name_or_id, expect_name=expect_name)
        return Deleted.from_rows(self.backend.delete_run(run.id, dry_run=dry_run))

    def rename_run(self, name_or_id: str | int, new_name: str, *,
                   expect_name: str | None = None) -> "Run":
        """Give a stored run another name (``compassess rename-run``); returns the renamed run.

        Allowed while a worker executes the run: workers, results and the cache know a run by
        its id, not its name.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``), an invalid name (the rules of a
            new run's name), or another run already has the name.
        ObjectChanged
            The run is not named ``expect_name`` (the name it was shown under).
        """
        run = self.get_run(name_or_id, expect_name=expect_name)
        self.backend.rename_run(run.id, new_name)
        return Run(self, self.backend.get_run(run.id))

    def delete_dataset(self, name_or_id: str | int, *, dry_run: bool = False,
                       expect_name: str | None = None) -> Deleted:
        """Delete a stored dataset with everything that belongs to it (``compassess
        delete-dataset``), in one transaction: its candidates and reference scores, its runs and
        their results, its human labels, guidelines and reference texts. Returns what was
        deleted; ``dry_run=True`` deletes nothing and returns what would be deleted.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), or a worker is executing one
            of its runs: cancel it first.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        dataset_id = self._dataset_id(name_or_id, expect_name=expect_name)
        return Deleted.from_rows(self.backend.delete_dataset(dataset_id, dry_run=dry_run))

    def rename_dataset(self, name_or_id: str | int, new_name: str, *,
                       expect_name: str | None = None) -> None:
        """Give a stored dataset another name (``compassess rename-dataset``). The runs on it
        record the new name in their settings, so ``store.run(new_name, ...)`` with a run's
        settings resumes that run. Allowed while its runs execute.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), an invalid name (the rules of
            saving one), or another dataset already has the name.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        self.backend.rename_dataset(self._dataset_id(name_or_id, expect_name=expect_name),
                                    new_name)

    # ------------------------------------------------ what the app lists, and writes as people work

    def dataset_id(self, dataset: str | int) -> int:
        """A stored dataset's id from its name or id.

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        return self._dataset_id(dataset)

    def object_id(self, kind: str, name_or_id: str | int) -> int:
        """The id of the stored ``kind`` (``dataset``, ``run``, ``panel`` or ``campaign``) named
        or numbered ``name_or_id``: what a link or a command names, made stable across renames.

        Raises
        ------
        InputError
            An unknown kind, or no such object.
        """
        lookups = {"dataset": self._dataset_id,
                   "run": lambda x: self.backend.get_run(x).id,
                   "panel": lambda x: self.backend.get_panel(x).id,
                   "campaign": lambda x: self.backend.get_campaign(x).id}
        if kind not in lookups:
            raise InputError(f"unknown kind of object '{kind}'; one of {', '.join(lookups)}")
        return int(lookups[kind](name_or_id))

    def list_datasets(self) -> list:
        """The stored datasets' records (``id``, ``name``, ``n_contexts``, ``n_candidates``,
        ``score_columns``, ``source``, ``content_hash``, ``created_at``), oldest first: the rows of
        :meth:`datasets` as objects."""
        return self.backend.list_datasets()

    def list_runs(self, dataset: str | int | None = None) -> list["Run"]:
        """Every stored run (of one dataset when given), oldest first, as :class:`Run` handles
        (cheap: a run's dataset and results are read when first asked for)."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        return [Run(self, info) for info in self.backend.list_runs(dataset_id)]

    def add_judgements(self, dataset: str | int, rows: Sequence[Mapping], *,
                       again: bool = False, expect_name: str | None = None,
                       shown: "annotation.PairOnScreen | Mapping | None" = None) -> int:
        """Store people's A/B judgements given in the app (one transaction); returns how many
        were added. Each row: ``context_id``, ``candidate_left``, ``candidate_right``, ``winner``
        (``A`` = left better, ``B``, ``tie``, ``skip``), ``annotator``, ``aspect``, ``seconds``,
        ``shown_order``. A person's second answer on a pair is not added unless ``again`` (a
        deliberate re-answer, stored as the next revision).

        Raises
        ------
        InputError
            Unknown context or candidates, or a bad winner.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under), or a row is
            not the pair ``shown``: what the person's screen showed when they answered
            (:class:`annotation.PairOnScreen`, sent back by the browser with the key press or
            click). Nothing is stored then.
        """
        dataset_id = self._dataset_id(dataset, expect_name=expect_name)
        rows = list(rows)
        if shown is not None:
            check_answer_on_screen(dataset_id, rows, shown)
        return self.backend.add_human_judgements(dataset_id, rows, again=again)

    def next_pair(self, dataset: str | int | Dataset, aspect: str, annotator: str, *,
                  mode: str = "random", run: "str | int | Verdicts | None" = None,
                  allow_repeat: bool = False, dataset_id: int | None = None
                  ) -> ShownPair | None:
        """The pair to show ``annotator`` next on ``dataset`` for ``aspect``, with its left/right
        order drawn (the app's free annotation): ``mode`` one of ``annotation.MODES``
        (``uncertain``, ``flips`` and ``informative`` read ``run``'s comparisons at its balanced
        tau*); a pair the person already judged is not offered again unless ``allow_repeat``.
        None when every pair is judged. A :class:`Dataset` already read may be given with its
        ``dataset_id``.

        Raises
        ------
        InputError
            An unknown dataset or mode, or a mode that needs a run without one.
        """
        if isinstance(dataset, Dataset):
            if dataset_id is None:
                raise InputError("a Dataset given to next_pair needs its dataset_id")
            ds = dataset
        else:
            dataset_id, ds = self._stored_dataset(dataset)
        human = self.backend.human_judgements_frame(dataset_id, aspect)
        llm, tau = None, 0.5
        if run is not None:
            judged = run if isinstance(run, Verdicts) else self.get_run(run)
            llm, tau = judged.results, judged.tau("balanced")
        return annotation.next_shown_pair(ds, llm, human, annotator, mode, tau,
                                          allow_repeat=allow_repeat)

    def undo_judgement(self, judgement_id: int, annotator: str) -> bool:
        """Delete one stored judgement of ``annotator`` (their undo); False when it is not
        theirs or already gone."""
        return self.backend.delete_human_judgement(int(judgement_id), annotator)

    def guidelines(self, dataset: str | int) -> str:
        """The annotation guidelines of a dataset ("" when none were written)."""
        return self.backend.get_guidelines(self._dataset_id(dataset))

    def set_guidelines(self, dataset: str | int, text: str, *,
                       expect_name: str | None = None) -> None:
        """Replace the annotation guidelines of a dataset."""
        self.backend.set_guidelines(self._dataset_id(dataset, expect_name=expect_name), text)

    def people(self) -> list:
        """Everyone with a role (``identity``, ``role``, ``added_by``, ``created_at``)."""
        return self.backend.list_people()

    def role_of(self, identity: str) -> str | None:
        """The stored role of ``identity`` (None: no role)."""
        return self.backend.role_of(identity)

    def set_role(self, identity: str, role: str, added_by: str) -> None:
        """Give ``identity`` a role (``admin`` or ``annotator``), recorded as given by
        ``added_by``.

        Raises
        ------
        InputError
            An unknown role, a bad identity, or taking the last admin's role away.
        """
        self.backend.set_role(identity, role, added_by)

    def remove_person(self, identity: str) -> bool:
        """Take every role from ``identity`` (their stored judgements stay).

        Raises
        ------
        InputError
            The last admin.
        """
        return self.backend.remove_person(identity)

    def signed_out_through(self, identity: str) -> int | None:
        """The issue time (seconds since 1970) up to which ``identity``'s sign-ins have ended: the
        last sign-out recorded (``access.signed_out_through``); None when they never signed out."""
        return self.backend.signed_out_through(identity)

    def record_sign_out(self, identity: str, token_issued_at: object) -> None:
        """``identity`` signs out now with a token issued at ``token_issued_at``: that token and
        their earlier ones stop signing them in (``access.sign_in_problem``)."""
        self.backend.record_sign_out(identity,
                                     access.signed_out_through(token_issued_at, time.time()))

    def references(self, dataset: str | int, aspect: str, reference_set: str) -> list:
        """The reference texts of an absolute run's set (``absolute.Reference``), by context and
        level."""
        return self.backend.load_references(self._dataset_id(dataset), aspect, reference_set)

    def save_references(self, dataset: str | int, aspect: str, reference_set: str,
                        references: Sequence) -> int:
        """Store (or replace) reference texts; returns the rows written. Resuming the run
        rescores the comparisons that used them."""
        return self.backend.save_references(self._dataset_id(dataset), aspect, reference_set,
                                            list(references))

    def save_anchors(self, dataset: str | int, aspect: str, source: Source, *, n_levels: int,
                     reference_set: str = absolute.UPLOADED, file_label: str = "anchors") -> int:
        """Read an anchor file (CSV of ``context_id, level, text``: your own reference texts of
        quality 1..``n_levels``) and store it as the reference set ``reference_set`` of ``aspect``
        (default: the uploaded set).

        Raises
        ------
        ValidationError
            Every problem of the file (a context the dataset lacks included), with its row and
            column; nothing is stored.
        """
        if isinstance(source, pd.DataFrame):
            source = source.to_csv(index=False).encode()
        contexts = [c.context_id for c in self.dataset(self._dataset_id(dataset)).contexts]
        anchors = absolute.parse_anchor_file(source, file_label=file_label, n_levels=n_levels,
                                             context_ids=contexts)
        return self.save_references(dataset, aspect, reference_set, anchors)

    def delete_references(self, dataset: str | int, aspect: str, reference_set: str,
                          context_id: str | None = None) -> int:
        """Delete a set's references (of one context when given), so the run writes them anew."""
        return self.backend.delete_references(self._dataset_id(dataset), aspect, reference_set,
                                              context_id)
