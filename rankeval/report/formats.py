"""Formatting of result tables: trec, tsv, csv, json, jsonl, markdown, latex, and the formats
plugins add (files are written by :mod:`rankeval.report.outputs`).

Plugins add a format through the ``register_formats`` hook: an
:class:`~rankeval.extension.OutputFormat` (a name for ``-f`` and a function rendering
:class:`~rankeval.extension.Row` s), which the registry keeps
(:attr:`~rankeval.measures.registry.Registry.formats`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
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
    "format_results",
    "format_table",
    "format_value",
    "json_number",
    "json_text",
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
    plugin_format = None
    if fmt not in FORMATS:
        from rankeval.measures.plugins import current_registry

        added = current_registry(registry).formats
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


#: the formats of :func:`format_table`
TABLE_FORMATS = ("tsv", "csv", "json", "jsonl", "markdown", "latex")


def format_table(
    columns: list[str], rows: Iterable[Iterable[Any]], fmt: str = "tsv", precision: int | None = 4
) -> str:
    """A plain table (a header of *columns*, then *rows* of texts and numbers) in *fmt*
    (:data:`TABLE_FORMATS`): the one writer of the tables that are not results of
    :func:`format_results` (the tie range, meta-evaluation). Numbers are printed with
    *precision* decimals (:func:`format_value`; ints as they are, NaN as ``nan``); in json and
    jsonl, as numbers (``null`` for NaN and ``None``); ``None`` is an empty cell elsewhere."""
    check_precision(precision)
    if fmt not in TABLE_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(TABLE_FORMATS)}")
    table = [list(r) for r in rows]
    if fmt in ("json", "jsonl"):

        def value(v: Any) -> Any:
            if v is None or isinstance(v, (str, bool)):
                return v
            if isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "iu"):
                return int(v)
            return json_number(float(v), precision)

        return json_text([dict(zip(columns, map(value, r), strict=True)) for r in table], fmt)

    def text(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, str):
            return v
        if isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "iu"):
            return str(int(v))
        return format_value(float(v), False, precision)

    cells = [[text(v) for v in r] for r in table]
    numeric = [
        any(r[i] is not None for r in table) and not any(isinstance(r[i], str) for r in table)
        for i in range(len(columns))
    ]
    if fmt in ("tsv", "csv"):
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(cells)
        return buf.getvalue()
    if fmt == "markdown":
        esc = [[c.translate(MARKDOWN_ESCAPES) for c in r] for r in [columns, *cells]]
        lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc[1:]]) + "\n"
    spec = "".join("r" if n else "l" for n in numeric)
    tex = [[c.translate(TEX_ESCAPES) for c in r] for r in [columns, *cells]]
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(tex[0]) + " \\\\", "\\midrule"]
    lines += [" & ".join(r) + " \\\\" for r in tex[1:]]
    return "\n".join([*lines, "\\bottomrule", "\\end{tabular}"]) + "\n"
