"""Judges worth trusting on this hardware: the tables and plots of docs/results.md §4-6.

Three steps, each from stores only (no model calls; the runs are made with ``compassess run``,
see docs/results.md), each filling a ``<!-- generated: ... -->`` block of docs/results.md:

    S="--db .repro/judges.db --db .repro/qwen15.db"
    # the mid-size judge beside the bundled one and the paper's FlanT5-3B
    .venv/bin/python benchmarks/judges_study.py judges $S --doc docs/results.md
    # calibration on the MT-Bench human labels (5-fold held out), with a reliability diagram
    .venv/bin/python benchmarks/judges_study.py calibration $S --plots docs/img --doc docs/results.md
    # human labels + judge: expert scores as the annotators, Spearman against the label budget
    .venv/bin/python benchmarks/judges_study.py fusion $S --simulated --plots docs/img --doc docs/results.md

Every number says what it was computed on; a run that is still going is used as far as it got
and marked "(k of N done, running)". This script must never change a stored result.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.studies import fusion_study, reproduction  # noqa: E402
from compassess_core.stats import analysis, calibration  # noqa: E402
from compassess_core.stats.agreement import llm_vs_human  # noqa: E402
from compassess_core.stats.bias import balanced_threshold  # noqa: E402
from compassess_core.runs.comparative import planned_pairs  # noqa: E402
from compassess_core.runs.scoring import evaluate_scores, score_vectors  # noqa: E402
from compassess_core.runs.settings import RunSettings  # noqa: E402
from compassess_core.types import ComparisonTable  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from reproduce_paper import panel_grid, replace_generated  # noqa: E402

#: The judges, as their run names spell them.
JUDGES = {"SmolLM2-135M (bundled)": "smollm2", "Qwen2.5-Coder-1.5B": "qwen1.5b"}
#: The paper's FlanT5-3B comparative Spearman x100 (full matrix; Tables 1 and 3).
PAPER = {("topicalchat", "engagingness"): 37.3, ("topicalchat", "naturalness"): 47.4,
         ("summeval", "coherence"): 51.2}


def run_names(model: str) -> dict[str, str]:
    return {
        "tc-eng-t1": f"repro-topicalchat-engagingness-t1-{model}",
        "tc-eng-s2": f"repro-topicalchat-engagingness-s2-{model}",
        "tc-nat-t1": f"repro-topicalchat-naturalness-t1-{model}",
        "tc-nat-s2": f"repro-topicalchat-naturalness-s2-{model}",
        "se-coh-t1": f"repro-summeval-coherence-t1-{model}-c10",
        "se-coh-poe": f"summeval-coherence-t1-{model}-poe60-c10",
        "se-coh-s2": f"repro-summeval-coherence-s2-{model}-c10",
        "mt-t1": f"mtbench-overall-t1d-{model}",
        "mt-s2": f"mtbench-overall-s2d-{model}",
    }


@dataclass
class Found:
    store: object
    run: object
    settings: RunSettings
    dataset: object

    @property
    def progress(self) -> str:
        """'' when complete, else '(k of N <unit>, still running)'."""
        done, total = int(self.run.done or 0), int(self.run.total or 0)
        if self.run.status == "completed" and done >= total:
            return ""
        return f" ({done:,} of {total:,} done, {self.run.status})"


class Stores:
    """Runs looked up by name over several stores (the first that has it)."""

    def __init__(self, urls: list[str]) -> None:
        from compassess_core.runs.sink import open_store
        self.stores = [open_store(u) for u in urls]

    def find(self, model: str, key: str) -> Found | None:
        """The run of ``key`` (:func:`run_names`) for ``model`` or for ``model-bf16`` (the same
        judge in bf16, about twice as fast on this CPU), whichever has more done; None when no
        store has either."""
        best = None
        for s in self.stores:
            for name in (run_names(model)[key], run_names(f"{model}-bf16")[key]):
                try:
                    run = s.get_run(name)
                except Exception:  # noqa: BLE001 - not in this store
                    continue
                if best is None or int(run.done or 0) > int(best[1].done or 0):
                    best = (s, run)
        if best is None:
            return None
        s, run = best
        return Found(s, run, RunSettings.from_dict(run.settings), s.load_dataset(run.dataset_id))


def _fmt(v, spec=".1f") -> str:
    return "–" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, spec)


def _subset(table: ComparisonTable, keep: np.ndarray) -> ComparisonTable:
    return ComparisonTable(*(getattr(table, f)[keep] for f in
                             ("context_ids", "a_ids", "b_ids", "p", "logp_a", "logp_b", "label_mass")))


def _poe_pairs_of(found: Found, like: Found) -> ComparisonTable:
    """``found``'s comparisons restricted to the ordered pairs ``like`` (a PoE-selected run) planned."""
    table = found.store.comparison_table(found.run.id)
    wanted = set()
    for ctx in like.dataset.head(like.settings.contexts).contexts:
        ids = ctx.candidate_ids
        wanted |= {(ctx.context_id, ids[a], ids[b]) for a, b in planned_pairs(ctx, like.settings)}
    keep = np.array([(c, a, b) in wanted for c, a, b in zip(table.context_ids, table.a_ids,
                                                             table.b_ids)], dtype=bool)
    return _subset(table, keep)


