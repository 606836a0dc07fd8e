"""The Monte Carlo of the random-ranking baseline (:mod:`rankeval.engine.random_ranking`): random
orderings drawn as rank positions of the judged candidates (for measures with a sampler), or
the run replicated with random scores and evaluated by the measures themselves (any measure),
in chunks of bounded size.

May import: numpy, ``data``, ``errors``, ``measure``, ``ranked``, ``segments``, ``scoring``,
:mod:`rankeval.extension` (not ``random_ranking``, which imports this module).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.errors import RankevalWarning
from rankeval.io.data import Qrels, Run
from rankeval.measures.base import Measure
from rankeval.ranking.alignment import Alignment
from rankeval.segments import segment_offsets

if TYPE_CHECKING:
    from rankeval.extension import Candidates, Sampler
    from rankeval.options import EvalOptions

__all__ = ["CHUNK", "ROWS_PER_CHUNK", "Progress", "Sampling", "random_positions"]

Progress = Callable[[int], None]
"""``progress(units)``: called with the units of work done, for a progress bar."""


@dataclass
class Sampling:
    """The inputs of the Monte Carlo: the aligned data, the kept queries, the options, the
    draws."""

    qrels: Qrels
    run: Run
    query_ids: np.ndarray
    options: EvalOptions
    samples: int
    rng: np.random.Generator
    progress: Progress | None


#: elements of one chunk of random draws (samples x candidates)
CHUNK = 1 << 20
#: run rows per chunk of the replicated run (Monte Carlo through the measures)
ROWS_PER_CHUNK = 1 << 20


# ----------------------------------------------------------- Monte Carlo (by positions)
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


class _Moments:
    """Per-sample running sums over queries: aggregate and spread of each random ordering.
    A query whose value is undefined (NaN) is left out, as :meth:`Measure.aggregate` leaves
    it out."""

    def __init__(self, n_measures: int, samples: int) -> None:
        self.total = np.zeros((n_measures, samples))
        self.square = np.zeros((n_measures, samples))
        self.count = np.zeros((n_measures, samples))  # defined queries

    def add(self, values: np.ndarray) -> None:  # (M, samples) values of one query
        defined = ~np.isnan(values)
        values = np.where(defined, values, 0.0)
        self.total += values
        self.square += values * values
        self.count += defined

    def result(self, measures: list[Measure]) -> tuple[np.ndarray, np.ndarray]:
        q = self.count
        some = q > 0
        mean = np.where(some, self.total / np.maximum(q, 1), np.nan)
        agg = np.array(
            [
                np.where(some[j], self.total[j], np.nan) if m.integer else mean[j]
                for j, m in enumerate(measures)
            ]
        )
        var = np.where(q >= 2, np.maximum(self.square - q * mean * mean, 0.0) / np.maximum(q - 1, 1), np.nan)
        spread = np.full(len(measures), np.nan)
        known = ~np.isnan(var).all(axis=1)
        spread[known] = np.sqrt(np.nanmean(var[known], axis=1))
        return agg, spread


def _position_samples(
    measures: list[Measure],
    samplers: list[Sampler],
    cand: Candidates,
    samples: int,
    rng: np.random.Generator,
    progress: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo over random orderings drawn as the ranks of each query's judged
    candidates, each measure valued by its sampler: ``(M, Q)`` per-query means,
    ``(M, samples)`` aggregates, ``(M,)`` spread over queries."""
    n_q = len(cand.n)
    mean = np.zeros((len(measures), n_q))
    moments = _Moments(len(measures), samples)
    for q in range(n_q):
        n = int(cand.n[q])
        c = int(cand.offsets[q + 1] - cand.offsets[q])
        vals = np.zeros((len(measures), samples))
        step = max(1, CHUNK // max(c, 1))
        for start in range(0, samples, step):
            rows = min(step, samples - start)
            pos = random_positions(rng, n, c, rows) if n else np.zeros((rows, 0), dtype=np.int64)
            for j, sampler in enumerate(samplers):
                vals[j, start : start + rows] = sampler(q, pos)
        mean[:, q] = vals.mean(axis=1)
        moments.add(vals)
        if progress is not None:
            progress(1)
    agg, std = moments.result(measures)
    return mean, agg, std


# ------------------------------------------------------------ Monte Carlo (any measure)
def _engine_samples(
    measures: list[Measure], plugins: list[str | None], sampling: Sampling
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monte Carlo through the measures themselves: the run (and the qrels) replicated
    once per random ordering, query ``s<US>qid`` of copy *s* with uniform random scores,
    evaluated in chunks of about :data:`ROWS_PER_CHUNK` rows. *plugins*: the plugin of each
    measure, named if its code fails."""
    base = _Replicas.of(sampling)
    n_q = len(sampling.query_ids)
    samples = sampling.samples
    sums = np.zeros((len(measures), n_q))
    counts = np.zeros((len(measures), n_q))
    moments = _Moments(len(measures), samples)
    sample_vals: list[list[np.ndarray]] = [[] for _ in measures]
    step = max(1, ROWS_PER_CHUNK // max(base.run.num_rows, 1))
    for start in range(0, samples, step):
        rows = min(step, samples - start)
        alignment, names = base.alignment(rows, sampling)
        block = _chunk_values(alignment, names, measures, plugins, sampling.options, rows, n_q, sample_vals)
        sums += np.nansum(block, axis=1)
        counts += (~np.isnan(block)).sum(axis=1)
        chunk_moments = _Moments(len(measures), rows)
        for q in range(n_q):
            chunk_moments.add(block[:, :, q])
        moments.total[:, start : start + rows] = chunk_moments.total
        moments.square[:, start : start + rows] = chunk_moments.square
        moments.count[:, start : start + rows] = chunk_moments.count
        if sampling.progress is not None:
            sampling.progress(1)
    agg, std = moments.result(measures)
    for j, m in enumerate(measures):
        if _custom_aggregate(m):
            agg[j] = np.concatenate(sample_vals[j])
    mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return mean, agg, std


@dataclass
class _Replicas:
    """The run's and the qrels' rows of the kept queries, and each row's query (an index
    into the kept queries), from which each chunk of random orderings is replicated."""

    run: Any  # pyarrow.Table
    qrels: Any  # pyarrow.Table
    run_query: np.ndarray
    qrels_query: np.ndarray

    @classmethod
    def of(cls, sampling: Sampling) -> _Replicas:
        import pyarrow as pa
        import pyarrow.compute as pc

        query_ids = sampling.query_ids
        qpos = {str(q): i for i, q in enumerate(query_ids)}
        rt, qt = sampling.run.table, sampling.qrels.table
        rq = pc.cast(rt.column("query_id"), pa.string()).to_numpy(zero_copy_only=False).astype(str)
        keep_r = np.flatnonzero(np.isin(rq, query_ids.astype(str)))
        qq = pc.cast(qt.column("query_id"), pa.string()).to_numpy(zero_copy_only=False).astype(str)
        keep_q = np.flatnonzero(np.isin(qq, query_ids.astype(str)))
        r_code = np.array([qpos[q] for q in rq[keep_r]], dtype=np.int64)
        q_code = np.array([qpos[q] for q in qq[keep_q]], dtype=np.int64)
        return cls(rt.take(pa.array(keep_r)), qt.take(pa.array(keep_q)), r_code, q_code)

    def alignment(self, rows: int, sampling: Sampling) -> tuple[Alignment, np.ndarray]:
        """*rows* copies of the run with random scores, aligned with as many copies of the
        qrels, and the names of the copies' queries (copy-major)."""
        import pyarrow as pa

        query_ids, n_q = sampling.query_ids, len(sampling.query_ids)
        n_r, n_j = self.run.num_rows, self.qrels.num_rows
        names = np.array([f"{s}\x1f{q}" for s in range(rows) for q in query_ids], dtype=object)
        rep_r = self.run.take(pa.array(np.tile(np.arange(n_r), rows)))
        rep_r = rep_r.set_column(
            rep_r.column_names.index("query_id"),
            "query_id",
            pa.DictionaryArray.from_arrays(
                pa.array(
                    (np.repeat(np.arange(rows), n_r) * n_q + np.tile(self.run_query, rows)).astype(np.int32)
                ),
                pa.array(names, pa.string()),
            ),
        )
        rep_r = rep_r.set_column(
            rep_r.column_names.index("score"), "score", pa.array(sampling.rng.random(rows * n_r))
        )
        rep_q = self.qrels.take(pa.array(np.tile(np.arange(n_j), rows)))
        rep_q = rep_q.set_column(
            rep_q.column_names.index("query_id"),
            "query_id",
            pa.array(
                names[np.repeat(np.arange(rows), n_j) * n_q + np.tile(self.qrels_query, rows)], pa.string()
            ),
        )
        run, opts = sampling.run, sampling.options
        alignment = Alignment(
            Qrels(rep_q, sampling.qrels.source, sampling.qrels.docinfo),
            Run(rep_r, run.name, None, None, run.tie_break),
            nest_sep=opts.nest_sep,
            max_docs=opts.max_docs,
            on_duplicate=opts.duplicate_rule,
        )
        return alignment, names


def _chunk_values(
    alignment: Alignment,
    names: np.ndarray,
    measures: list[Measure],
    plugins: list[str | None],
    options: EvalOptions,
    rows: int,
    n_q: int,
    sample_vals: list[list[np.ndarray]],
) -> np.ndarray:
    """``(M, rows, Q)`` values of the measures on *rows* random orderings (NaN where none);
    the own aggregate of each measure that has one is appended to *sample_vals*, one per
    ordering."""
    from rankeval.engine.scoring import aggregate_lists, evaluate_measure

    lookup = {name: i for i, name in enumerate(names)}
    block = np.full((len(measures), rows, n_q), np.nan)
    for j, m in enumerate(measures):
        with warnings.catch_warnings():  # about the copies: noise (the real run was evaluated)
            warnings.simplefilter("ignore", RankevalWarning)
            view, ids, vals, index = evaluate_measure(alignment, m, options.missing_zero, plugin=plugins[j])
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
    return block


def _custom_aggregate(measure: Measure) -> bool:
    cls = type(measure)
    return (
        cls.aggregate_from_parts is not Measure.aggregate_from_parts or cls.aggregate is not Measure.aggregate
    )
