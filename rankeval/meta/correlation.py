"""Correlation between two rankings of systems.

Kendall's τ and its tie variants follow Kendall (1948) as ircor computes them; τ_AP follows
Yilmaz, Aslam & Robertson, "A new rank correlation coefficient for information retrieval"
(SIGIR 2008), and its tie variants τ_AP,a and τ_AP,b Urbano & Marrero, "The treatment of ties
in AP correlation" (ICTIR 2017); the values equal those of Urbano's R package ircor. RBO is
rank-biased overlap, Webber, Moffat & Zobel, "A similarity measure for indefinite rankings"
(ACM TOIS 28(4), 2010).

Every coefficient works on all pairs of systems at once (an n-by-n comparison matrix: n is a
number of systems, a few hundred at most).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from rankeval.errors import UsageError

Scores: TypeAlias = Mapping[str, float] | Sequence[float] | npt.NDArray[np.floating]
"""Scores of systems: a mapping system -> score, or a sequence of scores (one per system)."""

Ranking: TypeAlias = Mapping[Any, float] | Sequence[float] | npt.NDArray[np.floating]
"""Scores of the items of a ranking: a mapping item -> score, or a sequence of scores."""

Method = Literal["tau", "tau_a", "tau_b", "tau_ap", "tau_ap_a", "tau_ap_b", "spearman", "pearson", "rbo"]
METHODS: tuple[str, ...] = (
    "tau",
    "tau_a",
    "tau_b",
    "tau_ap",
    "tau_ap_a",
    "tau_ap_b",
    "spearman",
    "pearson",
    "rbo",
)
"""The names :func:`correlation` accepts."""

_Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RBO:
    """Rank-biased overlap of two rankings (Webber, Moffat & Zobel 2010).

    Attributes:
        min: RBO_min, the lower bound: no overlap beyond the seen items (eq. 11).
        residual: RBO_res, what the unseen items could add at most (§4.3); ``min +
            residual`` is the upper bound RBO_max.
        ext: RBO_ext, the point estimate extrapolated from the seen items (eq. 32).
    """

    min: float
    residual: float
    ext: float


def correlation(
    x: Scores,
    y: Scores,
    method: Method | str = "tau_b",
    *,
    decreasing: bool = True,
    p: float = 0.9,
) -> float:
    """The correlation between the rankings of systems by *x* and by *y*.

    *x* is the reference where the coefficient is asymmetric (``tau_a``, ``tau_ap``,
    ``tau_ap_a``: *x* holds the true scores, *y* the estimated ones, as ircor's
    ``tauAP(x, y)``).

    Methods (n systems, C concordant and D discordant pairs, T_x and T_y pairs tied in x and
    in y, N = n(n-1)/2):

    - ``tau``: Kendall's τ = (C - D)/N; no ties in x or y.
    - ``tau_a``: the same formula, ties allowed in y only (x is the true ranking).
    - ``tau_b``: (C - D)/√((N - T_x)(N - T_y)), ties allowed in both; it equals
      ``scipy.stats.kendalltau(variant="b")`` (not variant ``"c"``, Stuart's τ_c).
    - ``tau_ap``: τ_AP = 2/(n-1) Σ_{i=2..n} C(i)/(i-1) - 1, items in the order of y and C(i)
      the items above item i in y that are also above it in x (Yilmaz et al. 2008);
      no ties.
    - ``tau_ap_a``: τ_AP,a, the expectation of τ_AP over the orderings of the tie groups of
      y; ties allowed in y only (Urbano & Marrero 2017).
    - ``tau_ap_b``: τ_AP,b, the mean of the two asymmetric coefficients in which an item's
      C(i) counts the items above its tie group and is divided by the number of them (Urbano
      & Marrero 2017); ties allowed in both.
    - ``spearman``: Pearson's r of the average ranks (``scipy.stats.spearmanr``).
    - ``pearson``: Pearson's r of the scores.
    - ``rbo``: RBO_ext with persistence *p* (:func:`rbo`; refuses ties).

    A coefficient that is undefined (a constant ranking for ``tau_b``, ``spearman``,
    ``pearson``, ``tau_ap_b``) is NaN, as in scipy and ircor.

    Args:
        x: Reference scores: a mapping system -> score or a sequence of scores.
        y: Scores of the same systems (the same keys, or a sequence of the same length).
        method: One of :data:`METHODS`.
        decreasing: A higher score ranks a system higher (ircor's ``decreasing``).
        p: RBO's persistence, 0 < p < 1 (``rbo`` only).

    Returns:
        The coefficient, in [-1, 1] ([0, 1] for ``rbo``).

    Raises:
        UsageError: an unknown method; keys that differ, lengths that differ, fewer than two
            systems or a score that is not finite; ties in a variant that does not allow them
            (the message names the variant that does).
    """
    if method not in METHODS:
        raise UsageError(f"unknown correlation method {method!r}: expected one of {', '.join(METHODS)}")
    a, b = _paired(x, y)
    if method == "pearson":
        return _pearson(a, b)
    if method == "spearman":
        return _pearson(_average_ranks(a), _average_ranks(b))
    if method == "rbo":
        return rbo(a, b, p, decreasing=decreasing).ext
    if decreasing:  # rank 1 = the smallest value from here on
        a, b = -a, -b
    _check_ties(a, b, method)
    if method in ("tau", "tau_a", "tau_b"):
        return _tau(a, b, tie_corrected=method == "tau_b")
    if method in ("tau_ap", "tau_ap_a"):
        return _tau_ap_a(a, b)
    return (_tau_ap_b_ties(a, b) + _tau_ap_b_ties(b, a)) / 2


def rbo(
    x: Ranking,
    y: Ranking,
    p: float = 0.9,
    *,
    depth: int | None = None,
    decreasing: bool = True,
) -> RBO:
    """Rank-biased overlap of the rankings by *x* and by *y* (Webber, Moffat & Zobel 2010).

    The items are the keys of the mappings (or the positions of the sequences); they are
    ranked by score. The rankings may have different lengths and different items (the
    paper's §4.3, "uneven lengths": S the shorter ranking, of length s, L the longer, of
    length l, X_d the overlap of S's first min(d, s) items and L's first d items)::

        RBO_min = (1-p)/p (Σ_{d=1..l} (X_d - X_l) p^d/d - X_l ln(1-p))
        RBO_res = p^s + p^l - p^f - (1-p)/p (s Σ_{d=s+1..f} p^d/d + l Σ_{d=l+1..f} p^d/d
                  + X_l (ln(1/(1-p)) - Σ_{d=1..f} p^d/d)),  f = l + s - X_l
        RBO_ext = (1-p)/p (Σ_{d=1..l} X_d p^d/d + Σ_{d=s+1..l} X_s (d-s)/(s d) p^d)
                  + ((X_l - X_s)/l + X_s/s) p^l

    Ties are refused (the paper's tie-aware variant is not implemented): break them
    first, or compare the rankings with ``tau_ap_b``.

    Args:
        x: Scores of the items of the first ranking (a mapping item -> score, or a sequence).
        y: Scores of the items of the second ranking.
        p: Persistence, 0 < p < 1 (the expected depth of a reader is 1/(1-p)).
        depth: Evaluate the top *depth* items of each ranking only (all of them if None).
        decreasing: A higher score ranks an item higher.

    Returns:
        :class:`RBO` with ``min``, ``residual`` and ``ext``.

    Raises:
        UsageError: *p* outside (0, 1), *depth* < 1, an empty ranking, a score that is not
            finite, or ties in x or y.
    """
    if not 0 < p < 1:
        raise UsageError(f"rbo: p must be between 0 and 1 (exclusive), got {p}")
    if depth is not None and depth < 1:
        raise UsageError(f"rbo: depth must be at least 1, got {depth}")
    first = _ranked_items(x, "x", decreasing)[:depth]
    second = _ranked_items(y, "y", decreasing)[:depth]
    short, long_ = sorted((first, second), key=len)
    s, l = len(short), len(long_)  # noqa: E741 (the paper's names)
    # an item of both rankings is in the overlap from the depth where the later of its two
    # positions is reached (in S it is seen by depth s at the latest)
    where = {item: d for d, item in enumerate(long_, start=1)}
    joint = [max(d, where[item]) for d, item in enumerate(short, start=1) if item in where]
    overlap = np.cumsum(np.bincount(np.asarray(joint, dtype=np.int64), minlength=l + 1)[1:])
    d = np.arange(1, l + 1, dtype=np.float64)
    w = p**d / d
    x_s, x_l = float(overlap[s - 1]), float(overlap[l - 1])
    scale = (1 - p) / p
    low = scale * (float(np.sum((overlap - x_l) * w)) - x_l * math.log1p(-p))
    ext = (
        scale * (float(np.sum(overlap * w)) + x_s / s * float(np.sum((d[s:] - s) * w[s:])))
        + ((x_l - x_s) / l + x_s / s) * p**l
    )
    f = int(l + s - x_l)
    df = np.arange(1, f + 1, dtype=np.float64)
    wf = p**df / df
    residual = (
        p**s
        + p**l
        - p**f
        - scale
        * (s * float(wf[s:f].sum()) + l * float(wf[l:f].sum()) + x_l * (-math.log1p(-p) - float(wf.sum())))
    )
    return RBO(min=low, residual=residual, ext=ext)


def _as_array(scores: Ranking, name: str) -> _Array:
    values = np.asarray(list(scores.values()) if isinstance(scores, Mapping) else scores, dtype=np.float64)
    if values.ndim != 1:
        raise UsageError(f"{name} must be one score per system, got an array of shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{name} has a score that is not a finite number")
    return values


def _paired(x: Scores, y: Scores) -> tuple[_Array, _Array]:
    """The scores of x and y as two arrays in the same system order."""
    if isinstance(x, Mapping) != isinstance(y, Mapping):
        raise UsageError("x and y must both be mappings system -> score or both sequences")
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        if x.keys() != y.keys():
            only = sorted(map(str, x.keys() - y.keys()))
            also = sorted(map(str, y.keys() - x.keys()))
            raise UsageError(
                f"x and y must score the same systems: only in x: {', '.join(only) or '-'}; "
                f"only in y: {', '.join(also) or '-'}"
            )
        y = {key: y[key] for key in x}
    a, b = _as_array(x, "x"), _as_array(y, "y")
    if len(a) != len(b):
        raise UsageError(f"x and y must have the same length, got {len(a)} and {len(b)}")
    if len(a) < 2:
        raise UsageError(f"a correlation needs at least 2 systems, got {len(a)}")
    return a, b


def _has_ties(values: _Array) -> bool:
    return len(np.unique(values)) < len(values)


_NO_TIES_IN_X = {"tau": "tau_b", "tau_a": "tau_b", "tau_ap": "tau_ap_b", "tau_ap_a": "tau_ap_b"}
_NO_TIES_IN_Y = {"tau": "tau_a or tau_b", "tau_ap": "tau_ap_a or tau_ap_b"}


def _check_ties(a: _Array, b: _Array, method: str) -> None:
    if method in _NO_TIES_IN_X and _has_ties(a):
        raise UsageError(f"ties in x: {method} needs a strict reference ranking; use {_NO_TIES_IN_X[method]}")
    if method in _NO_TIES_IN_Y and _has_ties(b):
        raise UsageError(f"ties in y: {method} allows no ties; use {_NO_TIES_IN_Y[method]}")


def _tau(a: _Array, b: _Array, *, tie_corrected: bool) -> float:
    upper = np.triu_indices(len(a), k=1)
    sa = np.sign(a[:, None] - a[None, :])[upper]
    sb = np.sign(b[:, None] - b[None, :])[upper]
    pairs = len(sa)
    numerator = float(np.sum(sa * sb))
    if not tie_corrected:
        return numerator / pairs
    # one square root of the (exact, integer) product: sqrt(n) * sqrt(n) may miss n by an ulp
    denominator = math.sqrt(float(np.count_nonzero(sa) * np.count_nonzero(sb)))
    return numerator / denominator if denominator else math.nan


def _above(a: _Array, b: _Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each item i: the items strictly above i's tie group in b that are strictly above i
    in a (concordant pairs), and p_i = 1 + the number of items strictly above i in b (the
    first position of i's tie group)."""
    above_b = b[None, :] < b[:, None]  # [i, j]: j above i in b
    above_a = a[None, :] < a[:, None]
    return np.sum(above_b & above_a, axis=1), 1 + np.sum(above_b, axis=1)


def _tau_ap_a(a: _Array, b: _Array) -> float:
    """τ_AP,a (τ_AP when b has no ties): b's tie groups ordered at random, in expectation.

    An item at group position p with group size t sits at p + k - 1 (k = 1..t) with chance
    1/t: term I averages C(i)/(p + k - 2) over k; term II is the expected share of concordant
    pairs inside the group, (1/2t) Σ_{k=1..t-1} k/(p + k - 1). Both sums are differences of
    harmonic numbers H_m = Σ_{j=1..m} 1/j.
    """
    n = len(a)
    concordant, first = _above(a, b)
    size = np.sum(b[None, :] == b[:, None], axis=1)
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, n + 1))))
    last = first + size - 2  # p + t - 2
    inner = first != 1
    term1 = concordant[inner] * (harmonic[last[inner]] - harmonic[first[inner] - 2]) / size[inner]
    term2 = ((size - 1) - (first - 1) * (harmonic[last] - harmonic[first - 1])) / (2 * size)
    return 2 / (n - 1) * (float(term1.sum()) + float(term2.sum())) - 1


