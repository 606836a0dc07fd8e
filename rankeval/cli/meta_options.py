"""The options of the ``meta`` commands, each declared once.

Every meta command takes the same output options (:class:`OutputOptions`: ``-f``, ``-o``, ``-p``) and,
when it evaluates runs, the same evaluation and engine options as ``compare``
(:class:`EvaluationOptions`). Each of these is a field of its dataclass, typed with the option of
:mod:`rankeval.cli.shared_options`; :func:`meta_command` adds the fields to a command's
parameters in place of a parameter ``out: OutputOptions`` or ``how: EvaluationOptions``, and hands the
command the dataclass built from what was given.

May import: :mod:`rankeval.cli.common`, :mod:`rankeval.cli.shared_options`,
:mod:`rankeval.options`, :mod:`rankeval.errors`; the report and library modules lazily.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rankeval.cli.common import (
    PlainHelpCommand,
    cli_registry,
    emit,
    eval_options,
    parse_measures,
    precision_of,
)
from rankeval.cli.shared_options import (
    BlockSizeOption,
    DebugOption,
    DocinfoOption,
    EngineOption,
    JobsOption,
    JudgedOnlyOption,
    MaxDocsOption,
    MemoryLimitOption,
    NestSepOption,
    NoMissingZeroOption,
    OnDuplicateOption,
    OutputOption,
    PluginOption,
    PrecisionOption,
    QuietTiesOption,
    RelLevelOption,
    SchedulerOption,
    TiesOption,
    WorkersOption,
)
from rankeval.errors import UsageError
from rankeval.options import MAX_SAMPLES, MAX_SEED, check_seed

if TYPE_CHECKING:
    from rankeval.options import EvalOptions

__all__ = [
    "AlphaOption",
    "EvaluationOptions",
    "OutputOptions",
    "PlotOption",
    "SeedOption",
    "SizesOption",
    "TableFormatOption",
    "alpha_of",
    "meta_command",
    "samples_of",
    "seed_of",
    "sizes_of",
]

TableFormatOption = Annotated[
    str,
    typer.Option("-f", "--format", metavar="FORMAT", help="tsv, csv, json, jsonl, markdown or latex."),
]
# a text, so that a bad value is rankeval's one-line error naming the range
SeedOption = Annotated[
    str, typer.Option("--seed", metavar="N", help=f"Seed of the random draws, 0 to {MAX_SEED}.")
]
AlphaOption = Annotated[float, typer.Option("--alpha", metavar="A", help="Significance level.")]
PlotOption = Annotated[
    Path | None,
    typer.Option("--plot", metavar="FILE", help="Write the figure to FILE (.png, .pdf or .svg)."),
]
SizesOption = Annotated[
    str | None,
    typer.Option(
        "--sizes",
        metavar="C,C,...",
        help="Topic-set sizes, e.g. 10,20,25 (default: about ten evenly spaced sizes up to the largest).",
    ),
]

#: metadata of the :class:`EvaluationOptions` fields that choose the engine (a command that does not
#: evaluate on the block engine leaves them out)
_ENGINE = {"engine": True}


@dataclass(frozen=True)
class OutputOptions:
    """Where and how a meta command writes its table (:func:`rankeval.report.formats.format_table`).

    Attributes:
        fmt: ``-f``: one of :data:`~rankeval.report.formats.TABLE_FORMATS`.
        output: ``-o``: a file, or ``None`` for standard output.
        precision: ``-p``: decimals as given (default: 4 in markdown and latex, all of them in
            the others, as ``-p`` says).
    """

    fmt: TableFormatOption = "tsv"
    output: OutputOption = None
    precision: PrecisionOption = None

    def check(self, inputs: Iterable[object], plot: Path | None = None) -> None:
        """Refuse a bad format, precision or plot file name, and outputs that are inputs
        (before any work)."""
        from rankeval.options import check_choice
        from rankeval.report.formats import TABLE_FORMATS
        from rankeval.report.outputs import check_outputs

        check_choice("format", self.fmt, TABLE_FORMATS)
        precision_of(self.precision)
        if plot is not None:
            from rankeval.comparison.plots import plot_format_of

            plot_format_of(plot)
        check_outputs([("-o", self.output), ("--plot", plot)], inputs)

    def write(self, columns: list[str], rows: Iterable[Iterable[Any]]) -> None:
        """Write the table of *columns* and *rows*."""
        from rankeval.report.formats import format_table

        digits = precision_of(self.precision)
        if digits is None and self.fmt in ("markdown", "latex"):
            digits = 4
        emit(format_table(columns, rows, self.fmt, digits), self.output)


@dataclass(frozen=True)
class EvaluationOptions:
    """How the meta commands evaluate runs: the evaluation and engine options they share with
    ``compare`` (each field is the option of the same name)."""

    plugin: PluginOption = field(default_factory=list)
    no_missing_zero: NoMissingZeroOption = False
    max_docs: MaxDocsOption = None
    rel_level: RelLevelOption = None
    nest_sep: NestSepOption = "/"
    on_duplicate: OnDuplicateOption = None
    docinfo: DocinfoOption = None
    ties: TiesOption = "trec_eval"
    judged_only: JudgedOnlyOption = False
    quiet_ties: QuietTiesOption = False
    engine: EngineOption = field(default="local", metadata=_ENGINE)
    jobs: JobsOption = field(default=None, metadata=_ENGINE)
    block_size: BlockSizeOption = field(default=None, metadata=_ENGINE)
    scheduler: SchedulerOption = field(default=None, metadata=_ENGINE)
    workers: WorkersOption = field(default=2, metadata=_ENGINE)
    memory_limit: MemoryLimitOption = field(default=None, metadata=_ENGINE)
    debug: DebugOption = False

    def options(self) -> EvalOptions:
        """The :class:`~rankeval.options.EvalOptions` of these options."""
        return eval_options(
            self.no_missing_zero,
            self.nest_sep,
            self.max_docs,
            self.on_duplicate,
            self.docinfo,
            ties=self.ties,
            judged_only=self.judged_only,
        )

    def registry_and_measures(self, specs: list[str]) -> tuple[Any, list[Any]]:
        """The registry (``--plugin``) and the measures of *specs* (``-l`` sets the default
        relevance grade)."""
        registry = cli_registry(list(self.plugin))
        defaults = None if self.rel_level is None else {"rel": self.rel_level}
        return registry, parse_measures(registry, specs, defaults)


_Command = Callable[..., None]


def _parameters(cls: type, engine: bool) -> list[inspect.Parameter]:
    """The command-line parameters of the fields of *cls* (*engine*: with the engine's)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    params = []
    for f in fields(cls):
        if f.metadata.get("engine") and not engine:
            continue
        default = (
            f.default_factory() if f.default is MISSING and f.default_factory is not MISSING else f.default
        )
        params.append(
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[f.name]
            )
        )
    return params


