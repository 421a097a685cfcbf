"""Shared UI helpers of the Streamlit pages: a run as the Python API gives it (with Streamlit's
cache around its reads), the pickers, the method, tau and bootstrap controls and the comparison
view. Workers are started and watched through ``api.Run`` (``start_worker``, ``progress``,
``worker_log``); the judge model is never loaded in the web server.

One way in: every number a page shows comes from a ``compassess_core.api.Run`` method, the call
``compassess rank|evaluate|leaderboard|compare|agreement|export`` and a notebook make, so the
three show the same numbers because they run the same code. :class:`AppRun` only caches those
calls (keyed by the run, how much it stores and the call's options); it computes nothing. Every
write goes through ``api.Store`` / ``api.Run`` too (``pages/_store.py`` opens it). The selections
shared by the pages (dataset, run, method, threshold, bootstrap) are ``pages/_view.py``'s, kept in
the session and the URL.

This module must never compute a statistic, issue SQL or import ``db``; it must never render user
text as HTML or markdown: candidate and context texts go through ``st.text``/``st.code``/
``st.dataframe``, and every other string a user controls (ids, names, aspects, annotators, column
names, server and error messages) goes through :func:`plain` wherever Streamlit would read it as
markdown.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from compassess_core import api
from compassess_core.stats.leaderboard import DEFAULT_METHOD
from pages import _view as view
from pages._auth import page_link
from pages._plain import plain  # noqa: F401 - the pages import it from here too
from pages._plain import plain_message
from pages._store import api_store, db_url  # noqa: F401 - likewise
from compassess_core.api import counted

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PATH = REPO_ROOT / "assets" / "sample_summeval.csv"
SAMPLE_NAME = "sample_summeval"
#: Characters of a text shown in tables; the full text is in the comparison view and the exports.
PREVIEW_CHARS = 120


# ------------------------------------------------------------------------ a run, through the API

#: Seconds between fresh reads of a run a worker is judging: every micro-batch changes what it
#: stores, and reading (and recomputing) everything at each one kept the result pages of a live
#: run, and those of its dataset's judges, at 5-6 s while it ran.
LIVE_READ_S = 10.0


def _stored_key(info, now: float | None = None) -> str:
    """What a run's numbers rest on, as a cache key: its name (a renamed run's exports and
    report name it anew), a finished batch, a status change (or, for an absolute run, edited
    references, which replace comparisons in place). A run with a live worker is read afresh
    once per ``LIVE_READ_S`` window instead (its status change at the end reads it again).
    The run's creation stamp leads: SQLite gives a deleted run's id to the next run made, and
    its cached numbers must not be taken for the new one's."""
    made = getattr(info, "created_at", None)
    if api.has_live_worker(info):
        return (f"{made}/{info.name}/live/"
                f"{int((time.time() if now is None else now) // LIVE_READ_S)}")
    key = f"{made}/{info.name}/{info.n_comparisons or 0}/{info.done or 0}/{info.status}"
    if (info.settings or {}).get("kind") == "absolute":
        key += f"/{info.heartbeat_at}"
    return key


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_handle(url: str, run_id: int | tuple, stored: Any, calibrated_on: tuple | None
                ) -> api.Verdicts:
    """One ``api.Run`` per run id and stored state (its dataset and results are read once and
    kept by the handle); ``calibrated_on``: ``(aspect, labels fingerprint)`` for the view
    calibrated on the stored human labels (``Run.calibrated``). A panel (``api.Panel``) is
    keyed by its id: ``run_id`` is then ``("panel", panel_id)``, so a panel deleted and made
    again under the same name is a new panel."""
    if isinstance(run_id, tuple):
        return api_store().panel(int(run_id[1]))
    run = api_store().get_run(int(run_id))
    return run.calibrated(calibrated_on[0]) if calibrated_on else run


@st.cache_data(show_spinner=False, max_entries=256)
def _read(url: str, run_id: int | tuple, stored: Any, calibrated_on: tuple | None, method: str,
          options: tuple) -> Any:
    return getattr(_run_handle(url, run_id, stored, calibrated_on), method)(**dict(options))


def _cached(method: Callable) -> Callable:
    """An :class:`AppRun` method that is ``api.Verdicts``' ``method`` (same name, same
    arguments) cached by Streamlit per object, stored state and arguments (which must be
    hashable by Streamlit: numbers, strings, DataFrames)."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def read(self: "AppRun", *args: Any, **kwargs: Any) -> Any:
        options = signature.bind(self.api, *args, **kwargs).arguments
        options.pop("self")
        return _read(*self.key, method.__name__, tuple(sorted(options.items())))
    return read


class AppRun:
    """A stored run (or panel) as the pages use it: the API's ``Run`` or ``Panel`` (``.api``),
    whose attributes it passes on (``name``, ``dataset``, ``settings``, ``tau``,
    ``n_comparisons``, ...), with the expensive reads cached by Streamlit: each is the API's
    method of the same name and arguments (``run.rankings(method=..., debias=...)`` is
    ``Verdicts.rankings``), so a page reads exactly what the CLI and a notebook read."""

    rankings = _cached(api.Verdicts.rankings)
    evaluation = _cached(api.Verdicts.evaluation)
    evaluation_at = _cached(api.Verdicts.evaluation_at)
    leaderboard = _cached(api.Verdicts.leaderboard)
    leaderboard_bytes = _cached(api.Verdicts.leaderboard_bytes)
    bias = _cached(api.Verdicts.bias)
    order_dependence = _cached(api.Verdicts.order_dependence)
    positional_bias = _cached(api.Verdicts.positional_bias)
    position_diagnosis = _cached(api.Verdicts.position_diagnosis)
    length_bias = _cached(api.Verdicts.length_bias)
    length_points = _cached(api.Verdicts.length_points)
    probabilities = _cached(api.Verdicts.probabilities)
    matrix = _cached(api.Verdicts.matrix)
    decision_matrix = _cached(api.Verdicts.decision_matrix)
    consistency_matrix = _cached(api.Verdicts.consistency_matrix)
    thresholds = _cached(api.Verdicts.thresholds)
    tau_effect = _cached(api.Verdicts.tau_effect)
    agreement = _cached(api.Verdicts.agreement)
    calibrate = _cached(api.Verdicts.calibrate)
    fused_rankings = _cached(api.Verdicts.fused_rankings)
    export_bytes = _cached(api.Verdicts.export_bytes)
    report_html = _cached(api.Verdicts.report_html)
    definition = _cached(api.Panel.definition)
    member_agreement = _cached(api.Panel.member_agreement)
    split_pairs = _cached(api.Panel.split_pairs)
    member_warnings = _cached(api.Panel.member_warnings)
    member_evaluations = _cached(api.Panel.member_evaluations)
    vs_best_member = _cached(api.Panel.vs_best_member)
    comparisons = _cached(api.Verdicts.comparisons)

    def __init__(self, run: api.Verdicts, calibrated_on: tuple | None = None) -> None:
        self._use((db_url(), run.id, _stored_key(run.info), calibrated_on))

    @classmethod
    def panel(cls, panel_id: int, stored: tuple) -> "AppRun":
        """The stored panel ``panel_id`` through the same cache as a run; ``stored``: what its
        numbers rest on (its dataset's runs' stored state, panels and labels), so a new batch
        of a member or a new label recombines it."""
        self = cls.__new__(cls)
        self._use((db_url(), ("panel", int(panel_id)), stored, None))
        return self

    def _use(self, key: tuple) -> None:
        self.key = key
        self.api = _run_handle(*key)
        self.info = self.api.info
        self.calibrated_on = key[3]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def calibrated(self, labels: pd.DataFrame) -> "AppRun":
        """This run on its p calibrated on ``labels``, the stored human labels of its aspect
        (``Run.calibrated``); keyed by the labels, so a new label refits it."""
        fingerprint = (len(labels), int(labels["id"].max()) if len(labels) else 0)
        return AppRun(self.api, (self.settings.aspect, fingerprint))

    @property
    def tau_star(self) -> float:
        """The balanced threshold tau* of this run's p (eq. 10)."""
        return self.api.tau("balanced")


