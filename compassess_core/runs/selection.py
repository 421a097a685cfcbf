"""Which ordered pairs of one context to compare (Liusie, Manakul, Gales, EACL 2024, §3.4).

With N candidates the full set has N(N-1) ordered comparisons; under a budget R the paper draws R
of them at random, never both orders of a pair ("no-repeat"), or always both orders ("symmetric",
which lets positional bias cancel and the balanced threshold be the median of p).

Pairs are returned as an ``(m, 2)`` int64 array of ``(first, second)`` rows sorted by
``(first, second)`` so that comparisons sharing a first candidate are contiguous (prompt prefixes
can be batched/cached). This module must never build Python lists of pairs: everything is sampled
as integer codes of pairs and decoded with vectorised arithmetic.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..types import IntArray

__all__ = ["STRATEGIES", "select_pairs", "max_budget"]

STRATEGIES: tuple[str, ...] = ("full", "random", "no-repeat", "symmetric", "poe", "adaptive")
#: Strategies that choose pairs from outcomes already judged: they cannot be planned up front
#: (the run loop asks ``efficient.adaptive_next_pairs`` for each next batch).
OUTCOME_DEPENDENT: frozenset[str] = frozenset({"adaptive"})


def max_budget(n: int, strategy: str) -> int:
    """Largest number of comparisons ``strategy`` can produce for ``n`` candidates.

    ``n(n-1)`` for full, random, symmetric, poe and adaptive; ``n(n-1)/2`` for no-repeat (one
    order per pair).

    Raises
    ------
    InputError
        If ``strategy`` is unknown.
    """
    _check_strategy(strategy)
    total = n * (n - 1)
    return total // 2 if strategy == "no-repeat" else total


def _check_strategy(strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise InputError(f"unknown selection strategy {strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")


def _decode_ordered(code: IntArray, n: int) -> IntArray:
    """Ordered-pair codes ``0..n(n-1)-1`` (row-major over ``i != j``) to ``(i, j)`` rows."""
    first = code // (n - 1)
    r = code % (n - 1)
    second = r + (r >= first)  # skip the diagonal
    return np.column_stack((first, second)).astype(np.int64, copy=False)


def _decode_unordered(code: IntArray, n: int) -> IntArray:
    """Unordered-pair codes ``0..n(n-1)/2-1`` (row-major upper triangle) to ``(a, b)``, ``a < b``."""
    def offset(a: IntArray) -> IntArray:  # number of pairs whose smaller index is < a
        return a * (2 * n - a - 1) // 2

    c = code.astype(np.int64)
    # Root of a^2 - (2n-1) a + 2c = 0; float rounding can miss by one, fixed below in integers.
    disc = np.maximum((2 * n - 1) ** 2 - 8 * c.astype(np.float64), 0.0)
    a = np.floor(((2 * n - 1) - np.sqrt(disc)) / 2).astype(np.int64)
    a = np.clip(a, 0, n - 2)
    for _ in range(2):
        a = np.where(offset(a) > c, a - 1, a)
        a = np.where((a + 1 <= n - 2) & (offset(a + 1) <= c), a + 1, a)
    b = c - offset(a) + a + 1
    return np.column_stack((a, b))


def _sorted_rows(pairs: IntArray) -> IntArray:
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return np.ascontiguousarray(pairs[order])


def select_pairs(n: int, strategy: str = "full", budget: int | None = None,
                 seed: int | np.random.Generator = 0) -> IntArray:
    """Choose the ordered pairs to compare for one context (§3.4 of Liusie et al. 2024).

    Parameters
    ----------
    n : int
        Number of candidates in the context (at least 2).
    strategy : {"full", "random", "no-repeat", "symmetric", "poe"}
        ``full``: all ``n(n-1)`` ordered pairs (``budget`` is ignored). ``random``: ``budget``
        ordered pairs drawn uniformly without replacement. ``no-repeat``: ``budget`` unordered
        pairs drawn without replacement, each in one order chosen at random (never both orders).
        ``symmetric``: ``budget // 2`` unordered pairs, each in both orders. ``poe``: greedy
        product-of-experts selection (``efficient.poe_pairs``). ``adaptive`` depends on outcomes
        and is refused here (see ``runner``).
    budget : int, optional
        Number of ordered comparisons; required for every strategy but ``full``.
    seed : int or numpy.random.Generator
        Seed (or generator) of the draw; the same seed gives the same pairs.

    Returns
    -------
    IntArray
        Shape ``(m, 2)``, rows ``(first, second)``, sorted by ``(first, second)``, no repeated row.

    Raises
    ------
    InputError
        Unknown strategy; ``n < 2``; ``budget`` missing, negative, above the strategy's maximum
        (stated in the message), or odd for ``symmetric``.
    """
    _check_strategy(strategy)
    n = int(n)
    if n < 2:
        raise InputError(f"a context needs at least 2 candidates to compare, got {n}")
    if strategy == "full":
        return _decode_ordered(np.arange(n * (n - 1), dtype=np.int64), n)
    if strategy in OUTCOME_DEPENDENT:
        raise InputError(f"strategy {strategy!r} chooses pairs from the outcomes so far; it cannot "
                         "be planned up front (the run loop selects its pairs batch by batch)")

    if budget is None:
        raise InputError(f"strategy {strategy!r} needs a budget (number of comparisons per context)")
    budget = int(budget)
    maximum = max_budget(n, strategy)
    if budget < 0:
        raise InputError(f"budget must be >= 0, got {budget}")
    if budget > maximum:
        raise InputError(f"budget {budget} exceeds the maximum of {maximum} comparisons for "
                         f"strategy {strategy!r} with {n} candidates")
    if strategy == "symmetric" and budget % 2:
        raise InputError(f"strategy 'symmetric' needs an even budget (both orders of each pair), "
                         f"got {budget}")

    if strategy == "poe":
        from ..stats.efficient import poe_pairs
        return poe_pairs(n, budget, seed)
    rng = np.random.default_rng(seed)
    if strategy == "random":
        code = rng.choice(n * (n - 1), size=budget, replace=False).astype(np.int64)
        return _sorted_rows(_decode_ordered(code, n))

    n_unordered = budget if strategy == "no-repeat" else budget // 2
    code = rng.choice(n * (n - 1) // 2, size=n_unordered, replace=False).astype(np.int64)
    pairs = _decode_unordered(code, n)
    if strategy == "no-repeat":
        swap = rng.random(n_unordered) < 0.5
        pairs = np.where(swap[:, None], pairs[:, ::-1], pairs)
    else:
        pairs = np.concatenate((pairs, pairs[:, ::-1]))
    return _sorted_rows(pairs)
