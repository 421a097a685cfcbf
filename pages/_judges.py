"""UI blocks for choosing a judge knowingly and for using human labels beyond agreement: the model
catalog (Run), calibration on human labels (Agreement, and the probability source of Rankings),
rankings fused from the judge and the humans (Rankings).

Every number comes from the Python API (``Store.judges_on_this_machine``, ``Run.calibrate``,
``Run.fused_rankings``; cached here per run, labels and settings); this module only lays them
out, labelled with what they were computed on. It must never compute a statistic itself, issue SQL, or render user text as markdown
(names go through ``plain``; texts through ``st.dataframe``).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from compassess_core import api
from compassess_core.stats.calibration import DEFAULT_FOLDS, ECE_BINS
from compassess_core.errors import InputError
from compassess_core.stats.fusion import DEFAULT_HUMAN_WEIGHT
from pages import _view as view
from pages._plain import plain_message
from pages._common import (AppRun, api_store, at_tau, db_url, fmt, plain, preview, run_controls,
                           show_chart)
from compassess_core.api import counted

#: The Rankings sidebar choice of probabilities.
RAW, CALIBRATED = "as the judge gave them", "calibrated on human labels"


# ----------------------------------------------------------------------------------- the catalog

@st.cache_data(show_spinner=False, ttl=30)
def _cached_catalog(url: str, where: tuple) -> api.JudgeCatalog:
    return api_store().judges_on_this_machine()


def _catalog(url: str) -> api.JudgeCatalog:
    """The judges on this machine, read again after 30 s or when the models folder moves."""
    return _cached_catalog(url, (os.environ.get("COMPASSESS_MODELS_DIR", ""),
                                 os.environ.get("COMPASSESS_HOME", "")))


def local_model_picker(where, key: str = "catalog_model") -> str:
    """A selectbox (widget ``key``) over the models folder's models (not the bundled one);
    returns the ``--model`` value, or "" when the folder holds none (with a note saying where
    to put them)."""
    judges = _catalog(db_url())
    entries = judges.in_folder
    if not entries:
        where.caption(f"No model in the models folder {plain(judges.folder)} yet: put a .gguf "
                      "file or a transformers folder there (or set COMPASSESS_MODELS_DIR).")
        return ""
    labels = {e.spec: _entry_label(e) for e in entries}
    return where.selectbox("Model in the models folder", list(labels), format_func=labels.get,
                           key=key)


def _entry_label(e) -> str:
    size = f"{e.size_bytes / 1e9:.2f} GB" if e.size_bytes else "size ?"
    window = f"{e.context_window:,} tokens" if e.context_window else "window ?"
    speed = f", {e.speed.rate:.2f} comparisons/s here" if e.speed else ""
    return f"{e.name} ({size}, {window}{speed})"


def catalog_expander() -> None:
    """The judges on this machine and the recommended ones, in an expander."""
    with st.expander("Judges on this machine, and which to get", icon=":material/memory:"):
        judges = _catalog(db_url())
        st.dataframe(plain(judges.frame(), "text"), hide_index=True, width="stretch", placeholder="")
        st.caption(f"The bundled judge and every .gguf file or transformers folder in the models "
                   f"folder {plain(judges.folder)} (COMPASSESS_MODELS_DIR). Size on disk; "
                   "parameters and context window (the longest prompt in tokens) read from the "
                   "file's header; "
                   "speed: median comparisons/s (pairwise runs) and candidates/s (prompt scoring) "
                   "of this model's earlier runs in this store, empty when never run here. "
                   "`compassess models` prints the same.")
        st.dataframe(pd.DataFrame([dict(hardware=r.hardware, hub_id=r.hub_id, why=r.why)
                                   for r in judges.recommended]), hide_index=True, width="stretch", placeholder="")
        st.caption("Recommended hub ids by hardware (they need the model hub, or a copy in the "
                   "models folder). The bundled 135M judge is at chance on every benchmark in "
                   "docs/results.md: use it to try the app, not for results.")


# ------------------------------------------------------------------------------ calibration

def run_labels(run: AppRun) -> pd.DataFrame:
    """The stored human judgements of the run's dataset and aspect (``Run.human_labels``)."""
    return run.human_labels()


