"""The view state of the app: which dataset, run and second run are looked at, with which ranking
method, threshold mode and value, bootstrap choice, aspect, bootstrap size, the Leaderboard's
baseline system and the panel of judges. This module owns it.

Objects are named by their stable ids (``?dataset=3&run=12&panel=2``), so a link survives a
rename; a link that names an object by name (made before ids) is resolved to its id once, and
a link to an object that is gone is said so by the page that shows it (``pages._common``'s
pickers), never silently replaced by another object.

The state lives in the session and in the URL. ``app.py`` calls :func:`sync` at the start of every
run, before the page: a value the session lacks is read from the URL (a refresh, a shared link, a
bookmark), checked (:data:`FIELDS`: a tau outside (0, 1) or one that rounds onto a bound, or an
unknown method, is refused with a friendly message and the default is used), and then the whole
state is written back into the URL. Streamlit clears the query string when the page changes, so
writing every field on every run is what keeps a link complete: the URL of any page reproduces the
numbers on it. Widgets change the state through :func:`put`, which writes both places.

Pages never read ``st.query_params`` for these fields themselves. This module must never compute
a number or render a user string as markdown except through ``pages._plain.plain``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from compassess_core.api import RANKING_METHODS as METHODS
from compassess_core.errors import CompAssessError
from compassess_core.limits import MAX_NAME_CHARS
from pages._plain import plain
from pages._store import api_store

#: The threshold modes of the tau control: eq. 3's natural 0.5, the balanced tau* (eq. 10) over
#: all comparisons, one balanced tau* per context (eq. 10 context by context), a value.
TAU_MODES = ("off", "balanced", "per-context", "manual")
#: What each mode asks the API for (``debias``); manual passes the value itself.
DEBIAS_OF_MODE = {"off": "none", "balanced": "balanced", "per-context": "balanced-per-context"}
#: Where the problems of the link's view settings wait to be shown (once, at the page's top).
PROBLEMS_KEY = "view_problems"


def _one_of(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in options:
            raise ValueError(f"'{raw}' is not one of {', '.join(options)}")
        return raw
    return parse


def _unit_interval(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"'{raw}' is not a number") from None
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise ValueError(f"'{raw}' is not a number between 0 and 1")
    # The view keeps 3 decimals (the slider's step); a value that rounds onto a bound is refused
    # like the bound itself, never passed on as 0 or 1.
    kept = round(value, 3)
    if not 0.0 < kept < 1.0:
        raise ValueError(f"'{raw}' rounds to {kept:.3f} (3 decimals are kept), which is not "
                         "between 0 and 1")
    return kept


class Unresolved(str):
    """A link's name of an object that no stored object has (renamed or deleted since the link
    was made): kept in the view as it was written, so the URL keeps it and the page that shows
    the object says that nothing of that name is stored, and shows nothing of another object
    (never the newest one in its place). Equal to no id."""

    def described(self, what: str) -> str:
        return f"The {what} this link names ('{plain(str(self))}') is not in the store under that name"


def _object_ref(kind: str) -> Callable[[str], int | Unresolved]:
    """An object's id from a link: digits are its id; anything else is a name (links made
    before ids named objects), looked up once in the store: a name no ``kind`` has is kept as
    :class:`Unresolved` (the page then says so and shows no other object)."""
    def parse(raw: str) -> int | Unresolved:
        if raw.isdigit() and int(raw) >= 1:
            return int(raw)
        if not raw.strip() or len(raw) > MAX_NAME_CHARS:
            raise ValueError(f"'{raw[:40]}' is not a {kind} id")
        try:
            return api_store().object_id(kind, raw)
        except CompAssessError:
            return Unresolved(raw)
    return parse


def _name(raw: str) -> str:
    if not raw.strip() or len(raw) > MAX_NAME_CHARS:
        raise ValueError(f"a name of 1 to {MAX_NAME_CHARS} characters is expected")
    return raw


def _flag(raw: str) -> bool:
    if raw not in ("True", "False"):
        raise ValueError(f"'{raw}' is not True or False")
    return raw == "True"


def _bootstrap(raw: str) -> int:
    if not raw.isdigit() or not 10 <= int(raw) <= 10_000:
        raise ValueError(f"'{raw}' is not a number of resamples between 10 and 10000")
    return int(raw)


@dataclass(frozen=True)
class Field:
    """One piece of the view state: its URL parameter (also its session key), what it means for
    the message about a bad link, and how a URL value is read (``ValueError`` when it is bad)."""

    name: str
    meaning: str
    parse: Callable[[str], Any]


FIELDS: dict[str, Field] = {f.name: f for f in (
    Field("dataset", "dataset", _object_ref("dataset")),
    Field("run", "run", _object_ref("run")),
    Field("run_b", "second run (Compare runs)", _object_ref("run")),
    Field("abs_run", "absolute-score run (Scores)", _object_ref("run")),
    Field("method", "ranking method", _one_of(tuple(METHODS))),
    Field("tau_mode", "threshold mode", _one_of(TAU_MODES)),
    Field("tau", "manual threshold tau", _unit_interval),
    Field("ci", "bootstrap switch", _flag),
    Field("aspect", "aspect", _name),
    Field("boot", "bootstrap resamples (Leaderboard)", _bootstrap),
    Field("baseline", "baseline system (Leaderboard)", _name),
    Field("panel", "panel of judges (Panel)", _object_ref("panel")),
    Field("campaign", "annotation campaign (Campaigns)", _object_ref("campaign")),
)}


#: The fields that name a stored object, by its id.
OBJECT_FIELDS = frozenset({"dataset", "run", "run_b", "abs_run", "panel", "campaign"})


def sync() -> None:
    """Read what the session lacks from the URL (checked), then write the whole state into the
    URL; called by ``app.py`` before the page runs."""
    problems = []
    for field in FIELDS.values():
        if st.session_state.get(field.name) is not None or field.name not in st.query_params:
            continue
        raw = st.query_params.get(field.name, "")
        try:
            st.session_state[field.name] = field.parse(raw)
        except ValueError as e:
            problems.append(f"{field.meaning} ({field.name}): {e}")
    if problems:
        st.session_state[PROBLEMS_KEY] = problems
    write_url()


def write_url() -> None:
    """Every field of the state into the URL (a field with no value is left out)."""
    for name in FIELDS:
        value = st.session_state.get(name)
        if value is None:
            st.query_params.pop(name, None)
        elif str(st.query_params.get(name)) != str(value):
            st.query_params[name] = str(value)


def show_problems(where=st) -> None:
    """Say, once, which of the link's view settings were not understood (the defaults were used
    instead); pages call it through their header."""
    problems = st.session_state.pop(PROBLEMS_KEY, None)
    if problems:
        where.warning("This link's view settings were not all understood, so the defaults are "
                      "used for: " + "; ".join(plain(p) for p in problems) + ".",
                      icon=":material/link_off:")


def get(name: str) -> Any:
    """The current value of a field (None: not chosen yet)."""
    if name not in FIELDS:
        raise KeyError(f"unknown view field '{name}'")
    return st.session_state.get(name)


def put(name: str, value: Any) -> None:
    """Set a field in the session and the URL (None clears it)."""
    if name not in FIELDS:
        raise KeyError(f"unknown view field '{name}'")
    if name in OBJECT_FIELDS and isinstance(value, str):
        # Objects are named by id; a name given here is looked up once (None: no such object).
        try:
            value = FIELDS[name].parse(value)
        except ValueError:
            value = None
    st.session_state[name] = value
    if value is None:
        st.query_params.pop(name, None)
    else:
        st.query_params[name] = str(value)


def tau_mode(default: str = "balanced") -> str:
    mode = get("tau_mode")
    return mode if mode in TAU_MODES else default


def debias(default_mode: str = "balanced") -> str | float:
    """What the threshold state asks the API for: ``"none"``, ``"balanced"``,
    ``"balanced-per-context"`` or the manual tau (``compassess rank --debias`` takes the same)."""
    mode = tau_mode(default_mode)
    if mode == "manual":
        value = get("tau")
        return float(value) if value is not None else "balanced"
    return DEBIAS_OF_MODE[mode]


# ------------------------------------------------------------------------- forms across pages

#: Where the values of page forms are kept while their page is not shown.
_FORMS_KEY = "view_forms"


#: What each form's widgets were last given as their values (``keep_form``): a widget value
#: that differs from it was changed in the browser by the person.
_SEEDED_KEY = "view_forms_seeded"


def keep_form(form: str, keys: tuple[str, ...]) -> None:
    """The values of ``form``'s widgets ``keys`` are the session's own model of the form, given
    to the widgets as their values on every run.

    Streamlit forgets a keyed widget's value when a run does not draw it (another page, another
    dataset's form), and a widget drawn again without a value set by the script shows its own
    defaults in the browser while the script may still hold the old value: the form would show
    one thing and the plan use another. So every run, before the widgets are drawn, each
    widget's value is set from the form's model (which makes the browser show it), after taking
    into the model what the person changed in the browser since the last run (a widget value
    that differs from what the widget was last given). ``save_form`` after the widgets copies
    their values (defaults filled in by the page) into the model.
    """
    kept = st.session_state.setdefault(_FORMS_KEY, {}).setdefault(form, {})
    seeded = st.session_state.setdefault(_SEEDED_KEY, {}).setdefault(form, {})
    for key in keys:
        if key in st.session_state and (key not in seeded
                                        or st.session_state[key] != seeded[key]):
            kept[key] = st.session_state[key]   # the person changed it in the browser
        if key in kept:
            st.session_state[key] = kept[key]
            seeded[key] = kept[key]


def form_value(form: str, key: str, default: Any = None) -> Any:
    """The model's value of ``form``'s widget ``key`` (``default`` before its first draw)."""
    return st.session_state.get(_FORMS_KEY, {}).get(form, {}).get(key, default)


def save_form(form: str, keys: tuple[str, ...]) -> None:
    """Copy the current widget values of ``form`` (see :func:`keep_form`)."""
    kept = st.session_state.setdefault(_FORMS_KEY, {}).setdefault(form, {})
    seeded = st.session_state.setdefault(_SEEDED_KEY, {}).setdefault(form, {})
    for key in keys:
        if key in st.session_state:
            kept[key] = seeded[key] = st.session_state[key]
