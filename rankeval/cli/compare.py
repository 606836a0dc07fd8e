"""The ``compare`` command: a thin layer over :func:`rankeval.comparison.compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rankeval.cli.common import (
    DebugOption,
    MaxDocsOption,
    NestSepOption,
    cli_registry,
    emit,
    handled,
    split_p,
    warnings_to_stderr,
)
from rankeval.errors import UsageError

FORMATS = ("trec", "tsv", "csv", "json", "jsonl", "markdown", "latex")
TESTS = ("ttest", "wilcoxon", "bootstrap", "randomization")
CORRECTIONS = ("none", "bonferroni", "holm", "bh")
PLOT_FORMATS = ("png", "pdf", "svg")


def _choice(option: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise UsageError(f"{option}: unknown value {value!r}; expected one of {', '.join(choices)}")


def compare_cmd(
    qrels: Annotated[
        str,
        typer.Argument(metavar="QRELS", help="Qrels file ('-' = stdin; .gz/.bz2/.xz; or an ir_datasets id)."),
    ],
    runs: Annotated[
        list[str],
        typer.Argument(metavar="RUN...", help="Two or more run files (one with --random-baseline)."),
    ],
    measure: Annotated[
        list[str],
        typer.Option(
            "-m", "--measure", help="Measure spec(s), e.g. nDCG@10, 'AP(rel=2)'; several per -m allowed."
        ),
    ] = [],  # noqa: B006 - typer needs a list default
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
    precision: Annotated[int | None, typer.Option("--precision", help="Decimals to print.")] = None,
    plugin: Annotated[list[str], typer.Option("--plugin", help="Plugin module to load.")] = [],  # noqa: B006
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
        _choice("--format", fmt, FORMATS)
        _choice("--test", test, TESTS)
        _choice("--correction", correction, CORRECTIONS)
        _choice("--pairs", pairs, ("baseline", "all"))
        _choice("--family", family, ("measure", "all"))
        _choice("--ci", ci, ("t", "bootstrap"))
        _choice("--spread", spread, ("none", "std", "se"))
        _choice("--plot-format", plot_format, PLOT_FORMATS)
        if not 0 < alpha < 1:
            raise UsageError(f"--alpha must be between 0 and 1 (exclusive), not {alpha:g}")
        if curve and plot is None:
            raise UsageError("--curve writes a plot: give --plot DIR")
        if not measure:
            raise UsageError("no measure given; use -m SPEC (e.g. -m AP -m nDCG@10)")
        digits, _, _ = split_p(p)
        digits = precision if precision is not None else digits
        from rankeval.outputs import check_outputs
        from rankeval.report import check_precision

        check_precision(digits)
        check_outputs([("-o", output), ("--plot", plot)], [qrels, *runs, docinfo])
        registry = cli_registry([*p, *plugin])
        measures = [m for spec in measure for m in registry.parse_many(spec)]
        from rankeval.comparison import compare
        from rankeval.curves import expand_template, parameter_curve
        from rankeval.data import Qrels, Run
        from rankeval.engine import as_runs

        for template in curve:
            expand_template(template)  # a bad template fails before any work
        qrels_obj = Qrels.read(qrels)
        if docinfo is not None:
            qrels_obj = qrels_obj.with_docinfo(docinfo)
        run_objs = as_runs([Run.read(r) for r in runs])
        options = {
            "missing_zero": not no_missing_zero,
            "nest_sep": None if nest_sep.lower() == "none" else nest_sep,
            "max_docs": max_docs,
            "on_duplicate": on_duplicate,
        }
        with warnings_to_stderr():
            result = compare(
                qrels_obj,
                run_objs,
                measures,
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
                **options,  # type: ignore[arg-type]
            )
            curves = [parameter_curve(qrels_obj, run_objs, t, registry=registry, **options) for t in curve]
        text = result.format(
            fmt, per_query=per_query, precision=digits, spread=None if spread == "none" else spread
        )
        if plot is not None:
            result.plot(plot, plot_format, curves)
        emit(text, output)
