"""Tie-aware expected values (``--ties expected``) of the classic measures, exact.

McSherry & Najork, *Computing information retrieval performance measures efficiently in the
presence of tied scores*, ECIR 2008: when the rows of a query with equal scores (a tied
group, :class:`rankeval.ranking.ranked_lists.Ties`) are put in a uniformly random order,
every row of a group is equally likely at each of the group's ranks, and the relevant rows
of a group fill its ranks like a draw without replacement. Each function here gives, per
row or per query, the mean over those orders in closed form (no sampling, no loop over
queries); the measures' ``expected`` methods are sums of them. With no ties (groups of one),
each reduces to the value at the row's own rank.

Notation: a group starts at 0-based rank ``s`` and holds ``n`` rows, ``r`` of them relevant;
a cutoff ``k`` keeps ranks ``< k``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rankeval.segments import segment_cumsum

if TYPE_CHECKING:
    from rankeval import RankedLists

__all__ = [
    "expected_bpref_terms",
    "expected_first_reciprocal",
    "expected_precisions",
    "mean_discount",
    "none_in_top",
    "per_group",
    "top_share",
]


def per_group(data: RankedLists, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``(G,)`` how many of *rows* (or the sum of their *weights*) fall in each tied group."""
    return np.bincount(data.ties.group[rows], weights=weights, minlength=data.ties.num_groups).astype(np.float64)


def _cut_of(data: RankedLists, k: int | np.ndarray | None) -> np.ndarray:
    """``(G,)`` the cutoff of each group's query (``inf``: none); *k* is one cutoff or one
    per query."""
    ties = data.ties
    if k is None:
        return np.full(ties.num_groups, np.inf)
    if isinstance(k, np.ndarray):
        per_query: np.ndarray = k.astype(np.float64)[ties.query]
        return per_query
    return np.full(ties.num_groups, float(k))


def _ranks_in_cut(data: RankedLists, k: int | np.ndarray | None) -> np.ndarray:
    """``(G,)`` how many of each group's ranks lie within the cutoff: ``clip(k - s, 0, n)``."""
    ties = data.ties
    inside: np.ndarray = np.clip(_cut_of(data, k) - ties.first, 0, ties.size)
    return inside


def top_share(data: RankedLists, rows: np.ndarray, k: int | np.ndarray | None) -> np.ndarray:
    """Per row of *rows*: the probability that it ranks within the top *k* (one cutoff, or
    one per query), ``clip(k - s, 0, n) / n`` over its group."""
    ties = data.ties
    share = _ranks_in_cut(data, k) / ties.size
    out: np.ndarray = share[ties.group[rows]]
    return out


def mean_discount(data: RankedLists, rows: np.ndarray, k: int | None) -> np.ndarray:
    """Per row of *rows*: the mean of ``1 / log2(rank + 2)`` (0 at ranks ``>= k``) over the
    ranks of its group, each equally likely."""
    ties = data.ties
    if len(rows) == 0:
        return np.zeros(0)
    g = ties.group[rows]
    first, size = ties.first[g], ties.size[g]
    top = int((first + size).max())
    table = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(top) + 2.0))))
    end = first + size if k is None else np.minimum(first + size, k)
    begin = first if k is None else np.minimum(first, k)
    out: np.ndarray = (table[end] - table[begin]) / size
    return out


