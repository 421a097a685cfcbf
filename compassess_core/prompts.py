"""Prompt templates of comparative assessment (Liusie et al. 2024, EACL, Figure 2) and aspects.

A template is text with the placeholders ``{context} {a} {b} {aspect}``; ``{aspect}`` receives the
aspect's adjective ("coherent"). The rendered prompt of a comparison is a pure function of the
template, the aspect and the two texts, so it can be rebuilt from what the store keeps.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

from .errors import TemplateError
from .limits import MAX_ASPECT_CHARS, name_problem
from .types import ComparisonPrompt

PLACEHOLDERS = frozenset({"context", "a", "b", "aspect"})

#: Aspect presets -> adjective, as in the authors' code. "overall" -> "good", and "more good" is
#: rewritten to "better" at render time (so "is more good" reads "is better").
ASPECT_ADJECTIVES: dict[str, str] = {
    "coherence": "coherent",
    "consistency": "consistent",
    "fluency": "fluent",
    "relevance": "relevant",
    "naturalness": "natural",
    "engagingness": "engaging",
    "understandable": "understandable",
    "grammar": "grammatically correct",
    "continuity": "good a continuation",
    "overall": "good",
}

#: Aspects that only make sense for dialogue responses: they select the "Response" wording.
DIALOGUE_ASPECTS = frozenset({"naturalness", "engagingness", "continuity", "understandable"})

_T1 = ("{source_label}:\n{{context}}\n\n{noun} A: {{a}}\n\n{noun} B: {{b}}\n\n"
       "Which {noun} is more {{aspect}} relative to the {source}, {noun} A or {noun} B?")
_T2 = ("{{context}}\n\n{noun} A: {{a}}\n\n{noun} B: {{b}}\n\n"
       "Which {noun} is more {{aspect}}, {noun} A or {noun} B?")

@dataclass(frozen=True)
class TaskWording:
    """How every prompt of one task names its texts: the comparison templates (t1/t2), the scoring
    templates (s1/s2) and the absolute kind's comparisons and reference requests.

    ``noun`` names a candidate ("Summary A", the primer "Answer: Summary"), ``source`` the context
    in a sentence ("relative to the passage"), ``source_label`` the context's heading.
    """

    noun: str
    source: str
    source_label: str

    @property
    def lower(self) -> str:
        """The noun inside a sentence ("the summary's coherence")."""
        return self.noun.lower()

    def fields(self) -> dict[str, str]:
        """The wording as ``str.format`` fields: ``noun``, ``source``, ``source_label``, ``lower``."""
        return dict(noun=self.noun, source=self.source, source_label=self.source_label,
                    lower=self.lower)


#: The one table of task wordings; every prompt family takes its words from here.
TASK_WORDING: dict[str, TaskWording] = {
    "summary": TaskWording(noun="Summary", source="passage", source_label="Passage"),
    "dialogue": TaskWording(noun="Response", source="conversation", source_label="Conversation"),
    "story": TaskWording(noun="Story", source="prompt", source_label="Story prompt"),
}

#: Tasks of the paper's comparison and scoring templates (t1/t2, s1/s2); the absolute kind also
#: words stories.
TASKS = ("summary", "dialogue")
BUILTIN_TEMPLATES = ("t1", "t2")


@dataclass(frozen=True)
class Aspect:
    """An aspect to judge: a preset name or a user's own description (used as the adjective)."""

    name: str
    adjective: str

    @staticmethod
    def from_name(name_or_description: str) -> "Aspect":
        key = name_or_description.strip()
        if not key:
            raise TemplateError("the aspect is empty: give a preset name "
                                f"({', '.join(ASPECT_ADJECTIVES)}) or your own description")
        if key.lower() in ASPECT_ADJECTIVES:
            return Aspect(key.lower(), ASPECT_ADJECTIVES[key.lower()])
        # An own description is stored with every label and run, and shown on every page.
        problem = name_problem(key, "aspect", MAX_ASPECT_CHARS, dash_first=True)
        if problem is not None:
            raise TemplateError(problem)
        return Aspect(key, key)


