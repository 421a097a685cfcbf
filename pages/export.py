"""Export: rankings and all comparisons of a run as CSV, JSON or Parquet, with the run's settings
inside (JSON) or in a sidecar (CSV, Parquet), CSV cells neutralised against formula injection; and
the run's audit report, one self-contained HTML file (``Run.report_html``, what
``compassess report`` writes).

A prompt-scoring run exports its per-candidate scores (ranked by the G-Eval expected score), the
same file as ``compassess export --run NAME --what rankings``.

Files are produced by ``compassess_core.data.export``; this page must never format cells itself.
"""

from __future__ import annotations

import shlex

import streamlit as st

from compassess_core import api
from compassess_core.api import EXPORT_FORMATS as FORMATS
from pages._auth import guard
from pages._common import (at_tau, baseline_control, ci_control, db_url, debias_in_use,
                           download_with_settings, fit_columns, is_scoring_run, page_run, partial_warning, plain,
                           prepared_download, run_controls)
from pages._judges import probability_source
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

FORMAT_HELP = ("CSV cells starting with = + - @ are prefixed with ' so a spreadsheet cannot run them. "
               "JSON holds the settings inside; CSV and Parquet get a .settings.json sidecar.")

run = page_run("Export", with_scoring=True)
safe = api.file_name(run.name)

if is_scoring_run(run):
    st.sidebar.info("Ranking method and tau apply to pairwise runs only; a prompt-scoring run "
                    "exports its scores per candidate.", icon=":material/info:")
    partial_warning(run)
    fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
    done = int(run.info.done or 0)
    st.subheader(f"Scores per candidate ({counted(done, 'candidate')} scored)")
    exported = run.export_bytes(what="rankings", fmt=fmt_choice, which="expected")
    download_with_settings(st.columns(2), exported.data, exported.sidecar, f"{safe}-scores",
                           fmt_choice, "dl_scores")
    st.caption(f"{len(exported.data) / 1024:,.0f} KiB; one row per candidate, ranked within its "
               "context by the expected score (G-Eval, 1–10, from the model's distribution over "
               "the score tokens), with the argmax score, the probability mass on the scores 1–10 "
               "and the reference columns: the file `compassess export --what rankings` writes. "
               "The first rows:")
    st.dataframe(plain(exported.frame.head(10), into="text"), hide_index=True, width="stretch", placeholder="")
    st.subheader("Settings recorded with every file")
    st.json(exported.metadata, expanded=False)
    st.stop()

header = run_controls(run)
if header is None:
    st.stop()
run, tau, method = header
judged = run  # the judge's own p: the report shows the calibration as a section of its own
run, tau = probability_source(run, tau)
# What `compassess export --debias` takes: the mode's name (balanced: this run's own tau*, of the
# calibrated p when calibrated) or the manual value.
debias = debias_in_use()

fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format", help=FORMAT_HELP)
with_ci = ci_control(st, run.n_comparisons)
metadata = None
for what, label in (("rankings", f"Rankings ({method}, {at_tau(tau)})"),
                    ("comparisons", f"All comparisons ({run.n_comparisons:,})")):
    st.subheader(label)
    exported = run.export_bytes(what=what, fmt=fmt_choice, method=method, debias=debias,
                        ci=with_ci)
    download_with_settings(st.columns(2), exported.data, exported.sidecar, f"{safe}-{what}",
                           fmt_choice, f"dl_{what}")
    st.caption(f"{len(exported.data) / 1024:,.0f} KiB; the first rows:")
    first = plain(exported.frame.head(10), into="text")
    # Every column of the file: wider than 1024 px, so what names a row stays in view.
    st.dataframe(first, hide_index=True, width="stretch", placeholder="",
                 column_config=fit_columns(first, pin=[c for c in first.columns
                                                       if c in ("context_id", "candidate_id")]))
    metadata = metadata or exported.metadata

st.subheader("Audit report (one HTML file)")
baseline = baseline_control(judged, st, "report_baseline_w")
# Made on request in the page (an error shows under the button), then offered for download.
prepared_download(st, "Download the audit report (HTML)",
                  lambda: judged.report_html(method=method, debias=debias, baseline=baseline),
                  key="dl_report", made_for=(db_url(), judged.id, method, debias, baseline),
                  file_name=f"{safe}-report.html", mime="text/html", what="the audit report")
st.caption(f"One file for a reader who was not here: the setup (data, judge, template, aspect, pair "
           f"selection, every setting), the leaderboard with 95% intervals, positional and length "
           f"bias, agreement with human labels and calibration where there are labels, the "
           f"evaluation against reference scores, the most order-dependent and human-disputed "
           f"comparisons with their exact prompts, and the methods. Read with {method} at "
           f"{judged.threshold_label(debias, 3)} on the judge's own p. It opens offline: charts "
           "and scripts are inside, nothing is fetched, and every text from the data is shown "
           "as stored. The same file from the command line:")
st.code(f"compassess report --run {shlex.quote(judged.name)} --method {method} --debias {debias} "
        + (f"--baseline {shlex.quote(baseline)} " if baseline else "") + "-o report.html",
        language="bash", wrap_lines=True)

st.subheader("Settings recorded with every file")
st.json(metadata, expanded=False)
cli = (f"compassess export --run {shlex.quote(run.name)} --what rankings --format {fmt_choice} "
       f"--method {method} --debias {debias}" + ("" if with_ci else " --no-ci")
       + (" --calibrate" if run.calibration is not None else "") + f" -o rankings.{fmt_choice}")
st.caption("The same files from the command line (byte for byte):")
st.code(cli, language="bash", wrap_lines=True)   # whole at 1024 px
