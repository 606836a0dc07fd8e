"""The ``rankeval`` command: a thin typer app over the library API.

``rankeval QRELS RUN [RUN ...] -m SPEC`` runs the default ``evaluate`` command; ``rankeval
measures`` and ``rankeval plugins`` list the catalogue. Heavy imports happen inside commands.

**Signals.** SIGINT (Ctrl-C), SIGTERM (``kill``, a batch scheduler's time limit) and SIGHUP (the
terminal closed) stop a command the same way, whenever they come: :func:`main` takes them over
first thing, before it imports the typer app, pyarrow or pandas. The first one raises
:class:`Stopped` (a ``KeyboardInterrupt``) in the main thread, which unwinds through every
``finally`` of the command: a temporary output file is removed, ``--jobs`` workers and a local
Dask cluster are ended. Then one line is printed — ``rankeval: interrupted`` (exit 130),
``rankeval: terminated (SIGTERM)`` (exit 143) or ``rankeval: terminated (SIGHUP)`` (exit 129),
the shells' 128 + the signal's number — by the command's boundary
(:func:`rankeval.cli.common.handled`; the code is in :mod:`rankeval.cli.signals`), or by :func:`main` if the signal came before or after
it. Further signals are ignored while this happens, so that nothing cuts the clean-up short.
A signal that was ignored when rankeval started (``nohup``, a background job of a
non-interactive shell) stays ignored.

**Process set-up.** :func:`main` also sets the memory allocators of the command and of the
processes it starts (:mod:`rankeval.engine.allocators`), after taking the signals over and
before the heavy imports. Importing this package (or any rankeval module) sets nothing: a
program that imports rankeval keeps its own process settings.

**Garbage collector.** The libraries' imports create tens of thousands of objects that are
never garbage, and the engine's arrays form no cycles: :func:`main` has the collector run
after 20,000 new objects rather than 700 (:func:`gc.set_threshold`; about 20 ms of a small
run), and freezes it when the command is over (:func:`gc.freeze`), so that the interpreter's
exit does not search every object for cycles (about 35 ms).

May import: any part of rankeval (it is the top of the one-way flow); nothing imports it but
``rankeval.__main__`` (``python -m rankeval``).
"""

from __future__ import annotations

import gc
import os
import sys

from rankeval.cli.signals import Stopped, catch_signals, release_signals, report_stop, unreported
from rankeval.engine.allocators import tune_this_process

__all__ = ["main"]


def _hold_standard_descriptors() -> None:
    """Open ``/dev/null`` on a standard descriptor (0, 1, 2) that was closed when rankeval
    started (``>&-``, ``<&-``), so that no file rankeval opens takes its number, and a worker
    process does not write into that file. Python has made the stream ``None``
    (``sys.stdout``): the readers and writers say "standard output is closed"."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def main() -> None:
    """The ``rankeval`` command (console script, ``python -m rankeval``): sets up the process,
    then runs the typer app."""
    catch_signals()  # before anything heavy is imported: see the module docstring
    try:
        _hold_standard_descriptors()
        tune_this_process()  # before pyarrow and numpy are imported: see rankeval.engine.allocators
        gc.set_threshold(20_000, 10, 10)  # see the module docstring
        from rankeval.cli.app import app

        app(prog_name="rankeval", args=sys.argv[1:])
    except KeyboardInterrupt as exc:  # before typer took over
        raise SystemExit(report_stop(exc)) from None
    except SystemExit:
        signum = unreported()
        if signum is not None:  # typer's own exit after a signal outside the command's boundary
            raise SystemExit(report_stop(Stopped(signum))) from None
        raise
    finally:
        release_signals()
        gc.freeze()  # the command is over: see the module docstring
