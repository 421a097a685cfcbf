"""The tunings of a store and its named templates: a :class:`~compassess_core.api.store.Store`
mixin (``Tunings``) for tuning the judge's wording on a dataset's human labels
(:class:`~compassess_core.api.tuning.Tuning`) and for the templates a tuning picks, which a run
then names like ``t1`` (:meth:`Tunings.resolve_template`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..data.candidates import Source
from ..errors import InputError
from ..runs.prompts import Template, custom_template
from ..runs.settings import RunSettings
from ..runs.tuning import TuningOptions
from ..types import Dataset
from ..runs.executor import Reporter
from .records import Deleted
from .tuning import (Tuning, TuningPlan, TuningResult, check_tuning_name, create_tuning,
                     plan_tuning, run_name)


def _plus(a: Deleted, b: Deleted) -> Deleted:
    """The rows of two deletes together."""
    return Deleted(**{k: getattr(a, k) + getattr(b, k) for k in vars(a)})


class Tunings:
    """The tuning and template verbs of a ``Store``."""

    def create_tuning(self, data: Source | Dataset | int, *, aspect: str,
                      name: str | None = None, model: str | None = None, task: str = "auto",
                      contexts: int = TuningOptions.contexts, holdout: int = 0,
                      pairs: int | None = None, rounds: int = TuningOptions.rounds,
                      per_round: int = TuningOptions.per_round, budget: int | None = None,
                      seed: int = 0, batch_size: int | None = RunSettings.batch_size,
                      device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                      truncate_context: bool = False, writer: str = "",
                      created_by: str = "") -> Tuning:
        """Store ``data`` (when not stored yet) and a tuning of the judge's instruction on it,
        without executing it: :meth:`Tuning.execute` executes it here, :meth:`Tuning.start_worker`
        in a process of its own, :meth:`Tuning.plan` says what it costs. The options are
        :meth:`tune`'s. A tuning of the same name and options is returned (to be resumed).

        Raises
        ------
        InputError
            Bad options (``OptionError`` names the field), too few contexts, or a tuning of
            that name with other options.
        """
        options = TuningOptions(model=model or "", task=task, contexts=contexts,
                                holdout=holdout, pairs=pairs, rounds=rounds,
                                per_round=per_round, budget=budget, seed=seed,
                                batch_size=batch_size, device=device, dtype=dtype,
                                truncate_context=truncate_context, writer=writer)
        return create_tuning(self, data, aspect=aspect, name=name, options=options,
                             created_by=created_by)

    def plan_tuning(self, dataset: Source | Dataset | int, *, aspect: str,
                    **options) -> TuningPlan:
        """What a tuning of ``options`` (:meth:`create_tuning`'s keywords but ``name`` and
        ``created_by``) on ``dataset`` (a stored dataset, or candidates as :meth:`read_data`
        takes them) would cost, storing nothing (:class:`TuningPlan`: wordings, comparisons,
        time at this machine's measured speed).

        Raises
        ------
        InputError
            Bad options or data, too few contexts, or a budget below one wording.
        """
        options.setdefault("model", None)
        options["model"] = options["model"] or ""
        data, dataset_id = self.read_data(dataset)
        return plan_tuning(self, data if dataset_id is None else dataset_id, aspect=aspect,
                           options=TuningOptions(**options))

    def tune(self, data: Source | Dataset | int, *, aspect: str, name: str | None = None,
             model: str | None = None, task: str = "auto",
             contexts: int = TuningOptions.contexts, holdout: int = 0,
             pairs: int | None = None, rounds: int = TuningOptions.rounds,
             per_round: int = TuningOptions.per_round, budget: int | None = None,
             seed: int = 0, batch_size: int | None = RunSettings.batch_size,
             device: str = RunSettings.device, dtype: str = RunSettings.dtype,
             truncate_context: bool = False, judge=None, writer: str | object = "",
             progress: bool | Reporter = True, threads: int | None = None,
             n_boot: int = 1000) -> TuningResult:
        """Tune the judge's instruction on ``data`` for ``aspect`` without labels
        (``compassess tune``): the library's T1 and T2 for the task and built-in paraphrases,
        then ``rounds`` greedy rounds of ``per_round`` paraphrases of the whole instruction of
        the fairest wording so far written by ``writer`` ("" none; ``"judge"`` the judge itself;
        a model name or a served ``openai:BASE_URL#MODEL``; or a loaded model that writes), each
        judged on every ordered pair (or ``pairs`` per context) of the first ``contexts``
        contexts and scored by ZEPO's fairness (how far its per-context A-rate is from 1/2, with
        a 95% interval; ``tuning``), within ``budget`` comparisons in all. A wording replaces
        T1 only when it is fairer than T1 outside the paired 95% interval on the same pairs;
        otherwise T1 is kept and the result says why. Where the data has human labels or a
        reference column, each wording's agreement is measured on the next ``holdout``
        contexts, which the pick never sees. The pick is saved as the template named like the
        tuning (``name``; default dataset-aspect-model), which
        ``run(template=NAME)`` takes. Every wording is a run ``tune-<name>-<key>``: a tuning of
        the same name resumes, nothing stored is judged again. The cost is reported first.

        Returns the :class:`TuningResult` (the table of wordings, the pick, the template).

        Raises
        ------
        RunInterrupted, RunCancelled
            Stopped: everything judged is stored; the same call resumes.
        InputError
            Bad options, data, or a judge that cannot load.
        """
        t = self.create_tuning(data, aspect=aspect, name=name, model=model, task=task,
                               contexts=contexts, holdout=holdout, pairs=pairs, rounds=rounds,
                               per_round=per_round, budget=budget, seed=seed,
                               batch_size=batch_size, device=device, dtype=dtype,
                               truncate_context=truncate_context,
                               writer=writer if isinstance(writer, str) else "")
        return t.execute(judge=judge, writer=None if isinstance(writer, str) else writer,
                         progress=progress, threads=threads, n_boot=n_boot)

    def tuning(self, name_or_id: str | int) -> Tuning:
        """A stored tuning by name or id.

        Raises
        ------
        InputError
            No tuning of that name or id.
        """
        return Tuning(self, self.backend.get_tuning(name_or_id))

    def tunings(self, dataset: str | int | None = None) -> list[Tuning]:
        """Every stored tuning (of one dataset when given), oldest first."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        return [Tuning(self, info) for info in self.backend.list_tunings(dataset_id)]

    def tuning_runs(self, dataset: str | int | None = None) -> dict[int, str]:
        """The runs tunings made (one per wording tried, ``tune-<name>-<key>``), of one dataset
        when given: run id -> the name of its tuning. The app lists them apart from the runs a
        person started and leaves them out of an aspect's count of runs."""
        return {run.id: t.name for t in self.tunings(dataset) for run in t.runs().values()}

    def tunings_frame(self, dataset: str | int | None = None) -> pd.DataFrame:
        """One row per stored tuning (of one dataset when given), oldest first: name, dataset,
        aspect, model, status, state (``working``/``stale`` as a run's), wordings, runs (its
        wording runs stored so far), created_at: ``compassess tunings``."""
        rows = [dict(name=t.name, dataset=t.info.dataset_name, aspect=t.info.aspect,
                     model=t.options.model or "(bundled)", status=t.status, state=t.state,
                     wordings=len(t.wordings), runs=len(t.runs()), created_at=t.info.created_at)
                for t in self.tunings(dataset)]
        return pd.DataFrame(rows, columns=["name", "dataset", "aspect", "model", "status",
                                           "state", "wordings", "runs", "created_at"])

    def delete_tuning(self, name_or_id: str | int, *, dry_run: bool = False) -> Deleted:
        """Delete a stored tuning with the runs of its wordings (``compassess delete-tuning``),
        returning what was (``dry_run``: would be) deleted. The template it saved stays: runs may
        name it (``compassess templates --delete NAME`` removes it).

        Raises
        ------
        InputError
            No tuning of that name or id, or a worker is executing it (cancel it first).
        """
        t = self.tuning(name_or_id)
        if t.state == "working":
            raise InputError(f"tuning '{t.name}' is being executed by a worker: cancel it first")
        deleted = Deleted(tunings=1)
        for run in t.runs().values():
            deleted = _plus(deleted, self.delete_run(run.id, dry_run=dry_run))
        if not dry_run:
            self.backend.delete_tuning(t.id)
        return deleted

    def rename_tuning(self, name_or_id: str | int, new_name: str) -> Tuning:
        """Give a stored tuning another name (``compassess rename-tuning``): its wording runs
        (``tune-<name>-<key>``) and the template it saved under its name follow; returns the
        renamed tuning.

        Raises
        ------
        InputError
            No tuning of that name or id, a bad or taken name (a tuning's, one of the new run
            names, or the template's), or a worker is executing it.
        """
        t = self.tuning(name_or_id)
        old = t.name
        if new_name == old:
            return t
        if t.state == "working":
            raise InputError(f"tuning '{old}' is being executed by a worker: cancel it first")
        check_tuning_name(new_name)
        runs = t.runs()
        taken = {r.name for r in self.list_runs()} & {run_name(new_name, k) for k in runs}
        if taken:
            raise InputError(f"run '{sorted(taken)[0]}' already exists: tuning '{old}' cannot "
                             f"be renamed to '{new_name}', whose wording runs need the name")
        saved = self.backend.get_template(old)
        follows = saved is not None and saved.tuning == old
        if follows and self.backend.get_template(new_name) is not None:
            raise InputError(f"a template named '{new_name}' already exists: the tuning's "
                             f"template '{old}' could not follow the new name")
        self.backend.rename_tuning(t.id, new_name)
        for key, run in runs.items():
            self.rename_run(run.id, run_name(new_name, key))
        if follows:
            self.backend.save_template(new_name, saved.text, saved.noun, tuning=new_name,
                                       source=saved.source, created_by=saved.created_by)
            self.backend.delete_template(old)
        return self.tuning(t.id)

    def templates(self) -> pd.DataFrame:
        """One row per named template: name, noun, tuning (that saved it), source, text."""
        rows = [dict(name=t.name, noun=t.noun, tuning=t.tuning, source=t.source, text=t.text,
                     updated_at=t.updated_at) for t in self.backend.list_templates()]
        return pd.DataFrame(rows, columns=["name", "noun", "tuning", "source", "text",
                                           "updated_at"])

    def save_template(self, name: str, text: str, *, noun: str | None = None,
                      created_by: str = "") -> None:
        """Store your own template under ``name`` (``{context} {a} {b} {aspect}``; the answer
        noun guessed from it unless given), for ``run(template=name)``.

        Raises
        ------
        InputError
            A bad template or name, or the name taken by another text.
        """
        template = custom_template(text, name=name, noun=noun)
        self.backend.save_template(name, template.text, template.noun, source="saved by hand",
                                   created_by=created_by)

    def delete_template(self, name: str) -> bool:
        """Delete a named template (runs that used it keep their copy of its text)."""
        return self.backend.delete_template(name)

    def resolve_template(self, spec: str | Template | None) -> str | Template | None:
        """What a run's ``template`` names: ``t1``/``t2``/``s1``/``s2`` and an existing template
        file stay as given; otherwise a named template of the store (a tuning's pick) becomes
        the :class:`~compassess_core.runs.prompts.Template` it holds; anything else stays (and the
        run refuses it, naming it)."""
        if spec is None or isinstance(spec, Template):
            return spec
        if spec.lower() in ("t1", "t2", "s1", "s2") or Path(spec).is_file():
            return spec
        stored = self.backend.get_template(spec)
        if stored is None or str(spec).isdigit() and stored.name != spec:
            return spec
        return Template(name=stored.name, text=stored.text, noun=stored.noun)

