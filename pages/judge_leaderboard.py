"""Judges: the leaderboard of judges on one dataset and aspect. Every pairwise run and every
panel on it, ranked by how well its verdicts agree with people (Cohen's kappa with the human
majority, ties left out, with 95% bootstrap intervals), else by Spearman with the dataset's
reference scores; beside it log-loss and calibration error raw and calibrated, positional and
length bias, and measured speed.

Every number comes from the Python API (``Store.judges``), cached per dataset, aspect and stored
state; this page computes nothing and shows names only as plain text.
"""

from __future__ import annotations

import streamlit as st

from compassess_core.errors import CompAssessError
from pages._auth import guard
from pages import _view as view
from pages._common import (api_store, db_url, is_pairwise, judges_stamp, list_runs,
                            pick_dataset, plain)

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

#: Bootstrap resamples for the intervals: the bounds of the page's input and its default.
BOOT_MIN, BOOT_MAX, BOOT_DEFAULT = 50, 5000, 1000  # 1000: the API and CLI default

st.title("Judges")
st.caption("Which judge to trust on this data: every run and panel of judges on one dataset and "
           "aspect, ranked by agreement with people.")

dataset = pick_dataset()
if dataset is None:
    st.info("No dataset is stored yet: load one on **Home** or **Upload**, and run judges on it.")
    st.stop()
runs = [r for r in list_runs(dataset.id) if is_pairwise(r) and (r.info.n_comparisons or 0) > 0]
aspects = sorted({r.settings.aspect for r in runs})
if not aspects:
    st.info("No pairwise run on this dataset yet: start one on **Run**.")
    st.stop()
c = st.columns(2)
# Both follow the view state (the URL), so a link to this page reproduces its numbers.
want = view.get("aspect")
st.session_state["judges_aspect"] = want if want in aspects else aspects[0]
aspect = c[0].selectbox("Aspect", aspects, key="judges_aspect",
                        format_func=lambda a: plain(a, "text"),
                        on_change=lambda: view.put("aspect", st.session_state["judges_aspect"]))
view.put("aspect", aspect)
want = view.get("boot")
st.session_state["judges_boot"] = (want if isinstance(want, int) and BOOT_MIN <= want <= BOOT_MAX
                                   else BOOT_DEFAULT)
n_boot = int(c[1].number_input("Bootstrap resamples (95% intervals)", min_value=BOOT_MIN,
                               max_value=BOOT_MAX, step=50, key="judges_boot",
                               on_change=lambda: view.put("boot", st.session_state["judges_boot"])))
view.put("boot", n_boot)


@st.cache_data(show_spinner="Ranking the judges…", max_entries=32)
def _judges(url: str, dataset_id: int, aspect: str, n_boot: int, stamp: tuple):
    return api_store().judges(dataset_id, aspect, n_boot=n_boot)


try:
    board = _judges(db_url(), dataset.id, aspect, n_boot, judges_stamp(dataset.id))
except CompAssessError as e:
    st.info(plain(str(e)))
    st.stop()

if board.basis == "kappa":
    st.caption(f"Ranked by Cohen's kappa of each judge's debiased pair verdicts (at its balanced "
               f"tau*) with the human majority, ties left out, on {board.n_labels:,} stored human "
               f"labels; 95% intervals from {board.n_boot:,} bootstrap resamples of the labelled "
               "pairs. Log-loss in nats and ECE on the labelled comparisons, raw and calibrated "
               "on held-out folds. A panel that uses labels (learnt weights, calibrated members) "
               "is scored on held-out folds.")
else:
    st.caption(f"No human labels for this aspect: ranked by Spearman x100 with the reference "
               f"column {plain(str(board.reference))} (win ratio at each judge's balanced tau*, "
               "mean over contexts).")
# Columns empty for every judge (no human labels, say) are left out rather than shown as "None".
# Digits each number carries (a kappa to 3 places, a Spearman x100 to 1): a column of
# 15-digit floats says nothing more and pushes the rest off the screen.
DIGITS = {**dict.fromkeys(["accuracy", "accuracy_low", "accuracy_high", "kappa", "kappa_low",
                           "kappa_high", "log_loss_raw", "log_loss_calibrated", "ece_raw",
                           "ece_calibrated", "flip_rate_raw", "longer_wins",
                           "length_slope_per_doubling"], 3),
          **dict.fromkeys(["p_a_raw", "comparisons_per_s"], 2),
          "spearman_x100": 1, "tokens_per_comparison": 0}
shown = plain(board.frame.dropna(axis=1, how="all"), into="text")
formats = {c: st.column_config.NumberColumn(c, format=f"%.{d}f")
           for c, d in DIGITS.items() if c in shown.columns}
# What the judges are ranked by comes right after their names; what they are (model, template,
# members) last, where a long path or member list does not push the numbers off the screen.
first = ["rank", "judge", "kind", "kappa", "kappa_low", "kappa_high", "accuracy",
         "spearman_x100", "n_labelled_pairs", "n_comparisons"]
last = ["model", "template", "members", "note"]
order = ([c for c in first if c in shown.columns]
         + [c for c in shown.columns if c not in first and c not in last]
         + [c for c in last if c in shown.columns])
st.dataframe(shown, hide_index=True, key="judges_table", column_order=order,
             column_config={**formats,
                            "note": st.column_config.TextColumn("note", width="large")},
             placeholder="")
st.caption("P(A) and flip rate at tau = 0.5 (the judge as it answers); longer_wins: share of "
           "comparisons won by the longer text; comparisons_per_s: as measured when the run "
           "executed (a panel: all its members' comparisons over their seconds together); "
           "tokens_per_comparison: prompt tokens the judge reads per comparison, counted with its "
           "tokenizer when the run was planned.")
for note in board.notes:
    st.warning(plain(note))
