"""A run file not sorted by query, grouped by query in bounded memory.

A run whose queries are not each written in one piece cannot be cut into blocks of whole
queries (:mod:`rankeval.io.blocks`). :func:`partition_run` reads it once more, front to
back, block by block (:func:`~rankeval.io.blocks.split_run` and
:func:`~rankeval.io.blocks.read_block`: the same parsing, so a bad line is the same error,
naming the same file line), and appends the rows of each block to one of several part files
chosen by a hash of their query id. Every query's rows then lie in one part, in file order
(what ``--on-duplicate first`` and the file-order rankings need). A part is an Arrow IPC
stream of the parsed rows and their line numbers in the file, written in a directory the
caller owns and removes; a part that grows well past the block size while other queries
share it is spread again over parts of its own, so that memory stays bounded by the block
size (one query larger than that is one part). Each part is then read whole
(:func:`read_part`) and evaluated as a block is.

May import: pyarrow, numpy, ``blocks``, ``fast_run`` and the foundation modules.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankeval.io.blocks import RunFile, read_block, split_run

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["Partition", "RunPart", "partition_run", "read_part"]

#: parts written at once (each an open file): a part past the block size is spread again
MAX_PARTS = 256

#: how often a part is spread again at most (more would mean queries whose ids hash alike
#: under every seed: in practice, one query that is larger than a block on its own)
_MAX_DEPTH = 4

_LINE = "line"  # the column of the file line numbers in a part


@dataclass(frozen=True)
class RunPart:
    """One part of a run file grouped by query (see :func:`partition_run`).

    Attributes:
        path: the part file (an Arrow IPC stream).
        name: the run file's name in messages.
        rows: its number of rows.
        data: the part file's bytes, or ``None``: read them from *path* (a worker that
            cannot see this machine's files is sent the bytes).
    """

    path: str
    name: str
    rows: int
    data: bytes | None = None

    def with_data(self) -> RunPart:
        """This part carrying its bytes."""
        from dataclasses import replace

        if self.data is not None:
            return self
        with open(self.path, "rb") as fh:
            return replace(self, data=fh.read())


@dataclass(frozen=True)
class Partition:
    """A run file grouped by query: its parts (every query in one), and the tag of the file's
    last run line (trec_eval's runid), which no part's order keeps."""

    parts: list[RunPart]
    last_tag: str


@dataclass
class _Part:
    """A part while it is written."""

    path: str
    writer: Any  # pyarrow.ipc.RecordBatchStreamWriter, opened on the first rows
    rows: int = 0
    size: float = 0.0  # estimated bytes of run text


def partition_run(file: RunFile, block_size: int, directory: str, threads: bool = True) -> Partition:
    """Group the lines of run file *file* (held open) by query, into part files in
    *directory*, reading it block by block (blocks of *block_size* bytes): memory for one
    block at a time. *threads*: as :func:`~rankeval.io.blocks.read_block`'s.

    Raises:
        InputError: the file has a bad line (the same error as when it is read whole), cannot
            be read, or changed while it was read.
        ResourceError: memory ran out.
    """
    blocks = iter(split_run(file, block_size))
    total = file.stamp.size * (1 if file.compression is None else 5)  # (text bytes, estimated)
    count = max(2, min(MAX_PARTS, -(-2 * total // block_size)))
    last = [""]

    def chunks() -> Iterator[tuple[pa.Table, float]]:
        for block in blocks:
            table, lines = read_block(block, threads)
            if table.num_rows:
                last[0] = str(table.column("tag")[-1].as_py())
                yield _with_lines(table, lines), (block.end - block.start) / table.num_rows
            del table, lines

    parts = _spread(chunks(), count, 0, directory, block_size, file.name)
    return Partition(parts, last[0])


def read_part(part: RunPart) -> tuple[pa.Table, np.ndarray]:
    """The rows of *part* as :func:`~rankeval.io.blocks.read_block` gives a block's: the run
    table (query id, Q0 and tag dictionary-encoded) and the file line number of each row."""
    import pyarrow as pa

    from rankeval.io.schema import RUN_COLUMNS, run_table

    source = pa.BufferReader(part.data) if part.data is not None else pa.memory_map(part.path)
    with pa.ipc.open_stream(source) as reader:
        table = reader.read_all()
    lines = table.column(_LINE).to_numpy()
    return run_table(*(table.column(c) for c in RUN_COLUMNS)), lines


def _with_lines(table: pa.Table, lines: np.ndarray) -> pa.Table:
    import pyarrow as pa

    return table.append_column(_LINE, pa.array(lines, pa.int64()))


def _spread(
    chunks: Iterable[tuple[pa.Table, float]],
    count: int,
    depth: int,
    directory: str,
    block_size: int,
    name: str,
) -> list[RunPart]:
    """The rows of *chunks* (tables, each with its bytes of run text per row) appended to
    *count* parts by a hash of their query id (seeded by *depth*); a part past twice the
    block size is spread again (its file then removed)."""
    import numpy as np
    import pyarrow as pa

    parts = [
        _Part(os.path.join(directory, f"part-{depth}-{os.urandom(6).hex()}-{k}.arrow"), None)
        for k in range(count)
    ]
    try:
        for table, per_row in chunks:
            bucket = _buckets(table.column("query_id"), count, depth)
            order = np.argsort(bucket, kind="stable")  # each part's rows keep their file order
            bounds = np.searchsorted(bucket[order], np.arange(count + 1))
            grouped = table.take(pa.array(order))
            del table
            for k in np.flatnonzero(np.diff(bounds)):
                piece = grouped.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
                part = parts[k]
                if part.writer is None:
                    part.writer = pa.ipc.new_stream(part.path, piece.schema, options=_write_options())
                part.writer.write_table(piece)
                part.rows += piece.num_rows
                part.size += piece.num_rows * per_row
            del grouped
    finally:
        for part in parts:
            if part.writer is not None:
                part.writer.close()
    out: list[RunPart] = []
    for part in parts:
        if not part.rows:
            continue
        if part.size > 2 * block_size and depth < _MAX_DEPTH:
            again = _spread(
                _read_again(part),
                max(2, min(MAX_PARTS, -(-int(2 * part.size) // block_size))),
                depth + 1,
                directory,
                block_size,
                name,
            )
            if len(again) > 1:  # (one query alone: kept as it is)
                os.remove(part.path)
                out.extend(again)
                continue
            for extra in again:
                os.remove(extra.path)
        out.append(RunPart(part.path, name, part.rows))
    return out


def _read_again(part: _Part) -> Iterator[tuple[pa.Table, float]]:
    """The rows of a written part, batch by batch (each from one block)."""
    import pyarrow as pa

    per_row = part.size / part.rows
    with pa.ipc.open_stream(pa.memory_map(part.path)) as reader:
        for batch in reader:
            yield pa.Table.from_batches([batch]), per_row


def _buckets(query: pa.ChunkedArray | pa.Array, count: int, seed: int) -> np.ndarray:
    """The part (0 .. *count* - 1) of each row, from a hash of its query id: each distinct
    id of the block hashed once (CRC-32, the same in every process and run)."""
    import numpy as np

    from rankeval.io.fast_run import dictionary_encode

    codes = dictionary_encode(query)
    salt = seed.to_bytes(4, "little")
    hashes = np.array(
        [zlib.crc32(salt + str(q).encode()) for q in codes.dictionary.to_pylist()], dtype=np.int64
    )
    out: np.ndarray = (hashes % count)[codes.indices.to_numpy(zero_copy_only=False)]
    return out


def _write_options() -> Any:
    """Part files compressed (LZ4: fast; an unsorted run's parts take less disk than it)."""
    import pyarrow as pa

    return pa.ipc.IpcWriteOptions(compression="lz4")
