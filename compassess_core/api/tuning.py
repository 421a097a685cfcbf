"""A tuning of the judge's instruction through the API (:class:`Tuning`, :class:`TuningResult`):
the wordings the engine proposes (``tuning``), each judged by a run of its own named
``tune-<tuning>-<key>`` (so every comparison is stored, resumable and reused through the cache),
scored by the engine, picked by fairness, and the winner saved as a named template. Wiring: the
engine proposes, scores and picks; the store keeps; this module computes nothing itself."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pandas as pd

from ..stats import paired
from ..runs import tuning
from ..runs import executor
from . import background
from ..errors import InputError, RunCancelled, RunInterrupted
from ..runs.explanations import cannot_write
from ..runs.options import ComparativeOptions, ModelOptions
from ..runs.prompts import Aspect, infer_task, reference_column
from ..runs.run_kinds import build_settings, get_kind, kind_of
from ..runs.settings import GenerationOptions, RunSettings, model_short_name
from ..judges.speed import TimeEstimate
from ..types import Dataset
from .progress import _reporter
from .records import info_field
from .handle import StoreHandle

if TYPE_CHECKING:
    from .run import Run

#: Longest tuning name: its runs are named ``tune-<name>-w<k>`` within a run name's bound.
MAX_TUNING_NAME = 180
#: Seconds between a tuning worker's heartbeats (a run's own heartbeat covers its judging).
HEARTBEAT_S = 5.0


def run_name(tuning_name: str, key: str) -> str:
    """The run that judges wording ``key`` of tuning ``tuning_name``."""
    return f"tune-{tuning_name}-{key}"


def default_tuning_name(dataset: str, aspect: str, model: str) -> str:
    """A tuning's name when none is given: dataset, aspect and model."""
    return f"{dataset}-{aspect.replace(' ', '_')[:24]}-{model_short_name(model)}"[:MAX_TUNING_NAME]


@dataclass(frozen=True)
class TuningPlan:
    """What a tuning costs before it starts: ``start`` wordings first (``max_wordings`` at most
    within the budget), then up to ``rounds`` x ``per_round`` written ones; ``per_wording``
    comparisons each (``per_wording_tune`` on the tuning contexts, the rest held out), so at
    most ``comparisons`` in all; ``time`` the judging time of all of them at this machine's
    measured speed (``speed.estimate_time``; rough defaults when nothing measured it)."""

    start: int
    rounds: int
    per_round: int
    max_wordings: int
    per_wording: int
    per_wording_tune: int
    comparisons: int
    time: TimeEstimate
    agreement_with: str

    def cost_sentence(self) -> str:
        """The cost in words: wordings, comparisons and time (numbers only, no names)."""
        held = self.per_wording - self.per_wording_tune
        return (f"up to {self.max_wordings} wording(s) ({self.start} to start"
                + (f", then {self.rounds} round(s) of up to {self.per_round} written by the "
                   "writer" if self.rounds and self.max_wordings > self.start else "")
                + f") x {self.per_wording:,} comparisons ({self.per_wording_tune:,} on the "
                f"tuning contexts" + (f", {held:,} held out" if held else "") + ") = at most "
                f"{self.comparisons:,} comparisons, {self.time.sentence()}")

    def sentence(self) -> str:
        """The plan in words (``compassess tune`` prints it before judging)."""
        return f"{self.cost_sentence()}; agreement: {self.agreement_with}"