def meta_command(group: typer.Typer, name: str, *, engine: bool = True) -> Callable[[_Command], _Command]:
    """Register *command* as the command *name* of *group*, its parameters ``out: OutputOptions``
    and ``how: EvaluationOptions`` replaced by their fields' options (*engine*: with the engine's;
    without, the engine fields keep their defaults)."""

    def register(command: _Command) -> _Command:
        own = inspect.signature(command, eval_str=True)
        bundles = {
            p.name: p.annotation for p in own.parameters.values() if p.annotation in (OutputOptions, EvaluationOptions)
        }
        params = [p for p in own.parameters.values() if p.name not in bundles]
        kept: dict[str, list[str]] = {}
        for pname, cls in bundles.items():
            extra = _parameters(cls, engine)
            kept[pname] = [p.name for p in extra]
            params += extra

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            for pname, cls in bundles.items():
                kwargs[pname] = cls(**{n: kwargs.pop(n) for n in kept[pname]})
            command(**kwargs)

        run.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        group.command(name, cls=PlainHelpCommand)(run)
        return command

    return register


def seed_of(text: str) -> int:
    """The value of ``--seed``."""
    seed = check_seed(text, "--seed", text=True)
    assert seed is not None  # a text is never None
    return seed


def samples_of(samples: int) -> int:
    """The value of ``--samples``, checked."""
    if not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"--samples must be a whole number from 1 to {MAX_SAMPLES}, not {samples}")
    return samples


def alpha_of(alpha: float, option: str = "--alpha") -> float:
    """The value of ``--alpha`` (or *option*), checked."""
    if not 0 < alpha < 1:
        raise UsageError(f"{option} must be between 0 and 1 (exclusive), got {alpha:g}")
    return alpha


def sizes_of(text: str | None) -> Sequence[int] | None:
    """The topic-set sizes of ``--sizes`` (``None``: the library's default); the library
    checks their range."""
    if text is None:
        return None
    if not re.fullmatch(r"\s*[0-9]+\s*(,\s*[0-9]+\s*)*", text):
        raise UsageError(f"--sizes takes whole numbers separated by commas, e.g. 10,20,25, not {text!r}")
    return [int(part) for part in text.split(",")]
