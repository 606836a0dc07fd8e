"""The local schedulers of the block engine: this process (:class:`~rankeval.engine.blockwise.Sequential`)
or a pool of worker processes (:class:`Pool`, ``--jobs N``).

The pool's workers are started once per call (``forkserver``, which starts from a clean
process: no thread of this one is copied) and each receives the shared part of the work
(qrels, measures, options) once, when it starts; a task then carries only a block's place
in its file (a plain file is read by the worker itself) or, for a compressed file, the
block's bytes. At most two tasks per worker are in flight, so that a compressed run is
never decompressed much ahead of the workers.

May import: :mod:`rankeval.engine.blockwise` and the foundation modules.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from rankeval.engine.blockwise import BlockValues, Scheduler, Sequential, Shared, Task, collect, run_task
from rankeval.errors import ResourceError, UsageError

__all__ = ["Pool", "default_jobs", "local_scheduler"]

_SHARED: Shared | None = None


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
    """*jobs* worker processes evaluating tasks; results in the order of the tasks."""

    threads = False

    def __init__(self, shared: Shared, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload(["rankeval.engine.local_pool"])
        self.jobs = jobs
        self._executor = ProcessPoolExecutor(jobs, mp_context=context, initializer=_start, initargs=(shared,))

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]:
        from concurrent.futures.process import BrokenProcessPool

        pending: deque[Any] = deque()
        try:
            for task in tasks:
                pending.append(self._executor.submit(_run, task))
                if len(pending) >= 2 * self.jobs:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool:
            raise ResourceError(
                "a worker process ended abruptly (out of memory, or killed): lower --block-size "
                "or --jobs, or use a machine with more memory"
            ) from None
        finally:
            for future in pending:
                future.cancel()
