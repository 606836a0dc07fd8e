"""Cost-sensitive measures as a rankeval plugin: CS-DCG, nCS-DCG and CS-DCG-neg.

Sayed & Oard, "Jointly Modeling Relevance and Sensitivity for Search Among Sensitive
Content", SIGIR 2019 (their RankLib-based scorer: github mfayoub/SASC). Showing a relevant
document gains its discounted gain; showing a sensitive one costs ``cost`` x its sensitivity
grade, undiscounted:

    CS-DCG@k = Σ_{i=1..min(k,n)} [ g(rel_i) / log2(i + 1) - C · s_i ]

``nCS-DCG@k`` rescales CS-DCG@k between the worst and the best value any ranking of the
query's judged documents can have. Those bounds are computed exactly (:func:`exact_bounds`),
or with the paper's greedy Algorithm 1 (:func:`greedy_bounds`, ``bounds=greedy``), which is
not always optimal. ``CS-DCG-neg@k`` is 1 for a query whose CS-DCG@k is below 0 ("searching
was worse than not searching"), so its mean is the share of such queries.

The sensitivity grade ``s`` of a document is its ``sens=`` attribute in the qrels (the
maximum over assessors' lines; 0 without one), which may come from a side file of item
attributes (:meth:`rankeval.Qrels.with_docinfo`, ``--docinfo``) for judged and unjudged
documents alike: an unjudged document the run shows gains nothing and costs its sensitivity.
The bounds of nCS-DCG are over the query's judged documents (the paper's pool), so a run
showing unjudged sensitive documents can fall below the worst bound (clamped to 0). Everything is computed for
all queries at once: the run's value from the judged rows in the top k, the bounds by a
dynamic programme whose only loop is over candidate positions (at most k per distinct gain,
and per distinct sensitivity grade, of a query), vectorised over queries.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rankeval import Domain, Measure, hookimpl, param
from rankeval.errors import InputError, RankevalWarning
from rankeval.segments import ordered_mean, segment_position

if TYPE_CHECKING:
    from rankeval import RankedLists

SAYED_OARD = (
    "Sayed & Oard, Jointly Modeling Relevance and Sensitivity for Search Among Sensitive "
    "Content, SIGIR 2019 (github mfayoub/SASC)"
)
GMEAN_FLOOR = 1e-5
"""Per-query floor of the geometric mean, as trec_eval's ``gm_map``: log(max(x, 1e-5))."""

_CUTOFF = "rank cutoff k (required: CS-DCG@10)"
_GAIN = "gain of a grade: exp = 2^rel - 1 (the paper), linear = rel; grades below 0 gain 0"
_LEVEL = "nesting level ranked: 1 = top-level items, 2 = children within each parent (sub-query per parent)"
_COST = "cost C of showing a document of sensitivity grade 1 (the paper's C_s for k = 10)"


MAX_GRADE_DOMAIN = Domain(0, 2**31 - 1)
"""Allowed ``sens=`` grades (0 = not sensitive)."""
MAX_EXP_GRADE = 1000
"""Largest relevance grade gain=exp accepts (2^1000 leaves room for sums over 2^23 documents)."""


# ------------------------------------------------------------------------------ helpers
def gain_of(rel: np.ndarray, kind: str) -> np.ndarray:
    """Gain of relevance grades: ``2^rel - 1`` (``exp``) or ``rel`` (``linear``); 0 below 0."""
    rel = np.maximum(np.asarray(rel, dtype=np.float64), 0.0)
    if kind == "exp" and len(rel) and rel.max() > MAX_EXP_GRADE:
        # 2^1024 is inf in float64, and sums of inf gains give inf - inf = NaN in the bounds
        raise InputError(
            f"relevance grade {rel.max():g} is too large for gain=exp (2^rel - 1 overflows above "
            f"grade {MAX_EXP_GRADE}); use gain=linear"
        )
    return np.exp2(rel) - 1.0 if kind == "exp" else rel