def app_run(run: api.Run | None) -> AppRun | None:
    return None if run is None else AppRun(run)


def judges_stamp(dataset_id: int) -> tuple:
    """What the numbers of a dataset's judges rest on, as a cache key (the Panel and Judges
    pages): its runs' stored comparisons and status, its panels and its stored human labels.
    Panels by id and creation stamp: SQLite gives a deleted panel's id to the next panel made,
    whose numbers must not be the deleted one's cached ones."""
    store = api_store()
    panels = store.panels(dataset_id)
    return (tuple((r.id, _stored_key(r.info)) for r in list_runs(dataset_id)),
            tuple(zip(panels["id"].tolist(), panels["created_at"].astype(str).tolist())),
            len(store.human_labels(dataset_id)))


def list_runs(dataset_id: int | None = None) -> list[api.Run]:
    """Every stored run (of one dataset), oldest first, as API handles."""
    return api_store().list_runs(dataset_id)


# ------------------------------------------------------------------------------------- pickers

def as_shown(key: str, now: Any) -> Any:
    """What the page showed under ``key`` when the person acted: the value of the run they
    clicked in (the one before this rerun), else ``now``; ``now`` is remembered for the next.
    A write names the object as shown then, so the API refuses it (``ObjectChanged``) when the
    object was renamed or deleted since the page was drawn (another tab, another person)."""
    remembered = f"shown::{key}"
    shown = st.session_state.get(remembered, now)
    st.session_state[remembered] = now
    return shown


def pick_object(field: str, ids: list[int], label_of: Callable[[int], str], *, what: str,
                where=st.sidebar, label: str, default: int | None = None,
                not_offered: Callable[[int], str | None] | None = None,
                on_change: Callable[[int], None] | None = None) -> int | None:
    """A picker over the objects ``ids`` whose choice is the view's ``field`` (the URL's
    ``?field=<id>``); returns the chosen id, or None when there is nothing to show.

    The object the view names is the one picked; with none named, ``default`` (else the
    newest). A view naming an object that is not offered says so on the page and picks nothing
    (the page then shows nothing of another object): ``not_offered(id)`` explains an object
    that exists but is not offered here (a run without comparisons on a result page), else the
    object is gone (deleted, or a link from another store). ``what`` names the kind in
    messages; ``on_change(id)`` runs when the user picks another, before the page reruns.
    """
    if not ids:
        return None
    want = view.get(field)
    key = f"{field}_pick_w"
    missing = want is not None and want not in ids
    if missing:
        why = not_offered(want) if not_offered is not None and not isinstance(
            want, view.Unresolved) else None
        gone = (want.described(what) + ": it was renamed or deleted, or the link comes from "
                "another store." if isinstance(want, view.Unresolved) else
                f"The {what} this link names (id {want}) is not in the store: it was "
                "deleted, or the link comes from another store.")
        st.warning((why or gone) + f" Nothing of another {what} is shown: choose one.",
                   icon=":material/link_off:")
    current = None if missing else (want if want is not None
                                    else default if default in ids else ids[-1])

    def picked(value: int) -> None:
        view.put(field, value)
        if on_change is not None:
            on_change(value)

    chosen = pick_id(where, label, ids, label_of, key=key, current=current, on_pick=picked,
                     placeholder=f"Choose a {what}")
    if chosen is not None:
        view.put(field, chosen)
    return chosen


def pick_id(where, label: str, ids: list, label_of: Callable[[Any], str], *, key: str,
            current: Any, on_pick: Callable[[Any], None], **options: Any) -> Any:
    """A select box over stored objects' stable ids (``label_of`` names each), whose choice is
    the page's own state ``current`` (a view field, a page's model), never the widget's.

    The options are ids, so renaming an object changes a label, never the options, and never
    resets the box to its first item. The widget is given ``current`` as its value on every run:
    the browser keeps the label it last showed, and a box drawn again (after a rename, or after
    a page that does not draw it) would otherwise show a stale label, or its first item, while
    the page acts on another object. The person's pick reaches ``on_pick(id)`` through the
    widget's callback, bound to the ids offered when the box was drawn: a value that is none of
    them (a label the browser still held from before a rename) is ignored. Returns the id shown:
    ``current`` (None: nothing chosen, the box shows its placeholder).
    """
    offered = tuple(ids)
    st.session_state[key] = current if current in offered else None

    def picked(offered: tuple) -> None:
        value = st.session_state.get(key)
        if value in offered:
            on_pick(value)

    chosen = where.selectbox(label, list(offered), key=key, on_change=picked, args=(offered,),
                             format_func=label_of, **options)
    if (where is st.sidebar and chosen in offered
            and len(str(label_of(chosen))) > SHOWN_IN_PICKER):
        # A select box shows its choice on one line, cut (its list wraps: app.py's style): a
        # long name (a run sweep's, a dataset's) is written out below it, where it wraps.
        where.caption(plain(str(label_of(chosen))))
    return chosen if chosen in offered else None


