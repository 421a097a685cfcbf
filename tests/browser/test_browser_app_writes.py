"""The app acts on the object it shows, in Chromium at a person's speed.

A person clicks or types about a second after the screen changed, a fast one a third of a
second; Streamlit's frontend keeps its own widget values, forgets the ones it unmounts and
shows what the script last sent it. ``AppTest`` has no such frontend, so these sequences are
walked here in a real browser, each asserting the store after every step:

* Manage: three renames in a row of a dataset and of a run in the MIDDLE of their lists (the
  first item of a list hides a picker that falls back to its first item);
* Run: a dataset's form, left and revisited, shows the values the plan uses;
* a documented panel link (``/panel?panel=jury&method=poe``) opens the panel's own dataset;
* a link by name to a renamed or deleted run shows the notice and nothing of another run;
* Run: opening the page leaves the run the other pages show alone; right after Start the
  previous run's "60/60" never shows under the new run's name; a run of several aspects is
  named ``NAME-ASPECT`` without another aspect in NAME; Upload does not strip an answer that is
  an HTML document by default.

One ``streamlit run app.py`` server per module (Chromium: one per test process), on a real
SQLite store seeded with several datasets and simulated finished runs (``tests/browser/test_browser.py``'s set-up). Runs
started from the page use a FAKE judge: a ``.gguf`` path that does not exist, whose worker
fails at once (what is checked is the page right after Start and the names stored).
"""

from __future__ import annotations

import csv
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from compassess_core import api
from tests.app_server import app_server
from tests.browser.test_browser import (STATE_WAIT_MS, STATE_WAIT_S, CHROMIUM, CHROMIUM_ARGS, ROOT,  # noqa: F401
                                        at_rest, nav, pause_as_a_person, playwright_api,
                                        script_idle, settle, visible)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: A person's pauses after a change on screen: a fast one, a usual one (seconds).
PACES = (0.3, 1.0)
#: A FAKE judge: a local model file that does not exist (its worker fails at once).
FAKE_JUDGE = "fake-judge-missing.gguf"
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


# --------------------------------------------------------------------------- the seeded store

def _write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _sample_rows(suffix: str = "", contexts: int | None = None) -> list[dict]:
    with SAMPLE.open() as f:
        rows = list(csv.DictReader(f))
    keep = list(dict.fromkeys(r["context_id"] for r in rows))[:contexts]
    return [dict(r, text=r["text"] + suffix) for r in rows if r["context_id"] in keep]


def _rows(n_contexts: int, n_cands: int, score: str, word: str) -> list[dict]:
    rng = np.random.default_rng(n_contexts * 10 + n_cands)
    return [dict(context_id=f"{word}{c}", context=f"The {word} task number {c}: do it well.",
                 candidate_id=f"m{k}", text=f"Answer {k} of {word} {c}: " + "words " * (k + 1),
                 **{score: int(rng.integers(1, 6))})
            for c in range(n_contexts) for k in range(n_cands)]


def _finished_run(db_url: str, dataset_id: int, name: str, seed: int) -> int:
    """A complete FAKE run on a stored dataset (judge-like p, no model), stored as a worker
    stores it."""
    from compassess_core.runs.prompts import Aspect, builtin_template
    from compassess_core.runs.settings import RunSettings
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store

    store = Store(db_url)
    dataset = store.load_dataset(dataset_id)
    t, a = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model=f"fake-judge-{seed}", seed=seed)
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    rng = np.random.default_rng(seed)
    results = [ComparisonResult(PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                                Judgement(p, float(np.log(0.8 * p)), float(np.log(0.8 * (1 - p))),
                                          0.8), f"fake-{name}-{ctx.context_id}-{x.candidate_id}-"
                                                f"{y.candidate_id}")
               for ctx in dataset.contexts for x in ctx.candidates for y in ctx.candidates
               if x is not y for p in [float(rng.uniform(0.05, 0.95))]]
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return run_id


