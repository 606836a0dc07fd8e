"""The ``compare`` command: a thin layer over :meth:`rankeval.Evaluator.compare`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rankeval.cli.common import (
    block_size_of,
    cli_registry,
    emit,
    engine_of,
    eval_options,
    handled,
    parse_measures,
    precision_of,
    require_measures,
    run_arguments,
    run_sources,
    warnings_to_stderr,
)
from rankeval.cli.shared_options import (
    RUNS_METAVAR,
    BlockSizeOption,
    DebugOption,
    DocinfoOption,
    EngineOption,
    FormatOption,
    JobsOption,
    JudgedOnlyOption,
    MaxDocsOption,
    MeasureOption,
    MemoryLimitOption,
    NamesOption,
    NestSepOption,
    NoMissingZeroOption,
    OnDuplicateOption,
    OutputOption,
    PerQueryOption,
    PluginOption,
    PrecisionOption,
    ProgressOption,
    QrelsArgument,
    QuietTiesOption,
    RelLevelOption,
    SchedulerOption,
    TiesOption,
    WorkersOption,
)
from rankeval.errors import UsageError
from rankeval.options import (
    MAX_SEED,
    PLOT_FORMATS,
    SPREADS,
    CompareOptions,
    check_choice,
    check_seed,
)

if TYPE_CHECKING:
    from rankeval.comparison.compare import Comparison


def compare_cmd(
    qrels: QrelsArgument,
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar=RUNS_METAVAR,
            help="Two or more run files (one with --random-baseline); NAME=RUN names the run NAME "
            "in tables and plots (default: its file name).",
        ),
    ],
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    baseline: Annotated[
        str | None,
        typer.Option(
            "-b", "--baseline", metavar="RUN", help="Baseline run (its name or path; default: the first run)."
        ),
    ] = None,
    pairs: Annotated[
        str,
        typer.Option(
            "--pairs",
            help="baseline: each run against the baseline; all: every pair of runs (markers become letters).",
        ),
    ] = "baseline",
    test: Annotated[
        str,
        typer.Option(
            "-t",
            "--test",
            help="Paired significance test: ttest | wilcoxon | bootstrap | randomization (two-sided).",
        ),
    ] = "ttest",
    correction: Annotated[
        str,
        typer.Option("--correction", help="Multiple-comparison correction: none | bonferroni | holm | bh."),
    ] = "none",
    family: Annotated[
        str,
        typer.Option("--family", help="Comparisons corrected together: those of each measure, or all."),
    ] = "measure",
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level.")] = 0.05,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            help="Resamples of the bootstrap / randomisation tests and bootstrap intervals; "
            "random orderings of the random baseline.",
        ),
    ] = 10_000,
    # a text, so that a bad value is rankeval's one-line error naming the range
    seed: Annotated[
        str, typer.Option("--seed", metavar="N", help=f"Seed of the random draws, 0 to {MAX_SEED}.")
    ] = "0",
    ci: Annotated[
        str, typer.Option("--ci", help="Confidence intervals: t (mean ± t·sd/√n) or bootstrap (percentile).")
    ] = "t",
    random_baseline: Annotated[
        bool,
        typer.Option(
            "--random-baseline",
            help="Add a run 'random': each measure's expected value under a uniformly random "
            "ordering of the baseline run's retrieved documents.",
        ),
    ] = False,
    spread: Annotated[
        str,
        typer.Option(
            "--spread",
            help="markdown/latex tables: show value ± std (over queries) or ± se (standard error), or none.",
        ),
    ] = "none",
    per_query: PerQueryOption = False,
    fmt: FormatOption = None,
    precision: PrecisionOption = None,
    plugin: PluginOption = [],  # noqa: B006
    output: OutputOption = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="DIR",
            help="Write plots into DIR: per-query differences from the baseline, score distributions, curves.",
        ),
    ] = None,
    plot_format: Annotated[
        str, typer.Option("--plot-format", metavar="FORMAT", help=f"Format of --plot's files: {', '.join(PLOT_FORMATS)}.")
    ] = "png",
    panels: Annotated[
        Path | None,
        typer.Option(
            "--panels",
            metavar="FILE",
            help="Write one figure, one panel per measure and a shared legend: each --curve, or "
            "(without --curve) each -m measure's scores with confidence intervals. "
            "FILE ends in .png, .pdf or .svg.",
        ),
    ] = None,
    latex_width: Annotated[
        str | None,
        typer.Option(
            "--latex-width",
            metavar="LENGTH",
            help="latex tables: the widest the table may be, a TeX length (default \\linewidth; "
            "0.9\\textwidth, 12cm); a wider table is shrunk to it with \\resizebox (graphicx). "
            "none: natural width.",
        ),
    ] = None,
    curve: Annotated[
        list[str],
        typer.Option(
            "--curve",
            metavar="TEMPLATE",
            help="Plot each run's score against a parameter: a spec with one {v1,v2,...} group, "
            "e.g. 'hTBG@h={1m,5m,30m,3h}' or 'nDCG@{1,5,10,20}' (needs --plot).",
        ),
    ] = [],  # noqa: B006
    no_missing_zero: NoMissingZeroOption = False,
    max_docs: MaxDocsOption = None,
    rel_level: RelLevelOption = None,
    names: NamesOption = "rankeval",
    nest_sep: NestSepOption = "/",
    on_duplicate: OnDuplicateOption = None,
    docinfo: DocinfoOption = None,
    ties: TiesOption = "trec_eval",
    quiet_ties: QuietTiesOption = False,
    judged_only: JudgedOnlyOption = False,
    engine: EngineOption = "local",
    jobs: JobsOption = None,
    block_size: BlockSizeOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = 2,
    memory_limit: MemoryLimitOption = None,
    progress: ProgressOption = None,
    debug: DebugOption = False,
) -> None:
    """Compare runs for a paper: scores, significance tests, corrections, intervals, tables, plots."""
    with handled(debug):
        stats = CompareOptions(
            baseline=baseline,
            pairs=pairs,
            test=test,
            correction=correction,
            family=family,
            alpha=alpha,
            samples=samples,
            seed=check_seed(seed, "--seed", text=True),
            ci=ci,
            random_baseline=random_baseline,
        )
        fmt = fmt or "trec"
        check_choice("spread", spread, SPREADS)
        check_choice("plot format", plot_format, PLOT_FORMATS)
        if curve and plot is None and panels is None:
            raise UsageError("--curve writes a plot: give --plot DIR or --panels FILE")
        require_measures(measure)
        digits = precision_of(precision)
        run_args = run_arguments(runs)
        from rankeval.comparison.compare import read_once
        from rankeval.comparison.curves import expand_template
        from rankeval.comparison.plots import plot_format_of
        from rankeval.comparison.tables import LATEX_WIDTH, check_width
        from rankeval.evaluator import Evaluator
        from rankeval.report.formats import find_format
        from rankeval.report.outputs import check_outputs

        width = check_width(LATEX_WIDTH if latex_width is None else latex_width)
        if panels is not None:
            plot_format_of(panels)  # a file name without a plot format fails before any work
        check_outputs(
            [("-o", output), ("--plot", plot), ("--panels", panels)],
            [qrels, *(a.path for a in run_args), *(docinfo or [])],
        )
        chosen = engine_of(engine, scheduler, workers, memory_limit, debug)
        size = block_size_of(block_size)
        options = eval_options(
            no_missing_zero, nest_sep, max_docs, on_duplicate, docinfo, ties=ties, judged_only=judged_only
        )
        registry = cli_registry(plugin)
        find_format(fmt, registry)  # built in, or added by a plugin (given the rows of the runs)
        check_choice("--names", names, registry.namings())
        measures = parse_measures(registry, measure, None if rel_level is None else {"rel": rel_level})
        for template in curve:
            expand_template(template)  # a bad template fails before any work
        evaluator = Evaluator(qrels, measures, options=options, registry=registry)
        with warnings_to_stderr(quiet_ties):
            sources = read_once(run_sources(run_args))  # stdin, read once for the curves too
            how = {"jobs": jobs, "engine": chosen, "block_size": size}
            result = evaluator.compare(sources, stats=stats, progress=progress, **how)
            curves = [evaluator.curve(sources, t, **how) for t in curve]
        if names != "rankeval":
            result = _renamed(result, registry.measure_names(measures, names))
        text = result.format(
            fmt,
            per_query=per_query,
            precision=digits,
            spread=None if spread == "none" else spread,
            width=width,
            registry=registry,
        )
        if plot is not None:
            result.plot(plot, plot_format, curves)
        if panels is not None:
            result.plot_panels(panels, curves=curves)
        emit(text, output)


def _renamed(result: Comparison, names: dict[str, str]) -> Comparison:
    """*result* with each measure *m* labelled ``names.get(m, m)`` (``--names``), as
    :meth:`rankeval.engine.evaluation.Results.renamed` labels an evaluation's."""
    return replace(
        result,
        measures=[names.get(m, m) for m in result.measures],
        integer_measures={names.get(m, m) for m in result.integer_measures},
        whole_measures={names.get(m, m) for m in result.whole_measures},
    )
