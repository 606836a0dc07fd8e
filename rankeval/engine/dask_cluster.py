"""The Dask cluster a run of the Dask engine uses, and how its faults are handled: the options
(:class:`DaskOptions`), the client (a scheduler given by address, checked first, or a local
cluster started for the run and closed however the run ends), computing tasks watched for a
stall, Dask's log lines silenced, Ctrl-C held while the cluster starts or stops, and the
preload hook (:func:`dask_setup`) that the workers of a local cluster run. What a run computes
on the cluster is in :mod:`rankeval.engine.distributed`.

May import: the standard library, numpy, :mod:`rankeval.errors`,
:mod:`rankeval.engine.allocators`; dask, distributed and psutil lazily (inside the functions
that need them). Not :mod:`rankeval.engine.distributed`, which uses it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankeval.engine.allocators import ALLOCATOR_ENVIRONMENT
from rankeval.errors import EngineError, UsageError

__all__ = ["MIN_MEMORY", "TCP_TIMEOUT", "DaskOptions", "client", "compute", "dask_setup", "interrupts_held"]

MIN_MEMORY = 512 * 2**20
"""The smallest memory limit per worker: a worker that has loaded pandas and pyarrow holds
about 250 MB, and Dask pauses a worker at 80% of its limit (with 300 MiB, the workers pause
before their first block and would wait for good; :attr:`DaskOptions.stall_timeout` ends
such a run)."""

TCP_TIMEOUT = 30.0
"""Seconds after which a connection to a machine that stopped answering (TCP keepalive) is
declared dead (Dask's ``distributed.comm.timeouts.tcp``)."""

_SIZE = re.compile(r"\s*\d+(\.\d*)?([eE][+-]?\d+)?\s*[A-Za-z]*\s*")


def _env_debug() -> bool:
    import os

    return os.environ.get("RANKEVAL_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class DaskOptions:
    """How to run on Dask, and how faults are handled (see the *Scaling out with Dask* page
    of the docs, ``docs/distributed.md``).

    Attributes:
        scheduler: address of a running Dask scheduler (``tcp://host:8786``); ``None``
            starts a ``LocalCluster`` of *workers* processes for the call. Dask's protocol
            unpickles what it receives: name only a scheduler you trust.
        workers: worker processes of the local cluster (at least 1).
        memory_limit: memory limit per worker of the local cluster (``"2GB"``, ``"512MiB"``,
            bytes, or ``"auto"``; at least 512 MiB; Dask's default: the machine's memory
            divided among the workers).
        worker_ttl: seconds without a heartbeat after which the local cluster's scheduler
            declares a worker dead (frozen or hung) and restarts it; its tasks run again on
            the other workers (Dask's ``distributed.scheduler.worker-ttl``; Dask checks every
            *worker_ttl* seconds and waits at least 5). A scheduler given by address applies
            its own setting.
        allowed_failures: how many times a task may lose its worker (killed, frozen, out of
            memory) and run again before the run fails (``distributed.scheduler.allowed-failures``).
        connect_timeout: seconds to reach the scheduler, or for one worker to reach another,
            before that connection fails (``distributed.comm.timeouts.connect``).
        stall_timeout: seconds for which a run may have no worker able to run (all paused
            at their memory limit, or none connected to the scheduler) before it fails.
        debug: let Dask's own log lines (task failures with their tracebacks, restarts,
            "event loop was unresponsive") reach stderr. Off, a run prints only rankeval's
            messages: Dask's loggers are silenced for the run, and the worker processes of a
            local cluster get ``/dev/null`` as their stderr (this process's stderr points
            there too for the second or two the cluster takes to start). The CLI sets it
            from ``--debug``; the default is on when ``RANKEVAL_DEBUG=1``.
    """

    scheduler: str | None = None
    workers: int = 2
    memory_limit: str | int | None = None
    worker_ttl: float = 60.0
    allowed_failures: int = 3
    connect_timeout: float = 10.0
    stall_timeout: float = 120.0
    debug: bool = field(default_factory=_env_debug)

    def check(self) -> None:
        """Raise :class:`~rankeval.errors.UsageError` for an option out of its domain."""
        if not _is_int(self.workers) or self.workers < 1:
            raise UsageError(f"the number of Dask workers must be at least 1, not {self.workers!r}")
        _memory_limit(self.memory_limit)
        for name in ("worker_ttl", "connect_timeout", "stall_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise UsageError(f"{name} must be a finite number of seconds > 0, not {value!r}")
        if not _is_int(self.allowed_failures) or self.allowed_failures < 0:
            raise UsageError(f"allowed_failures must be an integer >= 0, not {self.allowed_failures!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _memory_limit(value: str | int | None) -> str | int | None:
    """*value* as Dask takes it (bytes or ``"auto"``), or a UsageError saying what is allowed."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    if _is_int(value):
        size = int(value)
    elif isinstance(value, str) and _SIZE.fullmatch(value):
        from dask.utils import parse_bytes

        try:
            size = parse_bytes(value)
        except (ValueError, OverflowError):
            size = -1
    else:
        size = -1
    if size < MIN_MEMORY:
        raise UsageError(
            f"memory limit {value!r}: expected a size of at least 512MiB per worker, such as 2GB, "
            "4GiB or auto"
        )
    return size


def _dask_config(options: DaskOptions) -> dict[str, Any]:
    """Dask settings for the run: fault detection, and what the workers rankeval starts do."""
    return {
        "distributed.scheduler.worker-ttl": f"{options.worker_ttl}s",
        "distributed.scheduler.allowed-failures": options.allowed_failures,
        "distributed.comm.timeouts.connect": f"{options.connect_timeout}s",
        "distributed.comm.timeouts.tcp": f"{TCP_TIMEOUT}s",
        "rankeval.debug": options.debug,  # read by dask_setup in the worker processes
        "rankeval.stall-timeout": options.stall_timeout,  # read by compute
        # Dask's nanny gives its workers MALLOC_TRIM_THRESHOLD_=65536, which hands freed memory
        # back to the system at once: a block's large arrays then fault their pages in anew,
        # and a task took 1.5 times as long; the settings of rankeval's own processes instead
        **{
            f"distributed.nanny.pre-spawn-environ.{name}": os.environ.get(name, value)
            for name, value in ALLOCATOR_ENVIRONMENT.items()
        },
        # Dask's statistical profiler samples each worker's stack every 10 ms (for a dashboard
        # rankeval does not open): off, a 30M-line run on 2 workers took 5-8% less time
        "distributed.worker.profile.enabled": False,
    }


@contextlib.contextmanager
def client(options: DaskOptions) -> Iterator[Any]:
    """A Dask client: connected to ``options.scheduler``, or to a new local cluster that is
    closed (its worker processes ended) however the block ends, Ctrl-C included."""
    import dask
    import distributed  # noqa: F401 - its defaults must be in the config before it is changed

    options.check()
    with _quiet_logs(options.debug), dask.config.set(_dask_config(options)):
        if options.scheduler is not None:
            with _connected(options) as c:
                yield c
        else:
            with _local_cluster(options) as c:
                yield c


@contextlib.contextmanager
def _connected(options: DaskOptions) -> Iterator[Any]:
    from dask.distributed import Client

    address = str(options.scheduler)
    _check_address(address)
    try:
        c = Client(address, timeout=f"{options.connect_timeout}s", set_as_default=True)
    except Exception as exc:
        raise EngineError(
            f"the Dask engine failed: cannot reach the scheduler {address} within {options.connect_timeout:g} s: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    try:
        yield c
    finally:
        with interrupts_held(), contextlib.suppress(Exception):
            c.close(timeout=options.connect_timeout)


def _check_address(address: str) -> None:
    """An EngineError for an address Dask cannot even try to connect to."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    try:
        scheme, location = parse_address(address.strip())
        if scheme not in ("tcp", "tls", "ws", "wss"):
            raise ValueError(f"unsupported scheme {scheme!r}")
        parse_host_port(location)
    except Exception as exc:
        raise EngineError(
            f"the Dask engine failed: {address!r} is not a scheduler address (expected tcp://HOST:PORT): {exc}"
        ) from None


@contextlib.contextmanager
def _local_cluster(options: DaskOptions) -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    kwargs: dict[str, Any] = {
        "n_workers": options.workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
        # worker processes: Dask's log lines off unless debug (set on their handlers), and
        # dask_setup below runs in each of them
        "silence_logs": logging.WARNING if options.debug else _OFF,
        "preload": [__name__],
    }
    limit = _memory_limit(options.memory_limit)
    if limit is not None:
        kwargs["memory_limit"] = limit
    cluster = c = None
    try:
        quiet = contextlib.nullcontext() if options.debug else _stderr_to_devnull()
        with interrupts_held(), quiet, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "port in use": another dashboard
            cluster = LocalCluster(**kwargs)
            c = Client(cluster, set_as_default=True)
        _started(c)
        yield c
    finally:
        with interrupts_held():
            _close(cluster, c, options)


def _close(cluster: Any, c: Any, options: DaskOptions) -> None:
    """Close the client and the local cluster; then end any worker process still there
    (one that did not stop within the timeouts, e.g. a frozen one)."""
    import psutil

    procs = []
    if cluster is not None:
        for worker in list(cluster.workers.values()):
            with contextlib.suppress(Exception):
                pid = getattr(worker, "pid", None)
                if pid:
                    procs.append(psutil.Process(pid))
    timeout = max(10.0, options.connect_timeout)
    with contextlib.suppress(Exception):
        if c is not None:
            c.close(timeout=timeout)
    with contextlib.suppress(Exception):
        if cluster is not None:
            cluster.close(timeout=timeout)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def _stderr_to_devnull() -> Iterator[None]:
    """File descriptor 2 points at ``/dev/null`` during the block (while the local cluster
    starts): the worker processes spawned meanwhile inherit it as their stderr for good, so
    that nothing they print (a log line, a traceback of a worker that a terminal's Ctrl-C hit
    while it was still starting) reaches the terminal. This process's own stderr is back
    afterwards."""
    import os
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no stderr to protect
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
        finally:
            os.close(null)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _started(c: Any) -> None:
    """Test seam: called with the client as soon as the local cluster is up (the fault tests
    replace it to find, and freeze, the worker processes)."""


def compute(tasks: list[Any], done: Callable[[int], None] | None = None) -> list[Any]:
    """Compute Dask *tasks*: during a run (inside :func:`client`) on its client, watched for a
    stall (:func:`_watched`), *done* (a progress display's ``advance(n)``) called with 1 as each
    task ends; otherwise with ``dask.compute`` (e.g. threads, for ``convert``). Also a seam:
    the fault tests replace it to interrupt a run while its tasks are in flight."""
    import dask

    stall = dask.config.get("rankeval.stall-timeout", default=None)
    if stall is None:
        return list(dask.compute(*tasks))
    from distributed import get_client

    c = get_client()
    futures = c.compute(tasks)
    if done is not None:
        for future in futures:
            future.add_done_callback(lambda _: done(1))
    return _watched(c, futures, float(stall))


def _watched(c: Any, futures: list[Any], stall: float) -> list[Any]:
    """The results of *futures*; an EngineError once no worker has been able to run for
    *stall* seconds: all of them paused at their memory limit (Dask pauses a worker at 80%
    of it and would wait for good), or none connected to the scheduler."""
    import time

    from distributed import wait

    since: float | None = None
    while True:
        try:
            wait(futures, timeout=1.0)
            break
        except TimeoutError:
            if any(future.status == "error" for future in futures):
                break
        workers = c.scheduler_info(n_workers=-1).get("workers", {})
        if any(w.get("status") == "running" for w in workers.values()):
            since = None
            continue
        now = time.monotonic()
        since = now if since is None else since
        if now - since > stall:
            why = "all paused at their memory limit" if workers else "none is connected to the scheduler"
            raise EngineError(
                f"the Dask engine failed: no worker could run for {stall:g} s ({why}); give the "
                "workers more memory with --memory-limit, or add workers"
            )
    for future in futures:
        if future.status == "error":
            future.result()  # raises the task's exception, as it was raised on the worker
    return list(c.gather(futures))


_OFF = logging.CRITICAL + 1
_LOUD = ("distributed", "asyncio", "tornado", "bokeh")
"""Loggers that speak during a run: Dask's own; asyncio's and tornado's about tasks cut short
when a run is interrupted."""


@contextlib.contextmanager
def _quiet_logs(debug: bool) -> Iterator[None]:
    """Unless *debug*, the loggers of :data:`_LOUD` (and those under them with a level of their
    own) say nothing for the duration of the run; their levels are restored afterwards."""
    if debug:
        yield
        return
    names = {
        name
        for name, log in list(logging.Logger.manager.loggerDict.items())
        if isinstance(log, logging.Logger) and name.partition(".")[0] in _LOUD and log.level
    }
    loggers = [logging.getLogger(name) for name in sorted(names | set(_LOUD))]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(_OFF)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) during the block is held until the block ends, then raised as
    KeyboardInterrupt: starting or closing the cluster must finish, or worker processes would
    be left behind. SIGINT is also blocked in this thread meanwhile, so that the threads Dask
    starts here and the worker processes they spawn begin with it blocked: a terminal's Ctrl-C,
    which reaches the whole process group, is the client's to handle, not theirs. Only in the
    main thread (elsewhere the block runs as it is)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # a handler installed outside Python: leave it alone
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    mask = hasattr(signal, "pthread_sigmask")
    if mask:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if mask:  # a SIGINT pending meanwhile arrives now, at the holding handler
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, previous)
        if held:
            raise KeyboardInterrupt


def dask_setup(worker: Any) -> None:
    """Dask preload hook, run in each worker process of a local cluster rankeval starts.

    Ctrl-C at a terminal reaches every process of the foreground group, workers included: a
    worker ignores it (no traceback of its own), and the client, which gets it too, closes
    the cluster. Unless ``debug``, asyncio's and tornado's complaints about tasks cut short
    by the shutdown stay off the terminal.
    """
    import signal
    import threading

    import dask

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not dask.config.get("rankeval.debug", default=False):
        for name in ("asyncio", "tornado"):
            logging.getLogger(name).setLevel(_OFF)
