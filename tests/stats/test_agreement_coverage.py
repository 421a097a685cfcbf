"""Coverage of the agreement intervals on clustered data: a simulation with known truth.

Data-generating process (a study): 20 contexts x 45 labelled pairs. Context ``c`` has its own
agreement probability ``pi_c = sigmoid(mu + sigma z_c)``, ``z_c ~ N(0, 1)``: the pairs of one
context share its source, so they agree with people together. The humans call 10% of pairs a tie
and otherwise prefer x or y with probability 1/2; the LLM never ties and agrees with a decisive
human with probability ``pi_c``. The true values are those of the population of contexts:
accuracy without ties ``A = E[pi_c]`` (Gauss-Hermite quadrature) and, with ties, the symmetrised
kappa ``((1 - t) A - (1 - t)/2) / (1 - (1 - t)/2)`` (the LLM's decisive share is 1, so
``p_e = (1 - t)/2``).

Over repeated studies the 95% intervals of the two-stage cluster bootstrap
(``agreement_stats.agreement_intervals`` with the contexts) must cover the truth in 0.90-0.99 of
them; the plain pair bootstrap of the same studies covers far less (it ignores that the pairs of
one context move together), which is why every interval over labelled pairs resamples contexts.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit

from compassess_core.stats import agreement_stats as stats

N_CONTEXTS, PAIRS_PER_CONTEXT = 20, 45
MU, SIGMA, TIE = np.log(0.7 / 0.3), 1.0, 0.10
STUDIES, N_BOOT = 200, 200


def truth() -> tuple[float, float]:
    nodes, weights = hermegauss(80)
    acc = float(np.sum(weights * expit(MU + SIGMA * nodes)) / np.sum(weights))
    d = 1.0 - TIE
    return acc, (d * acc - d / 2) / (1 - d / 2)


def study(rng: np.random.Generator):
    pi = expit(MU + SIGMA * rng.standard_normal(N_CONTEXTS))
    ctx = np.repeat(np.arange(N_CONTEXTS), PAIRS_PER_CONTEXT)
    n = len(ctx)
    tie = rng.random(n) < TIE
    h = np.where(tie, 2, rng.integers(0, 2, n))
    agree = rng.random(n) < pi[ctx]
    decisive_h = np.where(tie, rng.integers(0, 2, n), h)  # what the LLM is right about
    llm = np.where(agree, decisive_h, 1 - decisive_h)
    return ctx, h, llm


def coverage(contexts: bool) -> tuple[float, float]:
    acc_true, kappa_true = truth()
    rng = np.random.default_rng(2024)
    hits = np.zeros(2)
    for s in range(STUDIES):
        ctx, h, llm = study(rng)
        got = stats.agreement_intervals(h, llm, ctx.astype(str) if contexts else None,
                                        n_boot=N_BOOT, seed=s)
        lo, hi = got["accuracy_without_ties"]
        hits[0] += lo <= acc_true <= hi
        lo, hi = got["kappa_with_ties"]
        hits[1] += lo <= kappa_true <= hi
    return tuple(hits / STUDIES)


def test_cluster_bootstrap_intervals_cover_the_truth_on_clustered_pairs():
    acc_cov, kappa_cov = coverage(contexts=True)
    assert 0.90 <= acc_cov <= 0.99, acc_cov
    assert 0.90 <= kappa_cov <= 0.99, kappa_cov


@pytest.mark.slow
def test_the_pair_bootstrap_would_not():
    acc_cov, kappa_cov = coverage(contexts=False)
    assert acc_cov < 0.85 and kappa_cov < 0.85, (acc_cov, kappa_cov)
