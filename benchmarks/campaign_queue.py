"""Speed of an annotation campaign's per-answer computations, which the Annotate page pays at
every rerun: an annotator's ``queue``, everyone's ``progress``, ``completed_pairs`` and the
privacy-preserving ``agreement_of``, on a made-up campaign (no store, no model).

The campaign: ``--contexts`` contexts x ``--candidates`` candidates, every unordered pair (500 by
default), ``--annotators`` people (6), overlap ``--overlap`` (3); each pair gets ``overlap`` votes
from people drawn at random, in a shuffled order, shown in either order, with ties, both-bad
answers, skips, changes of mind (a second answer to the same pair) and an admin's adjudications
(about 1,800 labels by default). The baseline is the former pandas implementation, kept below as
it was; both are run on the same campaign in the same process, their results checked equal, and
the ratio printed. It measures, it never asserts a time:

    python benchmarks/campaign_queue.py
    python benchmarks/campaign_queue.py --contexts 300 --repeat 3   # 3,000 pairs, ~11,000 labels

``--repeat``: calls per measurement (20), the fastest kept.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compassess_core.people import campaigns  # noqa: E402
from compassess_core.people.campaigns import (_PAIR, ADJUDICATION, AGREEMENT_BATCH,  # noqa: E402
                                              AGREEMENT_ROUNDING, MIN_OTHERS_PER_PAIR,
                                              Pair, as_human_table)
from compassess_core.types import Outcome  # noqa: E402


def make_campaign(n_contexts: int, n_candidates: int, n_people: int, overlap: int,
                  seed: int = 0) -> tuple[list[Pair], pd.DataFrame, list[str]]:
    """Pairs, labels in stored order (the store's columns) and the annotators of a campaign."""
    rng = np.random.default_rng(seed)
    pairs = [(f"ctx{c:03d}", f"cand{i}", f"cand{j}") for c in range(n_contexts)
             for i in range(n_candidates) for j in range(i + 1, n_candidates)]
    people = [f"person{k}@x.org" for k in range(n_people)]
    answers = []  # (pair, who, source)
    for pair in pairs:
        for who in rng.choice(people, size=min(overlap, n_people), replace=False):
            answers.append((pair, str(who), "app"))
            if rng.random() < 0.08:  # skipped first, answered later
                answers.append((pair, str(who), "skip"))
            if rng.random() < 0.10:  # a change of mind
                answers.append((pair, str(who), "app"))
    answers = [answers[k] for k in rng.permutation(len(answers))]
    for k in rng.choice(len(pairs), size=len(pairs) // 20, replace=False):
        answers.append((pairs[k], "boss@x.org", ADJUDICATION))
    rows = []
    for (ctx, x, y), who, source in answers:
        left, right = (x, y) if rng.random() < 0.5 else (y, x)
        if source == "skip":
            winner, source = Outcome.SKIP.value, "app"
        else:
            winner = rng.choice(["A", "B", "A", "B", "tie", "both_bad"])
        rows.append(dict(context_id=ctx, candidate_left=left, candidate_right=right,
                         winner=str(winner), annotator=who, source=source, comment=""))
    return pairs, pd.DataFrame(rows), people


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` calls, in seconds (the least disturbed by other work)."""
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def same(a: object, b: object) -> bool:
    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(
            (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k]
            for k in a)
    return a == b


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=50)
    ap.add_argument("--candidates", type=int, default=5)
    ap.add_argument("--annotators", type=int, default=6)
    ap.add_argument("--overlap", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    pairs, labels, people = make_campaign(args.contexts, args.candidates, args.annotators,
                                          args.overlap)
    who, ov = people[0], args.overlap
    print(f"campaign: {len(pairs)} pairs, {len(labels)} labels, {len(people)} annotators, "
          f"overlap {ov}; best of {args.repeat} calls, milliseconds")
    cases = {
        "queue": (lambda: _old_queue(pairs, labels, who, ov, seed=3, later=pairs[:5]),
                  lambda: campaigns.queue(pairs, labels, who, ov, seed=3, later=pairs[:5])),
        "progress": (lambda: _old_progress(pairs, labels, people, ov),
                     lambda: campaigns.progress(pairs, labels, people, ov)),
        "completed_pairs": (lambda: _old_completed_pairs(pairs, labels, ov),
                            lambda: campaigns.completed_pairs(pairs, labels, ov)),
        "agreement_of": (lambda: _old_agreement_of(labels, who),
                         lambda: campaigns.agreement_of(labels, who)),
        "as_human_table (both)": (lambda: as_human_table(labels), lambda: as_human_table(labels)),
    }
    print(f"{'':24s}{'baseline':>10s}{'now':>10s}{'ratio':>8s}")
    for name, (old, new) in cases.items():
        if not same(old(), new()):
            print(f"{name}: RESULTS DIFFER", file=sys.stderr)
            return 1
        t_old, t_new = best_of(old, args.repeat), best_of(new, args.repeat)
        print(f"{name:24s}{t_old * 1e3:10.2f}{t_new * 1e3:10.2f}{t_old / t_new:7.1f}x")
    return 0


# ------------------------------------------------------------------------------------------------
# The baseline: the former pandas implementation, as it was (renamed ``_old_*``). Its votes come
# from ``campaigns.votes`` and ``campaigns._canonical``, which are still the pandas code it used.

def _old_pairs_frame(pairs: pd.DataFrame | Sequence[Pair]) -> pd.DataFrame:
    if isinstance(pairs, pd.DataFrame):
        return pairs[_PAIR].reset_index(drop=True)
    return pd.DataFrame(list(pairs), columns=_PAIR)


def _old_counts(pairs: pd.DataFrame, v: pd.DataFrame) -> np.ndarray:
    per_pair = v.groupby(_PAIR).size().rename("n").reset_index() if len(v) else \
        pd.DataFrame(columns=[*_PAIR, "n"])
    return pairs.merge(per_pair, on=_PAIR, how="left")["n"].fillna(0).to_numpy(np.int64)


def _old_queue(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame, annotator: str,
          overlap: int, *, seed: int = 0, later: Iterable[Pair] = ()) -> list[Pair]:
    """What ``annotator`` judges next in a campaign: its pairs they have not voted on whose
    number of votes is still below ``overlap``; the least-labelled first, then a seeded order
    (the same seed gives the same queue). Pairs in ``later`` (skipped in this session) go last:
    a skip is not an answer, the pair stays in the queue."""
    pairs = _old_pairs_frame(pairs)
    v = campaigns.votes(labels)
    n = _old_counts(pairs, v)
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


def _old_progress(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
             annotators: Sequence[str], overlap: int) -> pd.DataFrame:
    """One row per annotator (assigned now, or with a vote in the campaign): ``annotator``,
    ``assigned``, ``labelled`` (their votes), ``target`` (their fair share of ``n_pairs x
    overlap`` votes, at most ``n_pairs``), ``remaining`` (pairs still in their queue) and
    ``done`` (labelled / target)."""
    pairs = _old_pairs_frame(pairs)
    v = campaigns.votes(labels)
    people = list(dict.fromkeys([*annotators, *sorted(v["annotator"].unique().tolist())]))
    wanted = len(pairs) * int(overlap)
    target = min(len(pairs), -(-wanted // max(len(annotators), 1))) if annotators else 0
    rows = []
    for who in people:
        labelled = int((v["annotator"] == who).sum())
        assigned = who in annotators
        remaining = len(_old_queue(pairs, labels, who, overlap)) if assigned else 0
        rows.append(dict(annotator=who, assigned=assigned, labelled=labelled,
                         target=target if assigned else labelled, remaining=remaining,
                         done=(min(labelled / target, 1.0) if assigned and target else 1.0)))
    return pd.DataFrame(rows, columns=["annotator", "assigned", "labelled", "target", "remaining",
                                       "done"])


def _old_completed_pairs(pairs: pd.DataFrame | Sequence[Pair], labels: pd.DataFrame,
                    overlap: int) -> int:
    """How many of the campaign's pairs have ``overlap`` votes or more."""
    pairs = _old_pairs_frame(pairs)
    return int((_old_counts(pairs, campaigns.votes(labels)) >= int(overlap)).sum())


def _old_agreement_of(labels: pd.DataFrame, annotator: str) -> dict:
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
    from compassess_core.stats.agreement import TIE_CODE, X_BETTER, Y_BETTER, pair_kappa
    nan = float("nan")
    c = campaigns._canonical(labels)
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


if __name__ == "__main__":
    raise SystemExit(main())
