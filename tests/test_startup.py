"""What the ``rankeval`` command does before and around a small run (issue 26, item 6): no
worker process unless the runs hold more than one block. The time this saves is measured by
``bench/bench_small.py``, not here.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rankeval.cli.app import app
from rankeval.engine import local_pool
from rankeval.engine.blockwise import Sequential

ROOT = Path(__file__).resolve().parent.parent


def _write_run(path: Path, queries: int, docs: int = 1000) -> Path:
    """A run of *queries* x *docs* lines shaped like a TREC ad hoc run (100 x 1,000: 4.5 MB of
    text; seeded random document numbers and scores, so that gzip shrinks it about as much as a
    real run, to a quarter), gzip-compressed if *path* ends with ``.gz``."""
    import numpy as np

    rng = np.random.default_rng(queries)
    numbers = rng.integers(0, 997, size=(queries, docs)) + 997 * rng.permutation(docs)  # distinct per query
    scores = np.sort(rng.random((queries, docs)), axis=1)[:, ::-1] * 20
    text = "".join(
        f"{q + 1} Q0 FBIS4-{numbers[q, d]:06d} {d + 1} {scores[q, d]:.6f} rankeval-run\n"
        for q in range(queries)
        for d in range(docs)
    ).encode()
    path.write_bytes(gzip.compress(text, 1) if path.suffix == ".gz" else text)
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Qrels and runs: ``run`` (100,000 lines, 4.5 MB: more than the 4 MiB a block used to
    shrink to for several processes), ``run.gz`` (the same, compressed), ``half``/``other``
    (50,000 lines each: two runs that fit in one block together)."""
    root = tmp_path_factory.mktemp("small")
    qrels = root / "qrels"
    qrels.write_text(
        "".join(f"{q} 0 FBIS4-{d:06d} {d % 2}\n" for q in range(1, 101) for d in range(0, 10**6, 997))
    )
    return {
        "qrels": qrels,
        "run": _write_run(root / "run", 100),
        "run.gz": _write_run(root / "run.gz", 100),
        "half": _write_run(root / "half", 50),
        "other": _write_run(root / "other", 50),
    }


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``--jobs`` pools asked for (their number of processes), on a machine of 4 cores;
    each evaluates its blocks in this process, so that the command's output can be checked."""
    started: list[int] = []

    class RecordingPool(Sequential):
        def __init__(self, shared: Any, jobs: int) -> None:
            super().__init__(shared)
            started.append(jobs)

        def __enter__(self) -> RecordingPool:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

    monkeypatch.setattr(local_pool, "Pool", RecordingPool)
    monkeypatch.setattr(local_pool, "default_jobs", lambda: 4)
    return started


def _evaluate(small: dict[str, Path], runs: list[str], *options: str) -> str:
    args = [str(small["qrels"]), *(str(small[r]) for r in runs), "-m", "AP", "-m", "nDCG@10", *options]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("runs", "options", "pool"),
    [
        pytest.param(["run"], [], [], id="100k-line run, default --jobs: this process"),
        pytest.param(["run.gz"], [], [], id="the same run compressed (counted 5 times its size)"),
        pytest.param(["half", "other"], [], [], id="two runs that fit in one block together"),
        pytest.param(["run"], ["--jobs", "3"], [], id="--jobs 3 and one block: this process"),
        pytest.param(["run"], ["--block-size", "1MiB"], [4], id="blocks asked for: the pool"),
        pytest.param(
            ["run"], ["--jobs", "2", "--block-size", "1MiB"], [2], id="blocks and --jobs 2: the pool"
        ),
    ],
)
def test_a_run_that_fits_in_one_block_starts_no_worker(small, pools, runs, options, pool):
    """Text that fits in one default block (32 MiB) is evaluated in this process, whatever
    ``--jobs`` (a worker takes longer to start than such a block takes); a pool starts only for
    more than one block, with the same values."""
    out = _evaluate(small, runs, *options)
    assert pools == pool
    assert out == _evaluate(small, runs, "--jobs", "1")


def test_more_text_than_one_block_still_gets_the_pool(small, pools, monkeypatch):
    """The default pool is kept for runs over one block (here with a default block of 1 MiB
    instead of 32 MiB, so that the run is small): each of the 4 processes gets 4 blocks."""
    from rankeval.engine import evaluation
    from rankeval.io import blocks

    expected = _evaluate(small, ["run"], "--jobs", "1")
    monkeypatch.setattr(evaluation, "DEFAULT_BLOCK_SIZE", 2**20)
    monkeypatch.setattr(blocks, "MIN_DEFAULT_BLOCK_SIZE", 2**16)
    assert evaluation._block_size(small["run"].stat().st_size, 4) == small["run"].stat().st_size // 16
    assert _evaluate(small, ["run"]) == expected
    assert pools == [4]


# ---------------------------------------------------------------------------------------- #
