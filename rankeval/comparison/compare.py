"""Comparing runs for a paper: scores, paired significance tests against a baseline (or between
all pairs) with a correction for multiple comparisons, effect sizes, confidence intervals, a
random-ranking baseline, paper tables (LaTeX, Markdown) and plots.

    import rankeval
    cmp = rankeval.compare("qrels.txt", ["bm25.run", "rm3.run", "t5.run"], ["AP(rel=2)", "nDCG@10"],
                           test="randomization", correction="holm", random_baseline=True)
    print(cmp.to_latex(spread="std"))

Data flows one way: :func:`rankeval.engine.evaluation.evaluate_results` gives per-query values → aligned
on the union of queries → :mod:`rankeval.comparison.significance` runs the tests, corrections and
intervals of :mod:`rankeval.comparison.stats` → :class:`Comparison` → tables and rows
(:mod:`rankeval.comparison.tables`), plots (:mod:`rankeval.comparison.plots`).

This module holds :func:`compare` and :class:`Comparison`; the numbers of a comparison are in
:mod:`rankeval.comparison.data`, parameter curves in :mod:`rankeval.comparison.curves` (re-exported here),
progress bars in :mod:`rankeval.comparison.progress`.

May import: every module named above, :mod:`rankeval.errors`, :mod:`rankeval.measures.base`,
:mod:`rankeval.options` (the options and their choices); the
engine, the data model and the random baseline lazily. Nothing imports this module but the
package's public API (``rankeval.compare``) and the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.comparison.curves import expand_template, parameter_curve
from rankeval.comparison.data import RANDOM, ComparisonData
from rankeval.comparison.plots import plot_comparison, plot_panels
from rankeval.comparison.progress import Task
from rankeval.comparison.progress import progress as progress_bars
from rankeval.comparison.significance import correct, pair_stats, run_stats
from rankeval.comparison.tables import FORMATS, LATEX_WIDTH, SPREADS, paper_table, render
from rankeval.errors import UsageError
from rankeval.measures.base import Measure
from rankeval.options import (
    CIS,
    FAMILIES,
    PAIRS,
    EvalOptions,
    check_compare_options,
    check_no_compat,
    check_seed,
    eval_options,
)

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.evaluation import Results
    from rankeval.engine.random_ranking import RandomBaseline
    from rankeval.io.data import Qrels, Run
    from rankeval.measures.registry import Registry

__all__ = [
    "CIS",
    "FAMILIES",
    "FORMATS",
    "PAIRS",
    "RANDOM",
    "SPREADS",
    "Comparison",
    "compare",
    "expand_template",
    "parameter_curve",
]


# --------------------------------------------------------------------------- result
@dataclass
class Comparison(ComparisonData):
    """The result of :func:`compare`.

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
        pair_mode: ``"baseline"`` or ``"all"``.
        test: the significance test.
        correction: the correction for multiple comparisons.
        family: what one family of comparisons is for the correction: the comparisons of
            one ``"measure"``, or ``"all"`` comparisons.
        alpha: significance level.
        samples: resamples of the bootstrap/randomisation tests and intervals and random
            orderings of the random baseline.
        seed: seed of the random draws.
        ci: ``"t"`` or ``"bootstrap"`` (percentile) intervals.
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
    ) -> str:
        """Render the comparison.

        Args:
            fmt: one of :data:`~rankeval.comparison.tables.FORMATS`. ``trec``: one tab-separated line
                per row, ``run measure query value`` and, for a comparison, ``baseline
                difference p_value p_adjusted`` and ``*`` when significant. ``tsv``/``csv``: a
                header and the columns :data:`~rankeval.comparison.data.COLUMNS`.
                ``json``/``jsonl``: the rows as objects (null where not applicable).
                ``markdown``/``latex``: the paper table (:meth:`to_markdown`, :meth:`to_latex`).
            per_query: also per-query rows (not in the paper tables).
            precision: decimals; default 4 in trec, markdown and latex, full otherwise.
            spread: paper tables only: ``"std"`` or ``"se"`` shows value ± spread.
            width: latex only: the widest the table may be (:meth:`to_latex`).
        """
        return render(self, fmt, per_query=per_query, precision=precision, spread=spread, width=width)

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
def compare(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    options: EvalOptions | None = None,
    baseline: str | None = None,
    pairs: str = "baseline",
    test: str = "ttest",
    correction: str = "none",
    family: str = "measure",
    alpha: float = 0.05,
    samples: int = 10_000,
    seed: int | None = 0,
    ci: str = "t",
    random_baseline: bool | str = False,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str | None = None,
    docinfo: str | Path | Sequence[str | Path] | None = None,
    registry: Registry | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Compare runs: scores, paired significance tests, corrections, effect sizes and
    confidence intervals.

    Args:
        qrels: as for :func:`rankeval.evaluate`.
        runs: two or more runs (a list, or ``{name: run}``), as for :func:`rankeval.evaluate`;
            one run is enough with *random_baseline*.
        measures: measure specs or objects.
        options: the evaluation options (:class:`~rankeval.options.EvalOptions`; no
            ``compat``), or give them one by one as *missing_zero*, *nest_sep*, *max_docs*,
            *on_duplicate* and *docinfo* (as for :func:`rankeval.evaluate`; not both). With
            ``missing_zero=False``, the queries a run lacks are left out of each comparison
            that involves that run (as are queries whose value is undefined).
        baseline: name of the baseline run (default: the first run).
        pairs: ``"baseline"``: each run against the baseline; ``"all"``: every pair of runs.
        test: ``"ttest"`` (paired t-test), ``"wilcoxon"`` (signed-rank), ``"bootstrap"``
            (paired bootstrap) or ``"randomization"`` (Fisher's randomisation test); see
            :mod:`rankeval.comparison.stats`.
        correction: ``"none"``, ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg).
        family: the comparisons corrected together: those of each ``"measure"`` (default),
            or ``"all"`` of them.
        alpha: significance level (markers in tables, :attr:`Comparison.significant`).
        samples: resamples of the bootstrap and randomisation tests and of bootstrap
            intervals; random orderings of the random baseline.
        seed: seed of :func:`numpy.random.default_rng` for all random draws (every comparison
            on the same queries uses the same resamples).
        ci: confidence intervals: ``"t"`` (mean ± t·sd/√n) or ``"bootstrap"`` (percentile).
        random_baseline: add a run ``random``: the expected value of each measure under a
            uniformly random ordering of the baseline run's retrieved documents (a run name:
            of that run's documents); see :mod:`rankeval.engine.random_ranking`.
        registry: as for :func:`rankeval.evaluate`.
        progress: show a progress bar on stderr (default: when stderr is a terminal).

    Returns:
        A :class:`Comparison`.

    Raises:
        UsageError: fewer than two runs, an unknown baseline, or a bad option value.
    """
    from rankeval.engine.evaluation import resolve_measures

    check_compare_options(pairs, test, correction, family, ci, alpha, samples)
    seed = check_seed(seed)
    measure_list = resolve_measures(measures, registry)
    opts = eval_options(
        options,
        missing_zero=missing_zero,
        nest_sep=nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        docinfo=docinfo,
    )
    check_no_compat(opts, "compare")
    inputs = _evaluate(qrels, runs, measure_list, opts, baseline, random_baseline, registry)
    plan = _Plan(pairs, test, correction, family, float(alpha), samples, seed, ci)
    return _compared(inputs, plan, registry, progress)


@dataclass(frozen=True)
class _Plan:
    """The statistics options of a comparison (checked)."""

    pairs: str
    test: str
    correction: str
    family: str
    alpha: float
    samples: int
    seed: int | None
    ci: str


@dataclass
class _Inputs:
    """What a comparison starts from: the data read, the runs' evaluation, the roles."""

    qrels: Qrels
    runs: list[Run]
    measures: list[Measure]
    options: EvalOptions  # its docinfo applied to qrels
    results: Results
    base: int  # the baseline run
    source: int | None  # the run whose documents the random baseline orders (None: no baseline)


def _evaluate(
    qrels: Any,
    runs: Any,
    measures: list[Measure],
    options: EvalOptions,
    baseline: str | None,
    random_baseline: bool | str,
    registry: Registry | None,
) -> _Inputs:
    """Read qrels and runs, find the roles of the runs, evaluate them."""
    from rankeval.engine.evaluation import as_runs, evaluate_results
    from rankeval.io.data import as_qrels

    qrels_obj = as_qrels(qrels)
    if options.docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(options.docinfo)
    options = replace(options, docinfo=None)
    run_objs = as_runs(runs)
    base, source = _roles(run_objs, baseline, random_baseline)
    results = evaluate_results(qrels_obj, run_objs, measures, options=options, registry=registry)
    return _Inputs(qrels_obj, run_objs, measures, options, results, base, source if random_baseline else None)


def _compared(inputs: _Inputs, plan: _Plan, registry: Registry | None, progress: bool | None) -> Comparison:
    """The statistics of the comparison: the random baseline, the tests, the intervals."""
    names = [r.name for r in inputs.runs]
    specs = [str(m) for m in inputs.measures]
    blocks = _blocks(inputs.results, names, specs)
    with progress_bars(progress) as task:
        rb = None
        if inputs.source is not None:
            rb = _random_baseline(inputs, inputs.runs[inputs.source], plan, task, registry)
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
        pair_mode=plan.pairs,
        test=plan.test,
        correction=plan.correction,
        family=plan.family,
        alpha=plan.alpha,
        samples=plan.samples,
        seed=plan.seed,
        ci=plan.ci,
        random=rb,
        integer_measures=set(inputs.results.integer_measures),
        whole_measures=set(inputs.results.whole_measures),
        **out,
    )


