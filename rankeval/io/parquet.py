"""Runs and qrels in Parquet, with pyarrow alone (no Dask): read with ``pyarrow.dataset``
batch by batch, each batch checked as the text reader checks lines; written by
``rankeval convert --to parquet`` from the run's blocks (:mod:`rankeval.io.blocks`), one
Parquet file per block, so that neither direction holds more than a block of text at a time
while converting.

A Parquet run is a ``.parquet`` file, a directory of them (read in name order) or a pattern
matching them (:mod:`rankeval.io.sources`), with the columns ``query_id, doc_id, score`` and
optionally ``q0, tag, file, line`` (what ``convert`` writes: ``file`` numbers the text files
of the run, ``line`` is each row's line in its file). Rows are evaluated in ``(file, line)``
order, or in the files' row order where there is no ``line`` column.

May import: numpy, pyarrow, ``inputs``, ``sources``, ``schema``, ``blocks``, ``trec`` and the
foundation modules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankeval.errors import InputError, clip
from rankeval.io import inputs
from rankeval.io.sources import is_pattern, pattern_files

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "parquet_batches",
    "parquet_blocks",
    "parquet_files",
    "read_parquet_qrels",
    "read_parquet_run_table",
    "write_run_parquet",
]

_TEXT_COLUMNS = ("query_id", "q0", "doc_id", "tag")
_RUN_COLUMNS = ("query_id", "q0", "doc_id", "score", "tag")
_CONTROL = "[\x00-\x1f\x7f]"


def parquet_files(source: str | Path) -> list[str]:
    """The Parquet files of run *source*: the file itself, a directory's ``*.parquet`` files
    (in name order) or the files a pattern matches.

    Raises:
        InputError: a directory without Parquet files; a pattern matching no file, or
            matching files that are not Parquet.
    """
    text = str(source)
    if is_pattern(text):
        files = pattern_files(text)
        if any(Path(f).suffix != ".parquet" or not Path(f).is_file() for f in files):
            raise InputError(
                "the pattern matches both Parquet and other files; a run is one or the other", source=text
            )
        return files
    if inputs.path_kind(text) == "directory":
        files = sorted(str(p) for p in Path(text).glob("*.parquet") if p.is_file())
        if not files:
            raise InputError(
                "is a directory without Parquet files; expected a run file, or a directory "
                "written by rankeval convert --to parquet",
                source=inputs.source_name(text),
            )
        return files
    return [text]


def read_parquet_run_table(source: str | Path) -> tuple[pa.Table, np.ndarray]:
    """A Parquet run (see the module docstring), whole, as a run table and each row's line
    number, in ``(file, line)`` order; read batch by batch and checked as a run file is
    (:func:`parquet_batches`).

    Raises:
        InputError: not Parquet, not a run (a column missing or of the wrong type), a bad row,
            no row at all.
        ResourceError: memory ran out.
    """
    import numpy as np
    import pyarrow as pa

    from rankeval.io.schema import run_table

    tables, lines, numbers = [], [], []
    for table, line, number in parquet_batches(source):
        tables.append(table)
        lines.append(line)
        numbers.append(number)
    whole = pa.concat_tables(tables)
    del tables
    line, number = np.concatenate(lines), np.concatenate(numbers)
    order = np.lexsort((line, number))
    if len(order) > 1 and not (np.diff(order) == 1).all():
        whole, line = whole.take(pa.array(order)), line[order]
    return run_table(*(whole.column(c) for c in whole.column_names)), line


def parquet_blocks(source: str | Path, rows: int) -> Iterator[tuple[pa.Table, np.ndarray] | None]:
    """A Parquet run in blocks, as the block engine evaluates a run file: about *rows* rows
    each (more for a query that is longer), every cut where the query changes, read one batch
    at a time in the files' order; each a run table and its rows' line numbers. Yields
    ``None``, and stops, if the rows are not in ``(file, line)`` order in the files: only
    :func:`read_parquet_run_table`, which sorts them, then gives the run's order.

    Raises:
        InputError: as :func:`parquet_batches`.
    """
    import numpy as np
    import pyarrow as pa

    from rankeval.io.schema import RUN_COLUMNS, run_table

    pending: list[pa.Table] = []
    pending_lines: list[np.ndarray] = []
    held = 0
    last: tuple[int, int] | None = None
    for table, line, number in parquet_batches(source):
        step_file, step_line = np.diff(number), np.diff(line)
        if (last is not None and (int(number[0]), int(line[0])) <= last) or not (
            (step_file > 0) | ((step_file == 0) & (step_line > 0))
        ).all():
            yield None
            return
        last = (int(number[-1]), int(line[-1]))
        pending.append(table)
        pending_lines.append(line)
        held += table.num_rows
        if held < rows:
            continue
        block = run_table(*(pa.concat_tables(pending).column(c) for c in RUN_COLUMNS))
        lines = np.concatenate(pending_lines)
        codes = block.column("query_id").combine_chunks().indices.to_numpy()
        starts = np.flatnonzero(codes[1:] != codes[:-1]) + 1  # where a query starts
        begin = 0
        while True:  # (the last query stays: it may go on in the next batch)
            k = int(np.searchsorted(starts, begin + rows))
            if k == len(starts):
                break
            cut = int(starts[k])
            yield block.slice(begin, cut - begin), lines[begin:cut]
            begin = cut
        pending, pending_lines, held = [block.slice(begin)], [lines[begin:]], len(lines) - begin
    if held:
        block = run_table(*(pa.concat_tables(pending).column(c) for c in RUN_COLUMNS))
        yield block, np.concatenate(pending_lines)


def parquet_batches(source: str | Path) -> Iterator[tuple[pa.Table, np.ndarray, np.ndarray]]:
    """The rows of a Parquet run in the files' order, a batch at a time: each a table of the
    run's columns (:data:`~rankeval.io.schema.RUN_COLUMNS`, ``q0`` and ``tag`` filled in where
    the files have none), its rows' line numbers and file numbers (from the ``line`` and
    ``file`` columns; else numbered in the files' order, file 0). Each batch is checked as a
    run file's lines are: a NaN or missing score, an empty or missing id, or one with a
    control character is an error naming the row's line.

    Raises:
        InputError: not Parquet, not a run (a column missing or of the wrong type), a bad row,
            no row at all.
        ResourceError: memory ran out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    label = inputs.source_name(source)
    files = parquet_files(source)
    tag = Path(files[0]).name
    start = 1
    with inputs.reading(source, "run"):
        for path in files:
            try:
                reader = pq.ParquetFile(path)
                _check_schema(reader.schema_arrow, label)
                names = reader.schema_arrow.names
                columns = [c for c in (*_RUN_COLUMNS, "file", "line") if c in names]
                for batch in reader.iter_batches(columns=columns):
                    batch = _with_lines(batch, start)
                    start += batch.num_rows
                    _check_rows(batch, label)
                    n = batch.num_rows
                    table = pa.table(
                        {
                            "query_id": batch.column("query_id"),
                            "q0": batch.column("q0") if "q0" in names else _repeat("Q0", n),
                            "doc_id": batch.column("doc_id"),
                            "score": batch.column("score"),
                            "tag": batch.column("tag") if "tag" in names else _repeat(tag, n),
                        }
                    )
                    yield (
                        _as_text(table),
                        batch.column("line").to_numpy().astype(np.int64),
                        batch.column("file").to_numpy().astype(np.int64),
                    )
            except pa.ArrowException as exc:
                if isinstance(exc, (OSError, MemoryError)):
                    raise  # (named by inputs.reading)
                raise _unreadable(exc, label) from None
    if start == 1:
        raise InputError("empty run: the Parquet files have no rows", source=label)


