"""Export: rankings and all comparisons of a run as CSV, JSON or Parquet, with the run's settings
inside (JSON) or in a sidecar (CSV, Parquet), CSV cells neutralised against formula injection.

A prompt-scoring run exports its per-candidate scores (ranked by the G-Eval expected score), the
same file as ``compassess export --run NAME --what rankings``.

Files are produced by ``compassess_core.export``; this page must never format cells itself.
"""

from __future__ import annotations

import shlex

import streamlit as st

from compassess_core.export import FORMATS
from pages._auth import guard
from pages._common import (ci_control, debias_in_use, download_with_settings, is_scoring_run,
                           page_run, partial_warning, plain)
from pages._judges import run_with_probability_source

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

FORMAT_HELP = ("CSV cells starting with = + - @ are prefixed with ' so a spreadsheet cannot run them. "
               "JSON holds the settings inside; CSV and Parquet get a .settings.json sidecar.")

run = page_run("Export", with_scoring=True)
safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run.name)

if is_scoring_run(run):
    st.sidebar.info("Ranking method and tau apply to pairwise runs only; a prompt-scoring run "
                    "exports its scores per candidate.", icon=":material/info:")
    partial_warning(run)
    fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
    done = int(run.info.done or 0)
    st.subheader(f"Scores per candidate ({done:,} candidates scored)")
    exported = run.read("export_bytes", what="rankings", fmt=fmt_choice, which="expected")
    download_with_settings(st.columns(2), exported.data, exported.sidecar, f"{safe}-scores",
                           fmt_choice, "dl_scores")
    st.caption(f"{len(exported.data) / 1024:,.0f} KiB; one row per candidate, ranked within its "
               "context by the expected score (G-Eval, 1–10, from the model's distribution over "
               "the score tokens), with the argmax score, the probability mass on the scores 1–10 "
               "and the reference columns: the file `compassess export --what rankings` writes. "
               "The first rows:")
    st.dataframe(plain(exported.frame.head(10), into="text"), hide_index=True, width="stretch")
    st.subheader("Settings recorded with every file")
    st.json(exported.metadata, expanded=False)
    st.stop()

run, tau, method = run_with_probability_source(run)
# What `compassess export --debias` takes: the mode's name (balanced: this run's own tau*, of the
# calibrated p when calibrated) or the manual value.
debias = debias_in_use()

fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
with_ci = ci_control(st, run.n_comparisons)
metadata = None
for what, label in (("rankings", f"Rankings ({method}, tau = {tau:.3f})"),
                    ("comparisons", f"All comparisons ({run.n_comparisons:,})")):
    st.subheader(label)
    exported = run.read("export_bytes", what=what, fmt=fmt_choice, method=method, debias=debias,
                        ci=with_ci)
    download_with_settings(st.columns(2), exported.data, exported.sidecar, f"{safe}-{what}",
                           fmt_choice, f"dl_{what}")
    st.caption(f"{len(exported.data) / 1024:,.0f} KiB; the first rows:")
    st.dataframe(plain(exported.frame.head(10), into="text"), hide_index=True, width="stretch")
    metadata = metadata or exported.metadata

st.subheader("Settings recorded with every file")
st.json(metadata, expanded=False)
cli = (f"compassess export --run {shlex.quote(run.name)} --what rankings --format {fmt_choice} "
       f"--method {method} --debias {debias}" + ("" if with_ci else " --no-ci")
       + (" --calibrate" if run.calibration is not None else "") + f" -o rankings.{fmt_choice}")
st.caption("The same files from the command line (byte for byte):")
st.code(cli, language="bash")
