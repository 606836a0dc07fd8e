"""Readers of qrels and runs (docs: formats.md, Qrels and Runs): compression, comments, line endings, BOM,
whitespace, trailing columns, attributes, iteration, and the agreement of the fast and the
general run reader."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pandas as pd
import pytest

import rankeval
from rankeval.errors import InputError
from rankeval.io import fast_run
from rankeval.io import trec as rio
from rankeval.io.data import Run

DATA = Path(__file__).parent / "data"
TE = DATA / "trec_eval"
RUN_COLUMNS = ["query_id", "q0", "doc_id", "score", "tag"]
QRELS_COLUMNS = ["query_id", "iteration", "doc_id", "relevance", "line"]

COMPRESS = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def run_lists(run: rankeval.Run) -> dict[str, list]:
    return {c: run.table.column(c).to_pylist() for c in RUN_COLUMNS}


def qrels_lists(qrels: rankeval.Qrels) -> dict[str, list]:
    return {c: qrels.table.column(c).to_pylist() for c in qrels.table.column_names}


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


CLEAN_RUN = "1 Q0 d1 1 2.5 tagA\n1 Q0 d2 2 1.5 tagA\n2 Q0 d3 1 -0.25 tagA\n2 Q0 d1 2 1e3 tagA\n"
CLEAN_RUN_LISTS = {
    "query_id": ["1", "1", "2", "2"],
    "q0": ["Q0", "Q0", "Q0", "Q0"],
    "doc_id": ["d1", "d2", "d3", "d1"],
    "score": [2.5, 1.5, -0.25, 1000.0],
    "tag": ["tagA", "tagA", "tagA", "tagA"],
}


# --------------------------------------------------------------------- compression
@pytest.mark.parametrize("ext", sorted(COMPRESS))
@pytest.mark.parametrize("source", ["qrels.test", "qrels.rel_level"])
def test_compressed_qrels(tmp_path, ext, source) -> None:
    plain = TE / source
    packed = write(tmp_path / f"{source}.{ext}", COMPRESS[ext](plain.read_bytes()))
    a = rankeval.Qrels.read(plain)
    b = rankeval.Qrels.read(packed)
    assert len(a) == sum(1 for line in plain.read_text().splitlines() if line.strip())
    assert a.table.column_names == b.table.column_names == QRELS_COLUMNS
    assert qrels_lists(a) == qrels_lists(b)


@pytest.mark.parametrize("ext", sorted(COMPRESS))
@pytest.mark.parametrize("source", ["results.test", "results.trunc", "clean"])
def test_compressed_runs(tmp_path, ext, source) -> None:
    plain = write(tmp_path / "clean.run", CLEAN_RUN) if source == "clean" else TE / source
    packed = write(tmp_path / f"{plain.name}.{ext}", COMPRESS[ext](plain.read_bytes()))
    a = rankeval.Run.read(plain)
    b = rankeval.Run.read(packed)
    assert len(a) == len(b) == sum(1 for line in plain.read_text().splitlines() if line.strip())
    assert run_lists(a) == run_lists(b)
    if source == "clean":
        assert run_lists(b) == CLEAN_RUN_LISTS


def test_compression_detected_by_content_not_name(tmp_path) -> None:
    # a gzip file without .gz, and a plain file named .gz
    a = write(tmp_path / "packed.run", gzip.compress(CLEAN_RUN.encode()))
    b = write(tmp_path / "plain.run.gz", CLEAN_RUN)
    assert run_lists(rankeval.Run.read(a)) == CLEAN_RUN_LISTS
    assert run_lists(rankeval.Run.read(b)) == CLEAN_RUN_LISTS


def test_dl_hard_gzip_run() -> None:
    run = rankeval.Run.read(DATA / "dl-hard" / "bm25.run.gz")
    assert len(run) == 50000
    assert run.name == "bm25.run.gz"
    assert run.table.column("query_id")[0].as_py() == "915593"
    assert run.table.column("doc_id")[0].as_py() == "82107"
    assert run.table.column("score")[0].as_py() == 25.859501
    assert run.table.column("tag")[0].as_py() == "PYSERINI"


# --------------------------------------------------------------------- comments, endings, whitespace
QRELS_PLAIN = "1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n"


def test_qrels_comments_and_blank_lines(tmp_path) -> None:
    messy = "# judgments\n\n1 0 d1 1\n   # indented comment\n1 0 d2 0\n \t \n\n2 0 d3 2\n# end\n"
    q = rankeval.Qrels.read(write(tmp_path / "c.qrels", messy))
    assert q.table.column("query_id").to_pylist() == ["1", "1", "2"]
    assert q.table.column("doc_id").to_pylist() == ["d1", "d2", "d3"]
    assert q.table.column("relevance").to_pylist() == [1.0, 0.0, 2.0]
    assert q.table.column("line").to_pylist() == [3, 5, 8]  # original line numbers


def test_run_comments_and_blank_lines(tmp_path) -> None:
    messy = "# my run\n\n" + CLEAN_RUN.replace("2 Q0 d3", "\n# second query\n2 Q0 d3") + "\n\n"
    assert run_lists(rankeval.Run.read(write(tmp_path / "c.run", messy))) == CLEAN_RUN_LISTS


@pytest.mark.parametrize("variant", ["crlf", "bom", "bom+crlf"])
def test_crlf_and_bom(tmp_path, variant) -> None:
    run_text, qrels_text = CLEAN_RUN, QRELS_PLAIN
    if "crlf" in variant:
        run_text, qrels_text = run_text.replace("\n", "\r\n"), qrels_text.replace("\n", "\r\n")
    prefix = b"\xef\xbb\xbf" if "bom" in variant else b""
    run = rankeval.Run.read(write(tmp_path / "r.run", prefix + run_text.encode()))
    qrels = rankeval.Qrels.read(write(tmp_path / "q.qrels", prefix + qrels_text.encode()))
    assert run_lists(run) == CLEAN_RUN_LISTS
    assert qrels.table.column("query_id").to_pylist() == ["1", "1", "2"]
    assert qrels.table.column("doc_id").to_pylist() == ["d1", "d2", "d3"]
    assert qrels.table.column("relevance").to_pylist() == [1.0, 0.0, 2.0]


def test_crlf_bom_gzip_together(tmp_path) -> None:
    data = b"\xef\xbb\xbf" + CLEAN_RUN.replace("\n", "\r\n").encode()
    assert run_lists(rankeval.Run.read(write(tmp_path / "r.run.gz", gzip.compress(data)))) == CLEAN_RUN_LISTS


def test_mixed_whitespace(tmp_path) -> None:
    messy = (
        "1\tQ0\td1\t1\t2.5\ttagA\n"
        "   1  Q0   d2 2\t 1.5\ttagA   \n"
        "\t2 Q0 d3 1 -0.25 tagA\n"
        "2 \t Q0 \t d1   2   1e3   tagA\n"
    )
    assert run_lists(rankeval.Run.read(write(tmp_path / "m.run", messy))) == CLEAN_RUN_LISTS
    q = rankeval.Qrels.read(write(tmp_path / "m.qrels", "  1\t0  d1 1\n1 0\t\td2\t0   \n\t2 0 d3   2\n"))
    assert q.table.column("doc_id").to_pylist() == ["d1", "d2", "d3"]
    assert q.table.column("relevance").to_pylist() == [1.0, 0.0, 2.0]
    assert q.table.column("iteration").to_pylist() == ["0", "0", "0"]


def test_trailing_columns_ignored_results_trunc() -> None:
    """trec_eval's results.trunc has junk after the tag on some lines."""
    path = TE / "results.trunc"
    run = rankeval.Run.read(path)
    fields = [line.split() for line in path.read_text().splitlines() if line.strip()]
    assert any(len(f) > 6 for f in fields)  # the file really has trailing columns
    assert len(run) == len(fields) == 584
    assert run.table.column("query_id").to_pylist() == [f[0] for f in fields]
    assert run.table.column("doc_id").to_pylist() == [f[2] for f in fields]
    assert run.table.column("score").to_pylist() == [float(f[4]) for f in fields]
    assert set(run.table.column("tag").to_pylist()) == {"STANDARD"}