def _tau_ap_b_ties(a: _Array, b: _Array) -> float:
    """The asymmetric half of τ_AP,b: items ordered by b, ties in a are not concordant."""
    concordant, first = _above(a, b)
    inner = first != 1
    if not inner.any():
        return math.nan
    return 2 / int(inner.sum()) * float(np.sum(concordant[inner] / (first[inner] - 1))) - 1


def _average_ranks(values: _Array) -> _Array:
    from scipy.stats import rankdata

    return np.asarray(rankdata(values, method="average"), dtype=np.float64)


def _pearson(a: _Array, b: _Array) -> float:
    da, db = a - a.mean(), b - b.mean()
    denominator = math.sqrt(float(np.dot(da, da)) * float(np.dot(db, db)))
    return float(np.dot(da, db)) / denominator if denominator else math.nan


def _ranked_items(scores: Ranking, name: str, decreasing: bool) -> list[Hashable]:
    items: list[Hashable] = list(scores.keys()) if isinstance(scores, Mapping) else list(range(len(scores)))
    values = _as_array(scores, name)
    if len(values) == 0:
        raise UsageError(f"rbo: {name} is an empty ranking")
    if _has_ties(values):
        raise UsageError(f"ties in {name}: rbo needs strict rankings; break the ties or use tau_ap_b")
    order = np.argsort(-values if decreasing else values, kind="stable")
    return [items[i] for i in order]
