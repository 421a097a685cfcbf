"""Prompts that must fit the judge's context window: found when a run is planned, before any work.

A prompt longer than the model's context window cannot be judged faithfully, and its attention
alone can ask for hundreds of gigabytes. When a run is planned, each context's longest prompts are
rendered exactly as the judge will see them (chat template and primer included) and counted with
the judge's own tokenizer. The candidates' own token counts pick which prompts can be the longest
(the few with the most candidate tokens), so a context costs a handful of exact counts, not one
per pair.

By default a prompt that does not fit is an error naming the context, the candidates and the
count against the limit (:class:`ContextTooLong`, an ``InputError``: CLI exit code 2, nothing
stored). With ``truncate`` the context passage is cut, at a token boundary, just enough for its
longest prompt to fit, and ends with :data:`TRUNCATION_MARK`; the run records which contexts were
cut and to how many characters (:class:`ContextFit`), so every prompt can be rebuilt exactly.

This module must never store anything or choose pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from ..limits import whole_number_from_env
from ..types import ComparisonPrompt, Context

#: Appended to a context passage that was cut to fit the model's context window.
TRUNCATION_MARK = "\n[... passage truncated to fit the model's context window]"
#: A passage cut shorter than this many tokens is refused even with truncation (nothing left).
MIN_CONTEXT_TOKENS = 16
#: Positions kept free after the prompt: the label word is read at the last prompt position,
#: and the scoring kind reads one more token after it.
RESERVED_TOKENS = 2
#: The bound on the prompts of a local model that declares no context window: without one, a
#: long upload would ask its attention for memory without limit. ``COMPASSESS_MAX_PROMPT_TOKENS``
#: sets another bound, and lowers a declared window too (a machine with little memory).
UNDECLARED_WINDOW_TOKENS = 32_768
MAX_PROMPT_TOKENS_ENV = "COMPASSESS_MAX_PROMPT_TOKENS"
#: Exact counts per context: the prompts with the most candidate tokens.
EXACT_PER_CONTEXT = 3

#: (label, prompt) pairs a kind offers as a context's possibly longest prompts, given the context
#: text to use and a function counting raw texts' tokens.
LongestPrompts = Callable[[Context, str, Callable[[Sequence[str]], np.ndarray]],
                          list[tuple[str, ComparisonPrompt]]]


@dataclass(frozen=True)
class TooLong:
    context_id: str
    what: str
    tokens: int


class ContextTooLong(InputError):
    """Prompts longer than the judge's context window (``InputError``: exit code 2)."""

    def __init__(self, problems: Sequence[TooLong], window: int, model: str, truncate: bool):
        self.problems = list(problems)
        first = self.problems[0]
        shown = "\n".join(f"  - context '{p.context_id}': {p.what}: {p.tokens:,} tokens"
                          for p in self.problems[:10])
        more = f"\n  ... and {len(self.problems) - 10} more" if len(self.problems) > 10 else ""
        remedy = ("even with the context passage truncated the candidates alone do not fit; "
                  "shorten the candidate texts or use a model with a longer context window"
                  if truncate else
                  "shorten the texts, use a model with a longer context window, or truncate the "
                  "context passage to fit (`--truncate-context`, or 'Truncate long contexts' on "
                  "the Run page)")
        super().__init__(
            f"{len(self.problems)} context(s) have prompts longer than the context window of "
            f"{model} ({window:,} tokens, {RESERVED_TOKENS} kept for the answer), e.g. context "
            f"'{first.context_id}': {first.what} is {first.tokens:,} tokens:\n{shown}{more}\n"
            f"{remedy}")


@dataclass(frozen=True)
class ContextFit:
    """What planning found: the window, the longest prompt, and the contexts that were cut.

    ``truncated`` maps a context id to the characters of its passage kept (before the mark).
    """

    window: int | None
    longest_tokens: int = 0
    longest_context: str | None = None
    truncated: dict[str, int] = field(default_factory=dict)

    def context_text(self, context: Context) -> str:
        return truncated_text(context.text, self.truncated.get(context.context_id))

    def to_dict(self) -> dict:
        return dict(context_window=self.window, longest_prompt_tokens=self.longest_tokens,
                    longest_prompt_context=self.longest_context,
                    truncated_contexts=dict(self.truncated))