class Seeded:
    """What the module's store holds, by name -> id."""

    def __init__(self, db_url: str, folder: Path) -> None:
        self.db_url = db_url
        store = api.open_store(db_url)
        files = [
            ("sample_summeval", SAMPLE),
            ("newsroom_user", _write_csv(folder / "newsroom.csv", _sample_rows(" (newsroom)"))),
            ("instruct_user", _write_csv(folder / "instruct.csv", _rows(6, 3, "overall", "instr"))),
            ("newsroom_two", _write_csv(folder / "newsroom2.csv", _sample_rows(" (two)", 2))),
            ("hanna_user", _write_csv(folder / "hanna.csv", _rows(2, 4, "coherence", "story"))),
            ("extra_user", _write_csv(folder / "extra.csv", _rows(3, 3, "fluency", "extra"))),
        ]
        self.datasets = {}
        for name, path in files:
            store.add_dataset(path, name=name)
            self.datasets[name] = store.dataset_id(name)
        sample = self.datasets["sample_summeval"]
        self.runs = {f"sample-coh-r{k}": _finished_run(db_url, sample, f"sample-coh-r{k}", k)
                     for k in range(1, 7)}
        self.runs["link-old-name"] = _finished_run(db_url, sample, "link-old-name", 11)
        self.runs["link-deleted"] = _finished_run(db_url, sample, "link-deleted", 12)
        self.runs["extra-run"] = _finished_run(db_url, self.datasets["extra_user"], "extra-run", 13)
        store.create_panel("jury", [self.runs["sample-coh-r1"], self.runs["sample-coh-r2"]])

    def store(self) -> api.Store:
        return api.open_store(self.db_url)

    def dataset_names(self) -> dict[int, str]:
        return {d.id: d.name for d in self.store().list_datasets()}

    def run_names(self) -> dict[int, str]:
        return {r.id: r.name for r in self.store().list_runs()}


@pytest.fixture(scope="module")
def app(tmp_path_factory, chromium_browser):
    """One server on a seeded SQLite store, and the process's Chromium: ``(url, seeded, browser)``."""
    folder = tmp_path_factory.mktemp("app_writes")
    db_url = f"sqlite:///{folder / 'compassess.db'}"
    seeded = Seeded(db_url, folder)
    with app_server(folder, db_url) as server:
        yield server.url, seeded, chromium_browser


def _page(browser):
    """A fresh browser session (its own Streamlit session)."""
    return browser.new_page(viewport={"width": 1400, "height": 1400})


def _until(check, what: str, timeout_s: float = STATE_WAIT_S, page=None):
    """Wait for the store (or page) state ``check()`` returns truthy; fail naming ``what``
    (and, given the ``page``, with what it shows)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            shown = page.locator("main").inner_text()[:3000] if page is not None else ""
            raise AssertionError(f"never reached: {what}\n{shown}")
        time.sleep(0.05)   # the next look at the store (or page)


def _pick(page, label: str, option_text: str) -> None:
    """Open the select box ``label`` and click the option holding ``option_text``."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    for attempt in range(5):   # a rerun that redraws the box closes its list: open it again
        box.click()
        offered = page.get_by_role("option").filter(has_text=option_text).first
        try:
            offered.click(timeout=5_000)
            return
        except playwright_api.TimeoutError:
            page.keyboard.press("Escape")
    raise AssertionError(f"no option {option_text!r} in {label!r}")


def _box_text(page, label: str) -> str:
    """What the select box ``label`` shows now."""
    return page.get_by_role("combobox", name=label).first.input_value()


# --------------------------------------------------------- Manage: renames of a middle item

