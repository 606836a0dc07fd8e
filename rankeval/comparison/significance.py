"""The statistics of a comparison of runs: for per-query values ``(R, M, Q)``, the paired tests,
differences, intervals and effect sizes of every comparison of two runs, each run's spread and
interval, and the correction for multiple comparisons. The tests themselves are in
:mod:`rankeval.comparison.stats`; this module runs them over the runs, measures and queries, grouping
the comparisons that have the same queries so that they share their resamples.

May import: numpy, :mod:`rankeval.comparison.stats`, :mod:`rankeval.comparison.progress` (the type of a progress
task). Nothing that evaluates, renders or plots.
"""

from __future__ import annotations

import math

import numpy as np

from rankeval.comparison import stats
from rankeval.comparison.progress import Task

__all__ = ["CORRECTION_NAMES", "TEST_NAMES", "correct", "pair_stats", "run_stats"]

TEST_NAMES = {
    "ttest": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "bootstrap": "paired bootstrap test",
    "randomization": "randomisation test",
}
CORRECTION_NAMES = {
    "none": "no correction for multiple comparisons",
    "bonferroni": "Bonferroni correction",
    "holm": "Holm correction",
    "bh": "Benjamini-Hochberg correction (false discovery rate)",
}


def _groups(valid: np.ndarray) -> dict[bytes, list[int]]:
    """Rows of a boolean matrix grouped by equal rows."""
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(valid):
        groups.setdefault(row.tobytes(), []).append(i)
    return groups


def pair_stats(
    values: np.ndarray,
    pairs: list[tuple[int, int]],
    test: str,
    ci: str,
    alpha: float,
    samples: int,
    seed: int | None,
    task: Task,
) -> dict[str, np.ndarray]:
    """Tests, differences, intervals and effect sizes of every comparison and measure."""
    n_m, n_p = values.shape[1], len(pairs)
    out = {
        k: np.full((n_m, n_p), np.nan)
        for k in ("difference", "diff_ci_low", "diff_ci_high", "cohens_d", "statistic", "p_value")
    }
    out["n"] = np.zeros((n_m, n_p), dtype=np.int64)
    if not pairs:
        return out
    run_idx = np.array([r for r, _ in pairs])
    base_idx = np.array([b for _, b in pairs])
    resampling = test in ("bootstrap", "randomization") or ci == "bootstrap"
    plan: list[tuple[int, np.ndarray, list[int]]] = []
    for m in range(n_m):
        d = values[run_idx, m] - values[base_idx, m]  # (P, Q)
        plan.extend((m, d, rows) for rows in _groups(~np.isnan(d)).values())
    advance = task(f"{TEST_NAMES[test]}s", len(plan) * samples) if resampling else (lambda n: None)
    for m, d, rows in plan:
        idx = np.array(rows)
        mask = ~np.isnan(d[idx[0]])
        x = d[idx][:, mask]
        n = x.shape[1]
        out["n"][m, idx] = n
        if n == 0:
            continue
        out["difference"][m, idx] = x.mean(axis=1)
        out["cohens_d"][m, idx] = stats.cohens_d(x)
        means = None
        if test == "bootstrap" or ci == "bootstrap":
            means = stats.bootstrap_means(x, samples, seed, progress=advance)
        if test == "ttest":
            stat, p = stats.ttest(x)
        elif test == "wilcoxon":
            stat, p = stats.wilcoxon(x)
        elif test == "randomization":
            stat, p = stats.randomization(x, samples, seed, progress=None if ci == "bootstrap" else advance)
        else:
            assert means is not None
            stat, p = x.mean(axis=1), stats.bootstrap_p(x, means)
        out["statistic"][m, idx], out["p_value"][m, idx] = stat, p
        if ci == "bootstrap":
            assert means is not None
            low, high = stats.percentile_interval(means, alpha)
        else:
            low, high = stats.t_interval(x, alpha)
        out["diff_ci_low"][m, idx], out["diff_ci_high"][m, idx] = low, high
    return out


def run_stats(
    values: np.ndarray,
    ci: str,
    alpha: float,
    samples: int,
    seed: int | None,
    task: Task,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per run and measure: std over queries, standard error, interval of the mean."""
    n_r, n_m, _ = values.shape
    std, se, low, high = (np.full((n_r, n_m), np.nan) for _ in range(4))
    plan: list[tuple[int, list[int]]] = []
    for m in range(n_m):
        plan.extend((m, rows) for rows in _groups(~np.isnan(values[:, m])).values())
    advance = task("intervals", len(plan) * samples) if ci == "bootstrap" else (lambda n: None)
    for m, rows in plan:
        idx = np.array(rows)
        mask = ~np.isnan(values[idx[0], m])
        x = values[idx, m][:, mask]
        n = x.shape[1]
        if n == 0:
            continue
        if n > 1:
            std[idx, m] = x.std(axis=1, ddof=1)
            se[idx, m] = std[idx, m] / math.sqrt(n)
        if ci == "bootstrap":
            lo, hi = stats.percentile_interval(
                stats.bootstrap_means(x, samples, seed, progress=advance), alpha
            )
        else:
            lo, hi = stats.t_interval(x, alpha)
        low[idx, m], high[idx, m] = lo, hi
    return std, se, low, high


def correct(p: np.ndarray, correction: str, family: str) -> np.ndarray:
    """The p-values *p* ``(M, P)`` adjusted by *correction*: those of each measure together
    (*family* ``"measure"``), or ``"all"`` of them together."""
    if family == "all":
        return stats.adjust(p.ravel(), correction).reshape(p.shape)
    return np.array([stats.adjust(row, correction) for row in p]).reshape(p.shape)