def _as_text(table: pa.Table) -> pa.Table:
    """*table* in the run schema (:func:`~rankeval.io.schema.run_schema`): its id, ``q0`` and
    tag columns as (dictionary-encoded) strings whatever type the file gave them (integer ids
    are text, as in a run file), the score as float64."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankeval.io.schema import run_schema

    columns = []
    for field in run_schema():
        column = table.column(field.name)
        if column.type != field.type:
            if pa.types.is_dictionary(field.type):
                column = pc.dictionary_encode(column.cast(pa.string()))
            else:
                column = column.cast(field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=run_schema())


def _unreadable(exc: Exception, label: str) -> InputError:
    return InputError(
        f"cannot be read as a Parquet run: {type(exc).__name__}: {clip(str(exc), 200)}", source=label
    )


def _repeat(value: str, n: int) -> pa.Array:
    """*value* *n* times, dictionary-encoded (a column the files do not have)."""
    import numpy as np
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))


def _check_schema(schema: pa.Schema, label: str) -> None:
    """A Parquet run's columns: ``query_id, doc_id, score`` there, each column of a usable type."""
    missing = {"query_id", "doc_id", "score"} - set(schema.names)
    if missing:
        raise InputError(
            f"not a Parquet run: no column(s) {', '.join(sorted(missing))} (rankeval convert --to "
            "parquet writes one)",
            source=label,
        )
    for field in schema:
        expected = _type_error(field.name, field.type)
        if expected:
            raise InputError(
                f"not a Parquet run: column {field.name} holds {field.type}; expected {expected}",
                source=label,
            )


