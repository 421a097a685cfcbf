"""Prompt scoring baselines (Liusie et al. 2024, EACL, §4.3.2 and Figure 3): argmax score and G-Eval.

The model is asked for a score between 1 and 10 for one candidate at a time; its next-token
distribution after the primed answer ``"Score: "`` gives ``P(score = s)`` for s = 1..10. The
*prompt-scoring* baseline takes the argmax, *G-Eval* the expected value ``sum_s s P(s)``.

"10" is two tokens ("1", "0") for the tokenizers used here (SmolLM2, Qwen2.5 split digits), so a
single next-token read cannot tell "1" from "10". The score tokens are resolved in context: each
score is tokenised after the primer; a score that is one token is read at the first step; a score
of two tokens whose first token is another score's token (``"10" = "1" + "0"``) is resolved by a
second step on the prompt extended by that first token (which shares the whole prompt prefix, so
the prefix-cached judge computes it for one extra token):
``P(10) = P("1") P("0" | "1")`` and ``P(1) = P("1") (1 - sum_d P(d | "1"))`` where ``d`` runs
over the score-piece tokens (digits), so "1" followed by another digit (11..19, out of range)
counts for neither. ``label_mass`` is the total probability of the ten valid scores; the stored
distribution is renormalised over them.

The run kind (:class:`ScoringKind`) plans one stored score per candidate and run; the one run loop
(``run_loop``) streams them to the store, resumes without recomputation and reuses the cache (by
the scorer's model key and the rendered prompt's hash). This module must never import the store
or a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from .context_window import ContextFit, fit_contexts
from ..errors import InputError, TemplateError
from ..judges.base import collect_judgements, timed
from .prompts import Aspect, infer_task, prompt_hash, task_wording
from ..report_text import fmt
from .run_loop import WorkPlan
from .settings import RunSettings, label_words_key
from ..types import (CandidateKey, ComparisonPrompt, Context, Dataset, FloatArray,  # noqa: F401
                    ScoreJudgement, ScoreResult, ScoreTable)
from ..report_text import counted

#: Scores the templates ask for.
SCORES: tuple[int, ...] = tuple(range(1, 11))
#: The answer primer: the next token is the score's first digit (the space is in the primer so
#: that digits follow it directly; both tokenizers here tokenise "Score: 7" as ... "Ġ", "7").
SCORE_PRIMER = "Score: "
#: Stored in the run's ``label_words`` so scoring runs are told apart in the cache.
SCORE_LABEL_WORDS = ("1", "10")
SCORING_TEMPLATES = ("s1", "s2")

#: Nouns for the s2 wording ("measures the summary's coherence").
ASPECT_NOUNS: dict[str, str] = {
    "understandable": "understandability", "grammar": "grammaticality", "overall": "overall quality",
}

_S1 = ("{source_label}: {{context}}\n\n{noun}: {{a}}\n\nScore the response between 1 and 10 "
       "based on how {{aspect}} the {lower} is")
_S2 = ("{{context}}\n\n{noun}: {{a}}\n\nProvide a score between 1 and 10 that measures the "
       "{lower}'s {{aspect_noun}}")


# ------------------------------------------------------------------------------ templates

@dataclass(frozen=True)
class ScoreTemplate:
    """A scoring template: placeholders ``{context} {a} {aspect} {aspect_noun}``."""

    name: str
    text: str

    def render(self, context: str, candidate: str, aspect: Aspect) -> ComparisonPrompt:
        noun = ASPECT_NOUNS.get(aspect.name, aspect.name)
        text = self.text.format(context=context, a=candidate, aspect=aspect.adjective,
                                aspect_noun=noun)
        return ComparisonPrompt(text=text, primer=SCORE_PRIMER)


def scoring_template(name: str, aspect: Aspect, task: str = "auto") -> ScoreTemplate:
    """The paper's Figure 3 scoring template ``s1`` (Passage/"Score the response ... how
    {adjective}") or ``s2`` ("Provide a score ... the summary's {aspect}"), in summary or dialogue
    wording (``auto``: dialogue for dialogue aspects, as for t1/t2).

    Raises
    ------
    TemplateError
        Unknown template name or task.
    """
    if task == "auto":
        task = infer_task(aspect)
    wording = task_wording(task)
    raw = {"s1": _S1, "s2": _S2}.get(name.lower())
    if raw is None:
        raise TemplateError(f"unknown scoring template '{name}'; choose one of "
                            f"{', '.join(SCORING_TEMPLATES)}")
    return ScoreTemplate(name=f"{name.lower()}-{task}", text=raw.format(**wording.fields()))


# ------------------------------------------------------------------------------ score arithmetic

@dataclass(frozen=True)
class ScorePlan:
    """How the ten scores map to token reads.

    ``first_ids[k]`` is the token read at step one for ``single[k]`` (score index 0..9);
    ``two_step`` lists (score index, first token, second token) for scores of two tokens;
    ``piece_ids`` are all score-piece tokens (what may follow a first token inside a number).
    """

    single: tuple[int, ...]
    first_ids: tuple[int, ...]
    two_step: tuple[tuple[int, int, int], ...]
    piece_ids: tuple[int, ...]

    @property
    def read_ids(self) -> tuple[int, ...]:
        """Every token id read at either step, in a fixed order (columns of the log-prob matrix)."""
        return tuple(dict.fromkeys(self.first_ids + tuple(s for _, _, s in self.two_step)
                                   + self.piece_ids))

    @property
    def step_two_firsts(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(f for _, f, _ in self.two_step))


def plan_score_tokens(tokenize: Callable[[str], list[int]], primer: str = SCORE_PRIMER,
                      digits_as_pieces: bool = True) -> ScorePlan:
    """Resolve the tokens of the scores 1..10 after ``primer`` (see the module docstring).

    Parameters
    ----------
    tokenize
        Text -> token ids without special tokens.
    digits_as_pieces
        Also treat the tokens of "0".."9" after the primer as number pieces (so "1" followed by
        any digit is not the score 1).

    Raises
    ------
    InputError
        A score that is more than two tokens, merges with the primer, or whose first token is no
        other score's token (it could not be resolved from two reads).
    """
    base = tokenize(primer)
    pieces: dict[str, list[int]] = {}
    for s in SCORES:
        full = tokenize(primer + str(s))
        if full[:len(base)] != base:
            raise InputError(f"score {s} merges with the primer {primer!r} for this tokenizer")
        pieces[str(s)] = full[len(base):]
    single = [s - 1 for s in SCORES if len(pieces[str(s)]) == 1]
    first_ids = [pieces[str(s + 1)][0] for s in single]
    if len(set(first_ids)) != len(first_ids):
        raise InputError("two scores map to the same token after the primer")
    two = []
    for s in SCORES:
        t = pieces[str(s)]
        if len(t) == 1:
            continue
        if len(t) != 2 or t[0] not in first_ids:
            raise InputError(f"score {s} is {len(t)} tokens after {primer!r} and does not start "
                             "with another score's token; it cannot be read from two steps")
        two.append((s - 1, t[0], t[1]))
    piece_ids = set(first_ids) | {sec for _, _, sec in two}
    if digits_as_pieces:
        for d in "0123456789":
            t = tokenize(primer + d)[len(base):]
            if len(t) == 1:
                piece_ids.add(t[0])
    return ScorePlan(tuple(single), tuple(first_ids), tuple(two), tuple(sorted(piece_ids)))


def score_distribution(plan: ScorePlan, step1: FloatArray,
                       step2: dict[int, FloatArray]) -> tuple[FloatArray, FloatArray]:
    """P(score) for s = 1..10 from the log-probabilities of the read tokens.

    Parameters
    ----------
    step1
        (n, len(plan.read_ids)) log-probs after the primer.
    step2
        For each first token of a two-token score: (n, len(plan.read_ids)) log-probs after the
        primer extended by that token.

    Returns
    -------
    (probabilities, label_mass)
        ``probabilities`` (n, 10) renormalised over the ten scores (rows sum to 1; NaN when the
        mass is 0), ``label_mass`` (n,) the unnormalised total probability of the ten scores.
    """
    col = {t: k for k, t in enumerate(plan.read_ids)}
    n = step1.shape[0]
    p1 = np.exp(step1)
    raw = np.zeros((n, len(SCORES)))
    for k, s in enumerate(plan.single):
        raw[:, s] = p1[:, col[plan.first_ids[k]]]
    piece_cols = [col[t] for t in plan.piece_ids]
    for first in plan.step_two_firsts:
        p2 = np.exp(step2[first])
        # The single-token score with this token only wins when no further digit follows.
        stop = np.clip(1.0 - p2[:, piece_cols].sum(axis=1), 0.0, 1.0)
        s_single = plan.single[plan.first_ids.index(first)]
        raw[:, s_single] = p1[:, col[first]] * stop
        for s, f, sec in plan.two_step:
            if f == first:
                raw[:, s] = p1[:, col[first]] * p2[:, col[sec]]
    mass = raw.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = raw / mass[:, None]
    return probs, mass


def argmax_and_expected(probs: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Prompt-scoring score (argmax, ties to the lower score) and the G-Eval expected score.

    G-Eval (Liu et al. 2023) weights each score by its probability: ``sum_s s P(s)``.
    """
    scores = np.asarray(SCORES, dtype=np.float64)
    ok = np.isfinite(probs).all(axis=1)
    arg = np.where(ok, scores[np.argmax(np.nan_to_num(probs, nan=-1.0), axis=1)], np.nan)
    exp = np.where(ok, np.nan_to_num(probs) @ scores, np.nan)
    return arg, exp


