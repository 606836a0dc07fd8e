"""The random-ranking baseline: each measure's value under a uniformly random ordering of each
query's candidates (the documents a run retrieved), as Rummer-Downing & Weeds report it
("Random Baseline 0.73 ± 0.04", bootstrapped over 10,000 repeats).

Expected values are exact where a closed form exists. For a query with *n* candidates, *c*
of them relevant (grade ≥ ``rel``), *R* relevant documents in the qrels, cutoff ``m =
min(k, n)`` (and ``max_docs``), a uniformly random order puts each candidate at each rank
with probability ``1/n`` and any two candidates at any two ranks with probability
``1/(n(n-1))``, so:

* ``P@k = c·m/(n·k)`` (hypergeometric mean); ``P`` without cutoff ``= c/n``;
  ``R@k = c·m/(n·R)``; ``Rprec = c·min(R, n)/(n·R)``; ``Judged@k = (judged candidates)/n``;
  ``NumRelRet = c·min(n, max_docs)/n``; ``NumRet``, ``NumRel`` do not depend on the order;
* ``AP@k = (1/R) Σ_{i=1..m} (1/i)·E[rel_i · Σ_{j≤i} rel_j]
  = (1/R) [ (c/n)·H_m + c(c-1)/(n(n-1))·(m - H_m) ]``, ``H_m`` the harmonic number;
* ``RR@k = Σ_{i=1..m} (1/i)·C(n-i, c-1)/C(n, c)`` (the first relevant document at rank *i*);
* ``Success@k = 1 - C(n-c, m)/C(n, m)``;
* ``nDCG@k = ḡ·Σ_{i=1..m} 1/log2(i+1) / IDCG@k``, ``ḡ`` the mean gain of the candidates
  (DCG is linear in the gains, and each rank holds a candidate's gain with probability 1/n).

Every other measure (and every measure at ``level=2`` or from another plugin) is estimated by
Monte Carlo: *samples* random orderings, each one evaluated by the measure itself. The spread
of the baseline — the standard deviation of the aggregate (the mean over queries) across
random orderings, the "± 0.04" — is always a Monte Carlo estimate. For the classic measures the
random orderings are drawn as rank positions of the judged candidates only (no run needs to be
built); for the others the run is replicated *samples* times with random scores and
evaluated in chunks.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.data import Qrels, Run, as_qrels, as_run
from rankeval.engine import check_options
from rankeval.errors import RankevalWarning, UsageError
from rankeval.measure import Measure
from rankeval.ranked import Alignment, RankedLists, segment_offsets
from rankeval.stats import MAX_SAMPLES

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.registry import Registry

__all__ = ["EXACT", "RandomBaseline", "random_baseline"]

#: the measures (of the ``trec`` plugin, at nesting level 1) whose expectation is exact
EXACT = ("AP", "P", "R", "RR", "nDCG", "Success", "Rprec", "Judged", "NumRet", "NumRel", "NumRelRet")
#: elements of one chunk of random draws (samples x candidates)
CHUNK = 1 << 20
#: run rows per chunk of the replicated run (Monte Carlo through the measures)
ROWS_PER_CHUNK = 1 << 20

Progress = Callable[[int], None]


@dataclass
class RandomBaseline:
    """Expected values of measures under a uniformly random ordering of a run's candidates.

    Attributes:
        measures: canonical measure specs, in order.
        query_ids: ``(Q,)`` the queries (as :func:`rankeval.evaluate` reports them).
        values: ``(M, Q)`` expected value of each measure on each query.
        aggregate: ``(M,)`` expected aggregate (mean over queries, or the measure's own).
        exact: ``(M,)`` whether the expectation is exact (else a Monte Carlo mean).
        sample_aggregates: ``(M, samples)`` the aggregate under each random ordering (Monte
            Carlo; its standard deviation is :attr:`se`).
        std: ``(M,)`` standard deviation over queries of the per-query values of a random
            ordering (Monte Carlo; root of the mean over orderings of the variance).
        samples: number of random orderings.
        seed: the seed of the random orderings.
        source: name of the run whose candidates were shuffled.
        integer_measures: measures whose aggregate is a sum (counts).
    """

    measures: list[str]
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: np.ndarray
    exact: np.ndarray
    sample_aggregates: np.ndarray
    std: np.ndarray
    samples: int
    seed: int | None
    source: str
    integer_measures: set[str] = field(default_factory=set)

    @property
    def se(self) -> np.ndarray:
        """``(M,)`` standard deviation of the aggregate over random orderings (the spread of
        the random baseline's score: "0.73 ± 0.04")."""
        if self.sample_aggregates.shape[1] < 2:
            return np.full(len(self.measures), np.nan)
        return np.asarray(self.sample_aggregates.std(axis=1, ddof=1), dtype=np.float64)

    def interval(self, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: the alpha/2 and 1 - alpha/2 quantiles of the aggregate over random orderings."""
        if self.sample_aggregates.shape[1] == 0:
            nan = np.full(len(self.measures), np.nan)
            return nan, nan.copy()
        low, high = np.quantile(self.sample_aggregates, [alpha / 2, 1 - alpha / 2], axis=1)
        return low, high

    def to_frame(self) -> pd.DataFrame:
        """Long DataFrame ``run, query_id, measure, value`` (run ``random``, aggregate rows
        ``query_id == "all"``), as :func:`rankeval.evaluate` returns."""
        import pandas as pd

        rows = []
        for i, m in enumerate(self.measures):
            rows += [("random", q, m, float(v)) for q, v in zip(self.query_ids, self.values[i], strict=True)]
            rows.append(("random", "all", m, float(self.aggregate[i])))
        return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


# ---------------------------------------------------------------------------------------
def random_baseline(
    qrels: Any,
    run: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    samples: int = 10_000,
    seed: int | None = 0,
    exact: bool = True,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str = "error",
    docinfo: str | Path | None = None,
    registry: Registry | None = None,
    progress: Progress | None = None,
) -> RandomBaseline:
    """The random-ranking baseline of *run*'s candidates.

    Args:
        qrels: qrels (path, :class:`~rankeval.Qrels`, DataFrame or dict).
        run: the run whose retrieved documents are the candidates of each query.
        measures: measure specs or objects.
        samples: random orderings for the Monte Carlo estimates (the spread, and the
            expectation of measures without a closed form).
        seed: seed of :func:`numpy.random.default_rng`.
        exact: use the closed forms where there is one; ``False``: Monte Carlo for every
            measure (to check the closed forms).
        missing_zero: as for :func:`rankeval.evaluate`.
        nest_sep: as for :func:`rankeval.evaluate`.
        max_docs: as for :func:`rankeval.evaluate`; it truncates the random ordering, not
            the candidates.
        on_duplicate: as for :func:`rankeval.evaluate`.
        docinfo: as for :func:`rankeval.evaluate`.
        registry: as for :func:`rankeval.evaluate`.
        progress: called with units of work done (queries, then chunks), for a progress bar;
            ``work()`` gives the total.

    Returns:
        A :class:`RandomBaseline`.
    """
    from rankeval.engine import aggregate, measure_plugins, resolve_measures

    measure_list = resolve_measures(measures, registry)
    plugins = measure_plugins(measure_list, registry)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"samples must be an integer from 1 to {MAX_SAMPLES:,}, not {samples!r}")
    check_options(max_docs, nest_sep)
    qrels_obj: Qrels = as_qrels(qrels)
    if docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(docinfo)
    run_obj = as_run(run)
    alignment = Alignment(qrels_obj, run_obj, nest_sep=nest_sep, max_docs=None, on_duplicate=on_duplicate)
    view = alignment.view(1)
    keep = np.ones(view.num_queries, dtype=bool) if missing_zero else view.retrieved.copy()
    query_ids = view.query_ids[keep]
    cand = _Candidates.of(view, keep)
    kinds = [_kind(m) for m in measure_list]
    classic = [i for i, k in enumerate(kinds) if k is not None]
    other = [i for i, k in enumerate(kinds) if k is None]

    n_m, n_q = len(measure_list), len(query_ids)
    values = np.full((n_m, n_q), np.nan)
    agg = np.full(n_m, np.nan)
    sample_aggs = np.full((n_m, samples), np.nan)
    std = np.full(n_m, np.nan)
    is_exact = np.zeros(n_m, dtype=bool)
    rng = np.random.default_rng(seed)
    if classic:
        ms = [measure_list[i] for i in classic]
        mean, s_agg, s_std = _classic_samples(ms, cand, max_docs, samples, rng, progress)
        for j, i in enumerate(classic):
            sample_aggs[i], std[i] = s_agg[j], s_std[j]
            if exact:
                values[i] = _classic_exact(ms[j], cand, max_docs)
                is_exact[i] = True
            else:
                values[i] = mean[j]
            agg[i] = aggregate(ms[j], values[i], plugins[i]) if exact else float(s_agg[j].mean())
    if other:
        ms = [measure_list[i] for i in other]
        mean, s_agg, s_std = _engine_samples(
            ms,
            [plugins[i] for i in other],
            qrels_obj,
            run_obj,
            query_ids,
            missing_zero,
            nest_sep,
            max_docs,
            on_duplicate,
            samples,
            rng,
            progress,
        )
        for j, i in enumerate(other):
            values[i], sample_aggs[i], std[i] = mean[j], s_agg[j], s_std[j]
            agg[i] = float(s_agg[j].mean())
    return RandomBaseline(
        measures=[str(m) for m in measure_list],
        query_ids=query_ids,
        values=values,
        aggregate=agg,
        exact=is_exact,
        sample_aggregates=sample_aggs,
        std=std,
        samples=samples,
        seed=seed,
        source=run_obj.name,
        integer_measures={str(m) for m in measure_list if m.integer},
    )


def work(qrels_queries: int, run_rows: int, measures: list[Measure], samples: int) -> int:
    """Units of progress :func:`random_baseline` reports: one per query for the classic
    measures, one per chunk of replicated runs for the others."""
    kinds = [_kind(m) for m in measures]
    total = qrels_queries if any(k is not None for k in kinds) else 0
    if any(k is None for k in kinds):
        total += -(-samples // max(1, ROWS_PER_CHUNK // max(run_rows, 1)))
    return total


# --------------------------------------------------------------------------- candidates
@dataclass
class _Candidates:
    """Per kept query: number of candidates, the grades of the judged candidates (segments),
    and the qrels-side numbers the classic measures need."""

    n: np.ndarray  # (Q,) candidates (retrieved rows)
    offsets: np.ndarray  # (Q+1,) segments of grades
    grades: np.ndarray  # judged candidates' grades
    view: RankedLists
    keep: np.ndarray  # (Q_view,) bool
    rows: np.ndarray  # the view's row of each of grades

    @classmethod
    def of(cls, view: RankedLists, keep: np.ndarray) -> _Candidates:
        rows = view.judged_row_index
        q = view.query[rows]
        order = np.argsort(q, kind="stable")
        index = np.flatnonzero(keep)
        remap = np.full(view.num_queries, -1, dtype=np.int64)
        remap[index] = np.arange(len(index))
        qk = remap[q[order]]
        grades = view.judged_row_relevance[order][qk >= 0]
        offsets = segment_offsets(qk[qk >= 0], len(index))
        return cls(view.counts[keep].astype(np.int64), offsets, grades, view, keep, rows[order][qk >= 0])

    def num_rel(self, rel: float) -> np.ndarray:
        return _f(np.asarray(self.view.num_rel(rel), dtype=np.float64)[self.keep])

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per query: judged candidates where *mask* (over :attr:`grades`) holds."""
        q = np.repeat(np.arange(len(self.n)), np.diff(self.offsets))
        return np.bincount(q, weights=mask, minlength=len(self.n)).astype(np.float64)

    def ideal_dcg(self, k: int | None) -> np.ndarray:
        v = self.view
        jrank = v.judged_rank()
        gain = np.where(v.judged_relevance > 0, v.judged_relevance, 0.0)
        if k is not None:
            gain = gain * (jrank < k)
        ideal = np.bincount(v.judged_query(), weights=gain / np.log2(jrank + 2.0), minlength=v.num_queries)
        return _f(np.asarray(ideal, dtype=np.float64)[self.keep])


def _kind(measure: Measure) -> str | None:
    """The classic measure family of *measure* if its expectation has a closed form here."""
    try:
        import rankeval_trec
    except ImportError:  # pragma: no cover - shipped in the same distribution
        return None
    cls = type(measure)
    if getattr(measure, "level", 1) != 1 or cls.name not in EXACT:
        return None
    if getattr(rankeval_trec, cls.__name__, None) is not cls:
        return None
    return str(cls.name)


def _f(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.broadcast_to(np.asarray(den, dtype=np.float64), num.shape)
    out = np.zeros(num.shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _cut(n: np.ndarray, k: int | None, max_docs: int | None) -> np.ndarray:
    m = n.astype(np.float64)
    for c in (k, max_docs):
        if c is not None:
            m = np.minimum(m, c)
    return m


def _log_comb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    out: np.ndarray = gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)
    return out


# ------------------------------------------------------------------------- closed forms
def _classic_exact(measure: Measure, cand: _Candidates, max_docs: int | None) -> np.ndarray:
    """Exact per-query expectation of a classic measure under a random ordering."""
    from scipy.special import digamma

    kind = _kind(measure)
    n = cand.n.astype(np.float64)
    k: int | None = getattr(measure, "k", None)
    rel = getattr(measure, "rel", 1)
    c = cand.count(cand.grades >= rel)
    big_r = cand.num_rel(rel)
    m = _cut(cand.n, k, max_docs)
    shown = _cut(cand.n, None, max_docs)
    if kind == "NumRet":
        return shown
    if kind == "NumRel":
        return big_r
    if kind == "NumRelRet":
        return _div(c * shown, n)
    if kind == "P":
        return _div(c, n) if k is None else _div(c * m, n) / k
    if kind == "R":
        return _div(_div(c * m, n), big_r)
    if kind == "Rprec":
        return _div(_div(c * np.minimum(big_r, shown), n), big_r)
    if kind == "Judged":
        judged = cand.count(np.ones(len(cand.grades)))
        return np.where(m > 0, _div(judged, n), 0.0)
    if kind == "AP":
        harmonic = digamma(m + 1) + np.euler_gamma
        pair = _div(c * (c - 1), n * (n - 1))
        return _div(_div(c, n) * harmonic + pair * (m - harmonic), big_r)
    if kind == "Success":
        none = np.where(n - c >= m, np.exp(_log_comb(n - c, m) - _log_comb(n, m)), 0.0)
        return np.where((c > 0) & (m > 0), 1.0 - none, 0.0)
    if kind == "nDCG":
        gain = cand.count(np.where(cand.grades > 0, cand.grades, 0.0))
        top = int(m.max()) if len(m) else 0
        disc = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, top + 2)))))
        return _div(_div(gain, n) * disc[m.astype(np.int64)], cand.ideal_dcg(k))
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


