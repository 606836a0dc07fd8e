"""Paired significance tests, multiple-comparison corrections and confidence intervals.

Every test compares paired per-query scores: row *i* of ``d`` holds the per-query differences
``x - y`` of one comparison (run *x* against baseline *y*, same queries in the same order).
The null hypothesis is a mean difference of zero; every p-value is two-sided. Functions take
a ``(P, n)`` array and test the *P* comparisons at once; a 1-d array is one comparison.

Tests:

* ``ttest``: paired Student t-test (Sayed & Oard, SIGIR 2019, use it for CS-DCG): ``t =
  mean(d) / (sd(d) / √n)``, ``sd`` with ``n - 1`` degrees of freedom; the p-value is
  ``2·P(T ≥ |t|)`` with *n - 1* degrees of freedom, equal to :func:`scipy.stats.ttest_rel`.
* ``wilcoxon``: Wilcoxon signed-rank test, computed by :func:`scipy.stats.wilcoxon` with its
  defaults (zero differences dropped, exact distribution for small samples without ties).
* ``randomization``: Fisher's paired randomisation (permutation) test (Smucker, Allan &
  Carterette, CIKM 2007): under the null each per-query difference is as likely to have
  either sign. The statistic is ``mean(d)``; each resample flips the signs of a random
  subset of the differences.
* ``bootstrap``: paired bootstrap test of the mean difference (Efron & Tibshirani 1993,
  §16.4; Sakai, SIGIR 2006; 1,000+ resamples as in Shing, Resnik & Oard, ACL 2020): the
  differences are shifted to mean zero (the null), resampled with replacement, and the
  p-value is the share of resampled means at least as far from zero as the observed one.

Random draws (reproducible with a seed; the tests re-derive them the same way):

* bootstrap: ``np.random.default_rng(seed).integers(0, n, size=(samples, n))`` — row *b* are
  the indices of resample *b*. Drawn in chunks of rows, which gives the same matrix (int64
  draws are not buffered between calls); every comparison of the same *n* reuses it
  (common random numbers).
* randomization: ``signs = 1 - 2 * np.random.default_rng(seed).integers(0, 2, size=(samples,
  n))``. When ``2**n <= samples`` (or ``exact=True``) all ``2**n`` sign vectors are used
  instead: the exact permutation distribution.

p-value convention of the resampling tests: ``(count + 1) / (samples + 1)``, *count* the
resamples whose statistic is at least as extreme as the observed one (the observed data count
as one resample, so the p-value is never 0: Phipson & Smyth 2010). The exact randomisation
test gives ``count / 2**n`` (the identity sign vector is one of the ``2**n``). "At least as
extreme" tolerates rounding: ``|s*| >= |s| - 1e-9 · mean|d|``.

The work is one matrix product per chunk of resamples: with ``W`` the ``(samples, n)``
matrix of how often each query is drawn (or the signs), the resampled means of all
comparisons are ``d @ W.T / n`` — no Python loop per resample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rankeval.errors import UsageError

# the choices live in the light rankeval.options (the CLI imports them without numpy);
# MAX_SAMPLES: the resampled means take 8 bytes per sample and pair of runs (80 MB each at it)
from rankeval.options import CORRECTIONS, MAX_SAMPLES, TESTS, check_seed

__all__ = [
    "CORRECTIONS",
    "MAX_SAMPLES",
    "TESTS",
    "adjust",
    "bootstrap",
    "bootstrap_indices",
    "bootstrap_interval",
    "bootstrap_means",
    "bootstrap_p",
    "cohens_d",
    "paired_test",
    "percentile_interval",
    "randomization",
    "sign_flips",
    "t_interval",
    "ttest",
    "wilcoxon",
]

#: elements of one chunk of a resampling matrix (rows x n): 8 MB of int64
CHUNK = 1 << 20
#: tolerance (relative to mean |d|) when comparing resampled and observed statistics
RTOL = 1e-9

Progress = Callable[[int], None]


def _rows(d: Any) -> np.ndarray:
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise UsageError(f"expected per-query differences as a 1-d or 2-d array, got shape {arr.shape}")
    return arr


def _squeeze(like: Any, *arrays: np.ndarray) -> Any:
    out: tuple[Any, ...] = tuple(float(a[0]) for a in arrays) if np.ndim(like) == 1 else arrays
    return out if len(out) > 1 else out[0]


def _chunk_rows(n: int, chunk: int | None) -> int:
    return max(1, (chunk or CHUNK) // max(n, 1))


# --------------------------------------------------------------------------- draws
def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """The generator of *seed*: itself, or :func:`numpy.random.default_rng` of a seed checked
    by :func:`rankeval.options.check_seed` (a UsageError naming the range, not numpy's
    ``ValueError``)."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed(seed))


