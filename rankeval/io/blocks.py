"""A TREC run file as query-aligned blocks: the unit of work of the block engine.

TREC runs are written query by query. :func:`split_run` reads a run file (plain, or
compressed and decompressed as a stream) once, front to back, and cuts it into blocks of
about ``block_size`` bytes, each cut moved forward to the next line whose query id differs
from the line before it (a scan of a few lines). Every block therefore holds whole queries
— unless the run is not sorted by query, which the engine detects as the blocks' values come
back (a query in two blocks) and handles by grouping the run by query first
(:mod:`rankeval.io.partition`).

:func:`read_block` parses one block as the whole-file reader parses a file: the fast path
(pyarrow's CSV reader, :mod:`rankeval.io.fast_run`) for clean text, the general path
(:func:`rankeval.io.trec.parse_run`) for anything else, with every row's line number in the
file, so that messages name the same line as a whole-file read would.

A run file is opened once for a whole evaluation (:class:`RunFile`): the cuts, the blocks
this process evaluates and any second reading of a block come from that one file
descriptor, and the blocks a worker process reads (by path) must be the same file, of the
same size and modification time. A file that changes while it is read — truncated, written
to, or replaced under its name — is an :class:`~rankeval.errors.InputError` naming it.

May import: numpy, ``inputs``, ``fast_run``, ``memory``, ``trec``, ``lines`` and the foundation modules.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from rankeval.errors import InputError
from rankeval.io import inputs, trec
from rankeval.io.fast_run import parse_run_fast
from rankeval.io.memory import reserve, threads_fit

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "MIN_BLOCK_SIZE",
    "FileStamp",
    "RunBlock",
    "RunFile",
    "read_block",
    "split_run",
]

DEFAULT_BLOCK_SIZE = 32 * 2**20
"""Bytes of run text per block (before the cut moves to the next query)."""

MIN_DEFAULT_BLOCK_SIZE = 4 * 2**20
"""The smallest block size chosen by default (when many processes share a run)."""

MIN_BLOCK_SIZE = 64 * 2**10
"""The smallest block size the command line uses (a smaller ``--block-size`` is raised to
it): each block costs about a millisecond whatever its size, so blocks of a few lines would
make a run of many queries take minutes."""

LONGEST_QUERY = 256 * 2**20
"""Bytes of one query's lines after which a block is cut even inside the query (the run is
then evaluated as an unsorted one): a bound on a block's memory for any input."""

_CHUNK = 4 * 2**20
_BOM = b"\xef\xbb\xbf"


class FileStamp(NamedTuple):
    """What tells that a file is still the one first opened: its device and inode, its
    size and its modification time."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileStamp:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _changed(name: str, stamp: FileStamp, now: FileStamp | None) -> InputError:
    """The error for file *name*, opened as *stamp*, found as *now* (``None``: gone)."""
    if now is None:
        what = "removed"
    elif (now.device, now.inode) != (stamp.device, stamp.inode):
        what = "replaced by another file"
    elif now.size < stamp.size:
        what = f"truncated from {stamp.size:,} to {now.size:,} bytes"
    else:
        what = "written to"
    return InputError(
        f"the file changed while it was being read ({what}); evaluate a copy that stays unchanged",
        source=name,
    )


def _check(name: str, path: str, stamp: FileStamp, fd: int) -> None:
    """Raise :func:`_changed`'s error unless open file *fd* and the file *path* now names
    are still the file of *stamp*, unchanged."""
    now = FileStamp.of(os.fstat(fd))
    if now != stamp:
        raise _changed(name, stamp, now)
    try:
        named = FileStamp.of(os.stat(path))
    except OSError:
        raise _changed(name, stamp, None) from None
    if named != stamp:
        raise _changed(name, stamp, named)


def _pread(fd: int, size: int, offset: int, name: str, stamp: FileStamp) -> bytes:
    """Exactly *size* bytes of *fd* from *offset*: fewer (the file was truncated while
    read) is :func:`_changed`'s error, never a loop waiting for bytes that will not come."""
    data = os.pread(fd, size, offset)
    if len(data) < size:
        raise _changed(name, stamp, FileStamp.of(os.fstat(fd)))
    return data


