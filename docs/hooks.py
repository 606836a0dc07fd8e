"""MkDocs hooks: generate the measure reference and the CLI help, and render the formulas,
at build time.

Registered in ``mkdocs.yml`` under ``hooks:``. These placeholders are replaced in the
Markdown of every page:

* ``<!-- contract -->`` — the plugin contract, from ``rankeval.extension``: a table of its hooks
  (signature, the first paragraph of the docstring, the built-in plugins that implement it)
  and a table of the types a plugin registers or receives (the names of its ``__all__`` that
  ``rankeval`` re-exports, each with the first paragraph of its docstring);
* ``<!-- builtin-plugins -->`` — the built-in plugins and what each provides (the registry);
* ``<!-- implemented-by: HOOK -->`` — the built-in plugins that implement the hook HOOK
  (``register_formats``), for tables of hooks;
* ``<!-- measures -->`` — one section per measure of the registry (built-in plugins only,
  so the site does not depend on what else happens to be installed on the build machine):
  name, description, definition (the class docstring), parameters (type, domain, default,
  help), aliases, source and providing plugin;
* ``<!-- source: MODULE:NAME -->`` — the current source code of a class or function
  (``rankeval_trec:AP``), as a Python code block, so tutorials quote the real code;
* ``<!-- help: NAME -->`` — the ``--help`` output of ``rankeval`` (NAME ``rankeval``) or of
  the sub-command NAME (``evaluate``, ``measures``, ``plugins``), rendered at a fixed width
  of `WIDTH` columns with ANSI codes stripped, in a code block of class ``cli-help`` (which
  ``docs/stylesheets/extra.css`` sizes so that the whole width fits the text column). A help
  text that rich has to cut at that width (a word too long for its column, shown with
  ``…``) is a warning, so ``mkdocs build --strict`` fails on it.

The formulas (``$...$`` and ``$$...$$``, which ``pymdownx.arithmatex`` keeps as TeX) are
turned into MathML in the HTML of each page, so the site shows them with no script and no
network. Nothing here needs the network.
"""

from __future__ import annotations

import ast
import html
import inspect
import itertools
import logging
import re
from functools import cache
from typing import Any

log = logging.getLogger("mkdocs.hooks.rankeval")

MEASURES_PLACEHOLDER = "<!-- measures -->"
CONTRACT_PLACEHOLDER = "<!-- contract -->"
BUILTINS_PLACEHOLDER = "<!-- builtin-plugins -->"
MEASURE_INDEX_PLACEHOLDER = "<!-- measures-index -->"
SOURCE_PLACEHOLDER = re.compile(r"<!--\s*source:\s*([A-Za-z0-9_.]+):([A-Za-z0-9_.]+)\s*-->")
HELP_PLACEHOLDER = re.compile(r"<!--\s*help:\s*([A-Za-z0-9_-]+)\s*-->")
IMPLEMENTED_BY_PLACEHOLDER = re.compile(r"<!--\s*implemented-by:\s*([A-Za-z0-9_]+)\s*-->")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# arithmatex's generic output: \(...\) in a span, \[...\] in a div, the TeX HTML-escaped
MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.DOTALL)
# the columns of the --help boxes: wide enough that rich cuts no word of the help texts (at
# 84 it cut --format's list of formats), narrow enough that a box fits the text column in
# the font docs/stylesheets/extra.css gives it
WIDTH = 88


