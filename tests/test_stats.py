"""Significance tests, corrections and intervals (rankeval.comparison.stats) against scipy, statsmodels,
straightforward loop implementations with the same random draws, and exact distributions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from rankeval.comparison import stats
from rankeval.errors import UsageError

multitest = pytest.importorskip("statsmodels.stats.multitest")


def pairs(seed: int, n: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if ties:  # IR-like scores: many ties and zero differences
        return rng.integers(0, 5, n) / 4, rng.integers(0, 5, n) / 4
    return rng.random(n), rng.random(n) * 0.9 + 0.05


# ------------------------------------------------------------------ scipy parity
@pytest.mark.parametrize("seed, n", [(0, 5), (1, 19), (2, 50), (3, 100), (4, 1000)])
def test_ttest_equals_scipy(seed, n) -> None:
    x, y = pairs(seed, n)
    t, p = stats.ttest(x - y)
    ref = sps.ttest_rel(x, y)
    assert t == pytest.approx(ref.statistic, abs=1e-12, rel=1e-12)
    assert abs(p - ref.pvalue) < 1e-12
    assert stats.paired_test(x, y, "ttest") == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)


def test_ttest_batched_equals_one_by_one() -> None:
    d = np.stack([np.subtract(*pairs(s, 30)) for s in range(6)])
    t, p = stats.ttest(d)
    for i, row in enumerate(d):
        ref = sps.ttest_rel(row, np.zeros_like(row))
        assert abs(p[i] - ref.pvalue) < 1e-12
        assert t[i] == pytest.approx(ref.statistic, rel=1e-12)


@pytest.mark.parametrize(
    "seed, n, ties", [(0, 8, False), (1, 20, False), (2, 50, True), (3, 60, False), (4, 200, True)]
)
def test_wilcoxon_equals_scipy(seed, n, ties) -> None:
    x, y = pairs(seed, n, ties)
    stat, p = stats.wilcoxon(x - y)
    ref = sps.wilcoxon(x, y)
    assert stat == ref.statistic
    assert abs(p - ref.pvalue) < 1e-12
    # batched: each row as scipy would do it alone
    d = np.stack([x - y, y - x])
    _, pb = stats.wilcoxon(d)
    assert abs(pb[0] - ref.pvalue) < 1e-12
    assert abs(pb[1] - sps.wilcoxon(y, x).pvalue) < 1e-12


def test_degenerate_inputs() -> None:
    zeros = np.zeros(10)
    assert stats.ttest(zeros) == (0.0, 1.0)
    assert stats.wilcoxon(zeros) == (0.0, 1.0)
    t, p = stats.ttest(np.full(10, 0.1))  # constant non-zero difference: |t| = inf
    assert np.isinf(t) and p == 0.0
    assert all(np.isnan(v) for v in stats.ttest(np.array([0.3])))
    assert stats.randomization(zeros, 100, 0)[1] == 1.0
    assert stats.bootstrap(zeros, 100, 0)[1] == 1.0
    assert stats.cohens_d(zeros) == 0.0
    assert np.isinf(stats.cohens_d(np.full(4, 0.2)))


# ------------------------------------------------- randomisation: reference and exact
def reference_randomization(d: np.ndarray, samples: int, seed: int) -> float:
    """A plain loop over the same sign vectors."""
    signs = 1 - 2 * np.random.default_rng(seed).integers(0, 2, size=(samples, len(d)))
    observed = abs(d.mean())
    tol = stats.RTOL * np.abs(d).mean()
    count = 0
    for row in signs:
        if abs(np.mean(row * d)) >= observed - tol:
            count += 1
    return (count + 1) / (samples + 1)


def exact_randomization(d: np.ndarray) -> float:
    """The exact permutation distribution: all 2**n sign flips."""
    observed = abs(d.mean())
    tol = stats.RTOL * np.abs(d).mean()
    count = total = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        total += 1
        count += abs(np.mean(np.array(signs) * d)) >= observed - tol
    return count / total


@pytest.mark.parametrize("seed, n", [(0, 6), (1, 19), (2, 50), (5, 120)])
def test_randomization_equals_loop_reference(seed, n) -> None:
    x, y = pairs(seed, n, ties=seed % 2 == 0)
    d = x - y
    mean, p = stats.randomization(d, 3000, seed=42, exact=False)
    assert mean == pytest.approx(d.mean(), abs=1e-15)
    assert p == pytest.approx(reference_randomization(d, 3000, 42), abs=1e-12)


def test_randomization_chunks_do_not_change_the_draws() -> None:
    d = np.subtract(*pairs(7, 37))
    whole = stats.randomization(d, 5000, seed=3, exact=False, chunk=10**9)
    small = stats.randomization(d, 5000, seed=3, exact=False, chunk=37 * 7)
    assert whole == small
    a = np.concatenate(list(stats.sign_flips(13, 101, 5, chunk=13 * 10)))
    b = 1 - 2 * np.random.default_rng(5).integers(0, 2, size=(101, 13))
    assert (a == b).all()


@pytest.mark.parametrize("seed, n", [(0, 3), (1, 6), (2, 8), (3, 10), (4, 10)])
def test_randomization_exact_distribution(seed, n) -> None:
    x, y = pairs(seed, n, ties=seed == 4)
    d = x - y
    exact = exact_randomization(d)
    # 2**n <= samples: the exact test
    assert stats.randomization(d, 10_000, 0)[1] == pytest.approx(exact, abs=1e-12)
    assert stats.randomization(d, 10, 0, exact=True)[1] == pytest.approx(exact, abs=1e-12)
    # the Monte Carlo test converges to it (standard error <= 0.5 / sqrt(20000) = 0.0035)
    assert stats.randomization(d, 20_000, 1, exact=False)[1] == pytest.approx(exact, abs=0.015)


def test_randomization_symmetric_and_seeded() -> None:
    d = np.subtract(*pairs(11, 40))
    assert stats.randomization(d, 2000, 9)[1] == stats.randomization(-d, 2000, 9)[1]
    assert stats.randomization(d, 2000, 9) == stats.randomization(d, 2000, 9)


# --------------------------------------------------------- bootstrap: reference and exact
def reference_bootstrap(
    d: np.ndarray, samples: int, seed: int, alpha: float = 0.05
) -> tuple[float, float, float]:
    """A plain loop over the same resample indices: (p, ci_low, ci_high)."""
    idx = np.random.default_rng(seed).integers(0, len(d), size=(samples, len(d)))
    observed = d.mean()
    shifted = d - observed
    tol = stats.RTOL * np.abs(d).mean()
    count = 0
    means = []
    for row in idx:
        if abs(shifted[row].mean()) >= abs(observed) - tol:
            count += 1
        means.append(d[row].mean())
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (count + 1) / (samples + 1), float(low), float(high)


@pytest.mark.parametrize("seed, n", [(0, 5), (1, 19), (2, 50), (3, 100)])
def test_bootstrap_equals_loop_reference(seed, n) -> None:
    x, y = pairs(seed, n, ties=seed == 2)
    d = x - y
    p_ref, low_ref, high_ref = reference_bootstrap(d, 4000, 17)
    mean, p = stats.bootstrap(d, 4000, 17)
    assert mean == pytest.approx(d.mean(), abs=1e-15)
    assert p == pytest.approx(p_ref, abs=1e-12)
    low, high = stats.bootstrap_interval(d, 0.05, 4000, 17)
    assert low == pytest.approx(low_ref, abs=1e-12)
    assert high == pytest.approx(high_ref, abs=1e-12)


def test_bootstrap_chunks_do_not_change_the_draws() -> None:
    d = np.subtract(*pairs(8, 23))
    assert stats.bootstrap(d, 3001, 2, chunk=10**9) == stats.bootstrap(d, 3001, 2, chunk=23 * 3)
    a = np.concatenate(list(stats.bootstrap_indices(7, 95, 4, chunk=7 * 4)))
    assert (a == np.random.default_rng(4).integers(0, 7, size=(95, 7))).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bootstrap_exact_distribution(seed) -> None:
    """With n = 5 all 5**5 resamples can be enumerated: the Monte Carlo p-value converges to
    the share of them whose shifted mean is at least as extreme."""
    d = np.subtract(*pairs(seed, 5))
    shifted = d - d.mean()
    tol = stats.RTOL * np.abs(d).mean()
    idx = np.array(list(itertools.product(range(5), repeat=5)))
    exact = np.mean(np.abs(shifted[idx].mean(axis=1)) >= abs(d.mean()) - tol)
    assert stats.bootstrap(d, 40_000, seed)[1] == pytest.approx(exact, abs=0.01)


# -------------------------------------------------------------------- corrections
@pytest.mark.parametrize("method, sm", [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.parametrize("seed", range(5))
def test_corrections_equal_statsmodels(method, sm, seed) -> None:
    rng = np.random.default_rng(seed)
    p = rng.random(3 + 7 * seed) ** 3
    p[::4] = p[0]  # ties
    ours = stats.adjust(p, method)
    ref = multitest.multipletests(p, alpha=0.05, method=sm)[1]
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-15)


def test_corrections_skip_nan_and_none() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03])
    out = stats.adjust(p, "holm")
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3]], multitest.multipletests(p[[0, 2, 3]], method="holm")[1])
    assert stats.adjust(p, "none") is not p
    np.testing.assert_array_equal(stats.adjust(p, "none"), p)
    assert stats.adjust([], "bh").shape == (0,)
    with pytest.raises(UsageError, match="unknown correction"):
        stats.adjust(p, "sidak")


# ------------------------------------------------------------------------ intervals
def test_t_interval_equals_scipy() -> None:
    d = np.subtract(*pairs(5, 40))
    low, high = stats.t_interval(d, 0.1)
    ref = sps.t.interval(0.9, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert (low, high) == pytest.approx(ref, abs=1e-12)


def test_cohens_d() -> None:
    d = np.array([0.1, 0.3, -0.1, 0.2, 0.0])
    assert stats.cohens_d(d) == pytest.approx(d.mean() / d.std(ddof=1))


def test_unknown_test() -> None:
    with pytest.raises(UsageError, match="unknown test 'z'"):
        stats.paired_test([1, 2], [2, 3], "z")
