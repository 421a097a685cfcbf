"""Two people annotating at once in a real browser: one ``streamlit run app.py`` server with
sign-in (``tests/browser/test_browser_sign_in.py``'s OpenID Connect provider), two chromium browser
contexts (separate cookies and sessions) signed in as alice and bob, annotators of one campaign
that the signed-in admin creates and assigns on the Campaigns page (overlap 2), answering in turn by mouse and by keyboard shortcut. Both must see their judgements
stored under their own identity, and alice's undo must remove only hers. Bob's Agreement page
shows his campaign answers only; the admin follows the campaign on Campaigns (progress,
agreement), adjudicates a pair they disagree on (stored as an adjudication) and downloads the
labels, a file that the same URL without the sign-in cookie cannot fetch.

Then the Agreement page is opened on the simulated run with more labels written straight into the
store, and screenshots of both pages go to ``test-artifacts/`` (``docs/img/`` holds copies).

Also: several first visitors of a fresh server at once, each straight to a deep link, all get their
page inside app.py's navigation without a reload.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import itertools

import httpx
import numpy as np
import pytest

from tests.browser.test_browser import (STATE_WAIT_MS, ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, nav,  # noqa: F401
                                        playwright_api, at_rest, choose, server, settle, shot,
                                        simulate_finished_run)
from tests.browser.test_browser_sign_in import oidc_provider, sign_in, team_server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

SAMPLE = ARTIFACTS.parent / "assets" / "sample_summeval.csv"
#: Each page's URL path (as app.py's st.Page names it) and its title.
TITLES = {"": "CompAssess", "upload": "Upload candidates", "run": "Run the judge",
          "rankings": "Rankings", "scores": "Scores", "matrix": "Comparison matrix",
          "bias": "Positional bias audit", "annotate": "Annotate",
          "agreement": "Agreement with people", "export": "Export"}


def store_sample_and_run(db_url: str) -> int:
    from compassess_core.data.candidates import load_candidates
    from db.store import Store
    dataset_id = Store(db_url).save_dataset(load_candidates(SAMPLE, name="sample_summeval"))
    simulate_finished_run(db_url)
    return dataset_id


def wait_done(page, who: str, n: int) -> None:
    settle(page, f"{who}@example.org: {n} / ")


def more_labels(db_url: str, dataset_id: int) -> None:
    """carol and dave label every pair by coherence, dave with a few slips, for the screenshot."""
    from db.store import Store
    store = Store(db_url)
    rng = np.random.default_rng(3)
    rows = []
    for ctx in store.load_dataset(dataset_id).contexts:
        coh = {c.candidate_id: c.scores["coherence"] for c in ctx.candidates}
        for x, y in itertools.combinations(sorted(coh), 2):
            for who, slip in (("carol", 0.1), ("dave", 0.25)):
                left, right = (x, y) if rng.random() < 0.5 else (y, x)
                better = "A" if coh[left] > coh[right] else "B"
                r = rng.random()
                winner = "tie" if r < 0.05 else ({"A": "B", "B": "A"}[better] if r < slip else better)
                rows.append(dict(context_id=ctx.context_id, candidate_left=left,
                                 candidate_right=right, winner=winner, annotator=who,
                                 aspect="coherence", shown_order="ab" if left == x else "ba",
                                 seconds=float(rng.uniform(4, 30))))
    store.add_human_judgements(dataset_id, rows)


def test_two_annotators_at_once_in_chromium(chromium, team_server):
    from db.store import Store

    url, db_url = team_server
    dataset_id = store_sample_and_run(db_url)
    store = Store(db_url)
    for who in ("alice", "bob"):
        store.set_role(f"{who}@example.org", "annotator", "test")
    from compassess_core import api
    browser = chromium
    # The admin creates the campaign and assigns both annotators on the Campaigns page.
    admin = browser.new_context(viewport={"width": 1400, "height": 1300}).new_page()
    sign_in(admin, url, "admin@example.org")
    nav(admin, "Campaigns")
    admin.get_by_role("tab", name="New campaign").click()
    settle(admin, "Create campaign")
    admin.get_by_label("Campaign name").fill("round1")
    # the aspect is not typed: the one the sample has reference scores of is chosen already
    for who in ("alice", "bob"):
        choose(admin, who)
    admin.get_by_role("button", name="Create campaign").click()
    settle(admin, "Campaign round1 created")
    campaign = api.Store(store).campaign("round1")
    assert campaign.overlap == 2 and campaign.aspect == "coherence"
    assert sorted(campaign.annotators) == ["alice@example.org", "bob@example.org"]
    pages = {}
    for who in ("alice", "bob"):
        context = browser.new_context(viewport={"width": 1400, "height": 1300})
        page = context.new_page()
        sign_in(page, url, f"{who}@example.org")
        page.goto(f"{url}/annotate")
        pages[who] = page
    for who, page in pages.items():
        settle(page, "Which text is more coherent?")
        page.locator('[data-testid="stSidebarNav"]').get_by_text("Agreement").wait_for(timeout=STATE_WAIT_MS)  # visible, waiting for a slow rerun
        wait_done(page, who, 0)
    alice, bob = pages["alice"], pages["bob"]
    df_who = {"alice": "alice@example.org", "bob": "bob@example.org"}

    # Interleaved answers: buttons for alice, keyboard shortcuts for bob.
    for k in range(1, 4):
        alice.get_by_role("button", name="A is better").click()
        # Focus the page itself (not a text box, where a letter would be typed) first.
        bob.get_by_role("heading", name="Annotate").first.click()
        bob.keyboard.press("b" if k < 3 else "t")
        wait_done(alice, "alice", k)
        wait_done(bob, "bob", k)

    df = Store(db_url).human_judgements_frame(dataset_id, "coherence")
    assert sorted(df.loc[df["annotator"] == df_who["alice"], "winner"]) == ["A", "A", "A"]
    assert sorted(df.loc[df["annotator"] == df_who["bob"], "winner"]) == ["B", "B", "tie"]
    assert set(df["shown_order"]) <= {"ab", "ba"} and (df["seconds"] > 0).all()
    for who in ("alice", "bob"):  # never the same pair twice to one person
        mine = df.loc[df["annotator"] == df_who[who]]
        assert len({(c, frozenset((a, b))) for c, a, b in
                    mine[["context_id", "candidate_left", "candidate_right"]]
                    .itertuples(index=False)}) == 3

    alice.get_by_role("button", name="Undo").click()
    wait_done(alice, "alice", 2)
    df = Store(db_url).human_judgements_frame(dataset_id, "coherence")
    assert (df["annotator"] == df_who["alice"]).sum() == 2
    assert (df["annotator"] == df_who["bob"]).sum() == 3
    alice.get_by_role("button", name="A is better").click()
    wait_done(alice, "alice", 3)
    shot(alice, "annotate")

    # An annotator's Agreement page holds their own campaign answers only, nothing of a run.
    nav(bob, "Agreement")
    settle(bob, "Your answers")
    body = bob.locator("body").inner_text()
    assert "round1" in body and "sample-coherence-t1" not in body and "alice" not in body
    # Alice and Bob disagree on one pair; the admin adjudicates it on Campaigns and exports.
    pair = campaign.queue("alice@example.org")[0]
    campaign.label("alice@example.org", pair, pair[1])
    campaign.label("bob@example.org", pair, pair[2])
    admin.reload()
    nav(admin, "Campaigns")
    settle(admin, "Pairs fully labelled")
    settle(admin, "Adjudication")
    assert "Krippendorff" in admin.locator("body").inner_text()
    admin.get_by_role("button", name="Save decision").first.click()
    settle(admin, "Decision stored")
    ruled = campaign.labels()
    ruled = ruled.loc[ruled["source"] == "adjudication"]
    assert ruled["annotator"].tolist() == ["admin@example.org"]
    with admin.expect_download() as download:
        admin.get_by_role("button", name="Download CSV").click()
    assert b"adjudication" in open(download.value.path(), "rb").read()
    # The file is served to the signed-in admin only: the same URL without the cookie is refused.
    assert "/media/" in download.value.url
    assert httpx.get(download.value.url).status_code == 403
    shot(admin, "campaigns")

    more_labels(db_url, dataset_id)
    # An admin (from COMPASSESS_ADMINS) sees everyone's agreement with the run.
    nav(admin, "Agreement")
    settle(admin, "LLM vs humans (majority vote)")
    admin.get_by_text("balanced (tau*").first.click()
    settle(admin, "At the current tau = 0.")
    admin.get_by_text("Ties left out").first.wait_for(timeout=STATE_WAIT_MS)  # a slow rerun
    admin.locator('[data-testid="stPlotlyChart"]').nth(2).wait_for(timeout=STATE_WAIT_MS)
    # The page scrolls inside Streamlit's own container: a tall window shows it whole.
    admin.set_viewport_size({"width": 1400, "height": 4200})
    at_rest(admin)   # the charts drawn again at the new size
    shot(admin, "agreement")
    for name in ("annotate", "agreement"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name


@pytest.mark.parametrize("links", [
    ("annotate?annotator=alice", "annotate?annotator=bob", "rankings", "agreement", "export"),
    ("scores", "matrix", "bias", "upload", "run", ""),
], ids=["annotate-rankings-agreement-export", "others"])
def test_deep_links_first_on_a_fresh_server_in_chromium(chromium, server, links):
    """The first requests of a fresh server are deep links, opened at the same instant: each page
    comes up at once inside app.py's navigation (its titles in the sidebar, not Streamlit's legacy
    list of pages/*.py, where pages/_common.py shows as "common"), with no reload and no retry."""
    url, _ = server
    browser = chromium
    pages = []
    for link in links:
        page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
        # No waiting for the load: the sessions start together.
        page.goto(f"{url}/{link}", wait_until="commit")
        pages.append((link, page))
    for link, page in pages:
        title = TITLES[link.split("?")[0]]
        page.get_by_role("heading", name=title).first.wait_for(timeout=STATE_WAIT_MS)
        sidebar = page.locator('[data-testid="stSidebarNav"]')
        sidebar.get_by_text("Agreement", exact=True).wait_for(timeout=10_000)
        assert sidebar.get_by_text("common", exact=True).count() == 0, link
        assert page.get_by_text("Page not found").count() == 0, link
        assert not page.locator('[data-testid="stException"]').count(), link