def discount(k: int) -> np.ndarray:
    """``1 / log2(i + 1)`` for ranks i = 1..k."""
    return 1.0 / np.log2(np.arange(k, dtype=np.float64) + 2.0)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of the run of equal values each element of sorted *keys*
    belongs to."""
    n = len(keys)
    new = np.concatenate(([True], keys[1:] != keys[:-1]))
    first = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    return first[run], np.concatenate((first[1:], [n]))[run]


def _sort_codes(query: np.ndarray, outer: np.ndarray, inner: np.ndarray, n_outer: int, n_inner: int) -> Any:
    """Stable order by (query, outer, inner) and the keys (query, outer) and (query, outer,
    inner) in that order, as integers (lexsort if they would not fit in 62 bits)."""
    q = query.astype(np.int64)
    if (int(q.max()) + 1) * n_outer * n_inner < 2**62:
        coarse = q * n_outer + outer
        fine = coarse * n_inner + inner
        order = np.argsort(fine, kind="stable")
        return order, coarse[order], fine[order]
    order = np.lexsort((inner, outer, q))
    coarse = np.cumsum(
        np.concatenate(([0], (q[order][1:] != q[order][:-1]) | (outer[order][1:] != outer[order][:-1])))
    )
    fine = np.cumsum(
        np.concatenate(([0], (coarse[1:] != coarse[:-1]) | (inner[order][1:] != inner[order][:-1])))
    )
    return order, coarse, fine


@dataclass
class _Dominance:
    """For each judged document: how many documents of its query have the same sensitivity
    and a higher / lower gain, how many have the same gain and a lower / higher sensitivity,
    and its index among the documents of its query with the same gain and sensitivity."""

    copy: np.ndarray
    gain_above: np.ndarray
    gain_below: np.ndarray
    sens_below: np.ndarray
    sens_above: np.ndarray

    @classmethod
    def of(cls, query: np.ndarray, gain: np.ndarray, sens: np.ndarray) -> _Dominance:
        n = len(query)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, empty, empty)
        gains, g = np.unique(gain, return_inverse=True)
        grades, s = np.unique(sens, return_inverse=True)
        out = []
        for outer, inner, n_outer, n_inner in (
            (s, g, len(grades), len(gains)),
            (g, s, len(gains), len(grades)),
        ):
            order, coarse, fine = _sort_codes(query, outer.ravel(), inner.ravel(), n_outer, n_inner)
            c_start, c_end = _runs(coarse)
            f_start, f_end = _runs(fine)
            pos = np.arange(n)
            for values in (pos - f_start, f_start - c_start, c_end - f_end):
                back = np.empty(n, dtype=np.int64)
                back[order] = values
                out.append(back)
        # (copy, below, above) by gain within a grade, then by grade within a gain; both
        # orders are stable, so a document's copy index is the same in both
        return cls(out[0], out[2], out[1], out[4], out[5])


def _candidates(
    query: np.ndarray, gain: np.ndarray, sens: np.ndarray, k: int, best: bool, dom: _Dominance
) -> tuple[np.ndarray, np.ndarray]:
    """Documents that can be in a best (worst) top k, sorted by query then by gain,
    descending (ascending); returns (indices, position within the query).

    A document is *beaten* by one with at least its gain and at most its sensitivity (for
    the worst ranking: at most its gain and at least its sensitivity), or by an identical one
    that comes first. A ranking fills at most k slots, so a document beaten by k others is
    never needed: one of those k is not chosen and can take its place. Kept: the k best
    documents of each sensitivity grade (by gain) and of each gain (by sensitivity) of a
    query, so at most k times the number of distinct gains, or of distinct grades, per
    query. The greedy algorithm never picks another one either: it always takes a document
    that is the best remaining one of both its grade and its gain.
    """
    if best:
        keep = (dom.copy + dom.gain_above < k) & (dom.copy + dom.sens_below < k)
    else:
        keep = (dom.copy + dom.gain_below < k) & (dom.copy + dom.sens_above < k)
    idx = np.flatnonzero(keep)
    key_gain, key_sens = (-gain[idx], sens[idx]) if best else (gain[idx], -sens[idx])
    idx = idx[np.lexsort((key_sens, key_gain, query[idx]))]
    return idx, segment_position(query[idx])


# ------------------------------------------------------------------------------ bounds
def exact_bounds(
    query: np.ndarray, gain: np.ndarray, sens: np.ndarray, num_queries: int, k: int, cost: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact maximum and minimum of CS-DCG@k over all rankings of each query's pool.

    Args:
        query: ``(m,)`` query index of each judged document (the pool).
        gain: ``(m,)`` gain of each document.
        sens: ``(m,)`` sensitivity grade of each document.
        num_queries: number of queries Q.
        k: the cutoff.
        cost: the cost C of sensitivity grade 1.

    A ranking is an ordering of **all** the query's judged documents, so its top
    ``K = min(k, m_q)`` slots are always filled (as in SASC: the cutoff is the smaller of k
    and the list length). For a fixed set of K documents the cost is fixed and the
    discounted gain is largest with the gains in descending order (smallest: ascending),
    so the best ranking is a choice of K documents, scanned in descending gain:
    ``f(i + 1, j + 1) = max(f(i, j + 1), f(i, j) + g_i / log2(j + 2) - C s_i)``, the worst
    the same with ``min`` over ascending gains. Vectorised over queries; the loop runs over
    candidate positions (see :func:`_candidates`).

    Returns:
        ``(best, worst)``, each ``(Q,)``; 0 and 0 for a query without judged documents.
    """
    pool = np.bincount(query, minlength=num_queries)
    slots = np.minimum(k, pool)
    dom = _Dominance.of(query, gain, sens)
    return (
        _dp(query, gain, sens, num_queries, k, cost, slots, dom, best=True),
        _dp(query, gain, sens, num_queries, k, cost, slots, dom, best=False),
    )


