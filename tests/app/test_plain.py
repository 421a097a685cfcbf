"""The inert-string helper of the pages (``pages/_plain.py``): what a user typed shows as typed."""

from __future__ import annotations

import pandas as pd
import pytest

from pages._plain import plain


def test_markdown_becomes_a_code_span_and_controls_show_as_code_points():
    assert plain("[x](http://evil.example)") == "`[x](http://evil.example)`"
    assert plain("a`b") == "``a`b``"
    assert plain("abc\u202edef", "text") == "abc\u27e8U+202E\u27e9def"
    assert plain("<b>x</b>", "plotly") == "&lt;b&gt;x&lt;/b&gt;"


def test_a_table_shows_missing_texts_empty_and_keeps_numbers():
    frame = pd.DataFrame({"system": ["s1", None], "id\u202e": ["x\u202ey", "z"], "score": [1.5, None]})
    shown = plain(frame, "text")
    assert shown["system"].tolist() == ["s1", ""]
    assert shown["id\u27e8U+202E\u27e9"].tolist() == ["x\u27e8U+202E\u27e9y", "z"]
    assert shown["score"].iloc[0] == 1.5 and pd.isna(shown["score"].iloc[1])


def test_a_table_is_shown_as_text_only():
    with pytest.raises(ValueError):
        plain(pd.DataFrame({"a": [1]}), "markdown")


def test_plain_within_keeps_the_words_as_prose_and_the_quoted_names_inert():
    from pages._plain import plain_within
    text = "The judge will read: Story A (from the file's columns [x](http://e.org), story_text)."
    out = plain_within(text, ["[x](http://e.org)", "story_text", None])
    assert out == ("The judge will read: Story A (from the file's columns `[x](http://e.org)`, "
                   "`story_text`).")
    assert plain_within("nothing quoted", []) == "nothing quoted"
    # the longest name first: a name inside another is not split out of it
    assert plain_within("cols ab and a", ["a", "ab"]) == "cols `ab` and `a`"


def test_plain_message_is_prose_with_its_quoted_names_inert():
    from pages._plain import plain_message
    assert plain_message("dataset 'my data' has no system column: a leaderboard ranks systems.") \
        == "dataset `my data` has no system column: a leaderboard ranks systems."
    assert plain_message("the run's tau is 0.5 (balanced)") == "the run's tau is 0.5 (balanced)"
    # a count at the start is prose; a list marker is not
    assert plain_message("1 system(s) met in one context only") == \
        "1 system(s) met in one context only"
    for marker in ("2) item", "+ a"):
        assert plain_message(marker) == plain(marker), marker
    assert plain_message("-1 point") == "-1 point"     # no list without a space
    # a name holding markdown stays inert, and words that markdown could act on are all code
    assert plain_message("run '**x**' stopped") == "run `**x**` stopped"
    for active in ("see http://e.org now", "a *bold* claim", "an :material/home: icon",
                   "a_b_c", "- a list", "1. item", "mail me@x.org", "[x](y)"):
        assert plain_message(active) == plain(active), active