@dataclass(frozen=True)
class TuningResult:
    """A tuning's outcome as stored now (complete or not): ``table`` is
    ``tuning.tuning_table`` (one row per wording judged: fairness with its 95% interval,
    per-context A-rate, P(A) raw, flip rate, the paired difference with T1, agreement raw and
    at tau* with 95% intervals, comparisons), ``picked`` the wording to use (T1 unless another
    beats it outside the paired interval; None before any is judged) and ``reason`` why,
    ``vs_t1`` the paired test behind that reason (the pick's, or the fairest other wording's,
    against T1), ``warnings`` about the sample (``tuning.sample_warnings``), ``template`` the
    named template it was saved as (None until the tuning completes);
    ``comparisons_tune``/``comparisons_holdout`` the comparisons its runs hold on the tuning and
    held-out contexts; ``writer`` who wrote the paraphrases ("" none)."""

    name: str
    dataset: str
    aspect: str
    model: str
    status: str
    message: str | None
    table: pd.DataFrame
    picked: tuning.Wording | None
    template: str | None
    comparisons_tune: int
    comparisons_holdout: int
    agreement_with: str
    scores: tuple = field(default=(), repr=False)
    reason: str = ""
    warnings: tuple[str, ...] = ()
    vs_t1: "paired.PairedDifference | None" = None
    writer: str = ""

    @property
    def picked_text(self) -> str | None:
        """The picked wording's template text."""
        return None if self.picked is None else self.picked.text

    def to_dict(self) -> dict:
        """What ``compassess tune --json`` prints."""
        table = self.table.astype(object).where(self.table.notna(), None)
        return dict(name=self.name, dataset=self.dataset, aspect=self.aspect, model=self.model,
                    status=self.status, message=self.message,
                    picked=None if self.picked is None else self.picked.to_dict(),
                    template=self.template, comparisons_tune=self.comparisons_tune,
                    comparisons_holdout=self.comparisons_holdout,
                    agreement_with=self.agreement_with, reason=self.reason,
                    warnings=list(self.warnings), writer=self.writer,
                    vs_t1=None if self.vs_t1 is None else self.vs_t1.to_dict(),
                    wordings=table.to_dict(orient="records"))


