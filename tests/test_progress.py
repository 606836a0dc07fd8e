"""Progress on long work (issue 26, item 5): a bar of the blocks evaluated, on stderr, for the
main command and ``compare``, on every scheduler; only when stderr is a terminal.

The commands run on a generated run of 200,000 lines (200 queries x 1,000 documents, about
4.9 MB) cut into 64 KiB blocks (about 70), with stderr a pseudo-terminal (:mod:`pty`: what
the terminal is sent) or a pipe. A terminal sees the bar (its label, its bar characters, a
percentage); a pipe sees nothing at all on stderr; ``--no-progress`` shows nothing on a
terminal. In the library, the engine's progress callback
(:data:`rankeval.engine.evaluation.BlockProgress`) is started once with the estimated tasks
and advanced once per task, on every scheduler, with the same values as without it; runs
whose text fits in one block start no bar, and rich is not imported for them.
"""

from __future__ import annotations

import os
import pty
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import rankeval
from rankeval.engine.distributed import DaskOptions
from rankeval.engine.evaluation import evaluate_prepared
from rankeval.io.blocks import split_run

BAR = "━".encode()  # rich's bar character
LABEL = b"evaluating blocks"
BLOCK = 64 * 2**10


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Qrels and a sorted run of 200 queries x 1,000 documents (distinct scores: no tie
    warning), and a small run of one block."""
    root = tmp_path_factory.mktemp("progress")
    rng = random.Random(7)
    qrels, run, small = root / "qrels.txt", root / "big.run", root / "small.run"
    with qrels.open("w") as q, run.open("w") as r, small.open("w") as s:
        for i in range(200):
            for j in range(1000):
                line = f"q{i:03d} Q0 d{j} {j + 1} {1000 - j}.5 tag\n"
                r.write(line)
                if i < 5 and j < 10:
                    s.write(line)
                if j % 37 == 0:
                    q.write(f"q{i:03d} 0 d{j} {rng.randint(0, 2)}\n")
    return {"qrels": qrels, "run": run, "small": small}


COMMANDS = {
    "evaluate --jobs 1": ["{qrels}", "{run}", "-m", "AP", "--jobs", "1"],
    "evaluate --jobs 2": ["{qrels}", "{run}", "-m", "AP", "--jobs", "2"],
    "evaluate --engine dask": ["{qrels}", "{run}", "-m", "AP", "--engine", "dask", "--workers", "1"],
    "compare --jobs 1": ["compare", "{qrels}", "a={run}", "b={run}", "-m", "AP", "--jobs", "1"],
    "compare --jobs 2": ["compare", "{qrels}", "a={run}", "b={run}", "-m", "AP", "--jobs", "2"],
}


def _command(name: str, data: dict[str, Path], *extra: str) -> list[str]:
    args = [a.format(qrels=data["qrels"], run=data["run"]) for a in COMMANDS[name]]
    return [sys.executable, "-m", "rankeval.cli", *args, "--block-size", "64KiB", *extra]


def _environment() -> dict[str, str]:
    """This environment as a terminal user's: no variable that tells rich to draw or not."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR")
    }
    env.update(TERM="xterm-256color", COLUMNS="100")
    return env


def on_terminal(args: list[str]) -> tuple[int, bytes, bytes]:
    """Run *args* with stderr a pseudo-terminal: exit status, stdout, what the terminal was sent."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower, env=_environment())
    finally:
        os.close(follower)
    shown = bytearray()
    try:
        while True:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # EIO: the process closed its side
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    return proc.wait(timeout=120), out, bytes(shown)


def on_pipe(args: list[str]) -> tuple[int, bytes, bytes]:
    """Run *args* with stderr a pipe: exit status, stdout, stderr."""
    done = subprocess.run(args, capture_output=True, env=_environment(), timeout=120, check=False)
    return done.returncode, done.stdout, done.stderr


def _slow_pools(names: list[str]) -> list[object]:
    """*names*, those that start worker processes (``--jobs 2``, Dask: twice per test) marked slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if "--jobs 2" in n or "dask" in n else n for n in names]


#: pyarrow's intermittent abort at interpreter exit (a native thread still joinable when the
#: process ends: apache/arrow#34314), seen here a few times in a hundred; the docs test knows it
#: too (tests/test_docs_examples.py, KNOWN_ABORT). After the work and its output are complete.
KNOWN_ABORT = b"terminate called without an active exception"


def _aborted_at_exit(rc: int, shown: bytes) -> None:
    """An expected failure for the known abort at exit, after the results were written."""
    if rc in (-6, 134) and KNOWN_ABORT in shown:
        pytest.xfail("rankeval aborted at exit (pyarrow, apache/arrow#34314), after its output")


