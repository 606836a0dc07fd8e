"""Formatting of result tables: trec, tsv, csv, json, jsonl, markdown, latex, and the formats
plugins add (files are written by :mod:`rankeval.report.outputs`).

One set of writers: :func:`format_table` writes every tsv, csv, json, jsonl, markdown and
latex table of rankeval (the results of ``evaluate``, the rows of ``compare``, the tie range,
the meta-evaluation), so quoting, escaping (:func:`escape`), numbers (:func:`format_value`,
:func:`json_number`), NaN and ``None`` and the aggregate's label (:func:`check_labels`) are
decided here; the paper tables of ``compare`` lay their cells out with :func:`grid_lines`.
The ``trec`` layouts of ``evaluate`` and ``compare`` are their own.

Plugins add a format through the ``register_formats`` hook: an
:class:`~rankeval.extension.OutputFormat` (a name for ``-f`` and a function rendering
:class:`~rankeval.extension.Row` s), which the registry keeps
(:attr:`~rankeval.measures.registry.Registry.formats`); :func:`find_format` and
:func:`render_rows` hand it the rows of ``evaluate`` and of ``compare``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING, Any

from rankeval.errors import PluginError, UsageError, plugin_guard
from rankeval.extension import OutputFormat, Row
from rankeval.io.inputs import safe_name
from rankeval.options import FORMATS  # the built-in formats (plugins add others: Registry.formats)

if TYPE_CHECKING:
    import numpy as np

    from rankeval.measures.registry import Registry

__all__ = [
    "AGGREGATE_LABEL",
    "FORMATS",
    "MARKDOWN_ESCAPES",
    "MAX_PRECISION",
    "TABLE_FORMATS",
    "TEX_ESCAPES",
    "check_labels",
    "check_precision",
    "escape",
    "find_format",
    "format_results",
    "format_table",
    "format_value",
    "grid_lines",
    "json_number",
    "json_text",
    "render_rows",
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
_ESCAPES = {"markdown": MARKDOWN_ESCAPES, "latex": TEX_ESCAPES}


def escape(text: str, fmt: str) -> str:
    """*text* as a cell of format *fmt*: in ``markdown`` and ``latex``, its special characters
    escaped (:data:`MARKDOWN_ESCAPES`, :data:`TEX_ESCAPES`); elsewhere as it is (csv quotes
    what needs it, json escapes)."""
    table = _ESCAPES.get(fmt)
    return text if table is None else text.translate(table)


MAX_PRECISION = 30
"""Most decimals a value is printed with (float64 carries about 17 significant digits)."""


def check_precision(precision: int | None) -> None:
    """Raise a :class:`~rankeval.errors.UsageError` unless *precision* is ``None`` or an
    integer from 0 to :data:`MAX_PRECISION`."""
    if precision is None:
        return
    if isinstance(precision, bool) or not isinstance(precision, int) or not 0 <= precision <= MAX_PRECISION:
        raise UsageError(f"precision must be an integer from 0 to {MAX_PRECISION}, not {precision!r}")


def format_value(v: float, integer: bool, precision: int | None, *, signed: bool = False) -> str:
    """*v* as printed: ``nan``; a whole number without decimals when *integer*; else with
    *precision* decimals, or all of them (``repr``) when *precision* is ``None``; with a sign
    (``+0.0120``) when *signed*, as differences are."""
    if math.isnan(v):
        return "nan"
    if integer and float(v).is_integer():
        return str(int(v))
    if precision is None:
        return f"{float(v):+}" if signed else repr(float(v))
    return f"{v:+.{precision}f}" if signed else f"{v:.{precision}f}"


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
            or the :class:`~rankeval.engine.evaluation.Results` of :meth:`rankeval.Evaluator.results`.
        fmt: one of :data:`FORMATS`, or a format a plugin adds (``Registry.formats``; e.g.
            ``clef``, the CLEF TAR evaluator's layout, from the TAR plugin).
        per_query: include per-query rows (``-q``), not only the aggregate rows.
        precision: decimals; default 4 for trec/markdown/latex, full precision otherwise.
        registry: where to look for formats plugins add (default: all installed plugins).
    """
    plugin_format = find_format(fmt, registry)
    check_precision(precision)
    cols, integer, whole = _columns(results)
    records = _ordered(cols, per_query)
    # whole-valued measures (ranks) are printed without decimals per query, not in the mean
    integer_rows = {(m, False) for m in integer | whole} | {(m, True) for m in integer}
    records_int = [(m, qid is None) in integer_rows for _, qid, m, _ in records]
    if plugin_format is not None:
        rows = [Row(*record, is_int) for record, is_int in zip(records, records_int, strict=True)]
        return render_rows(plugin_format, fmt, rows, precision)
    if precision is None and fmt in ("trec", "markdown", "latex"):
        precision = 4
    if fmt == "trec":
        if per_query:
            check_labels(((run, qid) for run, qid, _, _ in records), fmt)
        return _trec(records, records_int, precision, len({run for run, _, _, _ in records}) > 1)
    if fmt in ("markdown", "latex"):
        return _wide(records, fmt, integer_rows, precision, per_query)
    flags = [_VALUE if is_int else () for is_int in records_int]
    columns = ["run", "query_id", "measure", "value"]
    return format_table(columns, records, fmt, precision, integer=flags, query_column="query_id")


