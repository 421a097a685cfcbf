"""What ``explain`` shows says what it is: reasons written after the verdict (the judge is told
its answer first), flagged beside them when the two orders chose the same position (the judge
contradicts itself). The judge here is FAKE (``tests.fakes.FakeWritingJudge``): these tests are
about the labels and the flag, not the model; tests/test_explain_model.py runs the real one."""

from __future__ import annotations

from pathlib import Path

import pytest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.runs.explanations import REASONS_LABEL, Explanation, OrderReasons
from compassess_core.report.audit import _reasons_block
from test_app_pages import app_env  # noqa: F401
from tests.fakes import FakeWritingJudge

SAMPLE = Path(__file__).resolve().parents[1] / "assets" / "sample_summeval.csv"


def _explanation(p_forward: float, p_reverse: float | None) -> Explanation:
    fwd = OrderReasons("S1", "S2", p_forward, "A" if p_forward > 0.5 else "B", "because")
    rev = (None if p_reverse is None else
           OrderReasons("S2", "S1", p_reverse, "A" if p_reverse > 0.5 else "B", "since"))
    return Explanation("c0", "S1", "S2", "judge", 50, fwd, rev)


@pytest.mark.parametrize("p_forward, p_reverse, position", [
    (0.9, 0.8, "A"), (0.2, 0.3, "B"),      # the same position in both orders: two winners
    (0.9, 0.2, None), (0.2, 0.7, None),    # the same text in both orders: consistent
    (0.9, None, None)])                    # one order only: nothing to compare
def test_same_position_in_both_orders_is_a_contradiction(p_forward, p_reverse, position):
    found = _explanation(p_forward, p_reverse)
    assert found.same_position == position
    assert (found.contradiction is None) == (position is None)
    if position == "A":
        assert "preferred S1 in one order and S2 in the other" in found.contradiction
    d = found.to_dict()
    assert d["kind"] == REASONS_LABEL and d["same_position_in_both_orders"] == position


def test_the_reports_block_labels_the_reasons_and_flags_a_contradiction():
    html = _reasons_block(_explanation(0.9, 0.8))
    assert REASONS_LABEL in html and "told the answer it gave" in html
    assert "contradicts itself" in html
    assert "contradicts itself" not in _reasons_block(_explanation(0.9, 0.2))


@pytest.mark.parametrize("always_a", [True, False])
def test_cli_explain_prints_the_label_and_the_flag(db_url, capsys, always_a):
    judge = FakeWritingJudge(p_of=(lambda prompt: 0.9) if always_a else None)
    store = api.open_store(db_url)
    run = store.run(SAMPLE, aspect="coherence", contexts=1, strategy="symmetric", budget=2,
                    name="tiny", judge=judge, progress=False)
    row = run.comparisons().iloc[0]
    ctx, first, second = row["context_id"], row["a_id"], row["b_id"]
    found = run.explain(ctx, first, second, max_tokens=40, judge=judge)
    assert found.complete and len(found.orders) == 2
    assert (found.same_position == "A") == always_a
    assert main(["explain", "--run", "tiny", "--context", ctx, "--a", first, "--b", second,
                 "--max-tokens", "40", "--stored", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert REASONS_LABEL in out and "told the answer it gave" in out
    assert ("contradicts itself" in out) == (found.contradiction is not None)
    assert "why the judge answered" not in out


def test_the_comparison_view_labels_the_reasons_and_flags_the_contradiction(app_env):
    from test_app_pages import open_page, texts

    judge = FakeWritingJudge(p_of=lambda prompt: 0.9)   # answers A whatever the order
    run = api.open_store(app_env).run(SAMPLE, aspect="coherence", contexts=1, judge=judge,
                                      progress=False, name="explained")
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    run.explain(ctx.context_id, a, b, judge=judge)
    at = open_page("matrix")
    at.selectbox(key="pick_first").set_value(a).run()
    at.selectbox(key="pick_second").set_value(b).run()
    at.button(key="open_pick").click().run()
    assert not at.exception, at.exception
    assert any(REASONS_LABEL in m.value for m in at.markdown)
    assert "told the answer it gave" in texts(at.caption)
    assert "contradicts itself" in texts(at.warning)
