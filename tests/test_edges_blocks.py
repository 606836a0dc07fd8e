"""Edges of the block splitter and the block engine (issue "Edges, round two"): cuts and
scans linear in the bytes read, whatever the shape of the lines; a run file that changes
while it is evaluated is an error naming it (never a hang, never a mix of two files); memory
running out ends in rankeval's one line, never an abort; ``--block-size`` has a floor."""

from __future__ import annotations

import gzip
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import rankeval
from rankeval.errors import InputError
from rankeval.io import blocks
from rankeval.io.lines import MAX_LINE

MiB = 2**20


# ------------------------------------------------------------------ linear cuts and scans
def _one_field(n: int) -> bytes:
    """A run whose third line is one field of *n* bytes: a query id as long as the line."""
    return b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n" + b"x" * n + b"\nq2 Q0 d3 1 1 t\n"


def _long_doc(n: int) -> bytes:
    """A run whose third line holds a doc id of *n* bytes (the line of the issue)."""
    return b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d" + b"x" * n + b" 3 0.5 t\nq2 Q0 d3 1 1 t\n"


def _no_newline(n: int) -> bytes:
    """*n* bytes and not one newline."""
    return b"q1 Q0 d" + b"x" * n


def _one_query(n: int) -> bytes:
    """One query's lines, *n* bytes of them."""
    line = b"q1 Q0 d%07d 1 1.5 t\n"
    return b"".join(line % i for i in range(n // len(line % 0) + 1))


def _blank_lines(n: int) -> bytes:
    """One query, then *n* bytes of blank and comment lines, then another query."""
    filler = b"\n# a comment\n   \n" * (n // 17 + 1)
    return b"q1 Q0 d1 1 1 t\n" + filler + b"q2 Q0 d2 1 1 t\n"


SHAPES: dict[str, Callable[[int], bytes]] = {
    "a line that is one long field": _one_field,
    "a line with a long doc id": _long_doc,
    "a file without any newline": _no_newline,
    "one query of many lines": _one_query,
    "many blank and comment lines": _blank_lines,
}


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("shape", SHAPES)
def test_cutting_is_linear_in_the_bytes_read(tmp_path, monkeypatch, shape, compressed):
    """Every shape of line that once made a cut or a scan quadratic — a query id as long as
    its line (37 s for 20 MiB with the default --jobs, where --jobs 1 took 1.1 s), a long
    line, no newline at all, one query of many lines, many lines without a query — is cut
    into blocks (the scan only, no parsing) looking at each byte a few times: the bytes the
    cuts look at stay within a few times the file's, and 4 MiB take well under a second
    (seconds per MiB when quadratic)."""
    data = SHAPES[shape](4 * MiB)
    path = tmp_path / f"shape.run{'.gz' if compressed else ''}"
    path.write_bytes(gzip.compress(data, 1) if compressed else data)
    looked = []
    cut = blocks._cut
    monkeypatch.setattr(blocks, "_cut", lambda buf, at: looked.append(len(buf)) or cut(buf, at))
    start = time.perf_counter()
    found = list(blocks.split_run(path, 4096))
    elapsed = time.perf_counter() - start
    assert found[0].start == 0 and found[-1].end == len(data)
    assert all(a.end == b.start for a, b in itertools.pairwise(found))
    assert sum(looked) <= 8 * len(data) + MiB
    assert elapsed < 3.0, f"{elapsed:.2f} s to cut {len(data):,} bytes"


def test_a_query_of_200_mb_is_one_block_cut_in_a_few_seconds(tmp_path):
    """One query of 200 MB (under LONGEST_QUERY: not cut) is one block, found by a scan
    that reads it once (the blocks' bytes are read where they are evaluated); the next
    query starts the next."""
    line = b"q1 Q0 d%07d 1 1.5 t\n"
    chunk = b"".join(line % i for i in range(100_000))
    path = tmp_path / "big.run"
    with path.open("wb") as fh:
        for _ in range(200 * 10**6 // len(chunk) + 1):
            fh.write(chunk)
        fh.write(b"q2 Q0 d 1 1 t\n")
    size = path.stat().st_size
    assert 200 * 10**6 < size < blocks.LONGEST_QUERY
    start = time.perf_counter()
    found = list(blocks.split_run(path, 32 * MiB))
    elapsed = time.perf_counter() - start
    path.unlink()
    last = len(b"q2 Q0 d 1 1 t\n")
    assert [(b.start, b.end) for b in found] == [(0, size - last), (size - last, size)]
    assert elapsed < 20, f"{elapsed:.1f} s to cut 200 MB"


def _run_lines(long_line: bytes) -> bytes:
    """A sorted run of 40 queries whose third line is *long_line*."""
    lines = [b"q00 Q0 d1 1 2 t\n", b"q00 Q0 d2 2 1 t\n", long_line]
    lines += [b"q%02d Q0 d%d %d %d t\n" % (q, d, d, 100 - d) for q in range(1, 40) for d in range(1, 30)]
    return b"".join(lines)


def _line_of(length: int) -> bytes:
    """A run line of *length* bytes (its newline not counted): a long doc id, and a rank
    and a score of one byte (what the fast reader's bound on a line's length assumes)."""
    return b"q00 Q0 d" + b"x" * (length - len(b"q00 Q0 d 3 5 t")) + b" 3 5 t\n"


LONG_LINES = {  # the third line, and the error it gives (None: it is a good line)
    "at the limit": (_line_of(MAX_LINE), None),
    "one byte over": (_line_of(MAX_LINE + 1), f":3: line of {MAX_LINE + 1:,} bytes"),
    "20 MiB, one field": (b"x" * (20 * MiB) + b"\n", ":3: line of 20,971,520 bytes"),
    "20 MiB, a long doc id": (_line_of(20 * MiB), ":3: line of 20,971,520 bytes"),
}


@pytest.mark.parametrize("case", LONG_LINES)
def test_long_lines_with_several_jobs_as_with_one(tmp_path, case):
    """Lines at and over the 1 MiB limit: the same result or the same one error with
    ``--jobs 2`` and small blocks as with one job and one block, in seconds."""
    line, error = LONG_LINES[case]
    run = tmp_path / "long.run"
    run.write_bytes(_run_lines(line))
    qrels = tmp_path / "q.qrels"
    qrels.write_bytes(b"".join(b"q%02d 0 d%d 1\n" % (q, d) for q in range(40) for d in range(1, 30, 3)))
    outcomes = []
    for jobs, block_size in ((1, None), (2, 65536)):
        start = time.perf_counter()
        try:
            frame = rankeval.evaluate(qrels, run, ["AP", "P@5"], jobs=jobs, block_size=block_size)
            outcomes.append(frame.to_csv())
        except InputError as exc:
            outcomes.append(str(exc))
        assert time.perf_counter() - start < 30
    assert outcomes[0] == outcomes[1]
    if error is None:
        assert "q00" in outcomes[0]
    else:
        assert outcomes[0].startswith(str(run)) and error in outcomes[0]


# ---------------------------------------------------------------- a file changed while read
CHANGE_SCRIPT = r"""
import os, sys
from pathlib import Path

import rankeval
from rankeval.engine import blockwise


def change(path, how):
    if how == "truncated":
        os.truncate(path, os.path.getsize(path) // 3)
    elif how == "replaced":
        other = Path(str(path) + ".new")
        other.write_bytes(Path(path).read_bytes().replace(b" t\n", b" u\n"))
        os.replace(other, path)
    elif how == "written to":
        with open(path, "r+b") as fh:
            fh.seek(os.path.getsize(path) // 2)
            fh.write(b"#")
    elif how == "appended to":
        with open(path, "ab") as fh:
            fh.write(b"q99 Q0 d1 1 1 t\n")
    elif how == "removed":
        os.unlink(path)


def main():
    qrels, run, how, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    split = blockwise.split_run

    def hooked(source, block_size):
        for k, block in enumerate(split(source, block_size)):
            if k == 2:  # two blocks cut (and maybe read): the file changes under the evaluation
                change(run, how)
            yield block

    blockwise.split_run = hooked
    try:
        rankeval.evaluate(qrels, run, "AP", jobs=jobs, block_size=4096)
    except rankeval.errors.RankevalError as exc:
        print(f"error: {exc}")
        return
    print("no error")


if __name__ == "__main__":
    main()
"""

CHANGES = {  # how the file changes, what the message says
    "truncated": "truncated from",
    "replaced": "replaced by another file",
    "written to": "written to",
    "appended to": "written to",
    "removed": "removed",
}


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("how", CHANGES)
def test_a_run_changed_while_read_is_an_error_naming_it(tmp_path, how, jobs):
    """A run file truncated (rankeval once waited forever for its missing bytes), replaced
    under its name (``mv new old``: once a silent mix of both files), written to, appended
    to or removed while its blocks are read: one error naming the file, with one job or
    with workers, within seconds."""
    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_bytes(b"".join(b"q%03d 0 d%d 1\n" % (q, d) for q in range(300) for d in range(0, 20, 4)))
    run.write_bytes(
        b"".join(b"q%03d Q0 d%d %d %d t\n" % (q, d, d, 50 - d) for q in range(300) for d in range(20))
    )
    old = time.time_ns() - 10**9  # written a while ago (an in-place write then changes its time)
    os.utime(run, ns=(old, old))
    script = tmp_path / "change.py"
    script.write_text(CHANGE_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(qrels), str(run), how, str(jobs)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"error: {run}: the file changed while it was being read")
    assert CHANGES[how] in done.stdout
    assert "Traceback" not in done.stderr


def test_every_read_of_a_run_comes_from_the_file_held_open(tmp_path, monkeypatch):
    """The evaluation opens a run file once: one descriptor for the cuts, the blocks and
    an unsorted run's second reading, to group it by query (not a whole-file read by path), not
    one per block."""
    from rankeval.io.data import Run

    run = tmp_path / "r.run"
    lines = [b"q%03d Q0 d%d %d %d t\n" % (q, d, d, 50 - d) for q in range(100) for d in range(20)]
    run.write_bytes(b"".join(lines[1::2] + lines[::2]))  # not sorted by query: read twice
    qrels = tmp_path / "q.qrels"
    qrels.write_bytes(b"".join(b"q%03d 0 d%d 1\n" % (q, d) for q in range(100) for d in range(0, 20, 4)))
    expected = rankeval.evaluate(qrels, tmp_path / "r.run", "AP", jobs=1, block_size=10**9)  # one block
    opened: list[str] = []

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return open(file, *args, **kwargs)

    def no_whole_read(*args, **kwargs):
        raise AssertionError("the run was read again by path")

    monkeypatch.setattr(blocks, "open", counting_open, raising=False)
    monkeypatch.setattr(Run, "read", no_whole_read)
    with pytest.warns(rankeval.errors.RankevalWarning, match="not sorted by query"):
        got = rankeval.evaluate(qrels, run, "AP", jobs=1, block_size=4096)
    assert opened == [str(run)]
    assert got.equals(expected)


# ------------------------------------------------------------------------ out of memory
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux (prlimit)")
def test_an_unsorted_run_out_of_memory_ends_in_one_line(tmp_path):
    """An unsorted run (grouped by query through part files) under address-space limits from just
    above what the program needs to start to what the evaluation needs: each try succeeds
    or ends in rankeval's one line — never pyarrow's abort (exit 134, ``ValueOrDie`` called
    on a failed allocation), never a traceback — and the advice names no engine."""
    import shutil

    if shutil.which("prlimit") is None:
        pytest.skip("prlimit is not installed")
    lines = [
        b"%d Q0 %d %d %d.5 bench\n" % (q, 10**6 + q * 997 + d, d, 999 - d)
        for q in range(2000)
        for d in range(200)
    ]
    run = tmp_path / "unsorted.run"
    run.write_bytes(b"".join(lines[1::2] + lines[::2]))  # every query in two places
    qrels = tmp_path / "q.qrels"
    qrels.write_bytes(b"".join(b"%d 0 %d 1\n" % (q, 10**6 + q * 997) for q in range(2000)))
    args = [str(qrels), str(run), "-m", "AP", "--jobs", "1", "-f", "tsv", "-o", "out.tsv"]
    start = _started_size(tmp_path)
    codes = []
    short = 0
    for extra in range(0, 600, 40):
        done = subprocess.run(
            ["prlimit", f"--as={start + extra * MiB}", sys.executable, "-m", "rankeval.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        codes.append(done.returncode)
        if done.returncode != 0:
            said = [x for x in done.stderr.splitlines() if "warning" not in x]
            assert done.returncode == 1, done.stderr[-2000:]
            assert len(said) == 1 and said[0].startswith("rankeval: error: "), done.stderr[-2000:]
            assert "--engine dask" not in said[0]
            short += "out of memory" in said[0]
    assert short and 0 in codes, codes  # (the limits span the evaluation's need)


def _started_size(cwd: Path) -> int:
    """The address space of a Python process that has imported what the command needs."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import rankeval.cli.app, pyarrow.compute, pyarrow.csv, pandas\n"
            "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmPeak:')))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=True,
    )
    return int(done.stdout) * 1024


# ---------------------------------------------------------------------- the block floor
@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("1", blocks.MIN_BLOCK_SIZE),
        ("1kB", blocks.MIN_BLOCK_SIZE),
        ("65535", blocks.MIN_BLOCK_SIZE),
        ("1MiB", MiB),
    ],
)
def test_block_size_has_a_floor(tmp_path, monkeypatch, given, used):
    """``--block-size`` below :data:`~rankeval.io.blocks.MIN_BLOCK_SIZE` (64 KiB) is raised
    to it: a block costs about a millisecond whatever its size (``--block-size 1`` once took
    over 2 minutes for 200,000 queries)."""
    from typer.testing import CliRunner

    from rankeval.cli.app import app
    from rankeval.engine import blockwise

    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_bytes(b"q1 0 d1 1\n")
    run.write_bytes(b"q1 Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\n")
    sizes: list[int] = []
    split = blockwise.split_run
    monkeypatch.setattr(
        blockwise, "split_run", lambda source, size: sizes.append(size) or split(source, size)
    )
    result = CliRunner().invoke(app, [str(qrels), str(run), "-m", "AP", "--jobs", "1", "--block-size", given])
    assert result.exit_code == 0, result.output
    assert sizes == [used]


def test_memory_advice_names_no_engine_that_would_not_help() -> None:
    """Every out-of-memory message gives advice that is true of the engines (issue 24, item
    1): none sends the user to --engine dask, which reads a run in blocks as the default
    engine does."""
    import bz2
    import io as _io

    from rankeval.errors import ResourceError, measure_guard
    from rankeval.io.inputs import _BZIP2, Decompressed

    with pytest.raises(ResourceError) as measure_error, measure_guard("AP"):
        raise MemoryError
    bomb = bz2.compress(b"0" * (1 << 20))
    reader = Decompressed(_io.BytesIO(bomb), _BZIP2, "run.bz2", limit=1 << 16, size=len(bomb))
    with pytest.raises(ResourceError) as bomb_error:
        reader.read()
    for message in (str(measure_error.value), str(bomb_error.value)):
        assert "out of memory" in message or "exceeds" in message
        assert "dask" not in message
