"""Text renderings of a comparison of runs: one line per row (``trec``), the rows
(:data:`~rankeval.comparison.data.COLUMNS`) in ``tsv``, ``csv``, ``json`` and ``jsonl``, the
paper tables (``markdown``, ``latex``) with their significance markers and legend, and the
formats plugins add (given each run's values as :class:`~rankeval.extension.Row` s).
:class:`~rankeval.comparison.compare.Comparison` exposes them as
:meth:`~rankeval.comparison.compare.Comparison.format`,
:meth:`~rankeval.comparison.compare.Comparison.to_markdown` and
:meth:`~rankeval.comparison.compare.Comparison.to_latex`.

Every table is written by the writers of :mod:`rankeval.report.formats` (``format_table``;
the paper tables lay out their cells with ``grid_lines``, escaped with ``escape``), so
evaluate's and compare's outputs quote, escape and print numbers alike; only the ``trec``
layout and the paper tables' cells (bold, markers, spread, legend) are written here.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.extension` (``Row``),
:mod:`rankeval.options` (the choices), :mod:`rankeval.comparison.data` (the numbers),
:mod:`rankeval.comparison.significance` (the names of tests and corrections), :mod:`rankeval.report.formats`
(the writers). Not :mod:`rankeval.comparison.compare`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.comparison.data import COLUMNS, RANDOM, ComparisonData
from rankeval.comparison.significance import CORRECTION_NAMES, TEST_NAMES
from rankeval.errors import UsageError
from rankeval.extension import Row
from rankeval.io.inputs import safe_name
from rankeval.options import FORMATS, SPREADS
from rankeval.report.formats import (
    AGGREGATE_LABEL,
    check_labels,
    check_precision,
    escape,
    find_format,
    format_table,
    format_value,
    grid_lines,
    render_rows,
)

if TYPE_CHECKING:
    from rankeval.measures.registry import Registry

__all__ = ["FORMATS", "LATEX_WIDTH", "SPREADS", "check_width", "paper_table", "render", "result_rows"]

#: the width a LaTeX table may take by default: the width of the text (of the column, in
#: two-column layouts)
LATEX_WIDTH = "\\linewidth"
# a TeX length: an optional factor and a length command (0.9\textwidth), or a number and a unit
_TEX_LENGTH = re.compile(
    r"(?:[0-9]*\.?[0-9]+ *)?\\[A-Za-z]+|[0-9]*\.?[0-9]+ *(?:pt|mm|cm|in|bp|pc|dd|cc|sp|em|ex)"
)


def render(
    cmp: ComparisonData,
    fmt: str = "trec",
    *,
    per_query: bool = False,
    precision: int | None = None,
    spread: str | None = None,
    width: str | None = LATEX_WIDTH,
    registry: Registry | None = None,
) -> str:
    """*cmp* in format *fmt*; see :meth:`rankeval.comparison.compare.Comparison.format`."""
    plugin_format = find_format(fmt, registry)
    check_precision(precision)
    if plugin_format is not None:
        return render_rows(plugin_format, fmt, result_rows(cmp, per_query), precision)
    if fmt in ("markdown", "latex"):
        return paper_table(cmp, fmt, spread, 4 if precision is None else precision, width)
    rows = cmp.records(per_query)  # run names made safe_name
    if fmt == "trec":
        if per_query:
            check_labels(((row["run"], row["query_id"]) for row in rows), fmt)
        return _trec(cmp, rows, 4 if precision is None else precision)
    flags = [("value",) if _is_int(cmp, row["measure"], row["query_id"]) else () for row in rows]
    table = ([row[k] for k in COLUMNS] for row in rows)
    return format_table(list(COLUMNS), table, fmt, precision, integer=flags, query_column="query_id")


def result_rows(cmp: ComparisonData, per_query: bool = False) -> list[Row]:
    """Each run's values as the :class:`~rankeval.extension.Row` s a plugin's format renders,
    as ``evaluate`` gives them: per run, with *per_query* its per-query values (queries
    sorted), then its mean (query id ``None``); measures as given; no statistics."""
    rows = {(row["run"], row["query_id"], row["measure"]): row["value"] for row in cmp.records(per_query)}
    return [
        Row(run, qid, m, v, _is_int(cmp, m, qid))
        for (run, qid, m), v in rows.items()
    ]


def _is_int(cmp: ComparisonData, measure: str, query_id: str | None) -> bool:
    return measure in cmp.integer_measures or (query_id is not None and measure in cmp.whole_measures)


def _trec(cmp: ComparisonData, rows: list[dict[str, Any]], precision: int) -> str:
    width = max([22, *(len(m) for m in cmp.measures)])
    lines = []
    for row in rows:
        value = format_value(row["value"], _is_int(cmp, row["measure"], row["query_id"]), precision)
        qid = AGGREGATE_LABEL if row["query_id"] is None else row["query_id"]
        text = f"{row['run']}\t{row['measure']:<{width}}\t{qid}\t{value}"
        if row["baseline"] is not None and row["query_id"] is None:
            text += "\t" + "\t".join(
                [
                    f"vs {row['baseline']}",
                    format_value(_nan(row["difference"]), False, precision, signed=True),
                    "p=" + format_value(_nan(row["p_value"]), False, precision),
                    "p_adj=" + format_value(_nan(row["p_adjusted"]), False, precision),
                ]
            )
            if row["significant"]:
                text += "\t*"
        elif row["baseline"] is not None and row["difference"] is not None:
            text += (
                f"\tvs {row['baseline']}\t{format_value(row['difference'], False, precision, signed=True)}"
            )
        lines.append(text)
    return "\n".join(lines) + ("\n" if lines else "")


# ------------------------------------------------------------------------------ paper tables
def check_width(width: str | None) -> str | None:
    """*width* if it is a TeX length (``\\linewidth``, ``0.9\\textwidth``, ``12cm``), ``None``
    for ``None`` or ``"none"`` (the table's natural width); else a UsageError."""
    if width is None or width == "none":
        return None
    if not _TEX_LENGTH.fullmatch(width.strip()):
        raise UsageError(
            f"bad LaTeX width {width!r}; expected a TeX length such as \\linewidth, "
            "0.9\\textwidth or 12cm, or none"
        )
    return width.strip()


def paper_table(
    cmp: ComparisonData, fmt: str, spread: str | None, precision: int, width: str | None = LATEX_WIDTH
) -> str:
    """The paper table of *cmp* in ``"markdown"`` or ``"latex"`` (at most *width* wide); see
    :meth:`rankeval.comparison.compare.Comparison.to_markdown` and
    :meth:`rankeval.comparison.compare.Comparison.to_latex`."""
    width = check_width(width)
    spread = spread or "none"
    if spread not in SPREADS:
        raise UsageError(f"unknown spread {spread!r}; expected one of {', '.join(SPREADS)}")
    tex = fmt == "latex"
    letters = _letters(len(cmp.runs)) if cmp.stats.pairs == "all" else []

    def esc(s: str) -> str:
        return _label(s, fmt)

    body = _body(cmp, tex, spread, precision, letters, esc)
    head = ["run", *(esc(m) for m in cmp.measures)]
    legend = _legend(cmp, spread, tex, letters)
    tabular = grid_lines(fmt, head, body, [False, *(True for _ in cmp.measures)])
    if not tex:
        return "\n".join(tabular) + "\n\n" + legend + "\n"
    for r in reversed(range(1, len(body))):  # the random baseline below a rule of its own
        if cmp.runs[r] == RANDOM and cmp.random is not None:
            tabular.insert(r + 4, "\\midrule")
    if width is not None:
        # graphicx's \resizebox, only ever shrinking: a table wider than *width* is scaled
        # down to it, a narrower one keeps its size (\width is the table's natural width)
        tabular[0] = f"\\resizebox{{\\ifdim\\width>{width}{width}\\else\\width\\fi}}{{!}}{{%\n" + tabular[0]
        tabular[-1] += "}"
    # captions go above tables (booktabs' advice; ACM, IEEE and Springer templates ask for it)
    lines = ["\\begin{table}", "\\centering", f"\\caption{{{legend}}}", *tabular, "\\end{table}"]
    return "\n".join(lines) + "\n"


def _body(
    cmp: ComparisonData,
    tex: bool,
    spread: str,
    precision: int,
    letters: list[str],
    esc: Callable[[str], str],
) -> list[list[str]]:
    """The cells of the paper table's rows: the run's label, then per measure its value (the
    best in bold), its markers and its spread."""
    ref = cmp.runs.index(cmp.baseline)
    marks = _markers(cmp, letters)
    shown = np.array(
        [
            [
                format_value(cmp.aggregate[r, m], m_ in cmp.integer_measures, precision)
                for m, m_ in enumerate(cmp.measures)
            ]
            for r in range(len(cmp.runs))
        ],
        dtype=object,
    )
    best = []
    for m in range(len(cmp.measures)):
        finite = [float(v) for v in shown[:, m] if v != "nan"]
        best.append(max(finite) if finite else math.nan)
    body = []
    for r, run in enumerate(cmp.runs):
        label = esc(run)
        if letters:
            label = f"({letters[r]}) {label}"
        elif r == ref:
            label += " (baseline)"
        cells = [label]
        for m in range(len(cmp.measures)):
            text = shown[r, m]
            if text != "nan" and float(text) == best[m]:
                text = f"\\textbf{{{text}}}" if tex else f"**{text}**"
            mark = marks[r][m]
            if mark:
                if tex:
                    sym = {"†": "\\dag", "‡": "\\ddag"}.get(mark, mark)
                    text += f"\\textsuperscript{{{sym}}}"
                else:
                    text += mark if mark in ("†", "‡") else f"<sup>{mark}</sup>"
            if spread != "none":
                s = cmp.std[r, m] if spread == "std" else cmp.se[r, m]
                if not math.isnan(s):
                    text += (" $\\pm$ " if tex else " ± ") + format_value(float(s), False, precision)
            cells.append(text)
        body.append(cells)
    return body


def _markers(cmp: ComparisonData, letters: list[str]) -> list[list[str]]:
    """Per run and measure: ``†``/``‡`` (significantly better/worse than the baseline),
    or, with all pairs, the letters of the runs it is significantly better than."""
    sig = cmp.significant
    out: list[list[Any]] = [[[] for _ in cmp.measures] for _ in cmp.runs]
    for m in range(len(cmp.measures)):
        for p, (r, b) in enumerate(cmp.pairs):
            if not sig[m, p]:
                continue
            diff = cmp.difference[m, p]
            if letters:
                winner, loser = (r, b) if diff > 0 else (b, r)
                out[winner][m].append(letters[loser])
            else:
                out[r][m].append("†" if diff > 0 else "‡")
    if letters:
        return [[",".join(sorted(c)) for c in row] for row in out]
    return [["".join(c) for c in row] for row in out]


def _legend(cmp: ComparisonData, spread: str, tex: bool, letters: list[str]) -> str:
    def esc(s: str) -> str:
        return _label(s, "latex" if tex else "markdown")

    alpha = f"$\\alpha$ = {cmp.stats.alpha:g}" if tex else f"α = {cmp.stats.alpha:g}"  # noqa: RUF001
    test = TEST_NAMES[cmp.stats.test]
    if cmp.stats.test in ("bootstrap", "randomization"):
        test += f", {cmp.stats.samples:,} resamples"
    family = "per measure" if cmp.stats.family == "measure" else "over all comparisons"
    how = f"{test}, two-sided, {CORRECTION_NAMES[cmp.stats.correction]}"
    if cmp.stats.correction != "none":
        how += f" {family}"
    how += f", {alpha}"
    parts = ["Best value per measure in bold."]
    if letters:
        parts.append(f"Superscript letters: significantly better than the run with that letter ({how}).")
    else:
        dag = "\\dag{} / \\ddag{}" if tex else "† / ‡"
        parts.append(f"{dag}: significantly better / worse than {esc(cmp.baseline)} ({how}).")
    if spread == "std":
        parts.append(("$\\pm$" if tex else "±") + " standard deviation over queries.")
    elif spread == "se":
        sqrt = "$\\sqrt{n}$" if tex else "√n"
        parts.append(
            ("$\\pm$" if tex else "±") + f" standard error of the mean (std / {sqrt}; for random: "
            "its standard deviation over random orderings)."
        )
    if cmp.random is not None:
        rb = cmp.random
        kind = (
            "exact"
            if rb.exact.all()
            else (
                "Monte Carlo" if not rb.exact.any() else "exact where a closed form exists, else Monte Carlo"
            )
        )
        parts.append(
            f"random: expected value under a uniformly random ordering of the documents "
            f"{esc(rb.source)} retrieved ({kind}; spread over {rb.samples:,} random orderings)."
        )
    return " ".join(parts)


def _label(name: str, fmt: str) -> str:
    """A run's or a measure's name in a paper table: as text (:func:`safe_name`), escaped."""
    return escape(safe_name(name), fmt)


def _nan(v: float | None) -> float:
    return math.nan if v is None else v


def _letters(n: int) -> list[str]:
    out = []
    for i in range(n):
        s = ""
        i += 1
        while i:
            i, rem = divmod(i - 1, 26)
            s = chr(ord("a") + rem) + s
        out.append(s)
    return out