def _dp(
    query: np.ndarray,
    gain: np.ndarray,
    sens: np.ndarray,
    nq: int,
    k: int,
    cost: float,
    slots: np.ndarray,
    dom: _Dominance,
    *,
    best: bool,
) -> np.ndarray:
    idx, pos = _candidates(query, gain, sens, k, best, dom)
    q, g, s = query[idx], gain[idx], sens[idx]
    disc = discount(k)
    f = np.full((nq, k + 1), -np.inf if best else np.inf)
    f[:, 0] = 0.0
    pick = np.maximum if best else np.minimum
    by_pos = np.argsort(pos, kind="stable")
    bounds = np.searchsorted(pos[by_pos], np.arange(int(pos.max()) + 2 if len(pos) else 1))
    for p in range(len(bounds) - 1):
        sel = by_pos[bounds[p] : bounds[p + 1]]  # the p-th candidate of each query that has one
        qq = q[sel]
        take = f[qq, :-1] + g[sel, None] * disc[None, :] - cost * s[sel, None]
        f[qq, 1:] = pick(f[qq, 1:], take)
    out: np.ndarray = f[np.arange(nq), slots]
    return out


def greedy_bounds(
    query: np.ndarray, gain: np.ndarray, sens: np.ndarray, num_queries: int, k: int, cost: float
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's Algorithm 1 (SASC's ``CSNDCGScorer.getMaxDCG`` / ``getMinDCG``): greedy
    best and worst CS-DCG@k, slot by slot. Same arguments as :func:`exact_bounds`.

    Best: (1) from rank 1 on, relevant non-sensitive documents, highest gain first;
    (2) from rank K backwards, non-relevant non-sensitive documents (value 0); (3) the slots
    still empty, from the top, each with the remaining document of highest value at that
    rank. Worst: (1) from rank 1 on, non-relevant sensitive documents, most sensitive
    first; (2) from rank K backwards, relevant sensitive documents whose value there is
    below 0, lowest first; (3) the empty slots from the top, each with the remaining document
    of lowest value. Not always optimal: see the docs for examples. Where two documents have
    the same value at a slot, SASC takes the first in its input; here the one of higher
    (best) or lower (worst) gain.
    """
    pool = np.bincount(query, minlength=num_queries)
    slots = np.minimum(k, pool)
    dom = _Dominance.of(query, gain, sens)
    return (
        _greedy(query, gain, sens, num_queries, k, cost, slots, dom, best=True),
        _greedy(query, gain, sens, num_queries, k, cost, slots, dom, best=False),
    )


def _greedy(
    query: np.ndarray,
    gain: np.ndarray,
    sens: np.ndarray,
    nq: int,
    k: int,
    cost: float,
    slots: np.ndarray,
    dom: _Dominance,
    *,
    best: bool,
) -> np.ndarray:
    idx, pos = _candidates(query, gain, sens, k, best, dom)
    width = int(pos.max()) + 1 if len(pos) else 1
    g = np.zeros((nq, width))
    s = np.zeros((nq, width))
    avail = np.zeros((nq, width), dtype=bool)
    g[query[idx], pos], s[query[idx], pos], avail[query[idx], pos] = gain[idx], sens[idx], True
    disc = discount(k)
    rows = np.arange(nq)
    total = np.zeros(nq)
    sign = 1.0 if best else -1.0  # the worst ranking: maximise -value
    nothing = -np.inf

    def place(i: int, mask: np.ndarray, limit: float | None = None) -> np.ndarray:
        """Put at rank i + 1 of each query the candidate of *mask* with the best signed
        value (above *limit* if given); returns which queries got one."""
        value = sign * (g * disc[i] - cost * s)
        scored = np.where(mask, value, nothing)
        j = np.argmax(scored, axis=1)
        top = scored[rows, j]
        has = np.asarray(mask.any(axis=1) if limit is None else top > limit)
        total[has] += sign * top[has]
        avail[rows[has], j[has]] = False
        return has

    first_kind = (g > 0) & (s == 0) if best else (g == 0) & (s > 0)
    second_kind = (g == 0) & (s == 0) if best else (g > 0) & (s > 0)
    left = np.full(nq, -1)  # last rank filled from the top in phase 1
    for i in range(k):
        has = place(i, avail & first_kind & (i < slots)[:, None])
        left[has] = i
    right = slots.copy()  # first rank filled from the bottom in phase 2
    for i in range(k - 1, -1, -1):
        active = (i < slots) & (i > left)
        # best: a value-0 document (any will do); worst: only values below 0
        has = place(i, avail & second_kind & active[:, None], None if best else 0.0)
        right[has] = i
    for i in range(k):
        active = (i > left) & (i < right)
        place(i, avail & active[:, None])
    return total


# ------------------------------------------------------------------------------ inputs
def _grades(data: RankedLists) -> np.ndarray:
    """Sensitivity grade of every item (see ``RankedLists.items``): the maximum of its
    qrels lines' ``sens=`` (0 where none is given); shared by every nesting level."""

    def make() -> np.ndarray:
        # grades are small integers in practice; the bound keeps cost x grade finite
        values = data.qrels.number_attribute("sens", "the sensitivity grade", domain=MAX_GRADE_DOMAIN)
        has = ~np.isnan(values)
        grade = np.zeros(data.items.count)
        np.maximum.at(grade, data.items.lines[has], values[has])
        return grade

    return data.memo("csdcg-grades", make, shared=True)


