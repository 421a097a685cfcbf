"""A run's settings from the keywords of ``Store.run``/``Store.score`` (or their options
objects), checked: :func:`run_settings` (``compassess run``) and :func:`score_settings`
(``compassess score``). Wiring: ``options`` and ``run_kinds.build_settings`` do the work."""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ..runs import absolute
from ..errors import InputError
from ..runs.options import (AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions,
                       run_options)
from ..runs.run_kinds import build_settings
from ..runs.settings import GenerationOptions, ReferenceOptions, RunSettings
from ..types import Dataset

# -------------------------------------------------------------------------------- settings

def _check_at_least(name: str, value: int | None, least: int) -> None:
    if value is not None and value < least:
        raise InputError(f"{name} must be at least {least}, not {value}")


def _given_or_built(given: Any, fn: Any, keywords: Mapping[str, Any], build: Any) -> Any:
    """An options object: ``given``, else one ``build`` makes from ``fn``'s ``keywords``. Beside
    a given object those keywords must keep their defaults: a value in two places is refused,
    not silently dropped."""
    if given is None:
        return build(**keywords)
    params = inspect.signature(fn).parameters
    twice = [k for k, v in keywords.items()
             if v is not params[k].default and v != params[k].default]
    if twice:
        raise InputError(f"{', '.join(twice)} given beside an options object: set "
                         f"{'it' if len(twice) == 1 else 'them'} in the object")
    return given


def _model_options(given: ModelOptions | None, fn: Any, **keywords: Any) -> ModelOptions:
    """``model_options``, or the :class:`ModelOptions` of ``fn``'s model keywords."""
    return _given_or_built(given, fn, keywords, ModelOptions)


def _run_options(given: ComparativeOptions | ScoringOptions | None, fn: Any, **keywords: Any
                 ) -> ComparativeOptions | ScoringOptions:
    """``options``, or the options of ``fn``'s ``compassess run`` keywords (``mode``, aspect,
    template, task, strategy, budget, seed)."""
    if given is not None and not isinstance(given, (ComparativeOptions, ScoringOptions)):
        raise InputError(f"{type(given).__name__} are not options of a comparative or scoring "
                         "run (absolute scores: score_settings, Store.score)")
    return _given_or_built(given, fn, keywords, lambda mode, **k: run_options(mode, **k))


def _score_options(given: AbsoluteOptions | None, fn: Any, *, references: int, anchors: bool,
                   max_new_tokens: int, sample: bool, temperature: float, **keywords: Any
                   ) -> AbsoluteOptions:
    """``options``, or the :class:`AbsoluteOptions` of ``fn``'s ``compassess score`` keywords."""
    if given is not None and not isinstance(given, AbsoluteOptions):
        raise InputError(f"{type(given).__name__} are not options of an absolute run (pairwise "
                         "or prompt scoring: run_settings, Store.run)")

    def build(**k: Any) -> AbsoluteOptions:
        return AbsoluteOptions(
            n_levels=k.pop("references"),
            reference_set=absolute.UPLOADED if k.pop("anchors") else "generated",
            generation=GenerationOptions(max_new_tokens=k.pop("max_new_tokens"),
                                         sample=k.pop("sample"),
                                         temperature=k.pop("temperature")), **k)
    return _given_or_built(given, fn, dict(references=references, anchors=anchors,
                                           max_new_tokens=max_new_tokens, sample=sample,
                                           temperature=temperature, **keywords), build)