def test_trailing_columns_evaluate_like_trec_eval() -> None:
    """out.test.aqc is trec_eval -c -q -m all_trec on results.trunc."""
    ref = {}
    for line in (TE / "out.test.aqc").read_text().splitlines():
        m, q, v = line.split()
        ref[(m, q)] = v
    frame = rankeval.evaluate(TE / "qrels.test", TE / "results.trunc", ["AP", "P@5", "NumRet", "nDCG@10"])
    rows = zip(frame["query_id"], frame["measure"], frame["value"], strict=True)
    got = {m: v for q, m, v in rows if not isinstance(q, str)}
    assert f"{got['AP']:.4f}" == ref[("map", "all")] == "0.1016"
    assert f"{got['P@5']:.4f}" == ref[("P_5", "all")]
    assert f"{got['nDCG@10']:.4f}" == ref[("ndcg_cut_10", "all")]
    assert int(got["NumRet"]) == int(ref[("num_ret", "all")]) == 584


def test_scores_are_float64(tmp_path) -> None:
    text = (
        "1 Q0 a 1 0.1234567891 t\n1 Q0 b 2 0.1234567892 t\n1 Q0 c 3 +1.5 t\n"
        "1 Q0 d 4 .5 t\n1 Q0 e 5 1. t\n1 Q0 f 6 -2E-3 t\n"
    )
    table = rankeval.Run.read(write(tmp_path / "s.run", text)).table
    assert table.column("score").to_pylist() == [0.1234567891, 0.1234567892, 1.5, 0.5, 1.0, -0.002]
    assert str(table.schema.field("score").type) == "double"


