"""What a user asks of a run, typed: one frozen options object per concern, each checked once.

A run's :class:`~compassess_core.runs.settings.RunSettings` are built from two of these: the options of
its kind (:class:`ComparativeOptions`, :class:`ScoringOptions` or :class:`AbsoluteOptions`: what
is judged and how) and :class:`ModelOptions` (which judge runs, where, on how many contexts). The
CLI maps its flags to these fields, the Run page its widgets, and the Python API's keyword
arguments are sugar over them; the run kind turns them into settings
(:func:`compassess_core.runs.run_kinds.build_settings`). Adding a setting is one field here, one flag,
one widget.

Each object refuses a bad value when it is made (:class:`OptionError`, naming the field), so a
value that exists is a value that can be used; a scoring run cannot even express a selection
strategy or a budget. What the user may be warned about (a budget too small to rank every
candidate) is not an error: the kind's ``advice`` says it.

This module must never import the store or a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Sequence

from . import absolute, scoring
from ..errors import InputError
from ..judges.models import BUNDLED_MODEL
from .prompts import TASKS, Aspect, Template, task_from_columns
from .selection import STRATEGIES
from .settings import GenerationOptions, ReferenceOptions, RunSettings


class OptionError(InputError):
    """A bad option value. ``field`` names the option; the message says ``{field}`` where the
    option's name goes, so each front end can name it its own way (``batch_size`` in Python,
    ``--batch-size`` on the command line: :meth:`naming`)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(self.naming(field))

    def naming(self, name: str) -> str:
        """The message with the option called ``name``."""
        return self.message.replace("{field}", name)


def _at_least(name: str, value: int | float | None, least: int) -> None:
    if value is not None and value < least:
        raise OptionError(name, f"{{field}} must be at least {least}, not {value}")


def _one_of(name: str, value: str, choices) -> None:
    if value not in choices:
        raise OptionError(name, f"unknown {{field}} '{value}'; choose one of {', '.join(choices)}")


def _aspect(options) -> None:
    """An aspect given by name becomes the :class:`Aspect` (a preset or the user's adjective)."""
    if options.aspect is None:
        raise OptionError("aspect", "an {field} is needed: a preset (coherence, fluency, ...) "
                                    "or your own adjective")
    if not isinstance(options.aspect, Aspect):
        object.__setattr__(options, "aspect", Aspect.from_name(options.aspect))


@dataclass(frozen=True)
class ModelOptions:
    """Which judge runs a run, where, how fast, and on how many contexts: what every kind takes.

    ``model``, ``device``, ``dtype``, ``batch_size``, ``contexts`` and ``truncate_context`` are
    stored in the run's settings (``contexts``: only the first N contexts; ``truncate_context``:
    cut a passage that does not fit the model's context window instead of refusing the run).
    ``chunk_size`` (prompts per judge call, the scope of its prefix cache) and ``threads`` (CPU
    threads of a local model, process-wide; 0 or None = all cores) only change how this
    process executes the run, so they are not stored and may differ on resume. The seed is
    not here: it belongs to the kinds that sample (pairs, references), and a scoring run has
    none.
    """

    model: str = BUNDLED_MODEL
    device: str = RunSettings.device
    dtype: str = RunSettings.dtype
    batch_size: int | None = RunSettings.batch_size
    contexts: int | None = RunSettings.contexts
    truncate_context: bool = RunSettings.truncate_context
    chunk_size: int | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", BUNDLED_MODEL)
        _at_least("batch_size", self.batch_size, 1)
        _at_least("contexts", self.contexts, 1)
        _at_least("chunk_size", self.chunk_size, 1)
        _at_least("threads", self.threads, 0)

    def settings_fields(self) -> dict:
        """The fields a run's settings store (``RunSettings`` keywords)."""
        return dict(model=self.model, device=self.device, dtype=self.dtype,
                    batch_size=self.batch_size, contexts=self.contexts,
                    truncate_context=self.truncate_context)


@dataclass(frozen=True)
class ComparativeOptions:
    """A pairwise run (``compassess run``): the aspect, the prompt template (``t1``/``t2``, a
    template file, or a :class:`Template`) and its wording ``task`` (``auto``: from the aspect),
    which ordered pairs are judged (``strategy``; every strategy but ``full`` needs a ``budget``
    of comparisons per context, which ``full`` ignores) and the ``seed`` of their sampling."""

    kind: ClassVar[str] = "comparative"

    aspect: Aspect | str
    template: str | Template = "t1"
    task: str = "auto"
    strategy: str = RunSettings.strategy
    budget: int | None = None
    seed: int = RunSettings.seed

    def __post_init__(self) -> None:
        _aspect(self)
        _one_of("task", self.task, ("auto", *TASKS))
        _one_of("strategy", self.strategy, STRATEGIES)
        _at_least("seed", self.seed, 0)
        if self.strategy == "full":
            object.__setattr__(self, "budget", None)  # every pair is judged: no budget applies
        elif self.budget is None:
            raise OptionError("budget", f"strategy '{self.strategy}' needs a {{field}} "
                                        "(comparisons per context)")
        _at_least("budget", self.budget, 1)


