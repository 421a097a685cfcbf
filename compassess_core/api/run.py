"""A stored run of one judge (:class:`Run`): what :class:`Verdicts` reads back, plus its exact
prompts and stored comparisons, executing it here or in a worker process, cancelling, renaming
and deleting it."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import pandas as pd

from ..runs import absolute, explanations
from ..stats.calibration import calibrated_table, fit_on_labels
from ..runs.comparative import render_prompt
from ..runs.context_window import truncated_text
from ..errors import InputError
from ..judges.servers import served_model_problem
from ..runs.prompts import prompt_hash
from ..report.audit import ShownComparison
from ..runs.run_loop import WORKER_STATE_TEXT, is_active, remaining_s
from ..judges.speed import TimeEstimate, estimate_time
from ..runs import executor
from ..runs.executor import Reporter
from . import background
from .progress import RunProgress, phase_of, phase_seconds
from .settings import _check_at_least
from .verdicts import Verdicts, _pairwise_only

if TYPE_CHECKING:
    from .records import Deleted


class Run(Verdicts):
    """A stored run of one judge: its settings, status and results (what :class:`Verdicts`
    reads back), the exact prompts and stored comparisons, and executing, cancelling, renaming
    and deleting it.

    Get one from :meth:`Store.run`, :meth:`Store.score` or :meth:`Store.get_run`. The
    dataset and the stored results are read once and kept; :meth:`refresh` reads them again
    (e.g. while a worker is still adding results).
    """

    def refresh(self) -> "Run":
        """Read the run's status and results again (they change while it executes); a
        calibrated view goes back to the judge's own p."""
        self.info = self.store.backend.get_run(self.id)
        self._results = self._parts = self.calibration = self._length_cache = None
        self._views = {}
        return self

    def comparisons(self) -> pd.DataFrame:
        """Every stored result as a table (the 'comparisons' export): comparisons with p,
        log-probabilities, label mass, latency, prompt hash and time; scored candidates for a
        scoring run; comparisons with references for an absolute run."""
        return self._kind.results_frame(self.store.backend, self.id, self.dataset, self.settings)


    @_pairwise_only("a stored comparison")
    def comparison(self, context_id: str, first: str, second: str) -> dict | None:
        """The stored comparison of ``first`` (position A) against ``second`` in one context: p,
        label-word mass, log-probabilities, latency, prompt hash (None: not compared)."""
        return self.store.backend.get_comparison(self.id, context_id, first, second)

    @_pairwise_only("a comparison prompt")
    def prompt(self, context_id: str, first: str, second: str):
        """The exact prompt the judge was given for ``first`` (A) against ``second`` (B): the
        run's template over the stored texts, with the context cut as the run cut it."""
        ctx = self.dataset.context(context_id)
        ids = ctx.candidate_ids
        kept = self.truncated_contexts.get(context_id)
        return render_prompt(ctx, ids.index(first), ids.index(second), self.settings,
                             truncated_text(ctx.text, kept))

    @_pairwise_only("a comparison prompt")
    def chat_prompt(self, context_id: str, first: str, second: str) -> str:
        """The exact text the run's judge was given for ``first`` (A) against ``second``:
        :meth:`prompt` in the model's chat template with the answer primer (a served judge:
        what was sent). Only the model's tokenizer is read (and kept for the next call), never
        its weights, and no judge server is contacted.

        Raises
        ------
        InputError
            The judge is served by a server not configured here (:attr:`judge_problem`), or
            its tokenizer cannot be read (``ModelLoadError``).
        """
        if self.judge_problem is not None:
            raise InputError(self.judge_problem)
        from ..judges.chat_template import rendered_prompt
        return rendered_prompt(self.settings.model, self.prompt(context_id, first, second),
                               self.settings.label_words)

    @_pairwise_only("calibration on human A/B labels")
    def calibrated(self, aspect: str | None = None) -> "Run":
        """This run with its p calibrated on the stored human A/B labels of ``aspect`` (default
        the run's): ``p_cal = sigmoid((logit p - b) / T)``, the bias ``b`` and temperature ``T``
        fitted on every labelled comparison. The returned view ranks, evaluates and exports the
        calibrated p (``--calibrate``), and :attr:`calibration` records the fit, which exports
        carry in their settings.

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, or no labelled pair judged by the run.
        """
        aspect = aspect or self.settings.aspect
        fit = fit_on_labels(self.results, self._stored_labels(aspect))
        view = Run(self.store, self.info, dataset=self.dataset,
                   results=calibrated_table(self.results, fit))
        view.calibration = {**fit.to_dict(), "labels": f"stored human labels of dataset "
                            f"'{self.dataset.name}', aspect '{aspect}'"}
        return view

    def _shown(self, row: Mapping, first: str, second: str) -> ShownComparison:
        """A comparison of the report with the exact prompt of ``first`` (A) against ``second``."""
        context_id = row["context_id"]
        try:  # the judge's reasons, when someone asked for them (never asked here)
            reasons = self.explanation(context_id, first, second)
        except InputError:
            reasons = None
        return ShownComparison(row=row, first=first, second=second,
                               prompt=self.prompt(context_id, first, second),
                               truncated_chars=self.truncated_contexts.get(context_id),
                               explanation=reasons if reasons is not None and any(
                                   o.text is not None for o in reasons.orders) else None)

    # ------------------------------------------------------------------------- executing

    def execute(self, *, judge=None, progress: bool | Reporter = True,
                chunk_size: int | None = None) -> "Run":
        """Execute (or resume) the run in this process: ``compassess worker``, the run job's
        own execution (``store.job("run", run).execute()``). Only what is not stored yet is
        computed; returns the run, refreshed.

        Raises
        ------
        RunInterrupted
            Ctrl-C or a notebook's stop button (a ``KeyboardInterrupt``; after the micro-batch
            in flight, a second press at once): everything computed is stored, the run is
            marked cancelled, and calling ``execute`` again resumes it.
        RunCancelled
            The run was cancelled in the store (e.g. from the app).
        InputError
            A model that cannot load or that is not the judge that started the run, or prompts
            too long (the run is marked failed with the message).
        """
        _check_at_least("chunk_size", chunk_size, 1)
        self.store.job("run", self, chunk_size=chunk_size).execute(judge=judge, progress=progress)
        return self.refresh()

    @property
    def judge_problem(self) -> str | None:
        """Why this process may not use the run's judge (None: it may): a served judge whose
        server is not one of the configured servers (``judges.servers``, the allowlist). A
        run's stored model spec is not trusted: it may come from an imported store."""
        return served_model_problem(self.settings.model)

    def check_startable(self) -> None:
        """Refuse (``InputError``) what a worker may not start (``Store.job("run", ...)
        .start()``): a run whose judge server is not configured here; a run with a live worker
        (read afresh)."""
        self.refresh()
        if self.judge_problem is not None:
            raise InputError(self.judge_problem)
        if is_active(self.state):
            raise InputError(f"run '{self.name}' already has a live worker")

    def start_worker(self, log_path: str | os.PathLike | None = None, *,
                     cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Execute the run in a worker process of its own (lower priority, outliving this one),
        as the app does: ``store.job("run", run).start()``; it writes progress to the store and its output to ``log_path``
        (default :meth:`worker_log_path`). :meth:`progress` shows how far it got,
        :meth:`worker_log` what it wrote; :meth:`cancel` stops it.

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach; a worker is already alive
            for the run; or its judge is served by a server that is not configured here
            (:attr:`judge_problem`: nothing starts and nothing is requested from it).
        """
        return self.store.job("run", self).start(log_path, cwd=cwd)

    @property
    def worker_log_path(self) -> Path:
        """Where this run's worker processes write (``$COMPASSESS_HOME/logs/worker-<id>.log``)."""
        return background.worker_log_path(self.id)

    def worker_log(self, n_lines: int = 12, log_path: str | os.PathLike | None = None) -> str:
        """The last ``n_lines`` lines its worker wrote ("" before any): the newest log of the
        runs judged with it (a worker of several runs writes to the first one's)."""
        _check_at_least("n_lines", n_lines, 1)
        if log_path is None:
            paths = [r.worker_log_path for r in self.judged_with()]
            existing = [p for p in paths if p.exists()]
            log_path = (max(existing, key=lambda p: p.stat().st_mtime) if existing
                        else self.worker_log_path)
        return background.log_tail(Path(log_path), n_lines)

    def progress(self, *, refresh: bool = True) -> RunProgress:
        """Where the run stands: its worker state, done and total, the worker's rate, the time
        left while it works, its phase (:class:`RunProgress`); read from the store afresh unless
        ``refresh=False`` (then as this handle last read it: cheap, for a list of runs)."""
        info = (self.refresh() if refresh else self).info
        kind, state = self._kind, self.state
        done, total = int(info.done or 0), int(info.total or 0)
        active = is_active(state)
        return RunProgress(
            state=state, state_text=WORKER_STATE_TEXT.get(state, state), done=done, total=total,
            unit=kind.unit, rate_unit=kind.rate_unit, rate=info.rate or None,
            eta_s=remaining_s(done, total, info.rate) if active else None,
            judge_s=info.judge_s or None, phase=phase_of(info) if active else None,
            message=info.message, phase_s=phase_seconds(info) if active else None)

    def judged_with(self) -> list["Run"]:
        """The runs judged in one pass with this one (several aspects, one worker: its plan's
        ``run_group``, in order, those still stored), this run among them; just this run when it
        was judged alone. Cancel and Resume act on all of them (:meth:`Store.start_worker`)."""
        ids = [int(i) for i in (self.info.plan or {}).get("run_group") or []]
        if self.id not in ids:
            return [self]
        group = []
        for run_id in ids:
            if run_id == self.id:
                group.append(self)
                continue
            try:
                group.append(self.store.get_run(run_id))
            except InputError:  # deleted since
                continue
        return group

    def cancel(self) -> None:
        """Ask whoever executes the run to stop after its micro-batch in flight."""
        self.store.backend.request_cancel(self.id)

    # ------------------------------------------------------------------ the judge's reasons

    @_pairwise_only("the judge's reasons")
    def explanation(self, context_id: str, first: str, second: str, *,
                    max_tokens: int = explanations.EXPLAIN_TOKENS,
                    debias: str | float = "balanced") -> explanations.Explanation:
        """The judge's stored reasons for its verdicts on ``first`` against ``second``, in both
        orders (the texts are None where none is stored yet); nothing is computed. Each order's
        verdict is also read at the threshold ``debias`` names (default: the balanced tau*, as
        the rankings), beside the answer the judge gave at 0.5, which its reasons explain.

        Raises
        ------
        InputError
            Not a pairwise run, the run has no recorded judge yet, or ``first`` was not compared
            with ``second`` in that order.
        """
        return self._explanation(context_id, first, second, max_tokens, debias)

    @_pairwise_only("the judge's reasons")
    def explain(self, context_id: str, first: str, second: str, *,
                max_tokens: int = explanations.EXPLAIN_TOKENS,
                judge=None, debias: str | float = "balanced") -> explanations.Explanation:
        """Ask the run's judge for the reasons of its verdicts on ``first`` (position A) against
        ``second``, in both orders the run judged (``compassess explain``): its own prompt, the
        answer it gave and a request for its reasons, at most ``max_tokens`` tokens, greedy.
        What is stored already is not asked again; what is written is stored with the judge's
        key and the prompt's hash, so every run of that judge on that prompt shows it. The
        comparison's p never changes. ``judge``: the run's judge already loaded; ``debias``:
        the threshold the run's verdicts are read at beside the judge's answer
        (:meth:`explanation`).

        Raises
        ------
        InputError
            Not a pairwise run, no recorded judge, the pair not compared in that order, a judge
            that cannot write text (a classifier; the message says so), a judge that is not the
            one that ran the run, or a bad ``max_tokens``.
        """
        found = self._explanation(context_id, first, second, max_tokens, debias)
        if found.complete:
            return found
        if judge is None:
            judge = executor.load_run_judge(self.settings)
        why = explanations.cannot_write(judge)
        if why is not None:
            raise InputError(why)
        if self._kind.judge_key(judge) != found.judge_key:
            raise InputError(f"run '{self.name}' was judged by {found.judge_key}, but its model "
                             f"now loads as {self._kind.judge_key(judge)}: its reasons would be "
                             "another judge's")
        options = explanations.generation_options(max_tokens)
        for order in found.orders:
            if order.text is not None:
                continue
            prompt = self.prompt(context_id, order.first, order.second)
            reply = judge.generate([explanations.explanation_request(prompt, order.p)],
                                   options)[0]
            self.store.backend.save_explanation(
                self.info.dataset_id, context_id, order.first, order.second,
                prompt_hash=prompt_hash(prompt), judge_key=found.judge_key,
                max_tokens=max_tokens, verdict=order.verdict, p=order.p,
                text=explanations.clean_reply(reply))
        return self._explanation(context_id, first, second, max_tokens, debias)

    def _explanation(self, context_id: str, first: str, second: str, max_tokens: int,
                     debias: str | float = "balanced") -> explanations.Explanation:
        _check_at_least("max_tokens", max_tokens, 1)
        if max_tokens > explanations.MAX_EXPLAIN_TOKENS:
            raise InputError(f"max_tokens must be at most {explanations.MAX_EXPLAIN_TOKENS}, "
                             f"not {max_tokens}")
        judge_key = self.info.judge_key
        if not judge_key:
            raise InputError(f"run '{self.name}' has no recorded judge yet (it has not "
                             "started): nothing to explain")
        if self.comparison(context_id, first, second) is None:
            raise InputError(f"run '{self.name}' did not compare '{first}' (first) with "
                             f"'{second}' in context '{context_id}'")

        def order(a: str, b: str) -> explanations.OrderReasons | None:
            row = self.comparison(context_id, a, b)
            if row is None:
                return None
            p = float(row["p"])
            stored = self.store.backend.get_explanation(
                prompt_hash(self.prompt(context_id, a, b)), judge_key, max_tokens)
            return explanations.OrderReasons(a, b, p, explanations.verdict(p),
                                             None if stored is None else stored["text"],
                                             explanations.decided(p, tau))
        tau = float(self.thresholds(debias)[context_id])
        return explanations.Explanation(context_id, first, second, judge_key, int(max_tokens),
                                        order(first, second), order(second, first), tau=tau,
                                        debias=debias)

    def explain_estimate(self, context_id: str, first: str, second: str, *,
                         max_tokens: int = explanations.EXPLAIN_TOKENS) -> TimeEstimate:
        """How long :meth:`explain` takes on this machine before it starts (loading the judge
        not included), from the estimator the Run page's plan uses (``speed.estimate_time``:
        the judge's median prompt tokens per second over its finished runs here, else the
        rough default): the requests of the orders whose reasons are not stored yet, plus
        ``max_tokens`` new tokens for each, counted at the same rate. A written token is a pass
        of the model of its own, so this is the least it takes; zero when all are stored.

        Raises
        ------
        InputError
            What :meth:`explanation` raises.
        """
        found = self._explanation(context_id, first, second, max_tokens)
        missing = [o for o in found.orders if o is not None and o.text is None]
        work = [(explanations.explanation_request(self.prompt(context_id, o.first, o.second),
                                                  o.p), 1.0) for o in missing]
        finished = [r for r in self.store.backend.list_runs() if r.status != "running"]
        read = estimate_time(work, finished, self.settings.model, self.settings.device)
        written = float(max_tokens * len(missing))
        return dataclasses.replace(read, tokens=read.tokens + written,
                                   seconds=read.seconds + written / read.token_rate)

    def explain_log_path(self, context_id: str, first: str, second: str) -> Path:
        """Where the worker that asks the judge for its reasons on one pair writes (beside the
        run's worker log; named by a hash: ids may hold characters a file name cannot)."""
        digest = hashlib.sha256(f"{context_id}\x00{first}\x00{second}".encode()).hexdigest()[:16]
        return self.worker_log_path.parent / f"explain-{int(self.id)}-{digest}.log"

    def start_explain_worker(self, context_id: str, first: str, second: str,
                             log_path: str | os.PathLike | None = None, *,
                             max_tokens: int = explanations.EXPLAIN_TOKENS,
                             cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Ask for the judge's reasons (:meth:`explain`) in a process of its own, as the app
        does (never in the web server): ``store.job("explanation", run, context=...,
        first=..., second=...).start()``; it stores them and writes its output to ``log_path``;
        :meth:`explanation` shows them once stored.

        Raises
        ------
        InputError
            An in-memory store, or what :meth:`explanation` raises.
        """
        return self.store.job("explanation", self, context=context_id, first=first,
                              second=second, max_tokens=max_tokens).start(log_path, cwd=cwd)

    # ---------------------------------------------------------------- absolute scores

    @property
    def reference_set(self) -> str:
        """The stored reference texts an absolute run uses (``upload``, or the identity of the
        model that writes them): ``Store.references(dataset, aspect, run.reference_set)``."""
        return absolute.reference_set_key(self.settings, self.info.judge_key)

    def score_range(self, score: str = "level") -> tuple[float, float]:
        """The range an absolute run's ``score`` can take: ``level`` in [1, N], ``score`` in
        +-N(N+1)/2 (N reference levels)."""
        return absolute.score_range(score, self.settings.reference_options.n_levels)

    def comparisons_behind(self, context_id: str, candidate_id: str) -> pd.DataFrame:
        """The comparisons with references behind one candidate's absolute score, seen from the
        candidate (``pb_target``, ``pw_target``, ``ps_target``) with each one's contribution
        to the paper's score."""
        frame = self.results[0]
        mine = frame[(frame["context_id"] == context_id) & (frame["candidate_id"] == candidate_id)]
        return absolute.comparisons_in_target_view(mine)

    # ---------------------------------------------------------------------- managing it

    def delete(self, *, dry_run: bool = False) -> Deleted:
        """Delete this run with its results (:meth:`Store.delete_run`); this object keeps what
        it had read, but nothing can be read again."""
        return self.store.delete_run(self.id, dry_run=dry_run)

    def rename(self, new_name: str) -> "Run":
        """Give this run another name (:meth:`Store.rename_run`); returns this run, read again."""
        self.store.backend.rename_run(self.id, new_name)
        self.info = self.store.backend.get_run(self.id)
        return self


