"""The ``rankeval`` command line (docs: cli.md, formats.md)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rankeval.cli.app import app

DATA = Path(__file__).parent / "data"
DL_QRELS = DATA / "dl-hard" / "dl_hard-passage.qrels"
DL_BM25 = DATA / "dl-hard" / "bm25.run.gz"
DL_BM25_EVAL = DATA / "dl-hard" / "bm25.run.eval.gz"
DL_RM3 = DATA / "dl-hard" / "bm25-rm3.run.gz"
DL_RM3_EVAL = DATA / "dl-hard" / "bm25-rm3.run.eval.gz"

# tiny example, values computed by hand below
QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 1\n2 0 y 1\n3 0 z 1\n"
RUN = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 c 3 1 t\n2 Q0 y 1 5 t\n2 Q0 w 2 4 t\n9 Q0 z 1 1 t\n"
# AP:  q1 (1/1 + 2/3)/2 = 5/6 ; q2 (1/1)/2 = 1/2 ; q3 not retrieved: 0 ; q9 not judged: ignored
# P@2: q1 1/2 ; q2 1/2 ; q3 0
AP = {"1": 5 / 6, "2": 1 / 2, "3": 0.0}
P2 = {"1": 0.5, "2": 0.5, "3": 0.0}
AP_ALL = (5 / 6 + 1 / 2 + 0) / 3
P2_ALL = 1 / 3


def invoke(args, **kw):
    result = CliRunner().invoke(app, [str(a) for a in args], **kw)
    return result


def ok(args, **kw) -> str:
    result = invoke(args, **kw)
    assert result.exception is None, repr(result.exception)
    assert result.exit_code == 0, result.output
    return result.stdout  # (warnings, on stderr, are not results)


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    q = tmp_path / "tiny.qrels"
    r = tmp_path / "tiny.run"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def trec_eval_values(path: Path) -> dict[tuple[str, str], str]:
    """(measure, query) → value text of a trec_eval output file."""
    out = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            measure, qid, value = line.split()
            out[(measure, qid)] = value
    return out


def parse_trec(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        measure, qid, value = line.split("\t")
        out[(measure.strip(), qid)] = value
    return out


# --------------------------------------------------------------------- trec_eval parity
TREC_NAMES = {"AP(rel=2)": "map", "nDCG@10": "ndcg_cut_10", "R(rel=2)@1000": "recall_1000"}


def test_dl_hard_matches_trec_eval() -> None:
    """trec_eval -l 2 -c -M1000 output, 4 decimals, 'all' rows."""
    ref = trec_eval_values(DL_BM25_EVAL)
    out = ok([DL_QRELS, DL_BM25, "-m", "AP(rel=2)", "-m", "nDCG@10", "-m", "R(rel=2)@1000"])
    lines = out.splitlines()
    assert [line.split("\t")[0].strip() for line in lines] == ["AP(rel=2)", "nDCG@10", "R(rel=2)@1000"]
    got = parse_trec(out)
    assert set(got) == {(m, "all") for m in TREC_NAMES}
    for ours, theirs in TREC_NAMES.items():
        assert got[(ours, "all")] == ref[(theirs, "all")], ours
    # the known values, so this test cannot pass on an empty reference
    assert [got[(m, "all")] for m in TREC_NAMES] == ["0.1731", "0.3037", "0.6690"]


def test_dl_hard_per_query_matches_trec_eval() -> None:
    ref = trec_eval_values(DL_BM25_EVAL)
    out = ok([DL_QRELS, DL_BM25, "-m", "AP(rel=2)", "-m", "nDCG@10", "-m", "R(rel=2)@1000", "-q"])
    got = parse_trec(out)
    queries = sorted({q for (m, q) in ref if m == "map" and q != "all"})
    assert len(queries) == 50
    assert {q for (_, q) in got} == {*queries, "all"}
    for q in [*queries, "all"]:
        for ours, theirs in TREC_NAMES.items():
            assert got[(ours, q)] == ref[(theirs, q)], (ours, q)


def test_several_specs_per_option() -> None:
    ref = trec_eval_values(DL_BM25_EVAL)
    out = ok([DL_QRELS, DL_BM25, "-m", "AP(rel=2) nDCG@10", "-m", "recall.1000(rel=2) P_5(rel=2)"])
    got = parse_trec(out)
    assert [line.split("\t")[0].strip() for line in out.splitlines()] == [
        "AP(rel=2)",
        "nDCG@10",
        "R(rel=2)@1000",
        "P(rel=2)@5",
    ]
    assert got[("AP(rel=2)", "all")] == ref[("map", "all")]
    assert got[("nDCG@10", "all")] == ref[("ndcg_cut_10", "all")]
    assert got[("R(rel=2)@1000", "all")] == ref[("recall_1000", "all")]
    assert got[("P(rel=2)@5", "all")] == ref[("P_5", "all")] == "0.2600"


def test_several_specs_per_option_tiny(tiny) -> None:
    q, r = tiny
    assert ok([q, r, "-m", "AP P@2"]) == ok([q, r, "-m", "AP", "-m", "P@2"])
    assert ok([q, r, "-m", "AP P@2"]) == (
        f"AP                    \tall\t{AP_ALL:.4f}\nP@2                   \tall\t{P2_ALL:.4f}\n"
    )


# --------------------------------------------------------------------- per query, formats
def test_per_query_rows(tiny) -> None:
    q, r = tiny
    out = ok([q, r, "-m", "AP", "-m", "P@2", "-q"])
    expected = ""
    for qid in ("1", "2", "3"):
        expected += f"AP                    \t{qid}\t{AP[qid]:.4f}\n"
        expected += f"P@2                   \t{qid}\t{P2[qid]:.4f}\n"
    expected += f"AP                    \tall\t{AP_ALL:.4f}\nP@2                   \tall\t{P2_ALL:.4f}\n"
    assert out == expected
    assert "\t9\t" not in out  # query only in the run is ignored


def test_format_trec_default(tiny) -> None:
    q, r = tiny
    expected = "AP                    \tall\t0.4444\n"
    assert ok([q, r, "-m", "AP"]) == ok([q, r, "-m", "AP", "-f", "trec"]) == expected


def _expected_records(aggregate: str | None, per_query: bool = True):
    """The rows of tiny's results, the aggregate's query id written as *aggregate*."""
    rows = []
    if per_query:
        for qid in ("1", "2", "3"):
            rows += [("tiny.run", qid, "AP", AP[qid]), ("tiny.run", qid, "P@2", P2[qid])]
    rows += [("tiny.run", aggregate, "AP", AP_ALL), ("tiny.run", aggregate, "P@2", P2_ALL)]
    return rows


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_format_tsv_csv(tiny, fmt) -> None:
    q, r = tiny
    out = ok([q, r, "-m", "AP P@2", "-q", "-f", fmt])
    rows = list(csv.reader(io.StringIO(out), delimiter="\t" if fmt == "tsv" else ","))
    assert rows[0] == ["run", "query_id", "measure", "value"]
    got = [(a, b, c, float(d)) for a, b, c, d in rows[1:]]
    assert [g[:3] for g in got] == [e[:3] for e in _expected_records("")]
    for g, e in zip(got, _expected_records(""), strict=True):
        assert g[3] == pytest.approx(e[3], abs=1e-12)
    # without -q only the aggregate rows
    rows = list(
        csv.reader(
            io.StringIO(ok([q, r, "-m", "AP P@2", "-f", fmt])), delimiter="\t" if fmt == "tsv" else ","
        )
    )
    assert [row[:3] for row in rows[1:]] == [["tiny.run", "", "AP"], ["tiny.run", "", "P@2"]]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_format_json(tiny, fmt) -> None:
    q, r = tiny
    out = ok([q, r, "-m", "AP P@2", "-q", "-f", fmt])
    if fmt == "json":
        objs = json.loads(out)
        assert isinstance(objs, list)
    else:
        objs = [json.loads(line) for line in out.splitlines()]
        assert len(out.splitlines()) == 8
    assert all(set(o) == {"run", "query_id", "measure", "value"} for o in objs)
    got = [(o["run"], o["query_id"], o["measure"], o["value"]) for o in objs]
    assert [g[:3] for g in got] == [e[:3] for e in _expected_records(None)]
    for g, e in zip(got, _expected_records(None), strict=True):
        assert g[3] == pytest.approx(e[3], abs=1e-12)
    alls = [o for o in objs if o["query_id"] is None]
    assert [o["measure"] for o in alls] == ["AP", "P@2"]


def test_format_markdown(tiny) -> None:
    q, r = tiny
    assert ok([q, r, "-m", "AP P@2", "-f", "markdown"]) == (
        "| run | AP | P@2 |\n|---|---:|---:|\n| tiny.run | 0.4444 | 0.3333 |\n"
    )
    out = ok([q, r, "-m", "AP P@2", "-q", "-f", "markdown"])
    assert out.splitlines() == [
        "| run | query | AP | P@2 |",
        "|---|---|---:|---:|",
        "| tiny.run | 1 | 0.8333 | 0.5000 |",
        "| tiny.run | 2 | 0.5000 | 0.5000 |",
        "| tiny.run | 3 | 0.0000 | 0.0000 |",
        "| tiny.run | all | 0.4444 | 0.3333 |",
    ]


def test_format_latex(tiny) -> None:
    q, r = tiny
    assert ok([q, r, "-m", "AP P@2", "-f", "latex"]) == (
        "\\begin{tabular}{lrr}\n"
        "\\toprule\n"
        "run & AP & P@2 \\\\\n"
        "\\midrule\n"
        "tiny.run & 0.4444 & 0.3333 \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n"
    )


def test_format_latex_escapes(tmp_path, tiny) -> None:
    q, _ = tiny
    run = tmp_path / "my_run#1.txt"
    run.write_text(RUN)
    out = ok([q, run, "-m", "AP", "-f", "latex"])
    assert "my\\_run\\#1.txt & 0.4444 \\\\" in out


def test_precision(tiny) -> None:
    q, r = tiny
    assert ok([q, r, "-m", "AP", "-p", "6"]) == "AP                    \tall\t0.444444\n"
    assert ok([q, r, "-m", "AP", "--precision", "2"]) == "AP                    \tall\t0.44\n"
    out = ok([q, r, "-m", "AP", "-p", "6", "-f", "csv"])
    assert out == "run,query_id,measure,value\ntiny.run,,AP,0.444444\n"


def test_integer_measures_printed_without_decimals(tiny) -> None:
    q, r = tiny
    # NumRet is summed over queries, as trec_eval: 3 + 2 + 0
    assert ok([q, r, "-m", "num_ret", "-q"]) == (
        "NumRet                \t1\t3\nNumRet                \t2\t2\nNumRet                \t3\t0\n"
        "NumRet                \tall\t5\n"
    )


def test_output_file(tmp_path, tiny) -> None:
    q, r = tiny
    out_file = tmp_path / "results.tsv"
    result = invoke([q, r, "-m", "AP P@2", "-f", "tsv", "-o", out_file])
    assert result.exit_code == 0
    assert result.output == ""
    assert out_file.read_text() == ok([q, r, "-m", "AP P@2", "-f", "tsv"])
    assert out_file.read_text().startswith("run\tquery_id\tmeasure\tvalue\ntiny.run\t\tAP\t0.444")


def test_two_runs_add_run_column(tmp_path, tiny) -> None:
    q, r = tiny
    r2 = tmp_path / "other.run"
    # q1: b, c, a -> AP (1/2 + 2/3)/2 = 7/12 ; q2: x, y -> 1 ; q3 missing -> 0
    r2.write_text("1 Q0 b 1 9 t\n1 Q0 c 2 8 t\n1 Q0 a 3 7 t\n2 Q0 x 1 2 t\n2 Q0 y 2 1 t\n")
    out = ok([q, r, r2, "-m", "AP"])
    assert out == (
        f"tiny.run\tAP                    \tall\t{AP_ALL:.4f}\n"
        f"other.run\tAP                    \tall\t{(7 / 12 + 1) / 3:.4f}\n"
    )
    rows = json.loads(ok([q, r, r2, "-m", "AP", "-f", "json"]))
    assert [(o["run"], o["query_id"]) for o in rows] == [("tiny.run", None), ("other.run", None)]


def test_two_dl_hard_runs_match_trec_eval() -> None:
    out = ok([DL_QRELS, DL_BM25, DL_RM3, "-m", "AP(rel=2)", "-m", "nDCG@10"])
    lines = [line.split("\t") for line in out.splitlines()]
    assert [(run, m.strip(), q) for run, m, q, _ in lines] == [
        ("bm25.run.gz", "AP(rel=2)", "all"),
        ("bm25.run.gz", "nDCG@10", "all"),
        ("bm25-rm3.run.gz", "AP(rel=2)", "all"),
        ("bm25-rm3.run.gz", "nDCG@10", "all"),
    ]
    bm25, rm3 = trec_eval_values(DL_BM25_EVAL), trec_eval_values(DL_RM3_EVAL)
    assert [v for *_, v in lines] == [
        bm25[("map", "all")],
        bm25[("ndcg_cut_10", "all")],
        rm3[("map", "all")],
        rm3[("ndcg_cut_10", "all")],
    ]


def test_no_missing_zero(tiny) -> None:
    q, r = tiny
    # default (trec_eval -c): q3 (judged, not retrieved) counts as 0
    assert ok([q, r, "-m", "AP"]) == f"AP                    \tall\t{(5 / 6 + 1 / 2 + 0) / 3:.4f}\n"
    # --no-missing-zero: mean over q1 and q2 only
    out = ok([q, r, "-m", "AP", "--no-missing-zero", "-q"])
    assert out == (
        "AP                    \t1\t0.8333\n"
        "AP                    \t2\t0.5000\n"
        f"AP                    \tall\t{(5 / 6 + 1 / 2) / 2:.4f}\n"
    )
    assert f"{(5 / 6 + 1 / 2) / 2:.4f}" == "0.6667"


def test_max_docs(tmp_path) -> None:
    q = tmp_path / "m.qrels"
    r = tmp_path / "m.run"
    q.write_text("1 0 d2 1\n1 0 d6 1\n1 0 d7 0\n")
    # ranks by score: d1..d7 ; relevant at ranks 2 and 6
    r.write_text("".join(f"1 Q0 d{i} {i} {10 - i} t\n" for i in range(1, 8)))
    full = ok([q, r, "-m", "AP", "-m", "NumRet", "-m", "R"])
    assert full == (
        f"AP                    \tall\t{(1 / 2 + 2 / 6) / 2:.4f}\n"
        "NumRet                \tall\t7\n"
        "R                     \tall\t1.0000\n"
    )
    cut = ok([q, r, "-m", "AP", "-m", "NumRet", "-m", "R", "-M", "5"])
    assert cut == (
        f"AP                    \tall\t{(1 / 2) / 2:.4f}\n"
        "NumRet                \tall\t5\n"
        "R                     \tall\t0.5000\n"
    )


def test_run_from_stdin(tiny) -> None:
    q, r = tiny
    out = ok([q, "-", "-m", "AP", "-q"], input=RUN)
    assert out == ok([q, r, "-m", "AP", "-q"])
    assert out.endswith("AP                    \tall\t0.4444\n")
    rows = json.loads(ok([q, "-", "-m", "AP", "-f", "json"], input=RUN))
    assert rows == [{"run": "stdin", "query_id": None, "measure": "AP", "value": pytest.approx(AP_ALL)}]


def test_qrels_from_stdin(tiny) -> None:
    _, r = tiny
    assert ok(["-", r, "-m", "AP"], input=QRELS) == "AP                    \tall\t0.4444\n"


# --------------------------------------------------------------------- catalogue commands
def measure_blocks(out: str) -> dict[str, list[str]]:
    """``{header: [its indented lines, stripped]}`` of ``rankeval measures`` output."""
    blocks: dict[str, list[str]] = {}
    header = ""
    for line in out.splitlines():
        if line.startswith("    "):
            blocks[header].append(line.strip())
        elif "[plugin: " in line:
            header = line
            blocks[header] = []
    return blocks


def test_measures_command() -> None:
    out = ok(["measures"])
    blocks = measure_blocks(out)
    block = blocks["AP@k  [plugin: rankeval_trec]"]
    assert block[0] == "Average precision (MAP when averaged); trec_eval map / map_cut"
    assert any(line.startswith("k: int in [1, 2147483647], default none  — ") for line in block)
    assert any(line.startswith("rel: int, default 1  — ") for line in block)
    assert any(line.startswith("level: int in [1, 2147483647], default 1  — ") for line in block)
    assert "aliases: map, MAP, map_cut.N" in block
    assert "nDCG@k  [plugin: rankeval_trec]" in blocks
    assert "Bpref  [plugin: rankeval_trec]" in blocks
    assert out.endswith("is computed by ir_measures.\n")


def test_measures_defaults_as_specs_write_them() -> None:
    """Defaults are shown as spec text: a duration with its unit (hTBG's half-life, 224 s in the
    paper's Table 1), numbers without a trailing .0, booleans as true/false."""
    from rankeval.measures.plugins import load_registry

    block = measure_blocks(ok(["measures"]))["hTBG@h  [plugin: rankeval_tbg]"]
    assert any(line.startswith("h: duration in (0, inf), default 224s  — ") for line in block)
    assert any(line.startswith("smax: float in (0, inf), default 1  — ") for line in block)
    assert any(line.startswith("ideal: bool, default false  — ") for line in block)
    registry = load_registry(entry_points=False)
    # the text shown parses back to the default
    assert registry.parse("hTBG@h=224s") == registry.parse("hTBG(smax=1,ideal=false)")


def test_measures_cutoff_required_or_optional_never_both() -> None:
    blocks = measure_blocks(ok(["measures"]))
    # CS-DCG cannot be computed without its cutoff (CS-DCG@10); AP's is optional
    assert any(
        line.startswith("k: int in [1, 2147483647], required  — ")
        for line in blocks["CS-DCG@k  [plugin: rankeval_csdcg]"]
    )
    assert "required" not in " ".join(blocks["AP@k  [plugin: rankeval_trec]"])
    for header, block in blocks.items():
        for line in block[1:]:
            if ": " not in line or "  — " not in line:
                continue  # aliases, source
            state, help_text = line.split("  — ", 1)
            assert "optional" not in state, (header, line)
            if "required" in help_text:
                assert state.endswith(", required"), (header, line)


@pytest.mark.parametrize(
    ("pattern", "headers"),
    [
        ("hTBG", ["hTBG@h  [plugin: rankeval_tbg]", "nhTBG@h  [plugin: rankeval_tbg]"]),
        ("htbg", ["hTBG@h  [plugin: rankeval_tbg]", "nhTBG@h  [plugin: rankeval_tbg]"]),
        ("n*dcg@*", ["nCS-DCG@k  [plugin: rankeval_csdcg]", "nDCG@k  [plugin: rankeval_trec]"]),
        ("ncs-*", ["nCS-DCG@k  [plugin: rankeval_csdcg]"]),  # a glob matches whole names
        ("zork", []),
        ("map_cut*", ["AP@k  [plugin: rankeval_trec]"]),  # an alias
        (
            "csdcg",
            [
                "CS-DCG@k  [plugin: rankeval_csdcg]",
                "CS-DCG-neg@k  [plugin: rankeval_csdcg]",
                "nCS-DCG@k  [plugin: rankeval_csdcg]",
            ],
        ),
    ],
)
def test_measures_pattern(pattern, headers) -> None:
    result = invoke(["measures", pattern])
    assert result.exit_code == 0
    assert list(measure_blocks(result.stdout)) == headers
    if not headers:
        assert result.stdout == ""
        assert result.stderr.startswith(
            f"rankeval: no measure matches {pattern!r}; any other ir_measures name"
        )


# --------------------------------------------------------------------- -p / -P
def test_p_is_only_the_precision(tiny) -> None:
    q, r = tiny
    for value, hint in [("4.5", ""), ("x", "; to load the plugin x, use --plugin x"), ("31", ""), ("-1", "")]:
        result = invoke([q, r, "-m", "AP", "-p", value])
        assert result.exit_code == 2
        assert result.output == (
            f"rankeval: error: -p/--precision takes a number of decimals from 0 to 30, not {value!r}{hint}\n"
        )
    result = invoke([q, r, "-m", "AP", "-p", "no:rankeval_tar"])
    assert "to keep plugin rankeval_tar from loading, use --plugin no:rankeval_tar" in result.output
    assert ok([q, r, "-m", "AP", "-p", "0"]) == "AP                    \tall\t0\n"


def test_plugin_option_loads_and_blocks(tmp_path, tiny, monkeypatch) -> None:
    q, r = tiny
    (tmp_path / "rk_cli_hits.py").write_text(
        "import numpy as np\n"
        "from dataclasses import dataclass\n"
        "from rankeval import Measure, hookimpl\n"
        "@dataclass(frozen=True)\n"
        "class Found(Measure):\n"
        "    name = 'FoundCli'\n"
        "    description = 'relevant documents retrieved'\n"
        "    def compute(self, data):\n"
        "        rows = data.relevant_rows(1)\n"
        "        return data.query_sum(rows, np.ones(len(rows)))\n"
        "@hookimpl\n"
        "def register_measures(register):\n"
        "    register(Found)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "FoundCli  [plugin: rk_cli_hits]" in ok(["measures", "-P", "rk_cli_hits", "found"])
    # q1: a, c relevant and retrieved; q2: y; q3: none -> mean 1
    assert ok([q, r, "-P", "rk_cli_hits", "-m", "FoundCli"]) == "FoundCli              \tall\t1.0000\n"
    blocked = invoke([q, r, "--plugin", "no:rankeval_csdcg", "-m", "nCS-DCG@5"])
    assert blocked.exit_code == 2 and "nCS-DCG" in blocked.output
    assert invoke([q, r, "--plugin", "no:", "-m", "AP"]).exit_code == 2


# --------------------------------------------------------------------- named runs
OTHER_RUN = "1 Q0 b 1 9 t\n1 Q0 c 2 8 t\n1 Q0 a 3 7 t\n2 Q0 x 1 2 t\n2 Q0 y 2 1 t\n"
OTHER_AP_ALL = (7 / 12 + 1) / 3  # q1: b, c, a -> (1/2 + 2/3)/2 ; q2: x, y -> 1 ; q3 missing -> 0


def test_named_runs_in_every_output(tmp_path, tiny) -> None:
    q, r = tiny
    r2 = tmp_path / "other.run"
    r2.write_text(OTHER_RUN)
    args = [q, f"BM25={r}", f"T5={r2}", "-m", "AP"]
    assert (
        ok(args)
        == f"BM25\tAP                    \tall\t{AP_ALL:.4f}\nT5\tAP                    \tall\t{OTHER_AP_ALL:.4f}\n"
    )
    assert [o["run"] for o in json.loads(ok([*args, "-f", "json"]))] == ["BM25", "T5"]
    assert [row["run"] for row in csv.DictReader(io.StringIO(ok([*args, "-f", "csv"])))] == ["BM25", "T5"]
    assert "| BM25 | 0.4444 |" in ok([*args, "-f", "markdown"])
    assert "BM25 & 0.4444 \\\\" in ok([*args, "-f", "latex"])
    # a named run next to one named by its file name; stdin named too
    assert ok([q, f"mine={r}", r2, "-m", "AP"]).splitlines()[1].startswith("other.run\t")
    assert json.loads(ok([q, "piped=-", "-m", "AP", "-f", "json"], input=RUN))[0]["run"] == "piped"


def test_named_runs_in_compare(tmp_path, tiny) -> None:
    q, r = tiny
    r2 = tmp_path / "other.run"
    r2.write_text(OTHER_RUN)
    out = ok(["compare", q, f"BM25={r}", f"T5={r2}", "-m", "AP", "-b", "T5", "-f", "json"])
    rows = json.loads(out)
    assert [(row["run"], row["baseline"]) for row in rows if row["query_id"] is None] == [
        ("BM25", "T5"),
        ("T5", None),
    ]


def test_a_path_that_exists_wins(tmp_path, tiny, monkeypatch) -> None:
    q, _ = tiny
    monkeypatch.chdir(tmp_path)
    Path("a=b.run").write_text(RUN)  # a file whose name has an '='
    Path("b.run").write_text(OTHER_RUN)
    assert json.loads(ok([q, "a=b.run", "-m", "AP", "-f", "json"]))[0] == {
        "run": "a=b.run",
        "query_id": None,
        "measure": "AP",
        "value": pytest.approx(AP_ALL),
    }
    # no file 'x=b.run': the run b.run named x
    assert json.loads(ok([q, "x=b.run", "-m", "AP", "-f", "json"]))[0]["run"] == "x"
    # an '=' in a directory name is part of the path
    missing = invoke([q, "k=10/run.txt", "-m", "AP"])
    assert missing.exit_code == 1
    assert missing.output == (
        "rankeval: error: 10/run.txt: file not found (the run argument 'k=10/run.txt' read as NAME=PATH)\n"
    )
    missing = invoke([q, "dir/k=10.run", "-m", "AP"])  # a '/' before the '=': a path
    assert missing.exit_code == 1 and missing.output == "rankeval: error: dir/k=10.run: file not found\n"


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (
            ["=tiny.run"],
            "run argument '=tiny.run': expected PATH or NAME=PATH, with a non-empty NAME and PATH",
        ),
        (["BM25="], "run argument 'BM25=': expected PATH or NAME=PATH, with a non-empty NAME and PATH"),
        (
            ["a\tb=tiny.run"],
            "run argument 'a\\tb=tiny.run': a run name cannot hold tabs, line breaks or control characters",
        ),
        (
            ["A=tiny.run", "A=other.run"],
            "two runs are named 'A' ('A=tiny.run' and 'A=other.run'); give each run its own name with NAME=PATH",
        ),
        (
            ["tiny.run", "tiny.run=other.run"],
            "two runs are named 'tiny.run' ('tiny.run' and 'tiny.run=other.run'); give each run its own name with NAME=PATH",
        ),
    ],
)
def test_bad_run_names(tmp_path, tiny, monkeypatch, runs, message) -> None:
    q, _ = tiny
    monkeypatch.chdir(tmp_path)
    Path("other.run").write_text(OTHER_RUN)
    for command in ([], ["compare"]):
        result = invoke([*command, q, *runs, "-m", "AP"])
        assert result.exit_code == 2, result.output
        assert result.output == f"rankeval: error: {message}\n"


