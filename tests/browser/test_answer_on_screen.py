"""An answer is stored on the pair the person's screen showed, or not at all.

``api.Store.add_judgements(..., shown=...)`` and ``api.Campaign.add_answer(..., shown=...)`` take
what the browser sent back with the key press (``api.PairOnScreen``: dataset id, aspect, context,
left and right candidates, screen order) and refuse (``ObjectChanged``, nothing stored) a row that
is not that pair. The browser side is tested in ``tests/browser/test_browser_annotate_switch.py`` and
``tests/browser/test_browser_state_machine.py``.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compassess_core import api
from compassess_core.errors import InputError, ObjectChanged


def _row(**change):
    row = dict(context_id="doc1", candidate_left="c2", candidate_right="c1", winner="A",
               annotator="ann", aspect="coherence", seconds=1.0, shown_order="ba")
    row.update(change)
    return row


def _screen(dataset_id: int, **change) -> dict:
    shown = dict(dataset_id=dataset_id, aspect="coherence", context_id="doc1", left="c2",
                 right="c1", shown_order="ba")
    shown.update(change)
    return shown


@pytest.fixture
def stored(db_url, tiny_dataset):
    store = api.open_store(db_url)
    dataset_id = store.backend.save_dataset(tiny_dataset)
    other = store.backend.save_dataset(dataclasses.replace(tiny_dataset, name="tiny2",
        source="tiny2.csv", content_hash=tiny_dataset.content_hash[::-1]))
    return store, dataset_id, other


def test_the_pair_shown_is_stored(stored):
    store, dataset_id, _ = stored
    assert store.add_judgements(dataset_id, [_row()], shown=_screen(dataset_id)) == 1
    assert store.add_judgements(dataset_id, [_row(context_id="doc2")],
                                shown=api.PairOnScreen(dataset_id, "coherence", "doc2", "c2",
                                                       "c1", "ba")) == 1
    assert len(store.human_labels(dataset_id)) == 2


@pytest.mark.parametrize("field,value", [
    ("aspect", "overall"), ("context_id", "doc2"), ("left", "c3"), ("right", "c3"),
    ("shown_order", "ab")])
def test_an_answer_on_another_pair_or_aspect_is_refused_and_nothing_stored(stored, field, value):
    store, dataset_id, _ = stored
    with pytest.raises(ObjectChanged, match=f"{field} differ"):
        store.add_judgements(dataset_id, [_row()], shown=_screen(dataset_id, **{field: value}))
    assert len(store.human_labels(dataset_id)) == 0


def test_an_answer_shown_on_another_dataset_is_refused(stored):
    store, dataset_id, other = stored
    with pytest.raises(ObjectChanged, match="dataset_id differ"):
        store.add_judgements(dataset_id, [_row()], shown=_screen(other))
    assert len(store.human_labels(dataset_id)) == 0 and len(store.human_labels(other)) == 0


@pytest.mark.parametrize("bad", ["x", {}, dict(_screen(1), dataset_id="1"),
                                 dict(_screen(1), dataset_id=True),
                                 dict(_screen(1), left="x" * 1001)])
def test_a_token_that_is_not_one_is_refused(stored, bad):
    store, dataset_id, _ = stored
    with pytest.raises(InputError):
        store.add_judgements(dataset_id, [_row()], shown=bad)
    assert len(store.human_labels(dataset_id)) == 0


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries(dict(
    dataset_id=st.integers(0, 3), aspect=st.sampled_from(["coherence", "overall"]),
    context_id=st.sampled_from(["doc1", "doc2"]), left=st.sampled_from(["c1", "c2", "c3"]),
    right=st.sampled_from(["c1", "c2", "c3"]), shown_order=st.sampled_from(["ab", "ba"]))))
def test_differences_name_exactly_the_fields_that_differ(shown):
    screen = api.PairOnScreen.of(shown)
    row = _row()
    expected = {k for k, v in dict(dataset_id=1, aspect="coherence", context_id="doc1",
                                   left="c2", right="c1", shown_order="ba").items()
                if shown[k] != v}
    assert set(screen.differences(1, row)) == expected


def test_a_campaign_answer_checks_the_pair_shown(stored):
    store, dataset_id, other = stored
    campaign = store.create_campaign("c1", "tiny", "coherence", ["ann@x.org"], overlap=1)
    pair = campaign.next_pair("ann@x.org")
    row = dict(context_id=pair.pair[0], candidate_left=pair.left, candidate_right=pair.right,
               winner="A", annotator="ann@x.org", seconds=1.0, shown_order=pair.shown_order)
    shown = dict(dataset_id=dataset_id, aspect="coherence", context_id=pair.pair[0],
                 left=pair.left, right=pair.right, shown_order=pair.shown_order)
    with pytest.raises(ObjectChanged):
        campaign.add_answer(row, shown=dict(shown, dataset_id=other))
    with pytest.raises(ObjectChanged):
        campaign.add_answer(row, shown=dict(shown, aspect="overall"))
    assert len(campaign.labels()) == 0
    assert campaign.add_answer(row, shown=shown)
    assert len(campaign.labels()) == 1