def _sens_of(data: RankedLists, items: np.ndarray) -> np.ndarray:
    """Sensitivity grade of each of *items* (0 for -1: a doc judged nowhere)."""
    grade = _grades(data)
    return np.where(items >= 0, grade[np.maximum(items, 0)], 0.0) if len(grade) else np.zeros(len(items))


# ------------------------------------------------------------------------------ measures
@dataclass(frozen=True)
class _CostSensitive(Measure):
    """Parameters and kernels shared by CS-DCG, nCS-DCG and CS-DCG-neg."""

    at: ClassVar[str | None] = "k"
    source: ClassVar[str] = SAYED_OARD
    attributes: ClassVar[tuple[str, ...]] = ("sens",)

    k: int | None = param(None, _CUTOFF)
    gain: Literal["exp", "linear"] = param("exp", _GAIN)
    cost: float = param(12.0, _COST, domain=Domain(0))  # a negative cost would reward sensitivity
    level: int = param(1, _LEVEL)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.k is None:
            raise ValueError(f"{self.name} needs a cutoff, e.g. {self.with_params(k=10)}")

    @property
    def cutoff(self) -> int:
        assert self.k is not None  # checked in __post_init__
        return self.k

    def cs_dcg(self, data: RankedLists) -> np.ndarray:
        """``(Q,)`` CS-DCG@k of the run: the judged rows in the top k gain and cost; an
        unjudged row gains 0 and costs its ``sens=`` from a ``--docinfo`` side file (0
        without one)."""

        def make() -> np.ndarray:
            judged, relevance = data.judged_rows()
            rank = data.rank_of(judged)
            top = rank < self.cutoff
            rows, rank = judged[top], rank[top]
            sens = _sens_of(data, data.items.rows[rows])
            value = gain_of(relevance[top], self.gain) / np.log2(rank + 2.0) - self.cost * sens
            out = data.query_sum(rows, value)
            if data.qrels.docinfo:  # unjudged rows of the top k with a side file's sens=
                shown = np.flatnonzero(data.rank < self.cutoff)
                unjudged = shown[~np.isin(shown, judged)]
                side = data.docinfo_number("sens", unjudged, "the sensitivity grade", domain=MAX_GRADE_DOMAIN)
                given = ~np.isnan(side)
                out -= data.query_sum(unjudged[given], self.cost * side[given])
            return out

        return data.memo(("csdcg-value", self.k, self.gain, self.cost), make)

    def pool_bounds(self, data: RankedLists, method: str = "exact") -> tuple[np.ndarray, np.ndarray]:
        """``(best, worst)`` CS-DCG@k over all rankings of each query's judged documents."""

        def make() -> tuple[np.ndarray, np.ndarray]:
            jq = data.judged.query
            sens = _sens_of(data, data.items.judged)
            gain = gain_of(data.judged.relevance, self.gain)
            solve = exact_bounds if method == "exact" else greedy_bounds
            # no query fills more slots than it has judged documents: a larger k gives the
            # same bounds, and would only size the arrays and loops (k may be 2**31 - 1)
            k = min(self.cutoff, max(1, int(np.bincount(jq).max()) if len(jq) else 1))
            return solve(jq, gain, sens, data.num_queries, k, self.cost)

        return data.memo(("csdcg-bounds", method, self.k, self.gain, self.cost), make)