@pytest.mark.parametrize("name", _slow_pools(list(COMMANDS)))
def test_a_terminal_sees_the_bar_and_a_pipe_none(name: str, data: dict[str, Path]) -> None:
    rc, out, shown = on_terminal(_command(name, data))
    assert LABEL in shown and BAR in shown and b"%" in shown  # (before any abort at exit)
    _aborted_at_exit(rc, shown)
    assert rc == 0, shown.decode(errors="replace")
    assert LABEL in shown and BAR in shown and b"%" in shown
    rc, piped, err = on_pipe(_command(name, data))
    _aborted_at_exit(rc, err)
    assert rc == 0, err.decode(errors="replace")
    assert err == b""  # not a byte of the bar, nor anything else
    assert piped == out  # the same results either way


@pytest.mark.parametrize("name", _slow_pools(list(COMMANDS)))
def test_no_progress_shows_none_on_a_terminal(name: str, data: dict[str, Path]) -> None:
    rc, out, shown = on_terminal(_command(name, data, "--no-progress"))
    _aborted_at_exit(rc, shown)
    assert rc == 0, shown.decode(errors="replace")
    assert shown == b""
    assert out.count(b"AP") == len(out.splitlines())  # the results, one line per run


class Recorder:
    """An engine progress callback that records its start and its steps."""

    def __init__(self) -> None:
        self.totals: list[int] = []
        self.steps: list[int] = []

    def __call__(self, total: int) -> Recorder:
        self.totals.append(total)
        return self

    def advance(self, n: int) -> None:
        self.steps.append(n)

    def wait_for(self, count: int) -> None:
        """Until *count* steps are recorded (the Dask client advances from a thread of its
        own, which may run just after the results are gathered), at most 10 s."""
        end = time.monotonic() + 10
        while sum(self.steps) < count and time.monotonic() < end:
            time.sleep(0.01)


SCHEDULERS: dict[str, dict[str, Any]] = {
    "this process": {"jobs": 1},
    "local pool": {"jobs": 2},
    "dask": {"engine": DaskOptions(workers=1)},
}


@pytest.mark.parametrize(
    "scheduler", [pytest.param(s, marks=pytest.mark.slow) if s == "dask" else s for s in SCHEDULERS]
)
def test_every_scheduler_advances_once_per_task(scheduler: str, data: dict[str, Path]) -> None:
    ev = rankeval.Evaluator(data["qrels"], ["AP", "nDCG@10"])
    recorder = Recorder()
    how = {"block_size": BLOCK, **SCHEDULERS[scheduler]}
    got = evaluate_prepared(ev.prepared, data["run"], progress=lambda total: recorder(total).advance, **how)
    blocks = len(list(split_run(data["run"], BLOCK)))
    recorder.wait_for(blocks)
    assert recorder.totals == [-(-data["run"].stat().st_size // BLOCK)]  # started once, on the estimate
    assert recorder.steps == [1] * blocks  # one step per block
    assert blocks > 1 and blocks <= recorder.totals[0]  # (each block but the last is a full block at least)
    plain = evaluate_prepared(ev.prepared, data["run"], **how)
    assert got.to_frame().equals(plain.to_frame())


@pytest.mark.parametrize("jobs", [1, 2, None])
@pytest.mark.parametrize("runs", ["one", "three"])
def test_runs_of_one_block_start_no_bar(jobs: int | None, runs: str, data: dict[str, Path]) -> None:
    """A run of one block, or several whose text is less than a block, start no bar."""
    ev = rankeval.Evaluator(data["qrels"], ["AP"])
    recorder = Recorder()
    given = data["small"] if runs == "one" else {name: data["small"] for name in "abc"}
    evaluate_prepared(ev.prepared, given, jobs=jobs, progress=lambda total: recorder(total).advance)
    assert recorder.totals == [] and recorder.steps == []


SCRIPT = """
import sys
import rankeval
ev = rankeval.Evaluator(sys.argv[1], ["AP"])
ev.results(sys.argv[2], jobs=1, block_size=int(sys.argv[3]), progress=True)
print("rich" in sys.modules)
"""


@pytest.mark.parametrize(
    ("run", "block_size", "imported"), [("small", BLOCK, b"False"), ("run", BLOCK, b"True")]
)
def test_rich_is_imported_only_for_a_bar(
    run: str, block_size: int, imported: bytes, data: dict[str, Path]
) -> None:
    """``progress=True``: a run of one block shows no bar and imports no rich; a run of many
    blocks does."""
    args = [sys.executable, "-c", SCRIPT, str(data["qrels"]), str(data[run]), str(block_size)]
    done = subprocess.run(args, capture_output=True, timeout=120, check=True)
    assert done.stdout.strip() == imported
