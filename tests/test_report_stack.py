"""One reporting stack (docs: formats.md, compare.md, plugins.md): ``evaluate`` and ``compare``
write their tsv, csv, json, jsonl, markdown and latex through the same writers
(:func:`rankeval.report.formats.format_table`, ``grid_lines``, ``escape``), so a hostile run
or measure name comes out the same in both, NaN and ``-p`` are printed alike, and a format a
plugin adds (``register_formats``) renders ``compare``'s runs as it renders ``evaluate``'s.

The expected texts come from independent oracles where there is one (Python's ``csv`` and
``json`` modules read the outputs back; a CommonMark parser reads the Markdown cells); in
LaTeX the two commands' cells are compared with each other and checked for unescaped
special characters.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import markdown_it
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.report.formats import TABLE_FORMATS, format_results

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 1\nq2 0 d2 1\n"
BASE = "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d3 3 1 t\nq2 Q0 d2 1 2 t\nq2 Q0 d9 2 1 t\n"
OTHER = "q1 Q0 d3 1 3 t\nq1 Q0 d1 2 2 t\nq2 Q0 d9 1 2 t\nq2 Q0 d1 2 1 t\n"
# every character a writer must quote or escape: csv/tsv delimiters and quotes, Markdown's
# table pipe and emphasis, LaTeX's alignment tab and subscript, HTML/LaTeX's '<'
HOSTILE = 'a,b"c\td|e_f&g<h'
MEASURE = "AP"


def invoke(args: list[object]):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    d = tmp_path_factory.mktemp("stack")
    q, b, o = d / "q.txt", d / "base.run", d / "other.run"
    q.write_text(QRELS)
    b.write_text(BASE)
    o.write_text(OTHER)
    return q, b, o


def outputs(files: tuple[Path, Path, Path], fmt: str, run: str, measure: str) -> tuple[str, str]:
    """What evaluate and compare write in *fmt* for the runs ``base`` and *run* (the other run)
    and the measure AP named *measure* (as ``--names`` renames measures)."""
    q, b, o = files
    frame = rankeval.evaluate(q, {"base": b, run: o}, MEASURE)
    frame["measure"] = frame["measure"].replace({MEASURE: measure})
    cmp = rankeval.compare(q, {"base": b, run: o}, MEASURE)
    cmp = replace(cmp, measures=[measure])
    return format_results(frame, fmt), cmp.format(fmt)


def markdown_cells(text: str) -> list[str | None]:
    """The text of each cell of a Markdown table as a CommonMark parser reads it: a cell of
    plain text (no emphasis, link, code or HTML) as its text, another (a paper table's bold
    best value) as ``None``."""
    parser = markdown_it.MarkdownIt("commonmark").enable(["table"])
    in_table = False
    cells: list[str | None] = []
    for token in parser.parse(text):
        in_table = {"table_open": True, "table_close": False}.get(token.type, in_table)
        if in_table and token.type == "inline":
            plain = [c.type for c in token.children or []] == ["text"]
            cells.append(token.children[0].content if plain and token.children else None)
    return cells


def grid_rows(text: str, fmt: str) -> list[list[str]]:
    """The cells of each row of the Markdown table or LaTeX tabular in *text*, as written."""
    if fmt == "markdown":
        lines = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(" |")]
        return [line[2:-2].split(" | ") for line in lines]
    return [line.removesuffix(" \\\\").split(" & ") for line in text.splitlines() if line.endswith(" \\\\")]


def written_names(text: str, fmt: str) -> set[str | None]:
    """The run and measure names of every row of *text*, read back by the format's own
    reader (csv, json) or a CommonMark parser."""
    if fmt in ("tsv", "csv"):
        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ","))
        return {r["run"] for r in rows} | {r["measure"] for r in rows}
    if fmt in ("json", "jsonl"):
        objs = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
        return {o["run"] for o in objs} | {o["measure"] for o in objs}
    return set(markdown_cells(text))


# --------------------------------------------------------------- names: one escaping
@pytest.mark.parametrize("fmt", TABLE_FORMATS)
@pytest.mark.parametrize("where", ["run", "measure"])
def test_evaluate_and_compare_write_a_hostile_name_alike(files, fmt, where) -> None:
    run, measure = (HOSTILE, MEASURE) if where == "run" else ("other", HOSTILE)
    evaluated, compared = outputs(files, fmt, run, measure)
    if fmt in ("markdown", "latex"):
        # rows: the header (run, the measure), base, then the other run: the same bytes in
        # both (compare's base row says "(baseline)"; its values are the paper table's)
        (head, _, row), (cmp_head, _, cmp_row) = grid_rows(evaluated, fmt), grid_rows(compared, fmt)
        assert head == cmp_head and row[0] == cmp_row[0], (evaluated, compared)
        assert HOSTILE not in (head[1], row[0])
    if fmt == "latex":
        # outside the escapes no character LaTeX reads specially is left
        shown = row[0] if where == "run" else head[1]
        plain = re.sub(r"\\text[a-z]+\{\}|\\[&%_#${}]", "", shown)
        assert not set(plain) & set("\\&%_#${}~^<>|"), shown
        return
    for text in (evaluated, compared):
        assert {run, measure} <= written_names(text, fmt), text


# ------------------------------------------------------------------- NaN: one rule
NAN_QRELS = "q3 0 photo 0 sens=2\n"  # best == worst: nCS-DCG@3 undefined, its mean NaN
NAN_RUNS = ("q3 Q0 photo 1 3 t\n", "q3 Q0 photo 1 2 t\n")


def _nan_cells(tmp_path: Path, fmt: str) -> tuple[str, str]:
    """The cell evaluate and compare write for the run ``b``'s undefined mean of nCS-DCG@3."""
    q = tmp_path / "q.txt"
    q.write_text(NAN_QRELS)
    runs = {}
    for name, text in zip("ab", NAN_RUNS, strict=True):
        (tmp_path / name).write_text(text)
        runs[name] = tmp_path / name
    with pytest.warns(UserWarning, match="undefined"):
        frame = rankeval.evaluate(q, runs, "nCS-DCG@3")
    with pytest.warns(UserWarning, match="undefined"):
        cmp = rankeval.compare(q, runs, "nCS-DCG@3")
    texts = format_results(frame, fmt), cmp.format(fmt)
    out = []
    for text in texts:
        if fmt in ("tsv", "csv"):
            rows = csv.DictReader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ",")
            out.append(next(r["value"] for r in rows if r["run"] == "b" and r["query_id"] == ""))
        elif fmt in ("json", "jsonl"):
            objs = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
            out.append(next(o["value"] for o in objs if o["run"] == "b" and o["query_id"] is None))
        elif fmt == "trec":
            fields = [line.split("\t") for line in text.splitlines()]
            out.append(next(f[3] for f in fields if f[0] == "b" and f[2] == "all"))
        elif fmt == "markdown":
            cells = markdown_cells(text)
            out.append(cells[cells.index("b") + 1])
        else:
            out.append(next(row[1] for row in grid_rows(text, "latex") if row[0] == "b"))
    return out[0], out[1]