@pytest.mark.parametrize("pace", PACES)
def test_three_renames_in_a_row_of_a_middle_dataset_and_run(app, pace):
    url, seeded, browser = app
    page = _page(browser)
    dataset_name = {0.3: "newsroom_user", 1.0: "newsroom_two"}[pace]
    run_name = {0.3: "sample-coh-r3", 1.0: "sample-coh-r4"}[pace]
    for kind, old, object_id, names_of in (
            ("dataset", dataset_name, seeded.datasets[dataset_name], seeded.dataset_names),
            ("run", run_name, seeded.runs[run_name], seeded.run_names)):
        ids = list(names_of())
        assert 0 < ids.index(object_id) < len(ids) - 1, "a middle item of the list"
        page.goto(url)
        settle(page, "Manage")
        page.locator('[data-testid="stRadio"]').filter(has_text="Manage a").get_by_text(
            kind, exact=True).click()
        script_idle(page)
        _pick(page, f"The {kind}", f"(id {object_id})")
        _until(lambda: f"{old} (id {object_id})" in _box_text(page, f"The {kind}"),
               f"the picker shows {old}")
        # The object's own rename form (keyed by its id), drawn in place of another's.
        form = page.locator('[data-testid="stForm"]').filter(
            has=page.locator(f'[class*="st-key-manage_{kind}_{object_id}_"][class*="_new_name"]'))
        visible(form)
        pause_as_a_person(page, pace)
        before = names_of()
        tag = str(pace).replace(".", "")
        for step in ("a", "b", "c"):
            new = f"{old[:6]}_{tag}{step}"
            form.get_by_role("textbox", name=f"New name of the {kind}").fill(new)
            pause_as_a_person(page, pace)
            form.get_by_role("button", name="Rename").click()
            # The store: this object, and only this object, renamed.
            expected = {**before, object_id: new}
            try:
                _until(lambda: names_of() == expected, f"{kind} {object_id} renamed to {new}")
            except AssertionError:
                raise AssertionError(f"{kind} {object_id} not renamed to {new} alone; store: "
                                     f"{names_of()}; page: {page.locator('main').inner_text()[-1500:]}")
            # The screen: the picker shows the renamed object at once, and says so.
            _until(lambda: f"{new} (id {object_id})" in _box_text(page, f"The {kind}"),
                   f"the picker shows {new} (id {object_id})")
            visible(page.get_by_text(f"to {new}.").first)
            assert names_of() == expected
            before = expected
            pause_as_a_person(page, pace)
    page.close()


# ------------------------------------------------------------------------ links resolve

def test_a_documented_panel_link_opens_the_panels_dataset(app):
    url, seeded, browser = app
    page = _page(browser)
    page.goto(f"{url}/panel?panel=jury&method=poe")
    settle(page, "Panel of judges")
    caption = page.get_by_text(re.compile(r"^Panel jury on dataset")).first
    visible(caption)
    assert "sample_summeval" in caption.inner_text()
    assert page.get_by_text("No panel on this dataset yet").count() == 0
    page.wait_for_url(re.compile(rf"dataset={seeded.datasets['sample_summeval']}\b"),
                      timeout=STATE_WAIT_MS)
    assert "method=poe" in page.url
    page.close()


def test_a_link_by_name_to_a_renamed_or_deleted_run_shows_only_the_notice(app):
    url, seeded, browser = app
    store = seeded.store()
    store.rename_run(seeded.runs["link-old-name"], "link-new-name")
    store.delete_run(seeded.runs["link-deleted"])
    before = seeded.run_names()
    page = _page(browser)
    for gone in ("link-old-name", "link-deleted"):
        page.goto(f"{url}/rankings?run={gone}&tau_mode=manual&tau=0.3")
        settle(page, "Rankings")
        visible(page.get_by_text(re.compile(rf"this link names \(.?{gone}.?\) is not in the "
                                            r"store")).first)
        script_idle(page)
        # Nothing of another run: no ranking, no run picked.
        assert page.get_by_text("Agreement with").count() == 0
        assert page.get_by_text("P(A) at tau").count() == 0
        assert f"run={gone}" in page.url, page.url
        assert seeded.run_names() == before
    # The run's current name still opens it.
    page.goto(f"{url}/rankings?run=link-new-name")
    settle(page, "Agreement with")
    page.wait_for_url(re.compile(rf"run={seeded.runs['link-old-name']}\b"), timeout=STATE_WAIT_MS)
    page.close()


# ------------------------------------------------------------------------------ Run page