def test_run_sources_name_runs_as_given() -> None:
    """The engine reads files itself: NAME=PATH becomes {name: path}, other runs keep their
    file names."""
    from rankeval.cli.common import run_arguments, run_sources
    from rankeval.errors import InputError

    assert run_sources(run_arguments(["runs/bm25.run", "runs/t5.run"])) == ["runs/bm25.run", "runs/t5.run"]
    with pytest.raises(InputError, match="read as NAME=PATH"):
        run_sources(run_arguments(["BM25=runs/bm25.run", "runs/t5.run"]))


# --------------------------------------------------------------------- aligned columns
def test_trec_columns_aligned_across_runs(tmp_path, tiny) -> None:
    q, r = tiny
    r2 = tmp_path / "other.run"
    r2.write_text(OTHER_RUN)
    # names of 4 and 11 characters end at different tab stops: padded to 11
    out = ok([q, f"BM25={r}", f"BM25+rm3-t5={r2}", "-m", "AP"])
    assert out == (
        f"BM25       \tAP                    \tall\t{AP_ALL:.4f}\n"
        f"BM25+rm3-t5\tAP                    \tall\t{OTHER_AP_ALL:.4f}\n"
    )
    # query ids of 1 and 9 characters: the query column padded to 9
    q9 = tmp_path / "q9.qrels"
    q9.write_text("1 0 a 1\n123456789 0 b 1\n")
    r9 = tmp_path / "q9.run"
    r9.write_text("1 Q0 a 1 2 t\n123456789 Q0 c 1 2 t\n")
    assert ok([q9, r9, "-m", "AP", "-q"]) == (
        "AP                    \t1        \t1.0000\n"
        "AP                    \t123456789\t0.0000\n"
        "AP                    \tall      \t0.5000\n"
    )


