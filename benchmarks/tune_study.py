"""Tuning the judge's wording without labels, measured: docs/results.md "Tuning the wording".

Two steps. ``run`` tunes one slice with one judge (``Store.tune``: every wording is a run of its
own in the study's store, so a stopped tuning resumes); ``report`` reads every tuning of the
store and writes the table and the fairness-vs-agreement scatter plots (no model call):

    DB=.repro/tune.db
    nice -n 10 .venv/bin/python benchmarks/tune_study.py run --db $DB --slice tc-eng --judge smollm2
    nice -n 10 .venv/bin/python benchmarks/tune_study.py run --db $DB --slice tc-eng --judge qwen05
    ...
    .venv/bin/python benchmarks/tune_study.py report --db $DB --plots docs/img --doc docs/results.md

For every tuning: the held-out agreement (Spearman x100 of the win ratio with the reference
column, or Cohen's kappa with the MT-Bench expert majority; raw and at tau*, 95% bootstrap
intervals) of the wording picked by fairness (on the tuning contexts only), of T1 and of the
best wording in hindsight (the highest held-out agreement: chosen on the very contexts it is
measured on, an upper bound), the paired differences picked - T1 and picked - hindsight (paired
bootstrap), the comparisons the tuning spent on its tuning contexts, and the rank correlation
of fairness and agreement across all wordings tried.

The slices read ../shared/data (beside the checkout); the script stops with a message when it
is absent. It must never change a stored result of another run.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compassess_core as ca  # noqa: E402
from benchmarks.studies import tuning_study as ts  # noqa: E402
from compassess_core.runs import tuning  # noqa: E402

#: Where the benchmark files are (``--data``): the shared data folder beside the checkout.
SHARED = REPO.parent / "shared" / "data"


@dataclass(frozen=True)
class Slice:
    """A slice of a benchmark: its file, aspect, wording task, labels (MT-Bench), how many
    contexts tune and are held out, and comparisons per context (None: every ordered pair)."""

    file: str
    aspect: str
    tune: int
    holdout: int
    task: str = "auto"
    labels: str | None = None
    pairs: int | None = None


SLICES = {
    "tc-eng": Slice("topicalchat_usr.csv", "engagingness", tune=4, holdout=8),
    "tc-nat": Slice("topicalchat_usr.csv", "naturalness", tune=4, holdout=8),
    "mtbench": Slice("mtbench_human_candidates.csv", "overall", tune=20, holdout=40,
                     task="instruction", labels="mtbench_human_labels.csv"),
    "se-coh": Slice("summeval.csv", "coherence", tune=2, holdout=3, pairs=48),
    # smaller slices for the slower judge on the shared 2-core machine
    "tc-eng-small": Slice("topicalchat_usr.csv", "engagingness", tune=3, holdout=6),
    "tc-eng-mini": Slice("topicalchat_usr.csv", "engagingness", tune=3, holdout=4),
    "mtbench-small": Slice("mtbench_human_candidates.csv", "overall", tune=10, holdout=30,
                           task="instruction", labels="mtbench_human_labels.csv"),
}
#: The judges: the bundled one (None) and GGUF files in the models folder (``--models``).
JUDGES = {"smollm2": None, "qwen05": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
          "qwen15": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"}
JUDGE_NAMES = {"smollm2": "SmolLM2-135M", "qwen05": "Qwen2.5-Coder-0.5B",
               "qwen15": "Qwen2.5-Coder-1.5B"}
START, END = "<!-- tune-study:start -->", "<!-- tune-study:end -->"


def tuning_name(slice_name: str, judge: str) -> str:
    return f"study-{slice_name}-{judge}"


def cmd_run(args) -> int:
    spec = SLICES[args.slice]
    data = Path(args.data)
    path = data / spec.file
    if not path.exists():
        print(f"{path} is absent: give the folder of the benchmark files with --data",
              file=sys.stderr)
        return 2
    model = JUDGES[args.judge] and str(Path(args.models) / JUDGES[args.judge])
    store = ca.open_store(args.db)
    dataset = store.add_dataset(path, name=path.stem)
    if spec.labels:
        store.import_labels(data / spec.labels, dataset=dataset.name, aspect=spec.aspect)
    result = store.tune(dataset.name, aspect=spec.aspect, name=tuning_name(args.slice, args.judge),
                        model=model, task=spec.task, contexts=spec.tune,
                        holdout=spec.holdout, pairs=spec.pairs, rounds=args.rounds,
                        per_round=args.per_round, threads=args.threads,
                        progress=_Log())
    print(result.table[["wording", "label", "fairness", "p_a_raw", "agreement_raw",
                        "agreement_balanced", "comparisons_tune"]].to_string())
    return 0


class _Log:
    """Progress as log lines (the study runs in the background)."""

    def __init__(self) -> None:
        from compassess_core.runs.executor import ConsoleReporter
        self._console = ConsoleReporter("comparisons", log_every_s=60.0)

    def loaded(self, description: str) -> None:
        self._console.loaded(description)

    def progress(self, progress) -> None:
        self._console.progress(progress)

    def message(self, text: str) -> None:
        self._console.message(text)


def _fmt(v: float, spec: str) -> str:
    return "n/a" if v is None or not np.isfinite(v) else format(v, spec)


def _ci(value: float, low: float, high: float, spec: str) -> str:
    if not np.isfinite(low) or not np.isfinite(high):
        return _fmt(value, spec)
    return f"{_fmt(value, spec)} [{_fmt(low, spec)}, {_fmt(high, spec)}]"


def study_rows(store) -> tuple[list[dict], list[dict]]:
    """One summary row per tuning and one point per wording (fairness, agreement)."""
    rows, points = [], []
    for t in store.tunings():
        if not t.name.startswith("study-") or t.status != "completed":
            continue  # a tuning stopped part-way (or abandoned for a smaller slice)
        slice_name, judge = t.name.removeprefix("study-").rsplit("-", 1)
        result = t.result(n_boot=ts.N_BOOT)
        scores = {s.key: s for s in result.scores}
        if "w1" not in scores or result.picked is None:
            continue
        dataset = t.dataset()
        o = t.options
        _, held = tuning.split_contexts(dataset, o.contexts, o.holdout)
        reference, human, _ = t.agreement_sources(dataset)
        runs = t.runs()
        kappa = human is not None
        spec = ".3f" if kappa else ".1f"

        def measure(key: str, balanced: bool):
            table = runs[key].results
            if kappa:
                return ts.label_verdicts(table, human, held, balanced=balanced)
            return ts.spearman_per_context(dataset, table, held, reference, balanced=balanced)

        def diff(a: str, b: str, balanced: bool) -> ts.Difference:
            ma, mb = measure(a, balanced), measure(b, balanced)
            return ts.kappa_difference(ma, mb) if kappa else ts.spearman_difference(ma, mb)

        picked = result.picked.key
        hind = tuning.best_in_hindsight(result.scores)
        row = dict(slice=slice_name, judge=judge, metric="kappa" if kappa else "Spearman x100",
                   wordings=len(result.scores), comparisons_tune=result.comparisons_tune,
                   comparisons_holdout=result.comparisons_holdout, picked=picked,
                   picked_label=scores[picked].wording.label,
                   hindsight=hind.key if hind else None,
                   hindsight_label=hind.wording.label if hind else None)
        for tag, balanced in (("raw", False), ("tau", True)):
            for who, key in (("picked", picked), ("t1", "w1"),
                             ("hindsight", hind.key if hind else None)):
                a = scores[key].agreement if key else None
                row[f"{who}_{tag}"] = (_ci(a.balanced if balanced else a.raw,
                                           a.balanced_low if balanced else a.raw_low,
                                           a.balanced_high if balanced else a.raw_high, spec)
                                       if a else "n/a")
            for who, other in (("vs_t1", "w1"), ("vs_hindsight", hind.key if hind else None)):
                d = diff(picked, other, balanced) if other and other != picked else None
                row[f"{who}_{tag}"] = ("0 (same wording)" if other == picked else
                                       _ci(d.value, d.low, d.high, spec) if d else "n/a")
        fair = [s.fairness for s in result.scores]
        agree = [s.agreement.raw if s.agreement else np.nan for s in result.scores]
        agree_tau = [s.agreement.balanced if s.agreement else np.nan for s in result.scores]
        row["fair_vs_agreement_raw"] = _fmt(ts.rank_correlation(fair, agree), ".2f")
        row["fair_vs_agreement_tau"] = _fmt(ts.rank_correlation(fair, agree_tau), ".2f")
        row["picked_p_a"] = _fmt(scores[picked].p_a_raw, ".2f")
        row["t1_p_a"] = _fmt(scores["w1"].p_a_raw, ".2f")
        rows.append(row)
        for s in result.scores:
            points.append(dict(slice=slice_name, judge=judge, wording=s.key,
                               label=s.wording.label, fairness=s.fairness,
                               agreement_raw=s.agreement.raw if s.agreement else np.nan,
                               agreement_tau=s.agreement.balanced if s.agreement else np.nan,
                               metric="kappa" if kappa else "spearman_x100",
                               picked=s.key == picked))
    return rows, points


def markdown(rows: list[dict]) -> str:
    head = ("| slice | judge | metric | wordings | comparisons (tuning) | picked (P(A)) | "
            "picked raw | T1 raw (P(A)) | hindsight raw | picked - T1 raw | "
            "picked - hindsight raw | picked at tau* | T1 at tau* | picked - T1 at tau* | "
            "rank corr. fairness ~ agreement (raw / tau*) |\n"
            "| --- | --- | --- | ---: | ---: | --- | --- | --- | --- | --- | --- | --- | --- | "
            "--- | --- |\n")
    body = "".join(
        f"| {r['slice']} | {JUDGE_NAMES.get(r['judge'], r['judge'])} | {r['metric']} | "
        f"{r['wordings']} | {r['comparisons_tune']:,} | {r['picked']} {r['picked_label']} "
        f"({r['picked_p_a']}) | {r['picked_raw']} | {r['t1_raw']} ({r['t1_p_a']}) | "
        f"{r['hindsight']} {r['hindsight_label']}: {r['hindsight_raw']} | {r['vs_t1_raw']} | "
        f"{r['vs_hindsight_raw']} | {r['picked_tau']} | {r['t1_tau']} | {r['vs_t1_tau']} | "
        f"{r['fair_vs_agreement_raw']} / {r['fair_vs_agreement_tau']} |\n" for r in rows)
    return head + body


def scatter(points: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One PNG per judge: fairness (x) against held-out agreement raw (y), one panel per slice."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for judge, group in points.groupby("judge"):
        slices = sorted(group["slice"].unique())
        fig, axes = plt.subplots(1, len(slices), figsize=(max(6.5, 4.4 * len(slices)), 3.9),
                                 squeeze=False)
        for ax, name in zip(axes[0], slices):
            g = group[group["slice"] == name]
            ax.scatter(g["fairness"], g["agreement_raw"], c="#3b5bdb", label="raw (tau = 0.5)")
            ax.scatter(g["fairness"], g["agreement_tau"], c="#e8590c", marker="x",
                       label="at tau*")
            for r in g.itertuples():
                ax.annotate(r.wording + ("*" if r.picked else ""), (r.fairness, r.agreement_raw),
                            fontsize=7, xytext=(3, 2), textcoords="offset points")
            ax.set_title(name, fontsize=10)
            ax.set_xlabel("fairness -|P(A) - 0.5| (tuning contexts)")
            ax.set_ylabel(("kappa" if g["metric"].iloc[0] == "kappa" else "Spearman x100")
                          + " (held out)")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{JUDGE_NAMES.get(judge, judge)}: fairness vs held-out agreement per "
                     "wording (* = picked)", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"tune-fairness-{judge}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def cmd_report(args) -> int:
    store = ca.open_store(args.db)
    rows, points = study_rows(store)
    table = markdown(rows)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(rows=rows, points=points), indent=2,
                                              default=float))
    if args.plots:
        for p in scatter(pd.DataFrame(points), Path(args.plots)):
            print(f"wrote {p}")
    if args.doc:
        doc = Path(args.doc)
        text = doc.read_text(encoding="utf-8")
        block = f"{START}\n{table}{END}"
        if START in text:
            text = text[:text.index(START)] + block + text[text.index(END) + len(END):]
        else:
            text += f"\n{block}\n"
        doc.write_text(text, encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="tune one slice with one judge")
    r.add_argument("--db", required=True)
    r.add_argument("--slice", required=True, choices=list(SLICES))
    r.add_argument("--judge", required=True, choices=list(JUDGES))
    r.add_argument("--rounds", type=int, default=1)
    r.add_argument("--per-round", type=int, default=3)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--data", default=str(SHARED), metavar="DIR",
                   help="the folder of the benchmark CSV files (default: ../shared/data)")
    r.add_argument("--models", default=None, metavar="DIR",
                   help="the folder of the GGUF judges (default: the models folder, "
                        "COMPASSESS_MODELS_DIR)")
    p = sub.add_parser("report", help="the study's table and plots from the stored tunings")
    p.add_argument("--db", required=True)
    p.add_argument("--plots", default=None, metavar="DIR")
    p.add_argument("--doc", default=None, metavar="FILE")
    p.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    if args.command == "run" and args.models is None:
        from compassess_core.judges.model_catalog import models_folder
        args.models = str(models_folder())
    return {"run": cmd_run, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
