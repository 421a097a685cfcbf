"""Sign-in and roles in the app (AppTest on app.py and a real SQLite store): with ``[auth]``
configured every page needs a signed-in person, an annotator gets Annotate and their own
Agreement only, an admin gets everything and People, the first admins come from
``COMPASSESS_ADMINS``, and an annotator's labels carry the signed-in identity whatever the URL says.

Streamlit's own sign-in (``st.login`` against a real OpenID Connect provider in a real browser) is
``tests/browser/test_browser_sign_in.py``; here ``AppTest.user`` stands for the signed-in person.
"""

from __future__ import annotations

import secrets
import time

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.people import access
from compassess_core.data.candidates import load_candidates
from db.store import Store
from tests.app.test_app_pages import (APP, SAMPLE, app_env, seed_run,  # noqa: F401 - app_env is a fixture
                            texts)
from tests.answer_buttons import answer_button

#: Random per run: a fixed secret in a published test suite is a published secret
#: (``access.PUBLISHED_COOKIE_SECRETS`` refuses the one these tests used before).
TEST_COOKIE_SECRET = secrets.token_hex(24)
#: An [auth] section as secrets.toml holds it (never contacted: AppTest.user is the signed-in person).
AUTH_SECRETS = {"auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                         "cookie_secret": TEST_COOKIE_SECRET, "client_id": "compassess",
                         "client_secret": "test-client-secret",
                         "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}}
#: The issuer of the signed-in person's claims in these tests.
ISSUER = "https://id.example.org"
ADMIN_PAGES = {"Home", "Upload", "Run", "Leaderboard", "Rankings", "Scores", "Matrix", "Bias",
               "Compare runs", "Panel", "Judges", "Tune wording", "Annotate", "Campaigns",
               "Agreement", "Export", "People"}


def app_as(identity: str | None, page: str | None = None, query: dict | None = None) -> AppTest:
    """app.py with sign-in configured, signed in as ``identity`` (None: an anonymous visitor)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
    at.user = ({"is_logged_in": True, "email": identity, "email_verified": True, "iss": ISSUER,
                "sub": f"sub-{identity}", "name": identity, **token_times()} if identity
               else {"is_logged_in": False})
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    if page is not None:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def token_times(age_s: float = 60.0, lifetime_s: float = 3600.0) -> dict:
    """An ID token's ``iat`` and ``exp`` (seconds since the epoch): issued ``age_s`` ago, valid
    for ``lifetime_s`` (an hour, as most providers give)."""
    issued = int(time.time() - age_s)
    return {"iat": issued, "exp": int(issued + lifetime_s)}


def page_titles(at: AppTest) -> set[str]:
    """The pages st.navigation declared in the last run (AppTest keeps them to switch pages)."""
    return {info["page_name"] for info in at._registered_pages.values()}


def sample_with_a_run(url: str) -> tuple[Store, int]:
    store, dataset_id, _ = seed_run(url)
    return store, dataset_id


def unreachable(at: AppTest, page: str) -> bool:
    """The page is not among the pages declared for this viewer (no URL reaches it)."""
    try:
        at.switch_page(page)
    except ValueError as e:
        return "Could not find a navigation page" in str(e)
    return False


def test_anonymous_visitor_gets_the_sign_in_page_and_no_data_on_every_page(app_env):
    sample_with_a_run(app_env)
    at = app_as(None)
    assert [b.label for b in at.button] == ["Sign in"]
    assert not at.dataframe and not at.get("plotly_chart") and not at.text and not at.selectbox
    shown = texts(at.markdown) + texts(at.caption) + texts(at.title)
    assert "sample_summeval" not in shown and "hand-run" not in shown
    for page in ("pages/home.py", "pages/upload.py", "pages/run.py", "pages/rankings.py",
                 "pages/annotate.py", "pages/agreement.py", "pages/export.py", "pages/people.py"):
        assert unreachable(at, page), page


def test_signed_in_without_a_role_sees_only_that(app_env):
    sample_with_a_run(app_env)
    at = app_as("stranger@example.org")
    assert "nobody has given this account a role yet" in texts(at.warning)
    assert "`stranger@example.org`" in texts(at.warning)
    assert not at.dataframe and not at.selectbox
    assert [b.label for b in at.button] == ["Sign out"]
    assert unreachable(at, "pages/run.py")


def test_first_admins_come_from_configuration(app_env, monkeypatch):
    store, _ = sample_with_a_run(app_env)
    monkeypatch.setenv("COMPASSESS_ADMINS", "Boss@Example.org, other@example.org")
    at = app_as("boss@example.org")
    assert store.role_of("boss@example.org") == "admin"
    assert store.list_people()[0].added_by == access.FROM_CONFIGURATION
    assert page_titles(at) == ADMIN_PAGES
    assert store.role_of("other@example.org") is None  # stored when they first sign in


def test_annotator_gets_annotate_and_own_agreement_only(app_env):
    store, dataset_id = sample_with_a_run(app_env)
    store.set_role("ann@example.org", "annotator", "test")
    at = app_as("ann@example.org")
    assert page_titles(at) == {"Start", "Annotate", "Agreement"}  # Start: hidden, "/" -> Annotate
    assert at.title[0].value == "Annotate"  # where they land
    # Pages outside the role do not exist for them: no URL reaches them.
    for page in ("pages/home.py", "pages/upload.py", "pages/run.py", "pages/rankings.py",
                 "pages/scores.py", "pages/matrix.py", "pages/bias.py", "pages/export.py",
                 "pages/people.py", "pages/panel.py", "pages/judge_leaderboard.py",
                 "pages/tune.py"):
        assert unreachable(at, page), page
    at = app_as("ann@example.org", "pages/annotate.py")
    assert "Import labels" not in [t.label for t in at.tabs]
    assert not [a for a in at.text_area if a.key == f"guidelines_{dataset_id}"]
    # Run without app.py's navigation (AppTest's page switch uses Streamlit's legacy pages/
    # folder mode), a page still refuses a role that may not open it.
    for page in ("pages/run.py", "pages/upload.py", "pages/export.py", "pages/people.py",
                 "pages/panel.py", "pages/judge_leaderboard.py", "pages/tune.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert "not available to your account" in texts(at.error), page
        assert not at.dataframe and not at.get("file_uploader"), page


def test_admin_gets_every_page_and_manages_people(app_env):
    store, _ = sample_with_a_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    at = app_as("admin@example.org")
    assert page_titles(at) == ADMIN_PAGES
    at.switch_page("pages/people.py").run()
    at.text_input[0].input("New.Person@Example.org")
    at.selectbox[0].set_value("annotator")
    at.button[[b.label for b in at.button].index("Save")].click().run()
    assert not at.exception, at.exception
    assert store.role_of("new.person@example.org") == "annotator"
    assert "`new.person@example.org` is now annotator." in texts(at.success)
    # The last admin can be neither demoted nor removed.
    at.text_input[0].input("admin@example.org")
    at.selectbox[0].set_value("annotator")
    at.button[[b.label for b in at.button].index("Save")].click().run()
    assert "last admin" in texts(at.error)
    assert store.role_of("admin@example.org") == "admin"


def campaign_for(store: Store, *annotators: str, name: str = "round1") -> None:
    """A campaign on the sample's coherence with ``annotators`` (one person per pair)."""
    from compassess_core import api
    api.Store(store).create_campaign(name, "sample_summeval", "coherence", list(annotators),
                                     overlap=1, created_by="boss@example.org")


def test_annotators_labels_carry_the_signed_in_identity_not_the_url(app_env):
    store, dataset_id = sample_with_a_run(app_env)
    store.set_role("ann@example.org", "annotator", "test")
    campaign_for(store, "ann@example.org")
    at = app_as("ann@example.org", "pages/annotate.py", query={"annotator": "mallory"})
    assert [t.key for t in at.text_input] == ["campaign_comment"]  # no name box
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    df = store.human_judgements_frame(dataset_id)
    assert df["annotator"].tolist() == ["ann@example.org"]


def test_annotator_agreement_shows_their_own_labels(app_env):
    store, dataset_id = sample_with_a_run(app_env)
    dataset = store.load_dataset(dataset_id)
    ctx = dataset.contexts[0]
    a, b, c = ctx.candidate_ids[:3]
    store.add_human_judgements(dataset_id, [
        dict(context_id=ctx.context_id, candidate_left=a, candidate_right=b, winner="A",
             annotator="ann@example.org", aspect="coherence", shown_order="ab"),
        dict(context_id=ctx.context_id, candidate_left=a, candidate_right=c, winner="B",
             annotator="other@example.org", aspect="coherence", shown_order="ab")])
    store.set_role("ann@example.org", "annotator", "test")
    at = app_as("ann@example.org", "pages/agreement.py")
    # Without a campaign: nothing, and nothing of the judge (no run picker, no run name).
    assert "no annotation campaign yet" in texts(at.info)
    assert not at.selectbox and not at.dataframe and "hand-run" not in texts(at.caption)
    campaign_for(store, "ann@example.org", "other@example.org")
    from compassess_core import api
    api.Store(store).campaign("round1").label("ann@example.org", (ctx.context_id, *sorted((a, b))),
                                              a)
    at = app_as("ann@example.org", "pages/agreement.py")
    assert metric_value(at, "Your answers") == "1"
    assert not at.selectbox and "hand-run" not in texts(at.caption) + texts(at.markdown)
    shown = at.dataframe[0].value
    assert shown["candidate_left"].tolist() == [min(a, b)] and "annotator" not in shown
    store.set_role("boss@example.org", "admin", "test")
    at = app_as("boss@example.org", "pages/agreement.py")
    assert "vs 2 human judgements" in texts(at.caption)


def metric_value(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_imported_labels_keep_the_files_names_and_never_speak_for_a_person_unasked(app_env):
    store = Store(app_env)
    dataset_id = store.save_dataset(load_candidates(SAMPLE, name="sample_summeval"))
    d = store.load_dataset(dataset_id)
    c0 = d.contexts[0]
    ids = c0.candidate_ids
    body = ("context_id,candidate_a,candidate_b,winner,annotator\n"
            f"{c0.context_id},{ids[0]},{ids[1]},tie,alice\n"
            f"{c0.context_id},{ids[0]},{ids[2]},tie,bob\n"
            f"{c0.context_id},{ids[0]},{ids[3]},tie,admin@example.org\n"
            f"{c0.context_id},{ids[0]},{ids[4]},tie,carol@example.org\n").encode()
    store.set_role("admin@example.org", "admin", "test")
    store.set_role("bob@example.org", "annotator", "test")
    store.set_role("carol@example.org", "annotator", "test")
    at = app_as("admin@example.org", "pages/annotate.py")
    at.file_uploader(key="labels_file").upload("l.csv", body, "text/csv").run()
    assert "keeps the annotator name of the file, not yours" in texts(at.markdown)
    next(s for s in at.selectbox if s.label == "File annotator `bob`").set_value(
        "bob@example.org").run()  # bob's row is credited to bob explicitly
    at.button(key="import_labels").click().run()
    assert not at.exception, at.exception
    assert "0 already stored, 4 added for aspect `coherence`" in texts(at.success)
    df = store.human_judgements_frame(dataset_id)
    # the importer's own name and another person's are kept apart: a file speaks for nobody here
    assert sorted(df["annotator"]) == ["admin@example.org (from the file)", "alice",
                                       "bob@example.org", "carol@example.org (from the file)"]


# ------------------------------------------------------------------------------ the policy itself

def test_identity_comes_from_the_providers_claims():
    iss = "https://id.example.org"
    assert access.identity_from_claims({"email": " Ann@Example.org ", "email_verified": True,
                                        "iss": iss, "sub": "123"}) == "ann@example.org"
    assert access.identity_from_claims({"iss": iss, "sub": "user-42"}) == \
        "https://id.example.org#user-42"
    with pytest.raises(access.AccessError, match="verified"):
        access.identity_from_claims({"email": "ceo@example.org", "email_verified": False})
    with pytest.raises(access.AccessError, match="neither a verified e-mail"):
        access.identity_from_claims({"name": "Someone"})
    assert access.configured_admins({"COMPASSESS_ADMINS": "A@x.org; b@x.org  c@x.org,"}) == \
        {"a@x.org", "b@x.org", "c@x.org"}


@pytest.mark.parametrize("sign_in,address,allow,refused", [
    (False, "127.0.0.1", "", False), (False, "localhost", "", False), (False, "::1", "", False),
    (False, "0.0.0.0", "", True), (False, None, "", True), (False, "10.0.0.5", "", True),
    (False, "0.0.0.0", "1", False), (True, "0.0.0.0", "", False), (True, None, "", False),
])
def test_without_sign_in_only_loopback_is_served(sign_in, address, allow, refused):
    env = {access.ALLOW_ANONYMOUS_ENV: allow}
    assert (access.serving_problem(sign_in, address, env) is not None) == refused


def test_agreement_with_the_others_is_hidden_below_three_co_annotators(app_env):
    """With one other annotator the figure would tell an annotator how that person voted: pairs
    count once three others labelled them, in batches (campaigns.agreement_of)."""
    from compassess_core import api
    from compassess_core.people.campaigns import AGREEMENT_BATCH
    store, _ = sample_with_a_run(app_env)
    people = ["ann@example.org", "b@example.org", "c@example.org", "d@example.org"]
    for who in people:
        store.set_role(who, "annotator", "test")
    campaign_for(store, *people)
    campaign = api.Store(store).campaign("round1")
    pairs = [tuple(p) for p in campaign.pairs().itertuples(index=False)][:AGREEMENT_BATCH]

    def label(*who: str) -> None:
        for person in who:
            for pair in pairs:
                campaign.label(person, pair, pair[1])

    label("ann@example.org", "b@example.org")
    at = app_as("ann@example.org", "pages/agreement.py")
    assert metric_value(at, "Pairs shared with others") == "hidden"
    assert metric_value(at, "Agreement with the others") == "hidden"
    label("c@example.org", "d@example.org")
    at = app_as("ann@example.org", "pages/agreement.py")
    assert metric_value(at, "Pairs shared with others") == str(AGREEMENT_BATCH)
    assert metric_value(at, "Agreement with the others") == "100 %"
