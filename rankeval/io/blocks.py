"""A TREC run file as query-aligned blocks: the unit of work of the block engine.

TREC runs are written query by query. :func:`split_run` reads a run file (plain, or
compressed and decompressed as a stream) once, front to back, and cuts it into blocks of
about ``block_size`` bytes, each cut moved forward to the next line whose query id differs
from the line before it (a scan of a few lines). Every block therefore holds whole queries
— unless the run is not sorted by query, which the engine detects afterwards (a query in
two blocks) and handles by evaluating the run in memory.

:func:`read_block` parses one block as the whole-file reader parses a file: the fast path
(pyarrow's CSV reader, :mod:`rankeval.io.fast_run`) for clean text, the general path
(:func:`rankeval.io.trec.parse_run`) for anything else, with every row's line number in the
file, so that messages name the same line as a whole-file read would.

May import: numpy, ``inputs``, ``fast_run``, ``trec``, ``lines`` and the foundation modules.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from rankeval.io import inputs
from rankeval.io import trec as io
from rankeval.io.fast_run import parse_run_fast

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["DEFAULT_BLOCK_SIZE", "RunBlock", "is_text_run", "read_block", "split_run"]

DEFAULT_BLOCK_SIZE = 32 * 2**20
"""Bytes of run text per block (before the cut moves to the next query)."""

MIN_DEFAULT_BLOCK_SIZE = 4 * 2**20
"""The smallest block size chosen by default (when many processes share a run)."""

LONGEST_QUERY = 256 * 2**20
"""Bytes of one query's lines after which a block is cut even inside the query (the run is
then evaluated as an unsorted one): a bound on a block's memory for any input."""

_CHUNK = 4 * 2**20
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class RunBlock:
    """One block of a run file.

    Attributes:
        path: the file (as given).
        name: the file's name in messages.
        start: offset of the block's first byte in the (decompressed) text.
        end: offset just after its last byte.
        first_line: line number of its first line in the file (1-based).
        data: the block's bytes, or ``None``: read them from *path* (a plain file).
        compressed: the file is compressed (its blocks always carry their data).
    """

    path: str
    name: str
    start: int
    end: int
    first_line: int
    data: bytes | None = None
    compressed: bool = False

    def without_data(self) -> RunBlock:
        """This block without its bytes: what the driver keeps of an evaluated block. A plain
        file's block reads them again from its byte range; a compressed file's must be cut
        again (:func:`split_run`) before it is evaluated again."""
        if self.data is None:
            return self
        return RunBlock(self.path, self.name, self.start, self.end, self.first_line, None, self.compressed)

    def bytes(self) -> bytes:
        """The block's text (read from the file if it does not carry it)."""
        if self.data is not None:
            return self.data
        if self.compressed:
            raise ValueError("a compressed file's block without its bytes: cut the file again")
        with inputs.os_errors(self.name, path=True), open(self.path, "rb") as fh:
            return os.pread(fh.fileno(), self.end - self.start, self.start)


def is_text_run(source: str | Path) -> bool:
    """Whether *source* is a regular file of run text (plain or compressed) that can be cut
    into blocks: not stdin, a pipe, a directory, JSON (the hTBG format) or Parquet."""
    from rankeval.io import htbg_json

    if str(source) == "-" or inputs.path_kind(source) != "file" or Path(source).suffix == ".parquet":
        return False
    return not htbg_json.is_json(source)


def split_run(path: str | Path, block_size: int = DEFAULT_BLOCK_SIZE) -> Iterator[RunBlock]:
    """The query-aligned blocks of run file *path*, front to back, read as a stream. A plain
    file is only scanned (its lines counted, its cuts found; a block's bytes are read where
    it is evaluated, :meth:`RunBlock.bytes`); a compressed file's blocks carry their bytes
    (one block in memory at a time here).

    A cut is moved to the first line, at or after ``block_size`` bytes into the block, whose
    query id differs from the previous content line's (blank and comment lines do not
    count); if none comes within another ``block_size`` bytes (and :data:`LONGEST_QUERY`),
    the block is cut at a line end anyway (the engine then sees the query in two blocks, as for an unsorted run).

    Raises:
        InputError: the file cannot be read, or its compressed data is corrupt.
    """
    name = io.source_name(path)
    with inputs.open_input(path, limit=1 << 62) as opened, inputs.os_errors(name):
        if opened.compression is None:
            yield from _split_plain(str(path), name, opened.stream, block_size)
        else:
            yield from _split_stream(str(path), name, opened.stream, block_size)


def _split_plain(path: str, name: str, stream: BinaryIO, block_size: int) -> Iterator[RunBlock]:
    """:func:`split_run` of a plain file: cuts found by reading a few lines at each."""
    fd = stream.fileno()
    size = os.fstat(fd).st_size
    pos = len(_BOM) if os.pread(fd, len(_BOM), 0) == _BOM else 0
    line = 1
    while pos < size:
        end = size
        if pos + block_size < size:
            end = _cut_file(fd, pos, block_size, size)
        yield RunBlock(path, name, pos, end, line)
        line += _count_lines(fd, pos, end)
        pos = end


def _count_lines(fd: int, start: int, end: int) -> int:
    """The newlines between offsets *start* and *end* of a file, read a MiB at a time
    (numpy counts them about three times as fast as ``bytes.count``)."""
    import numpy as np

    count = 0
    while start < end:
        chunk = os.pread(fd, min(1 << 20, end - start), start)
        if not chunk:
            break
        count += int(np.count_nonzero(np.frombuffer(chunk, np.uint8) == 10))
        start += len(chunk)
    return count


