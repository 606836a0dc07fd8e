"""Topic-set-size design: how many topics a test collection needs.

Sakai, "Topic set size design", Information Retrieval Journal 19(3), 2016, after Nagata's
sample-size design: the number of topics for a paired t-test to detect a difference of
``min_diff`` with power 1 - beta (§4.1), for a one-way ANOVA over m systems to detect a range of
``min_range`` between the best and the worst system with power 1 - beta (§4.2), and for the
expected width of a 100(1-alpha)% confidence interval of a difference to stay under ``width``
(§4.3). Each takes var, the within-system variance of the measure, estimated from past
per-topic values as the residual variance V_E of a two-way ANOVA without replication (topic x
system, §3: :func:`variance_estimate`).

As Sakai's §4.1 and §4.3, the variance of a difference of two systems' scores is taken as
var_t = 2 var (the residual of the additive topic + system model). Where Sakai's Excel tools
(samplesizeTTEST2, samplesizeANOVA2, samplesizeCI2) start from Nagata's normal approximation
and step up with an approximation of the noncentral distribution, these functions return the
smallest n whose exact power (noncentral t and F, scipy) or exact expected CI width meets the
requirement; the two can differ by a topic where the approximation is off at the boundary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from rankeval.errors import UsageError

if TYPE_CHECKING:
    from rankeval.meta.values import Values

__all__ = ["topics_for_anova", "topics_for_ci", "topics_for_ttest", "variance_estimate"]


def topics_for_ttest(variance: float, min_diff: float, alpha: float = 0.05, beta: float = 0.20) -> int:
    """Topics a two-sided paired t-test needs to detect a difference of *min_diff* between
    two systems with probability 1 - beta at level alpha (Sakai 2016, §4.1).

    With var_t = 2 var, Δ = min_diff/sd_t and n topics, the test statistic follows a noncentral t
    with n - 1 degrees of freedom and noncentrality √n Δ; the power is
    P(|t'| ≥ t_{alpha/2}(n - 1)). The result is the smallest n ≥ 2 whose power is at least 1 - beta.

    Args:
        variance: var, the within-system variance of the measure (:func:`variance_estimate`).
        min_diff: The smallest difference in mean scores to detect (minD_t), > 0.
        alpha: Significance level, 0 < alpha < 1.
        beta: Type II error rate, 0 < beta < 1 (power 1 - beta).

    Returns:
        The number of topics.

    Raises:
        UsageError: a variance or difference that is not positive, or alpha, beta outside (0, 1).
    """
    _check(variance=variance, min_diff=min_diff, alpha=alpha, beta=beta)
    from scipy import stats

    effect = min_diff / math.sqrt(2 * variance)

    def powerful(n: int) -> bool:
        critical = stats.t.isf(alpha / 2, n - 1)
        shift = math.sqrt(n) * effect
        power = stats.nct.sf(critical, n - 1, shift) + stats.nct.cdf(-critical, n - 1, shift)
        return bool(power >= 1 - beta)

    return _smallest(powerful)


def topics_for_anova(
    variance: float, min_range: float, systems: int, alpha: float = 0.05, beta: float = 0.20
) -> int:
    """Topics a one-way ANOVA over *systems* systems needs to detect, with probability 1 - beta
    at level alpha, that the best and the worst system differ by *min_range* (Sakai 2016, §4.2).

    In the least favourable configuration (two systems *min_range* apart, the others at their
    midpoint) the noncentrality is λ = n·min_range²/(2var); the statistic follows a noncentral
    F with φ_A = m - 1 and φ_E = m(n - 1) degrees of freedom, and the power is
    P(F' ≥ F_alpha(φ_A, φ_E)). The result is the smallest n ≥ 2 whose power is at least 1 - beta.

    Args:
        variance: var, the within-system variance of the measure.
        min_range: The smallest range of the systems' mean scores to detect (minD), > 0.
        systems: m, the number of systems compared (≥ 2).
        alpha: Significance level, 0 < alpha < 1.
        beta: Type II error rate, 0 < beta < 1.

    Returns:
        The number of topics.

    Raises:
        UsageError: a variance or range that is not positive, fewer than 2 systems, or alpha, beta
            outside (0, 1).
    """
    _check(variance=variance, min_range=min_range, alpha=alpha, beta=beta)
    if systems < 2:
        raise UsageError(f"systems must be at least 2, got {systems}")
    from scipy import stats

    effect = min_range**2 / (2 * variance)

    def powerful(n: int) -> bool:
        between, within = systems - 1, systems * (n - 1)
        critical = stats.f.isf(alpha, between, within)
        return bool(stats.ncf.sf(critical, between, within, n * effect) >= 1 - beta)

    return _smallest(powerful)


def topics_for_ci(variance: float, width: float, alpha: float = 0.05) -> int:
    """Topics for the expected width of the 100(1-alpha)% confidence interval of the difference
    between two systems to be at most *width* (Sakai 2016, §4.3).

    The interval is d̄ ± t_{alpha/2}(n - 1) s_t/√n, and E[s_t] = sd_t √(2/(n - 1))
    Γ(n/2)/Γ((n - 1)/2) with var_t = 2 var; the result is the smallest n ≥ 2 for which
    2 t_{alpha/2}(n - 1) E[s_t]/√n ≤ width.

    Args:
        variance: var, the within-system variance of the measure.
        width: The largest acceptable expected width of the interval (δ), > 0.
        alpha: 1 - the confidence level, 0 < alpha < 1.

    Returns:
        The number of topics.

    Raises:
        UsageError: a variance or width that is not positive, or alpha outside (0, 1).
    """
    _check(variance=variance, width=width, alpha=alpha)
    from scipy import special, stats

    sigma = math.sqrt(2 * variance)

    def narrow(n: int) -> bool:
        mean_sd = (
            sigma * math.sqrt(2 / (n - 1)) * math.exp(special.gammaln(n / 2) - special.gammaln((n - 1) / 2))
        )
        return bool(2 * stats.t.isf(alpha / 2, n - 1) * mean_sd / math.sqrt(n) <= width)

    return _smallest(narrow)


def variance_estimate(values: Values | npt.ArrayLike, measure: str | None = None) -> float:
    """var = V_E, the residual variance of a two-way ANOVA without replication over the
    per-topic values (topic x system; Sakai 2016, §3)::

        V_E = Σ_ij (x_ij - x̄_i. - x̄_.j + x̄)² / ((n - 1)(m - 1))

    for n topics and m systems.

    Args:
        values: A topics x systems array, or any form :func:`rankeval.meta.values.per_query`
            accepts (an evaluation's long frame, a wide frame, a mapping run -> {query ->
            value}, a Matrix).
        measure: The measure to take from a long frame that holds several.

    Returns:
        V_E.

    Raises:
        UsageError: fewer than 2 topics or 2 systems, a value that is not finite, or what
            :func:`~rankeval.meta.values.per_query` raises.
    """
    matrix: npt.NDArray[np.float64]
    if isinstance(values, np.ndarray | list | tuple):
        matrix = np.asarray(values, dtype=np.float64)
    else:
        from rankeval.meta.values import per_query

        matrix = np.asarray(per_query(values, measure).values, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 2:
        raise UsageError(
            f"a variance estimate needs a topics x systems matrix with at least 2 of each, got shape {matrix.shape}"
        )
    if not np.all(np.isfinite(matrix)):
        raise UsageError("the per-topic values hold a value that is not a finite number")
    topics, systems = int(matrix.shape[0]), int(matrix.shape[1])
    residual = (
        matrix - matrix.mean(axis=1, keepdims=True) - matrix.mean(axis=0, keepdims=True) + matrix.mean()
    )
    return float(np.sum(residual**2)) / ((topics - 1) * (systems - 1))


def _check(**arguments: float) -> None:
    for name, value in arguments.items():
        if name in ("alpha", "beta"):
            if not 0 < value < 1:
                raise UsageError(f"{name} must be between 0 and 1 (exclusive), got {value}")
        elif not (math.isfinite(value) and value > 0):
            raise UsageError(f"{name} must be a positive number, got {value}")


def _smallest(enough: Callable[[int], bool]) -> int:
    """The smallest n ≥ 2 for which *enough(n)* holds; *enough* is monotone in n (power grows
    and the expected interval narrows with the number of topics): double, then bisect."""
    high = 2
    while not enough(high):
        high *= 2
    low = max(high // 2, 1)  # enough(low) is false unless low == 1 (below the range)
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high