def run_settings(dataset: str | Dataset, *, aspect: str | None = None, mode: str = "comparative",
                 template: str | None = None, task: str = "auto",
                 strategy: str = RunSettings.strategy, budget: int | None = None,
                 model: str | None = None, contexts: int | None = None,
                 seed: int = RunSettings.seed, batch_size: int | None = RunSettings.batch_size,
                 device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                 truncate_context: bool = False,
                 options: ComparativeOptions | ScoringOptions | None = None,
                 model_options: ModelOptions | None = None) -> RunSettings:
    """The settings of a ``compassess run`` on dataset ``dataset`` (its name, or the
    :class:`Dataset`, whose column names then choose the wording of ``task="auto"``), checked.

    The keywords are sugar for the two options objects, which may be given instead:
    ``options`` (a :class:`ComparativeOptions` or :class:`ScoringOptions`: aspect to seed) and
    ``model_options`` (a :class:`ModelOptions`: model to truncate_context).

    Parameters
    ----------
    aspect
        A preset (coherence, consistency, fluency, relevance, engagingness, naturalness,
        continuity, understandable, grammar, overall) or your own adjective (required unless
        ``options`` is given).
    mode
        ``comparative`` (pairwise judgements, the paper's method) or ``scoring`` (the
        prompt-scoring baseline: a 1-10 score per candidate, argmax and G-Eval expected score).
    template
        ``t1``/``t2`` or a template file with ``{context} {a} {b} {aspect}`` (default ``t1``);
        with ``mode="scoring"``: ``s1``/``s2`` (default ``s1``).
    task
        Wording of the built-in templates (``prompts.TASK_WORDING``): ``summary``, ``dialogue``,
        ``story``, ``instruction``, ``qa``, ``code``, ``text``, or ``auto`` (the task the data's
        context and text column names say, else the aspect's, as in the paper).
    strategy, budget
        Which ordered pairs are judged (paper §3.4: ``full``, ``random``, ``no-repeat``,
        ``symmetric``; beyond it: ``poe``, ``adaptive``); every strategy but ``full`` needs a
        budget of comparisons per context.
    model
        A ``.gguf`` file, a local model folder, a hub id or ``openai:URL#NAME`` (default: the
        bundled SmolLM2-135M-Instruct).
    contexts
        Only the first N contexts.

    Raises
    ------
    InputError
        An unknown mode, template, task, strategy or a bad budget (the message says which), or
        a keyword given beside the options object that holds it.
    """
    kind_options = _run_options(options, run_settings, aspect=aspect, mode=mode,
                                template=template, task=task, strategy=strategy, budget=budget,
                                seed=seed)
    model_options = _model_options(model_options, run_settings, model=model, contexts=contexts,
                                   batch_size=batch_size, device=device, dtype=dtype,
                                   truncate_context=truncate_context)
    return _settings_for(dataset, kind_options, model_options)


def _settings_for(dataset: str | Dataset, kind_options, model_options: ModelOptions) -> RunSettings:
    """``build_settings`` on a dataset's name, or on a dataset with its text column names."""
    if isinstance(dataset, Dataset):
        return build_settings(dataset.name, kind_options, model_options,
                              text_columns=dataset.text_columns)
    return build_settings(dataset, kind_options, model_options)


def score_settings(dataset: str | Dataset, *, aspect: str | None = None,
                   references: int = ReferenceOptions.n_levels, anchors: bool = False,
                   task: str = "auto", variant: str = ReferenceOptions.variant,
                   orders: str = ReferenceOptions.orders,
                   max_new_tokens: int = GenerationOptions.max_new_tokens,
                   sample: bool = GenerationOptions.sample,
                   temperature: float = GenerationOptions.temperature, model: str | None = None,
                   contexts: int | None = None, seed: int = RunSettings.seed,
                   batch_size: int | None = RunSettings.batch_size, device: str = RunSettings.device,
                   dtype: str = RunSettings.dtype, truncate_context: bool = False,
                   options: AbsoluteOptions | None = None,
                   model_options: ModelOptions | None = None) -> RunSettings:
    """The settings of a ``compassess score`` (absolute scores from synthetic references of
    quality 1..``references``) on dataset ``dataset``, checked.

    ``anchors``: the references are your own texts (uploaded with the run) instead of written
    by the model. ``variant``: ``bws`` (Better/Worse/Similar) or ``yes-no``; ``orders``:
    ``both``, ``target-first`` or ``reference-first``; ``task``: one of
    ``prompts.TASK_WORDING`` (``summary``, ``dialogue``, ``story``, ``instruction``, ``qa``,
    ``code``, ``text``) or ``auto``. ``sample``/``temperature``/``max_new_tokens``: how references are
    written. ``options`` (an :class:`AbsoluteOptions`, whose ``n_levels`` is ``references``)
    and ``model_options`` (a :class:`ModelOptions`) may be given instead of the keywords.

    Raises
    ------
    InputError
        A bad level count, order, variant, task or decoding setting, or a keyword given beside
        the options object that holds it.
    """
    kind_options = _score_options(options, score_settings, aspect=aspect, references=references,
                                  anchors=anchors, task=task, variant=variant, orders=orders,
                                  max_new_tokens=max_new_tokens, sample=sample,
                                  temperature=temperature, seed=seed)
    model_options = _model_options(model_options, score_settings, model=model, contexts=contexts,
                                   batch_size=batch_size, device=device, dtype=dtype,
                                   truncate_context=truncate_context)
    return _settings_for(dataset, kind_options, model_options)


