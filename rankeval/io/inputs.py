"""Input files: the one place where rankeval opens a file to read it.

Every reader (qrels, runs, ``--docinfo`` side files, the hTBG JSON format) and every sniffer
(is it JSON? is it compressed? is the fast path possible?) reaches the file system through
this module, so that whichever of them touches a path first, a missing, unreadable or
directory path gives the same one-line :class:`~rankeval.errors.InputError`, never an
``OSError`` traceback.

Compressed input (gzip, bzip2, xz; recognised by its magic bytes, not its name) is
decompressed **as a stream** (:class:`Decompressed`), so that a reader can hand it to
pyarrow's CSV parser without first holding the whole decompressed text in memory. The
stream is strict where the Python and pyarrow readers are lenient: a truncated stream, a
corrupt one, and data after the end of the compressed stream (other than another complete
member, which the formats allow) are errors.

Resources: a stream that decompresses to more than the memory available to the process
(:func:`memory_available`) stops with a :class:`~rankeval.errors.ResourceError` (a
decompression bomb, or a file too big for the machine: either way reading on could only end
in the operating system killing the process), and :func:`reading` turns memory exhaustion
while reading into a :class:`~rankeval.errors.ResourceError` that says what was read, how
big it was and what to do.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from rankeval.errors import InputError, RankevalError, ResourceError, clip

__all__ = [
    "Decompressed",
    "Opened",
    "compression_of",
    "human_size",
    "is_stdin",
    "memory_available",
    "open_input",
    "os_errors",
    "path_kind",
    "read_all",
    "read_head",
    "read_raw_head",
    "reading",
    "safe_name",
    "source_name",
]

CHUNK = 1 << 20
"""Bytes read from a compressed file (and at most produced by its decompressor) at a time."""

_GZIP, _BZIP2, _XZ = "gzip", "bzip2", "xz"
_MAGIC = {_GZIP: b"\x1f\x8b", _BZIP2: b"BZh", _XZ: b"\xfd7zXZ\x00"}
# bzip2: "BZh", the block size '1'..'9', then the magic of the first block or of the end of
# the stream (an empty file); the whole eight-byte check keeps a text file whose first query
# id starts with "BZh" from being taken for bzip2
_BZIP2_NEXT = (b"1AY&SY", b"\x17rE8P\x90")


def source_name(source: str | Path) -> str:
    """Name used for *source* in messages (``<stdin>`` for ``-``)."""
    return "<stdin>" if is_stdin(source) else str(source)


def is_stdin(source: str | Path) -> bool:
    """Whether *source* is ``-`` (standard input)."""
    return str(source) == "-"


def human_size(size: int) -> str:
    """*size* bytes for a message: ``75.6 MB``."""
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def os_errors(name: str, path: bool = False) -> Iterator[None]:
    """Turn any ``OSError`` raised while opening or reading file *name* into an
    :class:`InputError` naming the file and the reason: the shared error handling of every
    reader. With *path* (around a call that takes the path: ``open``, ``stat``), also the
    ``ValueError`` of a path that cannot name a file (a NUL byte in it)."""
    try:
        yield
    except RankevalError:
        raise
    except ValueError as exc:
        if not path or isinstance(exc, _arrow_errors()):
            raise
        raise InputError(f"not a usable file name: {exc}", source=name) from None
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("file not found", source=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=name) from None
    except PermissionError:
        raise InputError("permission denied: the file cannot be read", source=name) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=name) from None


def _arrow_errors() -> tuple[type[BaseException], ...]:
    """pyarrow's exception base class, if pyarrow is loaded (nothing to catch otherwise)."""
    pa = sys.modules.get("pyarrow")
    return (pa.ArrowException,) if pa is not None else ()


def path_kind(source: str | Path) -> str:
    """What *source* names, without opening it: ``"stdin"``, ``"missing"``, ``"file"`` (a
    regular file), ``"directory"`` or ``"other"`` (a pipe, a device).

    Raises:
        InputError: the path cannot even be looked at (a directory on the way is not
            searchable, the name is too long ...).
    """
    if is_stdin(source):
        return "stdin"
    name = source_name(source)
    with os_errors(name, path=True):
        try:
            mode = os.stat(source).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
    if stat.S_ISREG(mode):
        return "file"
    return "directory" if stat.S_ISDIR(mode) else "other"


