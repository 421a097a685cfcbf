"""Tests of compassess_core.data.candidates: every validation rule with its exact row and column."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from compassess_core.data.candidates import (load_candidates, read_table, suggest_column_map,
                                  validate_frame)
from compassess_core.errors import InputError, Problem, ValidationError

ASSETS = Path(__file__).resolve().parents[2] / "assets"
ASSETS = Path(__file__).resolve().parents[2] / "assets"

GOOD = (
    "context_id,context,candidate_id,system,text,coherence\n"
    "A0,Article zero.,S0,M1,First summary.,1.5\n"
    "A0,Article zero.,S1,M2,Second summary.,4\n"
    "A1,Article one.,S0,M1,Third summary.,2.25\n"
    "A1,Article one.,S1,,Fourth summary.,3\n"
)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def problems_of(source, **kwargs) -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_candidates(source, **kwargs)
    assert isinstance(info.value, InputError)
    return info.value.problems


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


# --- a good file -------------------------------------------------------------------------------


def test_good_csv_loads_in_file_order(tmp_path):
    ds = load_candidates(write(tmp_path, "tiny.csv", GOOD))
    assert ds.name == "tiny"
    assert ds.source == "tiny.csv"
    assert [c.context_id for c in ds.contexts] == ["A0", "A1"]
    assert ds.contexts[0].text == "Article zero."
    assert ds.contexts[1].candidate_ids == ["S0", "S1"]
    assert ds.score_columns == ("coherence",)
    first, last = ds.contexts[0].candidates[0], ds.contexts[1].candidates[1]
    assert (first.text, first.system, first.scores, first.row) == (
        "First summary.", "M1", {"coherence": 1.5}, 2)
    assert (last.system, last.scores, last.row) == (None, {"coherence": 3.0}, 5)
    assert isinstance(last.scores["coherence"], float)
    assert len(ds.content_hash) == 64


def test_interleaved_contexts_keep_first_appearance_order(tmp_path):
    csv = ("context_id,context,candidate_id,text\n"
           "B,b,x1,t\nA,a,y1,t\nB,b,x2,t\nA,a,y2,t\n")
    ds = load_candidates(write(tmp_path, "i.csv", csv))
    assert [c.context_id for c in ds.contexts] == ["B", "A"]
    assert [k.row for k in ds.contexts[0].candidates] == [2, 4]
    assert ds.score_columns == ()


def test_name_and_file_label_override(tmp_path):
    ds = load_candidates(GOOD.encode(), name="mine", file_label="upload.csv")
    assert (ds.name, ds.source) == ("mine", "upload.csv")


def test_ids_are_stripped_text_kept_verbatim(tmp_path):
    csv = ("context_id,context,candidate_id,text\n"
           " A0 ,ctx, S0,  spaced text \nA0,ctx,S1,t\n")
    ds = load_candidates(write(tmp_path, "s.csv", csv))
    cand = ds.contexts[0].candidates[0]
    assert (ds.contexts[0].context_id, cand.candidate_id, cand.text) == ("A0", "S0", "  spaced text ")


# --- one test per validation rule ----------------------------------------------------------------


def test_missing_column_names_it_lists_columns_and_hints_map(tmp_path):
    csv = "context_id,context,candidate_id,summary\nA0,c,S0,t\nA0,c,S1,t\n"
    p = only(problems_of(write(tmp_path, "m.csv", csv)))
    assert (p.row, p.column) == (None, "text")
    assert "missing required column 'text'" in p.message
    assert "'context_id', 'context', 'candidate_id', 'summary'" in p.message
    assert "map one to it (the likeliest is 'summary')" in p.message
    assert "column_map" not in p.message   # no one interface's syntax: the app shows it too


def test_column_map_resolves_other_names(tmp_path):
    csv = "doc,article,sid,summary,model\nA0,c,S0,t0,M\nA0,c,S1,t1,N\n"
    path = write(tmp_path, "m.csv", csv)
    ds = load_candidates(path, column_map={"context_id": "doc", "context": "article",
                                           "candidate_id": "sid", "text": "summary",
                                           "system": "model"})
    assert ds.contexts[0].context_id == "A0"
    assert [(c.candidate_id, c.text, c.system) for c in ds.contexts[0].candidates] == [
        ("S0", "t0", "M"), ("S1", "t1", "N")]


def test_column_map_to_absent_column_is_a_problem(tmp_path):
    csv = "context_id,context,candidate_id,summary\nA0,c,S0,t\nA0,c,S1,t\n"
    p = only(problems_of(write(tmp_path, "m.csv", csv), column_map={"text": "answer"}))
    assert p.column == "text"
    assert "maps 'text' to 'answer', but the file has no column 'answer'" in p.message


def test_headers_match_ignoring_case_and_spaces(tmp_path):
    csv = "Context ID,CONTEXT,candidate-id, Text \nA0,c,S0,t\nA0,c,S1,u\n"
    ds = load_candidates(write(tmp_path, "h.csv", csv))
    assert ds.contexts[0].candidate_ids == ["S0", "S1"]


@pytest.mark.parametrize("column, row_text, message", [
    ("text", "A0,ctx,S1,   ", "empty text"),
    ("context", "A0,  ,S1,t", "empty context"),
    ("candidate_id", "A0,ctx, ,t", "empty candidate_id"),
])
def test_empty_or_whitespace_values(tmp_path, column, row_text, message):
    csv = f"context_id,context,candidate_id,text\nA0,ctx,S0,t\n{row_text}\nA0,ctx,S2,t\n"
    p = only(problems_of(write(tmp_path, "e.csv", csv)))
    assert (p.row, p.column) == (3, column)
    assert message in p.message


def test_empty_context_id(tmp_path):
    csv = "context_id,context,candidate_id,text\nA0,ctx,S0,t\n,ctx,S1,t\nA0,ctx,S2,t\n"
    p = only(problems_of(write(tmp_path, "e.csv", csv)))
    assert (p.row, p.column) == (3, "context_id")


def test_duplicate_candidate_names_both_rows(tmp_path):
    csv = "context_id,context,candidate_id,text\nA0,c,S0,t\nA0,c,S1,u\nA0,c,S0,v\n"
    p = only(problems_of(write(tmp_path, "d.csv", csv)))
    assert (p.row, p.column) == (4, "candidate_id")
    assert "candidate_id 'S0' in context 'A0' is already on row 2" in p.message


def test_context_text_disagreement_names_rows(tmp_path):
    csv = ("context_id,context,candidate_id,text\n"
           "A0,same,S0,t\nA0,same,S1,t\nA0,other,S2,t\nA0,same ,S3,t\n")
    p = only(problems_of(write(tmp_path, "c.csv", csv)))
    assert (p.row, p.column) == (4, "context")
    assert "rows 2, 3, 5 agree" in p.message and "rows 4 differ" in p.message


def test_context_with_one_candidate(tmp_path):
    csv = "context_id,context,candidate_id,text\nA0,c,S0,t\nA0,c,S1,t\nA1,d,S0,t\n"
    p = only(problems_of(write(tmp_path, "one.csv", csv)))
    assert (p.row, p.column) == (4, "context_id")
    assert "context 'A1' has only 1 distinct candidate" in p.message


def test_bad_score_cells_in_detected_score_column(tmp_path):
    csv = ("context_id,context,candidate_id,text,coherence,fact\n"
           "A0,c,S0,t,1,some fact\n"
           "A0,c,S1,t,abc,another\n"
           "A0,c,S2,t,nan,3\n"
           "A0,c,S3,t,inf,\n"
           "A0,c,S4,t,,x\n"
           "A0,c,S5,t,2.5,y\n")
    probs = problems_of(write(tmp_path, "s.csv", csv))
    # a word is a problem; nan and an empty cell are missing scores; inf is not a score
    assert [(p.row, p.column) for p in probs] == [(3, "coherence"), (5, "coherence")]
    assert "'abc' is not a number" in probs[0].message and "n/a" in probs[0].message
    assert "'inf' is not a finite number" in probs[1].message


def test_missing_value_markers_in_a_score_column_are_missing_scores(tmp_path):
    from compassess_core.data.candidates import missing_scores
    markers = ["n/a", "NA", "", "-", " N/A ", "null", "--", "NaN", "#N/A", "?"]
    rows = "".join(f"A{k // 5},c{k // 5},S{k},t,{m},{k}\n" for k, m in enumerate(markers))
    csv = "context_id,context,candidate_id,text,coherence,fluency\n" + rows \
        + "A2,c2,S10,t,4,1\nA2,c2,S11,t,5,2\n"
    ds = load_candidates(write(tmp_path, "m.csv", csv))
    assert ds.score_columns == ("coherence", "fluency")
    got = [c.scores["coherence"] for ctx in ds.contexts for c in ctx.candidates]
    assert np.isnan(got[:10]).all() and got[10:] == [4.0, 5.0]
    assert missing_scores(ds) == {"coherence": 10}
    # the same content in another spelling of "missing" is the same dataset
    other = load_candidates(write(tmp_path, "o.csv", csv.replace("n/a", "NA").replace(",?,", ",,")))
    assert other.content_hash == ds.content_hash


def test_mostly_text_column_is_metadata_not_scores(tmp_path):
    csv = ("context_id,context,candidate_id,text,fact,doc_id,score\n"
           "A0,c,S0,t,a fact,17,1\nA0,c,S1,t,4,18,2\nA0,c,S2,t,other fact,19,3\n")
    ds = load_candidates(write(tmp_path, "f.csv", csv))
    assert ds.score_columns == ("score",)
    assert ds.contexts[0].candidates[2].scores == {"score": 3.0}


def test_explicit_score_columns(tmp_path):
    csv = ("context_id,context,candidate_id,text,a,b\n"
           "A0,c,S0,t,1,x\nA0,c,S1,t,2,y\n")
    path = write(tmp_path, "e.csv", csv)
    assert load_candidates(path, score_columns=[]).score_columns == ()
    probs = problems_of(path, score_columns=["b"])
    assert [(p.row, p.column) for p in probs] == [(2, "b"), (3, "b")]
    p = only(problems_of(path, score_columns=["zzz"]))
    assert p.column == "zzz" and "not in the file" in p.message


def test_non_utf8_byte_gives_offset_and_row(tmp_path):
    head = b"context_id,context,candidate_id,text\n"
    body = b'A0,"two\nlines",S0,ok\nA0,"two\nlines",S1,caf\xe9\n'
    probs = problems_of(write(tmp_path, "l.csv", head + body))
    p = only(probs)
    offset = len(head + body) - 2
    # The bad byte is on physical line 5 but in the third record, i.e. spreadsheet row 3.
    assert p.row == 3
    assert f"byte 0xE9 at byte offset {offset} (line 5)" in p.message


def test_utf8_bom_is_accepted(tmp_path):
    ds = load_candidates(write(tmp_path, "bom.csv", b"\xef\xbb\xbf" + GOOD.encode()))
    assert ds.contexts[0].context_id == "A0"
    assert ds.content_hash == load_candidates(GOOD.encode(), file_label="x.csv").content_hash


@pytest.mark.parametrize("content, words", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG image"),
    (b"\x00\x01\x02binary\x00stuff", "NUL byte at byte offset 0"),
    (b"<!DOCTYPE html>\n<html><body>Sign in</body></html>", "HTML"),
    (b"%PDF-1.7\n", "PDF"),
    (b"\xff\xfec\x00o\x00", "UTF-16"),
])
def test_not_a_csv_is_refused(tmp_path, content, words):
    p = only(problems_of(write(tmp_path, "x.csv", content)))
    assert p.row is None and words in p.message


def test_zip_and_xlsx_are_refused(tmp_path):
    xlsx = tmp_path / "book.xlsx"
    with zipfile.ZipFile(xlsx, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    p = only(problems_of(xlsx.read_bytes(), file_label="book.csv"))
    assert "Excel .xlsx workbook" in p.message
    plain = tmp_path / "data.zip"
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("data.csv", GOOD)
    assert "zip archive" in only(problems_of(plain)).message


def test_ragged_row_is_named(tmp_path):
    csv = ("context_id,context,candidate_id,text\n"
           "A0,c,S0,t\nA0,c,S1,t,extra\nA0,c,S2,t\n")
    p = only(problems_of(write(tmp_path, "r.csv", csv)))
    assert p.row == 3 and "5 field(s) but the header has 4" in p.message


@pytest.mark.parametrize("content, words", [
    ("", "empty"), ("  \n\n", "empty"),
    ("context_id,context,candidate_id,text\n", "header but no data rows"),
])
def test_empty_and_header_only(tmp_path, content, words):
    p = only(problems_of(write(tmp_path, "e.csv", content)))
    assert p.row is None and words in p.message


def test_multi_problem_file_reports_every_problem_in_row_order(tmp_path):
    csv = ("context_id,context,candidate_id,text,coherence\n"
           "A0,c,S0,,1\n"          # row 2: empty text
           "A0,c,S0,t,2\n"         # row 3: duplicate of row 2
           "A0,c,S1,t,x\n"         # row 4: bad score
           "A1,d,S0,t,1\n")        # row 5: lone candidate
    probs = problems_of(write(tmp_path, "multi.csv", csv))
    assert [(p.row, p.column) for p in probs] == [
        (2, "text"), (3, "candidate_id"), (4, "coherence"), (5, "context_id")]
    assert str(probs[0]) == "multi.csv, row 2, column 'text': empty text (a text is required on every row)"


# --- size limit --------------------------------------------------------------------------------


def test_two_gigabyte_file_is_refused_without_reading(tmp_path):
    big = tmp_path / "huge.csv"
    with open(big, "wb") as f:
        f.truncate(2 * 1024**3)  # sparse: takes no disk, but reading it would take 2 GB of RAM
    before = _bytes_read()
    p = only(problems_of(big))
    assert "2.0 GiB, larger than the 512.0 MiB limit" in p.message
    with open(big, "rb") as f:
        assert "2.0 GiB" in only(problems_of(f)).message
        assert f.tell() == 0
    # What this process read meanwhile (any file): not the 2 GiB, nor the limit's 512 MiB of it.
    # Counted in bytes, not seconds, so a loaded machine cannot fail it.
    read = _bytes_read() - before
    assert read < 16 * 2**20, f"{read} bytes read"


def _bytes_read() -> int:
    """Bytes this process has read so far (Linux's ``rchar``: every read call, cached or not)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("/proc/self/io has no rchar line")


def test_max_bytes_is_configurable(tmp_path):
    path = write(tmp_path, "tiny.csv", GOOD)
    p = only(problems_of(path, max_bytes=100))
    assert f"{len(GOOD)} bytes, larger than the 100 bytes limit" in p.message


def test_unseekable_stream_reads_only_past_the_limit():
    class Stream(io.RawIOBase):
        def __init__(self):
            self.given = 0

        def readable(self):
            return True

        def seekable(self):
            return False

        def tell(self):
            raise OSError("unseekable")

        def read(self, n=-1):
            assert n != -1, "must not read without a bound"
            self.given += n
            return b"a" * n

    stream = Stream()
    assert "stream is larger" in only(problems_of(stream, max_bytes=1000)).message
    assert stream.given == 1001


# --- formats -----------------------------------------------------------------------------------


def jsonl_of(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


GOOD_ROWS = [
    {"text": "First summary.", "candidate_id": "S0", "coherence": 1.5, "context_id": "A0",
     "system": "M1", "context": "Article zero."},
    {"text": "Second summary.", "candidate_id": "S1", "coherence": 4, "context_id": "A0",
     "system": "M2", "context": "Article zero."},
    {"text": "Third summary.", "candidate_id": "S0", "coherence": 2.25, "context_id": "A1",
     "system": "M1", "context": "Article one."},
    {"text": "Fourth summary.", "candidate_id": "S1", "coherence": 3, "context_id": "A1",
     "system": None, "context": "Article one."},
]


def test_content_hash_is_the_same_for_csv_and_jsonl(tmp_path):
    from_csv = load_candidates(write(tmp_path, "tiny.csv", GOOD))
    from_jsonl = load_candidates(write(tmp_path, "tiny.jsonl", jsonl_of(GOOD_ROWS)))
    from_bytes = load_candidates(jsonl_of(GOOD_ROWS).encode())  # sniffed
    assert [k.row for c in from_jsonl.contexts for k in c.candidates] == [1, 2, 3, 4]  # lines
    assert [k.scores for c in from_jsonl.contexts for k in c.candidates] == [
        k.scores for c in from_csv.contexts for k in c.candidates]
    assert from_csv.content_hash == from_jsonl.content_hash == from_bytes.content_hash
    changed = GOOD.replace("2.25", "2.5")
    assert load_candidates(changed.encode(), file_label="t.csv").content_hash != from_csv.content_hash


def test_content_hash_ignores_column_order(tmp_path):
    reordered = ("text,coherence,system,candidate_id,context,context_id\n"
                 "First summary.,1.5,M1,S0,Article zero.,A0\n"
                 "Second summary.,4,M2,S1,Article zero.,A0\n"
                 "Third summary.,2.25,M1,S0,Article one.,A1\n"
                 "Fourth summary.,3,,S1,Article one.,A1\n")
    a = load_candidates(write(tmp_path, "a.csv", GOOD))
    b = load_candidates(write(tmp_path, "b.csv", reordered))
    assert a.content_hash == b.content_hash


def test_json_array_is_accepted(tmp_path):
    ds = load_candidates(write(tmp_path, "t.json", json.dumps(GOOD_ROWS)))
    assert ds.n_candidates == 4


def test_jsonl_problems_use_line_numbers(tmp_path):
    lines = [json.dumps(GOOD_ROWS[0]), "", "[1, 2]", "{not json", json.dumps(GOOD_ROWS[1]),
             json.dumps({**GOOD_ROWS[1], "candidate_id": "S2", "text": " "})]
    probs = problems_of(write(tmp_path, "t.jsonl", "\n".join(lines) + "\n"))
    assert [(p.row, p.column) for p in probs] == [(3, None), (4, None), (6, "text")]
    assert "JSON list, not an object" in probs[0].message
    assert "not valid JSON" in probs[1].message


def test_tab_separated_text_named_csv_is_read(tmp_path):
    tsv = GOOD.replace(",", "\t")
    assert load_candidates(write(tmp_path, "t.csv", tsv)).n_candidates == 4


def test_read_table_gives_strings_and_source_rows(tmp_path):
    df = read_table(write(tmp_path, "t.csv", GOOD.replace("A1,Article one.,S0", "\nA1,Article one.,S0")))
    assert list(df.columns) == ["context_id", "context", "candidate_id", "system", "text", "coherence"]
    assert list(df.index) == [2, 3, 5, 6]  # the blank row 4 is skipped but still counted
    assert df.loc[3, "coherence"] == "4" and df.loc[6, "system"] == ""
    with pytest.raises(ValidationError):
        read_table(b"a,b\n1,2,3\n", "r.csv")


def test_validate_frame_collects_without_raising(tmp_path):
    df = read_table(write(tmp_path, "t.csv", GOOD))
    ds, probs = validate_frame(df, file_label="t.csv")
    assert probs == [] and ds is not None and ds.n_candidates == 4
    ds, probs = validate_frame(df.drop(columns=["text"]), file_label="t.csv")
    assert ds is None and [p.column for p in probs] == ["text"]


def test_suggest_column_map():
    assert suggest_column_map(["doc_id", "Source", "summary_id", "Summary", "model", "fact"]) == {
        "context_id": "doc_id", "context": "Source",
        "candidate_id": "summary_id", "text": "Summary", "system": "model"}
    assert suggest_column_map(["id", "dialogue", "response_id", "response"]) == {
        "context_id": "id", "context": "dialogue", "candidate_id": "response_id", "text": "response"}
    # A canonically named column is never displaced by a synonym.
    assert suggest_column_map(["text", "summary", "context_id", "ID"]) == {
        "text": "text", "context_id": "context_id"}
    assert suggest_column_map(["x", "y"]) == {}


# --- shipped and shared data -------------------------------------------------------------------


def test_bundled_sample_loads():
    ds = load_candidates(ASSETS / "sample_summeval.csv")
    assert [c.context_id for c in ds.contexts] == ["A0", "A1", "A2"]
    assert {len(c.candidates) for c in ds.contexts} == {5}
    assert ds.score_columns == ("coherence", "consistency", "fluency", "relevance")
    for ctx in ds.contexts:
        coherence = [k.scores["coherence"] for k in ctx.candidates]
        assert len(set(coherence)) == 5  # spread out: no two summaries share a coherence score
        assert all(k.system for k in ctx.candidates)


@pytest.mark.parametrize("name, n_contexts, per_context, scores", [
    ("sample_summeval.csv", 3, 5, ("coherence", "consistency", "fluency", "relevance")),
    ("sample_mtbench.csv", 12, 2, ()),
])
def test_the_bundled_samples_load(name, n_contexts, per_context, scores):
    ds = load_candidates(ASSETS / name)
    assert len(ds.contexts) == n_contexts
    assert {len(c.candidates) for c in ds.contexts} == {per_context}
    assert ds.score_columns == scores
    assert all(k.text.strip() for c in ds.contexts for k in c.candidates)


def test_unclosed_quote_is_named_not_swallowed(tmp_path):
    csv = 'context_id,context,candidate_id,text\nA0,c,S0,"open\nA0,c,S1,t\nA0,c,S2,t\n'
    p = only(problems_of(write(tmp_path, "q.csv", csv)))
    assert p.row == 2 and "never closed" in p.message
    literal = 'context_id,context,candidate_id,text\nA0,c,S0,a 5" screen\nA0,c,S1,t\n'
    ds = load_candidates(write(tmp_path, "lit.csv", literal))
    assert ds.contexts[0].candidates[0].text == 'a 5" screen'


def test_repeated_header_name(tmp_path):
    csv = "context_id,text,context,candidate_id,text\nA0,a,c,S0,t\nA0,a,c,S1,t\n"
    p = only(problems_of(write(tmp_path, "d.csv", csv)))
    assert (p.row, p.column) == (1, "text") and "columns 2 and 5" in p.message


def test_a_context_whose_rows_repeat_one_id_says_so_not_only_one_candidate():
    """The CLI walk: two rows with one candidate_id read as 'only 1 candidate', a miscount."""
    csv = ("context_id,context,candidate_id,text\nc1,doc one,a,hello\nc1,doc one,a,world\n"
           "c2,doc two,x,foo\nc2,doc two,y,bar\n").encode()
    with pytest.raises(ValidationError) as e:
        load_candidates(csv, file_label="dup.csv")
    text = str(e.value)
    assert "its 2 rows all repeat candidate_id 'a'" in text and "already on row 2" in text
