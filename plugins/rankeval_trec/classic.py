"""The classic measures of trec_eval (AP, nDCG, P, R, RR, Rprec, bpref, success, the counts)
and ir_measures' Judged.

Each measure is a frozen dataclass whose fields are its parameters and whose ``compute``
turns the ranked lists of all queries into one value per query with numpy segment
operations (no loop over queries). Definitions follow trec_eval 9.0.8; the docs page of each
measure gives the formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankeval import Domain, Measure, param
from rankeval.segments import safe_divide, segment_cumsum, segment_position

from .gains import GAINS_HELP, gained_rows, ideal, parse_gains
from .ties import (
    expected_bpref_terms,
    expected_first_reciprocal,
    expected_precisions,
    mean_discount,
    none_in_top,
    per_group,
    top_share,
)

if TYPE_CHECKING:
    from rankeval import RankedLists

TREC_EVAL = "trec_eval 9.0.8 (github usnistgov/trec_eval)"
_REL = "minimum relevance grade counted as relevant (trec_eval -l)"
_LEVEL = "nesting level ranked: 1 = top-level items, 2 = children within each parent"
_CUTOFF = "rank cutoff (none = all retrieved)"
# a grade threshold may be 0 or negative (trec_eval -l 0 counts every judged document with a
# grade >= 0); unjudged documents are never relevant whatever the threshold
_GRADE = Domain(-(2**31), 2**31 - 1)


def _found(data: RankedLists, rel: int, k: int | None) -> np.ndarray:
    """Per query: relevant documents retrieved (within the top *k*)."""
    rows = data.relevant_rows(rel)
    return data.query_sum(rows, None if k is None else data.rank_of(rows) < k)


@dataclass(frozen=True)
class AP(Measure):
    """Average precision: mean of the precision at each relevant retrieved document, over
    all relevant documents of the query (trec_eval ``map``; ``map_cut.k`` with a cutoff)."""

    name: ClassVar[str] = "AP"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Average precision (MAP when averaged); trec_eval map / map_cut"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"map": {}, "MAP": {}}
    cut_prefixes: ClassVar = ("map_cut",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(self.rel)
        rank = data.rank_of(rows)
        # precision at each relevant row: its position among the relevant rows over its rank
        precision = (segment_position(data.query[rows]) + 1.0) / (rank + 1.0)
        if self.k is not None:
            precision = precision * (rank < self.k)
        return safe_divide(data.query_sum(rows, precision), data.num_rel(self.rel))

    def expected(self, data: RankedLists) -> np.ndarray:
        relevant = per_group(data, data.relevant_rows(self.rel))
        return safe_divide(expected_precisions(data, relevant, self.k), data.num_rel(self.rel))


@dataclass(frozen=True)
class NDCG(Measure):
    """Normalised discounted cumulative gain, trec_eval's ``ndcg`` / ``ndcg_cut.k``: gain =
    relevance grade, discount log2(rank + 1), ideal ranking of all judged documents. With
    ``gains`` (trec_eval's ``ndcg.1=3,2=9``), a listed grade gains the given value instead
    (other grades keep their own; the ideal ranking sorts the judged documents by gain)."""

    name: ClassVar[str] = "nDCG"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Normalised DCG, gain = grade, log2 discount; trec_eval ndcg / ndcg_cut"
    source: ClassVar[str] = TREC_EVAL + "; Järvelin & Kekäläinen, TOIS 2002"
    aliases: ClassVar = {"ndcg": {}}
    cut_prefixes: ClassVar = ("ndcg_cut",)

    k: int | None = param(None, _CUTOFF)
    level: int = param(1, _LEVEL)
    gains: str | None = param(None, GAINS_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_gains(self.gains)  # a malformed gain map is a ValueError here

    def compute(self, data: RankedLists) -> np.ndarray:
        if self.gains is not None:
            return self._with_gains(data)
        judged, relevance = data.judged_rows()
        positive = relevance > 0  # gain = grade for grades > 0
        rows = judged[positive]
        rank = data.rank_of(rows)
        discounted = relevance[positive] / np.log2(rank + 2.0)
        if self.k is not None:
            discounted = discounted * (rank < self.k)
        dcg = data.query_sum(rows, discounted)
        jrank = data.judged.rank
        jgain = np.where(data.judged.relevance > 0, data.judged.relevance, 0.0)
        if self.k is not None:
            jgain = jgain * (jrank < self.k)
        ideal = np.bincount(
            data.judged.query, weights=jgain / np.log2(jrank + 2.0), minlength=data.num_queries
        )
        return safe_divide(dcg, ideal)

    def _with_gains(self, data: RankedLists) -> np.ndarray:
        table = parse_gains(self.gains)
        g = gained_rows(data, table)
        discounted = g.discounted if self.k is None else g.discounted * (g.rank < self.k)
        dcg = data.query_sum(g.rows, discounted)
        best = ideal(data, table)
        cut = best.count if self.k is None else np.full(data.num_queries, self.k)
        return safe_divide(dcg, best.dcg_at(np.arange(data.num_queries), cut))

    def expected(self, data: RankedLists) -> np.ndarray:
        # gain times the mean discount over the ranks of the row's tied group; the ideal
        # ranking does not depend on the run
        table = parse_gains(self.gains)
        g = gained_rows(data, table)
        dcg = data.query_sum(g.rows, g.gain * mean_discount(data, g.rows, self.k))
        best = ideal(data, table)
        cut = best.count if self.k is None else np.full(data.num_queries, self.k)
        return safe_divide(dcg, best.dcg_at(np.arange(data.num_queries), cut))


@dataclass(frozen=True)
class P(Measure):
    """Precision at k: relevant documents in the top k divided by k (trec_eval ``P.k``);
    without a cutoff, over all retrieved documents (trec_eval ``set_P``)."""

    name: ClassVar[str] = "P"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Precision at k; trec_eval P.k (set_P without cutoff)"
    source: ClassVar[str] = TREC_EVAL
    cut_prefixes: ClassVar = ("P",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        found = _found(data, self.rel, self.k)
        if self.k is None:
            return safe_divide(found, data.counts.astype(float))
        return found / self.k

    def expected(self, data: RankedLists) -> np.ndarray:
        if self.k is None:
            return self.compute(data)  # the retrieved set: no order
        rows = data.relevant_rows(self.rel)
        return data.query_sum(rows, top_share(data, rows, self.k)) / self.k


@dataclass(frozen=True)
class R(Measure):
    """Recall at k: relevant documents in the top k over all relevant documents
    (trec_eval ``recall.k``; ``set_recall`` without a cutoff)."""

    name: ClassVar[str] = "R"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Recall at k; trec_eval recall.k (set_recall without cutoff)"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"Recall": {}}
    cut_prefixes: ClassVar = ("recall",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return safe_divide(_found(data, self.rel, self.k), data.num_rel(self.rel))

    def expected(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(self.rel)
        found = data.query_sum(rows, top_share(data, rows, self.k))
        return safe_divide(found, data.num_rel(self.rel))


@dataclass(frozen=True)
class RR(Measure):
    """Reciprocal rank of the first relevant document (trec_eval ``recip_rank``); 0 if
    none is retrieved (or none within the cutoff)."""

    name: ClassVar[str] = "RR"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Reciprocal rank of the first relevant document; trec_eval recip_rank"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"recip_rank": {}, "MRR": {}}

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(self.rel)
        first = np.full(data.num_queries, -1, dtype=np.int64)  # rank of each query's first one
        q, at = np.unique(data.query[rows], return_index=True)
        first[q] = data.rank_of(rows[at])
        if self.k is not None:
            first[first >= self.k] = -1
        return safe_divide(np.ones(len(first)), np.where(first >= 0, first + 1.0, 0.0))

    def expected(self, data: RankedLists) -> np.ndarray:
        relevant = per_group(data, data.relevant_rows(self.rel))
        return expected_first_reciprocal(data, relevant, self.k)


@dataclass(frozen=True)
class Rprec(Measure):
    """Precision at rank R, R being the number of relevant documents (trec_eval ``Rprec``)."""

    name: ClassVar[str] = "Rprec"
    description: ClassVar[str] = "Precision at R (number of relevant documents); trec_eval Rprec"
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        num_rel = data.num_rel(self.rel)
        rows = data.relevant_rows(self.rel)
        found = data.query_sum(rows, data.rank_of(rows) < num_rel[data.query[rows]])
        return safe_divide(found, num_rel)

    def expected(self, data: RankedLists) -> np.ndarray:
        num_rel = data.num_rel(self.rel)
        rows = data.relevant_rows(self.rel)
        return safe_divide(data.query_sum(rows, top_share(data, rows, num_rel)), num_rel)


@dataclass(frozen=True)
class Bpref(Measure):
    """Binary preference (Buckley & Voorhees, SIGIR 2004), as trec_eval ``bpref``: for each
    relevant retrieved document, 1 - min(n, R)/min(N, R), n the judged non-relevant documents
    ranked above it, N all judged non-relevant, R all relevant; summed and divided by R."""

    name: ClassVar[str] = "Bpref"
    description: ClassVar[str] = "Binary preference over judged documents; trec_eval bpref"
    source: ClassVar[str] = TREC_EVAL + "; Buckley & Voorhees, SIGIR 2004"
    aliases: ClassVar = {"bpref": {}}

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        # only judged rows matter: count judged non-relevant rows ranked above each relevant one
        rows, rel = data.judged_rows()
        nonrel = (rel >= 0) & (rel < self.rel)
        hit = rel >= self.rel
        q = data.query[rows]
        nonrel_above = segment_cumsum(q, nonrel) - nonrel
        num_rel = data.num_rel(self.rel)
        jrel = data.judged.relevance
        num_nonrel = np.bincount(
            data.judged.query, weights=(jrel >= 0) & (jrel < self.rel), minlength=data.num_queries
        )
        denom = np.minimum(num_nonrel, num_rel)[q]
        penalty = np.zeros(len(rows))
        np.divide(np.minimum(nonrel_above, num_rel[q]), denom, out=penalty, where=denom > 0)
        contrib = np.where(nonrel_above > 0, 1.0 - penalty, 1.0)
        return safe_divide(data.query_sum(rows, contrib * hit), num_rel)

    def expected(self, data: RankedLists) -> np.ndarray:
        rows, rel = data.judged_rows()
        relevant = per_group(data, rows[rel >= self.rel])
        nonrel = per_group(data, rows[(rel >= 0) & (rel < self.rel)])
        num_rel = data.num_rel(self.rel)
        jrel = data.judged.relevance
        num_nonrel = np.bincount(
            data.judged.query, weights=(jrel >= 0) & (jrel < self.rel), minlength=data.num_queries
        )
        return safe_divide(expected_bpref_terms(data, relevant, nonrel, num_rel, num_nonrel), num_rel)


@dataclass(frozen=True)
class Success(Measure):
    """1 if a relevant document is in the top k, else 0 (trec_eval ``success.k``)."""

    name: ClassVar[str] = "Success"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "1 if any relevant document is in the top k; trec_eval success.k"
    source: ClassVar[str] = TREC_EVAL
    cut_prefixes: ClassVar = ("success",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return (_found(data, self.rel, self.k) > 0).astype(float)

    def expected(self, data: RankedLists) -> np.ndarray:
        if self.k is None:
            return self.compute(data)  # the retrieved set: no order
        relevant = per_group(data, data.relevant_rows(self.rel))
        return 1.0 - none_in_top(data, relevant, self.k)


@dataclass(frozen=True)
class NumRet(Measure):
    """Number of retrieved documents (trec_eval ``num_ret``; summed over queries)."""

    name: ClassVar[str] = "NumRet"
    description: ClassVar[str] = "Number of retrieved documents; trec_eval num_ret"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"num_ret": {}}
    integer: ClassVar[bool] = True

    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return data.counts.astype(float)

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # a count of the retrieved set: no order


@dataclass(frozen=True)
class NumRel(Measure):
    """Number of relevant documents in the qrels (trec_eval ``num_rel``; summed)."""

    name: ClassVar[str] = "NumRel"
    description: ClassVar[str] = "Number of relevant documents judged; trec_eval num_rel"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"num_rel": {}}
    integer: ClassVar[bool] = True

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return data.num_rel(self.rel).astype(float)

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # a count of the retrieved set: no order


@dataclass(frozen=True)
class NumRelRet(Measure):
    """Number of relevant documents retrieved (trec_eval ``num_rel_ret``; summed)."""

    name: ClassVar[str] = "NumRelRet"
    description: ClassVar[str] = "Number of relevant documents retrieved; trec_eval num_rel_ret"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"num_rel_ret": {}}
    integer: ClassVar[bool] = True

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return _found(data, self.rel, None)

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # a count of the retrieved set: no order


@dataclass(frozen=True)
class Judged(Measure):
    """Share of the top k retrieved documents that have a judgment (any grade), over
    min(k, retrieved), as ir_measures' ``Judged@k``."""

    name: ClassVar[str] = "Judged"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Share of the top k that is judged; ir_measures Judged@k"
    source: ClassVar[str] = "ir_measures (github terrierteam/ir_measures)"

    k: int | None = param(None, _CUTOFF)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows, _ = data.judged_rows()
        judged = data.query_sum(rows, None if self.k is None else data.rank_of(rows) < self.k)
        shown = data.counts if self.k is None else np.minimum(data.counts, self.k)
        return safe_divide(judged, shown.astype(float))

    def expected(self, data: RankedLists) -> np.ndarray:
        if self.k is None:
            return self.compute(data)  # the retrieved set: no order
        rows, _ = data.judged_rows()
        judged = data.query_sum(rows, top_share(data, rows, self.k))
        return safe_divide(judged, np.minimum(data.counts, self.k).astype(float))
