"""Typer application: commands ``evaluate`` (default), ``measures``, ``plugins``, ``convert``,
``compare`` (in :mod:`rankeval.cli.compare`) and the ``meta`` group (in :mod:`rankeval.cli.meta`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from rankeval.cli.common import (
    PlainHelpCommand,
    block_size_of,
    cli_registry,
    emit,
    engine_of,
    eval_options,
    handled,
    parse_measures,
    plain_help,
    precision_of,
    require_measures,
    run_arguments,
    run_sources,
    warnings_to_stderr,
)
from rankeval.cli.compare import compare_cmd
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
    formats_help,
    on_duplicate_help,
)
from rankeval.cli.ties import ties_cmd
from rankeval.errors import RankevalError, UsageError
from rankeval.options import check_choice
from rankeval.report.formats import FORMATS as BUILTIN_FORMATS

#: command groups of their own modules, imported only when a command line names them (or help
#: lists the commands): ``rankeval meta`` costs the other commands no start-up time
LAZY_GROUPS = {"meta": ("rankeval.cli.meta", "meta_app")}


class _DefaultGroup(TyperGroup):
    """A group whose first argument, when it is not a command name, starts ``evaluate``; the
    commands of plugins (``register_commands`` hook) are added when they may be asked for.
    ``rankeval --help`` lists those of the built-in plugins only: printing help runs no
    third-party code (``rankeval plugins`` lists every plugin's commands)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] in LAZY_GROUPS:
            self._add_lazy(args[0])
        if args and _may_be_command(args[0]) and args[0] not in self.commands:
            self._add_plugin_commands()
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            # anything else (a qrels path, or an option of evaluate) starts the default command
            args = ["evaluate", *args]
        return super().parse_args(ctx, args)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAZY_GROUPS:
            self._add_lazy(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        for name in LAZY_GROUPS:
            self._add_lazy(name)
        return list(super().list_commands(ctx))

    def _add_lazy(self, name: str) -> None:
        """Add the command group *name* of :data:`LAZY_GROUPS` (imported once, when asked for)."""
        if name not in self.commands:
            import importlib

            module, attribute = LAZY_GROUPS[name]
            group = typer.main.get_group(getattr(importlib.import_module(module), attribute))
            self.add_command(group, name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._add_plugin_commands(entry_points=False)
        plain_help(self.get_params(ctx))
        super().format_help(ctx, formatter)

    def _add_plugin_commands(self, entry_points: bool = True) -> None:
        from rankeval.measures.plugins import load_registry

        try:
            registry = load_registry(entry_points=entry_points)
            commands = registry.commands
        except RankevalError:  # a broken plugin: its commands are not offered
            return
        for name, (_, command) in commands.items():
            if name not in self.commands:
                self.add_command(
                    typer.main.get_command_from_info(
                        typer.models.CommandInfo(
                            name=name,
                            cls=PlainHelpCommand,
                            help=command.help,
                            callback=_run_plugin(command, registry),
                        ),
                        pretty_exceptions_short=True,
                        rich_markup_mode=None,
                    ),
                    name,
                )


def _may_be_command(arg: str) -> bool:
    """A command name, not a path or an option (a path has a '.' or a '/')."""
    return arg.replace("_", "").replace("-", "").isalnum() and not arg.startswith("-")


def _run_plugin(command: Any, registry: Any) -> Any:
    """The command's function inside the CLI's error boundary, its text on standard output;
    the library calls it makes without a registry use *registry*, the one that offered it."""
    import functools

    from rankeval.measures.plugins import using_registry

    @functools.wraps(command.function)
    def run(*args: Any, **kwargs: Any) -> None:
        with handled(), warnings_to_stderr(), using_registry(registry):
            emit(command.function(*args, **kwargs), None)

    return run


app = typer.Typer(
    cls=_DefaultGroup,
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="trec_eval-style evaluation of ranked retrieval.\n\n"
    "rankeval QRELS RUN [RUN ...] -m SPEC [-m SPEC ...]   (the default command: evaluate)",
    epilog="Installed plugins may add commands: `rankeval plugins` lists them.",
)


def _version(value: bool) -> None:
    if value:
        from rankeval import __version__

        typer.echo(f"rankeval {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """trec_eval-style evaluation of ranked retrieval.

    rankeval QRELS RUN [RUN ...] -m SPEC [-m SPEC ...]   (the default command: evaluate)
    """


# --format, --compat and --on-duplicate list what the plugins add (``register_formats``,
# ``register_dialects``): their help is written when it is shown, not at import time
def _choices_help(registry: Any) -> dict[str, str]:
    """The help of the options whose choices come from *registry* (``None``: built-ins only)."""
    formats: list[str] = list(BUILTIN_FORMATS)
    modes: dict[str, Any] = {}
    if registry is not None:
        formats = registry.output_formats()
        modes = {name: mode for name, (_, mode) in registry.dialects.items() if mode.name is not None}
    by_mode = "".join(f"; {m.format} with --compat {n}" for n, m in modes.items() if m.format not in (None, "trec"))
    rules = {n: m.options.get("on_duplicate") for n, m in modes.items()}
    dup = "".join(f"; {rule} with --compat {n}" for n, rule in rules.items() if rule)
    described = "".join(f"; {n} = {m.description or 'a plugin mode'}" for n, m in modes.items())
    return {
        "fmt": formats_help(formats, by_mode),
        "on_duplicate": on_duplicate_help(dup),
        "compat": f"Reproduce another evaluator's output: none (the default){described}.",
    }


class _EvaluateCommand(PlainHelpCommand):
    """The evaluate command, whose ``--help`` lists the formats and compat modes of the
    built-in plugins (printing help runs no third-party code; ``rankeval plugins`` lists what
    the installed plugins add)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from rankeval.measures.plugins import load_registry

        try:
            helps = _choices_help(load_registry(entry_points=False))
        except RankevalError:  # a plugin whose hooks fail: its formats are not listed
            helps = _choices_help(None)
        for param in self.params:
            if param.name in helps and hasattr(param, "help"):
                param.help = helps[param.name]
        super().format_help(ctx, formatter)


# the options evaluate shares with other commands are declared once, in rankeval.cli.shared_options
@app.command(
    "evaluate",
    cls=_EvaluateCommand,
    epilog="Installed plugins may add formats and --compat modes: `rankeval plugins` lists them.",
)
def evaluate_cmd(
    qrels: QrelsArgument,
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar=RUNS_METAVAR,
            help="One or more run files ('-' = stdin); NAME=RUN names the run NAME in the output "
            "(default: its file name).",
        ),
    ],
    measure: MeasureOption = [],  # noqa: B006 - typer needs a list default
    per_query: PerQueryOption = False,
    fmt: FormatOption = None,
    precision: PrecisionOption = None,
    plugin: PluginOption = [],  # noqa: B006
    output: OutputOption = None,
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
    compat: Annotated[
        str,
        typer.Option(
            "--compat",
            metavar="MODE",
            help=_choices_help(None)["compat"],
        ),
    ] = "none",
    engine: EngineOption = "local",
    jobs: JobsOption = None,
    block_size: BlockSizeOption = None,
    scheduler: SchedulerOption = None,
    workers: WorkersOption = 2,
    memory_limit: MemoryLimitOption = None,
    progress: ProgressOption = None,
    debug: DebugOption = False,
) -> None:
    """Score runs against qrels (the default command)."""
    with handled(debug):
        registry, fmt = _compat_and_format(compat, fmt, plugin)
        require_measures(measure, "; `rankeval measures` lists them")
        digits = precision_of(precision)
        run_args = run_arguments(runs)
        from rankeval.report.formats import format_results
        from rankeval.report.outputs import check_outputs

        check_outputs([("-o", output)], [qrels, *(a.path for a in run_args), *(docinfo or [])])
        if registry is None:
            registry = cli_registry(plugin)
        measures = parse_measures(registry, measure, None if rel_level is None else {"rel": rel_level}, compat)
        from rankeval.evaluator import Evaluator

        chosen = engine_of(engine, scheduler, workers, memory_limit, debug)
        check_choice("--names", names, registry.namings())
        size = block_size_of(block_size)
        options = eval_options(
            no_missing_zero, nest_sep, max_docs, on_duplicate, docinfo, compat, ties, judged_only
        )
        evaluator = Evaluator(qrels, measures, options=options, registry=registry)
        with warnings_to_stderr(quiet_ties):
            results = evaluator.results(
                run_sources(run_args), jobs=jobs, engine=chosen, block_size=size, progress=progress
            )
        if names != "rankeval":
            results = results.renamed(registry.measure_names(measures, names))
        emit(format_results(results, fmt, per_query=per_query, precision=digits, registry=registry), output)


def _compat_and_format(compat: str, fmt: str | None, plugin_opts: list[str]) -> tuple[Any, str]:
    """Check ``--compat`` and ``--format`` against what the plugins add (loading them only
    when a name is not built in) and give the format: ``-f``, else the dialect's, else
    trec. Returns the registry if it was loaded."""
    registry = None
    mode = None
    if compat != "none":
        registry = cli_registry(plugin_opts)
        modes = registry.compat_names()
        if compat not in modes:
            raise UsageError(f"unknown --compat {compat!r}; expected one of {', '.join(modes)}")
        mode = registry.dialects[compat][1]
    fmt = fmt or (mode.format if mode is not None and mode.format else "trec")
    if fmt not in BUILTIN_FORMATS:
        if registry is None:
            registry = cli_registry(plugin_opts)
        formats = registry.output_formats()
        if fmt not in formats:
            raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(formats)}")
    return registry, fmt


@app.command("measures", cls=PlainHelpCommand)
def measures_cmd(
    pattern: Annotated[
        str | None,
        typer.Argument(
            metavar="[PATTERN]",
            help="Only the measures whose name, alias or plugin contains PATTERN (any case), or "
            "matches it as a glob when it has * ? or [ (e.g. 'n*DCG*').",
        ),
    ] = None,
    plugin: PluginOption = [],  # noqa: B006 - typer needs a list default
    debug: DebugOption = False,
) -> None:
    """List the measures (all, or those matching PATTERN): name, parameters (type, domain,
    default), description, aliases, source, plugin."""
    from rankeval.cli.catalogue import IR_MEASURES_NOTE, matches, measure_lines

    with handled(debug):
        entries = [e for e in cli_registry(plugin) if pattern is None or matches(e, pattern)]
        lines = [line for entry in entries for line in measure_lines(entry)]
        if pattern is None:
            lines.append(IR_MEASURES_NOTE)
        elif not entries:  # as `pip list | grep`, finding nothing is not an error
            note = IR_MEASURES_NOTE[0].lower() + IR_MEASURES_NOTE[1:]
            typer.echo(f"rankeval: no measure matches {pattern!r}; {note}", err=True)
        emit("".join(f"{line}\n" for line in lines), None)


@app.command("plugins", cls=PlainHelpCommand)
def plugins_cmd(plugin: PluginOption = [], debug: DebugOption = False) -> None:  # noqa: B006 - typer needs a list default
    """List loaded plugins, where they came from, their measures, and broken plugins."""
    with handled(debug):
        _list_plugins(cli_registry(plugin))


def _list_plugins(registry: Any) -> None:
    from rankeval.measures.plugins import hook_impls

    formats = {fmt: plugin for fmt, (plugin, _) in registry.formats.items()}
    modes = {mode: plugin for mode, (plugin, d) in registry.dialects.items() if d.name is not None}
    resolvers = {plugin for plugin, _ in hook_impls(registry, "resolve_measure")}
    commands = {command: plugin for command, (plugin, _) in registry.commands.items()}
    for name, origin in registry.plugins.items():
        names = sorted(e.cls.name for e in registry.measures.values() if e.plugin == name)
        extra = [f"format {f}" for f, p in formats.items() if p == name]
        extra += [f"--compat {m}" for m, p in modes.items() if p == name]
        extra += [f"command {c}" for c, p in commands.items() if p == name]
        if name in resolvers:
            extra.append("resolves other measure names")
        listed = " ".join(filter(None, [", ".join(names), f"({'; '.join(extra)})" if extra else ""]))
        typer.echo(f"{name}\t{origin}\t{listed}")
    for name, why in registry.failures.items():
        typer.echo(f"{name}\tBROKEN\t{why}")
    if not registry.autoload:
        typer.echo("entry points\tDISABLED\tRANKEVAL_DISABLE_PLUGIN_AUTOLOAD is set; --plugin NAME loads one")


@app.command("convert", cls=PlainHelpCommand)
def convert_cmd(
    qrels_in: Annotated[str, typer.Argument(metavar="QRELS_IN", help="Qrels (TREC) or truth (hTBG JSON).")],
    run_in: Annotated[str, typer.Argument(metavar="RUN_IN", help="Run (TREC) or prediction (hTBG JSON).")],
    qrels_out: Annotated[
        str, typer.Argument(metavar="QRELS_OUT", help="Where to write the converted qrels.")
    ],
    run_out: Annotated[str, typer.Argument(metavar="RUN_OUT", help="Where to write the converted run.")],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="FORMAT",
            help="Target format: trec (nested TREC files), json (hTBG reference) or parquet (qrels "
            "file + run directory; Parquet runs are read whole).",
        ),
    ] = "trec",
    tag: Annotated[
        str, typer.Option("--tag", metavar="TAG", help="Run tag of the TREC run written.")
    ] = "htbg",
    debug: DebugOption = False,
) -> None:
    """Convert between the hTBG reference's JSON files and nested TREC qrels/run files, or
    TREC files to Parquet (columnar, with every line's number kept)."""
    from rankeval.io.convert import json_to_trec, to_parquet, trec_to_json
    from rankeval.report.outputs import check_outputs, write_outputs

    with handled(debug):
        check_outputs([("QRELS_OUT", qrels_out), ("RUN_OUT", run_out)], [qrels_in, run_in])
        if to == "parquet":
            to_parquet(qrels_in, run_in, qrels_out, run_out)
            return
        if to == "trec":
            qrels_text, run_text = json_to_trec(qrels_in, run_in, tag=tag)
        elif to == "json":
            qrels_text, run_text = trec_to_json(qrels_in, run_in)
        else:
            raise UsageError(f"unknown target format {to!r}; expected trec, json or parquet")
        write_outputs([(qrels_out, qrels_text), (run_out, run_text)])


# the compare command lives in its own module (which does not import this one)
app.command("compare", cls=PlainHelpCommand)(compare_cmd)
app.command("ties", cls=PlainHelpCommand)(ties_cmd)

# the meta group lives in its own module (which does not import this one), imported only when
# a command line names it or help lists the commands (_DefaultGroup._add_lazy)