def bootstrap_indices(
    n: int, samples: int, seed: int | np.random.Generator | None, chunk: int | None = None
) -> Iterator[np.ndarray]:
    """Bootstrap resample indices, ``(rows, n)`` int64 chunks that together are
    ``np.random.default_rng(seed).integers(0, n, size=(samples, n))``."""
    return _draws(_rng(seed), n, samples, n, chunk)


def sign_flips(
    n: int, samples: int, seed: int | np.random.Generator | None, chunk: int | None = None
) -> Iterator[np.ndarray]:
    """Random sign vectors, ``(rows, n)`` chunks of ±1 that together are ``1 - 2 *
    np.random.default_rng(seed).integers(0, 2, size=(samples, n))``."""
    return (1 - 2 * bits for bits in _draws(_rng(seed), n, samples, 2, chunk))


def _draws(rng: np.random.Generator, n: int, samples: int, high: int, chunk: int | None) -> Iterator[np.ndarray]:
    """``rng.integers(0, high, size=(samples, n))`` in chunks of rows (the seed is checked
    before the first chunk is asked for)."""
    step = _chunk_rows(n, chunk)
    for start in range(0, samples, step):
        yield rng.integers(0, high, size=(min(step, samples - start), n), dtype=np.int64)


def all_sign_flips(n: int, chunk: int | None = None) -> Iterator[np.ndarray]:
    """All ``2**n`` sign vectors (row *i*: the bits of *i*, bit *j* set = query *j*
    flipped), in chunks."""
    step = _chunk_rows(n, chunk)
    bits = np.arange(n, dtype=np.int64)
    for start in range(0, 1 << n, step):
        i = np.arange(start, min(start + step, 1 << n), dtype=np.int64)
        yield 1 - 2 * ((i[:, None] >> bits) & 1)


def _counts(idx: np.ndarray) -> np.ndarray:
    """``(rows, n)`` how often each of the *n* items is drawn in each resample row."""
    rows, n = idx.shape
    flat = idx + (np.arange(rows, dtype=np.int64) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)


def _resampled_means(
    d: np.ndarray, draws: Iterator[np.ndarray], kind: str, progress: Progress | None
) -> np.ndarray:
    """``(P, samples)`` means of every row of *d* under each resample (bootstrap counts or
    sign flips)."""
    n = d.shape[1]
    parts = []
    for chunk in draws:
        w = _counts(chunk) if kind == "bootstrap" else chunk.astype(np.float64)
        parts.append(d @ w.T / n)
        if progress is not None:
            progress(len(chunk))
    return np.concatenate(parts, axis=1) if parts else np.zeros((len(d), 0))


# --------------------------------------------------------------------------- tests
def ttest(d: Any) -> Any:
    """Paired t-test on differences *d*: ``(t, p)`` per comparison.

    A comparison with fewer than 2 queries gets NaN; with zero variance, ``p = 1`` when every
    difference is 0 (no evidence of a difference) and ``p = 0`` otherwise (``|t| = ∞``).
    """
    from scipy.special import stdtr  # Student's t CDF, without importing scipy.stats (slow)

    x = _rows(d)
    n = x.shape[1]
    if n < 2:
        nan = np.full(len(x), np.nan)
        return _squeeze(d, nan, nan.copy())
    mean = x.mean(axis=1)
    sd = x.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    t = np.where((sd == 0) & (mean == 0), 0.0, t)
    p = 2.0 * stdtr(n - 1, -np.abs(t))  # = scipy.stats.t.sf(|t|, n - 1)
    return _squeeze(d, t, np.asarray(p, dtype=np.float64))


def wilcoxon(d: Any) -> Any:
    """Wilcoxon signed-rank test on differences *d*: ``(W, p)`` per comparison, from
    :func:`scipy.stats.wilcoxon` (defaults). All-zero differences give ``(0, 1)``; no
    queries give NaN."""
    import warnings

    from scipy import stats as sps

    x = _rows(d)
    stat = np.full(len(x), np.nan)
    p = np.full(len(x), np.nan)
    for i, row in enumerate(x):
        if len(row) == 0:
            continue
        if not np.any(row != 0):
            stat[i], p[i] = 0.0, 1.0
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "sample size too small", ties
            res = sps.wilcoxon(row)
        stat[i], p[i] = float(res.statistic), float(res.pvalue)
    return _squeeze(d, stat, p)