class _LiveRun:
    """A FAKE live run: status running with a fresh heartbeat from a thread, as a worker
    keeps it (no judge)."""

    def __init__(self, db_url: str, run_id: int) -> None:
        from db.store import Store
        self.store, self.run_id = Store(db_url), run_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while not self.stop.is_set():
            self.store.set_run_status(self.run_id, "running", done=0, total=60)
            self.stop.wait(2.0)

    def __enter__(self):
        self.store.set_run_status(self.run_id, "running", done=0, total=60)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.store.set_run_status(self.run_id, "cancelled")


def test_opening_the_run_page_leaves_the_run_in_view_alone(app):
    url, seeded, browser = app
    from db.store import Store
    shown = seeded.runs["sample-coh-r5"]
    sample = seeded.datasets["sample_summeval"]
    # A live run of a tuning, the newest run: the Run page must not make it the run in view.
    tuning = seeded.store().create_tuning(sample, aspect="coherence", name="tz",
                                          model=FAKE_JUDGE, contexts=2)
    from compassess_core.runs.tuning import Wording
    Store(seeded.db_url).set_tuning_wordings(tuning.id, [Wording(
        key="w1", text="{context} {a} {b} Which is more {aspect}, A or B?", noun="story",
        origin="library", label="t1").to_dict()])
    live_id = Store(seeded.db_url).create_run("tune-tz-w1", sample,
                                              seeded.store().get_run(shown).settings.to_dict())
    assert live_id in {r.id for r in seeded.store().tunings()[0].runs().values()}
    page = _page(browser)
    with _LiveRun(seeded.db_url, live_id):
        page.goto(f"{url}/rankings?run={shown}")
        settle(page, "Agreement with")
        nav(page, "Run")
        settle(page, "Watch run")
        nav(page, "Rankings")
        settle(page, "Rankings")
        visible(page.get_by_text("Agreement with").first)
        assert re.search(rf"run={shown}\b", page.url), page.url
        assert "sample-coh-r5" in _box_text(page, "Run")
    page.close()


