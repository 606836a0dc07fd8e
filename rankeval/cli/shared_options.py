"""The options and arguments that several commands take, each declared once: a command
names its parameter with one of these types (``measure: MeasureOption = []``), so that the
same option has the same flags, metavar, help and default in every command (evaluate,
compare, measures, plugins, convert; ``tests/test_edges_cli.py`` compares them).

May import: :mod:`rankeval.options` (light: the CLI imports this module at start-up).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import typer

from rankeval.options import FORMATS

__all__ = [
    "RUNS_METAVAR",
    "BlockSizeOption",
    "DebugOption",
    "DocinfoOption",
    "EngineOption",
    "FormatOption",
    "JobsOption",
    "MaxDocsOption",
    "MeasureOption",
    "MemoryLimitOption",
    "NamesOption",
    "NestSepOption",
    "NoMissingZeroOption",
    "OnDuplicateOption",
    "OutputOption",
    "PerQueryOption",
    "PluginOption",
    "PrecisionOption",
    "QrelsArgument",
    "RelLevelOption",
    "SchedulerOption",
    "WorkersOption",
    "formats_help",
    "on_duplicate_help",
]

DebugOption = Annotated[
    bool,
    typer.Option(
        "--debug",
        help="Show Python tracebacks of errors (for plugin authors and bug reports); also RANKEVAL_DEBUG=1.",
    ),
]

# options shared by evaluate and compare
QrelsArgument = Annotated[
    str,
    typer.Argument(metavar="QRELS", help="Qrels file ('-' = stdin; .gz/.bz2/.xz; or an ir_datasets id)."),
]
RUNS_METAVAR = "[NAME=]RUN..."
"""How the run arguments of evaluate and compare read in their help
(:func:`rankeval.cli.common.run_argument`)."""
MeasureOption = Annotated[
    list[str],
    typer.Option(
        "-m",
        "--measure",
        metavar="SPEC",
        help="Measure spec(s), e.g. nDCG@10, 'AP(rel=2)'; several per -m allowed.",
    ),
]
# -p is the decimals, as in ir_measures (a text, so that a bad value is rankeval's one-line error)
PrecisionOption = Annotated[
    str | None,
    typer.Option(
        "-p",
        "--precision",
        metavar="N",
        help="Decimals to print, 0 to 30 (default 4 in the trec, markdown and latex formats, "
        "full precision in the others).",
    ),
]
PluginOption = Annotated[
    list[str],
    typer.Option(
        "-P",
        "--plugin",
        metavar="MODULE",
        help="Load the plugin MODULE: an importable module (mypkg.measures) or the path of a .py file "
        "(repeatable); 'no:NAME' keeps plugin NAME from loading.",
    ),
]
MaxDocsOption = Annotated[
    int | None,
    typer.Option(
        "-M",
        "--max-docs",
        metavar="N",
        help="Evaluate only the top N documents of each query (trec_eval -M).",
    ),
]
NestSepOption = Annotated[
    str, typer.Option("--nest-sep", metavar="SEP", help="Nested-item separator; 'none' disables nesting.")
]
PerQueryOption = Annotated[
    bool,
    typer.Option(
        "-q", "--per-query", help="Also print per-query values (compare: not in the markdown and latex tables)."
    ),
]


def formats_help(formats: Iterable[str], by_mode: str = "") -> str:
    """The help of ``-f``/``--format``: *formats*, and the default (*by_mode*: what the
    ``--compat`` modes change, ``; clef with --compat clef``)."""
    return f"Output format: {', '.join(formats)} (default trec{by_mode})."


def on_duplicate_help(by_mode: str = "") -> str:
    """The help of ``--on-duplicate`` (*by_mode*: what the ``--compat`` modes change)."""
    return f"A document given twice for a query: error (as trec_eval), first or max (default error{by_mode})."


# evaluate's --help adds the formats and rules of the plugins (rankeval.cli.app._choices_help)
FormatOption = Annotated[str | None, typer.Option("-f", "--format", metavar="FORMAT", help=formats_help(FORMATS))]
OutputOption = Annotated[
    str | None, typer.Option("-o", "--output", metavar="FILE", help="Write the results to FILE (atomically).")
]
NoMissingZeroOption = Annotated[
    bool,
    typer.Option(
        "--no-missing-zero",
        help="Queries of the qrels that a run lacks are left out of its mean (and of its comparisons) "
        "instead of scoring 0 (trec_eval without -c).",
    ),
]
RelLevelOption = Annotated[
    int | None,
    typer.Option(
        "-l",
        "--rel-level",
        metavar="N",
        help="Minimum grade counted as relevant, for every measure with a rel parameter that "
        "its spec does not set (trec_eval -l; default: each measure's own, 1 for trec_eval's).",
    ),
]
NamesOption = Annotated[
    str,
    typer.Option(
        "--names",
        metavar="STYLE",
        help="Measure names printed: rankeval (the specs), trec (trec_eval's: map, P_10) or clef (the CLEF "
        "TAR evaluator's: wss_95); with --compat clef, the evaluator's.",
    ),
]
TiesOption = Annotated[
    str,
    typer.Option(
        "--ties",
        metavar="RULE",
        help="Which ranking is scored when scores tie within a query: trec_eval (doc id descending), "
        "given (the run's line order), expected (the exact mean over all orders of each tied group), "
        "best or worst (judged items of higher grade first, or last).",
    ),
]
QuietTiesOption = Annotated[
    bool, typer.Option("--quiet-ties", help="No warning about tied scores within the measures' depth.")
]
JudgedOnlyOption = Annotated[
    bool,
    typer.Option(
        "--judged-only",
        help="Score condensed lists: drop from each ranking the items the qrels do not judge (and those "
        "with a negative grade) before scoring, as trec_eval -J; the query still counts.",
    ),
]
OnDuplicateOption = Annotated[
    str | None, typer.Option("--on-duplicate", metavar="RULE", help=on_duplicate_help())
]
DocinfoOption = Annotated[
    list[str] | None,
    typer.Option(
        "--docinfo",
        metavar="FILE",
        help="Side file of item attributes, lines 'docno key=value ...' (e.g. cost=120 for "
        "TBG, sens=1 for CS-DCG), for judged and unjudged items in every query; repeat for "
        "several files. Precedence: the item's qrels lines, then the files in order.",
    ),
]

# how runs are evaluated: the block engine's options (evaluate and compare)
EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        metavar="ENGINE",
        help="local (this machine) or dask (a Dask cluster): either way run files are "
        "evaluated in blocks of whole queries, with the same results.",
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        help="Local engine: processes evaluating blocks in parallel, this one and N-1 workers "
        "(default: one per core; 1: this process, one block at a time, memory bounded by the "
        "block size). Runs that fit in one block are evaluated in this process.",
    ),
]
BlockSizeOption = Annotated[
    str | None,
    typer.Option(
        "--block-size",
        metavar="SIZE",
        help="Bytes of run text per block, e.g. 16MiB (default: 32MiB, or less so that each "
        "process gets 4 blocks, down to 4MiB; at least 64KiB: a smaller size is raised to it); "
        "the cut moves to the next query.",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option("--scheduler", metavar="ADDRESS", help="With --engine dask: a running Dask scheduler."),
]
WorkersOption = Annotated[
    int,
    typer.Option("--workers", metavar="N", help="With --engine dask and no --scheduler: local worker processes."),
]
ProgressOption = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on stderr (default: when stderr is a terminal; none for runs that fit in one block).",
    ),
]
MemoryLimitOption = Annotated[
    str | None,
    typer.Option(
        "--memory-limit",
        metavar="SIZE",
        help="With --engine dask and no --scheduler: memory per worker, e.g. 2GB.",
    ),
]