@pytest.mark.parametrize("fmt", ["trec", *TABLE_FORMATS])
def test_evaluate_and_compare_write_nan_alike(tmp_path, fmt) -> None:
    """An undefined mean: the same cell in evaluate's and compare's table (compare's csv and
    tsv wrote an empty cell, and its trec layout failed on it)."""
    evaluated, compared = _nan_cells(tmp_path, fmt)
    assert evaluated == compared
    # the undefined value is never a number: JSON's null, else the text nan
    assert evaluated is None if fmt in ("json", "jsonl") else evaluated == "nan"


# -------------------------------------------------------- -p: one number format
@pytest.mark.parametrize("fmt", ["markdown", "latex", "tsv", "csv"])
@pytest.mark.parametrize("precision", [0, 2, 6])
def test_precision_reaches_every_writer(files, fmt, precision) -> None:
    q, b, o = files
    frame = rankeval.evaluate(q, {"base": b, "other": o}, MEASURE)
    value = float(frame[(frame.run == "other") & frame.query_id.isna()]["value"].iloc[0])
    text = format_results(frame, fmt, precision=precision)
    if fmt == "markdown":
        cells = markdown_cells(text)
        cell = cells[cells.index("other") + 1]
    elif fmt == "latex":
        cell = next(row[1] for row in grid_rows(text, "latex") if row[0] == "other")
    else:
        rows = csv.DictReader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ",")
        cell = next(r["value"] for r in rows if r["run"] == "other")
    assert cell == f"{value:.{precision}f}"
    assert math.isclose(float(cell), value, abs_tol=0.5 * 10**-precision + 1e-12)


# ------------------------------------------------------------ plugin formats reach compare
PLUGIN = """
from rankeval import OutputFormat, hookimpl


def fields(rows, precision):
    return "".join(
        f"{r.run}|{r.query_id}|{r.measure}|{r.value!r}|{r.integer}|{precision}\\n" for r in rows
    )


@hookimpl
def register_formats(register):
    register(OutputFormat("fields", fields, "every field of every row"))
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch) -> str:
    site = tmp_path / "site"
    site.mkdir()
    (site / "rk_stack_fields.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(site))
    return "rk_stack_fields"


@pytest.mark.parametrize("extra", [[], ["-q"], ["-q", "-p", "3"]])
def test_a_plugin_format_renders_compare_as_it_renders_evaluate(files, plugin, extra) -> None:
    q, b, o = files
    args = [q, f"base={b}", f"other={o}", "--plugin", plugin, "-m", "AP", "-m", "NumRelRet", "-f", "fields"]
    evaluated, compared = invoke(args + extra), invoke(["compare", *args, *extra])
    assert evaluated.exit_code == 0, evaluated.output
    assert compared.exit_code == 0, compared.output
    assert compared.stdout == evaluated.stdout
    rows = [line.split("|") for line in compared.stdout.splitlines()]
    # per run, its queries (with -q) then its means; the count measure flagged integer
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    assert {(r[2], r[4]) for r in rows} == {("AP", "False"), ("NumRelRet", "True")}
    assert {r[1] for r in rows} == ({"q1", "q2", "None"} if "-q" in extra else {"None"})


def test_compare_names_the_plugin_formats_it_accepts(files, plugin) -> None:
    q, b, o = files
    result = invoke(["compare", q, b, o, "--plugin", plugin, "-m", "AP", "-f", "xml"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rankeval: error: unknown format 'xml'; expected one of trec, tsv, csv")
    assert len(result.stderr.splitlines()) == 1 and result.stderr.rstrip().endswith(", fields")