# --------------------------------------------------------------------- qrels attributes, iteration
def test_qrels_attributes_become_columns(tmp_path) -> None:
    text = "1 0 d1 1 cost=120 sens=1\n1 0 d2 0\n1 0 d2/c1 0.25 cost=40\n2 0 d3 2 sens=0 note=a=b\n"
    q = rankeval.Qrels.read(write(tmp_path / "a.qrels", text))
    assert q.table.column_names[:5] == QRELS_COLUMNS
    assert sorted(q.attributes) == ["cost", "note", "sens"]
    assert q.table.column("cost").to_pylist() == ["120", None, "40", None]
    assert q.table.column("sens").to_pylist() == ["1", None, None, "0"]
    assert q.table.column("note").to_pylist() == [None, None, None, "a=b"]
    assert q.table.column("relevance").to_pylist() == [1.0, 0.0, 0.25, 2.0]
    frame = q.frame
    assert list(frame["doc_id"]) == ["d1", "d2", "d2/c1", "d3"]
    assert frame["cost"].isna().tolist() == [False, True, False, True]


def test_qrels_without_attributes_has_no_attribute_columns(tmp_path) -> None:
    q = rankeval.Qrels.read(write(tmp_path / "p.qrels", QRELS_PLAIN))
    assert q.attributes == []
    assert q.table.column_names == QRELS_COLUMNS


def test_qrels_reserved_attribute_name(tmp_path) -> None:
    with pytest.raises(InputError) as info:
        rankeval.Qrels.read(write(tmp_path / "r.qrels", "1 0 d1 1\n1 0 d2 1 relevance=3\n"))
    assert info.value.line == 2
    assert "'relevance' is reserved" in info.value.message


