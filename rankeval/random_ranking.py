"""The random-ranking baseline: each measure's value under a uniformly random ordering of each
query's candidates (the documents a run retrieved), as Rummer-Downing & Weeds report it
("Random Baseline 0.73 ± 0.04", bootstrapped over 10,000 repeats).

The core holds the **candidate model** (:class:`Candidates`: per query, the number of
candidates and the grades of the judged ones; a uniformly random order puts each candidate at
each rank with probability ``1/n``) and the **Monte Carlo**: *samples* random orderings, each
evaluated by the measure itself (the run is replicated *samples* times with random scores and
evaluated in chunks). The spread of the baseline — the standard deviation of the aggregate
(the mean over queries) across random orderings, the "± 0.04" — is always a Monte Carlo
estimate.

A measure family can do better through the ``random_model`` hook
(:func:`rankeval.hookspecs.random_model`), which returns a :class:`RandomModel` for a measure
of nesting level 1:

* ``expectation(candidates)`` — the exact expected value of each query (a closed form); the
  baseline then reports it instead of the Monte Carlo mean (unless ``exact=False``);
* ``sampler(candidates)`` — a function ``(query, positions) -> values`` giving the measure's
  value on one query when its judged candidates sit at the 0-based ranks *positions* of each
  random ordering (:func:`random_positions`); the orderings are then drawn as rank positions
  of the judged candidates only, and no run needs to be built.

The classic trec_eval measures implement the hook in their own plugin, as any family can
(the [plugin guide](../plugins.md) shows how).
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
from rankeval.errors import PluginError, RankevalWarning, UsageError, measure_guard
from rankeval.measure import Measure
from rankeval.ranked import Alignment, RankedLists, segment_offsets
from rankeval.scoring import as_values
from rankeval.stats import MAX_SAMPLES

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.registry import Registry

__all__ = [
    "Candidates",
    "RandomBaseline",
    "RandomModel",
    "Sampler",
    "random_baseline",
    "random_models",
    "random_positions",
    "work",
]

#: elements of one chunk of random draws (samples x candidates)
CHUNK = 1 << 20
#: run rows per chunk of the replicated run (Monte Carlo through the measures)
ROWS_PER_CHUNK = 1 << 20

Progress = Callable[[int], None]
Sampler = Callable[[int, np.ndarray], np.ndarray]
"""``sampler(query, positions) -> values``: ``(samples,)`` values of a measure on query
*query* (an index into :class:`Candidates`) when its judged candidates, in the order of
:meth:`Candidates.grades_of`, sit at the 0-based ranks *positions* (``(samples, c)``)."""


@dataclass(frozen=True)
class RandomModel:
    """What a measure family knows about a measure under a uniformly random ordering of each
    query's candidates (returned by the ``random_model`` hook). Either part may be missing.

    Attributes:
        expectation: ``expectation(candidates)``: the exact expected value of each query of
            *candidates* (``(Q,)``), a closed form; the baseline reports it (and the
            measure's aggregate of it) instead of the Monte Carlo mean.
        sampler: ``sampler(candidates)``: a :data:`Sampler` for the Monte Carlo by rank
            positions (faster than evaluating replicated runs through ``compute``); it must
            give the values ``compute`` gives on the same orderings.
    """

    expectation: Callable[[Candidates], np.ndarray] | None = None
    sampler: Callable[[Candidates], Sampler] | None = None


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
    from rankeval.engine import resolve_measures
    from rankeval.plugins import load_registry
    from rankeval.scoring import aggregate, measure_plugins

    registry = registry if registry is not None else load_registry()
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
    cand = Candidates.of(view, keep, max_docs)
    models = random_models(measure_list, registry)
    fast = [i for i, (_, model) in enumerate(models) if model is not None and model.sampler is not None]
    other = [i for i in range(len(measure_list)) if i not in fast]

    n_m, n_q = len(measure_list), len(query_ids)
    values = np.full((n_m, n_q), np.nan)
    agg = np.full(n_m, np.nan)
    sample_aggs = np.full((n_m, samples), np.nan)
    std = np.full(n_m, np.nan)
    is_exact = np.zeros(n_m, dtype=bool)
    rng = np.random.default_rng(seed)
    if fast:
        samplers = [_sampler(measure_list[i], *models[i], cand) for i in fast]
        mean, s_agg, s_std = _position_samples(
            [measure_list[i] for i in fast], samplers, cand, samples, rng, progress
        )
        for j, i in enumerate(fast):
            values[i], sample_aggs[i], std[i] = mean[j], s_agg[j], s_std[j]
            agg[i] = float(s_agg[j].mean())
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
    for i, (plugin, model) in enumerate(models):
        if exact and model is not None and model.expectation is not None:
            m = measure_list[i]
            with measure_guard(m, "failed computing its random expectation", plugin):
                result = model.expectation(cand)
            values[i] = as_values(result, m, n_q, plugin)
            is_exact[i] = True
            agg[i] = aggregate(m, values[i], plugins[i])
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


def work(
    qrels_queries: int, run_rows: int, measures: list[Measure], samples: int, registry: Registry | None = None
) -> int:
    """Units of progress :func:`random_baseline` reports: one per query for the measures with
    a sampler (:class:`RandomModel`), one per chunk of replicated runs for the others.
    *registry*: the one given to :func:`random_baseline` (default: all installed plugins)."""
    from rankeval.plugins import load_registry

    models = random_models(measures, registry if registry is not None else load_registry())
    fast = [model is not None and model.sampler is not None for _, model in models]
    total = qrels_queries if any(fast) else 0
    if not all(fast):
        total += -(-samples // max(1, ROWS_PER_CHUNK // max(run_rows, 1)))
    return total


def random_models(measures: list[Measure], registry: Registry) -> list[tuple[str | None, RandomModel | None]]:
    """``(plugin, model)`` of each measure: the first :class:`RandomModel` a ``random_model``
    hook returns for it (``-p`` plugins are asked first), or ``(None, None)``. Only measures
    of nesting level 1 have one: the candidates are the run's top-level items."""
    from rankeval.plugins import hook_impls, plugin_guard

    out: list[tuple[str | None, RandomModel | None]] = []
    for m in measures:
        with measure_guard(m, "failed", registry.plugin_of(m)):
            level = m.view_level()
        found: tuple[str | None, RandomModel | None] = (None, None)
        for plugin, hook in hook_impls(registry, "random_model") if level == 1 else []:
            with plugin_guard(plugin, f"giving the random model of {m}"):
                model = hook(measure=m)
            if model is None:
                continue
            if not isinstance(model, RandomModel):
                raise PluginError(
                    f"plugin {plugin} returned {type(model).__name__} as the random model of {m}, "
                    "not a rankeval.random_ranking.RandomModel"
                )
            found = (plugin, model)
            break
        out.append(found)
    return out


def _sampler(measure: Measure, plugin: str | None, model: RandomModel | None, cand: Candidates) -> Sampler:
    """*model*'s sampler of *measure* on *cand*, its code guarded (it names *plugin*)."""
    assert model is not None and model.sampler is not None
    make = model.sampler
    with measure_guard(measure, "failed making its random sampler", plugin):
        sampler = make(cand)

    def guarded(q: int, pos: np.ndarray) -> np.ndarray:
        with measure_guard(measure, "failed sampling random orderings", plugin):
            return np.asarray(sampler(q, pos), dtype=np.float64)

    return guarded


# --------------------------------------------------------------------------- candidates
@dataclass
class Candidates:
    """The candidate model: per kept query, the number of candidates (the documents the run
    retrieved) and the grades of the judged ones, whose random ranks the baseline draws.

    Attributes:
        n: ``(Q,)`` candidates of each query.
        offsets: ``(Q+1,)`` segments of :attr:`grades`: query *q*'s judged candidates are
            ``grades[offsets[q]:offsets[q + 1]]``.
        grades: the judged candidates' grades.
        view: the run's ranked lists of nesting level 1 (:class:`~rankeval.ranked.RankedLists`),
            for what the qrels say beyond the candidates (judged documents not retrieved).
        keep: ``(view.num_queries,)`` which of the view's queries are kept (the missing-query
            rule), in order: query *q* here is the *q*-th kept query of the view.
        rows: the view's row of each of :attr:`grades`.
        max_docs: the cutoff of every random ordering (``max_docs`` of the evaluation), or
            ``None``.
    """

    n: np.ndarray
    offsets: np.ndarray
    grades: np.ndarray
    view: RankedLists
    keep: np.ndarray
    rows: np.ndarray
    max_docs: int | None = None

    @classmethod
    def of(cls, view: RankedLists, keep: np.ndarray, max_docs: int | None = None) -> Candidates:
        """The candidates of the kept queries of *view* (a level-1 view of a run)."""
        rows = view.judged_row_index
        q = view.query[rows]
        order = np.argsort(q, kind="stable")
        index = np.flatnonzero(keep)
        remap = np.full(view.num_queries, -1, dtype=np.int64)
        remap[index] = np.arange(len(index))
        qk = remap[q[order]]
        grades = view.judged_row_relevance[order][qk >= 0]
        offsets = segment_offsets(qk[qk >= 0], len(index))
        return cls(
            view.counts[keep].astype(np.int64), offsets, grades, view, keep, rows[order][qk >= 0], max_docs
        )

    def grades_of(self, q: int) -> np.ndarray:
        """The grades of query *q*'s judged candidates."""
        return self.grades[self.offsets[q] : self.offsets[q + 1]]

    def num_rel(self, rel: float) -> np.ndarray:
        """``(Q,)`` relevant documents (grade ≥ *rel*) in the qrels, retrieved or not."""
        return np.asarray(np.asarray(self.view.num_rel(rel), dtype=np.float64)[self.keep], dtype=np.float64)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per query: judged candidates where *mask* (over :attr:`grades`) holds (or the sum
        of *mask*'s values)."""
        q = np.repeat(np.arange(len(self.n)), np.diff(self.offsets))
        return np.bincount(q, weights=mask, minlength=len(self.n)).astype(np.float64)

    def cut(self, k: int | None = None) -> np.ndarray:
        """``(Q,)`` ranks of each random ordering that count: ``min(n, k, max_docs)``."""
        m = self.n.astype(np.float64)
        for c in (k, self.max_docs):
            if c is not None:
                m = np.minimum(m, c)
        return m


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

    from rankeval.scoring import aggregate_lists, evaluate_measure

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
                view, ids, vals, index = evaluate_measure(alignment, m, missing_zero, plugin=plugins[j])
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
