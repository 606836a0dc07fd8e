"""Nesting decided once, and runs not sorted by query grouped in bounded memory
(:mod:`rankeval.engine.blockwise`, :mod:`rankeval.io.partition`).

- Whether a collection is nested is decided from the qrels before any block is cut
  (``Shared.nested``): each block of a nested run, plain or compressed, is evaluated once.
- A run whose queries are written in several places ("shuffled in chunks", as a run
  concatenated from shards or written by threads) is grouped by query through temporary
  part files: every task holds a bounded share of it, never the whole run; the values are
  those of the same run sorted by query (``sort -s -k1,1``), for every measure, including
  nested ones and ``on_duplicate="first"``; the temporary files are gone afterwards, after
  an error too.
"""

from __future__ import annotations

import gzip
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.engine import blockwise
from rankeval.errors import InputError, ResourceError

pytestmark = pytest.mark.filterwarnings("ignore::rankeval.errors.RankevalWarning")


# ------------------------------------------------------------------------------ data
def nested_collection(tmp_path: Path, queries: int = 60) -> tuple[Path, list[str]]:
    """Individuals with posts (cost=), the last 15 queries flat (individuals without posts), and
    a run grouped by query (its lines, in file order)."""
    rnd = random.Random(5)
    q_lines, r_lines = [], []
    for q in range(queries):
        for u in range(rnd.randint(1, 5)):
            q_lines.append(f"q{q:02d} 0 u{u} {rnd.choice([0, 1, 2])} cost={rnd.randint(0, 50)}\n")
            r_lines.append(f"q{q:02d} Q0 u{u} 0 {rnd.choice([0.1, 0.5, 0.9])} r\n")
            if q >= queries - 15:
                continue
            for p in range(rnd.randint(0, 6)):
                q_lines.append(
                    f"q{q:02d} 0 u{u}/p{p} {rnd.choice([0, 0.2, 1, 2])} cost={rnd.randint(1, 400)}\n"
                )
                r_lines.append(f"q{q:02d} Q0 u{u}/p{p} 0 {rnd.choice([0.2, 0.4, 0.6])} r\n")
    qrels = tmp_path / "n.qrels"
    qrels.write_text("".join(q_lines))
    return qrels, r_lines


def flat_collection(tmp_path: Path, queries: int = 60) -> tuple[Path, list[str]]:
    """A flat collection with ties and duplicate (query, doc) lines of different scores (which
    one counts depends on file order under ``on_duplicate="first"``)."""
    rnd = random.Random(9)
    q_lines, r_lines = [], []
    for q in range(queries):
        docs = rnd.sample(range(200), 40)
        q_lines += [f"{q} 0 D{d} {rnd.choice([0, 1, 2])}\n" for d in docs[:15]]
        r_lines += [f"{q} Q0 D{d} {k} {rnd.choice([1.0, 2.0, 3.5])} t{q % 3}\n" for k, d in enumerate(docs)]
        r_lines += [f"{q} Q0 D{d} 99 {rnd.random():.4f} t{q % 3}\n" for d in docs[:10]]  # duplicates
    qrels = tmp_path / "f.qrels"
    qrels.write_text("".join(q_lines))
    return qrels, r_lines


def chunk_shuffled(lines: list[str], chunk: int, seed: int = 3) -> list[str]:
    """*lines* cut into chunks of *chunk* lines, the chunks in random order (each chunk's
    lines in their order): queries split at chunk edges land in several places."""
    chunks = [lines[i : i + chunk] for i in range(0, len(lines), chunk)]
    random.Random(seed).shuffle(chunks)
    return [line for c in chunks for line in c]


def stable_sorted(lines: list[str]) -> list[str]:
    """``sort -s -k1,1``: by query id, each query's lines in file order."""
    return sorted(lines, key=lambda line: line.split()[0])


def write(path: Path, lines: list[str], compressed: bool) -> Path:
    data = "".join(lines).encode()
    if compressed:
        path = path.with_suffix(path.suffix + ".gz")
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def frame(qrels: Path, run: Path, measures: list[str], block_size: int | None, **options) -> pd.DataFrame:
    ev = rankeval.Evaluator(qrels, measures, options=rankeval.EvalOptions(**options))
    return ev.evaluate({"r": run}, jobs=1, block_size=block_size).reset_index(drop=True)


