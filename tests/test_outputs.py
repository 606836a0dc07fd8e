"""Output safety (docs: formats.md, "Output files"), the CLI's error boundary (Ctrl-C, --debug,
internal errors) and usage limits of the output options.

Each row of the tables gives the case, the expected exit code, words the message must contain,
and the state of the file system afterwards.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import OutputError, UsageError
from rankeval.report.outputs import check_outputs, write_output, write_outputs

QRELS = "1 0 a 1\n1 0 b 0\n2 0 x 1\n"
RUN = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n2 Q0 x 1 5 t\n"
ROOT = os.geteuid() == 0


def invoke(args: list[object]):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    q, r = tmp_path / "q.txt", tmp_path / "run.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def snapshot(directory: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under *directory*: kind and content (a link's target)."""
    out: dict[str, tuple[str, bytes | str]] = {}
    for p in sorted(directory.rglob("*")):
        rel = str(p.relative_to(directory))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir", b"")
        else:
            out[rel] = ("file", p.read_bytes())
    return out


def clean_failure(result, code: int, *words: str) -> None:
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.output.startswith("rankeval: error: "), result.output
    for w in words:
        assert w in result.output, (w, result.output)


# ------------------------------------------------------------------------ refused outputs
# (case, -o target relative to tmp_path or a builder, exit code, words)
def _link_to_run(tmp: Path) -> Path:
    (tmp / "link.txt").symlink_to(tmp / "run.txt")
    return tmp / "link.txt"


def _hard_link_to_qrels(tmp: Path) -> Path:
    os.link(tmp / "q.txt", tmp / "hard.txt")
    return tmp / "hard.txt"


def _dotted_run(tmp: Path) -> Path:
    (tmp / "sub").mkdir()
    return tmp / "sub" / ".." / "run.txt"


def _readonly_dir(tmp: Path) -> Path:
    d = tmp / "ro"
    d.mkdir()
    d.chmod(0o500)
    return d / "out.txt"


REFUSED: list[tuple[str, Callable[[Path], Path | str], int, tuple[str, ...]]] = [
    ("the run itself", lambda t: t / "run.txt", 2, ("-o", "run.txt", "refusing to overwrite an input")),
    ("the qrels itself", lambda t: t / "q.txt", 2, ("q.txt", "refusing to overwrite an input")),
    ("a symlink to the run", _link_to_run, 2, ("link.txt", "input file")),
    ("a hard link to the qrels", _hard_link_to_qrels, 2, ("hard.txt", "input file")),
    ("the run through ..", _dotted_run, 2, ("input file",)),
    ("a missing directory", lambda t: t / "nope" / "out.txt", 1, ("cannot write", "no such directory")),
    ("a directory", lambda t: t, 2, ("is a directory",)),
    ("an empty path", lambda t: "", 2, ("empty path",)),
]
if not ROOT:  # root writes into read-only directories
    REFUSED.append(("a read-only directory", _readonly_dir, 1, ("cannot write", "Permission denied")))