def pick_dataset(where=st.sidebar, label: str = "Dataset", on_change=None):
    """A dataset picker (the view's ``dataset``; with none chosen, the dataset of the run in
    view, else the newest); returns the chosen dataset's record (``api.Store.list_datasets``)
    or None when the store has none or the link's dataset is gone.

    ``on_change(dataset_id)`` runs when the user picks another dataset, before the page reruns.
    """
    infos = api_store().list_datasets()
    by_id = {d.id: d for d in infos}
    # With no dataset chosen, the run in view names one (a link that names only a run).
    of_run = next((r.info.dataset_id for r in list_runs() if r.id == view.get("run")), None)
    chosen = pick_object("dataset", list(by_id), lambda i: _dataset_label(by_id[i]),
                         what="dataset", where=where, label=label, on_change=on_change,
                         default=of_run)
    return None if chosen is None else by_id[chosen]


def _dataset_label(d) -> str:
    return (f"{plain(d.name, 'text')} ({counted(d.n_contexts, 'context')}, "
            f"{counted(d.n_candidates, 'candidate')})")


def is_pairwise(run) -> bool:
    """A run of pairwise comparisons (the result pages' runs)."""
    return run.run_kind.is_pairwise


def is_scoring_run(run) -> bool:
    """A prompt-scoring run (one score per candidate, no comparisons, on the Rankings page)."""
    kind = run.run_kind
    return not kind.is_pairwise and kind.results_page == "rankings"


def offered_runs(runs, need_comparisons: bool = True, with_scoring: bool = False) -> list:
    """The runs a run picker offers: with stored comparisons (``need_comparisons``), and with
    ``with_scoring`` the prompt-scoring runs with at least one scored candidate."""
    return [r for r in runs if not need_comparisons or (r.info.n_comparisons or 0) > 0
            or (with_scoring and is_scoring_run(r) and (r.info.done or 0) > 0)]


def pick_run(where=st.sidebar, label: str = "Run", need_comparisons: bool = True,
             with_scoring: bool = False, field: str = "run") -> AppRun | None:
    """A run picker (the view's ``field``, by run id) over every run of the store; returns the
    chosen run, or None when there is none to show (the link's run gone or not shown here: the
    picker says so).

    ``need_comparisons`` keeps the runs with stored comparisons (pairwise runs);
    ``with_scoring`` adds the prompt-scoring runs with at least one scored candidate.
    """
    every = {r.id: r for r in list_runs()}
    runs = offered_runs(every.values(), need_comparisons, with_scoring)
    if not runs:
        return None

    def not_offered(run_id: int) -> str | None:
        run = every.get(run_id)
        if run is None:
            return None
        return (f"Run {plain(run.name)} (id {run_id}) is not shown on this page: "
                f"{'it has no stored comparison yet' if run.run_kind.is_pairwise else f'it is a {run.run_kind.label} run'}.")

    offered = {r.id: r for r in runs}
    chosen = pick_object(field, list(offered), lambda i: run_label(offered[i]), what="run",
                         where=where, label=label, not_offered=not_offered)
    if chosen is None:
        return None
    if field == "run":
        # The run in view names its dataset too: Panel, Judges, Annotate and Run open on it.
        view.put("dataset", offered[chosen].info.dataset_id)
    return AppRun(offered[chosen])


#: Characters of a picked object's label that a sidebar picker shows whole at its default width
#: (a longer one is written out below the box: ``pick_id``).
SHOWN_IN_PICKER = 30


def run_label(run) -> str:
    """A run as pickers list it: name, state (``compassess runs``' words) and what it stores."""
    info = run.info
    progress = run.progress(refresh=False)
    partial = not progress.active and (info.total or 0) > (info.done or 0)
    of = f" of {info.total:,} planned, partial" if partial else ""
    name = plain(run.name, "text")
    return f"{name} [{progress.state_text}, {run.run_kind.summary_line(info)}{of}]"


def no_run_message() -> None:
    st.info("No run with stored comparisons yet. Load the sample on **Home**, then start a run on "
            "**Run** (the bundled model needs about a minute on the sample's first contexts).")
    page_link("pages/home.py", label="Go to Home", icon=":material/home:")
    page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")


def pairwise_only_note(have_pairwise_run: bool) -> None:
    """On a page that applies to pairwise runs only: say why the store's prompt-scoring runs are not
    in its run picker (an info when there is no pairwise run to show, a sidebar note otherwise)."""
    n = sum(1 for r in list_runs() if is_scoring_run(r))
    if not n:
        return
    text = (f"{n} prompt-scoring run(s) are not listed here: this page applies to pairwise runs "
            "(comparisons). See a scoring run's scores per candidate on **Rankings** and download "
            "them on **Export**.")
    if have_pairwise_run:
        st.sidebar.caption(text)
    else:
        st.info(text, icon=":material/info:")


# ------------------------------------------------------------------------------------ tau control

#: The default threshold: the balanced tau* raised Spearman in 7 of 8 TopicalChat cells and in both
#: SummEval coherence templates, and pairwise accuracy in every SummEval cell (docs/results.md);
#: where the judge has no positional bias tau* is 0.5 anyway.
DEFAULT_TAU_MODE = "balanced"
DEFAULTS_WHY = ("Defaults chosen from our measurements (docs/results.md): Bradley-Terry ranked "
                "above the win ratio in 8 of 8 TopicalChat cells, and the balanced tau* raised "
                "Spearman in 7 of 8 (pairwise accuracy in every SummEval cell).")


def _tau_mode_changed(tau_star: float) -> None:
    """The radio's callback: keep the mode; a switch to manual starts the slider at the tau in
    use before the switch, not at a value of its own."""
    new = st.session_state["tau_mode_w"]
    old = view.tau_mode(DEFAULT_TAU_MODE)
    if new == "manual" and old != "manual":
        view.put("tau", round(0.5 if old == "off" else tau_star, 3))
    view.put("tau_mode", new)


