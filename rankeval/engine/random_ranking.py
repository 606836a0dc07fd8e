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
(:func:`rankeval.extension.random_model`), which returns a :class:`RandomModel` for a measure
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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine.random_sampling import (
    ROWS_PER_CHUNK,
    Progress,
    Sampling,
    _engine_samples,
    _position_samples,
    random_positions,
)
from rankeval.engine.scoring import as_values
from rankeval.errors import UsageError, measure_guard
from rankeval.extension import RandomModel, Sampler
from rankeval.io.data import as_run
from rankeval.measures.base import Measure
from rankeval.options import check_samples, check_seed
from rankeval.ranking.alignment import Alignment
from rankeval.ranking.ranked_lists import RankedLists
from rankeval.segments import segment_offsets

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.prepare import Prepared
    from rankeval.measures.registry import Registry

__all__ = [
    "Candidates",
    "RandomBaseline",
    "RandomModel",
    "Sampler",
    "random_baseline_of",
    "random_models",
    "random_positions",
    "work",
]


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
        with ``query_id`` ``None``), as :func:`rankeval.evaluate` returns."""
        import pandas as pd

        rows = []
        for i, m in enumerate(self.measures):
            rows += [("random", q, m, float(v)) for q, v in zip(self.query_ids, self.values[i], strict=True)]
            rows.append(("random", None, m, float(self.aggregate[i])))
        return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


# ---------------------------------------------------------------------------------------
def random_baseline_of(
    prepared: Prepared,
    run: Any,
    *,
    samples: int = 10_000,
    seed: int | None = 0,
    exact: bool = True,
    progress: Progress | None = None,
) -> RandomBaseline:
    """The random-ranking baseline of *run*'s candidates on a
    :class:`~rankeval.engine.prepare.Prepared` evaluation (its qrels, measures and options; no
    compat mode): :meth:`rankeval.Evaluator.random_baseline` documents the arguments.

    Args:
        prepared: the qrels, measures and options.
        run: the run whose retrieved documents are the candidates of each query.
        samples: random orderings for the Monte Carlo estimates.
        seed: seed of :func:`numpy.random.default_rng`.
        exact: use the closed forms where there is one.
        progress: called with units of work done (queries, then chunks), for a progress bar;
            :func:`work` gives the total.

    Returns:
        A :class:`RandomBaseline`.
    """
    check_samples(samples)
    seed = check_seed(seed)
    prepared.check_no_compat("the random baseline")
    one_off = [str(m) for m in prepared.computed if m.judged_only and not prepared.options.judged_only]
    if one_off:
        raise UsageError(
            f"the random baseline orders one candidate list for all measures: judged_only=true on "
            f"{', '.join(one_off)} alone is not supported (use the judged_only option for all)"
        )
    measure_list = list(prepared.measures)
    plugins = list(prepared.plugins)
    sampling, cand = _sampling_of(prepared, run, samples, np.random.default_rng(seed), progress)
    models = random_models(measure_list, prepared.registry)
    est = _Estimates.empty(len(measure_list), len(sampling.query_ids), samples)
    _monte_carlo(est, measure_list, plugins, models, cand, sampling)
    if exact:
        _expectations(est, measure_list, plugins, models, cand)
    return RandomBaseline(
        measures=[str(m) for m in measure_list],
        query_ids=sampling.query_ids,
        values=est.values,
        aggregate=est.aggregate,
        exact=est.exact,
        sample_aggregates=est.sample_aggregates,
        std=est.std,
        samples=samples,
        seed=seed,
        source=sampling.run.name,
        integer_measures={str(m) for m in measure_list if m.integer},
    )


@dataclass
class _Estimates:
    """What :func:`random_baseline_of` fills in, per measure (see :class:`RandomBaseline`)."""

    values: np.ndarray
    aggregate: np.ndarray
    sample_aggregates: np.ndarray
    std: np.ndarray
    exact: np.ndarray

    @classmethod
    def empty(cls, n_m: int, n_q: int, samples: int) -> _Estimates:
        nan = np.full
        return cls(
            nan((n_m, n_q), np.nan),
            nan(n_m, np.nan),
            nan((n_m, samples), np.nan),
            nan(n_m, np.nan),
            np.zeros(n_m, dtype=bool),
        )

    def put(self, which: list[int], mean: np.ndarray, s_agg: np.ndarray, s_std: np.ndarray) -> None:
        """The Monte Carlo estimates of the measures *which*."""
        for j, i in enumerate(which):
            self.values[i], self.sample_aggregates[i], self.std[i] = mean[j], s_agg[j], s_std[j]
            self.aggregate[i] = float(s_agg[j].mean())


def _sampling_of(
    prepared: Prepared, run: Any, samples: int, rng: np.random.Generator, progress: Progress | None
) -> tuple[Sampling, Candidates]:
    """Read *run* and align it with the prepared qrels; the kept queries (the missing-query
    rule) and their candidates."""
    qrels_obj, options = prepared.qrels, prepared.options
    run_obj = as_run(run)
    if options.judged_only:  # condensed lists: the candidates are the judged documents retrieved
        run_obj = run_obj.judged_only(qrels_obj)
    alignment = Alignment(
        qrels_obj, run_obj, nest_sep=options.nest_sep, max_docs=None, on_duplicate=options.duplicate_rule
    )
    view = alignment.view(1)
    keep = np.ones(view.num_queries, dtype=bool) if options.missing_zero else view.retrieved.copy()
    sampling = Sampling(qrels_obj, run_obj, view.query_ids[keep], options, samples, rng, progress)
    return sampling, Candidates.of(view, keep, options.max_docs)


def _monte_carlo(
    est: _Estimates,
    measures: list[Measure],
    plugins: list[str | None],
    models: list[tuple[str | None, RandomModel | None]],
    cand: Candidates,
    sampling: Sampling,
) -> None:
    """The Monte Carlo estimates of every measure: by rank positions for those with a
    sampler, through the measures themselves for the others."""
    fast = [i for i, (_, model) in enumerate(models) if model is not None and model.sampler is not None]
    other = [i for i in range(len(measures)) if i not in fast]
    if fast:
        samplers = [_sampler(measures[i], *models[i], cand) for i in fast]
        est.put(
            fast,
            *_position_samples(
                [measures[i] for i in fast], samplers, cand, sampling.samples, sampling.rng, sampling.progress
            ),
        )
    if other:
        est.put(other, *_engine_samples([measures[i] for i in other], [plugins[i] for i in other], sampling))


def _expectations(
    est: _Estimates,
    measures: list[Measure],
    plugins: list[str | None],
    models: list[tuple[str | None, RandomModel | None]],
    cand: Candidates,
) -> None:
    """The exact expectations of the measures whose :class:`RandomModel` has one."""
    from rankeval.engine.scoring import aggregate

    for i, (plugin, model) in enumerate(models):
        if model is not None and model.expectation is not None:
            m = measures[i]
            with measure_guard(m, "failed computing its random expectation", plugin):
                result = model.expectation(cand)
            est.values[i] = as_values(result, m, est.values.shape[1], plugin)
            est.exact[i] = True
            est.aggregate[i] = aggregate(m, est.values[i], plugins[i])


def work(qrels_queries: int, run_rows: int, measures: list[Measure], samples: int, registry: Registry) -> int:
    """Units of progress :func:`random_baseline_of` reports: one per query for the measures with
    a sampler (:class:`RandomModel`), one per chunk of replicated runs for the others
    (*registry*: the evaluation's)."""
    models = random_models(measures, registry)
    fast = [model is not None and model.sampler is not None for _, model in models]
    total = qrels_queries if any(fast) else 0
    if not all(fast):
        total += -(-samples // max(1, ROWS_PER_CHUNK // max(run_rows, 1)))
    return total


def random_models(measures: list[Measure], registry: Registry) -> list[tuple[str | None, RandomModel | None]]:
    """``(plugin, model)`` of each measure (:meth:`~rankeval.measures.registry.Registry.random_model`)."""
    return [registry.random_model(m) for m in measures]


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
        view: the run's ranked lists of nesting level 1 (:class:`~rankeval.ranking.ranked_lists.RankedLists`),
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
        rows, relevance = view.judged_rows()
        q = view.query[rows]
        order = np.argsort(q, kind="stable")
        index = np.flatnonzero(keep)
        remap = np.full(view.num_queries, -1, dtype=np.int64)
        remap[index] = np.arange(len(index))
        qk = remap[q[order]]
        grades = relevance[order][qk >= 0]
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
