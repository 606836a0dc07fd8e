"""Classic trec_eval measures as a rankeval plugin.

Each measure is a frozen dataclass whose fields are its parameters and whose ``compute``
turns the ranked lists of all queries into one value per query with numpy segment
operations (no loop over queries). Definitions follow trec_eval 9.0.8; the docs page of each
measure gives the formula.

This package is registered through the same ``register_measures`` hook as any third-party
plugin, so it doubles as the example of how to write one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rankeval import Domain, Measure, hookimpl, param
from rankeval.segments import safe_divide, segment_cumsum

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
    trec_prefixes: ClassVar = ("map_cut",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(self.rel)
        rank = data.rank_of(rows)
        precision = (data.nth(rows) + 1.0) / (rank + 1.0)  # precision at each relevant row
        if self.k is not None:
            precision = precision * (rank < self.k)
        return safe_divide(data.query_sum(rows, precision), data.num_rel(self.rel))


@dataclass(frozen=True)
class NDCG(Measure):
    """Normalised discounted cumulative gain, trec_eval's ``ndcg`` / ``ndcg_cut.k``: gain =
    relevance grade, discount log2(rank + 1), ideal ranking of all judged documents."""

    name: ClassVar[str] = "nDCG"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Normalised DCG, gain = grade, log2 discount; trec_eval ndcg / ndcg_cut"
    source: ClassVar[str] = TREC_EVAL + "; Järvelin & Kekäläinen, TOIS 2002"
    aliases: ClassVar = {"ndcg": {}}
    trec_prefixes: ClassVar = ("ndcg_cut",)

    k: int | None = param(None, _CUTOFF)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        rows = data.relevant_rows(np.nextafter(0, 1))  # gain = grade for grades > 0
        rank = data.rank_of(rows)
        discounted = data.relevance_of(rows) / np.log2(rank + 2.0)
        if self.k is not None:
            discounted = discounted * (rank < self.k)
        dcg = data.query_sum(rows, discounted)
        jrank = data.judged_rank()
        jgain = np.where(data.judged_relevance > 0, data.judged_relevance, 0.0)
        if self.k is not None:
            jgain = jgain * (jrank < self.k)
        ideal = np.bincount(
            data.judged_query(), weights=jgain / np.log2(jrank + 2.0), minlength=data.num_queries
        )
        return safe_divide(dcg, ideal)


@dataclass(frozen=True)
class P(Measure):
    """Precision at k: relevant documents in the top k divided by k (trec_eval ``P.k``);
    without a cutoff, over all retrieved documents (trec_eval ``set_P``)."""

    name: ClassVar[str] = "P"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Precision at k; trec_eval P.k (set_P without cutoff)"
    source: ClassVar[str] = TREC_EVAL
    trec_prefixes: ClassVar = ("P",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        found = _found(data, self.rel, self.k)
        if self.k is None:
            return safe_divide(found, data.counts.astype(float))
        return found / self.k


@dataclass(frozen=True)
class R(Measure):
    """Recall at k: relevant documents in the top k over all relevant documents
    (trec_eval ``recall.k``; ``set_recall`` without a cutoff)."""

    name: ClassVar[str] = "R"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "Recall at k; trec_eval recall.k (set_recall without cutoff)"
    source: ClassVar[str] = TREC_EVAL
    aliases: ClassVar = {"Recall": {}}
    trec_prefixes: ClassVar = ("recall",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return safe_divide(_found(data, self.rel, self.k), data.num_rel(self.rel))


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
        first = data.first_rank(data.relevant_rows(self.rel))
        if self.k is not None:
            first[first >= self.k] = -1
        return safe_divide(np.ones(len(first)), np.where(first >= 0, first + 1.0, 0.0))


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
        rows = data.judged_rows()
        rel = data.judged_row_relevance
        nonrel = (rel >= 0) & (rel < self.rel)
        hit = rel >= self.rel
        q = data.query[rows]
        nonrel_above = segment_cumsum(q, nonrel) - nonrel
        num_rel = data.num_rel(self.rel)
        jrel = data.judged_relevance
        num_nonrel = np.bincount(
            data.judged_query(), weights=(jrel >= 0) & (jrel < self.rel), minlength=data.num_queries
        )
        denom = np.minimum(num_nonrel, num_rel)[q]
        penalty = np.zeros(len(rows))
        np.divide(np.minimum(nonrel_above, num_rel[q]), denom, out=penalty, where=denom > 0)
        contrib = np.where(nonrel_above > 0, 1.0 - penalty, 1.0)
        return safe_divide(data.query_sum(rows, contrib * hit), num_rel)


@dataclass(frozen=True)
class Success(Measure):
    """1 if a relevant document is in the top k, else 0 (trec_eval ``success.k``)."""

    name: ClassVar[str] = "Success"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "1 if any relevant document is in the top k; trec_eval success.k"
    source: ClassVar[str] = TREC_EVAL
    trec_prefixes: ClassVar = ("success",)

    k: int | None = param(None, _CUTOFF)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def compute(self, data: RankedLists) -> np.ndarray:
        return (_found(data, self.rel, self.k) > 0).astype(float)


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
        rows = data.judged_rows()
        judged = data.query_sum(rows, None if self.k is None else data.rank_of(rows) < self.k)
        shown = data.counts if self.k is None else np.minimum(data.counts, self.k)
        return safe_divide(judged, shown.astype(float))


MEASURES: tuple[type[Measure], ...] = (
    AP,
    NDCG,
    P,
    R,
    RR,
    Rprec,
    Bpref,
    Success,
    NumRet,
    NumRel,
    NumRelRet,
    Judged,
)


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register the classic measures."""
    for cls in MEASURES:
        register(cls)


