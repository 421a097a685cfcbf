"""Panels of judges against each judge alone: the table of docs/results.md's panel section.

From stored runs only (no model calls; the runs are made with ``compassess run``, one per model
or template, on the same dataset and aspect, in one or several stores):

    .venv/bin/python benchmarks/panel_study.py --db .repro/judges.db --db .repro/qwen15.db \\
        --dataset summeval --aspect coherence --doc docs/results.md

It builds, from every pairwise run on the dataset and aspect (or the ``--run`` ones):

* each judge alone (at its own balanced tau*, eq. 10) and the best of them (picked on the same
  numbers it is scored on: an optimistic oracle, as a reader choosing after the fact);
* the equal-weight panel (Gaussian product of experts on the members' debiased log-odds);
* the learnt-weight panel, held out: the contexts are dealt into folds and each fold's pairs are
  combined with weights learnt from the human labels of the other folds' contexts only (needs
  human labels of the aspect in at least two contexts; without them, when the dataset has a
  reference column, the weights are learnt the same way from pair labels derived from the
  reference scores: the candidate with the higher mean human score wins, equal scores are left
  out; the row says which);
* the best judge picked without the oracle: on each fold, the member whose verdicts agree
  most with the other folds' labels (the same labels the learnt weights use), read on that
  fold (costed as the whole panel, since every judge ran to choose);
* the majority vote of the members' debiased verdicts (equal weights).

Each row: Spearman x100 with the reference column (win ratio at the judge's balanced tau*, mean
over contexts) when the dataset has one, accuracy and Cohen's kappa with the human majority (ties
left out, with 95% bootstrap intervals on kappa) when there are human labels, and the cost in
comparisons (judge calls) and in seconds at each run's measured rate (a panel's: all its
members'). ``--subset LABEL=RUN,RUN`` adds the panel rows of a subset of the judges. The table goes into the ``<!-- generated: panel DATASET ASPECT -->`` block of
``--doc`` (appended as a new section when the block is missing) and to standard output. This
script must never change a stored result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compassess_core as ca  # noqa: E402
from compassess_core.stats import analysis, metrics, panel, ranking  # noqa: E402
from compassess_core.stats.calibration import fold_of_pairs  # noqa: E402
from compassess_core.errors import InputError  # noqa: E402
from compassess_core.types import ComparisonTable  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from reproduce_paper import replace_generated  # noqa: E402

FOLDS = 5


def stored_judges(dbs: list[str], dataset: str, aspect: str, only: list[str] | None):
    """Every pairwise run on ``dataset`` and ``aspect`` in the stores (named ``store:run`` when a
    name is in several), the dataset as the first store has it, and the first store's labels."""
    runs, data, human = {}, None, None
    for db in dbs:
        store = ca.open_store(db)
        try:
            found = store.list_runs(dataset)
        except InputError:
            continue
        labels = store.human_labels(dataset, aspect)
        if human is None and len(labels):
            human = labels
        for run in found:
            if not (run.run_kind.is_pairwise and run.settings.aspect == aspect
                    and run.n_comparisons > 0):
                continue
            if only and run.name not in only:
                continue
            data = data or run.dataset
            name = run.name if run.name not in runs else f"{Path(db).stem}:{run.name}"
            runs[name] = run
    if len(runs) < 2:
        raise SystemExit(f"need at least 2 pairwise runs on dataset '{dataset}' and aspect "
                         f"'{aspect}'; found {len(runs)}: {', '.join(runs) or 'none'}")
    return runs, data, human


def scores(dataset, table: ComparisonTable, reference: str | None, human) -> dict:
    """Spearman x100 (balanced tau*, win ratio) and accuracy/kappa against people."""
    parts, all_p = analysis.split_with_p(dataset, table)
    tau = analysis.resolve_tau("balanced", all_p)
    out = dict(spearman=None, accuracy=None, kappa=None, n_pairs=0, kappa_low=None,
               kappa_high=None, pair_accuracy=None, per_context={})
    if reference is not None:
        ev = analysis.evaluate_at(dataset, parts, method="win-ratio", reference=reference,
                                  tau=tau, all_p=all_p)
        out.update(spearman=ev.spearman_x100, pair_accuracy=ev.pairwise_accuracy,
                   per_context=per_context_spearman(parts, reference, tau))
    if human is not None:
        try:
            a = panel.human_agreement_interval(human, table, tau, n_boot=1000)
            out.update(accuracy=a.accuracy, kappa=a.kappa, n_pairs=a.n_pairs,
                       kappa_low=a.kappa_low, kappa_high=a.kappa_high)
        except InputError:
            pass
    return out


