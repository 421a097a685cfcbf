"""Prompt templates of comparative assessment (Liusie et al. 2024, EACL, Figure 2) and aspects.

A template is text with the placeholders ``{context} {a} {b} {aspect}``; ``{aspect}`` receives the
aspect's adjective ("coherent"). The rendered prompt of a comparison is a pure function of the
template, the aspect and the two texts, so it can be rebuilt from what the store keeps.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import TemplateError
from ..limits import MAX_ASPECT_CHARS, name_problem
from ..types import ASPECT_ADJECTIVES  # noqa: F401  (re-exported: the presets' home is types)
from ..types import ComparisonPrompt

PLACEHOLDERS = frozenset({"context", "a", "b", "aspect"})


#: Other names of the presets, as score columns and people spell them (folded by
#: :func:`name_key`): a column ``engagement`` holds the human scores of ``engagingness``.
ASPECT_SYNONYMS: dict[str, str] = {
    "coherent": "coherence", "coherency": "coherence",
    "consistent": "consistency", "faithfulness": "consistency", "factuality": "consistency",
    "fluent": "fluency",
    "relevant": "relevance", "relevancy": "relevance",
    "natural": "naturalness",
    "engagement": "engagingness", "engaging": "engagingness", "engagingness_score": "engagingness",
    "understandability": "understandable", "understandableness": "understandable",
    "grammaticality": "grammar", "grammatical": "grammar",
    "continuation": "continuity",
    "quality": "overall", "overall_quality": "overall", "overall_score": "overall",
}

#: Aspects that only make sense for dialogue responses: they select the "Response" wording when
#: the data's column names do not say what the texts are.
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
    in a sentence ("relative to the passage"), ``source_label`` the context's heading, ``of`` how
    a candidate relates to its context when a reference is asked for ("a summary of the passage",
    "a response to the instruction").
    """

    noun: str
    source: str
    source_label: str
    of: str = "of"

    @property
    def lower(self) -> str:
        """The noun inside a sentence ("the summary's coherence")."""
        return self.noun.lower()

    def fields(self) -> dict[str, str]:
        """The wording as ``str.format`` fields: ``noun``, ``source``, ``source_label``, ``lower``."""
        return dict(noun=self.noun, source=self.source, source_label=self.source_label,
                    lower=self.lower, of=self.of)

    def reads(self) -> str:
        """What the judge reads, in words: "Story prompt, then Story A and Story B"."""
        return f"{self.source_label}, then {self.noun} A and {self.noun} B"


#: The one table of task wordings; every prompt family (comparison t1/t2, scoring s1/s2, the
#: absolute kind's comparisons and reference requests) takes its words from here. Summary and
#: dialogue are the paper's (SummEval, TopicalChat) and must never change: the reproduction
#: numbers rest on their bytes. "text" is the plain fallback for data of no known kind.
TASK_WORDING: dict[str, TaskWording] = {
    "summary": TaskWording(noun="Summary", source="passage", source_label="Passage"),
    "dialogue": TaskWording(noun="Response", source="conversation", source_label="Conversation"),
    "story": TaskWording(noun="Story", source="prompt", source_label="Story prompt", of="for"),
    "instruction": TaskWording(noun="Response", source="instruction", source_label="Instruction",
                               of="to"),
    "qa": TaskWording(noun="Answer", source="question", source_label="Question", of="to"),
    "code": TaskWording(noun="Solution", source="problem", source_label="Problem", of="for"),
    "text": TaskWording(noun="Text", source="context", source_label="Context", of="for"),
}

#: Every task; t1/t2, s1/s2 and the absolute kind word each of them.
TASKS = tuple(TASK_WORDING)

#: Words in the data's column names (folded by :func:`name_key`, split at ``_``) that say which
#: task its texts are, most specific first: "instruction" before "answer", "story" before
#: "prompt". A file's context and text columns (``story_prompt``/``story``) name it best. The
#: paper's two tasks are not here on purpose: their data (SummEval, TopicalChat) keeps its
#: wording from the aspect alone, as always, so its reproduction numbers cannot move.
TASK_COLUMN_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("instruction", frozenset({"instruction", "instructions", "alpaca", "mt_bench", "mtbench",
                               "llmbar"})),
    ("story", frozenset({"story", "stories", "storyline", "narrative", "plot", "fiction"})),
    ("code", frozenset({"code", "program", "solution", "function", "snippet", "patch"})),
    ("qa", frozenset({"question", "questions", "qa", "answer", "answers", "query"})),
)
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
    """The paper's T1 or T2 in the wording of ``task`` (:data:`TASK_WORDING`)."""
    w = task_wording(task)
    raw = {"t1": _T1, "t2": _T2}.get(name.lower())
    if raw is None:
        raise TemplateError(f"unknown template '{name}'; choose t1, t2 or a file")
    return Template(name=f"{name.lower()}-{task}", text=raw.format(**w.fields()), noun=w.noun)