# ------------------------------------------------------------- random-ranking baseline
# Exact expectations under a uniformly random ordering of each query's candidates (for
# ``rankeval.random_baseline``). A query has *n* candidates, *c* of them relevant (grade >=
# ``rel``), *R* relevant documents in the qrels, cutoff ``m = min(k, n, max_docs)``; a random
# order puts each candidate at each rank with probability 1/n and any two candidates at any
# two ranks with probability 1/(n(n-1)), so:
#
# * P@k = c·m/(n·k) (hypergeometric mean); P without cutoff = c/n; R@k = c·m/(n·R);
#   Rprec = c·min(R, n)/(n·R); Judged@k = (judged candidates)/n; NumRelRet = c·min(n,
#   max_docs)/n; NumRet and NumRel do not depend on the order;
# * AP@k = (1/R) Σ_{i=1..m} (1/i)·E[rel_i · Σ_{j<=i} rel_j]
#   = (1/R) [(c/n)·H_m + c(c-1)/(n(n-1))·(m - H_m)], H_m the harmonic number;
# * RR@k = Σ_{i=1..m} (1/i)·C(n-i, c-1)/C(n, c) (the first relevant document at rank i);
# * Success@k = 1 - C(n-c, m)/C(n, m);
# * nDCG@k = ḡ·Σ_{i=1..m} 1/log2(i+1) / IDCG@k, ḡ the mean gain of the candidates (DCG is
#   linear in the gains, and each rank holds a candidate's gain with probability 1/n).
#
# The samplers value one random ordering of one query from the ranks of its judged candidates.
# Subclasses (which may compute something else) get neither: ``type(measure)`` must be one of
# these classes.
if TYPE_CHECKING:
    from rankeval import Candidates, RandomModel, Sampler

_EXACT: tuple[type[Measure], ...] = (AP, P, R, RR, NDCG, Success, Rprec, Judged, NumRet, NumRel, NumRelRet)


def _f(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)



def _log_comb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    out: np.ndarray = gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)
    return out


def _ideal_dcg(cand: Candidates, k: int | None) -> np.ndarray:
    """``(Q,)`` DCG@k of the ideal ranking of each kept query's judged documents."""
    v = cand.view
    jrank = v.judged_rank()
    gain = np.where(v.judged_relevance > 0, v.judged_relevance, 0.0)
    if k is not None:
        gain = gain * (jrank < k)
    ideal = np.bincount(v.judged_query(), weights=gain / np.log2(jrank + 2.0), minlength=v.num_queries)
    return _f(np.asarray(ideal, dtype=np.float64)[cand.keep])


def random_expectation(measure: Measure, cand: Candidates) -> np.ndarray:
    """Exact per-query expectation of a classic measure under a random ordering."""
    from scipy.special import digamma

    kind = type(measure).name
    n = cand.n.astype(np.float64)
    k: int | None = getattr(measure, "k", None)
    rel = getattr(measure, "rel", 1)
    c = cand.count(cand.grades >= rel)
    big_r = cand.num_rel(rel)
    m = cand.cut(k)
    shown = cand.cut(None)
    if kind == "NumRet":
        return shown
    if kind == "NumRel":
        return big_r
    if kind == "NumRelRet":
        return safe_divide(c * shown, n)
    if kind == "P":
        return safe_divide(c, n) if k is None else safe_divide(c * m, n) / k
    if kind == "R":
        return safe_divide(safe_divide(c * m, n), big_r)
    if kind == "Rprec":
        return safe_divide(safe_divide(c * np.minimum(big_r, shown), n), big_r)
    if kind == "Judged":
        judged = cand.count(np.ones(len(cand.grades)))
        return np.where(m > 0, safe_divide(judged, n), 0.0)
    if kind == "AP":
        harmonic = digamma(m + 1) + np.euler_gamma
        pair = safe_divide(c * (c - 1), n * (n - 1))
        return safe_divide(safe_divide(c, n) * harmonic + pair * (m - harmonic), big_r)
    if kind == "Success":
        none = np.where(n - c >= m, np.exp(_log_comb(n - c, m) - _log_comb(n, m)), 0.0)
        return np.where((c > 0) & (m > 0), 1.0 - none, 0.0)
    if kind == "nDCG":
        gain = cand.count(np.where(cand.grades > 0, cand.grades, 0.0))
        top = int(m.max()) if len(m) else 0
        disc = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, top + 2)))))
        return safe_divide(safe_divide(gain, n) * disc[m.astype(np.int64)], _ideal_dcg(cand, k))
    if kind == "RR":
        # P(first relevant at rank i) = C(n - i, c - 1) / C(n, c), summed over i <= m
        mi = m.astype(np.int64)
        q = np.repeat(np.arange(len(n)), mi)
        i = np.arange(len(q)) - np.repeat(np.cumsum(mi) - mi, mi) + 1.0
        nq, cq = n[q], c[q]
        ok = (cq > 0) & (nq - i >= cq - 1)
        logp = _log_comb(np.where(ok, nq - i, 0), np.where(ok, cq - 1, 0)) - _log_comb(
            nq, np.where(ok, cq, 0)
        )
        terms = np.where(ok, np.exp(logp) / i, 0.0)
        return np.bincount(q, weights=terms, minlength=len(n)).astype(np.float64)
    raise AssertionError(kind)  # pragma: no cover