def per_context_spearman(parts, reference: str, tau: float) -> dict[str, float]:
    """Each context's Spearman (win ratio at ``tau`` against ``reference``), by context id: what
    the mean Spearman x100 averages, kept for the paired comparison with the best judge."""
    win_ratio = ranking.METHODS["win-ratio"]
    preds = [win_ratio(cc.n, cc.i, cc.j, cc.p, tau=tau).scores for cc in parts]
    refs = [np.array([c.scores.get(reference, np.nan) for c in cc.context.candidates])
            for cc in parts]
    values = metrics.per_context_correlation(preds, refs, method="spearman").per_context
    return {cc.context.context_id: v for cc, v in zip(parts, values) if np.isfinite(v)}


def paired_difference(row: dict[str, float], best: dict[str, float], *, n_boot: int = 2000,
                      seed: int = 0) -> tuple[float, float, float] | None:
    """Mean over the contexts both have of (row - best) per-context Spearman, x100, with a 95%
    percentile bootstrap interval over those contexts (None: fewer than 2 in common)."""
    common = sorted(set(row) & set(best))
    if len(common) < 2:
        return None
    d = 100.0 * np.array([row[c] - best[c] for c in common])
    idx = np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))
    boot = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def reference_labels(dataset, reference: str) -> pd.DataFrame:
    """Pair labels derived from a reference column, in the shape of stored human labels: for
    every unordered pair of a context, the candidate with the higher reference score wins (equal
    scores: no label). Used only to learn panel weights on held-out folds, never to score."""
    rows = []
    for ctx in dataset.contexts:
        c = [x for x in ctx.candidates if reference in x.scores]
        s = np.array([x.scores[reference] for x in c], dtype=float)
        i, j = np.triu_indices(len(c), k=1)
        keep = s[i] != s[j]
        for a, b in zip(i[keep], j[keep]):
            rows.append((ctx.context_id, c[a].candidate_id, c[b].candidate_id,
                         c[a].candidate_id if s[a] > s[b] else c[b].candidate_id))
    return pd.DataFrame(rows, columns=["context_id", "candidate_a", "candidate_b", "winner"]
                        ).assign(annotator="reference")


def held_out_folds(keys, labels, *, seed: int = 0):
    """The labelled rows (``panel.labelled_rows``) and each row's fold: contexts dealt into
    :data:`FOLDS` folds (None: labels in fewer than 2 contexts)."""
    rows = panel.labelled_rows(keys, labels)
    contexts = keys["context_id"].to_numpy(dtype=object)
    labelled = np.unique(contexts[rows["row"].to_numpy()])
    if len(labelled) < 2:
        return None
    all_contexts = np.unique(contexts)
    fold_of = dict(zip(all_contexts, fold_of_pairs(len(all_contexts),
                                                    min(FOLDS, len(labelled)), seed)))
    return rows, np.array([fold_of[c] for c in contexts])


def learnt_held_out(keys, z, labels, *, seed: int = 0) -> np.ndarray | None:
    """The learnt-weight panel's p on every row, each context's rows combined with weights
    learnt from the labels of the other folds' contexts (None: labels in fewer than 2
    contexts)."""
    folds = held_out_folds(keys, labels, seed=seed)
    if folds is None:
        return None
    rows, fold = folds
    p = np.full(len(keys), np.nan)
    r = rows["row"].to_numpy()
    for f in np.unique(fold):
        train = fold[r] != f
        if not train.any():
            return None
        w = panel.fit_weights(z[r[train]], rows["y"].to_numpy()[train])
        p[fold == f] = panel.combine(z[fold == f], w, "poe")
    return p


def best_held_out(keys, z, labels, *, seed: int = 0) -> tuple[np.ndarray, list[int]] | None:
    """The honest counterpart of the oracle's best judge: on each fold of contexts, the one
    member whose debiased verdicts (the sign of its log-odds) agree most with the labels of the
    other folds, read on that fold's rows (NaN where that member did not judge a row); also
    which member each fold chose. None: labels in fewer than 2 contexts."""
    folds = held_out_folds(keys, labels, seed=seed)
    if folds is None:
        return None
    rows, fold = folds
    r, y = rows["row"].to_numpy(), rows["y"].to_numpy()
    p, chosen = np.full(len(keys), np.nan), []
    for f in np.unique(fold):
        train = fold[r] != f
        if not train.any():
            return None
        zt = z[r[train]]
        agree = np.where(np.isnan(zt), np.nan, (zt > 0) == (y[train, None] == 1))
        with np.errstate(invalid="ignore"):
            accuracy = np.nanmean(agree, axis=0)
        m = int(np.nanargmax(np.nan_to_num(accuracy, nan=-1.0)))
        chosen.append(m)
        p[fold == f] = 1.0 / (1.0 + np.exp(-z[fold == f, m]))
    return p, chosen