def _tau_manual_changed() -> None:
    view.put("tau", round(float(st.session_state["tau_manual_w"]), 3))


def debias_in_use() -> str | float:
    """What the threshold state asks the API for (``none``, ``balanced``,
    ``balanced-per-context`` or the manual tau): the value ``compassess rank --debias`` takes."""
    return view.debias(DEFAULT_TAU_MODE)


#: What the pages pass as ``debias`` under per-context balancing (one tau* per context).
PER_CONTEXT = "balanced-per-context"


def at_tau(tau: float | str, digits: int = 3) -> str:
    """The threshold in use as a label says it: ``tau = 0.412``, or ``each context's tau*``
    under per-context balancing (the tau control's value is then the mode, not a number)."""
    if isinstance(tau, str):
        return "each context's tau* (balanced per context)"
    return f"tau = {tau:.{digits}f}"


def tau_control(run: AppRun) -> float | str:
    """The sidebar threshold control shared by every result page; returns the current tau of
    ``run`` (``run.tau(debias_in_use())``), or ``"balanced-per-context"`` when each context is
    balanced at its own tau*: what the pages pass to the API as ``debias``.

    ``off`` is eq. 3's natural threshold 0.5, ``balanced`` is tau* (the median of p, which makes
    P(A) = P(B) = 0.5, eq. 10) over all comparisons, ``per-context`` one tau* per context (eq. 10
    applied context by context: P(A) = 0.5 in every context), ``manual`` a slider. The choice and
    the manual value are the view
    state's (``pages/_view.py``: the session and the URL, ``?tau_mode=manual&tau=0.62``), so they
    survive page switches, a refresh and a shared link; the widgets are re-seeded from it on every
    page, because a keyed widget that a page does not draw loses its state.
    """
    tau_star = run.tau_star
    mode = view.tau_mode(DEFAULT_TAU_MODE)
    if mode == "manual" and view.get("tau") is None:
        view.put("tau", round(tau_star, 3))
    debias = debias_in_use()
    per_context = debias == PER_CONTEXT
    tau = PER_CONTEXT if per_context else run.tau(debias)
    st.session_state["tau_mode_w"] = mode
    # The slider shows the tau in use: greyed at tau* (balanced, and per context, whose tau* are
    # listed on Bias) or 0.5 (off), live in manual.
    shown = tau_star if per_context else tau
    st.session_state["tau_manual_w"] = min(max(round(shown, 3), 0.001), 0.999)
    labels = {"off": "off (tau = 0.5)", "balanced": f"balanced (tau* = {tau_star:.3f})",
              "per-context": "balanced per context (one tau* each)", "manual": "manual"}
    st.sidebar.radio("Decision threshold tau (eq. 10)", view.TAU_MODES, key="tau_mode_w",
                     format_func=labels.get, on_change=_tau_mode_changed, args=(tau_star,),
                     help="A comparison is won by the first position (A) when p > tau. "
                          "balanced: tau* balances P(A) = P(B) = 0.5 over all comparisons (one "
                          "global threshold; single contexts can stay far from 0.5). "
                          "balanced per context: eq. 10 applied context by context, one tau* "
                          "per context, so P(A) = 0.5 in each. " + DEFAULTS_WHY)
    st.sidebar.slider("tau", min_value=0.001, max_value=0.999, step=0.001, format="%.3f",
                      key="tau_manual_w", disabled=mode != "manual", on_change=_tau_manual_changed,
                      help=f"The balancing value tau* = {tau_star:.4f} is marked in the "
                           "gauges and histograms.")
    view.put("tau_mode", mode)
    marker = " (balanced, the default: see the control's help)" if mode == "balanced" else ""
    current = (run.threshold_label(PER_CONTEXT) if per_context
               else f"tau = {tau:.4f}{marker}")
    st.sidebar.caption(f"Current {current}; global tau* = {tau_star:.4f} on "
                       f"{counted(run.n_comparisons, 'comparison')}.")
    return tau


def use_balanced_tau() -> None:
    """The one-click remedy of a position-biased judge: switch every page to tau*."""
    view.put("tau_mode", "balanced")


def use_per_context_tau() -> None:
    """Switch every page to one balanced tau* per context (eq. 10 context by context)."""
    view.put("tau_mode", "per-context")


def tau_effect_note(run: AppRun, tau: float | str, method: str, where=st) -> None:
    """Which numbers the threshold moves for ``method`` on this run (``Run.tau_effect``): derived
    from whether the method counts verdicts and whether every pair was judged in both orders."""
    effect = run.tau_effect(method=method, debias=tau)
    icon = ":material/swap_vert:" if effect.ranking_moves or effect.hard else ":material/info:"
    where.info("What tau moves here: P(A), the verdicts, win rates and accuracy always follow it "
               "(eq. 10). Ranking: " + effect.reason, icon=icon)


def judge_warning(run: AppRun, tau: float, where=st) -> None:
    """A plain warning when the judge's verdicts follow the position (P(A) or P(B) far from 0.5)
    or flip with the order, with its numbers and the one-click remedy (``Run.position_diagnosis``)."""
    diagnosis = run.position_diagnosis(debias=tau)
    message = diagnosis.message()
    if message is None:
        return
    remedy = diagnosis.remedy()
    box = where.container(border=True)
    box.warning(f"Judge of run {plain(run.name)}: {message}", icon=":material/warning:")
    if remedy:
        box.caption(remedy)
    if not diagnosis.balanced:
        box.button("Use the balanced tau* (balances P(A) and P(B) over all comparisons)",
                   on_click=use_balanced_tau, icon=":material/balance:", key=f"remedy_{run.id}")


def partial_warning(run, where=st) -> None:
    """Label the numbers of a run that stopped before its plan was complete (``Run.partial_note``)."""
    note = run.partial_note
    if note:
        where.warning(f"Run {plain(run.name)}: {note}", icon=":material/pie_chart:")