@dataclass(frozen=True)
class _Averaged(_CostSensitive):
    """Adds the ``agg`` parameter and an aggregate that leaves out undefined (NaN) queries,
    with a warning counting them."""

    agg: Literal["mean", "gmean"] = param(
        "mean", f"aggregate over queries: mean, or gmean = exp(mean(log(max(x, {GMEAN_FLOOR:g}))))"
    )

    def aggregate(self, values: np.ndarray) -> float:
        """Mean (or geometric mean) over the queries whose value is defined."""
        undefined = int(np.isnan(values).sum())
        defined = values[~np.isnan(values)]
        if undefined:
            warnings.warn(
                RankevalWarning(
                    f"{self}: {undefined} of {len(values)} queries undefined (best == worst "
                    f"CS-DCG@{self.k} over all rankings of the judged documents); "
                    + ("left out of the mean" if len(defined) else "no query left: the mean is nan")
                ),
                stacklevel=2,
            )
        if len(defined) == 0:
            return float("nan")
        if self.agg == "gmean":
            return float(np.exp(ordered_mean(np.log(np.maximum(defined, GMEAN_FLOOR)))))
        return ordered_mean(defined)


@dataclass(frozen=True)
class CSDCG(_Averaged):
    """Cost-sensitive DCG: discounted gain of the relevant documents in the top k minus
    ``cost`` times the sensitivity grade (``sens=``) of every document shown, undiscounted:
    ``Σ_{i≤min(k,n)} g(rel_i)/log2(i+1) - C·s_i``. Below 0, showing the results was worse
    than showing nothing. ``agg=gmean`` is refused: CS-DCG can be negative (use nCS-DCG)."""

    name: ClassVar[str] = "CS-DCG"
    description: ClassVar[str] = "Cost-sensitive DCG: discounted gain minus cost x sensitivity of docs shown"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.agg == "gmean":
            raise ValueError(
                "agg=gmean is not defined for CS-DCG, whose values can be negative; "
                "use nCS-DCG(agg=gmean) or the mean"
            )

    def compute(self, data: RankedLists) -> np.ndarray:
        return self.cs_dcg(data)


@dataclass(frozen=True)
class NCSDCG(_Averaged):
    """Normalised CS-DCG: ``(CS-DCG - worst) / (best - worst)``, clamped to [0, 1], best and
    worst being the highest and lowest CS-DCG@k of any ranking of the query's judged
    documents (exact; ``bounds=greedy`` for the paper's Algorithm 1). A query whose best
    equals its worst is undefined: NaN per query, left out of the aggregate, counted in a
    warning."""

    name: ClassVar[str] = "nCS-DCG"
    description: ClassVar[str] = "Normalised cost-sensitive DCG, between the worst and the best ranking"

    bounds: Literal["exact", "greedy"] = param(
        "exact", "best/worst rankings: exact (optimal) or greedy (the paper's Algorithm 1)"
    )

    def compute(self, data: RankedLists) -> np.ndarray:
        value = self.cs_dcg(data)
        best, worst = self.pool_bounds(data, self.bounds)
        spread = best - worst
        defined = spread > 1e-12 * np.maximum(1.0, np.maximum(np.abs(best), np.abs(worst)))
        out = np.full(len(value), np.nan)
        out[defined] = np.clip((value[defined] - worst[defined]) / spread[defined], 0.0, 1.0)
        return out


@dataclass(frozen=True)
class CSDCGNeg(_CostSensitive):
    """1 if the query's CS-DCG@k is below 0, else 0: the mean is the share of queries for
    which searching was worse than not searching (the paper's complementary view)."""

    name: ClassVar[str] = "CS-DCG-neg"
    description: ClassVar[str] = "1 if CS-DCG@k < 0 (searching worse than not searching); mean = share"

    def compute(self, data: RankedLists) -> np.ndarray:
        return (self.cs_dcg(data) < 0).astype(np.float64)


MEASURES: tuple[type[Measure], ...] = (CSDCG, NCSDCG, CSDCGNeg)


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register CS-DCG, nCS-DCG and CS-DCG-neg."""
    for cls in MEASURES:
        register(cls)
