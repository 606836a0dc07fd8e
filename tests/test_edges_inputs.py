"""Edges of what rankeval reads (issue 24, round two): ids that are no text (an unpaired
surrogate), a run and qrels given in each other's place, ids and grades in every input form
of the Python API held to the files' rules, and ir_datasets' home directory under a file.

The classes of bad input *files* are rows of ``CASES`` in ``tests/test_input_contract.py``;
this module holds what needs more than one file, the Python API's forms, or another process.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError
from rankeval.io.data import as_qrels
from rankeval.io.validate import GRADES

DL19 = Path("/work/shared/verify/dl19")
QRELS = b"q1 0 a 1\nq1 0 b 0\nq1 0 c 1\n"
RUN = b"q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\n"
TRUTH = {"q1": {"u1": [1, {"p1": [0.2, 56], "p2": [0.1, 194]}], "u2": [0, {"p1": [0.0, 35]}]}}
PREDICTION = {"q1": {"u1": [0.56, {"p1": 0.6, "p2": 0.4}], "u2": [0.45, {"p1": 0.1}]}}


def invoke(*args: object) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def one_error_line(result: Any) -> str:
    """The message of a clean failure (exit 1, one line, no traceback)."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    assert result.output.startswith("rankeval: error: "), result.output
    return str(result.output)


# ------------------------------------------------------------------ 7. unpaired surrogates
# (JSON text with a lone surrogate escape, where it sits, its JSON path in the message)
SURROGATES = [
    ("truth", '{"q1": {"\\ud800": [1, {"d1": [0.5, 10]}]}}', '$["q1"]["\\ud800"]'),
    ("truth", '{"\\udfff": {"u": [1, {"d1": [0.5, 10]}]}}', '$["\\udfff"]'),
    ("truth", '{"q1": {"u": [1, {"d\\udc00": [0.5, 10]}]}}', '$["q1"]["u"][1]["d\\udc00"]'),
    ("truth", '{"q1": {"u\\ud83d": [1, {}]}}', '$["q1"]["u\\ud83d"]'),  # a high half, no low half
    ("truth", '{"q1": {"u\\ude00\\ud83d": [1, {}]}}', '$["q1"]["u\\ude00\\ud83d"]'),  # halves reversed
    ("prediction", '{"q1": {"\\ud800": [1.0, {"d1": 0.5}]}}', '$["q1"]["\\ud800"]'),
    ("prediction", '{"q1": {"u": [1.0, {"x\\udbff": 0.5}]}}', '$["q1"]["u"][1]["x\\udbff"]'),
]


@pytest.mark.parametrize(("which", "text", "path"), SURROGATES)
def test_an_unpaired_surrogate_is_refused_with_its_json_path(
    tmp_path: Path, which: str, text: str, path: str
) -> None:
    truth, prediction = tmp_path / "truth.json", tmp_path / "prediction.json"
    truth.write_text(json.dumps(TRUTH))
    prediction.write_text(json.dumps(PREDICTION))
    bad = truth if which == "truth" else prediction
    bad.write_text(text)  # ASCII: the escape is JSON's, valid JSON
    read = rankeval.Qrels.read if which == "truth" else rankeval.Run.read
    with pytest.raises(InputError) as info:
        read(bad)
    assert info.value.source == str(bad)
    assert str(info.value).startswith(f"{bad}: {path}: unpaired surrogate"), str(info.value)
    out_q, out_r = tmp_path / "out.qrels", tmp_path / "out.run"
    for args in (
        ["convert", truth, prediction, out_q, out_r, "--to", "trec"],
        [truth, prediction, "-m", "P@1"],
    ):
        message = one_error_line(invoke(*args))
        assert message.startswith(f"rankeval: error: {bad}: {path}: unpaired surrogate"), message
        assert message.count("\n") == 1
    assert not out_q.exists() and not out_r.exists()


def test_a_surrogate_pair_is_a_character(tmp_path: Path) -> None:
    """The escapes of one astral character, in order, are text: read, and the id is it."""
    truth, prediction = tmp_path / "truth.json", tmp_path / "prediction.json"
    truth.write_text('{"q1": {"u": [1, {"d\\ud83d\\ude00": [0.5, 10]}]}}')
    prediction.write_text('{"q1": {"u": [1.0, {"d\\ud83d\\ude00": 0.5}]}}')
    assert rankeval.Qrels.read(truth).table.column("doc_id").to_pylist() == ["u", "u/d\U0001f600"]
    assert rankeval.Run.read(prediction).table.column("doc_id").to_pylist() == ["u", "u/d\U0001f600"]


