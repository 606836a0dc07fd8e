"""The classic measures under a random ordering: exact expectations and fast samplers (the
``random_model`` hook, for ``rankeval.random_baseline``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval import Measure, hookimpl
from rankeval.segments import safe_divide

from .classic import AP, NDCG, RR, Judged, NumRel, NumRelRet, NumRet, P, R, Rprec, Success

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
    jrank = v.judged.rank
    gain = np.where(v.judged.relevance > 0, v.judged.relevance, 0.0)
    if k is not None:
        gain = gain * (jrank < k)
    ideal = np.bincount(v.judged.query, weights=gain / np.log2(jrank + 2.0), minlength=v.num_queries)
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
    """The closed forms of the classic measures under a random ordering (not of subclasses,
    nor of nDCG with a gain map)."""
    from functools import partial

    from rankeval import RandomModel

    if type(measure) not in _EXACT:
        return None
    if isinstance(measure, NDCG) and measure.gains is not None:
        return None  # the closed forms take the grade as the gain
    return RandomModel(partial(random_expectation, measure), partial(random_sampler, measure))
