"""The evaluator object, and the one-call functions that wrap it.

    import rankeval
    ev = rankeval.Evaluator("qrels.txt", ["AP(rel=2)", "nDCG@10"])
    df = ev.evaluate(["bm25.run", "rm3.run"])          # a long DataFrame
    cmp = ev.compare(["bm25.run", "rm3.run"], stats=rankeval.CompareOptions(test="randomization"))

An :class:`Evaluator` resolves its inputs once (:func:`rankeval.engine.prepare.prepare`: the
registry, the compat mode, the measures and their plugins, the qrels with their side files)
and evaluates any number of runs with them, as pytrec_eval's ``RelevanceEvaluator`` and
ir_measures' ``evaluator(measures, qrels)`` do. The options live in
:class:`~rankeval.options.EvalOptions` (how runs are evaluated) and
:class:`~rankeval.options.CompareOptions` (a comparison's statistics) only.
:func:`evaluate`, :func:`compare` and :func:`random_baseline` build an Evaluator for one call.

This module is the public API's top layer, beside :mod:`rankeval.interop`. May import:
:mod:`rankeval.engine`, :mod:`rankeval.comparison`, :mod:`rankeval.options`,
:mod:`rankeval.errors`; pandas lazily (through the results).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankeval.engine.prepare import Measures, Prepared, prepare
from rankeval.options import CompareOptions, EvalOptions

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.comparison.compare import Comparison
    from rankeval.engine.distributed import DaskOptions
    from rankeval.engine.evaluation import Results
    from rankeval.engine.random_ranking import RandomBaseline
    from rankeval.engine.random_sampling import Progress
    from rankeval.io.data import Qrels
    from rankeval.measures.base import Measure
    from rankeval.measures.registry import Registry

__all__ = ["Evaluator", "compare", "evaluate", "random_baseline"]


class Evaluator:
    """Qrels and measures, resolved once, to evaluate and compare runs with.

    Args:
        qrels: a :class:`~rankeval.Qrels`, a path (or ir_datasets id), a DataFrame with
            ``query_id, doc_id, relevance`` (or PyTerrier's ``qid, docno, label``), a
            ``{query_id: {doc_id: relevance}}`` dict, or an iterable of ir_measures ``Qrel``;
            read once, with the options' ``docinfo`` side files applied.
        measures: specs (``"AP nDCG@10"``, ``["P@5", "RR(rel=2)"]``), measure objects, or
            ir_measures measure objects (``ir_measures.nDCG@10``); with a compat mode, specs
            may use its names (CLEF's ``ap``).
        options: how runs are evaluated (:class:`~rankeval.options.EvalOptions`: missing
            queries, nesting, ``max_docs``, duplicates, ``docinfo``, ``compat``); default
            ``EvalOptions()``.
        registry: measure registry to resolve specs with (default: all installed plugins,
            loaded once here).

    Raises:
        UsageError: *options* is not an :class:`~rankeval.options.EvalOptions`, no measures,
            an unknown compat mode; :class:`~rankeval.errors.SpecError` for a spec that does
            not parse; :class:`~rankeval.errors.InputError` for qrels or side files that
            cannot be read.
    """

    def __init__(
        self,
        qrels: Any,
        measures: Measures,
        *,
        options: EvalOptions | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.prepared: Prepared = prepare(qrels, measures, options, registry)

    @property
    def qrels(self) -> Qrels:
        """The qrels, side files applied."""
        return self.prepared.qrels

    @property
    def measures(self) -> list[Measure]:
        """The measures, as asked for (results are named after them)."""
        return list(self.prepared.measures)

    def __repr__(self) -> str:
        return f"Evaluator({self.prepared.qrels!r}, {[str(m) for m in self.prepared.measures]!r})"

    def results(
        self,
        runs: Any,
        *,
        jobs: int | None = 1,
        engine: str | DaskOptions = "local",
        block_size: int | None = None,
        progress: bool | None = None,
    ) -> Results:
        """:meth:`evaluate` without pandas: the same rows as plain arrays (what the CLI
        prints)."""
        from rankeval.comparison.progress import block_progress
        from rankeval.engine.evaluation import evaluate_prepared

        with block_progress(progress) as bar:
            return evaluate_prepared(
                self.prepared, runs, jobs=jobs, engine=engine, block_size=block_size, progress=bar
            )

    def evaluate(
        self,
        runs: Any,
        *,
        jobs: int | None = 1,
        engine: str | DaskOptions = "local",
        block_size: int | None = None,
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Evaluate runs.

        Args:
            runs: one run (:class:`~rankeval.Run`, path, DataFrame with ``query_id, doc_id,
                score`` or PyTerrier's ``qid, docno, score``, ``{query_id: {doc_id: score}}``,
                or an iterable of ir_measures ``ScoredDoc``), a list of runs, or
                ``{name: run}`` (see :func:`~rankeval.engine.evaluation.as_runs` for how one
                run is told from several, and the names).
            jobs: with the local engine, worker processes evaluating blocks in parallel
                (``None``: one per core); default ``1``: this process, one block at a time,
                which bounds the memory to about one block plus the qrels. Worker processes
                import the calling script again: call with ``jobs`` > 1 from code under
                ``if __name__ == "__main__":`` (the ``rankeval`` command uses all cores).
            engine: ``"local"`` (this machine), ``"dask"`` (a local Dask cluster) or a
                :class:`~rankeval.engine.distributed.DaskOptions` (a scheduler address, local
                workers, a memory limit). Either way a run file is cut into blocks of whole
                queries, each evaluated on its own, and every aggregate is computed from all
                per-query values: identical results whatever the engine, the number of jobs or
                the block size (:mod:`rankeval.engine.blockwise`).
            block_size: bytes of run text per block (default 32 MiB; the cut moves to the next
                query). Any size is taken here; ``--block-size`` on the command line is at
                least :data:`~rankeval.io.blocks.MIN_BLOCK_SIZE` (64 KiB), since every block
                costs about a millisecond whatever its size.
            progress: show a progress bar of the blocks on stderr (default: when stderr is a
                terminal; never for runs that make one block).

        Returns:
            A long DataFrame with columns ``run, query_id, measure, value``: one row per run,
            query and measure, plus one aggregate row per run and measure whose ``query_id``
            is ``None`` (``df[df.query_id.isna()]``; no query id can be ``None``, so a query
            named ``all`` stays apart). Queries appear in sorted order, measures in the order
            given; with a compat mode, measures are named as the mode names them (CLEF's).
        """
        return self.results(
            runs, jobs=jobs, engine=engine, block_size=block_size, progress=progress
        ).to_frame()

    def compare(
        self,
        runs: Any,
        *,
        stats: CompareOptions | None = None,
        jobs: int | None = 1,
        engine: str | DaskOptions = "local",
        block_size: int | None = None,
        progress: bool | None = None,
    ) -> Comparison:
        """Compare runs: scores, paired significance tests, corrections, effect sizes and
        confidence intervals (no compat mode).

        The runs are evaluated as :meth:`evaluate` evaluates them, by the block engine
        (memory bounded by the block size with ``jobs=1``), and the statistics computed on
        their per-query values: no run is read whole, but the random baseline's source run.

        Args:
            runs: two or more runs (a list, or ``{name: run}``), as for :meth:`evaluate`; one
                run is enough with ``stats.random_baseline``. With ``missing_zero=False``, the
                queries a run lacks are left out of each comparison that involves that run (as
                are queries whose value is undefined).
            stats: the statistics (:class:`~rankeval.options.CompareOptions`: baseline, test,
                correction, alpha, samples, seed, intervals, random baseline); default
                ``CompareOptions()``.
            jobs: as for :meth:`evaluate`.
            engine: as for :meth:`evaluate`.
            block_size: as for :meth:`evaluate`.
            progress: show progress bars on stderr (the blocks, the resampling; default: when
                stderr is a terminal).

        Returns:
            A :class:`~rankeval.Comparison`, the same whatever *jobs*, *engine* and
            *block_size*.
        """
        from rankeval.comparison.compare import compare_prepared

        return compare_prepared(
            self.prepared, runs, stats, progress, jobs=jobs, engine=engine, block_size=block_size
        )

    def random_baseline(
        self,
        run: Any,
        *,
        samples: int = 10_000,
        seed: int | None = 0,
        exact: bool = True,
        progress: Progress | None = None,
    ) -> RandomBaseline:
        """The expected value of each measure under a uniformly random ordering of the
        documents *run* retrieved for each query (no compat mode;
        :mod:`rankeval.engine.random_ranking`).

        Args:
            run: the run whose retrieved documents are the candidates of each query.
            samples: random orderings for the Monte Carlo estimates (the spread, and the
                expectation of measures without a closed form).
            seed: seed of :func:`numpy.random.default_rng`.
            exact: use the closed forms where there is one; ``False``: Monte Carlo for every
                measure (to check the closed forms).
            progress: called with units of work done (queries, then chunks), for a progress
                bar (:func:`rankeval.engine.random_ranking.work` gives the total).

        Returns:
            A :class:`~rankeval.RandomBaseline`. The options' ``max_docs`` truncates each
            random ordering, not the candidates.
        """
        from rankeval.engine.random_ranking import random_baseline_of

        return random_baseline_of(
            self.prepared, run, samples=samples, seed=seed, exact=exact, progress=progress
        )

    def tie_range(
        self,
        runs: Any,
        *,
        jobs: int | None = 1,
        engine: str | DaskOptions = "local",
        block_size: int | None = None,
    ) -> pd.DataFrame:
        """Each measure's value under the tie orders: the worst, trec_eval's (the default),
        the tie-aware expected value and the best
        (:data:`rankeval.engine.ties.RANGE_RULES`), per run and query, the aggregate rows with
        a null ``query_id`` (as :meth:`evaluate`; no compat mode).

        ``worst`` and ``best`` put the judged items of lower (higher) grade first within
        each tied group: the extremes of every measure that grows as items of higher grade
        move up (all of trec_eval's); ``expected`` is NaN for a measure without an exact
        tie-aware value. Each rule evaluates the runs once more (*jobs*, *engine*,
        *block_size* as for :meth:`evaluate`).

        Returns:
            A DataFrame with columns ``run, query_id, measure`` and one per rule.
        """
        import warnings
        from dataclasses import replace

        from rankeval.engine.evaluation import evaluate_prepared
        from rankeval.engine.ties import RANGE_RULES
        from rankeval.errors import TieWarning

        prepared = self.prepared
        prepared.check_no_compat("the tie range")
        keys = ["run", "query_id", "measure"]
        frame: pd.DataFrame | None = None
        aware = [m for m, c in zip(prepared.measures, prepared.computed, strict=True) if c.tie_aware()]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TieWarning)  # the range is the answer to it
            for rule in RANGE_RULES:
                one = replace(prepared, options=replace(prepared.options, ties=rule))
                if rule == "expected":
                    if not aware:
                        assert frame is not None  # (worst and trec_eval come first)
                        frame[rule] = float("nan")
                        continue
                    one = one.with_measures(aware)
                results = evaluate_prepared(one, runs, jobs=jobs, engine=engine, block_size=block_size)
                values = results.to_frame().rename(columns={"value": rule})
                values["query_id"] = values["query_id"].astype(object)
                frame = values if frame is None else frame.merge(values, on=keys, how="left", sort=False)
        assert frame is not None
        return frame

    def curve(
        self,
        runs: Any,
        template: str,
        *,
        jobs: int | None = 1,
        engine: str | DaskOptions = "local",
        block_size: int | None = None,
    ) -> pd.DataFrame:
        """Each run's score as one parameter of a measure varies, with these qrels and options
        (the measures of *template*, e.g. ``"hTBG@h={30s,1m,5m}"``, not the evaluator's), the
        runs evaluated as :meth:`evaluate` does (*jobs*, *engine*, *block_size*):
        :func:`rankeval.comparison.curves.parameter_curve` documents the frame."""
        from rankeval.comparison.curves import curve_of

        return curve_of(self.prepared, runs, template, jobs=jobs, engine=engine, block_size=block_size)


def evaluate(
    qrels: Any,
    runs: Any,
    measures: Measures,
    *,
    options: EvalOptions | None = None,
    jobs: int | None = 1,
    engine: str | DaskOptions = "local",
    block_size: int | None = None,
    registry: Registry | None = None,
) -> pd.DataFrame:
    """Evaluate runs against qrels: ``Evaluator(qrels, measures, options=options,
    registry=registry).evaluate(runs, jobs=jobs, engine=engine, block_size=block_size)``
    (:class:`Evaluator` and :meth:`Evaluator.evaluate` document the arguments and the
    frame)."""
    ev = Evaluator(qrels, measures, options=options, registry=registry)
    return ev.evaluate(runs, jobs=jobs, engine=engine, block_size=block_size)


def compare(
    qrels: Any,
    runs: Any,
    measures: Measures,
    *,
    options: EvalOptions | None = None,
    stats: CompareOptions | None = None,
    registry: Registry | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Compare runs: ``Evaluator(qrels, measures, options=options,
    registry=registry).compare(runs, stats=stats, progress=progress)`` (:class:`Evaluator`
    and :meth:`Evaluator.compare` document the arguments)."""
    return Evaluator(qrels, measures, options=options, registry=registry).compare(
        runs, stats=stats, progress=progress
    )


def random_baseline(
    qrels: Any,
    run: Any,
    measures: Measures,
    *,
    options: EvalOptions | None = None,
    samples: int = 10_000,
    seed: int | None = 0,
    exact: bool = True,
    registry: Registry | None = None,
) -> RandomBaseline:
    """The random-ranking baseline of *run*'s candidates: ``Evaluator(qrels, measures,
    options=options, registry=registry).random_baseline(run, samples=samples, seed=seed,
    exact=exact)`` (:meth:`Evaluator.random_baseline` documents the arguments)."""
    ev = Evaluator(qrels, measures, options=options, registry=registry)
    return ev.random_baseline(run, samples=samples, seed=seed, exact=exact)
