"""Segment arithmetic for measure kernels: flat arrays cut into per-query segments.

A measure kernel sees every query at once (see :class:`rankeval.RankedLists`): per-row
arrays whose rows are grouped into contiguous *segments*, one per query (or per sub-query,
per individual, ...), described by a *segment index* array ``seg`` that gives each row its
segment. These functions are the few operations kernels keep needing on such arrays; the
core and every built-in plugin use them, and so can any plugin.

Unless said otherwise, ``seg`` is **grouped**: the rows of one segment are contiguous (a
segment is a run of equal ``seg`` values), the segments in any order. Nothing loops in
Python over segments or rows.

* :func:`segment_offsets`, :func:`segment_blocks` — where the segments are;
* :func:`segment_position` — each row's 0-based position within its segment;
* :func:`segment_cumsum`, :func:`segment_exclusive_sum` — running sums within segments;
* :func:`segment_grid` — per-row values scattered into a (segment x position) array, for
  row-wise numpy operations (products, maxima) within segments;
* :func:`safe_divide` — ratios that are 0 where the denominator is not positive;
* :func:`ordered_sum`, :func:`ordered_mean` — summaries over queries summed left to right, as
  trec_eval sums them (so a mean prints the same digits as trec_eval's).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ordered_mean",
    "ordered_sum",
    "safe_divide",
    "segment_blocks",
    "segment_cumsum",
    "segment_exclusive_sum",
    "segment_grid",
    "segment_offsets",
    "segment_position",
]


def _run_starts(seg: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal *seg* values (*seg* not empty)."""
    return np.concatenate(([0], np.flatnonzero(seg[1:] != seg[:-1]) + 1))


def segment_offsets(index: np.ndarray, n: int) -> np.ndarray:
    """Offsets of the segments of a **sorted** segment-index array.

    Args:
        index: segment index of each row, ascending, each in ``0..n-1``.
        n: number of segments (some may be empty).

    Returns:
        ``(n + 1,)`` int64: segment ``s`` is ``index[out[s]:out[s + 1]]``.
    """
    out = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(index, minlength=n), out=out[1:])
    return out


def segment_blocks(seg: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each segment's block of rows (start 0 for an empty segment).

    Args:
        seg: grouped segment index of each row, each in ``0..n-1`` (blocks in any order).
        n: number of segments.

    Returns:
        ``(starts, counts)``, each ``(n,)`` int64.
    """
    starts = np.zeros(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    if len(seg):
        first = _run_starts(seg)
        starts[seg[first]] = first
        counts[seg[first]] = np.diff(np.concatenate((first, [len(seg)])))
    return starts, counts


def segment_position(seg: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal *seg* values.

    ``segment_position([4, 4, 4, 1, 1, 7]) == [0, 1, 2, 0, 1, 0]``: a row's rank when the rows
    of each segment are in rank order, or its index among the selected rows of its query.
    """
    n = len(seg)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = _run_starts(seg)
    pos: np.ndarray = np.arange(n) - np.repeat(first, np.diff(np.concatenate((first, [n]))))
    return pos


def segment_cumsum(seg: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Inclusive running sum of *values* (float64) within each run of equal *seg* values.

    Computed as one global cumulative sum minus the sum before each segment (fast, no
    padding), so for non-integer values the rounding error is relative to the global total;
    use :func:`segment_exclusive_sum` where each segment must be summed on its own.
    """
    total = np.cumsum(values, dtype=np.float64)
    if len(seg) == 0:
        return total
    first = _run_starts(seg)
    before = np.concatenate(([0.0], total))[first]
    out: np.ndarray = total - np.repeat(before, np.diff(np.concatenate((first, [len(seg)]))))
    return out


def segment_grid(
    seg: np.ndarray, pos: np.ndarray, values: np.ndarray, num_segments: int, fill: float = 0.0
) -> np.ndarray:
    """Scatter per-row *values* into a ``(num_segments, max(pos) + 1)`` float64 array.

    Row ``i`` goes to ``out[seg[i], pos[i]]``; cells no row fills hold *fill*. Row-wise numpy
    operations on the result (``cumprod``, ``max``, ``sum(axis=1)``) work within segments.
    *seg* need not be grouped here.
    """
    width = int(pos.max()) + 1 if len(pos) else 1
    out = np.full((num_segments, width), fill, dtype=np.float64)
    out[seg, pos] = values
    return out


def segment_exclusive_sum(seg: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sum of the *values* before each row within its run of equal *seg* values (0 for the
    first row of a segment), float64.

    Each segment is summed on its own, left to right, so the result is exactly the plain
    per-segment loop's (no global cumulative sum minus a base: no rounding across segments,
    and no ``inf - inf = NaN`` after a huge value in an earlier segment). It pads the
    segments to the longest one (memory: segments x longest segment).
    """
    if len(seg) == 0:
        return np.zeros(0)
    run = np.cumsum(np.concatenate(([False], seg[1:] != seg[:-1])))  # 0, 1, ... per segment
    pos = segment_position(seg)
    grid = segment_grid(run, pos, values, int(run[-1]) + 1)
    # shifted rather than cumsum - grid: exact, and no inf - inf = NaN for huge values
    before = np.zeros_like(grid)
    np.cumsum(grid[:, :-1], axis=1, out=before[:, 1:])
    out: np.ndarray = before[run, pos]
    return out


def safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` element-wise in float64 (broadcast), 0 where *den* is not > 0 (0, negative
    or NaN) — e.g. a recall of 0 for a query without relevant documents."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out: np.ndarray = np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)
    return out


def ordered_sum(values: np.ndarray) -> float:
    """The sum of *values* in float64, added one after the other from the first, as trec_eval
    (a C loop) adds per-query values; numpy's ``sum`` adds pairwise, which can differ in the
    last bit and so, for a mean that falls half-way, in the 4th printed decimal."""
    values = np.asarray(values, dtype=np.float64)
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def ordered_mean(values: np.ndarray) -> float:
    """:func:`ordered_sum` divided by the number of values (NaN for none)."""
    return ordered_sum(values) / len(values) if len(values) else float("nan")