def comparative_cell(found: Found | None, reference: str, table: ComparisonTable | None = None,
                     method: str = "win-ratio") -> str:
    if found is None:
        return "not run"
    table = found.store.comparison_table(found.run.id) if table is None else table
    rep = analysis.evaluate_run(found.dataset, table, method=method, reference=reference)
    return (f"{_fmt(rep.raw.spearman_x100)} / {_fmt(rep.debiased.spearman_x100)} "
            f"(P(A) {_fmt(rep.raw.p_a, '.2f')}; {rep.n_contexts} ctx, {rep.n_comparisons:,} comp.)"
            f"{found.progress}")


def scoring_cell(found: Found | None, reference: str) -> str:
    if found is None:
        return "not run"
    ev = evaluate_scores(found.dataset, found.store.score_table(found.run.id), reference)
    return (f"{_fmt(ev['prompt_scoring']['spearman_x100'])} / {_fmt(ev['g_eval']['spearman_x100'])} "
            f"({ev['g_eval']['contexts_used']} ctx){found.progress}")


def mtbench_labels(found: Found):
    return found.store.human_judgements_frame(found.run.dataset_id, found.settings.aspect)


def mtbench_cell(found: Found | None) -> str:
    if found is None:
        return "not run"
    human = mtbench_labels(found)
    if len(human) == 0:
        return "no labels imported"
    table = found.store.comparison_table(found.run.id)
    tau = float(balanced_threshold(table.p)) if len(table) else 0.5
    rep = llm_vs_human(human, table, tau, n_boot=0)
    cells = [f"{_fmt(100 * s.majority.accuracy_without_ties)} % / "
             f"κ {_fmt(s.majority.kappa_without_ties, '.2f')}" for s in (rep.raw, rep.debiased)]
    try:
        cal = calibration.calibrate(table, human).calibrated
        cells.append(f"{_fmt(100 * cal.pair_accuracy)} % / κ {_fmt(cal.pair_kappa, '.2f')}")
    except calibration.InputError:
        cells.append("–")
    return (f"raw {cells[0]}; tau* {cells[1]}; calibrated {cells[2]} "
            f"({rep.debiased.majority.n_without_ties} questions){found.progress}")


def mtbench_scoring_cell(found: Found | None, labels_from: Found | None) -> str:
    """Share of questions whose higher G-Eval expected score is the humans' choice (a tie of
    scores counts half)."""
    if found is None:
        return "not run"
    if labels_from is None or len(mtbench_labels(labels_from)) == 0:
        return "no labels imported"
    vec = score_vectors(found.dataset, found.store.score_table(found.run.id), "expected")
    labels = mtbench_labels(labels_from)
    hits = []
    for r in labels.itertuples():
        ctx = found.dataset.context(r.context_id)
        s = dict(zip(ctx.candidate_ids, vec[r.context_id]))
        a, b = s.get(r.candidate_left, np.nan), s.get(r.candidate_right, np.nan)
        if not (np.isfinite(a) and np.isfinite(b)) or r.winner not in ("A", "B"):
            continue
        hits.append(0.5 if a == b else float((a > b) == (r.winner == "A")))
    return f"{_fmt(100 * np.mean(hits) if hits else np.nan)} % ({len(hits)} questions){found.progress}"