def run_with_probability_source(run: AppRun) -> tuple[AppRun, float, str]:
    """The method and tau controls (``_common.run_controls``) and the choice of probabilities
    (:func:`probability_source`) of a page that reads a run raw or calibrated: the run to read,
    its tau and the ranking method; the page stops when the run has nothing to show."""
    header = run_controls(run)
    if header is None:
        st.stop()
    run, tau, method = header
    run, tau = probability_source(run, tau)
    return run, tau, method


def probability_source(run: AppRun, tau: float) -> tuple[AppRun, float]:
    """The sidebar choice between the judge's p and p calibrated on the run's human labels.

    Returns the run to read numbers from (``Run.calibrated`` for the calibrated p; the run
    itself for the raw p, also when there are no labels to fit) and the threshold to use with
    it: ``tau`` as the sidebar set it, except that *balanced* means the balancing threshold of
    the calibrated p."""
    human = run_labels(run)
    if len(human) == 0:
        return run, tau
    choice = st.sidebar.radio("Judge probabilities", (RAW, CALIBRATED), key="probability_source",
                              help="Calibrated: p_cal = sigmoid((logit p - bias) / temperature), "
                                   "bias and temperature fitted on the stored human labels of "
                                   "this dataset and aspect (Agreement page; `compassess "
                                   "calibrate`). The calibration removes the positional bias, so "
                                   "tau off (0.5) is its natural threshold.")
    if choice == RAW:
        return run, tau
    try:
        calibrated = run.calibrated(human)
    except InputError as e:
        st.sidebar.warning(f"Cannot calibrate: {plain_message(e)}")
        return run, tau
    if view.tau_mode() == "balanced":
        tau = calibrated.tau("balanced")
    cal = calibrated.calibration
    st.sidebar.caption(f"Calibrated on {cal['n_pairs']} human-labelled pairs "
                       f"({counted(cal['n_comparisons'], 'comparison')}): bias {cal['bias']:.3f} "
                       "log-odds, "
                       f"temperature {cal['temperature']:.3f}. Threshold on the calibrated p: "
                       f"{at_tau(tau, 4)}.")
    return calibrated, tau


def _reliability_figure(report: api.CalibrationReport) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated judge",
                             line=dict(dash="dash", color="grey")))
    for name, color in (("raw", "#e67700"), ("calibrated", "#3b5bdb")):
        t = report.reliability[name]
        t = t[t["n"] > 0]
        fig.add_trace(go.Scatter(x=t["mean_p"], y=t["frequency"], mode="lines+markers",
                                 name=f"{name}{' (held-out folds)' if name == 'calibrated' else ''}",
                                 marker=dict(size=6 + 14 * t["n"] / max(t["n"].max(), 1),
                                             color=color),
                                 customdata=t["n"],
                                 hovertemplate="mean p %{x:.3f}<br>share first preferred "
                                               "%{y:.3f}<br>%{customdata} comparisons<extra></extra>"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10),
                      # A little room beyond 0 and 1, so a bin at either end shows whole.
                      xaxis=dict(title="predicted P(first preferred), bin mean",
                                 range=[-0.04, 1.04]),
                      yaxis=dict(title="share of comparisons whose first text people preferred",
                                 range=[-0.04, 1.04]))
    fig.update_traces(cliponaxis=False)
    return fig


