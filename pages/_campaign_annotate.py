"""Annotate inside a campaign: what an annotator sees (and an admin who picks one of their own
campaigns on Annotate).

Only the campaign's own material is drawn: its name, aspect and guidelines, the viewer's progress
and queue, the context and the two texts of the next pair. Nothing of the judge (no run, no
probability, no prompt, no mode that reads a run), no other dataset and no other campaign: the
pair comes from ``api.Campaign.queue`` (its pair list, fixed when it was created), the texts from
the campaign's dataset. Every answer starts with ``require("annotator")`` and goes through
``api.Campaign.add_answer``, whose transaction re-checks that the campaign is open and the person
still assigned. A skip stores nothing: the pair goes to the end of this session's queue.

This page part must never render a text as markdown or HTML (``st.text`` only) and any other user
string except through ``plain``.
"""

from __future__ import annotations

import time

import streamlit as st

from compassess_core import api
from compassess_core.errors import CompAssessError
from compassess_core.types import Outcome
from pages._auth import Viewer, require
from pages._answer_keys import answer_keys, button_key
from pages._plain import plain_message
from pages._common import api_store, aspect_question, cached_dataset, plain

#: Answers in a campaign: (outcome stored, button label, keyboard shortcut, widget key; each
#: button is keyed by it and the pair it is drawn for, ``_answer_keys.button_key``).
ANSWERS = ((Outcome.A.value, "A is better", "A", "answer_a"),
           (Outcome.B.value, "B is better", "B", "answer_b"),
           (Outcome.TIE.value, "Tie", "T", "answer_tie"),
           (Outcome.BOTH_BAD.value, "Both bad", "X", "answer_both_bad"),
           (Outcome.SKIP.value, "Skip", "S", "answer_skip"))
PICK_KEY, CURRENT, SKIPPED, FLASH, HISTORY = ("annotate_campaign", "campaign_current",
                                              "campaign_skipped", "campaign_flash",
                                              "campaign_history")
UNDO_SHORTCUT = "U"
COMMENT_KEY = "campaign_comment"
#: The keyboard listener's widget key (pages._answer_keys) and the answer of each key.
KEYS_WIDGET = "campaign_keys"
ANSWER_OF_KEY = {letter: winner for winner, _, letter, _ in ANSWERS}
#: The picker's entry for an admin's free annotation (today's Annotate page).
FREE = "(free annotation: any dataset)"
#: Why a shortcut key can seem to do nothing: the browser gives the key to the box in focus.
SHORTCUT_FOCUS_HINT = ("The keys work while no box has the focus: after typing in a box (the "
                       "comment, a sidebar box), click an empty spot of the page first.")
#: Heights (px) of the scroll boxes that hold the texts (so both candidates line up) and of a long
#: context (longer than LONG_CONTEXT_CHARS characters), which scrolls so the candidates stay in view.
TEXT_BOX_PX, CONTEXT_BOX_PX, LONG_CONTEXT_CHARS = 380, 240, 600


def show_flash(key: str) -> None:
    """The message the last answer left under ``key`` (saved, undone, error), shown once, in
    place: an inline message, not a toast, so that an undo replaces the "Saved" of the answer it
    removed instead of showing beside it."""
    flash = st.session_state.pop(key, None)
    if flash:
        kind, message = flash
        show = {"error": st.error, "saved": st.success}.get(kind, st.info)
        show(message, icon=":material/check:" if kind == "saved" else None)


def pair_view(ctx, aspect: str, left_text: str, right_text: str) -> None:
    """What a person judges: the context (in a scroll box when long, so the candidates stay in
    view), the question in the prompts' words, and the two texts side by side, all as plain
    text (the free Annotate page and a campaign's queue alike)."""
    with st.container(border=True, height=CONTEXT_BOX_PX if len(ctx.text) > LONG_CONTEXT_CHARS
                      else "content"):
        st.text(ctx.text)
    st.markdown(f"#### {aspect_question(aspect)}")
    st.caption(f"Aspect: {plain(aspect)}. Compare the two texts below; their left/right order is "
               "random.")
    left_col, right_col = st.columns(2)
    for col, side, text in ((left_col, "A (left)", left_text), (right_col, "B (right)", right_text)):
        with col:
            st.markdown(f"**{side}**")
            with st.container(border=True, height=TEXT_BOX_PX):
                st.text(text)


