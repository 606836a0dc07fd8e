"""Faults of the Dask engine: a frozen worker, Ctrl-C, a failing measure on a worker, bad
options, bad scheduler addresses and bad run paths.

The fault tests start their own 2-worker ``LocalCluster`` through rankeval (the fault handling
applies to the clusters rankeval starts), find its worker processes through the
``rankeval.engine.dask_cluster._started`` seam, and check that none of them outlives the run.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import psutil
import pytest

import rankeval
import rankeval.engine.dask_cluster as dc
from rankeval.engine.distributed import DaskOptions
from rankeval.errors import EngineError, InputError, MeasureError, UsageError
from rankeval.measures.base import Measure

DATA = Path(__file__).parent / "data"
QRELS = DATA / "trec_eval" / "qrels.test"
RUN = DATA / "trec_eval" / "results.test"

pytestmark = pytest.mark.filterwarnings("ignore::rankeval.errors.RankevalWarning")


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_gone(procs: list[psutil.Process], timeout: float = 10.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in procs if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in procs if _alive(p)]


def _children() -> set[psutil.Process]:
    return {
        p
        for p in psutil.Process().children(recursive=True)
        if "resource_tracker" not in " ".join(p.cmdline())
    }


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[psutil.Process]]:
    """The worker processes of the clusters rankeval starts during the test (recorded when a
    cluster is up). Afterwards every one of them, and every process the test started
    (workers restarted by Dask included), must be gone; survivors are continued and killed."""
    before = _children()
    found: list[psutil.Process] = []

    def started(c: Any) -> None:
        found.extend(psutil.Process(pid) for pid in c.run(os.getpid).values())

    monkeypatch.setattr(dc, "_started", started)
    yield found
    left = _wait_gone([*found, *(_children() - before)])
    for proc in left:
        try:
            proc.resume()
            proc.kill()
        except psutil.Error:
            pass
    assert not left, f"processes left behind: {left}"


def _quiet(err: str) -> None:
    """Nothing of Dask's on stderr: no traceback, no log line."""
    assert "Traceback" not in err, err
    assert "distributed." not in err, err
    assert "Compute Failed" not in err, err


# ------------------------------------------------------------------------------ frozen worker
def _freeze_one(monkeypatch: pytest.MonkeyPatch, found: list[psutil.Process]) -> list[psutil.Process]:
    """Once the cluster is up, SIGSTOP one of its workers (before any task has run)."""
    frozen: list[psutil.Process] = []
    recorded = dc._started

    def started(c: Any) -> None:
        recorded(c)
        frozen.append(found[0])
        found[0].suspend()

    monkeypatch.setattr(dc, "_started", started)
    return frozen


# With worker_ttl=1 Dask waits its minimum of 5 s (10 heartbeats), checks every second, and
# its nanny kills the frozen process 4 s after asking it to stop: about 10 s per lost worker.
BOUND = 45.0


@pytest.mark.slow
def test_frozen_worker_is_detected_and_its_tasks_run_elsewhere(workers, monkeypatch, capfd):
    frozen = _freeze_one(monkeypatch, workers)
    local = rankeval.evaluate(QRELS, RUN, ["AP", "nDCG@10", "P@5"])
    start = time.monotonic()
    dist = rankeval.evaluate(
        QRELS, RUN, ["AP", "nDCG@10", "P@5"], engine=DaskOptions(worker_ttl=1), block_size=8192
    )
    elapsed = time.monotonic() - start
    assert frozen and elapsed < BOUND
    pd.testing.assert_frame_equal(dist.reset_index(drop=True), local.reset_index(drop=True), check_exact=True)
    _quiet(capfd.readouterr().err)


@pytest.mark.slow
def test_frozen_worker_without_retries_is_a_clean_error_in_bounded_time(workers, monkeypatch, capfd):
    frozen = _freeze_one(monkeypatch, workers)
    start = time.monotonic()
    with pytest.raises(EngineError, match=r"a task lost its worker 1 time\(s\)"):
        rankeval.evaluate(
            QRELS, RUN, "AP", engine=DaskOptions(worker_ttl=1, allowed_failures=0), block_size=8192
        )
    assert frozen and time.monotonic() - start < BOUND
    _quiet(capfd.readouterr().err)


def _pause(dask_worker: Any) -> None:
    from distributed.core import Status

    monitor = dask_worker.periodic_callbacks.get("memory_monitor")
    if monitor is not None:  # it would resume the worker: its memory is in fact fine
        monitor.stop()
    dask_worker.status = Status.paused  # what Dask does at 80% of the memory limit


