"""Export: rankings and all comparisons of a run as CSV, JSON or Parquet, with the run's settings
inside (JSON) or in a sidecar (CSV, Parquet), CSV cells neutralised against formula injection.

Files are produced by ``compassess_core.export``; this page must never format cells itself.
"""

from __future__ import annotations

import streamlit as st

from compassess_core.export import FORMATS
from pages._common import cached_export, result_page_header

MIME = {"csv": "text/csv", "json": "application/json", "parquet": "application/octet-stream"}

header = result_page_header("Export")
if header is None:
    st.stop()
view, tau, method = header
url, dataset_id, run_id, n = view.key

fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="export_format",
                      help="CSV cells starting with = + - @ are prefixed with ' so a spreadsheet "
                           "cannot run them. JSON holds the settings inside; CSV and Parquet get a "
                           ".settings.json sidecar.")
metadata = dict(run=view.run.name, dataset=view.dataset.name, method=method, tau=tau,
                tau_star=view.tau_star, n_comparisons=n, settings=view.run.settings)
safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in view.run.name)

for what, label in (("rankings", f"Rankings ({method}, tau = {tau:.3f})"),
                    ("comparisons", f"All comparisons ({n:,})")):
    st.subheader(label)
    data, sidecar, head = cached_export(url, dataset_id, run_id, n, what, fmt_choice, method, tau,
                                        metadata)
    c1, c2 = st.columns(2)
    c1.download_button(f"Download {what}.{fmt_choice}", data, file_name=f"{safe}-{what}.{fmt_choice}",
                       mime=MIME[fmt_choice], icon=":material/download:", key=f"dl_{what}")
    if sidecar is not None:
        c2.download_button("Download its settings (.settings.json)", sidecar,
                           file_name=f"{safe}-{what}.{fmt_choice}.settings.json",
                           mime="application/json", key=f"dl_{what}_settings")
    st.caption(f"{len(data) / 1024:,.0f} KiB; the first rows:")
    st.dataframe(head, hide_index=True, width="stretch")

st.subheader("Settings recorded with every file")
st.json(metadata, expanded=False)
