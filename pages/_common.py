"""Shared UI helpers of the Streamlit pages: the store handle, cached reads, pickers, the tau control,
the worker launcher and the comparison view.

Pages stay thin by calling these. What the CLI does too (creating and starting runs, reading a
run's rankings, evaluation, leaderboard and agreement back) goes through the Python API
(``compassess_core.api``), so the app, the CLI and a notebook show the same numbers. This module
must never compute a statistic (that is ``compassess_core.analysis``) nor issue SQL (that is
``db.store``); it must never render user text as HTML or markdown: candidate and context texts go
through ``st.text``/``st.code``/``st.dataframe``, and every other string a user controls (ids,
names, aspects, annotators, column names, server and error messages) goes through :func:`plain`
wherever Streamlit would read it as markdown.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from compassess_core import analysis, api
from compassess_core.leaderboard import DEFAULT_METHOD
from compassess_core.comparative import render_prompt
from compassess_core.context_window import truncated_text
from compassess_core.models import is_bundled
from compassess_core.run_kinds import kind_of
from compassess_core.run_loop import is_active, state_text, worker_state  # noqa: F401 - the pages import them from here
from compassess_core.settings import RunSettings
from compassess_core.types import ComparisonTable, Dataset
from pages._auth import page_link
from pages._plain import plain  # noqa: F401 - the pages import it from here too
from pages._store import _open_store, db_url, store  # noqa: F401 - likewise

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PATH = REPO_ROOT / "assets" / "sample_summeval.csv"
SAMPLE_NAME = "sample_summeval"
#: Characters of a text shown in tables; the full text is in the comparison view and the exports.
PREVIEW_CHARS = 120


# --------------------------------------------------------------------------------------- store

def api_store() -> api.Store:
    """The same store through the Python API (what the CLI calls)."""
    return api.Store(store())


def home_dir() -> Path:
    """``COMPASSESS_HOME`` (worker logs live in its ``logs`` folder)."""
    env = os.environ.get("COMPASSESS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".local" / "share" / "compassess"


# Cached reads are keyed by the database URL and ids (and the number of stored comparisons for a
# run), so the tau slider and page switches never go back to the database for unchanged data.

@st.cache_resource(show_spinner=False, max_entries=16)
def cached_dataset(url: str, dataset_id: int) -> Dataset:
    return _open_store(url).load_dataset(dataset_id)


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_table(url: str, run_id: int, n_comparisons: int) -> ComparisonTable:
    return _open_store(url).comparison_table(run_id)


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_parts(url: str, dataset_id: int, run_id: int, n_comparisons: int):
    return analysis.split_with_p(cached_dataset(url, dataset_id),
                                 cached_table(url, run_id, n_comparisons))


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_run(url: str, run_id: int, n_stored: int, status: str = "") -> api.Run:
    """The API's view of a run (``api.Run``), keyed by how much it stores: its dataset and
    results are read once (a pairwise run's comparisons and their split by context shared with
    ``cached_table`` and ``cached_parts``)."""
    info = _open_store(url).get_run(run_id)
    dataset_id = int(info.dataset_id)
    if not kind_of(info.settings).is_pairwise:
        return api.Run(api.Store(_open_store(url)), info, dataset=cached_dataset(url, dataset_id))
    return api.Run(api.Store(_open_store(url)), info, dataset=cached_dataset(url, dataset_id),
                   results=cached_table(url, run_id, n_stored),
                   parts=cached_parts(url, dataset_id, run_id, n_stored))


@st.cache_data(show_spinner=False, max_entries=64)
def cached_ranking(url: str, dataset_id: int, run_id: int, n_comparisons: int, method: str,
                   tau: float, with_ci: bool) -> pd.DataFrame:
    """``Run.rankings`` (``compassess rank``) at ``tau``."""
    return cached_run(url, run_id, n_comparisons).rankings(method, tau, ci=with_ci)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_evaluation(url: str, dataset_id: int, run_id: int, n_comparisons: int, method: str,
                      reference: str | None, tau: float) -> analysis.Evaluation:
    """``Run.evaluation_at``: the numbers ``compassess evaluate`` reports at one threshold."""
    return cached_run(url, run_id, n_comparisons).evaluation_at(tau, method=method,
                                                                reference=reference)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_bias_by_context(url: str, dataset_id: int, run_id: int, n_comparisons: int,
                           tau: float) -> pd.DataFrame:
    return analysis.bias_by_context(cached_dataset(url, dataset_id),
                                    cached_table(url, run_id, n_comparisons), tau)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_order_dependence(url: str, dataset_id: int, run_id: int, n_comparisons: int,
                            tau: float) -> pd.DataFrame:
    return analysis.order_dependence(cached_dataset(url, dataset_id),
                                     cached_table(url, run_id, n_comparisons), tau)


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_comparison_lengths(url: str, dataset_id: int, run_id: int, n_comparisons: int):
    """``length_bias.comparison_lengths``: lengths of both texts of every comparison, with p."""
    from compassess_core.length_bias import comparison_lengths
    return comparison_lengths(cached_dataset(url, dataset_id),
                              cached_table(url, run_id, n_comparisons))


@st.cache_data(show_spinner=False, max_entries=32)
def cached_length_bias(url: str, dataset_id: int, run_id: int, n_comparisons: int, tau: float):
    """``length_bias.length_bias`` of every comparison of the run at ``tau``."""
    from compassess_core.length_bias import length_bias
    return length_bias(*cached_comparison_lengths(url, dataset_id, run_id, n_comparisons), tau)


@st.cache_data(show_spinner="Computing the leaderboard (context bootstrap) ...", max_entries=16)
def cached_leaderboard(url: str, dataset_id: int, run_id: int, n_comparisons: int, method: str,
                       tau: float, reference: str | None, n_boot: int):
    """``Run.leaderboard`` (``compassess leaderboard``) at ``tau``; NoSystemsError passes through."""
    return cached_run(url, run_id, n_comparisons).leaderboard(method, tau, reference=reference,
                                                              n_boot=n_boot)


@st.cache_data(show_spinner="Comparing the runs ...", max_entries=16)
def cached_run_comparison(url: str, dataset_a: int, run_a: int, n_a: int, dataset_b: int,
                          run_b: int, n_b: int, tau_a: float, tau_b: float, method: str):
    """``compare.compare_runs`` of two runs, each at its own tau (``Run.compare`` when both
    thresholds come from the same debias option)."""
    from compassess_core.compare import compare_runs
    return compare_runs(cached_dataset(url, dataset_a), cached_table(url, run_a, n_a),
                        cached_dataset(url, dataset_b), cached_table(url, run_b, n_b),
                        tau_a=tau_a, tau_b=tau_b, method=method)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_export(url: str, dataset_id: int, run_id: int, n_comparisons: int, what: str, fmt: str,
                  method: str, tau: float, metadata: dict,
                  with_ci: bool = False) -> tuple[bytes, bytes | None, pd.DataFrame]:
    """An export file, its settings sidecar and a 10-row preview (rankings or all comparisons);
    rankings carry the bootstrap intervals when ``with_ci`` (as the Rankings page shows them)."""
    from compassess_core.export import table_bytes
    if what == "rankings":
        frame = cached_ranking(url, dataset_id, run_id, n_comparisons, method, tau, with_ci)
    else:
        frame = _open_store(url).comparisons_frame(run_id)
    data, sidecar = table_bytes(frame, fmt, what=what, metadata=metadata)
    return data, sidecar, frame.head(10)


# Prompt-scoring runs (kind "scoring", one stored score per candidate): keyed by the run's own count
# of scored candidates and its status, so a finished chunk of a live run refreshes them.

@st.cache_data(show_spinner=False, max_entries=32)
def cached_scored_ranking(url: str, dataset_id: int, run_id: int, done: int, status: str,
                          which: str) -> pd.DataFrame:
    """``Run.rankings``: one row per scored candidate, ranked by ``which`` (expected/argmax)."""
    return cached_run(url, run_id, done, status).rankings(which=which)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_scoring_evaluation(url: str, dataset_id: int, run_id: int, done: int, status: str,
                              reference: str | None) -> dict:
    """``Run.evaluation``: what ``compassess evaluate`` prints for a scoring run."""
    return cached_run(url, run_id, done, status).evaluation(reference=reference).numbers


@st.cache_data(show_spinner=False, max_entries=16)
def cached_scoring_export(url: str, dataset_id: int, run_id: int, done: int, status: str, fmt: str,
                          metadata: dict) -> tuple[bytes, bytes | None, pd.DataFrame]:
    """A scoring run's per-candidate scores as ``compassess export --what rankings`` writes them
    (ranked by the G-Eval expected score), its settings sidecar and a 10-row preview."""
    from compassess_core.export import table_bytes
    frame = cached_scored_ranking(url, dataset_id, run_id, done, status, "expected")
    data, sidecar = table_bytes(frame, fmt, what="rankings", metadata=metadata)
    return data, sidecar, frame.head(10)


@st.cache_resource(show_spinner=False, max_entries=32)
def cached_matrix(url: str, dataset_id: int, run_id: int, n_comparisons: int,
                  context_id: str) -> tuple[list[str], np.ndarray]:
    return analysis.context_matrix(cached_dataset(url, dataset_id),
                                   cached_table(url, run_id, n_comparisons), context_id)


# ------------------------------------------------------------------------------ selection state

def remember(key: str, value: Any) -> None:
    """Keep a selection across pages (session state) and across a browser refresh (query params)."""
    st.session_state[key] = value
    if value is None:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = str(value)


def recalled(key: str) -> str | None:
    if key in st.session_state and st.session_state[key] is not None:
        return str(st.session_state[key])
    value = st.query_params.get(key)
    return value if value else None


def pick_dataset(where=st.sidebar, label: str = "Dataset", on_change=None):
    """A dataset picker; returns the chosen ``DatasetInfo`` or None when the store has none.

    ``on_change(dataset_id)`` runs when the user picks another dataset, before the page reruns.
    """
    infos = store().list_datasets()
    if not infos:
        return None
    ids = [d.id for d in infos]
    want = recalled("dataset")
    # A keyed widget whose state follows the remembered dataset (as the run picker): an
    # index-only selectbox gets a new widget id whenever its default index changes, which
    # dropped every second switch of dataset.
    st.session_state["dataset_pick_w"] = next((d.id for d in infos if str(d.id) == want), ids[-1])

    def picked() -> None:
        remember("dataset", st.session_state["dataset_pick_w"])
        if on_change is not None:
            on_change(st.session_state["dataset_pick_w"])

    chosen = where.selectbox(label, ids, key="dataset_pick_w", on_change=picked,
                             format_func=lambda i: _dataset_label(infos, i))
    remember("dataset", chosen)
    return next(d for d in infos if d.id == chosen)


def _dataset_label(infos, dataset_id: int) -> str:
    d = next(x for x in infos if x.id == dataset_id)
    return f"{plain(d.name, 'text')} ({d.n_contexts} contexts, {d.n_candidates} candidates)"


def is_scoring_run(run) -> bool:
    """A prompt-scoring run (one score per candidate, no comparisons, on the Rankings page)."""
    kind = kind_of(run.settings or {})
    return not kind.is_pairwise and kind.results_page == "rankings"


def pick_run(where=st.sidebar, label: str = "Run", need_comparisons: bool = True,
             with_scoring: bool = False):
    """A run picker over every run of the store; returns the chosen ``RunInfo`` or None.

    ``need_comparisons`` keeps the runs with stored comparisons (pairwise runs);
    ``with_scoring`` adds the prompt-scoring runs with at least one scored candidate.
    """
    runs = store().list_runs()
    if need_comparisons:
        runs = [r for r in runs if (r.n_comparisons or 0) > 0
                or (with_scoring and is_scoring_run(r) and (r.done or 0) > 0)]
    if not runs:
        return None
    names = [r.name for r in runs]
    want = recalled("run")
    # A keyed widget whose state follows the remembered run: an index-only selectbox gets a new
    # widget id whenever its default index changes, which dropped every second switch of run.
    st.session_state["run_pick_w"] = want if want in names else names[-1]
    chosen = where.selectbox(label, names, key="run_pick_w",
                             on_change=lambda: remember("run", st.session_state["run_pick_w"]),
                             format_func=lambda n: _run_label(runs[names.index(n)]))
    remember("run", chosen)
    return store().get_run(chosen)


def _run_label(run) -> str:
    partial = (not is_active(worker_state(run)) and (run.total or 0) > (run.done or 0))
    of = f" of {run.total:,} planned, partial" if partial else ""
    name = plain(run.name, "text")
    return f"{name} [{state_text(run)}, {kind_of(run.settings or {}).summary_line(run)}{of}]"


def no_run_message() -> None:
    st.info("No run with stored comparisons yet. Load the sample on **Home**, then start a run on "
            "**Run** (the bundled model needs about a minute on the sample's first contexts).")
    page_link("pages/home.py", label="Go to Home", icon=":material/home:")
    page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")


def pairwise_only_note(have_pairwise_run: bool) -> None:
    """On a page that applies to pairwise runs only: say why the store's prompt-scoring runs are not
    in its run picker (an info when there is no pairwise run to show, a sidebar note otherwise)."""
    n = sum(1 for r in store().list_runs() if is_scoring_run(r))
    if not n:
        return
    text = (f"{n} prompt-scoring run(s) are not listed here: this page applies to pairwise runs "
            "(comparisons). See a scoring run's scores per candidate on **Rankings** and download "
            "them on **Export**.")
    if have_pairwise_run:
        st.sidebar.caption(text)
    else:
        st.info(text, icon=":material/info:")


class RunView:
    """Everything a result page needs about the selected run, read once per rerun (cached)."""

    def __init__(self, run) -> None:
        self.run = run
        self.url = db_url()
        self.n = int(run.n_comparisons or 0)
        self.dataset_id = int(run.dataset_id)
        self.dataset = cached_dataset(self.url, self.dataset_id)
        self.settings = RunSettings.from_dict(run.settings)
        self.parts, self.all_p = cached_parts(self.url, self.dataset_id, run.id, self.n)
        # Contexts the worker cut to fit the model: id -> characters kept.
        self.truncated: dict[str, int] = dict((run.plan or {}).get("truncated_contexts") or {})

    @property
    def key(self) -> tuple[str, int, int, int]:
        return self.url, self.dataset_id, self.run.id, self.n

    @property
    def tau_star(self) -> float:
        return analysis.resolve_tau("balanced", self.all_p)

    @property
    def context_ids(self) -> list[str]:
        return [cc.context.context_id for cc in self.parts]


# ------------------------------------------------------------------------------------ tau control

TAU_MODES = ("off", "balanced", "manual")
#: The default threshold: the balanced tau* raised Spearman in 7 of 8 TopicalChat cells and in both
#: SummEval coherence templates, and pairwise accuracy in every SummEval cell (docs/results.md);
#: where the judge has no positional bias tau* is 0.5 anyway.
DEFAULT_TAU_MODE = "balanced"
DEFAULTS_WHY = ("Defaults chosen from our measurements (docs/results.md): Bradley-Terry ranked "
                "above the win ratio in 8 of 8 TopicalChat cells, and the balanced tau* raised "
                "Spearman in 7 of 8 (pairwise accuracy in every SummEval cell).")


def _remember_tau_mode(tau_star: float) -> None:
    """The radio's callback: keep the mode (session and URL); a switch to manual starts the
    slider at the tau in use before the switch, not at a value of its own."""
    new = st.session_state["tau_mode_w"]
    old = recalled("tau_mode") or DEFAULT_TAU_MODE
    if new == "manual" and old != "manual":
        remember("tau", round(0.5 if old == "off" else tau_star, 3))
    remember("tau_mode", new)


def _remember_tau_manual() -> None:
    remember("tau", round(float(st.session_state["tau_manual_w"]), 3))


def remembered_tau_mode() -> str:
    mode = recalled("tau_mode")
    return mode if mode in TAU_MODES else DEFAULT_TAU_MODE


def remembered_manual_tau(tau_star: float) -> float:
    try:
        return min(max(float(recalled("tau") or round(tau_star, 3)), 0.001), 0.999)
    except ValueError:
        return round(tau_star, 3)


def tau_in_use(view: RunView) -> float:
    """The tau the remembered mode gives this run (balanced: the run's own tau*), without
    drawing the control: for a second run shown beside the first (Compare)."""
    mode = remembered_tau_mode()
    return {"off": 0.5, "balanced": view.tau_star,
            "manual": remembered_manual_tau(view.tau_star)}[mode]


def tau_control(view: RunView) -> float:
    """The sidebar threshold control shared by every result page; returns the current tau.

    ``off`` is eq. 3's natural threshold 0.5, ``balanced`` is tau* (the median of p, which makes
    P(A) = P(B) = 0.5, eq. 10), ``manual`` a slider. The choice and the manual value are kept in
    the session and the URL (``?tau_mode=manual&tau=0.62``), so they survive page switches and a
    refresh: the widgets are re-seeded from them on every page, because a keyed widget that a page
    does not draw loses its state.
    """
    tau_star = view.tau_star
    mode = remembered_tau_mode()
    manual = remembered_manual_tau(tau_star)
    st.session_state["tau_mode_w"] = mode
    st.session_state["tau_manual_w"] = manual
    labels = {"off": "off (tau = 0.5)", "balanced": f"balanced (tau* = {tau_star:.3f})",
              "manual": "manual"}
    st.sidebar.radio("Decision threshold tau (eq. 10)", TAU_MODES, key="tau_mode_w",
                     format_func=labels.get, on_change=_remember_tau_mode, args=(tau_star,),
                     help="A comparison is won by the first position (A) when p > tau. "
                          "tau* balances P(A) = P(B) = 0.5 and removes positional bias. "
                          + DEFAULTS_WHY)
    st.sidebar.slider("tau", min_value=0.001, max_value=0.999, step=0.001, format="%.3f",
                      key="tau_manual_w", disabled=mode != "manual", on_change=_remember_tau_manual,
                      help=f"The balancing value tau* = {tau_star:.4f} is marked in the "
                           "gauges and histograms.")
    remember("tau_mode", mode)
    tau = tau_in_use(view)
    marker = " (balanced, the default: see the control's help)" if mode == "balanced" else ""
    st.sidebar.caption(f"Current tau = {tau:.4f}{marker}; tau* = {tau_star:.4f} on "
                       f"{len(view.all_p):,} comparisons.")
    return tau


def use_balanced_tau() -> None:
    """The one-click remedy of a position-biased judge: switch every page to tau*."""
    remember("tau_mode", "balanced")


def judge_warning(view: RunView, tau: float, where=st) -> None:
    """A plain warning when the judge's verdicts follow the position (P(A) or P(B) far from 0.5)
    or flip with the order, with its numbers and the one-click remedy
    (``diagnosis.PositionDiagnosis``)."""
    diagnosis = analysis.position_diagnosis(view.parts, tau)
    message = diagnosis.message()
    if message is None:
        return
    remedy = diagnosis.remedy()
    box = where.container(border=True)
    box.warning(f"Judge of run {plain(view.run.name)}: {message}", icon=":material/warning:")
    if remedy:
        box.caption(remedy)
    if not diagnosis.balanced:
        box.button("Use the balanced tau* (removes the positional bias)", on_click=use_balanced_tau,
                   icon=":material/balance:", key=f"remedy_{view.run.id}")


def partial_warning(run, where=st) -> None:
    """Label the numbers of a run that stopped before its plan was complete."""
    from compassess_core.diagnosis import partial_run_note
    note = partial_run_note(run.status, run.done, run.total, kind_of(run.settings or {}).unit)
    if note:
        where.warning(f"Run {plain(run.name)}: {note}", icon=":material/pie_chart:")


def length_bias_metrics(where, lb, what: str = "comparisons") -> None:
    """The two headline numbers of a ``length_bias.LengthBias``: the longer text's share of wins
    and the logistic slope per doubling of the length ratio (Bias and Leaderboard pages)."""
    where.metric(f"Longer text wins at tau = {lb.tau:.3f}", fmt(lb.longer_wins, ".1%"),
                 help=f"Share of the {lb.n_length_differs:,} {what} whose texts differ in length "
                      "that the longer text won (eq. 10 verdicts); 50% = no length preference.")
    where.metric("Slope per doubling of length", fmt(lb.slope_per_doubling, "+.3f") + " log-odds",
                 help=f"Logistic fit of p on log2(len A / len B) over the {lb.n_comparisons:,} "
                      f"{what}: the change in log-odds of 'A wins' when A is twice as long as B "
                      "(0 = blind to length).")


def download_with_settings(columns, data: bytes, sidecar: bytes | None, stem: str, fmt: str,
                           key: str) -> None:
    """A file's download button and, for CSV and Parquet, its ``.settings.json`` sidecar's, in two
    columns (JSON holds the settings itself)."""
    mime = {"csv": "text/csv", "json": "application/json", "parquet": "application/octet-stream"}
    columns[0].download_button(f"Download {stem.rsplit('-', 1)[-1]}.{fmt}", data,
                               file_name=f"{stem}.{fmt}", mime=mime[fmt],
                               icon=":material/download:", key=key)
    if sidecar is not None:
        columns[1].download_button("Download its settings (.settings.json)", sidecar,
                                   file_name=f"{stem}.{fmt}.settings.json",
                                   mime="application/json", key=f"{key}_settings")


# ------------------------------------------------------------------------------------ formatting

def preview(text: str | None, n: int = PREVIEW_CHARS) -> str:
    if text is None:
        return ""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= n else flat[: n - 1] + "\u2026"


def fmt(value: float | None, spec: str = ".1f", missing: str = "n/a") -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return missing
    return format(value, spec)


def line_labels(lines, min_gap: float = 0.02) -> list[tuple[float, str, str]]:
    """Labels of vertical marker lines ``(x, name, colour)``: lines closer than ``min_gap`` share
    one label ("0.5 = current tau") so no two labels are drawn over each other."""
    merged: list[tuple[float, list[str], str]] = []
    for x, name, color in sorted(lines, key=lambda line: line[0]):
        if merged and abs(x - merged[-1][0]) < min_gap:
            merged[-1][1].append(name)
        else:
            merged.append((x, [name], color))
    return [(x, " = ".join(names), color) for x, names, color in merged]


# ----------------------------------------------------------------------------------- the worker

def worker_log_path(run_name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_name)[:120]
    return home_dir() / "logs" / f"worker-{safe}.log"


def check_app_model(model: str) -> None:
    """Refuse a served judge whose server is not configured for the app (the allowlist of
    ``judges.servers``), before anything is requested from it.

    Raises
    ------
    InputError
        A served model spec that is malformed or names a server that is not configured.
    """
    from compassess_core.judges.openai_judge import is_openai_spec, parse_spec
    from compassess_core.judges.servers import check_configured
    if is_openai_spec(model):
        check_configured(parse_spec(model).base_url)


def start_worker(run) -> Path:
    """Start a worker process (``api.Run.start_worker``) for a stored run; returns its log file.

    The run is marked running (with a fresh heartbeat) first, so a second click or a second browser
    sees a live worker and does not start another one. A run whose served judge is not one of the
    app's configured servers is refused (``InputError``) and nothing starts.
    """
    check_app_model(str((run.settings or {}).get("model") or ""))
    log = worker_log_path(run.name)
    api.Run(api_store(), run).start_worker(log, cwd=REPO_ROOT)
    return log


def log_tail(path: Path, n_lines: int = 12) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n_lines:])


def rate_and_eta(run) -> tuple[float | None, float | None]:
    """The worker's own rate (units per second of judging, this session) and the ETA in s."""
    rate = getattr(run, "rate", None)
    if not rate:
        return None, None
    left = max(int(run.total or 0) - int(run.done or 0), 0)
    return float(rate), left / float(rate)


