"""Local engine vs the Dask engine (2 workers, a memory limit each) on a large run.

    python bench/bench_dask.py --queries 50000 --depth 1000 --out /tmp/bench50m   # 50M lines, ~2 GB

Generates (once, with bench/generate.py) an MS MARCO-shaped run and qrels, then evaluates
``-m AP -m nDCG@10 -m RR -m R@1000`` in fresh processes: ``rankeval QRELS RUN`` (local) and
``rankeval QRELS RUN --engine dask --workers 2 --memory-limit 2GB``. While each runs, the
resident memory of every process of its tree (the CLI, and for Dask the scheduler and the
worker processes) is sampled every 0.2 s. Prints wall time, peak memory of the local
process, peak memory per Dask worker, the speed-up, and whether both printed the same values.
Target: the Dask run completes within its per-worker limit and returns the local
engine's results, while the local engine's peak memory is higher than any worker's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import psutil

MEASURES = ["-m", "AP", "-m", "nDCG@10", "-m", "RR", "-m", "R@1000"]


def run_sampled(args: list[str]) -> tuple[float, str, dict[int, tuple[str, float]]]:
    """(wall seconds, stdout, {pid: (command line, peak RSS MB)}) of a command's tree."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks: dict[int, tuple[str, float]] = {}
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                rss = p.memory_info().rss / 2**20
                cmd = " ".join(p.cmdline())[:120]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if rss > peaks.get(p.pid, ("", 0.0))[1]:
                peaks[p.pid] = (cmd, rss)
        time.sleep(0.2)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{err}")
    return wall, out, peaks


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out/dask"))
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GB")
    args = parser.parse_args()
    qrels, run = args.out / "qrels.txt", args.out / "run.txt"
    if not run.exists():
        here = Path(__file__).parent
        subprocess.run(
            [
                sys.executable,
                str(here / "generate.py"),
                "--out",
                str(args.out),
                "--queries",
                str(args.queries),
                "--depth",
                str(args.depth),
            ],
            check=True,
        )
    exe = str(Path(sys.executable).with_name("rankeval"))
    lines = sum(1 for _ in run.open("rb"))
    print(f"run: {run} ({run.stat().st_size / 2**30:.2f} GB, {lines:,} lines)")
    local_wall, local_out, local_peaks = run_sampled([exe, str(qrels), str(run), *MEASURES])
    dask_wall, dask_out, dask_peaks = run_sampled(
        [
            exe,
            str(qrels),
            str(run),
            *MEASURES,
            "--engine",
            "dask",
            "--workers",
            str(args.workers),
            "--memory-limit",
            args.memory_limit,
        ]
    )
    local_peak = max(rss for _, rss in local_peaks.values())
    workers = sorted(
        ((cmd, rss) for cmd, rss in dask_peaks.values() if "multiprocessing" in cmd or "spawn" in cmd),
        key=lambda x: -x[1],
    )
    client = max((rss for cmd, rss in dask_peaks.values() if "rankeval" in cmd), default=0.0)
    print(f"local engine:  {local_wall:7.1f} s   peak RSS {local_peak:8.0f} MB")
    print(f"dask engine:   {dask_wall:7.1f} s   client peak RSS {client:8.0f} MB")
    for i, (_, rss) in enumerate(workers):
        print(f"   worker process {i}: peak RSS {rss:8.0f} MB (limit {args.memory_limit})")
    print(f"speed-up (local / dask): {local_wall / dask_wall:.2f}x")
    print(f"same output: {local_out == dask_out}")
    print(local_out)


if __name__ == "__main__":
    main()