def calibration_section(run: AppRun, human: pd.DataFrame, aspect: str) -> None:
    """Agreement page: the bias and temperature fitted on these labels, accuracy, log-loss and ECE
    raw / balanced tau / calibrated (held-out folds), and the reliability diagram."""
    st.header("Calibration on these labels")
    folds = st.number_input("Cross-validation folds (labelled pairs)", 2, 20,
                            DEFAULT_FOLDS, key="calibration_folds")
    try:
        with st.spinner("Calibrating the judge on the human labels ..."):
            report = run.calibrate(labels=human, folds=int(folds))
    except InputError as e:
        st.info(f"Calibration needs at least two labelled pairs that the run judged, with a "
                f"decisive majority: {plain_message(e)}")
        return
    cal, raw, deb, held = report.calibration, report.raw, report.debiased, report.calibrated
    c1, c2, c3 = st.columns(3)
    c1.metric("Bias b (log-odds)", f"{cal.bias:.3f}",
              help="Positional bias of the judge in log-odds: > 0 favours the first position. "
                   f"Fitted on all {cal.n_pairs} labelled pairs "
                   f"({counted(cal.n_comparisons, 'comparison')}).")
    c2.metric("Temperature T", f"{cal.temperature:.3f}",
              help="> 1: the judge is over-confident (its p are pulled towards 0.5); < 1: "
                   "under-confident. p_cal = sigmoid((logit p - b) / T).")
    c3.metric("Held-out accuracy per comparison", fmt(100 * held.accuracy, ".1f") + " %",
              delta=f"{100 * (held.accuracy - raw.accuracy):+.1f} pts vs raw",
              help=f"On {counted(held.n_comparisons, 'comparison')} of labelled pairs, each fold "
                   "calibrated "
                   f"by a fit on the other {report.folds - 1} folds.")
    rows = [("accuracy per comparison (p > 0.5)", "accuracy", ".3f"),
            ("log-loss per comparison (nats; 0.693 = a coin)", "log_loss", ".3f"),
            (f"expected calibration error ({ECE_BINS} bins of p)", "ece", ".3f"),
            (f"pair accuracy, ties left out ({counted(held.n_pairs, 'pair')})", "pair_accuracy", ".3f"),
            ("pair Cohen's kappa, ties left out", "pair_kappa", ".3f")]
    table = pd.DataFrame([{"measure": label, "raw (tau = 0.5)": fmt(getattr(raw, key), spec),
                           f"balanced tau* = {report.tau:.3f}, no labels": fmt(getattr(deb, key), spec),
                           f"calibrated ({report.folds}-fold held out)": fmt(getattr(held, key), spec)}
                          for label, key, spec in rows])
    st.dataframe(table, hide_index=True, width="stretch", placeholder="")
    st.caption(f"On {counted(raw.n_comparisons, 'comparison')} of {counted(held.n_pairs, 'pair')} "
               "of aspect "
               f"{plain(aspect)} with a decisive human majority (both orders of a pair in the "
               "same fold). Per comparison: y = 1 when people preferred the text shown first. Pair "
               "level: the order-averaged verdict against the majority, as above. "
               + " ".join(f"Note: {n}." for n in report.notes))
    show_chart(st, _reliability_figure(report), key="reliability", width="stretch")
    st.caption(f"Reliability diagram: {ECE_BINS} equal-width bins of p; a calibrated "
               "judge lies on the diagonal (marker size: comparisons in the bin). Rankings, "
               "Export and `compassess rank|evaluate|export --calibrate` use the fit on all labels.")


# ------------------------------------------------------------------------------------ fusion

WEIGHT_CHOICES = ("cross-validated", "set", "humans only")