def _tolerance(x: np.ndarray) -> np.ndarray:
    return RTOL * np.abs(x).mean(axis=1) if x.shape[1] else np.zeros(len(x))


def randomization(
    d: Any,
    samples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    *,
    exact: bool | None = None,
    chunk: int | None = None,
    progress: Progress | None = None,
) -> Any:
    """Paired randomisation test: ``(mean difference, p)`` per comparison.

    Args:
        d: per-query differences, ``(n,)`` or ``(P, n)``.
        samples: random sign vectors (ignored by the exact test).
        seed: seed (or generator) of :func:`numpy.random.default_rng`.
        exact: use all ``2**n`` sign vectors; default: when ``2**n <= samples``.
        chunk: elements per chunk of the sign matrix (memory bound).
        progress: called with the number of resamples done after each chunk.
    """
    rng = _rng(seed)
    x = _rows(d)
    n = x.shape[1]
    observed = x.mean(axis=1) if n else np.full(len(x), np.nan)
    if n == 0:
        return _squeeze(d, observed, np.full(len(x), np.nan))
    if exact is None:
        exact = n < 63 and (1 << n) <= samples
    if exact:
        if n > 30:
            raise UsageError(f"an exact randomisation test over {n} queries needs 2**{n} sign vectors")
        draws, total = all_sign_flips(n, chunk), 1 << n
    else:
        draws, total = sign_flips(n, samples, rng, chunk), samples
    means = _resampled_means(x, draws, "sign", progress)
    extreme = np.abs(means) >= (np.abs(observed) - _tolerance(x))[:, None]
    count = extreme.sum(axis=1)
    p = count / total if exact else (count + 1) / (total + 1)
    return _squeeze(d, observed, p.astype(np.float64))