def prompt_token_bound(declared: int | None) -> int:
    """The most tokens a prompt may have: the model's declared context window, lowered to
    ``$COMPASSESS_MAX_PROMPT_TOKENS`` when that is set; for a model that declares no window, the
    variable or :data:`UNDECLARED_WINDOW_TOKENS`.

    Raises
    ------
    InputError
        A value of the variable that is not a whole number of at least 16 tokens.
    """
    cap = whole_number_from_env(MAX_PROMPT_TOKENS_ENV, 0, least=16, unit="tokens")
    if not declared:
        return cap or UNDECLARED_WINDOW_TOKENS
    return min(int(declared), cap) if cap else int(declared)


def truncated_text(text: str, kept_chars: int | None) -> str:
    """A context passage as a run used it: whole, or its first ``kept_chars`` characters and the mark."""
    if kept_chars is None or kept_chars >= len(text):
        return text
    return text[:kept_chars].rstrip() + TRUNCATION_MARK


def fit_contexts(contexts: Sequence[Context], longest_prompts: LongestPrompts, judge, *,
                 truncate: bool) -> ContextFit:
    """Check (and with ``truncate``, cut) every context so its longest prompt fits the window.

    ``judge`` must offer ``prompt_tokens(prompts)`` and a ``tokenizer``; a judge without them (a
    served model: the server enforces its own limit) is not checked. A judge that declares no
    ``context_window`` is held to :func:`prompt_token_bound`.

    Raises
    ------
    ContextTooLong
        Prompts that do not fit (without ``truncate``), or do not fit even with the passage cut.
    """
    window = getattr(judge, "context_window", None)
    tokenizer = getattr(judge, "tokenizer", None)
    if tokenizer is None or not hasattr(judge, "prompt_tokens"):
        return ContextFit(window=window)
    window = prompt_token_bound(window)
    limit = int(window) - RESERVED_TOKENS

    def count(texts: Sequence[str]) -> np.ndarray:
        return np.array([len(x) for x in tokenizer(list(texts), add_special_tokens=False)["input_ids"]],
                        dtype=np.int64)

    def longest(ctx: Context, text: str) -> tuple[int, str]:
        offered = longest_prompts(ctx, text, count)
        tokens = judge.prompt_tokens([p for _, p in offered])
        k = int(np.argmax(tokens))
        return int(tokens[k]), offered[k][0]

    problems: list[TooLong] = []
    truncated: dict[str, int] = {}
    top, top_ctx = 0, None
    for ctx in contexts:
        tokens, what = longest(ctx, ctx.text)
        if tokens > limit and truncate:
            kept = _cut_to_fit(ctx, tokens - limit, tokenizer, lambda text: longest(ctx, text)[0], limit)
            if kept is not None:
                truncated[ctx.context_id] = kept
                tokens, what = longest(ctx, truncated_text(ctx.text, kept))
        if tokens > limit:
            problems.append(TooLong(ctx.context_id, what, tokens))
        elif tokens > top:
            top, top_ctx = tokens, ctx.context_id
    if problems:
        raise ContextTooLong(problems, int(window), getattr(judge, "description", "the judge"),
                             truncate)
    return ContextFit(window=int(window), longest_tokens=top, longest_context=top_ctx,
                      truncated=truncated)


def _cut_to_fit(ctx: Context, excess: int, tokenizer, longest_with: Callable[[str], int],
                limit: int) -> int | None:
    """Characters of the passage to keep so the longest prompt fits; None if nothing useful fits.

    The cut is made at a token boundary of the passage (offsets of the fast tokenizer); token
    merges across the cut can move the count by a token or two, so the cut is checked exactly
    and moved again until it fits.
    """
    enc = tokenizer(ctx.text, add_special_tokens=False, return_offsets_mapping=True)
    ends = [end for _, end in enc["offset_mapping"]]
    mark = len(tokenizer(TRUNCATION_MARK, add_special_tokens=False)["input_ids"])
    keep = len(ends) - excess - mark
    for _ in range(4):
        if keep < MIN_CONTEXT_TOKENS:
            return None
        chars = ends[keep - 1]
        over = longest_with(truncated_text(ctx.text, chars)) - limit
        if over <= 0:
            return chars
        keep -= over
    return None
