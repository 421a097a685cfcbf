"""The wording-tuning study's kappa is the product's pair kappa (every pair counted in both
orientations): checked against scikit-learn's Cohen's kappa on the doubled data, and invariant to
which candidate of a pair is called x."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import cohen_kappa_score

from benchmarks.studies import tuning_study as ts


def verdicts(human, llm) -> pd.DataFrame:
    n = len(human)
    return pd.DataFrame({"context_id": ["c"] * n, "x": [f"x{k}" for k in range(n)],
                         "y": [f"y{k}" for k in range(n)], "human": human, "llm": llm})


def doubled_sklearn(human, llm) -> float:
    h, l = np.asarray(human), np.asarray(llm)
    return cohen_kappa_score(np.r_[h, 1 - h], np.r_[l, 1 - l])


labels = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=30)


@settings(max_examples=60, deadline=None)
@given(labels, st.data())
def test_the_study_kappa_is_cohens_on_the_doubled_pairs_and_ignores_which_is_x(pairs, data):
    human, llm = (np.array(v) for v in zip(*pairs))
    got = ts.kappa_of(verdicts(human, llm))
    ref = doubled_sklearn(human, llm)
    assert got == pytest.approx(ref, nan_ok=True) or (np.isnan(got) and np.isnan(ref))
    # swapping x and y of any pairs flips both labels of those pairs: the same kappa
    flip = np.array(data.draw(st.lists(st.booleans(), min_size=len(human),
                                       max_size=len(human))))
    swapped = ts.kappa_of(verdicts(np.where(flip, 1 - human, human),
                                   np.where(flip, 1 - llm, llm)))
    assert swapped == pytest.approx(got, nan_ok=True)


def test_the_kappa_difference_is_the_difference_of_the_pair_kappas():
    human = np.array([0, 0, 1, 1, 0, 1, 0, 1, 1, 0])
    a, b = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0]), np.array([0, 1, 1, 0, 0, 1, 1, 0, 1, 1])
    va, vb = verdicts(human, a), verdicts(human, b)
    d = ts.kappa_difference(va, vb, seed=1)
    assert d.n == 10
    assert d.value == pytest.approx(doubled_sklearn(human, a) - doubled_sklearn(human, b))
    assert d.low <= d.value <= d.high
