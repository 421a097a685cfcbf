"""The audit report (``compassess report``, ``Store.report``, ``Run.report_html``, the Export page's
download): one self-contained HTML file with every section, the same bytes from the CLI and the
API, inert for hostile names, and nothing a browser would fetch.

The runs are the hand-made one of ``tests/app/test_app_pages.py`` (comparisons written into a real
SQLite store with chosen probabilities: P(A) = 1.00 at tau = 0.5, tau* = 0.725, the win ratio at
tau* ranks every context by coherence), so no model is loaded.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from compassess_core import __version__, api
from compassess_core.cli import main
from compassess_core.errors import InputError
from tests.app.test_app_pages import SAMPLE, app_env, open_page, seed_run  # noqa: F401 - fixture

WHEN = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
EPOCH = int(WHEN.timestamp())
PLOTLY_JS = get_plotlyjs()
HOSTILE = "<img src=x onerror=alert(1)>"
BIDI = "a\u202egnp.exe"


def report_of(url: str, *runs: str, **options) -> str:
    store = api.open_store(url)
    first = store.get_run(runs[0])
    return first.report_html(*runs[1:], generated_at=WHEN, **options).decode("utf-8")


def without_library(text: str) -> str:
    """The report less the one inlined copy of plotly.js (the library's own code, which holds URLs
    and markup in strings it never fetches: the browser test shows nothing is requested)."""
    assert text.count(PLOTLY_JS) == 1
    return text.replace(PLOTLY_JS, "")


def chart_scripts(text: str) -> str:
    """The figures' scripts with plotly's JSON escapes (``\\u003c``) decoded: what plotly reads."""
    scripts = re.findall(r"Plotly\.newPlot\((.*?)\)\s*};", text, flags=re.S)
    assert scripts, "no chart"
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), "\n".join(scripts))


def label_hand_run(url: str, disputed: int = 3) -> None:
    """Human labels of all 30 pairs of the hand-made run, the more coherent summary the winner,
    except the first ``disputed`` pairs, where the people chose the other one."""
    store = api.open_store(url)
    dataset = store.dataset("sample_summeval")
    rows = []
    for ctx in dataset.contexts:
        cands = ctx.candidates
        for a in range(len(cands)):
            for b in range(a + 1, len(cands)):
                x, y = cands[a], cands[b]
                better = x if x.scores["coherence"] > y.scores["coherence"] else y
                worse = y if better is x else x
                winner = worse if len(rows) < disputed else better
                rows.append(dict(context_id=ctx.context_id, candidate_a=x.candidate_id,
                                 candidate_b=y.candidate_id, winner=winner.candidate_id,
                                 annotator="ann1"))
    store.import_labels(pd.DataFrame(rows), dataset="sample_summeval", aspect="coherence")


# ------------------------------------------------------------------------------ the sections

def test_the_report_of_the_hand_made_run_has_each_section(app_env):
    seed_run(app_env)
    text = report_of(app_env, "hand-run")
    assert text.startswith("<!DOCTYPE html>")
    for heading in ("Setup", "Leaderboard", "Positional bias", "Length bias",
                    "Agreement with human labels", "Evaluation against reference scores",
                    "Most order-dependent comparisons", "Most human-disputed comparisons"):
        assert f"<h3>{heading}</h3>" in text, heading
    assert '<section id="methods"><h2>Methods</h2>' in text
    # the setup: data, judge, template, aspect, selection, version and date
    for fact in ("<th>Dataset</th><td>sample_summeval</td>", "3 in the dataset",
                 "15 (9 systems)", "coherence, consistency, fluency, relevance",
                 "bundled:SmolLM2-135M-Instruct", "<th>Template</th><td>t1-summary</td>",
                 "Which Summary is more {aspect} relative to the passage",
                 "<th>Pair selection</th><td>full</td>", "every ordered pair of each context",
                 f"<th>CompAssess</th><td>{__version__}</td>", "2026-03-04 05:06:07 UTC"):
        assert fact in text, fact
    # the hand-made numbers: P(A) = 1 raw, tau* = 0.725 balances it, every pair flips raw
    assert "<td>tau = 0.5 (raw, eq. 3)</td><td>1.000</td><td>0.000</td><td>1.000</td>" in text
    assert "tau* = 0.7250" in text
    assert "<td>tau = 0.7250 (balanced; eq. 9-10)</td><td>0.500</td><td>0.500</td>" in text
    # a degenerate judge is said so, at the top and beside the results that rest on it
    assert "Judge warning" in text and "answers by position, not content" in text
    assert text.count("This result rests on a judge that answers by position") >= 2
    # the leaderboard with its intervals; the evaluation on every reference column
    assert "strength [95% interval]" in text and "200 bootstrap replicates" in text
    assert "<td>coherence</td><td>at tau (tau = 0.7250)</td><td>100.0</td>" in text
    assert "No human labels: none are stored for dataset" in text
    # the most order-dependent comparisons with their exact prompts
    assert text.count('<div class="example">') == 5
    assert text.count("The exact prompt with") == 5 and "Answer: Summary" in text
    # the methods cite the equations and the papers
    for cite in ("eq. 3", "eq. 6", "eq. 8", "eq. 9", "eq. 10", "EACL 2024", "Bradley",
                 "product of experts", "Dubois", "Length-Controlled AlpacaEval"):
        assert cite in text, cite
    # charts: the leaderboard, the p histogram, P(A) per context, the length scatter
    assert len(re.findall(r'<div id="chart-\d+" class="plotly-graph-div"', text)) == 4


def test_with_human_labels_the_report_scores_the_judge_and_shows_the_disputed_pairs(app_env):
    seed_run(app_env)
    label_hand_run(app_env, disputed=3)
    text = report_of(app_env, "hand-run")
    assert "No human labels" not in text
    assert "30 pairs judged by both the judge and people" in text
    # at tau* the judge ranks by coherence: it agrees with 27 of the 30 labels
    # with its 95% bootstrap interval (the 30 scored pairs resampled)
    assert "<td>at tau (tau = 0.7250)</td><td>0.900 [0." in text
    assert "<h4>Calibration on the human labels</h4>" in text and "temperature T =" in text
    assert "The 3 of 3 pairs where the humans' majority differs" in text
    assert text.count('<div class="example">') == 5 + 3
    assert len(re.findall(r'<div id="chart-\d+" class="plotly-graph-div"', text)) == 5


def test_a_dataset_without_systems_gets_the_per_context_rankings(app_env):
    rows = list(csv.DictReader(io.StringIO(SAMPLE.read_text(encoding="utf-8"))))
    out = io.StringIO()
    fields = [f for f in rows[0] if f != "system"]
    writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    seed_run(app_env, source=out.getvalue().encode(), name="no_systems")
    text = report_of(app_env, "hand-run")
    assert "No leaderboard:" in text and "ranked first (score)" in text
    # at tau* the win ratio ranks by coherence: each context's most coherent summary first
    assert "<td>A0</td><td>5</td><td>S8 (" in text


def test_the_report_reads_as_prose_fits_the_page_and_counts_what_it_assesses(app_env):
    """No message in the report carries a command in backticks (a stopped run's note and the
    no-systems note were the CLI's words); wide tables scroll inside their box; the histogram's
    threshold labels sit above the bars; the subject is counted right (a panel of 2 members)."""
    rows = list(csv.DictReader(io.StringIO(SAMPLE.read_text(encoding="utf-8"))))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[f for f in rows[0] if f != "system"],
                            extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    store, _, run_id = seed_run(app_env, source=out.getvalue().encode(), name="no_systems")
    store.set_run_status(run_id, "cancelled", done=60, total=80)   # partial: a note
    text = without_library(report_of(app_env, "hand-run"))
    prose = re.sub(r"<script.*?</script>|<pre.*?</pre>", "", text, flags=re.S)
    assert "Partial run (cancelled)" in prose and "No leaderboard:" in prose
    assert "`" not in prose
    assert "LLM comparative assessment of 1 run, made" in text
    assert "table:not(.facts){display:block;max-width:100%;overflow-x:auto}" in text
    notes = [n for n in re.findall(r'"annotations":\[(.*?)\]', chart_scripts(text))
             if "tau*" in n]
    assert notes and '"yanchor":"bottom"' in notes[0] and '"y":1.0' in notes[0]


def test_a_panels_report_counts_its_members(app_env):
    seed_run(app_env)
    seed_run(app_env, run="second-run")
    store = api.open_store(app_env)
    jury = store.create_panel("jury", ["hand-run", "second-run"], created_by="test")
    text = jury.report_html(generated_at=WHEN).decode("utf-8")
    assert "LLM comparative assessment of a panel of 2 members, made" in text
    assert "run(s)" not in text.split("<nav>")[0]


def test_several_runs_get_a_section_each_and_are_compared_on_the_same_data(app_env):
    seed_run(app_env)
    seed_run(app_env, run="second-run")
    seed_run(app_env, source=SAMPLE.read_text(encoding="utf-8").replace("A2,", "A9,").encode(),
             name="other_data", run="other-run")
    text = report_of(app_env, "hand-run", "second-run", "other-run")
    for k, name in enumerate(("hand-run", "second-run", "other-run"), 1):
        assert f'<section id="run-{k}"><h2>Run {k}: {name}</h2>' in text
    assert '<section id="compare"><h2>The runs compared</h2>' in text
    assert "<h3>hand-run (A) and second-run (B)</h3>" in text
    # the same probabilities: every shared verdict agrees
    assert "<th>Verdict agreement</th><td>1.000 (share of shared pairs)</td>" in text
    assert ("Not compared: run &#x27;hand-run&#x27; judged dataset &#x27;sample_summeval&#x27;, "
            "run &#x27;other-run&#x27; dataset &#x27;other_data&#x27;.") in text


def test_what_cannot_be_reported_is_refused(app_env):
    seed_run(app_env)
    store = api.open_store(app_env)
    with pytest.raises(InputError, match="given twice"):
        store.report(["hand-run", "hand-run"])
    with pytest.raises(InputError, match="at least one run"):
        store.report([])
    label_hand_run(app_env)
    with pytest.raises(InputError, match="judge's own p"):
        store.get_run("hand-run").calibrated().report_html()
    scoring = store.create_run("sample_summeval", api.run_settings(
        "sample_summeval", aspect="coherence", mode="scoring"), name="scores")
    with pytest.raises(InputError, match="needs pairwise comparisons"):
        scoring.report_html()


# ----------------------------------------------------------------------- the same bytes

def test_the_cli_and_the_api_write_the_same_bytes(app_env, tmp_path, monkeypatch):
    seed_run(app_env)
    seed_run(app_env, run="second-run")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    out = tmp_path / "report.html"
    assert main(["report", "--run", "hand-run", "-o", str(out), "--db", app_env]) == 0
    store = api.open_store(app_env)
    run = store.get_run("hand-run")
    assert out.read_bytes() == run.report_html(generated_at=WHEN) == run.report_html() \
        == store.report(["hand-run"])
    # several runs and options other than the defaults
    assert main(["report", "--run", "hand-run", "--run", "second-run", "--method", "win-ratio",
                 "--debias", "none", "--bootstrap", "50", "--examples", "2", "-o", str(out),
                 "--db", app_env]) == 0
    assert out.read_bytes() == run.report_html("second-run", method="win-ratio", debias="none",
                                               n_boot=50, examples=2, generated_at=WHEN)
    assert b"tau = 0.5000" in out.read_bytes()


def test_the_cli_says_what_is_wrong(app_env, tmp_path, capsys):
    seed_run(app_env)
    assert main(["report", "--run", "no-such-run", "-o", str(tmp_path / "r.html"),
                 "--db", app_env]) == 2
    assert main(["report", "--run", "hand-run", "-o", str(tmp_path / "missing" / "r.html"),
                 "--db", app_env]) == 2
    assert "does not exist" in capsys.readouterr().err


# ---------------------------------------------------------------------------- inert, offline

def hostile_csv() -> bytes:
    """The sample with hostile context, candidate and system ids, texts and a score column."""
    text = SAMPLE.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    out = io.StringIO()
    fields = list(rows[0]) + [HOSTILE]
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    for k, row in enumerate(rows):
        row = dict(row)
        if row["context_id"] == "A0":
            row["context_id"] = HOSTILE
        elif row["context_id"] == "A1":
            row["context_id"] = BIDI
        if k % 5 == 0:
            row["candidate_id"] = HOSTILE
            row["system"] = HOSTILE
        elif k % 5 == 1:
            row["candidate_id"] = BIDI
            row["system"] = BIDI
        row["text"] += " <script>alert(2)</script>"
        row[HOSTILE] = str(k % 4)
        writer.writerow(row)
    return out.getvalue().encode()


def test_hostile_names_come_out_inert(app_env):
    seed_run(app_env, source=hostile_csv(), name=HOSTILE, run=HOSTILE)
    assert api.open_store(app_env).get_run(HOSTILE).dataset.name == HOSTILE
    text = report_of(app_env, HOSTILE)
    markup = without_library(text)
    assert "<img" not in markup and "<script>alert" not in markup
    assert "\u202e" not in text  # anywhere, the library included
    assert "a\u27e8U+202E\u27e9gnp.exe" in markup
    escaped = "&lt;img src=x onerror=alert(1)&gt;"
    assert f"<h2>Run 1: {escaped}</h2>" in markup
    assert f"<title>CompAssess audit report: {escaped}</title>" in markup
    assert f"<td>{escaped}</td>" in markup  # in tables (the leaderboard's system)
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in markup  # in the prompts
    # plotly reads labels and hover texts as HTML: the charts get them escaped
    charts = chart_scripts(markup)
    assert escaped in charts and "a\u27e8U+202E\u27e9gnp.exe" in charts
    assert "<img" not in charts


def test_nothing_in_the_report_is_fetched_from_elsewhere(app_env):
    seed_run(app_env)
    label_hand_run(app_env)
    text = report_of(app_env, "hand-run")
    markup = without_library(text)
    # no address at all outside the library, let alone one a browser would fetch
    assert "http://" not in markup and "https://" not in markup
    for pattern in (r"\bsrc\s*=", r"\burl\(", r"@import", r"<link\b", r"<iframe\b",
                    r"<object\b", r"<embed\b", r"<img\b", r"<base\b"):
        assert not re.search(pattern, markup, flags=re.I), pattern
    hrefs = re.findall(r'href\s*=\s*"([^"]*)"', markup)
    assert hrefs and all(h.startswith("#") for h in hrefs), hrefs
    # the library is inlined, not linked, and the page may fetch nothing whatever it holds
    assert re.search(r"<script>/\*\*\s*\* plotly\.js v", text)
    assert "default-src 'none'" in text


# ------------------------------------------------------------------------------------ the app

def test_the_export_page_offers_the_report(app_env):
    seed_run(app_env)
    at = open_page("export")
    assert not at.exception, at.exception
    [prepare] = [b for b in at.button if b.label == "Prepare the audit report"]
    prepare.click().run()
    assert not at.exception, at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the audit report (HTML)" in labels
    codes = [c.value for c in at.code]
    assert ("compassess report --run hand-run --method bradley-terry --debias balanced "
            "-o report.html") in codes


def test_a_baseline_adds_each_systems_win_rate_against_it(app_env, tmp_path, monkeypatch):
    """AlpacaEval's headline number in the report: with ``--baseline`` the leaderboard gains each
    system's win rate against that system (with its interval), the comparisons with it and the
    length-controlled win rate, the numbers of ``Run.leaderboard(baseline=...)``; the CLI, the
    API and the Export page (the view's baseline) agree."""
    seed_run(app_env)
    store = api.open_store(app_env)
    run = store.get_run("hand-run")
    board = run.leaderboard(baseline="M11")
    text = report_of(app_env, "hand-run", baseline="M11")
    assert "win rate vs M11 [95% interval]" in text and "comparisons with M11" in text
    assert "length-controlled win rate vs M11" in text and "Against the baseline M11" in text
    met = board.frame.loc[board.frame["n_vs_baseline"].fillna(0) > 0]
    assert len(met) > 0
    row = met.iloc[0]
    assert (f'{row["win_rate_vs_baseline"]:.3f} [{row["win_rate_vs_baseline_low"]:.3f}, '
            f'{row["win_rate_vs_baseline_high"]:.3f}]') in text
    assert "win rate vs" not in report_of(app_env, "hand-run")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    out = tmp_path / "report.html"
    assert main(["report", "--run", "hand-run", "--baseline", "M11", "-o", str(out),
                 "--db", app_env]) == 0
    assert out.read_bytes() == run.report_html(baseline="M11", generated_at=WHEN)
    with pytest.raises(InputError, match="unknown baseline system 'nobody'"):
        run.report_html(baseline="nobody")
    at = open_page("export")
    at.selectbox(key="report_baseline_w").set_value("M11").run()
    assert not at.exception, at.exception
    assert ("compassess report --run hand-run --method bradley-terry --debias balanced "
            "--baseline M11 -o report.html") in [c.value for c in at.code]