def cmd_judges(args) -> int:
    stores = Stores(args.db)
    found = {label: {k: stores.find(m, k) for k in run_names(m)} for label, m in JUDGES.items()}
    qwen_poe = found["Qwen2.5-Coder-1.5B"]["se-coh-poe"]
    rows = []
    for slice_, measure, key, kind, ref, paper in (
            ("TopicalChat-USR engagingness, 60 dialogues", "comparative T1, win ratio raw / balanced",
             "tc-eng-t1", "comparative", "engagingness", PAPER["topicalchat", "engagingness"]),
            ("", "comparative T1, PoE Gaussian raw / balanced", "tc-eng-t1", "poe", "engagingness", None),
            ("", "prompt scoring / G-Eval, template s2", "tc-eng-s2", "scoring", "engagingness", None),
            ("TopicalChat-USR naturalness, 60 dialogues", "comparative T1, win ratio raw / balanced",
             "tc-nat-t1", "comparative", "naturalness", PAPER["topicalchat", "naturalness"]),
            ("", "comparative T1, PoE Gaussian raw / balanced", "tc-nat-t1", "poe", "naturalness", None),
            ("", "prompt scoring / G-Eval, template s2", "tc-nat-s2", "scoring", "naturalness", None),
            ("SummEval coherence, 10 articles", "comparative T1, PoE selection 25% (60 of 240 "
             "ordered pairs), PoE Gaussian raw / balanced", "se-coh-poe", "poe-subset", "coherence", None),
            ("", "comparative T1, full matrix, win ratio raw / balanced", "se-coh-t1", "comparative",
             "coherence", PAPER["summeval", "coherence"]),
            ("", "prompt scoring / G-Eval, template s2", "se-coh-s2", "scoring", "coherence", None),
            ("MT-Bench human judgements, 200 questions", "pairwise accuracy / Cohen's κ vs the expert "
             "majority, ties left out", "mt-t1", "mtbench", None, None),
            ("", "G-Eval s2: the higher expected score is the humans' choice", "mt-s2", "mt-scoring",
             None, None)):
        cells = []
        for label in JUDGES:
            f = found[label]
            if kind == "comparative":
                cells.append(comparative_cell(f[key], ref))
            elif kind == "poe":
                cells.append(comparative_cell(f[key], ref, method="poe"))
            elif kind == "poe-subset":
                if f["se-coh-poe"] is not None or f["se-coh-t1"] is None or qwen_poe is None:
                    cells.append(comparative_cell(f["se-coh-poe"], ref, method="poe"))
                else:  # the same pairs, taken from a full matrix
                    same = _poe_pairs_of(f["se-coh-t1"], qwen_poe)
                    cells.append(comparative_cell(f["se-coh-t1"], ref, same, method="poe")
                                 + " (the same pairs, from its full matrix)")
            elif kind == "scoring":
                cells.append(scoring_cell(f[key], ref))
            elif kind == "mtbench":
                cells.append(mtbench_cell(f[key]))
            else:
                cells.append(mtbench_scoring_cell(f[key], f["mt-t1"]))
        rows.append(f"| {slice_} | {measure} | {_fmt(paper)} | " + " | ".join(cells) + " |")
    speeds = []
    for label in JUDGES:
        used = {f.run.name: f for f in found[label].values() if f is not None}
        if used:
            speeds.append(f"{label}: " + ", ".join(
                f"`{name}` {_fmt(f.run.rate, '.2f')} "
                f"{'candidates' if f.settings.kind == 'scoring' else 'comparisons'}/s"
                for name, f in used.items()))
    text = "\n".join([
        "| slice | measure (Spearman x100 unless stated) | paper FlanT5-3B | "
        + " | ".join(JUDGES) + " |",
        "|---|---|---|" + "---|" * len(JUDGES), *rows, "",
        "Cells: Spearman x100 per-context mean at tau = 0.5 / at the balancing tau* (eq. 10), "
        "with P(A) raw, the contexts and comparisons used; prompt-scoring cells: argmax / G-Eval "
        "expected score. MT-Bench: raw, at tau*, and calibrated (bias and temperature, 5-fold "
        "held out). Runs read, with the rate each recorded (per second of judging, on the shared "
        "2-core CPU; a `-bf16` run is the same judge in bf16): " + ("; ".join(speeds) or "none")
        + "."])
    print(text)
    if args.doc:
        replace_generated(Path(args.doc), "judges", text)
    return 0