# ------------------------------------------------------------------------------ results

def judgements_from_distribution(probs: FloatArray, mass: FloatArray,
                                 latency_ms: float = float("nan")) -> list[ScoreJudgement]:
    arg, exp = argmax_and_expected(probs)
    return [ScoreJudgement(float(arg[k]), float(exp[k]), tuple(float(x) for x in probs[k]),
                           float(mass[k]), float(latency_ms)) for k in range(len(arg))]


# ------------------------------------------------------------------------------ the scorer

@dataclass(frozen=True)
class ScoreStream:
    """A scoring plan's ``compute`` (``CausalScorer.stream``): equal for the same judge, so the
    runs of one pass over several aspects are scored in one call (``run_loop.run_group``)."""

    judge: object
    scorer: "CausalScorer" = field(compare=False)

    def __call__(self, prompts: Sequence[ComparisonPrompt]):
        return self.scorer.stream(prompts)


class CausalScorer:
    """Prompt scoring with a causal chat model, on the comparative judge's prefix-cached pass.

    Wraps a ``CausalJudge`` (``judges.transformers_judge``): the same chat template and fp32
    head, reading the score tokens instead of the label words.
    """

    def __init__(self, judge) -> None:
        if getattr(judge, "kind", None) != "causal":
            raise InputError(f"prompt scoring needs a local causal model; {judge.description} "
                             "cannot read score-token probabilities")
        self.judge = judge
        tok = judge.tokenizer
        self.plan = plan_score_tokens(lambda t: list(tok(t, add_special_tokens=False)["input_ids"]))
        self.model_key = scorer_model_key(judge)
        self.label_words = SCORE_LABEL_WORDS
        self.description = judge.description

    def stream(self, prompts: Sequence[ComparisonPrompt]
               ) -> Iterator[tuple[np.ndarray, list[ScoreJudgement]]]:
        """Score the prompts (one candidate each), ``(indices, judgements)`` as candidates finish.

        Both steps run in one prefix-cached pass; a candidate is yielded with the micro-batch
        that completes its last read (its second-step reads share its prefix, so they come in
        the same or the next micro-batch).
        """
        if not prompts:
            return
        seqs = self.judge.encode([self.judge.render(p) for p in prompts])
        firsts = self.plan.step_two_firsts
        n = len(seqs)
        reads = seqs + [s + [f] for f in firsts for s in seqs]
        logprobs = np.full((len(reads), len(self.plan.read_ids)), np.nan)
        reads_left = np.full(n, 1 + len(firsts), dtype=np.int64)
        for rows, values, ms in timed(self.judge.label_stream(reads, self.plan.read_ids)):
            logprobs[rows] = values
            np.subtract.at(reads_left, rows % n, 1)
            touched = np.unique(rows % n)
            ready = touched[reads_left[touched] == 0]
            if len(ready):
                step2 = {f: logprobs[n * (k + 1) + ready] for k, f in enumerate(firsts)}
                probs, mass = score_distribution(self.plan, logprobs[ready], step2)
                yield ready, judgements_from_distribution(probs, mass, ms * len(rows) / len(ready))
            elif not len(rows):  # a checkpoint within a long prompt: the caller may stop here
                yield ready, []

    def score(self, prompts: Sequence[ComparisonPrompt]) -> list[ScoreJudgement]:
        """Score every prompt, in input order."""
        return collect_judgements(self.stream(prompts), len(prompts))

    def close(self) -> None:
        self.judge.close()


