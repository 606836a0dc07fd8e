"""What every command shares: the error boundary, ``--debug``, warnings on stderr, output.

Each command's body runs inside :func:`handled`, the one place where exceptions become what a
user sees:

* :class:`~rankeval.errors.RankevalError` → ``rankeval: error: <message>``, its exit code
  (1 bad input or environment, 2 usage);
* Ctrl-C (``KeyboardInterrupt``, or pyarrow's ``ArrowCancelled``) → ``rankeval: interrupted``,
  exit 130;
* memory exhaustion → one line saying what to do, exit 1;
* anything else is a bug in rankeval or a plugin: ``rankeval: internal error: ...`` and the
  request to report it, exit 1.

No traceback is shown unless ``--debug`` is given or ``RANKEVAL_DEBUG=1`` is set; then the
traceback (with its causes, e.g. the exception a plugin raised) precedes the message.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from rankeval.errors import RankevalError, RankevalWarning, UsageError
from rankeval.options import EvalOptions

if TYPE_CHECKING:
    from rankeval.io.data import Qrels, Run

__all__ = [
    "DebugOption",
    "MaxDocsOption",
    "MeasureOption",
    "NestSepOption",
    "PluginModuleOption",
    "PluginOption",
    "PrecisionOption",
    "QrelsArgument",
    "cli_registry",
    "debug_enabled",
    "emit",
    "eval_options",
    "fail",
    "handled",
    "parse_measures",
    "precision_of",
    "read_qrels",
    "read_runs",
    "require_measures",
    "split_p",
    "warnings_to_stderr",
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
MeasureOption = Annotated[
    list[str],
    typer.Option(
        "-m", "--measure", help="Measure spec(s), e.g. nDCG@10, 'AP(rel=2)'; several per -m allowed."
    ),
]
PrecisionOption = Annotated[int | None, typer.Option("--precision", help="Decimals to print.")]
PluginModuleOption = Annotated[list[str], typer.Option("--plugin", help="Plugin module to load.")]
# the -p of the listing commands (measures, plugins): a plugin module only
PluginOption = Annotated[list[str], typer.Option("-p", "--plugin", help="Extra plugin module to load.")]
MaxDocsOption = Annotated[
    int | None,
    typer.Option("-M", "--max-docs", help="Evaluate only the top N documents of each query (trec_eval -M)."),
]
NestSepOption = Annotated[
    str, typer.Option("--nest-sep", help="Nested-item separator; 'none' disables nesting.")
]


INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""


def debug_enabled(flag: bool = False) -> bool:
    """Whether tracebacks are shown: ``--debug`` or ``RANKEVAL_DEBUG`` set to a true value."""
    return flag or os.environ.get("RANKEVAL_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def fail(exc: RankevalError, debug: bool = False) -> NoReturn:
    """Print *exc* as ``rankeval: error: ...`` (after its traceback with *debug*) and exit
    with its exit code."""
    if debug_enabled(debug):
        traceback.print_exception(exc, file=sys.stderr)
    typer.echo(f"rankeval: error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


def _is_interrupt(exc: BaseException) -> bool:
    # pyarrow turns SIGINT during its own work into ArrowCancelled (an Exception subclass)
    return isinstance(exc, KeyboardInterrupt) or type(exc).__name__ == "ArrowCancelled"


def _preload() -> None:
    """Import pyarrow and pandas before any work. pyarrow imports pandas lazily, on its first
    compute call; a Ctrl-C landing inside that import leaves pandas half-initialised and
    surfaces later as a TypeError instead of an interrupt. Inside a command only, so that
    ``rankeval --help`` stays fast."""
    import pandas  # noqa: F401
    import pyarrow.compute  # noqa: F401


@contextmanager
def handled(debug: bool = False) -> Iterator[None]:
    """The error boundary of a command (see the module docstring)."""
    try:
        _preload()
        yield
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except RankevalError as exc:
        fail(exc, debug)
    except BaseException as exc:
        if debug_enabled(debug):
            traceback.print_exception(exc, file=sys.stderr)
        if _is_interrupt(exc):
            typer.echo("rankeval: interrupted", err=True)
            raise typer.Exit(INTERRUPTED) from None
        if isinstance(exc, MemoryError):
            typer.echo(
                "rankeval: error: out of memory; evaluate fewer runs at a time, use --engine dask, "
                "or a machine with more memory",
                err=True,
            )
            raise typer.Exit(1) from None
        if not isinstance(exc, Exception):
            raise  # GeneratorExit and the like: not ours to report
        hint = "" if debug_enabled(debug) else " (run with --debug for the traceback)"
        typer.echo(f"rankeval: internal error: {type(exc).__name__}: {exc}{hint}; please report it", err=True)
        raise typer.Exit(1) from None


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Print each distinct :class:`RankevalWarning` raised inside as one line
    ``rankeval: warning: ...`` on stderr; other warnings are shown as Python shows them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankevalWarning)
        yield
    seen: set[str] = set()
    for w in caught:
        if issubclass(w.category, RankevalWarning):
            text = str(w.message)
            if text not in seen:
                seen.add(text)
                typer.echo(f"rankeval: warning: {text}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def emit(text: str | bytes, output: str | Path | None) -> None:
    """Write the results to *output* (safely, :func:`rankeval.report.outputs.write_output`) or to
    standard output."""
    from rankeval.report.outputs import write_output, write_stdout

    if output is not None:
        write_output(output, text)
    else:
        write_stdout(text if isinstance(text, str) else text.decode("utf-8"))


def split_p(values: list[str]) -> tuple[int | None, list[str], list[str]]:
    """``-p`` takes a number of decimals or a plugin module (``no:name`` blocks one)."""
    precision: int | None = None
    plugins: list[str] = []
    blocked: list[str] = []
    for v in values:
        if v.isdigit():
            precision = int(v)
        elif v.startswith("no:"):
            blocked.append(v[3:])
        else:
            plugins.append(v)
    return precision, plugins, blocked


def cli_registry(plugin_opts: list[str]) -> Any:
    """The registry of the built-in, entry-point and ``-p``/``--plugin`` plugins; each broken
    plugin is one ``rankeval: warning:`` line."""
    from rankeval.measures.plugins import load_registry

    _, plugins, blocked = split_p(plugin_opts)
    registry = load_registry(plugins, blocked=blocked)
    for name, why in registry.failures.items():
        typer.echo(f"rankeval: warning: plugin {name!r} {why}", err=True)
    return registry


def precision_of(p: list[str], precision: int | None) -> int | None:
    """The decimals to print: ``--precision``, else a number given to ``-p`` (checked)."""
    from rankeval.report.formats import check_precision

    digits, _, _ = split_p(p)
    digits = precision if precision is not None else digits
    check_precision(digits)
    return digits


def eval_options(
    no_missing_zero: bool,
    nest_sep: str,
    max_docs: int | None,
    on_duplicate: str | None,
    docinfo: str | None,
    compat: str = "none",
) -> EvalOptions:
    """The :class:`~rankeval.options.EvalOptions` of the command-line options (``--nest-sep
    none`` disables nesting, ``--compat none`` is no mode); the library checks them."""
    return EvalOptions(
        missing_zero=not no_missing_zero,
        nest_sep=None if nest_sep.lower() == "none" else nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        docinfo=docinfo,
        compat=None if compat == "none" else compat,
    )


def require_measures(specs: list[str], hint: str = "") -> None:
    """A UsageError if no ``-m`` was given (*hint* ends the message)."""
    if not specs:
        raise UsageError(f"no measure given; use -m SPEC (e.g. -m AP -m nDCG@10){hint}")


def parse_measures(registry: Any, specs: list[str], defaults: dict[str, Any] | None = None) -> list[Any]:
    """The measures of the ``-m`` options (*defaults*: parameter values that replace the class
    defaults, e.g. ``rel`` from ``-l``)."""
    return [m for spec in specs for m in registry.parse_many(spec, defaults)]


def read_qrels(qrels: str, options: EvalOptions) -> tuple[Qrels, EvalOptions]:
    """The qrels, read once, with the options' ``--docinfo`` applied, and the options without
    it (so that the library does not apply it again)."""
    from dataclasses import replace

    from rankeval.io.data import Qrels

    qrels_obj = Qrels.read(qrels)
    if options.docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(options.docinfo)
    return qrels_obj, replace(options, docinfo=None)


def read_runs(runs: list[str]) -> list[Run]:
    """The runs, read once and named uniquely (:func:`rankeval.engine.evaluation.as_runs`)."""
    from rankeval.engine.evaluation import as_runs
    from rankeval.io.data import Run

    return as_runs([Run.read(r) for r in runs])
