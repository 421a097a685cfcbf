"""Answer keys that say what they were pressed on.

Streamlit's own button shortcuts send only "this button was pressed": the answer then goes to
whatever pair the server drew last, which after a switch of dataset or aspect is not the pair the
person was looking at (a key pressed 0.3 s after a change lands on the next screen or on the
previous dataset). This component listens for the answer keys in the browser and sends each
press together with the *token* drawn with the pair on screen (``annotation.PairOnScreen`` plus
what the page adds, e.g. a campaign id): the page compares the token with the pair it holds and
the API refuses an answer whose pair is not the token's, so a key aimed at the old screen is
dropped and said so, never stored elsewhere.

Keys are ignored while a text box, select box or editable element has the focus, as Streamlit's
own shortcuts are (the page says so: ``SHORTCUT_FOCUS_HINT``), and with Ctrl, Alt or Meta held.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable

import streamlit as st

#: Between an answer button's own key and the digest of the pair it was drawn for.
KEY_SEP = "__"


def button_key(key: str, token: Any) -> str:
    """The widget key of answer button ``key`` drawn for the pair ``token`` (JSON-able: what is
    on screen). A Streamlit button sends only "this key was clicked", and a callback runs with
    the arguments bound by the latest run that drew that key: with one key for every pair, a
    click on the pair the browser still showed would carry the pair the server drew since (after
    a switch of dataset or aspect). Keyed by its pair, a click carries the token of the pair it
    was drawn for (then refused when that pair is no longer the one held), or, once the server
    has drawn another pair and forgotten that button, runs nothing at all: it never lands on
    another pair."""
    digest = hashlib.sha1(json.dumps(token, sort_keys=True, default=str).encode()).hexdigest()
    return f"{key}{KEY_SEP}{digest[:16]}"

#: The browser side: one keydown listener for the document (installed once), sending the key and
#: the token of the latest draw; a draw that is replaced or unmounted stops sending.
_JS = r"""
export default function (component) {
  const { data, setTriggerValue } = component;
  const mine = { token: data ? data.token : null, keys: new Set((data && data.keys) || []),
                 send: setTriggerValue, live: true };
  window.__compassessAnswerKeys = mine;
  if (!window.__compassessAnswerKeysListening) {
    window.__compassessAnswerKeysListening = true;
    document.addEventListener("keydown", (e) => {
      const now = window.__compassessAnswerKeys;
      if (!now || !now.live || e.repeat || e.ctrlKey || e.metaKey || e.altKey) return;
      const path = e.composedPath ? e.composedPath() : [e.target];
      for (const el of path) {
        if (el && el.tagName && (el.isContentEditable || el.tagName === "TEXTAREA" ||
            el.tagName === "SELECT" || (el.tagName === "INPUT" && !el.readOnly))) return;
      }
      const key = (e.key || "").toUpperCase();
      if (!now.keys.has(key)) return;
      e.preventDefault();
      e.stopPropagation();
      now.send("pressed", { key: key, token: now.token });
    }, true);
  }
  return () => {
    mine.live = false;
    if (window.__compassessAnswerKeys === mine) window.__compassessAnswerKeys = null;
  };
}
"""

_component = st.components.v2.component("compassess.answer_keys", js=_JS)


def answer_keys(key: str, token: Any, keys: Iterable[str],
                on_press: Callable[[str, Any], None]) -> None:
    """Listen for ``keys`` (single letters) while this page shows ``token`` (JSON-able: what is
    on screen); ``on_press(letter, token_sent)`` runs as a callback, before the page reruns,
    with the token the browser held when the key was pressed (None when it sent none)."""

    def pressed() -> None:
        event = getattr(st.session_state.get(key), "pressed", None)
        if not isinstance(event, dict):
            return
        letter = event.get("key")
        if isinstance(letter, str) and letter in allowed:
            on_press(letter, event.get("token"))

    allowed = {k.upper() for k in keys}
    _component(key=key, data={"token": token, "keys": sorted(allowed)},
               on_pressed_change=pressed, height=0)
