"""The Dask engine: the same evaluation, partitioned by query over a Dask cluster.

Data flow (one run at a time):

1. **Read.** A run given as TREC text (one file, or many through a glob) is split into
   blocks at line ends (``dask.bytes.read_bytes``) and each block is parsed on a worker by
   the same reader as the local engine (:func:`rankeval.io.parse_run`), keeping every line's
   number for messages; a run in Parquet (``rankeval convert --to parquet``) is read with
   ``dask.dataframe.read_parquet``. Qrels are the small side: they are read on the client
   (any form :func:`rankeval.evaluate` accepts, ``--docinfo`` applied) and handed to Dask
   as a dataframe.
2. **Partition by query.** Both dataframes get a partition number from a hash of the query
   id and are shuffled on it (the only all-to-all step), so partition *i* of the run and of
   the qrels hold the same, whole queries.
3. **Evaluate.** Each pair of partitions is evaluated on a worker by the local engine's
   code (:class:`~rankeval.ranked.Alignment`, the measures' ``compute``): per-query values,
   plus each measure's :meth:`~rankeval.Measure.aggregate_parts`.
4. **Combine.** The client gathers the per-query values (one number per query and measure),
   sorts them by query id as the local engine does, and computes each aggregate from all of
   them with :meth:`~rankeval.Measure.aggregate_from_parts`: the same numbers in the same
   order as the local engine, so results are identical (not merely close).

What a plugin measure must satisfy to run here (checked by :func:`check_measure`): it is a
picklable object (a frozen dataclass of plain parameters, its class importable on the
workers), its ``compute`` reads only the ranked lists it is given (a query's value depends
on that query's data only), and an aggregate that needs more than the per-query values goes
through ``aggregate_parts``/``aggregate_from_parts`` (per-query arrays), not through the
ranked lists.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import math
import pickle
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval import io
from rankeval.data import Qrels, Run
from rankeval.errors import EngineError, InputError, RankevalError, UsageError, measure_guard

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.measure import Measure

__all__ = [
    "DaskOptions",
    "check_measure",
    "dask_setup",
    "evaluate_partitioned",
    "read_run_frame",
    "write_run_parquet",
]

RUN_META_COLUMNS = ("query_id", "q0", "doc_id", "score", "tag", "file", "line")

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
        blocksize: bytes of run text per block.
        partitions: number of query partitions (default: two per block, at least one per
            worker).
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
        files: set by the engine: the run files last read.
    """

    scheduler: str | None = None
    workers: int = 2
    memory_limit: str | int | None = None
    blocksize: int = 32 * 2**20
    partitions: int | None = None
    worker_ttl: float = 60.0
    allowed_failures: int = 3
    connect_timeout: float = 10.0
    stall_timeout: float = 120.0
    debug: bool = field(default_factory=_env_debug)
    files: list[str] = field(default_factory=list)

    def check(self) -> None:
        """Raise :class:`~rankeval.errors.UsageError` for an option out of its domain."""
        if not _is_int(self.workers) or self.workers < 1:
            raise UsageError(f"the number of Dask workers must be at least 1, not {self.workers!r}")
        _memory_limit(self.memory_limit)
        if not _is_int(self.blocksize) or self.blocksize < 1:
            raise UsageError(
                f"the Dask block size must be a positive number of bytes, not {self.blocksize!r}"
            )
        if self.partitions is not None and (not _is_int(self.partitions) or self.partitions < 1):
            raise UsageError(f"the number of partitions must be at least 1, not {self.partitions!r}")
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


def check_measure(measure: Measure) -> None:
    """Raise :class:`~rankeval.errors.UsageError` if *measure* cannot run on the Dask engine
    (it must survive pickling unchanged, to be sent to the workers)."""
    try:
        again = pickle.loads(pickle.dumps(measure))
    except Exception as exc:
        raise UsageError(f"measure {measure} cannot be sent to Dask workers (not picklable: {exc})") from None
    if again != measure:
        raise UsageError(f"measure {measure} changes when pickled; it cannot run on the Dask engine")