@pytest.mark.parametrize("case,target,code,words", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_output(files, tmp_path: Path, case, target, code, words) -> None:
    q, r = files
    out = target(tmp_path)
    before = snapshot(tmp_path)
    result = invoke([q, r, "-m", "AP", "-o", out])
    clean_failure(result, code, *words)
    assert snapshot(tmp_path) == before  # nothing written, replaced or left behind


def test_output_failure_mid_write_leaves_old_file(files, tmp_path: Path, monkeypatch) -> None:
    """Disk full while writing: the old output stays, no temporary file is left."""
    q, r = files
    out = tmp_path / "out.txt"
    out.write_text("old results\n")
    before = snapshot(tmp_path)

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    result = invoke([q, r, "-m", "AP", "-o", out])
    clean_failure(result, 1, "out.txt", "no space left")
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------ accepted outputs
def test_output_new_file_gets_umask_mode(files, tmp_path: Path) -> None:
    q, r = files
    old = os.umask(0o027)
    try:
        result = invoke([q, r, "-m", "AP", "-o", tmp_path / "out.txt"])
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o640
    assert "AP" in (tmp_path / "out.txt").read_text()
    assert not list(tmp_path.glob(".*.tmp"))


def test_output_existing_file_keeps_mode(files, tmp_path: Path) -> None:
    q, r = files
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(0o604)
    assert invoke([q, r, "-m", "AP", "-o", out]).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o604
    assert out.read_text().startswith("AP")


def test_output_symlink_written_through(files, tmp_path: Path) -> None:
    q, r = files
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert invoke([q, r, "-m", "AP", "-o", link]).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("AP")


def test_output_device_is_a_stream(files) -> None:
    q, r = files
    result = invoke([q, r, "-m", "AP", "-o", "/dev/null"])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_fifo_is_a_stream(files, tmp_path: Path) -> None:
    q, r = files
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    result = invoke([q, r, "-m", "AP", "-o", fifo])
    out, _ = reader.communicate(timeout=30)
    assert result.exit_code == 0, result.output
    assert out.decode().startswith("AP")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_stdout_full_device(files) -> None:
    """Standard output on a full device: one line, exit 1 (a real process: /dev/full)."""
    q, r = files
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "rankeval.cli", q, r, "-m", "AP"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.startswith("rankeval: error: cannot write the results to standard output")


def test_convert_outputs_refused_and_atomic(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data" / "htbg-toy"
    truth, pred = data / "truth.json", data / "prediction.json"
    assert truth.exists() and pred.exists()
    before = snapshot(data)
    clean_failure(invoke(["convert", truth, pred, truth, tmp_path / "r.txt"]), 2, "input file")
    clean_failure(invoke(["convert", truth, pred, tmp_path / "x", tmp_path / "x"]), 2, "the same file")
    # the second output cannot be written: the first is not written either
    clean_failure(invoke(["convert", truth, pred, tmp_path / "q.txt", tmp_path / "no" / "r.txt"]), 1)
    assert not (tmp_path / "q.txt").exists()
    assert snapshot(data) == before
    assert invoke(["convert", truth, pred, tmp_path / "q.txt", tmp_path / "r.txt"]).exit_code == 0


def test_library_write_output_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        write_output(tmp_path, "x")
    with pytest.raises(OutputError, match="no such directory"):
        write_output(tmp_path / "a" / "b.txt", "x")
    with pytest.raises(OutputError):
        write_outputs([(tmp_path / "ok.txt", "x"), (tmp_path / "a" / "b.txt", "y")])
    assert not (tmp_path / "ok.txt").exists()
    (tmp_path / "in.txt").write_text("1 0 a 1\n")
    with pytest.raises(UsageError, match="input file"):
        check_outputs([("-o", tmp_path / "in.txt")], [tmp_path / "in.txt", "-", 3])
    # a non-existing input path (or a dataset id) is never a clash
    check_outputs([("-o", tmp_path / "out.txt")], ["msmarco-passage/dev/small", tmp_path / "missing"])


# ------------------------------------------------------------------------ usage limits
USAGE = [
    (["--precision", "-1"], "precision"),
    (["--precision", "31"], "precision"),
    (["-f", "nope"], "unknown format"),
]


@pytest.mark.parametrize("extra,words", USAGE, ids=[" ".join(u[0]) for u in USAGE])
def test_output_usage_errors(files, extra, words) -> None:
    q, r = files
    clean_failure(invoke([q, r, "-m", "AP", *extra]), 2, words)


def test_compare_samples_bounded(files, tmp_path: Path) -> None:
    q, r = files
    r2 = tmp_path / "run2.txt"
    r2.write_text(RUN.replace(" 3 t", " 1 t"))
    clean_failure(
        invoke(["compare", q, r, r2, "-m", "AP", "--samples", "1000000000"]), 2, "samples", "10,000,000"
    )
    clean_failure(invoke(["compare", q, r, r2, "-m", "AP", "--precision", "-2"]), 2, "precision")


# ------------------------------------------------------------------------ the error boundary
BROKEN = """
from dataclasses import dataclass
from typing import ClassVar
import numpy as np
from rankeval import Measure, hookimpl

@dataclass(frozen=True)
class Broken(Measure):
    name: ClassVar[str] = "Broken"
    def compute(self, data):
        raise ZeroDivisionError("boom inside the plugin")

@hookimpl
def register_measures(register):
    register(Broken)
"""

SLOW = """
import os, time
from dataclasses import dataclass
from typing import ClassVar
from rankeval import Measure, hookimpl

@dataclass(frozen=True)
class Slow(Measure):
    name: ClassVar[str] = "Slow"
    def compute(self, data):
        open(os.environ["SLOW_MARKER"], "w").close()
        time.sleep(60)
        raise AssertionError("not interrupted")

@hookimpl
def register_measures(register):
    register(Slow)
"""


def test_debug_shows_the_plugin_traceback(files, tmp_path: Path, monkeypatch) -> None:
    q, r = files
    (tmp_path / "broken_plugin.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("RANKEVAL_DEBUG", raising=False)
    plain = invoke([q, r, "-m", "Broken", "--plugin", "broken_plugin"])
    clean_failure(plain, 1, "Broken", "broken_plugin", "ZeroDivisionError", "boom inside the plugin")
    debug = invoke([q, r, "-m", "Broken", "--plugin", "broken_plugin", "--debug"])
    assert debug.exit_code == 1
    assert "Traceback" in debug.output and "boom inside the plugin" in debug.output
    monkeypatch.setenv("RANKEVAL_DEBUG", "1")
    assert "Traceback" in invoke([q, r, "-m", "Broken", "--plugin", "broken_plugin"]).output


def test_unexpected_exception_is_one_line(files, monkeypatch) -> None:
    """A bug (any exception outside the RankevalError family) is reported, not traced."""
    import rankeval.engine.evaluation

    q, r = files

    def bug(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(rankeval.engine.evaluation, "evaluate_prepared", bug)  # what the CLI's Evaluator calls
    result = invoke([q, r, "-m", "AP"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.output.startswith("rankeval: internal error: KeyError")
    assert "--debug" in result.output


def test_memory_error_is_one_line(files, monkeypatch) -> None:
    import rankeval.io.data

    q, r = files

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(rankeval.io.data.Qrels, "read", exhausted)
    result = invoke([q, r, "-m", "AP"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "out of memory" in result.output


def test_ctrl_c_exits_130_without_traceback(files, tmp_path: Path) -> None:
    """A real SIGINT while a measure computes: one line, exit 130, no output file."""
    q, r = files
    (tmp_path / "slow_plugin.py").write_text(SLOW)
    marker = tmp_path / "started"
    out = tmp_path / "out.txt"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SLOW_MARKER": str(marker)}
    env.pop("RANKEVAL_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rankeval.cli", q, r, "-m", "Slow", "--plugin", "slow_plugin", "-o", out],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "rankeval: interrupted"
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


# ------------------------------------------------------------------------ convert's inputs
NESTED_RUN = "1 Q0 p 1 2 t\n1 Q0 p/d 1 1 t\n"
# (case, qrels text, run text, --to, exit code, words)
CONVERT_BAD = [
    ("cost not a number", "1 0 p 1\n1 0 p/d 0.5 cost=abc\n", NESTED_RUN, "json", 1, ("cost=", "'abc'", ":2")),
    ("negative cost", "1 0 p 1\n1 0 p/d 0.5 cost=-3\n", NESTED_RUN, "json", 1, ("non-negative", ":2")),
    ("missing cost", "1 0 p 1\n1 0 p/d 0.5\n", NESTED_RUN, "json", 1, ("needs cost=",)),
    (
        "two assessors",
        "1 0 p 1\n1 1 p 0\n1 0 p/d 0.5 cost=3\n",
        NESTED_RUN,
        "json",
        1,
        ("judged twice", ":2"),
    ),
]


@pytest.mark.parametrize("case,qrels,run,to,code,words", CONVERT_BAD, ids=[c[0] for c in CONVERT_BAD])
def test_convert_bad_input(tmp_path: Path, case, qrels, run, to, code, words) -> None:
    q, r = tmp_path / "in.qrels", tmp_path / "in.run"
    q.write_text(qrels)
    r.write_text(run)
    before = snapshot(tmp_path)
    result = invoke(["convert", q, r, tmp_path / "t.json", tmp_path / "p.json", "--to", to])
    clean_failure(result, code, *words)
    assert snapshot(tmp_path) == before


def test_convert_json_ids_that_trec_cannot_hold(tmp_path: Path) -> None:
    truth, pred = tmp_path / "t.json", tmp_path / "p.json"
    truth.write_text('{"q 1": {"u": [1, {"d": [0.5, 10]}]}}')
    pred.write_text('{"q 1": {"u": [1.0, {"d": 1.0}]}}')
    result = invoke(["convert", truth, pred, tmp_path / "q.txt", tmp_path / "r.txt"])
    clean_failure(result, 1, "'q 1'", "whitespace")
    assert not (tmp_path / "q.txt").exists() and not (tmp_path / "r.txt").exists()
    clean_failure(
        invoke(["convert", truth, pred, tmp_path / "q", tmp_path / "r", "--tag", "a b"]), 2, "--tag"
    )


def test_convert_parquet_never_removes_a_foreign_directory(tmp_path: Path) -> None:
    q, r = tmp_path / "q.txt", tmp_path / "run.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    keep = tmp_path / "precious"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    result = invoke(["convert", q, r, tmp_path / "q.parquet", keep, "--to", "parquet"])
    clean_failure(result, 2, "refusing to replace")
    assert (keep / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------------ Python API misuse
API_MISUSE = [
    ("measures not iterable", lambda q, r: rankeval.evaluate(q, r, 123), "measures must be"),
    ("measures None", lambda q, r: rankeval.evaluate(q, r, None), "measures must be"),
    ("no runs", lambda q, r: rankeval.evaluate(q, [], ["AP"]), "no runs given"),
    (
        "max_docs str",
        lambda q, r: rankeval.evaluate(q, r, ["AP"], options=rankeval.EvalOptions(max_docs="5")),
        "max_docs",
    ),
    (
        "max_docs float",
        lambda q, r: rankeval.evaluate(q, r, ["AP"], options=rankeval.EvalOptions(max_docs=2.5)),
        "max_docs",
    ),
    (
        "max_docs huge",
        lambda q, r: rankeval.evaluate(q, r, ["AP"], options=rankeval.EvalOptions(max_docs=2**40)),
        "max_docs",
    ),
    (
        "nest_sep empty",
        lambda q, r: rankeval.evaluate(q, r, ["AP"], options=rankeval.EvalOptions(nest_sep="")),
        "nest_sep",
    ),
    (
        "nest_sep space",
        lambda q, r: rankeval.evaluate(q, r, ["AP"], options=rankeval.EvalOptions(nest_sep=" ")),
        "nest_sep",
    ),
    ("spec not a string", lambda q, r: rankeval.parse_measure(5), "a measure spec is a string"),
    (
        "random baseline samples",
        lambda q, r: rankeval.random_baseline(q, r, ["AP"], samples=10**12),
        "samples must be an integer from 1 to 10,000,000",
    ),
]


@pytest.mark.parametrize("case,call,words", API_MISUSE, ids=[c[0] for c in API_MISUSE])
def test_api_misuse_is_a_usage_error(files, case, call, words) -> None:
    q, r = files
    with pytest.raises(UsageError, match=words):
        call(q, r)


DICT_MISUSE = [
    (
        "qrels value not a number",
        lambda q, r: rankeval.evaluate({"1": {"d": "x"}}, r, ["AP"]),
        UsageError,
        "expected a number",
    ),
    ("qrels not nested", lambda q, r: rankeval.evaluate({"1": 5}, r, ["AP"]), UsageError, "maps to int"),
    (
        "qrels NaN",
        lambda q, r: rankeval.evaluate({"1": {"d": float("nan")}}, r, ["AP"]),
        rankeval.InputError,
        "finite",
    ),
    (
        "run value not a number",
        lambda q, r: rankeval.evaluate(q, {"1": {"d": "x"}}, ["AP"]),
        UsageError,
        "expected a number",
    ),
    ("run is an int", lambda q, r: rankeval.Run.read(5), UsageError, "expected a path"),
    ("qrels is None", lambda q, r: rankeval.Qrels.read(None), UsageError, "expected a path"),
]


@pytest.mark.parametrize("case,call,error,words", DICT_MISUSE, ids=[c[0] for c in DICT_MISUSE])
def test_in_memory_misuse_is_a_clear_error(files, case, call, error, words) -> None:
    q, r = files
    with pytest.raises(error, match=words):
        call(q, r)