# --------------------------------------------------------------------- help
@pytest.mark.parametrize(
    "command", [[], ["evaluate"], ["compare"], ["measures"], ["plugins"], ["convert"], ["trec_eval"]]
)
def test_help_shows_values_not_python_types(command) -> None:
    result = invoke([*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for python_type in ("<str>", "<int>", "<bool>", "<float>", "<path>", "<list", "{QRELS}"):
        assert python_type not in result.output, python_type
    text = " ".join(result.output.replace("│", " ").split())
    if command in (["evaluate"], ["compare"]):
        assert f"{command[0]} [OPTIONS] QRELS [NAME=]RUN..." in text
        assert "--precision -p N" in text and "--plugin -P MODULE" in text and "--measure -m SPEC" in text


def test_plugins_command() -> None:
    out = ok(["plugins"])
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in out.splitlines()}
    assert rows["rankeval_trec"][0] == "built-in"
    measures, _, extra = rows["rankeval_trec"][1].partition(" (")
    assert extra == "--compat trec_eval; command trec_eval)"  # what a plugin adds besides measures
    listed = measures.split(", ")
    assert listed == sorted(listed)
    assert {
        "AP",
        "Bpref",
        "Judged",
        "NumRel",
        "NumRelRet",
        "NumRet",
        "P",
        "R",
        "RR",
        "Rprec",
        "Success",
        "nDCG",
    } <= set(listed)
    assert rows["rankeval_irmeasures"][0] == "built-in"


def test_help_without_arguments() -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    assert "QRELS RUN" in result.output


# --------------------------------------------------------------------- import cost
def test_cli_import_is_light() -> None:
    code = (
        "import sys, rankeval.cli\n"
        "heavy = sorted(m for m in ('pandas', 'pyarrow', 'numpy') if m in sys.modules)\n"
        "print(','.join(heavy) or 'none')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.strip().split(",")
    assert "pandas" not in loaded
    assert "pyarrow" not in loaded
    assert proc.stdout.strip() in ("none", "numpy")
