"""What ``explain`` shows says what it is: reasons written after the verdict (the judge is told
its answer first), flagged beside them when the two orders chose the same position (the judge
contradicts itself). The judge here is FAKE (``tests.fakes.FakeWritingJudge``): these tests are
about the labels and the flag, not the model; tests/runs/test_explain_model.py runs the real one."""

from __future__ import annotations

from pathlib import Path

import pytest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.runs.explanations import REASONS_LABEL, Explanation, OrderReasons
from compassess_core.report.audit import _reasons_block
from tests.app.test_app_pages import app_env  # noqa: F401
from tests.fakes import FakeWritingJudge

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"


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
    from tests.app.test_app_pages import open_page, texts

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
    # each order's verdict as the page's rankings read it (the balanced tau* = 0.9 here: B),
    # beside the answer the reasons explain
    assert ("verdict at the run's balanced tau* = 0.9000 (as its rankings): B"
            in texts(at.caption)), texts(at.caption)
    assert "the judge's own answer at tau = 0.5, which its reasons explain: A" in texts(at.caption)


def test_explain_reads_the_verdict_at_the_runs_balanced_tau_star_and_says_so(db_url, capsys):
    """A judge that answers A in every order (p in 0.55-0.95, by the prompt): its rankings read
    the balanced tau* (the median p), so `explain` gives each order's verdict at that tau* by
    default, says which tau it used, and keeps the answer at 0.5 as what the reasons explain;
    --debias none reads 0.5, the same way every ranking command takes it."""
    import json
    import zlib

    judge = FakeWritingJudge(p_of=lambda prompt: 0.55 + 0.4 * (zlib.crc32(prompt.text.encode())
                                                                % 1000) / 1000)
    store = api.open_store(db_url)
    run = store.run(SAMPLE, aspect="coherence", contexts=1, strategy="symmetric", budget=4,
                    name="positional", judge=judge, progress=False)
    tau = run.tau("balanced")
    table = run.comparisons()
    row = table[table["p"] < tau].iloc[0]   # the judge answered A; the run's verdict is B
    ctx, first, second = row["context_id"], row["a_id"], row["b_id"]
    found = run.explain(ctx, first, second, max_tokens=40, judge=judge)
    assert found.tau == pytest.approx(tau) and found.debias == "balanced"
    assert (found.forward.verdict, found.forward.at_tau) == ("A", "B")
    assert "Summary A" in found.forward.text     # the reasons explain the answer it gave
    argv = ["explain", "--run", "positional", "--context", ctx, "--a", first, "--b", second,
            "--max-tokens", "40", "--stored", "--db", db_url]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (f"verdict at the run's balanced tau* = {tau:.4f} (as its rankings): B ({second}); "
            "the judge's own answer at tau = 0.5, which its reasons explain: A") in out, out
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["tau"] == pytest.approx(tau) and d["orders"][0]["verdict_at_tau"] == "B"
    assert main([*argv, "--debias", "none"]) == 0
    assert "verdict at tau = 0.5 (no debiasing): A" in capsys.readouterr().out
    # the same default as every command that reads a ranking
    from compassess_core.cli.parser import parse_args
    assert (parse_args(["rank", "--run", "r"]).debias
            == parse_args(["explain", "--run", "r", "--context", "c", "--a", "x", "--b", "y"]).debias
            == "balanced")
