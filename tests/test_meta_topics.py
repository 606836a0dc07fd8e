"""rankeval.meta.topics against independent power calculations and brute-force searches.

Sakai's published tables could not be found in a form the tests can cite, so every number is
checked against a calculation written here: the power of the paired t-test from scipy's
noncentral t, of the one-way ANOVA from scipy's noncentral F, the expected CI width from the
mean of the chi distribution, each with a plain search over n; and, where statsmodels is
installed, its solve_power as a second, separately written oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankeval.errors import UsageError
from rankeval.meta.topics import topics_for_anova, topics_for_ci, topics_for_ttest, variance_estimate

N = np.arange(2, 20_000)  # every topic-set size the searches below consider


def ttest_power(variance: float, min_diff: float, alpha: float) -> np.ndarray:
    """Power of the two-sided paired t-test for each n in N, var_t = 2 var."""
    df, shift = N - 1, min_diff / np.sqrt(2 * variance / N)
    critical = stats.t.ppf(1 - alpha / 2, df)
    distribution = stats.nct(df, shift)
    return np.asarray(1 - distribution.cdf(critical) + distribution.cdf(-critical))


def anova_power(variance: float, min_range: float, systems: int, alpha: float) -> np.ndarray:
    """Power of the one-way ANOVA over m systems for each n in N topics, least favourable
    means (two systems min_range apart, the others in the middle)."""
    means = np.full(systems, 0.0)
    means[0], means[1] = -min_range / 2, min_range / 2
    shift = N * float(np.sum((means - means.mean()) ** 2)) / variance
    df1, df2 = systems - 1, systems * (N - 1)
    return np.asarray(1 - stats.ncf(df1, df2, shift).cdf(stats.f.ppf(1 - alpha, df1, df2)))


def ci_width(variance: float, alpha: float) -> np.ndarray:
    """Expected width of the 100(1-alpha)% CI of a paired difference for each n in N:
    E[s] = sd_t E[chi_{n-1}]/sqrt(n-1)."""
    sigma = math.sqrt(2 * variance)
    mean_sd = sigma * stats.chi(N - 1).mean() / np.sqrt(N - 1)
    return np.asarray(2 * stats.t.ppf(1 - alpha / 2, N - 1) * mean_sd / np.sqrt(N))


def first(condition: np.ndarray) -> int:
    """The first n in N where *condition* holds (a plain search, not a bisection)."""
    assert condition.any()
    return int(N[np.argmax(condition)])


# (variance, difference, alpha, beta): typical var of IR measures (0.01-0.1), differences 0.02-0.2
DESIGNS = [
    (0.05, 0.10, 0.05, 0.20),
    (0.05, 0.05, 0.05, 0.20),
    (0.02, 0.05, 0.01, 0.20),
    (0.10, 0.20, 0.05, 0.10),
    (0.01, 0.02, 0.05, 0.20),
    (0.08, 0.50, 0.05, 0.20),  # a large effect: the smallest n comes into play
    (0.50, 0.20, 0.10, 0.30),
    (0.05, 0.50, 0.05, 0.20),  # ANOVA, 3 systems: 6 topics with phi_E = m(n-1), 5 with mn-1
]


@pytest.mark.parametrize(("variance", "diff", "alpha", "beta"), DESIGNS)
def test_ttest_is_the_smallest_n_with_enough_power(
    variance: float, diff: float, alpha: float, beta: float
) -> None:
    expected = first(ttest_power(variance, diff, alpha) >= 1 - beta)
    assert topics_for_ttest(variance, diff, alpha, beta) == expected


@pytest.mark.parametrize(("variance", "diff", "alpha", "beta"), DESIGNS)
@pytest.mark.parametrize("systems", [2, 3, 10, 30])
def test_anova_is_the_smallest_n_with_enough_power(
    variance: float, diff: float, alpha: float, beta: float, systems: int
) -> None:
    expected = first(anova_power(variance, diff, systems, alpha) >= 1 - beta)
    assert topics_for_anova(variance, diff, systems, alpha, beta) == expected


@pytest.mark.parametrize(("variance", "width", "alpha", "_beta"), DESIGNS)
def test_ci_is_the_smallest_n_narrow_enough(
    variance: float, width: float, alpha: float, _beta: float
) -> None:
    expected = first(ci_width(variance, alpha) <= width)
    assert topics_for_ci(variance, width, alpha) == expected


@pytest.mark.parametrize(("variance", "diff", "alpha", "beta"), DESIGNS)
def test_statsmodels_agrees(variance: float, diff: float, alpha: float, beta: float) -> None:
    power = pytest.importorskip("statsmodels.stats.power")
    # paired t-test = one-sample t-test of the differences, effect size d = diff/sd_t
    n = power.TTestPower().solve_power(
        effect_size=diff / math.sqrt(2 * variance), alpha=alpha, power=1 - beta
    )
    assert topics_for_ttest(variance, diff, alpha, beta) == max(2, math.ceil(n - 1e-9))
    # one-way ANOVA: statsmodels' effect size f² = λ/(total observations) = diff²/(2 var m)
    for systems in (3, 10):
        f = math.sqrt(diff**2 / (2 * variance * systems))
        total = power.FTestAnovaPower().solve_power(
            effect_size=f, alpha=alpha, power=1 - beta, k_groups=systems
        )
        got = topics_for_anova(variance, diff, systems, alpha, beta)
        assert got == max(2, math.ceil(total / systems - 1e-9))


MONOTONE = [
    # (function, arguments, argument index that grows, bigger value, does n grow with it)
    (topics_for_ttest, (0.05, 0.1, 0.05, 0.2), 0, 0.1, True),
    (topics_for_ttest, (0.05, 0.1, 0.05, 0.2), 1, 0.15, False),
    (topics_for_ttest, (0.05, 0.1, 0.05, 0.2), 2, 0.1, False),
    (topics_for_ttest, (0.05, 0.1, 0.05, 0.2), 3, 0.4, False),
    (topics_for_anova, (0.05, 0.1, 5, 0.05, 0.2), 0, 0.1, True),
    (topics_for_anova, (0.05, 0.1, 5, 0.05, 0.2), 1, 0.15, False),
    (topics_for_anova, (0.05, 0.1, 5, 0.05, 0.2), 2, 20, True),
    (topics_for_anova, (0.05, 0.1, 5, 0.05, 0.2), 3, 0.1, False),
    (topics_for_anova, (0.05, 0.1, 5, 0.05, 0.2), 4, 0.4, False),
    (topics_for_ci, (0.05, 0.1, 0.05), 0, 0.1, True),
    (topics_for_ci, (0.05, 0.1, 0.05), 1, 0.15, False),
    (topics_for_ci, (0.05, 0.1, 0.05), 2, 0.1, False),
]


@pytest.mark.parametrize(("function", "arguments", "index", "bigger", "grows"), MONOTONE)
def test_monotone(
    function: object, arguments: tuple[float, ...], index: int, bigger: float, grows: bool
) -> None:
    changed = list(arguments)
    changed[index] = bigger
    before, after = function(*arguments), function(*changed)  # type: ignore[operator]
    assert after > before if grows else after < before


BAD = [
    (topics_for_ttest, (0.0, 0.1), "variance must be a positive number"),
    (topics_for_ttest, (0.05, -0.1), "min_diff must be a positive number"),
    (topics_for_ttest, (0.05, 0.1, 1.0), "alpha must be between 0 and 1"),
    (topics_for_ttest, (0.05, 0.1, 0.05, 0.0), "beta must be between 0 and 1"),
    (topics_for_ttest, (math.nan, 0.1), "variance must be a positive number"),
    (topics_for_anova, (0.05, 0.1, 1), "systems must be at least 2"),
    (topics_for_anova, (0.05, 0.0, 3), "min_range must be a positive number"),
    (topics_for_ci, (0.05, 0.0), "width must be a positive number"),
    (topics_for_ci, (0.05, 0.1, 0.0), "alpha must be between 0 and 1"),
    (variance_estimate, ([[1.0, 2.0]],), "at least 2 of each"),
    (variance_estimate, ([1.0, 2.0],), "at least 2 of each"),
    (variance_estimate, ([[1.0, 2.0], [math.inf, 1.0]],), "not a finite number"),
]


@pytest.mark.parametrize(("function", "arguments", "message"), BAD)
def test_bad_arguments(function: object, arguments: tuple[object, ...], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        function(*arguments)  # type: ignore[operator]


def test_variance_estimate_is_the_two_way_anova_residual_variance() -> None:
    rng = np.random.default_rng(7)
    topics, systems = 25, 6
    scores = rng.random((topics, systems))
    # independent: least squares fit of the additive model (intercept, topic and system
    # dummies); residual mean square with (n-1)(m-1) degrees of freedom
    design = np.hstack(
        [
            np.ones((topics * systems, 1)),
            np.kron(np.eye(topics), np.ones((systems, 1))),
            np.tile(np.eye(systems), (topics, 1)),
        ]
    )
    fit, *_ = np.linalg.lstsq(design, scores.reshape(-1), rcond=None)
    residual = scores.reshape(-1) - design @ fit
    expected = float(residual @ residual) / ((topics - 1) * (systems - 1))
    assert variance_estimate(scores) == pytest.approx(expected, rel=1e-10)


def test_variance_estimate_of_an_additive_matrix_is_zero() -> None:
    topic_effect, system_effect = np.array([0.1, 0.5, 0.3]), np.array([0.0, 0.2])
    assert variance_estimate(topic_effect[:, None] + system_effect[None, :]) == pytest.approx(0.0, abs=1e-15)


def test_variance_estimate_from_a_long_frame() -> None:
    rng = np.random.default_rng(3)
    scores = rng.random((4, 3))
    rows = [
        {"run": f"r{j}", "query_id": f"q{i}", "measure": "AP", "value": scores[i, j]}
        for i in range(4)
        for j in range(3)
    ]
    rows += [{"run": "r0", "query_id": None, "measure": "AP", "value": 0.5}]  # an aggregate row
    rows += [{"run": "r0", "query_id": "q0", "measure": "P@10", "value": 0.1}]
    assert variance_estimate(pd.DataFrame(rows), "AP") == pytest.approx(variance_estimate(scores), rel=1e-12)