#: the ``integer`` flags of :func:`format_table` for a row whose value is a count or a rank
_VALUE = frozenset({"value"})


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


def find_format(fmt: str, registry: Registry | None = None) -> tuple[str, OutputFormat] | None:
    """``None`` for a built-in format (:data:`FORMATS`), ``(plugin, format)`` for one a plugin
    adds (looked up in *registry*, default: the installed plugins, loaded only then); else a
    :class:`~rankeval.errors.UsageError` listing the formats there are."""
    if fmt in FORMATS:
        return None
    from rankeval.measures.plugins import current_registry

    added = current_registry(registry).formats
    if fmt not in added:
        raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join([*FORMATS, *added])}")
    return added[fmt]


def render_rows(
    plugin_format: tuple[str, OutputFormat], fmt: str, rows: list[Row], precision: int | None
) -> str:
    """The text of a plugin's format (:func:`find_format`) for *rows*, its code guarded."""
    plugin, output = plugin_format
    with plugin_guard(plugin, f"rendering format {fmt!r}"):
        text = output.render(rows, precision)
    if not isinstance(text, str):
        raise PluginError(f"plugin {plugin} rendered format {fmt!r} as {type(text).__name__}, not text")
    return text


def _wide(
    records: list[tuple[str, str | None, str, float]],
    fmt: str,
    integer_rows: set[tuple[str, bool]],
    precision: int | None,
    per_query: bool,
) -> str:
    """Wide table: one row per run (and query with -q), one column per measure (NaN where a
    run lacks a value)."""
    measures = list(dict.fromkeys(m for _, _, m, _ in records))
    keys = list(dict.fromkeys((run, qid) for run, qid, _, _ in records))
    cell = {(run, qid, m): v for run, qid, m, v in records}
    rows = [
        [run, *([qid] if per_query else []), *(cell.get((run, qid, m), math.nan) for m in measures)]
        for run, qid in keys
    ]
    counts = {is_all: {m for m in measures if (m, is_all) in integer_rows} for is_all in (False, True)}
    columns = ["run", *(["query"] if per_query else []), *measures]
    flags = [counts[qid is None] for _, qid in keys]
    return format_table(
        columns, rows, fmt, precision, integer=flags, query_column="query" if per_query else None
    )


#: the formats of :func:`format_table`
TABLE_FORMATS = ("tsv", "csv", "json", "jsonl", "markdown", "latex")


