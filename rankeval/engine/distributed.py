"""The Dask engine: the block engine's tasks (:mod:`rankeval.engine.blockwise`) run on a
Dask cluster.

There is no shuffle: a run file is cut into query-aligned blocks on the client
(:func:`rankeval.io.blocks.split_run`, a scan of a few lines at each cut), and each block
is one task, evaluated on a worker by the same code as on one machine. The shared part
(qrels with their side files, measures, options) is one node of the task graph, sent with
it once and copied by Dask to the workers that need it (a scatter to every worker would
hang on a frozen one); a task carries the block's place in its file,
which a worker of a local cluster reads itself, or the block's bytes (a compressed file,
or a cluster given by ``--scheduler``, whose workers may not see this machine's files).
The tasks of all runs are submitted together. The client gathers the per-query values
and computes every aggregate from all of them: identical results to one process.

What a plugin measure must satisfy to run here (checked by :func:`check_measure`): it is a
picklable object (a frozen dataclass of plain parameters, its class importable on the
workers), its ``compute`` reads only the ranked lists it is given (a query's value depends
on that query's data only), and an aggregate that needs more than the per-query values goes
through ``aggregate_parts``/``aggregate_from_parts`` (per-query arrays), not through the
ranked lists.

The cluster itself (options, client, local cluster, faults, Ctrl-C, Dask's logs) is
:mod:`rankeval.engine.dask_cluster`. Dask is used nowhere else: runs in Parquet are read
and written with pyarrow (:mod:`rankeval.io.parquet`). :class:`DaskOptions` and
:func:`dask_setup` are re-exported here.

May import: :mod:`rankeval.engine.blockwise`, :mod:`rankeval.engine.dask_cluster`,
:mod:`rankeval.errors`; dask lazily.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rankeval.engine import dask_cluster
from rankeval.engine.blockwise import BlockValues, Shared, Task, run_task
from rankeval.engine.dask_cluster import DaskOptions, dask_setup
from rankeval.errors import EngineError, RankevalError, UsageError

if TYPE_CHECKING:
    from rankeval.measures.base import Measure

__all__ = [
    "DaskOptions",
    "DaskScheduler",
    "check_measure",
    "dask_scheduler",
    "dask_setup",
]


def check_measure(measure: Measure) -> None:
    """Raise :class:`~rankeval.errors.UsageError` if *measure* cannot run on the Dask engine
    (it must survive pickling unchanged, to be sent to the workers)."""
    try:
        again = pickle.loads(pickle.dumps(measure))
    except Exception as exc:
        raise UsageError(f"measure {measure} cannot be sent to Dask workers (not picklable: {exc})") from None
    if again != measure:
        raise UsageError(f"measure {measure} changes when pickled; it cannot run on the Dask engine")


class DaskScheduler:
    """Runs the block engine's tasks on the client's cluster; results in the order of the
    tasks (each call submits its tasks together)."""

    threads = False

    def __init__(self, shared: bytes, send_bytes: bool, done: Callable[[int], None] | None = None) -> None:
        self.shared = shared  # the pickled Shared object
        self.send_bytes = send_bytes  # a cluster given by address: tasks carry block bytes
        self.done = done  # a progress display's advance(n): one step per task, as it ends

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]:
        import warnings

        import dask

        # the shared part is one task of the graph (sent with it once, unpickled on one
        # worker and copied by Dask to the others that need it): unlike a scatter, it
        # survives a worker that is frozen or lost
        shared = dask.delayed(pickle.loads, pure=True)(self.shared)
        graph = [dask.delayed(_run, pure=False)(shared, self._with_bytes(task)) for task in tasks]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            if self.done is None:
                return iter(dask_cluster.compute(graph))
            return iter(dask_cluster.compute(graph, done=self.done))

    def _with_bytes(self, task: Task) -> Task:
        """*task* carrying its block's (or part file's) bytes for a cluster given by address
        (its workers may not see this machine's files)."""
        if not self.send_bytes:
            return task
        if task.part is not None:
            return replace(task, part=task.part.with_data())
        block = task.block
        if block is None or block.data is not None:
            return task
        return replace(task, block=replace(block, data=block.bytes()))


def _run(shared: Shared, task: Task) -> BlockValues:
    """One task on a worker (its memory is freed as soon as it returns: a task's alignment and
    ranked lists form no reference cycle)."""
    return run_task(shared, task)


@contextlib.contextmanager
def dask_scheduler(
    shared: Shared,
    options: DaskOptions,
    measures: Sequence[Measure],
    done: Callable[[int], None] | None = None,
) -> Iterator[DaskScheduler]:
    """A :class:`DaskScheduler` on the cluster of *options* (a new local cluster, or the
    scheduler given), with *shared* sent to every worker; a failure of the cluster (workers
    lost, the scheduler gone) is an :class:`~rankeval.errors.EngineError` saying what to do.
    *done*: a progress display's ``advance(n)``, called (from a thread of the client) as each
    task ends."""
    options.check()
    for m in measures:
        check_measure(m)
    try:
        with dask_cluster.client(options):
            yield DaskScheduler(pickle.dumps(shared), send_bytes=options.scheduler is not None, done=done)
    except RankevalError:
        raise
    except Exception as exc:  # workers lost (killed, frozen, out of memory), the scheduler gone ...
        raise EngineError(f"the Dask engine failed: {_reason(exc, options)}") from None


def _reason(exc: Exception, options: DaskOptions) -> str:
    """What went wrong, for the message of an EngineError, and what to do."""
    if type(exc).__name__ == "KilledWorker":  # Dask's own text is a paragraph about its logs
        tries = options.allowed_failures + 1
        return (
            f"a task lost its worker {tries} time(s) (a worker was killed, ran out of memory, or stopped "
            "answering): give the workers more memory with --memory-limit, or add workers"
        )
    return f"{type(exc).__name__}: {exc}"