def cmd_calibration(args) -> int:
    stores = Stores(args.db)
    out = ["| judge (run) | comparisons (pairs) | bias b | temperature T | accuracy per comparison "
           "raw / tau* / calibrated | log-loss raw / calibrated | ECE raw / calibrated | pair accuracy "
           "raw / tau* / calibrated | pair κ raw / tau* / calibrated |",
           "|---|---|---|---|---|---|---|---|---|"]
    reports = {}
    for label, model in JUDGES.items():
        f = stores.find(model, "mt-t1")
        if f is None or len(mtbench_labels(f)) == 0:
            out.append(f"| {label} | not run (or no labels) | | | | | | | |")
            continue
        try:
            rep = calibration.calibrate(f.store.comparison_table(f.run.id), mtbench_labels(f),
                                        folds=args.folds)
        except calibration.InputError as e:
            out.append(f"| {label} | {e} | | | | | | | |")
            continue
        reports[label] = rep
        c, r, d, h = rep.calibration, rep.raw, rep.debiased, rep.calibrated
        out.append(f"| {label} ({f.run.name}){f.progress} | {r.n_comparisons} ({h.n_pairs}) | "
                   f"{c.bias:.3f} | {c.temperature:.2f} | {_fmt(r.accuracy, '.3f')} / "
                   f"{_fmt(d.accuracy, '.3f')} / {_fmt(h.accuracy, '.3f')} | {_fmt(r.log_loss, '.3f')} / "
                   f"{_fmt(h.log_loss, '.3f')} | {_fmt(r.ece, '.3f')} / {_fmt(h.ece, '.3f')} | "
                   f"{_fmt(r.pair_accuracy, '.3f')} / {_fmt(d.pair_accuracy, '.3f')} / "
                   f"{_fmt(h.pair_accuracy, '.3f')} | {_fmt(r.pair_kappa, '.2f')} / "
                   f"{_fmt(d.pair_kappa, '.2f')} / {_fmt(h.pair_kappa, '.2f')} |")
    out.append(f"\nCalibrated = held out: {args.folds} folds of questions, each calibrated by a fit "
               "on the others; the bias and temperature shown are fitted on all the labelled "
               "questions the run judged. Log-loss in nats per comparison (0.693 = a coin); ECE "
               "over 10 equal-width bins of p.")
    text = "\n".join(out)
    print(text)
    if args.plots and reports:
        _plot_reliability(reports, Path(args.plots) / "results-calibration-mtbench.png")
    if args.doc:
        replace_generated(Path(args.doc), "calibration", text)
    return 0


def _plot_reliability(reports: dict, path: Path) -> None:
    fig, axes = panel_grid(len(reports), 4, 4.4, 4.0)
    for ax, (label, rep) in zip(axes[0], reports.items()):
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=0.8)
        for name, color in (("raw", "#e67700"), ("calibrated", "#3b5bdb")):
            t = rep.reliability[name]
            t = t[t["n"] > 0]
            ax.plot(t["mean_p"], t["frequency"], color=color, lw=1,
                    label=f"{name} (ECE {getattr(rep, name).ece:.3f})")
            ax.scatter(t["mean_p"], t["frequency"], s=8 + 120 * t["n"] / t["n"].max(), color=color)
        ax.set_title(f"{label}: MT-Bench, {rep.raw.n_comparisons} comparisons "
                     "(marker area: comparisons in the bin)", fontsize=8)
        ax.set_xlabel("predicted P(first preferred), bin mean")
        ax.set_ylabel("share whose first answer people preferred")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


