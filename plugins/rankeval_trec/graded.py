"""trec_eval's experimental gain measures: ``binG``, ``G``, ``ndcg_rel`` and ``Rndcg``.

G, ndcg_rel and Rndcg read the raw grades through a gain map (:mod:`rankeval_trec.gains`), as
trec_eval's ``ndcg`` does: the relevance level ``-l`` does not apply to them (Rndcg uses it
only to give 0 to a query without relevant documents). binG counts relevant documents
(grade >= ``rel``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankeval import Measure, param
from rankeval.segments import safe_divide, segment_cumsum, segment_position

from .classic import _GRADE, _LEVEL, _REL, TREC_EVAL
from .gains import GAINS_HELP, dcg_before, gained_rows, ideal, parse_gains

if TYPE_CHECKING:
    from rankeval import RankedLists


@dataclass(frozen=True)
class _Gained(Measure):
    """A measure with trec_eval's gain map parameter, checked when the measure is built."""

    gains: str | None = param(None, GAINS_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_gains(self.gains)  # a malformed gain map is a ValueError here


@dataclass(frozen=True)
class BinG(Measure):
    """Binary G (trec_eval ``binG``): the sum over relevant retrieved documents of
    1 / log2(2 + the number of non-relevant documents ranked above it), divided by R."""

    name: ClassVar[str] = "BinG"
    description: ClassVar[str] = (
        "Binary G: relevant documents discounted by non-relevant ones above; trec_eval binG"
    )
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(self.rel)
        above = data.rank_of(rows) - segment_position(data.query[rows])  # documents above that are not relevant
        return safe_divide(data.query_sum(rows, 1.0 / np.log2(2.0 + above)), data.num_rel(self.rel))


@dataclass(frozen=True)
class G(_Gained):
    """Normalised gain G (trec_eval ``G``): each retrieved document adds
    gain / log2(2 + C_i - S_i), S_i the gain of the documents up to rank i and C_i the sum of
    max(ideal gain, 1) over the ideal ranking's first i positions; the sum is divided by the
    total gain of the ideal ranking. Gains as nDCG's (``gains``)."""

    name: ClassVar[str] = "G"
    description: ClassVar[str] = "Normalised gain discounted by the gain still missing; trec_eval G"
    source: ClassVar[str] = TREC_EVAL

    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        table = parse_gains(self.gains)
        g = gained_rows(data, table)
        best = ideal(data, table)
        got = segment_cumsum(g.query, g.gain)  # S_i, the gain so far
        # C_i: max(ideal gain, 1) summed over positions 0..i, each position past the ideal's
        # positive part costing 1
        count = best.count[g.query]
        has = count > 0
        base = np.zeros(len(g.rows))
        base[has] = best.cost[best.offsets[g.query[has]] + np.minimum(g.rank[has], count[has] - 1)]
        cost = base + np.maximum(g.rank + 1 - count, 0)
        value = data.query_sum(g.rows, g.gain / np.log2(2.0 + cost - got))
        total = np.bincount(best.query, weights=best.gain, minlength=data.num_queries)
        return safe_divide(value, total)


@dataclass(frozen=True)
class NDCGRel(_Gained):
    """nDCG averaged over the relevant documents (trec_eval ``ndcg_rel``): the mean, over the
    P judged documents with a positive gain, of nDCG at the rank of each retrieved one, and of
    the nDCG of the whole ranking for each one not retrieved. Gains as nDCG's (``gains``)."""

    name: ClassVar[str] = "NDCGRel"
    description: ClassVar[str] = "nDCG averaged at the relevant documents; trec_eval ndcg_rel"
    source: ClassVar[str] = TREC_EVAL

    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        table = parse_gains(self.gains)
        g = gained_rows(data, table)
        best = ideal(data, table)
        hit = g.gain > 0
        q = g.query[hit]
        at_hits = data.query_sum(g.rows[hit], g.dcg[hit] / best.dcg_at(q, g.rank[hit] + 1))
        missed = best.count - data.query_sum(g.rows[hit])
        whole = (missed * data.query_sum(g.rows, g.discounted)) / np.where(best.count > 0, best.total(), 1.0)
        total = at_hits + whole
        return np.where(total > 0, safe_divide(total, best.count.astype(float)), 0.0)


@dataclass(frozen=True)
class RNDCG(_Gained):
    """nDCG averaged at the R levels (trec_eval ``Rndcg``): the mean of nDCG@b over the ranks
    b where the ideal ranking's gain changes (the last of each gain level, including the last
    positive one), nDCG@b using the whole ranking when it is shorter than b, plus the nDCG of
    the whole ranking when it extends more than one document past the last positive ideal
    gain. 0 for a query without relevant documents (grade >= ``rel``)."""

    name: ClassVar[str] = "RNDCG"
    description: ClassVar[str] = "nDCG averaged at the ideal ranking's gain-level changes; trec_eval Rndcg"
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        table = parse_gains(self.gains)
        g = gained_rows(data, table)
        best = ideal(data, table)
        # the last position of each run of equal ideal gains: nDCG is taken after it
        last = np.ones(len(best.gain), dtype=bool)
        last[:-1] = (best.query[1:] != best.query[:-1]) | (best.gain[1:] != best.gain[:-1])
        q, cut = best.query[last], best.position[last] + 1
        terms = dcg_before(data, g, q, cut) / best.dcg[last]
        total = np.bincount(q, weights=terms, minlength=data.num_queries)
        count = np.bincount(q, minlength=data.num_queries).astype(float)
        # and once more at the end of a ranking longer than the ideal's positive part + 1
        extra = (data.counts > best.count + 1) & (best.count > 0)
        whole = data.query_sum(g.rows, g.discounted) / np.where(extra, best.total(), 1.0)
        total = total + np.where(extra, whole, 0.0)
        count = count + extra
        with np.errstate(invalid="ignore", divide="ignore"):
            value = total / count  # 0 / 0 = NaN, as trec_eval (no positive gain, R > 0)
        return np.where((data.num_rel(self.rel) == 0) | (data.counts == 0), 0.0, value)
