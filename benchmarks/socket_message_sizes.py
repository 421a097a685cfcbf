"""The largest WebSocket messages the app sends and receives, measured in Chromium: what
``server.maxMessageSize`` (a bound on every message the server SENDS: Streamlit replaces a larger
one with an error) and ``server.maxWidgetStateSize`` (a bound on every message a browser sends)
must leave room for (``.streamlit/config.toml``, docs/deploy.md).

A temporary SQLite store holds the bundled sample (3 contexts x 5 candidates) and a 2,000-row
dataset (400 contexts x 5 candidates, the sample's texts under new ids), each with a completed
run of every ordered pair (made-up probabilities written straight into the store; 8,000
comparisons on the large one; ``--only large`` measures its pages only). ``streamlit run
app.py`` serves it in local mode; Chromium opens every page with each dataset and run in the URL
and waits until the page's script has finished.
Every frame on the page's WebSocket is measured as Chromium sees it.

Prints, per page and dataset, the largest message received and sent (bytes), then the largest
of all. About 10-20 minutes on a loaded 2-core machine (each page waits for its script):

    PYTHONPATH=. .venv/bin/python benchmarks/socket_message_sizes.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.browser_walk import Reruns, app_server, fake_judge_run  # noqa: E402
from tests.browser.test_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

#: The pages (their URL paths) and whether they take the run in the URL.
PAGES = ("", "upload", "run", "leaderboard", "rankings", "scores", "matrix", "bias", "compare",
         "panel", "judge_leaderboard", "tune", "annotate", "campaigns", "agreement", "export",
         "people")
#: The large dataset: contexts (each with the sample's 5 candidates): 2,000 rows.
LARGE_CONTEXTS = 400


def seed(folder: Path, db_url: str) -> dict[str, tuple[int, int]]:
    """The two datasets and their runs: name -> (dataset id, run id)."""
    from compassess_core.data.candidates import load_candidates
    from db.store import Store

    sample = pd.read_csv(ROOT / "assets" / "sample_summeval.csv")
    n = sample["context_id"].nunique()
    parts = []
    for k in range(LARGE_CONTEXTS):
        part = sample[sample["context_id"] == sample["context_id"].unique()[k % n]].copy()
        part["context_id"] = f"L{k}"
        part["candidate_id"] = [f"L{k}-{j}" for j in range(len(part))]
        parts.append(part)
    large = folder / "large_2000_rows.csv"
    pd.concat(parts).to_csv(large, index=False)
    out = {}
    for name, path in (("sample", ROOT / "assets" / "sample_summeval.csv"), ("large", large)):
        dataset_id = Store(db_url).save_dataset(load_candidates(path, name=name))
        out[name] = (dataset_id, fake_judge_run(db_url, dataset_id, "coherence", f"{name}-run"))
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("sample", "large"),
                        help="measure the pages of one dataset only")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db_url = f"sqlite:///{folder / 'compassess.db'}"
        objects = seed(folder, db_url)
        rows = []
        with app_server(db_url, folder) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for name, (dataset_id, run_id) in objects.items():
                if args.only and name != args.only:
                    continue
                for page_path in PAGES:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    sizes = {"received": 0, "sent": 0}

                    def on_socket(ws, sizes=sizes) -> None:
                        for event, key in (("framereceived", "received"), ("framesent", "sent")):
                            ws.on(event, lambda payload, key=key: sizes.__setitem__(
                                key, max(sizes[key], len(payload))))

                    page.on("websocket", on_socket)
                    reruns = Reruns(page)
                    page.goto(f"{url}/{page_path}?dataset={dataset_id}&run={run_id}")
                    reruns.wait_sent(0, timeout_s=60)
                    reruns.wait_idle(timeout_s=300)
                    rows.append(dict(dataset=name, page=page_path or "home", **sizes))
                    print(rows[-1], flush=True)
                    page.close()
            browser.close()
        table = pd.DataFrame(rows)
        print(table.to_string(index=False))
        print(f"largest received by the browser: {table['received'].max():,} bytes; "
              f"largest sent by the browser: {table['sent'].max():,} bytes")


if __name__ == "__main__":
    main()