class Calls:
    """``run_task`` counted: per task, what it was and its rows."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tasks: list[tuple[str, object, int]] = []
        run_task = blockwise.run_task

        def counting(shared, task):
            values = run_task(shared, task)
            part = getattr(task, "part", None)
            kind = "block" if task.block else "part" if part else "memory" if task.memory else "rest"
            where = (task.block.path, task.block.start) if task.block else part.path if part else None
            self.tasks.append((kind, where, values.rows))
            return values

        monkeypatch.setattr(blockwise, "run_task", counting)

    def kinds(self) -> set[str]:
        return {kind for kind, _, _ in self.tasks}


NESTED = ["hTBG@60", "nhTBG@60", "TBG@60", "AP", "nDCG(level=2)", "P(level=2)@2"]
FLAT = ["AP", "nDCG@10", "P@5", "RR", "NumRet"]


# ------------------------------------------------------------------------------ nesting decided once
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
def test_each_block_of_a_nested_run_is_evaluated_once(tmp_path, monkeypatch, compressed):
    """A nested run whose last queries are flat, cut into many blocks: the collection is known
    to be nested from its qrels, so no block is evaluated twice (before: the flat blocks were
    evaluated again, and a compressed file cut again), and the values are the whole run's."""
    qrels, lines = nested_collection(tmp_path)
    run = write(tmp_path / "n.run", lines, compressed)
    whole = frame(qrels, run, NESTED, 10**9)  # one block
    calls = Calls(monkeypatch)
    got = frame(qrels, run, NESTED, 300)
    blocks = [where for kind, where, _ in calls.tasks if kind == "block"]
    assert len(blocks) > 10
    assert len(blocks) == len(set(blocks))  # each block once
    assert calls.kinds() <= {"block", "rest"}
    pd.testing.assert_frame_equal(got, whole, check_exact=True)