def scorer_model_key(judge) -> str:
    """A scorer's identity for the cache: the judge's model and dtype, reading the scores 1-10."""
    return judge.model_key.split("|labels=")[0] + "|scores=1-10"


def load_scorer(model: str | None = None, *, device: str = "auto", dtype: str = "auto",
                batch_size: int | None = None) -> CausalScorer:
    """Load a model as a prompt scorer (same loading as ``judges.load_judge``).

    Raises
    ------
    InputError
        A served (openai:) or encoder-decoder model: score-token probabilities are read from a
        local causal model only.
    """
    from ..judges import load_judge
    judge = load_judge(model, device=device, dtype=dtype, batch_size=batch_size)
    return CausalScorer(judge)


# ------------------------------------------------------------------------------ the run kind

def scoring_settings(dataset: str, aspect: Aspect, template: ScoreTemplate, model: str, *,
                     contexts: int | None = None, batch_size: int | None = RunSettings.batch_size,
                     device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                     truncate_context: bool = False) -> RunSettings:
    """RunSettings of a scoring run (``kind="scoring"``, primer ``"Score: "``)."""
    return RunSettings(dataset=dataset, aspect=aspect.name, aspect_adjective=aspect.adjective,
                       template_name=template.name, template_text=template.text,
                       primer=SCORE_PRIMER, model=model, label_words=SCORE_LABEL_WORDS,
                       contexts=contexts, batch_size=batch_size, device=device, dtype=dtype,
                       kind="scoring", truncate_context=truncate_context)


