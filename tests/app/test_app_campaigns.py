"""Campaigns in the app (AppTest on app.py, a real SQLite store, people signed in with a fake
``st.user`` as ``tests/app/test_app_sign_in.py`` does): an admin creates a campaign for two annotators
with overlap 2 on the Campaigns page, both label on Annotate, agreement is computed, an admin
adjudicates a disagreement (stored as such) and exports; an annotator sees only their campaign's
material (no run name, no judge prompt or probability, no model checkbox, no other campaign's
texts), a person with no campaign gets a page saying so, and a removed annotator's answer is
refused."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from compassess_core import api
from tests.app.test_app_pages import APP, app_env, seed_run, texts  # noqa: F401 - app_env is a fixture
from tests.app.test_app_sign_in import app_as
from tests.answer_buttons import answer_button, answer_key, has_answer_button

ADMIN, ALICE, BOB, EVE = "boss@example.org", "alice@example.org", "bob@example.org", "eve@example.org"


def everything_shown(at: AppTest) -> str:
    """Every text the page drew: titles, markdown, captions, texts, alerts, widget labels and
    options, tables."""
    parts = [texts(at.title), texts(at.header), texts(at.subheader), texts(at.markdown), texts(at.caption), texts(at.text),
             texts(at.info), texts(at.success), texts(at.warning), texts(at.error)]
    for widgets in (at.selectbox, at.radio, at.multiselect):
        for w in widgets:
            parts.append(str(w.label))
            parts.extend(map(str, w.options))
    parts.extend(str(w.label) for w in list(at.checkbox) + list(at.button) + list(at.text_input))
    parts.extend(t.label for t in at.tabs)
    parts.extend(f"{m.label} {m.value}" for m in at.metric)
    parts.extend(str(e.label) for e in at.expander)
    parts.extend(d.value.to_csv() for d in at.dataframe)
    parts.extend(str(p.proto.text) for p in at.get("progress"))
    return "\n".join(parts)


def people(store) -> None:
    store.set_role(ADMIN, "admin", "test")
    for who in (ALICE, BOB, EVE):
        store.set_role(who, "annotator", "test")


def create_on_page(name: str, annotators: list[str], n_pairs: int = 4) -> AppTest:
    at = app_as(ADMIN, "pages/campaigns.py")
    at.text_input(key="campaign_name").input(name)
    # the aspect the dataset has reference scores of is offered first and chosen
    [aspect] = [s for s in at.selectbox if (s.key or "").startswith("campaign_aspect_")]
    assert aspect.value == "coherence" and aspect.options[0].startswith("coherence")
    at.multiselect(key="campaign_annotators").set_value(annotators)
    at.selectbox(key="campaign_selection").set_value("sample")
    at.number_input(key="campaign_n_pairs").set_value(n_pairs)
    at.text_area(key="campaign_guidelines").input("Prefer **faithful** <b>texts</b>.").run()
    at.button[[b.label for b in at.button].index("Create campaign")].click().run()
    assert not at.exception, at.exception
    return at


def label_all(who: str, pick) -> AppTest:
    """``who`` answers every pair in their queue on Annotate; ``pick(left_text, right_text)`` is
    the answer's button key."""
    at = app_as(who, "pages/annotate.py")
    for _ in range(50):
        if not has_answer_button(at, "answer_a"):
            break
        answer_button(at, pick(at)).click().run()
        assert not at.exception, at.exception
    return at


