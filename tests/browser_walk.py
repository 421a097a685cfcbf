"""What the browser tests of Annotate share: one ``streamlit run app.py`` per test module on a real
SQLite store seeded with several datasets (the shipped sample and two copies of it with their own
context and candidate ids) and runs written by a fake judge (random probabilities straight into
the store: these tests are about where people's answers go, not about the judge), one chromium
per test process, and the means to act at a person's pace and check every write.

Waiting is for state: :class:`Reruns` follows the app's websocket (Streamlit's own protobuf
messages) and says when every rerun the browser asked for has been run; the only fixed pauses are
a person's pace between a change and a key press.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tests.app_server import app_server
# test_browser skips the module without chromium
from tests.browser.test_browser import STATE_WAIT_MS, STATE_WAIT_S, playwright_api

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
#: The datasets of the store: name -> (prefix of its context and candidate ids, keeps the
#: sample's reference scores).
DATASETS = {"sample_summeval": ("", True), "instruct_user": ("I", False), "hanna_user": ("H", True)}
#: Runs by the fake judge: (name, dataset, aspect), oldest first.
RUNS = (("sample-coh-fakejudge", "sample_summeval", "coherence"),
        ("instruct-overall-fakejudge", "instruct_user", "overall"),
        ("hanna-coh-fakejudge", "hanna_user", "coherence"),
        ("hanna-eng-fakejudge", "hanna_user", "engagingness"))
#: The answer each key stores (pages/annotate.py).
WINNER_OF_KEY = {"A": "A", "B": "B", "T": "tie", "S": "skip"}
#: What the page says when it stores nothing for an answer.
REFUSALS = ("Not saved", "already judged")


def fake_judge_run(db_url: str, dataset_id: int, aspect: str, name: str, seed: int = 0) -> int:
    """A completed run of every ordered pair of ``dataset_id`` with random probabilities (a fake
    judge), stored straight into the store; returns its id."""
    from compassess_core.runs.prompts import Aspect, builtin_template
    from compassess_core.runs.settings import RunSettings
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store

    store = Store(db_url)
    dataset = store.load_dataset(dataset_id)
    t, a = builtin_template("t1", "summary"), Aspect.from_name(aspect)
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model="fake-judge")
    run_id = store.create_run(name, dataset_id, settings.to_dict())
    rng = np.random.default_rng(seed)
    results = []
    for ctx in dataset.contexts:
        for x in ctx.candidates:
            for y in ctx.candidates:
                if x is not y:
                    p = float(rng.uniform(0.05, 0.95))
                    results.append(ComparisonResult(
                        PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                        Judgement(p, float(np.log(0.8 * p)), float(np.log(0.8 * (1 - p))), 0.8),
                        f"fake-{name}-{ctx.context_id}-{x.candidate_id}-{y.candidate_id}"))
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return run_id


def seed_store(db_url: str, folder: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The datasets of :data:`DATASETS` and the runs of :data:`RUNS`: their ids by name."""
    from compassess_core.data.candidates import load_candidates
    from db.store import Store

    sample = pd.read_csv(SAMPLE)
    datasets = {}
    for name, (prefix, scores) in DATASETS.items():
        frame = sample.copy()
        frame["context_id"] = prefix + frame["context_id"]
        frame["candidate_id"] = prefix + frame["candidate_id"]
        if not scores:
            frame = frame[["context_id", "context", "candidate_id", "system", "text"]]
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        datasets[name] = Store(db_url).save_dataset(load_candidates(path, name=name))
    runs = {name: fake_judge_run(db_url, datasets[ds], aspect, name, seed=k)
            for k, (name, ds, aspect) in enumerate(RUNS)}
    return datasets, runs


