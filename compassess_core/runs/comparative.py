"""The comparative run kind: pairwise judgements ``p_ij`` of ordered pairs (the paper's method).

Planning picks each context's ordered pairs (``selection.select_pairs``, paper §3.4, or the
efficient strategies of ``efficient``), leaves out the pairs the run already stored, and cuts the
rest into chunks of whole first-candidate groups, so the judge's prefix cache stays warm (contexts
with few pairs, such as A-vs-B data, share a chunk so the judge's batches stay full). Adaptive
selection is a generator that chooses each next batch of a context from the outcomes stored so
far. Reading a run back gives rankings (``analysis.rank_contexts``) and the evaluation report
(``analysis.evaluate_run``).

This module must never import the store or a UI; the run loop (``run_loop``) drives its plan.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..stats import analysis
from .context_window import ContextFit, fit_contexts
from ..stats.efficient import adaptive_next_pairs
from ..errors import InputError
from .prompts import Template, prompt_hash, resolve_template
from ..report_text import fmt, table
from .run_loop import WorkPlan
from .selection import OUTCOME_DEPENDENT, STRATEGIES, max_budget, select_pairs
from .settings import RunSettings, label_words_key
from ..types import ComparisonPrompt, ComparisonResult, Context, Dataset, IntArray, PairKey
from ..report_text import counted

#: Prompts per judge call, rounded up to whole first-candidate groups: large enough that the judge
#: reuses a context's key/value prefix for many pairs (a SummEval article is 2 calls); what is
#: stored and reported is each micro-batch inside it, whatever its size.
DEFAULT_CHUNK_PROMPTS = 128


def context_seed(seed: int, context_id: str) -> np.random.Generator:
    """A per-context generator that does not depend on which other contexts are in the run."""
    digest = int(hashlib.sha256(context_id.encode("utf-8")).hexdigest()[:8], 16)
    return np.random.default_rng([seed, digest])


def context_budget(context: Context, settings: RunSettings) -> int:
    """Comparisons one context gets: its share of the budget, capped at what its size allows
    (contexts of one dataset may differ in size, so one budget works for every context)."""
    n = len(context.candidates)
    if settings.strategy == "full" or settings.budget is None:
        return max_budget(n, "full")
    return min(int(settings.budget), max_budget(n, settings.strategy))


def planned_pairs(context: Context, settings: RunSettings) -> IntArray:
    """The ordered pairs (first, second) of one context, as candidate indices (paper §3.4)."""
    n = len(context.candidates)
    budget = None if settings.strategy == "full" else context_budget(context, settings)
    return select_pairs(n, settings.strategy, budget,
                        context_seed(settings.seed, context.context_id))


def adaptive_batch_size(n: int) -> int:
    """Pairs an adaptive run judges per step in a context of ``n`` candidates: small enough that
    the outcomes steer the choice, large enough to keep the judge's batches busy."""
    return max(2, n // 2)


def render_prompt(context: Context, a: int, b: int, settings: RunSettings,
                  context_text: str | None = None) -> ComparisonPrompt:
    """The prompt of one comparison, rebuilt from the stored template and texts (``context_text``:
    the passage as the run used it, when it was truncated to fit the model)."""
    return settings.template.render(context.text if context_text is None else context_text,
                                    context.candidates[a].text, context.candidates[b].text,
                                    settings.aspect_obj)


def _first_candidate_groups(pairs: IntArray, target: int) -> Iterator[IntArray]:
    """Split pairs (sorted by first candidate) into chunks of whole first-candidate groups."""
    if len(pairs) == 0:
        return
    starts = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
    bounds = list(starts) + [len(pairs)]
    begin = 0
    for k in range(1, len(bounds)):
        if bounds[k] - begin >= target or k == len(bounds) - 1:
            yield pairs[begin:bounds[k]]
            begin = bounds[k]


class ComparativeKind:
    """Pairwise comparisons: ``p`` = P(first wins) for each planned ordered pair (eq. 3)."""

    # the RunKind protocol's names: the kind, what its progress counts, its speed, its title
    name, unit, rate_unit, label = ("comparative", "comparisons", "comparisons/s",
                                    "pairwise comparisons")
    is_pairwise = True
    results_page = "rankings"
    ranked_rows = "rankings"
    completed_is_final = True

    def settings(self, dataset: str, options, model) -> RunSettings:
        """The settings of a run on dataset ``dataset`` (its name) from its
        ``options.ComparativeOptions`` and ``options.ModelOptions``, checked.

        Raises
        ------
        InputError
            A template that is neither t1, t2 nor a readable template file, or settings this
            kind cannot run.
        """
        aspect = options.aspect
        template = (options.template if isinstance(options.template, Template)
                    else resolve_template(options.template, aspect, options.task))
        settings = RunSettings(
            dataset=dataset, aspect=aspect.name, aspect_adjective=aspect.adjective,
            template_name=template.name, template_text=template.text, primer=template.primer,
            strategy=options.strategy, budget=options.budget, seed=options.seed,
            **model.settings_fields())
        self.check(settings)
        return settings

    def advice(self, dataset: Dataset, settings: RunSettings) -> list[str]:
        """What the user should know before starting: a budget below one comparison per
        candidate of the run's largest context (some candidates cannot be ranked, and poe's
        greedy variance criterion builds long chains there: docs/results.md, section 2), and
        the candidates the run's planned pairs leave without a comparison (random selection
        does even at larger budgets). The run's contexts count, not the whole dataset's."""
        if settings.strategy == "full" or settings.budget is None:
            return []
        contexts = dataset.head(settings.contexts).contexts
        largest = max((len(c.candidates) for c in contexts), default=0)
        out = []
        if settings.budget < largest:
            out.append(f"A budget of {settings.budget} is below one comparison per candidate "
                       f"({largest} in the largest context): some candidates cannot be ranked; "
                       f"at least {2 * largest} (two per candidate) is recommended.")
        if settings.strategy not in OUTCOME_DEPENDENT:
            left = [len(c.candidates) - len(np.unique(planned_pairs(c, settings)))
                    for c in contexts]
            if sum(left):
                out.append(f"This selection leaves {sum(left)} candidate(s) in "
                           f"{sum(1 for n in left if n)} context(s) unjudged (strategy "
                           f"'{settings.strategy}', budget {settings.budget}, seed "
                           f"{settings.seed}): they cannot be ranked.")
        return out

    def check(self, settings: RunSettings) -> None:
        if settings.strategy not in STRATEGIES:
            raise InputError(f"unknown strategy '{settings.strategy}'; choose one of "
                             f"{', '.join(STRATEGIES)}")
        if settings.strategy != "full" and settings.budget is None:
            raise InputError(f"strategy '{settings.strategy}' needs a budget (comparisons per context)")
        if settings.budget is not None and settings.budget < 1:
            raise InputError("the budget must be at least 1 comparison per context")

    def judge_label_words(self, settings: RunSettings) -> tuple[str, ...]:
        return tuple(settings.label_words)

    def judge_key(self, judge) -> str:
        """The judge identity the run records and the cache matches (model, dtype, label words)."""
        return judge.model_key

    def preflight(self, dataset: Dataset, settings: RunSettings, judge) -> ContextFit:
        """Check the settings and that every prompt fits the judge (before anything is stored).

        Raises
        ------
        InputError
            Bad settings, or prompts longer than the context window (``ContextTooLong``).
        """
        self.check(settings)
        return fit_contexts(dataset.head(settings.contexts).contexts,
                            self.longest_prompts(settings), judge,
                            truncate=settings.truncate_context)

    def longest_prompts(self, settings: RunSettings):
        """The ``context_window.LongestPrompts`` of a comparative run: the pairs with the most
        candidate tokens (any pair for adaptive runs, whose pairs are chosen later)."""
        def offer(ctx: Context, text: str, count) -> list[tuple[str, ComparisonPrompt]]:
            pairs = (select_pairs(len(ctx.candidates), "full", None, context_seed(0, ""))
                     if settings.strategy in OUTCOME_DEPENDENT else planned_pairs(ctx, settings))
            lengths = count([c.text for c in ctx.candidates])
            top = np.argsort(-(lengths[pairs[:, 0]] + lengths[pairs[:, 1]]), kind="stable")[:3]
            ids = ctx.candidate_ids
            return [(f"the prompt comparing '{ids[a]}' (first) with '{ids[b]}' (second)",
                     render_prompt(ctx, int(a), int(b), settings, text)) for a, b in pairs[top]]
        return offer

    def example_prompt(self, dataset: Dataset, settings: RunSettings):
        """``RunKind.example_prompt``: the first context's first two candidates, in that order."""
        ctx = dataset.contexts[0]
        if len(ctx.candidates) < 2:
            return None
        return ctx.context_id, tuple(ctx.candidate_ids[:2]), render_prompt(ctx, 0, 1, settings)

    def planned_total(self, dataset: Dataset, settings: RunSettings) -> int:
        """Comparisons the run plans (paper §3.4 per context; the budget of an adaptive run),
        known before a judge is loaded."""
        contexts = dataset.head(settings.contexts).contexts
        if settings.strategy in OUTCOME_DEPENDENT:
            return int(sum(context_budget(c, settings) for c in contexts))
        return int(sum(len(planned_pairs(c, settings)) for c in contexts))

    def prompt_work(self, dataset: Dataset, settings: RunSettings) -> list[tuple[str, float]]:
        """``RunKind.prompt_work``: each passage once, each candidate once per planned pair it is
        in (an adaptive run's budget shared evenly among a context's candidates), the template's
        words once per pair."""
        empty = settings.template.render("", "", "", settings.aspect_obj)
        work: list[tuple[str, float]] = []
        n_prompts = 0
        for ctx in dataset.head(settings.contexts).contexts:
            work.append((ctx.text, 1.0))
            n = len(ctx.candidates)
            if settings.strategy in OUTCOME_DEPENDENT:
                budget = context_budget(ctx, settings)
                times = np.full(n, 2.0 * budget / n)
            else:
                pairs = planned_pairs(ctx, settings)
                budget = len(pairs)
                times = np.bincount(pairs.ravel(), minlength=n).astype(float)
            n_prompts += budget
            work += [(c.text, float(t)) for c, t in zip(ctx.candidates, times) if t]
        work.append((empty.text + empty.primer, float(n_prompts)))
        return work

    def plan(self, job) -> WorkPlan:
        """What run ``job.run_id`` still lacks, in chunks (``job``: a ``run_kinds.RunJob``)."""
        settings, judge = job.settings, job.judge
        fit = self.preflight(job.dataset, settings, judge)
        contexts = job.dataset.head(settings.contexts).contexts
        by_id = {c.context_id: c for c in contexts}
        position = {c.context_id: {k: i for i, k in enumerate(c.candidate_ids)} for c in contexts}
        texts = {c.context_id: fit.context_text(c) for c in contexts}
        stored: dict[PairKey, ComparisonResult] = job.stored

        def prompt(key: PairKey) -> ComparisonPrompt:
            ctx, pos = by_id[key.context_id], position[key.context_id]
            return render_prompt(ctx, pos[key.a_id], pos[key.b_id], settings, texts[key.context_id])

        if settings.strategy in OUTCOME_DEPENDENT:
            known: dict[PairKey, float] = {k: r.judgement.p for k, r in stored.items()}
            total = self.planned_total(job.dataset, settings)
            per_context = Counter(k.context_id for k in known)
            already = sum(min(per_context[c.context_id], context_budget(c, settings))
                          for c in contexts)
            batches = self._adaptive_batches(contexts, settings, known)
            on_results = lambda results: known.update((r.key, r.judgement.p) for r in results)  # noqa: E731
        else:
            plans = [(c, planned_pairs(c, settings)) for c in contexts]
            total = int(sum(len(p) for _, p in plans))
            todo = [(c, np.array([(a, b) for a, b in pairs
                                  if PairKey(c.context_id, c.candidates[a].candidate_id,
                                             c.candidates[b].candidate_id) not in stored],
                                 dtype=np.int64).reshape(-1, 2)) for c, pairs in plans]
            already = total - int(sum(len(t) for _, t in todo))
            batches = self._chunks(todo, job.chunk_prompts)
            on_results = None
        return WorkPlan(
            kind=self.name, unit=self.unit, total=total, already=already, batches=batches,
            prompt=prompt, prompt_hash=prompt_hash, compute=judge.judge_stream,
            result=lambda key, judgement, h: ComparisonResult(key, judgement, h),
            judge_key=self.judge_key(judge), label_words_key=label_words_key(judge.label_words),
            on_results=on_results, notes=fit.to_dict())

    @staticmethod
    def _chunks(todo: Sequence[tuple[Context, IntArray]], chunk_prompts: int
                ) -> Iterator[list[PairKey]]:
        """Chunks of about ``chunk_prompts`` keys: whole first-candidate groups, several small
        contexts together (an A-vs-B dataset has 2 pairs per context)."""
        pending: list[PairKey] = []
        for ctx, pairs in todo:
            ids = ctx.candidate_ids
            for group in _first_candidate_groups(pairs, chunk_prompts):
                pending.extend(PairKey(ctx.context_id, ids[a], ids[b]) for a, b in group)
                if len(pending) >= chunk_prompts:
                    yield pending
                    pending = []
        if pending:
            yield pending

    @staticmethod
    def _adaptive_batches(contexts: Sequence[Context], settings: RunSettings,
                          known: dict[PairKey, float]) -> Iterator[list[PairKey]]:
        """Each context batch by batch, each batch chosen from the outcomes of the batches
        before it (the loop adds every stored result to ``known`` before asking for the next).

        The batches are replayed from the start: batch k+1 is chosen from the outcomes of
        batches 1..k only, in their own order, and only its pairs not yet known are yielded.
        So a run stopped part-way through a batch (a cancel lands between micro-batches, in the
        judge's order) resumes with the very batches an uninterrupted run judges."""
        for ctx in contexts:
            ids = ctx.candidate_ids
            budget = context_budget(ctx, settings)
            step = adaptive_batch_size(len(ids))
            decided: list[tuple[int, int]] = []  # the pairs of the batches replayed so far
            while len(decided) < budget:
                # (a pair the loop could not judge stays out of the basis, as before replaying)
                seen = [(a, b, known[k]) for a, b in decided
                        if (k := PairKey(ctx.context_id, ids[a], ids[b])) in known]
                outcomes = np.array([o for _, _, o in seen], dtype=np.float64)
                at = np.array([(a, b) for a, b, _ in seen], dtype=np.int64).reshape(-1, 2)
                nxt = adaptive_next_pairs(len(ids), at[:, 0], at[:, 1], outcomes,
                                          min(step, budget - len(decided)),
                                          context_seed(settings.seed, ctx.context_id))
                if len(nxt) == 0:
                    break
                nxt = nxt[np.lexsort((nxt[:, 1], nxt[:, 0]))]
                keys = [PairKey(ctx.context_id, ids[a], ids[b]) for a, b in nxt]
                missing = [k for k in keys if k not in known]
                if missing:
                    yield missing
                decided.extend((int(a), int(b)) for a, b in nxt)

    # ------------------------------------------------------------------ reading a run back
    def read(self, reader, run_id: int, dataset: Dataset, settings: RunSettings):
        """The run's stored comparisons (``reader``: a ``ResultSink``)."""
        return reader.read_results(run_id, self.name)

    def rank(self, dataset: Dataset, table, options) -> pd.DataFrame:
        """One row per candidate (``analysis.rank_contexts``) at the options' method and tau
        (one tau* per context for ``balanced-per-context``: ``analysis.threshold_view``)."""
        view = analysis.threshold_view(table, options.debias)
        return analysis.rank_contexts(dataset, view.table, method=options.method, tau=view.tau,
                                      with_ci=options.ci)

    def evaluate(self, dataset: Dataset, table, options, *, run: str = ""):
        """``analysis.evaluate_run``: raw and debiased correlation with the reference, bias."""
        return analysis.evaluate_run(dataset, table, run=run, method=options.method,
                                     reference=options.reference, debias=options.debias)

    def results_frame(self, reader, run_id: int, dataset: Dataset,
                      settings: RunSettings) -> pd.DataFrame:
        """Every stored comparison with latency, prompt hash and time (the 'comparisons' export)."""
        return reader.read_results(run_id, self.name, detail=True)

    # ------------------------------------------------------------------ how it reads as text
    def ranking_header(self, run: str, results, settings: RunSettings, fields: dict,
                       n_rows: int) -> str:
        """What ``compassess rank`` prints above the table (``fields``: the ranking's metadata)."""
        at = fields.get("threshold") or f"tau = {fields['tau']:.4f}"
        return (f"# run {run}: {fields['method']} scores at {at} "
                f"({counted(len(results), 'comparison')})")

    def print_evaluation(self, report, out) -> None:
        """``compassess evaluate``'s text: raw and debiased numbers side by side."""
        r, d = report.raw, report.debiased
        print(f"run {report.run}: {counted(report.n_comparisons, 'comparison')} over "
              f"{counted(report.n_contexts, 'context')}; ranking method {report.method}; "
              "reference column: "
              f"{report.reference or 'none'}", file=out)
        table([
            ("threshold tau", fmt(r.tau, ".4f"),
             "per context" if report.debias == analysis.BALANCED_PER_CONTEXT else fmt(d.tau, ".4f")),
            ("Spearman x100 (per-context mean)", fmt(r.spearman_x100), fmt(d.spearman_x100)),
            ("Kendall x100 (per-context mean)", fmt(r.kendall_x100), fmt(d.kendall_x100)),
            ("system-level Spearman x100", fmt(r.system_spearman_x100),
             fmt(d.system_spearman_x100)),
            ("pooled Spearman x100 (all candidates)", fmt(r.pooled_spearman_x100),
             fmt(d.pooled_spearman_x100)),
            ("pairwise accuracy (pairs with different reference)", fmt(r.pairwise_accuracy, ".3f"),
             fmt(d.pairwise_accuracy, ".3f")),
            ("P(A) first position wins", fmt(r.p_a, ".3f"), fmt(d.p_a, ".3f")),
            ("P(B) second position wins", fmt(r.p_b, ".3f"), fmt(d.p_b, ".3f")),
        ], head=("raw", "debiased"), out=out)
        if report.debias == analysis.BALANCED_PER_CONTEXT:
            print(f"debiased at {report.threshold} (eq. 10 applied context by context)", file=out)
        print(f"balancing threshold tau* = {report.balanced_tau:.4f}; flip rate (verdict changes "
              f"with order, tau = 0.5) = {fmt(report.flip_rate, '.3f')} over "
              f"{counted(report.n_pairs_both_orders, 'pair')} judged in both orders", file=out)
        if r.contexts_skipped:
            print(f"{r.contexts_skipped} context(s) skipped: all reference scores equal", file=out)
        for label, e in (("raw", r), ("debiased", d)):
            if e.contexts_constant:
                print(f"{label}: in {e.contexts_constant} context(s) the ranking gives every "
                      "candidate the same score: correlation undefined there ("
                      + ("n/a: no context has a defined one" if e.contexts_used == 0
                         else "counted 0 in the mean") + ")", file=out)
        for note in report.notes:
            print(f"note: {note}", file=out)

    def summary_line(self, info) -> str:
        """How much a stored run holds, as a run picker shows it (``info``: the store's record)."""
        return f"{counted(info.n_comparisons or 0, 'comparison')}"
