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
from pages._plain import plain_message
from pages._common import (api_store, aspect_label, data_aspects, db_url, is_pairwise,
                           judges_stamp, list_runs, pick_dataset, plain, show_paired)

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
judged = {r.settings.aspect for r in runs}
if not judged:
    st.info("No pairwise run on this dataset yet: start one on **Run**.")
    st.stop()
# The judged aspects the data can score a judge on (human labels, then a reference column)
# come first, so the page never opens on one it can say nothing about while another has labels.
known = data_aspects(dataset.id)
scorable = [a.aspect for a in known if a.aspect in judged and (a.n_labels or a.reference)]
aspects = scorable + sorted(judged - set(scorable))
c = st.columns(2)
# Both follow the view state (the URL), so a link to this page reproduces its numbers.
# The view's aspect is kept when judges can be scored on it, or when it was chosen here.
want = view.get("aspect")
CHOSEN = "judges_aspect_chosen"
st.session_state["judges_aspect"] = (
    want if want in aspects and (want in scorable or not scorable
                                 or want == st.session_state.get(CHOSEN)) else aspects[0])


def _aspect_chosen() -> None:
    st.session_state[CHOSEN] = st.session_state["judges_aspect"]
    view.put("aspect", st.session_state["judges_aspect"])


aspect = c[0].selectbox("Aspect", aspects, key="judges_aspect",
                        format_func=aspect_label(dataset.id), on_change=_aspect_chosen)
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
    st.info(plain_message(e))
    st.stop()

if board.basis == "kappa":
    st.caption(f"Ranked by Cohen's kappa of each judge's debiased pair verdicts (at its balanced "
               f"tau*) with the human majority, ties left out, on {board.n_labels:,} stored human "
               "labels, every pair counted in both orientations (so the candidates' names cannot "
               "change it; chance = either candidate with probability 1/2), beside the raw "
               f"agreement; 95% intervals from {board.n_boot:,} replicates of a cluster bootstrap "
               "(contexts, then the labelled pairs within them; tau* re-estimated in each). "
               "Log-loss in nats and ECE on the labelled comparisons, raw and calibrated "
               "on held-out folds. A panel that uses labels (learnt weights, calibrated members) "
               "is scored on held-out folds.")
else:
    st.caption(f"No human labels for this aspect: ranked by Spearman x100 with the reference "
               f"column {plain(str(board.reference))} (win ratio at each judge's balanced tau*, "
               "mean over contexts).")
