"""Every setting of a run, typed, in one serialisable record (stored with the run, in exports).

A run is reproducible from its settings and its dataset: the prompts are rebuilt from
``template_text``, ``aspect_adjective`` and the stored texts; the pairs from strategy, budget and seed.
Settings are what a user asked for and flow one way (page or CLI -> store -> worker): what the worker
finds out while executing (the judge's identity, contexts it had to truncate) is recorded beside the
run by the store, never written back into its settings.

Defaults live here and only here; code that reads a setting reads the field, never a default of its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..judges.models import BUNDLED_MODEL
from .prompts import Aspect, Template

#: Label words the paper's causal prompts read after "Answer: Summary" (eq. 3).
DEFAULT_LABEL_WORDS: tuple[str, str] = (" A", " B")


def label_words_key(label_words: Sequence[str]) -> str:
    """The cache's key for a judge's label words (the ``runs.label_words`` column): a JSON list."""
    return json.dumps(list(label_words))


@dataclass(frozen=True)
class GenerationOptions:
    """How a causal model writes synthetic references (greedy unless ``sample``)."""

    max_new_tokens: int = 96
    sample: bool = False
    temperature: float = 0.7
    top_p: float = 0.95


@dataclass(frozen=True)
class ReferenceOptions:
    """What an absolute run compares each candidate with: references of quality 1..``n_levels``.

    ``reference_set`` is ``generated`` (written by the judge model, stored per context, aspect and
    model and reused) or ``upload`` (the user's anchor texts). ``orders``: ``both``,
    ``target-first`` or ``reference-first``; ``variant``: ``bws`` (Better/Worse/Similar) or
    ``yes-no``; ``task``: the wording (summary, dialogue, story).
    """

    n_levels: int = 5
    task: str = "summary"
    variant: str = "bws"
    orders: str = "both"
    reference_set: str = "generated"
    generation: GenerationOptions = field(default_factory=GenerationOptions)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "ReferenceOptions":
        d = dict(d)
        gen = d.pop("generation", None) or {}
        _reject_unknown(d, ReferenceOptions, "reference options")
        _reject_unknown(gen, GenerationOptions, "reference generation options")
        return ReferenceOptions(**d, generation=GenerationOptions(**gen))


#: Settings that change how fast a run goes but never its results; they may differ on resume.
NON_RESULT_KEYS = frozenset({"batch_size", "device"})


@dataclass(frozen=True)
class RunSettings:
    """One run's settings.

    ``kind`` names the run kind (``compassess_core.runs.run_kinds.RUN_KINDS``): ``comparative`` (pairwise
    judgements), ``scoring`` (the prompt-scoring baseline) or ``absolute`` (comparisons with
    synthetic references, which also sets ``references``). ``truncate_context``: shorten a context
    passage that would not fit the model's context window instead of refusing the run.
    """

    dataset: str
    aspect: str
    aspect_adjective: str
    template_name: str
    template_text: str
    primer: str
    model: str = BUNDLED_MODEL
    label_words: tuple[str, ...] = DEFAULT_LABEL_WORDS
    strategy: str = "full"
    budget: int | None = None
    contexts: int | None = None
    seed: int = 0
    # None: sized by the judge (8 prompts on CPU; on a GPU from its free memory).
    batch_size: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    kind: str = "comparative"
    truncate_context: bool = False
    references: ReferenceOptions | None = None

    @property
    def template(self) -> Template:
        noun = self.primer.removeprefix("Answer: ").strip() or "Summary"
        return Template(name=self.template_name, text=self.template_text, noun=noun)

    @property
    def aspect_obj(self) -> Aspect:
        return Aspect(self.aspect, self.aspect_adjective)

    @property
    def reference_options(self) -> ReferenceOptions:
        """The absolute run's reference options (defaults when unset)."""
        return self.references or ReferenceOptions()

    def with_changes(self, **changes: Any) -> "RunSettings":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["label_words"] = list(self.label_words)
        return d

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "RunSettings":
        """Settings as stored (``to_dict``), checked.

        Raises
        ------
        InputError
            A key that is not a setting.
        """
        d = dict(d)
        _reject_unknown(d, RunSettings, "run settings")
        if "label_words" in d:
            d["label_words"] = tuple(d["label_words"])
        if d.get("references") is not None:
            d["references"] = ReferenceOptions.from_dict(d["references"])
        return RunSettings(**d)

    def result_hash(self) -> str:
        """Hash of the settings that determine results (batch size and device excluded)."""
        d = {k: v for k, v in self.to_dict().items() if k not in NON_RESULT_KEYS}
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def default_run_name(self) -> str:
        return (f"{self.dataset}-{self.aspect.replace(' ', '_')[:24]}-{self.template_name}-"
                f"{model_short_name(self.model)}-{self.result_hash()[:6]}")


def run_names(name: str | None, settings: Sequence[RunSettings]) -> list[str]:
    """The names of runs started together (one per aspect): each one's default name without
    ``name``; ``name`` itself for one run; ``name-ASPECT`` for each of several."""
    if name is None:
        return [s.default_run_name() for s in settings]
    if len(settings) == 1:
        return [name]
    return [f"{name}-{s.aspect.replace(' ', '_')[:24]}" for s in settings]


def model_short_name(model: str) -> str:
    """A model's name as a run name shows it: the file or folder name, the served model's name."""
    spec = model.removeprefix(BUNDLED_MODEL.split(":")[0] + ":")
    if "#" in spec:  # a served model: openai:URL#NAME
        spec = spec.split("#", 1)[1].split("?", 1)[0]
    return spec.rstrip("/").split("/")[-1].removesuffix(".gguf")


def _reject_unknown(d: Mapping[str, Any], cls: type, what: str) -> None:
    unknown = set(d) - {f.name for f in fields(cls)}
    if unknown:
        raise InputError(f"unknown {what}: {', '.join(sorted(unknown))}")