_WATCH_JS = """
([fresh, old]) => {
  window.__mixed = [];
  const tick = () => {
    const box = [...document.querySelectorAll('[data-testid="stSelectbox"]')]
      .find(e => e.innerText.includes('Watch run'));
    const input = box ? box.querySelector('input') : null;
    const shown = input ? input.value : '';
    const text = document.body.innerText;
    if (shown.includes(fresh) && text.includes(old)) {
      const at = text.indexOf(old);
      window.__mixed.push(shown + ' | ' + text.slice(Math.max(0, at - 300), at + 60));
    }
    if (!window.__stopWatch) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""


def test_start_shows_the_new_run_only_and_names_each_aspects_run_once(app):
    url, seeded, browser = app
    page = _page(browser)
    page.goto(f"{url}/run")
    settle(page, "Watch run")
    _pick(page, "Dataset", "sample_summeval")
    _until(lambda: "on 3 context(s)" in _plan_text(page), "the sample's plan")
    _pick(page, "Watch run", "sample-coh-r6")
    visible(page.get_by_text(re.compile(r"60/60 comparisons")).first)
    page.get_by_text("local path or .gguf", exact=True).click()
    script_idle(page)
    model = page.get_by_role("textbox", name="Model path or hub id")
    model.fill(FAKE_JUDGE)
    model.press("Enter")
    script_idle(page)
    contexts = page.get_by_role("spinbutton", name=re.compile("Contexts to judge"))
    contexts.fill("1")
    contexts.press("Enter")
    _until(lambda: "on 1 context(s)" in _plan_text(page), "the plan on 1 context")
    from tests.browser.test_browser import choose
    # The list of options opens below the box: have the box in the middle of the window.
    page.locator('[data-testid="stMultiSelect"]').first.evaluate(
        "e => e.scrollIntoView({block: 'center'})")
    choose(page, "fluency")
    _until(lambda: "for 2 aspects" in _plan_text(page), "the plan of two aspects")
    base = page.get_by_role("textbox", name="Run name").input_value()
    before = seeded.run_names()
    page.evaluate(_WATCH_JS, [base, "60/60"])
    page.get_by_role("button", name="Start").click()
    made = _until(lambda: {i: n for i, n in seeded.run_names().items() if i not in before}
                  if len(seeded.run_names()) == len(before) + 2 else None, "two runs stored")
    script_idle(page)
    _until(lambda: base in _box_text(page, "Watch run"), "the new run watched")
    at_rest(page)   # every frame up to the new run's page drawn has been watched
    page.evaluate("() => { window.__stopWatch = true; }")
    mixed = page.evaluate("() => window.__mixed")
    assert not mixed, f"the previous run's 60/60 under the new run's name: {mixed[:3]}"
    # The runs of the pass: NAME-ASPECT, with no aspect in NAME.
    assert "coherence" not in base and "fluency" not in base, base
    store = seeded.store()
    for run_id, name in made.items():
        aspect = store.get_run(run_id).settings.aspect
        assert name == f"{base}-{aspect}", name
        assert not any(a in name[:-len(aspect)] for a in ("coherence", "fluency")), name
    page.close()


@pytest.mark.parametrize("pace", PACES)
def test_a_start_clicked_on_the_screen_before_a_switch_starts_nothing(app, pace):
    """Run: Dataset = hanna_user (a FAKE judge chosen), then extra_user; Dataset = hanna_user
    again and Start clicked ``pace`` s later while the browser still shows extra_user's form and
    plan (the app has drawn hanna_user's; the link has not brought it yet): no run is created,
    on either dataset."""
    from tests.browser_walk import Reruns, SlowLink
    url, seeded, browser = app
    page = _page(browser)
    link = SlowLink(page)
    reruns = Reruns(page)
    page.goto(f"{url}/run")
    settle(page, "Watch run")
    _switch(page, reruns, "hanna_user")
    _form_matches_plan(page, reruns, "hanna_user", seconds=0)
    page.get_by_text("local path or .gguf", exact=True).click()
    reruns.wait_idle()
    model = page.get_by_role("textbox", name="Model path or hub id")
    model.fill(FAKE_JUDGE)
    n = reruns.sent
    model.press("Enter")
    assert reruns.wait_sent(n)
    _form_matches_plan(page, reruns, "hanna_user", seconds=0)
    _switch(page, reruns, "extra_user")
    _form_matches_plan(page, reruns, "extra_user", seconds=0)
    before = seeded.run_names()

    link.hold(everything=True)
    _switch(page, reruns, "hanna_user")
    link.wait_held(page)
    pause_as_a_person(page, pace)
    assert "(first N of 3)" in (page.evaluate(_FORM_JS)["contexts_label"] or "")  # extra_user's
    ended = link.server_finished
    n = reruns.sent
    page.get_by_role("button", name="Start").click()
    assert reruns.wait_sent(n), "the click on Start sent nothing"
    link.wait_app_finished(page, ended + 1)
    link.release()
    _form_matches_plan(page, reruns, "hanna_user", seconds=0)
    assert seeded.run_names() == before, "a Start clicked on extra_user's screen created a run"
    page.close()


def test_upload_keeps_an_answer_that_is_an_html_document(app, tmp_path):
    url, seeded, browser = app
    form = ('<form action="/subscribe" method="post"><label for="email">Email</label>'
            '<input type="email" id="email" name="email"><button type="submit">Join</button>'
            '</form>')
    rows = [dict(context_id="q1", context="Write an HTML form that asks for an email address.",
                 candidate_id="a", text=form),
            dict(context_id="q1", context="Write an HTML form that asks for an email address.",
                 candidate_id="b", text="Use a form element with an input of type email."),
            dict(context_id="q2", context="Say hello.", candidate_id="a", text="Hello &amp; welcome"),
            dict(context_id="q2", context="Say hello.", candidate_id="b", text="Hi<br>there")]
    path = _write_csv(tmp_path / "llmbar_html.csv", rows)
    page = _page(browser)
    page.goto(f"{url}/upload")
    settle(page, "Upload candidates")
    page.locator('input[type="file"]').set_input_files(str(path))
    settle(page, "HTML markup found")
    visible(page.get_by_text(re.compile(r"are HTML themselves")).first)
    strip = page.get_by_role("checkbox", name=re.compile("Strip HTML tags"))
    assert not strip.is_checked()
    at_rest(page)
    page.get_by_role("button", name="Save to the store").click()
    settle(page, "Saved as dataset")
    dataset = seeded.store().dataset(seeded.store().dataset_id("llmbar_html"))
    texts = {(ctx.context_id, c.candidate_id): c.text for ctx in dataset.contexts
             for c in ctx.candidates}
    assert texts[("q1", "a")] == form
    page.close()


# ------------------------------------------------------------ Run: the form the plan uses
# (last: the store then holds the runs the tests above started, as a used one does)

def _plan_text(page) -> str:
    box = page.locator('[data-testid="stAlert"]').filter(has_text="Plan: ").first
    visible(box)
    return box.inner_text()


#: The Run form as the browser shows it at this moment: the aspect box, the contexts and budget
#: fields, the plan's line and the run name the plan proposes.
_FORM_JS = """() => {
  const field = (test, label) => {
    const w = [...document.querySelectorAll(`[data-testid="${test}"]`)].find(e =>
      (e.querySelector('[data-testid="stWidgetLabel"]')?.innerText || '').trim().startsWith(label));
    return w ? (w.querySelector('input')?.value ?? null) : null;
  };
  const plan = [...document.querySelectorAll('[data-testid="stAlert"]')]
    .map(e => e.innerText).find(t => t.includes('Plan: ')) || null;
  const name = [...document.querySelectorAll('[data-testid="stTextInput"]')].find(e =>
    (e.querySelector('[data-testid="stWidgetLabel"]')?.innerText || '').trim().startsWith('Run name'));
  return {aspect: field('stSelectbox', 'Aspect'), contexts: field('stNumberInput', 'Contexts to judge'),
          contexts_label: [...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
            .map(e => e.innerText).find(t => t.startsWith('Contexts to judge')) || null,
          budget: field('stNumberInput', 'Budget R'), plan: plan,
          name: name ? name.querySelector('input').value : null};
}"""


def _form_matches_plan(page, reruns, dataset: str, want: tuple[str, str] | None = None,
                       seconds: float = 1.0) -> tuple[str, str]:
    """Once every rerun the browser asked for has run (the page's own state), the form shows
    what the plan uses: the plan is on the contexts shown and the run name it proposes is of
    the dataset and aspect shown; and so it stays while a person reads it (``seconds``).
    ``want``: the (aspect, contexts) the form must show. Returns them."""
    reruns.wait_idle()
    # The browser draws what the last run sent a moment after it ends: each field filled.
    page.wait_for_function(f"() => {{ const f = ({_FORM_JS})(); return !!(f.aspect && f.contexts "
                           "&& f.plan && f.name); }", timeout=STATE_WAIT_MS)
    deadline = time.monotonic() + seconds
    while True:
        form = page.evaluate(_FORM_JS)
        shown = (form["aspect"], form["contexts"])
        problems = []
        if want is not None and shown != want:
            problems.append(f"the form shows {shown}, not {want}")
        if f"on {form['contexts']} context(s)" not in (form["plan"] or ""):
            problems.append(f"the form shows {form['contexts']} contexts, the plan says "
                            f"{form['plan']!r}")
        if not (form["name"] or "").startswith(f"{dataset}-{form['aspect']}-"):
            problems.append(f"the form shows {dataset}, aspect {form['aspect']}; the plan's run "
                            f"name is {form['name']!r}")
        assert not problems, "; ".join(problems) + f" ({form})"
        if time.monotonic() > deadline:
            return shown
        page.wait_for_timeout(200)   # the next reading while a person reads (``seconds``)


def _type_pick(page, label: str, text: str) -> None:
    """Choose ``text`` in the select box ``label`` from the keyboard (click, type, Enter), as a
    fast person does: a few milliseconds, whatever the page is drawing."""
    page.get_by_role("combobox", name=label, exact=True).first.click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def _set_number(page, label, value: str) -> None:
    field = page.get_by_role("spinbutton", name=label)
    field.fill(value)
    field.press("Enter")


_SEEDS = iter(range(7, 10_000))


def _change_seed(page, reruns, tries: int = 3) -> bool:
    """Change another value of the form (the seed): the values the browser sends with it are
    the ones it shows, so from here on the shown values are what the plan uses. A field the page
    redraws while it is typed in may drop the typing (nothing sent): typed again, up to
    ``tries`` times. Whether a change was sent."""
    for _ in range(tries):
        n = reruns.sent
        _set_number(page, "Seed (pair sampling)", str(next(_SEEDS)))
        if reruns.wait_sent(n, 5.0):
            return True
    return False


def _switch(page, reruns, name: str) -> None:
    n = reruns.sent
    _pick(page, "Dataset", name)
    assert reruns.wait_sent(n), f"picking {name} sent nothing"


#: hanna_user's form has been drawn: its contexts field says "first N of 2".
_HANNA_FORM_JS = """() => [...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
  .some(e => e.innerText.startsWith('Contexts to judge (first N of 2)'))"""


@pytest.mark.parametrize("pace", PACES)
def test_a_revisited_run_form_shows_what_the_plan_uses(app, pace):
    """Run: Dataset = instruct_user; hanna_user; instruct_user again (twice, and with a changed
    value): the form shows instruct_user's values and the plan uses them, after every step.
    The next action comes ``pace`` s after the page is drawn; also while the browser has not
    yet received the end of hanna_user's run (``SlowLink``: it then still holds instruct_user's
    widgets and sends their values with the pick); and without waiting for the page at all.
    Then a change of another value keeps what is shown."""
    from tests.browser_walk import Reruns, SlowLink
    url, seeded, browser = app
    page = _page(browser)
    link = SlowLink(page)
    reruns = Reruns(page)
    n_runs = len(seeded.run_names())
    page.goto(f"{url}/run")
    settle(page, "Watch run")
    _switch(page, reruns, "instruct_user")
    assert _form_matches_plan(page, reruns, "instruct_user") == ("overall", "6")
    want = ("overall", "6")

    def away_and_back(in_flight: bool) -> None:
        if in_flight:
            link.hold()
        _switch(page, reruns, "hanna_user")
        if in_flight:   # hanna_user's page drawn, the end of its run still on its way
            page.wait_for_function(_HANNA_FORM_JS, timeout=STATE_WAIT_MS)
            link.wait_held(page)
            pause_as_a_person(page, pace)
            _switch(page, reruns, "instruct_user")
            link.release()
        else:
            _form_matches_plan(page, reruns, "hanna_user", seconds=0)
            pause_as_a_person(page, pace)
            _switch(page, reruns, "instruct_user")
        assert _form_matches_plan(page, reruns, "instruct_user", want) == want
        pause_as_a_person(page, pace)
        assert _change_seed(page, reruns), "the seed change sent nothing"
        assert _form_matches_plan(page, reruns, "instruct_user", want, seconds=0) == want
        pause_as_a_person(page, pace)

    # Left untouched and revisited, at the person's pace, then with the page's end in flight.
    away_and_back(in_flight=False)
    away_and_back(in_flight=True)
    # Changed, left and revisited: the changed value, which the plan uses.
    _set_number(page, re.compile("Contexts to judge"), "4")
    want = ("overall", "4")
    _until(lambda: "on 4 context(s)" in _plan_text(page), "the plan on 4 contexts")
    assert _form_matches_plan(page, reruns, "instruct_user", want) == want
    pause_as_a_person(page, pace)
    away_and_back(in_flight=False)
    away_and_back(in_flight=True)
    # Switched without waiting for the page at all: each act ``pace`` s after the one before.
    _switch(page, reruns, "hanna_user")
    pause_as_a_person(page, pace)
    _type_pick(page, "Dataset", "instruct_user")
    pause_as_a_person(page, pace)
    _change_seed(page, reruns, tries=1)   # typed while the form may be redrawn: sent or not
    assert _form_matches_plan(page, reruns, "instruct_user", want) == want
    assert len(seeded.run_names()) == n_runs   # nothing was stored by planning
    page.close()