@pytest.mark.slow
def test_workers_paused_for_good_is_a_clean_error_in_bounded_time(workers, monkeypatch, capfd):
    """Workers paused at their memory limit (here: paused by hand) would wait for good."""
    recorded = dc._started

    def started(c: Any) -> None:
        recorded(c)
        c.run(_pause)

    monkeypatch.setattr(dc, "_started", started)
    start = time.monotonic()
    with pytest.raises(
        EngineError, match=r"no worker could run for 2 s \(all paused at their memory limit\)"
    ):
        rankeval.evaluate(QRELS, RUN, "AP", engine=DaskOptions(stall_timeout=2))
    assert time.monotonic() - start < BOUND
    _quiet(capfd.readouterr().err)


def test_scheduler_without_workers_is_a_clean_error_in_bounded_time(capfd):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None) as cluster:
        start = time.monotonic()
        with pytest.raises(EngineError, match="none is connected to the scheduler"):
            rankeval.evaluate(
                QRELS, RUN, "AP", engine=DaskOptions(scheduler=cluster.scheduler_address, stall_timeout=2)
            )
        assert time.monotonic() - start < 2 + 10
    assert "Traceback" not in capfd.readouterr().err


# ------------------------------------------------------------------------------ Ctrl-C
def test_keyboard_interrupt_mid_run_closes_the_cluster_quietly(workers, monkeypatch, capfd):
    """KeyboardInterrupt in the client while tasks are in flight: it propagates (the CLI
    prints its one line), after the cluster is closed; Dask prints nothing."""
    real = dc.compute
    interrupted = []

    def compute(tasks: list[Any]) -> list[Any]:
        if not str(tasks[0].key).startswith("_run"):
            return real(tasks)
        from distributed import get_client

        futures = get_client().compute(tasks)
        time.sleep(0.3)
        interrupted.append(futures)
        raise KeyboardInterrupt

    monkeypatch.setattr(dc, "compute", compute)
    with pytest.raises(KeyboardInterrupt):
        rankeval.evaluate(QRELS, RUN, "AP", engine=DaskOptions(), block_size=8192)
    assert interrupted and workers
    assert not _wait_gone(workers)
    _quiet(capfd.readouterr().err)


SCRIPT = """
import os, sys, time
import rankeval
import rankeval.engine.dask_cluster as dc
from rankeval.engine.distributed import DaskOptions

real = dc.compute

def compute(tasks):
    if not str(tasks[0].key).startswith("_run"):
        return real(tasks)
    from distributed import get_client
    futures = get_client().compute(tasks)
    print("running", flush=True)
    time.sleep(60)

def started(c):
    print("workers", *c.run(os.getpid).values(), flush=True)

if __name__ == "__main__":
    dc._started, dc.compute = started, compute
    try:
        rankeval.evaluate(sys.argv[1], sys.argv[2], "AP", engine=DaskOptions())
    except KeyboardInterrupt:  # what the CLI does
        print("rankeval: interrupted", file=sys.stderr)
        sys.exit(130)
"""


def test_ctrl_c_at_a_terminal_reaches_workers_too(tmp_path):
    """A terminal's Ctrl-C sends SIGINT to the whole process group, Dask's worker processes
    included: they ignore it, the client closes the cluster, and stderr holds only the
    client's own line."""
    script = tmp_path / "interrupt.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(QRELS), str(RUN)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            line = proc.stdout.readline() if ready else ""
            if line.startswith("workers"):
                pids = [int(x) for x in line.split()[1:]]
            if line.startswith("running") or not line:
                break
        assert pids, "the cluster did not start"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err == "rankeval: interrupted\n"
    left = []
    for pid in pids:
        try:
            left.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    assert not _wait_gone(left), "worker processes left behind"


# ------------------------------------------------------------------------------ measures
@dataclass(frozen=True)
class Broken(Measure):
    """A plugin measure that fails where it is told to (on a worker, or on the client)."""

    name: ClassVar[str] = "Broken"
    description: ClassVar[str] = "fails on purpose"
    where: str = "compute"

    def compute(self, data: Any) -> np.ndarray:
        if self.where == "compute":
            raise ValueError("no luck on this worker")
        return np.zeros(data.num_queries)

    def aggregate_from_parts(self, query_ids: np.ndarray, values: np.ndarray, parts: Any) -> float:
        if self.where == "aggregate":
            raise ZeroDivisionError("no luck on the client")
        return 0.0


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("compute", "ValueError: no luck on this worker"),
        ("aggregate", "ZeroDivisionError: no luck on the client"),
    ],
)
def test_failing_plugin_measure_is_one_clean_error(workers, capfd, where, reason):
    import logging

    names = ("distributed", "distributed.client", "asyncio", "tornado")
    levels = [logging.getLogger(n).level for n in names]
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(QRELS, RUN, [Broken(where)], engine=DaskOptions())
    assert [logging.getLogger(n).level for n in names] == levels  # silenced for the run only
    message = str(info.value)
    assert "(plugin test_distributed_faults) failed: " in message and message.endswith(reason)
    assert "\n" not in message
    _quiet(capfd.readouterr().err)


