"""Formatting of result tables: trec, tsv, csv, json, jsonl, markdown, latex (files are written
by :mod:`rankeval.outputs`)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from rankeval.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FORMATS", "MAX_PRECISION", "check_precision", "format_results"]

FORMATS = ("trec", "tsv", "csv", "json", "jsonl", "markdown", "latex", "clef")
ALL = "all"
_TEX = str.maketrans(
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
    }
)


MAX_PRECISION = 30
"""Most decimals a value is printed with (float64 carries about 17 significant digits)."""


def check_precision(precision: int | None) -> None:
    """Raise a :class:`~rankeval.errors.UsageError` unless *precision* is ``None`` or an
    integer from 0 to :data:`MAX_PRECISION`."""
    if precision is None:
        return
    if isinstance(precision, bool) or not isinstance(precision, int) or not 0 <= precision <= MAX_PRECISION:
        raise UsageError(f"precision must be an integer from 0 to {MAX_PRECISION}, not {precision!r}")


def _value(v: float, integer: bool, precision: int | None) -> str:
    if math.isnan(v):
        return "nan"
    if integer and float(v).is_integer():
        return str(int(v))
    if precision is None:
        return repr(float(v))
    return f"{v:.{precision}f}"


def _columns(results: Any) -> tuple[dict[str, np.ndarray], set[str], set[str]]:
    """Columns, count-measure names and whole-valued measure names of a
    :class:`~rankeval.engine.Results` or DataFrame."""
    import numpy as np

    if hasattr(results, "columns") and callable(results.columns):
        return results.columns(), set(results.integer_measures), set(results.whole_measures)
    cols = {
        c: np.asarray(results[c].to_numpy(), dtype=object if c != "value" else np.float64)
        for c in ("run", "query_id", "measure", "value")
    }
    attrs = results.attrs
    return cols, set(attrs.get("integer_measures", ())), set(attrs.get("whole_measures", ()))


def _ordered(cols: dict[str, np.ndarray], per_query: bool) -> list[tuple[str, str, str, float]]:
    """Rows in trec_eval's order: per run, queries sorted (``all`` last), measures as given."""
    import numpy as np

    run, qid, measure, value = cols["run"], cols["query_id"], cols["measure"], cols["value"]
    is_all = qid == ALL
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
    _, q = np.unique(qid.astype(str), return_inverse=True)
    order = np.lexsort((m, q.reshape(-1), is_all.astype(np.int64), r))
    return list(
        zip(
            run[order].tolist(),
            qid[order].tolist(),
            measure[order].tolist(),
            value[order].tolist(),
            strict=True,
        )
    )


def format_results(
    results: Any,
    fmt: str = "trec",
    *,
    per_query: bool = False,
    precision: int | None = None,
) -> str:
    """Render an :func:`rankeval.evaluate` result.

    Args:
        results: an :func:`rankeval.evaluate` DataFrame (``run, query_id, measure, value``)
            or the :class:`~rankeval.engine.Results` of :func:`rankeval.engine.evaluate_results`.
        fmt: one of :data:`FORMATS`. ``clef`` is the CLEF TAR evaluator's layout
            (``topic<TAB>measure<TAB>value``, summary topic ``ALL``, numbers as Python prints
            them, precision ignored, undefined per-query values left out); use it with values
            computed under ``compat="clef"``.
        per_query: include per-query rows (``-q``), not only the ``all`` rows.
        precision: decimals; default 4 for trec/markdown/latex, full precision otherwise.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    check_precision(precision)
    cols, integer, whole = _columns(results)
    records = _ordered(cols, per_query)
    # whole-valued measures (ranks) are printed without decimals per query, not in the mean
    integer_rows = {(m, False) for m in integer | whole} | {(m, True) for m in integer}
    records_int = [(m, qid == ALL) in integer_rows for _, qid, m, _ in records]
    several = len({run for run, _, _, _ in records}) > 1
    if fmt == "clef":
        lines = []
        for (run, qid, m, v), is_int in zip(records, records_int, strict=True):
            if qid != ALL and math.isnan(v):
                continue  # a topic the measure skips: the CLEF evaluator prints nothing
            text = str(int(v)) if is_int and float(v).is_integer() else repr(float(v))
            row = f"{'ALL' if qid == ALL else qid}\t{m}\t{text}"
            lines.append(f"{run}\t{row}" if several else row)
        return "\n".join(lines) + ("\n" if lines else "")
    if precision is None and fmt in ("trec", "markdown", "latex"):
        precision = 4
    if fmt == "trec":
        width = max([22, *(len(m) for _, _, m, _ in records)]) if records else 22
        lines = []
        for (run, qid, m, v), is_int in zip(records, records_int, strict=True):
            text = f"{m:<{width}}\t{qid}\t{_value(v, is_int, precision)}"
            lines.append(f"{run}\t{text}" if several else text)
        return "\n".join(lines) + ("\n" if lines else "")
    if fmt in ("tsv", "csv"):
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(["run", "query_id", "measure", "value"])
        for (run, qid, m, v), is_int in zip(records, records_int, strict=True):
            writer.writerow([run, qid, m, _value(v, is_int, precision)])
        return buf.getvalue()
    if fmt in ("json", "jsonl"):
        objs = [
            {"run": run, "query_id": qid, "measure": m, "value": _json_value(v, precision)}
            for run, qid, m, v in records
        ]
        if fmt == "json":
            return json.dumps(objs, indent=1) + "\n"
        return "".join(json.dumps(o) + "\n" for o in objs)
    return _table(records, fmt, integer_rows, precision or 4, per_query)


def _json_value(v: float, precision: int | None) -> float | None:
    if math.isnan(v):
        return None
    return round(float(v), precision) if precision is not None else float(v)


def _table(
    records: list[tuple[str, str, str, float]],
    fmt: str,
    integer_rows: set[tuple[str, bool]],
    precision: int,
    per_query: bool,
) -> str:
    """Wide table: one row per run (and query with -q), one column per measure."""
    measures = list(dict.fromkeys(m for _, _, m, _ in records))
    keys = list(dict.fromkeys((run, qid) for run, qid, _, _ in records))
    cell = {(run, qid, m): v for run, qid, m, v in records}
    head = ["run", *(["query"] if per_query else []), *measures]
    body = []
    for run, qid in keys:
        row = [run, *([qid] if per_query else [])]
        row += [
            _value(cell.get((run, qid, m), math.nan), (m, qid == ALL) in integer_rows, precision)
            for m in measures
        ]
        body.append(row)
    if fmt == "markdown":
        esc = [[c.replace("|", "\\|") for c in r] for r in [head, *body]]
        lines = [
            "| " + " | ".join(esc[0]) + " |",
            "|" + "|".join(["---"] * (len(head) - len(measures)) + ["---:"] * len(measures)) + "|",
        ]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        return "\n".join(lines) + "\n"

    def tex(s: str) -> str:
        return s.translate(_TEX)

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
