"""What every command shares: the error boundary, ``--debug``, warnings on stderr, output.

Each command's body runs inside :func:`handled`, the one place where exceptions become what a
user sees:

* :class:`~rankeval.errors.RankevalError` → ``rankeval: error: <message>``, its exit code
  (1 bad input or environment, 2 usage);
* Ctrl-C (``KeyboardInterrupt``, or pyarrow's ``ArrowCancelled``) → ``rankeval: interrupted``,
  exit 130; SIGTERM and SIGHUP likewise, ``rankeval: terminated (SIGTERM)``, exit 143 (129)
  (:mod:`rankeval.cli`);
* memory exhaustion → one line saying what to do, exit 1;
* anything else is a bug in rankeval or a plugin: ``rankeval: internal error: ...`` and the
  request to report it, exit 1.

No traceback is shown unless ``--debug`` is given or ``RANKEVAL_DEBUG=1`` is set; then the
traceback (with its causes, e.g. the exception a plugin raised) precedes the message.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperCommand

from rankeval.cli.signals import Stopped, report_stop, unreported
from rankeval.errors import InputError, RankevalError, RankevalWarning, ResourceError, TieWarning, UsageError
from rankeval.options import EvalOptions

if TYPE_CHECKING:
    from rankeval.io.data import Run

__all__ = [
    "PlainHelpCommand",
    "RunArgument",
    "block_size_of",
    "cli_registry",
    "debug_enabled",
    "emit",
    "engine_of",
    "eval_options",
    "fail",
    "handled",
    "parse_measures",
    "parse_size",
    "plain_help",
    "precision_of",
    "read_runs",
    "require_measures",
    "run_argument",
    "run_arguments",
    "run_sources",
    "split_plugins",
    "warnings_to_stderr",
]

class PlainHelpCommand(TyperCommand):
    """A command whose ``--help`` shows values as a user writes them (:func:`plain_help`)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        plain_help(self.get_params(ctx))
        super().format_help(ctx, formatter)

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        plain_help(self.get_params(ctx))
        super().format_usage(ctx, formatter)


def plain_help(params: list[Any]) -> None:
    """Make the help of *params* show values, not typer's Python types: an argument by its
    metavar alone (``QRELS``, ``[NAME=]RUN...``; typer would add ``<str>`` and braces), a flag
    without ``<bool>``, an option without a metavar by the kind of value (``N``, ``FILE``, its
    name) — also the options of the commands plugins add."""
    from typer.core import TyperArgument, TyperOption

    for param in params:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or (param.name or "value").upper()
            param.display_type_rich = _no_type  # type: ignore[method-assign]
            param.get_usage_pieces = partial(_usage, param)  # type: ignore[method-assign]
        elif isinstance(param, TyperOption) and param.metavar is None:
            if param.is_flag or param.count:
                param.metavar = ""
            else:
                param.metavar = _kind_metavar(param)


def _kind_metavar(param: Any) -> str:
    """``N`` for a whole number, ``FILE`` for a path, else the option's long name (``TEST``)."""
    import typing

    kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if typing.get_origin(kind) is list:
        kind = typing.get_args(kind)[0]
    if kind is int:
        return "N"
    if isinstance(kind, type) and issubclass(kind, Path):
        return "FILE"
    return str(max(param.opts, key=len)).lstrip("-").replace("-", "_").upper()


def _no_type(ctx: Any = None) -> None:
    return None