#: (dataset, aspect, run key, labels-per-context budgets) of the fusion study.
FUSION = (("topicalchat", "engagingness", "tc-eng-t1", (0, 0.5, 1, 2, 3, 5, 8, 15)),
          ("summeval", "coherence", "se-coh-t1", (0, 1, 2, 4, 8, 16, 32, 64, 120)),
          ("summeval", "coherence", "se-coh-poe", (0, 1, 2, 4, 8, 16, 32, 64, 120)))


def _study_block(title: str, contexts, per_context, args) -> tuple[list[str], dict]:
    """One study: the budget table of both policies, and what it shows."""
    n_ctx = len(contexts)
    total = sum(c.n * (c.n - 1) // 2 for c in contexts)
    budgets = sorted({int(min(total, round(b * n_ctx))) for b in per_context})
    curves = {p: fusion_study.budget_curve(contexts, budgets, p, draws=args.draws,
                                           error_rate=args.error_rate)
              for p in fusion_study.POLICIES}
    rnd, unc = curves["random"], curves["uncertainty"]
    out = [f"**{title}** (judge alone: Spearman x100 {rnd.judge:.1f})\n",
           "| labels per context (total) | " + " | ".join(f"{b / n_ctx:g} ({b})" for b in budgets)
           + " |", "|---|" + "---|" * len(budgets)]
    for name, values in (("humans only, random pairs", rnd.humans),
                         ("humans only, uncertainty-driven", unc.humans),
                         ("judge only", np.full(len(budgets), rnd.judge)),
                         ("fused, random pairs", rnd.fused),
                         ("fused, uncertainty-driven", unc.fused)):
        out.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in values) + " |")
    met_r = int((rnd.fused >= np.fmax(rnd.humans, rnd.judge) - 0.5).sum())  # no labels: NaN
    met_u = int((unc.fused >= np.fmax(unc.humans, unc.judge) - 0.5).sum())
    weights = np.median(unc.weights, axis=0)
    out.append(f"\nfused >= the better of humans-only and judge-only (within 0.5) at {met_r} of "
               f"{len(budgets)} budgets with random pairs, {met_u} of {len(budgets)} "
               "uncertainty-driven; median cross-validated weight of a vote (uncertainty-driven): "
               + ", ".join("humans only" if np.isinf(w) else f"{w:g}" for w in weights) + ".")
    reach = []
    for t in (t for t in (50.0, 70.0, 90.0) if t > rnd.judge):
        a = fusion_study.labels_to_reach(budgets, rnd.fused, t)
        b = fusion_study.labels_to_reach(budgets, unc.fused, t)
        reach.append(f"Spearman {t:g}: random {_fmt(a / n_ctx, '.1f')}, uncertainty-driven "
                     f"{_fmt(b / n_ctx, '.1f')}")
    out.append(("Labels per context the fused ranking needs (interpolated): " + "; ".join(reach)
                + ".\n") if reach else "")
    return out, curves


#: Simulated judges with known scores (``reproduction.simulated_matrices``): TopicalChat's shape
#: (60 contexts of 6), a judge whose comparison noise equals the spread of its scores (as
#: Qwen2.5-Coder-0.5B's, section 2) and a positional bias, at three agreements with people.
SIMULATED = dict(n=6, contexts=60, slope=1.0, noise=1.0, bias_logit=0.3, rhos=(0.3, 0.6, 0.9))


