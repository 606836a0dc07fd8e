"""The local schedulers of the block engine: this process (:class:`~rankeval.engine.blockwise.Sequential`)
or this process with a pool of ``N - 1`` worker processes (:class:`Pool`, ``--jobs N``).

The pool's workers are started once per call (``forkserver``, which starts from a clean
process: no thread of this one is copied) and each receives the shared part of the work
(qrels, measures, options) once, when it starts; a task then carries only a block's place
in its file (a plain file is read by the worker itself) or, for a compressed file, the
block's bytes. At most two tasks per worker are in flight, so that a compressed run is
never decompressed much ahead of the workers; meanwhile this process evaluates the next
task itself.

May import: :mod:`rankeval.engine.blockwise` and the foundation modules.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from rankeval.engine.blockwise import BlockValues, Scheduler, Sequential, Shared, Task, run_task
from rankeval.errors import ResourceError, UsageError

__all__ = ["Pool", "default_jobs", "local_scheduler"]

_SHARED: Shared | None = None

#: what a worker needs, imported by the fork server once (pyarrow imports pandas at its first
#: compute call): each worker then starts warm
_PRELOAD = [
    "rankeval.engine.local_pool",
    "rankeval.engine.scoring",
    "rankeval.ranking.alignment",
    "pyarrow.compute",
    "pyarrow.csv",
    "pandas",
]


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def local_scheduler(
    shared: Shared, jobs: int | None, text_bytes: int, block_size: int
) -> Iterator[Scheduler]:
    """The scheduler for *jobs* (default: :func:`default_jobs`): a pool if more than one job
    is asked for and the run files hold more than one block, else this process."""
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise UsageError(f"the number of jobs must be at least 1, not {jobs!r}")
    n = default_jobs() if jobs is None else jobs
    if n < 2 or text_bytes <= block_size:
        yield Sequential(shared)
        return
    with Pool(shared, n) as pool:
        yield pool


#: the signals that stop the ``rankeval`` command (:mod:`rankeval.cli`): a terminal's Ctrl-C,
#: or a batch scheduler's SIGTERM to the whole process group, is the parent's to act on; the
#: workers, the fork server and the resource tracker ignore them and are ended by the parent
_STOP_SIGNALS = frozenset(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _start(shared: Shared) -> None:
    """Worker initialiser: keep the shared part; leave the stop signals to the parent process
    and die with the fork server (:func:`_die_with_parent`)."""
    global _SHARED
    _SHARED = shared
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    _die_with_parent()


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Block the stop signals in this thread during the block: a process started meanwhile
    (the fork server, the resource tracker) begins with them blocked; one that arrives is
    handled when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _die_with_parent() -> None:
    """Have Linux kill this worker when its parent, the fork server, exits (which it does when
    the process that started it exits, even by SIGKILL): a worker waiting for its next task
    would otherwise wait for ever. Elsewhere nothing is done."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent is gone already
        os._exit(1)


def _run(task: Task) -> BlockValues:
    assert _SHARED is not None
    return run_task(_SHARED, task)


def _hide_main_without_file() -> str | None:
    """A worker runs the parent's main script again (so that what the script defines can be
    unpickled there), by its ``__file__``. A script fed on standard input (``<stdin>``) has
    no file to run: each worker would fail with ``FileNotFoundError`` and the pool break.
    Such a ``__file__`` is removed while the pool lives, and returned to be put back."""
    import multiprocessing.process

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not isinstance(path, str) or getattr(main, "__spec__", None) is not None:
        return None
    origin = getattr(multiprocessing.process, "ORIGINAL_DIR", None) or ""  # (as multiprocessing joins it)
    if os.path.isfile(os.path.join(origin, path)):
        return None
    del main.__file__
    return path