class ScoringKind:
    """Prompt scoring: one 1..10 score distribution per candidate (argmax and G-Eval)."""

    # the RunKind protocol's names: the kind, what its progress counts, its speed, its title
    name, unit, rate_unit, label = "scoring", "candidates scored", "candidates/s", "prompt scoring"
    is_pairwise = False
    results_page = "rankings"
    ranked_rows = "rankings"
    completed_is_final = True

    def settings(self, dataset: str, options, model) -> RunSettings:
        """The settings of a run on dataset ``dataset`` (its name) from its
        ``options.ScoringOptions`` and ``options.ModelOptions``.

        Raises
        ------
        TemplateError
            An unknown scoring template or task.
        """
        template = scoring_template(options.template, options.aspect, options.task)
        return scoring_settings(dataset, options.aspect, template, **model.settings_fields())

    def advice(self, dataset: Dataset, settings: RunSettings) -> list[str]:
        """Nothing to warn about: every candidate is scored once."""
        return []

    def check(self, settings: RunSettings) -> None:
        if settings.strategy != "full" or settings.budget is not None:
            raise InputError("a scoring run scores every candidate once: a selection strategy "
                             "and a budget do not apply")

    def judge_label_words(self, settings: RunSettings) -> None:
        return None  # the scorer reads the score tokens, not label words

    def judge_key(self, judge) -> str:
        return scorer_model_key(judge)

    def preflight(self, dataset: Dataset, settings: RunSettings, judge) -> ContextFit:
        """Check the settings, the judge and that every prompt fits it (before anything is stored).

        Raises
        ------
        InputError
            Bad settings, a judge that cannot score, or prompts longer than the context window.
        """
        self.check(settings)
        CausalScorer(judge)
        return fit_contexts(dataset.head(settings.contexts).contexts,
                            self.longest_prompts(settings), judge,
                            truncate=settings.truncate_context)

    @staticmethod
    def template(settings: RunSettings) -> ScoreTemplate:
        return ScoreTemplate(settings.template_name, settings.template_text)

    def longest_prompts(self, settings: RunSettings):
        """The ``context_window.LongestPrompts`` of a scoring run: its longest candidates."""
        template, aspect = self.template(settings), settings.aspect_obj

        def offer(ctx: Context, text: str, count) -> list[tuple[str, ComparisonPrompt]]:
            lengths = count([c.text for c in ctx.candidates])
            top = np.argsort(-lengths, kind="stable")[:3]
            return [(f"the prompt scoring '{ctx.candidates[k].candidate_id}'",
                     template.render(text, ctx.candidates[k].text, aspect)) for k in top]
        return offer

    def example_prompt(self, dataset: Dataset, settings: RunSettings):
        """``RunKind.example_prompt``: the first context's first candidate."""
        ctx = dataset.contexts[0]
        cand = ctx.candidates[0]
        return ctx.context_id, (cand.candidate_id,), self.template(settings).render(
            ctx.text, cand.text, settings.aspect_obj)

    def planned_total(self, dataset: Dataset, settings: RunSettings) -> int:
        """Candidates the run scores (each once), known before a judge is loaded."""
        return int(sum(len(c.candidates) for c in dataset.head(settings.contexts).contexts))

    def prompt_work(self, dataset: Dataset, settings: RunSettings) -> list[tuple[str, float]]:
        """``RunKind.prompt_work``: each passage once, each candidate once, the template's words
        once per candidate."""
        contexts = dataset.head(settings.contexts).contexts
        empty = self.template(settings).render("", "", settings.aspect_obj)
        work = [(ctx.text, 1.0) for ctx in contexts]
        work += [(c.text, 1.0) for ctx in contexts for c in ctx.candidates]
        work.append((empty.text + empty.primer, float(sum(len(c.candidates) for c in contexts))))
        return work

    def plan(self, job) -> WorkPlan:
        """Every candidate the run has not scored, whole contexts per chunk where possible so
        the scorer reuses each context's prompt prefix (``job``: a ``run_kinds.RunJob``)."""
        settings = job.settings
        fit = self.preflight(job.dataset, settings, job.judge)
        scorer = CausalScorer(job.judge)
        contexts = job.dataset.head(settings.contexts).contexts
        template, aspect = self.template(settings), settings.aspect_obj
        texts = {(c.context_id, x.candidate_id): x.text for c in contexts for x in c.candidates}
        context_text = {c.context_id: fit.context_text(c) for c in contexts}
        keys = [CandidateKey(c.context_id, x.candidate_id) for c in contexts for x in c.candidates]
        todo = [k for k in keys if k not in job.stored]
        step = job.chunk_prompts
        return WorkPlan(
            kind=self.name, unit=self.unit, total=len(keys), already=len(keys) - len(todo),
            batches=(todo[i:i + step] for i in range(0, len(todo), step)),
            prompt=lambda k: template.render(context_text[k.context_id],
                                             texts[(k.context_id, k.candidate_id)], aspect),
            prompt_hash=prompt_hash, compute=ScoreStream(job.judge, scorer),
            result=lambda key, judgement, h: ScoreResult(key, judgement, h),
            judge_key=scorer.model_key, label_words_key=label_words_key(SCORE_LABEL_WORDS),
            notes=fit.to_dict())

    # ------------------------------------------------------------------ reading a run back
    def read(self, reader, run_id: int, dataset: Dataset, settings: RunSettings) -> "ScoreTable":
        return reader.read_results(run_id, self.name)

    def rank(self, dataset: Dataset, table: "ScoreTable", options):
        return rank_scored(dataset, table, options.which)

    def evaluate(self, dataset: Dataset, table: "ScoreTable", options, *, run: str = ""):
        return ScoringEvaluation(run, evaluate_scores(dataset, table, options.reference))

    def ranking_header(self, run: str, results, settings: RunSettings, fields: dict,
                       n_rows: int) -> str:
        """What ``compassess rank`` prints above the table."""
        return (f"# scoring run {run}: ranked by the G-Eval expected score "
                f"({counted(n_rows, 'candidate')})")

    def print_evaluation(self, report, out) -> None:
        """``compassess evaluate``'s text: prompt scoring (argmax) and G-Eval (expected)."""
        n = report.numbers
        print(f"scoring run {report.run}: {counted(n['n_scored'], 'candidate')} scored; "
              "reference column: "
              f"{n['reference'] or 'none'}; mean mass on the scores 1-10: "
              f"{fmt(n['mean_label_mass'], '.3f')}", file=out)
        for label, name in (("prompt_scoring", "prompt scoring (argmax)"),
                            ("g_eval", "G-Eval (expected)")):
            if label in n:
                r = n[label]
                print(f"{name}: Spearman x100 {fmt(r['spearman_x100'])} (per-context mean over "
                      f"{r['contexts_used']} contexts), system-level "
                      f"{fmt(r['system_spearman_x100'])}, pooled {fmt(r['pooled_spearman_x100'])}",
                      file=out)

    def summary_line(self, info) -> str:
        """How much a stored run holds, as a run picker shows it (``info``: the store's record)."""
        return f"{self.label}, {info.done or 0} {self.unit}"

    def results_frame(self, reader, run_id: int, dataset: Dataset, settings: RunSettings):
        return rank_scored(dataset, self.read(reader, run_id, dataset, settings)).drop(
            columns=["rank", "score"])