def test_campaign_end_to_end_two_annotators_overlap_two(app_env):
    store, dataset_id, _ = seed_run(app_env)
    people(store)
    at = create_on_page("round1", [ALICE, BOB])
    assert "Campaign `round1` created: 4 pairs for 2 annotator(s)" in texts(at.success)
    campaign = api.Store(store).campaign("round1")
    assert campaign.overlap == 2 and campaign.annotators == (ALICE, BOB)

    # Alice: always the left one, with a comment on the first; Bob: always a tie.
    alice = app_as(ALICE, "pages/annotate.py")
    assert "Prefer **faithful** <b>texts</b>." in texts(alice.text)  # guidelines, plain text
    assert f"`{ALICE}`: 0 / 4 judgements done in campaign `round1`" in everything_shown(alice)
    alice.text_input(key="campaign_comment").input("close call")
    answer_button(alice, "answer_a").click().run()
    alice = label_all(ALICE, lambda at: "answer_a")
    assert "answered every pair" in texts(alice.success)
    label_all(BOB, lambda at: "answer_tie")
    labels = campaign.labels()
    assert len(labels) == 8 and set(labels["annotator"]) == {ALICE, BOB}
    assert labels["comment"].dropna().tolist() == ["close call"]
    assert (labels["source"] == "app").all()

    # The admin: progress, agreement, disagreements, adjudication stored as such, export.
    admin = app_as(ADMIN, "pages/campaigns.py")
    shown = everything_shown(admin)
    assert ALICE in shown and BOB in shown
    assert [m.label for m in admin.metric][:4] == ["Pairs fully labelled", "Percent agreement",
                                                    "Cohen's kappa", "Krippendorff's alpha"]
    assert admin.metric[0].value == "4 / 4"
    assert campaign.agreement().percent_agreement == 0.0
    disputed = campaign.disagreements()
    assert len(disputed) == 4 and disputed["majority"].isna().all()
    assert len([b for b in admin.button if b.key.startswith("adj_save_")]) == 4
    admin.radio(key=f"adj_choice_{campaign.id}_0").set_value("both_bad")
    admin.button(key=f"adj_save_{campaign.id}_0").click().run()
    assert not admin.exception, admin.exception
    assert "Decision stored: `both bad`" in texts(admin.success)
    ruled = campaign.labels()
    ruled = ruled.loc[ruled["source"] == "adjudication"]
    assert len(ruled) == 1 and ruled["annotator"].iloc[0] == ADMIN
    assert ruled["winner"].tolist() == ["both_bad"]
    assert campaign.agreement().percent_agreement == 0.0  # unchanged: a ruling is no vote
    assert campaign.agreement().n_annotators == 2  # the admin is no annotator
    admin = app_as(ADMIN, "pages/campaigns.py")
    data = admin.get("download_button")
    assert data, "no export button"
    exported = json.loads(campaign.export_bytes("json").data)
    assert "adjudication" in json.dumps(exported)


def test_an_annotator_sees_only_their_campaign_and_nothing_of_the_judge(app_env):
    store, dataset_id, _ = seed_run(app_env)
    people(store)
    s = api.Store(store)
    s.create_campaign("mine", "sample_summeval", "coherence", [ALICE], overlap=1,
                      pairs="sample", n_pairs=1, seed=1, guidelines="Mine.")
    other = s.create_campaign("theirs", "sample_summeval", "coherence", [BOB], overlap=1,
                              pairs="sample", n_pairs=1, seed=9, guidelines="Secret rules.")
    mine_pair = tuple(s.campaign("mine").pairs().iloc[0])
    theirs_pair = tuple(other.pairs().iloc[0])
    assert mine_pair != theirs_pair
    dataset = store.load_dataset(dataset_id)
    theirs_texts = {c.text for c in dataset.context(theirs_pair[0]).candidates
                    if c.candidate_id in theirs_pair[1:]}
    mine_texts = {c.text for c in dataset.context(mine_pair[0]).candidates
                  if c.candidate_id in mine_pair[1:]}
    at = app_as(ALICE, "pages/annotate.py")
    shown = everything_shown(at)
    assert "Mine." in shown and "Secret rules." not in shown and "theirs" not in shown
    assert mine_texts <= {t.value for t in at.text}
    assert not (theirs_texts - mine_texts) & {t.value for t in at.text}
    # Nothing of the judge: no run, no probability, no prompt, no mode reading a run, no model.
    assert "hand-run" not in shown and "LLM" not in shown and "probab" not in shown.lower()
    assert "prompt" not in shown.lower() and "least certain" not in shown
    assert not at.checkbox and not at.radio
    assert not at.sidebar.selectbox and not at.get("file_uploader")
    assert "Import labels" not in [t.label for t in at.tabs]
    assert [answer_key(b.key) for b in at.button if b.key.startswith("answer_")] == [
        "answer_a", "answer_b", "answer_tie", "answer_both_bad", "answer_skip"]
    assert at.button(key="undo").disabled
    # A skip stores nothing; both bad does, with the campaign.
    answer_button(at, "answer_skip").click().run()
    assert len(s.campaign("mine").labels()) == 0
    answer_button(at, "answer_both_bad").click().run()
    assert not at.exception, at.exception
    assert s.campaign("mine").labels()["winner"].tolist() == ["both_bad"]
    at.button(key="undo").click().run()  # their own answer only, and the pair comes back
    assert len(s.campaign("mine").labels()) == 0
    answer_button(at, "answer_both_bad").click().run()
    assert s.campaign("mine").labels()["winner"].tolist() == ["both_bad"]
    # Agreement: their own answers only, no run.
    ag = app_as(ALICE, "pages/agreement.py")
    shown = everything_shown(ag)
    assert "hand-run" not in shown and "theirs" not in shown and BOB not in shown
    assert "mine" in shown


def test_a_person_with_no_campaign_gets_a_page_saying_so(app_env):
    store, _, _ = seed_run(app_env)
    people(store)
    api.Store(store).create_campaign("round1", "sample_summeval", "coherence", [ALICE],
                                     overlap=1)
    at = app_as(EVE, "pages/annotate.py")
    assert "You have no annotation campaign yet" in texts(at.info)
    assert not [b for b in at.button if b.key and b.key.startswith("answer_")]
    assert not at.text and not at.selectbox and not at.dataframe
    assert "round1" not in everything_shown(at) and "sample_summeval" not in everything_shown(at)