# ---------------------------------------------------------------------------- comparison view

@st.cache_resource(show_spinner="Loading the judge to show its chat template ...", max_entries=2)
def _judge_for_render(model: str, device: str, dtype: str):
    from compassess_core.judges import load_judge
    return load_judge(None if is_bundled(model) else model, device="cpu", dtype=dtype,
                      batch_size=1)


def open_comparison(context_id: str, first: str, second: str) -> None:
    st.session_state["open_comparison"] = (context_id, first, second)


def comparison_view(view: RunView, context_id: str, first: str, second: str, tau: float) -> None:
    """Both texts side by side, the exact prompt, p in both orders, label mass and a flip flag."""
    ctx = view.dataset.context(context_id)
    ids = ctx.candidate_ids
    a, b = ids.index(first), ids.index(second)
    fwd = store().get_comparison(view.run.id, context_id, first, second)
    rev = store().get_comparison(view.run.id, context_id, second, first)
    st.subheader(f"Comparison in context {plain(context_id)}")
    st.caption("Texts are shown exactly as stored (plain text, never rendered).")
    with st.expander("Context", expanded=False):
        st.text(ctx.text)
    left, right = st.columns(2)
    for col, cand, label in ((left, ctx.candidates[a], "A (first position)"),
                             (right, ctx.candidates[b], "B (second position)")):
        with col:
            st.markdown(f"**{label}:** {plain(cand.candidate_id)}"
                        + (f" — system {plain(cand.system)}" if cand.system else ""))
            st.text(cand.text)
    c1, c2, c3, c4 = st.columns(4)
    p_fwd = None if fwd is None else float(fwd["p"])
    p_rev = None if rev is None else float(rev["p"])
    a_id, b_id = plain(first), plain(second)
    c1.metric(f"p({a_id} first beats {b_id})", fmt(p_fwd, ".3f"))
    c2.metric(f"p({b_id} first beats {a_id})", fmt(p_rev, ".3f"))
    c3.metric("Label-word mass P(w_A)+P(w_B), this order",
              fmt(None if fwd is None else float(fwd.get("label_mass", np.nan)), ".3f"))
    c4.metric("Label-word mass, swapped order",
              fmt(None if rev is None else float(rev.get("label_mass", np.nan)), ".3f"))
    if p_fwd is not None and p_rev is not None:
        # Order-consistent verdicts name the same winner: first wins one order iff it loses the other.
        flips = (p_fwd > tau) == (p_rev > tau)
        winner_fwd = a_id if p_fwd > tau else b_id
        winner_rev = b_id if p_rev > tau else a_id
        if flips:
            st.error(f"The verdict FLIPS with the order at tau = {tau:.3f}: with {a_id} first the "
                     f"winner is {winner_fwd}; with {b_id} first the winner is {winner_rev}.",
                     icon=":material/swap_horiz:")
        else:
            st.success(f"Order-consistent at tau = {tau:.3f}: {winner_fwd} wins in both orders.",
                       icon=":material/check:")
    elif p_fwd is None:
        st.warning("This ordered pair was not compared in this run.")
    else:
        st.info("The swapped order was not compared in this run, so a flip cannot be checked.")
    kept = view.truncated.get(context_id)
    prompt = render_prompt(ctx, a, b, view.settings, truncated_text(ctx.text, kept))
    if kept is not None:
        st.warning(f"The context passage was truncated to its first {kept:,} of {len(ctx.text):,} "
                   "characters to fit the model's context window (the run's 'truncate long "
                   "contexts' setting); the prompt below is the one the judge saw.",
                   icon=":material/content_cut:")
    st.markdown("**The exact prompt sent** (user message, then the answer primer the model continues):")
    st.code(prompt.text, language=None, wrap_lines=True)
    st.code(prompt.primer, language=None)
    if st.checkbox("Show it with the model's chat template (loads the judge, a few seconds)",
                   key=f"chat_{view.run.id}_{context_id}_{first}_{second}"):
        try:
            judge = _judge_for_render(view.settings.model, view.settings.device, view.settings.dtype)
            st.code(judge.render(prompt), language=None, wrap_lines=True)
        except Exception as e:  # noqa: BLE001 - the view must survive a model that cannot load
            st.warning(f"Could not load the judge to render its chat template: {plain(str(e))}")