# ------------------------------------------------------------------------------ options
@pytest.mark.parametrize("limit", ["abc", "-1GB", "0", "", "GB", "1KB", "300MiB", "1e400GB", "10%", -5, 0])
def test_bad_memory_limit_is_a_usage_error(limit):
    with pytest.raises(UsageError, match="memory limit"):
        DaskOptions(memory_limit=limit).check()


@pytest.mark.parametrize("limit", ["2GB", "512MiB", "1.5 GiB", "auto", " Auto ", 2**30, None])
def test_good_memory_limits(limit):
    DaskOptions(memory_limit=limit).check()


@pytest.mark.parametrize(
    "options",
    [
        DaskOptions(workers=0),
        DaskOptions(workers=-1),
        DaskOptions(workers=True),
        DaskOptions(worker_ttl=0),
        DaskOptions(worker_ttl=float("inf")),
        DaskOptions(connect_timeout=float("nan")),
        DaskOptions(allowed_failures=-1),
    ],
)
def test_bad_options_are_usage_errors(options):
    with pytest.raises(UsageError):
        rankeval.evaluate(QRELS, RUN, "AP", engine=options)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--memory-limit", "abc"], "memory limit 'abc'"),
        (["--memory-limit", "-1GB"], "memory limit '-1GB'"),
        (["--memory-limit", "0"], "memory limit '0'"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_cli_bad_dask_options_exit_2(args, words):
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    result = CliRunner().invoke(app, [str(QRELS), str(RUN), "-m", "AP", "--engine", "dask", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("address", ["tcp://", "nonsense", "tcp://127.0.0.1:1", "http://127.0.0.1:8786", ""])
def test_bad_or_unreachable_scheduler_is_an_engine_error_within_the_timeout(address, capfd):
    start = time.monotonic()
    with pytest.raises(EngineError, match="scheduler"):
        rankeval.evaluate(QRELS, RUN, "AP", engine=DaskOptions(scheduler=address, connect_timeout=2))
    assert time.monotonic() - start < 2 + 5
    _quiet(capfd.readouterr().err)


def test_worker_config_and_preload_hook():
    """The settings rankeval gives Dask, and the hook its workers run."""
    config = dc._dask_config(DaskOptions(worker_ttl=7, allowed_failures=1, connect_timeout=3))
    assert config["distributed.scheduler.worker-ttl"] == "7s"
    assert config["distributed.scheduler.allowed-failures"] == 1
    assert config["distributed.comm.timeouts.connect"] == "3s"
    assert dc.__name__ == "rankeval.engine.dask_cluster" and callable(dc.dask_setup)


# ------------------------------------------------------------------------------ run paths
def _dask(run: Any) -> Any:
    # every error below is found on the client before a cluster starts
    return rankeval.evaluate(QRELS, run, "AP", engine=DaskOptions(scheduler="tcp://127.0.0.1:1"))


def test_glob_matching_nothing_names_the_pattern(tmp_path):
    pattern = str(tmp_path / "none-*.txt")
    with pytest.raises(InputError, match="no file matches") as info:
        _dask(pattern)
    assert info.value.source == pattern


def test_directory_without_parquet_names_the_path(tmp_path):
    with pytest.raises(InputError, match="is a directory without Parquet files") as info:
        _dask(tmp_path)
    assert info.value.source == str(tmp_path)


def test_missing_run_file_names_the_path(tmp_path):
    with pytest.raises(InputError) as info:
        _dask(tmp_path / "missing.run")
    assert info.value.source == str(tmp_path / "missing.run")


def test_parquet_and_text_mixed(tmp_path):
    (tmp_path / "a.txt").write_text("1 Q0 d 1 1.0 t\n")
    pd.DataFrame({"query_id": ["1"], "doc_id": ["d"], "score": [1.0]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(InputError, match=r"not run text .*a pattern names the TREC text files"):
        _dask(str(tmp_path / "*"))