def test_a_removed_annotators_answer_is_refused(app_env):
    store, dataset_id, _ = seed_run(app_env)
    people(store)
    s = api.Store(store)
    s.create_campaign("round1", "sample_summeval", "coherence", [ALICE, BOB], overlap=2)
    at = app_as(ALICE, "pages/annotate.py")
    s.unassign("round1", [ALICE])  # taken off the campaign while the page is open
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    assert "not assigned" in texts(at.error)
    assert len(s.campaign("round1").labels()) == 0
    assert "You have no annotation campaign yet" in texts(at.info)  # the page now says so
    # Taken off People altogether: refused by the role check before the store is reached.
    bob = app_as(BOB, "pages/annotate.py")
    store.remove_person(BOB)
    answer_button(bob, "answer_a").click().run()
    assert "no longer have the rights" in texts(bob.error)
    assert len(s.campaign("round1").labels()) == 0


def test_admin_annotate_keeps_free_annotation_and_picks_their_campaign(app_env):
    store, dataset_id, _ = seed_run(app_env)
    people(store)
    at = app_as(ADMIN, "pages/annotate.py")
    assert [t.label for t in at.tabs][:2] == ["Judge pairs", "Import labels"]  # unchanged
    api.Store(store).create_campaign("admins-own", "sample_summeval", "coherence", [ADMIN],
                                     overlap=1)
    at = app_as(ADMIN, "pages/annotate.py")
    picker = at.selectbox(key="annotate_campaign")
    assert picker.options[0].startswith("(free annotation") and "admins-own" in picker.options
    picker.set_value("admins-own").run()
    assert "judgements done in campaign `admins-own`" in everything_shown(at)


# ----------------------------------------------------------------- single-user local mode

def test_local_mode_says_what_campaigns_need_and_the_local_user_labels_their_own(app_env):
    """No sign-in, no People page: the page says campaigns are for signed-in annotators and
    how to deploy a team; the local user is the one annotator offered and chosen, labels the
    campaign on Annotate; no campaign without an annotator; a warning for an aspect the
    dataset has neither labels nor scores of; the dataset picker follows the link."""
    from compassess_core.people.access import local_identity
    store, dataset_id, _ = seed_run(app_env)
    other = api.open_store(app_env).add_dataset(
        "context_id,context,candidate_id,text\nc1,ctx,a,one\nc1,ctx,b,two\n".encode(),
        name="other")
    me = local_identity()
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["dataset"] = str(dataset_id)   # a link naming the older dataset
    at.run()
    at.switch_page("pages/campaigns.py").run()
    assert not at.exception, at.exception
    assert "deploy the app with sign-in (docs/deploy.md" in texts(at.info)
    assert at.multiselect(key="campaign_annotators").value == [me]
    assert at.number_input(key="campaign_overlap").value == 1
    # the dataset picker shows the view's dataset (the link's), not the first one
    assert at.selectbox(key="dataset_pick_w").value == dataset_id
    at.selectbox(key="dataset_pick_w").set_value(api.open_store(app_env).dataset_id("other")).run()
    [aspect] = [s for s in at.selectbox if (s.key or "").startswith("campaign_aspect_")]
    assert "has no human label and no reference score" in texts(at.warning)
    at.selectbox(key="dataset_pick_w").set_value(dataset_id).run()
    assert "has no human label and no reference score" not in texts(at.warning)
    at.text_input(key="campaign_name").input("mine").run()
    at.multiselect(key="campaign_annotators").set_value([]).run()
    create = at.button(key=f"create_campaign_{dataset_id}")  # keyed by the dataset shown
    assert create.disabled and "Choose at least one annotator" in texts(at.caption)
    at.multiselect(key="campaign_annotators").set_value([me]).run()
    at.selectbox(key="campaign_selection").set_value("sample").run()
    at.number_input(key="campaign_n_pairs").set_value(3).run()
    at.button(key=f"create_campaign_{dataset_id}").click().run()
    assert not at.exception, at.exception
    assert "Campaign `mine` created: 3 pairs for 1 annotator(s); you label them on Annotate." \
        in texts(at.success)
    # the metric says n/a, not "n/a %", before two people share a pair
    at.switch_page("pages/campaigns.py").run()
    assert next(m.value for m in at.metric if m.label == "Percent agreement") == "n/a"
    # Annotate offers the campaign to the local user, who labels its pairs
    at.switch_page("pages/annotate.py").run()
    assert at.selectbox(key="annotate_campaign").options[-1] == "mine"
    at.selectbox(key="annotate_campaign").set_value("mine").run()
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    labels = api.open_store(app_env).campaign("mine").labels()
    assert labels["annotator"].tolist() == [me]
    assert other is not None
