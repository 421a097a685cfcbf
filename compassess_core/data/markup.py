"""HTML markup in uploaded texts: found before a dataset is saved, and stripped when the user asks.

Scraped benchmarks often carry ``<br />``, ``<p>`` or ``&amp;`` in their texts; a judge reads them
as part of the text (and a longer text with tags may win for the wrong reason). The Upload page
says how many texts hold markup, with examples, and offers to strip it; a stripped dataset records
that in its ``source``, and its content hash (hence its identity in the store) changes with it.

Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace

from .candidates import content_hash
from ..errors import Problem, ValidationError
from ..types import Dataset

__all__ = ["MarkupReport", "find_markup", "is_html_document", "strip_markup", "strip_dataset_markup", "STRIPPED_NOTE"]

#: An HTML/XML tag: ``<p>``, ``</div>``, ``<br/>``, ``<a href="...">``; a lone ``<`` in prose
#: ("a < b", "<3") is not one.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]*)?/?>")
#: A character reference: ``&amp;``, ``&#39;``, ``&#x27;``.
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
#: Tags that end a line or a block: they become a line break, the others vanish.
_BREAK = re.compile(r"<\s*(?:br|/p|p|/div|div|/li|li|/tr|tr|/h[1-6]|h[1-6])(?:\s[^<>]*)?/?>",
                    re.IGNORECASE)
STRIPPED_NOTE = "HTML tags stripped and entities decoded on upload"


@dataclass(frozen=True)
class MarkupReport:
    """Where a dataset holds HTML markup.

    Attributes
    ----------
    n_texts, n_candidates : int
        Candidate texts with markup, and all candidate texts.
    n_contexts_marked, n_contexts : int
        Context passages with markup, and all contexts.
    examples : tuple of str
        Up to five distinct tags or entities found, as written.
    n_documents : int
        Candidate texts that are an HTML document or fragment themselves (markup from their
        first character to their last, such as an answer that is a web form): their tags are
        what they say, and stripping them changes what the judge compares
        (:func:`is_html_document`).
    document_rows : tuple of int
        The file rows of up to five of them.
    """

    n_texts: int
    n_candidates: int
    n_contexts_marked: int
    n_contexts: int
    examples: tuple[str, ...]
    n_documents: int = 0
    document_rows: tuple[int, ...] = ()

    @property
    def found(self) -> bool:
        return bool(self.n_texts or self.n_contexts_marked)


#: A document type declaration or an HTML comment opening a text.
_DOCTYPE = re.compile(r"<!(?:DOCTYPE|--)", re.IGNORECASE)


#: Tags that format prose (scraped text wraps paragraphs in them); any other tag in a text that
#: is markup from end to end (``<form>``, ``<input>``, ``<html>``, ``<table>``) makes it HTML.
_PROSE_TAGS = frozenset({"p", "br", "b", "i", "em", "strong", "span", "div", "a", "li", "ul",
                         "ol", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "sup", "sub",
                         "u", "hr", "small"})
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*)")


def is_html_document(text: str) -> bool:
    """Whether ``text`` is HTML itself rather than prose with some markup: it opens with a
    ``<!DOCTYPE`` or a comment, or it opens and closes with a tag and holds a tag that does not
    just format prose (``<form ...><input ...></form>``, ``<html>...</html>``). Stripping
    such a text leaves a different text from the one people read."""
    body = text.strip()
    if _DOCTYPE.match(body):
        return True
    if not (_TAG.match(body) and re.search(r"(?:" + _TAG.pattern + r")\Z", body)):
        return False
    return any(name.lower() not in _PROSE_TAGS
               for name in _TAG_NAME.findall(" ".join(_TAG.findall(body))))


def _marks(text: str) -> list[str]:
    return _TAG.findall(text) + _ENTITY.findall(text)


def find_markup(dataset: Dataset) -> MarkupReport:
    """Count the candidate texts and context passages holding an HTML tag or entity."""
    examples: dict[str, None] = {}
    n_texts = n_contexts = 0
    documents: list[int] = []
    for ctx in dataset.contexts:
        marks = _marks(ctx.text)
        n_contexts += bool(marks)
        examples.update(dict.fromkeys(marks[:2]))
        for cand in ctx.candidates:
            marks = _marks(cand.text)
            n_texts += bool(marks)
            examples.update(dict.fromkeys(marks[:2]))
            if marks and is_html_document(cand.text):
                documents.append(cand.row)
    return MarkupReport(n_texts, dataset.n_candidates, n_contexts, len(dataset.contexts),
                        tuple(list(examples)[:5]), len(documents), tuple(documents[:5]))


def strip_markup(text: str) -> str:
    """``text`` without HTML: line-ending tags (``<br>``, ``</p>``, ...) become a line break,
    other tags vanish, character references are decoded (``&amp;`` -> ``&``), runs of three or
    more line breaks shrink to two."""
    out = _BREAK.sub("\n", text)
    out = _TAG.sub("", out)
    out = html.unescape(out)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def strip_dataset_markup(dataset: Dataset) -> Dataset:
    """The dataset with :func:`strip_markup` applied to every context and candidate text, its
    ``source`` noting it (:data:`STRIPPED_NOTE`) and its content hash recomputed.

    Raises
    ------
    ValidationError
        A text or passage that is nothing but markup (it would be empty), with its row.
    """
    empty = [Problem(dataset.source or dataset.name, "the text is nothing but HTML markup: "
                     "stripping it leaves it empty", row=c.row, column="text")
             for ctx in dataset.contexts for c in ctx.candidates if not strip_markup(c.text)]
    empty += [Problem(dataset.source or dataset.name, f"context '{ctx.context_id}' is nothing "
                      "but HTML markup: stripping it leaves it empty", column="context")
              for ctx in dataset.contexts if not strip_markup(ctx.text)]
    if empty:
        raise ValidationError(empty)
    contexts = tuple(
        replace(ctx, text=strip_markup(ctx.text),
                candidates=tuple(replace(c, text=strip_markup(c.text)) for c in ctx.candidates))
        for ctx in dataset.contexts)
    source = f"{dataset.source} ({STRIPPED_NOTE})" if dataset.source else STRIPPED_NOTE
    return replace(dataset, contexts=contexts, source=source, content_hash=content_hash(contexts))
