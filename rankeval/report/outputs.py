"""Writing result files without ever destroying one: ``-o``, plots and ``convert`` outputs.

Every output goes through :func:`write_output` (a file's bytes) or :func:`write_stdout`. The
rules, and why:

* **Never onto an input.** ``rankeval q.txt run.txt -o run.txt`` would replace the run with
  its own scores. :func:`check_outputs` compares each output with every input path, after
  resolving symbolic links and by device and inode (so a hard link or ``./run.txt`` is caught
  too), and refuses with a usage error (exit 2) before any work is done.
* **All or nothing.** A regular file is written to a temporary file in the target's
  directory, flushed to disk, then renamed over the target: a reader sees the old file or the
  new one, never half of either; on any failure (or Ctrl-C) the temporary file is removed and
  an existing target is left as it was.
* **Streams are streams.** A character device or a FIFO (``/dev/stdout``, ``/dev/null``, a
  named pipe) is opened and written in place — renaming a file over ``/dev/null`` would
  replace the device node.
* **Links are written through.** A symbolic link's target is replaced atomically; the link
  itself stays a link.
* **Permissions as the user expects.** A new file gets ``0666`` minus the umask (``mkstemp``
  alone would give ``0600``); replacing a file keeps that file's mode.
* **Errors are one line.** Every OS error (missing directory, a directory, read-only, disk
  full, broken pipe) is an :class:`~rankeval.errors.OutputError` naming the path and the
  reason.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from rankeval.errors import OutputError, UsageError

__all__ = ["check_outputs", "write_output", "write_outputs", "write_stdout"]


def _identity(path: str | Path) -> tuple[str, tuple[int, int] | None]:
    """(resolved path, (device, inode) if the file exists)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def check_outputs(outputs: Iterable[tuple[str, str | Path | None]], inputs: Iterable[object]) -> None:
    """Refuse outputs that are one of the *inputs*, or each other.

    Args:
        outputs: ``(option name, path)`` pairs (``None`` paths are skipped), e.g.
            ``[("-o", "out.txt")]``.
        inputs: everything read (paths; other objects — DataFrames, ``-``, dataset ids — are
            ignored).

    Raises:
        UsageError: an output path is empty, names an input file (after resolving links, or
            the same device and inode), or is given for two outputs.
    """
    seen_in: dict[object, str] = {}
    for item in inputs:
        if not isinstance(item, (str, Path)) or str(item) in ("", "-"):
            continue
        real, ident = _identity(item)
        if ident is None and not os.path.lexists(item):
            continue  # not a file (an ir_datasets id, a glob): nothing to overwrite
        seen_in[real] = str(item)
        if ident is not None:
            seen_in[ident] = str(item)
    seen_out: dict[str, str] = {}
    for option, path in outputs:
        if path is None:
            continue
        if str(path) == "":
            raise UsageError(f"{option}: empty path; expected a file name")
        real, ident = _identity(path)
        st = _stat(real)
        if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            continue  # a stream (/dev/null, /dev/stdout): written in place, never replaced
        clash = seen_in.get(real) or (seen_in.get(ident) if ident is not None else None)
        if clash is not None:
            raise UsageError(
                f"{option} {path}: this is the input file {clash}; refusing to overwrite an input "
                "(choose another output path)"
            )
        if real in seen_out:
            raise UsageError(f"{option} {path}: the same file as {seen_out[real]}; give two different paths")
        seen_out[real] = f"{option} {path}"


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such directory"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or type(exc).__name__


def write_output(path: str | Path, data: str | bytes) -> None:
    """Write *data* (text is written as UTF-8) to *path* safely (see the module docstring).

    Raises:
        UsageError: *path* is empty or a directory.
        OutputError: the file could not be written (the reason, e.g. "Permission denied");
            nothing is left behind and an existing file is unchanged.
    """
    write_outputs([(path, data)])


def write_outputs(items: Iterable[tuple[str | Path, str | bytes]]) -> None:
    """Write several files as one unit: every regular file is first written in full to its
    temporary file, and only when all of them are complete are they renamed over their
    targets — a failure while writing leaves every target as it was (``convert`` writes a
    qrels and a run this way).

    Raises:
        UsageError: a path is empty or a directory.
        OutputError: a file could not be written; no temporary file is left behind.
    """
    staged: list[tuple[str, str]] = []  # (temporary file, target)
    streams: list[tuple[str | Path, str, bytes]] = []
    try:
        for path, data in items:
            payload = data.encode("utf-8") if isinstance(data, str) else data
            _check_file_name(path)
            real = os.path.realpath(path)  # a symlink is written through to its target
            st = _stat(real)
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise UsageError(f"{path}: is a directory; expected a file name")
            if st is not None and not stat.S_ISREG(st.st_mode):
                streams.append((path, real, payload))
                continue
            _stage(path, real, st, payload, staged)
        while staged:
            tmp, real = staged[0]
            try:
                os.replace(tmp, real)
            except OSError as exc:
                raise OutputError(f"cannot write the file: {_reason(exc)}", source=real) from None
            del staged[0]
        for path, real, payload in streams:
            _write_stream(path, real, payload)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)


def _check_file_name(path: str | Path) -> None:
    """A usage error unless *path* can name a file: not empty, and not ending in a slash,
    which names a directory (``-o out/`` would otherwise write a file ``out``)."""
    text = str(path)
    if text == "":
        raise UsageError("empty output path; expected a file name")
    if text.endswith((os.sep, os.altsep or os.sep)):
        raise UsageError(f"{text}: names a directory (it ends in {text[-1]}); expected a file name")


def _stage(
    path: str | Path, real: str, st: os.stat_result | None, payload: bytes, staged: list[tuple[str, str]]
) -> None:
    """Write *payload* to a new temporary file beside *real*, flushed to disk, with the mode
    the target will have. The file is added to *staged* before it is created: whenever an
    exception comes (a signal's too, between any two steps), the caller's clean-up removes it."""
    directory = os.path.dirname(real) or "."
    while True:
        tmp = os.path.join(directory, f".{os.path.basename(real)}.{secrets.token_hex(4)}.tmp")
        staged.append((tmp, real))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
            break
        except FileExistsError:  # another's: not ours to remove
            staged.pop()
        except OSError as exc:
            staged.pop()
            where = f" (in {directory})" if exc.errno == errno.ENOENT else ""
            raise OutputError(f"cannot write the file{where}: {_reason(exc)}", source=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OutputError(f"cannot write the file: {_reason(exc)}", source=str(path)) from None


def _write_stream(path: str | Path, real: str, payload: bytes) -> None:
    """Write to a character device or FIFO in place."""
    try:
        with open(real, "wb") as fh:
            fh.write(payload)
    except OSError as exc:
        raise OutputError(f"cannot write the file: {_reason(exc)}", source=str(path)) from None


def write_stdout(text: str) -> None:
    """Write *text* to standard output and flush it.

    Raises:
        OutputError: standard output is closed (or was when the program started), a broken
            pipe, or a full device. Standard
            output is then pointed at ``/dev/null`` so that Python's own flush at exit does
            not print a second error.
    """
    if sys.stdout is None:  # closed when the program started (``>&-``)
        raise OutputError("cannot write the results to standard output: it is closed")
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:  # UTF-8 whatever the terminal's encoding, as the files are
            sys.stdout.flush()
            buffer.write(text.encode("utf-8"))
            buffer.flush()
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except OSError as exc:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a real file descriptor (a test runner's buffer)
        raise OutputError(f"cannot write the results to standard output: {_reason(exc)}") from None