def custom_template(text: str, name: str = "custom", noun: str | None = None) -> Template:
    """A user's template; the answer noun is guessed from its wording ("Story A" -> "Story")
    unless given, "Summary" when it names none of the tasks' nouns."""
    validate_template_text(text, source=name)
    if noun is None:
        nouns = dict.fromkeys(w.noun for w in TASK_WORDING.values())
        noun = next((n for n in nouns if f"{n} A" in text), "Summary")
    return Template(name=name, text=text, noun=noun)


def name_key(name: str) -> str:
    """A column or aspect name folded for matching: case, surrounding space, inner
    spaces/hyphens/dots as ``_`` ("Overall Quality" -> "overall_quality")."""
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


def canonical_aspect(name: str) -> str | None:
    """The preset a name means: itself, or the preset it is a synonym of (``engagement`` ->
    ``engagingness``); None for a name of no preset."""
    key = name_key(name)
    if key in ASPECT_ADJECTIVES:
        return key
    return ASPECT_SYNONYMS.get(key)


def reference_column(aspect: str, columns: Sequence[str]) -> str | None:
    """The reference-score column of ``columns`` that holds human scores of ``aspect``: the one
    named exactly so, else one named like it after folding, else one whose name is a synonym of
    the same preset (a run of ``engagingness`` on a file with an ``engagement`` column); None
    when no column is about this aspect (a caller then asks, never guesses another aspect).
    """
    columns = list(columns)
    if aspect in columns:
        return aspect
    key = name_key(aspect)
    folded = [c for c in columns if name_key(c) == key]
    if folded:
        return folded[0]
    preset = canonical_aspect(aspect)
    if preset is None:
        return None
    return next((c for c in columns if canonical_aspect(c) == preset), None)


def default_aspect(columns: Sequence[str], fallback: str = "coherence") -> str:
    """The first preset (in :data:`ASPECT_ADJECTIVES` order) a score column is about, by name
    or synonym (``engagement`` -> ``engagingness``), else ``fallback``: what a run on data with
    these reference columns is most likely about."""
    return next((p for p in ASPECT_ADJECTIVES if reference_column(p, columns) is not None),
                fallback)


def rank_aspects(labelled: Mapping[str, int], columns: Sequence[str],
                 run_aspects: Sequence[str] = ()) -> list[str]:
    """The aspects a dataset has evidence for, the strongest first: those it has human labels
    of (the most labelled first), then the presets a reference column is about (by name or
    synonym, in :data:`ASPECT_ADJECTIVES` order) and the reference columns about no preset (a
    ``helpfulness`` column: its own aspect), then those only its runs judged (as given: newest
    first). What pages start at and offer first, so nobody starts a run, a campaign or
    an annotation of an aspect the data says nothing about."""
    ranked = [a for a, n in sorted(labelled.items(), key=lambda kv: -kv[1]) if n > 0]
    ranked += [p for p in ASPECT_ADJECTIVES if reference_column(p, columns) is not None]
    ranked += [c for c in columns if canonical_aspect(c) is None]
    ranked += list(run_aspects)
    return list(dict.fromkeys(a for a in ranked if a))


def task_from_columns(columns: Sequence[str]) -> str | None:
    """The task the data's column names say (``story_prompt``/``story`` -> ``story``,
    ``instruction``/``response`` -> ``instruction``), by :data:`TASK_COLUMN_WORDS`; None when
    they say nothing (``context``/``text``)."""
    words = set()
    for column in columns:
        key = name_key(column)
        words.add(key)
        words.update(w for w in key.split("_") if w)
    for task, signs in TASK_COLUMN_WORDS:
        if words & signs:
            return task
    return None


def infer_task(aspect: Aspect, columns: Sequence[str] = ()) -> str:
    """The wording of a run about ``aspect`` on data whose text columns are named ``columns``:
    what the names say first (a story file judged for engagingness is still about stories),
    else dialogue for dialogue aspects and summary otherwise, as the paper's data needs (and
    "text" only when asked for: the paper's rule stays the default)."""
    from_columns = task_from_columns(columns)
    if from_columns is not None:
        return from_columns
    return "dialogue" if aspect.name in DIALOGUE_ASPECTS else "summary"


def resolve_template(spec: str, aspect: Aspect, task: str = "auto",
                     columns: Sequence[str] = ()) -> Template:
    """``spec`` is ``t1``/``t2`` or a path to a text file holding a template; ``task`` ``auto``
    is inferred from the aspect and the data's text ``columns`` (:func:`infer_task`)."""
    if task == "auto":
        task = infer_task(aspect, columns)
    if spec.lower() in BUILTIN_TEMPLATES:
        return builtin_template(spec, task)
    path = Path(spec)
    if not path.is_file():
        raise TemplateError(f"template '{spec}' is neither t1, t2 nor an existing file, nor a "
                            "template stored by name (`compassess templates` lists them; a "
                            "tuning stores its pick when it finishes)")
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
