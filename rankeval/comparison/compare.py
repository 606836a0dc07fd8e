"""Comparing runs for a paper: scores, paired significance tests against a baseline (or between
all pairs) with a correction for multiple comparisons, effect sizes, confidence intervals, a
random-ranking baseline, paper tables (LaTeX, Markdown) and plots.

    import rankeval
    stats = rankeval.CompareOptions(test="randomization", correction="holm", random_baseline=True)
    cmp = rankeval.compare("qrels.txt", ["bm25.run", "rm3.run", "t5.run"], ["AP(rel=2)", "nDCG@10"], stats=stats)
    print(cmp.to_latex(spread="std"))

Data flows one way: a :class:`~rankeval.engine.prepare.Prepared` evaluation (qrels, measures,
options, resolved once) → :func:`rankeval.engine.evaluation.evaluate_prepared` gives per-query values → aligned
on the union of queries → :mod:`rankeval.comparison.significance` runs the tests, corrections and
intervals of :mod:`rankeval.comparison.stats` → :class:`Comparison` → tables and rows
(:mod:`rankeval.comparison.tables`), plots (:mod:`rankeval.comparison.plots`).

This module holds :func:`compare_prepared` (what :meth:`rankeval.Evaluator.compare` and
:func:`rankeval.compare` call) and :class:`Comparison`; the numbers of a comparison are in
:mod:`rankeval.comparison.data`, parameter curves in :mod:`rankeval.comparison.curves` (re-exported here),
progress bars in :mod:`rankeval.comparison.progress`.

May import: every module named above, :mod:`rankeval.errors`, :mod:`rankeval.measures.base`,
:mod:`rankeval.options` (the options and their choices); the
engine, the data model and the random baseline lazily. Nothing imports this module but the
package's public API (``rankeval.compare``) and the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.comparison.curves import curve_of, expand_template, parameter_curve
from rankeval.comparison.data import RANDOM, ComparisonData
from rankeval.comparison.plots import plot_comparison, plot_panels
from rankeval.comparison.progress import Task, block_progress
from rankeval.comparison.progress import progress as progress_bars
from rankeval.comparison.significance import correct, pair_stats, run_stats
from rankeval.comparison.tables import FORMATS, LATEX_WIDTH, SPREADS, paper_table, render
from rankeval.errors import UsageError
from rankeval.options import CIS, FAMILIES, PAIRS, CompareOptions

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.distributed import DaskOptions
    from rankeval.engine.evaluation import Results
    from rankeval.engine.prepare import Prepared
    from rankeval.engine.random_ranking import RandomBaseline
    from rankeval.io.data import Run
    from rankeval.measures.registry import Registry

__all__ = [
    "CIS",
    "FAMILIES",
    "FORMATS",
    "PAIRS",
    "RANDOM",
    "SPREADS",
    "Comparison",
    "compare_prepared",
    "curve_of",
    "expand_template",
    "parameter_curve",
    "read_once",
]


# --------------------------------------------------------------------------- result
@dataclass
class Comparison(ComparisonData):
    """The result of :meth:`rankeval.Evaluator.compare` (and :func:`rankeval.compare`).

    Runs are indexed ``r``, measures ``m``, queries ``q``, comparisons ``p`` (in
    :attr:`pairs` order). The random baseline, if asked for, is the last run, named
    ``random``.

    Attributes:
        runs: run names, in the order given (``random`` last).
        measures: canonical measure specs, in the order given.
        query_ids: ``(Q,)`` the union of the queries of all runs (sorted).
        values: ``(R, M, Q)`` per-query values; NaN where a run has no value for a query
            (with ``missing_zero=False``, or an undefined value).
        aggregate: ``(R, M)`` each run's score: the measure's aggregate (the mean over
            queries, a sum for counts, or the measure's own), as :func:`rankeval.evaluate`.
        std: ``(R, M)`` standard deviation of the per-query values (``n - 1``).
        se: ``(R, M)`` standard error of the mean, ``std / √n`` (random baseline: the
            standard deviation of its mean over random orderings).
        ci_low: ``(R, M)`` lower end of the confidence interval of each run's mean (``ci``
            method; random baseline: quantile of its mean over random orderings).
        ci_high: ``(R, M)`` upper end.
        pairs: the comparisons, ``(run index, baseline index)``.
        n: ``(M, P)`` queries in each comparison (both runs have a value).
        difference: ``(M, P)`` mean per-query difference run - baseline (effect size).
        diff_ci_low: ``(M, P)`` lower end of the confidence interval of the difference.
        diff_ci_high: ``(M, P)`` upper end.
        cohens_d: ``(M, P)`` Cohen's d for paired data: mean difference / sd of differences.
        statistic: ``(M, P)`` test statistic (t, W, or the mean difference).
        p_value: ``(M, P)`` two-sided p-value.
        p_adjusted: ``(M, P)`` p-value after the correction for multiple comparisons.
        baseline: the reference run (the baseline; with ``pairs="all"``, the run that
            per-query differences and difference plots refer to).
        stats: the statistics options it was computed with (:class:`~rankeval.CompareOptions`:
            pairs, test, correction, family, alpha, samples, seed, ci; ``stats.baseline`` as
            asked, :attr:`baseline` the run it names).
        random: the random baseline's details, if asked for.
        integer_measures: measures whose values are counts.
        whole_measures: measures whose per-query values are whole numbers.
    """

    # -- output ------------------------------------------------------------------------
    def format(
        self,
        fmt: str = "trec",
        *,
        per_query: bool = False,
        precision: int | None = None,
        spread: str | None = None,
        width: str | None = LATEX_WIDTH,
        registry: Registry | None = None,
    ) -> str:
        """Render the comparison.

        Args:
            fmt: one of :data:`~rankeval.comparison.tables.FORMATS`, or a format a plugin adds.
                ``trec``: one tab-separated line
                per row, ``run measure query value`` and, for a comparison, ``baseline
                difference p_value p_adjusted`` and ``*`` when significant. ``tsv``/``csv``: a
                header and the columns :data:`~rankeval.comparison.data.COLUMNS`.
                ``json``/``jsonl``: the rows as objects (null where not applicable).
                ``markdown``/``latex``: the paper table (:meth:`to_markdown`, :meth:`to_latex`).
                A plugin's format gets each run's values, as ``evaluate`` gives them
                (:func:`~rankeval.comparison.tables.result_rows`), not the statistics.
            per_query: also per-query rows (not in the paper tables).
            precision: decimals; default 4 in trec, markdown and latex, full otherwise.
            spread: paper tables only: ``"std"`` or ``"se"`` shows value ± spread.
            width: latex only: the widest the table may be (:meth:`to_latex`).
            registry: where to look for formats plugins add (default: the installed plugins).
        """
        return render(
            self, fmt, per_query=per_query, precision=precision, spread=spread, width=width, registry=registry
        )

    def to_markdown(self, spread: str | None = None, precision: int = 4) -> str:
        """A paper table in Markdown: one row per run, one column per measure, the best
        value of each measure in bold, significance markers and a legend below.

        Args:
            spread: ``"std"`` (standard deviation over queries) or ``"se"`` (standard error
                of the mean) shown as value ± spread; ``None``/``"none"``: values only.
            precision: decimals.
        """
        return paper_table(self, "markdown", spread, precision)

    def to_latex(self, spread: str | None = None, precision: int = 4, width: str | None = LATEX_WIDTH) -> str:
        """A paper table in LaTeX (``table`` environment; ``booktabs`` rules): as
        :meth:`to_markdown`, bold with ``\\textbf``, markers as superscripts, the legend as
        the caption (above the table).

        Args:
            spread: as for :meth:`to_markdown`.
            precision: decimals.
            width: the widest the table may be, a TeX length (default ``\\linewidth``: the
                text, or the column in a two-column layout): a wider table is scaled down to
                it with ``\\resizebox`` (package ``graphicx``), a narrower one keeps its size.
                ``None`` or ``"none"``: the natural width, no ``graphicx`` needed.
        """
        return paper_table(self, "latex", spread, precision, width)

    def plot(
        self, directory: str | Path, fmt: str = "png", curves: Sequence[pd.DataFrame] = ()
    ) -> list[Path]:
        """Write the plots into *directory* (created if needed) and return their paths:
        per measure and compared run, the per-query differences from the baseline (sorted
        bars, ``differences-MEASURE-RUN.FMT``); per measure, the distribution of the per-query
        scores of every run (``distribution-MEASURE.FMT``); each of *curves*
        (:func:`parameter_curve` frames, ``curve-MEASURE.FMT``)."""
        return plot_comparison(self, directory, fmt, curves)

    def plot_panels(
        self, path: str | Path, fmt: str | None = None, curves: Sequence[pd.DataFrame] = ()
    ) -> Path:
        """Write one figure with one panel per measure to *path* and return it: with *curves*
        (:func:`parameter_curve` frames), one panel per curve; without, one panel per measure
        of the comparison, each run's score as a bar with its confidence interval. The runs
        share one legend, below the panels. *fmt*: ``png``, ``pdf`` or ``svg`` (default: the
        suffix of *path*)."""
        return plot_panels(self, path, fmt, curves)


# --------------------------------------------------------------------------- compare
def compare_prepared(
    prepared: Prepared,
    runs: Any,
    stats: CompareOptions | None = None,
    progress: bool | None = None,
    *,
    jobs: int | None = 1,
    engine: str | DaskOptions = "local",
    block_size: int | None = None,
) -> Comparison:
    """Compare *runs* on a :class:`~rankeval.engine.prepare.Prepared` evaluation (its qrels,
    measures and options; no compat mode): scores, paired significance tests, corrections,
    effect sizes and confidence intervals.

    The per-query values come from the block engine
    (:func:`rankeval.engine.evaluation.evaluate_prepared`), as :func:`rankeval.evaluate`'s
    do: no run is read whole (but the random baseline's source run, whose documents it
    orders), and the statistics take the ``(runs, measures, queries)`` values only.

    Args:
        prepared: the qrels, measures and options. With ``missing_zero=False``, the queries a
            run lacks are left out of each comparison that involves that run (as are queries
            whose value is undefined).
        runs: two or more runs (a list, or ``{name: run}``), as for :func:`rankeval.evaluate`;
            one run is enough with a random baseline.
        stats: the statistics (:class:`~rankeval.options.CompareOptions`; default: its
            defaults).
        progress: show a progress bar on stderr (default: when stderr is a terminal).
        jobs: as for :meth:`rankeval.Evaluator.evaluate`.
        engine: as for :meth:`rankeval.Evaluator.evaluate`.
        block_size: as for :meth:`rankeval.Evaluator.evaluate`.

    Returns:
        A :class:`Comparison`, the same whatever *jobs*, *engine* and *block_size*.

    Raises:
        UsageError: fewer than two runs, an unknown baseline, *stats* not a
            :class:`~rankeval.options.CompareOptions`, or a compat mode.
    """
    from rankeval.engine.evaluation import check_engine, evaluate_prepared
    from rankeval.engine.runs import run_items

    if stats is None:
        stats = CompareOptions()
    elif not isinstance(stats, CompareOptions):
        raise UsageError(f"stats must be a rankeval.CompareOptions, not {stats!r}")
    prepared.check_no_compat("compare")
    check_engine(engine)
    runs = read_once(runs)
    items = run_items(runs)
    _check_count(len(items), stats.random_baseline)
    with block_progress(progress) as bar:
        results = evaluate_prepared(
            prepared, runs, jobs=jobs, engine=engine, block_size=block_size, progress=bar
        )
    names = list(results.run_queries)  # in the order given, as the engine names them
    sources = [_source(item) for _, item in items]
    base, source = _roles(names, sources, stats.baseline, stats.random_baseline)
    source_run = None
    if stats.random_baseline:  # its candidates: the documents of a run, read whole
        from rankeval.io.data import as_run

        source_run = as_run(items[source][1], names[source])
    return _compared(_Inputs(prepared, names, results, base, source_run), stats, progress)


def read_once(runs: Any) -> Any:
    """*runs* (as :func:`rankeval.evaluate` takes them) with those that can be read only once
    (stdin ``-``, a pipe) read here, into :class:`~rankeval.Run` objects, so that they can be
    evaluated again (curves, the random baseline); the block engine reads them whole anyway.
    The others are left as they are: the engine reads files block by block."""
    from collections.abc import Mapping

    from rankeval.engine.runs import run_items
    from rankeval.io.data import as_run
    from rankeval.io.inputs import path_kind

    items = run_items(runs)

    def once(item: Any) -> bool:
        return isinstance(item, (str, Path)) and path_kind(item) in ("stdin", "other")

    if not any(once(item) for _, item in items):
        return runs
    read = [(name, as_run(item, name) if once(item) else item) for name, item in items]
    if isinstance(runs, Mapping):  # runs by name (one run as a mapping is no path)
        return {name: item for name, item in read}
    return [item for _, item in read]


def _source(item: Any) -> str | None:
    """Where a run was read from: its path (or a :class:`~rankeval.Run`'s own source)."""
    if isinstance(item, (str, Path)):
        return str(item)
    source = getattr(item, "source", None)
    return source if isinstance(source, str) else None


@dataclass
class _Inputs:
    """What a comparison starts from: the evaluation prepared, the runs' names, their
    evaluation, the roles."""

    prepared: Prepared
    names: list[str]
    results: Results
    base: int  # the baseline run
    source: Run | None  # the run whose documents the random baseline orders (None: no baseline)


def _compared(inputs: _Inputs, plan: CompareOptions, progress: bool | None) -> Comparison:
    """The statistics of the comparison: the random baseline, the tests, the intervals."""
    names = list(inputs.names)
    specs = [str(m) for m in inputs.prepared.measures]
    blocks = _blocks(inputs.results, names, specs)
    with progress_bars(progress) as task:
        rb = None
        if inputs.source is not None:
            rb = _random_baseline(inputs.prepared, inputs.source, plan, task)
            names = [*names, RANDOM]
        query_ids, values, aggregate = _assemble(blocks, rb, len(names), len(specs))
        pair_list = _pairs(plan.pairs, len(names), inputs.base)
        out = pair_stats(values, pair_list, plan.test, plan.ci, plan.alpha, plan.samples, plan.seed, task)
        run_std, run_se, run_low, run_high = run_stats(
            values, plan.ci, plan.alpha, plan.samples, plan.seed, task
        )
        if rb is not None:
            run_std[-1], run_se[-1] = rb.std, rb.se
            run_low[-1], run_high[-1] = rb.interval(plan.alpha)
    p_adj = correct(out["p_value"], plan.correction, plan.family)
    return Comparison(
        runs=names,
        measures=specs,
        query_ids=query_ids.astype(object),
        values=values,
        aggregate=aggregate,
        std=run_std,
        se=run_se,
        ci_low=run_low,
        ci_high=run_high,
        pairs=pair_list,
        p_adjusted=p_adj,
        baseline=names[inputs.base],
        stats=plan,
        random=rb,
        integer_measures=set(inputs.results.integer_measures),
        whole_measures=set(inputs.results.whole_measures),
        **out,
    )


def _check_count(runs: int, random_baseline: bool | str) -> None:
    """A UsageError if there are too few runs to compare (checked before any is read)."""
    if runs + bool(random_baseline) < 2:
        raise UsageError(f"compare needs at least two runs (or one run and the random baseline); got {runs}")


def _roles(
    names: list[str], sources: list[str | None], baseline: str | None, random_baseline: bool | str
) -> tuple[int, int]:
    """The indices of the baseline run and of the run whose documents the random baseline
    orders, given the runs' names and sources; a UsageError if a name is wrong."""
    if random_baseline and RANDOM in names:
        raise UsageError(f"a run is named {RANDOM!r}, the name of the random baseline; rename it")
    base = _find_run(names, sources, baseline, "baseline") if baseline is not None else 0
    source = base
    if isinstance(random_baseline, str):
        source = _find_run(names, sources, random_baseline, "random-baseline run")
    return base, source


def _find_run(names: list[str], sources: list[str | None], name: str, what: str) -> int:
    """Index of the run named *name* (or read from the path *name*)."""
    if name in names:
        return names.index(name)
    for i, source in enumerate(sources):
        if source is not None and (source == name or Path(source) == Path(name)):
            return i
    raise UsageError(f"unknown {what} {name!r}; the runs are: {', '.join(names)}")


# One block per run and measure: (run index, measure index, query ids, values, aggregate).
_Block = tuple[int, int, np.ndarray, np.ndarray, float]


def _blocks(results: Results, names: list[str], specs: list[str]) -> list[_Block]:
    """The per-query values and the aggregate of each run and measure in *results*."""
    return [
        (names.index(b.run), specs.index(b.measure), b.query_ids.astype(str), b.values, b.aggregate)
        for b in results.blocks
    ]


def _random_baseline(prepared: Prepared, run: Run, plan: CompareOptions, task: Task) -> RandomBaseline:
    """The random baseline of the documents *run* retrieved, with a progress bar."""
    import pyarrow.compute as pc

    from rankeval.engine import random_ranking as rbm

    measures = list(prepared.measures)
    work = rbm.work(
        int(pc.count_distinct(prepared.qrels.table.column("query_id")).as_py()),
        len(run),
        measures,
        plan.samples,
        prepared.registry,
    )
    return rbm.random_baseline_of(
        prepared, run, samples=plan.samples, seed=plan.seed, progress=task("random baseline", work)
    )


def _assemble(
    blocks: list[_Block], rb: RandomBaseline | None, n_r: int, n_m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of the queries (sorted), the per-query values ``(R, M, Q)`` on it and the
    aggregates ``(R, M)``; the random baseline, if any, is the last run."""
    query_ids = np.unique(
        np.concatenate(
            [b[2] for b in blocks] + ([rb.query_ids.astype(str)] if rb is not None else [np.zeros(0, str)])
        )
    )
    values = np.full((n_r, n_m, len(query_ids)), np.nan)
    aggregate = np.full((n_r, n_m), np.nan)
    for r, m, qids, vals, agg in blocks:
        values[r, m, np.searchsorted(query_ids, qids)] = vals
        aggregate[r, m] = agg
    if rb is not None:
        pos = np.searchsorted(query_ids, rb.query_ids.astype(str))
        values[-1][:, pos] = rb.values
        aggregate[-1] = rb.aggregate
    return query_ids, values, aggregate


def _pairs(pairs: str, n_r: int, base: int) -> list[tuple[int, int]]:
    """The comparisons ``(run, baseline)``: each run against *base*, or every pair."""
    if pairs == "baseline":
        return [(r, base) for r in range(n_r) if r != base]
    return [(j, i) for i in range(n_r) for j in range(i + 1, n_r)]