def test_qrels_iteration_kept(tmp_path) -> None:
    text = "1 0 d1 0\n1 1 d1 1\n1 Q0 d2 0\n2 assessorB d3 1\n"
    q = rankeval.Qrels.read(write(tmp_path / "i.qrels", text))
    assert q.table.column("iteration").to_pylist() == ["0", "1", "Q0", "assessorB"]
    assert q.table.column("doc_id").to_pylist() == ["d1", "d1", "d2", "d3"]
    # every classic measure uses the maximum grade over assessors: d1 is relevant
    run = write(tmp_path / "i.run", "1 Q0 d2 1 2 t\n1 Q0 d1 2 1 t\n2 Q0 d3 1 1 t\n")
    frame = rankeval.evaluate(q, run, ["AP", "NumRel"])
    got = {
        (m, qid if isinstance(qid, str) else None): v
        for qid, m, v in zip(frame["query_id"], frame["measure"], frame["value"], strict=True)
    }
    assert got[("AP", "1")] == 0.5
    assert got[("NumRel", "1")] == 1.0
    assert got[("AP", None)] == 0.75


def test_negative_and_float_relevance(tmp_path) -> None:
    q = rankeval.Qrels.read(write(tmp_path / "n.qrels", "1 0 d1 -1\n1 0 d2 0.75\n1 0 d3 3\n"))
    assert q.table.column("relevance").to_pylist() == [-1.0, 0.75, 3.0]


# --------------------------------------------------------------------- empty input
@pytest.mark.parametrize("content", ["", "# only a comment\n", "\n\n", "\xef\xbb\xbf"])
def test_empty_run_and_qrels(tmp_path, content) -> None:
    """A file without one content line is an error naming it (docs: formats.md, Error messages), not an empty table
    that would print nan for every measure."""
    with pytest.raises(rankeval.InputError, match="empty run") as info:
        rankeval.Run.read(write(tmp_path / "e.run", content.encode("latin-1")))
    assert info.value.source == str(tmp_path / "e.run")
    with pytest.raises(rankeval.InputError, match="no judgments") as info:
        rankeval.Qrels.read(write(tmp_path / "e.qrels", content.encode("latin-1")))
    assert info.value.source == str(tmp_path / "e.qrels")


# --------------------------------------------------------------------- DataFrame and dict
QRELS_TEXT = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 1\n2 0 y 1\n3 0 z 1\n"
RUN_TEXT = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 c 3 1 t\n2 Q0 y 1 5 t\n2 Q0 w 2 4 t\n9 Q0 z 1 1 t\n"
QRELS_DICT = {"1": {"a": 1, "b": 0, "c": 2}, "2": {"x": 1, "y": 1}, "3": {"z": 1}}
RUN_DICT = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"y": 5.0, "w": 4.0}, "9": {"z": 1.0}}
MEASURES = ["AP", "nDCG@10", "P@2", "RR", "NumRet", "Bpref", "R@1", "Rprec"]


@pytest.fixture
def from_files(tmp_path):
    q = write(tmp_path / "f.qrels", QRELS_TEXT)
    r = write(tmp_path / "f.run", RUN_TEXT)
    return rankeval.evaluate(q, {"r": r}, MEASURES)


def test_file_results_are_the_expected_ones(from_files) -> None:
    got = {
        (m, q if isinstance(q, str) else None): v
        for q, m, v in zip(from_files["query_id"], from_files["measure"], from_files["value"], strict=True)
    }
    assert got[("AP", "1")] == pytest.approx(5 / 6)
    assert got[("AP", "2")] == 0.5
    assert got[("AP", "3")] == 0.0
    assert got[("NumRet", None)] == 5.0
    assert ("AP", "9") not in got
    assert len(from_files) == len(MEASURES) * 4


def test_from_dict_equals_file(from_files) -> None:
    qrels = rankeval.Qrels.from_dict(QRELS_DICT)
    frame = rankeval.evaluate(qrels, {"r": rankeval.Run.from_dict(RUN_DICT)}, MEASURES)
    pd.testing.assert_frame_equal(frame, from_files)
    # plain dicts are accepted directly
    frame = rankeval.evaluate(QRELS_DICT, {"r": rankeval.Run.from_dict(RUN_DICT, name="r")}, MEASURES)
    pd.testing.assert_frame_equal(frame, from_files)