def bootstrap_means(
    x: Any,
    samples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    *,
    chunk: int | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """``(P, samples)`` mean of each row of *x* in each bootstrap resample (drawn as
    :func:`bootstrap_indices` draws them); the basis of :func:`bootstrap` and
    :func:`bootstrap_interval`, exposed so one set of resamples can serve both."""
    rows = _rows(x)
    return _resampled_means(
        rows, bootstrap_indices(rows.shape[1], samples, seed, chunk), "bootstrap", progress
    )


def bootstrap_p(d: Any, means: np.ndarray) -> np.ndarray:
    """Two-sided bootstrap p-values of the mean differences *d* (``(P, n)``) from their
    resampled means (:func:`bootstrap_means`): the share of shifted resampled means
    ``means - mean(d)`` at least as far from 0 as ``mean(d)``, as ``(count + 1) / (samples + 1)``."""
    x = _rows(d)
    observed = x.mean(axis=1)
    shifted = means - observed[:, None]
    count = (np.abs(shifted) >= (np.abs(observed) - _tolerance(x))[:, None]).sum(axis=1)
    return np.asarray((count + 1) / (means.shape[1] + 1), dtype=np.float64)


def percentile_interval(means: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: the alpha/2 and 1 - alpha/2 quantiles of each row of resampled means
    (:func:`numpy.quantile`, linear interpolation)."""
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=1)
    return low, high


def bootstrap(
    d: Any,
    samples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    *,
    chunk: int | None = None,
    progress: Progress | None = None,
) -> Any:
    """Paired bootstrap test of the mean difference: ``(mean difference, p)`` per comparison.

    The differences are shifted to mean 0 and resampled with replacement; ``p = (count + 1) /
    (samples + 1)`` with *count* the resamples whose mean is at least as far from 0 as the
    observed mean difference.
    """
    rng = _rng(seed)
    x = _rows(d)
    if x.shape[1] == 0:
        nan = np.full(len(x), np.nan)
        return _squeeze(d, nan, nan.copy())
    means = bootstrap_means(x, samples, rng, chunk=chunk, progress=progress)
    return _squeeze(d, x.mean(axis=1), bootstrap_p(x, means))


def paired_test(
    x: Any, y: Any, test: str = "ttest", *, samples: int = 10_000, seed: int | None = 0
) -> tuple[float, float]:
    """``(statistic, p)`` of one paired test of per-query scores *x* against *y*."""
    check_seed(seed)
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    if d.ndim != 1:
        raise UsageError("paired_test compares two 1-d score vectors")
    if test == "ttest":
        out = ttest(d)
    elif test == "wilcoxon":
        out = wilcoxon(d)
    elif test == "randomization":
        out = randomization(d, samples, seed)
    elif test == "bootstrap":
        out = bootstrap(d, samples, seed)
    else:
        raise UsageError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    return float(out[0]), float(out[1])


# ---------------------------------------------------------------------- corrections
def adjust(p: Any, method: str = "holm") -> np.ndarray:
    """p-values adjusted for multiple comparisons (NaN entries are left out of the family
    and stay NaN).

    * ``bonferroni``: ``min(1, m·p)``;
    * ``holm``: Holm's step-down: sorted ascending, ``max_{j≤i} min(1, (m - j + 1)·p_(j))``;
    * ``bh``: Benjamini-Hochberg step-up (false discovery rate): sorted ascending,
      ``min_{j≥i} min(1, m·p_(j) / j)``;
    * ``none``: unchanged.

    These are the adjusted values of statsmodels' ``multipletests`` (``bonferroni``,
    ``holm``, ``fdr_bh``).
    """
    if method not in CORRECTIONS:
        raise UsageError(f"unknown correction {method!r}; expected one of {', '.join(CORRECTIONS)}")
    arr = np.asarray(p, dtype=np.float64)
    out = arr.copy()
    keep = ~np.isnan(arr)
    vals = arr[keep]
    m = len(vals)
    if method == "none" or m == 0:
        return out
    if method == "bonferroni":
        adj = np.minimum(1.0, vals * m)
    else:
        order = np.argsort(vals, kind="stable")
        ranked = vals[order]
        i = np.arange(1, m + 1)
        if method == "holm":
            adj_sorted = np.minimum(1.0, np.maximum.accumulate((m - i + 1) * ranked))
        else:  # bh
            adj_sorted = np.minimum(1.0, np.minimum.accumulate((m * ranked / i)[::-1])[::-1])
        adj = np.empty(m)
        adj[order] = adj_sorted
    out[keep] = adj
    return out


# ------------------------------------------------------------------ effect and intervals
def cohens_d(d: Any) -> Any:
    """Cohen's d for paired data (``d_z``): mean difference / standard deviation of the
    differences (``n - 1``); NaN with fewer than 2 queries, ±∞ (or 0) with zero spread."""
    x = _rows(d)
    if x.shape[1] < 2:
        return _squeeze(d, np.full(len(x), np.nan))
    mean = x.mean(axis=1)
    sd = x.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0), np.sign(mean) * np.inf)
    out = np.where((sd == 0) & (mean == 0), 0.0, out)
    return _squeeze(d, out)


def t_interval(values: Any, alpha: float = 0.05) -> Any:
    """``(low, high)`` t-based confidence interval of the mean of each row:
    ``mean ± t_{1-alpha/2, n-1} · sd / √n`` (NaN with fewer than 2 values)."""
    from scipy.special import stdtrit  # = scipy.stats.t.ppf(q, df), as stdtr in ttest

    x = _rows(values)
    n = x.shape[1]
    if n < 2:
        nan = np.full(len(x), np.nan)
        return _squeeze(values, nan, nan.copy())
    mean = x.mean(axis=1)
    half = stdtrit(n - 1, 1 - alpha / 2) * x.std(axis=1, ddof=1) / np.sqrt(n)
    return _squeeze(values, mean - half, mean + half)


def bootstrap_interval(
    values: Any,
    alpha: float = 0.05,
    samples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    *,
    chunk: int | None = None,
    progress: Progress | None = None,
) -> Any:
    """``(low, high)`` bootstrap percentile interval of the mean of each row: the alpha/2 and
    1 - alpha/2 quantiles (:func:`numpy.quantile`, linear interpolation) of the means of
    *samples* resamples drawn as :func:`bootstrap_indices` draws them."""
    rng = _rng(seed)
    x = _rows(values)
    if x.shape[1] == 0:
        nan = np.full(len(x), np.nan)
        return _squeeze(values, nan, nan.copy())
    low, high = percentile_interval(bootstrap_means(x, samples, rng, chunk=chunk, progress=progress), alpha)
    return _squeeze(values, low, high)