def format_table(
    columns: list[str],
    rows: Iterable[Iterable[Any]],
    fmt: str = "tsv",
    precision: int | None = 4,
    *,
    integer: Iterable[Container[str]] | None = None,
    query_column: str | None = None,
) -> str:
    """A table (a header of *columns*, then *rows* of texts, numbers, booleans and ``None``) in
    *fmt* (:data:`TABLE_FORMATS`): the one writer of rankeval's tables.

    Numbers are printed with *precision* decimals (:func:`format_value`; ints as they are, NaN
    as ``nan``), booleans as ``true``/``false``, ``None`` as an empty cell; in json and jsonl,
    numbers as numbers (``null`` for NaN, ±infinity and ``None``), booleans as booleans. In
    markdown and latex every cell is escaped (:func:`escape`) and columns of numbers are
    aligned right.

    Args:
        integer: per row, the columns whose numbers are counts or ranks, printed without
            decimals when whole (not in json, where numbers are as they are).
        query_column: the column of query ids, where ``None`` is the aggregate: printed as the
            format's label for it (:data:`AGGREGATE_LABEL` in markdown and latex); a query id
            that would print the same is a :class:`~rankeval.errors.UsageError`
            (:func:`check_labels`; the run is the column ``run``).
    """
    check_precision(precision)
    if fmt not in TABLE_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(TABLE_FORMATS)}")
    table = list(rows)
    flags: list[Container[str]] = [()] * len(table) if integer is None else list(integer)
    # converted column by column: a column of texts (the most cells) is taken as it is
    by_column = list(zip(*table, strict=True)) if table else [() for _ in columns]
    if fmt in ("json", "jsonl"):

        def value(v: Any) -> Any:
            if type(v) is float:  # the most numbers: no further test
                return json_number(v, precision)
            kind = _kind(v)
            if kind in ("none", "text"):
                return v
            if kind == "bool":
                return bool(v)
            if kind == "int":
                return int(v)
            return json_number(float(v), precision)

        values = [col if _texts(col) else [value(v) for v in col] for col in by_column]
        return json_text([dict(zip(columns, r, strict=True)) for r in zip(*values, strict=True)], fmt)
    label = _LABELS[fmt]
    q = -1 if query_column is None else columns.index(query_column)
    if query_column is not None:
        check_labels(zip(by_column[columns.index("run")], by_column[q], strict=True), fmt)

    def text(v: Any, column: int, counts: Container[str]) -> str:
        if type(v) is float:  # the most numbers: no further test
            return format_value(v, columns[column] in counts, precision)
        kind = _kind(v)
        if kind == "none":
            return label if column == q else ""
        if kind == "bool":
            return "true" if v else "false"
        if kind == "int":
            return str(int(v))
        return format_value(float(v), columns[column] in counts, precision) if kind == "float" else str(v)

    texts = [
        col if _texts(col) else [text(v, i, f) for v, f in zip(col, flags, strict=True)]
        for i, col in enumerate(by_column)
    ]
    if fmt in ("tsv", "csv"):
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(zip(*texts, strict=True))
        return buf.getvalue()
    numeric = [
        any(v is not None for v in col) and not any(isinstance(v, str) for v in col) for col in by_column
    ]
    escapes = _ESCAPES[fmt]  # escape(), once per cell
    head = [c.translate(escapes) for c in columns]
    body = [[c.translate(escapes) for c in r] for r in zip(*texts, strict=True)]
    return "\n".join(grid_lines(fmt, head, body, numeric)) + "\n"


def _texts(column: Iterable[Any]) -> bool:
    """Whether every cell of *column* is a text (and so printed as it is)."""
    return all(type(v) is str for v in column)


def _kind(v: Any) -> str:
    """What a cell of :func:`format_table` holds: ``none``, ``text``, ``bool``, ``int`` or
    ``float`` (numpy scalars as the Python ones)."""
    if v is None:
        return "none"
    if isinstance(v, str):
        return "text"
    dtype_kind = getattr(getattr(v, "dtype", None), "kind", "")
    if isinstance(v, bool) or dtype_kind == "b":
        return "bool"
    if isinstance(v, int) or dtype_kind in ("i", "u"):
        return "int"
    return "float"


def grid_lines(fmt: str, head: list[str], body: list[list[str]], numeric: list[bool]) -> list[str]:
    """The lines of a ``markdown`` table or a ``latex`` tabular (booktabs rules) of cells
    already escaped (:func:`escape`) and formatted: the header *head*, the rows *body*,
    right-aligned where *numeric*. Row ``i`` of *body* is line ``i + 2`` in markdown, ``i + 4``
    in latex."""
    if fmt == "markdown":
        rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
        return ["| " + " | ".join(head) + " |", rule, *("| " + " | ".join(r) + " |" for r in body)]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(head) + " \\\\", "\\midrule"]
    return [*lines, *(" & ".join(r) + " \\\\" for r in body), "\\bottomrule", "\\end{tabular}"]