class Reruns:
    """Follows the page's websocket: each rerun the browser asks for (a ``rerun_script``
    message) is done when a script run that started after it (``new_session``) has finished
    successfully. :meth:`wait_idle` waits for that state, never for a fixed time."""

    def __init__(self, page) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        self._back, self._forward = BackMsg, ForwardMsg
        self.page = page
        self.sent = 0           # rerun requests the browser sent
        self.pending = False    # a request not yet run to the end
        self._started = False   # a run started after the last request
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        ws.on("framesent", self._on_sent)
        ws.on("framereceived", self._on_received)

    def _on_sent(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = self._back.FromString(bytes(payload))
            # A fragment's own timed rerun (a watched live run's progress) is not a request of
            # the person's: it ends with its own message, not a whole script run's.
            if msg.WhichOneof("type") == "rerun_script" and not msg.rerun_script.fragment_id:
                self.sent += 1
                self.pending, self._started = True, False

    def _on_received(self, payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        msg = self._forward.FromString(bytes(payload))
        kind = msg.WhichOneof("type")
        if kind == "new_session" and self.pending:
            self._started = True
        elif (kind == "script_finished" and self._started
              and msg.script_finished == self._forward.FINISHED_SUCCESSFULLY):
            self.pending = False

    def wait_sent(self, before: int, timeout_s: float = STATE_WAIT_S) -> bool:
        """Whether the browser asked for a rerun after ``before`` requests (waiting for it). The
        bound ends only a wait that fails, so it is as long as this module's other waits: a
        renderer starved by a loaded machine may take many seconds to send what a click asked
        for."""
        deadline = time.monotonic() + timeout_s
        while self.sent <= before:
            if time.monotonic() > deadline:
                return False
            self.page.wait_for_timeout(20)   # lets Playwright deliver the socket's events
        return True

    def wait_idle(self, timeout_s: float = STATE_WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while self.pending:
            if time.monotonic() > deadline:
                raise AssertionError("the app did not finish the rerun the browser asked for")
            self.page.wait_for_timeout(20)


class SlowLink:
    """The page's websocket routed through the test, to act while the browser has not yet
    received what the app sent (a slow link, a loaded browser: the person acts on the screen
    they see while the app has moved on).

    After :meth:`hold`, the server's messages are kept from the browser until :meth:`release`
    delivers them in order: from the next successful end of a whole script run on (the page
    looks drawn, the app's "run finished" is still on its way), or with ``everything`` from the
    next message on (the browser still shows the screen before). ``finished_held`` says that
    the end of a run was held. Install before the page opens the app."""

    def __init__(self, page) -> None:
        import re

        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        self._forward = ForwardMsg
        self.holding = self.everything = self.finished_held = False
        self.held: list = []
        self.server_finished = 0   # whole runs the app ended successfully (held or not)
        self._browser = None
        page.route_web_socket(re.compile(r"/_stcore/stream"), self._route)

    def _route(self, ws) -> None:
        server = ws.connect_to_server()
        self._browser = ws
        ws.on_message(server.send)
        server.on_message(self._from_server)

    def _from_server(self, message) -> None:
        if isinstance(message, (bytes, bytearray)):
            msg = self._forward.FromString(bytes(message))
            if (msg.WhichOneof("type") == "script_finished"
                    and msg.script_finished == self._forward.FINISHED_SUCCESSFULLY):
                self.server_finished += 1
                if self.holding:
                    self.finished_held = True
        if self.holding and (self.everything or self.finished_held):
            self.held.append(message)
        else:
            self._browser.send(message)

    def hold(self, everything: bool = False) -> None:
        self.held, self.finished_held, self.everything = [], False, everything
        self.holding = True

    def wait_held(self, page, timeout_s: float = STATE_WAIT_S) -> None:
        """Wait until the end of a run is held back from the browser."""
        deadline = time.monotonic() + timeout_s
        while not self.finished_held:
            if time.monotonic() > deadline:
                raise AssertionError("the app never finished the run")
            page.wait_for_timeout(20)

    def wait_app_finished(self, page, count: int, timeout_s: float = STATE_WAIT_S) -> None:
        """Wait until the app has ended ``count`` whole runs (:attr:`server_finished`), whether
        or not the browser has them yet."""
        deadline = time.monotonic() + timeout_s
        while self.server_finished < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the app ended {self.server_finished} runs, not {count}")
            page.wait_for_timeout(20)

    def release(self) -> None:
        held, self.held = self.held, []
        self.holding = self.everything = self.finished_held = False
        for message in held:
            self._browser.send(message)


#: What the page shows: the sidebar's dataset and aspect boxes, the LLM run box, the question,
#: the context ids and the texts (in page order: a context, the left and the right text; while
#: the app redraws, the elements of the screen before are still shown, greyed), and the messages.
SHOWN_JS = """() => {
  const boxes = [...document.querySelectorAll('[data-testid="stSelectbox"]')];
  const box = (label) => {
    const b = boxes.find(b => (b.querySelector('[data-testid="stWidgetLabel"]')?.innerText || '')
                               .trim().startsWith(label));
    return b ? (b.querySelector('input')?.value || '').trim() : null;
  };
  const main = document.querySelector('[data-testid="stMain"]');
  const texts = main ? [...main.querySelectorAll('[data-testid="stText"]')].map(e => e.innerText) : [];
  const md = main ? [...main.querySelectorAll('[data-testid="stMarkdown"], h4')].map(e => e.innerText.trim()) : [];
  const alerts = main ? [...main.querySelectorAll('[data-testid="stAlert"]')].map(e => e.innerText) : [];
  return {dataset: box('Dataset'), aspect: box('Aspect judged'), run: box('LLM run'),
          contexts: md.filter(t => t.startsWith('Context ')).map(t => t.slice(8).trim()),
          question: md.find(t => t.startsWith('Which text')) || null,
          texts: texts, alerts: alerts};
}"""


@dataclass
class Screen:
    """One reading of the page (:data:`SHOWN_JS`)."""

    dataset: str | None
    aspect: str | None
    run: str | None
    contexts: list
    question: str | None
    texts: list
    alerts: list = field(default_factory=list)

    @classmethod
    def read(cls, page) -> "Screen":
        return cls.of(page.evaluate(SHOWN_JS))

    @classmethod
    def of(cls, raw: dict) -> "Screen":
        """The screen of a raw :data:`SHOWN_JS` reading."""
        raw = dict(raw)
        raw["dataset"] = raw["dataset"].rsplit(" (", 1)[0] if raw["dataset"] else None
        raw["aspect"] = raw["aspect"].split("  (")[0].strip() if raw["aspect"] else None
        return cls(**raw)

    @property
    def context(self) -> str | None:
        return self.contexts[0] if self.contexts else None

    @property
    def has_pair(self) -> bool:
        return bool(self.contexts) and len(self.texts) >= 3

    def __repr__(self) -> str:
        return (f"Screen(dataset={self.dataset!r}, aspect={self.aspect!r}, run={self.run!r}, "
                f"contexts={self.contexts}, {len(self.texts)} texts, alerts={self.alerts})")


class Ledger:
    """The store as the test knows it: every name each dataset has had (a page may show the old
    name until it reruns), each candidate's text, and the rows already checked."""

    def __init__(self, db_url: str, datasets: dict[str, int]) -> None:
        from compassess_core import api
        self.store = api.open_store(db_url)
        self.ids_of_name = dict(datasets)
        self.text = {}
        for ds_id in datasets.values():
            for ctx in self.store.dataset(ds_id).contexts:
                for c in ctx.candidates:
                    self.text[(ds_id, ctx.context_id, c.candidate_id)] = c.text
        self.seen = 0
        self.checked: list[dict] = []

    def renamed(self, ds_id: int, new: str) -> None:
        self.ids_of_name[new] = ds_id

    def rows(self, datasets=None) -> pd.DataFrame:
        """The stored human labels of every dataset (of ``datasets`` only, when given)."""
        stored = {d.id for d in self.store.list_datasets()}
        frames = [self.store.human_labels(ds_id).assign(dataset_id=ds_id)
                  for ds_id in sorted(set(self.ids_of_name.values()))
                  if ds_id in stored and (datasets is None or ds_id in datasets)]
        every = pd.concat(frames) if frames else pd.DataFrame(columns=["id"])
        return every.sort_values("id")

    def _datasets_of_rows_after(self, seen: int) -> set[int]:
        """The datasets that hold a label stored after id ``seen`` (one small query: most key
        presses store nothing or one row, and the full tables cost a loaded machine a second)."""
        from sqlalchemy import select

        from db.schema import HumanJudgementRow as H
        with self.store.backend.engine.connect() as conn:
            return set(conn.execute(select(H.dataset_id).where(H.id > seen).distinct()).scalars())

    def new_rows(self) -> list[dict]:
        touched = self._datasets_of_rows_after(self.seen)
        if not touched:
            return []
        rows = self.rows(touched)
        fresh = rows.loc[rows["id"] > self.seen].to_dict("records")
        if fresh:
            self.seen = int(max(r["id"] for r in fresh))
        return fresh

    def matches(self, row: dict, screen: Screen, letter: str) -> list[str]:
        """How ``row`` differs from what ``screen`` showed when ``letter`` was pressed."""
        wrong = []
        if self.ids_of_name.get(screen.dataset) != row["dataset_id"]:
            wrong.append(f"dataset {row['dataset_id']} stored, {screen.dataset} shown")
        if row["aspect"] != screen.aspect:
            wrong.append(f"aspect {row['aspect']} stored, {screen.aspect} shown")
        if row["context_id"] not in screen.contexts:
            wrong.append(f"context {row['context_id']} stored, {screen.contexts} shown")
        shown = [t.strip() for t in screen.texts]
        at = []
        for side in ("left", "right"):
            text = self.text.get((row["dataset_id"], row["context_id"], row[f"candidate_{side}"]))
            at.append(shown.index(text.strip()) if text is not None and text.strip() in shown
                      else None)
            if at[-1] is None:
                wrong.append(f"the {side} text stored is not on the page")
        if None not in at and at[0] > at[1]:
            wrong.append("left and right stored the other way round from the page")
        if row["winner"] != WINNER_OF_KEY[letter]:
            wrong.append(f"winner {row['winner']} stored for key {letter}")
        return wrong


#: Whether the page's answer keys are heard now (pages/_answer_keys.py mounted and current).
KEYS_LIVE_JS = "() => !!(window.__compassessAnswerKeys && window.__compassessAnswerKeys.live)"


def keys_heard(page, timeout_ms: int = STATE_WAIT_MS) -> None:
    """Wait until the answer keys are heard: the listener loads with the page's scripts, a
    moment after a page is first drawn in a tab."""
    page.wait_for_function(KEYS_LIVE_JS, timeout=timeout_ms)


def blur(page) -> None:
    """What the page's hint asks of a person after using a box: click an empty spot (the keys
    go to the page, not to the box)."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


#: Reads the page (:data:`SHOWN_JS`) at the instant the next key goes down, before the app's
#: own listener hears it (a listener on ``window`` in the capture phase runs before one on
#: ``document``). A reading taken by the test just before the press can be a screen older than
#: the one the key lands on: the page may redraw between that reading and the key.
READ_AT_KEYDOWN_JS = f"""() => {{
  const read = ({SHOWN_JS});
  window.__shownAtKeydown = null;
  window.addEventListener("keydown", () => {{ window.__shownAtKeydown = read(); }},
                          {{capture: true, once: true}});
}}"""


def press_and_check(page, reruns: Reruns, ledger: Ledger, letter: str) -> tuple[Screen, list]:
    """Press ``letter`` on the page as it is now, wait for the rerun it asks for, and check the
    store: at most one new row, equal to what the page showed at the instant the key went down
    (read in the page by a listener that hears the key before the app does), or no row and a
    message saying nothing was stored. Returns that screen and the new rows."""
    blur(page)
    page.evaluate(READ_AT_KEYDOWN_JS)
    n = reruns.sent
    page.keyboard.press(letter.lower())
    raw = page.evaluate("() => window.__shownAtKeydown")
    assert raw is not None, f"key {letter} never reached the page"
    shown = Screen.of(raw)
    assert reruns.wait_sent(n), f"key {letter} on {shown} sent nothing to the app"
    reruns.wait_idle()
    fresh = ledger.new_rows()
    assert len(fresh) <= 1, f"one key press stored {len(fresh)} rows: {fresh}"
    if fresh:
        row = fresh[0]
        miss = ledger.matches(row, shown, letter)
        assert not miss, f"key {letter} stored {row}, but the page showed {shown}: {miss}"
        ledger.checked.append(row)
    else:
        now = Screen.read(page)
        assert any(r in a for a in now.alerts for r in REFUSALS), (
            f"key {letter} on {shown} stored nothing and the page says nothing: {now}")
    return shown, fresh


def _open_box(page, label: str):
    """Open the sidebar box ``label``'s list of options (waiting until it shows)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(
        has=page.locator('[data-testid="stWidgetLabel"]', has_text=label)).first
    for _ in range(3):
        box.locator("input").click()
        try:
            page.locator('[role="option"]').first.wait_for(timeout=3000)
            return box
        except playwright_api.TimeoutError:
            box.locator("input").press("ArrowDown")   # a combobox opens on the arrow key too
            try:
                page.locator('[role="option"]').first.wait_for(timeout=3000)
                return box
            except playwright_api.TimeoutError:
                page.keyboard.press("Escape")
    raise AssertionError(f"the box {label} did not open")


def pick_option(page, label: str, option_text: str, exact: bool = False) -> None:
    """Choose the option whose text holds ``option_text`` (or is it, ``exact``) in the sidebar
    box ``label``."""
    _open_box(page, label)
    if exact:
        page.get_by_role("option", name=option_text, exact=True).first.click()
    else:
        page.locator('[role="option"]').filter(has_text=option_text).first.click()


def pick_one_of(page, label: str, choose) -> str:
    """Open the sidebar box ``label`` once, pick the option ``choose(texts)`` names among those
    it offers (exact text), and return it."""
    _open_box(page, label)
    choice = choose(page.locator('[role="option"]').all_inner_texts())
    page.get_by_role("option", name=choice, exact=True).first.click()
    return choice


@contextlib.contextmanager
def annotate_world(folder: Path, browser):
    """What a module of Annotate browser tests shares: a store seeded by :func:`seed_store` in
    ``folder``, one app server on it, and ``browser`` (the process's Chromium,
    ``tests/browser/conftest.py``): ``url, db_url, datasets, runs, browser``."""
    db_url = f"sqlite:///{folder / 'compassess.db'}"
    datasets, runs = seed_store(db_url, folder)
    with app_server(folder, db_url) as server:
        yield dict(url=server.url, db_url=db_url, datasets=datasets, runs=runs, browser=browser)
