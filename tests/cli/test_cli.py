"""The command line end to end on the real bundled SmolLM2 judge and a real SQLite file.

Covers the contract: run -> evaluate -> rank -> export, exit codes, and resume after a real
kill signal with nothing recomputed and nothing duplicated, on the bundled sample (nothing skips
on a clone).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests import warm_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "assets" / "sample_summeval.csv"

pytestmark = pytest.mark.model


def cli(*args, db=None, check=True, timeout=900, fresh=False):
    """``compassess ARGS [--db DB]`` in a process of its own: forked from the warm command line
    with the bundled judge loaded (tests/warm_cli.py), or with ``fresh`` started as
    ``python -m compassess_core.cli`` (the entry point itself, as the kill and SIGTERM tests below
    start it)."""
    cmd = [*args] + (["--db", db] if db else [])
    if fresh:
        proc = subprocess.run([sys.executable, "-m", "compassess_core.cli", *cmd],
                              capture_output=True, text=True, timeout=timeout, cwd=REPO)
    else:
        proc = warm_cli.run(*cmd, model=True, cwd=REPO, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc


@pytest.fixture
def sample(short_summeval):
    """The bundled sample: 3 articles x 5 summaries (20 ordered pairs per article), with the
    SummEval expert scores; the repository ships it, so nothing here skips on a clone. Its
    articles cut to their opening sentences (tests/conftest.py: short_articles): the command
    line's contract is checked here, not what the articles say, and the judge reads every
    article token of every comparison (the whole articles run in the README's commands)."""
    return short_summeval


SNAPSHOT_SQL = ("SELECT c.key || '/' || a.key, b.key, cm.p, cm.created_at FROM comparisons cm "
                "JOIN candidates a ON a.id = cm.a_id JOIN candidates b ON b.id = cm.b_id "
                "JOIN contexts c ON c.id = cm.context_id")


def count_rows(db_file: Path, run_name: str) -> int:
    con = sqlite3.connect(db_file)
    try:
        return con.execute("SELECT count(*) FROM comparisons c JOIN runs r ON r.id = c.run_id "
                           "WHERE r.name = ?", (run_name,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def start_run_until_first_write(db_file: Path, data: Path, aspect: str, run: str,
                                contexts: int = 3) -> subprocess.Popen:
    """Start `compassess run` on ``contexts`` contexts, one chunk (20 prompts) per context, and
    return once its first micro-batch is stored."""
    cmd = [sys.executable, "-m", "compassess_core.cli", "run", str(data), "--aspect", aspect,
           "--contexts", str(contexts), "--run", run, "--batch-size", "4", "--chunk-size", "20",
           "--db", f"sqlite:///{db_file}"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while count_rows(db_file, run) == 0:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "no comparison stored within 10 minutes"
        time.sleep(0.2)
    return proc


def test_run_evaluate_rank_export_on_real_model(tmp_path, sample, bundled_model):
    db_file = tmp_path / "cli.db"
    db = f"sqlite:///{db_file}"
    out = cli("run", str(sample), "--aspect", "coherence", "--contexts", "2",
              "--run", "tc", db=db)
    assert out.stdout.strip() == "tc"
    assert "40/40" in out.stderr
    con = sqlite3.connect(db_file)
    rows = con.execute("SELECT p, logp_a, logp_b, label_mass FROM comparisons").fetchall()
    con.close()
    assert len(rows) == 2 * 5 * 4  # 2 contexts x 5 summaries x 4 ordered partners
    assert all(0.0 < p < 1.0 for p, *_ in rows)
    assert all(la < 0 and lb < 0 and 0 < m <= 1.0 for _, la, lb, m in rows)
    assert len({round(p, 6) for p, *_ in rows}) > 15  # fp32 label logits: no bf16 quantisation

    ev = json.loads(cli("evaluate", "--run", "tc", "--reference", "coherence", "--json", db=db).stdout)
    assert ev["n_comparisons"] == 40 and ev["n_contexts"] == 2
    assert ev["reference"] == "coherence"
    for part in ("raw", "debiased"):
        assert -100 <= ev[part]["spearman_x100"] <= 100
        assert 0 <= ev[part]["pairwise_accuracy"] <= 1
        assert abs(ev[part]["p_a"] + ev[part]["p_b"] - 1) < 1e-9
    assert ev["raw"]["tau"] == 0.5
    assert abs(ev["debiased"]["p_a"] - 0.5) < 1e-9  # tau* balances the symmetric full set exactly
    assert 0 <= ev["flip_rate"] <= 1 and ev["n_pairs_both_orders"] == 20

    text = cli("evaluate", "--run", "tc", db=db).stdout
    assert "Spearman x100" in text and "P(A)" in text and "raw" in text and "debiased" in text

    ranked = json.loads(cli("rank", "--run", "tc", "--method", "bradley-terry", "--debias",
                            "balanced", "--format", "json", db=db).stdout)
    assert len(ranked["rankings"]) == 10
    assert sorted(r["rank"] for r in ranked["rankings"] if r["context_id"] == "A0") == [1, 2, 3, 4, 5]

    for fmt in ("csv", "json", "parquet"):
        target = tmp_path / f"rank.{fmt}"
        cli("export", "--run", "tc", "--what", "rankings", "--format", fmt, "-o", str(target), db=db)
        assert target.exists()
    back = pd.read_csv(tmp_path / "rank.csv")
    assert len(back) == 10 and {"rank", "candidate_id", "score", "coherence"} <= set(back.columns)
    meta = json.loads((tmp_path / "rank.csv.settings.json").read_text())
    assert meta["settings"]["aspect"] == "coherence" and meta["run"] == "tc"
    cli("export", "--run", "tc", "--what", "comparisons", "--format", "parquet", "-o",
        str(tmp_path / "c.parquet"), db=db)
    assert len(pd.read_parquet(tmp_path / "c.parquet")) == 40

    # Same settings under the same name: everything is stored, nothing is recomputed.
    again = cli("run", str(sample), "--aspect", "coherence", "--contexts", "2",
                "--run", "tc", db=db)
    assert "40 already stored, 0 computed" in again.stderr


def test_kill_mid_run_then_resume_recomputes_nothing(tmp_path, sample, bundled_model):
    db_file = tmp_path / "kill.db"
    db = f"sqlite:///{db_file}"
    # One article (20 ordered pairs): the resume judges what the kill left, so a larger run
    # would only judge more; the first micro-batch is one prompt, the kill comes after it.
    proc = start_run_until_first_write(db_file, sample, "fluency", "k", contexts=1)
    proc.send_signal(signal.SIGKILL)  # a crash: no handler runs
    proc.wait(timeout=60)
    stored = count_rows(db_file, "k")
    assert 0 < stored < 20
    con = sqlite3.connect(db_file)
    before = dict(((a, b), (p, t)) for a, b, p, t in con.execute(
        SNAPSHOT_SQL))
    con.close()

    out = cli("run", str(sample), "--aspect", "fluency", "--contexts", "1", "--run", "k",
              "--batch-size", "4", db=db)
    assert f"{stored} already stored, {20 - stored} computed" in out.stderr
    assert count_rows(db_file, "k") == 20
    con = sqlite3.connect(db_file)
    after = dict(((a, b), (p, t)) for a, b, p, t in con.execute(
        SNAPSHOT_SQL))
    con.close()
    assert all(after[k] == v for k, v in before.items())  # stored rows untouched


def test_sigterm_stops_cleanly_and_marks_run_cancelled(tmp_path, sample, bundled_model):
    db_file = tmp_path / "term.db"
    db = f"sqlite:///{db_file}"
    proc = start_run_until_first_write(db_file, sample, "relevance", "t")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "run the same command to resume" in err
    runs = json.loads(cli("runs", "--json", db=db).stdout)
    assert runs[0]["status"] == "cancelled"


def test_bad_input_exit_code_2_names_row_and_column(tmp_path, bundled_model):
    bad = tmp_path / "bad.csv"
    bad.write_text("context_id,context,candidate_id,text\nc1,ctx,a,hello\nc1,ctx,b,   \n", encoding="utf-8")
    # the entry point itself: `python -m compassess_core.cli` exits 2 on bad input
    out = cli("run", str(bad), "--aspect", "coherence", "--db", f"sqlite:///{tmp_path / 'x.db'}",
              check=False, fresh=True)
    assert out.returncode == 2
    assert "row 3" in out.stderr and "'text'" in out.stderr
    missing = cli("rank", "--run", "nope", db=f"sqlite:///{tmp_path / 'x.db'}", check=False)
    assert missing.returncode == 2 and "nope" in missing.stderr
    tmpl = cli("run", str(SAMPLE), "--aspect", "coherence", "--template", str(tmp_path / "none.txt"),
               db=f"sqlite:///{tmp_path / 'x.db'}", check=False)
    assert tmpl.returncode == 2 and "template" in tmpl.stderr


def test_run_warns_about_a_budget_below_one_comparison_per_candidate(tmp_path, monkeypatch, capsys):
    """The warning comes before the model loads; the judge loader is stopped right after it."""
    import compassess_core.judges as judges
    from compassess_core.cli import main
    from compassess_core.errors import InputError

    def stop(*a, **k):
        raise InputError("stopped before loading a model (test)")
    monkeypatch.setattr(judges, "load_judge", stop)
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    db = f"sqlite:///{tmp_path / 'w.db'}"
    assert main(["run", str(sample), "--aspect", "coherence", "--strategy", "poe", "--budget", "3",
                 "--db", db]) == 2
    err = capsys.readouterr().err
    assert "warning: A budget of 3 is below one comparison per candidate (5 in the largest context)" in err
    assert main(["run", str(sample), "--aspect", "coherence", "--strategy", "poe", "--budget", "10",
                 "--db", db]) == 2
    assert "below one comparison per candidate" not in capsys.readouterr().err


def test_runs_says_when_a_runs_worker_stopped_responding(tmp_path):
    # a run marked running whose worker died (no heartbeat for minutes) is not listed as running
    import compassess_core as ca
    from compassess_core.api import run_settings
    db_file = tmp_path / "runs.db"
    db = f"sqlite:///{db_file}"
    store = ca.open_store(db)
    dead = store.create_run(SAMPLE, run_settings("sample_summeval", aspect="coherence"), name="dead")
    live = store.create_run(SAMPLE, run_settings("sample_summeval", aspect="fluency"), name="live")
    store.backend.set_run_status(dead.id, "running", done=3, total=60)
    store.backend.set_run_status(live.id, "running", done=5, total=60)
    con = sqlite3.connect(db_file)
    con.execute("UPDATE runs SET heartbeat_at = '2000-01-01 00:00:00' WHERE name = 'dead'")
    con.commit()
    con.close()
    lines = dict(line.split("\t")[0::2] for line in cli("runs", db=db).stdout.splitlines())
    assert lines == {"dead": "worker stopped responding", "live": "running"}
    by_name = {r["name"]: r for r in json.loads(cli("runs", "--json", db=db).stdout)}
    assert (by_name["dead"]["status"], by_name["dead"]["state"]) == ("running", "stale")
    assert by_name["live"]["state"] == "working"
    assert store.get_run("dead").state == "stale"
    assert store.runs().set_index("name").loc["live", "state"] == "working"