def _log_choose(n: np.ndarray, r: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln  # (not at import: the plugin loads in every command)

    out: np.ndarray = gammaln(n + 1.0) - gammaln(r + 1.0) - gammaln(n - r + 1.0)
    return out


def none_in_top(data: RankedLists, relevant: np.ndarray, k: int) -> np.ndarray:
    """``(Q,)`` the probability that no relevant row ranks within the top *k*, from
    ``(G,)`` counts of *relevant* rows per group: 0 if a group wholly within the cutoff has
    one; else, for the group the cutoff cuts (``m = k - s`` of its ``n`` ranks inside),
    ``C(n - r, m) / C(n, m)``."""
    ties = data.ties
    inside = _ranks_in_cut(data, k)
    n, r = ties.size.astype(np.float64), relevant
    # P(none of the r relevant rows among the m ranks of the group within the cut)
    p = np.ones(ties.num_groups)
    part = (inside > 0) & (r > 0)
    m = inside[part]
    ok = m <= n[part] - r[part]
    p_part = np.zeros(len(m))
    p_part[ok] = np.exp(_log_choose(n[part][ok] - r[part][ok], m[ok]) - _log_choose(n[part][ok], m[ok]))
    p[part] = p_part
    out = np.ones(data.num_queries)
    np.multiply.at(out, ties.query, p)
    return out


def expected_first_reciprocal(data: RankedLists, relevant: np.ndarray, k: int | None) -> np.ndarray:
    """``(Q,)`` the mean reciprocal rank of the first relevant row (0 if it ranks at or
    below *k*, or none is retrieved), from ``(G,)`` counts of *relevant* rows per group.

    The first relevant row lies in the query's first group with ``r > 0``; its offset ``j``
    in that group has ``P(j) = C(n - 1 - j, r - 1) / C(n, r)``, ``j = 0 .. n - r``.
    """
    ties = data.ties
    out = np.zeros(data.num_queries)
    has = np.flatnonzero(relevant > 0)
    if len(has) == 0:
        return out
    q = ties.query[has]
    _, at = np.unique(q, return_index=True)  # groups are in rank order within each query
    g = has[at]
    s, n, r = ties.first[g].astype(np.float64), ties.size[g].astype(np.float64), relevant[g]
    span = (n - r + 1).astype(np.int64)
    which = np.repeat(np.arange(len(g)), span)
    j = np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
    nn, rr, ss = n[which], r[which], s[which]
    p = np.exp(_log_choose(nn - 1 - j, rr - 1) - _log_choose(nn, rr))
    term = p / (ss + j + 1.0)
    if k is not None:
        term = term * (ss + j < k)
    out[ties.query[g]] = np.bincount(which, weights=term, minlength=len(g))
    return out


def expected_precisions(data: RankedLists, relevant: np.ndarray, k: int | None) -> np.ndarray:
    """``(Q,)`` the mean over tie orders of the sum, over relevant rows ranked within *k*, of
    the precision at their rank: AP's numerator.

    For a relevant row of a group (``c`` relevant rows in the query's earlier groups) at
    offset ``j``, uniform over ``0 .. n - 1``, the relevant rows above it number
    ``c + X`` with ``E[X | j] = j (r - 1) / (n - 1)``, so its term is
    ``E[(c + 1 + X) / (s + j + 1)]``; summed over ``j < m = min(n, k - s)`` with harmonic
    numbers ``H``: ``b m + (a - b (s + 1)) (H(s + m) - H(s))`` with ``a = c + 1``,
    ``b = (r - 1) / (n - 1)``; times ``r / n`` for the group's relevant rows.
    """
    ties = data.ties
    has = np.flatnonzero(relevant > 0)
    out = np.zeros(data.num_queries)
    if len(has) == 0:
        return out
    r_all = relevant
    c_all = segment_cumsum(ties.query, r_all) - r_all  # relevant rows in earlier groups
    s = ties.first[has].astype(np.float64)
    n = ties.size[has].astype(np.float64)
    r, c = r_all[has], c_all[has]
    m = np.minimum(n, np.inf if k is None else np.maximum(k - s, 0.0))
    top = int((s + m).max()) if len(s) else 0
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, top + 1))))
    b = np.where(n > 1, (r - 1) / np.maximum(n - 1, 1), 0.0)
    a = c + 1.0
    end = (s + m).astype(np.int64)
    total = b * m + (a - b * (s + 1.0)) * (harmonic[end] - harmonic[s.astype(np.int64)])
    np.add.at(out, ties.query[has], total * r / n)
    return out


def expected_bpref_terms(
    data: RankedLists, relevant: np.ndarray, nonrel: np.ndarray, num_rel: np.ndarray, num_nonrel: np.ndarray
) -> np.ndarray:
    """``(Q,)`` the mean over tie orders of bpref's sum ``Σ (1 - min(x, R) / min(N, R))`` over
    the relevant rows (``x`` judged non-relevant rows above; the term is 1 when ``x = 0``
    or ``min(N, R) = 0``), from ``(G,)`` counts of *relevant* and *nonrel* rows per group.

    Above a relevant row of a group lie the ``x0`` non-relevant rows of earlier groups and
    ``X`` of the group's ``q``: the row's place among those ``q`` is uniform, so
    ``X`` is uniform over ``0 .. q`` and the mean term is
    ``(1 / (q + 1)) Σ_{x=x0}^{x0+q} f(x)``, summed in closed form.
    """
    ties = data.ties
    out = np.zeros(data.num_queries)
    has = np.flatnonzero(relevant > 0)
    if len(has) == 0:
        return out
    x0 = (segment_cumsum(ties.query, nonrel) - nonrel)[has]
    q = nonrel[has]
    query = ties.query[has]
    big_r = num_rel[query].astype(np.float64)
    denom = np.minimum(num_nonrel, num_rel)[query].astype(np.float64)

    def capped_sum(t: np.ndarray) -> np.ndarray:
        """Σ_{x=1}^{t} min(x, R), t >= 0."""
        t = np.maximum(t, 0.0)
        low = np.minimum(t, big_r)
        total: np.ndarray = low * (low + 1.0) / 2.0 + np.maximum(t - big_r, 0.0) * big_r
        return total

    lo, hi = x0, x0 + q  # x runs over lo .. hi
    penalty_sum = capped_sum(hi) - capped_sum(lo - 1.0)  # Σ min(x, R); min(0, R) = 0 for x = 0
    terms = q + 1.0  # f(x) = 1 - min(x, R)/D for x > 0, and 1 for x = 0 (min(0, R) = 0 anyway)
    mean = np.where(denom > 0, (terms - penalty_sum / np.where(denom > 0, denom, 1.0)) / terms, 1.0)
    np.add.at(out, query, mean * relevant[has])
    return out