def _type_error(name: str, kind: pa.DataType) -> str | None:
    """What column *name* of a Parquet run should hold, if *kind* is not that."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    text = (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or getattr(pa.types, "is_string_view", lambda _: False)(kind)  # (pyarrow >= 16)
        or pa.types.is_integer(kind)
    )
    if name in _TEXT_COLUMNS and not text:
        return "text"
    if name == "score" and not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return "numbers"
    if name in ("line", "file") and not pa.types.is_integer(kind):
        return "integers"
    return None


def _with_lines(batch: pa.RecordBatch, start: int) -> pa.RecordBatch:
    """*batch* with ``file`` and ``line`` columns: rows numbered from *start* in the files'
    order where the files have no ``line`` column, and file 0 where they have no ``file``."""
    import numpy as np
    import pyarrow as pa

    n = batch.num_rows
    if "line" not in batch.schema.names:
        batch = batch.append_column("line", pa.array(np.arange(start, start + n, dtype=np.int64)))
    if "file" not in batch.schema.names:
        batch = batch.append_column("file", pa.array(np.zeros(n, np.int32)))
    return batch


def _check_rows(batch: pa.RecordBatch, label: str) -> None:
    """The checks a run file's reader makes, on rows of a Parquet run."""
    import pyarrow.compute as pc

    score = batch.column("score")
    bad = pc.fill_null(pc.is_nan(score.cast("float64")), True)
    if pc.any(bad).as_py():
        raise InputError(
            "score is NaN or missing; expected a number (inf and -inf are allowed, NaN cannot be ranked)",
            source=label,
            line=_line_of(batch, bad),
        )
    for name in ("query_id", "doc_id"):
        values = batch.column(name).cast("string")
        bad = pc.fill_null(
            pc.or_(pc.equal(pc.binary_length(values), 0), pc.match_substring_regex(values, _CONTROL)), True
        )
        if pc.any(bad).as_py():
            row = _row(bad)
            raise InputError(
                f"{name} is empty, missing or holds a control character; expected an id",
                source=label,
                line=int(batch.column("line")[row].as_py()),
                text=repr(values[row].as_py()),
            )


def _row(mask: pa.Array) -> int:
    import numpy as np

    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def _line_of(batch: pa.RecordBatch, mask: pa.Array) -> int:
    return int(batch.column("line")[_row(mask)].as_py())


def write_run_parquet(run: str | Path, directory: str | Path, block_size: int | None = None) -> None:
    """Write run *run* (a TREC text file, or a pattern of them) into *directory* (which exists)
    as Parquet files, one per block of text (``part.00000.parquet`` ...), with the columns of
    :func:`~rankeval.io.schema.run_schema` plus ``file`` (the text file's number) and ``line``.

    Raises:
        InputError: a bad line (naming its file and line), no line at all.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankeval.io.blocks import DEFAULT_BLOCK_SIZE, read_block, split_run
    from rankeval.io.sources import run_files

    files = run_files(run) or [str(run)]
    part = 0
    for number, path in enumerate(files):
        for block in split_run(path, block_size or DEFAULT_BLOCK_SIZE):
            table, lines = read_block(block)
            if not table.num_rows:
                continue
            table = table.append_column("file", pa.array(np.full(table.num_rows, number, np.int32)))
            table = table.append_column("line", pa.array(np.asarray(lines, np.int64)))
            pq.write_table(table, Path(directory) / f"part.{part:05d}.parquet")
            part += 1
    if not part:
        raise InputError(
            "empty run: the file is empty; expected lines 'query_id Q0 doc_id rank score tag'",
            source=inputs.source_name(run),
        )


def read_parquet_qrels(source: str | Path) -> pa.Table:
    """Qrels written by ``rankeval convert --to parquet``, checked as a qrels file is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankeval.io.schema import QRELS_COLUMNS, qrels_schema
    from rankeval.io.validate import check_judgments, check_text_columns

    name = inputs.source_name(source)
    with inputs.reading(source, "qrels"):
        try:
            table = pq.read_table(source)
        except pa.ArrowException as exc:
            if isinstance(exc, (OSError, MemoryError)):
                raise
            raise InputError(f"not a readable Parquet file: {clip(str(exc), 100)}", source=name) from None
        missing = set(QRELS_COLUMNS) - set(table.column_names)
        if missing:
            raise InputError(
                f"not a rankeval qrels Parquet file: no column(s) {sorted(missing)}", source=name
            )
        if table.num_rows == 0:
            raise InputError("no judgments: the Parquet file has no rows", source=name)
        try:
            for field in qrels_schema():
                table = _cast(table, field.name, field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InputError(
                f"not a rankeval qrels Parquet file: {clip(str(exc), 100)}", source=name
            ) from None
        check_text_columns(table, name)
        check_judgments(table, name)
    return table


def _cast(table: pa.Table, name: str, kind: Any) -> pa.Table:
    return table.set_column(table.column_names.index(name), name, table.column(name).cast(kind))