@dataclass(frozen=True)
class ScoringEvaluation:
    """What ``compassess evaluate`` reports for a scoring run (``evaluate_scores``' numbers)."""

    run: str
    numbers: dict

    def to_dict(self) -> dict:
        return {"run": self.run, "kind": "scoring", **self.numbers}


def score_vectors(dataset: Dataset, table: ScoreTable, which: str = "expected"
                  ) -> dict[str, FloatArray]:
    """Per context, the candidates' scores in dataset order (NaN where not scored).

    ``which``: ``"expected"`` (G-Eval) or ``"argmax"`` (prompt scoring).
    """
    if which not in ("expected", "argmax"):
        raise InputError(f"unknown score kind {which!r}; choose expected or argmax")
    values = table.score_expected if which == "expected" else table.score_argmax
    lookup = {(c, k): float(v) for c, k, v in zip(table.context_ids, table.candidate_ids, values)}
    return {ctx.context_id: np.array([lookup.get((ctx.context_id, c), np.nan)
                                      for c in ctx.candidate_ids])
            for ctx in dataset.contexts}


def rank_scored(dataset: Dataset, table: ScoreTable, which: str = "expected"):
    """One row per candidate of a scoring run, like ``analysis.rank_contexts``: context_id, rank
    (1 = best; ties share the better rank), candidate_id, system, text, score (G-Eval expected or
    argmax), score_argmax, score_expected, label_mass and the dataset's reference columns."""
    import pandas as pd

    from ..stats.ranking import rank_scores

    vec = score_vectors(dataset, table, which)
    other = {(c, k): (a, e, m) for c, k, a, e, m in zip(table.context_ids, table.candidate_ids,
                                                         table.score_argmax, table.score_expected,
                                                         table.label_mass)}
    nan3 = (np.nan, np.nan, np.nan)
    rows = []
    for ctx in dataset.contexts:
        s = vec[ctx.context_id]
        if np.isnan(s).all():
            continue
        ranks = rank_scores(s)
        for k, cand in enumerate(ctx.candidates):
            a, e, m = other.get((ctx.context_id, cand.candidate_id), nan3)
            row = dict(context_id=ctx.context_id, rank=int(ranks[k]), candidate_id=cand.candidate_id,
                       system=cand.system, text=cand.text, score=float(s[k]),
                       score_argmax=float(a), score_expected=float(e), label_mass=float(m))
            row.update({col: cand.scores.get(col, np.nan) for col in dataset.score_columns})
            rows.append(row)
    cols = ["context_id", "rank", "candidate_id", "system", "text", "score", "score_argmax",
            "score_expected", "label_mass", *dataset.score_columns]
    df = pd.DataFrame(rows, columns=cols)
    pos = {c.context_id: k for k, c in enumerate(dataset.contexts)}
    df["_pos"] = df["context_id"].map(pos)
    return df.sort_values(["_pos", "rank"], kind="stable").drop(columns="_pos").reset_index(drop=True)


