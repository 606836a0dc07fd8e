"""The ``ties`` command: each measure's range over the orders of tied scores
(:meth:`rankeval.Evaluator.tie_range`), so an author sees whether a value, or a difference
between runs, survives the tie rule."""

from __future__ import annotations

from typing import Annotated

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
    JobsOption,
    JudgedOnlyOption,
    MaxDocsOption,
    MeasureOption,
    MemoryLimitOption,
    NestSepOption,
    NoMissingZeroOption,
    OnDuplicateOption,
    OutputOption,
    PerQueryOption,
    PluginOption,
    PrecisionOption,
    QrelsArgument,
    RelLevelOption,
    SchedulerOption,
    WorkersOption,
)
from rankeval.options import check_choice


def ties_cmd(
    qrels: QrelsArgument,
    runs: Annotated[
        list[str],
        typer.Argument(metavar=RUNS_METAVAR, help="One or more run files; NAME=RUN names the run NAME."),
    ],
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    per_query: PerQueryOption = False,
    fmt: Annotated[
        str,
        typer.Option("-f", "--format", metavar="FORMAT", help="tsv, csv, json, jsonl, markdown or latex."),
    ] = "tsv",
    precision: PrecisionOption = None,
    plugin: PluginOption = [],  # noqa: B006
    output: OutputOption = None,
    no_missing_zero: NoMissingZeroOption = False,
    max_docs: MaxDocsOption = None,
    rel_level: RelLevelOption = None,
    nest_sep: NestSepOption = "/",
    on_duplicate: OnDuplicateOption = None,
    docinfo: DocinfoOption = None,
    judged_only: JudgedOnlyOption = False,
    engine: EngineOption = "local",
    jobs: JobsOption = None,
    block_size: BlockSizeOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = 2,
    memory_limit: MemoryLimitOption = None,
    debug: DebugOption = False,
) -> None:
    """Each measure's value under the worst, trec_eval's, the expected and the best order of tied scores."""
    with handled(debug):
        from rankeval.report.formats import TABLE_FORMATS, format_table
        from rankeval.report.outputs import check_outputs

        check_choice("format", fmt, TABLE_FORMATS)
        require_measures(measure)
        digits = precision_of(precision)
        run_args = run_arguments(runs)
        check_outputs([("-o", output)], [qrels, *(a.path for a in run_args), *(docinfo or [])])
        registry = cli_registry(plugin)
        measures = parse_measures(registry, measure, None if rel_level is None else {"rel": rel_level})
        options = eval_options(
            no_missing_zero, nest_sep, max_docs, on_duplicate, docinfo, judged_only=judged_only
        )
        chosen = engine_of(engine, scheduler, workers, memory_limit, debug)
        from rankeval.comparison.compare import read_once
        from rankeval.engine.ties import RANGE_RULES
        from rankeval.evaluator import Evaluator

        evaluator = Evaluator(qrels, measures, options=options, registry=registry)
        with warnings_to_stderr():
            sources = read_once(run_sources(run_args))  # stdin read once for the four orders
            frame = evaluator.tie_range(sources, jobs=jobs, engine=chosen, block_size=block_size_of(block_size))
        if not per_query:
            frame = frame[frame["query_id"].isna()]
        columns = ["run", *(["query_id"] if per_query else []), "measure", *RANGE_RULES]
        rows = (
            [None if c == "query_id" and _missing(v) else v for c, v in zip(columns, row, strict=True)]
            for row in frame[columns].itertuples(index=False)
        )
        emit(format_table(columns, rows, fmt, 4 if digits is None else digits), output)


def _missing(value: object) -> bool:
    return value is None or value != value  # None or NaN: the aggregate row
