"""Widgets keyed by the object they were drawn for, found in ``AppTest`` by their part of the key:
Annotate's answer buttons (keyed by their answer and the pair, ``pages._answer_keys.button_key``)
and Manage's widgets (keyed by the object's id and creation time, ``pages/home.py``)."""

from __future__ import annotations

from pages._answer_keys import KEY_SEP


def answer_key(key) -> str | None:
    """The answer a button key is of (``answer_a`` of ``answer_a__<pair digest>``), else the
    key itself."""
    return key.split(KEY_SEP)[0] if isinstance(key, str) else key


def answer_buttons(at) -> list:
    """The answer buttons the page shows now (Undo not among them)."""
    return [b for b in at.button if isinstance(b.key, str) and KEY_SEP in b.key]


def answer_button(at, key: str):
    """The button of answer ``key`` (``answer_a``, ``answer_tie`` ...) on the pair shown now;
    KeyError when the page shows none."""
    found = [b for b in at.button if answer_key(b.key) == key]
    if not found:
        raise KeyError(f"no answer button {key} on the page")
    assert len(found) == 1, [b.key for b in found]
    return found[0]


def has_answer_button(at, key: str) -> bool:
    return any(answer_key(b.key) == key for b in at.button)


def manage_key(at, kind: str, object_id: int, what: str) -> str:
    """The key of the Manage widget ``what`` (``new_name``, ``delete_open``, ``confirm_name``,
    ``delete``) of the ``kind`` with id ``object_id``, as the page shows it now
    (``manage_KIND_ID_STAMP_WHAT``); KeyError when it shows none."""
    prefix, suffix = f"manage_{kind}_{object_id}_", f"_{what}"
    keys = {w.key for kind_ in ("text_input", "checkbox", "button")
            for w in getattr(at, kind_) if isinstance(w.key, str)}
    found = [k for k in keys if k.startswith(prefix) and k.endswith(suffix)
             and k[len(prefix):-len(suffix)].isdigit()]
    if not found:
        raise KeyError(f"no Manage widget {what} of {kind} {object_id} on the page")
    assert len(found) == 1, found
    return found[0]
