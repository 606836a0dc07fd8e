"""Faults of the environment the ``rankeval`` command runs in — a closed standard stream, a
file name that is not UTF-8, too few file descriptors, a small address-space limit — each
give one true line, never an "internal error" or a traceback (issue 24, item 24).

The commands run as real processes (the faults are the process's own: its descriptors, its
limits, its arguments).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX limits and file names")

RANKEVAL = [sys.executable, "-m", "rankeval.cli"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Qrels and a run of 2,000 queries (about 450 kB, 30 blocks at --block-size 16kB)."""
    qrels, run = tmp_path / "q.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q{q} 0 d{q}_1 1\n" for q in range(2000)))
    run.write_text("".join(f"q{q} Q0 d{q}_{r} {r} {100 - r} t\n" for q in range(2000) for r in range(1, 11)))
    return qrels, run


def _popen(args, tmp_path, preexec, stdin, env) -> subprocess.CompletedProcess:
    """Run *args*; stderr captured, stdout captured unless *preexec* closes it."""
    closes_stdout = preexec is _close_stdout
    proc = subprocess.run(
        [a if isinstance(a, bytes) else str(a) for a in args],
        cwd=tmp_path,
        env=env,
        stdin=stdin,
        stdout=None if closes_stdout else subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=preexec,
        timeout=120,
    )
    return proc


def _close_stdout() -> None:
    os.close(1)


def _close_stdin() -> None:
    os.close(0)


def _one_error_line(proc: subprocess.CompletedProcess, code: int, *words: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rankeval: error: "), err
    for word in words:
        assert word in lines[0], err
    return lines[0]


# (case, how the standard streams are, the qrels and run arguments, exit code, words of the line)
CLOSED = [
    ("stdout closed", _close_stdout, None, 1, ("standard output", "closed")),
    ("stdin closed, run '-'", _close_stdin, "-", 1, ("<stdin>", "standard input is closed")),
]


@pytest.mark.parametrize(("case", "preexec", "run_arg", "code", "words"), CLOSED, ids=[c[0] for c in CLOSED])
def test_a_closed_standard_stream_is_one_line(files, tmp_path, case, preexec, run_arg, code, words) -> None:
    qrels, run = files
    proc = _popen(
        [*RANKEVAL, qrels, run_arg or run, "-m", "P@5", "-j", "1"], tmp_path, preexec, None, dict(os.environ)
    )
    _one_error_line(proc, code, *words)


NON_UTF8 = b"b\xe4r.run"  # a Latin-1 file name
SHOWN = "b\\xe4r.run"  # the run's name in every output


@pytest.mark.parametrize("fmt", ["trec", "tsv", "csv", "json", "jsonl", "markdown", "latex"])
def test_a_run_file_name_that_is_not_utf8_is_named_with_escapes(files, tmp_path: Path, fmt) -> None:
    """Each output format writes such a run's name with the byte as ``\\xe4`` (``--per-query``
    too), where it raised UnicodeEncodeError."""
    qrels, run = files
    (tmp_path / os.fsdecode(NON_UTF8)).write_bytes(run.read_bytes())
    args = [*RANKEVAL, str(qrels).encode(), NON_UTF8, str(run).encode(), "-m", "P@5", "-f", fmt, "-j", "1"]
    for extra in ([], ["--per-query"]):
        proc = _popen([*args, *extra], tmp_path, None, subprocess.DEVNULL, dict(os.environ))
        out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0 and err == "", err
        if fmt == "json":
            assert SHOWN in {row["run"] for row in json.loads(out)}
        elif fmt == "jsonl":
            assert SHOWN in {json.loads(line)["run"] for line in out.splitlines()}
        elif fmt == "markdown":
            assert SHOWN.replace("\\", "\\\\") in out
        elif fmt == "latex":
            assert SHOWN.replace("\\", "\\textbackslash{}") in out
        else:
            assert SHOWN in out


def test_compare_names_a_run_file_that_is_not_utf8_with_escapes(files, tmp_path: Path) -> None:
    qrels, run = files
    (tmp_path / os.fsdecode(NON_UTF8)).write_bytes(run.read_bytes())
    args = [*RANKEVAL, b"compare", str(qrels).encode(), NON_UTF8, str(run).encode(), b"-m", b"P@5"]
    proc = _popen(args, tmp_path, None, subprocess.DEVNULL, dict(os.environ))
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert SHOWN in proc.stdout.decode("utf-8")


def _nofile(limit: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return set_limit


@pytest.mark.parametrize("limit", [12, 16])
def test_too_few_file_descriptors_for_the_workers_is_one_line(files, tmp_path: Path, limit) -> None:
    """``ulimit -n 16`` with ``--jobs 2``: the worker processes cannot start (was an internal
    error, OSError from the fork server)."""
    qrels, run = files
    proc = _popen(
        [*RANKEVAL, qrels, run, "-m", "P@5", "-j", "2", "--block-size", "16kB"],
        tmp_path,
        _nofile(limit),
        subprocess.DEVNULL,
        dict(os.environ),
    )
    _one_error_line(proc, 1, "worker processes", "Too many open files", "ulimit -n", "--jobs 1")


def test_a_temporary_directory_too_long_for_the_workers_socket_is_named(files, tmp_path: Path) -> None:
    """``--jobs 2`` with a ``$TMPDIR`` longer than a socket path may be (107 bytes): one line
    that names the directory and what to do (it advised raising a limit, as for ``ulimit -n``)."""
    qrels, run = files
    long = tmp_path / ("t" * (120 - len(str(tmp_path))))
    long.mkdir()
    proc = _popen(
        [*RANKEVAL, qrels, run, "-m", "P@5", "-j", "2", "--block-size", "16kB"],
        tmp_path,
        None,
        subprocess.DEVNULL,
        {**os.environ, "TMPDIR": str(long)},
    )
    line = _one_error_line(proc, 1, "worker processes", "TMPDIR", "--jobs 1", str(long))
    assert "raise the limit" not in line


def _address_space(kib: int):
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))

    return set_limit


