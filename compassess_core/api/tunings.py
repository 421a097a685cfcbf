"""The tunings of a store and its named templates: a :class:`~compassess_core.api.store.Store`
mixin (``Tunings``) for tuning the judge's wording on a dataset's human labels
(:class:`~compassess_core.api.tuning.Tuning`) and for the templates a tuning picks, which a run
then names like ``t1`` (:meth:`Tunings.resolve_template`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..data import Source
from ..prompts import Template, custom_template
from ..settings import RunSettings
from ..tuning import TuningOptions
from ..types import Dataset
from ..worker import Reporter
from .tuning import Tuning, TuningPlan, TuningResult, create_tuning, plan_tuning


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

    def plan_tuning(self, dataset: str | int, *, aspect: str, **options) -> TuningPlan:
        """What a tuning of ``options`` (:meth:`create_tuning`'s keywords but ``name`` and
        ``created_by``) on a stored dataset would cost, without storing it
        (:class:`TuningPlan`: wordings, comparisons, time at this machine's measured speed).

        Raises
        ------
        InputError
            Bad options, too few contexts, or a budget below one wording.
        """
        options.setdefault("model", None)
        options["model"] = options["model"] or ""
        return plan_tuning(self, self._dataset_id(dataset), aspect=aspect,
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
        the :class:`~compassess_core.prompts.Template` it holds; anything else stays (and the
        run refuses it, naming it)."""
        if spec is None or isinstance(spec, Template):
            return spec
        if spec.lower() in ("t1", "t2", "s1", "s2") or Path(spec).is_file():
            return spec
        stored = self.backend.get_template(spec)
        if stored is None or str(spec).isdigit() and stored.name != spec:
            return spec
        return Template(name=stored.name, text=stored.text, noun=stored.noun)