class Tuning:
    """A stored tuning: its options, the wordings it tried, their runs, its result; executing
    (resuming) it here or in a worker process, cancelling it. Get one from :meth:`Store.tune`,
    :meth:`Store.create_tuning` or :meth:`Store.tuning`."""

    def __init__(self, store: StoreHandle, info) -> None:
        self.store = store
        self.info = info

    def __repr__(self) -> str:
        return f"<Tuning {self.name!r}: {self.status}, {len(self.wordings)} wording(s)>"

    name = info_field("name", "The tuning's name (unique in its store).")
    id = info_field("id", "The tuning's id in its store.")
    status = info_field("status", "``pending``, ``running``, ``completed``, ``cancelled`` or "
                                  "``failed`` (as last read).")

    @property
    def options(self) -> tuning.TuningOptions:
        return tuning.TuningOptions.from_dict(self.info.options)

    @property
    def aspect(self) -> Aspect:
        return Aspect.from_name(self.info.aspect)

    @property
    def wordings(self) -> list[tuning.Wording]:
        """Every wording tried or to try, in order (the starting ones, then the written ones)."""
        return [tuning.Wording.from_dict(w) for w in self.info.wordings]

    def refresh(self) -> "Tuning":
        self.info = self.store.backend.get_tuning(self.id)
        return self

    def dataset(self) -> Dataset:
        """The dataset it tunes on (a plan's own, when the dataset is not stored)."""
        unstored = getattr(self, "_unstored_dataset", None)
        if unstored is not None:
            return unstored
        return self.store.backend.load_dataset(self.info.dataset_id)

    # ------------------------------------------------------------------- what it judges

    def task(self, dataset: Dataset) -> str:
        """The wording of the library's templates: the options' task, or the one the data and
        the aspect say (``prompts.infer_task``)."""
        task = self.options.task
        return infer_task(self.aspect, dataset.text_columns) if task == "auto" else task

    def settings(self, dataset: Dataset, wording: tuning.Wording) -> RunSettings:
        """The settings of the run that judges ``wording``: every ordered pair (or ``pairs`` per
        context, both orders) of the tuning and held-out contexts."""
        o = self.options
        kind_options = ComparativeOptions(
            aspect=self.aspect, template=wording.template(run_name(self.name, wording.key)),
            task=self.task(dataset), strategy="full" if o.pairs is None else "symmetric",
            budget=o.pairs, seed=o.seed)
        model = ModelOptions(model=o.model, device=o.device, dtype=o.dtype,
                             batch_size=o.batch_size, contexts=o.contexts + o.holdout,
                             truncate_context=o.truncate_context)
        return build_settings(dataset.name, kind_options, model,
                              text_columns=dataset.text_columns)

    def agreement_sources(self, dataset: Dataset) -> tuple[str | None, pd.DataFrame | None, str]:
        """What held-out agreement is measured against: the stored human labels of the aspect
        (kappa) when there are any, else the reference column of the aspect (Spearman), else
        nothing; with the choice in words."""
        if self.options.holdout == 0:
            return None, None, "none (no held-out contexts)"
        human = (self.store.backend.human_judgements_frame(self.info.dataset_id, self.info.aspect)
                 if self.info.dataset_id is not None else pd.DataFrame())
        if len(human):
            return None, human, (f"Cohen's kappa with the {len(human):,} stored human label(s) "
                                 f"of '{self.info.aspect}' on the held-out contexts")
        column = reference_column(self.info.aspect, dataset.score_columns)
        if column is not None:
            return column, None, (f"Spearman x100 with the reference column '{column}' on the "
                                  "held-out contexts")
        return None, None, ("none (no human labels or reference column for "
                            f"'{self.info.aspect}')")

    def plan(self) -> TuningPlan:
        """The cost before it starts (:class:`TuningPlan`)."""
        dataset = self.dataset()
        o = self.options
        tuning.split_contexts(dataset, o.contexts, o.holdout)  # checks the counts
        start = tuning.starting_wordings(self.task(dataset))
        settings = self.settings(dataset, start[0])
        kind = kind_of(settings)
        per_wording = kind.planned_total(dataset, settings)
        per_tune = kind.planned_total(dataset, settings.with_changes(contexts=o.contexts))
        rounds = o.rounds if o.writer else 0  # no writer: the starting wordings only
        most = len(start) + rounds * o.per_round
        cap = most if o.budget is None else min(most, o.budget // max(per_wording, 1))
        if cap < 1:
            raise InputError(f"a budget of {o.budget:,} comparisons is less than one wording's "
                             f"{per_wording:,}: raise --budget or lower --contexts/--pairs")
        one = self.store.estimate_time(dataset, settings)
        time = dataclasses.replace(one, seconds=one.seconds * cap, tokens=one.tokens * cap)
        return TuningPlan(start=min(len(start), cap), rounds=rounds, per_round=o.per_round,
                          max_wordings=cap, per_wording=per_wording, per_wording_tune=per_tune,
                          comparisons=cap * per_wording, time=time,
                          agreement_with=self.agreement_sources(dataset)[2])

    def runs(self) -> dict[str, "Run"]:
        """The runs of its wordings stored so far, by wording key."""
        by_name = {r.name: r for r in self.store.list_runs(self.info.dataset_id)}
        return {w.key: by_name[run_name(self.name, w.key)] for w in self.wordings
                if run_name(self.name, w.key) in by_name}

    # ------------------------------------------------------------------- its result

    def result(self, *, n_boot: int = 1000) -> TuningResult:
        """The table of every wording judged so far, from their stored runs (:class:`TuningResult`)."""
        dataset = self.dataset()
        o = self.options
        tune_ids, hold_ids = tuning.split_contexts(dataset, o.contexts, o.holdout)
        reference, human, agreement_with = self.agreement_sources(dataset)
        runs = self.runs()
        baseline = (runs[tuning.BASELINE].results if tuning.BASELINE in runs
                    and runs[tuning.BASELINE].n_comparisons else None)
        scores = [tuning.score_wording(w, dataset, runs[w.key].results, tune_ids, hold_ids,
                                       reference=reference, human=human, baseline=baseline,
                                       n_boot=n_boot, seed=o.seed)
                  for w in self.wordings if w.key in runs and runs[w.key].n_comparisons]
        decision = tuning.decide(scores)
        picked = decision.picked
        saved = self.store.backend.get_template(self.name)
        template = (self.name if saved is not None and saved.tuning == self.name
                    and picked is not None and saved.text == picked.wording.text else None)
        return TuningResult(
            name=self.name, dataset=self.info.dataset_name, aspect=self.info.aspect,
            model=o.model, status=self.status, message=self.info.message,
            table=tuning.tuning_table(scores, self.aspect),
            picked=None if picked is None else picked.wording, template=template,
            comparisons_tune=int(sum(s.n_tune for s in scores)),
            comparisons_holdout=int(sum(s.n_holdout for s in scores)),
            agreement_with=agreement_with, scores=tuple(scores), reason=decision.reason,
            warnings=tuple(tuning.sample_warnings(scores)), vs_t1=_behind(decision, scores),
            writer=o.writer)

    # ------------------------------------------------------------------- executing

    def execute(self, *, judge=None, writer=None, progress=True, n_boot: int = 1000,
                threads: int | None = None) -> TuningResult:
        """Execute (or resume) the tuning in this process: judge the starting wordings, then
        ``rounds`` greedy rounds of paraphrases of the fairest so far written by ``writer`` (a
        loaded model that writes; default: the options' writer, loaded here: none, the judge
        itself by choice, or a model; a writer that cannot write ends the search after the
        starting wordings, and says so), within the budget; save the pick (T1 unless a wording
        beats it outside the paired interval) as the template named like the tuning. Every
        wording is a run (``tune-<name>-<key>``): what is stored is never judged again, and
        comparisons other runs of the judge stored are reused.

        Raises
        ------
        RunInterrupted, RunCancelled
            Stopped (Ctrl-C, a signal, or a cancel from the app): everything judged is stored,
            the tuning is marked cancelled, and executing it again resumes it.
        InputError
            A judge that cannot load or whose prompts do not fit, bad counts of contexts.
        """
        backend = self.store.backend
        dataset = self.dataset()
        o = self.options
        reporter = _reporter(progress, get_kind("comparative"))
        tune_ids, hold_ids = tuning.split_contexts(dataset, o.contexts, o.holdout)
        if not self.info.wordings:
            backend.set_tuning_wordings(self.id, [w.to_dict() for w in
                                                  tuning.starting_wordings(self.task(dataset))])
            self.refresh()
        plan = self.plan()
        reporter.message(f"tuning '{self.name}' on dataset '{self.info.dataset_name}', aspect "
                         f"'{self.info.aspect}': {plan.sentence()}")
        reference, human, _ = self.agreement_sources(dataset)
        backend.set_tuning_status(self.id, "running", message="loading the judge",
                                  clear_cancel=True)
        stop = threading.Event()
        beat = threading.Thread(target=_heartbeat, args=(backend, self.id, stop), daemon=True,
                                name=f"tuning-heartbeat-{self.id}")
        beat.start()
        try:
            if threads:
                os.environ["COMPASSESS_THREADS"] = str(threads)
            start = [w for w in self.wordings if w.round == 0]
            first = self.settings(dataset, start[0])
            if judge is None:
                judge = executor.load_run_judge(first)
            kind_of(first).preflight(dataset, first, judge)
            why_not = None
            if writer is None and o.rounds:
                writer, why_not = self._load_writer(judge, reporter)
            if writer is not None and why_not is None:
                why_not = cannot_write(writer)
            if why_not and o.rounds:
                reporter.message(f"note: no paraphrases will be written: {why_not}")
            state = tuning.greedy_search(
                start, self._evaluator(dataset, judge, reporter, tune_ids, hold_ids, reference,
                                       human, n_boot),
                None if why_not else self._writer(writer, reporter),
                rounds=o.rounds, max_wordings=plan.max_wordings,
                cancelled=lambda: backend.tuning_cancel_requested(self.id),
                # Together where that saves work: a judge with a prefix cache reads each pair's
                # context and texts once for every wording; a served judge is paid per request
                # (and its progress then moves a wording at a time, as before).
                judge_together=(self._together(dataset, judge, reporter)
                                if getattr(judge, "prefix_cache", False) else None))
            if state.stopped == "cancelled":
                raise RunCancelled("the tuning was cancelled; run it again to resume")
        except (RunCancelled, RunInterrupted, KeyboardInterrupt):
            backend.set_tuning_status(self.id, "cancelled", message="stopped on request; run "
                                      "it again to resume (everything judged is stored)")
            raise
        except BaseException as e:
            backend.set_tuning_status(self.id, "failed", message=str(e) or type(e).__name__)
            raise
        finally:
            stop.set()
        decision = tuning.decide(state.scores)
        picked = decision.picked
        if picked is not None:
            backend.save_template(
                self.name, picked.wording.text, picked.wording.noun, tuning=self.name,
                source=(f"the pick of {len(state.scores)} wording(s) tuned by '{self.name}' "
                        f"on dataset '{self.info.dataset_name}', aspect '{self.info.aspect}', "
                        f"judge {o.model} (fairness {picked.fairness:.3f} [95% "
                        f"{picked.fairness_low:.3f}, {picked.fairness_high:.3f}], P(A) raw "
                        f"{picked.p_a_raw:.3f}): {decision.reason}"),
                created_by=self.info.created_by)
        backend.set_tuning_status(self.id, "completed", message=state.outcome)
        self.refresh()
        result = self.result(n_boot=n_boot)
        if picked is not None:
            reporter.message(f"picked {picked.key} ({picked.wording.label}): {decision.reason}; "
                             f"saved as template '{self.name}' (compassess run --template "
                             f"{self.name})")
        for line in result.warnings:
            reporter.message(f"warning: {line}")
        return result

    def _load_writer(self, judge, reporter):
        """The options' writer: (None, why) for none; the judge itself when chosen; else the
        model it names, loaded like a judge (a served ``openai:...`` model or a local one)."""
        o = self.options
        if o.writer == tuning.NO_WRITER:
            return None, ("no writer chosen (--writer MODEL, or --writer judge for the judge "
                          "itself)")
        if o.writer == tuning.JUDGE_WRITER:
            return judge, None
        from ..judges import load_judge
        reporter.message(f"loading the writer {o.writer}")
        return load_judge(o.writer, device=o.device, dtype=o.dtype,
                          batch_size=o.batch_size), None

    def _run_of(self, dataset: Dataset, w: tuning.Wording):
        """The wording's run (``tune-<name>-<key>``), created or, to resume, the stored one."""
        return self.store.create_run(self.info.dataset_id, self.settings(dataset, w),
                                     name=run_name(self.name, w.key))

    def _together(self, dataset: Dataset, judge, reporter
                  ) -> Callable[[list[tuning.Wording]], None]:
        def judge_together(wordings: list[tuning.Wording]) -> None:
            """The wordings' runs judged in one pass (``Store.execute``): the prompts of the
            same ordered pair differ only in the instruction, so the judge reads the context
            and both texts once for all of them (its prefix cache); each run is stored and
            resumed on its own, and a cancel of the tuning cancels them all."""
            runs = [(w, self._run_of(dataset, w)) for w in wordings]
            for w, run in runs:
                reporter.message(f"{w.key} ({w.label}): run '{run.name}'")
            left = [(w, run) for w, run in runs if run.status != "completed"]
            if left:
                self.store.backend.set_tuning_status(
                    self.id, "running",
                    message="judging " + ", ".join(f"{w.key} ({w.label})" for w, _ in left))
                self.store.execute([run for _, run in left], judge=judge, progress=reporter)
        return judge_together

    def _evaluator(self, dataset: Dataset, judge, reporter, tune_ids, hold_ids, reference,
                   human, n_boot: int) -> Callable[[tuning.Wording], tuning.WordingScore]:
        tables: dict = {}

        def evaluate(w: tuning.Wording) -> tuning.WordingScore:
            run = self._run_of(dataset, w)
            if run.status != "completed":  # not judged together with others: judged here
                self.store.backend.set_tuning_status(self.id, "running",
                                                     message=f"judging {w.key} ({w.label})")
                reporter.message(f"{w.key} ({w.label}): run '{run.name}'")
                run.execute(judge=judge, progress=reporter)
            results = run.results
            if w.key == tuning.BASELINE:
                tables[w.key] = results
            score = tuning.score_wording(w, dataset, results, tune_ids, hold_ids,
                                         reference=reference, human=human,
                                         baseline=tables.get(tuning.BASELINE), n_boot=n_boot,
                                         seed=self.options.seed)
            vs = score.vs_baseline
            reporter.message(
                f"{w.key}: fairness {score.fairness:.3f} [95% {score.fairness_low:.3f}, "
                f"{score.fairness_high:.3f}] ({score.n_decisions:,} decisions in "
                f"{score.n_contexts} context(s)), P(A) raw {score.p_a_raw:.3f}, flip rate "
                f"{score.flip_rate:.3f}"
                + ("" if vs is None else f"; vs T1 {vs.difference:+.3f} [95% {vs.low:+.3f}, "
                                         f"{vs.high:+.3f}]"))
            return score
        return evaluate

    def _writer(self, writer, reporter) -> Callable[[tuning.Wording, int], list[tuning.Wording]]:
        o = self.options

        def write(best: tuning.Wording, round_: int) -> list[tuning.Wording]:
            known = self.refresh().wordings
            stored = [w for w in known if w.round == round_]
            if stored:  # written before this tuning was stopped: the same texts again
                return stored
            self.store.backend.set_tuning_status(self.id, "running", message=f"round {round_}: "
                                                 f"writing paraphrases of {best.key}")
            options = GenerationOptions(max_new_tokens=tuning.PARAPHRASE_TOKENS, sample=True,
                                        temperature=tuning.PARAPHRASE_TEMPERATURE)
            seeds = [o.seed * 100_000 + round_ * 100 + k for k in range(o.per_round)]
            replies = writer.generate([tuning.paraphrase_request(best, self.aspect)] * o.per_round,
                                      options, seeds=seeds)
            new = tuning.written_wordings(replies, best, self.aspect, round=round_,
                                          first_key=len(known) + 1,
                                          known=[w.text for w in known])
            reporter.message(f"round {round_}: {len(new)} of {o.per_round} paraphrase(s) of "
                             f"{best.key} usable")
            for reply in replies:  # what the writer wrote that is no wording, for the log
                if tuning.parse_paraphrase(reply, best, self.aspect) is None:
                    reporter.message(f"unusable: {' '.join(str(reply).split())[:200]!r}")
            self.store.backend.set_tuning_wordings(
                self.id, [w.to_dict() for w in known] + [w.to_dict() for w in new])
            return new
        return write

    @property
    def worker_log_path(self) -> Path:
        """Where this tuning's worker processes write (``$COMPASSESS_HOME/logs/tuning-<id>.log``,
        beside the runs' worker logs)."""
        return background.worker_log_path(self.id).parent / f"tuning-{int(self.id)}.log"

    def worker_log(self, n_lines: int = 6) -> str:
        """The last ``n_lines`` lines its worker wrote ("" before any)."""
        return background.log_tail(self.worker_log_path, max(int(n_lines), 1))

    def start_worker(self, log_path: str | os.PathLike | None = None, *,
                     cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Execute (resume) the tuning in a worker process of its own, as the app does
        (``store.job("tuning", tuning).start()``); it writes
        its output to ``log_path`` (default :attr:`worker_log_path`); :meth:`result` shows how
        far it got.

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach; a worker is already working
            on it; or its judge is served by a server that is not configured here
            (:attr:`judge_problem`: nothing starts and nothing is requested from it, and the
            tuning's message says why).
        """
        return self.store.job("tuning", self).start(log_path, cwd=cwd)

    @property
    def judge_problem(self) -> str | None:
        """Why this process may not use the tuning's judge (None: it may): a served judge whose
        server is not one of the configured servers (``judges.servers``, the allowlist), as for
        a run (``Run.judge_problem``). A stored tuning's model spec is not trusted: it may come
        from an imported store or a changed configuration."""
        from ..judges.servers import served_model_problem
        return served_model_problem(self.options.model)

    def refuse_unconfigured_judge(self) -> None:
        """Raise ``InputError`` (and record why as the tuning's message, its status unchanged)
        when :attr:`judge_problem` says its judge may not be used here."""
        problem = self.judge_problem
        if problem is not None:
            self.store.backend.set_tuning_status(self.id, self.refresh().status,
                                                 message=problem, heartbeat=False)
            raise InputError(problem)

    def cancel(self) -> None:
        """Ask whoever executes the tuning to stop (the wording run in flight stops after its
        micro-batch)."""
        self.store.backend.request_tuning_cancel(self.id)
        for run in self.runs().values():
            if run.status == "running":
                run.cancel()

    @property
    def state(self) -> str:
        """``working`` while a worker sends heartbeats, ``stale`` when one marked it running and
        stopped (died), else the status."""
        if self.status != "running":
            return self.status
        beat = self.info.heartbeat_at
        if beat is None:
            return "stale"
        from datetime import datetime, timezone
        from ..runs.run_loop import STALE_AFTER_S
        age = (datetime.now(timezone.utc) - beat).total_seconds()
        return "working" if age < STALE_AFTER_S else "stale"


def _behind(decision: tuning.Decision, scores) -> "paired.PairedDifference | None":
    """The paired test behind a decision: the pick's against T1, else the fairest other
    wording's (the one that came closest)."""
    if decision.picked is not None and decision.picked.vs_baseline is not None:
        return decision.picked.vs_baseline
    others = [s for s in scores if s.vs_baseline is not None]
    best = tuning.fairest(others)
    return None if best is None else best.vs_baseline


def _heartbeat(backend, tuning_id: int, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            backend.touch_tuning(tuning_id)
        except Exception:  # noqa: BLE001 - a missed beat is not worth stopping the tuning
            pass


def check_tuning_name(name: str) -> str:
    """A tuning name within its bound (its runs' names must fit a run name's).

    Raises
    ------
    InputError
        Too long.
    """
    if len(name) > MAX_TUNING_NAME:
        raise InputError(f"a tuning name has at most {MAX_TUNING_NAME} characters, not "
                         f"{len(name)}")
    return name


__all__ = ["Tuning", "TuningPlan", "TuningResult", "run_name", "default_tuning_name",
           "check_tuning_name"]


def create_tuning(store: StoreHandle, data, *, aspect: str, name: str | None = None,
                  options: tuning.TuningOptions, created_by: str = "") -> Tuning:
    """Store ``data`` (when it is not stored yet) and a tuning of ``options`` on it, without
    executing it (:meth:`Store.create_tuning`)."""
    dataset, dataset_id = store.read_data(data)
    if dataset_id is None:
        dataset_id = store.backend.save_dataset(dataset)
    stored = store.backend.load_dataset(dataset_id)
    aspect_name = Aspect.from_name(aspect).name
    tuning.split_contexts(stored, options.contexts, options.holdout)  # checks the counts
    name = check_tuning_name(name or default_tuning_name(stored.name, aspect_name, options.model))
    tuning_id = store.backend.create_tuning(name, dataset_id, aspect_name, options.to_dict(),
                                            created_by=created_by)
    return Tuning(store, store.backend.get_tuning(tuning_id))


def plan_tuning(store: StoreHandle, dataset_id: int | Dataset, *, aspect: str,
                options: tuning.TuningOptions, name: str = "(not stored)") -> TuningPlan:
    """The plan of a tuning not stored yet (what the Tune page shows before Start, and
    ``compassess tune --plan``): on a stored dataset (its id), or on a :class:`Dataset` not
    stored (no human labels then); nothing is stored."""
    from types import SimpleNamespace
    if isinstance(dataset_id, Dataset):
        dataset, stored_id = dataset_id, None
    else:
        dataset, stored_id = store.backend.load_dataset(int(dataset_id)), int(dataset_id)
    info = SimpleNamespace(id=None, name=name, dataset_id=stored_id,
                           dataset_name=dataset.name, aspect=Aspect.from_name(aspect).name,
                           options=options.to_dict(), wordings=[], status="new", message=None,
                           created_by="", heartbeat_at=None)
    planned = Tuning(store, info)
    if stored_id is None:
        planned._unstored_dataset = dataset
    return planned.plan()
