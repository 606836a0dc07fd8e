"""Formatting of result tables: trec, tsv, csv, json, jsonl, markdown, latex, and the formats
plugins add (files are written by :mod:`rankeval.report.outputs`).

Plugins extend the output through two hooks: ``register_formats`` adds an
:class:`OutputFormat` (a name for ``-f`` and a function rendering :class:`Row` s), and
``register_compat_modes`` adds a :class:`CompatMode` (a name for ``--compat``: how each measure
is computed in that mode, with a default format and duplicate policy). :func:`output_formats`
and :func:`compat_modes` list them for a registry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from rankeval.errors import PluginError, UsageError
from rankeval.options import FORMATS  # the built-in formats (plugins add others: output_formats)

if TYPE_CHECKING:
    import numpy as np

    from rankeval.measures.base import Measure
    from rankeval.measures.registry import Registry

__all__ = [
    "AGGREGATE_LABEL",
    "FORMATS",
    "MARKDOWN_ESCAPES",
    "MAX_PRECISION",
    "TEX_ESCAPES",
    "Command",
    "CompatMode",
    "OutputFormat",
    "Row",
    "check_labels",
    "check_precision",
    "compat_mode",
    "compat_modes",
    "format_results",
    "format_value",
    "json_number",
    "json_text",
    "output_formats",
    "plugin_items",
    "safe_name",
]

#: the query column's text for the aggregate in the ``trec``, ``markdown`` and ``latex`` layouts
#: (in the result table, csv, tsv, json and jsonl the aggregate's query id is null)
AGGREGATE_LABEL = "all"
#: escapes of LaTeX's special characters, for :meth:`str.translate` (``<``, ``>`` and ``|``
#: print as other glyphs in LaTeX's default font encoding)
TEX_ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "_": r"\_",
        "#": r"\#",
        "$": r"\$",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
    }
)
#: backslash escapes of the characters that start inline Markdown (emphasis, code, links, raw
#: HTML, entities, strikethrough, math, table cells), for :meth:`str.translate`: an id prints
#: as its text, never as markup
MARKDOWN_ESCAPES = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|&~$"})


MAX_PRECISION = 30
"""Most decimals a value is printed with (float64 carries about 17 significant digits)."""


def check_precision(precision: int | None) -> None:
    """Raise a :class:`~rankeval.errors.UsageError` unless *precision* is ``None`` or an
    integer from 0 to :data:`MAX_PRECISION`."""
    if precision is None:
        return
    if isinstance(precision, bool) or not isinstance(precision, int) or not 0 <= precision <= MAX_PRECISION:
        raise UsageError(f"precision must be an integer from 0 to {MAX_PRECISION}, not {precision!r}")


def format_value(v: float, integer: bool, precision: int | None) -> str:
    """*v* as printed: ``nan``; a whole number without decimals when *integer*; else with
    *precision* decimals, or all of them (``repr``) when *precision* is ``None``."""
    if math.isnan(v):
        return "nan"
    if integer and float(v).is_integer():
        return str(int(v))
    if precision is None:
        return repr(float(v))
    return f"{v:.{precision}f}"


def safe_name(name: str) -> str:
    """*name* as text every writer can encode: each byte of a file name that is not UTF-8
    (which Python keeps as a lone surrogate) shown as ``\\xNN``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that stands for no byte
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name


def _columns(results: Any) -> tuple[dict[str, np.ndarray], set[str], set[str]]:
    """Columns, count-measure names and whole-valued measure names of a
    :class:`~rankeval.engine.evaluation.Results` or DataFrame (the aggregate's query id
    ``None``, also where a DataFrame read back from csv has NaN)."""
    import numpy as np

    if hasattr(results, "columns") and callable(results.columns):
        return results.columns(), set(results.integer_measures), set(results.whole_measures)
    cols = {
        c: np.asarray(results[c].to_numpy(), dtype=object if c != "value" else np.float64)
        for c in ("run", "query_id", "measure", "value")
    }
    cols["query_id"] = np.array(
        [q if isinstance(q, str) else None for q in cols["query_id"].tolist()], object
    )
    attrs = results.attrs
    return cols, set(attrs.get("integer_measures", ())), set(attrs.get("whole_measures", ()))


