"""What rankeval writes, at its edges (docs: formats.md): strict RFC 8259 JSON, an aggregate row
no query id can be mistaken for, ids escaped in Markdown and LaTeX, ``-o DIR/`` refused, and
run names that are not UTF-8 written as text."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.engine.evaluation import Results
from rankeval.report.formats import MARKDOWN_ESCAPES, TEX_ESCAPES, format_results

QRELS = "all 0 d1 1\nall 0 d2 0\nq1 0 d1 1\nq1 0 d2 1\n"
RUN = "all Q0 d1 1 2 t\nall Q0 d2 2 1 t\nq1 Q0 d2 1 2 t\nq1 Q0 d3 2 1 t\n"
OTHER = "all Q0 d2 1 2 t\nall Q0 d1 2 1 t\nq1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n"
# AP: query "all" 1.0 (d1 first), query q1 (1/1) / 2 = 0.5; the aggregate 0.75
AP = {"all": 1.0, "q1": 0.5}
AP_MEAN = 0.75


def invoke(args, **kw):
    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def strict_json(text: str):
    """*text* parsed as RFC 8259 JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are errors."""

    def refuse(name: str):
        raise ValueError(f"not RFC 8259 JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def json_rows(text: str, fmt: str) -> list[dict]:
    return strict_json(text) if fmt == "json" else [strict_json(line) for line in text.splitlines()]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    q, r, o = tmp_path / "q.txt", tmp_path / "r.run", tmp_path / "o.run"
    q.write_text(QRELS)
    r.write_text(RUN)
    o.write_text(OTHER)
    return q, r, o


# ------------------------------------------------------------------------ item 5: strict JSON
def _results(values: list[float], aggregate: float) -> Results:
    results = Results()
    qids = np.array([f"q{i}" for i in range(len(values))], dtype=object)
    results.add("r", "M", qids, np.array(values), aggregate)
    return results


NON_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
def test_json_results_are_rfc8259_with_null_for_non_finite(fmt, value) -> None:
    text = format_results(_results([value, 0.5], value), fmt, per_query=True)
    rows = json_rows(text, fmt)
    assert [(row["query_id"], row["value"]) for row in rows] == [("q0", None), ("q1", 0.5), (None, None)]
    # the text formats keep telling them apart
    trec = format_results(_results([value, 0.5], value), "trec", per_query=True)
    assert trec.splitlines()[0].split("\t")[-1] == {"nan": "nan", "inf": "inf", "-inf": "-inf"}[str(value)]


@pytest.mark.parametrize("score", ["inf", "-inf"])
def test_convert_to_json_refuses_an_infinite_score(tmp_path, score) -> None:
    q, r = tmp_path / "n.qrels", tmp_path / "n.run"
    q.write_text("q1 0 a 1\nq1 0 a/x 1 cost=2\n")
    r.write_text(f"q1 Q0 a 1 1.5 t\nq1 Q0 a/x 2 {score} t\n")
    truth, pred = tmp_path / "t.json", tmp_path / "p.json"
    result = invoke(["convert", q, r, truth, pred, "--to", "json"])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"rankeval: error: {r}:2: score {float(score)!r} cannot be written in JSON (RFC 8259 has no "
        "infinity); expected a finite score"
    ]
    assert not truth.exists() and not pred.exists()


def test_convert_to_json_of_finite_scores_is_strict(tmp_path) -> None:
    q, r = tmp_path / "n.qrels", tmp_path / "n.run"
    q.write_text("q1 0 a 1\nq1 0 a/x 1 cost=2\n")
    r.write_text("q1 Q0 a 1 1e308 t\nq1 Q0 a/x 2 -1e-300 t\n")
    truth, pred = tmp_path / "t.json", tmp_path / "p.json"
    assert invoke(["convert", q, r, truth, pred, "--to", "json"]).exit_code == 0
    assert strict_json(pred.read_text()) == {"q1": {"a": [1e308, {"x": -1e-300}]}}
    strict_json(truth.read_text())


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_compare_json_is_rfc8259(files, fmt) -> None:
    q, r, _ = files
    # AP 0.5 on query all (d2 above d1), 0 on q1: 0.5 below r.run on both queries, so the
    # differences have no spread: Cohen's d and the t statistic are -inf
    worse = r.parent / "worse.run"
    worse.write_text("all Q0 d2 1 2 t\nall Q0 d1 2 1 t\nq1 Q0 d3 1 2 t\n")
    tsv = invoke(["compare", q, r, worse, "-m", "AP", "-f", "tsv"]).stdout
    head, _, row = tsv.splitlines()
    shown = dict(zip(head.split("\t"), row.split("\t"), strict=True))
    assert (shown["cohens_d"], shown["statistic"], shown["difference"]) == ("-inf", "-inf", "-0.5")
    result = invoke(["compare", q, r, worse, "-m", "AP", "-f", fmt])
    assert result.exit_code == 0, result.output
    row = json_rows(result.stdout, fmt)[1]
    assert (row["cohens_d"], row["statistic"], row["difference"]) == (None, None, -0.5)


# ----------------------------------------------------------------- item 20: a query named all
def test_dataframe_aggregate_has_no_query_id(files) -> None:
    q, r, _ = files
    df = rankeval.evaluate(q, r, "AP")
    assert df[df.query_id == "all"]["value"].tolist() == [AP["all"]]  # the query, only
    assert df[df.query_id.isna()]["value"].tolist() == [AP_MEAN]  # the aggregate
    assert df[df.query_id.notna()].set_index("query_id")["value"].to_dict() == AP


STRUCTURED = {  # format: (rows parsed as (query_id, value), how the aggregate's query id reads)
    "csv": (lambda t: [(row[1], float(row[3])) for row in list(csv.reader(io.StringIO(t)))[1:]], ""),
    "tsv": (
        lambda t: [(row[1], float(row[3])) for row in list(csv.reader(io.StringIO(t), delimiter="\t"))[1:]],
        "",
    ),
    "json": (lambda t: [(row["query_id"], row["value"]) for row in json_rows(t, "json")], None),
    "jsonl": (lambda t: [(row["query_id"], row["value"]) for row in json_rows(t, "jsonl")], None),
}


@pytest.mark.parametrize("fmt", sorted(STRUCTURED))
def test_structured_formats_tell_the_aggregate_from_a_query_named_all(files, fmt) -> None:
    q, r, _ = files
    result = invoke([q, r, "-m", "AP", "-q", "-f", fmt])
    assert result.exit_code == 0, result.output
    parse, aggregate = STRUCTURED[fmt]
    assert parse(result.stdout) == [("all", AP["all"]), ("q1", AP["q1"]), (aggregate, AP_MEAN)]


@pytest.mark.parametrize(
    ("command", "fmt"),
    # compare's markdown and latex are paper tables, without per-query rows
    [("evaluate", "trec"), ("evaluate", "markdown"), ("evaluate", "latex"), ("compare", "trec")],
)
def test_layouts_that_label_the_aggregate_all_refuse_a_query_named_all(files, command, fmt) -> None:
    q, r, o = files
    args = [q, r, "-m", "AP"] if command == "evaluate" else ["compare", q, r, o, "-m", "AP"]
    result = invoke([*args, "-q", "-f", fmt])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"rankeval: error: run 'r.run' has a query with the id 'all', which {fmt} output prints for "
        "the aggregate; use -f tsv, csv, json or jsonl, which tell them apart, or rename the query"
    ]
    # without -q only the aggregate is printed: nothing to mistake
    summary = invoke([*args, "-f", fmt])
    assert summary.exit_code == 0, summary.output


def test_compare_structured_output_tells_the_aggregate_apart(files) -> None:
    q, r, o = files
    result = invoke(["compare", q, r, o, "-m", "AP", "-q", "-f", "json"])
    rows = [row for row in strict_json(result.stdout) if row["run"] == "r.run"]
    assert [(row["query_id"], row["value"]) for row in rows] == [
        ("all", AP["all"]),
        ("q1", AP["q1"]),
        (None, AP_MEAN),
    ]


# ------------------------------------------------------------ item 26: ids escaped, -o DIR/
IDS = ["*em*", "_u_", "[l](http://e)", "<script>x</script>", "a|b", "`c`", "~~s~~", "&amp;", "$x$", "a\\b"]


@pytest.mark.parametrize("name", IDS)
def test_markdown_shows_ids_as_text(name) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    results = Results()
    results.add(name, f"M{name}", np.array([name], dtype=object), np.array([0.5]), 0.5)
    text = format_results(results, "markdown", per_query=True)
    parser = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = [t for t in parser.parse(text) if t.type == "inline"]
    cells = [t.children for t in tokens]
    # every cell is one plain text node: no emphasis, link, code, html or entity
    assert all(len(c) == 1 and c[0].type == "text" for c in cells), text
    texts = [c[0].content for c in cells]
    assert texts == ["run", "query", f"M{name}", name, name, "0.5000", name, "all", "0.5000"]


@pytest.mark.parametrize("name", IDS)
def test_latex_escapes_every_special_character(name) -> None:
    results = Results()
    results.add(name, "M", np.array([name], dtype=object), np.array([0.5]), 0.5)
    text = format_results(results, "latex", per_query=True)
    escaped = name.translate(TEX_ESCAPES)
    assert f"{escaped} & {escaped} & 0.5000" in text
    # outside the escapes no character LaTeX reads specially is left
    plain = re.sub(r"\\text[a-z]+\{\}|\\[&%_#${}]", "", escaped)
    assert not set(plain) & set("\\&%_#${}~^<>|")


def test_compare_paper_tables_escape_run_names(tmp_path, files) -> None:
    q, r, _ = files
    named = tmp_path / "*em*.run"
    named.write_text(OTHER)
    md = invoke(["compare", q, r, named, "-m", "AP", "-f", "markdown"])
    assert md.exit_code == 0, md.output
    assert "| \\*em\\*.run |" in md.stdout
    tex = invoke(["compare", q, r, f"a|b={named}", "-m", "AP", "-f", "latex"])
    assert "a\\textbar{}b &" in tex.stdout


@pytest.mark.parametrize("target", ["out/", "{file}/", "{dir}/", "{dir}"])
def test_output_to_a_directory_is_a_usage_error(tmp_path, files, target) -> None:
    q, r, _ = files
    existing = tmp_path / "existing.txt"
    existing.write_text("kept\n")
    (tmp_path / "d").mkdir()
    path = target.format(file=existing, dir=tmp_path / "d")
    if path.startswith("out"):
        path = f"{tmp_path}/{path}"  # a Path would drop the slash
    result = invoke([q, r, "-m", "AP", "-o", path])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rankeval: error: ") and len(result.stderr.splitlines()) == 1
    assert "directory" in result.stderr
    assert not (tmp_path / "out").exists()
    assert existing.read_text() == "kept\n"


# -------------------------------------------------------------- item 24: names not UTF-8
FORMATS = ["trec", "tsv", "csv", "json", "jsonl", "markdown", "latex"]


def _shown(name: str, fmt: str) -> str:
    """*name* as format *fmt* shows a run name (escaped in markdown and latex)."""
    return name.translate({"markdown": MARKDOWN_ESCAPES, "latex": TEX_ESCAPES}.get(fmt, {}))


ODD = os.fsdecode(b"run\xff.txt")  # a file name's byte that is not UTF-8: a lone surrogate


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_name_that_is_not_utf8_is_written_as_text(fmt) -> None:
    results = Results()
    results.add(ODD, "AP", np.array(["q1"], dtype=object), np.array([0.5]), 0.5)
    results.add("other", "AP", np.array(["q1"], dtype=object), np.array([0.25]), 0.25)
    text = format_results(results, fmt, per_query=True)
    text.encode("utf-8")  # every writer encodes UTF-8
    _check_names(text, fmt, {"run\\xff.txt", "other"})


def _check_names(text: str, fmt: str, names: set[str]) -> None:
    """The run names of an output: read back (json, jsonl), or each as the format shows it."""
    if fmt in ("json", "jsonl"):
        assert {row["run"] for row in json_rows(text, fmt)} == names
    else:
        assert all(_shown(name, fmt) in text for name in names), text


@pytest.mark.parametrize("fmt", FORMATS)
def test_compare_with_a_run_name_that_is_not_utf8(files, fmt) -> None:
    q, r, o = files
    cmp = rankeval.compare(q, {ODD: r, "other": o}, "AP")
    text = cmp.format(fmt)
    text.encode("utf-8")
    _check_names(text, fmt, {"run\\xff.txt", "other"})


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_with_a_run_file_name_that_is_not_utf8(tmp_path, files, fmt) -> None:
    q, _, o = files
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/run\xff.txt"))
    odd.write_text(OTHER)
    result = invoke([q, odd, o, "-m", "AP", "-f", fmt])
    assert result.exit_code == 0, result.output
    result.stdout.encode("utf-8")
    _check_names(result.stdout, fmt, {"run\\xff.txt", "o.run"})


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_plots_of_a_run_name_that_is_not_utf8(tmp_path, files, fmt) -> None:
    pytest.importorskip("matplotlib")
    from rankeval.comparison.curves import parameter_curve
    from rankeval.comparison.plots import curve_figure, plot_comparison, plot_panels, save_figure

    q, r, o = files
    cmp = rankeval.compare(q, {ODD: r, "other": o}, "AP", stats=rankeval.CompareOptions(baseline="other"))
    written = plot_comparison(cmp, tmp_path / "plots", fmt)
    written.append(plot_panels(cmp, tmp_path / f"panels.{fmt}"))
    curve = parameter_curve(q, {ODD: r, "other": o}, "P@{1,2}")
    written.append(save_figure(curve_figure(curve), tmp_path / f"curve.{fmt}", fmt))
    assert all(path.stat().st_size > 0 for path in written)
    if fmt == "svg":  # text kept as text: the name shows its byte as \xff
        assert all("run\\xff.txt" in path.read_text() for path in written)
