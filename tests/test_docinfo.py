"""The side file of document attributes (``--docinfo FILE``): reading it, merging it into
the qrels (the qrels win), the measures that read the merged attributes (CS-DCG's ``sens=``,
TBG's ``cost=``), the command line, and every kind of bad line."""

from __future__ import annotations

import gzip
import math
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError, RankevalWarning
from rankeval.io.trec import RESERVED, read_docinfo_table


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def values(frame) -> dict[tuple[str, str], float]:
    return {(m, q): v for m, q, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)}


def evaluate(*args, **kwargs) -> dict[tuple[str, str], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        return values(rankeval.evaluate(*args, **kwargs))


def without(qrels: str, key: str) -> str:
    """*qrels* with the attribute *key* (the last field where given) taken off every line."""
    return "".join(line.split(f" {key}=")[0] + "\n" for line in qrels.splitlines())


def run_lines(qid: str, docs: list[str]) -> str:
    """A run ranking *docs* in the order given (descending scores)."""
    return "".join(f"{qid} Q0 {d} {i + 1} {100 - i} t\n" for i, d in enumerate(docs))


# ------------------------------------------------------------------------------ reading
def test_read_docinfo_table(tmp_path):
    text = "# docno key=value ...\n\nd1 sens=1 cost=120\n  d2\tcost=80  \r\nd3\nd4 note=a=b\n"
    table = read_docinfo_table(write(tmp_path / "docs.txt", text))
    assert table.column_names == ["doc_id", "line", "sens", "cost", "note"]
    assert table.column("doc_id").to_pylist() == ["d1", "d2", "d3", "d4"]
    assert table.column("line").to_pylist() == [3, 4, 5, 6]
    assert table.column("sens").to_pylist() == ["1", None, None, None]
    assert table.column("cost").to_pylist() == ["120", "80", None, None]
    assert table.column("note").to_pylist() == [None, None, None, "a=b"]  # split at the first '='


def test_read_docinfo_compressed_and_empty(tmp_path):
    path = tmp_path / "docs.gz"
    path.write_bytes(gzip.compress(b"d1 sens=2\n"))
    assert read_docinfo_table(path).column("sens").to_pylist() == ["2"]
    empty = read_docinfo_table(write(tmp_path / "empty.txt", "# nothing\n\n"))
    assert empty.column_names == ["doc_id", "line"] and empty.num_rows == 0


# (file, text, line, column, message, offending line)
BAD = [
    (
        "noeq.docs",
        "d1 sens=1\nd2 sens\n",
        2,
        4,
        "expected key=value attribute after the docno, found 'sens'",
        "d2 sens",
    ),
    (
        "nokey.docs",
        "# attributes\nd1 cost=5 =1\n",
        2,
        11,
        "expected key=value attribute after the docno, found '=1'",
        "d1 cost=5 =1",
    ),
    (
        "twice.docs",
        "d1 sens=1 cost=5 sens=2\n",
        1,
        18,
        "attribute 'sens' given twice on one line",
        "d1 sens=1 cost=5 sens=2",
    ),
    (
        "dupdoc.docs",
        "# side file\nd1 sens=1\nd2 cost=4\n\n  d1 cost=3\nd2\n",
        5,
        3,
        "document 'd1' given twice (first on line 2); expected one line per document",
        "  d1 cost=3",
    ),
    *[
        (
            f"reserved-{name}.docs",
            f"d1 sens=1\nd2 cost=1 {name}=x\n",
            2,
            11,
            f"attribute name {name!r} is reserved",
            f"d2 cost=1 {name}=x",
        )
        for name in RESERVED
    ],
]


@pytest.mark.parametrize(("name", "text", "line", "column", "message", "shown"), BAD)
def test_bad_docinfo_lines(tmp_path, name, text, line, column, message, shown):
    path = write(tmp_path / name, text)
    with pytest.raises(InputError) as info:
        read_docinfo_table(path)
    err = info.value
    got = (err.source, err.line, err.column, err.message, err.text)
    assert got == (str(path), line, column, message, shown)
    # the same error from the API and, with its file:line:column, from the command line
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d1"]))
    with pytest.raises(InputError):
        rankeval.evaluate(q, r, "nDCG@10", options=rankeval.EvalOptions(docinfo=path))
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "nDCG@10", "--docinfo", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"rankeval: error: {path}:{line}:{column}: {message}\n    {shown}\n")
    assert result.stderr.endswith("\n    " + " " * (column - 1) + "^\n")
    assert result.stdout == ""


