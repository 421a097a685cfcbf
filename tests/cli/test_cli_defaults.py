"""The command line's defaults, help and plain errors, on a real SQLite store with the hand-made
run of ``test_app_pages.seed_run`` (a judge that answers by position: P(A) = 1.00 at tau = 0.5;
its balanced verdicts rank the sample's summaries by coherence). No model is loaded.

* one default wherever a ranking or a verdict is read: Bradley-Terry at the balanced tau*, shown
  in every --help, and a position warning wherever a result rests on such a judge;
* every flag has help text; an unknown flag prints its own command's usage;
* missing input files, unwritable outputs and a --db in a folder that does not exist are exit 2
  with a plain message (no traceback, no debug hint);
* panel rank|evaluate|list|delete --json print JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.cli.parser import build_parser
from tests.app.test_app_pages import seed_run  # noqa: F401 (a hand-made run on the bundled sample)


def cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def parsers(parser: argparse.ArgumentParser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


@pytest.fixture
def hand_run(db_url):
    store, _, _ = seed_run(db_url)
    store.close()
    return db_url


# ------------------------------------------------------------------------------ help and defaults

@pytest.mark.parametrize("command", ["rank", "export", "evaluate", "leaderboard", "compare",
                                     "report", "agreement"])
def test_every_command_that_reads_a_verdict_shows_the_same_default(command, capsys):
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "(default: balanced)" in text, text
    if command != "agreement":   # agreement reads verdicts, not a ranking
        assert "(default: bradley-terry)" in text, text
        assert "bradley-terry = Bradley-Terry" in text and "win-ratio = share" in text


def test_every_flag_of_every_command_has_help_text():
    missing = [(" ".join(path), action.option_strings)
               for path, parser in parsers(build_parser()) for action in parser._actions
               if action.option_strings and action.dest != "help" and not (action.help or "").strip()]
    assert not missing, missing


def test_the_choices_of_strategy_method_and_format_are_explained_one_line_each(capsys):
    _, out, _ = cli(capsys, "run", "--help")
    text = " ".join(out.split())
    for strategy in ("full =", "random =", "no-repeat =", "symmetric =", "poe =", "adaptive ="):
        assert strategy in text
    _, out, _ = cli(capsys, "export", "--help")
    text = " ".join(out.split())
    for what in ("rankings =", "comparisons =", "csv (with", "parquet (with"):
        assert what in text


def test_an_unknown_flag_after_a_command_prints_that_commands_usage(capsys):
    code, _, err = cli(capsys, "rank", "--run", "x", "--bogus")
    assert code == 2
    assert err.startswith("usage: compassess rank") and "unrecognized arguments: --bogus" in err
    code, _, err = cli(capsys, "panel", "rank", "--name", "x", "--bogus")
    assert code == 2 and err.startswith("usage: compassess panel rank")


# --------------------------------------------------------- what the walkthrough's export gives

def test_export_of_rankings_defaults_to_the_balanced_tau_and_ranks_without_ties(hand_run, tmp_path,
                                                                               capsys):
    out = tmp_path / "rankings.csv"
    code, _, err = cli(capsys, "export", "--run", "hand-run", "--what", "rankings", "--format",
                       "csv", "-o", str(out), "--db", hand_run)
    assert code == 0, err
    ranks = pd.read_csv(out)
    settings = json.loads(Path(f"{out}.settings.json").read_text())
    assert settings["method"] == "bradley-terry" and settings["debias"] == "balanced"
    # the judge's raw verdicts are all "A"; at tau* the ranking follows coherence, not all ties
    assert ranks.groupby("context_id")["rank"].nunique().min() == 5
    # rank and export read the same default
    code, text, _ = cli(capsys, "rank", "--run", "hand-run", "--format", "json", "--db", hand_run)
    ranked = pd.DataFrame(json.loads(text)["rankings"])
    assert list(ranked["candidate_id"]) == list(ranks["candidate_id"])


def test_a_position_judge_is_warned_about_in_rank_export_and_compare(hand_run, tmp_path, capsys):
    seed_run(hand_run, run="hand-run-2")[0].close()
    code, out, _ = cli(capsys, "rank", "--run", "hand-run", "--debias", "none", "--db", hand_run)
    assert code == 0 and "warning: At tau = 0.5 this judge answers by position" in out
    code, _, err = cli(capsys, "export", "--run", "hand-run", "--what", "rankings", "--format",
                       "json", "-o", str(tmp_path / "r.json"), "--debias", "none", "--db", hand_run)
    assert code == 0 and "answers by position" in err
    code, out, _ = cli(capsys, "compare", "--run", "hand-run", "--run", "hand-run-2",
                       "--debias", "none", "--db", hand_run)
    assert code == 0 and "warning: hand-run: At tau = 0.5 this judge answers by position" in out
    code, out, _ = cli(capsys, "compare", "--run", "hand-run", "--run", "hand-run-2", "--json",
                       "--debias", "none", "--db", hand_run)
    assert any("answers by position" in w for w in json.loads(out)["warnings"])


# ----------------------------------------------------------------- plain errors for bad paths

def test_missing_inputs_and_unwritable_outputs_are_exit_2_with_a_plain_message(hand_run, tmp_path,
                                                                               capsys):
    code, _, err = cli(capsys, "campaign", "create", "--name", "c", "--dataset", "sample_summeval",
                       "--aspect", "coherence", "--annotator", "a@x", "--guidelines",
                       str(tmp_path / "missing.txt"), "--db", hand_run)
    assert code == 2 and "--guidelines" in err and "no such file" in err
    assert "Traceback" not in err and "COMPASSESS_DEBUG" not in err
    for args in (("report", "--run", "hand-run", "-o", str(tmp_path)),
                 ("export", "--run", "hand-run", "--what", "rankings", "--format", "csv",
                  "-o", str(tmp_path)),
                 ("export", "--run", "hand-run", "--what", "rankings", "--format", "csv",
                  "-o", str(tmp_path / "no" / "such" / "r.csv"))):
        code, _, err = cli(capsys, *args, "--db", hand_run)
        assert code == 2, (args, err)
        assert err.startswith("error: -o ") and "COMPASSESS_DEBUG" not in err


def test_a_db_in_a_folder_that_does_not_exist_is_an_error_unless_create_is_given(tmp_path, capsys):
    target = tmp_path / "typo" / "runs.db"
    code, _, err = cli(capsys, "runs", "--db", str(target))
    assert code == 2 and "does not exist" in err and "--create" in err
    assert not target.parent.exists()
    code, _, err = cli(capsys, "--db", f"sqlite:///{target}", "runs")
    assert code == 2 and not target.parent.exists()
    code, out, err = cli(capsys, "runs", "--db", str(target), "--create")
    assert code == 0, err
    assert target.exists()


def test_a_missing_db_file_is_refused_by_every_command_that_reads_the_store(tmp_path, capsys,
                                                                             monkeypatch):
    """`compassess runs --db typo.db` in an existing folder said "no runs" from a new empty
    store: every command that only reads or changes what is stored refuses a --db file that
    does not exist (exit 2, naming it), creating nothing; the commands that bring data in
    (run, import-labels, campaign create, ...) still create it, and --create starts one."""
    from compassess_core.cli.common import CREATES_STORE, NEEDS_NO_STORE, command_name

    monkeypatch.chdir(tmp_path)
    reading = []
    for path, parser in parsers(build_parser()):
        if path and "--db" in parser._option_string_actions:
            args = argparse.Namespace(command=path[0], **{
                d: path[1] for d in ("campaign_command", "panel_command", "job_command")
                if len(path) > 1 and d.startswith(path[0])})
            if command_name(args) not in CREATES_STORE | NEEDS_NO_STORE:
                reading.append(path)
    assert {("runs",), ("rank",), ("export",), ("leaderboard",), ("compare",), ("report",),
            ("agreement",), ("judges",), ("tunings",), ("explain",), ("panel", "list"),
            ("campaign", "status"), ("job", "status")} <= set(reading)
    for db in ("typo.db", "sqlite:///typo.db", f"sqlite:///{tmp_path / 'typo.db'}"):
        code, out, err = cli(capsys, "runs", "--db", db)
        assert code == 2 and out == "", err
        assert err.startswith(f"error: --db {db}: no store at ") and "typo.db" in err
        assert "--create" in err and "Traceback" not in err
    # each reading command, with the arguments it requires
    required = {"--run": "r", "--name": "n", "--dataset": "d", "--aspect": "coherence",
                "--to": "t", "-o": "out.html", "--context": "c"}
    for path in reading:
        parser = dict(parsers(build_parser()))[path]
        argv = [*path]
        for action in parser._actions:
            if action.required and action.option_strings:
                flag = next((f for f in action.option_strings if f in required),
                            action.option_strings[0])
                value = (next(iter(action.choices)) if action.choices
                         else required.get(flag, "x"))
                argv += [flag, value] * (2 if action.nargs in ("+", "*") else 1)
            elif action.required and not action.option_strings and action.choices:
                argv.append(next(iter(action.choices)))
            elif action.required and not action.option_strings:
                argv.append("x")
        code, _, err = cli(capsys, *argv, "--db", "typo.db")
        assert code == 2 and "no store at typo.db" in err, (argv, err)
    assert not (tmp_path / "typo.db").exists()
    # `models` needs no store and leaves a missing one uncreated
    assert cli(capsys, "models", "--db", "typo.db")[0] == 0
    assert not (tmp_path / "typo.db").exists()
    # a command that brings data in creates the store; --create starts an empty one
    labels = tmp_path / "labels.csv"
    labels.write_text("context_id,candidate_a,candidate_b,winner\nq,a,b,A\n")
    code, _, err = cli(capsys, "import-labels", str(labels), "--dataset", "none",
                       "--aspect", "overall", "--db", "made.db")
    assert "no store at" not in err and (tmp_path / "made.db").exists()
    code, out, err = cli(capsys, "runs", "--db", "typo.db", "--create")
    assert code == 0 and (tmp_path / "typo.db").exists(), err
    assert "no store at" not in cli(capsys, "runs", "--db", "typo.db")[2]


# ---------------------------------------------------------------------------------- panels

def test_panel_rank_evaluate_list_delete_take_json(hand_run, capsys):
    seed_run(hand_run, run="hand-run-2")[0].close()
    assert cli(capsys, "panel", "create", "--name", "jury", "--run", "hand-run", "--run",
               "hand-run-2", "--db", hand_run)[0] == 0
    code, out, err = cli(capsys, "panel", "rank", "--name", "jury", "--json", "--db", hand_run)
    assert code == 0, err
    assert json.loads(out)["rankings"]
    code, out, _ = cli(capsys, "panel", "evaluate", "--name", "jury", "--json", "--db", hand_run)
    assert code == 0 and "panel" in json.loads(out)
    code, out, _ = cli(capsys, "panel", "list", "--json", "--db", hand_run)
    assert code == 0 and [p["name"] for p in json.loads(out)["panels"]] == ["jury"]
    code, out, _ = cli(capsys, "panel", "delete", "--name", "jury", "--json", "--db", hand_run)
    assert code == 0 and json.loads(out)["deleted"]["panels"] == 1


# ------------------------------------------------------------------ ranks and tables as read

def test_judges_columns_line_up_and_equal_scores_share_a_rank(hand_run, capsys):
    seed_run(hand_run, run="hand-run-2")[0].close()   # the same verdicts: the same Spearman
    code, out, err = cli(capsys, "judges", "--dataset", "sample_summeval", "--aspect",
                         "coherence", "--bootstrap", "50", "--db", hand_run)
    assert code == 0, err
    # the table's lines: not the notes under it (the paired tests against the best say why
    # there are none: this aspect has no human labels)
    table = [line for line in out.splitlines()[1:]
             if not line.startswith(("note:", "paired tests against the best:"))]
    assert len(table) == 3 and len({len(line) for line in table}) == 1, table  # right-aligned
    assert [line.split(".")[0] for line in table[1:]] == ["1", "1"]


def test_rank_with_humans_lists_each_context_best_first(hand_run, tmp_path, capsys):
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"context_id": ["A0", "A0", "A1", "A2"], "candidate_a": ["S3", "S8", "S0", "S2"],
                  "candidate_b": ["S10", "S5", "S15", "S9"],
                  "winner": ["S10", "S8", "S0", "S9"]}).to_csv(labels, index=False)
    sample = pd.read_csv(Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv")
    pairs = pd.read_csv(labels)
    for row in pairs.itertuples():   # the pairs are the sample's
        ids = set(sample.loc[sample.context_id == row.context_id, "candidate_id"])
        assert {row.candidate_a, row.candidate_b} <= ids
    assert cli(capsys, "import-labels", str(labels), "--dataset", "sample_summeval",
               "--aspect", "coherence", "--db", hand_run)[0] == 0
    code, out, err = cli(capsys, "rank", "--run", "hand-run", "--with-humans", "--format", "csv",
                         "--db", hand_run)
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert list(dict.fromkeys(frame["context_id"])) == ["A0", "A1", "A2"]
    for _, group in frame.groupby("context_id", sort=False):
        assert group["rank"].is_monotonic_increasing


def test_messages_name_what_is_really_there(hand_run, tmp_path, capsys):
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    code, _, err = cli(capsys, "run", str(sample), "--aspect", "coherence", "--template",
                       "coh-wording", "--db", hand_run)
    assert code == 2 and "nor a template stored by name" in err     # not only t1, t2 or a file
    labels = tmp_path / "labels.csv"
    labels.write_text("context_id,candidate_a,candidate_b,winner\nA0,S3,S5,S3\n")
    code, _, err = cli(capsys, "import-labels", str(labels), "--dataset", "sample_summeval",
                       "--aspect", "coherence", "--db", hand_run)
    assert code == 0 and "the file names no annotator" in err
    assert "annotator column" not in err


def test_a_system_with_no_comparison_is_unranked_blank_not_last(db_url, capsys):
    from tests.fakes import FakeLengthJudge
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    api.open_store(db_url).run(sample, aspect="coherence", contexts=1, name="one",
                               judge=FakeLengthJudge(), progress=False)
    code, out, err = cli(capsys, "leaderboard", "--run", "one", "--format", "json",
                         "--bootstrap", "20", "--db", db_url)
    assert code == 0, err
    rows = json.loads(out)["systems"]
    judged = [r for r in rows if r["n_comparisons"]]
    assert len(judged) == 5 and all(isinstance(r["rank"], int) for r in judged)
    assert [r["rank"] for r in rows if not r["n_comparisons"]] == [None] * (len(rows) - 5)
    code, out, _ = cli(capsys, "leaderboard", "--run", "one", "--format", "csv",
                       "--bootstrap", "20", "--db", db_url)
    frame = pd.read_csv(io.StringIO(out))
    assert frame.loc[frame["n_comparisons"] == 0, "rank"].isna().all()
    # the API (what a notebook and the app read) and its downloads say the same: no rank
    run = api.open_store(db_url).get_run("one")
    board = run.leaderboard(n_boot=20).frame
    unjudged = board["n_comparisons"] == 0
    assert unjudged.sum() == len(rows) - 5 and board.loc[unjudged, "rank"].isna().all()
    assert list(board.index[unjudged]) == list(range(5, len(board)))   # listed last
    assert board.loc[~unjudged, "rank"].notna().all()
    assert [r["rank"] for r in run.leaderboard(n_boot=20).to_dict()["systems"][5:]] == \
        [None] * (len(rows) - 5)
    out_csv = pd.read_csv(io.BytesIO(run.leaderboard_bytes("csv", n_boot=20).data))
    assert out_csv.loc[out_csv["n_comparisons"] == 0, "rank"].isna().all()
    out_json = json.loads(run.leaderboard_bytes("json", n_boot=20).data)
    assert [r["rank"] for r in out_json["leaderboard"] if not r["n_comparisons"]] == \
        [None] * (len(rows) - 5)
    html = run.report_html(n_boot=20).decode()
    for system in board.loc[unjudged, "system"]:   # the report's leaderboard: a blank rank
        assert re.search(rf"<tr><td[^>]*></td><td[^>]*>{system}</td>", html), system


def test_an_undefined_correlation_is_n_a_not_0(hand_run, capsys):
    # at tau = 0.5 the hand-made judge always answers A: every win ratio is 0.5, a constant
    # ranking, whose correlation with coherence is undefined (scipy: NaN), not 0
    code, out, err = cli(capsys, "evaluate", "--run", "hand-run", "--method", "win-ratio",
                         "--debias", "none", "--db", hand_run)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("Spearman x100"))
    assert row.split()[-2:] == ["n/a", "n/a"], row
    assert "correlation undefined there (n/a: no context has a defined one)" in out
    code, out, _ = cli(capsys, "evaluate", "--run", "hand-run", "--method", "win-ratio",
                       "--debias", "none", "--json", "--db", hand_run)
    raw = json.loads(out)["raw"]     # JSON: null (NaN is no JSON)
    assert raw["spearman_x100"] is None and raw["kendall_x100"] is None
    assert raw["contexts_constant"] == 3 and raw["contexts_used"] == 0
    ev = api.open_store(hand_run).get_run("hand-run").evaluation("win-ratio", "none")
    assert ev.raw.spearman_x100 != ev.raw.spearman_x100     # NaN in the API
    # at the balanced tau* the same judge ranks by coherence: a defined correlation
    code, out, _ = cli(capsys, "evaluate", "--run", "hand-run", "--method", "win-ratio",
                       "--db", hand_run)
    row = next(line for line in out.splitlines() if line.startswith("Spearman x100"))
    assert row.split()[-1] != "n/a"


# ------------------------------------------------------------- resuming a run with nothing left

def test_resuming_a_finished_run_says_so_and_never_loads_the_judge(db_url, monkeypatch, capsys):
    from compassess_core.runs import executor
    from tests.fakes import FakeLengthJudge
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    loads = []

    def fake_load(settings):   # a FAKE judge: the test is about what is loaded, not the model
        loads.append(settings.aspect)
        return FakeLengthJudge()
    monkeypatch.setattr(executor, "load_run_judge", fake_load)
    one = ["run", str(sample), "--aspect", "coherence", "--contexts", "1", "--run", "r",
           "--db", db_url]
    two = ["run", str(sample), "--aspect", "coherence,fluency", "--contexts", "1", "--run", "g",
           "--db", db_url]
    assert cli(capsys, *one)[0] == 0 and cli(capsys, *two)[0] == 0
    assert len(loads) == 2
    for args in (one, two, ("worker", "--run", "r", "--db", db_url),
                 ("worker", "--run", "g-coherence", "--run", "g-fluency", "--db", db_url)):
        code, out, err = cli(capsys, *args)
        assert code == 0, err
        assert "is complete: nothing left to compute, so the judge is not loaded" in err, err
        assert "done: 20 comparisons in the run (20 already stored, 0 computed" in err, err
        assert "judge:" not in err and "about" not in err   # no judge line, no time estimate
    assert len(loads) == 2
    # the same name with other settings is still refused, not taken for the finished run
    code, _, err = cli(capsys, *one[:-2], "--template", "t2", "--db", db_url)
    assert code == 2 and "already exists" in err


# ------------------------------------------------------------- a new user's bad inputs, plainly

def test_bad_inputs_of_a_new_user_are_exit_2_naming_what_and_where(hand_run, tmp_path, capsys):
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("context_id,text\nx,y\n")
    odd = tmp_path / "chat.csv"   # a dialogue file whose columns are named otherwise
    odd.write_text("dialog,history,resp_id,response\nd1,hi,r1,hello\nd1,hi,r2,hey\n")
    cases = [
        (("leaderboard", "--run", "hand-run", "--bootstrap", "99999999999", "--db", hand_run),
         "--bootstrap: 99,999,999,999 replicates: give 1 to 10,000"),
        (("export", "--run", "hand-run", "--what", "rankings", "--format", "csv", "-o",
          "/sys/rankings.csv", "--db", hand_run), "/sys/rankings.csv: permission denied"),
        (("runs", "--db", str(not_a_db)), "cannot open the database"),
        (("runs", "--db", "postgresql+psycopg://me:s3cret@127.0.0.1:1/none"),
         "cannot open the database"),
        (("run", str(odd), "--aspect", "engagingness", "--db", hand_run),
         "with --map (e.g. --map response=text)"),
    ]
    for args, expected in cases:
        code, out, err = cli(capsys, *args)
        assert code == 2, (args, err)
        assert expected in err, (args, err)
        assert "Traceback" not in err and "COMPASSESS_DEBUG" not in err and "s3cret" not in err
    assert "column_map=" not in err and "--map dialog=context,response=text" in err
    # the API bounds the replicates too (a notebook's huge count fails plainly, not by memory)
    with pytest.raises(api.InputError, match="1..10,000"):
        api.open_store(hand_run).get_run("hand-run").leaderboard(n_boot=10**9)


def test_a_candidate_never_compared_is_unranked_in_the_per_context_rankings(db_url, capsys):
    from tests.fakes import FakeLengthJudge
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    run = api.open_store(db_url).run(sample, aspect="coherence", contexts=1, strategy="random",
                                     budget=2, name="two", judge=FakeLengthJudge(),
                                     progress=False)
    frame = run.rankings()
    never = frame["n_comparisons"] == 0
    assert never.sum() >= 1 and frame.loc[never, "rank"].isna().all()
    assert frame.loc[~never, "rank"].notna().all() and never.iloc[-never.sum():].all()  # last
    # equal records tie, whatever the solver's float noise in their strengths
    judged = frame.loc[~never]
    assert (judged.groupby(judged["score"].round(9))["rank"].nunique() == 1).all()
    code, out, _ = cli(capsys, "rank", "--run", "two", "--format", "csv", "--db", db_url)
    assert code == 0
    read = pd.read_csv(io.StringIO(out))
    assert read.loc[read["n_comparisons"] == 0, "rank"].isna().all()
    code, out, _ = cli(capsys, "rank", "--run", "two", "--format", "json", "--db", db_url)
    rows = json.loads(out)["rankings"]
    assert [r["rank"] for r in rows if not r["n_comparisons"]] == [None] * int(never.sum())
    code, out, _ = cli(capsys, "rank", "--run", "two", "--db", db_url)
    assert code == 0 and "<NA>" not in out



def test_an_unknown_context_of_any_length_is_named_by_its_start_only(db_url, capsys):
    """The walk typed a 100 kB --context: the refusal echoed it whole."""
    seed_run(db_url)[0].close()
    code, _, err = cli(capsys, "rank", "--run", "hand-run", "--context", "x" * 100_000,
                       "--db", db_url)
    assert code == 2 and "100,000 characters" in err and len(err) < 400


# ---------------------------------------------------------------------------------- counts

def test_a_count_of_one_takes_the_singular(db_url, capsys):
    """'1 context', not '1 contexts': the shared counted() and what datasets, evaluate and
    leaderboard print for a dataset of one context."""
    from compassess_core.report_text import counted
    from tests.app.test_app_pages import SAMPLE

    assert [counted(n, "pair") for n in (0, 1, 2, 1200, None, "?")] == [
        "0 pairs", "1 pair", "2 pairs", "1,200 pairs", "? pairs", "? pairs"]
    assert counted(1, "person", "people") == "1 person" and counted(3, "person", "people") == "3 people"
    one = pd.read_csv(SAMPLE)
    one = one[one["context_id"] == one["context_id"].iloc[0]]
    seed_run(db_url, source=one.to_csv(index=False).encode(), name="one_article",
             run="one-run")[0].close()
    code, out, err = cli(capsys, "datasets", "--db", db_url)
    assert code == 0 and "one_article\t1 context\t5 candidates\t" in out, out
    code, out, err = cli(capsys, "evaluate", "--run", "one-run", "--db", db_url)
    assert code == 0 and "comparisons over 1 context;" in out, out
    code, out, err = cli(capsys, "leaderboard", "--run", "one-run", "--db", db_url)
    assert code == 0 and "over 1 context;" in out and "1 contexts" not in out, out


def test_rank_prints_missing_values_blank_and_leaves_out_an_empty_system_column(db_url, capsys):
    """From a walk with SummEval's original JSONL (no system column, a symmetric budget leaving
    most summaries unjudged): `rank` printed a column of None and NaN scores; a missing value
    is blank and a column with nothing in it is left out (CSV and JSON keep every column)."""
    import numpy as np

    from compassess_core.data.candidates import load_candidates
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store
    from tests.app.test_app_pages import SAMPLE, settings_for

    frame = pd.read_csv(SAMPLE).drop(columns=["system"])
    dataset = load_candidates(frame.to_csv(index=False).encode(), name="no_systems",
                              file_label="no_systems.csv")
    store = Store(db_url)
    run_id = store.create_run("partial", store.save_dataset(dataset),
                              settings_for(dataset.name).to_dict())
    ctx = dataset.contexts[0]
    left_out = ctx.candidates[-1].candidate_id
    results = [ComparisonResult(PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                                Judgement(0.7, float(np.log(0.42)), float(np.log(0.18)), 0.6),
                                f"h-{x.candidate_id}-{y.candidate_id}")
               for x in ctx.candidates for y in ctx.candidates
               if x is not y and left_out not in (x.candidate_id, y.candidate_id)]
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    code, out, err = cli(capsys, "rank", "--run", "partial", "--db", db_url)
    assert code == 0, err
    assert "None" not in out and "NaN" not in out and " system " not in out.splitlines()[1], out
    [row] = [line for line in out.splitlines() if f" {left_out} " in line]
    assert row.split()[:2] == [ctx.context_id, left_out], row   # blank rank and score
    code, out, err = cli(capsys, "rank", "--run", "partial", "--format", "csv", "--db", db_url)
    assert "system" in out.splitlines()[0]


def test_a_notebook_reads_rankings_and_exports_at_the_defaults_of_the_commands():
    """``Run.rankings()``, ``export()`` and ``evaluation()`` with no options read as ``compassess
    rank``, ``export`` and ``evaluate`` do (Bradley-Terry at the balanced tau*), and a panel,
    whose p are its members' debiased verdicts, at 0.5."""
    import inspect

    from compassess_core.cli.parser import parse_args

    for command, method in (("rank", api.Verdicts.rankings), ("export", api.Verdicts.export),
                            ("evaluate", api.Verdicts.evaluation)):
        argv = [command, "--run", "r"] + (["--what", "rankings", "--format", "csv", "-o", "x.csv"]
                                          if command == "export" else [])
        args = parse_args(argv)
        params = inspect.signature(method).parameters
        assert params["method"].default == args.method, command
        debias = params["debias"].default
        assert (debias if debias is not None else api.Verdicts.default_debias) == args.debias
    assert api.Verdicts.default_debias == "balanced" and api.Panel.default_debias == "none"