# ------------------------------------------------------------------------- measures
def _cell(text: Any) -> str:
    """Text safe inside one Markdown table cell (not inside a code span: see `_code`)."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _code(text: Any) -> str:
    """A code span, also inside a table cell: Markdown's tables do not split a row at a ``|``
    inside backticks, and a backslash in a code span is shown as it is, so nothing is escaped."""
    return "`" + " ".join(str(text).split()) + "`"


def _default(value: Any) -> str:
    from rankeval.measures.base import format_param_value

    if value is None:
        return _code("none")
    return _code(format_param_value(value))


def _domain(info: Any) -> str:
    """The numbers a parameter accepts (``[0, 1]``); a dash for a parameter that is not a number
    (its type column lists its choices)."""
    if info.domain is not None:
        return _code(info.domain)
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


# What a built-in plugin's hook adds, for the hooks whose additions have no name to list.
HOOK_PHRASES = {
    "resolve_measure": "resolves other measure names (`resolve_measure`)",
    "random_model": "exact random baselines of its measures (`random_model`)",
}


def _dialect_phrase(name: str, dialect: Any) -> str:
    """How the plugin list shows a dialect: its ``--compat`` and ``--names`` values."""
    given = [f"`--compat {dialect.name}`"] if dialect.name is not None else []
    given += [f"`--names {dialect.naming}`"] if dialect.naming is not None else []
    spellings = " (and its `-m` spellings)" if dialect.expand is not None else ""
    return f"the dialect {' / '.join(given) or 'of `-m` spellings'}{spellings}"


def builtin_plugins_markdown() -> str:
    """A list of the built-in plugins, from the registry: each with what it provides (its
    measures, then what its other hooks add), as ``rankeval plugins`` shows it."""
    from rankeval.measures.plugins import DEFAULT_PLUGINS, hook_impls

    registry = _registry()
    named: list[tuple[dict[str, tuple[str, Any]], Any]] = [  # ({name: (plugin, item)}, how to show one)
        (registry.formats, lambda name, _: f"the output format `-f {name}`"),
        (registry.dialects, _dialect_phrase),
        (registry.commands, lambda name, _: f"the command `rankeval {name}`"),
    ]
    lines = []
    for name in DEFAULT_PLUGINS:
        measures = sorted((e.cls.name for e in registry.measures.values() if e.plugin == name), key=str.lower)
        what = ["measures " + ", ".join(f"`{m}`" for m in measures)] if measures else []
        for items, shown in named:
            what += [shown(key, item) for key, (plugin, item) in items.items() if plugin == name]
        for hook, phrase in HOOK_PHRASES.items():
            if name in {plugin for plugin, _ in hook_impls(registry, hook)}:
                what.append(phrase)
        lines.append(f"- `{name}`: {'; '.join(what) or 'nothing'}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- contract
# How the contract's annotations show a type of a layer above it: rankeval.extension imports
# nothing above the foundation, so it calls a measure ``MeasureObject`` (an alias of Any).
SHOWN_AS = {"MeasureObject": "Measure"}
# Contract names whose object has no docstring of rankeval's own (pluggy's marker); any other
# name without a docstring is a warning, so `mkdocs build --strict` fails on it.
NO_DOCSTRING = {
    "hookimpl": "The decorator of a plugin's hook functions (`@hookimpl`, "
    "`@hookimpl(tryfirst=True)`): each is named after the hook it implements.",
}
_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")


def _markdown(text: str) -> str:
    """Docstring text (reST) as one line of Markdown: ``code`` and Sphinx roles as code spans
    (``:class:`~a.B``` as `B`, as docs/griffe_roles.py renders them on the API page)."""
    text = _ROLE.sub(lambda m: f"``{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}``", text)
    return " ".join(text.replace("``", "`").split())


def _first_paragraph(doc: str) -> str:
    return _markdown(inspect.cleandoc(doc).split("\n\n")[0])


def _attribute_docs(module: Any) -> dict[str, str]:
    """The docstrings of a module's attributes (a string right after the assignment, which
    the API page shows too)."""
    docs = {}
    for node, after in itertools.pairwise(ast.parse(inspect.getsource(module)).body):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if (
            len(targets) == 1
            and isinstance(targets[0], ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[targets[0].id] = after.value.value
    return docs


def _annotation(annotation: Any) -> str:
    """An annotation of the contract (a string: the module defers them) as a plugin reads it."""
    text = str(annotation)
    for name, shown in SHOWN_AS.items():
        text = re.sub(rf"\b{name}\b", shown, text)
    return text


def _hook_signature(function: Any) -> str:
    """``register_dialects(register: Callable[[Dialect], None])``, ``-> X`` if it returns one."""
    sig = inspect.signature(function)
    params = ", ".join(f"{p.name}: {_annotation(p.annotation)}" for p in sig.parameters.values())
    returns = _annotation(sig.return_annotation)
    return f"{function.__name__}({params})" + ("" if returns == "None" else f" -> {returns}")


def contract_markdown() -> str:
    """The plugin contract from ``rankeval.extension``: its hook specs, then its types."""
    import rankeval
    from rankeval import extension
    from rankeval.measures.plugins import DEFAULT_PLUGINS, hook_impls

    marker = extension.hookspec.project_name + "_spec"
    hooks = [f for f in vars(extension).values() if inspect.isfunction(f) and hasattr(f, marker)]
    lines = ["| Hook | What the plugin gives | Built-in plugins |", "|---|---|---|"]
    for hook in hooks:
        what = _first_paragraph(hook.__doc__ or "")
        if getattr(hook, marker).get("firstresult"):
            what += " The first plugin that answers wins."
        plugins = {plugin for plugin, _ in hook_impls(_registry(), hook.__name__)}
        by = ", ".join(f"`{name}`" for name in DEFAULT_PLUGINS if name in plugins) or "none"
        anchor = f"api.md#rankeval.extension.{hook.__name__}"
        lines.append(f"| [{_code(_hook_signature(hook))}]({anchor}) | {what} | {by} |")
    attribute_docs = _attribute_docs(extension)
    lines += ["", "| Type | What it is |", "|---|---|"]
    for name in extension.__all__:
        if name not in rankeval.__all__:  # rankeval's own (hookspec), not a plugin's
            continue
        obj = getattr(extension, name)
        doc: str | None = vars(obj).get("__doc__") if inspect.isclass(obj) else attribute_docs.get(name)
        if doc:
            lines.append(f"| [`{name}`](api.md#rankeval.extension.{name}) | {_first_paragraph(doc)} |")
        elif name in NO_DOCSTRING:
            lines.append(f"| `{name}` | {NO_DOCSTRING[name]} |")
        else:
            log.warning("rankeval.extension.%s has no docstring for the plugin contract", name)
    return "\n".join(lines) + "\n"


def _implemented_by(match: re.Match[str]) -> str:
    """The built-in plugins that implement a hook, for a cell of a table of hooks."""
    from rankeval.measures.plugins import DEFAULT_PLUGINS, hook_impls

    hook = match.group(1)
    if not hasattr(_registry().pm.hook, hook):
        raise ValueError(f"<!-- implemented-by: {hook} -->: no such hook")
    plugins = {plugin for plugin, _ in hook_impls(_registry(), hook)}
    return ", ".join(f"`{name}`" for name in DEFAULT_PLUGINS if name in plugins) or "none"


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
                    f"| {name} | {_code(p.type_name)} | {_domain(p)} | {_default(p.default)} | {_cell(p.help)} |"
                )
            out.append("")
        else:
            out.append("**Parameters:** none\n")
        aliases = []
        for alias, fixed in cls.aliases.items():
            extra = ", ".join(f"{k}={v}" for k, v in fixed.items())
            aliases.append(f"`{alias}`" + (f" ({extra})" if extra else ""))
        for prefix in cls.cut_prefixes:
            aliases.append(f"`{prefix}.N` / `{prefix}_N` (sets `{cls.at}`)")
        out.append(f"**Aliases:** {', '.join(aliases) if aliases else 'none'}  ")
        from rankeval.measures.base import Measure

        if cls.aggregate_from_parts is not Measure.aggregate_from_parts:
            out.append("**Aggregate:** the measure's own (see the definition above)  ")
        elif cls.integer:
            out.append("**Aggregate:** sum over queries (a count, printed without decimals)  ")
        else:
            out.append("**Aggregate:** mean over queries  ")
        out.append(f"**Reads:** {cls.reads()}  ")
        out.append(f"**Source:** {cls.source or 'not given'}  ")
        out.append(f"**Plugin:** `{entry.plugin}`\n")
    return "\n".join(out)


# ------------------------------------------------------------------------------ help
@cache
def cli_help(command: str) -> str:
    """``rankeval [COMMAND] --help`` as plain text, `WIDTH` columns wide."""
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = ["--help"] if command == "rankeval" else [command, "--help"]
    saved: dict[str, Any] = {}
    rich_utils: Any
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
    for line in lines:
        if "…" in line:
            log.warning("`rankeval %s` is cut at %d columns: %s", " ".join(args), WIDTH, line.strip())
    return "\n".join(lines)


def _help_block(match: re.Match[str]) -> str:
    command = match.group(1)
    shown = "rankeval --help" if command == "rankeval" else f"rankeval {command} --help"
    return f"```{{.text .cli-help}}\n$ {shown}\n{cli_help(command)}\n```"


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
    if CONTRACT_PLACEHOLDER in markdown:
        markdown = markdown.replace(CONTRACT_PLACEHOLDER, contract_markdown())
    if BUILTINS_PLACEHOLDER in markdown:
        markdown = markdown.replace(BUILTINS_PLACEHOLDER, builtin_plugins_markdown())
    if MEASURES_PLACEHOLDER in markdown:
        markdown = markdown.replace(MEASURES_PLACEHOLDER, measures_markdown())
    if SOURCE_PLACEHOLDER.search(markdown):
        markdown = SOURCE_PLACEHOLDER.sub(_source_block, markdown)
    if HELP_PLACEHOLDER.search(markdown):
        markdown = HELP_PLACEHOLDER.sub(_help_block, markdown)
    if IMPLEMENTED_BY_PLACEHOLDER.search(markdown):
        markdown = IMPLEMENTED_BY_PLACEHOLDER.sub(_implemented_by, markdown)
    return markdown


# ------------------------------------------------------------------------------ math
# latex2mathml lacks `aligned`; `split` is the same layout (rows of right = left pairs)
ALIGNED = re.compile(r"\\(begin|end)\{aligned\}")
# the argument of a text command, where \_ \% \# are the characters themselves (latex2mathml
# would show the backslash)
TEXT_ARGUMENT = re.compile(r"(\\(?:text|texttt|textrm|textit|textbf|mathrm|mathtt)\{)([^{}]*)\}")
# what latex2mathml leaves in its output when it did not understand the TeX
NOT_RENDERED = re.compile(r"\\|<mi>&</mi>|linebreak=")


def _tex(tex: str) -> str:
    """*tex* in the subset of TeX latex2mathml renders faithfully."""
    tex = ALIGNED.sub(r"\\\1{split}", tex)
    return TEXT_ARGUMENT.sub(lambda m: m.group(1) + re.sub(r"\\([_%#])", r"\1", m.group(2)) + "}", tex)


def _mathml(match: re.Match[str], where: str) -> str:
    """One formula of arithmatex's output as MathML (``display="block"`` for ``$$...$$``)."""
    from latex2mathml.converter import convert

    tag, wrapped = match.group(1), html.unescape(match.group(2)).strip()
    tex = wrapped[2:-2] if wrapped[:2] in ("\\(", "\\[") else wrapped  # \begin{...} comes bare
    try:
        mathml = convert(_tex(tex), display="block" if tag == "div" else "inline")
    except Exception as err:  # latex2mathml raises its own errors and plain ones alike
        log.warning("%s: cannot render the formula %r as MathML: %s", where, tex, err)
        return match.group(0)
    if NOT_RENDERED.search(mathml):
        log.warning("%s: the formula %r is not fully rendered: %s", where, tex, mathml)
    return mathml


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    """Render the formulas of this page's HTML as MathML, so no script has to typeset them."""
    return MATH.sub(lambda m: _mathml(m, page.file.src_uri), content)
