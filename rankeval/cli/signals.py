"""The stop signals of the ``rankeval`` command (SIGINT, SIGTERM, SIGHUP): see :mod:`rankeval.cli`.

May import: the standard library only (the command imports it before anything heavy).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

__all__ = ["STOP_SIGNALS", "Stopped", "catch_signals", "release_signals", "report_stop", "unreported"]

STOP_SIGNALS: dict[int, str] = {
    signal.SIGINT: "interrupted",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "terminated (SIGHUP)",
}
"""The signals that stop a command cleanly, and what its one line says."""


class Stopped(KeyboardInterrupt):
    """A stop signal (:data:`STOP_SIGNALS`) arrived: raised in the main thread by the handler
    :func:`catch_signals` installs. A ``KeyboardInterrupt``, so that every clean-up written for
    Ctrl-C (rankeval's, Dask's, concurrent.futures') runs for SIGTERM and SIGHUP too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


DEFER_IMPORT = 1.0
"""Seconds a stop signal that arrives inside an import waits for the import to end."""


class _State:
    received: int | None = None  # the first stop signal
    deferred: float | None = None  # when it first came (inside an import)
    reported = False  # its line printed


def _on_signal(signum: int, frame: Any) -> None:
    if _State.received is not None:
        return
    now = time.monotonic()
    if _State.deferred is None:
        _State.deferred = now
    if _importing(frame) and now - _State.deferred < DEFER_IMPORT:
        # raised inside an import, the exception can leave a C extension half-initialised
        # (numpy's cannot be loaded twice: every later import of it fails), and the import
        # system may print it: the signal is sent again shortly, until it lands outside an
        # import (or DEFER_IMPORT has passed: a plugin whose import never ends still stops)
        timer = threading.Timer(0.02, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    _State.received = signum
    raise Stopped(signum)


def _importing(frame: Any) -> bool:
    """Whether the interrupted code runs inside Python's import system."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def catch_signals() -> None:
    """Make each of :data:`STOP_SIGNALS` raise :class:`Stopped` once (see the module docstring);
    one that is ignored stays ignored."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)


def release_signals() -> None:
    """Give the stop signals their default action back (those not ignored): the command is
    over, and a signal during the interpreter's own exit ends it without a word."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, signal.SIG_DFL)


def report_stop(exc: BaseException) -> int:
    """Print the one line of an interrupt *exc* (:class:`Stopped`, or a plain
    ``KeyboardInterrupt``: Ctrl-C, or pyarrow's ``ArrowCancelled``); return the exit code, 128
    + the signal's number."""
    signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
    _State.reported = True
    try:
        sys.stderr.write(f"rankeval: {STOP_SIGNALS[signum]}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # stderr closed, or the terminal gone (SIGHUP): the exit code says it
    return 128 + signum


def unreported() -> int | None:
    """The stop signal received whose line is not printed yet, if any."""
    return _State.received if not _State.reported else None