# ------------------------------------------------------------------------------- method control

CI_HELP = "200 resamples of each context's comparisons (percentile bootstrap); slower on big runs."


def ci_control(where, n_comparisons: int) -> bool:
    """The 'Bootstrap 95% CI' switch, shared by Rankings and Export (what one shows, the other
    exports), kept across pages and in the URL."""
    want = recalled("ci")
    st.session_state["ci_w"] = (want == "True") if want in ("True", "False") else n_comparisons <= 5_000
    on = where.checkbox("Bootstrap 95% CI", key="ci_w", help=CI_HELP,
                        on_change=lambda: remember("ci", st.session_state["ci_w"]))
    remember("ci", on)
    return bool(on)


def default_reference_index(references: list[str], settings: RunSettings) -> int:
    """The run's aspect when the dataset has a column of that name (a coherence run is checked
    against 'coherence'), else the first reference column."""
    return references.index(settings.aspect) if settings.aspect in references else 0


METHOD_LABELS = {"win-ratio": "win ratio (eq. 6)", "avg-prob": "average probability",
                 "bradley-terry": "Bradley-Terry (soft)", "poe": "product of experts (Gaussian)"}


def method_control() -> str:
    """The ranking-method picker shared by the result pages (kept across page switches and in the
    URL, re-seeded on every page as the tau control is)."""
    from compassess_core.ranking import METHODS
    methods = list(METHODS)
    method = recalled("method")
    st.session_state["method_w"] = method if method in methods else DEFAULT_METHOD
    method = st.sidebar.selectbox("Ranking method", methods, key="method_w",
                                  format_func=lambda m: METHOD_LABELS.get(m, m),
                                  on_change=lambda: remember("method", st.session_state["method_w"]),
                                  help=DEFAULTS_WHY)
    remember("method", method)
    return method


