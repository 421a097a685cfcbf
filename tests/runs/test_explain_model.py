"""The judge's reasons from the real bundled SmolLM2 (marker ``model``): a tiny run on the
sample, its articles shortened (one pair in both orders), its reasons asked for through the API,
stored, and printed the same by ``compassess explain``; asking again loads nothing."""

from __future__ import annotations

import pytest

from compassess_core import api
from compassess_core.cli import main

pytestmark = pytest.mark.model


def test_smollm2_explains_both_orders_within_its_bound_and_the_cli_prints_the_same(
        db_url, bundled_model, capsys, short_summeval):
    # The sample with its articles cut to their opening sentences (tests/conftest.py): each of
    # the 40 generated tokens attends to the whole prompt, and the article is most of it.
    store = api.open_store(db_url)
    run = store.run(short_summeval, aspect="coherence", contexts=1, strategy="symmetric", budget=2,
                    threads=1, progress=False, name="tiny")
    assert run.n_comparisons == 2
    table = run.comparisons()
    ctx, first, second = table.iloc[0][["context_id", "a_id", "b_id"]]
    before = sorted(table["p"])
    found = run.explain(ctx, first, second, max_tokens=40)
    assert found.complete and len(found.orders) == 2
    for order in found.orders:
        assert order.text and len(order.text.split()) <= 60  # 40 tokens at most
        assert order.verdict == ("A" if order.p > 0.5 else "B")
    assert sorted(store.get_run("tiny").comparisons()["p"]) == before  # p never changes

    class Refuse:  # asking again must not load or call a judge
        def __getattr__(self, name):
            raise AssertionError(f"the judge was used again ({name})")
    assert run.explain(ctx, first, second, max_tokens=40, judge=Refuse()) == found
    assert main(["explain", "--run", "tiny", "--context", ctx, "--a", first, "--b", second,
                 "--max-tokens", "40", "--stored", "--db", db_url]) == 0
    out = capsys.readouterr().out
    for order in found.orders:
        assert order.text in out
