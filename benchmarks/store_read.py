"""Store speed: write ~100k comparisons, read them back as a ComparisonTable, a DataFrame and the
run loop's stored results, and look prompts up in the cache.

    python benchmarks/store_read.py [--db URL] [--contexts 10] [--candidates 101] [--batch 1000]

Uses a fresh SQLite file in a temporary folder unless ``--db`` is given (the database must be
empty or disposable: a dataset and a run named ``bench-*`` are added and deleted). Prints one line
per measurement; the read is checked against what was written. It measures, it never asserts a time.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compassess_core.data.candidates import content_hash  # noqa: E402
from compassess_core.types import (Candidate, ComparisonResult, Context, Dataset,  # noqa: E402
                                   Judgement, PairKey)
from db.store import Store  # noqa: E402


def bench_dataset(n_contexts: int, n_candidates: int) -> Dataset:
    contexts = tuple(
        Context(f"ctx{i}", f"context {i}",
                tuple(Candidate(f"cand{j}", f"candidate {j} of {i}", f"sys{j}", {"s": float(j)})
                      for j in range(n_candidates)))
        for i in range(n_contexts))
    return Dataset(f"bench-{n_contexts}x{n_candidates}", contexts, ("s",), "benchmark",
                   content_hash(contexts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="SQLAlchemy URL (default: a temporary SQLite file)")
    ap.add_argument("--contexts", type=int, default=10)
    ap.add_argument("--candidates", type=int, default=101)
    ap.add_argument("--batch", type=int, default=1000, help="comparisons per add_results call")
    args = ap.parse_args(argv)

    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{Path(tmp.name) / 'bench.db'}"
    t = time.perf_counter()
    store = Store(url)
    print(f"open + migrate          {time.perf_counter() - t:8.3f} s   {store!r}")

    ds = bench_dataset(args.contexts, args.candidates)
    t = time.perf_counter()
    ds_id = store.save_dataset(ds)
    print(f"save_dataset            {time.perf_counter() - t:8.3f} s   "
          f"{len(ds.contexts)} contexts x {args.candidates} candidates")
    run_id = store.create_run(f"bench-run-{ds_id}", ds_id,
                              {"kind": "comparative", "label_words": [" A", " B"], "seed": 0})
    store.record_judge(run_id, "bench")

    n = args.candidates
    a, b = np.divmod(np.arange(n * n), n)
    a, b = a[a != b], b[a != b]
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.99, (args.contexts, len(a)))
    results = [ComparisonResult(PairKey(f"ctx{i}", f"cand{x}", f"cand{y}"),
                                Judgement(float(q), math.log(q), math.log1p(-q), 1.0, 5.0),
                                f"{i}-{x}-{y}")
               for i in range(args.contexts) for x, y, q in zip(a.tolist(), b.tolist(), p[i].tolist())]
    t = time.perf_counter()
    for k in range(0, len(results), args.batch):
        store.add_results(run_id, "comparative", results[k:k + args.batch])
    write_s = time.perf_counter() - t
    print(f"add_results             {write_s:8.3f} s   {len(results)} rows in batches of "
          f"{args.batch} ({len(results) / write_s:,.0f} rows/s)")

    t = time.perf_counter()
    table = store.comparison_table(run_id)
    print(f"comparison_table        {time.perf_counter() - t:8.3f} s   {len(table)} rows")
    t = time.perf_counter()
    frame = store.comparisons_frame(run_id)
    print(f"comparisons_frame       {time.perf_counter() - t:8.3f} s   {len(frame)} rows")
    t = time.perf_counter()
    stored = store.stored_results(run_id, "comparative")
    print(f"stored_results          {time.perf_counter() - t:8.3f} s   {len(stored)} results")
    t = time.perf_counter()
    hits = store.cached_results("comparative", "bench", '[" A", " B"]',
                                [r.prompt_hash for r in results[:5000]])
    print(f"cached_results (5k)     {time.perf_counter() - t:8.3f} s   {len(hits)} hits")

    ok = (len(table) == len(results) and np.array_equal(table.p, p.ravel())
          and table.a_ids[-1] == f"cand{n - 1}" and len(stored) == len(results)
          and stored[results[-1].key] == results[-1] and len(hits) == 5000)
    print("read back matches what was written" if ok else "MISMATCH between write and read")
    store.delete_dataset(ds_id)
    store.close()
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
