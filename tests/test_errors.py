"""Bad input gets a clear RankevalError (library) or a message and a non-zero exit code
without a traceback (CLI); nothing is half-written (docs: formats.md, Error messages)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError, RankevalError, SpecError, UsageError

QRELS = "1 0 d1 1\n1 0 d2 0\n1 0 d3 2\n2 0 d4 1\n"
RUN = "1 Q0 d1 1 3.0 tag\n1 Q0 d2 2 2.0 tag\n1 Q0 d3 3 1.0 tag\n2 Q0 d4 1 1.0 tag\n"


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


@pytest.fixture
def good(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "good.qrels", QRELS), write(tmp_path / "good.run", RUN)


def invoke(args: list[str], **kw):
    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def assert_clean_failure(result, exit_code: int) -> str:
    """The command failed with *exit_code*, a message, and no traceback."""
    assert result.exit_code == exit_code, result.output
    # an uncaught exception would be stored here instead of a SystemExit
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.output.startswith("rankeval: error: "), result.output
    return result.output


# --------------------------------------------------------------------- bad input lines
# (file name, qrels?, content, line, column, message substring, offending text)
BAD_LINES = [
    (
        "few.run",
        False,
        "1 Q0 d1 1 2.0 tag\n1 Q0 d2 2 1.0\n",
        2,
        14,
        "expected 6 columns (query_id Q0 doc_id rank score tag), found 5",
        "1 Q0 d2 2 1.0",
    ),
    ("few_messy.run", False, "1\tQ0  d1 1 2.0 tag\n\n1 Q0 d2\n", 3, 8, "expected 6 columns", "1 Q0 d2"),
    (
        "score.run",
        False,
        "1 Q0 d1 1 2.0 tag\n1 Q0 d2 2 abc tag\n",
        2,
        11,
        "expected a number for the score (column 5), found 'abc'",
        "1 Q0 d2 2 abc tag",
    ),
    (
        "score_na.run",
        False,
        "1 Q0 d1 1 2.0 tag\n1 Q0 d2 2 N/A tag\n",
        2,
        11,
        "expected a number for the score (column 5), found 'N/A'",
        "1 Q0 d2 2 N/A tag",
    ),
    (
        "score_null.run",
        False,
        "1 Q0 d1 1 2.0 tag\n1 Q0 d2 2 NULL tag\n",
        2,
        11,
        "expected a number for the score (column 5), found 'NULL'",
        "1 Q0 d2 2 NULL tag",
    ),
    (
        "score_tab.run",
        False,
        "1\tQ0\td1\t1\t2.0\ttag\n1\tQ0\td2\t2\t1,5\ttag\n",
        2,
        11,
        "expected a number for the score (column 5), found '1,5'",
        "1\tQ0\td2\t2\t1,5\ttag",
    ),
    (
        "few.qrels",
        True,
        "1 0 d1 1\n1 0 d2\n",
        2,
        7,
        "expected 4 columns (query_id iteration doc_id relevance), found 3",
        "1 0 d2",
    ),
    (
        "rel.qrels",
        True,
        "# judgments\n1 0 d1 1\n1 0 d2 high\n",
        3,
        8,
        "expected a number for the relevance (column 4), found 'high'",
        "1 0 d2 high",
    ),
    (
        "noeq.qrels",
        True,
        "1 0 d1 1 cost=5\n1 0 d2 1 cost5\n",
        2,
        10,
        "expected key=value attribute after the relevance, found 'cost5'",
        "1 0 d2 1 cost5",
    ),
    (
        "twice.qrels",
        True,
        "1 0 d1 1 cost=5 cost=6\n",
        1,
        17,
        "attribute 'cost' given twice on one line",
        "1 0 d1 1 cost=5 cost=6",
    ),
]


def _read(path: Path, is_qrels: bool):
    return rankeval.Qrels.read(path) if is_qrels else rankeval.Run.read(path)


@pytest.mark.parametrize(
    ("name", "is_qrels", "content", "line", "column", "message", "text"),
    BAD_LINES,
    ids=[b[0] for b in BAD_LINES],
)
def test_bad_line_library(tmp_path, name, is_qrels, content, line, column, message, text) -> None:
    path = write(tmp_path / name, content)
    with pytest.raises(InputError) as info:
        _read(path, is_qrels)
    err = info.value
    assert err.source == str(path)
    assert err.line == line
    assert err.column == column
    assert message in err.message
    assert err.text == text
    shown = str(err)
    assert shown.startswith(f"{path}:{line}:{column}: ")
    assert f"\n    {text}\n    " + " " * (column - 1) + "^" in shown


@pytest.mark.parametrize(
    ("name", "is_qrels", "content", "line", "column", "message", "text"),
    BAD_LINES,
    ids=[b[0] for b in BAD_LINES],
)
def test_bad_line_cli(tmp_path, good, name, is_qrels, content, line, column, message, text) -> None:
    path = write(tmp_path / name, content)
    qrels, run = good
    args = [path, run] if is_qrels else [qrels, path]
    out = assert_clean_failure(invoke([*args, "-m", "AP"]), 1)
    assert f"{path}:{line}:{column}: " in out
    assert message in out
    assert text in out


# --------------------------------------------------------------------- duplicates
def test_duplicate_in_run_library(tmp_path, good) -> None:
    qrels, _ = good
    run = write(tmp_path / "dup.run", "1 Q0 d1 1 3.0 t\n1 Q0 d2 2 2.0 t\n2 Q0 d4 1 1.0 t\n1 Q0 d1 4 0.5 t\n")
    with pytest.raises(InputError) as info:
        rankeval.evaluate(qrels, run, "AP")
    err = info.value
    assert err.source == str(run)
    assert err.line == 4
    assert "duplicate document 'd1' for query '1'" in err.message
    assert "line 1" in err.message
    assert err.text == "1 Q0 d1 4 0.5 t"


@pytest.mark.parametrize("compress", ["none", "gzip", "messy"])
def test_duplicate_in_run_cli(tmp_path, good, compress) -> None:
    qrels, _ = good
    text = "# header\n1 Q0 d1 1 3.0 t\n1 Q0 d2 2 2.0 t\n\n1  Q0 d1 4 0.5 t\n"
    if compress == "gzip":
        run = write(tmp_path / "dup.run.gz", gzip.compress(text.encode()))
    elif compress == "messy":
        run = write(tmp_path / "dup.run", text.replace(" ", "\t"))
    else:
        run = write(tmp_path / "dup.run", text)
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP"]), 1)
    assert f"{run}:5: " in out  # the second occurrence ...
    assert "line 2" in out  # ... and the first
    assert "duplicate document 'd1' for query '1'" in out


def test_duplicate_in_run_from_stdin(good) -> None:
    qrels, _ = good
    result = invoke([qrels, "-", "-m", "AP"], input="1 Q0 d1 1 3.0 t\n1 Q0 d1 2 2.0 t\n")
    out = assert_clean_failure(result, 1)
    assert "<stdin>:2" in out
    assert "line 1" in out
    assert "duplicate document 'd1' for query '1'" in out


# --------------------------------------------------------------------- files
def test_missing_file_library(tmp_path) -> None:
    with pytest.raises(InputError) as info:
        rankeval.Run.read(tmp_path / "nope.run")
    assert info.value.source == str(tmp_path / "nope.run")
    assert "file not found" in str(info.value)
    with pytest.raises(InputError) as info:
        rankeval.Qrels.read(tmp_path / "nope.qrels")
    assert "file not found" in str(info.value)


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_missing_file_cli(tmp_path, good, which) -> None:
    qrels, run = good
    missing = tmp_path / f"missing.{which}"
    args = [missing, run] if which == "qrels" else [qrels, missing]
    out = assert_clean_failure(invoke([*args, "-m", "AP"]), 1)
    assert f"{missing}: file not found" in out


def test_directory_instead_of_file(tmp_path, good) -> None:
    _, run = good
    d = tmp_path / "adir.qrels"
    d.mkdir()
    out = assert_clean_failure(invoke([d, run, "-m", "AP"]), 1)
    assert f"{d}: is a directory" in out


def test_invalid_utf8(tmp_path, good) -> None:
    qrels, _ = good
    run = write(tmp_path / "latin1.run", b"1 Q0 d1 1 3.0 t\n1 Q0 caf\xe9 2 2.0 t\n")
    with pytest.raises(InputError) as info:
        rankeval.Run.read(run)
    err = info.value
    assert err.line == 2
    assert err.column == 9
    assert "not valid UTF-8" in err.message
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP"]), 1)
    assert f"{run}:2:9: not valid UTF-8" in out
    assert "1 Q0 caf" in out


def test_invalid_utf8_in_qrels(tmp_path, good) -> None:
    _, run = good
    qrels = write(tmp_path / "bad.qrels", b"1 0 d1 1\n1 0 d2 1\n1 0 \xff\xfe 0\n")
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP"]), 1)
    assert f"{qrels}:3:5: not valid UTF-8" in out


CORRUPT = {
    # a gzip header followed by garbage: zlib cannot inflate it
    "garbage.run.gz": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"this is not deflate data" * 4,
    # a valid gzip stream cut short
    "truncated.run.gz": gzip.compress(RUN.encode())[:30],
    "truncated.run.bz2": bz2.compress(RUN.encode())[:30],
    "truncated.run.xz": lzma.compress(RUN.encode())[:40],
}


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt_compressed_run(tmp_path, good, name) -> None:
    qrels, _ = good
    path = write(tmp_path / name, CORRUPT[name])
    with pytest.raises(InputError) as info:
        rankeval.Run.read(path)
    assert info.value.source == str(path)
    assert "corrupt compressed file" in info.value.message
    out = assert_clean_failure(invoke([qrels, path, "-m", "AP"]), 1)
    assert f"{path}: corrupt compressed file" in out


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt_compressed_qrels(tmp_path, good, name) -> None:
    _, run = good
    path = write(tmp_path / name.replace(".run", ".qrels"), CORRUPT[name])
    with pytest.raises(InputError) as info:
        rankeval.Qrels.read(path)
    assert "corrupt compressed file" in info.value.message
    out = assert_clean_failure(invoke([path, run, "-m", "AP"]), 1)
    assert f"{path}: corrupt compressed file" in out


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_empty_file_no_traceback(tmp_path, good, which) -> None:
    """An empty or comment-only file is one clean error naming it, and no output file."""
    qrels, run = good
    for name, text in (("empty", ""), ("comments", "# nothing here\n")):
        bad = write(tmp_path / f"{name}.{which}", text)
        args = [bad, run] if which == "qrels" else [qrels, bad]
        out = assert_clean_failure(invoke([*args, "-m", "AP", "-o", tmp_path / "out.txt"]), 1)
        assert str(bad) in out
        assert ("no judgments" if which == "qrels" else "empty run") in out
        assert not (tmp_path / "out.txt").exists()


# --------------------------------------------------------------------- usage errors
def test_unknown_measure_cli(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP", "-m", "APP"]), 2)
    assert "unknown measure 'APP'" in out
    assert "did you mean" in out
    assert "\n    APP\n    ^" in out


def test_unknown_measure_library(good) -> None:
    qrels, run = good
    with pytest.raises(SpecError) as info:
        rankeval.evaluate(qrels, run, ["AP", "APP"])
    assert "unknown measure 'APP'" in str(info.value)


def test_bad_spec_syntax_cli(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP(rel=2"]), 2)
    assert "expected ',' or ')', found end of spec" in out
    assert "\n    AP(rel=2\n            ^" in out


def test_bad_parameter_value_cli(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, "-m", "nDCG@ten"]), 2)
    assert "bad value for 'k': expected an integer, found 'ten'" in out
    assert "\n    nDCG@ten\n         ^" in out


def test_unknown_format(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP", "-f", "xml"]), 2)
    assert "unknown format 'xml'" in out
    assert "trec, tsv, csv, json, jsonl, markdown, latex" in out


def test_unknown_format_library(good) -> None:
    from rankeval.report.formats import format_results

    qrels, run = good
    frame = rankeval.evaluate(qrels, run, "AP")
    with pytest.raises(UsageError) as info:
        format_results(frame, "xml")
    assert "unknown format 'xml'" in str(info.value)


def test_no_measure_given(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run]), 2)
    assert "no measure given" in out
    assert "-m" in out


def test_no_measure_library(good) -> None:
    qrels, run = good
    with pytest.raises(UsageError) as info:
        rankeval.evaluate(qrels, run, [])
    assert "no measures given" in str(info.value)


@pytest.mark.parametrize("value", ["0", "-3"])
def test_bad_max_docs(good, value) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, "-m", "AP", "-M", value]), 2)
    assert "max_docs must be an integer from 1 to 2147483647" in out


def test_same_run_name_twice(good) -> None:
    qrels, run = good
    out = assert_clean_failure(invoke([qrels, run, run, "-m", "AP"]), 2)
    assert "several runs are named good.run" in out


def test_errors_are_one_family() -> None:
    assert issubclass(InputError, RankevalError)
    assert issubclass(SpecError, UsageError)
    assert issubclass(UsageError, RankevalError)
    assert InputError("x").exit_code == 1
    assert UsageError("x").exit_code == 2


# --------------------------------------------------------------------- nothing half-written
@pytest.mark.parametrize(
    "bad",
    [
        ("run", "1 Q0 d1 1 3.0 t\n1 Q0 d2 2 x t\n"),
        ("run", "1 Q0 d1 1 3.0 t\n1 Q0 d1 2 2.0 t\n"),  # duplicate: fails during evaluation
        ("qrels", "1 0 d1 1\n1 0 d2\n"),
        ("measure", None),
    ],
    ids=["bad-score", "duplicate", "bad-qrels", "bad-measure"],
)
def test_nothing_half_written(tmp_path, good, bad) -> None:
    qrels, run = good
    kind, content = bad
    measure = "AP"
    if kind == "run":
        run = write(tmp_path / "bad.run", content)
    elif kind == "qrels":
        qrels = write(tmp_path / "bad.qrels", content)
    else:
        measure = "Zzqxv"
    out = tmp_path / "out.txt"
    result = invoke([qrels, run, "-m", measure, "-o", out])
    assert_clean_failure(result, 2 if kind == "measure" else 1)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".out", "out"))) == []

    # a pre-existing output file is left unchanged
    out.write_text("previous results\n")
    result = invoke([qrels, run, "-m", measure, "-o", out])
    assert_clean_failure(result, 2 if kind == "measure" else 1)
    assert out.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".out", "out"))) == ["out.txt"]


def test_output_written_on_success_replaces_file(tmp_path, good) -> None:
    qrels, run = good
    out = tmp_path / "out.txt"
    out.write_text("previous results\n")
    result = invoke([qrels, run, "-m", "AP", "-o", out])
    assert result.exit_code == 0, result.output
    # AP: q1 (1/1 + 2/3)/2 = 0.8333 ; q2 1.0 ; mean 0.9167
    assert out.read_text() == "AP                    \tall\t0.9167\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".out", "out"))) == ["out.txt"]


# ------------------------------------------------------------------ --on-duplicate
def test_on_duplicate_first_and_max(tmp_path):
    """docs: formats.md, Runs: --on-duplicate first|max relaxes the duplicate-document error."""
    q = tmp_path / "q.txt"
    r = tmp_path / "r.txt"
    q.write_text("1 0 a 1\n1 0 b 0\n")
    # 'a' twice: first with score 1 (rank 2 behind b), then with score 3 (rank 1)
    r.write_text("1 Q0 a 1 1.0 t\n1 Q0 b 2 2.0 t\n1 Q0 a 3 3.0 t\n")
    import rankeval

    first = rankeval.evaluate(q, r, "RR", options=rankeval.EvalOptions(on_duplicate="first"))
    best = rankeval.evaluate(q, r, "RR", options=rankeval.EvalOptions(on_duplicate="max"))
    assert first[first["query_id"] == "1"]["value"].item() == 0.5  # a keeps 1.0: b, a
    assert best[best["query_id"] == "1"]["value"].item() == 1.0  # a keeps 3.0: a, b
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "RR", "--on-duplicate", "max", "-q"])
    assert result.exit_code == 0 and "RR                    \t1\t1.0000" in result.output
    bad = CliRunner().invoke(app, [str(q), str(r), "-m", "RR", "--on-duplicate", "sometimes"])
    assert bad.exit_code == 2 and "on_duplicate must be one of error, first, max" in bad.output


def test_runs_with_the_same_file_name_are_named_by_tag(tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("1 0 a 1\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "run.txt").write_text("1 Q0 a 1 1.0 alpha\n")
    (tmp_path / "y" / "run.txt").write_text("1 Q0 a 1 1.0 beta\n")
    import rankeval

    frame = rankeval.evaluate(q, [tmp_path / "x" / "run.txt", tmp_path / "y" / "run.txt"], "RR")
    assert sorted(set(frame["run"])) == ["alpha", "beta"]
