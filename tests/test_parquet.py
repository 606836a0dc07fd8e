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
from rankeval.errors import InputError, RankevalWarning
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


# ------------------------------------------------------------------ blocks of rows
def _sorted_parquet(tmp_path: Path, monkeypatch) -> Path:
    import rankeval.io.blocks

    monkeypatch.setattr(rankeval.io.blocks, "DEFAULT_BLOCK_SIZE", 4096)
    to_parquet(QRELS, RUN, tmp_path / "q.parquet", tmp_path / "r.parquet")
    return tmp_path / "r.parquet"


def test_parquet_blocks_cut_where_the_query_changes(tmp_path, monkeypatch):
    """Blocks of about the rows asked for, each cut where the query changes (one query is
    never in two blocks), together the whole run in its order with its line numbers."""
    from rankeval.io.parquet import parquet_blocks

    run = _sorted_parquet(tmp_path, monkeypatch)
    text = rankeval.Run.read(RUN)
    longest = int(pd.Series(text.table.column("query_id").to_pylist()).value_counts().max())
    for rows in (1, 50, 333, 10**6):
        blocks = list(parquet_blocks(run, rows))
        assert all(b is not None for b in blocks)
        seen: list[str] = []
        for table, lines in blocks:
            queries = pd.unique(np.asarray(table.column("query_id").to_pylist(), dtype=object)).tolist()
            assert not set(queries) & set(seen)  # a query in one block only
            seen += queries
            assert table.num_rows < rows + longest
            assert len(lines) == table.num_rows
        assert len(blocks) == (1 if rows == 10**6 else len(blocks)) and (rows == 10**6 or len(blocks) > 1)
        whole = pa_concat([t for t, _ in blocks])
        assert whole.equals(text.table)
        assert np.concatenate([lines for _, lines in blocks]).tolist() == text.lines.tolist()


def pa_concat(tables: list[Any]) -> Any:
    import pyarrow as pa

    from rankeval.io.schema import run_table

    whole = pa.concat_tables(tables)
    return run_table(*(whole.column(c) for c in whole.column_names))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("ties", ["trec_eval", "given"])
def test_a_parquet_run_is_evaluated_in_blocks_as_its_text(tmp_path, monkeypatch, jobs, ties):
    """A Parquet run sorted by query is evaluated block by block (never read whole), with the
    text run's values, under each tie rule (``given`` reads the rows' order)."""
    import rankeval.io.parquet

    run = _sorted_parquet(tmp_path, monkeypatch)

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read whole")

    monkeypatch.setattr(rankeval.io.parquet, "read_parquet_run_table", never)
    options = rankeval.EvalOptions(ties=ties)
    text = rankeval.evaluate(QRELS, RUN, CLASSIC, options=options, block_size=2048, jobs=jobs)
    parquet = rankeval.evaluate(QRELS, run, CLASSIC, options=options, block_size=2048, jobs=jobs)
    assert (parquet["value"].to_numpy() == text["value"].to_numpy()).all()
    assert parquet["query_id"].equals(text["query_id"])


@pytest.mark.parametrize("disorder", ["queries shuffled", "files out of line order"])
def test_a_parquet_run_out_of_order_is_read_whole_with_a_warning(tmp_path, disorder):
    """Rows not grouped by query in the files' order, or files whose lines go back: read whole
    (sorted by ``(file, line)``), with one warning, and the text run's values."""
    text = rankeval.Run.read(RUN)
    frame = text.table.to_pandas()
    frame["line"] = text.lines
    (tmp_path / "run.parquet").mkdir()
    if disorder == "queries shuffled":
        frame = frame.drop(columns=["line"])
        by_query = [g for _, g in frame.groupby("query_id", sort=False, observed=True)]
        halves = [
            pd.concat([g.iloc[: len(g) // 2] for g in by_query]),
            pd.concat([g.iloc[len(g) // 2 :] for g in by_query]),
        ]
        for i, part in enumerate(halves):
            part.astype({"query_id": str, "q0": str, "tag": str}).to_parquet(
                tmp_path / "run.parquet" / f"part.{i}.parquet"
            )
    else:
        parts = np.array_split(np.arange(len(frame)), 3)
        for name, rows in zip(["c", "a", "b"], parts, strict=True):  # listed a, b, c: lines 2nd, 3rd, 1st
            frame.iloc[rows].to_parquet(tmp_path / "run.parquet" / f"{name}.parquet")
    with pytest.warns(RankevalWarning, match="read whole into memory"):
        parquet = rankeval.evaluate(QRELS, tmp_path / "run.parquet", CLASSIC, block_size=2048)
    expected = rankeval.evaluate(QRELS, RUN, CLASSIC)
    if disorder == "queries shuffled":  # (the tie order within a query follows the halves)
        expected = rankeval.evaluate(QRELS, rankeval.Run.read(tmp_path / "run.parquet"), CLASSIC)
    assert np.allclose(
        parquet["value"].to_numpy(), expected["value"].to_numpy(), rtol=0, atol=0, equal_nan=True
    )


@pytest.mark.parametrize(
    "kind", ["int64 ids", "large_string", "string_view", "int8 dictionary", "int32 score"]
)
def test_parquet_columns_of_other_text_and_number_types_are_read(tmp_path, kind):
    """Ids as integers, large or view strings, dictionaries of any index width, integer
    scores: read as the text run is (the values of the text run)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "string_view" and not hasattr(pa, "string_view"):
        pytest.skip("pyarrow < 16 has no string views")
    text = rankeval.Run.read(RUN).table
    ids, docs, score = text.column("query_id").cast(pa.string()), text.column("doc_id"), text.column("score")
    columns = {
        "int64 ids": {"query_id": ids.cast(pa.int64())},
        "large_string": {"doc_id": docs.cast(pa.large_string())},
        "string_view": {"doc_id": docs.cast(pa.string_view())},
        "int8 dictionary": {"query_id": ids.dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string()))},
        "int32 score": {"score": pa.array(np.round(score.to_numpy() * 1000).astype(np.int32))},
    }[kind]
    table = pa.table({"query_id": ids, "doc_id": docs, "score": score, **columns})
    pq.write_table(table, tmp_path / "run.parquet")
    expected_run = rankeval.Run.from_frame(table.to_pandas().astype({"query_id": str, "doc_id": str}), "run")
    parquet = rankeval.evaluate(QRELS, tmp_path / "run.parquet", CLASSIC, block_size=2048)
    expected = rankeval.evaluate(QRELS, expected_run, CLASSIC)
    assert (parquet["value"].to_numpy() == expected["value"].to_numpy()).all()
