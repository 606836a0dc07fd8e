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
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from typing import Any

from rankeval.engine.blockwise import BlockValues, Scheduler, Sequential, Shared, Task, collect, run_task
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


def _start(shared: Shared) -> None:
    """Worker initialiser: keep the shared part; leave Ctrl-C to the parent process."""
    import signal

    global _SHARED
    _SHARED = shared
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(task: Task) -> BlockValues:
    assert _SHARED is not None
    try:
        return run_task(_SHARED, task)
    finally:
        collect()


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
        self._executor = ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_start, initargs=(shared,)
        )

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._starting is not None:
            self._starting.join()
        self._executor.shutdown(wait=True, cancel_futures=True)

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
                    future = self._executor.submit(_run, task)
                    in_flight.add(future)
                    pending.append(future)
                else:
                    pending.append(run_task(self.shared, task))
                    del task
                    collect()
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
        """Start the first worker (in a thread; a failure shows at the next submit)."""
        with contextlib.suppress(Exception):
            self._executor.submit(_ready)


def _ready() -> None:
    """The task that starts the first worker (the fork server importing :data:`_PRELOAD`,
    which the submitting thread waits for)."""


def _value(item: Future[BlockValues] | BlockValues) -> BlockValues:
    """A task's result: a worker's (waited for) or this process's."""
    return item.result() if isinstance(item, Future) else item
