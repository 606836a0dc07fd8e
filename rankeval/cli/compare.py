"""The ``compare`` command: a thin layer over :func:`rankeval.comparison.compare.compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankeval.cli.common import (
    DebugOption,
    MaxDocsOption,
    MeasureOption,
    NestSepOption,
    PluginModuleOption,
    PrecisionOption,
    QrelsArgument,
    cli_registry,
    emit,
    eval_options,
    handled,
    parse_measures,
    precision_of,
    read_qrels,
    read_runs,
    require_measures,
    warnings_to_stderr,
)
from rankeval.errors import UsageError
from rankeval.options import FORMATS, PLOT_FORMATS, SPREADS, check_choice, check_compare_options


def compare_cmd(
    qrels: QrelsArgument,
    runs: Annotated[
        list[str],
        typer.Argument(metavar="RUN...", help="Two or more run files (one with --random-baseline)."),
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
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random draws.")] = 0,
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
    per_query: Annotated[
        bool, typer.Option("-q", "--per-query", help="Also per-query rows (not in markdown/latex).")
    ] = False,
    fmt: Annotated[
        str,
        typer.Option("-f", "--format", help=f"Output format: {' | '.join(FORMATS)}."),
    ] = "trec",
    p: Annotated[
        list[str],
        typer.Option(
            "-p",
            help="A number: decimals to print (default 4 in trec, markdown and latex, full "
            "precision in the others). Otherwise a plugin module to load ('no:NAME' blocks one).",
        ),
    ] = [],  # noqa: B006
    precision: PrecisionOption = None,
    plugin: PluginModuleOption = [],  # noqa: B006
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write the results to FILE (atomically).")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="DIR",
            help="Write plots into DIR: per-query differences from the baseline, score distributions, curves.",
        ),
    ] = None,
    plot_format: Annotated[str, typer.Option("--plot-format", help="png | pdf | svg.")] = "png",
    curve: Annotated[
        list[str],
        typer.Option(
            "--curve",
            metavar="TEMPLATE",
            help="Plot each run's score against a parameter: a spec with one {v1,v2,...} group, "
            "e.g. 'hTBG@h={1m,5m,30m,3h}' or 'nDCG@{1,5,10,20}' (needs --plot).",
        ),
    ] = [],  # noqa: B006
    no_missing_zero: Annotated[
        bool,
        typer.Option(
            "--no-missing-zero",
            help="Queries a run lacks are left out of its comparisons instead of scoring 0.",
        ),
    ] = False,
    max_docs: MaxDocsOption = None,
    nest_sep: NestSepOption = "/",
    on_duplicate: Annotated[
        str, typer.Option("--on-duplicate", help="A document given twice for a query: error, first or max.")
    ] = "error",
    docinfo: Annotated[
        str | None,
        typer.Option("--docinfo", metavar="FILE", help="Side file of document attributes (as for evaluate)."),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Progress bar on stderr (default: when stderr is a terminal)."
        ),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Compare runs for a paper: scores, significance tests, corrections, intervals, tables, plots."""
    with handled(debug):
        check_compare_options(pairs, test, correction, family, ci, alpha, samples)
        check_choice("format", fmt, FORMATS)
        check_choice("spread", spread, SPREADS)
        check_choice("plot format", plot_format, PLOT_FORMATS)
        if curve and plot is None:
            raise UsageError("--curve writes a plot: give --plot DIR")
        require_measures(measure)
        digits = precision_of(p, precision)
        from rankeval.comparison.compare import compare
        from rankeval.comparison.curves import expand_template, parameter_curve
        from rankeval.report.outputs import check_outputs

        check_outputs([("-o", output), ("--plot", plot)], [qrels, *runs, docinfo])
        options = eval_options(no_missing_zero, nest_sep, max_docs, on_duplicate, docinfo)
        registry = cli_registry([*p, *plugin])
        measures = parse_measures(registry, measure)
        for template in curve:
            expand_template(template)  # a bad template fails before any work
        qrels_obj, options = read_qrels(qrels, options)
        run_objs = read_runs(runs)
        with warnings_to_stderr():
            result = compare(
                qrels_obj,
                run_objs,
                measures,
                options=options,
                baseline=baseline,
                pairs=pairs,
                test=test,
                correction=correction,
                family=family,
                alpha=alpha,
                samples=samples,
                seed=seed,
                ci=ci,
                random_baseline=random_baseline,
                registry=registry,
                progress=progress,
            )
            curves = [
                parameter_curve(qrels_obj, run_objs, t, options=options, registry=registry) for t in curve
            ]
        text = result.format(
            fmt, per_query=per_query, precision=digits, spread=None if spread == "none" else spread
        )
        if plot is not None:
            result.plot(plot, plot_format, curves)
        emit(text, output)
