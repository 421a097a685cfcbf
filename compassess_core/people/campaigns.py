"""Annotation campaigns: which pairs a campaign holds, what each annotator judges next, how far
everyone is, where people disagree and how much they agree.

A campaign is a fixed list of unordered pairs ``(context_id, x, y)`` (``x < y``) of one dataset
and aspect, a set of annotators and an ``overlap`` (how many people should label each pair). Its
labels are the answers given in it (the store's ``campaign_judgements_frame``): people's votes
and, apart from them, an admin's adjudications (``source = "adjudication"``), which settle a
disputed pair and are never counted as a vote.

Pure pandas/numpy: this module must never read or write storage, import ``streamlit`` or ``db``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

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


def _pairs_frame(pairs: pd.DataFrame | Sequence[Pair]) -> pd.DataFrame:
    if isinstance(pairs, pd.DataFrame):
        return pairs[_PAIR].reset_index(drop=True)
    return pd.DataFrame(list(pairs), columns=_PAIR)


def _counts(pairs: pd.DataFrame, v: pd.DataFrame) -> np.ndarray:
    per_pair = v.groupby(_PAIR).size().rename("n").reset_index() if len(v) else \
        pd.DataFrame(columns=[*_PAIR, "n"])
    return pairs.merge(per_pair, on=_PAIR, how="left")["n"].fillna(0).to_numpy(np.int64)


def queue(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame, annotator: str,
          overlap: int, *, seed: int = 0, later: Iterable[Pair] = ()) -> list[Pair]:
    """What ``annotator`` judges next in a campaign: its pairs they have not voted on whose
    number of votes is still below ``overlap``; the least-labelled first, then a seeded order
    (the same seed gives the same queue). Pairs in ``later`` (skipped in this session) go last:
    a skip is not an answer, the pair stays in the queue."""
    pairs = _pairs_frame(pairs)
    v = votes(labels)
    n = _counts(pairs, v)
    mine = v.loc[v["annotator"] == annotator, _PAIR]
    done = (pairs.merge(mine.drop_duplicates(), on=_PAIR, how="left", indicator=True)["_merge"]
            == "both").to_numpy()
    keep = ~done & (n < int(overlap))
    skipped = set(map(tuple, later))
    postponed = np.array([tuple(r) in skipped for r in pairs.itertuples(index=False)], dtype=bool)
    shuffle = np.random.default_rng(seed).permutation(len(pairs))
    order = np.lexsort((shuffle, n, postponed))
    order = order[keep[order]]
    chosen = pairs.iloc[order]
    return list(zip(chosen["context_id"].tolist(), chosen["x"].tolist(), chosen["y"].tolist()))


def progress(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
             annotators: Sequence[str], overlap: int) -> pd.DataFrame:
    """One row per annotator (assigned now, or with a vote in the campaign): ``annotator``,
    ``assigned``, ``labelled`` (their votes), ``target`` (their fair share of ``n_pairs x
    overlap`` votes, at most ``n_pairs``), ``remaining`` (pairs still in their queue) and
    ``done`` (labelled / target)."""
    pairs = _pairs_frame(pairs)
    v = votes(labels)
    people = list(dict.fromkeys([*annotators, *sorted(v["annotator"].unique().tolist())]))
    wanted = len(pairs) * int(overlap)
    target = min(len(pairs), -(-wanted // max(len(annotators), 1))) if annotators else 0
    rows = []
    for who in people:
        labelled = int((v["annotator"] == who).sum())
        assigned = who in annotators
        remaining = len(queue(pairs, labels, who, overlap)) if assigned else 0
        rows.append(dict(annotator=who, assigned=assigned, labelled=labelled,
                         target=target if assigned else labelled, remaining=remaining,
                         done=(min(labelled / target, 1.0) if assigned and target else 1.0)))
    return pd.DataFrame(rows, columns=["annotator", "assigned", "labelled", "target", "remaining",
                                       "done"])


def completed_pairs(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
                    overlap: int) -> int:
    """How many of the campaign's pairs have ``overlap`` votes or more."""
    pairs = _pairs_frame(pairs)
    return int((_counts(pairs, votes(labels)) >= int(overlap)).sum())


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
    c = _canonical(labels)
    c = c.loc[c["source"] != ADJUDICATION, [*_PAIR, "annotator", "choice"]].reset_index(drop=True)
    c["stored"] = np.arange(len(c))
    first = c.drop_duplicates(["annotator", *_PAIR], keep="first")
    mine = first.loc[first["annotator"] == annotator, [*_PAIR, "stored"]]
    others = first.loc[first["annotator"] != annotator].sort_values("stored", kind="stable")
    nth = others.assign(rank=others.groupby(_PAIR).cumcount())
    enough = nth.loc[nth["rank"] == MIN_OTHERS_PER_PAIR - 1, [*_PAIR, "stored"]]
    counted = mine.merge(enough, on=_PAIR, suffixes=("_me", "_others"))
    counted["at"] = counted[["stored_me", "stored_others"]].max(axis=1)
    counted = counted.sort_values("at", kind="stable")
    covered = len(counted) // AGREEMENT_BATCH * AGREEMENT_BATCH
    if covered == 0:
        return dict(n_items=0, n_others=0, agreement=nan, kappa=nan, withheld=len(mine) > 0,
                    min_others=MIN_OTHERS_PER_PAIR, batch=AGREEMENT_BATCH)
    counted = counted.iloc[:covered]
    cutoff = int(counted["at"].iloc[-1])
    v = (c.loc[c["stored"] <= cutoff].drop_duplicates(["annotator", *_PAIR], keep="last")
         .merge(counted[_PAIR], on=_PAIR))
    v = v.assign(code=np.select([v["choice"] == v["x"], v["choice"] == v["y"]],
                                [X_BETTER, Y_BETTER], default=TIE_CODE).astype(np.int64))
    both = (v.loc[v["annotator"] == annotator, [*_PAIR, "code"]]
            .merge(v.loc[v["annotator"] != annotator, [*_PAIR, "annotator", "code"]], on=_PAIR,
                   suffixes=("_me", "_other")))
    a, b = both["code_me"].to_numpy(), both["code_other"].to_numpy()
    share = round(float((a == b).mean()) / AGREEMENT_ROUNDING) * AGREEMENT_ROUNDING
    kappa = pair_kappa(a, b)
    return dict(n_items=covered, n_others=int(both["annotator"].nunique()),
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
