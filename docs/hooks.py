"""MkDocs hooks: generate the measure reference and the CLI help at build time.

Registered in ``mkdocs.yml`` under ``hooks:``. Two kinds of placeholders are replaced in
the Markdown of every page:

* ``<!-- builtin-plugins -->`` — the built-in plugins and what each provides (the registry);
* ``<!-- measures -->`` — one section per measure of the registry (built-in plugins only,
  so the site does not depend on what else happens to be installed on the build machine):
  name, description, definition (the class docstring), parameters (type, domain, default,
  help), aliases, source and providing plugin;
* ``<!-- source: MODULE:NAME -->`` — the current source code of a class or function
  (``rankeval_trec:AP``), as a Python code block, so tutorials quote the real code;
* ``<!-- help: NAME -->`` — the ``--help`` output of ``rankeval`` (NAME ``rankeval``) or of
  the sub-command NAME (``evaluate``, ``measures``, ``plugins``), rendered at a fixed width
  of 100 columns with ANSI codes stripped.

Nothing here needs the network.
"""

from __future__ import annotations

import inspect
import logging
import re
from functools import cache
from typing import Any

log = logging.getLogger("mkdocs.hooks.rankeval")

MEASURES_PLACEHOLDER = "<!-- measures -->"
BUILTINS_PLACEHOLDER = "<!-- builtin-plugins -->"
MEASURE_INDEX_PLACEHOLDER = "<!-- measures-index -->"
SOURCE_PLACEHOLDER = re.compile(r"<!--\s*source:\s*([A-Za-z0-9_.]+):([A-Za-z0-9_.]+)\s*-->")
HELP_PLACEHOLDER = re.compile(r"<!--\s*help:\s*([A-Za-z0-9_-]+)\s*-->")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTH = 100