def _usage(param: Any, ctx: Any) -> list[str]:
    return [param.metavar]


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
    compute call; a Ctrl-C landing inside that import leaves pandas half-initialised (or
    pyarrow's import lock held) and surfaces later as a TypeError or a hang instead of an
    interrupt. Inside a command only, so that ``rankeval --help`` stays fast."""
    import pandas  # noqa: F401
    import pyarrow.compute  # noqa: F401


def _limit_fault(exc: BaseException) -> ResourceError | None:
    """What *exc* is when the machine's limits, not the input nor rankeval, made it: a shared
    library that cannot be mapped into memory (``ImportError: ... failed to map segment``) or
    a thread that cannot be started (Python's or pyarrow's), a file that cannot be opened for
    want of file descriptors (``ulimit -n``), here or in what *exc* was raised
    from (a reader's ``InputError`` would otherwise blame its file). ``None`` otherwise."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        if "failed to map segment" in text:
            library = os.path.basename(text.partition(": ")[0]) or "a library"
            return ResourceError(f"out of memory: cannot load {library}{_memory_limit()}")
        if "can't start new thread" in text or "Failed to launch worker thread" in text:
            return ResourceError(f"cannot start a thread: the system refused it{_memory_limit(threads=True)}")
        if isinstance(seen, OSError) and seen.errno in (errno.EMFILE, errno.ENFILE):
            return ResourceError(
                f"cannot open a file: {seen.strerror}{_files_limit()}; raise the limit, or use --jobs 1 "
                "(the worker processes hold files of their own)"
            )
        seen = seen.__cause__ or seen.__context__
    return None


def _files_limit() -> str:
    """The open-files limit, for a message: `` (at most 16 open files: ulimit -n)``."""
    try:
        import resource

        return f" (at most {resource.getrlimit(resource.RLIMIT_NOFILE)[0]} open files: ulimit -n)"
    except (ImportError, OSError, ValueError):
        return " (ulimit -n)"


def _memory_limit(threads: bool = False) -> str:
    """The end of a resource message: the address-space limit if there is one, else what to do
    (*threads*: a thread could not start, which a limit on processes can also cause)."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        unlimited = limit == resource.RLIM_INFINITY
    except (ImportError, OSError, ValueError):
        limit, unlimited = 0, True
    if not unlimited:
        return f"; this process may use only {limit >> 20} MiB of address space (ulimit -v {limit >> 10}): raise the limit"
    if threads:
        return "; free some memory, or raise the limit on processes (ulimit -u)"
    return "; free some memory"


@contextmanager
def handled(debug: bool = False) -> Iterator[None]:
    """The error boundary of a command (see the module docstring)."""
    try:
        _preload()
        yield
    except (typer.Exit, typer.Abort, SystemExit):
        raise
    except BaseException as exc:
        signum = unreported()
        if signum is not None:  # a stop signal, whatever it broke on its way out
            raise typer.Exit(report_stop(Stopped(signum))) from None
        if isinstance(exc, RankevalError):
            fail(_limit_fault(exc) or exc, debug)
        fault = _limit_fault(exc)
        if fault is not None:
            fail(fault, debug)
        if debug_enabled(debug):
            traceback.print_exception(exc, file=sys.stderr)
        if _is_interrupt(exc):
            raise typer.Exit(report_stop(exc)) from None
        if isinstance(exc, MemoryError):
            typer.echo(
                "rankeval: error: out of memory; evaluate fewer runs at a time, lower --jobs or "
                "--block-size, or use a machine with more memory",
                err=True,
            )
            raise typer.Exit(1) from None
        if not isinstance(exc, Exception):
            raise  # GeneratorExit and the like: not ours to report
        hint = "" if debug_enabled(debug) else " (run with --debug for the traceback)"
        typer.echo(f"rankeval: internal error: {type(exc).__name__}: {exc}{hint}; please report it", err=True)
        raise typer.Exit(1) from None


@contextmanager
def warnings_to_stderr(quiet_ties: bool = False) -> Iterator[None]:
    """Print each distinct :class:`RankevalWarning` raised inside as one line
    ``rankeval: warning: ...`` on stderr (*quiet_ties*: not the
    :class:`~rankeval.errors.TieWarning`); other warnings are shown as Python shows them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankevalWarning)
        if quiet_ties:
            warnings.simplefilter("ignore", TieWarning)
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


def split_plugins(values: list[str]) -> tuple[list[str], list[str]]:
    """The ``--plugin`` values: modules to load and (``no:NAME``) plugin names to block."""
    plugins: list[str] = []
    blocked: list[str] = []
    for v in values:
        if v.startswith("no:"):
            if not v[3:]:
                raise UsageError("--plugin no:NAME needs the NAME of the plugin to keep from loading")
            blocked.append(v[3:])
        elif not v:
            raise UsageError("--plugin needs a module name")
        else:
            plugins.append(v)
    return plugins, blocked


def cli_registry(plugin_opts: list[str]) -> Any:
    """The registry of the built-in, entry-point and ``--plugin`` plugins; each broken
    plugin is one ``rankeval: warning:`` line."""
    from rankeval.measures.plugins import load_registry

    plugins, blocked = split_plugins(plugin_opts)
    registry = load_registry(plugins, blocked=blocked)
    for name, why in registry.failures.items():
        typer.echo(f"rankeval: warning: plugin {name!r} {why}", err=True)
    return registry


def precision_of(text: str | None) -> int | None:
    """The decimals of ``-p``/``--precision`` (``None``: the format's default).

    Raises:
        UsageError: not a whole number from 0 to 30 (with a hint when it names a module:
            plugins load with ``--plugin``).
    """
    from rankeval.report.formats import MAX_PRECISION, check_precision

    if text is None:
        return None
    digits = int(text) if re.fullmatch(r"[+-]?[0-9]{1,4}", text.strip()) else None
    if digits is None or not 0 <= digits <= MAX_PRECISION:
        raise UsageError(
            f"-p/--precision takes a number of decimals from 0 to {MAX_PRECISION}, not {text!r}{_plugin_hint(text)}"
        )
    check_precision(digits)
    return digits


def _plugin_hint(text: str) -> str:
    """How to say what ``-p TEXT`` meant before ``-p`` was only the decimals, if TEXT reads as a
    module name (``mything``, ``pkg.mod``) or ``no:NAME``."""
    name = text[3:] if text.startswith("no:") else text
    if not name or not all(part.isidentifier() for part in name.split(".")):
        return ""
    if name != text:
        return f"; to keep plugin {name} from loading, use --plugin {text}"
    return f"; to load the plugin {text}, use --plugin {text}"


def eval_options(
    no_missing_zero: bool,
    nest_sep: str,
    max_docs: int | None,
    on_duplicate: str | None,
    docinfo: list[str] | None,
    compat: str = "none",
    ties: str = "trec_eval",
    judged_only: bool = False,
) -> EvalOptions:
    """The :class:`~rankeval.options.EvalOptions` of the command-line options (``--nest-sep
    none`` disables nesting, ``--compat none`` is no mode); the library checks them."""
    return EvalOptions(
        missing_zero=not no_missing_zero,
        nest_sep=None if nest_sep.lower() == "none" else nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        docinfo=tuple(docinfo) if docinfo else None,
        compat=None if compat == "none" else compat,
        ties=ties,
        judged_only=judged_only,
    )


def require_measures(specs: list[str], hint: str = "") -> None:
    """A UsageError if no ``-m`` was given (*hint* ends the message)."""
    if not specs:
        raise UsageError(f"no measure given; use -m SPEC (e.g. -m AP -m nDCG@10){hint}")


def parse_measures(
    registry: Any, specs: list[str], defaults: dict[str, Any] | None = None, dialect: str | None = None
) -> list[Any]:
    """The measures of the ``-m`` options (*defaults*: parameter values that replace the class
    defaults, e.g. ``rel`` from ``-l``; *dialect*: the ``--compat`` value, whose names the
    specs may use, e.g. CLEF's ``ap`` for ``tar_ap``)."""
    from rankeval.engine.prepare import compat_of

    mode = compat_of(dialect, registry)
    aliases = mode[1].aliases if mode is not None else None
    return [m for spec in specs for m in registry.parse_many(spec, defaults, aliases=aliases)]


@dataclass(frozen=True)
class RunArgument:
    """A run as given on the command line: ``PATH`` or ``NAME=PATH`` (:func:`run_arguments`).

    Attributes:
        text: the argument as written.
        path: the run file (``-``: standard input; with ``--engine dask``, also a glob).
        name: the name given with ``NAME=``, or the file name when it is not UTF-8
            (:func:`_text_name`); ``None``: the library names the run (its file name).
    """

    text: str
    path: str
    name: str | None = None

    @property
    def shown_name(self) -> str:
        """The name the run will have: the one given, else its file name (``stdin`` for ``-``),
        as :meth:`rankeval.Run.read` names it."""
        if self.name is not None:
            return self.name
        return "stdin" if self.path == "-" else Path(self.path).name


def run_argument(text: str) -> RunArgument:
    """One run argument: a path that exists as written is a path (a file literally named
    ``a=b.run`` too); otherwise ``NAME=PATH`` (split at the first ``=``, NAME without ``/``)
    names the run NAME; anything else is a path.

    Raises:
        UsageError: an empty NAME or PATH (``=run.txt``, ``BM25=``), or a NAME with control
            characters (a tab would break the output's columns).
    """
    name, eq, path = text.partition("=")
    if not eq or "/" in name or os.sep in name or os.path.lexists(text):
        own = Path(text).name
        return RunArgument(text, text, None if _text_name(own) == own else _text_name(own))
    if not name.strip() or not path:
        raise UsageError(f"run argument {text!r}: expected PATH or NAME=PATH, with a non-empty NAME and PATH")
    name = _text_name(name)
    if not name.isprintable():
        raise UsageError(
            f"run argument {text!r}: a run name cannot hold tabs, line breaks or control characters"
        )
    return RunArgument(text, path, name)


def _text_name(name: str) -> str:
    r"""*name* as text every output can hold: the bytes of a file name that are not UTF-8 (which
    Python keeps as lone surrogates) written as ``\xff``: the file ``b\xe4r.run`` of a Latin-1
    system is the run ``b\xe4r.run``, backslash and all."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def run_arguments(texts: list[str]) -> list[RunArgument]:
    """The run arguments of a command (:func:`run_argument`).

    Raises:
        UsageError: a bad argument; a name given with ``NAME=`` that another run also has
            (given, or its file name).
    """
    args = [run_argument(t) for t in texts]
    for i, first in enumerate(args):
        for second in args[i + 1 :]:
            named = first.name is not None or second.name is not None
            if named and first.shown_name == second.shown_name:
                raise UsageError(
                    f"two runs are named {first.shown_name!r} ({first.text!r} and {second.text!r}); "
                    "give each run its own name with NAME=PATH"
                )
    return args


def read_runs(args: list[RunArgument]) -> list[Run]:
    """The runs, read once and named as given, or by file name
    (:func:`rankeval.engine.evaluation.as_runs` tells apart runs of the same file name)."""
    from rankeval.engine.evaluation import as_runs
    from rankeval.io.data import Run

    for a in args:
        if a.name is not None and a.path != "-" and not os.path.lexists(a.path):
            # say how the path came about: 'k=10/run.txt' may have meant a directory 'k=10'
            raise InputError(f"file not found (the run argument {a.text!r} read as NAME=PATH)", source=a.path)
    return as_runs([Run.read(a.path, a.name) for a in args])


def parse_size(text: str, option: str) -> int:
    """A size in bytes given as ``64MB``, ``1GiB`` or a plain number of bytes (Dask's
    :func:`dask.utils.parse_bytes`); a UsageError naming *option* otherwise."""
    from dask.utils import parse_bytes

    try:
        size = int(parse_bytes(text.strip()))
    except (ValueError, OverflowError, TypeError):
        size = 0
    if size < 1:
        raise UsageError(f"{option} takes a size such as 64MB, 1GiB or 1000000 (bytes), not {text!r}")
    return size


def engine_of(engine: str, scheduler: str | None, workers: int, memory_limit: str | None, debug: bool) -> Any:
    """The engine of ``--engine`` (one of :data:`~rankeval.engine.evaluation.ENGINES`):
    ``"local"``, or the Dask engine's options (``--scheduler``, ``--workers``,
    ``--memory-limit``)."""
    from rankeval.engine.evaluation import ENGINES
    from rankeval.options import check_choice

    check_choice("--engine", engine, ENGINES)
    if engine == "local":
        return engine
    from rankeval.engine.distributed import DaskOptions

    if workers < 1:
        raise UsageError("--workers must be at least 1")
    return DaskOptions(scheduler=scheduler, workers=workers, memory_limit=memory_limit, debug=debug_enabled(debug))


def block_size_of(text: str | None) -> int | None:
    """The bytes of ``--block-size`` (at least :data:`~rankeval.io.blocks.MIN_BLOCK_SIZE`: a
    smaller size is raised to it); ``None``: the engine's default."""
    from rankeval.io.blocks import MIN_BLOCK_SIZE

    return None if text is None else max(MIN_BLOCK_SIZE, parse_size(text, "--block-size"))


def run_sources(args: list[RunArgument]) -> Any:
    """The runs for the engine, which reads files itself, block by block: their paths, or
    ``{name: path}`` when a name is given (each run named as :attr:`RunArgument.shown_name`
    says); runs whose names only the files' tags can tell apart are read here
    (:func:`read_runs`)."""
    for a in args:
        if a.name is not None and a.path != "-" and not os.path.lexists(a.path):
            # say how the path came about: 'k=10/run.txt' may have meant a directory 'k=10'
            raise InputError(f"file not found (the run argument {a.text!r} read as NAME=PATH)", source=a.path)
    if all(a.name is None for a in args):
        return [a.path for a in args]
    names = [a.shown_name for a in args]
    if len(set(names)) == len(names):
        return {a.shown_name: a.path for a in args}
    return read_runs(args)