# Columns empty for every judge (no human labels, say) are left out rather than shown as "None".
# Each column: a short label a 1024 px window shows in full, the detail in its help, and the
# digits its numbers carry (a kappa to 3 places, a Spearman x100 to 1: a column of 15-digit
# floats says nothing more and pushes the rest off the screen).
# A table: its entries are alike in shape by design (one per column of the leaderboard).
COLUMNS = {
    "rank": ("rank", None, None),
    "judge": ("judge", None, "The run or panel of judges."),
    "kind": ("kind", None, "run, or panel of judges"),
    "kappa": ("kappa", 3, "Cohen's kappa of the judge's pair verdicts with the human majority, "
                          "ties left out, every pair counted in both orientations."),
    "kappa_low": ("kappa 95% low", 3, "Lower end of kappa's 95% bootstrap interval."),
    "kappa_high": ("kappa 95% high", 3, "Upper end of kappa's 95% bootstrap interval."),
    "accuracy": ("raw agreement", "%", "Share of labelled pairs (ties left out) where the "
                                       "judge's verdict is the human majority's."),
    "accuracy_low": ("agreement 95% low", "%", "Lower end of the raw agreement's 95% interval."),
    "accuracy_high": ("agreement 95% high", "%", "Upper end of the raw agreement's 95% "
                                                 "interval."),
    "spearman_x100": ("Spearman x100", 1, "Spearman correlation (x100) of the judge's win "
                                          "ratios with the reference scores, mean over "
                                          "contexts."),
    "n_labelled_pairs": ("labelled pairs", None, "Human-labelled pairs the judge judged."),
    "n_comparisons": ("comparisons", None, "Comparisons the judge made."),
    "log_loss_raw": ("log-loss", 3, "Log-loss (nats) of the judge's p on the labelled "
                                    "comparisons, as it answered."),
    "log_loss_calibrated": ("log-loss calibrated", 3, "Log-loss after calibration on held-out "
                                                      "folds of the labels."),
    "ece_raw": ("ECE", 3, "Expected calibration error of p, as it answered."),
    "ece_calibrated": ("ECE calibrated", 3, "Expected calibration error after calibration on "
                                            "held-out folds."),
    "p_a_raw": ("P(A)", 2, "Share of comparisons won by the first position at tau = 0.5 (0.5: "
                           "no positional bias)."),
    "flip_rate_raw": ("flip rate", 3, "Share of pairs judged in both orders whose verdict flips "
                                      "with the order, at tau = 0.5."),
    "longer_wins": ("longer wins", 3, "Share of comparisons won by the longer text."),
    "length_slope_per_doubling": ("length slope", 3, "Log-odds of 'A wins' per doubling of A's "
                                                     "length over B's (0: blind to length)."),
    "comparisons_per_s": ("comparisons/s", 2, "As measured when the run executed (a panel: all "
                                              "its members' comparisons over their seconds "
                                              "together)."),
    "tokens_per_comparison": ("tokens/comparison", 0, "Prompt tokens the judge reads per "
                                                      "comparison, counted with its tokenizer "
                                                      "when the run was planned."),
    "held_out": ("held out", None, "Scored on held-out folds (a panel that learns from the "
                                   "labels)."),
    "model": ("model", None, None),
    "template": ("template", None, None),
    "members": ("members", None, "The runs a panel combines."),
    "note": ("note", None, None),
}
# The paired test of each judge against the top one (``judges_board.paired_with_best``).
COLUMNS.update({
    "indistinguishable_from_best": (
        "≈ best", None, "The paired 95% interval of (this judge's accuracy minus the top "
                        "judge's) on the same labelled pairs holds 0: the labels do not tell "
                        "the two apart."),
    "vs_best_pp": ("vs best (pp)", 1, "Accuracy with the human majority minus the top judge's, "
                                      "in percentage points, on the labelled pairs both "
                                      "judged."),
    "vs_best_low_pp": ("vs best 95% low", 1, "Lower end of the paired cluster-bootstrap "
                                             "interval (contexts, then pairs within them)."),
    "vs_best_high_pp": ("vs best 95% high", 1, "Upper end of the paired interval."),
    "vs_best_mcnemar_p": ("McNemar p", 3, "McNemar's exact test on the pairs where only one of "
                                          "the two judges matches the people."),
    "vs_best_n_pairs": ("pairs vs best", None, "Labelled pairs both judged."),
    "vs_best_n_contexts": ("contexts vs best", None, "Contexts those pairs come from."),
})
shown = plain(board.frame.dropna(axis=1, how="all"), into="text")


def _column(name: str):
    label, digits, help_ = COLUMNS.get(name, (name, None, None))
    if name in ("rank", "judge"):   # stay in view while the table scrolls sideways
        return st.column_config.Column(label, help=help_, pinned=True)
    if name == "note":
        return st.column_config.TextColumn(label, width="large", help=help_)
    if digits == "%":  # a share shown as a percentage
        return st.column_config.NumberColumn(label, format="percent", help=help_)
    if digits is not None:
        return st.column_config.NumberColumn(label, format=f"%.{digits}f", help=help_)
    return st.column_config.Column(label, help=help_)


# What the judges are ranked by comes right after their names; what they are (model, template,
# members) last, where a long path or member list does not push the numbers off the screen.
first = ["rank", "judge", "kappa", "kappa_low", "kappa_high", "accuracy", "accuracy_low",
         "accuracy_high", "spearman_x100", "indistinguishable_from_best", "vs_best_pp",
         "vs_best_low_pp", "vs_best_high_pp", "vs_best_mcnemar_p", "n_labelled_pairs", "kind",
         "n_comparisons"]
last = ["model", "template", "members", "note"]
order = ([c for c in first if c in shown.columns]
         + [c for c in shown.columns if c not in first and c not in last]
         + [c for c in last if c in shown.columns])
st.dataframe(shown, hide_index=True, key="judges_table", column_order=order,
             column_config={c: _column(c) for c in shown.columns}, placeholder="")
st.caption("Hover a column's name for what it holds. P(A) and flip rate are at tau = 0.5 (the "
           "judge as it answers).")
if board.paired:
    st.subheader("Each judge against the best")
    show_paired(st, list(board.paired.values()), key="judges_paired",
                caption=f"Against the top judge, {plain(str(board.best))}: accuracy with the "
                        "people's decisive majority on the labelled pairs both judged, each at "
                        "its balanced tau*. Indistinguishable from the best where the 95% "
                        "interval holds 0.")
for note in board.notes:
    st.warning(plain_message(note))