def fused_section(run: AppRun, tau: float, reference: str | None) -> None:
    """Rankings page: the judge's comparisons (calibrated when ``run`` is the calibrated view)
    and the human labels in one ranking (``Run.fused_rankings``)."""
    st.header("Ranking with human labels (judge + people)")
    human = run_labels(run)
    if len(human) == 0:
        st.info(f"No human labels of {plain(run.settings.aspect)} for this dataset yet. "
                "Judge pairs on **Annotate** (the mode 'where a label most reduces the ranking's "
                "uncertainty' picks the most useful ones) or import a label file; they are then "
                "fused with the judge's comparisons here.", icon=":material/rate_review:")
        return
    c1, c2, c3 = st.columns(3)
    how = c1.radio("Weight of one human vote", WEIGHT_CHOICES, key="fusion_weight_mode",
                   help="In judge comparisons: cross-validated (leave-one-out over the votes), set "
                        "by you, or the humans alone (the judge left out).")
    weight = None
    if how == "set":
        weight = float(c1.number_input("judge comparisons per vote", 0.0, 10_000.0,
                                       DEFAULT_HUMAN_WEIGHT, key="fusion_weight"))
    elif how == "humans only":
        weight = math.inf
    systems_known = all(c.system is not None for ctx in run.dataset.contexts for c in ctx.candidates)
    level = c2.radio("Level", ("context", "system") if systems_known else ("context",),
                     key="fusion_level", help="Candidates within each context, or the systems "
                                              "across all contexts.")
    try:
        with st.spinner("Fusing the judge's comparisons with the human labels ..."):
            fused = run.fused_rankings(level=level, debias=tau, weight=weight,
                             aspect=run.settings.aspect)
    except InputError as e:
        st.warning(f"Cannot fuse these labels with the run: {plain_message(e)}")
        return
    choice = fused.choice
    shown_weight = "humans only" if math.isinf(choice.weight) else f"{choice.weight:g}"
    c3.metric("One vote counts as (judge comparisons)", shown_weight,
              help=f"{choice.chosen_by}; {choice.n_votes} human votes ({choice.n_decisive} "
                   "decisive).")
    if reference and level == "context":
        ev = fused.correlation(reference)
        c3.metric(f"Spearman x100 vs {plain(reference)}", fmt(ev.mean_x100),
                  help=f"Per-context Spearman of the fused scores with the reference column, "
                       f"mean over {ev.n_used} context(s).")
    frame = fused.by_rank()   # best first in each context, as `compassess rank --with-humans`
    if level == "context":
        frame = frame.assign(text=frame["text"].map(preview))
    st.dataframe(plain(frame, "text"), hide_index=True, width="stretch",
                 height=min(35 * (len(frame) + 1) + 3, 500),
                 column_config={"score": st.column_config.NumberColumn("fused score", format="%.4f"),
                                "sd": st.column_config.NumberColumn("posterior sd", format="%.4f"),
                                "n_comparisons": st.column_config.NumberColumn("judge comparisons"),
                                "n_votes": st.column_config.NumberColumn("human votes"),
                                # in view while the table scrolls sideways (at 1024 px)
                                "candidate_id": st.column_config.TextColumn("candidate_id",
                                                                            pinned=True),
                                "text": st.column_config.TextColumn("text (preview)",
                                                                    width="medium")},
                 placeholder="")
    st.caption(f"{counted(len(frame), 'row')}; scores: the posterior mean of one Gaussian product "
               "of experts "
               f"over {run.n_comparisons:,} judge comparisons at {at_tau(tau)}"
               f"{' (p calibrated)' if run.calibration is not None else ''} and {choice.n_votes} "
               f"human votes of {plain(run.settings.aspect)}; sd: its posterior standard "
               "deviation. "
               "`compassess rank --with-humans` prints the same.")
    if np.isfinite(choice.loo_accuracy).any():
        with st.expander("How the weight was chosen (leave-one-out over the votes)"):
            st.dataframe(choice.table(), hide_index=True, width="stretch",
                         column_config={"loo_accuracy": st.column_config.NumberColumn(
                             "held-out vote accuracy", format="%.3f"),
                             "loo_squared_error": st.column_config.NumberColumn(
                                 "held-out squared error", format="%.5f")}, placeholder="")
            st.caption(f"Each of the {choice.n_decisive} decisive votes predicted by the fit "
                       "without it; the weight with the highest share of correct signs wins.")