def cmd_fusion(args) -> int:
    stores = Stores(args.db)
    out, curves_all = [], {}
    for dataset, aspect, key, per_context in FUSION:
        for label, model in JUDGES.items():
            f = stores.find(model, key)
            if f is None:
                continue
            table = f.store.comparison_table(f.run.id)
            tau = float(balanced_threshold(table.p))
            contexts = fusion_study.study_contexts(f.dataset, table, aspect, tau)
            title = (f"{dataset} {aspect}, {label}, {f.run.name}{f.progress}: {len(contexts)} "
                     f"contexts, {len(table):,} judge comparisons at tau* = {tau:.3f}")
            block, curves_all[title] = _study_block(title, contexts, per_context, args)
            out += block
    if args.simulated:
        sim = SIMULATED
        for rho in sim["rhos"]:
            mats = reproduction.simulated_matrices(sim["n"], sim["contexts"], slope=sim["slope"],
                                                   noise=sim["noise"], bias_logit=sim["bias_logit"],
                                                   rho=rho, seed=0)
            title = (f"simulated judge, rho = {rho:g} (known scores; {sim['contexts']} contexts of "
                     f"{sim['n']}, noise/signal {sim['noise'] / sim['slope']:g}, bias "
                     f"{sim['bias_logit']:g} log-odds)")
            block, curves_all[title] = _study_block(
                title, fusion_study.study_contexts_from_matrices(mats), FUSION[0][3], args)
            out += block
    flips = f", each label flipped with probability {args.error_rate:g}" if args.error_rate else ""
    out.insert(0, f"Oracle annotators: the candidate with the higher expert score is preferred, "
                  f"equal scores a coin{flips}; "
                  f"{args.draws} draws per policy (random order, or tie-breaking of the "
                  "uncertainty-driven choice, and the coins); Spearman x100 against the same expert "
                  "scores, per-context mean.\n")
    text = "\n".join(out)
    print(text)
    if args.plots and curves_all:
        _plot_fusion(curves_all, Path(args.plots) / f"results-fusion{args.suffix}.png")
    if args.doc:
        replace_generated(Path(args.doc), f"fusion{args.suffix}", text)
    return 0


def _plot_fusion(curves_all: dict, path: Path) -> None:
    fig, axes = panel_grid(len(curves_all), 3, 4.8, 3.8)
    for ax, (title, curves) in zip(axes.ravel(), curves_all.items()):
        rnd, unc = curves["random"], curves["uncertainty"]
        x = rnd.per_context
        ax.axhline(rnd.judge, color="black", lw=1, ls=":", label="judge only")
        ax.plot(x, rnd.humans, color="#e67700", ls="--", marker="o", ms=3, label="humans, random")
        ax.plot(x, unc.humans, color="#e67700", marker="o", ms=3, label="humans, uncertainty")
        ax.plot(x, rnd.fused, color="#3b5bdb", ls="--", marker="o", ms=3, label="fused, random")
        ax.plot(x, unc.fused, color="#3b5bdb", marker="o", ms=3, label="fused, uncertainty")
        ax.set_xscale("symlog", linthresh=1)
        # the study titles are long (dataset, judge, run): wrapped, so neighbouring panels keep theirs
        ax.set_title(textwrap.fill(title.split(":")[0].replace("**", ""), 58), fontsize=8)
        ax.set_xlabel("human labels per context")
        ax.set_ylabel("Spearman x100 vs expert scores")
        ax.grid(alpha=0.3)
    axes.ravel()[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("judges", "calibration", "fusion"):
        s = sub.add_parser(name)
        s.add_argument("--db", action="append", required=True,
                       help="a store (URL or .db file) holding runs; repeat for several")
        s.add_argument("--doc", default=None, help="fill this markdown file's generated block")
    sub.choices["calibration"].add_argument("--folds", type=int, default=calibration.DEFAULT_FOLDS)
    for name in ("calibration", "fusion"):
        sub.choices[name].add_argument("--plots", default=None, help="folder for the PNG")
    f = sub.choices["fusion"]
    f.add_argument("--draws", type=int, default=10)
    f.add_argument("--error-rate", type=float, default=0.0,
                   help="the oracle flips each label with this probability")
    f.add_argument("--simulated", action="store_true",
                   help="also simulated judges with known scores at three agreements with people")
    f.add_argument("--suffix", default="", help="block 'fusion<SUFFIX>' and results-fusion<SUFFIX>.png")
    args = p.parse_args(argv)
    args.db = [a if "://" in a else f"sqlite:///{Path(a).resolve()}" for a in args.db]
    return {"judges": cmd_judges, "calibration": cmd_calibration, "fusion": cmd_fusion}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
