"""trec_eval's set measures and the precisions relative to R: ``relative_P``,
``set_relative_P``, ``set_map``, ``set_F``, ``utility``, ``num_nonrel_judged_ret`` and
``Rprec_mult``.

The set measures see the retrieved documents as a set (all of them, at most ``-M``): n
retrieved, R relevant in the qrels, ``found`` relevant retrieved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankeval import Domain, Measure, param
from rankeval.segments import safe_divide

from .classic import _CUTOFF, _GRADE, _LEVEL, _REL, TREC_EVAL, _found
from .ties import top_share

if TYPE_CHECKING:
    from rankeval import RankedLists

_WEIGHT = "weight of each {} document"


def _relative(data: RankedLists, rel: int, k: int | None) -> np.ndarray:
    """Relevant documents in the top *k* (all retrieved: ``None``) over min(k, R); 0 if R = 0."""
    shown = data.counts.astype(float) if k is None else np.full(data.num_queries, float(k))
    return safe_divide(_found(data, rel, k), np.minimum(shown, data.num_rel(rel)))


@dataclass(frozen=True)
class RelativeP(Measure):
    """Relative precision at k (trec_eval ``relative_P.k``): relevant documents in the top k
    over min(k, R), the most the top k could hold; precision up to R, recall after it. Without
    a cutoff, over all retrieved documents (trec_eval ``set_relative_P``)."""

    name: ClassVar[str] = "RelativeP"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = (
        "Precision at k relative to the best possible, min(k, R); trec_eval relative_P"
    )
    source: ClassVar[str] = TREC_EVAL

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return _relative(data, self.rel, self.k)

    def expected(self, data: RankedLists) -> np.ndarray:
        if self.k is None:
            return self.compute(data)  # the retrieved set: no order
        rows = data.relevant_rows(self.rel)
        found = data.query_sum(rows, top_share(data, rows, self.k))
        return safe_divide(found, np.minimum(float(self.k), data.num_rel(self.rel)))


@dataclass(frozen=True)
class SetRelativeP(Measure):
    """Relative set precision (trec_eval ``set_relative_P``): relevant retrieved documents
    over min(n, R); equal to ``RelativeP`` without a cutoff."""

    name: ClassVar[str] = "SetRelativeP"
    description: ClassVar[str] = "Relevant retrieved over min(retrieved, R); trec_eval set_relative_P"
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return _relative(data, self.rel, None)

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # the retrieved set: no order


@dataclass(frozen=True)
class SetAP(Measure):
    """Set average precision (trec_eval ``set_map``): found² / (n · R), the set precision
    times the set recall."""

    name: ClassVar[str] = "SetAP"
    description: ClassVar[str] = (
        "Unranked average precision, set precision times set recall; trec_eval set_map"
    )
    source: ClassVar[str] = TREC_EVAL

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        found = _found(data, self.rel, None)
        return safe_divide(found * found, data.counts * data.num_rel(self.rel))

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # the retrieved set: no order


@dataclass(frozen=True)
class SetF(Measure):
    """Set F measure (trec_eval ``set_F``): (beta + 1) · P · R' / (beta · P + R'), P and R' the
    precision and recall of the retrieved set; 0 if no relevant document is retrieved.
    ``beta`` is trec_eval's weight x of recall relative to precision: van Rijsbergen's F_b
    with b² = beta (beta = 1: the harmonic mean)."""

    name: ClassVar[str] = "SetF"
    description: ClassVar[str] = "F measure of the retrieved set; trec_eval set_F"
    source: ClassVar[str] = TREC_EVAL + "; van Rijsbergen, Information Retrieval, 1979"

    beta: float = param(
        1.0, "weight of recall relative to precision (trec_eval's x = b² of F_b)", domain=Domain(0)
    )
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        found = _found(data, self.rel, None)
        precision = safe_divide(found, data.counts.astype(float))
        recall = safe_divide(found, data.num_rel(self.rel))
        x = self.beta
        return safe_divide((x + 1.0) * precision * recall, x * precision + recall)

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # the retrieved set: no order


@dataclass(frozen=True)
class Utility(Measure):
    """Set utility (trec_eval ``utility``): a · found + b · (n - found) + c · (R - found) +
    d · (N - n - R + found), the contingency table of retrieved and relevant documents
    weighted; N is the collection size (``num_docs``, trec_eval ``-N``)."""

    name: ClassVar[str] = "Utility"
    description: ClassVar[str] = (
        "Weighted contingency table of retrieved and relevant documents; trec_eval utility"
    )
    source: ClassVar[str] = TREC_EVAL

    a: float = param(1.0, _WEIGHT.format("relevant retrieved"))
    b: float = param(-1.0, _WEIGHT.format("non-relevant retrieved"))
    c: float = param(0.0, _WEIGHT.format("relevant not retrieved"))
    d: float = param(0.0, _WEIGHT.format("non-relevant not retrieved"))
    num_docs: int = param(0, "documents in the collection, for d (trec_eval -N)", domain=Domain(0, 2**53))
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        found = _found(data, self.rel, None)
        n = data.counts.astype(float)
        big_r = data.num_rel(self.rel)
        rest = float(self.num_docs) + found - n - big_r
        value: np.ndarray = self.a * found + self.b * (n - found) + self.c * (big_r - found) + self.d * rest
        return value

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # the retrieved set: no order


@dataclass(frozen=True)
class NumNonrelJudgedRet(Measure):
    """Number of judged non-relevant documents retrieved, 0 <= grade < ``rel`` (trec_eval
    ``num_nonrel_judged_ret``; summed over queries)."""

    name: ClassVar[str] = "NumNonrelJudgedRet"
    description: ClassVar[str] = (
        "Number of judged non-relevant documents retrieved; trec_eval num_nonrel_judged_ret"
    )
    source: ClassVar[str] = TREC_EVAL
    integer: ClassVar[bool] = True

    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows, grade = data.judged_rows()
        return data.query_sum(rows, (grade >= 0) & (grade < self.rel))

    def expected(self, data: RankedLists) -> np.ndarray:
        return self.compute(data)  # the retrieved set: no order


@dataclass(frozen=True)
class RprecMult(Measure):
    """Precision at a multiple of R (trec_eval ``Rprec_mult``): relevant documents in the top
    m over m, m = floor(mult · R + 0.9) as trec_eval rounds it; 0 if m = 0."""

    name: ClassVar[str] = "RprecMult"
    at: ClassVar[str | None] = "mult"
    description: ClassVar[str] = "Precision at rank mult x R; trec_eval Rprec_mult"
    source: ClassVar[str] = TREC_EVAL

    mult: float = param(
        1.0, "multiple of R (the number of relevant documents)", domain=Domain(0, low_open=True)
    )
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        cut = np.floor(self.mult * data.num_rel(self.rel) + 0.9)
        rows = data.relevant_rows(self.rel)
        found = data.query_sum(rows, data.rank_of(rows) < cut[data.query[rows]])
        return safe_divide(found, cut)

    def expected(self, data: RankedLists) -> np.ndarray:
        cut = np.floor(self.mult * data.num_rel(self.rel) + 0.9)
        rows = data.relevant_rows(self.rel)
        return safe_divide(data.query_sum(rows, top_share(data, rows, cut)), cut)