# address-space limits (KiB) that failed as: ImportError ... failed to map segment (an internal
# error), "interrupted" (OpenBLAS sends itself SIGINT when it cannot start its threads), and
# "q.txt: cannot be read: ... Failed to launch worker thread" (blaming the qrels); the exact
# figures depend on the libraries installed: each case checks what the line says
ADDRESS_SPACE = [155_000, 170_000, 185_000, 230_000, 305_000, 350_000, 380_000]


@pytest.mark.parametrize("kib", ADDRESS_SPACE)
def test_a_small_address_space_limit_is_one_true_line(files, tmp_path: Path, kib) -> None:
    """Under ``ulimit -v``, whatever runs out first: one line naming the limit (or the plain
    out-of-memory line), never "interrupted", an internal error or blame on an input file."""
    qrels, run = files
    proc = _popen(
        [*RANKEVAL, qrels, run, "-m", "P@5", "-j", "1"], tmp_path, _address_space(kib), subprocess.DEVNULL, dict(os.environ)
    )
    if proc.returncode == 0:
        pytest.skip(f"rankeval runs within {kib} KiB here")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0 or proc.returncode == 134:
        pytest.skip(f"a native library died at this limit ({proc.returncode}): {err[-300:]}")
    line = _one_error_line(proc, 1)
    assert f"ulimit -v {kib}" in line or "out of memory" in line, line
    assert "cannot be read" not in line, line  # an input file is not to blame


def test_a_script_fed_on_stdin_evaluates_with_workers(tmp_path: Path) -> None:
    """``python - < script.py`` calling ``evaluate(..., jobs=2)``: the workers do not try to run
    the script again from a file named ``<stdin>`` (issue 24, item 26): no traceback, the
    value of ``jobs=1``."""
    examples = Path(__file__).resolve().parents[1] / "rankeval" / "examples"
    script = (
        "import rankeval\n"
        f"q, r = {str(examples / 'dl-hard.qrels.txt')!r}, {str(examples / 'dl-hard-bm25.run.gz')!r}\n"
        "values = [rankeval.evaluate(q, r, ['AP'], jobs=j, block_size=20000) for j in (2, 1)]\n"
        "print(*(float(v[v.query_id.isna()].value.item()) for v in values))\n"
    )
    done = subprocess.run(
        [sys.executable, "-"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    with_workers, alone = map(float, done.stdout.split())
    assert with_workers == alone


@pytest.mark.parametrize("where", ["raised", "behind an input error"])
def test_too_many_open_files_anywhere_is_the_limit_not_the_file(where) -> None:
    """``EMFILE`` wherever it happens (a late import, a reader opening a run file) is named as
    the open-files limit, not as an internal error nor as a fault of the file being opened."""
    import errno

    from rankeval.cli.common import _limit_fault
    from rankeval.errors import InputError, ResourceError

    cause = OSError(errno.EMFILE, "Too many open files")
    if where == "raised":
        exc: BaseException = cause
    else:
        try:
            try:
                raise cause
            except OSError:
                raise InputError("cannot be read: Too many open files", source="run.txt") from None
        except InputError as error:
            exc = error
    fault = _limit_fault(exc)
    assert isinstance(fault, ResourceError)
    text = str(fault)
    assert "Too many open files" in text and "ulimit -n" in text and "--jobs 1" in text
    assert "run.txt" not in text
    assert _limit_fault(InputError("bad line", source="run.txt")) is None
