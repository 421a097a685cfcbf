"""Global vs per-context balancing: does one tau* per context rank better than one for all?

    python benchmarks/per_context_balancing.py --db DB --run NAME [--run NAME ...]
        [--method bradley-terry --method win-ratio] [--reference COLUMN] [--doc docs/results.md]

For every stored pairwise run and ranking method it prints one markdown row: Spearman x100 of the
ranking against the dataset's reference scores (mean over contexts, the paper's §4 measure) raw
(tau = 0.5), at the global balanced tau* (eq. 10 over all comparisons) and at one balanced tau*
per context (eq. 10 context by context), with the spread of P(A) over the contexts (min to max,
and the standard deviation) at each threshold. The global tau* makes the mean P(A) 0.5; only the
per-context one makes every context's P(A) 0.5. Every number is read through the Python API
(``Run.evaluation_at``, ``Run.bias``), the numbers the app and ``compassess evaluate`` show.

``--doc FILE`` also writes the table into FILE between the markers
``<!-- per-context-balancing:start -->`` and ``<!-- per-context-balancing:end -->`` (appended
with a heading when FILE has none). It reads stored runs only and never runs a judge.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compassess_core as ca  # noqa: E402
from compassess_core.stats.analysis import BALANCED_PER_CONTEXT  # noqa: E402
from compassess_core.errors import CompAssessError  # noqa: E402

#: The thresholds compared, in the table's order: (debias mode, column label).
MODES = (("none", "raw"), ("balanced", "global tau*"), (BALANCED_PER_CONTEXT, "per-context tau*"))
START, END = "<!-- per-context-balancing:start -->", "<!-- per-context-balancing:end -->"
HEADING = "## Global vs per-context balanced tau*"


def _x100(value: float | None) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.1f}"


def _spread(p_a: np.ndarray) -> str:
    p_a = p_a[np.isfinite(p_a)]
    if len(p_a) == 0:
        return "n/a"
    return f"{p_a.min():.2f}-{p_a.max():.2f} (sd {p_a.std():.2f})"


def rows_for(run, method: str, reference: str | None) -> dict:
    """One table row of ``run`` and ``method``: Spearman x100 and P(A) spread at every mode."""
    row = {"run": run.name, "dataset": run.dataset.name, "method": method,
           "contexts": len(run.context_ids), "comparisons": run.n_comparisons}
    for debias, label in MODES:
        ev = run.evaluation_at(debias, method=method, reference=reference)
        row[f"spearman {label}"] = ev.spearman_x100
        row[f"P(A) {label}"] = run.bias(debias)["p_a"].to_numpy(dtype=float)
        row["contexts used"] = ev.contexts_used
    return row


def table(rows: list[dict], reference: str | None) -> str:
    """The markdown table of ``rows`` with a line saying what it was computed on."""
    head = ["run", "method", "contexts", "Spearman x100 raw", "global tau*", "per-context tau*",
            "P(A) per context raw", "global tau*", "per-context tau*"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join([
            f"{r['run']} ({r['dataset']})", r["method"], str(r["contexts used"]),
            *(_x100(r[f"spearman {label}"]) for _, label in MODES),
            *(_spread(r[f"P(A) {label}"]) for _, label in MODES)]) + " |")
    ref = reference or "each run's aspect column"
    out.append("")
    out.append(f"Spearman x100 against {ref}, mean over the contexts used (contexts with equal "
               "reference scores left out); P(A) per context: min-max over contexts (and the "
               "standard deviation) of each context's share of comparisons won by the first "
               "position (eq. 8). Global tau*: the median of all p (eq. 10); per-context tau*: "
               "the median of each context's p. `python benchmarks/per_context_balancing.py`.")
    return "\n".join(out)


def write_doc(path: Path, text: str) -> None:
    """Put ``text`` between the markers of ``path`` (appended with a heading if absent)."""
    doc = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{START}\n{text}\n{END}"
    if START in doc and END in doc:
        before, rest = doc.split(START, 1)
        _, after = rest.split(END, 1)
        doc = before + block + after
    else:
        doc = doc.rstrip("\n") + ("\n\n" if doc else "") + f"{HEADING}\n\n{block}\n"
    path.write_text(doc, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="the store (a URL or a .db file)")
    ap.add_argument("--run", required=True, action="append", metavar="NAME",
                    help="a stored pairwise run; give it again for several")
    ap.add_argument("--method", action="append", default=None,
                    choices=list(ca.RANKING_METHODS),
                    help="ranking method(s) (default: bradley-terry and win-ratio)")
    ap.add_argument("--reference", default=None, metavar="COLUMN",
                    help="reference-score column (default: the run's aspect column)")
    ap.add_argument("--doc", default=None, metavar="FILE",
                    help="also write the table into FILE (e.g. docs/results.md)")
    args = ap.parse_args(argv)
    try:
        store = ca.open_store(args.db)
        rows = [rows_for(store.get_run(name), method, args.reference)
                for name in args.run for method in (args.method or ["bradley-terry", "win-ratio"])]
    except CompAssessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = table(rows, args.reference)
    print(text)
    if args.doc:
        write_doc(Path(args.doc), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
