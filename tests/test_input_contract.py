"""The input contract: every class of bad input file is one clear error, from the library
and from the command line (exit 1, ``rankeval: error: <file>:<line>: ...``, no traceback,
no output file), and the readers' costs stay bounded (long lines, decompression bombs,
memory exhaustion, long ids). What each class is: ``docs/formats.md`` and the docstring of
:mod:`rankeval.io.trec`."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError, RankevalError, ResourceError
from rankeval.io import inputs
from rankeval.io.trec import MAX_LINE, parse_run
from rankeval.ranking.duplicates import check_duplicates

QRELS = b"1 0 d1 1\n1 0 d2 0\n1 0 d3 2\n2 0 d4 1\n"
RUN = b"1 Q0 d1 1 3.0 tag\n1 Q0 d2 2 2.0 tag\n1 Q0 d3 3 1.0 tag\n2 Q0 d4 1 1.0 tag\n"
DOCINFO = b"d1 cost=10\nd2 cost=20\n"
TRUTH = {"q1": {"u1": [1, {"p1": [0.2, 56], "p2": [0.1, 194]}], "u2": [0, {"p1": [0.0, 35]}]}}
PREDICTION = {"q1": {"u1": [0.56, {"p1": 0.6, "p2": 0.4}], "u2": [0.45, {"p1": 0.1}]}}

DIRECTORY, MISSING = "<a directory>", "<missing>"


def js(value: object) -> bytes:
    return json.dumps(value).encode()


def nested(depth: int) -> bytes:
    return b'{"q1": ' + b"[" * depth + b"]" * depth + b"}"


# (name, content, argument, exit code, words the message contains, line)
# argument: which input the content is given as: qrels, run, docinfo, truth (JSON qrels)
# or prediction (JSON run); the other inputs are good files
CASES: list[tuple[str, bytes | str, str, int, list[str], int | None]] = [
    # ---- empty or judgment-less
    ("empty qrels", b"", "qrels", 1, ["no judgments", "empty"], None),
    ("whitespace-only qrels", b"  \n\t\n\n", "qrels", 1, ["no judgments", "blank"], None),
    (
        "comment-only qrels",
        b"# judged by nobody\n\n# still nobody\n",
        "qrels",
        1,
        ["no judgments", "comments"],
        None,
    ),
    ("BOM-only qrels", b"\xef\xbb\xbf", "qrels", 1, ["no judgments"], None),
    ("empty gzip qrels", gzip.compress(b""), "qrels", 1, ["no judgments"], None),
    ("empty run", b"", "run", 1, ["empty run"], None),
    ("comment-only run", b"# no run\n", "run", 1, ["empty run", "comments"], None),
    ("empty truth JSON", b"{}", "truth", 1, ["no judgments"], None),
    ("truth JSON without individuals", b'{"q1": {}}', "truth", 1, ["no judgments"], None),
    ("empty prediction JSON", b"{}", "prediction", 1, ["empty run"], None),
    # ---- NaN scores (fast path, general path, compressed fast path, JSON)
    ("NaN score, clean run", b"1 Q0 d1 1 3 t\n1 Q0 d2 2 nan t\n", "run", 1, ["NaN"], 2),
    ("NaN score, messy run", b"1 Q0 d1 1 3 t\n\n1  Q0 d2 2 -nan t\n", "run", 1, ["NaN"], 3),
    ("NaN score, gzip run", gzip.compress(b"1 Q0 d1 1 3 t\n1 Q0 d2 2 NaN t\n"), "run", 1, ["NaN"], 2),
    ("NaN score, xz run", lzma.compress(b"1\tQ0\td1\t1\t3\tt\n1\tQ0\td2\t2\tnan\tt\n"), "run", 1, ["NaN"], 2),
    (
        "NaN score, JSON",
        b'{"q1": {"u1": [NaN, {"p1": 0.6}]}}',
        "prediction",
        1,
        ["NaN", '$["q1"]["u1"][0]'],
        None,
    ),
    # ---- non-finite relevance
    ("relevance nan", b"1 0 d1 1\n1 0 d2 nan\n", "qrels", 1, ["finite", "relevance"], 2),
    ("relevance inf", b"1 0 d1 inf\n", "qrels", 1, ["finite"], 1),
    ("relevance -inf", b"1 0 d1 1\n\n1 0 d2 -inf\n", "qrels", 1, ["finite"], 3),
    ("relevance 1e999", b"1 0 d1 1e999\n", "qrels", 1, ["finite"], 1),
    (
        "stop probability Infinity",
        b'{"q1": {"u1": [1, {"p1": [Infinity, 3]}]}}',
        "truth",
        1,
        ["finite"],
        None,
    ),
    # ---- relevance beyond the grades' exact range (32-bit integers; see docs/formats.md)
    ("relevance 1e19", b"1 0 d1 1\n1 0 d2 1e19\n", "qrels", 1, ["[-2147483648, 2147483647]", "'1e19'"], 2),
    ("relevance 1.7e308", b"1 0 d1 1.7e308\n", "qrels", 1, ["[-2147483648, 2147483647]"], 1),
    ("relevance 2**31", b"1 0 d1 2147483648\n", "qrels", 1, ["[-2147483648, 2147483647]"], 1),
    ("relevance -2**31-1", b"1 0 d1 -2147483649\n", "qrels", 1, ["[-2147483648, 2147483647]"], 1),
    ("JSON label 1e19", b'{"q1": {"u1": [1e19, {}]}}', "truth", 1, ['$["q1"]["u1"][0]', "2147483647]"], None),
    (
        "JSON stop probability 1.7e308",
        b'{"q1": {"u1": [1, {"p1": [1.7e308, 3]}]}}',
        "truth",
        1,
        ['$["q1"]["u1"][1]["p1"][0]', "2147483647]"],
        None,
    ),
    # ---- the same judgment twice
    (
        "repeated judgment",
        b"1 0 d1 1\n1 0 d2 0\n1 0 d1 0\n",
        "qrels",
        1,
        ["given twice", "line 1", "'d1'"],
        3,
    ),
    (
        "repeated key in JSON",
        b'{"q1": {"u1": [1, {}], "u1": [0, {}]}}',
        "truth",
        1,
        ["given twice", "u1"],
        None,
    ),
    (
        "one item twice in JSON",
        js({"q1": {"u1/p1": [1, {}], "u1": [1, {"p1": [0.5, 3]}]}}),
        "truth",
        1,
        ["already given", '$["q1"]["u1/p1"]'],
        None,
    ),
    # ---- control bytes in ids
    ("NUL in a qrels doc id", b"1 0 d1 1\n1 0 d\x002 1\n", "qrels", 1, ["control character \\x00"], 2),
    ("control byte in a run doc id", b"1 Q0 d\x01 1 3 t\n", "run", 1, ["control character \\x01"], 1),
    ("DEL in a query id", b"1 Q0 d1 1 3 t\n1\x7f Q0 d2 2 2 t\n", "run", 1, ["control character \\x7f"], 2),
    ("escape in a run tag", b"1\tQ0\td1\t1\t3\tt\x1b[0m\n", "run", 1, ["control character \\x1b"], 1),
    ("NUL in the iteration", b"1 0\x00 d1 1\n", "qrels", 1, ["control character"], 1),
    ("NUL in a docinfo docno", b"d1 cost=1\nd\x002 cost=2\n", "docinfo", 1, ["control character"], 2),
    ("control byte in a JSON id", b'{"q1": {"u\\u0001": [1, {}]}}', "truth", 1, ["control character"], None),
    # ---- encodings
    ("UTF-16 qrels with BOM", QRELS.decode().encode("utf-16"), "qrels", 1, ["UTF-16", "UTF-8"], 1),
    ("UTF-16 run without BOM", RUN.decode().encode("utf-16-le"), "run", 1, ["UTF-16", "UTF-8"], 1),
    ("UTF-32 run", RUN.decode().encode("utf-32"), "run", 1, ["UTF-32"], 1),
    ("invalid UTF-8 in a run", b"1 Q0 d1 1 3 t\n1 Q0 caf\xe9 2 2 t\n", "run", 1, ["not valid UTF-8"], 2),
    ("invalid UTF-8 in docinfo", b"d1 cost=1\nd\xff cost=2\n", "docinfo", 1, ["not valid UTF-8"], 2),
    ("UTF-16 truth JSON", json.dumps(TRUTH).encode("utf-16"), "truth", 1, ["UTF-16"], 1),
    ("invalid UTF-8 in JSON", b'{"q1": {"u\xff": [1, {}]}}', "truth", 1, ["not valid UTF-8"], 1),
    # ---- unpaired surrogates: encoded (not UTF-8), or a JSON escape (valid JSON, no text)
    ("encoded surrogate in qrels", b"1 0 d1 1\n1 0 d\xed\xa0\x80 1\n", "qrels", 1, ["not valid UTF-8"], 2),
    (
        "encoded surrogate, clean run",
        b"1 Q0 d1 1 3 t\n1 Q0 \xed\xb0\x80 2 2 t\n",
        "run",
        1,
        ["not valid UTF-8"],
        2,
    ),
    (
        "encoded surrogate, gzip run",
        gzip.compress(b"1\tQ0\td1\t1\t3\tt\n1\tQ0\td2\t2\t2\t\xed\xa0\x80\n"),
        "run",
        1,
        ["not valid UTF-8"],
        2,
    ),
    (
        "encoded surrogate in docinfo",
        b"d1 cost=1\nd\xed\xbf\xbf cost=2\n",
        "docinfo",
        1,
        ["not valid UTF-8"],
        2,
    ),
    (
        "surrogate escape in a JSON individual",
        b'{"q1": {"\\ud800": [1, {}]}}',
        "truth",
        1,
        ["unpaired surrogate", '$["q1"]["\\ud800"]'],
        None,
    ),
    (
        "surrogate escape in a JSON document",
        b'{"q1": {"u1": [1, {"p\\udfff": 0.5}]}}',
        "prediction",
        1,
        ["unpaired surrogate", '$["q1"]["u1"][1]["p\\udfff"]'],
        None,
    ),
    # ---- JSON
    ("malformed JSON", b'{"q1": {"u1": [1, {}]}\n,}', "truth", 1, ["not valid JSON"], 2),
    ("JSON nested too deeply", nested(100_000), "prediction", 1, ["nested too deeply"], None),
    ("JSON list at the top", b"[1, 2]", "truth", 1, ["expected a JSON object", "$"], None),
    ("JSON query not an object", b'{"q1": [1]}', "truth", 1, ["expected an object", '$["q1"]'], None),
    (
        "JSON individual not a pair",
        b'{"q1": {"u1": [1]}}',
        "prediction",
        1,
        ['$["q1"]["u1"]', "expected ["],
        None,
    ),
    ("JSON documents not an object", b'{"q1": {"u1": [1, [2]]}}', "truth", 1, ['$["q1"]["u1"][1]'], None),
    ("JSON label a string", b'{"q1": {"u1": ["1", {}]}}', "truth", 1, ["expected a number", "[0]"], None),
    (
        "JSON integer of 5000 digits",
        b'{"q1": {"u1": [' + b"7" * 5000 + b", {}]}}",
        "truth",
        1,
        ["finite"],
        None,
    ),
    ("JSON number too large", b'{"q1": {"u1": [1' + b"0" * 400 + b", {}]}}", "truth", 1, ["finite"], None),
    # ---- compressed data
    (
        "truncated gzip",
        gzip.compress(RUN * 50)[:-30],
        "run",
        1,
        ["corrupt compressed file", "truncated"],
        None,
    ),
    # past the 64 KiB the fast path sniffs: the error comes from inside pyarrow's CSV reader
    ("truncated gzip, long run", gzip.compress(RUN * 20_000)[:-100], "run", 1, ["corrupt compressed"], None),
    ("truncated bzip2", bz2.compress(RUN * 50)[:-30], "run", 1, ["corrupt compressed file"], None),
    ("truncated xz", lzma.compress(RUN * 50)[:-30], "qrels", 1, ["corrupt compressed file"], None),
    (
        "gzip then garbage",
        gzip.compress(RUN) + b"garbage",
        "run",
        1,
        ["corrupt compressed file", "after"],
        None,
    ),
    ("bzip2 then garbage", bz2.compress(QRELS) + b"garbage", "qrels", 1, ["corrupt compressed file"], None),
    ("xz then garbage", lzma.compress(RUN) + b"garbage", "run", 1, ["corrupt compressed file"], None),
    (
        "gzip header, deflate garbage",
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"junk" * 20,
        "run",
        1,
        ["corrupt"],
        None,
    ),
    (
        "gzip, one byte flipped",
        (lambda z: z[:40] + bytes([z[40] ^ 0xFF]) + z[41:])(gzip.compress(RUN * 9)),
        "run",
        1,
        ["corrupt"],
        None,
    ),
    ("truncated gzip docinfo", gzip.compress(DOCINFO * 20)[:-9], "docinfo", 1, ["corrupt compressed"], None),
    ("truncated gzip JSON", gzip.compress(js(TRUTH))[:-9], "truth", 1, ["corrupt compressed"], None),
    # ---- paths
    ("qrels is a directory", DIRECTORY, "qrels", 1, ["is a directory"], None),
    ("run is a directory", DIRECTORY, "run", 1, ["is a directory"], None),
    ("docinfo is missing", MISSING, "docinfo", 1, ["file not found"], None),
    ("run is missing", MISSING, "run", 1, ["file not found"], None),
    # ---- lines over the limit
    (
        "long line in qrels",
        b"1 0 d1 1\n1 0 " + b"x" * (MAX_LINE + 1) + b" 1\n",
        "qrels",
        1,
        ["over the limit", "1 MiB"],
        2,
    ),
    (
        "long doc id, clean run",
        b"1 Q0 d1 1 3 t\n1 Q0 " + b"y" * MAX_LINE + b" 2 2 t\n",
        "run",
        1,
        ["over the limit"],
        2,
    ),
    (
        "long score, clean run",
        b"1 Q0 d1 1 3 t\n1 Q0 d2 2 1" + b"0" * MAX_LINE + b" t\n",
        "run",
        1,
        ["over the limit"],
        2,
    ),
    ("long line, no newline", b"z" * (3 * MAX_LINE), "docinfo", 1, ["over the limit"], 1),
    # ---- other bad lines a fuzzer finds
    (
        "too many attribute names",
        b"".join(b"1 0 d%d 1 k%d=1\n" % (i, i) for i in range(150)),
        "qrels",
        1,
        ["more than 100"],
        101,
    ),
    ("swapped run columns", b"1 Q0 d1 3.0 1 tag\n1 d2 Q0 2 x tag\n", "run", 1, ["expected a number"], 2),
]


def materialise(tmp_path: Path, name: str, content: bytes | str, suffix: str) -> Path:
    path = tmp_path / f"bad{suffix}"
    if content == DIRECTORY:
        path.mkdir()
    elif content != MISSING:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    return path


SUFFIX = {"qrels": ".qrels", "run": ".run", "docinfo": ".docinfo", "truth": ".json", "prediction": ".json"}


def arguments(tmp_path: Path, which: str, bad: Path) -> tuple[Path, Path, Path | None]:
    """(qrels, run, docinfo) with *bad* as argument *which* and good files elsewhere."""
    if which in ("truth", "prediction"):
        truth, prediction = tmp_path / "good.truth.json", tmp_path / "good.prediction.json"
        truth.write_bytes(js(TRUTH))
        prediction.write_bytes(js(PREDICTION))
        return (bad, prediction, None) if which == "truth" else (truth, bad, None)
    qrels, run = tmp_path / "good.qrels", tmp_path / "good.run"
    qrels.write_bytes(QRELS)
    run.write_bytes(RUN)
    docinfo = None
    if which == "docinfo":
        docinfo = bad
    elif which == "qrels":
        qrels = bad
    else:
        run = bad
    return qrels, run, docinfo


def invoke(args: list[object], **kwargs: object):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, [str(a) for a in args], **kwargs)


def assert_clean_cli_failure(result, exit_code: int = 1) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == exit_code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.output.startswith("rankeval: error: "), result.output
    return str(result.output)


@pytest.mark.parametrize(
    ("name", "content", "which", "code", "words", "line"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_input(
    tmp_path: Path, name: str, content: bytes | str, which: str, code: int, words: list[str], line: int | None
) -> None:
    bad = materialise(tmp_path, name, content, SUFFIX[which])
    qrels, run, docinfo = arguments(tmp_path, which, bad)
    # the library
    with pytest.raises(RankevalError) as info:
        rankeval.evaluate(qrels, run, ["AP"], options=rankeval.EvalOptions(docinfo=docinfo))
    error = info.value
    assert isinstance(error, (InputError, ResourceError)), repr(error)
    assert error.exit_code == code
    assert error.source == str(bad)
    assert error.line == line
    for word in words:
        assert word in str(error), (word, str(error))
    assert len(str(error)) < 800
    # the command line
    out = tmp_path / "out.txt"
    args: list[object] = [qrels, run, "-m", "AP", "-o", out]
    if docinfo is not None:
        args += ["--docinfo", docinfo]
    message = assert_clean_cli_failure(invoke(args), code)
    where = f"{bad}:{line}:" if line is not None else f"{bad}: "
    assert message.startswith(f"rankeval: error: {where}"), message
    for word in words:
        assert word in message, (word, message)
    assert not out.exists()


# --------------------------------------------------------------------- what stays valid
def test_infinite_scores_are_valid_and_ranked_as_extremes(tmp_path: Path) -> None:
    run = tmp_path / "inf.run"
    run.write_bytes(b"1 Q0 d1 1 -inf t\n1 Q0 d2 2 1e999 t\n1 Q0 d3 3 0.5 t\n1 Q0 d4 4 Infinity t\n")
    qrels = tmp_path / "q"
    qrels.write_bytes(b"1 0 d1 1\n")
    scores = rankeval.Run.read(run).table.column("score").to_pylist()
    assert scores == [-np.inf, np.inf, 0.5, np.inf]
    # d1 (-inf) is last of four: RR = 1/4
    assert rankeval.evaluate(qrels, run, ["RR"]).value.tolist() == [0.25, 0.25]


def test_other_assessor_on_the_same_document_is_valid(tmp_path: Path) -> None:
    qrels = tmp_path / "q"
    qrels.write_bytes(b"1 0 d1 1\n1 1 d1 0\n1 0 d2 1\n")
    assert len(rankeval.Qrels.read(qrels)) == 3


def test_in_memory_qrels_are_checked_like_files() -> None:
    frame = pd.DataFrame({"query_id": ["1", "1", "1"], "doc_id": ["a", "b", "a"], "relevance": [1, 0, 2]})
    with pytest.raises(InputError, match=r"given twice \(first on row 1\).*\(row 3\)"):
        rankeval.Qrels.from_frame(frame)
    frame["iteration"] = ["0", "0", "1"]  # another assessor: fine
    assert len(rankeval.Qrels.from_frame(frame)) == 3
    with pytest.raises(InputError, match="finite"):
        rankeval.Qrels.from_dict({"1": {"a": float("inf")}})
    with pytest.raises(InputError, match="NaN"):
        rankeval.Run.from_dict({"1": {"a": float("nan")}})


# --------------------------------------------------------------------- unreadable files
@pytest.mark.parametrize("which", ["qrels", "run", "docinfo", "truth"])
def test_unreadable_file_is_one_error_whoever_opens_it(tmp_path: Path, monkeypatch, which: str) -> None:
    """Permission denied is reported by the shared error handling, even where a sniffer (is
    it JSON? is it compressed? is the fast path possible?) is the first to open the file."""
    good = {"qrels": QRELS, "run": RUN, "docinfo": DOCINFO, "truth": js(TRUTH)}[which]
    bad = materialise(tmp_path, which, good, SUFFIX[which] if which != "truth" else ".txt")
    qrels, run, docinfo = arguments(tmp_path, which, bad)
    if os.geteuid() == 0:  # root reads a chmod 000 file: make open() refuse it instead
        real_open = open

        def refusing_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(file) == str(bad):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(inputs, "open", refusing_open, raising=False)
        monkeypatch.setattr(pa, "OSFile", lambda path, *a, **k: refusing_open(path, "rb"))
    else:
        bad.chmod(0)
    with pytest.raises(InputError) as info:
        rankeval.evaluate(qrels, run, ["AP"], options=rankeval.EvalOptions(docinfo=docinfo))
    assert info.value.source == str(bad)
    assert "permission denied" in info.value.message
    args: list[object] = [qrels, run, "-m", "AP"] + (["--docinfo", docinfo] if docinfo else [])
    message = assert_clean_cli_failure(invoke(args))
    assert f"{bad}: permission denied" in message


def test_empty_stdin_run() -> None:
    """``rankeval - -``: the qrels take stdin, the run finds it empty."""
    message = assert_clean_cli_failure(invoke(["-", "-", "-m", "AP"], input=QRELS.decode()))
    assert "<stdin>: empty run" in message
    assert "read only once" in message


# --------------------------------------------------------------------- resources
def test_long_line_is_echoed_briefly(tmp_path: Path) -> None:
    run = tmp_path / "long.run"
    run.write_bytes(b"1 Q0 d1 1 3 t\n1 Q0 " + b"w" * (20 << 20) + b" 2 2 t\n")
    qrels = tmp_path / "q"
    qrels.write_bytes(QRELS)
    result = invoke([qrels, run, "-m", "AP"])
    message = assert_clean_cli_failure(result)
    assert f"{run}:2: line of 20,971,531 bytes, over the limit" in message
    assert len(message) - len(str(run)) < 300


def test_decompression_bomb(tmp_path: Path, monkeypatch) -> None:
    """A stream that decompresses to more than the memory available stops there."""
    monkeypatch.setattr(inputs, "memory_available", lambda: 1 << 20)
    bomb = tmp_path / "bomb.run.gz"
    bomb.write_bytes(gzip.compress(b"1 Q0 d 1 1 t\n" * 400_000, 9))  # 5.2 MB in 24 kB
    qrels = tmp_path / "q"
    qrels.write_bytes(QRELS)
    with pytest.raises(ResourceError) as info:
        rankeval.Run.read(bomb)
    assert info.value.source == str(bomb)
    # the engine streams a compressed run block by block (memory bounded by the block size,
    # not by the decompressed size): the bomb is read until its first bad line
    message = assert_clean_cli_failure(
        invoke([qrels, bomb, "-m", "AP", "--jobs", "1", "--block-size", "65536"])
    )
    assert f"{bomb}:2: duplicate document 'd'" in message
    assert message.count("\n") == 2  # the message and the line


@pytest.mark.parametrize("error", [MemoryError, pa.ArrowMemoryError])
@pytest.mark.parametrize("which", ["qrels", "run"])
def test_memory_exhaustion(tmp_path: Path, monkeypatch, error: type[Exception], which: str) -> None:
    import pyarrow.csv

    real = pyarrow.csv.read_csv

    def exhausted(*args: object, read_options: pyarrow.csv.ReadOptions, **kwargs: object) -> pa.Table:
        # the run's fast path reads six named columns, the general path (qrels) one: "line"
        if (len(read_options.column_names) == 6) == (which == "run"):
            raise error("malloc of 8589934592 bytes failed")
        return real(*args, read_options=read_options, **kwargs)

    monkeypatch.setattr(pyarrow.csv, "read_csv", exhausted)
    qrels, run, _ = arguments(tmp_path, which, tmp_path / "big")
    (tmp_path / "big").write_bytes(QRELS if which == "qrels" else RUN)
    with pytest.raises(ResourceError) as info:
        rankeval.evaluate(qrels, run, ["AP"])
    assert f"out of memory while reading the {which} ({len(QRELS if which == 'qrels' else RUN)} bytes" in str(
        info.value
    )
    message = assert_clean_cli_failure(invoke([qrels, run, "-m", "AP"]))
    assert message.count("\n") == 1
    assert "more memory" in message
    if which == "run":
        assert "lower --block-size" in message


def test_gzip_run_takes_the_fast_path(tmp_path: Path, monkeypatch) -> None:
    """A gzipped clean run streams into pyarrow's CSV reader (its memory stays that of the
    uncompressed run) instead of being decompressed whole and split in Python."""
    from rankeval.io import trec as io

    path = tmp_path / "r.gz"
    path.write_bytes(gzip.compress(RUN * 3000))
    monkeypatch.setattr(io, "parse_run", lambda *a, **k: pytest.fail("general path taken"))
    table, lines = io.read_run_table(path)
    assert table.num_rows == 4 * 3000
    assert lines is None


def test_dask_blocks_name_their_lines() -> None:
    """The Dask engine parses blocks with ``parse_run``: errors give the line in the file."""
    with pytest.raises(InputError) as info:
        parse_run(b"1 Q0 d1 1 3 t\n1 Q0 d2 2 nan t\n", "big.run", first_line=101)
    assert (info.value.line, info.value.column) == (102, 11)
    with pytest.raises(InputError) as info:
        parse_run(b"1 Q0 d1 1 3 t\n1 Q0 d\x002 2 1 t\n", "big.run", first_line=101)
    assert info.value.line == 102


def test_duplicate_check_costs_bytes_not_rows_times_longest_id() -> None:
    """One 200 KiB id in a 20,000-line run: the check hashed every row once per byte of the
    longest id (10 s); now it is a fraction of a second — and still finds duplicates of long
    ids, also across the chunks of a column."""
    n, long = 20_000, "x" * (200 << 10)
    ids = [f"d{i}" for i in range(n)]
    ids[n // 2] = long
    run = rankeval.Run.from_frame(
        pd.DataFrame({"query_id": "1", "doc_id": ids, "score": np.arange(n, 0, -1.0)})
    )
    assert check_duplicates(run) is run
    # the long id twice, once at the end of a chunk, once at the start of the next
    docs = [*ids[: n // 2], long, long, *ids[n // 2 + 1 :]]
    frame = pd.DataFrame({"query_id": "1", "doc_id": docs, "score": np.arange(n + 1, 0, -1.0)})
    table = rankeval.Run.from_frame(frame).table
    chunked = pa.chunked_array([pa.array(docs[: n // 2 + 1]), pa.array(docs[n // 2 + 1 :])])
    twice = rankeval.Run(table.set_column(table.column_names.index("doc_id"), "doc_id", chunked), "twice")
    with pytest.raises(InputError, match=r"duplicate document 'xxx.*\(rows 10001 and 10002\)"):
        check_duplicates(twice)


FAST: list[Callable[[bytes], bytes]] = [
    lambda b: gzip.compress(b, 1),
    lambda b: bz2.compress(b, 1),
    lambda b: lzma.compress(b, preset=0),
]


@pytest.mark.parametrize("compress", FAST, ids=["gzip", "bzip2", "xz"])
def test_decompressed_stream_is_exact(compress: Callable[[bytes], bytes]) -> None:
    """Members one after the other, blocks of the size asked for, gzip's zero padding."""
    import io

    payload = b"".join(b"1 Q0 d%d %d %d.5 t\n" % (i, i, i) for i in range(200_000))
    blob = compress(payload) + compress(b"tail\n")
    if blob.startswith(b"\x1f\x8b"):
        blob += b"\0" * 9  # gzip's zero padding
    stream = inputs.Decompressed(io.BytesIO(blob), inputs.compression_of(blob[:16]) or "", "x", None, None)
    blocks = iter(lambda: stream.read(3 << 20), b"")
    sizes = [len(b) for b in blocks]
    assert sizes[:-1] == [3 << 20] * (len(sizes) - 1)
    stream = inputs.Decompressed(io.BytesIO(blob), inputs.compression_of(blob[:16]) or "", "x", None, None)
    assert stream.read() == payload + b"tail\n"