def compression_of(head: bytes) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` if *head* (the first bytes of a file, at least
    ten for bzip2) starts with that format's magic bytes, else ``None``."""
    if head.startswith(_MAGIC[_GZIP]):
        return _GZIP
    if head.startswith(_MAGIC[_XZ]):
        return _XZ
    if head.startswith(_MAGIC[_BZIP2]) and head[3:4].isdigit() and head[3:4] != b"0":
        if head[4:10] in _BZIP2_NEXT:
            return _BZIP2
    return None


def memory_available() -> int | None:
    """Bytes of memory this process can still use (``MemAvailable`` of ``/proc/meminfo``,
    less if a cgroup limit is tighter), or ``None`` where that cannot be read. A decompressed
    stream larger than this could only end with the process being killed."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            found.append(max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


class Decompressed(io.RawIOBase):
    """The decompressed bytes of a gzip, bzip2 or xz file, as a read-only stream.

    Decompression goes :data:`CHUNK` bytes at a time, so memory stays bounded whatever the
    compression ratio. Concatenated members (gzip, bzip2, xz all allow them) are read one
    after the other, as ``gunzip`` does; gzip's zero padding after a member is skipped.

    Raises (from :meth:`read`):
        InputError: the data is corrupt, ends before the end of the compressed stream, or is
            followed by something that is not another member ("corrupt compressed file").
        ResourceError: more than *limit* bytes came out (a decompression bomb).
    """

    def __init__(self, raw: BinaryIO, kind: str, name: str, limit: int | None, size: int | None) -> None:
        super().__init__()
        self._raw = raw
        self.kind = kind
        self.name = name
        self.limit = limit
        self.size = size
        self.total = 0  # bytes produced so far
        self._dec = self._new()
        self._buf = b""
        self._pos = 0
        self._done = False

    def _new(self) -> Any:  # zlib's decompressor type has no public name
        if self.kind == _GZIP:
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        return bz2.BZ2Decompressor() if self.kind == _BZIP2 else lzma.LZMADecompressor()

    def readable(self) -> bool:
        return True

    def _corrupt(self, reason: str) -> InputError:
        return InputError(f"corrupt compressed file ({self.kind}): {reason}", source=self.name)

    def _read_raw(self) -> bytes:
        with os_errors(self.name):
            return self._raw.read(CHUNK)

    def _next_member(self) -> bytes | None:
        """The compressed bytes that follow the end of a member: the start of the next one,
        or ``None`` at the end of the file (after gzip's zero padding)."""
        rest: bytes = self._dec.unused_data
        magic = _MAGIC[self.kind]
        while True:
            if self.kind == _GZIP:
                rest = rest.lstrip(b"\x00")
            if len(rest) >= len(magic):
                break
            more = self._read_raw()
            if not more:
                if rest:
                    raise self._corrupt("unexpected data after the end of the compressed data")
                return None
            rest += more
        if not rest.startswith(magic):
            raise self._corrupt("unexpected data after the end of the compressed data")
        return rest

    def _more(self) -> bytes:
        """The next piece of decompressed data (at most :data:`CHUNK` bytes); ``b""`` at the end."""
        truncated = "the data ends before the end of the compressed stream (truncated?)"
        while not self._done:
            dec = self._dec
            if dec.eof:
                data = self._next_member()
                if data is None:
                    self._done = True
                    return b""
                self._dec = dec = self._new()
            elif self.kind == _GZIP:
                # b"" at the end of the file: zlib may still hold output (as gzip.GzipFile)
                data = dec.unconsumed_tail or self._read_raw()
            elif dec.needs_input:
                data = self._read_raw()
                if not data:
                    raise self._corrupt(truncated)
            else:
                data = b""
            try:
                out: bytes = dec.decompress(data, CHUNK)
            except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as exc:
                raise self._corrupt(str(exc)) from None
            if out:
                self.total += len(out)
                if self.limit is not None and self.total > self.limit:
                    raise self._bomb()
                return out
            if not data and not dec.eof:  # no input left, no output, no end marker
                raise self._corrupt(truncated)
        return b""

    def _bomb(self) -> ResourceError:
        packed = f"{human_size(self.size)} compressed" if self.size else "compressed"
        return ResourceError(
            f"decompressed data exceeds the {human_size(self.limit or 0)} of memory available "
            f"({packed}; a decompression bomb?): decompress it on a machine with more memory and "
            "check it, or split it",
            source=self.name,
        )

    def read(self, size: int | None = -1) -> bytes:
        """Up to *size* decompressed bytes (all the rest for ``-1``): fewer only at the end,
        so that a reader asking for blocks (pyarrow's CSV reader) gets blocks of its size."""
        if size is None or size < 0:
            return self.readall()
        parts: list[bytes] = []
        wanted = size
        while wanted > 0:
            if self._pos >= len(self._buf):
                self._buf, self._pos = self._more(), 0
                if not self._buf:
                    break
            if self._pos == 0 and wanted >= len(self._buf):
                piece, self._buf = self._buf, b""
            else:
                piece = self._buf[self._pos : self._pos + wanted]
                self._pos += len(piece)
            parts.append(piece)
            wanted -= len(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        out = self.read(len(buffer))
        buffer[: len(out)] = out
        return len(out)

    def readall(self) -> bytes:
        """All the remaining decompressed bytes."""
        parts = [self._buf[self._pos :]]
        self._buf, self._pos = b"", 0
        while piece := self._more():
            parts.append(piece)
        return b"".join(parts)


@dataclass
class Opened:
    """An input opened for reading.

    Attributes:
        name: the name used in messages.
        stream: the (decompressed) bytes.
        compression: ``"gzip"``, ``"bzip2"``, ``"xz"`` or ``None``.
        size: the size of the file on disk (compressed), if known.
    """

    name: str
    stream: BinaryIO
    compression: str | None
    size: int | None


@contextmanager
def open_input(source: str | Path, limit: int | None = None) -> Iterator[Opened]:
    """Open *source* (a path, or ``-`` for stdin) for reading, decompressed if it starts
    with gzip, bzip2 or xz magic bytes. Nothing else in rankeval opens an input file.

    Args:
        source: the path or ``-``.
        limit: most decompressed bytes allowed (default: :func:`memory_available`).

    Raises:
        InputError: the path is missing, a directory or unreadable (any OS error).
    """
    name = source_name(source)
    stdin = is_stdin(source)
    if stdin and sys.stdin is None:  # closed when the program started (``<&-``)
        raise InputError("standard input is closed; nothing to read for '-'", source=name)
    with os_errors(name, path=True):
        raw: BinaryIO = sys.stdin.buffer if stdin else open(source, "rb")
    try:
        with os_errors(name):
            info = os.fstat(raw.fileno()) if not stdin else None
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(name)
            size = info.st_size if info is not None and stat.S_ISREG(info.st_mode) else None
            if hasattr(raw, "peek"):  # a buffered file or stdin: look without consuming
                head = raw.peek(16)[:16]
            elif raw.seekable():
                start = raw.tell()
                head = raw.read(16)
                raw.seek(start)
            else:  # a stream that can be read only once (stdin replaced by a test runner)
                raw = io.BytesIO(raw.read())
                head = raw.getvalue()[:16]
        kind = compression_of(head)
        stream: BinaryIO = raw
        if kind is not None:
            cap = memory_available() if limit is None else limit
            stream = Decompressed(raw, kind, name, cap, size)  # type: ignore[assignment]
        yield Opened(name, stream, kind, size)
    finally:
        if not stdin:
            raw.close()


def read_all(source: str | Path) -> bytes:
    """The whole (decompressed) content of *source*.

    Raises:
        InputError: see :func:`open_input`; corrupt compressed data.
        ResourceError: a decompression bomb (see :class:`Decompressed`).
    """
    with open_input(source) as opened, os_errors(opened.name):
        return opened.stream.read()


def read_head(source: str | Path, size: int) -> bytes:
    """The first *size* (decompressed) bytes of the regular file *source*, for sniffing."""
    with open_input(source) as opened, os_errors(opened.name):
        return opened.stream.read(size)


def read_raw_head(source: str | Path, size: int) -> bytes:
    """The first *size* bytes of the file *source* as stored (not decompressed)."""
    name = source_name(source)
    with os_errors(name, path=True), open(source, "rb") as fh:
        return fh.read(size)


@contextmanager
def reading(source: str | Path, what: str, advice: str | None = None) -> Iterator[None]:
    """Read *source* (a *what*: ``"run"``, ``"qrels"`` ...) inside this block: memory
    exhaustion (``MemoryError``, pyarrow's ``ArrowMemoryError``) becomes a
    :class:`ResourceError` saying what was read, how big it is and what to do, and any OS
    error an :class:`InputError`.

    Args:
        source: the path or ``-``.
        what: what is being read, for the message.
        advice: what to do, for the message (default: a machine with more memory).
    """
    name = source_name(source)
    try:
        with os_errors(name):
            yield
    except RankevalError:
        raise
    except MemoryError:
        size = ""
        if not is_stdin(source):
            try:
                size = f" ({human_size(os.stat(source).st_size)} on disk)"
            except (OSError, ValueError):
                pass
        hint = advice or "use a machine with more memory"
        raise ResourceError(f"out of memory while reading the {what}{size}: {hint}", source=name) from None
    except _arrow_errors() as exc:
        # pyarrow refused the data in a way no check above foresaw: still the file's fault
        raise InputError(f"cannot be read: {clip(str(exc))}", source=name) from None


def safe_name(name: str) -> str:
    """*name* as text every writer can encode: each byte of a file name that is not UTF-8
    (which Python keeps as a lone surrogate) shown as ``\\xNN``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that stands for no byte
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name
