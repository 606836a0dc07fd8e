"""Stability of a measure under topic sampling: swap rates and subset correlations.

Swap rates (:func:`swap_rates`) — the swap method of E. M. Voorhees & C. Buckley, "The effect
of topic set size on retrieval experiment error" (SIGIR 2002). For a topic-set size *c*, each
sample draws two topic sets Q₁ and Q₂ of *c* topics; for every pair of runs, Δ is the
absolute difference of their mean scores on Q₁, and the pair *swaps* when its order on Q₂ is
the reverse of its order on Q₁ (``d₁ · d₂ < 0``: a tie on either set is no swap). Pairs are
binned by Δ (bins of width *bins*, bin *k* holding ``k·width ≤ Δ < (k+1)·width``) and the
swap rate of a bin is swaps / pairs over all samples. Two ways of drawing Q₁ and Q₂:

* ``replacement=False`` (Voorhees & Buckley 2002): Q₁ and Q₂ are disjoint, drawn together
  without replacement from the *n* topics, so ``c ≤ n/2``;
* ``replacement=True`` (the variant M. Sanderson & J. Zobel, "Information retrieval system
  evaluation: effort, sensitivity, and reliability", SIGIR 2005, use to reach larger sets):
  Q₁ and Q₂ are drawn independently, each with replacement from the *n* topics, so a topic
  can occur in both and more than once, and ``c ≤ n``.

Subset stability (:func:`topic_subset_stability`): for each size *c*, random subsets of *c*
topics drawn without replacement; the correlation (:func:`rankeval.meta.correlation.correlation`,
``decreasing=True``) between the ranking of the runs by their mean on all topics (the
reference, *x*) and by their mean on the subset, summarised by its mean, standard deviation
and 5 % / 95 % quantiles over the samples (as in Voorhees & Buckley's and Sakai's plots of τ
against topic-set size).

Random draws (reproducible with *seed*): :func:`swap_draws` and :func:`subset_draws` give
them, and both functions take them back through ``draws=`` (so a test or a study can fix the
subsets). One ``np.random.default_rng(seed)`` serves the sizes in the order given; without
replacement a sample is the first ``2c`` (or ``c``) entries of ``rng.permuted`` of
``arange(n)`` (one row per sample), with replacement ``rng.integers(0, n, size=(samples, 2, c))``.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.options`,
:mod:`rankeval.meta.values`, :mod:`rankeval.meta.correlation`, :mod:`rankeval.meta.power` (its
figure helper); pandas, matplotlib and :mod:`rankeval.comparison.plots` lazily.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rankeval.errors import UsageError
from rankeval.meta.correlation import METHODS, correlation
from rankeval.meta.power import _plot
from rankeval.meta.values import Values, per_query
from rankeval.options import check_choice, check_samples, check_seed

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "plot_stability",
    "plot_swap_rates",
    "subset_draws",
    "swap_draws",
    "swap_rates",
    "topic_subset_stability",
]

#: elements of one chunk of drawn values (8 MB of float64)
_CHUNK = 1 << 20
#: the default number of topic-set sizes
_SIZES = 10
_QUANTILES = (0.05, 0.95)


def _check_sizes(sizes: Sequence[int] | None, largest: int, what: str) -> list[int]:
    """*sizes* checked against 1..*largest* (default: about :data:`_SIZES` evenly spaced)."""
    if largest < 1:
        raise UsageError(f"{what} needs more topics (the largest topic-set size would be {largest})")
    if sizes is None:
        step = max(1, largest // _SIZES)
        return list(range(step, largest + 1, step))
    out = list(sizes)
    for c in out:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= largest:
            raise UsageError(f"topic-set size {c!r} out of range: {what} takes sizes from 1 to {largest}")
    if not out:
        raise UsageError("no topic-set size given")
    return [int(c) for c in out]


def _draw(rng: np.random.Generator, n: int, samples: int, sets: int, c: int, replacement: bool) -> np.ndarray:
    """``(samples, sets, c)`` topic indices."""
    if replacement:
        return rng.integers(0, n, size=(samples, sets, c), dtype=np.int64)
    rows = rng.permuted(np.broadcast_to(np.arange(n, dtype=np.int64), (samples, n)), axis=1)
    return rows[:, : sets * c].reshape(samples, sets, c)


def swap_draws(
    n: int,
    sizes: Sequence[int] | None = None,
    samples: int = 1000,
    *,
    replacement: bool = False,
    seed: int | None = 0,
) -> dict[int, np.ndarray]:
    """The topic sets :func:`swap_rates` draws for *n* topics: size *c* → ``(samples, 2, c)``
    topic indices (``[:, 0]`` is Q₁, ``[:, 1]`` Q₂).

    Raises:
        UsageError: a size out of range (``c ≤ n/2`` without replacement, ``c ≤ n`` with),
            a bad *samples* or *seed*.
    """
    check_samples(samples)
    rng = np.random.default_rng(check_seed(seed))
    largest = n if replacement else n // 2
    return {
        c: _draw(rng, n, samples, 2, c, replacement) for c in _check_sizes(sizes, largest, "the swap method")
    }


def subset_draws(
    n: int, sizes: Sequence[int] | None = None, samples: int = 1000, *, seed: int | None = 0
) -> dict[int, np.ndarray]:
    """The topic subsets :func:`topic_subset_stability` draws for *n* topics: size *c* →
    ``(samples, c)`` topic indices, without replacement.

    Raises:
        UsageError: a size outside 1..n, a bad *samples* or *seed*.
    """
    check_samples(samples)
    rng = np.random.default_rng(check_seed(seed))
    return {c: _draw(rng, n, samples, 1, c, False)[:, 0] for c in _check_sizes(sizes, n, "subset stability")}


def _check_draws(draws: Mapping[int, np.ndarray], n: int, sets: int) -> dict[int, np.ndarray]:
    out = {}
    for c, d in draws.items():
        arr = np.asarray(d)
        shape = (sets, int(c)) if sets > 1 else (int(c),)
        if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape or not np.issubdtype(arr.dtype, np.integer):
            raise UsageError(
                f"draws of size {c}: expected integer topic indices of shape (samples, {', '.join(map(str, shape))}), got {arr.dtype} {arr.shape}"
            )
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise UsageError(f"draws of size {c}: topic indices must be from 0 to {n - 1}")
        out[int(c)] = arr
    return out


def swap_rates(
    values: Values,
    measure: str | None = None,
    *,
    sizes: Sequence[int] | None = None,
    bins: float = 0.01,
    samples: int = 1000,
    replacement: bool = False,
    seed: int | None = 0,
    draws: Mapping[int, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Swap rates against topic-set size and Δ bin (the module docstring gives the method,
    both variants and their sources).

    Args:
        values: Per-query values (:func:`rankeval.meta.values.per_query`'s forms).
        measure: The measure, when *values* is a long frame of several.
        sizes: Topic-set sizes *c* (default: about ten sizes up to n/2, or up to n with
            *replacement*).
        bins: Width of a Δ bin, in the measure's units.
        samples: Draws of (Q₁, Q₂) per size.
        replacement: Draw Q₁, Q₂ independently with replacement (Sanderson & Zobel) instead of
            disjoint without (Voorhees & Buckley).
        seed: Seed of :func:`numpy.random.default_rng`.
        draws: Explicit topic sets, size → ``(samples, 2, c)`` indices into the matrix's
            (sorted) queries, as :func:`swap_draws` gives them; *sizes*, *samples*,
            *replacement* and *seed* are then not used.

    Returns:
        A frame with one row per size and non-empty bin, sorted by both: ``size``, ``bin``
        (the lower edge of the Δ bin), ``pairs`` (pair comparisons that fell in the bin over
        all samples), ``swaps`` and ``rate`` (= swaps / pairs).

    Raises:
        UsageError: a bad *bins*, size, *samples*, *seed* or draw, fewer than two runs, or
            what :func:`~rankeval.meta.values.per_query` raises.
    """
    import pandas as pd

    if isinstance(bins, bool) or not isinstance(bins, (int, float)) or not 0 < bins < math.inf:
        raise UsageError(f"bins must be a positive bin width, not {bins!r}")
    mat = per_query(values, measure)
    n, m = mat.values.shape
    if m < 2:
        raise UsageError(f"swap rates need at least two runs, got {m}")
    sets = (
        _check_draws(draws, n, 2)
        if draws is not None
        else swap_draws(n, sizes, samples, replacement=replacement, seed=seed)
    )
    ia, ib = np.triu_indices(m, k=1)
    rows = []
    for c, d in sets.items():
        pairs, swaps = np.zeros(0, np.int64), np.zeros(0, np.int64)
        step = max(1, _CHUNK // (2 * c * m))
        for start in range(0, len(d), step):
            means = mat.values[d[start : start + step]].mean(axis=2)  # (rows, 2, m)
            diff = means[..., ia] - means[..., ib]  # (rows, 2, P)
            k = np.floor(np.abs(diff[:, 0]) / bins + 1e-9).astype(np.int64).ravel()
            swap = (diff[:, 0] * diff[:, 1] < 0).ravel()
            pairs = _add(pairs, np.bincount(k))
            swaps = _add(swaps, np.bincount(k, weights=swap).astype(np.int64))
        for b in np.flatnonzero(pairs):
            rows.append((c, round(b * bins, 12), int(pairs[b]), int(swaps[b]), swaps[b] / pairs[b]))
    frame = pd.DataFrame(rows, columns=["size", "bin", "pairs", "swaps", "rate"])
    return frame.sort_values(["size", "bin"], ignore_index=True)


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sum of two count vectors of different lengths."""
    out = np.zeros(max(len(a), len(b)), np.int64)
    out[: len(a)] += a
    out[: len(b)] += b
    return out


def topic_subset_stability(
    values: Values,
    measure: str | None = None,
    *,
    sizes: Sequence[int] | None = None,
    samples: int = 1000,
    method: str = "tau_b",
    seed: int | None = 0,
    draws: Mapping[int, np.ndarray] | None = None,
) -> pd.DataFrame:
    """The correlation between the ranking of the runs on all topics and on random topic
    subsets, against the subset size (the module docstring gives the method).

    Args:
        values: Per-query values (:func:`rankeval.meta.values.per_query`'s forms).
        measure: The measure, when *values* is a long frame of several.
        sizes: Subset sizes (default: about ten sizes up to n).
        samples: Subsets per size.
        method: A method of :func:`rankeval.meta.correlation.correlation` (``tau_b``,
            ``tau_ap_b``, ...).
        seed: Seed of :func:`numpy.random.default_rng`.
        draws: Explicit subsets, size → ``(samples, c)`` indices into the matrix's (sorted)
            queries, as :func:`subset_draws` gives them; *sizes*, *samples* and *seed* are
            then not used.

    Returns:
        A frame with one row per size: ``size``, ``samples``, ``mean``, ``std`` (ddof 0),
        ``q05`` and ``q95`` of the correlation over the samples.

    Raises:
        UsageError: an unknown *method*, ties in the scores for a method that refuses them (as
            :func:`~rankeval.meta.correlation.correlation` says), a bad size, *samples*,
            *seed* or draw, fewer than two runs, or what
            :func:`~rankeval.meta.values.per_query` raises.
    """
    import pandas as pd

    check_choice("correlation method", method, METHODS)
    mat = per_query(values, measure)
    n, m = mat.values.shape
    if m < 2:
        raise UsageError(f"subset stability needs at least two runs, got {m}")
    subsets = _check_draws(draws, n, 1) if draws is not None else subset_draws(n, sizes, samples, seed=seed)
    full = mat.means()
    rows = []
    for c, d in subsets.items():
        r = np.array([correlation(full, mat.values[s].mean(axis=0), method, decreasing=True) for s in d])
        q05, q95 = np.quantile(r, _QUANTILES) if len(r) else (math.nan, math.nan)
        rows.append((c, len(r), r.mean() if len(r) else math.nan, r.std() if len(r) else math.nan, q05, q95))
    return pd.DataFrame(rows, columns=["size", "samples", "mean", "std", "q05", "q95"])


def plot_swap_rates(rates: pd.DataFrame, path: str | Path, fmt: str | None = None) -> Path:
    """Swap rate (y) against Δ (x, the lower edge of the bin), one line per topic-set size,
    as Voorhees & Buckley's figures; *rates* is :func:`swap_rates`' frame.

    Raises:
        UsageError: an empty frame, or a bad *path* suffix / *fmt*.
    """
    if rates.empty:
        raise UsageError("no swap rate to plot")

    def draw(ax: Axes) -> None:
        for c, part in rates.groupby("size", sort=True):
            ax.plot(part["bin"], part["rate"], marker=".", label=f"c = {c}")
        ax.set_xlabel("Δ (difference in mean score on the first topic set)")
        ax.set_ylabel("swap rate")
        ax.legend(loc="upper right", ncols=2)

    return _plot(path, fmt, draw)


def plot_stability(
    stability: pd.DataFrame | Mapping[str, pd.DataFrame], path: str | Path, fmt: str | None = None
) -> Path:
    """Mean correlation with the full-set ranking (y) against the subset size (x), a band
    from the 5 % to the 95 % quantile; *stability* is :func:`topic_subset_stability`'s frame,
    or a mapping measure → frame for one line per measure.

    Raises:
        UsageError: nothing to plot, or a bad *path* suffix / *fmt*.
    """
    import pandas as pd

    frames = {"": stability} if isinstance(stability, pd.DataFrame) else dict(stability)
    if not frames or all(f.empty for f in frames.values()):
        raise UsageError("no stability result to plot")

    def draw(ax: Axes) -> None:
        for name, f in frames.items():
            (line,) = ax.plot(f["size"], f["mean"], marker=".", label=name or None)
            ax.fill_between(f["size"], f["q05"], f["q95"], color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_xlabel("topics in the subset")
        ax.set_ylabel("correlation with all topics")
        if any(frames):
            ax.legend(loc="lower right")

    return _plot(path, fmt, draw)