def length_bias_metrics(where, lb, what: str = "comparisons", tau: float | str | None = None
                        ) -> None:
    """The two headline numbers of a ``length_bias.LengthBias``: the longer text's share of wins
    and the logistic slope per doubling of the length ratio (Bias and Leaderboard pages); ``tau``:
    the threshold in use as the tau control gives it (default: the fit's own)."""
    where.metric(f"Longer text wins at {at_tau(lb.tau if tau is None else tau)}",
                 fmt(lb.longer_wins, ".1%"),
                 help=f"Share of the {lb.n_length_differs:,} {what} whose texts differ in length "
                      "that the longer text won (eq. 10 verdicts); 50% = no length preference.")
    # The unit in the label: a value with its unit is cut in a narrow column at 1024 px.
    where.metric("Slope per doubling of length (log-odds)", fmt(lb.slope_per_doubling, "+.3f"),
                 help=f"Logistic fit of p on log2(len A / len B) over the {lb.n_comparisons:,} "
                      f"{what}: the change in log-odds of 'A wins' when A is twice as long as B "
                      "(0 = blind to length).")


def download_with_settings(columns, data: bytes, sidecar: bytes | None, stem: str, fmt: str,
                           key: str) -> None:
    """A file's download button and, for CSV and Parquet, its ``.settings.json`` sidecar's, in two
    columns (JSON holds the settings itself)."""
    mime = {"csv": "text/csv", "json": "application/json", "parquet": "application/octet-stream"}
    columns[0].download_button(f"Download {stem.rsplit('-', 1)[-1]}.{fmt}", data,
                               file_name=api.file_name(stem, suffix=f".{fmt}"), mime=mime[fmt],
                               icon=":material/download:", key=key,
                               on_click="ignore")
    if sidecar is not None:
        columns[1].download_button("Download its settings (.settings.json)", sidecar,
                                   file_name=api.sidecar_name(api.file_name(stem,
                                                                            suffix=f".{fmt}")),
                                   mime="application/json", key=f"{key}_settings",
                                   on_click="ignore")


def prepared_download(where, label: str, make: Callable[[], bytes], *, key: str, made_for: Any,
                      file_name: str, mime: str, what: str, help: str | None = None) -> None:
    """A file that takes a while to make (an audit report): a button makes it in the page's
    run, so an error shows at once under it, in plain words, and the file is then offered as
    an ordinary download of those bytes. Not Streamlit's deferred download, which makes the
    file after the click, outside the page: its errors flash for five seconds as "Failed to
    generate file for download", and a click while the page reruns finds its file id gone
    ("Deferred file ... not found", nothing on the page). ``made_for``: what the file depends
    on (run, options); another value asks again. One file per ``key`` is kept in the session."""
    slot = f"prepared::{key}"
    kept = st.session_state.get(slot)
    data = kept[1] if kept is not None and kept[0] == made_for else None
    asked = where.empty()   # the Prepare button, gone once the file is made
    if data is None:
        if not asked.button(f"Prepare {what}", key=f"{key}_prepare", icon=":material/build:",
                            help=help):
            return
        st.session_state.pop(slot, None)
        try:
            with where.container():
                with st.spinner(f"Preparing {what} ..."):
                    data = make()
        except api.CompAssessError as e:   # the button stays, for another try
            where.error(f"Could not prepare {what}: {plain_message(e)}", icon=":material/error:")
            return
        st.session_state[slot] = (made_for, data)
        asked.empty()
    # The click only downloads (no rerun), so the file it names stays the one shown.
    where.download_button(label, data, file_name=file_name, mime=mime, key=key,
                          icon=":material/download:", on_click="ignore", help=help)


# ------------------------------------------------------------------------------------ formatting

#: Characters of a name a chart's axis shows before it is cut (the hover shows it whole).
AXIS_LABEL_CHARS = 22


def _cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (limit - 1 - head):]


