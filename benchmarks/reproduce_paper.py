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

from benchmarks.studies import reproduction as rp  # noqa: E402

DATA = REPO.parent / "shared" / "data"
FILES = {"summeval": DATA / "summeval.csv", "topicalchat": DATA / "topicalchat_usr.csv"}
ASPECTS = {"summeval": ["coherence", "consistency", "fluency", "relevance"],
           "topicalchat": ["understandable", "continuity", "engagingness", "naturalness"]}
MODELS = {"smollm2": None,
          "qwen0.5b": str(Path.home() / ".cache/compassess/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")}
#: The paper's comparative-assessment Spearman x100 (full matrix) for FlanT5-3B, Tables 1 and 3
#: (TopicalChat COH/CNT/ENG/NAT mapped to understandable/continuity/engagingness/naturalness).
PAPER_FLANT5_3B = {"summeval": {"coherence": 51.2, "consistency": 47.1, "fluency": 32.5, "relevance": 44.8},
                   "topicalchat": {"understandable": 49.4, "continuity": 49.4, "engagingness": 37.3,
                                   "naturalness": 47.4}}
#: Smallest full-matrix Spearman x100 for which "95% of it" is reported (below, it is noise).
MIN_TARGET = 20.0
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
            if args.db:  # the study's own store: made (with its folder) on the first run
                argv += ["--db", args.db, "--create"]
            print(f"=== {time.strftime('%H:%M:%S')} {name}", file=sys.stderr, flush=True)
            code = cli(argv)
            if code != 0:
                return code
    return 0


def _load(store, name: str):
    from compassess_core.runs.settings import RunSettings
    try:
        run = store.get_run(name)
    except Exception:
        return None
    return run, RunSettings.from_dict(run.settings), store.load_dataset(run.dataset_id)


