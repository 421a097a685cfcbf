"""Reproduce the paper's tables (Liusie, Manakul, Gales, EACL 2024) with the models we can run here.

Two steps, both resumable because every comparison and score lives in the store:

    # 1. compute (or resume) the runs through the normal engine: comparative t1/t2 full matrices and
    #    the prompt-scoring baselines s1/s2, one run per (dataset, aspect, template, model)
    .venv/bin/python benchmarks/reproduce_paper.py run --dataset topicalchat \\
        --aspects understandable,continuity,engagingness,naturalness --templates t1,t2,s1,s2 \\
        --db sqlite:///.repro/repro.db
    # 2. tables (markdown on stdout / --out) and plots (docs/img/results-*.png) from the store only
    .venv/bin/python benchmarks/reproduce_paper.py tables --dataset topicalchat --db sqlite:///.repro/repro.db
    .venv/bin/python benchmarks/reproduce_paper.py simulate --out docs/img   # simulated judge, no store

Run names are ``repro-<dataset>-<aspect>-<template>-<model>[-c<contexts>]``; a run that exists is
resumed (nothing stored is recomputed; a larger ``--contexts`` run reuses the smaller one's
comparisons through the cache). ``tables`` uses whatever is stored, so it can be run while the
long runs are still going. This script must never change a stored result.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from compassess_core import reproduction as rp  # noqa: E402

DATA = REPO.parent / "shared" / "data"
FILES = {"summeval": DATA / "summeval.csv", "topicalchat": DATA / "topicalchat_usr.csv"}
ASPECTS = {"summeval": ["coherence", "consistency", "fluency", "relevance"],
           "topicalchat": ["understandable", "continuity", "engagingness", "naturalness"]}
MODELS = {"smollm2": None,
          "qwen0.5b": str(Path.home() / ".cache/compassess/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")}
FRACTIONS = (0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 0.8, 1.0)


def run_name(dataset: str, aspect: str, template: str, model: str, contexts: int | None) -> str:
    return f"repro-{dataset}-{aspect}-{template}-{model}" + (f"-c{contexts}" if contexts else "")


def cmd_run(args) -> int:
    from compassess_core.cli import main as cli
    model = MODELS.get(args.model, args.model)
    for t in args.templates:
        for a in args.aspects:
            name = run_name(args.dataset, a, t, args.model, args.contexts)
            argv = ["run", str(FILES[args.dataset]), "--aspect", a, "--template", t, "--run", name,
                    "--batch-size", str(args.batch_size)]
            if t.startswith("s"):
                argv += ["--mode", "scoring"]
            if args.contexts:
                argv += ["--contexts", str(args.contexts)]
            if model:
                argv += ["--model", model]
            if args.db:
                argv += ["--db", args.db]
            print(f"=== {time.strftime('%H:%M:%S')} {name}", file=sys.stderr, flush=True)
            code = cli(argv)
            if code != 0:
                return code
    return 0


def _load(store, name: str):
    from compassess_core.settings import RunSettings
    try:
        run = store.get_run(name)
    except Exception:
        return None
    return run, RunSettings.from_dict(run.settings), store.load_dataset(run.dataset_id)


def _fmt(v: float, spec: str = ".1f") -> str:
    return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def cmd_tables(args) -> int:
    from compassess_core.scoring import score_vectors
    from compassess_core.sink import open_store

    store = open_store(args.db)
    out: list[str] = []
    say = out.append
    ds, model, c = args.dataset, args.model, args.contexts
    mats: dict[tuple[str, str], list] = {}
    scores: dict[tuple[str, str], dict] = {}
    for a in args.aspects:
        for t in ("t1", "t2"):
            got = _load(store, run_name(ds, a, t, model, c))
            if got:
                run, _, dataset = got
                mats[a, t] = rp.context_matrices(dataset, store.comparison_table(run.id), a)
        for t in ("s1", "s2"):
            got = _load(store, run_name(ds, a, t, model, c))
            if got:
                run, _, dataset = got
                st = store.score_table(run.id)
                refs = {ctx.context_id: np.array([x.scores.get(a, np.nan) for x in ctx.candidates])
                        for ctx in dataset.contexts if ctx.context_id in set(st.context_ids.tolist())}
                scores[a, t] = dict(
                    n=len(refs),
                    argmax=rp.score_spearman_x100(score_vectors(dataset, st, "argmax"), refs),
                    expected=rp.score_spearman_x100(score_vectors(dataset, st, "expected"), refs),
                    mass=float(np.nanmean(st.label_mass)) if len(st) else float("nan"))

    def ncx(a, t):
        m = mats.get((a, t))
        return len(m) if m else 0

    say(f"### Spearman x100 per aspect ({ds}, {model}; contexts per cell in brackets)\n")
    say("| aspect | comparative t1 | comparative t2 | comparative mean(t1,t2) | prompt scoring s1 | "
        "prompt scoring s2 | G-Eval s1 | G-Eval s2 |")
    say("|---|---|---|---|---|---|---|---|")
    for a in args.aspects:
        cells = []
        for t in ("t1", "t2"):
            m = mats.get((a, t))
            cells.append(f"{_fmt(rp.spearman_x100(m))} ({len(m)})" if m else "–")
        if mats.get((a, "t1")) and mats.get((a, "t2")):
            mm = rp.mean_matrices(mats[a, "t1"], mats[a, "t2"])
            cells.append(f"{_fmt(rp.spearman_x100(mm))} ({len(mm)})" if mm else "–")
        else:
            cells.append("–")
        for key in ("argmax", "expected"):
            for t in ("s1", "s2"):
                s = scores.get((a, t))
                cells.append(f"{_fmt(s[key])} ({s['n']})" if s else "–")
        # columns: t1 t2 mean | ps s1, ps s2 | geval s1, geval s2
        say(f"| {a} | " + " | ".join(cells) + " |")
    if scores:
        say("\nMean probability mass on the scores 1-10 (label mass): "
            + ", ".join(f"{a}/{t} {_fmt(s['mass'], '.2f')}" for (a, t), s in scores.items()))

    say(f"\n### Positional bias and debiasing ({ds}; Tables 5/6/7/9)\n")
    say("| aspect | template | contexts | comparisons | P(A) raw | balancing tau | Spearman raw | "
        "Spearman debiased | pairwise acc raw | pairwise acc debiased |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    for (a, t), m in mats.items():
        q = rp.quality_row(m)
        say(f"| {a} | {t} | {q.n_contexts} | {q.n_comparisons} | {_fmt(q.p_a_raw, '.3f')} | "
            f"{_fmt(q.tau, '.3f')} | {_fmt(q.spearman_raw)} | {_fmt(q.spearman_debiased)} | "
            f"{_fmt(q.accuracy_raw, '.3f')} | {_fmt(q.accuracy_debiased, '.3f')} |")

    full = {k: m for k, m in mats.items() if m}
    if full:
        n = len(next(iter(full.values()))[0].ref)
        sizes = [k for k in (3, 4, 8, 12) if k < n] + [n]
        say(f"\n### Fewer candidates (Table 8 analogue; mean of {args.draws} random subsets, win ratio)\n")
        say("| aspect | template | " + " | ".join(f"N={k}" for k in sizes) + " |")
        say("|---|---|" + "---|" * len(sizes))
        for (a, t), m in full.items():
            fc = rp.fewer_candidates(m, sizes, draws=args.draws)
            say(f"| {a} | {t} | " + " | ".join(_fmt(fc[k]) for k in sizes) + " |")
        say("\n### Ranking method (Table 11 analogue; Spearman x100 raw / debiased)\n")
        say("| aspect | template | win ratio | Bradley-Terry (max. likelihood) | PoE Gaussian |")
        say("|---|---|---|---|---|")
        for (a, t), m in full.items():
            mc = rp.method_comparison(m)
            say(f"| {a} | {t} | " + " | ".join(f"{_fmt(r)} / {_fmt(d)}" for r, d in mc.values()) + " |")

        say(f"\n### Spearman x100 vs share of the N(N-1) comparisons ({ds}, mean over draws; "
            "paper strategies with win ratio, poe/adaptive with the PoE ranking)\n")
        curves_all = {}
        for (a, t), m in full.items():
            if (a, t) not in args.curve_runs and args.curve_runs:
                continue
            curves = {}
            for s in rp.CURVE_STRATEGIES:
                method = "poe" if s in ("poe", "adaptive") else "win-ratio"
                draws = args.draws if s not in ("poe", "adaptive") else max(1, args.draws // 5)
                for deb in (False, True):
                    mu, _ = rp.selection_curve(m, s, FRACTIONS, draws=draws, debias=deb, method=method)
                    curves[f"{s}{' debiased' if deb else ''}"] = mu
            curves_all[a, t] = curves
            say(f"**{a} / {t}** (full matrix: {_fmt(rp.spearman_x100(m))} raw)\n")
            say(rp.curve_table(curves, FRACTIONS))
            say("")
        if args.plots and curves_all:
            _plot_curves(curves_all, Path(args.plots) / f"results-curves-{ds}.png", ds)
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


def _plot_curves(curves_all: dict, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    k = len(curves_all)
    fig, axes = plt.subplots(1, k, figsize=(4.2 * k, 3.6), squeeze=False)
    for ax, ((a, t), curves) in zip(axes[0], curves_all.items()):
        for name, mu in curves.items():
            ax.plot(100 * np.array(FRACTIONS), mu, marker="o", ms=3,
                    ls="--" if "debiased" in name else "-", label=name)
        ax.set_title(f"{title}: {a} / {t}")
        ax.set_xlabel("% of N(N-1) comparisons")
        ax.set_ylabel("Spearman x100")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


SIM = {16: dict(contexts=40, fractions=FRACTIONS, draws=20),
       50: dict(contexts=8, fractions=(0.01, 0.02, 0.05, 0.1, 0.25, 1.0), draws=5),
       200: dict(contexts=2, fractions=(0.005, 0.01, 0.02, 0.05), draws=2)}


def cmd_simulate(args) -> int:
    out = []
    curves_all = {}
    for n in args.sizes:
        cfg = SIM[n]
        mats = rp.simulated_matrices(n, cfg["contexts"], slope=args.slope, noise=args.noise,
                                     bias_logit=args.bias, seed=0)
        full = rp.spearman_x100(mats)
        q = rp.quality_row(mats) if n <= 50 else None
        curves = {}
        for s in rp.CURVE_STRATEGIES:
            if n == 200 and s == "adaptive" and not args.adaptive_200:
                continue
            method = "poe" if s in ("poe", "adaptive") else "win-ratio"
            draws = cfg["draws"] if s not in ("poe", "adaptive") else max(1, cfg["draws"] // 4)
            t0 = time.perf_counter()
            mu, _ = rp.selection_curve(mats, s, cfg["fractions"], draws=draws, method=method)
            curves[s] = mu
            if s in ("random", "poe"):
                mu2, _ = rp.selection_curve(mats, s, cfg["fractions"], draws=draws,
                                            method="poe" if s == "random" else "win-ratio")
                curves[f"{s} ({'PoE' if s == 'random' else 'win-ratio'} ranking)"] = mu2
            print(f"N={n} {s}: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        curves_all[n] = (cfg["fractions"], curves, full)
        out.append(f"**Simulated judge, N = {n}** ({cfg['contexts']} contexts; full-matrix Spearman "
                   f"{_fmt(full)} with win ratio"
                   + (f", P(A) {q.p_a_raw:.2f}" if q else "") + ")\n")
        out.append(rp.curve_table(curves, cfg["fractions"]))
        target = 0.95 * full
        reach = {k: rp.fraction_to_reach(cfg["fractions"], v, target) for k, v in curves.items()}
        out.append("\nshare of comparisons to reach 95% of the full-matrix Spearman: "
                   + ", ".join(f"{k} {_fmt(100 * v, '.0f')}%" for k, v in reach.items()) + "\n")
    text = "\n".join(out)
    print(text)
    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(curves_all), figsize=(4.4 * len(curves_all), 3.6), squeeze=False)
        for ax, (n, (fr, curves, full)) in zip(axes[0], curves_all.items()):
            for name, mu in curves.items():
                ax.plot(100 * np.array(fr), mu, marker="o", ms=3, label=name)
            ax.axhline(0.95 * full, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_title(f"simulated judge, N = {n}")
            ax.set_xlabel("% of N(N-1) comparisons (log)")
            ax.set_ylabel("Spearman x100")
            ax.grid(alpha=0.3)
        axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        path = Path(args.out) / "results-simulated.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        print(f"wrote {path}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "tables"):
        s = sub.add_parser(name)
        s.add_argument("--dataset", choices=list(FILES), required=True)
        s.add_argument("--model", default="smollm2", help="smollm2, qwen0.5b or a model path")
        s.add_argument("--aspects", default=None, help="comma-separated (default: the dataset's four)")
        s.add_argument("--contexts", type=int, default=None, help="first N contexts (default all)")
        s.add_argument("--db", default=os.environ.get("COMPASSESS_DATABASE_URL"))
    r = sub.choices["run"]
    r.add_argument("--templates", default="t1,t2,s1,s2")
    r.add_argument("--batch-size", type=int, default=8)
    t = sub.choices["tables"]
    t.add_argument("--draws", type=int, default=50)
    t.add_argument("--out", default=None, help="also write the markdown here")
    t.add_argument("--plots", default=None, help="folder for results-curves-<dataset>.png")
    t.add_argument("--curve-runs", default="", help="aspect/template,... (default: every full run)")
    s = sub.add_parser("simulate")
    s.add_argument("--sizes", default="16,50,200")
    s.add_argument("--slope", type=float, default=1.0)
    s.add_argument("--noise", type=float, default=3.0)
    s.add_argument("--bias", type=float, default=0.6)
    s.add_argument("--adaptive-200", action="store_true", help="also simulate adaptive at N=200 (slow)")
    s.add_argument("--out", default=None, help="folder for results-simulated.png")
    args = p.parse_args(argv)
    if args.cmd == "simulate":
        args.sizes = [int(x) for x in args.sizes.split(",")]
        return cmd_simulate(args)
    args.aspects = args.aspects.split(",") if args.aspects else ASPECTS[args.dataset]
    if args.cmd == "run":
        args.templates = args.templates.split(",")
        return cmd_run(args)
    args.curve_runs = {tuple(x.split("/")) for x in args.curve_runs.split(",") if x}
    return cmd_tables(args)


if __name__ == "__main__":
    sys.exit(main())