def axis_labels(names, limit: int = AXIS_LABEL_CHARS) -> list[str]:
    """Names as a chart's axis shows them, escaped for plotly: whole when every one fits
    ``limit`` characters; else the part that tells them apart, with an ellipsis for what they
    all share (``…sweep-M14-checkpoint`` beside ``…sweep-M2-checkpoint``: a run sweep's names
    differ in the middle), cut in its middle when still too long; two alike get ``#k``. The
    hover text shows every name whole."""
    texts = [" ".join(str(n).split()) for n in names]
    if all(len(t) <= limit for t in texts):
        return [plain(t, "plotly") for t in texts]
    prefix = os.path.commonprefix(texts) if len(texts) > 1 else ""
    suffix = os.path.commonprefix([t[::-1] for t in texts])[::-1] if len(texts) > 1 else ""
    prefix, suffix = (prefix if len(prefix) >= 4 else ""), (suffix if len(suffix) >= 4 else "")
    out = []
    for t in texts:
        core = t[len(prefix):len(t) - len(suffix)] if len(t) > len(prefix) + len(suffix) else t
        if core is not t:
            # keep a little of what they share, as far as the limit allows
            room = limit - len(core) - 1
            lead = prefix[len(prefix) - max(0, room // 2):] if prefix and room > 1 else ""
            tail = suffix[:max(0, room - len(lead) - 1)] if suffix and room > 1 else ""
            core = ("\u2026" if len(lead) < len(prefix) else "") + lead + core + tail + (
                "\u2026" if len(tail) < len(suffix) else "")
        out.append(_cut_middle(core, limit))
    seen: dict[str, int] = {}
    for k, label in enumerate(out):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            out[k] = _cut_middle(label, limit - 3) + f" #{seen[label]}"
    return [plain(t, "plotly") for t in out]


def square_chart_layout(labels: list[str], cell_px: int = 34, min_px: int = 260,
                        max_px: int = 1100) -> dict:
    """Height and margins of a square matrix chart of ``len(labels)`` rows and columns, sized
    from their count and the longest axis label (in characters, at about 7 px each; x labels
    turned 45 degrees take about 5 px of height per character): the cells never shrink below
    readable as names get long or many."""
    n = max(len(labels), 1)
    longest = max((len(str(t)) for t in labels), default=1)
    left = min(20 + 7 * longest, 240)
    bottom = min(30 + 5 * longest, 200)
    height = max(min_px, min(max_px, cell_px * n + bottom + 60))
    return dict(height=height, margin=dict(l=left, r=10, t=10, b=bottom))


def preview(text: str | None, n: int = PREVIEW_CHARS) -> str:
    if text is None:
        return ""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= n else flat[: n - 1] + "\u2026"


def fmt(value: float | None, spec: str = ".1f", missing: str = "n/a") -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return missing
    return format(value, spec)


def line_labels(lines, min_gap: float = 0.0005) -> list[tuple[float, str, str]]:
    """Labels of vertical marker lines ``(x, name, colour)``: lines at the same place (closer
    than ``min_gap``) share one label ("0.5 = current tau"); a label says where its lines are
    ("tau* = current tau = 0.496") unless a name is the place itself ("0.5"). Lines near but
    not at each other keep labels of their own (drawn on rows of their own), so 0.496 never
    reads as 0.5."""
    merged: list[tuple[float, list[str], str]] = []
    for x, name, color in sorted(lines, key=lambda line: line[0]):
        if merged and abs(x - merged[-1][0]) < min_gap:
            merged[-1][1].append(name)
        else:
            merged.append((x, [name], color))
    return [(x, " = ".join(names) + ("" if f"{x:g}" in names else f" = {x:.3f}"), color)
            for x, names, color in merged]


# ------------------------------------------------------------------------------- method control

CI_HELP = "200 resamples of each context's comparisons (percentile bootstrap); slower on big runs."


def ci_control(where, n_comparisons: int) -> bool:
    """The 'Bootstrap 95% CI' switch, shared by Rankings and Export (what one shows, the other
    exports), kept across pages and in the URL."""
    want = view.get("ci")
    st.session_state["ci_w"] = bool(want) if want is not None else n_comparisons <= 5_000
    on = where.checkbox("Bootstrap 95% CI", key="ci_w", help=CI_HELP,
                        on_change=lambda: view.put("ci", st.session_state["ci_w"]))
    view.put("ci", bool(on))
    return bool(on)


def default_reference_index(references: list[str], run) -> int:
    """The run's aspect's column when the dataset has one, by name or synonym (a coherence run
    is checked against 'coherence', an engagingness run against 'engagement':
    ``Verdicts.default_reference``), else the first reference column."""
    column = run.default_reference
    return references.index(column) if column in references else 0


METHOD_LABELS = {"win-ratio": "win ratio (eq. 6)", "avg-prob": "average probability",
                 "bradley-terry": "Bradley-Terry (soft)", "poe": "product of experts (Gaussian)"}


def method_control(where=st.sidebar, key: str = "method_w") -> str:
    """The ranking-method picker shared by the result pages (the view state's: kept across page
    switches and in the URL, re-seeded on every page as the tau control is); ``where`` and
    ``key`` place it elsewhere (the Panel page's Rankings tab)."""
    methods = list(api.RANKING_METHODS)
    method = view.get("method")
    st.session_state[key] = method if method in methods else DEFAULT_METHOD
    method = where.selectbox("Ranking method", methods, key=key,
                             format_func=lambda m: METHOD_LABELS.get(m, m),
                             on_change=lambda: view.put("method", st.session_state[key]),
                             help=DEFAULTS_WHY)
    view.put("method", method)
    return method


def page_run(title: str, *, with_scoring: bool = False) -> AppRun:
    """A run page's title, what the link got wrong, and the run picker; the page stops there
    with guidance when there is no run to show.

    Lists pairwise runs (and, ``with_scoring``, prompt-scoring runs); a page of pairwise runs only
    says where the prompt-scoring runs are shown.
    """
    st.title(title)
    view.show_problems()
    run = pick_run(with_scoring=with_scoring)
    offered = bool(offered_runs(list_runs(), with_scoring=with_scoring))
    if not with_scoring:
        pairwise_only_note(offered)
    if run is None:
        if not offered:
            no_run_message()
        st.stop()  # else the picker said why the link's run is not shown
    return run


def result_page_header(title: str) -> tuple[AppRun, float, str] | None:
    """Title, run picker, method and tau controls (:func:`page_run`, :func:`run_controls`);
    None (with a warning) when the run's comparisons match none of its dataset's candidates."""
    return run_controls(page_run(title))


def run_controls(run: AppRun) -> tuple[AppRun, float, str] | None:
    """The method and tau controls of a pairwise run picked by the page: ``(run, tau, method)``;
    None (with a warning) when none of its comparisons matches its dataset."""
    if run.n_comparisons == 0:
        st.warning(f"Run {plain(run.name)} has comparisons, but none matches its dataset's "
                   "candidates.")
        return None
    method = method_control()
    tau = tau_control(run)
    running_or_partial_note(run)
    judge_warning(run, tau)
    return run, tau, method


def running_or_partial_note(run, where=st) -> None:
    """Say that a run is still running (its numbers rest on what it stores so far), or label
    one that stopped before its plan was complete (:func:`partial_warning`)."""
    info = run.info
    if run.progress(refresh=False).active:
        where.info(f"Run {plain(run.name)} is still running ({info.n_comparisons:,}/"
                   f"{counted(info.total or '?', 'comparison')} stored): numbers here use what is stored "
                   "so far.", icon=":material/hourglass_top:")
    else:
        partial_warning(run, where)


# ----------------------------------------------------------------------- human judgements

#: Aspect used for human labels when nothing else suggests one (the CLI's import default).
DEFAULT_ASPECT = "overall"


def data_aspects(dataset_id: int) -> list[api.DataAspect]:
    """The aspects a dataset has evidence for, the strongest first (``Store.aspects``: human
    labels, then reference columns, then its runs' aspects)."""
    return api_store().aspects(dataset_id)


def aspect_options(dataset_id: int) -> list[str]:
    """Aspects worth offering for a dataset: those its data has evidence for first (labels,
    reference columns, runs: :func:`data_aspects`), then the other presets."""
    from compassess_core.runs.prompts import ASPECT_ADJECTIVES
    known = [a.aspect for a in data_aspects(dataset_id)]
    return known + [a for a in ASPECT_ADJECTIVES if a not in known]


def aspect_label(dataset_id: int) -> Callable[[str], str]:
    """How an aspect picker names each option: the aspect and what the data holds of it
    ("coherence: 30 human labels, reference column coherence")."""
    evidence = {a.aspect: a.evidence for a in data_aspects(dataset_id)}
    return lambda a: plain(a, "text") + (f"  ({evidence[a]})" if a in evidence else "")


def default_aspect(dataset_id: int) -> str:
    """The aspect a page starts at for a dataset with nothing chosen: the one its data has the
    most evidence for (:func:`data_aspects`), else ``overall``."""
    known = data_aspects(dataset_id)
    return known[0].aspect if known else DEFAULT_ASPECT


def pick_aspect(dataset_id: int, where=st.sidebar, label: str = "Aspect judged",
                on_change: Callable[[str], None] | None = None) -> str:
    """An aspect picker for human judgements (the view's ``aspect``, kept in the URL),
    defaulting to the aspect the data has the most evidence for (human labels, then a
    reference column: :func:`default_aspect`). Its widget belongs to the dataset (keyed by its
    id) and is re-seeded from the view on every run, so the box always shows the aspect the
    page uses and writes: the value returned. ``on_change(aspect)`` runs when the user picks
    another aspect, before the page reruns."""
    options = aspect_options(dataset_id)
    want = view.get("aspect") or default_aspect(dataset_id)
    if want not in options:
        options.append(want)
    key = f"aspect_w_{dataset_id}"
    st.session_state[key] = want

    def picked() -> None:
        # The box belongs to its dataset: the browser may report the box of the screen before a
        # dataset switch once more (it keeps drawn widgets until the next run ends), and that
        # must not set the aspect of the dataset shown now.
        if st.session_state.get("dataset_pick_w", view.get("dataset")) not in (None, dataset_id):
            return
        view.put("aspect", st.session_state[key])
        if on_change is not None:
            on_change(st.session_state[key])

    chosen = where.selectbox(label, options, key=key, format_func=aspect_label(dataset_id),
                             on_change=picked,
                             help="Human judgements are stored per dataset and aspect; the "
                                  "Agreement page compares a run with the labels of the run's "
                                  "aspect. The aspects the data has labels, reference scores or "
                                  "runs of come first.")
    view.put("aspect", chosen)
    return chosen


def aspect_question(aspect: str) -> str:
    """The question people answer, in the prompts' words ("Which text is more coherent?"), as
    markdown: an own aspect description is shown through :func:`plain`."""
    from compassess_core.runs.prompts import ASPECT_ADJECTIVES, Aspect
    adjective = Aspect.from_name(aspect).adjective
    if aspect not in ASPECT_ADJECTIVES:
        adjective = plain(adjective)
    # As the prompt templates do: "more good" reads "better".
    question = f"Which text is more {adjective}?"
    return question.replace("more good", "better")


def problems_frame(err) -> pd.DataFrame:
    """A ``ValidationError``'s problems as a table (file, row, column, problem, and ``cause``:
    ``file`` when the file must change, ``mapping`` when another column mapping fixes it), every
    string shown as plain text."""
    return plain(pd.DataFrame([dict(file=p.file, row=p.row, column=p.column, problem=p.message,
                                    cause=p.cause) for p in err.problems],
                              columns=["file", "row", "column", "problem", "cause"]), "text")


#: How tables name the engine's columns (a person reads "flip rate", not "flip_rate"); a column
#: not named here keeps its name with "_" read as a space.
COLUMN_LABELS = {
    "context_id": "context", "candidate_id": "candidate", "n_comparisons": "comparisons",
    "n_contexts": "contexts", "n_pairs": "pairs", "n_items": "pairs", "n_votes": "votes",
    "n_labelled": "labelled", "spearman_x100": "Spearman x100", "kendall_x100": "Kendall x100",
    "p_a": "P(A)", "p_b": "P(B)", "p_a_raw": "P(A) raw", "p_a_debiased": "P(A) debiased",
    "flip_rate": "flip rate", "win_rate": "win rate", "strength_ci_low": "strength low",
    "strength_ci_high": "strength high", "win_rate_ci_low": "win rate low",
    "win_rate_ci_high": "win rate high", "p_best": "P(best)", "mean_length": "mean length",
    "lc_strength": "len-adj strength", "lc_win_rate": "len-adj win rate",
    "lc_win_rate_vs_baseline": "LC vs baseline",
    "lc_win_rate_vs_baseline_se": "LC std. error", "ci_low": "95% low",
    "ci_high": "95% high", "kappa": "kappa", "agreement": "agreement",
    "percent_agreement": "agreement", "annotator_a": "annotator A", "annotator_b": "annotator B",
    "member_a": "member A", "member_b": "member B", "reference_scores": "reference scores",
}


def fit_columns(frame: pd.DataFrame, config: dict | None = None, *, wide=(), pin=()) -> dict:
    """A ``column_config`` for ``frame`` that fits the width a 1024 px window leaves a table
    beside the sidebar (about 650 px: Streamlit's ``small`` columns are 75 px, ``medium`` 200
    px), so the table does not scroll sideways there: every column ``small`` but the ``wide``
    ones (``medium``: a name, a text), the ``pin`` ones pinned (they stay in view where a table
    has too many columns to fit). ``config``'s own labels, formats and help are kept; a cell
    cut short shows whole where it is clicked."""
    config = dict(config or {})
    out = {}
    for col in frame.columns:
        given = config.get(col)
        cfg = dict(given) if isinstance(given, dict) else dict(st.column_config.Column(
            given if isinstance(given, str) else None))
        cfg["width"] = "medium" if col in wide else "small"
        if col in pin:
            cfg["pinned"] = True
        out[col] = cfg
    return out


def column_labels(frame: pd.DataFrame, digits: int = 3) -> dict:
    """A ``column_config`` that names each column of ``frame`` as a person reads it
    (:data:`COLUMN_LABELS`) and shows its fractional numbers with ``digits`` decimals."""
    config = {}
    for col in frame.columns:
        name = str(col)
        label = COLUMN_LABELS.get(name, name.replace("_", " "))
        if pd.api.types.is_float_dtype(frame[col].dtype):
            config[col] = st.column_config.NumberColumn(label, format=f"%.{digits}f")
        else:
            config[col] = st.column_config.Column(label)
    return config


#: Row height (px) of a table whose long texts wrap: Streamlit wraps a cell's text only in rows
#: taller than 4rem.
WRAP_ROW_PX = 68


def show_problems_table(check, where=st) -> None:
    """Every problem of a checked file (:func:`problems_frame`) as a table whose problem texts
    wrap (at 1024 px a long one would be cut), the problem beside its row and column."""
    frame = problems_frame(check)
    where.dataframe(frame, hide_index=True, width="stretch", placeholder="",
                    row_height=WRAP_ROW_PX if len(frame) <= 200 else None,
                    height=min(WRAP_ROW_PX * len(frame) + 40, 560),
                    column_order=["row", "column", "problem", "cause", "file"],
                    column_config={"row": st.column_config.NumberColumn("row", width="small"),
                                   "column": st.column_config.TextColumn("column", width="small"),
                                   "problem": st.column_config.TextColumn("problem", width="large"),
                                   "cause": st.column_config.TextColumn(
                                       "fix in", width="small",
                                       help="file: the file must change; mapping: another "
                                            "column mapping fixes it")})


@st.cache_data(show_spinner="Comparing the runs ...", max_entries=16)
def _compare(key_a: tuple, key_b: tuple, method: str, debias: str | float) -> api.RunComparison:
    return _run_handle(*key_a).compare(_run_handle(*key_b), method, debias)


def compare_runs(run_a: AppRun, run_b: AppRun, method: str, debias: str | float):
    """``Run.compare`` of two runs (``compassess compare``), each at its own threshold of the
    ``debias`` option, cached per pair of stored states."""
    return _compare(run_a.key, run_b.key, method, debias)


@st.cache_resource(show_spinner=False, max_entries=16)
def _dataset(url: str, dataset_id: int, made: str | None):
    return api_store().dataset(dataset_id)


def cached_dataset(dataset_id: int):
    """A stored dataset (``api.Store.dataset``), read once per process (stored datasets do not
    change: the same content is stored once). Keyed by its id and creation stamp: SQLite gives
    a deleted dataset's id to the next dataset stored, which must not be served the deleted
    one's contexts."""
    dataset_id = int(dataset_id)
    made = next((str(d.created_at) for d in api_store().list_datasets() if d.id == dataset_id),
                None)
    return _dataset(db_url(), dataset_id, made)


#: The baseline picker's "no baseline" entry.
NO_BASELINE = "(none)"


def baseline_control(run: AppRun, where, key: str) -> str | None:
    """The baseline system picker (AlpacaEval's reference model) of the Leaderboard and Export
    pages, kept in the view state (``?baseline=``): None for no baseline, and no picker when the
    candidates have no system. A link's baseline that is not a system of ``run`` says so and is
    dropped."""
    # The systems of the dataset, in the order they first appear (the leaderboard's own order).
    systems = list(dict.fromkeys(c.system for ctx in run.dataset.contexts for c in ctx.candidates
                                 if c.system))
    if not systems:  # no leaderboard of systems, so nothing to be a baseline
        return None
    wanted = view.get("baseline")
    if wanted is not None and wanted not in systems:
        st.info(f"The link's baseline system {plain(wanted)} is not a system of this run: no "
                "baseline.", icon=":material/info:")
        wanted = None
    st.session_state[key] = wanted or NO_BASELINE
    chosen = where.selectbox(
        "Baseline system", [NO_BASELINE, *systems], key=key,
        format_func=lambda s: s if s == NO_BASELINE else plain(s, "text"),
        on_change=lambda: view.put("baseline", None if st.session_state[key] == NO_BASELINE
                                   else st.session_state[key]),
        help="AlpacaEval's reference model: adds each system's win rate against it (with its 95% "
             "interval) and AlpacaEval 2.0's length-controlled win rate against it.")
    baseline = None if chosen == NO_BASELINE else chosen
    view.put("baseline", baseline)
    return baseline


def data_range(values, *marks: float, pad: float = 0.03, lo: float = 0.0,
               hi: float = 1.0) -> list[float]:
    """An axis range that spans ``values`` and the ``marks`` drawn on it (thresholds), with a
    little room, kept within [lo, hi]: a chart scaled to its data (points between 0.45 and 0.8
    fill the plot instead of a third of a 0-1 axis). The full [lo, hi] when nothing is finite."""
    found = np.asarray(list(values) + [m for m in marks if m is not None], dtype=np.float64)
    found = found[np.isfinite(found)]
    if not len(found):
        return [lo, hi]
    low, high = float(found.min()), float(found.max())
    room = max(pad, 0.05 * (high - low))
    return [max(lo, low - room), min(hi, high + room)]


def centred_range(values, centre: float, floor: float = 0.05) -> tuple[float, float]:
    """A colour range centred on ``centre`` (a threshold: the colours' midpoint) that reaches
    the value farthest from it: ``values`` between 0.45 and 0.7 get the full colour scale, not
    its pale middle. At least ``floor`` either side."""
    found = np.asarray(values, dtype=np.float64)
    found = found[np.isfinite(found)]
    half = max(float(np.abs(found - centre).max()) if len(found) else 0.0, floor)
    return centre - half, centre + half


#: Top margin (pixels) that keeps plotly's toolbar above the plot area instead of over the data.
MODEBAR_MARGIN_PX = 36


def show_chart(where, fig, **options):
    """``where.plotly_chart(fig, ...)`` with the app's chart settings, the one way pages draw a
    plotly figure: a top margin that the toolbar (shown on hover) fits in, so it never covers
    data, no plotly logo, and the full width by default."""
    top = fig.layout.margin.t
    if top is not None and top < MODEBAR_MARGIN_PX:
        fig.update_layout(margin_t=MODEBAR_MARGIN_PX)
    options.setdefault("width", "stretch")
    options.setdefault("config", {"displaylogo": False})
    return where.plotly_chart(fig, **options)



def show_paired(where, tests, *, key: str, caption: str = "") -> None:
    """A table of paired tests (``PairedDifference.row``: A, B, what was measured, the
    difference A - B with its 95% cluster-bootstrap interval, McNemar's exact p-value, the
    contexts and pairs it rests on), then each test in one sentence; names shown as plain text."""
    from pages._plain import plain_within
    tests = [t for t in tests if t is not None]
    if not tests:
        return
    frame = pd.DataFrame([t.row() for t in tests])
    number = {c: st.column_config.NumberColumn(c, format="%.2f")
              for c in frame.columns if c.startswith(("A value", "B value", "A - B", "95%"))}
    number["McNemar exact p"] = st.column_config.NumberColumn("McNemar exact p", format="%.3g")
    shown = plain(frame, "text")
    # Many columns: small ones, the two things compared pinned (they stay in view at 1024 px).
    where.dataframe(shown, hide_index=True, width="stretch", key=key, placeholder="",
                    column_config=fit_columns(shown, number, pin=[c for c in ("A", "B")
                                                                  if c in shown.columns]))
    where.caption(" ".join([caption] * bool(caption) + [
        plain_within(t.sentence(), [t.name_a, t.name_b]) + "." for t in tests]))