# ------------------------------------------------------------------------- measures
def _cell(text: Any) -> str:
    """Text safe inside one Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _default(value: Any) -> str:
    from rankeval.measures.base import format_param_value

    if value is None:
        return "`none`"
    return f"`{format_param_value(value)}`"


def _domain(info: Any) -> str:
    """The numbers a parameter accepts (``[0, 1]``); a dash for a parameter that is not a number
    (its type column lists its choices)."""
    if info.domain is not None:
        return f"`{_cell(info.domain)}`"
    return "—"


def _anchor(name: str) -> str:
    return "measure-" + re.sub(r"[^A-Za-z0-9_-]+", "-", name)


def _spec_forms(cls: Any) -> list[str]:
    forms = [cls.name]
    if cls.at:
        forms.append(f"{cls.name}@{cls.at}")
    params = [p.name for p in cls.params()]
    if params:
        forms.append(cls.name + "(" + ", ".join(f"{p}=…" for p in params) + ")")
    return forms


def _docstring(cls: Any) -> str:
    doc = cls.__dict__.get("__doc__")
    if not doc or doc.startswith(f"{cls.__name__}("):  # dataclass's generated signature
        return "*(no docstring)*"
    return inspect.cleandoc(doc)


@cache
def _registry() -> Any:
    from rankeval.measures.plugins import load_registry

    registry = load_registry(entry_points=False)
    for name, why in registry.failures.items():
        log.warning("plugin %r %s", name, why)
    return registry


def measures_index_markdown() -> str:
    """A summary table: one row per registered measure."""
    lines = ["| Measure | Description | Plugin |", "|---|---|---|"]
    for entry in _registry():
        cls = entry.cls
        at = f"@{cls.at}" if cls.at else ""
        lines.append(
            f"| [`{cls.name}{at}`](#{_anchor(cls.name)}) | {_cell(cls.description)} | `{entry.plugin}` |"
        )
    return "\n".join(lines) + "\n"


def builtin_plugins_markdown() -> str:
    """A list of the built-in plugins, from the registry: each with what it provides."""
    from rankeval.measures.plugins import DEFAULT_PLUGINS, hook_impls

    registry = _registry()
    resolvers = {plugin for plugin, _ in hook_impls(registry, "resolve_measure")}
    lines = []
    for name in DEFAULT_PLUGINS:
        measures = sorted((e.cls.name for e in registry.measures.values() if e.plugin == name), key=str.lower)
        what = ", ".join(f"`{m}`" for m in measures)
        if name in resolvers:
            what += ("; " if what else "") + "resolves other measure names"
        lines.append(f"- `{name}`: {what}")
    return "\n".join(lines) + "\n"


def measures_markdown() -> str:
    """One section per registered measure."""
    out: list[str] = []
    for entry in _registry():
        cls = entry.cls
        at = f"@{cls.at}" if cls.at else ""
        out.append(f"### {cls.name}{at} {{ #{_anchor(cls.name)} }}\n")
        if cls.description:
            out.append(f"*{cls.description.strip()}*\n")
        out.append(_docstring(cls) + "\n")
        forms = ", ".join(f"`{f}`" for f in _spec_forms(cls))
        out.append(f"**Spec:** {forms}\n")
        params = cls.params()
        if params:
            out.append("| Parameter | Type | Domain | Default | Description |")
            out.append("|---|---|---|---|---|")
            for p in params:
                name = f"`{p.name}`" + (" (the `@` value)" if p.name == cls.at else "")
                out.append(
                    f"| {name} | `{_cell(p.type_name)}` | {_domain(p)} | {_default(p.default)} | {_cell(p.help)} |"
                )
            out.append("")
        else:
            out.append("**Parameters:** none\n")
        aliases = []
        for alias, fixed in cls.aliases.items():
            extra = ", ".join(f"{k}={v}" for k, v in fixed.items())
            aliases.append(f"`{alias}`" + (f" ({extra})" if extra else ""))
        for prefix in cls.trec_prefixes:
            aliases.append(f"`{prefix}.N` / `{prefix}_N` (sets `{cls.at}`)")
        out.append(f"**Aliases:** {', '.join(aliases) if aliases else 'none'}  ")
        from rankeval.measures.base import Measure

        if cls.aggregate_from_parts is not Measure.aggregate_from_parts:
            out.append("**Aggregate:** the measure's own (see the definition above)  ")
        elif cls.integer:
            out.append("**Aggregate:** sum over queries (a count, printed without decimals)  ")
        else:
            out.append("**Aggregate:** mean over queries  ")
        out.append(f"**Source:** {cls.source or 'not given'}  ")
        out.append(f"**Plugin:** `{entry.plugin}`\n")
    return "\n".join(out)


# ------------------------------------------------------------------------------ help
@cache
def cli_help(command: str) -> str:
    """``rankeval [COMMAND] --help`` as plain text, 100 columns wide."""
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = ["--help"] if command == "rankeval" else [command, "--help"]
    saved: dict[str, Any] = {}
    try:  # pin typer's rich console: fixed width, no colours, even under CI=true
        from typer import rich_utils
    except ImportError:  # typer without rich: plain click help, already uncoloured
        rich_utils = None
    if rich_utils is not None:
        for key, value in (("MAX_WIDTH", WIDTH), ("FORCE_TERMINAL", False), ("COLOR_SYSTEM", None)):
            if hasattr(rich_utils, key):
                saved[key] = getattr(rich_utils, key)
                setattr(rich_utils, key, value)
    try:
        result = CliRunner().invoke(
            app,
            args,
            prog_name="rankeval",
            env={
                "COLUMNS": str(WIDTH),
                "LINES": "50",
                "TERM": "dumb",
                "NO_COLOR": "1",
                "FORCE_COLOR": None,
                "PY_COLORS": None,
                "GITHUB_ACTIONS": None,
            },
            terminal_width=WIDTH,
        )
    finally:
        for key, value in saved.items():
            setattr(rich_utils, key, value)
    if result.exit_code != 0:
        raise RuntimeError(
            f"`rankeval {' '.join(args)}` exited with {result.exit_code}: {result.output}"
            + (f"\n{result.exception!r}" if result.exception else "")
        )
    text = ANSI.sub("", result.output)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _help_block(match: re.Match[str]) -> str:
    command = match.group(1)
    shown = "rankeval --help" if command == "rankeval" else f"rankeval {command} --help"
    return f"```text\n$ {shown}\n{cli_help(command)}\n```"


# ---------------------------------------------------------------------------- source
def _source_block(match: re.Match[str]) -> str:
    import importlib

    module_name, qualname = match.group(1), match.group(2)
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    source = inspect.getsource(obj).rstrip()
    return f"```python\n{source}\n```"


# ----------------------------------------------------------------------------- hook
def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the placeholders of this page with generated Markdown."""
    if MEASURE_INDEX_PLACEHOLDER in markdown:
        markdown = markdown.replace(MEASURE_INDEX_PLACEHOLDER, measures_index_markdown())
    if BUILTINS_PLACEHOLDER in markdown:
        markdown = markdown.replace(BUILTINS_PLACEHOLDER, builtin_plugins_markdown())
    if MEASURES_PLACEHOLDER in markdown:
        markdown = markdown.replace(MEASURES_PLACEHOLDER, measures_markdown())
    if SOURCE_PLACEHOLDER.search(markdown):
        markdown = SOURCE_PLACEHOLDER.sub(_source_block, markdown)
    if HELP_PLACEHOLDER.search(markdown):
        markdown = HELP_PLACEHOLDER.sub(_help_block, markdown)
    return markdown
