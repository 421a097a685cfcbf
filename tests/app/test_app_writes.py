"""The app acts on the object it shows (AppTest on app.py and a real SQLite store, and the API
and engine parts it rests on): a link by a name nothing has shows only its notice; a panel link
opens the panel's own dataset; three renames in a row of a middle run each rename that run; a
run of several aspects is named NAME-ASPECT with no aspect in NAME; an answer that is an HTML
document is found as one (Upload then does not strip it by default).

The same sequences at a person's pace in Chromium: ``tests/browser/test_browser_app_writes.py``.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.data.markup import find_markup, is_html_document
from compassess_core.runs.options import ComparativeOptions, ModelOptions
from tests.app.test_app_pages import APP, SAMPLE, app_env, seed_run, settings_for, texts  # noqa: F401
from tests.answer_buttons import manage_key


def _open(page: str, query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def test_a_link_by_a_name_no_run_has_shows_only_the_notice(app_env):
    seed_run(app_env, run="kept-run")
    at = _open("rankings", {"run": "renamed-away", "tau_mode": "manual", "tau": "0.3"})
    warned = texts(at.warning)
    assert "renamed-away" in warned and "Nothing of another run is shown" in warned
    # No run's numbers: the picker picked nothing, and the link keeps the name.
    assert at.selectbox(key="run_pick_w").value is None
    assert not [m for m in at.metric if "P(A)" in m.label]
    assert at.query_params.get("run") in ("renamed-away", ["renamed-away"])


def test_a_panel_link_by_name_opens_its_dataset_not_the_newest(app_env):
    _, dataset_id, first = seed_run(app_env, run="member-1")
    _, same, second = seed_run(app_env, run="member-2")
    assert same == dataset_id
    api.open_store(app_env).create_panel("jury", [first, second])
    other = SAMPLE.read_bytes().replace(b"Paul Merson", b"Paul Mersey")   # other content
    _, newest, _ = seed_run(app_env, source=other, name="newer_data", run="other-run")
    assert newest != dataset_id
    at = _open("panel", {"panel": "jury", "method": "poe"})
    assert "No panel on this dataset yet" not in texts(at.info)
    assert "Panel `jury` on dataset `sample_summeval`" in texts(at.caption)
    assert at.query_params.get("dataset") in (str(dataset_id), [str(dataset_id)])


def test_three_renames_of_a_middle_run_each_rename_it(app_env):
    store, dataset_id, run_id = seed_run(app_env, run="r1")
    ids = [run_id] + [store.create_run(f"r{k}", dataset_id,
                                       settings_for("sample_summeval", seed=k).to_dict())
                      for k in (2, 3)]
    middle = ids[1]
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="manage_target_run").set_value(middle).run()
    for new in ("m_a", "m_b", "m_c"):
        at.text_input(key=manage_key(at, "run", middle, "new_name")).input(new)
        next(b for b in at.button if b.label == "Rename").click().run()
        assert not at.exception, at.exception
        assert {r.id: r.name for r in api.open_store(app_env).list_runs()} == {
            ids[0]: "r1", middle: new, ids[2]: "r3"}
        assert at.selectbox(key="manage_target_run").value == middle


def test_a_pass_of_several_aspects_names_each_run_by_its_aspect_only(app_env):
    store = api.open_store(app_env)
    store.add_dataset(SAMPLE, name="sample_summeval")
    plan = store.plan_run(store.dataset(store.dataset_id("sample_summeval")),
                          ComparativeOptions(aspect="overall"),
                          ModelOptions(model="fake-judge-missing.gguf"), also=["coherence"])
    names = plan.run_names(plan.default_name)
    assert [n.rsplit("-", 1)[1] for n in names] == ["overall", "coherence"]
    for name in names:
        base = name.rsplit("-", 1)[0]
        assert "overall" not in base and "coherence" not in base, name
    one = store.plan_run(store.dataset(store.dataset_id("sample_summeval")),
                         ComparativeOptions(aspect="overall"),
                         ModelOptions(model="fake-judge-missing.gguf"))
    assert "-overall-" in one.default_name


def test_an_answer_that_is_an_html_document_is_found_as_one():
    form = ('<form action="/join"><label for="e">Email</label><input id="e" type="email">'
            '<button>Join</button></form>')
    assert is_html_document(form)
    assert is_html_document("<!DOCTYPE html><html><body>Hi</body></html>")
    # Prose with some markup is not one: stripping it is what its reader wants.
    for prose in ("Hello<br>world", "<p>A paragraph.</p>", "Tom &amp; Jerry",
                  "<b>Bold</b> then words", "a < b and c > d"):
        assert not is_html_document(prose), prose
    from compassess_core.data.candidates import load_candidates
    rows = ("context_id,context,candidate_id,text\n"
            f'q1,Write a form.,a,"{form.replace(chr(34), chr(34) * 2)}"\n'
            "q1,Write a form.,b,Use a form element.\n"
            "q2,Say hi.,a,Hi<br>there\nq2,Say hi.,b,Hello\n")
    report = find_markup(load_candidates(rows.encode(), name="html", file_label="html.csv"))
    assert (report.n_texts, report.n_documents) == (2, 1)
    assert report.document_rows == (2,)