def _ordered(cols: dict[str, np.ndarray], per_query: bool) -> list[tuple[str, str | None, str, float]]:
    """Rows in trec_eval's order: per run, queries sorted (the aggregate, query id ``None``,
    last), measures as given; run names made :func:`safe_name`."""
    import numpy as np

    run, qid, measure, value = cols["run"], cols["query_id"], cols["measure"], cols["value"]
    is_all = np.array([q is None for q in qid.tolist()], dtype=bool)
    if not per_query:
        run, qid, measure, value, is_all = (
            run[is_all],
            qid[is_all],
            measure[is_all],
            value[is_all],
            is_all[is_all],
        )
    run_code = {r: i for i, r in enumerate(dict.fromkeys(run.tolist()))}
    measure_code = {m: i for i, m in enumerate(dict.fromkeys(measure.tolist()))}
    r = np.array([run_code[x] for x in run.tolist()], dtype=np.int64)
    m = np.array([measure_code[x] for x in measure.tolist()], dtype=np.int64)
    _, q = np.unique(np.where(is_all, "", qid).astype(str), return_inverse=True)
    order = np.lexsort((m, q.reshape(-1), is_all.astype(np.int64), r))
    names = {name: safe_name(name) for name in run_code}
    return list(
        zip(
            [names[x] for x in run[order].tolist()],
            qid[order].tolist(),
            measure[order].tolist(),
            value[order].tolist(),
            strict=True,
        )
    )


#: per built-in format, how its query column shows the aggregate, where that is text a
#: query id could be (json and jsonl write null)
_LABELS = {
    "trec": AGGREGATE_LABEL,
    "markdown": AGGREGATE_LABEL,
    "latex": AGGREGATE_LABEL,
    "tsv": "",
    "csv": "",
}


def check_labels(rows: Iterable[tuple[str, str | None]], fmt: str) -> None:
    """Raise a :class:`~rankeval.errors.UsageError` if one of the ``(run, query id)`` *rows*
    would print in format *fmt* exactly as the aggregate does (a query named ``all`` in
    trec output, an empty query id in csv)."""
    label = _LABELS.get(fmt)
    if label is None:
        return
    for run, qid in rows:
        if qid == label:
            *others, last = [f for f in ("tsv", "csv", "json", "jsonl") if _LABELS.get(f) != label]
            raise UsageError(
                f"run {run!r} has a query with the id {qid!r}, which {fmt} output prints for the "
                f"aggregate; use -f {', '.join(others)} or {last}, which tell them apart, or rename the query"
            )


def json_number(v: float, precision: int | None = None) -> float | None:
    """*v* as a JSON value: ``null`` for NaN (undefined) and ±infinity, which RFC 8259 JSON
    cannot write; else the number (rounded to *precision* decimals if given)."""
    if not math.isfinite(v):
        return None
    return round(float(v), precision) if precision is not None else float(v)


def json_text(objs: list[dict[str, Any]], fmt: str) -> str:
    """*objs* as a ``json`` array or ``jsonl`` lines, strictly RFC 8259 (no NaN or Infinity)."""
    if fmt == "json":
        return json.dumps(objs, indent=1, allow_nan=False) + "\n"
    return "".join(json.dumps(o, allow_nan=False) + "\n" for o in objs)


class Row(NamedTuple):
    """One result row as an :class:`OutputFormat` receives it."""

    run: str
    query_id: str | None  #: ``None`` for the aggregate
    measure: str
    value: float  #: ``nan`` when undefined
    integer: bool  #: the value is a count or a rank: printed without decimals when whole


@dataclass(frozen=True)
class OutputFormat:
    """An output format a plugin adds (``register_formats`` hook).

    Attributes:
        name: the name given to ``-f`` / ``format_results(fmt=...)``.
        render: ``render(rows, precision)``: the text of the result :class:`Row` s (per run,
            queries sorted with the aggregate, query id ``None``, last; measures as given; only
            the aggregate rows unless ``-q``); *precision* is ``-p N`` or ``None``.
        description: one line for ``--help``.
    """

    name: str
    render: Callable[[list[Row], int | None], str]
    description: str = ""


@dataclass(frozen=True)
class Command:
    """A ``rankeval`` sub-command a plugin adds (``register_commands`` hook).

    Attributes:
        name: the command's name (``rankeval NAME ...``).
        function: a function whose parameters are typer arguments and options (annotated
            with ``typer.Argument`` / ``typer.Option``) and which returns the text to print on
            standard output; it raises :class:`~rankeval.errors.RankevalError` subclasses for
            bad input or usage, which the CLI reports as for its own commands.
        help: one line for ``rankeval --help``.
    """

    name: str
    function: Callable[..., str]
    help: str = ""


@dataclass(frozen=True)
class CompatMode:
    """A mode of ``--compat`` / ``evaluate(compat=...)`` that a plugin adds
    (``register_compat_modes`` hook), to reproduce another tool's output.

    Attributes:
        name: the name given to ``--compat`` / ``compat=``.
        apply: ``apply(measure)``: *measure* as computed in this mode, or ``None`` when the
            mode does not concern it (an error if it concerns none of the measures asked for).
        format: the output format of the CLI in this mode, unless ``-f`` is given.
        on_duplicate: the rule for a document given twice for a query in this mode, unless
            one is given.
        aliases: the measure names of the other tool that this mode accepts, each mapped to
            the rankeval name it means (``{"ap": "tar_ap"}``): spelled exactly so, they come
            before every other name in the specs of this mode (and only in this mode).
        names: the naming convention of the results in this mode (``"clef"``): each measure
            is printed under the name a ``measure_name`` hook gives it in that convention.
        description: one line for ``--help``.
    """

    name: str
    apply: Callable[[Measure], Measure | None]
    format: str | None = None
    on_duplicate: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    names: str | None = None
    description: str = ""