def result_page_header(title: str) -> tuple[RunView, float, str] | None:
    """Title, run picker, method and tau controls; None (with guidance shown) when there is no run.

    Lists pairwise runs only; prompt-scoring runs get a note saying where they are shown.
    """
    st.title(title)
    run = pick_run()
    if run is None:
        no_run_message()
        pairwise_only_note(False)
        return None
    pairwise_only_note(True)
    return run_controls(run)


def run_controls(run) -> tuple[RunView, float, str] | None:
    """The method and tau controls of a pairwise run picked by the page; None (with a warning)
    when none of its comparisons matches its dataset."""
    view = RunView(run)
    if len(view.all_p) == 0:
        st.warning(f"Run {plain(run.name)} has comparisons, but none matches its dataset's "
                   "candidates.")
        return None
    method = method_control()
    tau = tau_control(view)
    if is_active(worker_state(run)):
        st.info(f"Run {plain(run.name)} is still running ({run.n_comparisons:,}/{run.total or '?'} "
                "comparisons stored): numbers here use what is stored so far.",
                icon=":material/hourglass_top:")
    else:
        partial_warning(run)
    judge_warning(view, tau)
    return view, tau, method


# ----------------------------------------------------------------------- human judgements

#: Aspect used for human labels when nothing else suggests one (the CLI's import default).
DEFAULT_ASPECT = "overall"


