"""Several aspects in one pass against one aspect alone: a measurement, not a test.

On SummEval's first article (16 summaries, every ordered pair: 240 comparisons per aspect; the
file is ``summeval.csv`` in ``--data-dir``, else the app's sample is used) the bundled judge,
loaded once, executes side by side in one process, interleaved ``--repeat`` times:

* ``one aspect``: a run of coherence alone;
* ``4 aspects, one pass``: coherence, consistency, fluency and relevance, one run each, judged
  together (``worker.execute_group_with``: the prompts of one pair in one judge call, sharing
  the context and both candidates in the prefix cache);
* ``4 separate runs`` (once, with ``--separate``, on by default): the four aspects one after
  the other, what a user did before; their p are the reference the one-pass p are compared
  with.

Each time is the wall clock of the whole run after the judge is loaded (planning, judging and
storing into an in-memory sink), with the judge's model tokens (what the prefix cache leaves
to compute). It prints the median seconds, the ratio to one aspect (target: at most 1.6 for the
four aspects in one pass) and the largest |p difference| between the one-pass runs and the
separate runs, beside the judge's own fp32 noise: the same run's p at batch size 1 against 8.

It also measures, for every built-in prompt wording, where the aspect first changes the prompt:
the token position where two aspects' prompts of the same pair part, over the prompt's length
(the share of the prompt the aspects can share in the prefix cache).

    PYTHONPATH=. .venv/bin/python benchmarks/aspects_one_pass.py --repeat 3 --threads 1

``--model`` and ``--device`` run another judge (a GPU: ``--device cuda``, where ``--batch-size 0``
sizes the micro-batches from free memory as a run does).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ASPECTS = ("coherence", "consistency", "fluency", "relevance")


class Quiet:
    def loaded(self, description):
        pass

    def progress(self, progress):
        pass

    def message(self, text):
        pass


def settings_for(dataset, aspect: str, **kw):
    from compassess_core.api import run_settings
    return run_settings(dataset, aspect=aspect, **kw)


def p_by_key(sink, run_id: int) -> dict:
    return {k: r.judgement.p for k, r in sink.stored_results(run_id, "comparative").items()}


def timed_group(dataset, aspects, judge, **kw) -> tuple[float, int, list[dict]]:
    """Seconds, model tokens and each run's p of ``aspects`` judged together."""
    from compassess_core.runs.sink import MemorySink
    from compassess_core.runs.executor import execute_group_with
    sink = MemorySink()
    settings = [settings_for(dataset, a, device=judge.device.type, **kw) for a in aspects]
    ids = list(range(1, len(aspects) + 1))
    tokens, passes = judge.stats["model_tokens"], judge.stats["forward_passes"]
    start = time.perf_counter()
    execute_group_with(sink, dataset, settings, judge, ids, reporter=Quiet())
    seconds = time.perf_counter() - start
    print(f"    {len(aspects)} aspect(s): {judge.stats['forward_passes'] - passes} forward passes",
          file=sys.stderr, flush=True)
    return seconds, judge.stats["model_tokens"] - tokens, [p_by_key(sink, i) for i in ids]