# ------------------------------------------------------------------------------ the cluster
def _dask_config(options: DaskOptions) -> dict[str, Any]:
    """Dask settings for the run: fault detection, and what the workers rankeval starts do."""
    return {
        "distributed.scheduler.worker-ttl": f"{options.worker_ttl}s",
        "distributed.scheduler.allowed-failures": options.allowed_failures,
        "distributed.comm.timeouts.connect": f"{options.connect_timeout}s",
        "distributed.comm.timeouts.tcp": f"{TCP_TIMEOUT}s",
        "rankeval.debug": options.debug,  # read by dask_setup in the worker processes
        "rankeval.stall-timeout": options.stall_timeout,  # read by _compute
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
        with _interrupts_held(), contextlib.suppress(Exception):
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
        with _interrupts_held(), quiet, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "port in use": another dashboard
            cluster = LocalCluster(**kwargs)
            c = Client(cluster, set_as_default=True)
        _started(c)
        yield c
    finally:
        with _interrupts_held():
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


def _compute(tasks: list[Any]) -> list[Any]:
    """Compute Dask *tasks*: during a run (inside :func:`client`) on its client, watched for a
    stall (:func:`_watched`); otherwise with ``dask.compute`` (e.g. threads, for ``convert``).
    Also a seam: the fault tests replace it to interrupt a run while its tasks are in flight."""
    import dask

    stall = dask.config.get("rankeval.stall-timeout", default=None)
    if stall is None:
        return list(dask.compute(*tasks))
    from distributed import get_client

    c = get_client()
    return _watched(c, c.compute(tasks), float(stall))


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
def _interrupts_held() -> Iterator[None]:
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


# ------------------------------------------------------------------------------ reading
def _run_files(source: str | Path) -> list[str]:
    """The files *source* names: itself, or the files a glob matches (sorted)."""
    text = str(source)
    if not any(ch in text for ch in "*?["):
        return [text]
    try:
        files = sorted(glob.glob(text))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a usable file pattern: {exc}", source=text) from None
    if not files:
        raise InputError("no file matches this pattern", source=text)
    return files


def _parse_block(data: bytes, name: str, first_line: int, file_no: int) -> pd.DataFrame:
    table, lines = io.parse_run(data, name, first_line)
    return _run_block_frame(table, lines, file_no)


def _run_block_frame(table: Any, lines: np.ndarray | None, file_no: int) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    n = table.num_rows
    strings = pd.ArrowDtype(pa.string())
    frame = pd.DataFrame(
        {
            name: pd.Series(
                table.column(name).cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
            )
            for name in ("query_id", "q0", "doc_id")
        }
    )
    frame["score"] = table.column("score").to_numpy()
    frame["tag"] = pd.Series(
        table.column("tag").cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
    )
    frame["file"] = np.full(n, file_no, dtype=np.int32)
    frame["line"] = np.asarray(lines if lines is not None else np.arange(1, n + 1), dtype=np.int64)
    return frame


def _run_meta() -> pd.DataFrame:
    import pyarrow as pa

    empty = pa.table(
        {
            "query_id": pa.array([], pa.string()),
            "q0": pa.array([], pa.string()),
            "doc_id": pa.array([], pa.string()),
            "score": pa.array([], pa.float64()),
            "tag": pa.array([], pa.string()),
        }
    )
    return _run_block_frame(empty, np.zeros(0, np.int64), 0)


def read_run_frame(source: str | Path, options: DaskOptions) -> Any:
    """A run as a Dask dataframe (columns ``query_id, q0, doc_id, score, tag, file, line``):
    TREC text files (a path or a glob; compressed files are one block each) or Parquet.

    Raises:
        InputError: a glob matching no file; a missing, unreadable or directory path (a
            directory is read only as a Parquet run); text and Parquet mixed; Parquet that is
            not a run (missing columns, columns of the wrong type, not Parquet at all). Bad
            lines and values are found while the blocks are read, on the workers.
    """
    files, parquet = _checked_files(source)
    options.files = files
    if parquet:
        return _read_parquet(str(source), files)
    return _read_text(str(source), files, options)


def _checked_files(source: str | Path) -> tuple[list[str], bool]:
    """The files of run *source* and whether they are Parquet, checked as far as can be
    without reading them (on the client, before a cluster starts)."""
    files = _run_files(source)
    parquet = [_is_parquet(f) for f in files]
    if any(parquet) and not all(parquet):
        raise InputError(
            "the pattern matches both Parquet and text files; a run is one or the other", source=str(source)
        )
    if not parquet[0]:
        for path in files:
            if Path(path).is_dir():
                raise InputError(
                    "is a directory without Parquet files; expected a run file, or a directory "
                    "written by rankeval convert --to parquet",
                    source=io.source_name(path),
                )
            io.is_compressed(path)  # the shared reader's checks: missing, unreadable, not a file
    return files, parquet[0]


def write_run_parquet(frame: Any, path: str | Path) -> None:
    """Write a run read by :func:`read_run_frame` as a directory of Parquet files, one per
    block, with this process's threads (no cluster). However it ends (an error in a block,
    Ctrl-C), it returns only once no thread writes into *path* any more, so that the caller
    can remove a half-written directory for good."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(min(4, os.cpu_count() or 1))
    try:
        frame.to_parquet(str(path), write_index=False, compute_kwargs={"scheduler": "threads", "pool": pool})
    finally:
        with _interrupts_held():
            pool.shutdown(wait=True, cancel_futures=True)


def _is_parquet(path: str) -> bool:
    p = Path(path)
    return p.suffix == ".parquet" or (p.is_dir() and any(p.glob("*.parquet")))


def _read_text(source: str, files: list[str], options: DaskOptions) -> Any:
    import dask
    import dask.dataframe as dd
    from dask.bytes import read_bytes

    parts = []
    for file_no, path in enumerate(files):
        name = io.source_name(path)
        if io.is_compressed(path):  # one block: the reader decompresses the whole file
            blocks = [dask.delayed(io.read_bytes)(path)]
        else:
            _, per_file = read_bytes(path, delimiter=b"\n", blocksize=options.blocksize, sample=False)
            blocks = per_file[0]
        if not blocks:  # an empty file
            continue
        counts = _compute([dask.delayed(bytes.count)(b, b"\n") for b in blocks])
        first = np.concatenate(([1], np.cumsum(counts)[:-1] + 1)).astype(int)
        parts += [
            dask.delayed(_parse_block)(b, name, int(f), file_no) for b, f in zip(blocks, first, strict=True)
        ]
    if not parts:  # only empty files
        raise InputError(
            "empty run: the file is empty; expected lines 'query_id Q0 doc_id rank score tag'",
            source=io.source_name(source),
        )
    return dd.from_delayed(parts, meta=_run_meta(), verify_meta=False)


_TEXT_COLUMNS = ("query_id", "q0", "doc_id", "tag")


def _read_parquet(source: str, files: list[str]) -> Any:
    """A run in Parquet (``rankeval convert --to parquet``; other Parquet with the columns
    ``query_id, doc_id, score``, optionally ``q0, tag, file, line``)."""
    import dask.dataframe as dd

    try:
        frame = dd.read_parquet(files)
        dtypes = frame.dtypes.to_dict()
    except RankevalError:
        raise
    except Exception as exc:
        raise InputError(
            f"cannot be read as a Parquet run: {type(exc).__name__}: {exc}", source=source
        ) from None
    missing = {"query_id", "doc_id", "score"} - set(dtypes)
    if missing:
        raise InputError(
            f"not a Parquet run: no column(s) {', '.join(sorted(missing))} (rankeval convert --to "
            "parquet writes one)",
            source=source,
        )
    for name, dtype in dtypes.items():
        expected = _parquet_type_error(str(name), dtype)
        if expected:
            raise InputError(
                f"not a Parquet run: column {name} holds {dtype}; expected {expected}", source=source
            )
    meta = _run_meta()
    for name in ("q0", "tag"):
        if name not in frame.columns:
            frame[name] = "Q0" if name == "q0" else Path(files[0]).name
    if "line" not in frame.columns:
        # positions in the files' row order; Dask's index restarts in every partition
        lengths = np.asarray(_compute([frame.map_partitions(len)])[0], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        frame = frame.map_partitions(
            _number_rows, offsets, partition_info=True, meta=frame._meta.assign(line=0)
        )
        frame["file"] = np.int32(0)
    elif "file" not in frame.columns:
        frame["file"] = np.int32(0)
    frame = frame[list(meta.columns)].astype(meta.dtypes.to_dict())
    return frame.map_partitions(_check_rows, io.source_name(source), meta=meta)


def _parquet_type_error(name: str, dtype: Any) -> str | None:
    """What column *name* of a Parquet run should hold, if *dtype* (a pandas dtype) is not that."""
    kind = getattr(dtype, "kind", "O")  # text: O (object, category, string) or U (Arrow string)
    if name in _TEXT_COLUMNS and kind not in "OUSiu":
        return "text"
    if name == "score" and kind not in "iuf":
        return "numbers"
    if name in ("line", "file") and kind not in "iu":
        return "integers"
    return None


def _number_rows(
    part: pd.DataFrame, offsets: np.ndarray, partition_info: dict[str, Any] | None = None
) -> pd.DataFrame:
    start = int(offsets[partition_info["number"]]) if partition_info else 0
    return part.assign(line=np.arange(start + 1, start + len(part) + 1, dtype=np.int64))


_CONTROL = "[\x00-\x1f\x7f]"


def _check_rows(part: pd.DataFrame, name: str) -> pd.DataFrame:
    """The checks a run file's reader makes, on rows of a Parquet run (runs on a worker)."""
    bad = part["score"].isna().to_numpy()  # null or NaN
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            "score is NaN or missing; expected a number (inf and -inf are allowed, NaN cannot be ranked)",
            source=name,
            line=int(part["line"].iloc[row]),
        )
    for col in ("query_id", "doc_id"):
        values = part[col]
        bad = (values.isna() | values.str.contains(_CONTROL, regex=True).fillna(False)).to_numpy(dtype=bool)
        bad |= (values.str.len() == 0).fillna(False).to_numpy(dtype=bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{col} is empty, missing or holds a control character; expected an id",
                source=name,
                line=int(part["line"].iloc[row]),
                text=repr(values.iloc[row]),
            )
    return part