def _roles(runs: Sequence[Run], baseline: str | None, random_baseline: bool | str) -> tuple[int, int]:
    """The indices of the baseline run and of the run whose documents the random baseline
    orders; a UsageError if there are too few runs or a name is wrong."""
    names = [r.name for r in runs]
    if len(runs) + bool(random_baseline) < 2:
        raise UsageError(
            f"compare needs at least two runs (or one run and the random baseline); got {len(runs)}"
        )
    if random_baseline and RANDOM in names:
        raise UsageError(f"a run is named {RANDOM!r}, the name of the random baseline; rename it")
    base = _find_run(runs, baseline, "baseline") if baseline is not None else 0
    source = base
    if isinstance(random_baseline, str):
        source = _find_run(runs, random_baseline, "random-baseline run")
    return base, source


def _find_run(runs: Sequence[Any], name: str, what: str) -> int:
    """Index of the run named *name* (or read from the path *name*)."""
    for i, r in enumerate(runs):
        if r.name == name:
            return i
    for i, r in enumerate(runs):
        if r.source is not None and (r.source == name or Path(r.source) == Path(name)):
            return i
    raise UsageError(f"unknown {what} {name!r}; the runs are: {', '.join(r.name for r in runs)}")


# One block per run and measure: (run index, measure index, query ids, values, aggregate).
_Block = tuple[int, int, np.ndarray, np.ndarray, float]


def _blocks(results: Results, names: list[str], specs: list[str]) -> list[_Block]:
    """The per-query values and the aggregate of each run and measure in *results*."""
    return [
        (names.index(b.run), specs.index(b.measure), b.query_ids.astype(str), b.values, b.aggregate)
        for b in results.blocks
    ]


def _random_baseline(
    inputs: _Inputs, run: Run, plan: _Plan, task: Task, registry: Registry | None
) -> RandomBaseline:
    """The random baseline of the documents *run* retrieved, with a progress bar."""
    import pyarrow.compute as pc

    from rankeval.engine import random_ranking as rbm

    work = rbm.work(
        int(pc.count_distinct(inputs.qrels.table.column("query_id")).as_py()),
        len(run),
        inputs.measures,
        plan.samples,
        registry,
    )
    return rbm.random_baseline(
        inputs.qrels,
        run,
        inputs.measures,
        options=inputs.options,
        samples=plan.samples,
        seed=plan.seed,
        registry=registry,  # names the plugin if a measure's code fails
        progress=task("random baseline", work),
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