def aspect_options(dataset_id: int) -> list[str]:
    """Aspects worth offering for a dataset: the presets, its runs' aspects and its stored labels'."""
    from compassess_core.prompts import ASPECT_ADJECTIVES
    run_aspects = [r.settings.get("aspect") for r in store().list_runs(dataset_id)]
    labelled = store().human_judgements_frame(dataset_id)["aspect"].tolist()
    extra = sorted({str(a) for a in run_aspects + labelled if a} - set(ASPECT_ADJECTIVES))
    return list(ASPECT_ADJECTIVES) + extra


def pick_aspect(dataset_id: int, where=st.sidebar, label: str = "Aspect judged") -> str:
    """An aspect picker for human judgements, defaulting to the newest run's aspect (kept in the URL)."""
    options = aspect_options(dataset_id)
    runs = store().list_runs(dataset_id)
    want = recalled("aspect") or (runs[-1].settings.get("aspect") if runs else None) or DEFAULT_ASPECT
    index = options.index(want) if want in options else options.index(DEFAULT_ASPECT)
    chosen = where.selectbox(label, options, index=index, key="aspect_w",
                             format_func=lambda a: plain(a, "text"),
                             help="Human judgements are stored per dataset and aspect; the Agreement "
                                  "page compares a run with the labels of the run's aspect.")
    remember("aspect", chosen)
    return chosen


def aspect_question(aspect: str) -> str:
    """The question people answer, in the prompts' words ("Which text is more coherent?"), as
    markdown: an own aspect description is shown through :func:`plain`."""
    from compassess_core.prompts import ASPECT_ADJECTIVES, Aspect
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


@st.cache_data(show_spinner="Computing agreement ...", max_entries=16)
def cached_agreement(url: str, dataset_id: int, run_id: int, n_comparisons: int,
                     human: pd.DataFrame, tau: float) -> api.Agreement:
    """``Run.agreement``: everything the Agreement page shows for one run, one set of human labels
    and one tau (its ``summary`` is what ``compassess agreement`` prints). Keyed by the human
    table's content, so a new or undone judgement recomputes it.
    """
    return cached_run(url, run_id, n_comparisons).agreement(human, tau)