def pick(me: Viewer):
    """The campaign to annotate now (an ``api.Campaign``), or None: an admin chose free
    annotation. An annotator with no open campaign gets a page saying so and the run stops."""
    mine = [c for c in api_store().campaigns(for_identity=me.identity) if c.status == "open"]
    if not me.is_admin and not mine:
        flash = st.session_state.pop(FLASH, None)
        if flash and flash[0] == "error":  # e.g. the answer refused because they were taken off
            st.error(flash[1])
        st.info("You have no annotation campaign yet. An admin assigns you to a campaign on the "
                "Campaigns page; its pairs then appear here.", icon=":material/assignment:")
        st.stop()
    if not mine:
        return None  # an admin without a campaign of their own: free annotation, no picker
    names = ([FREE] if me.is_admin else []) + [c.name for c in mine]
    if len(names) == 1:
        chosen = names[0]
    else:
        if st.session_state.get(PICK_KEY) not in names:
            st.session_state.pop(PICK_KEY, None)
        chosen = st.selectbox("Campaign", names, key=PICK_KEY,
                              format_func=lambda n: plain(n, "text"),
                              help="Your open campaigns" + (
                                  "; free annotation labels any dataset outside a campaign."
                                  if me.is_admin else "."))
    return None if chosen == FREE else next(c for c in mine if c.name == chosen)


def _save(winner: str, sent) -> None:
    """Answer the pair the person's screen showed: ``sent``, the token drawn with it (``campaign``
    id and ``pair``, an ``api.PairOnScreen``) and sent back with the click or key. A token of
    another campaign, or of a pair the session no longer holds (a key pressed on the screen
    before), is refused and said so; nothing is stored then."""
    who = require("annotator")  # still an annotator (or admin) now: callbacks run before the gate
    cur = st.session_state.get(CURRENT)
    sent = sent if isinstance(sent, dict) else {}
    picked = st.session_state.get(PICK_KEY)
    if (not cur or cur["campaign"] != sent.get("campaign") or cur["who"] != who.identity
            or (picked is not None and picked != sent.get("campaign_name"))):
        st.session_state[FLASH] = ("error", "Not saved: that answer was given on the screen "
                                            "before this one (another campaign or pair). Nothing "
                                            "was stored: answer the pair shown now.")
        return
    if winner == Outcome.SKIP.value:
        # A skip is no answer: nothing is stored and the pair comes back at the end of the queue.
        st.session_state.setdefault(SKIPPED, []).append(tuple(cur["pair"]))
        st.session_state[CURRENT] = None
        st.session_state[FLASH] = ("info", "Skipped: this pair comes back later.")
        return
    comment = (st.session_state.get(COMMENT_KEY) or "").strip() or None
    try:
        added = api_store().campaign(cur["campaign"]).add_answer(dict(
            context_id=cur["pair"][0], candidate_left=cur["left"], candidate_right=cur["right"],
            winner=winner, annotator=who.identity, seconds=time.time() - cur["shown_at"],
            shown_order=cur["shown_order"], comment=comment), shown=sent.get("pair"))
    except CompAssessError as e:
        st.session_state[FLASH] = ("error", f"Not saved: {plain_message(e)}")
        st.session_state[CURRENT] = None
        return
    st.session_state[COMMENT_KEY] = ""
    st.session_state[CURRENT] = None
    if added:
        st.session_state.setdefault(HISTORY, []).append(dict(id=added, pair=cur))
    st.session_state[FLASH] = (("saved", "Saved.") if added else
                               ("info", "You had already answered this pair (in another tab?); "
                                        "that answer is kept."))


def _undo() -> None:
    who = require("annotator")  # still an annotator (or admin) now: callbacks run before the gate
    history = st.session_state.get(HISTORY) or []
    if not history:
        return
    last = history.pop()
    # Only ever the person's own answer (the store deletes a row of theirs only).
    if api_store().undo_judgement(last["id"], who.identity):
        st.session_state[CURRENT] = dict(last["pair"], shown_at=time.time())
        st.session_state[FLASH] = ("info", "Undone: your last answer was deleted; judge the pair "
                                           "again.")
    else:
        st.session_state[FLASH] = ("error", "That answer was already removed (in another tab).")