def plugin_items(
    registry: Registry, hook: str, kind: type[OutputFormat | CompatMode | Command], taken: dict[str, str]
) -> dict[str, tuple[str, Any]]:
    """``{name: (plugin, item)}``: what the *hook* implementations of *registry*'s plugins
    register (instances of *kind*, built-in plugins first). A name registered twice, or
    already in *taken* (``{name: owner}``), is a :class:`~rankeval.errors.PluginError` naming
    both; a hook that fails, or registers something else, is one naming its plugin."""
    from rankeval.measures.plugins import hook_impls, plugin_guard

    found: dict[str, tuple[str, Any]] = {}
    owner = dict(taken)
    for plugin, function in reversed(hook_impls(registry, hook)):

        def register(item: Any, plugin: str = plugin) -> None:
            if not isinstance(item, kind):
                raise TypeError(f"registered {item!r}, which is not a {kind.__name__}")
            if item.name in owner:
                raise PluginError(
                    f"{kind.__name__} {item.name!r} is registered by both {owner[item.name]} and plugin {plugin!r}"
                )
            owner[item.name] = f"plugin {plugin!r}"
            found[item.name] = (plugin, item)

        with plugin_guard(plugin, hook):
            function(register=register)
    return found


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from rankeval.measures.plugins import load_registry

    return load_registry()


def output_formats(registry: Registry | None = None) -> list[str]:
    """The names of every output format: the built-in :data:`FORMATS`, then those
    *registry*'s plugins add (default registry: all installed plugins)."""
    return [*FORMATS, *plugin_formats(registry)]


def plugin_formats(registry: Registry | None) -> dict[str, tuple[str, OutputFormat]]:
    """``{name: (plugin, format)}`` of every output format *registry*'s plugins add."""
    taken = dict.fromkeys(FORMATS, "rankeval")
    return plugin_items(_registry(registry), "register_formats", OutputFormat, taken)


def compat_modes(registry: Registry | None = None) -> dict[str, tuple[str, CompatMode]]:
    """``{name: (plugin, mode)}`` of every ``--compat`` mode *registry*'s plugins add
    (default registry: all installed plugins)."""
    return plugin_items(_registry(registry), "register_compat_modes", CompatMode, {"none": "rankeval"})


def compat_mode(compat: str | None, registry: Registry | None = None) -> tuple[str, CompatMode] | None:
    """``(plugin, mode)`` of the ``--compat`` mode named *compat*, or ``None`` for ``None`` and
    ``"none"``; an unknown name is a :class:`~rankeval.errors.UsageError` listing the modes."""
    if compat is None or compat == "none":
        return None
    modes = compat_modes(registry)
    if compat not in modes:
        raise UsageError(f"unknown compat {compat!r}; expected one of {', '.join(['none', *modes])}")
    return modes[compat]


def format_results(
    results: Any,
    fmt: str = "trec",
    *,
    per_query: bool = False,
    precision: int | None = None,
    registry: Registry | None = None,
) -> str:
    """Render an :func:`rankeval.evaluate` result.

    Args:
        results: an :func:`rankeval.evaluate` DataFrame (``run, query_id, measure, value``)
            or the :class:`~rankeval.engine.evaluation.Results` of :func:`rankeval.engine.evaluation.evaluate_results`.
        fmt: one of :data:`FORMATS`, or a format a plugin adds (:func:`output_formats`; e.g.
            ``clef``, the CLEF TAR evaluator's layout, from the TAR plugin).
        per_query: include per-query rows (``-q``), not only the aggregate rows.
        precision: decimals; default 4 for trec/markdown/latex, full precision otherwise.
        registry: where to look for formats plugins add (default: all installed plugins).
    """
    plugin_format = None
    if fmt not in FORMATS:
        added = plugin_formats(registry)
        if fmt not in added:
            raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join([*FORMATS, *added])}")
        plugin_format = added[fmt]
    check_precision(precision)
    cols, integer, whole = _columns(results)
    records = _ordered(cols, per_query)
    # whole-valued measures (ranks) are printed without decimals per query, not in the mean
    integer_rows = {(m, False) for m in integer | whole} | {(m, True) for m in integer}
    records_int = [(m, qid is None) in integer_rows for _, qid, m, _ in records]
    if plugin_format is not None:
        return _render(plugin_format, fmt, records, records_int, precision)
    if per_query:
        check_labels(((run, qid) for run, qid, _, _ in records), fmt)
    several = len({run for run, _, _, _ in records}) > 1
    if precision is None and fmt in ("trec", "markdown", "latex"):
        precision = 4
    if fmt == "trec":
        return _trec(records, records_int, precision, several)
    if fmt in ("tsv", "csv"):
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(["run", "query_id", "measure", "value"])
        for (run, qid, m, v), is_int in zip(records, records_int, strict=True):
            writer.writerow([run, "" if qid is None else qid, m, format_value(v, is_int, precision)])
        return buf.getvalue()
    if fmt in ("json", "jsonl"):
        objs = [
            {"run": run, "query_id": qid, "measure": m, "value": json_number(v, precision)}
            for run, qid, m, v in records
        ]
        return json_text(objs, fmt)
    return _table(records, fmt, integer_rows, precision or 4, per_query)