class _Reader:
    """A file descriptor read from offset 0 with ``pread`` (its own position): the raw
    stream of a compressed file, which can be decompressed again while the file is held."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pos = 0

    def read(self, size: int = -1) -> bytes:
        data = os.pread(self.fd, size if size >= 0 else 1 << 30, self.pos)
        self.pos += len(data)
        return data


class RunFile:
    """A run file held open for a whole evaluation: one file descriptor, and the file's
    :class:`FileStamp` taken when it was opened. Its blocks (:meth:`split`) are read
    through it in this process, and by path, the stamp checked, in others.

    Raises:
        InputError: the file cannot be opened.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.name = trec.source_name(path)
        with inputs.os_errors(self.name, path=True):
            self._file = open(self.path, "rb")  # held until close()
        try:
            with inputs.os_errors(self.name):
                self.fd = self._file.fileno()
                self.stamp = FileStamp.of(os.fstat(self.fd))
                self.compression = inputs.compression_of(os.pread(self.fd, 16, 0))
        except BaseException:
            self._file.close()
            raise
        self.owner = os.getpid()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RunFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def check(self) -> None:
        """Raise an :class:`~rankeval.errors.InputError` if the file changed since it was
        opened (or its name now names another file)."""
        with inputs.os_errors(self.name):
            _check(self.name, self.path, self.stamp, self.fd)

    def split(self, block_size: int, held: bool = True) -> Iterator[RunBlock]:
        """:func:`split_run` of this file; *held*: the blocks may read their bytes through
        this file's descriptor (it stays open while they are evaluated)."""
        with inputs.os_errors(self.name):
            self.check()
            if self.compression is None:
                yield from _split_plain(self, block_size, held)
            else:
                raw: Any = _Reader(self.fd)
                stream: Any = inputs.Decompressed(raw, self.compression, self.name, 1 << 62, self.stamp.size)
                yield from _split_stream(self, stream, block_size)
            self.check()


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
        stamp: the file when it was opened (:class:`FileStamp`); what any read checks.
        fd: the descriptor the file is held open by, in process *owner* (``-1``: none).
        owner: that process.
    """

    path: str
    name: str
    start: int
    end: int
    first_line: int
    data: bytes | None = None
    compressed: bool = False
    stamp: FileStamp | None = field(default=None, compare=False)
    fd: int = field(default=-1, compare=False)
    owner: int = field(default=0, compare=False)

    def without_data(self) -> RunBlock:
        """This block without its bytes: what the driver keeps of an evaluated block. A plain
        file's block reads them again from its byte range; a compressed file's must be cut
        again (:func:`split_run`) before it is evaluated again."""
        if self.data is None:
            return self
        from dataclasses import replace

        return replace(self, data=None)

    def bytes(self) -> bytes:
        """The block's text: as carried, else read through the held descriptor (in the
        process that holds it), else from the file by path, which must still be the file
        first opened, unchanged.

        Raises:
            InputError: the file cannot be read, or changed since it was opened.
        """
        if self.data is not None:
            return self.data
        if self.compressed:
            raise ValueError("a compressed file's block without its bytes: cut the file again")
        if self.fd >= 0 and self.owner == os.getpid():
            return self._read(self.fd)
        try:
            with inputs.os_errors(self.name, path=True), open(self.path, "rb") as fh:
                return self._read(fh.fileno())
        except InputError:
            if self.stamp is not None and not os.path.lexists(self.path):
                raise _changed(self.name, self.stamp, None) from None  # removed since it was opened
            raise

    def _read(self, fd: int) -> builtins.bytes:
        with inputs.os_errors(self.name):
            if self.stamp is None:
                return os.pread(fd, self.end - self.start, self.start)
            _check(self.name, self.path, self.stamp, fd)
            return _pread(fd, self.end - self.start, self.start, self.name, self.stamp)


def split_run(source: RunFile | str | Path, block_size: int = DEFAULT_BLOCK_SIZE) -> Iterator[RunBlock]:
    """The query-aligned blocks of run file *source* (a path, or a :class:`RunFile` held
    open), front to back, read as a stream. A plain file is only scanned (its lines counted,
    its cuts found; a block's bytes are read where it is evaluated, :meth:`RunBlock.bytes`);
    a compressed file's blocks carry their bytes (one block in memory at a time here).

    A cut is moved to the first line, at or after ``block_size`` bytes into the block, whose
    query id differs from the previous content line's (blank and comment lines do not
    count); if none comes within another ``block_size`` bytes (and :data:`LONGEST_QUERY`),
    the block is cut at a line end anyway (the engine then sees the query in two blocks, as
    for an unsorted run). Every scan reads each byte a bounded number of times: one long
    line, a file without any newline or one huge query costs time linear in its size.

    Raises:
        InputError: the file cannot be read, changed while it was read, or its compressed
            data is corrupt.
    """
    if isinstance(source, RunFile):
        yield from source.split(block_size)
        return
    with RunFile(source) as file:
        yield from file.split(block_size, held=False)  # (closed after the split: blocks read by path)


def _split_plain(file: RunFile, block_size: int, held: bool) -> Iterator[RunBlock]:
    """:func:`split_run` of a plain file: cuts found by reading a few lines at each."""
    fd, size, stamp = file.fd, file.stamp.size, file.stamp
    pos = len(_BOM) if os.pread(fd, len(_BOM), 0) == _BOM else 0
    line = 1
    while pos < size:
        end = size
        if pos + block_size < size:
            end = _cut_file(file, pos, block_size)
        yield RunBlock(
            file.path, file.name, pos, end, line, None, False, stamp, file.fd if held else -1, file.owner
        )
        line += _count_lines(file, pos, end)
        pos = end


def _count_lines(file: RunFile, start: int, end: int) -> int:
    """The newlines between offsets *start* and *end* of a file, read a MiB at a time
    (numpy counts them about three times as fast as ``bytes.count``)."""
    import numpy as np

    count = 0
    while start < end:
        chunk = _pread(file.fd, min(1 << 20, end - start), start, file.name, file.stamp)
        count += int(np.count_nonzero(np.frombuffer(chunk, np.uint8) == 10))
        start += len(chunk)
    return count


def _cut_file(file: RunFile, pos: int, block_size: int) -> int:
    """:func:`_cut` of the block starting at *pos* of a plain file, reading only around the
    cut: back to the start of the line holding the cut (in windows growing fourfold), then
    forward in reads that double what is held (each look at it costs its length: the sum
    stays within a few times the bytes read)."""
    fd, size, name, stamp = file.fd, file.stamp.size, file.name, file.stamp
    at = pos + block_size
    back = 1 << 16
    start = max(pos, at - back)
    while start > pos and b"\n" not in _pread(fd, at - start, start, name, stamp):
        back *= 4  # a line longer than the window: look further back
        start = max(pos, at - back)
    buf = _pread(
        fd, min(size, at + (1 << 16)) - start, start, name, stamp
    )  # a query's lines are usually fewer
    while True:
        cut = _cut(buf, at - start)
        if cut is not None:
            return start + cut
        if start + len(buf) >= size:
            return size
        buf += _pread(
            fd, min(len(buf), size - start - len(buf)), start + len(buf), name, stamp
        )  # twice as much


def _split_stream(file: RunFile, stream: BinaryIO, block_size: int) -> Iterator[RunBlock]:
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
        yield RunBlock(file.path, file.name, pos, pos + cut, line, data, True, file.stamp)
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
    byte ``at - 1`` gives the query; every later line is tested at once (numpy) for being a
    content line (not blank, not ``#``; only an indented line is looked at alone, for its
    indent) whose first field is that query, and the first content line that is not is the
    cut. Only fields as long as the query are compared with it, a few columns at a time:
    the bytes compared are at most those of the lines, in a number of looks that does not
    grow with the query's length (a query id of megabytes costs no more than its bytes)."""
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
    blank = np.zeros(256, bool)
    blank[list(b" \t\n\r\x0b\x0c")] = True  # what ends a first field (bytes.split)
    heads = complete.copy()  # where each line's first field starts: after its indent
    for i in np.flatnonzero(blank[text[complete]] & (text[complete] != 10)):
        line = int(complete[i])
        stop = int(starts[i + 1]) - 1
        heads[i] = stop - len(buf[line:stop].lstrip())
    ends = starts[1:] - 1  # each line's newline
    content = (heads < ends) & (text[heads] != ord("#"))
    size = len(query)
    want = np.frombuffer(query, np.uint8)
    found = np.flatnonzero(ends - heads >= size)
    found = found[blank[text[heads[found] + size]]]  # the first field ends there ...
    k = 0
    while k < size and len(found):  # ... and its bytes are the query's: a MiB of them per look
        width = min(size - k, max(1, (1 << 20) // len(found)))
        found = found[(text[heads[found, None] + np.arange(k, k + width)] == want[k : k + width]).all(axis=1)]
        k += width
    content[found] = False  # (the same query)
    other = np.flatnonzero(content)
    if len(other) and (give_up is None or complete[other[0]] < give_up):
        return int(complete[other[0]])
    return give_up


def read_block(block: RunBlock, threads: bool = True) -> tuple[pa.Table, np.ndarray]:
    """Parse *block*: the run table (as :func:`rankeval.io.trec.read_run_table` reads a file)
    and the file line number of each row. *threads*: let pyarrow parse with its threads
    (off in worker processes, where the processes are the parallelism; off too when memory
    is short, :func:`threads_fit`).

    Raises:
        InputError: naming the file, line and column of the first bad line of the block.
        ResourceError: memory ran out.
    """
    import numpy as np

    data = block.bytes()
    with inputs.reading(block.path, "run", "lower --block-size, or use a machine with more memory"):
        reserve(len(data))
        table = parse_run_fast(data, threads and threads_fit(len(data)))
        if table is not None:
            return table, np.arange(block.first_line, block.first_line + table.num_rows, dtype=np.int64)
        return trec.parse_run(data, block.name, block.first_line)