class Pool:
    """*jobs* processes evaluating tasks: this one and ``jobs - 1`` workers; results in the
    order of the tasks. This process takes a task whenever the workers have two each in
    flight, so that it works (rather than waits) while they start and run. The workers start
    on demand (from the second task of a :meth:`map`)."""

    threads = False

    def __init__(self, shared: Shared, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(_PRELOAD)  # imported once, for all the workers
        self.workers = max(jobs - 1, 1)
        self.shared = shared
        self._starting: threading.Thread | None = None
        try:
            with _stop_signals_blocked():  # its semaphores may start the resource tracker
                self._executor = ProcessPoolExecutor(
                    self.workers, mp_context=context, initializer=_start, initargs=(shared,)
                )
        except OSError as exc:
            raise _start_failed(exc) from None
        self._main_file = _hide_main_without_file()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._starting is not None:
                self._starting.join()
            if exc[0] is not None:  # an error or a signal: the tasks in flight are not wanted
                self._kill_workers()
            self._executor.shutdown(wait=True, cancel_futures=True)
        finally:
            if self._main_file is not None:
                sys.modules["__main__"].__file__ = self._main_file

    def _kill_workers(self) -> None:
        """End the workers now, without waiting for their tasks (a block may take long)."""
        kill = getattr(self._executor, "kill_workers", None)  # Python 3.14
        if kill is not None:
            kill()
            return
        for process in list(getattr(self._executor, "_processes", {}).values()):
            with contextlib.suppress(Exception):
                process.kill()

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]:
        """The tasks' results, in order. A single task (a run of one block, or one query)
        runs in this process, with pyarrow's threads: no worker is started for it."""
        import itertools
        from concurrent.futures.process import BrokenProcessPool
        from dataclasses import replace

        tasks = iter(tasks)
        first = list(itertools.islice(tasks, 2))
        if len(first) == 1:
            yield run_task(self.shared, replace(first[0], threads=True))
            return
        pending: deque[Future[BlockValues] | BlockValues] = deque()  # in task order
        in_flight: set[Future[BlockValues]] = set()
        if self._starting is None:  # the first worker starts in a thread: this process works meanwhile
            self._starting = threading.Thread(target=self._start_first, daemon=True)
            self._starting.start()
        try:
            for task in itertools.chain(first, tasks):
                in_flight = {f for f in in_flight if not f.done()}
                if not self._starting.is_alive() and len(in_flight) < 2 * self.workers:
                    try:
                        future = self._executor.submit(_run, task)
                    except OSError as exc:  # starting a worker: too many open files or processes
                        raise _start_failed(exc) from None
                    in_flight.add(future)
                    pending.append(future)
                else:
                    pending.append(run_task(self.shared, task))
                    del task
                while pending and (not isinstance(pending[0], Future) or pending[0].done()):
                    yield _value(pending.popleft())
            while pending:
                yield _value(pending.popleft())
        except BrokenProcessPool:
            raise ResourceError(
                "a worker process ended abruptly (out of memory, or killed): lower --block-size "
                "or --jobs, or use a machine with more memory"
            ) from None
        finally:
            for item in pending:
                if isinstance(item, Future):
                    item.cancel()

    def _start_first(self) -> None:
        """Start the first worker (in a thread; a failure shows at the next submit). The stop
        signals are blocked in this thread, so that the fork server and the resource tracker
        it starts (and the workers the fork server forks) begin with them blocked."""
        with _stop_signals_blocked(), contextlib.suppress(Exception):
            self._executor.submit(_ready)


def _start_failed(exc: OSError) -> ResourceError:
    """The error of a worker process that could not be started: which limit, and what to do."""
    import errno

    if "AF_UNIX path too long" in str(exc):
        # the fork server's socket lives in the temporary directory: a path of at most 107 bytes
        import tempfile

        return ResourceError(
            f"cannot start the --jobs worker processes: the temporary directory's path is too long "
            f"for their socket ({len(tempfile.gettempdir())} characters: {tempfile.gettempdir()}); set "
            "TMPDIR to a shorter directory, or use --jobs 1"
        )
    limit = ""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        with contextlib.suppress(ImportError, OSError, ValueError):
            import resource

            limit = f" (at most {resource.getrlimit(resource.RLIMIT_NOFILE)[0]} open files: ulimit -n)"
    return ResourceError(
        f"cannot start the --jobs worker processes: {exc.strerror or exc}{limit}; raise the limit, "
        "or use --jobs 1"
    )


def _ready() -> None:
    """The task that starts the first worker (the fork server importing :data:`_PRELOAD`,
    which the submitting thread waits for)."""


def _value(item: Future[BlockValues] | BlockValues) -> BlockValues:
    """A task's result: a worker's (waited for) or this process's."""
    return item.result() if isinstance(item, Future) else item