def prefix_shares(judge) -> list[tuple[str, int, int]]:
    """Per built-in wording: (template, tokens two aspects' prompts of one pair share, prompt
    tokens)."""
    from compassess_core.runs import absolute, scoring
    from compassess_core.runs.prompts import TASKS, Aspect, builtin_template
    context, a, b = ("A passage of about forty words. " * 8, "A first summary of it. " * 4,
                     "A second summary of it. " * 4)
    one, two = Aspect.from_name("coherence"), Aspect.from_name("fluency")
    rows = []

    def measure(name: str, first, second) -> None:
        x, y = judge.encode([judge.render(first), judge.render(second)])
        same = next((k for k, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
        rows.append((name, same, len(x)))
    for task in TASKS:
        for t in ("t1", "t2"):
            template = builtin_template(t, task)
            measure(template.name, template.render(context, a, b, one),
                    template.render(context, a, b, two))
    for s in scoring.SCORING_TEMPLATES:
        template = scoring.scoring_template(s, one, "summary")
        measure(f"{s}-summary (scoring)", template.render(context, a, one),
                scoring.scoring_template(s, two, "summary").render(context, a, two))
    for variant in absolute.VARIANTS:
        text = absolute.comparison_template(variant, "summary") if hasattr(
            absolute, "comparison_template") else None
        if text is None:
            continue
        measure(f"absolute {variant} (summary)",
                absolute.comparison_prompt(text, context, a, b, one, absolute.TARGET_FIRST),
                absolute.comparison_prompt(text, context, a, b, two, absolute.TARGET_FIRST))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--contexts", type=int, default=1, help="articles (default 1)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads of the judge")
    ap.add_argument("--no-separate", action="store_true",
                    help="skip the four separate runs (and the p comparison)")
    ap.add_argument("--model", help="the judge (default: the bundled SmolLM2)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--batch-size", type=int, default=8, help="0: sized as a run sizes it")
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["COMPASSESS_THREADS"] = str(args.threads)
    from compassess_core.data.candidates import load_candidates
    from compassess_core.judges import load_judge

    path = args.data_dir / "summeval.csv"
    if not path.exists():
        print(f"{path} is absent: using the app's sample instead", file=sys.stderr)
        path = ROOT / "assets" / "sample_summeval.csv"
    dataset = load_candidates(path).head(args.contexts)
    judge = load_judge(args.model, device=args.device, batch_size=args.batch_size or None)
    print(f"judge: {judge.description}; data: {path.name}, {len(dataset.contexts)} context(s), "
          f"{sum(len(c.candidates) for c in dataset.contexts)} candidates")

    print("\nwhere the aspect first changes the prompt (two aspects, one pair):")
    print("| wording | tokens shared | prompt tokens | shared |")
    print("|---|---:|---:|---:|")
    for name, same, total in prefix_shares(judge):
        print(f"| {name} | {same} | {total} | {100 * same / total:.0f}% |")

    timed_group(dataset.head(1), ASPECTS[:1], judge, strategy="random", budget=2)  # warm-up
    times: dict[str, list[float]] = {"one aspect": [], "4 aspects, one pass": []}
    tokens: dict[str, int] = {}
    one_pass_p: list[dict] = []
    for i in range(args.repeat):
        for label, aspects in (("one aspect", ASPECTS[:1]), ("4 aspects, one pass", ASPECTS)):
            seconds, n_tokens, ps = timed_group(dataset, aspects, judge)
            times[label].append(seconds)
            tokens[label] = n_tokens
            if len(aspects) > 1:
                one_pass_p = ps
            print(f"[{i + 1}/{args.repeat}] {label}: {seconds:.1f} s, {n_tokens:,} model tokens",
                  file=sys.stderr, flush=True)
    worst = noise = None
    if not args.no_separate:
        separate_s, separate_tokens, separate_p = 0.0, 0, []
        for aspect in ASPECTS:
            seconds, n_tokens, [ps] = timed_group(dataset, [aspect], judge)
            separate_s, separate_tokens = separate_s + seconds, separate_tokens + n_tokens
            separate_p.append(ps)
        times["4 separate runs"], tokens["4 separate runs"] = [separate_s], separate_tokens
        worst = max(max(abs(a[k] - b[k]) for k in a) for a, b in zip(one_pass_p, separate_p))
        batch_size = judge.batch_size
        judge.batch_size = 1
        _, _, [alone_1] = timed_group(dataset, ASPECTS[:1], judge)
        judge.batch_size = batch_size
        noise_label = f"one run at batch size 1 against {batch_size}"
        noise = max(abs(alone_1[k] - separate_p[0][k]) for k in alone_1)

    base = statistics.median(times["one aspect"])
    n = len(one_pass_p[0]) if one_pass_p else 0
    print(f"\n{n} comparisons per aspect; median of {args.repeat} (the separate runs: once)")
    print("| mode | seconds | model tokens | time / one aspect |")
    print("|---|---:|---:|---:|")
    for label, values in times.items():
        m = statistics.median(values)
        print(f"| {label} | {m:.1f} ({min(values):.1f}-{max(values):.1f}) | {tokens[label]:,} | "
              f"{m / base:.2f} |")
    if worst is not None:
        print(f"\nlargest |p(one pass) - p(separate run)| over {4 * n} comparisons: {worst:.2e}; "
              f"the judge's own noise ({noise_label}): {noise:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