# ------------------------------------------------------------------------------ partitions
def _part(query_ids: Any, n: int) -> np.ndarray:
    """Partition number of each query id (a stable hash, the same on every machine)."""
    import pandas as pd

    values = np.asarray(query_ids, dtype=object)
    hashed: np.ndarray = pd.util.hash_array(values, categorize=False)
    return (hashed % np.uint64(n)).astype(np.int32)


def _with_part(frame: Any, n: int) -> Any:
    return frame.assign(part=frame["query_id"].map_partitions(lambda s: _part(s, n), meta=("part", "int32")))


def _qrels_frame(qrels: Qrels) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    table = qrels.table
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        if (
            pa.types.is_dictionary(col.type)
            or pa.types.is_string(col.type)
            or pa.types.is_large_string(col.type)
        ):
            cols[name] = pd.Series(
                col.cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=pd.ArrowDtype(pa.string())
            )
        else:
            cols[name] = col.to_numpy()
    frame = pd.DataFrame(cols)
    frame["order"] = np.arange(len(frame), dtype=np.int64)  # the qrels file order
    return frame


@dataclass
class _Part:
    """What one partition sends back: per measure, its queries' ids, values and parts."""

    results: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]]
    nested: bool
    warnings: list[str]
    rows: int


def _evaluate_part(
    qrels_frame: pd.DataFrame,
    run_frame: pd.DataFrame,
    qrels_source: str,
    run_name: str,
    run_source: str | None,
    tie_break: str,
    measures: Sequence[Measure],
    options: dict[str, Any],
) -> _Part:
    """Evaluate one partition with the local engine's code (runs on a worker)."""
    import pyarrow as pa

    from rankeval.engine import _per_query
    from rankeval.ranked import Alignment

    qrels_frame = qrels_frame.sort_values("order", kind="stable")
    qt = pa.Table.from_pandas(qrels_frame.drop(columns=["part", "order"]), preserve_index=False)
    qrels = Qrels(
        qt.cast(
            pa.schema(
                [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in qt.schema]
            )
        ),
        qrels_source,
    )
    run_frame = run_frame.sort_values(["file", "line"], kind="stable")
    rt = pa.Table.from_pandas(run_frame[["query_id", "q0", "doc_id", "score"]], preserve_index=False)
    run_table = pa.table(
        {
            "query_id": rt.column("query_id").cast(pa.string()).combine_chunks().dictionary_encode(),
            "q0": rt.column("q0").cast(pa.string()).combine_chunks().dictionary_encode(),
            "doc_id": rt.column("doc_id").cast(pa.string()).combine_chunks(),
            "score": rt.column("score").cast(pa.float64()).combine_chunks(),
            # the tag column is not shuffled (no measure reads it): the run's name stands in
            "tag": pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(rt.num_rows, dtype=np.int32)), pa.array([run_name], pa.string())
            ),
        }
    )
    run = Run(run_table, run_name, run_source, run_frame["line"].to_numpy(dtype=np.int64), tie_break)
    out: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alignment = Alignment(
            qrels,
            run,
            nest_sep=options["nest_sep"],
            max_docs=options["max_docs"],
            on_duplicate=options["on_duplicate"],
            nested=options["nested"],
        )
        for measure in measures:
            # the measure's own code: a failure is a MeasureError naming measure and plugin,
            # which reaches the client as it is (rankeval's errors pickle)
            with measure_guard(measure):
                view, ids, values, index = _per_query(
                    alignment, measure, options["missing_zero"], require_level=False
                )
                found = view.level == 1 or view.num_queries > 0
                parts = measure.aggregate_parts(view, values, index)
            out.append((ids, values, parts, found))
    return _Part(out, alignment.nested, [str(w.message) for w in caught], len(run_frame))


