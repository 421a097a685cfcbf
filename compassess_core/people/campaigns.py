"""Annotation campaigns: which pairs a campaign holds, what each annotator judges next, how far
everyone is, where people disagree and how much they agree.

A campaign is a fixed list of unordered pairs ``(context_id, x, y)`` (``x < y``) of one dataset
and aspect, a set of annotators and an ``overlap`` (how many people should label each pair). Its
labels are the answers given in it (the store's ``campaign_judgements_frame``): people's votes
and, apart from them, an admin's adjudications (``source = "adjudication"``), which settle a
disputed pair and are never counted as a vote.

Pure Python, pandas and numpy: this module must never read or write storage, import
``streamlit`` or ``db``.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..stats.agreement import (ADJUDICATION, BOTH_BAD, SKIP, TIE, HumanAgreement, as_human_table,
                        human_human_agreement)
from .annotation import all_pairs, next_pairs
from ..errors import InputError
from ..types import ComparisonTable, Dataset, Outcome

__all__ = ["SELECTIONS", "CHOICES", "choose_pairs", "votes", "adjudications", "queue", "progress",
           "disagreements", "agreement", "stored_winner", "completed_pairs",
           "agreement_of"]

#: How a campaign's pairs are chosen when it is created.
SELECTIONS: tuple[str, ...] = ("all", "sample", "informative")
#: What a person may answer about a pair besides one of its two candidates.
CHOICES: tuple[str, ...] = (TIE, BOTH_BAD)

_PAIR = ["context_id", "x", "y"]
Pair = tuple[str, str, str]
#: What an annotator is told of their agreement with the others (:func:`agreement_of`) must not
#: give any one person's vote away. A figure recomputed after every answer would: with one other
#: voter on a pair (a team overlap of 2), whether it rose or fell after that pair says whether the
#: other voted as you did, vote by vote. So a pair counts only once at least this many others
#: voted on it (their votes mix in one step, naming none of them)...
MIN_OTHERS_PER_PAIR = 3
#: ...and the figure moves in batches: it covers the first ``k * AGREEMENT_BATCH`` such pairs
#: with the votes as stored when the last of them qualified, so no single later answer (a vote,
#: a change of mind, a fourth voter) moves it; only a new batch does, mixing at least
#: ``AGREEMENT_BATCH * MIN_OTHERS_PER_PAIR`` votes.
AGREEMENT_BATCH = 5
#: The agreement shown is rounded to this (a share: whole percent), kappa to two decimals.
AGREEMENT_ROUNDING = 0.01


def choose_pairs(dataset: Dataset, selection: str = "all", n_pairs: int | None = None, *,
                 seed: int = 0, human_df: pd.DataFrame | None = None,
                 llm: ComparisonTable | None = None, tau: float = 0.5) -> list[Pair]:
    """The pairs of a new campaign, deterministic for a given seed.

    - ``all``: every unordered pair of every context, contexts in the dataset's order.
    - ``sample``: ``n_pairs`` of them drawn without replacement (``numpy`` generator seeded by
      ``seed``), kept in the dataset's order.
    - ``informative``: the ``n_pairs`` (all when None) whose next label most reduces the
      uncertainty of the ranking fused from the labels so far and, when given, a run's
      comparisons (``annotation.next_pairs(..., mode="informative")``, ties in seeded order).

    Raises
    ------
    InputError
        An unknown selection, ``sample`` without a positive ``n_pairs``, or a dataset without a
        pair.
    """
    if selection not in SELECTIONS:
        raise InputError(f"pair selection '{selection}' is not one of {', '.join(SELECTIONS)}")
    if n_pairs is not None and int(n_pairs) < 1:
        raise InputError(f"the number of pairs must be at least 1, not {n_pairs}")
    pairs = all_pairs(dataset)
    if len(pairs) == 0:
        raise InputError(f"dataset '{dataset.name}' has no pair of candidates to label")
    if selection == "all":
        chosen = pairs
    elif selection == "sample":
        if n_pairs is None:
            raise InputError("a sampled campaign needs the number of pairs (n_pairs)")
        k = min(int(n_pairs), len(pairs))
        picked = np.sort(np.random.default_rng(seed).choice(len(pairs), size=k, replace=False))
        chosen = pairs.iloc[picked]
    else:
        return next_pairs(dataset, llm, human_df, "", "informative", tau, allow_repeat=True,
                          seed=seed, limit=n_pairs)
    return list(zip(chosen["context_id"].tolist(), chosen["x"].tolist(), chosen["y"].tolist()))


def _canonical(labels: pd.DataFrame) -> pd.DataFrame:
    """Labels keyed by unordered pair: ``context_id, x, y, annotator, choice, source, comment``
    where ``choice`` is the preferred candidate id, ``tie`` or ``both_bad``."""
    if labels is None or len(labels) == 0:
        return pd.DataFrame(columns=[*_PAIR, "annotator", "choice", "source", "comment"])
    t = as_human_table(labels)
    left_first = (t["left_id"] < t["right_id"]).to_numpy()
    out = pd.DataFrame({"context_id": t["context_id"],
                        "x": np.where(left_first, t["left_id"], t["right_id"]),
                        "y": np.where(left_first, t["right_id"], t["left_id"]),
                        "annotator": t["annotator"], "choice": t["winner_id"],
                        "source": t["source"] if "source" in t else "",
                        "comment": (labels["comment"].to_numpy() if "comment" in labels
                                    else None)})
    return out.loc[out["choice"] != SKIP].reset_index(drop=True)


def votes(labels: pd.DataFrame) -> pd.DataFrame:
    """People's votes: one per annotator and pair (the newest), adjudications and skips left out.

    Returns ``context_id, x, y, annotator, choice, comment``."""
    c = _canonical(labels)
    c = c.loc[c["source"] != ADJUDICATION]
    return (c.drop_duplicates(["annotator", *_PAIR], keep="last")
            .drop(columns="source").reset_index(drop=True))


def adjudications(labels: pd.DataFrame) -> pd.DataFrame:
    """The admins' decisions, the newest per pair: ``context_id, x, y, annotator, choice,
    comment`` (``annotator`` is the admin who decided)."""
    c = _canonical(labels)
    c = c.loc[c["source"] == ADJUDICATION]
    return c.drop_duplicates(_PAIR, keep="last").drop(columns="source").reset_index(drop=True)


class _Rows(NamedTuple):
    """A campaign's labels as plain lists in stored order, skips left out: each row's unordered
    pair, who answered, the choice (a candidate id, ``tie`` or ``both_bad``) and whether it is an
    adjudication. The per-answer computations below work on these: a campaign holds a few
    thousand pairs and tens of thousands of labels, where dict and set look-ups cost
    microseconds and pandas merges on string columns cost milliseconds each."""
    pair: list[Pair]
    annotator: list[str]
    choice: list[str]
    adjudication: list[bool]


#: The store's winners (``Outcome`` values, seen from the left) and the choice each one means.
_STORED_WINNERS = {Outcome.A.value: "left", Outcome.B.value: "right", TIE: TIE, SKIP: SKIP,
                   BOTH_BAD: BOTH_BAD}
_Columns = tuple[list, list, list, list, list, list]


def _stored_columns(labels: pd.DataFrame) -> _Columns | None:
    """``context_id, left_id, right_id, winner_id, annotator, source`` of a table in the store's
    shape whose every cell is a plain string and winner exactly an ``Outcome`` value, as lists;
    None for anything else. For such a table :func:`as_human_table` would only copy the strings
    (and check what is checked here), at several times the cost, paid at every answer."""
    names = ("context_id", "candidate_left", "candidate_right", "winner", "annotator", "source")
    if not set(names) <= set(labels.columns):
        return None
    ctx, left, right, winner, who, source = (labels[c].tolist() for c in names)
    if any(set(map(type, col)) - {str} for col in (ctx, left, right, who, source)):
        return None
    choice = []
    for lt, rt, w in zip(left, right, winner):
        meaning = _STORED_WINNERS.get(w) if type(w) is str else None
        if meaning is None or lt == rt:
            return None
        choice.append(lt if meaning == "left" else rt if meaning == "right" else meaning)
    return ctx, left, right, choice, who, source


def _columns(labels: pd.DataFrame) -> _Columns:
    """The canonical columns of ``labels`` as lists (:func:`as_human_table`, which names the
    first bad row of a bad table)."""
    fast = _stored_columns(labels)
    if fast is not None:
        return fast
    t = as_human_table(labels)
    source = t["source"].tolist() if "source" in t else [""] * len(t)
    return (t["context_id"].tolist(), t["left_id"].tolist(), t["right_id"].tolist(),
            t["winner_id"].tolist(), t["annotator"].tolist(), source)


def _rows(labels: pd.DataFrame) -> _Rows:
    """:class:`_Rows` of ``labels``; bad rows raise as :func:`as_human_table` does."""
    out = _Rows([], [], [], [])
    if labels is None or len(labels) == 0:
        return out
    for ctx, left, right, choice, who, src in zip(*_columns(labels)):
        if choice == SKIP:
            continue
        out.pair.append((ctx, left, right) if left < right else (ctx, right, left))
        out.annotator.append(who)
        out.choice.append(choice)
        out.adjudication.append(src == ADJUDICATION)
    return out


def _newest_votes(rows: _Rows, upto: int | None = None) -> dict[tuple[str, Pair], str]:
    """People's votes (adjudications left out), the newest per ``(annotator, pair)``, from the
    rows up to index ``upto`` (every row when None), as ``{(annotator, pair): choice}``."""
    newest: dict[tuple[str, Pair], str] = {}
    end = len(rows.pair) if upto is None else upto + 1
    for k in range(end):
        if not rows.adjudication[k]:
            newest[rows.annotator[k], rows.pair[k]] = rows.choice[k]
    return newest


class _Tally(NamedTuple):
    """What every queue derives from: votes per pair and each annotator's voted pairs."""
    per_pair: dict[Pair, int]
    mine: dict[str, set[Pair]]