def test_parquet_qrels_with_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    """Parquet's string columns are not checked when read: an encoded surrogate there was
    taken as an id (a str Python could not print back)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    doc = pa.array([b"d1", b"d\xed\xa0\x80"], pa.binary()).view(pa.string())
    path = tmp_path / "q.parquet"
    pq.write_table(
        pa.table(
            {
                "query_id": ["q1", "q1"],
                "iteration": ["0", "0"],
                "doc_id": doc,
                "relevance": [1.0, 1.0],
                "line": [1, 2],
            }
        ),
        path,
    )
    with pytest.raises(InputError, match="column 'doc_id' is not valid UTF-8 text"):
        rankeval.Qrels.read(path)


# ------------------------------------------------------------- 9. run and qrels swapped
def run_as_qrels(name: str) -> str:
    return f"{name} looks like a run file; the qrels come first: rankeval QRELS RUN"


def qrels_as_run(name: str) -> str:
    return f"{name} looks like a qrels file; the qrels come first: rankeval QRELS RUN"


# (case, qrels bytes, run bytes, the message for (qrels file name, run file name))
SWAPS: list[tuple[str, bytes, bytes, Callable[[str, str], str]]] = [
    ("both swapped", RUN, QRELS, lambda q, r: run_as_qrels(q)),
    ("a run twice", RUN, RUN, lambda q, r: run_as_qrels(q)),
    ("qrels twice", QRELS, QRELS, lambda q, r: qrels_as_run(r)),
    ("qrels with Q0 as the run", QRELS, b"1 Q0 d1 0\n1 Q0 d2 1\n", lambda q, r: qrels_as_run(r)),
    ("qrels with attributes as the run", QRELS, b"q1 0 a 1 cost=3 sens=1\n", lambda q, r: qrels_as_run(r)),
    ("one attribute", QRELS, b"q1 0 a 1 cost=3\n", lambda q, r: qrels_as_run(r)),
    (
        "a CLEF run (0/1 column) as qrels",
        b"1 0 d1 1 0.9 r\n1 1 d2 2 0.5 r\n",
        RUN,
        lambda q, r: run_as_qrels(q),
    ),
    ("a run with a comment first", b"# my run\n" + RUN, RUN, lambda q, r: run_as_qrels(q)),
    ("a gzip run as qrels", gzip.compress(RUN), RUN, lambda q, r: run_as_qrels(q)),
    ("gzip qrels as the run", QRELS, gzip.compress(QRELS), lambda q, r: qrels_as_run(r)),
    (
        "JSON truth twice",
        json.dumps(TRUTH).encode(),
        json.dumps(TRUTH).encode(),
        lambda q, r: f"{r} looks like an hTBG truth file; the qrels come first: rankeval QRELS RUN",
    ),
    (
        "JSON both swapped",
        json.dumps(PREDICTION).encode(),
        json.dumps(TRUTH).encode(),
        lambda q, r: f"{q} looks like an hTBG prediction file; the qrels come first: rankeval QRELS RUN",
    ),
]


@pytest.mark.parametrize(("case", "qrels", "run", "message"), SWAPS, ids=[s[0] for s in SWAPS])
def test_a_run_and_qrels_in_each_others_place_are_named(
    tmp_path: Path, case: str, qrels: bytes, run: bytes, message: Callable[[str, str], str]
) -> None:
    suffix = ".json" if qrels.startswith(b"{") else ".txt"
    q, r = tmp_path / f"first{suffix}", tmp_path / f"second{suffix}"
    q.write_bytes(qrels)
    r.write_bytes(run)
    expected = message(str(q), str(r))
    assert one_error_line(invoke(q, r, "-m", "nDCG@10")) == f"rankeval: error: {expected}\n"
    with pytest.raises(InputError) as info:
        rankeval.evaluate(q, r, ["AP"])
    assert str(info.value) == expected


@pytest.mark.skipif(not DL19.is_dir(), reason="the shared verification data is not here")
def test_the_issue_case_dl19_swapped() -> None:
    run, qrels = DL19 / "run.msmarco-v1-passage.bm25-default.dl19.txt", DL19 / "qrels.dl19-passage.txt"
    assert (
        one_error_line(invoke(run, qrels, "-m", "nDCG@10")) == f"rankeval: error: {run_as_qrels(str(run))}\n"
    )
    assert (
        one_error_line(invoke(qrels, qrels, "-m", "nDCG@10"))
        == f"rankeval: error: {qrels_as_run(str(qrels))}\n"
    )


# (case, file, read as, words of the usual message): a file that is broken, not swapped
NOT_SWAPPED = [
    ("a run whose first line lost columns", b"q1 Q0 a 1\n" + RUN, "run", "expected 6 columns"),
    ("a run line in the middle of qrels", QRELS + b"q1 Q0 z 1 2.0 t\n", "qrels", "expected key=value"),
    ("qrels with a junk 5th column", b"q1 0 a 1 x\n", "qrels", "expected key=value"),
    ("a run with a word for the score", b"q1 Q0 a 1 high t\n", "run", "expected a number"),
    ("a qrels line in the middle of a run", RUN + b"q1 0 z 1\n", "run", "expected 6 columns"),
]


@pytest.mark.parametrize(("case", "content", "which", "words"), NOT_SWAPPED, ids=[c[0] for c in NOT_SWAPPED])
def test_a_broken_file_is_not_called_swapped(
    tmp_path: Path, case: str, content: bytes, which: str, words: str
) -> None:
    bad, good = tmp_path / "bad.txt", tmp_path / "good.txt"
    bad.write_bytes(content)
    good.write_bytes(RUN if which == "qrels" else QRELS)
    args = (bad, good) if which == "qrels" else (good, bad)
    message = one_error_line(invoke(*args, "-m", "AP"))
    assert words in message and "looks like" not in message, message
    assert message.startswith(f"rankeval: error: {bad}:"), message


# ------------------------------------------------------------- 25. the Python API's forms
def qrels_frame(**override: list[Any]) -> pd.DataFrame:
    columns: dict[str, list[Any]] = {
        "query_id": ["q1"] * 3,
        "doc_id": ["a", "b", "c"],
        "relevance": [1, 0, 1],
    }
    return pd.DataFrame({**columns, **override})


def run_frame(**override: list[Any]) -> pd.DataFrame:
    columns: dict[str, list[Any]] = {
        "query_id": ["q1"] * 3,
        "doc_id": ["x", "a", "c"],
        "score": [3.0, 2.0, 1.0],
    }
    return pd.DataFrame({**columns, **override})


BAD_IDS = [
    (None, "missing"),
    (np.nan, "missing"),
    (pd.NA, "missing"),
    ("", "empty"),
    ("a\tb", "control character"),
    ("a\x00", "control character"),
    ("\x7f", "control character"),
    ("\ud800", "unpaired surrogate"),
]


def as_object(values: list[Any]) -> pd.Series:
    return pd.Series(values, dtype=object)  # a str column cannot hold a surrogate: an object one can


def frame_form(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


def dict_form(frame: pd.DataFrame) -> dict[Any, dict[Any, float]]:
    value = "relevance" if "relevance" in frame else "score"
    out: dict[Any, dict[Any, float]] = {}
    for q, d, v in zip(frame["query_id"], frame["doc_id"], frame[value], strict=True):
        out.setdefault(q, {})[d] = v
    return out


def namedtuple_form(frame: pd.DataFrame) -> list[Any]:
    if "relevance" in frame:
        return [
            ir_measures.Qrel(q, d, int(r))
            for q, d, r in zip(frame.query_id, frame.doc_id, frame.relevance, strict=True)
        ]
    return [
        ir_measures.ScoredDoc(q, d, s)
        for q, d, s in zip(frame.query_id, frame.doc_id, frame.score, strict=True)
    ]


FORMS = [frame_form, dict_form, namedtuple_form]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("bad", "words"), BAD_IDS, ids=[w + repr(b) for b, w in BAD_IDS])
@pytest.mark.parametrize(
    ("which", "column"), [("run", "doc_id"), ("run", "query_id"), ("qrels", "doc_id"), ("qrels", "query_id")]
)
def test_an_id_a_file_could_not_hold_is_refused_in_every_form(
    form: Callable[[pd.DataFrame], Any], bad: Any, words: str, which: str, column: str
) -> None:
    """The issue's cases: a run's doc id None/NaN/"" was ranked (AP 0.3333, not 0.6667), a
    qrels query id None became a query 'nan', None ids elsewhere raised a raw IndexError."""
    make = run_frame if which == "run" else qrels_frame
    ids = make()[column].tolist()
    ids[1] = bad
    frame = make(**{column: as_object(ids)})
    qrels, run = (frame_form(qrels_frame()), form(frame)) if which == "run" else (form(frame), run_frame())
    with pytest.raises(InputError) as info:
        rankeval.evaluate(qrels, run, ["AP"])
    message = str(info.value)
    assert words in message and column in message, message
    if words == "unpaired surrogate":  # refused while the column is made strings
        assert f"{column} {bad!r}, row" in message, message
        return
    other = "query_id 'q1'" if column == "doc_id" else f"doc_id {make()['doc_id'][1]!r}"
    assert other in message and ("row 2" in message or form is dict_form), message


@pytest.mark.parametrize("column", ["iteration", "q0", "tag"])
def test_the_optional_id_columns_are_checked_too(column: str) -> None:
    if column == "iteration":
        qrels, run = qrels_frame(iteration=["0", None, "0"]), run_frame()
    else:
        qrels, run = qrels_frame(), run_frame(**{column: ["x", "", "x"]})
    with pytest.raises(InputError, match=f"(missing|empty) {column}.*row 2"):
        rankeval.evaluate(qrels, run, ["AP"])


def test_the_valid_forms_score_as_the_files(tmp_path: Path) -> None:
    """What stays valid: ids of any type (made strings), spaces in ids; the values of the
    frames above are those of the same files."""
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 1\n")
    r.write_text("q1 Q0 x 1 3.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 c 3 1.0 t\n")
    expected = rankeval.evaluate(q, r, ["AP"])["value"].tolist()
    for form in FORMS:
        got = rankeval.evaluate(form(qrels_frame()), form(run_frame()), ["AP"])["value"].tolist()
        assert got == expected == [pytest.approx(7 / 12)] * 2, form.__name__  # (1/2 + 2/3) / 2
    numbers = rankeval.evaluate({1: {2: 1}}, {1: {2: 1.0, "a b": 2.0}}, ["P@2"])
    assert numbers["value"].tolist() == [0.5, 0.5]
    wide = rankeval.evaluate({"é": {"\u00a0ü": 1}}, {"é": {"\u00a0ü": 1.0, "\U0001f600": 2.0}}, ["P@2"])
    assert wide["value"].tolist() == [0.5, 0.5]  # non-ASCII (a no-break space too) is text


# ------------------------------------------------------------- 26. grades beyond the range
LOW, HIGH = GRADES
OUT_OF_RANGE = [1.7e308, -1.7e308, 1e19, -1e19, float(HIGH + 1), float(LOW - 1), 3e9]


def grade_inputs(tmp_path: Path, grade: float) -> list[tuple[str, Any]]:
    """Qrels with a judgment of grade *grade*, in each input form."""
    text = tmp_path / "q.txt"
    text.write_text(f"q1 0 a {grade!r}\nq1 0 b 1\n")
    compressed = tmp_path / "q.gz"
    compressed.write_bytes(gzip.compress(text.read_bytes()))
    truth_label, truth_stop = tmp_path / "label.json", tmp_path / "stop.json"
    truth_label.write_text(json.dumps({"q1": {"a": [grade, {}], "b": [1, {}]}}))
    truth_stop.write_text(json.dumps({"q1": {"a": [1, {"p": [grade, 3]}]}}))
    return [
        ("file", text),
        ("gzip", compressed),
        ("hTBG label", truth_label),
        ("hTBG stop probability", truth_stop),
        (
            "DataFrame",
            pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [grade, 1]}),
        ),
        ("dict", {"q1": {"a": grade, "b": 1}}),
    ]


@pytest.mark.parametrize("grade", OUT_OF_RANGE)
def test_a_grade_beyond_the_exact_range_is_refused(tmp_path: Path, grade: float) -> None:
    """Before: 1.7e308 gave nan for nDCG, G and RNDCG, 1e19 made G 0 (numpy warnings only)."""
    for form, qrels in grade_inputs(tmp_path, grade):
        with pytest.raises(InputError) as info:
            as_qrels(qrels)
        assert f"[{LOW}, {HIGH}]" in str(info.value), (form, str(info.value))
    message = one_error_line(invoke(tmp_path / "q.txt", tmp_path / "q.txt", "-m", "G"))
    assert message.startswith(
        f"rankeval: error: {tmp_path / 'q.txt'}:1:8: expected a finite number in [{LOW}, {HIGH}]"
    )


@pytest.mark.parametrize("grade", [HIGH, LOW, 0.37, 2, -1])
def test_grades_within_the_range_give_finite_values(tmp_path: Path, grade: float) -> None:
    run = {"q1": {"a": 2.0, "b": 1.0}}
    for form, qrels in grade_inputs(tmp_path, grade):
        if form.startswith("hTBG"):
            continue  # a JSON truth goes with a JSON prediction
        values = rankeval.evaluate(qrels, run, ["nDCG", "G", "RNDCG", "AP"])["value"].to_numpy()
        assert np.isfinite(values).all() and ((values >= 0) & (values <= 1)).all(), (form, values)


# ------------------------------------------------------------- 24. ir_datasets' home
@pytest.mark.parametrize("variable", ["IR_DATASETS_HOME", "HOME"])
def test_ir_datasets_home_under_a_file_is_one_true_line(tmp_path: Path, variable: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    run = tmp_path / "run.txt"
    run.write_bytes(RUN)
    env = {k: v for k, v in os.environ.items() if k != "IR_DATASETS_HOME"}
    env[variable] = str(afile / "home")
    result = subprocess.run(
        [sys.executable, "-m", "rankeval.cli", "msmarco-passage/dev/small", str(run), "-m", "P@1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "rankeval: error: msmarco-passage/dev/small: ir_datasets cannot use its home directory"
    )
    assert "Not a directory" in lines[0] and "IR_DATASETS_HOME" in lines[0]