@dataclass(frozen=True)
class ScoringOptions:
    """A prompt-scoring run (``compassess run --mode scoring``, the paper's baseline): the
    aspect, the scoring template ``s1``/``s2`` and its wording ``task``. Every candidate is
    scored once, so there is no selection strategy, budget or seed to give."""

    kind: ClassVar[str] = "scoring"

    aspect: Aspect | str
    template: str = "s1"
    task: str = "auto"

    def __post_init__(self) -> None:
        _aspect(self)
        _one_of("task", self.task, ("auto", *TASKS))
        _one_of("template", self.template.lower(), scoring.SCORING_TEMPLATES)


@dataclass(frozen=True)
class AbsoluteOptions:
    """An absolute-score run (``compassess score``): every candidate compared with references
    of quality 1..``n_levels``, written by the judge (``reference_set="generated"``, decoded as
    ``generation`` says, sampled with ``seed`` when ``generation.sample``) or the user's anchor
    texts (``"upload"``); ``variant`` ``bws`` (Better/Worse/Similar) or ``yes-no``; ``orders``
    ``both``, ``target-first`` or ``reference-first``; ``task`` the wording (``auto``: from
    the aspect)."""

    kind: ClassVar[str] = "absolute"

    aspect: Aspect | str
    n_levels: int = ReferenceOptions.n_levels
    reference_set: str = ReferenceOptions.reference_set
    task: str = "auto"
    variant: str = ReferenceOptions.variant
    orders: str = ReferenceOptions.orders
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    seed: int = RunSettings.seed

    def __post_init__(self) -> None:
        _aspect(self)
        _at_least("n_levels", self.n_levels, 2)
        if self.n_levels > 20:  # the most absolute_settings accepts
            raise OptionError("n_levels", f"{{field}} must be at most 20, not {self.n_levels}")
        _one_of("reference_set", self.reference_set, ("generated", absolute.UPLOADED))
        _one_of("task", self.task, ("auto", *absolute.TASKS))
        _one_of("variant", self.variant, tuple(absolute.VARIANTS))
        _one_of("orders", self.orders, tuple(absolute.ORDERS))
        _at_least("max_new_tokens", self.generation.max_new_tokens, 1)
        if self.generation.sample and not self.generation.temperature > 0:
            raise OptionError("temperature", "{field} must be above 0 to sample, not "
                                             f"{self.generation.temperature}")
        _at_least("seed", self.seed, 0)


#: The options of each kind of run, by the kind's name.
KindOptions = ComparativeOptions | ScoringOptions | AbsoluteOptions


def run_options(mode: str, *, aspect: Aspect | str, template: str | Template | None = None,
                task: str = "auto", strategy: str = RunSettings.strategy,
                budget: int | None = None, seed: int = RunSettings.seed
                ) -> ComparativeOptions | ScoringOptions:
    """The options of a ``compassess run`` in ``mode`` ``comparative`` or ``scoring`` from the
    flags both modes share (what the CLI's ``run`` and :func:`compassess_core.api.run_settings`
    take): a scoring run refuses a strategy or a budget, and has no seed.

    Raises
    ------
    OptionError
        An unknown mode, or a bad value of the mode's options.
    """
    if mode == "scoring":
        if strategy != "full" or budget is not None:
            raise OptionError("strategy", "prompt scoring scores every candidate once: a "
                                          "strategy and a budget do not apply")
        return ScoringOptions(aspect=aspect, template=template or "s1", task=task)
    if mode != "comparative":
        raise OptionError("mode", f"unknown {{field}} '{mode}'; choose comparative or scoring "
                                  "(absolute scores: compassess score)")
    return ComparativeOptions(aspect=aspect, template=template or "t1", task=task,
                              strategy=strategy, budget=budget, seed=seed)


def with_data_task(options: KindOptions, text_columns: Sequence[str]) -> KindOptions:
    """``options`` with a task ``auto`` made the one the data's column names say
    (``prompts.task_from_columns``); unchanged when they say none or a task was chosen."""
    task = task_from_columns(text_columns) if options.task == "auto" else None
    return options if task is None else replace(options, task=task)


def for_aspects(options: KindOptions, aspects: Sequence[Aspect | str]) -> list[KindOptions]:
    """``options`` once per aspect of ``aspects`` (the runs of one pass over several aspects:
    everything else the same), each aspect checked.

    Raises
    ------
    OptionError
        No aspect, an aspect that is not a preset nor a usable description, or one given twice.
    """
    made = [replace(options, aspect=a) for a in aspects]
    if not made:
        raise OptionError("aspect", "an {field} is needed: a preset (coherence, fluency, ...) "
                                    "or your own adjective")
    names = [o.aspect.name for o in made]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise OptionError("aspect", f"the {{field}} '{twice}' is given twice")
    return made
