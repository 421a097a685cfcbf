"""How fast the app's pages render on large runs, measured with Streamlit's AppTest.

Two synthetic runs are written straight into a temporary SQLite store (made-up probabilities with a
first-position bias; no model is involved):

* ``wide``: 200 contexts x 16 candidates, every ordered pair (200 x 240 = 48,000 comparisons);
* ``deep``: one context of 300 candidates, every ordered pair (89,700 comparisons).

For each run the script prints, in seconds: the first (cold) render of every result page, a second
(warm) render, and single moves of the tau slider on Rankings, Matrix and Bias. The target is under
2 s per page and no visible lag for the slider. A live server keeps ``st.cache_data`` between
reruns; AppTest makes a fresh cache store per run, so the script shares one across runs to measure
what a user sees. Run: ``.venv/bin/python benchmarks/app_pages.py`` (about 1-3 minutes).

``--live`` measures every page while a run computes instead: a dataset of 24 contexts x 8
candidates with human labels, a finished run on it (made-up p) and a second run judged by a real
worker process (the bundled judge, started as the Run page starts it: its own session, nice 10,
one core left to the pages). Each page is rendered cold and warm in a fresh session, showing
the finished run with no worker, then (worker judging) showing the live run and the finished
one. Target: under 2 s for every page while the run computes. About 5-10 minutes:

    .venv/bin/python benchmarks/app_pages.py --live
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compassess_core.runs.prompts import Aspect, builtin_template  # noqa: E402
from compassess_core.runs.settings import RunSettings  # noqa: E402
from compassess_core.types import (Candidate, ComparisonResult, Context, Dataset,  # noqa: E402
                                   Judgement, PairKey)

PAGES = ("rankings", "matrix", "bias", "export")
#: Every page of the app, for ``--live``.
ALL_PAGES = ("home", "upload", "run", "rankings", "matrix", "bias", "scores", "agreement",
             "compare", "leaderboard", "judge_leaderboard", "panel", "campaigns", "annotate",
             "export", "people")
SLIDER_PAGES = ("rankings", "matrix", "bias")
TAUS = (0.45, 0.55, 0.62)


def synthetic_dataset(name: str, n_contexts: int, n_candidates: int, rng: np.random.Generator) -> Dataset:
    contexts = []
    for c in range(n_contexts):
        cands = tuple(Candidate(f"c{c}-s{k}", f"summary {k} of context {c} " + "word " * 40,
                                system=f"sys{k % 8}", scores={"quality": float(rng.normal())})
                      for k in range(n_candidates))
        contexts.append(Context(f"ctx{c:03d}", f"context {c} " + "text " * 200, cands))
    from compassess_core.data.candidates import content_hash
    return Dataset(name, tuple(contexts), ("quality",), f"{name}.csv", content_hash(contexts))


def write_run(store, dataset: Dataset, rng: np.random.Generator,
              name: str | None = None) -> tuple[str, float]:
    dataset_id = store.save_dataset(dataset)
    t, a = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model="synthetic")
    name = name or f"bench-{dataset.name}"
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    start = time.perf_counter()
    total = 0
    for ctx in dataset.contexts:
        n = len(ctx.candidates)
        q = np.array([c.scores[dataset.score_columns[0]] for c in ctx.candidates])
        i, j = np.nonzero(~np.eye(n, dtype=bool))
        p = 1 / (1 + np.exp(-(0.6 + (q[i] - q[j]) + rng.normal(0, 0.8, len(i)))))
        ids = ctx.candidate_ids
        batch = [ComparisonResult(PairKey(ctx.context_id, ids[a_], ids[b_]),
                                  Judgement(float(pp), float(np.log(0.5 * pp)), float(np.log(0.5 * (1 - pp))), 0.5),
                                  f"{ctx.context_id}/{a_}/{b_}")
                 for a_, b_, pp in zip(i, j, p)]
        for k in range(0, len(batch), 20_000):
            store.add_results(run_id, "comparative", batch[k:k + 20_000])
        total += len(batch)
    store.set_run_status(run_id, "completed", done=total, total=total)
    return name, time.perf_counter() - start


def share_cache_data_between_runs() -> None:
    """AppTest builds a new cache store per run; a live server keeps one (see the module docstring)."""
    import streamlit.testing.v1.app_test as app_test
    shared = app_test.MemoryCacheStorageManager()
    app_test.MemoryCacheStorageManager = lambda: shared


def timed(at, page: str | None = None) -> float:
    if page is not None:
        at.switch_page(f"pages/{page}.py")
    start = time.perf_counter()
    at.run(timeout=300)
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")
    return elapsed


def bench_run(run_name: str) -> dict[str, float]:
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["run"] = run_name
    timed(at)
    out = {}
    for page in PAGES:
        out[f"{page} (cold)"] = timed(at, page)
        out[f"{page} (warm)"] = timed(at, page)
    for page in SLIDER_PAGES:
        at.switch_page(f"pages/{page}.py").run(timeout=300)
        at.radio(key="tau_mode_w").set_value("manual")
        timed(at)
        for tau in TAUS:
            at.slider(key="tau_manual_w").set_value(tau)
            out[f"{page} slider -> {tau}"] = timed(at)
        at.slider(key="tau_manual_w").set_value(TAUS[0])
        out[f"{page} slider back to {TAUS[0]} (cached)"] = timed(at)
    return out


# ------------------------------------------------------------------------ pages while a run computes

WORDS = ("the council said on monday that new rules for the river port would cut delays while "
         "critics warned the plan left small firms paying more for less as prices rose").split()


def prose(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed * 7 + 3 * k + k * k) % len(WORDS)] for k in range(n)) + "."


def live_dataset(rng: np.random.Generator) -> Dataset:
    """24 news-like contexts x 8 summaries (about 250 and 50 words), scores for coherence."""
    from compassess_core.data.candidates import content_hash
    contexts = tuple(Context(f"L{c:02d}", prose(250, c), tuple(
        Candidate(f"L{c:02d}-s{k}", prose(40 + 3 * k, 100 * c + k), system=f"sys{k}",
                  scores={"coherence": float(rng.normal())}) for k in range(8)))
        for c in range(24))
    return Dataset("live", contexts, ("coherence",), "live.csv", content_hash(contexts))


def add_labels(store, dataset: Dataset, rng: np.random.Generator) -> int:
    """Human A/B labels on coherence, six pairs per context (what Agreement reads)."""
    rows = []
    for ctx in dataset.contexts:
        ids = ctx.candidate_ids
        for k in range(6):
            a, b = rng.choice(len(ids), 2, replace=False)
            rows.append(dict(context_id=ctx.context_id, candidate_left=ids[a],
                             candidate_right=ids[b], winner="A" if rng.random() < 0.5 else "B",
                             annotator=f"person{k % 3}", aspect="coherence", seconds=5.0,
                             shown_order="ab"))
    return store.add_human_judgements(store.get_run("live-done").dataset_id, rows)


def time_pages(run_name: str, pages=ALL_PAGES) -> dict[str, tuple[float, float]]:
    """Each page's cold and warm render, in a fresh session showing run ``run_name``."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["run"] = run_name
    timed(at)
    return {page: (timed(at, page), timed(at, page)) for page in pages}


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.5)