def evaluate_scores(dataset: Dataset, table: ScoreTable, reference: str | None) -> dict:
    """Spearman x100 (per-context mean, system level, pooled) of prompt scoring (argmax) and
    G-Eval (expected score) against a reference column, as in the paper's Tables 1 and 3.

    Raises
    ------
    InputError
        ``reference`` is not a score column of the dataset.
    """
    from ..stats.metrics import (per_context_correlation, pooled_correlation,
                                 system_level_correlation)

    out: dict = {"n_scored": int(len(table)), "reference": reference,
                 "mean_label_mass": float(np.nanmean(table.label_mass)) if len(table) else float("nan")}
    if reference is None:
        return out
    if reference not in dataset.score_columns:
        raise InputError(f"reference column '{reference}' is not in dataset '{dataset.name}' "
                         f"(columns: {', '.join(dataset.score_columns) or 'none'})")
    scored = {c for c in table.context_ids}
    ctxs = [c for c in dataset.contexts if c.context_id in scored]
    ref = [np.array([c.scores.get(reference, np.nan) for c in ctx.candidates]) for ctx in ctxs]
    systems = [np.array([c.system or "" for c in ctx.candidates], dtype=object) for ctx in ctxs]
    for which, label in (("argmax", "prompt_scoring"), ("expected", "g_eval")):
        vec = score_vectors(dataset, table, which)
        pred = [vec[ctx.context_id] for ctx in ctxs]
        pc = per_context_correlation(pred, ref)
        out[label] = dict(spearman_x100=pc.mean_x100, contexts_used=pc.n_used,
                          contexts_skipped=pc.n_skipped,
                          system_spearman_x100=system_level_correlation(pred, ref, systems),
                          pooled_spearman_x100=pooled_correlation(pred, ref))
    return out
