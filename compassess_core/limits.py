"""Bounds and character rules for what a person names or uploads: ids, names, aspects, files.

Everything a user types or uploads ends up in a database column of bounded width, on a page, in a
log line or on a command line. These rules are checked where the input enters (file validation,
``Store.create_run`` / ``save_dataset``, the pages), so a bad value gets a message that names it
instead of a database error or a broken display:

* an **id** (context, candidate, system) is at most :data:`MAX_ID_CHARS` characters and holds no
  control character (a newline or a NUL cannot be displayed, exported or typed back);
* a **name** (dataset, run) is at most :data:`MAX_NAME_CHARS` printable characters and does not
  start with ``-`` (it would read as an option on a command line);
* an **aspect** description is at most :data:`MAX_ASPECT_CHARS` printable characters;
* an **upload** is at most ``COMPASSESS_MAX_UPLOAD_MB`` megabytes (:func:`max_upload_mb`);
* a **bootstrap** has at most :data:`MAX_BOOTSTRAP` replicates (:func:`check_bootstrap`).

Bidirectional-override characters are allowed in ids (right-to-left data needs marks); the UI
and the audit report make them visible when they display an id (:func:`visible`, used by
``pages._plain.plain`` and ``report``).

Pure: this module must never import ``streamlit`` or ``db``.
"""

from __future__ import annotations

import os
import re
import unicodedata

from .errors import InputError

#: Longest context, candidate or system id (the width of the store's id columns).
MAX_ID_CHARS = 255
#: Longest dataset or run name.
MAX_NAME_CHARS = 200
#: Longest aspect description (the store keeps aspects in 255-character columns).
MAX_ASPECT_CHARS = 200
#: Most bootstrap replicates of any interval (memory grows with replicates x comparisons).
MAX_BOOTSTRAP = 10_000
#: Largest upload by default, in megabytes (Streamlit's own default).
DEFAULT_MAX_UPLOAD_MB = 200
#: Environment variable that sets the largest upload, in megabytes.
MAX_UPLOAD_ENV = "COMPASSESS_MAX_UPLOAD_MB"

# Unicode categories never allowed in a name: controls (Cc) and format characters (Cf: zero-width
# and bidirectional controls, which make a name display as something else), and the line and
# paragraph separators.
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
# In an id only what cannot be displayed or typed back is refused.
_NOT_IN_IDS = frozenset({"Cc", "Zl", "Zp", "Cs"})


def max_upload_mb() -> int:
    """The largest upload in megabytes: ``$COMPASSESS_MAX_UPLOAD_MB`` or 200.

    Raises
    ------
    InputError
        When the variable is set but is not a positive whole number.
    """
    return whole_number_from_env(MAX_UPLOAD_ENV, DEFAULT_MAX_UPLOAD_MB, least=1, unit="megabytes")


def whole_number_from_env(name: str, default: int, *, least: int, unit: str) -> int:
    """The whole number ``$name`` holds (``default`` when it is unset or empty).

    Raises
    ------
    InputError
        When the variable is set but is not a whole number of at least ``least``.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < least:
        raise InputError(f"${name} must be a whole number of {unit} (at least {least}), "
                         f"not {raw!r}")
    return int(raw)


def max_upload_bytes() -> int:
    """:func:`max_upload_mb` in bytes."""
    return max_upload_mb() * 1024 * 1024


def _first_forbidden(value: str, categories: frozenset[str]) -> str | None:
    for ch in value:
        if unicodedata.category(ch) in categories:
            return ch
    return None


def codepoint(ch: str) -> str:
    """``U+000A``: how a message names a character that cannot be shown."""
    return f"U+{ord(ch):04X}"


#: Characters that make text display as something else (bidirectional controls) or not at all
#: (C0/C1 controls other than tab and newline).
_INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                        "\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with every bidirectional control and every control character but tab and newline
    shown as its code point (the right-to-left override as ``⟨U+202E⟩``), so what a person
    sees is what is stored."""
    return _INVISIBLE.sub(lambda m: f"\u27e8{codepoint(m.group())}\u27e9", text)


def _described(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"{codepoint(ch)} ({name})" if name else codepoint(ch)


def id_problem(value: str, what: str = "id") -> str | None:
    """What is wrong with an id (None when it is fine): too long, or a control character."""
    if len(value) > MAX_ID_CHARS:
        return f"{what} is {len(value):,} characters long; at most {MAX_ID_CHARS} are allowed"
    bad = _first_forbidden(value, _NOT_IN_IDS)
    if bad is not None:
        return f"{what} contains the control character {_described(bad)}; ids must be printable"
    return None


def name_problem(value: str, what: str = "name", limit: int = MAX_NAME_CHARS, *,
                 dash_first: bool = False) -> str | None:
    """What is wrong with a dataset or run name (None when it is fine).

    A name is non-empty, at most ``limit`` characters, printable (no control, format,
    bidirectional or separator characters), without surrounding spaces, and does not start with
    ``-`` unless ``dash_first``.
    """
    if not value or not value.strip():
        return f"a {what} must not be empty"
    if len(value) > limit:
        return f"the {what} is {len(value):,} characters long; at most {limit} are allowed"
    if value != value.strip():
        return f"the {what} must not start or end with spaces"
    if value.startswith("-") and not dash_first:
        return f"the {what} must not start with '-' (it would read as a command-line option)"
    bad = _first_forbidden(value, _NOT_IN_NAMES)
    if bad is not None:
        return (f"the {what} contains the invisible or control character {_described(bad)}; use "
                "printable characters only")
    return None


def check_name(value: str, what: str = "name", limit: int = MAX_NAME_CHARS, *,
               dash_first: bool = False) -> str:
    """``value`` when it is a valid name (:func:`name_problem`).

    Raises
    ------
    InputError
        Naming what is wrong.
    """
    problem = name_problem(value, what, limit, dash_first=dash_first)
    if problem is not None:
        raise InputError(problem)
    return value


def check_bootstrap(n_boot: int) -> int:
    """``n_boot`` as a count of bootstrap replicates: a whole number in 1..:data:`MAX_BOOTSTRAP`.

    Raises
    ------
    InputError
        Outside those bounds (a huge count would exhaust memory rather than fail).
    """
    if not 1 <= int(n_boot) <= MAX_BOOTSTRAP:
        raise InputError(f"bootstrap replicates (n_boot) must be in 1..{MAX_BOOTSTRAP:,}, "
                         f"got {int(n_boot):,}")
    return int(n_boot)