def live(tmp: str) -> int:
    from compassess_core import api
    from compassess_core.runs.run_loop import JUDGING_PHASE
    from db.store import Store
    rng = np.random.default_rng(1)
    url = f"sqlite:///{Path(tmp) / 'live.db'}"
    os.environ["COMPASSESS_DATABASE_URL"] = url
    os.environ["COMPASSESS_HOME"] = tmp
    store = Store(url)
    dataset = live_dataset(rng)
    write_run(store, dataset, rng, name="live-done")
    n_labels = add_labels(store, dataset, rng)
    handle = api.open_store(url)
    settings = api.run_settings(dataset, aspect="coherence", strategy="random", budget=40,
                                device="cpu")
    run = handle.create_run(dataset, settings, name="live-run")
    print(f"dataset 'live': 24 contexts x 8 candidates, {n_labels} human labels; a finished run "
          f"'live-done' ({store.get_run('live-done').n_comparisons:,} comparisons) and run "
          f"'live-run' ({24 * 40:,} comparisons, the bundled judge)")
    results: dict[str, dict[str, tuple[float, float]]] = {}
    print("\n== no run going: pages of the finished run ==", flush=True)
    results["no run, finished run"] = time_pages("live-done")
    proc = run.start_worker(Path(tmp) / "worker.log", cwd=ROOT)
    try:
        wait_for(lambda: (run.refresh().info.phase == JUDGING_PHASE and run.info.done > 0)
                 or proc.poll() is not None, 900, "the worker's first judged batch")
        if proc.poll() is not None:
            raise RuntimeError((Path(tmp) / "worker.log").read_text()[-2000:])
        print(f"worker {proc.pid} judging ({run.info.done} done)", flush=True)
        print("\n== a run computing: pages of the live run ==", flush=True)
        results["during a run, live run"] = time_pages("live-run")
        print("\n== a run computing: pages of the finished run ==", flush=True)
        results["during a run, finished run"] = time_pages("live-done")
        still = proc.poll() is None
        print(f"\nthe worker was {'still judging' if still else 'done'} at the end "
              f"({run.refresh().info.done}/{run.info.total})")
    finally:
        if proc.poll() is None:
            run.cancel()
            try:
                proc.wait(timeout=60)
            except Exception:  # noqa: BLE001 - never leave a worker behind
                proc.kill()
    heads = list(results)
    print("\n| page | " + " | ".join(f"{h} cold / warm (s)" for h in heads) + " |")
    print("|---|" + "---:|" * len(heads))
    worst = 0.0
    for page in ALL_PAGES:
        cells = [f"{results[h][page][0]:.2f} / {results[h][page][1]:.2f}" for h in heads]
        worst = max([worst] + [max(results[h][page]) for h in heads[1:]])
        print(f"| {page} | " + " | ".join(cells) + " |")
    print(f"\nslowest page during the run: {worst:.2f} s "
          f"({'under' if worst < 2.0 else 'OVER'} the 2 s target)")
    return 0


def main() -> int:
    share_cache_data_between_runs()
    if "--live" in sys.argv[1:]:
        with tempfile.TemporaryDirectory(prefix="compassess-bench-") as tmp:
            return live(tmp)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="compassess-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        os.environ["COMPASSESS_DATABASE_URL"] = url
        os.environ["COMPASSESS_HOME"] = tmp
        from db.store import Store
        store = Store(url)
        runs = []
        for name, n_ctx, n_cand in (("wide", 200, 16), ("deep", 1, 300)):
            ds = synthetic_dataset(name, n_ctx, n_cand, rng)
            run, write_s = write_run(store, ds, rng)
            n = store.get_run(run).n_comparisons
            print(f"{name}: {n_ctx} contexts x {n_cand} candidates = {n:,} comparisons "
                  f"(written in {write_s:.1f} s)")
            runs.append((name, run))
        for name, run in runs:
            print(f"\n== {name} ==")
            for what, seconds in bench_run(run).items():
                flag = "" if seconds < 2.0 else "   <-- over 2 s"
                print(f"  {what:<42s} {seconds:6.2f} s{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