def _tally(labels: pd.DataFrame) -> _Tally:
    per_pair: dict[Pair, int] = {}
    mine: dict[str, set[Pair]] = {}
    for who, pair in _newest_votes(_rows(labels)):
        per_pair[pair] = per_pair.get(pair, 0) + 1
        mine.setdefault(who, set()).add(pair)
    return _Tally(per_pair, mine)


def _pair_keys(pairs: pd.DataFrame | Sequence[Pair]) -> list[Pair]:
    """The campaign's pairs as tuples, in its order."""
    if isinstance(pairs, pd.DataFrame):
        return list(zip(pairs["context_id"].tolist(), pairs["x"].tolist(), pairs["y"].tolist()))
    return [tuple(p) for p in pairs]


def _vote_counts(keys: list[Pair], tally: _Tally) -> np.ndarray:
    return np.fromiter((tally.per_pair.get(p, 0) for p in keys), np.int64, len(keys))


def _open(keys: list[Pair], n: np.ndarray, tally: _Tally, annotator: str,
          overlap: int) -> np.ndarray:
    """Which pairs are in ``annotator``'s queue: not voted on by them, fewer than ``overlap``
    votes."""
    mine = tally.mine.get(annotator, set())
    done = np.fromiter((p in mine for p in keys), bool, len(keys))
    return ~done & (n < int(overlap))