def evaluate_partitioned(
    qrels: Qrels,
    runs: Sequence[tuple[str | Path, Run | None]],
    measures: Sequence[Measure],
    options: DaskOptions,
    *,
    missing_zero: bool,
    nest_sep: str | None,
    max_docs: int | None,
    on_duplicate: str,
) -> list[tuple[str, list[tuple[np.ndarray, np.ndarray, float]]]]:
    """Evaluate every run on Dask; per run, its name and per measure (query ids, values,
    aggregate), exactly as the local engine computes them.

    *runs* are ``(source, None)`` for a run file to read with Dask, or ``(name, Run)`` for a
    run already in memory (e.g. read from the hTBG JSON format).
    """

    options.check()
    for m in measures:
        check_measure(m)
    for source, run in runs:
        if run is None:
            _checked_files(source)  # a bad path fails before a cluster starts
    settings = {
        "nest_sep": nest_sep,
        "max_docs": max_docs,
        "on_duplicate": on_duplicate,
        "missing_zero": missing_zero,
        "nested": False,
    }
    try:
        with client(options):
            qrels_frame = _qrels_frame(qrels)
            return [
                _evaluate_run(qrels, qrels_frame, source, run, measures, options, settings)
                for source, run in runs
            ]
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


def _evaluate_run(
    qrels: Qrels,
    qrels_frame: pd.DataFrame,
    source: str | Path,
    run: Run | None,
    measures: Sequence[Measure],
    options: DaskOptions,
    settings: dict[str, Any],
) -> tuple[str, list[tuple[np.ndarray, np.ndarray, float]]]:
    import dask
    import dask.dataframe as dd

    if run is None:
        frame = read_run_frame(source, options)
        name, run_source, tie_break = Path(str(source)).name, _single(options.files), "docno"
    else:
        frame = dd.from_pandas(_run_block_frame(run.table, run.lines, 0), npartitions=max(options.workers, 1))
        name, run_source, tie_break = run.name, run.source, run.tie_break
    n = options.partitions or max(2 * frame.npartitions, options.workers)
    frame = frame.drop(columns=["tag"])  # less to shuffle: no measure reads the tag
    run_parts = _with_part(frame, n).shuffle(on="part", npartitions=n).to_delayed()
    qdf = dd.from_pandas(qrels_frame, npartitions=max(1, min(n, len(qrels_frame) // 50_000 + 1)))
    qrels_parts = _with_part(qdf, n).shuffle(on="part", npartitions=n).to_delayed()

    def tasks(nested: bool, which: list[int]) -> list[Any]:
        part_settings = {**settings, "nested": nested}
        return [
            dask.delayed(_evaluate_part)(
                qrels_parts[i],
                run_parts[i],
                qrels.source,
                name,
                run_source,
                tie_break,
                list(measures),
                part_settings,
            )
            for i in which
        ]

    results: list[_Part] = _compute(tasks(False, list(range(n))))
    if not sum(r.rows for r in results):
        raise InputError(
            "empty run: no run line in it (an empty file, or only blank lines and comments); "
            "expected lines 'query_id Q0 doc_id rank score tag'",
            source=io.source_name(source) if run is None else (run.source or run.name),
        )
    if any(r.nested for r in results) and not all(r.nested for r in results):
        # a nested collection: the partitions without nested ids are evaluated again as
        # parts of it (an item without children reads differently there)
        again = [i for i, r in enumerate(results) if not r.nested]
        for i, r in zip(again, _compute(tasks(True, again)), strict=True):
            results[i] = r
    seen: set[str] = set()
    for r in results:
        for message in r.warnings:
            if message not in seen:
                seen.add(message)
                warnings.warn(message, _warning_class(), stacklevel=3)
    return name, [_combine(m, [r.results[k] for r in results]) for k, m in enumerate(measures)]


def _warning_class() -> type[Warning]:
    from rankeval.errors import RankevalWarning

    return RankevalWarning


def _single(files: list[str]) -> str | None:
    return io.source_name(files[0]) if len(files) == 1 else None


def _combine(
    measure: Measure, parts: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]]
) -> tuple[np.ndarray, np.ndarray, float]:
    """All partitions' values of one measure, sorted by query id, and the aggregate."""
    if measure.view_level() > 1 and not any(found for *_, found in parts):
        raise UsageError(
            f"{measure} ranks nested items (level={measure.view_level()}), but no judged item of that "
            "level was found (see --nest-sep)"
        )
    ids = np.concatenate([p[0].astype(object) for p in parts]) if parts else np.zeros(0, object)
    values = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    order = np.argsort(ids.astype(str), kind="stable")
    keys = set().union(*(p[2].keys() for p in parts)) if parts else set()
    extra = {k: np.concatenate([p[2][k] for p in parts if k in p[2]])[order] for k in keys}
    ids, values = ids[order], values[order]
    with measure_guard(measure):
        aggregate = measure.aggregate_from_parts(ids, values, extra)
    return ids, values, aggregate
