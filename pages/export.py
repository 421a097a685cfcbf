"""Export: rankings and all comparisons of a run as CSV, JSON or Parquet, with the run's settings
inside (JSON) or in a sidecar (CSV, Parquet), CSV cells neutralised against formula injection.

A prompt-scoring run exports its per-candidate scores (ranked by the G-Eval expected score), the
same file as ``compassess export --run NAME --what rankings``.

Files are produced by ``compassess_core.export``; this page must never format cells itself.
"""

from __future__ import annotations

import streamlit as st

from compassess_core.export import FORMATS
from pages._auth import guard
from pages._common import (CI_HELP, cached_scoring_export, ci_control, db_url,
                           download_with_settings, is_scoring_run, no_run_message,
                           partial_warning, pick_run, plain, run_controls)
from pages._judges import export_bytes, probability_source

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

FORMAT_HELP = ("CSV cells starting with = + - @ are prefixed with ' so a spreadsheet cannot run them. "
               "JSON holds the settings inside; CSV and Parquet get a .settings.json sidecar.")

st.title("Export")
run = pick_run(with_scoring=True)
if run is None:
    no_run_message()
    st.stop()
safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run.name)

if is_scoring_run(run):
    st.sidebar.info("Ranking method and tau apply to pairwise runs only; a prompt-scoring run "
                    "exports its scores per candidate.", icon=":material/info:")
    partial_warning(run)
    fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
    done, status = int(run.done or 0), str(run.status)
    metadata = dict(run=run.name, dataset=run.dataset_name, method="g-eval expected score",
                    n_scored=done, settings=run.settings)
    st.subheader(f"Scores per candidate ({done:,} candidates scored)")
    data, sidecar, head = cached_scoring_export(db_url(), int(run.dataset_id), run.id, done, status,
                                                fmt_choice, metadata)
    download_with_settings(st.columns(2), data, sidecar, f"{safe}-scores", fmt_choice, "dl_scores")
    st.caption(f"{len(data) / 1024:,.0f} KiB; one row per candidate, ranked within its context by "
               "the expected score (G-Eval, 1–10, from the model's distribution over the score "
               "tokens), with the argmax score, the probability mass on the scores 1–10 and the "
               "reference columns. The first rows:")
    st.dataframe(plain(head, into="text"), hide_index=True, width="stretch")
    st.subheader("Settings recorded with every file")
    st.json(metadata, expanded=False)
    st.stop()

header = run_controls(run)
if header is None:
    st.stop()
view, tau, method = header
url, dataset_id, run_id, n = view.key
calibrated, tau = probability_source(view, tau)

fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
with_ci = ci_control(st, n)
metadata = dict(run=view.run.name, dataset=view.dataset.name, method=method, tau=tau,
                tau_star=view.tau_star, n_comparisons=n, settings=view.run.settings,
                ci=(f"ci_low/ci_high: 95% percentile bootstrap, {CI_HELP}" if with_ci else None))
if calibrated is not None:
    metadata["calibration"] = calibrated.to_dict()

for what, label in (("rankings", f"Rankings ({method}, tau = {tau:.3f})"),
                    ("comparisons", f"All comparisons ({n:,})")):
    st.subheader(label)
    data, sidecar, head = export_bytes(view, what, fmt_choice, method, tau, metadata, calibrated,
                                       with_ci)
    download_with_settings(st.columns(2), data, sidecar, f"{safe}-{what}", fmt_choice, f"dl_{what}")
    st.caption(f"{len(data) / 1024:,.0f} KiB; the first rows:")
    st.dataframe(plain(head, into="text"), hide_index=True, width="stretch")

st.subheader("Settings recorded with every file")
st.json(metadata, expanded=False)