def _cut_file(fd: int, pos: int, block_size: int, size: int) -> int:
    """:func:`_cut` of the block starting at *pos* of a plain file, reading only around the cut."""
    at = pos + block_size
    back = 1 << 16
    start = max(pos, at - back)
    while start > pos and b"\n" not in os.pread(fd, at - start, start):
        back *= 4  # a line longer than the window: look further back
        start = max(pos, at - back)
    buf = os.pread(fd, min(size, at + (1 << 16)) - start, start)  # a query's lines are usually fewer
    while True:
        cut = _cut(buf, at - start)
        if cut is not None:
            return start + cut
        if start + len(buf) >= size:
            return size
        buf += os.pread(fd, min(len(buf), size - start - len(buf)), start + len(buf))  # twice as much


def _split_stream(path: str, name: str, stream: BinaryIO, block_size: int) -> Iterator[RunBlock]:
    """:func:`split_run` of a decompressed stream: each block carries its bytes."""
    pos, line = 0, 1
    buf = stream.read(len(_BOM))
    if buf == _BOM:
        pos, buf = len(_BOM), b""
    eof = False
    while True:
        buf, eof = _fill(stream, buf, block_size + (1 << 16), eof)  # the cut is usually in the extra
        if not buf:
            return
        cut = len(buf) if eof and len(buf) <= block_size else None
        while cut is None:
            cut = _cut(buf, block_size)
            if cut is None:
                if eof:
                    cut = len(buf)
                else:
                    # a little more first (the bytes past the cut stay in memory while the
                    # block is evaluated), then geometrically (each look scans buf whole)
                    buf, eof = _fill(stream, buf, len(buf) + max(_CHUNK, len(buf) - block_size), eof)
        data = buf[:cut]
        buf = buf[cut:]
        lines = data.count(b"\n")
        yield RunBlock(path, name, pos, pos + cut, line, data, True)
        del data
        line += lines
        pos += cut


def _fill(stream: BinaryIO, buf: bytes, size: int, eof: bool) -> tuple[bytes, bool]:
    """*buf* with more of *stream* appended until it holds *size* bytes or the stream ends."""
    if eof or len(buf) >= size:
        return buf, eof
    parts = [buf]
    have = len(buf)
    while have < size:
        chunk = stream.read(max(_CHUNK, size - have))
        if not chunk:
            eof = True
            break
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts), eof


def _query(line: bytes) -> bytes | None:
    """The query id of a run line (its first field); ``None`` for a blank or comment line."""
    fields = line.split(None, 1)
    if not fields or fields[0].startswith(b"#"):
        return None
    return fields[0]


def _cut(buf: bytes, at: int) -> int | None:
    """Where to end a block of *buf* that should be *at* bytes long: the start of the first
    line at or after *at* whose query differs from the content line before it; ``None`` if
    *buf* ends before that is known (read more). Gives up ``max(at, LONGEST_QUERY)`` bytes
    further on, at a line start (see :func:`split_run`).

    The lines are not looked at one by one: the first content line from the one holding
    byte ``at - 1`` gives the query; every later line is tested at once (numpy) for starting
    with that query and a blank, and only the lines that do not are looked at (the first
    content line among them is the cut)."""
    import numpy as np

    limit = at + max(at, LONGEST_QUERY)
    pos = buf.rfind(b"\n", 0, at) + 1  # the line holding byte at - 1 (or the first line)
    first = pos
    while True:  # the first content line from there: its query
        end = buf.find(b"\n", pos)
        if end < 0:
            return None
        query = _query(buf[pos:end])
        pos = end + 1
        if query is not None:
            break
        if pos >= limit and pos > first:
            return pos
    text = np.frombuffer(buf, np.uint8)
    starts = np.concatenate([[pos], np.flatnonzero(text[pos:] == 10) + (pos + 1)])
    limit_at = int(np.searchsorted(starts, limit))
    give_up = int(starts[limit_at]) if limit_at < len(starts) else None
    complete = starts[:-1]  # the lines whose newline is in buf
    last = len(buf) - 1
    same = np.ones(len(complete), bool)
    for k, byte in enumerate(query):
        same &= text[np.minimum(complete + k, last)] == byte
    blank = np.zeros(256, bool)
    blank[list(b" \t\n\r\x0b\x0c")] = True  # what ends a first field (bytes.split)
    same &= blank[text[np.minimum(complete + len(query), last)]]
    for line in complete[~same]:
        if give_up is not None and line >= give_up:
            break
        other = _query(buf[int(line) : buf.find(b"\n", int(line))])
        if other is not None and other != query:
            return int(line)
    return give_up


def read_block(block: RunBlock, threads: bool = True) -> tuple[pa.Table, np.ndarray]:
    """Parse *block*: the run table (as :func:`rankeval.io.trec.read_run_table` reads a file)
    and the file line number of each row. *threads*: let pyarrow parse with its threads
    (off in worker processes, where the processes are the parallelism).

    Raises:
        InputError: naming the file, line and column of the first bad line of the block.
    """
    import numpy as np

    data = block.bytes()
    with inputs.reading(block.path, "run", "lower --block-size, or use a machine with more memory"):
        table = parse_run_fast(data, threads)
        if table is not None:
            return table, np.arange(block.first_line, block.first_line + table.num_rows, dtype=np.int64)
        return io.parse_run(data, block.name, block.first_line)