def panel_rows(data, keys, z, human, reference, label: str, total: tuple,
               members: list[str]) -> tuple[list, bool]:
    """The panel rows of ``z``'s members (columns): equal-weight product of experts, weights
    learnt on held-out folds (from the human labels, else from the reference scores) and the
    majority vote; ``label`` prefixes each row's name. Also whether a learnt row was made."""
    n_members = z.shape[1]
    rows = []
    equal = panel.combine(z, np.ones(n_members), "poe")
    rows.append((f"{label}, equal weights (product of experts)", total,
                 scores(data, panel.panel_table(keys, equal), reference, human)))
    weight_labels, source = human, "human labels"
    if human is None and reference is not None:
        weight_labels, source = reference_labels(data, reference), f"the '{reference}' scores"
    learnt = (learnt_held_out(keys, z, weight_labels) if weight_labels is not None
              and len(weight_labels) else None)
    if learnt is not None:
        rows.append((f"{label}, weights learnt from {source} (held-out folds of contexts)",
                     total, scores(data, panel.panel_table(keys, learnt), reference, human)))
        best = best_held_out(keys, z, weight_labels)
        if best is not None:
            p, chosen = best
            judged = ~np.isnan(p)
            picks = ", ".join(f"{members[m]} x{chosen.count(m)}" for m in sorted(set(chosen)))
            rows.append((f"{label}: its best judge alone, picked on held-out folds by {source} ({picks})",
                         total, scores(data, panel.panel_table(
                             keys.loc[judged].reset_index(drop=True), p[judged]),
                             reference, human)))
    vote = panel.combine(z, np.ones(n_members), "vote")
    rows.append((f"{label}: majority vote of debiased verdicts", total,
                 scores(data, panel.panel_table(keys, vote), reference, human)))
    return rows, learnt is not None


def parse_subset(text: str) -> tuple[str, list[str]]:
    """``LABEL=RUN,RUN,...`` (a named sub-panel of the judges)."""
    label, _, names = text.partition("=")
    members = [n.strip() for n in names.split(",") if n.strip()]
    if not label.strip() or len(members) < 2:
        raise SystemExit(f"--subset wants LABEL=RUN,RUN[,...] with two or more runs, not {text!r}")
    return label.strip(), members