def queue(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame, annotator: str,
          overlap: int, *, seed: int = 0, later: Iterable[Pair] = ()) -> list[Pair]:
    """What ``annotator`` judges next in a campaign: its pairs they have not voted on whose
    number of votes is still below ``overlap``; the least-labelled first, then a seeded order
    (the same seed gives the same queue). Pairs in ``later`` (skipped in this session) go last:
    a skip is not an answer, the pair stays in the queue."""
    keys = _pair_keys(pairs)
    tally = _tally(labels)
    n = _vote_counts(keys, tally)
    keep = _open(keys, n, tally, annotator, overlap)
    skipped = set(map(tuple, later))
    postponed = np.fromiter((p in skipped for p in keys), bool, len(keys))
    shuffle = np.random.default_rng(seed).permutation(len(keys))
    order = np.lexsort((shuffle, n, postponed))
    return [keys[k] for k in order[keep[order]].tolist()]


def progress(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
             annotators: Sequence[str], overlap: int) -> pd.DataFrame:
    """One row per annotator (assigned now, or with a vote in the campaign): ``annotator``,
    ``assigned``, ``labelled`` (their votes), ``target`` (their fair share of ``n_pairs x
    overlap`` votes, at most ``n_pairs``), ``remaining`` (pairs still in their queue) and
    ``done`` (labelled / target)."""
    keys = _pair_keys(pairs)
    tally = _tally(labels)
    # The votes are counted once; each annotator's queue length follows from them (its order,
    # which needs the seeded shuffle, does not matter here).
    n = _vote_counts(keys, tally)
    people = list(dict.fromkeys([*annotators, *sorted(tally.mine)]))
    wanted = len(keys) * int(overlap)
    target = min(len(keys), -(-wanted // max(len(annotators), 1))) if annotators else 0
    rows = []
    for who in people:
        labelled = len(tally.mine.get(who, ()))
        assigned = who in annotators
        remaining = int(_open(keys, n, tally, who, overlap).sum()) if assigned else 0
        rows.append(dict(annotator=who, assigned=assigned, labelled=labelled,
                         target=target if assigned else labelled, remaining=remaining,
                         done=(min(labelled / target, 1.0) if assigned and target else 1.0)))
    return pd.DataFrame(rows, columns=["annotator", "assigned", "labelled", "target", "remaining",
                                       "done"])


def completed_pairs(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
                    overlap: int) -> int:
    """How many of the campaign's pairs have ``overlap`` votes or more."""
    keys = _pair_keys(pairs)
    return int((_vote_counts(keys, _tally(labels)) >= int(overlap)).sum())


def disagreements(labels: pd.DataFrame) -> pd.DataFrame:
    """Pairs with at least two votes that are not all the same, most split first.

    Returns ``context_id, x, y, n_votes, answers`` (``annotator: choice`` joined with "; "),
    ``majority`` (the choice with a strict majority, or None when the vote is split),
    ``adjudicated`` (the admin's decision, None when not yet decided) and ``adjudicated_by``.
    """
    columns = [*_PAIR, "n_votes", "answers", "majority", "adjudicated", "adjudicated_by"]
    v = votes(labels)
    if len(v) == 0:
        return pd.DataFrame(columns=columns)
    rows = []
    for (ctx, x, y), group in v.groupby(_PAIR, sort=True):
        if len(group) < 2 or group["choice"].nunique() < 2:
            continue
        counts = group["choice"].value_counts()
        majority = counts.index[0] if counts.iloc[0] * 2 > len(group) else None
        answers = "; ".join(f"{a}: {c}" for a, c in zip(group["annotator"], group["choice"]))
        rows.append(dict(context_id=ctx, x=x, y=y, n_votes=len(group), answers=answers,
                         majority=majority, split=counts.iloc[0] / len(group)))
    out = pd.DataFrame(rows, columns=[*_PAIR, "n_votes", "answers", "majority", "split"])
    decided = adjudications(labels)
    out = out.merge(decided[[*_PAIR, "choice", "annotator"]].rename(
        columns={"choice": "adjudicated", "annotator": "adjudicated_by"}), on=_PAIR, how="left")
    out = out.sort_values(["split", *_PAIR], kind="stable").drop(columns="split")
    out = out.astype(object).where(out.notna(), None)
    return out.reset_index(drop=True)[columns]


def agreement(labels: pd.DataFrame) -> HumanAgreement:
    """Inter-annotator agreement of a campaign's votes (``agreement.human_human_agreement``:
    percent agreement, Cohen's kappa of two annotators, Krippendorff's alpha, pairwise kappas);
    adjudications are left out."""
    c = _canonical(labels)
    c = c.loc[c["source"] != ADJUDICATION]
    table = pd.DataFrame({"context_id": c["context_id"], "left_id": c["x"], "right_id": c["y"],
                          "winner_id": c["choice"], "annotator": c["annotator"]})
    return human_human_agreement(table)


def agreement_of(labels: pd.DataFrame, annotator: str) -> dict:
    """How one annotator's votes agree with the others' in a campaign, in a form that gives no
    one's vote away (:data:`MIN_OTHERS_PER_PAIR`, :data:`AGREEMENT_BATCH`).

    A pair *counts* from the answer that made it one the annotator voted on and at least
    :data:`MIN_OTHERS_PER_PAIR` others voted on too, in the order the answers were stored
    (``labels`` is in that order). The figures cover the first ``k * AGREEMENT_BATCH`` counted
    pairs (``k`` as large as the counted pairs allow), with every vote stored up to the answer
    that made the last of them count (the newest per person and pair), and nothing stored
    after it: so they change only when a batch is complete.

    Returns ``n_items`` (the pairs covered: a multiple of the batch, 0 until the first batch),
    ``n_others`` (how many others voted on them), ``agreement`` (share of agreeing (theirs,
    other's) vote pairs over them, rounded to :data:`AGREEMENT_ROUNDING`), ``kappa`` (Cohen's
    kappa of the same vote pairs, every pair counted in both orientations so the candidates'
    names cannot change it, ``agreement.pair_kappa``, both-bad counting as a tie; two
    decimals), ``withheld`` (True while the annotator has voted but no batch is complete;
    the figures are then NaN), and the rule itself: ``min_others`` (:data:`MIN_OTHERS_PER_PAIR`)
    and ``batch`` (:data:`AGREEMENT_BATCH`). Adjudications are no votes."""
    from ..stats.agreement import TIE_CODE, X_BETTER, Y_BETTER, pair_kappa
    nan = float("nan")
    rows = _rows(labels)
    # The first vote of each person on each pair, in stored order (dicts keep insertion order).
    first: dict[tuple[str, Pair], int] = {}
    for k, (who, pair) in enumerate(zip(rows.annotator, rows.pair)):
        if not rows.adjudication[k]:
            first.setdefault((who, pair), k)
    mine: dict[Pair, int] = {}
    seen_others: dict[Pair, int] = {}
    enough: dict[Pair, int] = {}  # the answer that brought a pair to MIN_OTHERS_PER_PAIR others
    for (who, pair), k in first.items():
        if who == annotator:
            mine[pair] = k
            continue
        seen_others[pair] = seen_others.get(pair, 0) + 1
        if seen_others[pair] == MIN_OTHERS_PER_PAIR:
            enough[pair] = k
    # A pair counts from the later of my first vote and its last needed other's; two pairs never
    # share that answer (a row is about one pair), so the order is total.
    counted = sorted((max(k, enough[pair]), pair) for pair, k in mine.items() if pair in enough)
    covered = len(counted) // AGREEMENT_BATCH * AGREEMENT_BATCH
    if covered == 0:
        return dict(n_items=0, n_others=0, agreement=nan, kappa=nan, withheld=len(mine) > 0,
                    min_others=MIN_OTHERS_PER_PAIR, batch=AGREEMENT_BATCH)
    cutoff = counted[covered - 1][0]
    pairs = {pair for _, pair in counted[:covered]}
    newest = _newest_votes(rows, upto=cutoff)

    def code(pair: Pair, choice: str) -> int:
        return X_BETTER if choice == pair[1] else Y_BETTER if choice == pair[2] else TIE_CODE

    me = {pair: code(pair, newest[annotator, pair]) for pair in pairs}
    a, b, others = [], [], set()
    for (who, pair), choice in newest.items():
        if who != annotator and pair in pairs:
            a.append(me[pair])
            b.append(code(pair, choice))
            others.add(who)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    share = round(float((a == b).mean()) / AGREEMENT_ROUNDING) * AGREEMENT_ROUNDING
    kappa = pair_kappa(a, b)
    return dict(n_items=covered, n_others=len(others),
                agreement=round(share, 4), kappa=kappa if kappa != kappa else round(kappa, 2),
                withheld=False, min_others=MIN_OTHERS_PER_PAIR, batch=AGREEMENT_BATCH)


def stored_winner(pair: Pair, choice: str) -> dict:
    """A decision about ``pair`` as a stored row's candidates and winner: ``choice`` is one of
    its two candidate ids, ``tie`` or ``both_bad``; the pair is stored as shown x left, y right.

    Raises
    ------
    InputError
        A choice that is neither candidate, ``tie`` nor ``both_bad``.
    """
    ctx, x, y = pair
    choice = str(choice)
    if choice == x:
        winner = Outcome.A.value
    elif choice == y:
        winner = Outcome.B.value
    elif choice.lower() in CHOICES:
        winner = choice.lower()
    else:
        raise InputError(f"the decision must be '{x}', '{y}', '{TIE}' or '{BOTH_BAD}', "
                         f"not '{choice}'")
    return dict(context_id=ctx, candidate_left=x, candidate_right=y, winner=winner)