def _trec(
    records: list[tuple[str, str | None, str, float]],
    records_int: list[bool],
    precision: int | None,
    several: bool,
) -> str:
    """trec_eval's layout, ``measure<TAB>query<TAB>value`` (the measure padded to 22 characters
    or the longest), after a run column with several runs; the run and query columns padded
    to their widest entry where tab stops alone would not line them up."""
    width = max([22, *(len(m) for _, _, m, _ in records)])
    run_width = _tab_width(run for run, _, _, _ in records) if several else 0
    qids = [AGGREGATE_LABEL if qid is None else qid for _, qid, _, _ in records]
    qid_width = _tab_width(qids)
    lines = []
    for (run, _, m, v), qid, is_int in zip(records, qids, records_int, strict=True):
        text = f"{m:<{width}}\t{qid:<{qid_width}}\t{format_value(v, is_int, precision)}"
        lines.append(f"{run:<{run_width}}\t{text}" if several else text)
    return "\n".join(lines) + ("\n" if lines else "")


def _tab_width(column: Iterable[str]) -> int:
    """The width to pad a column followed by a tab to: 0 (none) when every entry already ends
    at the same tab stop (every 8 characters, as terminals and ``less`` show tabs), else the
    widest entry's, so that the columns after it line up too."""
    lengths = [len(text) for text in column]
    return max(lengths) if len({n // 8 for n in lengths}) > 1 else 0


def _render(
    plugin_format: tuple[str, OutputFormat],
    fmt: str,
    records: list[tuple[str, str | None, str, float]],
    records_int: list[bool],
    precision: int | None,
) -> str:
    """The text of a plugin's format, its code guarded."""
    from rankeval.measures.plugins import plugin_guard

    plugin, output = plugin_format
    rows = [Row(*record, is_int) for record, is_int in zip(records, records_int, strict=True)]
    with plugin_guard(plugin, f"rendering format {fmt!r}"):
        text = output.render(rows, precision)
    if not isinstance(text, str):
        raise PluginError(f"plugin {plugin} rendered format {fmt!r} as {type(text).__name__}, not text")
    return text


def _table(
    records: list[tuple[str, str | None, str, float]],
    fmt: str,
    integer_rows: set[tuple[str, bool]],
    precision: int,
    per_query: bool,
) -> str:
    """Wide table: one row per run (and query with -q), one column per measure; every cell
    escaped (:data:`MARKDOWN_ESCAPES`, :data:`TEX_ESCAPES`)."""
    measures = list(dict.fromkeys(m for _, _, m, _ in records))
    keys = list(dict.fromkeys((run, qid) for run, qid, _, _ in records))
    cell = {(run, qid, m): v for run, qid, m, v in records}
    head = ["run", *(["query"] if per_query else []), *measures]
    body = []
    for run, qid in keys:
        row = [run, *([AGGREGATE_LABEL if qid is None else qid] if per_query else [])]
        row += [
            format_value(cell.get((run, qid, m), math.nan), (m, qid is None) in integer_rows, precision)
            for m in measures
        ]
        body.append(row)
    if fmt == "markdown":
        esc = [[c.translate(MARKDOWN_ESCAPES) for c in r] for r in [head, *body]]
        lines = [
            "| " + " | ".join(esc[0]) + " |",
            "|" + "|".join(["---"] * (len(head) - len(measures)) + ["---:"] * len(measures)) + "|",
        ]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        return "\n".join(lines) + "\n"

    def tex(s: str) -> str:
        return s.translate(TEX_ESCAPES)

    spec = "l" * (len(head) - len(measures)) + "r" * len(measures)
    lines = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(tex(h) for h in head) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(tex(c) for c in r) + " \\\\" for r in body]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"