def test_missing_docinfo_file(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d1"]))
    missing = tmp_path / "nope.docs"
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "AP", "--docinfo", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == f"rankeval: error: {missing}: file not found\n"


# ------------------------------------------------------------------------------ merging
def test_attributes_go_to_every_line_of_the_document_in_every_query(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\nq1 1 d1 0\nq2 0 d1 2\nq2 0 d2 0 note=x\nq2 0 d9 1\n")
    docs = write(tmp_path / "docs.txt", "d1 sens=1 cost=10\nd2 sens=2\nd3 sens=1\n")
    qrels = rankeval.Qrels.read(q).with_docinfo(docs)
    t = qrels.table
    assert qrels.attributes == ["note", "sens", "cost"]
    assert t.column("sens").to_pylist() == ["1", "1", "1", "2", None]
    assert t.column("cost").to_pylist() == ["10", "10", "10", None, None]
    assert t.column("note").to_pylist() == [None, None, None, "x", None]
    # d3 is not judged: not added; everything else is as read
    assert t.num_rows == 5
    assert t.column("line").to_pylist() == [1, 2, 3, 4, 5]
    assert (qrels.source, repr(qrels)) == (str(q), f"Qrels({str(q)!r}, 5 judgments)")
    # where each value came from
    assert qrels.attribute_origin("sens", 3) == (str(docs), 2)
    assert qrels.attribute_origin("cost", 0) == (str(docs), 1)
    assert qrels.attribute_origin("note", 3) == (str(q), 4)
    assert qrels.attribute_origin("sens", 4) == (str(q), 5)  # no value: the qrels line


def test_qrels_win_for_every_line_of_a_judgment(tmp_path):
    # (q1, d1): one assessor's line gives sens=0, so neither line takes the side file's 2;
    # (q2, d1) gives nothing and takes it; d2's cost= on its qrels line wins too
    q = write(
        tmp_path / "t.qrels",
        "q1 0 d1 1 sens=0\nq1 1 d1 1\nq2 0 d1 1\nq1 0 d2 1 cost=7\n",
    )
    docs = write(tmp_path / "docs.txt", "d1 sens=2\nd2 cost=99 sens=1\n")
    qrels = rankeval.Qrels.read(q).with_docinfo(docs)
    assert qrels.table.column("sens").to_pylist() == ["0", None, "2", "1"]
    assert qrels.table.column("cost").to_pylist() == [None, None, None, "7"]
    assert qrels.attribute_origin("sens", 0) == (str(q), 1)
    assert qrels.attribute_origin("sens", 2) == (str(docs), 1)
    assert qrels.attribute_origin("cost", 3) == (str(q), 4)
    # so CS-DCG sees d1 as not sensitive in q1 and as grade 2 in q2
    r = write(tmp_path / "t.run", run_lines("q1", ["d1"]) + run_lines("q2", ["d1"]))
    got = evaluate(q, r, "CS-DCG@1", options=rankeval.EvalOptions(docinfo=docs))
    assert got[("CS-DCG@1", "q1")] == pytest.approx(1.0)  # 2^1 - 1, no cost
    assert got[("CS-DCG@1", "q2")] == pytest.approx(1.0 - 24.0)  # C = 12 times grade 2


def test_two_side_files_the_first_wins(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\nq1 0 d2 1\n")
    a = write(tmp_path / "a.txt", "d1 sens=1\n")
    b = write(tmp_path / "b.txt", "d1 sens=2\nd2 sens=3\n")
    qrels = rankeval.Qrels.read(q).with_docinfo(a).with_docinfo(b)
    assert qrels.table.column("sens").to_pylist() == ["1", "3"]
    assert [qrels.attribute_origin("sens", i) for i in (0, 1)] == [(str(a), 1), (str(b), 2)]


def test_qrels_from_a_frame_take_docinfo(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [1, 0]})
    docs = write(tmp_path / "docs.txt", "d2 sens=1\n")
    qrels = rankeval.Qrels.from_frame(frame).with_docinfo(docs)
    assert qrels.table.column("sens").to_pylist() == [None, "1"]
    assert qrels.attribute_origin("sens", 0) == ("<DataFrame>", None)


def test_bad_sens_from_the_side_file_names_the_side_file(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\nq1 0 d2 0 sens=1\n")
    docs = write(tmp_path / "docs.txt", "# sensitivity\nd2 sens=2\nd1 sens=high\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d1", "d2"]))
    with pytest.raises(InputError) as info:
        rankeval.evaluate(q, r, "nCS-DCG@10", options=rankeval.EvalOptions(docinfo=docs))
    assert str(info.value) == (
        f"{docs}:3: expected a number in [0, 2147483647] for sens= (the sensitivity grade), found 'high'"
    )


def test_bad_cost_from_the_side_file_names_the_side_file(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 u 1\nq1 0 u/p1 1 cost=10\nq1 0 u/p2 0\n")
    docs = write(tmp_path / "docs.txt", "u/p1 cost=20\nu/p2 cost=many\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["u", "u/p1", "u/p2"]))
    with pytest.raises(InputError) as info:
        rankeval.evaluate(q, r, "hTBG", options=rankeval.EvalOptions(docinfo=docs))
    assert (
        str(info.value)
        == f"{docs}:2: expected a non-negative number for cost= (the reading cost), found 'many'"
    )


# ------------------------------------------------------------------------------ measures
SENS_QRELS = """\
q1 0 a 2 sens=1
q1 0 b 1
q1 0 c 2
q1 0 d 0 sens=2
q1 1 d 1
q2 0 a 1 sens=1
q2 0 e 2
q2 0 f 0
q3 0 b 2
q3 0 d 1 sens=2
q3 0 g 0
"""
SENS_DOCS = "# sensitivity grades\na sens=1\nb\nd sens=2\nh sens=1\n"
SENS_RUN = (
    run_lines("q1", ["a", "u", "b", "d", "c"])
    + run_lines("q2", ["e", "a", "f"])
    + run_lines("q3", ["d", "g", "b", "h"])
)
CSDCG = [
    "CS-DCG@3",
    "CS-DCG@5",
    "nCS-DCG@3",
    "nCS-DCG@5",
    "nCS-DCG(bounds=greedy)@3",
    "CS-DCG-neg@3",
    "nCS-DCG(gain=linear,cost=5,agg=gmean)@4",
]


def test_sens_from_a_side_file_gives_the_same_csdcg_values(tmp_path):
    with_attrs = write(tmp_path / "with.qrels", SENS_QRELS)
    bare = write(tmp_path / "bare.qrels", without(SENS_QRELS, "sens"))
    docs = write(tmp_path / "docs.txt", SENS_DOCS)
    r = write(tmp_path / "t.run", SENS_RUN)
    judged_only = write(tmp_path / "judged.txt", SENS_DOCS.replace("h sens=1\n", ""))
    want = evaluate(with_attrs, r, CSDCG)
    assert evaluate(bare, r, CSDCG, options=rankeval.EvalOptions(docinfo=judged_only)) == pytest.approx(
        want, nan_ok=True
    )
    # h, unjudged in q3 and ranked 4th, costs its grade from the side file in the top 5 only
    got = evaluate(bare, r, CSDCG, options=rankeval.EvalOptions(docinfo=docs))
    assert got[("CS-DCG@5", "q3")] == pytest.approx(want[("CS-DCG@5", "q3")] - 12)
    assert got[("CS-DCG@3", "q3")] == pytest.approx(want[("CS-DCG@3", "q3")])
    # the side file changed something: without it, nothing is sensitive
    assert evaluate(bare, r, CSDCG) != pytest.approx(want, nan_ok=True)
    # the grade is the side file's, as in the qrels; the cost is not discounted. q2 ranks
    # e (rel 2), a (rel 1, sens 1), f: 3 + 1 / log2(3) - 12; q3 ranks d (rel 1, sens 2), g
    # (rel 0), b (rel 2), h: h is unjudged in q3, so its sens= is not used
    assert got[("CS-DCG@3", "q2")] == pytest.approx(3 + 1 / math.log2(3) - 12)
    assert got[("CS-DCG@3", "q3")] == pytest.approx(1 - 24 + 0 + 3 / 2)


PEOPLE_QRELS = """\
q1 0 alice 1
q1 0 bob 0
q1 0 carol 1
q1 0 alice/p1 0.5 cost=120
q1 0 alice/p2 0.2 cost=300
q1 0 bob/p1 0 cost=80
q1 0 bob/p2 0 cost=200
q1 0 carol/p1 0 cost=60
q1 0 carol/p2 1 cost=150
q1 1 carol/p2 0.5
q2 0 dave 1
q2 0 dave/p1 0.5 cost=40
"""
PEOPLE_RUN = """\
q1 Q0 alice 1 0.9 sys
q1 Q0 bob 2 0.8 sys
q1 Q0 carol 3 0.7 sys
q1 Q0 alice/p1 1 0.8 sys
q1 Q0 alice/p2 2 0.6 sys
q1 Q0 bob/p1 1 0.5 sys
q1 Q0 bob/p2 2 0.4 sys
q1 Q0 carol/p1 1 0.9 sys
q1 Q0 carol/p2 2 0.3 sys
q2 Q0 dave 1 1 sys
q2 Q0 dave/p1 1 1 sys
"""
PEOPLE_DOCS = """\
# posts: reading cost in words
alice/p1 cost=120
alice/p2 cost=300
bob/p1 cost=80
bob/p2 cost=200
carol/p1 cost=60
carol/p2 cost=150
dave/p1 cost=40
erin/p1 cost=10
"""
TBG = ["hTBG@h=60", "TBG@h=60", "nhTBG@h=60", "nTBG@h=60", "hTBG@h=60(ideal=true)", "hTBG@h=60(smax=2)"]


def test_cost_from_a_side_file_gives_the_same_tbg_values(tmp_path):
    with_attrs = write(tmp_path / "with.qrels", PEOPLE_QRELS)
    bare = write(tmp_path / "bare.qrels", without(PEOPLE_QRELS, "cost"))
    docs = write(tmp_path / "docs.txt", PEOPLE_DOCS)
    r = write(tmp_path / "t.run", PEOPLE_RUN)
    want = evaluate(with_attrs, r, TBG)
    # docs/tbg.md's worked example (q1 there has no second assessor on carol/p2, who has R = 1)
    assert want[("hTBG@1m", "q1")] == pytest.approx(0.4928 * (1 + 2 ** (-21.91 / 60)), abs=1e-4)
    assert evaluate(bare, r, TBG, options=rankeval.EvalOptions(docinfo=docs)) == want
    # without the side file the costs are missing: an error naming the post
    with pytest.raises(rankeval.RankevalError, match="no cost= attribute"):
        evaluate(bare, r, TBG)


def test_cost_on_the_qrels_wins_over_the_side_file(tmp_path):
    q = write(tmp_path / "t.qrels", PEOPLE_QRELS)
    docs = write(tmp_path / "docs.txt", PEOPLE_DOCS.replace("=", "=9"))  # all costs wrong
    r = write(tmp_path / "t.run", PEOPLE_RUN)
    assert evaluate(q, r, TBG, options=rankeval.EvalOptions(docinfo=docs)) == evaluate(q, r, TBG)


# ------------------------------------------------------------------------------ command line
def test_cli_docinfo_end_to_end(tmp_path):
    with_attrs = write(tmp_path / "with.qrels", SENS_QRELS)
    bare = write(tmp_path / "bare.qrels", without(SENS_QRELS, "sens"))
    docs = write(tmp_path / "docs.txt", SENS_DOCS.replace("h sens=1\n", ""))  # judged docs only
    r = write(tmp_path / "t.run", SENS_RUN)
    runner = CliRunner()
    args = [str(r), "-m", "nCS-DCG@5", "-m", "CS-DCG@5", "-q", "-p", "6"]
    want = runner.invoke(app, [str(with_attrs), *args])
    got = runner.invoke(app, [str(bare), *args, "--docinfo", str(docs)])
    assert want.exit_code == got.exit_code == 0, got.output
    assert got.stdout == want.stdout
    assert "CS-DCG@5              \tq3\t" in got.stdout
    plain = runner.invoke(app, [str(bare), *args])
    assert plain.stdout != want.stdout
    # the option is in the help text
    assert "--docinfo" in runner.invoke(app, ["evaluate", "--help"]).stdout


def test_cli_docinfo_with_tbg(tmp_path):
    bare = write(tmp_path / "bare.qrels", without(PEOPLE_QRELS, "cost"))
    docs = write(tmp_path / "docs.txt", PEOPLE_DOCS)
    r = write(tmp_path / "t.run", PEOPLE_RUN)
    result = CliRunner().invoke(app, [str(bare), str(r), "-m", "hTBG@h=60", "--docinfo", str(docs), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "hTBG@1m               \tq1\t0.8754"


# ------------------------------------------------------------------------------ unjudged items
def test_unjudged_post_takes_its_cost_from_the_side_file(tmp_path):
    """hTBG by hand: alice (at risk) has an unjudged post p2 that the run ranks first (R = 0,
    300 words) and a judged p1 (R = 0.5, 100 words); bob (at risk) has a judged post of R = 1
    whose 50 words come from the side file too. Alice first: E_alice = 300 + (1 - 0) * 100 =
    400 words, t_alice = 4.4 + 0.64 (0.018 * 400 + 7.8); bob gains after that time."""
    q = write(tmp_path / "t.qrels", "q 0 alice 1\nq 0 alice/p1 0.5\nq 0 bob 1\nq 0 bob/p1 1\n")
    r = write(tmp_path / "t.run", run_lines("q", ["alice", "alice/p2", "alice/p1", "bob", "bob/p1"]))
    docs = write(tmp_path / "docs.txt", "alice/p1 cost=100\nalice/p2 cost=300\nbob/p1 cost=50\n")
    t_alice = 4.4 + 0.64 * (0.018 * 400 + 7.8)
    got = evaluate(q, r, ["hTBG@h=60"], options=rankeval.EvalOptions(docinfo=docs))[("hTBG@1m", "q")]
    assert got == pytest.approx(0.64 * 0.77 * (1 + 2 ** (-t_alice / 60)), rel=1e-12)
    # without the side file: both unjudged and judged posts lack a cost, counted and named
    with pytest.raises(InputError, match=r"3 items have no cost= attribute \('alice/p2' \(query 'q'\)"):
        evaluate(q, r, ["hTBG@h=60"])


def test_unjudged_document_costs_its_sensitivity(tmp_path):
    """CS-DCG@3 by hand: d1 (rel 1) at rank 1 gains 1; unjudged d9 at rank 2 costs 12 * 2."""
    q = write(tmp_path / "t.qrels", "q1 0 d1 1\nq1 0 d2 0\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d1", "d9", "d2"]))
    docs = write(tmp_path / "docs.txt", "d9 sens=2\n")
    assert evaluate(q, r, ["CS-DCG@3"], options=rankeval.EvalOptions(docinfo=docs))[
        ("CS-DCG@3", "q1")
    ] == pytest.approx(1 - 24)
    assert evaluate(q, r, ["CS-DCG@3"])[("CS-DCG@3", "q1")] == pytest.approx(1)
    # the bounds stay those of the judged documents: below the worst, clamped to 0
    assert (
        evaluate(q, r, ["nCS-DCG@3"], options=rankeval.EvalOptions(docinfo=docs))[("nCS-DCG@3", "q1")] == 0.0
    )


def test_several_side_files_in_order_for_unjudged_items(tmp_path):
    """Precedence: the qrels lines, then the side files in the order given."""
    q = write(tmp_path / "t.qrels", "q1 0 d1 1 cost=5\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d2", "d3", "d1"]))
    a = write(tmp_path / "a.txt", "d1 cost=1000\nd2 cost=20\n")
    b = write(tmp_path / "b.txt", "d2 cost=999\nd3 cost=30\n")
    # TBG@h: T(d1) = 2 * 4.4 + 0.39 * (0.018 * (20 + 30) + 2 * 7.8); d1's own 5 words unread
    t = 2 * 4.4 + 0.39 * (0.018 * 50 + 2 * 7.8)
    for docinfo in ([a, b], (str(a), str(b))):
        got = evaluate(q, r, ["TBG@h=60"], options=rankeval.EvalOptions(docinfo=docinfo))
        assert got[("TBG@1m", "q1")] == pytest.approx(0.64 * 0.77 * 2 ** (-t / 60), rel=1e-12)
    qrels = rankeval.Qrels.read(q).with_docinfo([a, b])
    assert [name for name, _ in qrels.docinfo] == [str(a), str(b)]
    import pyarrow as pa

    costs = qrels.docinfo_number("cost", pa.array(["d1", "d2", "d3", "d4"]))
    assert costs[:3].tolist() == [1000, 20, 30] and math.isnan(costs[3])


def test_bad_value_for_an_unjudged_item_names_the_side_file(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1 cost=5\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d2", "d1"]))
    docs = write(tmp_path / "docs.txt", "d2 cost=long\n")
    with pytest.raises(InputError, match=r"docs.txt:1: expected a non-negative number for cost="):
        evaluate(q, r, ["TBG"], options=rankeval.EvalOptions(docinfo=docs))


def test_cli_repeated_docinfo(tmp_path):
    q = write(tmp_path / "t.qrels", "q1 0 d1 1 cost=5\n")
    r = write(tmp_path / "t.run", run_lines("q1", ["d2", "d3", "d1"]))
    a = write(tmp_path / "a.txt", "d2 cost=20\n")
    b = write(tmp_path / "b.txt", "d3 cost=30\n")
    args = [str(q), str(r), "-m", "TBG@h=60", "-f", "tsv"]
    both = CliRunner().invoke(app, [*args, "--docinfo", str(a), "--docinfo", str(b)])
    assert both.exit_code == 0, both.output
    one = CliRunner().invoke(app, [*args, "--docinfo", str(a)])
    assert one.exit_code != 0 and "1 item has no cost= attribute ('d3' (query 'q1'))" in one.output
