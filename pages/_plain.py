"""The inert-string helper of the pages: every string a user controls passes through
:func:`plain` wherever Streamlit or plotly would read it as markdown or HTML.

Missing values show empty everywhere: :func:`plain` empties a table's missing texts, and every
``st.dataframe`` of the pages passes ``placeholder=""``, without which Streamlit prints the word
"None" for a missing number (an unjudged candidate's score); ``tests/app/test_app_missing_cells.py``
checks both.

A module of its own so that the sign-in gate (``pages/_auth.py``) and the page helpers
(``pages/_common.py``) can both use it without importing each other.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd

from compassess_core.api import visible

PLAIN_INTO = ("markdown", "text", "plotly")


def plain(value: Any, into: str = "markdown") -> Any:
    """A string a user controls, made inert for where it is shown; the one helper for that.

    ``into``:

    * ``"markdown"`` (default): for anything Streamlit renders as markdown: ``st.markdown``,
      captions, alerts, toasts, progress texts, metric labels and values, and the labels of
      widgets, tabs and expanders, and radio options. The text becomes an inline code span, so no
      link, image, HTML tag, emphasis, math or auto-link can come out of it and it shows exactly
      as stored (backslash escaping does not stop Streamlit's auto-links and shows stray
      backslashes); newlines become spaces.
    * ``"text"``: for what Streamlit shows as plain text (selectbox options, ``st.text``,
      dataframes): only the invisible characters are made visible. A DataFrame is accepted too
      (its text columns, where a missing value shows empty, and column names).
    * ``"plotly"``: for chart labels, ticks and hover texts, which plotly reads as HTML: escaped.

    Bidirectional controls and control characters are shown as ``⟨U+202E⟩`` in every case.
    """
    if into not in PLAIN_INTO:
        raise ValueError(f"plain(into={into!r}): use one of {', '.join(PLAIN_INTO)}")
    if isinstance(value, pd.DataFrame):
        if into != "text":
            raise ValueError("a DataFrame is shown as plain text: plain(frame, into='text')")
        frame = value.rename(columns=lambda c: plain(c, "text") if isinstance(c, str) else c)
        for col in frame.columns:
            kind = frame[col].dtype
            if pd.api.types.is_object_dtype(kind) or pd.api.types.is_string_dtype(kind):
                # A missing text (no system, say) shows empty, not as the word "None".
                frame[col] = frame[col].map(lambda v: plain(v, "text") if isinstance(v, str)
                                            else "" if v is None or v is pd.NA
                                            or (isinstance(v, float) and v != v) else v)
        return frame
    text = visible("" if value is None else str(value))
    if into == "text":
        return text
    if into == "plotly":
        return html.escape(text)
    if not text:
        return ""
    # Streamlit turns ":material/NAME:" into an icon before parsing markdown, even in code; a
    # word joiner (invisible) between the colon and the word keeps the text as typed.
    text = re.sub(r"\r\n?|\n", " ", text).replace(":material/", ":\u2060material/")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain_within(text: str, names) -> str:
    """Prose for markdown that quotes strings a user controls: ``text`` is the app's own words
    around ``names`` (column names, an aspect: what the text quotes), and each whole occurrence
    of a name becomes inert (:func:`plain`) while the words around it stay prose. The longest name is
    taken first, so a name inside another is not split out of it."""
    names = sorted({n for n in names if n}, key=len, reverse=True)
    if not names:
        return text
    # Whole occurrences only (not the "a" inside "and"): no word character either side.
    pattern = r"(?<!\w)(" + "|".join(re.escape(n) for n in names) + r")(?!\w)"
    return "".join(plain(part) if k % 2 else part
                   for k, part in enumerate(re.split(pattern, text)))


#: A name the engine quotes in a message: 'name' after a space, "(" or the start, before a space,
#: punctuation or the end (an apostrophe inside a word is no quote).
_QUOTED = re.compile(r"(?:(?<=^)|(?<=[\s(]))'([^']+)'(?=$|[\s,.;:)])")
#: What the words of a message may hold to be shown as prose: letters, digits, spaces and
#: punctuation Streamlit's markdown does nothing with (no * _ ` [ ] < > # | ! ~ $ / @ \ { }).
_PROSE = re.compile(r"[^\W_]|[\s,.;()'\"=+?%-]|:(?=\s|$)")


#: What markdown reads as the start of a list item (an ordered or a bullet list).
_LIST_MARKER = re.compile(r"\d+[.)](\s|$)|[-+*](\s|$)")


def plain_message(text: Any) -> str:
    """A message of the engine or the API (an error, a note) for markdown, as prose: the names
    it quotes ('name') become inert (:func:`plain`), the words around them stay words. When a
    word holds anything markdown could act on, the whole message is made inert instead, so
    nothing a user controls is ever read as markdown."""
    text = visible("" if text is None else str(text))
    text = re.sub(r"\r\n?|\n", " ", text)
    parts = _QUOTED.split(text)
    words = "".join(parts[0::2])
    # A list marker at the start ("1. ", "2) ", "- ", "+ ") would make a list: all inert then;
    # a count ("1 system(s) met ...") is prose.
    if not text or _LIST_MARKER.match(words) or len(_PROSE.findall(words)) != len(words):
        return plain(text)
    return "".join(plain(part) if k % 2 else part for k, part in enumerate(parts))