def test_from_frame_equals_file(from_files) -> None:
    qrels = pd.DataFrame(
        [(int(q), d, r) for q, docs in QRELS_DICT.items() for d, r in docs.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    run = pd.DataFrame(
        [(int(q), d, s) for q, docs in RUN_DICT.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    frame = rankeval.evaluate(rankeval.Qrels.from_frame(qrels), {"r": rankeval.Run.from_frame(run)}, MEASURES)
    pd.testing.assert_frame_equal(frame, from_files)
    frame = rankeval.evaluate(qrels, {"r": run}, MEASURES)
    pd.testing.assert_frame_equal(frame, from_files)


def test_from_frame_keeps_attributes_and_iteration() -> None:
    frame = pd.DataFrame(
        {
            "query_id": ["1", "1"],
            "iteration": ["0", "7"],
            "doc_id": ["a", "b"],
            "relevance": [1, 0],
            "cost": [10.0, None],
        }
    )
    q = rankeval.Qrels.from_frame(frame)
    assert q.table.column("iteration").to_pylist() == ["0", "7"]
    assert q.attributes == ["cost"]
    assert q.table.column("cost").to_pylist() == ["10.0", None]


def test_run_frame_round_trip(tmp_path) -> None:
    run = rankeval.Run.read(write(tmp_path / "rt.run", CLEAN_RUN))
    again = rankeval.Run.from_frame(run.frame, name="x")
    assert run_lists(again) == CLEAN_RUN_LISTS


# --------------------------------------------------------------------- fast path == general path
MESSY_RUNS = {
    "tabs": CLEAN_RUN.replace(" ", "\t"),
    "double-spaces": CLEAN_RUN.replace(" ", "  "),
    "leading-space": "".join(" " + line + "\n" for line in CLEAN_RUN.splitlines()),
    "trailing-space": "".join(line + " \n" for line in CLEAN_RUN.splitlines()),
    "crlf": CLEAN_RUN.replace("\n", "\r\n"),
    "comments": "# a run\n" + CLEAN_RUN + "# the end\n",
    "blank-lines": "\n" + CLEAN_RUN.replace("\n", "\n\n"),
    "extra-columns": CLEAN_RUN.replace("tagA\n", "tagA junk 1 2\n"),
    "no-final-newline": CLEAN_RUN.rstrip("\n"),
    "bom": "\ufeff" + CLEAN_RUN,
}


@pytest.mark.parametrize("variant", sorted(MESSY_RUNS))
def test_clean_and_messy_runs_agree(tmp_path, variant) -> None:
    clean = write(tmp_path / "clean.run", CLEAN_RUN)
    messy = write(tmp_path / "messy.run", MESSY_RUNS[variant])
    fast = getattr(rio, "_run_fast", None)
    if fast is not None:  # the clean file really takes the fast path
        assert fast(clean) is not None
    assert run_lists(rankeval.Run.read(clean)) == CLEAN_RUN_LISTS
    assert run_lists(rankeval.Run.read(messy)) == CLEAN_RUN_LISTS


def _big_clean(sep: str = " ") -> str:
    """A clean run well past the fast reader's 64 KiB sniffing window (~170 kB)."""
    return "".join(f"{i % 97}{sep}Q0{sep}doc{i}{sep}{i}{sep}{i}.25{sep}tag\n" for i in range(6000))


TAILS = {
    # (separator of the clean head, messy tail line(s), expected extra rows)
    "blank-line": (" ", "\n7 Q0 zz 1 1.0 tag\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "comment": (" ", "# a b c 1 e\n7 Q0 zz 1 1.0 tag\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "tab-junk": (" ", "7 Q0 zz 1 1.0 tag\tjunk\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "double-space": (" ", "7 Q0  zz 1 1.0 tag\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "extra-column": (" ", "7 Q0 zz 1 1.0 tag junk\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "crlf": (" ", "7 Q0 zz 1 1.0 tag\r\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "tab-leading-space": ("\t", " 7\tQ0\tzz\t1\t1.0\ttag\n", [("7", "Q0", "zz", 1.0, "tag")]),
    "tab-trailing-space": ("\t", "7\tQ0\tzz\t1\t1.0\ttag \n", [("7", "Q0", "zz", 1.0, "tag")]),
    "tab-space-junk": ("\t", "7\tQ0\tzz\t1\t1.0\ttag junk\n", [("7", "Q0", "zz", 1.0, "tag")]),
}


@pytest.mark.parametrize("variant", sorted(TAILS))
def test_large_clean_head_messy_tail(tmp_path, variant) -> None:
    """A file that looks clean at its start but is messy further on reads the same as the
    same content read by the general reader (here: gzip-compressed)."""
    sep, tail, extra = TAILS[variant]
    head = _big_clean(sep)
    text = head + tail
    plain = write(tmp_path / "big.run", text)
    packed = write(tmp_path / "big.run.gz", gzip.compress(text.encode()))
    expected = {c: [] for c in RUN_COLUMNS}
    for line in head.splitlines():
        qid, q0, doc, _, score, tag = line.split(sep)
        for c, v in zip(RUN_COLUMNS, (qid, q0, doc, float(score), tag), strict=True):
            expected[c].append(v)
    for row in extra:
        for c, v in zip(RUN_COLUMNS, row, strict=True):
            expected[c].append(v)
    n = len(extra) + 1

    def tail(lists: dict[str, list]) -> list[tuple]:
        return list(zip(*(lists[c][-n:] for c in RUN_COLUMNS), strict=True))

    general = run_lists(rankeval.Run.read(packed))
    assert tail(general) == tail(expected)
    assert general == expected
    got = run_lists(rankeval.Run.read(plain))
    assert len(got["query_id"]) == len(expected["query_id"])
    assert tail(got) == tail(expected)
    assert got == expected


def test_non_numeric_score_in_clean_file_is_an_error(tmp_path) -> None:
    """A clean (fast-path) file must not turn words such as N/A or NULL into missing scores."""
    for word in ("N/A", "NULL", "null", "NA"):
        path = write(tmp_path / "na.run", f"1 Q0 d1 1 2.0 t\n1 Q0 d2 2 {word} t\n")
        with pytest.raises(InputError) as info:
            rankeval.Run.read(path)
        assert info.value.line == 2, word
        assert f"found '{word}'" in info.value.message


def test_stdin_name(monkeypatch) -> None:
    import io as pyio

    class FakeStdin:
        buffer = pyio.BytesIO(CLEAN_RUN.encode())

    monkeypatch.setattr("sys.stdin", FakeStdin())
    run = rankeval.Run.read("-")
    assert run.name == "stdin"
    assert run_lists(run) == CLEAN_RUN_LISTS


def test_line_of_maps_rows_to_source_lines(tmp_path) -> None:
    path = write(tmp_path / "l.run", "# c\n\n" + CLEAN_RUN)
    run = Run.read(path)
    assert run.line_of(0) == (3, "1 Q0 d1 1 2.5 tagA")
    assert run.line_of(3) == (6, "2 Q0 d1 2 1e3 tagA")


def test_compact_encodes_constant_and_varying_string_columns() -> None:
    import pyarrow as pa

    const = pa.chunked_array([pa.array(["Q0", "Q0"]), pa.array(["Q0"])])
    out = fast_run._compact(const)
    assert out.to_pylist() == ["Q0", "Q0", "Q0"] and out.dictionary.to_pylist() == ["Q0"]
    # same length, different bytes; and a different length: both must be encoded exactly
    for values in (["ab", "ab", "ba"], ["é", "é", "ée"], ["1", "0", "1"]):
        col = pa.chunked_array([pa.array(values[:2]), pa.array(values[2:])])
        assert fast_run._compact(col).to_pylist() == values