@dataclass(frozen=True)
class Template:
    """A comparison template with its answer primer ("Answer: Summary" -> next token " A"/" B")."""

    name: str
    text: str
    noun: str = "Summary"

    @property
    def primer(self) -> str:
        return f"Answer: {self.noun}"

    def render(self, context: str, a: str, b: str, aspect: Aspect) -> ComparisonPrompt:
        text = self.text.format(context=context, a=a, b=b, aspect=aspect.adjective)
        if _is_good(aspect.adjective):
            # The authors' wording for "overall"/"continuity": "is more good" reads "is better".
            text = text.replace("more good", "better")
        return ComparisonPrompt(text=text, primer=self.primer)


def _is_good(adjective: str) -> bool:
    return adjective == "good" or adjective.startswith("good ")


def more_adjective(adjective: str) -> str:
    """The comparative of an aspect's adjective: "more coherent", and "better" for "good"."""
    return "better" if _is_good(adjective) else f"more {adjective}"


def task_wording(task: str, tasks: tuple[str, ...] = TASKS) -> TaskWording:
    """The wording of ``task``, one of ``tasks``.

    Raises
    ------
    TemplateError
        ``task`` is not one of ``tasks``.
    """
    if task not in tasks:
        raise TemplateError(f"unknown task '{task}'; choose one of {', '.join(tasks)}")
    return TASK_WORDING[task]


def validate_template_text(text: str, source: str = "template") -> None:
    """Raise TemplateError unless ``text`` is a usable template.

    Rules: braces balanced (literal braces doubled), only the placeholders {context} {a} {b}
    {aspect}, no format specs or attribute access, and both {a} and {b} present.
    """
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as e:  # unbalanced braces
        raise TemplateError(f"{source}: {e} (write literal braces as '{{{{' and '}}}}')") from None
    fields = []
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            shown = "{" + name + "}" if name else "{}"
            raise TemplateError(
                f"{source}: unknown placeholder {shown}; allowed: "
                "{context}, {a}, {b}, {aspect} (write literal braces as '{{' and '}}')")
        if spec or conv:
            raise TemplateError(f"{source}: placeholder {{{name}}} must not have a format spec")
        fields.append(name)
    missing = [f for f in ("a", "b") if f not in fields]
    if missing:
        raise TemplateError(f"{source}: missing placeholder(s) "
                            + ", ".join("{" + m + "}" for m in missing)
                            + ": a comparison template needs both {a} and {b}")


def builtin_template(name: str, task: str = "summary") -> Template:
    """The paper's T1 or T2 in summary or dialogue-response wording."""
    w = task_wording(task)
    raw = {"t1": _T1, "t2": _T2}.get(name.lower())
    if raw is None:
        raise TemplateError(f"unknown template '{name}'; choose t1, t2 or a file")
    return Template(name=f"{name.lower()}-{task}", text=raw.format(**w.fields()), noun=w.noun)


def custom_template(text: str, name: str = "custom", noun: str | None = None) -> Template:
    """A user's template; the answer noun is guessed from its wording unless given."""
    validate_template_text(text, source=name)
    if noun is None:
        noun = "Response" if "Response A" in text else "Summary"
    return Template(name=name, text=text, noun=noun)


def infer_task(aspect: Aspect) -> str:
    return "dialogue" if aspect.name in DIALOGUE_ASPECTS else "summary"


def resolve_template(spec: str, aspect: Aspect, task: str = "auto") -> Template:
    """``spec`` is ``t1``/``t2`` or a path to a text file holding a template."""
    if task == "auto":
        task = infer_task(aspect)
    if spec.lower() in BUILTIN_TEMPLATES:
        return builtin_template(spec, task)
    path = Path(spec)
    if not path.is_file():
        raise TemplateError(f"template '{spec}' is neither t1, t2 nor an existing file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TemplateError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return custom_template(text.rstrip("\n"), name=path.name)


def prompt_hash(prompt: ComparisonPrompt) -> str:
    """Stable identity of a rendered prompt (part of the comparison cache key)."""
    h = hashlib.sha256()
    h.update(prompt.text.encode("utf-8"))
    h.update(b"\x00")
    h.update(prompt.primer.encode("utf-8"))
    return h.hexdigest()
