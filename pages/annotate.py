"""Annotate: people judge pairs of candidates (A better / B better / tie / skip), and human labels
are imported from files (admins).

In a team, an annotator labels only inside the campaigns they are assigned to
(``pages/_campaign_annotate.py``): their open campaigns, each one's queue, guidelines and the two
texts, and nothing of any judge or other dataset; an annotator without a campaign gets a page
saying so. Admins (and the single-user local app) get the free annotation below (any dataset, the
modes that read a run, imports) or one of their own campaigns, chosen at the top.

Which pair comes next is ``compassess_core.people.annotation.next_pairs``'s choice and the left/right
order is ``annotation.shown_pair``'s coin; every answer (with its screen order and the seconds it
took) goes to the store in its own transaction, so several people can annotate at once. The
annotator is the viewer (``pages._auth``: the signed-in person, or the account running a
single-user app), never a URL parameter or a typed name. Label files are validated by
``compassess_core.data.labels``; their labels keep the file's annotator names (``imported`` when it
names none), never the importer's unless they credit themselves or a person explicitly, and a
file's name that is a person here is kept apart (``labels.attribute``); a file's columns are mapped onto the label columns first
(``api.Store.check_labels`` suggests the mapping; its widgets are keyed by the dataset and the
file). This page must never render candidate, context or guideline text as
markdown or HTML (``st.text`` only), any other user string except through ``plain``, never offer
a pair again to the same person unless asked, and never store a label file that has a single
problem.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from compassess_core import api
from compassess_core.people.access import ADMIN
from compassess_core.api import ANNOTATION_MODES as MODES
from compassess_core.errors import CompAssessError
from compassess_core.data.labels import KEPT_APART, LABEL_COLUMNS
from compassess_core.types import Outcome
from pages import _campaign_annotate as campaign_view
from pages._answer_keys import answer_keys, button_key
from pages._auth import guard, page_link, require
from pages import _view as view
from pages._plain import plain_message
from pages._common import (AppRun, api_store, as_shown, cached_dataset, list_runs,
                           default_aspect, pick_aspect, pick_dataset, plain,
                           show_problems_table)
from compassess_core.api import counted

me = guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

MODE_LABELS = {"random": "random pairs",
               "uncertain": "where the LLM is least certain (p near tau*)",
               "flips": "where the LLM's verdict flips with the order",
               "overlap": "pairs other annotators labelled (for agreement)",
               "informative": "where a label most reduces the ranking's uncertainty"}
#: Answers: (outcome stored, button label, keyboard shortcut, widget key; each button is keyed
#: by it and the pair it is drawn for, ``_answer_keys.button_key``).
ANSWERS = ((Outcome.A.value, "A is better", "A", "answer_a"),
           (Outcome.B.value, "B is better", "B", "answer_b"),
           (Outcome.TIE.value, "Tie", "T", "answer_tie"),
           (Outcome.SKIP.value, "Skip", "S", "answer_skip"))
UNDO_SHORTCUT = "U"
CURRENT, HISTORY, FLASH = "annotate_current", "annotate_history", "annotate_flash"
#: The keyboard listener's widget key (pages._answer_keys) and the answer of each key.
KEYS_WIDGET = "annotate_keys"
ANSWER_OF_KEY = {letter: winner for winner, _, letter, _ in ANSWERS}

st.title("Annotate")
# An annotator sees their campaigns only; an admin may pick one of theirs or annotate freely.
chosen_campaign = campaign_view.pick(me)
if chosen_campaign is not None or not me.is_admin:
    campaign_view.annotate(me, chosen_campaign)
    st.stop()


def _pairwise_runs(dataset_id: int | None = None) -> list:
    return [r for r in list_runs(dataset_id) if (r.info.n_comparisons or 0) > 0]


def follow_selected_run() -> None:
    """Annotate labels the data of the run selected on any page (the view's run id, or the
    link's ``?run=N``): its dataset (and, below, its aspect)."""
    run = next((r for r in _pairwise_runs() if r.id == view.get("run")), None)
    if run is not None and run.info.dataset_id != view.get("dataset"):
        view.put("dataset", run.info.dataset_id)


def on_dataset_picked(dataset_id: int) -> None:
    """A dataset picked here brings its newest run (or none) and that run's aspect: labels of
    one aspect must not be carried over to another dataset. The pair of the old screen is
    dropped, so a key pressed on it is refused (``_answer``), never stored on this dataset."""
    runs = _pairwise_runs(dataset_id)
    view.put("run", runs[-1].id if runs else None)
    view.put("aspect", runs[-1].settings.aspect if runs else None)
    st.session_state[CURRENT] = None


def run_of_aspect(runs: list, aspect: str | None):
    """The newest of ``runs`` judging ``aspect`` (any aspect when None), or None."""
    of_aspect = [r for r in runs if aspect is None or r.settings.aspect == aspect]
    return of_aspect[-1] if of_aspect else None


def on_aspect_picked(aspect: str) -> None:
    """An aspect picked here brings the newest run of this dataset judging it (or none), so the
    run in view and the aspect asked about and stored never disagree."""
    run = run_of_aspect(_pairwise_runs(view.get("dataset")), aspect)
    view.put("run", None if run is None else run.id)
    st.session_state[CURRENT] = None


follow_selected_run()
info = pick_dataset(on_change=on_dataset_picked)
if info is None:
    if not api_store().list_datasets():
        st.info("No dataset yet: load the sample on **Home** or upload candidates on **Upload**, "
                "then come back to judge pairs or import human labels.")
        page_link("pages/home.py", label="Go to Home", icon=":material/home:")
    st.stop()
dataset_runs = _pairwise_runs(info.id)
if view.get("run") not in [r.id for r in dataset_runs]:
    # No run: this dataset's newest run of the aspect in view (when none is, of the aspect the
    # data has the most evidence for: its human labels first). One of another dataset (or
    # gone): this dataset's newest, never another dataset's judge.
    fallback = (run_of_aspect(dataset_runs, view.get("aspect") or default_aspect(info.id))
                if view.get("run") is None else run_of_aspect(dataset_runs, None))
    view.put("run", None if fallback is None else fallback.id)
run_in_view = next((r for r in dataset_runs if r.id == view.get("run")), None)
if run_in_view is not None:
    # The aspect judged is the run's: its labels are what that run's Agreement reads.
    view.put("aspect", run_in_view.settings.aspect)
aspect = pick_aspect(info.id, on_change=on_aspect_picked)
dataset = cached_dataset(info.id)


# The annotator is whoever is looking: the signed-in person (or a single-user app's owner).
name = me.identity
# The keyboard listener's place: above everything that comes and goes (messages), so it is not
# mounted afresh (and deaf for a moment) after each answer.
keys_slot = st.empty()
if me.is_admin:
    judge_tab, import_tab, guide_tab = st.tabs(["Judge pairs", "Import labels", "Guidelines"])
else:
    judge_tab, guide_tab = st.tabs(["Judge pairs", "Guidelines"])
    import_tab = None


# ---------------------------------------------------------------------------------- answers

def _dataset_now() -> int | None:
    """The dataset the page shows or is switching to: the sidebar picker's value as the browser
    sent it with this event (its own callback may not have run yet), else the view's."""
    return st.session_state.get("dataset_pick_w", view.get("dataset"))


def _aspect_now(dataset_id: int | None) -> str | None:
    """The aspect the page asks about now: the aspect box's value as the browser sent it, else
    the view's."""
    return st.session_state.get(f"aspect_w_{dataset_id}", view.get("aspect"))


def _answer(winner: str, sent, again: bool) -> None:
    """Store ``winner`` for the pair the person's screen showed: ``sent``, the token drawn with
    that pair (``pair``: an ``api.PairOnScreen``; ``name``: the dataset's name as shown) and sent
    back with the click or key press. Refused, and said so, when the page no longer shows that
    dataset and aspect, when the pair the session holds is another (a key pressed on the screen
    before a switch) or when the dataset was renamed or deleted since: nothing is stored then."""
    # Free annotation is an admin's (an annotator labels in campaigns only): still an admin now,
    # as callbacks run before the gate and the page may have been drawn before a demotion.
    who = require(ADMIN)
    cur = st.session_state.get(CURRENT)
    try:
        screen = api.PairOnScreen.of(sent.get("pair") if isinstance(sent, dict) else None)
    except CompAssessError as e:
        st.session_state[FLASH] = ("error", f"Not saved: {plain_message(e)}")
        return
    now = _dataset_now()
    if (cur is None or screen.dataset_id != now or screen.aspect != _aspect_now(now)
            or cur["scope"][2] != who.identity):
        st.session_state[FLASH] = (
            "error", f"Not saved: that answer was given on the screen before this one (aspect "
                     f"{plain(screen.aspect)}, context {plain(screen.context_id)}, dataset id "
                     f"{screen.dataset_id}); the page has since changed dataset, aspect or pair. "
                     "Nothing was stored: answer the pair shown now.")
        return
    dataset_id, aspect, annotator = cur["scope"][:3]
    seconds = time.time() - cur["shown_at"]
    try:
        added = api_store().add_judgements(dataset_id, [dict(
            context_id=cur["context_id"], candidate_left=cur["left"], candidate_right=cur["right"],
            winner=winner, annotator=annotator, aspect=aspect, seconds=seconds,
            shown_order=cur["shown_order"], source="app")], again=again,
            expect_name=sent.get("name"), shown=screen)
    except CompAssessError as e:
        st.session_state[FLASH] = ("error", f"Not saved: {plain_message(e)}")
        return
    if not added:
        # Another tab (or a double click) stored this person's answer to the pair first.
        st.session_state[CURRENT] = None
        st.session_state[FLASH] = ("info", "You had already judged this pair (in another tab?); "
                                           "that answer is kept. Here is the next pair.")
        return
    mine = api_store().human_labels(dataset_id, aspect)
    mine = mine.loc[(mine["annotator"] == annotator) & (mine["context_id"] == cur["context_id"])
                    & (mine["candidate_left"] == cur["left"])
                    & (mine["candidate_right"] == cur["right"])]
    st.session_state.setdefault(HISTORY, []).append(dict(id=int(mine["id"].max()), pair=cur))
    st.session_state[CURRENT] = None
    said = {"A": f"{plain(cur['left'])} (left) better", "B": f"{plain(cur['right'])} (right) better",
            "tie": "tie", "skip": "skipped"}[winner]
    st.session_state[FLASH] = ("saved", f"Saved: {said} in context {plain(cur['context_id'])} "
                                        f"({seconds:.1f} s).")


def _undo(annotator: str) -> None:
    require(ADMIN)  # free annotation is an admin's, checked now (see _answer)
    history = st.session_state.get(HISTORY) or []
    if not history:
        return
    last = history.pop()
    if api_store().undo_judgement(last["id"], annotator):
        # The undone pair comes back in the same screen order; its clock starts again.
        st.session_state[CURRENT] = dict(last["pair"], shown_at=time.time())
        st.session_state[FLASH] = ("undone", f"Undone: your answer on {plain(last['pair']['left'])} "
                                             f"vs {plain(last['pair']['right'])} was deleted; "
                                             "judge it again.")
    else:
        st.session_state[FLASH] = ("error", "That answer was already removed (undone in another tab).")


#: The LLM-run picker's "no run" choice (run ids are positive).
NO_RUN = 0


def _llm_run_choice(dataset_id: int, runs: list):
    """An optional LLM run of this dataset (needed by the 'uncertain' and 'flips' modes): the
    view's run by default. Its widget belongs to the dataset (keyed by its id) and its choices
    are run ids, so a rename or another dataset's run never stands in for it."""
    by_id = {r.id: r for r in runs}
    key = f"annotate_run_{dataset_id}"
    want = view.get("run")
    st.session_state[key] = want if want in by_id else NO_RUN

    def picked() -> None:
        if _dataset_now() != dataset_id:
            return  # the box of the screen before a dataset switch, reported once more
        chosen = st.session_state.get(key, NO_RUN)
        view.put("run", chosen or None)
        if chosen:  # its aspect becomes the one judged
            view.put("aspect", by_id[chosen].settings.aspect)

    chosen = st.sidebar.selectbox("LLM run (for 'least certain', 'flips', 'most reduces')",
                                  [NO_RUN, *by_id], key=key, on_change=picked,
                                  format_func=lambda i: "(none)" if i == NO_RUN
                                  else plain(by_id[i].name, "text"))
    return by_id.get(chosen)


def _progress(human: pd.DataFrame, annotator: str, n_pairs: int) -> None:
    mine = human.loc[human["annotator"] == annotator]
    skipped = int((mine["winner"] == Outcome.SKIP.value).sum())
    done = len(mine) - skipped  # a skip is not a judgement: it does not count towards the target
    # Each dataset has its own target, kept while another dataset is shown (Streamlit drops the
    # state of a keyed widget that a run does not draw).
    targets = st.session_state.setdefault("annotate_targets", {})
    key = f"annotate_target_{info.id}"
    if key not in st.session_state:
        st.session_state[key] = targets.get(info.id, int(min(50, max(n_pairs, 1))))
    target = int(st.sidebar.number_input("My target (judgements)", min_value=1, step=10,
                                         key=key))
    targets[info.id] = target
    st.progress(min(done / target, 1.0),
                text=f"{plain(annotator)}: {done} / {target} judgements done on dataset "
                     f"{plain(info.name)}, aspect {plain(aspect)} ({skipped} skipped, not counted)")
    people = human["annotator"].nunique()
    st.caption(f"{n_pairs:,} candidate pairs in this dataset; {len(human):,} judgements stored for "
               f"this aspect, by {people} annotator(s)" + (", you among them." if len(mine) else "."))


def judge_pairs() -> None:
    mode = st.sidebar.radio("Which pairs to show", MODES, format_func=MODE_LABELS.get,
                            key="annotate_mode")
    run = _llm_run_choice(info.id, dataset_runs)
    allow_repeat = st.sidebar.checkbox("Show pairs I already judged again", key="annotate_repeat")
    human = api_store().human_labels(info.id, aspect)
    n_pairs = sum(len(c.candidates) * (len(c.candidates) - 1) // 2 for c in dataset.contexts)
    _progress(human, name, n_pairs)

    campaign_view.show_flash(FLASH)

    # What the pair on screen belongs to; an answer is stored only for this scope.
    scope = (info.id, aspect, name, mode, None if run is None else run.id, allow_repeat)
    cur = st.session_state.get(CURRENT)
    if not cur or cur.get("scope") != scope:
        try:
            shown = api_store().next_pair(dataset, aspect, name, mode=mode,
                                          run=None if run is None else AppRun(run).api,
                                          allow_repeat=allow_repeat, dataset_id=info.id)
        except CompAssessError as e:
            st.warning(plain_message(e))
            return
        if shown is None:
            st.success(f"You have judged every pair of this dataset for aspect {plain(aspect)}. Thank "
                       "you! Tick 'Show pairs I already judged again' to revise some.",
                       icon=":material/celebration:")
            return
        cur = dict(context_id=shown.context_id, left=shown.left, right=shown.right,
                   shown_order=shown.shown_order, shown_at=time.time(), scope=scope, mode=mode)
        st.session_state[CURRENT] = cur
    # What is on screen, drawn into every answer button and the keyboard listener and sent back
    # with the click or key: an answer is stored on this pair or refused.
    token = dict(pair=api.PairOnScreen(info.id, aspect, cur["context_id"], cur["left"],
                                       cur["right"], cur["shown_order"]).as_dict(),
                 name=info.name)

    ctx = dataset.context(cur["context_id"])
    by_id = {c.candidate_id: c for c in ctx.candidates}
    with st.expander("Guidelines", expanded=False, icon=":material/menu_book:"):
        text = api_store().guidelines(info.id)
        if text:
            st.text(text)
        else:
            st.caption("No guidelines for this dataset yet; write them in the Guidelines tab.")
    st.markdown(f"**Context** {plain(ctx.context_id)}")
    campaign_view.pair_view(ctx, aspect, by_id[cur["left"]].text, by_id[cur["right"]].text)
    buttons = st.columns(len(ANSWERS) + 1)
    for col, (winner, label, key_, wkey) in zip(buttons, ANSWERS):
        col.button(f"{label} ({key_})", key=button_key(wkey, token), width="stretch",
                   type="primary" if winner in ("A", "B") else "secondary",
                   on_click=_answer, args=(winner, token, allow_repeat))
    buttons[-1].button(f"Undo ({UNDO_SHORTCUT})", key="undo", help="Undo your last answer",
                       width="stretch", icon=":material/undo:",
                       disabled=not st.session_state.get(HISTORY), on_click=_undo, args=(name,))

    def on_key(letter: str, sent) -> None:
        if letter == UNDO_SHORTCUT:
            if st.session_state.get(HISTORY):
                _undo(name)
        else:
            _answer(ANSWER_OF_KEY[letter], sent, allow_repeat)

    with keys_slot:
        answer_keys(KEYS_WIDGET, token, [*ANSWER_OF_KEY, UNDO_SHORTCUT], on_key)
    st.caption("Keyboard: A = left better, B = right better, T = tie, S = skip, U = undo. "
               f"{campaign_view.SHORTCUT_FOCUS_HINT} The time from showing a pair to your "
               "answer is stored with it.")


#: A file annotator's choice "keep the name the file gives" in the attribution pickers.
KEEP = "\x00as in the file"
#: A label column mapped to no file column (the optional annotator).
NO_COLUMN = "(none)"
#: What the last import stored, shown once at the top of the Import tab after the page reran.
IMPORT_FLASH = "labels_imported"


def import_labels() -> None:
    stored = st.session_state.pop(IMPORT_FLASH, None)
    if stored:
        kind, message = stored
        if kind == "success":
            st.success(message, icon=":material/check_circle:")
        else:
            st.error(message, icon=":material/sync_problem:")
    st.markdown("A CSV or JSON Lines file of human A/B labels, one row per judged pair. Its columns "
                "are mapped below onto **context_id, candidate_a, candidate_b, winner** and "
                "optionally **annotator** (common names such as MT-Bench's `question_id, model_a, "
                "model_b, winner, judge` are mapped already); winner is one of the two candidate "
                "ids, `tie`, or the name of a side's column (`model_a`). It is checked against "
                "this dataset's candidates; a file with any problem is not stored at all. A label "
                "already stored (same person, pair and aspect) is not stored again.")
    upload = st.file_uploader(f"Label file (CSV or JSONL, at most {api.max_upload_mb()} MB)",
                              type=["csv", "tsv", "jsonl", "json"], key="labels_file",
                              max_upload_size=api.max_upload_mb())
    if upload is None:
        return
    raw = upload.getvalue()

    def show_problems(check: api.LabelsCheck) -> None:
        advice = ("Change the column mapping above (a problem marked 'mapping' goes away with "
                  "other columns); fix the file for the others." if check.mapping_at_fault else
                  "Rows are numbered as a spreadsheet shows them.")
        st.error(f"{len(check.problems)} problem(s) found in {plain(upload.name)}; nothing was "
                 f"stored. {advice}", icon=":material/error:")
        show_problems_table(check)

    first = api_store().check_labels(raw, dataset=info.id, aspect=aspect, file_label=upload.name)
    if first.table is None:
        show_problems(first)
        return
    # The mapping belongs to this file and this dataset: its widgets are keyed by both.
    owner = f"{info.id}_{first.file_key}"
    st.markdown("**Column mapping** (the file's column holding each label column)")
    mapping: dict[str, str | None] = {}
    for box, canon in zip(st.columns(len(first.COLUMNS)), first.COLUMNS):
        required = canon in LABEL_COLUMNS
        options = ([] if required else [NO_COLUMN]) + first.columns
        default = first.suggested.get(canon)
        index = options.index(default) if default in options else (None if required else 0)
        chosen = box.selectbox(canon, options, index=index, key=f"labels_map_{canon}_{owner}",
                               placeholder="choose", format_func=lambda c: plain(c, "text"))
        mapping[canon] = None if chosen in (NO_COLUMN, None) else chosen
    given = {k: v for k, v in mapping.items() if v is not None}
    check = (first if given == dict(first.mapping) else
             api_store().check_labels(raw, dataset=info.id, aspect=aspect, mapping=mapping,
                                      file_label=upload.name))
    if check.problems:
        show_problems(check)
        return
    named = list(check.annotators)
    st.success(f"No problem found: {counted(len(check.labels), 'label')} for dataset "
               f"{plain(info.name)}.",
               icon=":material/check_circle:")
    # A file speaks for its own annotators, never for a person here (the importer included)
    # unless the importer credits that person explicitly (labels.attribute).
    people = [p.identity for p in api_store().people()]
    reserved = sorted(set(people) | {name})
    credit: dict[str, str] = {}
    if mapping.get("annotator") is None:
        st.markdown("**Attribution.** The file names no annotator: its labels are filed as "
                    "*imported*, not as yours, so Annotate still offers you every pair.")
    else:
        st.markdown("**Attribution.** Each label keeps the annotator name of the file, not yours. "
                    "A name that is also a person here is filed as *name (from the file)* unless "
                    "you credit that person below.")
        with st.expander(f"Credit the file's {len(named)} annotator name(s) to people",
                         expanded=False):
            for k, who in enumerate(named[:50]):
                kept = (KEPT_APART.format(name=who) if who in reserved else who)
                options = [KEEP, name] + [p for p in people if p != name]
                choice = st.selectbox(
                    f"File annotator {plain(who)}", options, key=f"labels_who_{k}_{owner}",
                    format_func=lambda o, kept=kept: (
                        f"{plain(kept, 'text')} (as the file names it)" if o == KEEP
                        else f"you ({plain(name, 'text')})" if o == name
                        else plain(o, "text")))
                if choice != KEEP:
                    credit[who] = choice
            if len(named) > 50:
                st.caption(f"The other {len(named) - 50} names keep the names the file gives "
                           "them.")
    summary = ", ".join(f"{plain(who)} ({n})"
                        for who, n in check.attributed(None, credit, reserved).items())
    st.caption(f"Will be stored as: {summary}.")
    # The file goes to the dataset and aspect drawn with the button (bound now, checked when it
    # is clicked): a click that reaches the app after a switch of dataset or aspect stores
    # nothing and says so.
    st.button(f"Store these labels as aspect {plain(aspect)}", type="primary",
              icon=":material/save:", key="import_labels", on_click=_store_labels,
              args=(raw, dict(dataset_id=info.id, name=info.name, aspect=aspect), dict(
                  annotators=credit, people=reserved, mapping=mapping, file_label=upload.name),
                  summary))


def _store_labels(raw: bytes, shown: dict, options: dict, summary: str) -> None:
    """Import the label file onto the dataset and aspect ``shown`` with the button, if the page
    still shows them (else nothing is stored and the page says so)."""
    require()  # the person holds the role now (pages/_auth.py)
    now = _dataset_now()
    if shown["dataset_id"] != now or shown["aspect"] != _aspect_now(now):
        st.session_state[IMPORT_FLASH] = ("error", "Not stored: the button was clicked on the "
                                                   f"screen of dataset {plain(shown['name'])}, "
                                                   f"aspect {plain(shown['aspect'])}, which the "
                                                   "page no longer shows. Check the file below "
                                                   "and store it again.")
        return
    try:
        done = api_store().import_labels(raw, dataset=shown["dataset_id"], aspect=shown["aspect"],
                                         expect_name=shown["name"], **options)
    except CompAssessError as e:
        st.session_state[IMPORT_FLASH] = ("error", plain_message(e))
        return
    # Drawn again from the top, so the counters of the Judge pairs tab count these labels.
    st.session_state[IMPORT_FLASH] = ("success", f"{done.already_stored} already stored, "
                                                 f"{done.stored} added for aspect "
                                                 f"{plain(shown['aspect'])}; attributed to "
                                                 f"{summary}.")


def edit_guidelines() -> None:
    text = api_store().guidelines(info.id)
    if not me.is_admin:
        st.caption("Shown (collapsed) above every pair on this dataset; written by an admin.")
        if text:
            st.text(text)
        else:
            st.caption("No guidelines for this dataset yet.")
        return
    st.caption("Shown (collapsed) above every pair on this dataset. Plain text.")
    shown_name = as_shown(f"guidelines_{info.id}", info.name)
    current = text
    text = st.text_area("Annotation guidelines for this dataset", value=current, height=220,
                        key=f"guidelines_{info.id}")
    if st.button("Save guidelines", key="save_guidelines", icon=":material/save:",
                 disabled=text == current):
        require()  # the person holds the role now (pages/_auth.py)
        try:  # the guidelines of the dataset as shown (refused when renamed since)
            api_store().set_guidelines(info.id, text, expect_name=shown_name)
        except CompAssessError as e:
            st.error(f"Not saved: {plain_message(e)}")
        else:
            st.success("Guidelines saved; every annotator sees them from their next pair.")


with judge_tab:
    judge_pairs()
if import_tab is not None:
    with import_tab:
        import_labels()
with guide_tab:
    edit_guidelines()
