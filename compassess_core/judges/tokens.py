"""Token ids of many prompts that share long openings, each shared opening tokenised once.

A chunk's prompts repeat the chat header and the whole context (an article of 500 tokens, a
dialogue) in every comparison: tokenising each prompt in full spends most of the judge's host
time per comparison on tokenising the same text again. The ids here are exactly those of
tokenising each text in full, because the split is made only where the tokenizer itself
splits:

* a fast tokenizer cuts its input at its added tokens (``<|im_start|>``...) first, then splits
  each piece between them into pre-tokens (a regular expression scanned left to right, with at
  most a character of lookahead) and runs BPE on each pre-token alone;
* so two texts equal up to a character ``n`` have the same pre-tokens up to the last few before
  ``n``: a pre-token that starts well before ``n`` (and before any added token that could
  straddle ``n``) starts a pre-token in both, and everything before it has the same ids.

The shared opening is then: the ids of the text up to its last added token, and BPE of the
pre-tokens after it up to the cut; each prompt tokenises only what follows the cut. Used only
for tokenizers whose pipeline is exactly that (no normaliser, byte-level pre-tokenisation by a
regular expression without lookbehind); the first prompt of every group is also checked
against a full tokenisation, and anything else is tokenised in full.

For GPT-2's byte-level pre-tokeniser alone (SmolLM2) every text is instead cut into lines, each
distinct line tokenised once: a comparison's second candidate and its question then cost once
per candidate, not once per pair. The cut is made before a newline that is followed by an ASCII
letter; that is a pre-token boundary on both sides whatever precedes it. GPT-2's expression
(``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``) matches
the newline alone (``\\s+`` stops before the letter, ``\\s+(?!\\S)`` cannot end on it), no
pattern but the whitespace ones crosses a newline, and the whitespace run before the newline
is ``\\s+(?!\\S)`` both followed by the newline and at the end of its line alone; the letter
starts a pre-token in both. (Llama 3's expression keeps punctuation with the newlines after
it, so its tokenizers keep the shared openings.)
"""

from __future__ import annotations

import json
import re
from itertools import chain
from typing import Sequence

#: Texts share an opening worth reusing when it is at least this many characters long.
MIN_SHARED_CHARS = 256
#: Characters kept between the cut and the end of the shared opening (past any lookahead).
_MARGIN = 32