@pytest.mark.parametrize(
    ("qrels", "sep", "nested"),
    [
        ("q 0 a 1\nq 0 a/b 1\n", "/", True),  # a child whose parent is judged
        ("q 0 a 1\nq 0 a/b/c 1\nq 0 a/b 0\n", "/", True),  # deeper
        ("q 0 a 1\nq 0 a::b 1\n", "::", True),  # another separator
        ("q 0 a 1\nq 0 a/b 1\n", None, False),  # nesting turned off
        ("q 0 http://x.org/a 1\nq 0 b 1\n", "/", False),  # a '/' whose prefix is no item
        ("q 0 a 1\nr 0 a/b 1\n", "/", False),  # the parent judged in another query only
        ("q 0 a 1\nq 0 b 1\n", "/", False),  # flat
    ],
)
def test_nesting_is_decided_from_the_qrels(tmp_path, qrels, sep, nested):
    """``Shared.nested``: the qrels' own items nest (the rule of docs/formats.md, "Nested
    items"), decided once for the whole evaluation."""
    path = tmp_path / "q.qrels"
    path.write_text(qrels)
    ev = rankeval.Evaluator(path, ["AP"], options=rankeval.EvalOptions(nest_sep=sep))
    shared = blockwise.Shared(ev.prepared.qrels, ev.prepared.computed, ev.prepared.options)
    assert shared.nested is nested


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
def test_a_run_whose_own_items_nest_gives_the_whole_runs_values(tmp_path, compressed):
    """Flat qrels, and a run that ranks a child ``u1/p1`` beside its parent in a few queries:
    the run makes the collection nested (an item without children then reads differently,
    e.g. for hTBG), in every block, as when the run is evaluated whole."""
    q_lines, r_lines = [], []
    for q in range(40):
        for u in range(4):
            q_lines.append(f"q{q:02d} 0 u{u} {u % 2} cost={10 + u}\n")
            r_lines.append(f"q{q:02d} Q0 u{u} 0 {1 + u * 0.1} r\n")
        if q in (3, 30):
            r_lines.append(f"q{q:02d} Q0 u1/p1 0 5 r\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(q_lines))
    run = write(tmp_path / "r.run", r_lines, compressed)
    measures = ["hTBG(default_cost=5)@60", "AP", "nDCG@10"]
    whole = frame(qrels, run, measures, 10**9)
    pd.testing.assert_frame_equal(frame(qrels, run, measures, 300), whole, check_exact=True)


# ------------------------------------------------------------------------------ unsorted runs
CASES = {  # id: (collection, measures, options)
    "nested": ("nested", NESTED, {}),
    "duplicates-first": ("flat", FLAT, {"on_duplicate": "first"}),
    "duplicates-max": ("flat", FLAT, {"on_duplicate": "max"}),
}


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize(("collection", "measures", "options"), list(CASES.values()), ids=list(CASES))
def test_a_run_shuffled_in_chunks_gives_the_sorted_runs_values(
    tmp_path, monkeypatch, compressed, collection, measures, options
):
    """The run shuffled in chunks equals the same run sorted by query (stable), value for
    value, at several block sizes; no task holds the whole run (before: it was read whole,
    as one task)."""
    make = nested_collection if collection == "nested" else flat_collection
    qrels, lines = make(tmp_path)
    shuffled = chunk_shuffled(lines, 37)
    run = write(tmp_path / "shuffled.run", shuffled, compressed)
    ordered = write(tmp_path / "sorted.run", stable_sorted(shuffled), compressed)
    expected = frame(qrels, ordered, measures, 10**9, **options)
    assert len("".join(lines)) > 4 * 1200
    for block_size in (300, 700, 1200):
        calls = Calls(monkeypatch)
        got = frame(qrels, run, measures, block_size, **options)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        assert "part" in calls.kinds() and "memory" not in calls.kinds()
        parts = [rows for kind, _, rows in calls.tasks if kind == "part"]
        assert sum(parts) == len(lines) and max(parts) < len(lines) / 2
        monkeypatch.undo()


def test_an_unsorted_run_is_never_read_whole(tmp_path, monkeypatch):
    """Neither the whole-file reader nor a task of the whole run is used for an unsorted run
    file, and it is cut and read only through the file held open."""
    from rankeval.io import trec
    from rankeval.io.data import Run

    qrels, lines = flat_collection(tmp_path)
    run = write(tmp_path / "r.run", chunk_shuffled(lines, 37), False)
    expected = frame(
        qrels,
        write(tmp_path / "s.run", stable_sorted(chunk_shuffled(lines, 37)), False),
        FLAT,
        None,
        on_duplicate="first",
    )

    def whole(*args, **kwargs):
        raise AssertionError("the run was read whole")

    monkeypatch.setattr(trec, "read_run_table", whole)
    monkeypatch.setattr(Run, "read", whole)
    calls = Calls(monkeypatch)
    with pytest.warns(
        rankeval.errors.RankevalWarning, match=r"run r: not sorted by query .* grouped by query"
    ):
        got = frame(qrels, run, FLAT, 2000, on_duplicate="first")
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert max(rows for _, _, rows in calls.tasks) < len(lines) / 4


def test_an_unsorted_run_keeps_its_last_lines_tag(tmp_path):
    """The run's tag (trec_eval's runid) is its last line's, as for the run read whole."""
    qrels, lines = flat_collection(tmp_path)
    shuffled = chunk_shuffled(lines, 41)
    run = write(tmp_path / "r.run", shuffled, False)
    ev = rankeval.Evaluator(qrels, ["AP"], options=rankeval.EvalOptions(on_duplicate="first"))
    got = ev.results({"r": run}, jobs=1, block_size=2000)
    assert got.run_tags["r"] == shuffled[-1].split()[-1]
    assert ev.results({"r": rankeval.Run.read(run)}, jobs=1).run_tags["r"] == got.run_tags["r"]


# ------------------------------------------------------------------------------ temporary files
def _bad_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[-5] = "1 Q0 D1 1 not-a-number t\n"
    path.write_text("".join(lines))


def _interrupt_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    read_part = blockwise.read_part

    def interrupted(part):
        read_part(part)
        raise KeyboardInterrupt  # (what the command's stop-signal boundary raises)

    monkeypatch.setattr(blockwise, "read_part", interrupted)


def _no_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def short(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(blockwise, "read_part", short)


ENDINGS = [  # (what happens, the exception seen)
    ("success", None, None),
    ("a bad line after the run is found unsorted", _bad_line, InputError),
    ("a stop signal while the parts are evaluated", _interrupt_parts, KeyboardInterrupt),
    ("memory runs out in a part", _no_memory, ResourceError),
]


@pytest.mark.parametrize(("what", "change", "error"), ENDINGS, ids=[e[0] for e in ENDINGS])
def test_temporary_files_are_removed(tmp_path, monkeypatch, what, change, error):
    import tempfile

    qrels, lines = flat_collection(tmp_path)
    run = write(tmp_path / "r.run", chunk_shuffled(lines, 37), False)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    made: list[str] = []
    partition_run = blockwise.partition_run

    def watched(file, block_size, directory, threads=True):
        made.append(directory)
        return partition_run(file, block_size, directory, threads)

    monkeypatch.setattr(blockwise, "partition_run", watched)
    if change is _bad_line:
        _bad_line(run)
    elif change is not None:
        change(monkeypatch)
    if error is None:
        frame(qrels, run, FLAT, 2000, on_duplicate="first")
    else:
        with pytest.raises(error):
            frame(qrels, run, FLAT, 2000, on_duplicate="first")
    if change is not _bad_line:  # (a bad line near the end: found while the parts are written)
        assert made and made[0].startswith(str(temporary))
    assert list(temporary.iterdir()) == []


def test_a_bad_line_of_an_unsorted_run_is_named_as_in_the_whole_file(tmp_path):
    """The partition pass parses as the whole-file reader does: the same file line."""
    qrels, lines = flat_collection(tmp_path)
    run = write(tmp_path / "r.run", chunk_shuffled(lines, 37), False)
    _bad_line(run)
    with pytest.raises(InputError) as whole:
        rankeval.Run.read(run)
    with pytest.raises(InputError) as grouped:
        frame(qrels, run, FLAT, 2000, on_duplicate="first")
    assert str(grouped.value) == str(whole.value)
    assert f":{len(lines) - 4}:" in str(grouped.value)


def test_a_part_larger_than_the_block_size_is_spread_again(tmp_path):
    """Parts are bounded by about the block size whatever the first estimate: a part past
    twice the block size (several queries hashed alike) is spread over parts of its own."""
    from rankeval.io.blocks import RunFile
    from rankeval.io.partition import partition_run, read_part

    lines = [f"{q} Q0 D{d} {d} {100 - d} t\n" for q in range(400) for d in range(20)]
    run = write(tmp_path / "r.run", chunk_shuffled(lines, 300), True)  # (gz: a size guessed)
    directory = tmp_path / "parts"
    directory.mkdir()
    with RunFile(run) as file:
        parts = partition_run(file, 64 * 1024, str(directory)).parts
    sizes = [p.rows for p in parts]
    assert sum(sizes) == len(lines)
    assert max(sizes) * 22 <= 2 * 64 * 1024 + 4000  # (22 bytes a line; one query's rows at most over)
    seen: dict[str, int] = {}
    for k, part in enumerate(parts):  # every query in one part, in file order
        table, file_lines = read_part(part)
        assert (np.diff(file_lines) > 0).all()
        for q in set(table.column("query_id").to_pylist()):
            assert seen.setdefault(q, k) == k
    assert sorted(p.name for p in directory.iterdir()) == sorted(Path(p.path).name for p in parts)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stop_signal_while_grouping_removes_the_temporary_files(tmp_path, jobs, request):
    """The command stopped by SIGTERM while an unsorted run is grouped or its parts are
    evaluated: its one line, and no part file left in ``$TMPDIR``."""
    import os
    import signal
    import subprocess
    import sys
    import time

    lines = [f"{q} Q0 D{d} {d} {500 - d} t\n" for q in range(2000) for d in range(100)]
    run = write(tmp_path / "r.run", chunk_shuffled(lines, 3333), False)
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"{q} 0 D{d} 1\n" for q in range(2000) for d in range(0, 100, 7)))
    # a short $TMPDIR: the worker pool's AF_UNIX socket lives there, and its path may not be
    # longer than 107 bytes (pytest-xdist's tmp_path can be)
    import tempfile

    temporary = Path(tempfile.mkdtemp(prefix="rv-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    argv = [sys.executable, "-m", "rankeval.cli", str(qrels), str(run), "-m", "AP", "--jobs", str(jobs)]
    child = subprocess.Popen(
        [*argv, "--block-size", "64KiB", "-o", str(tmp_path / "out.txt")],
        env={**os.environ, "TMPDIR": str(temporary)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(temporary.rglob("*.arrow")) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if child.poll() is not None:
        _, err = child.communicate()
        pytest.fail(f"the command ended (exit {child.returncode}) before it wrote a part file: {err}")
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "Traceback" not in err
    assert [x for x in err.splitlines() if "warning" not in x] == ["rankeval: terminated (SIGTERM)"]
    assert list(temporary.iterdir()) == []
