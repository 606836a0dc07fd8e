"""Inferred AP for sampled judgments (trec_eval ``infAP``) and the geometric-mean summaries
of AP and bpref (trec_eval ``gm_map``, ``gm_bpref``).

infAP reads three kinds of retrieved documents: not in the qrels (outside the pool), judged
with a negative grade (in the pool but not sampled for judging: trec_eval's ``-1`` lines),
and judged (grade >= 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankeval import Measure, param
from rankeval.segments import ordered_sum, safe_divide, segment_cumsum

from .classic import _GRADE, _LEVEL, _REL, AP, TREC_EVAL, Bpref

if TYPE_CHECKING:
    from rankeval import RankedLists

INFAP_EPSILON = 0.00001
"""trec_eval's smoothing of the share of relevant documents among the judged ones above."""
MIN_GEO_MEAN = 0.00001
"""trec_eval's floor of a value in a geometric mean (so that a 0 does not make it 0)."""


@dataclass(frozen=True)
class InfAP(Measure):
    """Inferred AP (Yilmaz & Aslam, CIKM 2006), as trec_eval ``infAP``: for each relevant
    retrieved document at 1-based rank k > 1,
    1/k + (k-1)/k · (p/(k-1)) · (r + ε)/(r + s + 2ε), p the documents above it in the pool
    (judged or not), r and s the relevant and non-relevant judged documents above it, ε = 1e-5
    (1 at rank 1); summed and divided by R. Documents judged with a negative grade are in the
    pool but not judged."""

    name: ClassVar[str] = "InfAP"
    description: ClassVar[str] = (
        "Inferred AP over a sampled pool (qrels grade -1: pooled, not judged); trec_eval infAP"
    )
    source: ClassVar[str] = TREC_EVAL + "; Yilmaz & Aslam, CIKM 2006"

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows, grade = data.judged_rows()
        threshold = max(self.rel, 0)  # negative grades are never relevant here
        unjudged = grade < 0
        hit = grade >= threshold
        q = data.query[rows]
        rel_so_far = segment_cumsum(q, hit)[hit]  # including this document
        nonrel = segment_cumsum(q, ~unjudged & ~hit)[hit]
        pool_unjudged = segment_cumsum(q, unjudged)[hit]
        j = data.rank_of(rows[hit]).astype(np.float64)  # 0-based rank
        above = np.maximum(j, 1.0)  # (rank 0 takes the other branch)
        r = rel_so_far - 1
        term = 1.0 / (j + 1.0) + ((j / (j + 1.0)) * ((r + nonrel + pool_unjudged) / above)) * (
            (r + INFAP_EPSILON) / (r + nonrel + 2 * INFAP_EPSILON)
        )
        term = np.where(j == 0, 1.0, term)
        return safe_divide(data.query_sum(rows[hit], term), data.num_rel(threshold))


def geometric_mean(values: np.ndarray) -> float:
    """trec_eval's geometric mean: exp of the mean of log(max(value, 1e-5)), the logs added
    in query order."""
    if len(values) == 0:
        return math.nan
    return math.exp(ordered_sum(np.log(np.maximum(values, MIN_GEO_MEAN))) / len(values))


@dataclass(frozen=True)
class GMAP(Measure):
    """AP per query, summarised by trec_eval's geometric mean (``gm_map``):
    exp(mean(log(max(AP, 0.00001)))); a query the run misses counts as 0, i.e. log(0.00001)."""

    name: ClassVar[str] = "GMAP"
    description: ClassVar[str] = "Average precision, geometric mean over queries; trec_eval gm_map"
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return AP(rel=self.rel, level=self.level).compute(data)

    def expected(self, data: RankedLists) -> np.ndarray:
        return AP(rel=self.rel, level=self.level).expected(data)

    def aggregate(self, values: np.ndarray) -> float:
        """The geometric mean of the values, each at least 0.00001 (trec_eval's)."""
        return geometric_mean(values)


@dataclass(frozen=True)
class GMBpref(Measure):
    """Bpref per query, summarised by trec_eval's geometric mean (``gm_bpref``):
    exp(mean(log(max(Bpref, 0.00001))))."""

    name: ClassVar[str] = "GMBpref"
    description: ClassVar[str] = "Bpref, geometric mean over queries; trec_eval gm_bpref"
    source: ClassVar[str] = TREC_EVAL + "; Buckley & Voorhees, SIGIR 2004"

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return Bpref(rel=self.rel, level=self.level).compute(data)

    def expected(self, data: RankedLists) -> np.ndarray:
        return Bpref(rel=self.rel, level=self.level).expected(data)

    def aggregate(self, values: np.ndarray) -> float:
        """The geometric mean of the values, each at least 0.00001 (trec_eval's)."""
        return geometric_mean(values)