def study(dbs: list[str], dataset: str, aspect: str, only: list[str] | None = None,
          reference: str | None = None, subsets: list[str] | None = None) -> str:
    """The markdown table (with what it was computed on above it)."""
    runs, data, human = stored_judges(dbs, dataset, aspect, only)
    if reference is None and aspect in data.score_columns:
        reference = aspect
    tables = [r.results for r in runs.values()]
    keys, z = panel.aligned_log_odds(tables, [panel.balanced_scaling(t.p) for t in tables])
    n_members = len(tables)
    # cost: comparisons (judge calls) and the seconds they take at the run's measured rate
    # (comparisons per second of judging; a run that found some of its prompts judged already,
    # in the store's cache, is still charged for all of them); None when no rate was recorded,
    # and then a panel's is unknown too
    cost = {name: (r.n_comparisons, r.n_comparisons / r.info.rate if r.info.rate else None)
            for name, r in runs.items()}

    def summed(names) -> tuple:
        seconds = [cost[n][1] for n in names]
        return (sum(cost[n][0] for n in names),
                None if any(x is None for x in seconds) else float(sum(seconds)))

    total = summed(runs)
    rows = [(name, cost[name], scores(data, r.results, reference, human))
            for name, r in runs.items()]
    basis = "kappa" if human is not None else "spearman"
    best = max(rows, key=lambda row: -np.inf if row[2][basis] is None else row[2][basis])
    rows.append((f"best judge alone ({best[0]})", best[1], best[2]))
    made, learnt = panel_rows(data, keys, z, human, reference,
                              f"panel of all {n_members}", total, list(runs))
    rows += made
    names = list(runs)
    for text in subsets or []:
        label, members = parse_subset(text)
        missing = [m for m in members if m not in runs]
        if missing:
            raise SystemExit(f"--subset {label}: no such judge here: {', '.join(missing)}")
        cols = [names.index(m) for m in members]
        sub = z[:, cols]
        judged = ~np.isnan(sub).all(axis=1)
        sub_rows, sub_learnt = panel_rows(data, keys.loc[judged].reset_index(drop=True),
                                          sub[judged], human, reference, f"panel {label}",
                                          summed(members), members)
        rows += sub_rows
        learnt = learnt or sub_learnt

    def num(v, spec):
        return "n/a" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(
            v, spec)

    n_labels = 0 if human is None else len(human)
    n_contexts = len(np.unique(keys["context_id"]))
    against = (f"Spearman x100 with reference column `{reference}` (win ratio at each judge's "
               f"balanced tau*, mean over {n_contexts} contexts), its difference from the best "
               "judge's on the same contexts (95% bootstrap interval over contexts) and the "
               "share of reference-ordered pairs whose verdict agrees (pair accuracy)"
               if reference is not None else f"no reference column ({n_contexts} contexts)")
    best_per_context = best[2]["per_context"]

    def delta(s) -> str:
        d = paired_difference(s["per_context"], best_per_context) if s["per_context"] else None
        return "n/a" if d is None else f"{d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}]"

    columns = [("comparisons", lambda n, sec, s: f"{n:,}"),
               ("judging s", lambda n, sec, s: num(sec, ",.0f")),
               ("Spearman x100", lambda n, sec, s: num(s["spearman"], ".1f")),
               ("vs best judge [95%]", lambda n, sec, s: delta(s)),
               ("pair accuracy", lambda n, sec, s: num(s["pair_accuracy"], ".3f")),
               ("accuracy vs people", lambda n, sec, s: num(s["accuracy"], ".3f")),
               ("kappa [95%]", lambda n, sec, s: num(s["kappa"], ".3f") + (
                   f" [{num(s['kappa_low'], '.2f')}, {num(s['kappa_high'], '.2f')}]"
                   if s["kappa"] is not None and s["kappa_low"] is not None else "")),
               ("labelled pairs", lambda n, sec, s: str(s["n_pairs"]))]
    cells = [[f(n, sec, s) for _, f in columns] for _, (n, sec), s in rows]
    # a column empty in every row (people's agreement without labels, say) is left out
    keep = [k for k in range(len(columns))
            if any(c[k] not in ("n/a", "0") for c in cells) or columns[k][0] == "comparisons"]
    lines = [f"Dataset `{dataset}`, aspect `{aspect}`; {n_members} judges: "
             f"{', '.join(f'`{n}`' for n in runs)}. {against}; accuracy and Cohen's kappa "
             "(95% bootstrap interval over labelled pairs) of the pair verdicts, each judge at "
             f"its balanced tau*, with the human majority, ties left out ({n_labels} stored "
             "labels); cost in comparisons (judge calls) and in seconds of judging at each "
             "run's measured rate (a panel's: all its members'). The best judge alone is picked "
             "on these same numbers (an oracle).", "",
             "| judge | " + " | ".join(columns[k][0] for k in keep) + " |",
             "| --- | " + " | ".join("---:" for _ in keep) + " |"]
    for (name, _, _), c in zip(rows, cells):
        lines.append(f"| {name} | " + " | ".join(c[k] for k in keep) + " |")
    if not learnt:
        lines += ["", "No learnt-weight panel: it needs human labels of the aspect, or a "
                  "reference column, in at least two contexts."]
    return "\n".join(lines)


def fill(doc: Path, key: str, text: str, heading: str) -> None:
    """``replace_generated``, appending a section with the block's markers when ``doc`` has none."""
    if f"<!-- generated: {key} -->" not in doc.read_text(encoding="utf-8"):
        with doc.open("a", encoding="utf-8") as f:
            f.write(f"\n## {heading}\n\n<!-- generated: {key} -->\n<!-- end generated: {key} -->\n")
    replace_generated(doc, key, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", action="append", required=True, help="a store (repeat)")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--aspect", required=True)
    parser.add_argument("--run", action="append", default=None,
                        help="only these runs (repeat; default: every pairwise run)")
    parser.add_argument("--reference", default=None, help="reference column (default: aspect)")
    parser.add_argument("--subset", action="append", default=None, metavar="LABEL=RUN,RUN",
                        help="also a panel of only these judges (repeat)")
    parser.add_argument("--doc", default=None, help="fill this markdown file's generated block")
    args = parser.parse_args(argv)
    text = study(args.db, args.dataset, args.aspect, args.run, args.reference, args.subset)
    print(text)
    if args.doc:
        fill(Path(args.doc), f"panel {args.dataset} {args.aspect}", text,
             f"Panels of judges: {args.dataset}, {args.aspect}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
