"""A candidate file whose columns are named otherwise, on the command line: ``--map`` on run,
score and tune (the Upload page's column mapping and ``column_map`` in Python), the hint a
missing column gives there, and ``--db`` named before the command as well as after it.

The judge runs only in the last test (the real bundled SmolLM2, two comparisons); the others stop
before a judge is loaded.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.data.candidates import load_candidates
from compassess_core.errors import InputError

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
#: The sample's columns as another project names them: file column -> ours.
RENAMED = {"doc": "context_id", "article": "context", "summary_id": "candidate_id",
           "model": "system", "summary": "text"}
MAP = ",".join(f"{theirs}={ours}" for theirs, ours in RENAMED.items())


@pytest.fixture
def renamed(tmp_path: Path) -> Path:
    """The sample with its columns renamed (the reference scores keep their names)."""
    path = tmp_path / "renamed.csv"
    pd.read_csv(SAMPLE, dtype=str, keep_default_na=False).rename(
        columns={ours: theirs for theirs, ours in RENAMED.items()}).to_csv(path, index=False)
    return path


def test_read_data_maps_a_file_as_the_sample_and_refuses_a_map_for_a_stored_dataset(
        renamed, db_url):
    store = api.open_store(db_url)
    mapped, stored_id = store.read_data(renamed, column_map={v: k for k, v in RENAMED.items()})
    sample = load_candidates(SAMPLE)
    assert stored_id is None
    assert [(c.context_id, c.text, [(x.candidate_id, x.system, x.text) for x in c.candidates])
            for c in mapped.contexts] == \
        [(c.context_id, c.text, [(x.candidate_id, x.system, x.text) for x in c.candidates])
         for c in sample.contexts]
    assert mapped.score_columns == sample.score_columns
    store.add_dataset(SAMPLE)
    for stored in ("sample_summeval", 1, sample):
        with pytest.raises(InputError, match="a column map applies to candidates read from a file"):
            store.read_data(stored, column_map={"text": "summary"})
    with pytest.raises(InputError, match="'no_such.csv' is neither a file nor a stored dataset"):
        store.read_data("no_such.csv", column_map={"text": "summary"})


def test_a_missing_column_names_the_file_and_column_and_the_flag_that_maps_it(
        renamed, db_url, capsys):
    for command in ("run", "score", "tune"):
        assert main([command, str(renamed), "--aspect", "coherence", "--db", db_url]) == 2
        err = capsys.readouterr().err
        assert "renamed.csv, column 'text': missing required column 'text'" in err, command
        assert "Map the file's columns with --map FILE_COLUMN=OUR_COLUMN" in err, command
    # A problem the map does not cause gets no hint about it.
    empty = renamed.with_name("empty_text.csv")
    pd.read_csv(SAMPLE, dtype=str, keep_default_na=False).assign(text="").to_csv(empty,
                                                                                   index=False)
    assert main(["run", str(empty), "--aspect", "coherence", "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "empty_text.csv, row 2, column 'text': empty text" in err and "--map" not in err
    # A map of a column the file lacks, and a malformed map, are refused before anything runs.
    assert main(["run", str(renamed), "--aspect", "coherence", "--db", db_url,
                 "--map", MAP.replace("article=context", "nope=context")]) == 2
    assert "the column map maps 'context' to 'nope', but the file has no column 'nope'" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main(["run", str(renamed), "--aspect", "coherence", "--map", "summary"])
    assert bad.value.code == 2
    assert "'summary' is not FILE_COLUMN=OUR_COLUMN" in capsys.readouterr().err
    assert not api.open_store(db_url).datasets().shape[0]   # nothing was stored


def test_db_before_the_command_is_the_commands_db(db_url, capsys):
    api.open_store(db_url).add_dataset(SAMPLE)
    assert main(["--db", db_url, "datasets"]) == 0
    before = capsys.readouterr().out
    assert main(["datasets", "--db", db_url]) == 0
    assert capsys.readouterr().out == before and "sample_summeval" in before
    assert main(["--db", db_url, "datasets", "--db", db_url]) == 0   # the same store twice
    capsys.readouterr()
    with pytest.raises(SystemExit) as two:
        main(["--db", db_url, "datasets", "--db", db_url + ".other"])
    assert two.value.code == 2
    assert "--db names two stores" in capsys.readouterr().err


@pytest.mark.model
def test_run_a_renamed_file_with_the_map_on_the_bundled_judge(renamed, db_url, bundled_model,
                                                              capsys):
    assert main(["--db", db_url, "run", str(renamed), "--map", MAP, "--aspect", "coherence",
                 "--contexts", "1", "--strategy", "random", "--budget", "2",
                 "--run", "mapped"]) == 0
    assert capsys.readouterr().out.strip() == "mapped"
    store = api.open_store(db_url)
    run = store.get_run("mapped")
    assert run.status == "completed" and run.info.done == 2
    frame = run.comparisons()
    assert set(frame["context_id"]) == {"A0"}
    assert set(frame["a_id"]) | set(frame["b_id"]) <= {
        x.candidate_id for x in load_candidates(SAMPLE).contexts[0].candidates}
