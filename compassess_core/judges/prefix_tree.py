"""Shared-prefix plan for a chunk of tokenised prompts: which key/value caches to build, and from where.

The comparisons of one context all start with the same tokens (chat header + context), and those
with the same first candidate also share "Summary A: x_i". The plan is the compressed trie of the
token sequences (the LCP-interval tree of the sorted sequences), pruned to the nodes worth a cache.
It is found by comparing token ids, never text, so reusing a prefix's cache is exact whatever the
template layout. Pure Python/numpy: this module must never touch torch or a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


_MAX_DEPTH = 64


@dataclass
class PrefixNode:
    """A cached prefix: ``tokens[:prefix_len]`` of ``rep`` (identical for every sequence below).

    ``leaves`` are sequence indices whose remaining suffix ``seq[prefix_len:]`` runs on this node's
    cache; ``children`` extend this node's cache further. Every leaf keeps at least one suffix
    token, so the last position is always computed afresh.
    """

    prefix_len: int
    rep: int
    children: list["PrefixNode"] = field(default_factory=list)
    leaves: list[int] = field(default_factory=list)

    def n_sequences(self) -> int:
        return len(self.leaves) + sum(c.n_sequences() for c in self.children)


def adjacent_lcp(seqs: Sequence[Sequence[int]], order: Sequence[int]) -> np.ndarray:
    """Longest common prefix of each pair of neighbours in ``order``, shape (len(order) - 1,)."""
    out = np.zeros(max(len(order) - 1, 0), dtype=np.int64)
    arrs = [np.asarray(seqs[i], dtype=np.int64) for i in order]
    for k in range(len(arrs) - 1):
        a, b = arrs[k], arrs[k + 1]
        m = min(len(a), len(b))
        diff = np.flatnonzero(a[:m] != b[:m])
        out[k] = diff[0] if len(diff) else m
    return out


def plan_prefixes(seqs: Sequence[Sequence[int]], min_saving: int = 32) -> PrefixNode:
    """The prefix-cache plan for distinct token sequences ``seqs`` (no duplicates).

    A node is kept only if its cache saves at least ``min_saving`` prompt tokens:
    ``(sequences below - 1) * (tokens it adds to its parent's prefix) >= min_saving``; otherwise
    its children and leaves move up to its parent (still exact: they just start earlier).

    Returns
    -------
    PrefixNode
        The root; its ``prefix_len`` may be 0 (nothing shared worth caching).
    """
    n = len(seqs)
    if n == 0:
        return PrefixNode(prefix_len=0, rep=-1)
    order = sorted(range(n), key=lambda i: seqs[i])
    lengths = np.array([len(seqs[i]) for i in order], dtype=np.int64)
    if lengths.min() < 1:
        raise ValueError("cannot plan an empty token sequence")
    lcp = adjacent_lcp(seqs, order)
    order_arr = np.asarray(order, dtype=np.int64)

    def make(lo: int, hi: int, depth: int = 0) -> PrefixNode:
        # Sorted order makes every run of sequences sharing a longer prefix contiguous.
        cap = int(lengths[lo:hi].min()) - 1
        if hi - lo == 1:
            return PrefixNode(prefix_len=cap, rep=int(order_arr[lo]), leaves=[int(order_arr[lo])])
        common = int(lcp[lo:hi - 1].min())
        node = PrefixNode(prefix_len=min(common, cap), rep=int(order_arr[lo]))
        # One sequence is a prefix of the others, or nesting deeper than real prompts ever get
        # (context > first candidate > shared opening words): all start here, no recursion limit.
        if common > cap or depth >= _MAX_DEPTH:
            node.leaves = [int(i) for i in order_arr[lo:hi]]
            return node
        cuts = lo + 1 + np.flatnonzero(lcp[lo:hi - 1] == common)
        bounds = [lo, *cuts.tolist(), hi]
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b - a == 1:
                node.leaves.append(int(order_arr[a]))
                continue
            child = make(a, b, depth + 1)
            if (b - a - 1) * (child.prefix_len - node.prefix_len) >= min_saving:
                node.children.append(child)
            else:
                node.children.extend(child.children)
                node.leaves.extend(child.leaves)
        return node

    root = make(0, n)
    if n > 1 and (n - 1) * root.prefix_len < min_saving:
        root.prefix_len = 0
    if n == 1:
        root.prefix_len = 0
    return root


def count_tokens(root: PrefixNode, seqs: Sequence[Sequence[int]]) -> int:
    """Prompt tokens the plan runs through the model (caches + suffixes), for reports."""
    def walk(node: PrefixNode, base: int) -> int:
        t = node.prefix_len - base
        t += sum(len(seqs[i]) - node.prefix_len for i in node.leaves)
        return t + sum(walk(c, node.prefix_len) for c in node.children)
    return walk(root, 0)