# ----------------------------------------------------------------- Monte Carlo (classic)
def random_positions(rng: np.random.Generator, n: int, c: int, samples: int) -> np.ndarray:
    """``(samples, c)``: in each row, the 0-based ranks of *c* items under a uniformly random
    ordering of *n* items (a uniformly random injection into ``0..n-1``).

    Few items among many: draw every rank uniformly and redraw the later of any two equal
    ranks until all differ (the result is uniform: the procedure commutes with relabelling
    the ranks, and injections form one orbit). Otherwise: the first *c* entries of the
    argsort of uniform keys.
    """
    if c == 0:
        return np.zeros((samples, 0), dtype=np.int64)
    if 2 * c > n:
        keys = rng.random((samples, n))
        return np.argsort(keys, axis=1)[:, :c].astype(np.int64)
    pos = rng.integers(0, n, size=(samples, c), dtype=np.int64)
    todo = np.arange(samples)
    while len(todo):
        sub = pos[todo]
        order = np.argsort(sub, axis=1, kind="stable")
        srt = np.take_along_axis(sub, order, axis=1)
        dup = np.zeros(sub.shape, dtype=bool)
        np.put_along_axis(dup, order[:, 1:], srt[:, 1:] == srt[:, :-1], axis=1)
        rows = dup.any(axis=1)
        if not rows.any():
            break
        todo, dup = todo[rows], dup[rows]
        r, col = np.nonzero(dup)
        pos[todo[r], col] = rng.integers(0, n, size=len(r), dtype=np.int64)
    return pos


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
    *grades*) sit at the 0-based ranks *pos* (``(samples, c)``) of an ordering of *n*."""
    kind = _kind(measure)
    k: int | None = getattr(measure, "k", None)
    rel = getattr(measure, "rel", 1)
    eff = float(_cut(np.array([n]), k, max_docs)[0])
    shown = float(_cut(np.array([n]), None, max_docs)[0])
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


class _Moments:
    """Per-sample running sums over queries: aggregate and spread of each random ordering."""

    def __init__(self, n_measures: int, samples: int) -> None:
        self.total = np.zeros((n_measures, samples))
        self.square = np.zeros((n_measures, samples))
        self.count = 0

    def add(self, values: np.ndarray) -> None:  # (M, samples) values of one query
        self.total += values
        self.square += values * values
        self.count += 1

    def result(self, measures: list[Measure]) -> tuple[np.ndarray, np.ndarray]:
        q = self.count
        mean = self.total / q if q else np.full_like(self.total, np.nan)
        agg = np.array([self.total[j] if m.integer else mean[j] for j, m in enumerate(measures)])
        if q < 2:
            return agg, np.full(len(measures), np.nan)
        var = np.maximum(self.square - q * mean * mean, 0.0) / (q - 1)
        return agg, np.sqrt(var.mean(axis=1))


def _classic_samples(
    measures: list[Measure],
    cand: _Candidates,
    max_docs: int | None,
    samples: int,
    rng: np.random.Generator,
    progress: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo over random orderings for the classic measures: ``(M, Q)`` per-query
    means, ``(M, samples)`` aggregates, ``(M,)`` spread over queries."""
    n_q = len(cand.n)
    mean = np.zeros((len(measures), n_q))
    moments = _Moments(len(measures), samples)
    num_rel = {rel: cand.num_rel(rel) for rel in {getattr(m, "rel", 1) for m in measures}}
    ideal = {k: cand.ideal_dcg(k) for k in {getattr(m, "k", None) for m in measures if _kind(m) == "nDCG"}}
    for q in range(n_q):
        n = int(cand.n[q])
        grades = cand.grades[cand.offsets[q] : cand.offsets[q + 1]]
        vals = np.zeros((len(measures), samples))
        step = max(1, CHUNK // max(len(grades), 1))
        for start in range(0, samples, step):
            rows = min(step, samples - start)
            pos = random_positions(rng, n, len(grades), rows) if n else np.zeros((rows, 0), dtype=np.int64)
            for j, m in enumerate(measures):
                vals[j, start : start + rows] = classic_values(
                    m,
                    pos,
                    grades,
                    n,
                    float(num_rel[getattr(m, "rel", 1)][q]),
                    float(ideal[getattr(m, "k", None)][q]) if _kind(m) == "nDCG" else 0.0,
                    max_docs,
                )
        mean[:, q] = vals.mean(axis=1)
        moments.add(vals)
        if progress is not None:
            progress(1)
    agg, std = moments.result(measures)
    return mean, agg, std


# ------------------------------------------------------------ Monte Carlo (any measure)
def _engine_samples(
    measures: list[Measure],
    plugins: list[str | None],
    qrels: Qrels,
    run: Run,
    query_ids: np.ndarray,
    missing_zero: bool,
    nest_sep: str | None,
    max_docs: int | None,
    on_duplicate: str,
    samples: int,
    rng: np.random.Generator,
    progress: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo through the measures themselves: the run (and the qrels) replicated
    once per random ordering, query ``s<US>qid`` of copy *s* with uniform random scores,
    evaluated in chunks of about :data:`ROWS_PER_CHUNK` rows. *plugins*: the plugin of each
    measure, named if its code fails."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankeval.engine import _per_query, aggregate_lists

    n_q = len(query_ids)
    qpos = {str(q): i for i, q in enumerate(query_ids)}
    rt = run.table
    rq = pc.cast(rt.column("query_id"), pa.string()).to_numpy(zero_copy_only=False).astype(str)
    keep_r = np.flatnonzero(np.isin(rq, query_ids.astype(str)))
    qt = qrels.table
    qq = pc.cast(qt.column("query_id"), pa.string()).to_numpy(zero_copy_only=False).astype(str)
    keep_q = np.flatnonzero(np.isin(qq, query_ids.astype(str)))
    r_code = np.array([qpos[q] for q in rq[keep_r]], dtype=np.int64)
    q_code = np.array([qpos[q] for q in qq[keep_q]], dtype=np.int64)
    base_r, base_q = rt.take(pa.array(keep_r)), qt.take(pa.array(keep_q))
    sums = np.zeros((len(measures), n_q))
    counts = np.zeros((len(measures), n_q))
    moments = _Moments(len(measures), samples)
    sample_vals: list[list[np.ndarray]] = [[] for _ in measures]
    step = max(1, ROWS_PER_CHUNK // max(len(keep_r), 1))
    for start in range(0, samples, step):
        rows = min(step, samples - start)
        names = np.array([f"{s}\x1f{q}" for s in range(rows) for q in query_ids], dtype=object)
        rep_r = base_r.take(pa.array(np.tile(np.arange(len(keep_r)), rows)))
        rep_r = rep_r.set_column(
            rep_r.column_names.index("query_id"),
            "query_id",
            pa.DictionaryArray.from_arrays(
                pa.array(
                    (np.repeat(np.arange(rows), len(keep_r)) * n_q + np.tile(r_code, rows)).astype(np.int32)
                ),
                pa.array(names, pa.string()),
            ),
        )
        rep_r = rep_r.set_column(
            rep_r.column_names.index("score"), "score", pa.array(rng.random(rows * len(keep_r)))
        )
        rep_q = base_q.take(pa.array(np.tile(np.arange(len(keep_q)), rows)))
        rep_q = rep_q.set_column(
            rep_q.column_names.index("query_id"),
            "query_id",
            pa.array(
                names[np.repeat(np.arange(rows), len(keep_q)) * n_q + np.tile(q_code, rows)], pa.string()
            ),
        )
        alignment = Alignment(
            Qrels(rep_q, qrels.source),
            Run(rep_r, run.name, None, None, run.tie_break),
            nest_sep=nest_sep,
            max_docs=max_docs,
            on_duplicate=on_duplicate,
        )
        lookup = {name: i for i, name in enumerate(names)}
        block = np.full((len(measures), rows, n_q), np.nan)
        for j, m in enumerate(measures):
            with warnings.catch_warnings():  # about the copies: noise (the real run was evaluated)
                warnings.simplefilter("ignore", RankevalWarning)
                view, ids, vals, index = _per_query(alignment, m, missing_zero, plugin=plugins[j])
            where = np.array([lookup[str(i)] for i in ids], dtype=np.int64)
            block[j].reshape(-1)[where] = vals
            if _custom_aggregate(m):
                # the measure's own aggregate, one random ordering at a time
                copy = where // n_q
                order = np.argsort(copy, kind="stable")
                bounds = segment_offsets(copy[order], rows)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RankevalWarning)
                    sample_vals[j].append(
                        np.array(
                            [
                                aggregate_lists(m, view, vals[sel], index[sel], plugins[j])
                                for sel in (order[bounds[s] : bounds[s + 1]] for s in range(rows))
                            ]
                        )
                    )
        sums += np.nansum(block, axis=1)
        counts += (~np.isnan(block)).sum(axis=1)
        chunk_moments = _Moments(len(measures), rows)
        for q in range(n_q):
            chunk_moments.add(block[:, :, q])
        moments.total[:, start : start + rows] = chunk_moments.total
        moments.square[:, start : start + rows] = chunk_moments.square
        if progress is not None:
            progress(1)
    moments.count = n_q
    agg, std = moments.result(measures)
    for j, m in enumerate(measures):
        if _custom_aggregate(m):
            agg[j] = np.concatenate(sample_vals[j])
    mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return mean, agg, std


def _custom_aggregate(measure: Measure) -> bool:
    cls = type(measure)
    return (
        cls.aggregate_from_parts is not Measure.aggregate_from_parts or cls.aggregate is not Measure.aggregate
    )
