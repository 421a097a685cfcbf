"""Bounded inputs: ids, names and aspects are checked where they enter (with file, row and column,
never a database error), a numeric-looking score column with a word in it is an error, uploads
have a configurable limit, run names cannot pass for options, and no message shows a database
password.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core import limits
from compassess_core.cli import main
from compassess_core.data.candidates import (MOSTLY_TEXT, ignored_columns, load_candidates,
                                             read_table)
from compassess_core.errors import InputError, TemplateError, ValidationError
from compassess_core.data.labels import load_human_labels
from compassess_core.runs.prompts import Aspect
from db.connection import make_engine, redact_url
from tests.app.test_app_pages import APP, app_env, texts  # noqa: F401 - app_env is a fixture

ROOT = Path(__file__).resolve().parents[2]
HEADER = "context_id,context,candidate_id,text,system,coherence\n"


def problems(body: str, **kw) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(ValidationError) as e:
        load_candidates(body.encode(), file_label="f.csv", **kw)
    return [(p.row, p.column, p.message) for p in e.value.problems]


# ------------------------------------------------------------------------------ ids

def test_ids_too_long_or_with_control_characters_name_row_and_column():
    long_id = "x" * (limits.MAX_ID_CHARS + 1)
    body = (HEADER + f"d1,ctx,{long_id},t1,s,1\n" + "d1,ctx,b,t2,s,2\n"
            + 'd1,ctx,"with\nnewline",t3,s,3\n' + "d1,ctx,c\x07bell,t4,sys\x1b,4\n")
    found = problems(body)
    assert (2, "candidate_id", f"candidate_id is {limits.MAX_ID_CHARS + 1:,} characters long; at "
            f"most {limits.MAX_ID_CHARS} are allowed") in found
    assert any(r == 4 and c == "candidate_id" and "U+000A" in m for r, c, m in found)
    assert any(r == 5 and c == "candidate_id" and "U+0007" in m for r, c, m in found)
    assert any(r == 5 and c == "system" and "U+001B" in m for r, c, m in found)


def test_ids_with_bidirectional_marks_and_markup_are_kept_exactly():
    odd = ["a\u202eexe.txt", "![x](http://127.0.0.2/x.png)", "<b>b</b>", "`tick`"]
    body = HEADER + "".join(f'd1,ctx,"{cid}",text {k},s,{k}\n' for k, cid in enumerate(odd))
    dataset = load_candidates(body.encode(), file_label="f.csv")
    assert dataset.contexts[0].candidate_ids == odd


def test_a_numeric_looking_score_column_with_a_word_is_an_error_not_dropped():
    # Half numbers, half words: formerly not a score column at all, so "good" vanished silently.
    body = HEADER + "d1,ctx,a,t1,s,4\n" + "d1,ctx,b,t2,s,good\n"
    assert any(p[:2] == (3, "coherence") and p[2].startswith("reference score 'good' is not a number")
               for p in problems(body))
    # A column named like a score is one as soon as it holds a number.
    body = ("context_id,context,candidate_id,text,human_score\n"
            "d1,ctx,a,t1,5\n" "d1,ctx,b,t2,fine\n" "d1,ctx,c,t3,ok\n")
    assert any(p[:2] == (3, "human_score")
               and p[2].startswith("reference score 'fine' is not a number") for p in problems(body))
    # A text column stays metadata, and the upload page can say it is not used.
    body = ("context_id,context,candidate_id,text,fact\n"
            "d1,ctx,a,t1,The sky is blue\n" "d1,ctx,b,t2,3 cats\n" "d1,ctx,c,t3,no\n")
    dataset = load_candidates(body.encode(), file_label="f.csv")
    assert dataset.score_columns == ()
    assert ignored_columns(read_table(body.encode(), file_label="f.csv")) == {"fact": MOSTLY_TEXT}


def test_label_files_check_annotator_names(tiny_dataset):
    body = ("context_id,candidate_a,candidate_b,winner,annotator\n"
            'doc1,c1,c2,c1,"two\nlines"\n' f"doc1,c1,c3,c1,{'a' * 300}\n")
    with pytest.raises(ValidationError) as e:
        load_human_labels(body.encode(), tiny_dataset, file_label="l.csv")
    found = [(p.row, p.column) for p in e.value.problems]
    assert found == [(2, "annotator"), (3, "annotator")]  # rows as a spreadsheet numbers them


# ------------------------------------------------------------------------------ names

@pytest.mark.parametrize("name,why", [
    ("-rf", "must not start with '-'"), ("--db=x", "must not start with '-'"),
    ("a" * (limits.MAX_NAME_CHARS + 1), "at most"), ("tab\there", "U+0009"),
    ("spoof\u202etxt.exe", "U+202E"), (" padded", "spaces"), ("", "must not be empty"),
])
def test_run_names_are_bounded_printable_and_not_option_like(store, tiny_dataset, name, why):
    dataset_id = store.save_dataset(tiny_dataset)
    with pytest.raises(InputError, match=re.escape(why)):
        store.create_run(name, dataset_id, {"model": "m"})
    assert store.list_runs() == []


def test_cli_refuses_an_option_like_run_name(tmp_path, tiny_dataset, store):
    data = tmp_path / "tiny.csv"
    data.write_text(HEADER.replace(",system,coherence", "") + "".join(
        f"{c.context_id},{c.text},{k.candidate_id},{k.text}\n"
        for c in tiny_dataset.contexts for k in c.candidates))
    assert main(["run", str(data), "--aspect", "coherence", "--run=-oops", "--db", store.url]) == 2
    assert store.list_runs() == []


def test_dataset_names_and_aspects_are_bounded(store, tiny_dataset):
    from dataclasses import replace
    with pytest.raises(InputError, match="must not start with '-'"):
        store.save_dataset(replace(tiny_dataset, name="-x"))
    with pytest.raises(TemplateError, match="at most"):
        Aspect.from_name("x" * (limits.MAX_ASPECT_CHARS + 1))
    with pytest.raises(TemplateError, match=re.escape("U+000A")):
        Aspect.from_name("factual\naccuracy")
    assert Aspect.from_name("- terse, to the point").name == "- terse, to the point"


def test_the_worker_command_line_holds_neither_name_nor_database_url(store, tiny_dataset,
                                                                     tmp_path):
    from compassess_core.api.background import start_worker

    dataset_id = store.save_dataset(tiny_dataset)
    run_id = store.create_run("name-with-dashes--and spaces", dataset_id, {"model": "m"})
    proc = start_worker(run_id, "postgresql+psycopg://u:s3cret@127.0.0.1:9/x", tmp_path / "w.log")
    proc.wait(timeout=60)
    assert proc.args[-2:] == ["run", f"--id={run_id}"]
    assert not any("s3cret" in a or "dashes" in a for a in proc.args)
    assert "s3cret" not in (tmp_path / "w.log").read_text()


# ------------------------------------------------------------------------------ database URLs

def test_no_message_shows_a_database_password():
    assert redact_url("postgresql+psycopg://bob:p%40ss@host/db") == \
        "postgresql+psycopg://bob:***@host/db"
    assert redact_url("x postgresql://bob:hunter2@h/db y") == "x postgresql://bob:***@h/db y"
    for url in ("postgres+nodriver://bob:hunter2@host/db", "nonsense://bob:hunter2@host/db"):
        with pytest.raises(InputError) as e:
            make_engine(url)
        assert "hunter2" not in str(e.value) and "bob:***@" in str(e.value)


# ------------------------------------------------------------------------------ uploads

def test_upload_limit_is_configurable(monkeypatch):
    assert limits.max_upload_mb() == limits.DEFAULT_MAX_UPLOAD_MB
    monkeypatch.setenv(limits.MAX_UPLOAD_ENV, "3")
    assert limits.max_upload_bytes() == 3 * 1024 * 1024
    monkeypatch.setenv(limits.MAX_UPLOAD_ENV, "lots")
    with pytest.raises(InputError, match="whole number of megabytes"):
        limits.max_upload_mb()


def test_upload_page_refuses_a_file_over_the_limit(app_env, monkeypatch):
    monkeypatch.setenv(limits.MAX_UPLOAD_ENV, "1")
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/upload.py").run()
    big = (HEADER + "d1,ctx,a,t,s,1\n" * 80_000).encode()  # about 1.3 MB
    assert len(big) > 1024 * 1024
    at.file_uploader[0].upload("big.csv", big, "text/csv").run()
    assert not at.exception, at.exception
    assert "problem(s) found in `big.csv`" in texts(at.error)
    assert "larger than the 1.0 MiB limit" in " ".join(at.dataframe[-1].value["problem"])
    assert not [b for b in at.button if b.label == "Save to the store"]


def test_the_server_applies_the_upload_limit_and_refuses_to_serve_beyond_loopback():
    env = dict(os.environ, PYTHONPATH=str(ROOT), COMPASSESS_MAX_UPLOAD_MB="7")
    env.pop("COMPASSESS_ALLOW_ANONYMOUS", None)
    streamlit_run = "config._server_mode = 'starlette-app'\n"  # as `streamlit run` leaves it
    code = ("from streamlit import config\n" + streamlit_run + "import app\n"
            "print(config.get_option('server.maxUploadSize'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "7"
    # The same import with every interface and no sign-in: refused, with the reason.
    code = ("from streamlit import config\n" + streamlit_run +
            "config.set_option('server.address', '0.0.0.0')\n"
            "import app\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "refusing to serve CompAssess on 0.0.0.0 without sign-in" in out.stderr
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                         env=dict(env, COMPASSESS_ALLOW_ANONYMOUS="1"), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # Served by another ASGI server (uvicorn app:app --host ...), the address is unknown: refused.
    out = subprocess.run([sys.executable, "-c", "import app"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "server.address is not set" in out.stderr