def _common_prefix_len(a: str, b: str) -> int:
    """Length of the longest common prefix (a binary search over C-speed slice comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _splits_as_assumed(pre: dict | None) -> bool:
    """A pre-tokeniser that splits by a left-to-right regular expression and maps bytes: GPT-2
    style ``ByteLevel`` (SmolLM2), or ``Split`` + ``ByteLevel`` (Llama 3), with ``Digits``."""
    if pre is None:
        return False
    kind = pre.get("type")
    if kind == "ByteLevel":
        return True
    if kind == "Digits":
        return True
    if kind == "Split":
        pattern = pre.get("pattern", {})
        regex = pattern.get("Regex", pattern.get("String", ""))
        return "(?<" not in regex and pre.get("behavior") == "Isolated" and not pre.get("invert")
    if kind == "Sequence":
        return all(_splits_as_assumed(p) for p in pre.get("pretokenizers", []))
    return False


class SharedOpeningEncoder:
    """``encode(texts, add_special_tokens)`` = the tokenizer's ids of each text, computing the
    ids of an opening shared by many texts once (see the module's docstring)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self.backend = backend
        self.shares = False
        if backend is None:
            return
        try:
            spec = json.loads(backend.to_str())
        except Exception:  # noqa: BLE001 - an unreadable pipeline is tokenised in full
            return
        self.added = [t["content"] for t in spec.get("added_tokens", []) if t.get("content")]
        plain_added = all(not (t.get("lstrip") or t.get("rstrip") or t.get("single_word"))
                          for t in spec.get("added_tokens", []))
        self.margin = _MARGIN + max((len(s) for s in self.added), default=0)
        self.shares = (spec.get("normalizer") is None and plain_added
                       and _splits_as_assumed(spec.get("pre_tokenizer"))
                       and spec.get("model", {}).get("type") == "BPE"
                       and not spec.get("model", {}).get("dropout")
                       and not getattr(tokenizer, "split_special_tokens", False))
        pre = spec.get("pre_tokenizer") or {}
        # Lines (the module docstring): GPT-2's byte-level expression alone, no added token
        # that holds a newline (the tokenizer cuts at added tokens first).
        self.lines = (self.shares and pre.get("type") == "ByteLevel"
                      and pre.get("use_regex", True) and not pre.get("add_prefix_space")
                      and not any("\n" in a for a in self.added))

    def _full(self, texts: Sequence[str], add: bool) -> list[list[int]]:
        if not texts:
            return []
        if self.backend is not None and hasattr(self.backend, "encode_batch_fast"):
            # The tokenizer's own pipeline without character offsets (the same ids).
            return [e.ids for e in self.backend.encode_batch_fast(list(texts), add_special_tokens=add)]
        return [list(x) for x in self.tokenizer(list(texts), add_special_tokens=add)["input_ids"]]

    def _opening(self, text: str, shared: int) -> tuple[int, list[int]] | None:
        """(cut, ids of ``text[:cut]``) for texts that equal ``text`` up to ``shared`` chars."""
        seg = max((text.rfind(s, 0, shared) + len(s) for s in self.added
                   if text.rfind(s, 0, shared) >= 0), default=0)
        limit = shared - self.margin
        if limit <= seg:
            return None
        pieces = self.backend.pre_tokenizer.pre_tokenize_str(text[seg:shared])
        # the last pre-token that starts before the limit and is not the piece's last
        starts = [seg + start for _, (start, _) in pieces[:-1]]
        usable = [k for k, s in enumerate(starts) if s <= limit]
        if not usable or starts[usable[-1]] - seg < 1:
            return None
        k = usable[-1]
        head = self._full([text[:seg]], False)[0] if seg else []
        model = self.backend.model
        head += [t.id for piece, _ in pieces[:k] for t in model.tokenize(piece)]
        return starts[k], head

    def encode(self, texts: Sequence[str], add_special_tokens: bool,
               depth: int = 3, lines: bool = True) -> list[list[int]]:
        """Token ids of each text, as ``tokenizer(texts, add_special_tokens=...)`` gives them.

        What follows a cut is tokenised the same way again (``depth`` levels): after the
        context, the comparisons of one first candidate share it too."""
        n = len(texts)
        if not self.shares or add_special_tokens or n < 2 or depth < 1:
            return self._full(texts, add_special_tokens)
        if self.lines and lines:
            out = self._by_lines(texts)
            if out is not None:
                return out
        order = sorted(range(n), key=texts.__getitem__)
        out: list[list[int] | None] = [None] * n
        cuts: list[tuple[int, int, list[int]]] = []  # (text index, cut, opening ids)
        tried: list[tuple[list[int], str, int, list[int]]] = []  # (group, first, cut, opening ids)
        at = 0
        while at < n:
            first = texts[order[at]]
            end, shared = at + 1, len(first)
            while end < n:  # sorted: the shared opening only shortens as the group grows
                lcp = _common_prefix_len(first, texts[order[end]])
                if lcp < MIN_SHARED_CHARS:
                    break
                shared, end = min(shared, lcp), end + 1
            group = order[at:end]
            opening = self._opening(first, shared) if len(group) > 1 else None
            if opening is not None:
                tried.append((group, first, *opening))
            else:
                cuts += [(i, 0, []) for i in group]
            at = end
        # Each group's first text checked against its full tokenisation (one batched call).
        checks = self._full([first[cut:] for _, first, cut, _ in tried]
                            + [first for _, first, _, _ in tried], False)
        for k, (group, _, cut, head) in enumerate(tried):
            ok = head + checks[k] == checks[len(tried) + k]
            cuts += [(i, cut, head) if ok else (i, 0, []) for i in group]
        tails = self.encode([texts[i][cut:] for i, cut, _ in cuts], False, depth - 1, lines=False)
        for (i, _, head), tail in zip(cuts, tails):
            out[i] = head + tail
        return out  # type: ignore[return-value]

    def _by_lines(self, texts: Sequence[str]) -> list[list[int]] | None:
        """Each text cut before every newline followed by an ASCII letter (the module
        docstring), each distinct line tokenised once (one batched call), the ids joined; the
        first text is checked against its full tokenisation (None: it differs)."""
        cut = [_lines(t) for t in texts]
        distinct = list(dict.fromkeys(chain.from_iterable(cut)))
        done = self._full(distinct + [texts[0]], False)
        ids = dict(zip(distinct, done))
        out = [list(chain.from_iterable(ids[s] for s in parts)) for parts in cut]
        return out if out[0] == done[-1] else None


#: Before each newline that is followed by an ASCII letter (the module docstring).
_LINE_CUT = re.compile(r"(?=\n[A-Za-z])")


def _lines(text: str) -> list[str]:
    """``text`` cut before each newline that is followed by an ASCII letter."""
    return _LINE_CUT.split(text)