def _fmt(v: float, spec: str = ".1f") -> str:
    return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def cmd_tables(args) -> int:
    from compassess_core.runs.scoring import score_vectors
    from compassess_core.runs.sink import open_store

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

    say(f"#### Spearman x100 per aspect ({ds}, {model}; contexts per cell in brackets)\n")
    say("| aspect | comparative t1 | comparative t2 | comparative mean(t1,t2), raw / debiased | prompt scoring s1 | "
        "prompt scoring s2 | G-Eval s1 | G-Eval s2 | paper FlanT5-3B comparative |")
    say("|---|---|---|---|---|---|---|---|---|")
    for a in args.aspects:
        cells = []
        for t in ("t1", "t2"):
            m = mats.get((a, t))
            cells.append(f"{_fmt(rp.spearman_x100(m))} ({len(m)})" if m else "–")
        if mats.get((a, "t1")) and mats.get((a, "t2")):
            mm = rp.mean_matrices(mats[a, "t1"], mats[a, "t2"])
            cells.append(f"{_fmt(rp.spearman_x100(mm))} / {_fmt(rp.spearman_x100(mm, tau=rp.pooled_tau(mm)))} "
                         f"({len(mm)})" if mm else "–")
        else:
            cells.append("–")
        for key in ("argmax", "expected"):
            for t in ("s1", "s2"):
                s = scores.get((a, t))
                cells.append(f"{_fmt(s[key])} ({s['n']})" if s else "–")
        # columns: t1 t2 mean | ps s1, ps s2 | geval s1, geval s2 | paper
        cells.append(_fmt(PAPER_FLANT5_3B.get(ds, {}).get(a, float("nan"))))
        say(f"| {a} | " + " | ".join(cells) + " |")
    if scores:
        say("\nMean probability mass on the scores 1-10 (label mass): "
            + ", ".join(f"{a}/{t} {_fmt(s['mass'], '.2f')}" for (a, t), s in scores.items()))

    say(f"\n#### Positional bias and debiasing ({ds}; Tables 5/6/7/9)\n")
    say("| aspect | template | contexts | comparisons | P(A) raw | balancing tau | Spearman raw | "
        "Spearman debiased | pairwise acc raw | pairwise acc debiased |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    for (a, t), m in mats.items():
        q = rp.quality_row(m)
        say(f"| {a} | {t} | {q.n_contexts} | {q.n_comparisons} | {_fmt(q.p_a_raw, '.3f')} | "
            f"{_fmt(q.tau, '.3f')} | {_fmt(q.spearman_raw)} | {_fmt(q.spearman_debiased)} | "
            f"{_fmt(q.accuracy_raw, '.3f')} | {_fmt(q.accuracy_debiased, '.3f')} |")

    fits = {}
    for k, m in mats.items():
        try:
            fits[k] = rp.fit_judge(m)
        except rp.InputError:
            pass
    if fits:
        say(f"\n#### The judge as a model: logit p_ij = a_i - a_j + b + e_ij ({ds}; log-odds; "
            "rp.fit_judge)\n")
        say("| aspect | template | contexts | bias b | noise sd(e) | signal sd(a) | noise/signal | "
            "rho(a, human) |")
        say("|---|---|---|---|---|---|---|---|")
        for (a, t), f in fits.items():
            say(f"| {a} | {t} | {f.n_contexts} | {f.bias_logit:.3f} | {f.noise_sd:.3f} | "
                f"{f.signal_sd:.3f} | {f.noise_to_signal:.2f} | {f.rho:.2f} |")

    full = {k: m for k, m in mats.items() if m}
    if full:
        n = len(next(iter(full.values()))[0].ref)
        sizes = [k for k in (3, 4, 8, 12) if k < n] + [n]
        say(f"\n#### Fewer candidates (Table 8 analogue; mean of {args.draws} random subsets, win ratio)\n")
        say("| aspect | template | " + " | ".join(f"N={k}" for k in sizes) + " |")
        say("|---|---|" + "---|" * len(sizes))
        for (a, t), m in full.items():
            fc = rp.fewer_candidates(m, sizes, draws=args.draws)
            say(f"| {a} | {t} | " + " | ".join(_fmt(fc[k]) for k in sizes) + " |")
        say("\n#### Ranking method (Table 11 analogue; Spearman x100 raw / debiased)\n")
        say("| aspect | template | win ratio | Bradley-Terry (max. likelihood) | PoE Gaussian |")
        say("|---|---|---|---|---|")
        for (a, t), m in full.items():
            mc = rp.method_comparison(m)
            say(f"| {a} | {t} | " + " | ".join(f"{_fmt(r)} / {_fmt(d)}" for r, d in mc.values()) + " |")

        say(f"\n#### Spearman x100 vs share of the N(N-1) comparisons ({ds}, mean over draws)\n")
        say(f"Figure 4 rows (random, no-repeat, symmetric) rank by win ratio, raw (tau 0.5) and "
            f"debiased (balanced tau of the kept comparisons), {args.draws} draws; the PoE rows rank by "
            f"the PoE Gaussian, debiased, {max(1, args.draws // 5)} draws for poe/adaptive. "
            "\"vs full matrix\" rows correlate with the same ranking computed from every stored "
            "comparison instead of with the human scores.\n")
        curves_all = {}
        for (a, t), m in full.items():
            if (a, t) not in args.curve_runs and args.curve_runs:
                continue
            curves, targets = {}, {}
            tau_full = rp.pooled_tau(m)
            for strat in ("random", "no-repeat", "symmetric"):
                for deb in (False, True):
                    mu, _ = rp.selection_curve(m, strat, FRACTIONS, draws=args.draws, debias=deb)
                    curves[f"{strat} / win ratio{' debiased' if deb else ''}"] = mu
                    targets[f"{strat} / win ratio{' debiased' if deb else ''}"] = rp.spearman_x100(
                        m, tau=tau_full if deb else 0.5)
            poe_full = rp.spearman_x100(m, method="poe", tau=tau_full)
            for strat in ("random", "poe", "adaptive"):
                draws = args.draws if strat == "random" else max(1, args.draws // 5)
                mu, _ = rp.selection_curve(m, strat, FRACTIONS, draws=draws, debias=True, method="poe")
                curves[f"{strat} / PoE debiased"] = mu
                targets[f"{strat} / PoE debiased"] = poe_full
            for strat in ("random", "poe", "adaptive"):
                draws = args.draws if strat == "random" else max(1, args.draws // 5)
                mu, _ = rp.selection_curve(m, strat, FRACTIONS, draws=draws, debias=True, method="poe",
                                           against="full-matrix")
                curves[f"{strat} / PoE debiased, vs full matrix"] = mu
                targets[f"{strat} / PoE debiased, vs full matrix"] = 100.0
            curves_all[a, t] = {k: v for k, v in curves.items() if "vs full" not in k}
            say(f"**{a} / {t}** ({len(m)} contexts; full matrix {_fmt(rp.spearman_x100(m))} win ratio raw, "
                f"{_fmt(poe_full)} PoE debiased)\n")
            say(rp.curve_table(curves, FRACTIONS))
            # 95% of a full-matrix value near 0 is a point inside the noise: only rows whose
            # full-matrix value is at least MIN_TARGET get a share.
            reach = {k: rp.fraction_to_reach(FRACTIONS, mu, 0.95 * targets[k])
                     for k, mu in curves.items() if targets[k] >= MIN_TARGET}
            say("\nshare of comparisons that first reaches 95% of the row's full-matrix value "
                f"(rows with a full-matrix value of at least {MIN_TARGET:g}): "
                + (", ".join(f"{k} {_fmt(100 * v, 'g')}%" for k, v in reach.items()) or "none") + "\n")
        if args.plots and curves_all:
            stem = f"results-curves-{ds}" + ("" if model == "smollm2" else f"-{model}")
            _plot_curves(curves_all, Path(args.plots) / f"{stem}.png", f"{ds} ({model})")
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.doc:
        key = f"tables {ds} {model}" + (f" c{c}" if c else "")
        replace_generated(Path(args.doc), key, text)
    return 0


def replace_generated(doc: Path, key: str, text: str) -> None:
    """Put ``text`` between ``<!-- generated: KEY -->`` and ``<!-- end generated: KEY -->`` in
    ``doc`` (the markers stay, so the next run replaces it again)."""
    begin, end = f"<!-- generated: {key} -->", f"<!-- end generated: {key} -->"
    body = doc.read_text(encoding="utf-8")
    if begin not in body or end not in body:
        raise SystemExit(f"{doc} has no '{begin}' ... '{end}' block to fill")
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{text}\n{end}{tail}", encoding="utf-8")
    print(f"updated {doc} ({key})", file=sys.stderr)


def panel_grid(k: int, max_cols: int, width: float, height: float):
    """``(fig, axes)``: ``k`` panels of ``width x height`` inches in rows of at most ``max_cols``,
    the unused ones switched off (matplotlib with the Agg backend)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = min(max_cols, k)
    rows = -(-k // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.ravel()[k:]:
        ax.axis("off")
    return fig, axes


def _plot_curves(curves_all: dict, path: Path, title: str) -> None:
    k = len(curves_all)
    fig, axes = panel_grid(k, 4, 4.2, 3.4)
    for ax, ((a, t), curves) in zip(axes.ravel(), curves_all.items()):
        for name, mu in curves.items():
            ax.plot(100 * np.array(FRACTIONS), mu, marker="o", ms=3,
                    ls=":" if name.endswith("win ratio") else "--" if "win ratio" in name else "-",
                    label=name)
        ax.set_title(f"{title}: {a} / {t}")
        ax.set_xlabel("% of N(N-1) comparisons")
        ax.set_ylabel("Spearman x100")
        ax.grid(alpha=0.3)
    axes.ravel()[k - 1].legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


SIM = {16: dict(contexts=40, fractions=(0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0), draws=10),
       50: dict(contexts=10, fractions=(0.01, 0.02, 0.05, 0.1, 0.25, 1.0), draws=4),
       200: dict(contexts=3, fractions=(0.005, 0.01, 0.02, 0.05, 0.1, 1.0), draws=2)}

#: (strategy, ranking method) rows of the simulated curves; every one decides at the balanced
#: threshold of the comparisons it has (debiased), since the simulated judge is biased.
SIM_ROWS = (("random", "win-ratio"), ("symmetric", "win-ratio"), ("no-repeat", "win-ratio"),
            ("random", "poe"), ("symmetric", "poe"), ("poe", "poe"), ("adaptive", "poe"))

#: Judges to calibrate the simulation on (first stored run of each list is used).
CALIBRATE = {"SmolLM2-135M": ("repro-summeval-coherence-t1-smollm2-c10",
                              "repro-summeval-coherence-t1-smollm2-c4"),
             "Qwen2.5-Coder-0.5B": ("repro-summeval-coherence-t1-qwen0.5b-c6",
                                    "repro-summeval-coherence-t1-qwen0.5b-c3")}


def _fits(args) -> dict[str, "rp.JudgeFit"]:
    """Fitted judge models of the stored calibration runs (or the command-line parameters)."""
    if not args.db:
        return {f"manual (noise {args.noise}, bias {args.bias})":
                rp.JudgeFit(args.bias, args.noise, args.slope, args.rho, 0, 0)}
    from compassess_core.runs.sink import open_store
    store = open_store(args.db)
    fits = {}
    for label, names in CALIBRATE.items():
        for name in names:
            got = _load(store, name)
            if got:
                run, settings, dataset = got
                mats = rp.context_matrices(dataset, store.comparison_table(run.id), settings.aspect)
                fits[f"{label} ({name})"] = rp.fit_judge(mats)
                break
    if not fits:
        raise SystemExit(f"none of the calibration runs {sorted(CALIBRATE.values())} is in {args.db}")
    return fits


def cmd_simulate(args) -> int:
    out = []
    say = out.append
    fits = _fits(args)
    say("**Judges fitted** (`logit p_ij = a_i - a_j + b + e_ij` by least squares on their full matrices; "
        "log-odds units)\n")
    say("| judge (run) | contexts | comparisons | bias b | noise sd(e) | signal sd(a) | noise/signal | "
        "rho(a, human) |")
    say("|---|---|---|---|---|---|---|---|")
    for label, f in fits.items():
        say(f"| {label} | {f.n_contexts} | {f.n_comparisons} | {f.bias_logit:.3f} | {f.noise_sd:.3f} | "
            f"{f.signal_sd:.3f} | {f.noise_to_signal:.2f} | {f.rho:.2f} |")
    say(f"\nSimulated with each judge's bias, noise and signal, and rho = {args.rho} (the judge's "
        "agreement with people when it sees every pair; see the text).\n")
    curves_all = {}
    for label, f in fits.items():
        short = label.split(" (")[0]
        for n in args.sizes:
            cfg = SIM[n]
            mats = rp.simulated_like(f, n, cfg["contexts"], seed=0, rho=args.rho)
            full = {m: rp.spearman_x100(mats, method=m, tau=rp.pooled_tau(mats)) for m in ("win-ratio", "poe")}
            curves = {}
            for strategy, method in SIM_ROWS:
                if strategy == "adaptive" and n == 200 and not args.adaptive_200:
                    continue
                draws = cfg["draws"] if strategy not in ("poe", "adaptive") else max(1, cfg["draws"] // 2)
                t0 = time.perf_counter()
                mu, _ = rp.selection_curve(mats, strategy, cfg["fractions"], draws=draws, debias=True,
                                           method=method)
                curves[f"{strategy} / {'PoE' if method == 'poe' else 'win ratio'}"] = (mu, full[method])
                print(f"{short} N={n} {strategy}/{method}: {time.perf_counter() - t0:.1f}s",
                      file=sys.stderr, flush=True)
            curves_all[short, n] = (cfg["fractions"], curves)
            say(f"**{short}-like judge, N = {n}** ({cfg['contexts']} simulated contexts; full-matrix "
                f"Spearman x100 vs the known scores: {_fmt(full['win-ratio'])} win ratio, "
                f"{_fmt(full['poe'])} PoE, both debiased)\n")
            say(rp.curve_table({k: v[0] for k, v in curves.items()}, cfg["fractions"]))
            reach = {k: rp.fraction_to_reach(cfg["fractions"], mu, 0.95 * fm) for k, (mu, fm) in curves.items()}
            say("\nshare of comparisons that first reaches 95% of the same ranking's full-matrix "
                "Spearman: " + ", ".join(f"{k} {_fmt(100 * v, 'g')}%" for k, v in reach.items()) + "\n")
    text = "\n".join(out)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n", encoding="utf-8")
    if args.doc:
        replace_generated(Path(args.doc), "simulate", text)
    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = list(curves_all)
        cols = len(args.sizes)
        rows = max(1, len(keys) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.5 * rows), squeeze=False)
        for ax, key in zip(axes.ravel(), keys):
            fr, curves = curves_all[key]
            for name, (mu, full) in curves.items():
                ax.plot(100 * np.array(fr), mu, marker="o", ms=3, label=name,
                        ls="--" if "win ratio" in name else "-")
            poe_full = next(fm for k, (mu, fm) in curves.items() if k.endswith("PoE"))
            ax.axhline(0.95 * poe_full, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_title(f"{key[0]}-like judge, N = {key[1]}", fontsize=9)
            ax.set_xlabel("% of N(N-1) comparisons (log)")
            ax.set_ylabel("Spearman x100 vs known scores")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=6)  # the N = 16 panel has every row (adaptive is skipped at 200)
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
    t.add_argument("--doc", default=None, help="fill the 'tables DATASET MODEL[ cN]' block of this "
                   "markdown file (docs/results.md)")
    t.add_argument("--curve-runs", default="", help="aspect/template,... (default: every full run)")
    s = sub.add_parser("simulate")
    s.add_argument("--db", default=os.environ.get("COMPASSESS_DATABASE_URL"),
                   help="store with the calibration runs; without it --slope/--noise/--bias are used")
    s.add_argument("--sizes", default="16,50,200")
    s.add_argument("--rho", type=float, default=0.6,
                   help="judge-human agreement of the simulated judge's latent scores (default 0.6)")
    s.add_argument("--slope", type=float, default=1.0, help="signal sd without --db")
    s.add_argument("--noise", type=float, default=1.0, help="noise sd without --db")
    s.add_argument("--bias", type=float, default=0.4, help="bias log-odds without --db")
    s.add_argument("--adaptive-200", action="store_true", help="also simulate adaptive at N=200 (slow)")
    s.add_argument("--out", default=None, help="folder for results-simulated.png")
    s.add_argument("--md", default=None, help="also write the markdown here")
    s.add_argument("--doc", default=None, help="fill the 'simulate' block of this markdown file")
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
