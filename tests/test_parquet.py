"""Runs and qrels in Parquet (:mod:`rankeval.io.parquet`), read and written with pyarrow
alone: a Parquet run is checked as a run file is, evaluates to the values of its text, and
``convert --to parquet`` leaves nothing behind when it stops midway."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.errors import InputError
from rankeval.io.convert import to_parquet
from rankeval.io.parquet import write_run_parquet

DATA = Path(__file__).parent / "data"
QRELS = DATA / "trec_eval" / "qrels.test"
RUN = DATA / "trec_eval" / "results.test"
CLASSIC = ["AP", "nDCG@10", "P@5", "RR", "R@100", "num_rel_ret"]


@pytest.mark.parametrize(
    ("frame", "words"),
    [
        (pd.DataFrame({"a": [1], "b": [2.0]}), "no column(s) doc_id, query_id, score"),
        (pd.DataFrame({"query_id": ["1"], "doc_id": ["d"], "score": ["high"]}), "column score holds"),
        (pd.DataFrame({"query_id": [1.5], "doc_id": ["d"], "score": [1.0]}), "column query_id holds"),
        (
            pd.DataFrame({"query_id": ["1"], "doc_id": ["d"], "score": [1.0], "line": [1.5]}),
            "column line holds",
        ),
    ],
)
def test_parquet_that_is_not_a_run_names_the_path(tmp_path, frame, words):
    (tmp_path / "run.parquet").mkdir()
    frame.to_parquet(tmp_path / "run.parquet" / "part.0.parquet")
    with pytest.raises(InputError, match="not a Parquet run") as info:
        rankeval.Run.read(tmp_path / "run.parquet")
    assert words in str(info.value)
    assert info.value.source == str(tmp_path / "run.parquet")


def test_file_that_is_not_parquet(tmp_path):
    (tmp_path / "run.parquet").write_text("1 Q0 d 1 1.0 t\n")
    with pytest.raises(InputError, match="cannot be read as a Parquet run") as info:
        rankeval.Run.read(tmp_path / "run.parquet")
    assert info.value.source == str(tmp_path / "run.parquet")


@pytest.mark.parametrize("make", ["missing", "empty directory", "pattern of nothing"])
def test_parquet_paths_that_hold_no_run_are_named(tmp_path, make):
    source = {
        "missing": tmp_path / "missing.parquet",
        "empty directory": tmp_path,
        "pattern of nothing": tmp_path / "none-*.parquet",
    }[make]
    with pytest.raises(InputError) as info:
        rankeval.Run.read(source)
    assert info.value.source == str(source)


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("score", float("nan"), "score is NaN"),
        ("score", None, "score is NaN or missing"),
        ("doc_id", "d\x00x", "control character"),
        ("doc_id", None, "missing"),
        ("query_id", "", "empty"),
    ],
)
def test_parquet_rows_are_checked_like_lines(tmp_path, column, value, words):
    """The checks of the text reader, on Parquet rows: the message names the row's line."""
    frame = pd.DataFrame({"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = value
    frame.to_parquet(tmp_path / "run.parquet")
    with pytest.raises(InputError, match=words) as info:
        rankeval.Run.read(tmp_path / "run.parquet")
    assert info.value.source == str(tmp_path / "run.parquet") and info.value.line == 2


def test_parquet_rows_are_checked_in_every_batch(tmp_path):
    """A bad row far into a file (past pyarrow's first batch) names its own line."""
    n = 300_000
    frame = pd.DataFrame(
        {"query_id": np.repeat(np.arange(n // 100), 100).astype(str), "doc_id": np.arange(n).astype(str)}
    )
    frame["score"] = np.linspace(1, 0, n)
    frame.loc[n - 7, "score"] = np.nan
    frame.to_parquet(tmp_path / "run.parquet", row_group_size=50_000)
    with pytest.raises(InputError, match="NaN") as info:
        rankeval.Run.read(tmp_path / "run.parquet")
    assert info.value.line == n - 6


def test_empty_run_file_is_refused_by_convert(tmp_path):
    (tmp_path / "empty.run").write_bytes(b"")
    with pytest.raises(InputError, match="empty run") as info:
        to_parquet(QRELS, tmp_path / "empty.run", tmp_path / "q.parquet", tmp_path / "r.parquet")
    assert info.value.source == str(tmp_path / "empty.run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.run"]


def test_parquet_without_line_numbers_keeps_the_row_order(tmp_path):
    """Foreign Parquet without a ``line`` column: rows are numbered across the files."""
    (tmp_path / "run.parquet").mkdir()
    for i in range(3):
        frame = pd.DataFrame(
            {"query_id": ["q"] * 2, "doc_id": [f"d{i}{j}" for j in range(2)], "score": [1.0, 0.5]}
        )
        frame.to_parquet(tmp_path / "run.parquet" / f"part.{i}.parquet")
    run = rankeval.Run.read(tmp_path / "run.parquet")
    assert run.lines.tolist() == [1, 2, 3, 4, 5, 6]
    assert run.table.column("doc_id").to_pylist() == ["d00", "d01", "d10", "d11", "d20", "d21"]
    assert run.table.column("tag").to_pylist() == ["part.0.parquet"] * 6


def test_converted_run_reads_back_as_the_text(tmp_path, monkeypatch):
    """``convert --to parquet`` in small blocks (several part files), read back: the same
    table (every column) and the same line numbers as the text run."""
    import rankeval.io.blocks

    monkeypatch.setattr(rankeval.io.blocks, "DEFAULT_BLOCK_SIZE", 4096)
    to_parquet(QRELS, RUN, tmp_path / "q.parquet", tmp_path / "r.parquet")
    parts = sorted((tmp_path / "r.parquet").iterdir())
    assert len(parts) >= 3 and all(p.suffix == ".parquet" for p in parts)
    text = rankeval.Run.read(RUN)
    back = rankeval.Run.read(tmp_path / "r.parquet")
    assert back.table.equals(text.table)
    assert back.lines.tolist() == text.lines.tolist()
    assert rankeval.Qrels.read(tmp_path / "q.parquet").table.equals(rankeval.Qrels.read(QRELS).table)


def test_parquet_run_evaluates_as_its_text(tmp_path):
    to_parquet(QRELS, RUN, tmp_path / "q.parquet", tmp_path / "r.parquet")
    text = rankeval.evaluate(QRELS, RUN, CLASSIC)
    parquet = rankeval.evaluate(tmp_path / "q.parquet", tmp_path / "r.parquet", CLASSIC)
    assert (parquet["value"].to_numpy() == text["value"].to_numpy()).all()


def test_parquet_glob_and_text_glob(tmp_path):
    """A pattern of Parquet files is one Parquet run; one that also matches something else
    (here a directory) is refused."""
    write_run_parquet(RUN, tmp_path)
    run = rankeval.Run.read(str(tmp_path / "*.parquet"))
    assert run.table.num_rows == rankeval.Run.read(RUN).table.num_rows
    (tmp_path / "sub.parquet").mkdir()
    with pytest.raises(InputError, match="both Parquet and other files"):
        rankeval.Run.read(str(tmp_path / "*.parquet"))


@pytest.mark.parametrize("fault", [KeyboardInterrupt, InputError])
def test_convert_to_parquet_stopped_midway_leaves_nothing(tmp_path, monkeypatch, fault):
    """A block failing (bad input) or Ctrl-C while the run's blocks are written: the
    half-written directory and the qrels file are removed."""
    import rankeval.io.blocks

    real = rankeval.io.blocks.read_block
    calls = []

    def read(block: Any, threads: bool = True) -> Any:
        calls.append(block)
        if len(calls) == 3:
            raise fault("stop") if fault is KeyboardInterrupt else fault("bad block", source=block.name)
        return real(block, threads)

    monkeypatch.setattr(rankeval.io.blocks, "read_block", read)
    monkeypatch.setattr(rankeval.io.blocks, "DEFAULT_BLOCK_SIZE", 4096)  # several blocks
    with pytest.raises(fault):
        to_parquet(QRELS, RUN, tmp_path / "q.parquet", tmp_path / "r.parquet")
    assert len(calls) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_parquet_is_read_without_dask(tmp_path):
    """Dask is the Dask engine's alone: reading and writing Parquet runs never imports it."""
    import subprocess

    to_parquet(QRELS, RUN, tmp_path / "q.parquet", tmp_path / "r.parquet")
    code = (
        "import sys, rankeval\n"
        f"rankeval.evaluate({str(tmp_path / 'q.parquet')!r}, {str(tmp_path / 'r.parquet')!r}, 'AP')\n"
        "from rankeval.io.convert import to_parquet\n"
        f"to_parquet({str(QRELS)!r}, {str(RUN)!r}, {str(tmp_path / 'q2.parquet')!r}, {str(tmp_path / 'r2.parquet')!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