def classic_values(
    measure: Measure,
    pos: np.ndarray,
    grades: np.ndarray,
    n: int,
    num_rel: float,
    ideal: float,
    max_docs: int | None,
) -> np.ndarray:
    """``(samples,)`` value of a classic measure on one query whose judged candidates (with
    *grades*) sit at the 0-based ranks *pos* (``(samples, c)``) of an ordering of *n*;
    *num_rel*: the query's relevant documents, *ideal*: its ideal DCG (nDCG only)."""
    kind = type(measure).name
    k: int | None = getattr(measure, "k", None)
    rel = getattr(measure, "rel", 1)
    eff = float(min([n, *(c for c in (k, max_docs) if c is not None)]))
    shown = float(min(n, max_docs) if max_docs is not None else n)
    s = len(pos)
    r = pos[:, grades >= rel]
    if kind == "NumRet":
        return np.full(s, shown)
    if kind == "NumRel":
        return np.full(s, float(num_rel))
    if kind == "NumRelRet":
        return _f((r < shown).sum(axis=1))
    if kind == "P":
        if k is None:
            return (r < shown).sum(axis=1) / shown if shown else np.zeros(s)
        return _f((r < eff).sum(axis=1) / k)
    if kind == "R":
        return (r < eff).sum(axis=1) / num_rel if num_rel else np.zeros(s)
    if kind == "Rprec":
        return (r < min(num_rel, shown)).sum(axis=1) / num_rel if num_rel else np.zeros(s)
    if kind == "Success":
        return _f((r < eff).any(axis=1))
    if kind == "Judged":
        return (pos < eff).sum(axis=1) / eff if eff else np.zeros(s)
    if kind == "RR":
        if r.shape[1] == 0:
            return np.zeros(s)
        first = r.min(axis=1)
        return np.where(first < eff, 1.0 / (first + 1.0), 0.0)
    if kind == "AP":
        if r.shape[1] == 0 or not num_rel:
            return np.zeros(s)
        srt = np.sort(r, axis=1)
        prec = np.arange(1, srt.shape[1] + 1) / (srt + 1.0)
        return _f(np.where(srt < eff, prec, 0.0).sum(axis=1) / num_rel)
    if kind == "nDCG":
        if not ideal:
            return np.zeros(s)
        gain = np.where(grades > 0, grades, 0.0)
        return _f(np.where(pos < eff, gain / np.log2(pos + 2.0), 0.0).sum(axis=1) / ideal)
    raise AssertionError(kind)  # pragma: no cover


def random_sampler(measure: Measure, cand: Candidates) -> Sampler:
    """The :func:`classic_values` of *measure* on each query of *cand*."""
    num_rel = cand.num_rel(getattr(measure, "rel", 1))
    ideal = _ideal_dcg(cand, getattr(measure, "k", None)) if isinstance(measure, NDCG) else None

    def sample(q: int, pos: np.ndarray) -> np.ndarray:
        return classic_values(
            measure,
            pos,
            cand.grades_of(q),
            int(cand.n[q]),
            float(num_rel[q]),
            0.0 if ideal is None else float(ideal[q]),
            cand.max_docs,
        )

    return sample


@hookimpl
def random_model(measure: Measure) -> RandomModel | None:
    """The closed forms of the classic measures under a random ordering (not of subclasses)."""
    from functools import partial

    from rankeval import RandomModel

    if type(measure) not in _EXACT:
        return None
    return RandomModel(partial(random_expectation, measure), partial(random_sampler, measure))