def _undo_button(campaign, where) -> None:
    history = [h for h in st.session_state.get(HISTORY) or [] if h["pair"]["campaign"] == campaign.id]
    where.button(f"Undo ({UNDO_SHORTCUT})", key="undo", help="Undo your last answer",
                 width="stretch", icon=":material/undo:", disabled=not history, on_click=_undo)


def annotate(me: Viewer, campaign) -> None:
    """The campaign's next pair for ``me``, with its guidelines and their progress."""
    who = me.identity
    # The keyboard listener's place: above the messages that come and go, so it stays mounted.
    keys_slot = st.empty()
    progress = campaign.progress()
    row = progress.loc[progress["annotator"] == who]
    done = int(row["labelled"].iloc[0]) if len(row) else 0
    target = int(row["target"].iloc[0]) if len(row) else 0
    st.progress(min(done / target, 1.0) if target else 1.0,
                text=f"{plain(who)}: {done} / {target} judgements done in campaign "
                     f"{plain(campaign.name)}")
    with st.expander("Guidelines", expanded=False, icon=":material/menu_book:"):
        if campaign.guidelines:
            st.text(campaign.guidelines)
        else:
            st.caption("No guidelines were written for this campaign.")
    show_flash(FLASH)
    later = [tuple(p) for p in st.session_state.get(SKIPPED) or []]
    cur = st.session_state.get(CURRENT)
    queue = campaign.queue(who, later=later)
    st.caption(f"{len(queue)} pair(s) of this campaign still wait for you.")
    if not cur or cur["campaign"] != campaign.id or cur["who"] != who or \
            tuple(cur["pair"]) not in set(queue):
        if not queue:
            st.success("You have answered every pair of this campaign that needs you. Thank you!",
                       icon=":material/celebration:")
            _undo_button(campaign, st)
            return
        shown = campaign.next_pair(who, later=later)
        cur = dict(campaign=campaign.id, who=who, pair=shown.pair, left=shown.left,
                   right=shown.right,
                   shown_order=shown.shown_order, shown_at=time.time())
        st.session_state[CURRENT] = cur
    dataset = cached_dataset(campaign.info.dataset_id)
    ctx = dataset.context(cur["pair"][0])
    by_id = {c.candidate_id: c for c in ctx.candidates}
    st.markdown("**Context**")
    pair_view(ctx, campaign.aspect, by_id[cur["left"]].text, by_id[cur["right"]].text)
    st.text_input("Comment (optional, stored with your answer)", key=COMMENT_KEY, max_chars=1000)
    buttons = st.columns(len(ANSWERS) + 1)
    # What is on screen, drawn into every answer button and the keyboard listener and sent back
    # with the click or key: an answer is stored on this pair of this campaign or refused.
    token = dict(campaign=campaign.id, campaign_name=campaign.name,
                 pair=api.PairOnScreen(campaign.info.dataset_id, campaign.aspect, cur["pair"][0],
                                       cur["left"], cur["right"], cur["shown_order"]).as_dict())
    for col, (winner, label, key_, wkey) in zip(buttons, ANSWERS):
        col.button(f"{label} ({key_})", key=button_key(wkey, token), width="stretch",
                   type="primary" if winner in ("A", "B") else "secondary",
                   on_click=_save, args=(winner, token))
    _undo_button(campaign, buttons[-1])

    def on_key(letter: str, sent) -> None:
        if letter == UNDO_SHORTCUT:
            _undo()
        else:
            _save(ANSWER_OF_KEY[letter], sent)

    with keys_slot:
        answer_keys(KEYS_WIDGET, token, [*ANSWER_OF_KEY, UNDO_SHORTCUT], on_key)
    st.caption("Keyboard: A = left better, B = right better, T = tie, X = both bad, S = skip "
               "(the pair comes back later; a skip is not an answer), U = undo. "
               + SHORTCUT_FOCUS_HINT)
