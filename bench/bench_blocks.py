"""Block engine benchmark: memory, gzip, parallel speed, an address-space limit, start-up.

    python bench/bench_blocks.py                                  # 7M + 30M runs (~10 min)
    python bench/bench_blocks.py --data50m /tmp/bench50m          # + the 50M run under prlimit
    python bench/bench_blocks.py --reps 3 --help-reps 5           # more timed repetitions
    python bench/bench_blocks.py --data7m /tmp/s7 --data30m /tmp/s30 --block-size 2MB   # smoke test

Every command runs end to end in a fresh child process (the ``rankeval`` script next to
``sys.executable``; ir_measures through ``python -c``), once untimed as a warm-up (page cache)
and then ``--reps`` timed runs; the median is reported. Measures: ``-m AP -m nDCG@10 -m RR
-m R@1000``. For each run the wall time is read around the child, which is reaped with
``os.wait4`` (its ``ru_maxrss`` is the largest single process: the child or any descendant
it reaped); meanwhile a thread samples, with psutil every 0.05 s, the resident memory of
every process of the child's tree, giving the peak of their sum.

1. Memory, 7M-line run (``--data7m``; generated with ``generate.py --queries 6980`` if
   missing): ``rankeval Q R ... --jobs 1`` vs ir_measures, peak RSS ratio (target <= 0.35),
   and the default (all cores) rankeval's time, peak tree sum and largest process.
2. gzip: ``run.txt.gz`` (``gzip -1``, made once in the 7M dir), ``--jobs 1`` on it vs the
   plain file, peak RSS ratio (target <= 1.2).
3. Speed, 30M-line run (``--data30m``; generated with ``--queries 30000`` if missing):
   ``--jobs 1``, ``--jobs 2`` and ``--engine dask --workers 2``: speed-up jobs1/jobs2
   (target >= 1.6), dask/jobs2 time (target <= 1.3), and whether all print the same output;
   also ``--jobs 1`` with ``OMP_NUM_THREADS=1`` (pyarrow's parse on one thread: ``--jobs 1``
   otherwise uses more than one core) and its speed-up, for information.
4. Only with ``--data50m DIR``: ``prlimit --as=1610612736 rankeval Q R ... --jobs 1``
   (1.5 GiB of address space): did it complete (exit 0), and its time.
5. ``rankeval --help`` wall time, median of ``--help-reps`` (target < 0.5 s).

Ends with a summary table of every figure, with PASS/FAIL against the targets. Prints
figures only; it asserts nothing (the exit code is 0 unless the arguments are bad).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from bench_dask import MEASURES
from run_bench import (
    DEFAULT_MEASURES,
    IR_MEASURES_CHILD,
    _fmt_table,
    _versions,
    count_lines,
    ensure_data,
    load_average,
    parse_tab_lines,
    parse_trec_lines,
)

SPECS = DEFAULT_MEASURES.split()
RANKEVAL = str(Path(sys.executable).with_name("rankeval"))
AS_LIMIT = 1_610_612_736  # bytes of address space for the 50M run (1.5 GiB)
SAMPLE_INTERVAL = 0.05  # seconds between psutil samples of the process tree

# targets
TARGET_RSS_VS_IR_MEASURES = 0.35  # rankeval --jobs 1 / ir_measures peak RSS, 7M run (<=)
TARGET_GZ_VS_PLAIN = 1.2  # --jobs 1 peak RSS on run.txt.gz / on run.txt (<=)
TARGET_SPEEDUP_JOBS2 = 1.6  # --jobs 1 time / --jobs 2 time, 30M run (>=)
TARGET_DASK_VS_JOBS2 = 1.3  # --engine dask --workers 2 time / --jobs 2 time (<=)
TARGET_HELP_S = 0.5  # rankeval --help wall seconds (<)

MB = 2**20


# --------------------------------------------------------------------------- #
# Running one child: exact wall time and ru_maxrss (os.wait4), sampled tree memory
# --------------------------------------------------------------------------- #


@dataclass
class Run:
    """One run of a command."""

    wall: float
    rc: int
    stdout: str
    stderr: str
    maxrss_mb: float  # ru_maxrss from os.wait4: the largest single process (child or reaped descendant)
    tree_peak_mb: float  # sampled peak of the sum of the RSS of every process in the tree
    proc_peak_mb: float  # sampled peak of any one process of the tree
    nprocs: int  # most processes seen at once in the tree

    @property
    def max_proc_mb(self) -> float:
        """Largest single process: ru_maxrss, or the sampled figure if a process was missed."""
        return max(self.maxrss_mb, self.proc_peak_mb)

    @property
    def peak_mb(self) -> float:
        """Peak RSS of the whole tree: its sampled sum, at least the largest process."""
        return max(self.tree_peak_mb, self.max_proc_mb)


@dataclass
class _TreeStats:
    tree_peak: int = 0
    nprocs: int = 0
    proc_peak: dict[int, int] = field(default_factory=dict)


def _sample_tree(pid: int, stop: threading.Event, stats: _TreeStats) -> None:
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        total = 0
        for p in procs:
            try:
                rss = int(p.memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            total += rss
            if rss > stats.proc_peak.get(p.pid, 0):
                stats.proc_peak[p.pid] = rss
        stats.tree_peak = max(stats.tree_peak, total)
        stats.nprocs = max(stats.nprocs, len(procs))
        stop.wait(SAMPLE_INTERVAL)


def _maxrss_mb(ru_maxrss: int) -> float:
    # Linux reports KiB, macOS bytes.
    return ru_maxrss / MB if sys.platform == "darwin" else ru_maxrss / 1024


def run_measured(argv: list[str]) -> Run:
    """Run *argv* to completion in a fresh process and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stats = _TreeStats()
        stop = threading.Event()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, stats), daemon=True)
        sampler.start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it was reaped
        out.seek(0)
        err.seek(0)
        return Run(
            wall=wall,
            rc=proc.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            maxrss_mb=_maxrss_mb(rusage.ru_maxrss),
            tree_peak_mb=stats.tree_peak / MB,
            proc_peak_mb=max(stats.proc_peak.values(), default=0) / MB,
            nprocs=stats.nprocs,
        )


@dataclass
class Command:
    """A command, its warm-up run and its timed runs."""

    label: str
    argv: list[str]
    warmups: list[Run] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    @property
    def all_runs(self) -> list[Run]:
        return [*self.warmups, *self.runs]

    @property
    def error(self) -> str | None:
        """The first failed run's exit code and stderr tail, or None if every run succeeded."""
        for r in self.all_runs:
            if r.rc != 0:
                tail = "\n".join((r.stderr.strip() or r.stdout.strip()).splitlines()[-12:])
                return f"exit code {r.rc}:\n{tail}"
        return None

    @property
    def ok(self) -> bool:
        return bool(self.runs) and self.error is None

    def median(self, attr: str) -> float | None:
        if not self.ok:
            return None
        return statistics.median(float(getattr(r, attr)) for r in self.runs)

    @property
    def stdout(self) -> str | None:
        """Output of the warm-up run (or first timed run)."""
        runs = self.all_runs
        return runs[0].stdout if runs else None

    def outputs(self) -> set[str]:
        return {r.stdout for r in self.all_runs}


def _print_run(label: str, what: str, r: Run) -> None:
    status = "" if r.rc == 0 else f"  EXIT {r.rc}"
    print(
        f"  {label:<36} {what:<8} {r.wall:8.2f} s  max process {r.max_proc_mb:8.1f} MB  "
        f"tree {r.peak_mb:8.1f} MB  ({r.nprocs} proc){status}",
        flush=True,
    )


def bench(commands: list[Command], warmup: int, reps: int) -> None:
    """*warmup* untimed runs of each command, then *reps* timed runs, round-robin over the
    commands. A command whose warm-up fails is not run again."""
    for c in commands:
        for _ in range(warmup):
            r = run_measured(c.argv)
            c.warmups.append(r)
            _print_run(c.label, "warm-up", r)
            if r.rc != 0:
                print(f"  {c.label}: FAILED, skipping: {c.error}", flush=True)
                break
    for i in range(reps):
        for c in commands:
            if c.warmups and c.warmups[-1].rc != 0:
                continue
            r = run_measured(c.argv)
            c.runs.append(r)
            _print_run(c.label, f"rep {i + 1}", r)


BLOCK_SIZE: list[str] = []  # ["--block-size", SIZE] when --block-size is given


def rankeval_cmd(qrels: Path, run: Path, *extra: str) -> list[str]:
    return [RANKEVAL, str(qrels), str(run), *MEASURES, *BLOCK_SIZE, *extra]


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


@dataclass
class Figure:
    name: str
    value: str
    target: str = ""
    status: str = ""


def _fmt(x: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if x is None else f"{x:{spec}}{unit}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _check(value: float | bool | None, ok: bool) -> str:
    return "n/a" if value is None else ("PASS" if ok else "FAIL")


def agree_with_ir_measures(rankeval_out: str | None, ir_out: str | None) -> str:
    """Compare rankeval's and ir_measures' aggregates at 4 decimals."""
    if rankeval_out is None or ir_out is None:
        return "n/a"
    mine = parse_trec_lines(rankeval_out, {s: s for s in SPECS})
    theirs = parse_tab_lines(ir_out, SPECS)
    if set(mine) != set(SPECS) or set(theirs) != set(SPECS):
        return f"could not parse all measures (rankeval {sorted(mine)}, ir_measures {sorted(theirs)})"
    bad = [s for s in SPECS if round(mine[s], 4) != round(theirs[s], 4)]
    vals = ", ".join(f"{s}={mine[s]:.4f}" for s in SPECS)
    return f"agree at 4 decimals ({vals})" if not bad else f"DISAGREE on {', '.join(bad)}"


def report_failures(commands: list[Command]) -> None:
    for c in commands:
        if c.error is not None:
            print(f"  {c.label}: FAILED ({c.error})")


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def describe(qrels: Path, run: Path) -> str:
    return (
        f"qrels {count_lines(qrels):,} lines, run {run} {count_lines(run):,} lines, "
        f"{run.stat().st_size / 1e6:,.0f} MB"
    )


def ensure_gzip(run: Path) -> Path:
    """``run.txt.gz`` next to *run* (``gzip -1``), made once (again if older than *run*)."""
    gz = run.with_name(run.name + ".gz")
    if gz.exists() and gz.stat().st_mtime >= run.stat().st_mtime:
        return gz
    tmp = gz.with_name(gz.name + ".tmp")
    print(f"compressing {run} -> {gz} (gzip -1)", flush=True)
    t0 = time.perf_counter()
    exe = shutil.which("gzip")
    if exe is not None:
        with tmp.open("wb") as fh:
            subprocess.run([exe, "-1", "-c", str(run)], stdout=fh, check=True)
    else:
        with run.open("rb") as src, gzip.open(tmp, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
    tmp.replace(gz)
    print(f"  {gz.stat().st_size / 1e6:,.0f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
    return gz


# --------------------------------------------------------------------------- #


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data7m", type=Path, default=Path("/tmp/bench7m"), help="7M-line data dir (default /tmp/bench7m)"
    )
    ap.add_argument(
        "--data30m",
        type=Path,
        default=Path("/tmp/bench30m"),
        help="30M-line data dir (default /tmp/bench30m)",
    )
    ap.add_argument(
        "--data50m", type=Path, default=None, help="50M-line data dir; the prlimit run is skipped without it"
    )
    ap.add_argument(
        "--reps", type=int, default=1, help="timed runs per command for the 7M/30M/50M runs (default 1)"
    )
    ap.add_argument("--help-reps", type=int, default=5, help="timed runs of 'rankeval --help' (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs per command (default 1)")
    ap.add_argument(
        "--block-size",
        default=None,
        help="pass --block-size SIZE to every rankeval evaluation (default: rankeval's own, 32MB); "
        "a small one exercises the parallel paths on small data",
    )
    args = ap.parse_args(argv)
    if args.reps < 1 or args.help_reps < 1 or args.warmup < 0:
        ap.error("--reps and --help-reps must be >= 1, --warmup >= 0")
    if not Path(RANKEVAL).exists():
        ap.error(f"{RANKEVAL} not found (install rankeval in this venv)")

    if args.block_size is not None:
        BLOCK_SIZE[:] = ["--block-size", args.block_size]

    t_start = time.perf_counter()
    print(f"cpus: {os.cpu_count()}   load avg: {load_average()}   reps: {args.reps} (+{args.warmup} warm-up)")
    print(_versions())
    print(f"rankeval: {RANKEVAL}   measures: {' '.join(SPECS)}   block size: {args.block_size or 'default'}")
    figures: list[Figure] = []

    # 1. memory, 7M ------------------------------------------------------------------- #
    print("\n== 1. memory: 7M-line run, rankeval --jobs 1 vs ir_measures ==")
    q7, r7 = ensure_data(args.data7m.resolve(), queries=6980)
    print(describe(q7, r7))
    jobs1_7 = Command("rankeval --jobs 1", rankeval_cmd(q7, r7, "--jobs", "1"))
    irm = Command("ir_measures", [sys.executable, "-c", IR_MEASURES_CHILD, str(q7), str(r7), *SPECS])
    default_7 = Command("rankeval (default: all cores)", rankeval_cmd(q7, r7))
    sec1 = [jobs1_7, irm, default_7]
    bench(sec1, args.warmup, args.reps)
    report_failures(sec1)
    rss_j1, rss_irm = jobs1_7.median("peak_mb"), irm.median("peak_mb")
    rss_ratio = _ratio(rss_j1, rss_irm)
    print(f"  values: rankeval vs ir_measures {agree_with_ir_measures(jobs1_7.stdout, irm.stdout)}")
    default_same = default_7.ok and jobs1_7.ok and default_7.outputs() == jobs1_7.outputs()
    figures += [
        Figure("7M --jobs 1 wall", _fmt(jobs1_7.median("wall"), unit=" s")),
        Figure("7M --jobs 1 peak RSS", _fmt(rss_j1, ".1f", " MB")),
        Figure("7M ir_measures wall", _fmt(irm.median("wall"), unit=" s")),
        Figure("7M ir_measures peak RSS", _fmt(rss_irm, ".1f", " MB")),
        Figure(
            "7M peak RSS --jobs 1 / ir_measures",
            _fmt(rss_ratio, ".3f", "x"),
            f"<= {TARGET_RSS_VS_IR_MEASURES}",
            _check(rss_ratio, rss_ratio is not None and rss_ratio <= TARGET_RSS_VS_IR_MEASURES),
        ),
        Figure(
            "7M wall --jobs 1 / ir_measures",
            _fmt(_ratio(jobs1_7.median("wall"), irm.median("wall")), ".3f", "x"),
        ),
        Figure("7M default (all cores) wall", _fmt(default_7.median("wall"), unit=" s")),
        Figure("7M default peak RSS, tree sum", _fmt(default_7.median("peak_mb"), ".1f", " MB")),
        Figure("7M default peak RSS, max process", _fmt(default_7.median("max_proc_mb"), ".1f", " MB")),
        Figure("7M default output == --jobs 1", str(default_same)),
    ]

    # 2. gzip ------------------------------------------------------------------------ #
    print("\n== 2. gzip: rankeval --jobs 1 on run.txt.gz vs run.txt (7M) ==")
    gz7 = ensure_gzip(r7)
    jobs1_gz = Command("rankeval --jobs 1 (gz)", rankeval_cmd(q7, gz7, "--jobs", "1"))
    bench([jobs1_gz], args.warmup, args.reps)
    report_failures([jobs1_gz])
    rss_gz = jobs1_gz.median("peak_mb")
    gz_ratio = _ratio(rss_gz, rss_j1)
    # the run is named after its file (run.txt vs run.txt.gz), so compare the values only
    gz_vals = parse_trec_lines(jobs1_gz.stdout or "", {s: s for s in SPECS})
    plain_vals = parse_trec_lines(jobs1_7.stdout or "", {s: s for s in SPECS})
    gz_same = jobs1_gz.ok and jobs1_7.ok and bool(gz_vals) and gz_vals == plain_vals
    print(f"  plain peak {_fmt(rss_j1, '.1f')} MB, gz peak {_fmt(rss_gz, '.1f')} MB, same values: {gz_same}")
    figures += [
        Figure("7M gz --jobs 1 wall", _fmt(jobs1_gz.median("wall"), unit=" s")),
        Figure("7M gz --jobs 1 peak RSS", _fmt(rss_gz, ".1f", " MB")),
        Figure(
            "7M peak RSS gz / plain (--jobs 1)",
            _fmt(gz_ratio, ".3f", "x"),
            f"<= {TARGET_GZ_VS_PLAIN}",
            _check(gz_ratio, gz_ratio is not None and gz_ratio <= TARGET_GZ_VS_PLAIN),
        ),
        Figure("7M gz values == plain", str(gz_same)),
    ]

    # 3. speed, 30M ---------------------------------------------------------------------- #
    print("\n== 3. speed: 30M-line run, --jobs 1 / --jobs 2 / --engine dask --workers 2 ==")
    q30, r30 = ensure_data(args.data30m.resolve(), queries=30_000)
    print(describe(q30, r30))
    j1 = Command("rankeval --jobs 1", rankeval_cmd(q30, r30, "--jobs", "1"))
    j2 = Command("rankeval --jobs 2", rankeval_cmd(q30, r30, "--jobs", "2"))
    dk = Command(
        "rankeval --engine dask --workers 2", rankeval_cmd(q30, r30, "--engine", "dask", "--workers", "2")
    )
    # --jobs 1 parses each block with pyarrow's threads; with one thread, the speed-up of
    # the processes alone
    j1_one = Command(
        "rankeval --jobs 1, 1 thread", ["env", "OMP_NUM_THREADS=1", *rankeval_cmd(q30, r30, "--jobs", "1")]
    )
    sec3 = [j1, j2, dk, j1_one]
    bench(sec3, args.warmup, args.reps)
    report_failures(sec3)
    w1, w2, wd = j1.median("wall"), j2.median("wall"), dk.median("wall")
    speedup, dask_ratio = _ratio(w1, w2), _ratio(wd, w2)
    outs = j1.outputs() | j2.outputs() | dk.outputs()
    same30 = all(c.ok for c in sec3) and len(outs) == 1
    print(f"  same output: {same30}")
    if not same30 and all(c.ok for c in sec3):
        for c in sec3:
            print(f"  --- {c.label} ---\n{c.stdout}")
    figures += [
        Figure("30M --jobs 1 wall", _fmt(w1, unit=" s")),
        Figure("30M --jobs 2 wall", _fmt(w2, unit=" s")),
        Figure("30M dask --workers 2 wall", _fmt(wd, unit=" s")),
        Figure("30M --jobs 1 peak RSS", _fmt(j1.median("peak_mb"), ".1f", " MB")),
        Figure("30M --jobs 2 peak RSS, tree sum", _fmt(j2.median("peak_mb"), ".1f", " MB")),
        Figure("30M dask peak RSS, tree sum", _fmt(dk.median("peak_mb"), ".1f", " MB")),
        Figure(
            "30M speed-up --jobs 1 / --jobs 2",
            _fmt(speedup, ".2f", "x"),
            f">= {TARGET_SPEEDUP_JOBS2}",
            _check(speedup, speedup is not None and speedup >= TARGET_SPEEDUP_JOBS2),
        ),
        Figure(
            "30M time dask / --jobs 2",
            _fmt(dask_ratio, ".2f", "x"),
            f"<= {TARGET_DASK_VS_JOBS2}",
            _check(dask_ratio, dask_ratio is not None and dask_ratio <= TARGET_DASK_VS_JOBS2),
        ),
        Figure("30M same output (3 schedulers)", str(same30), "True", "PASS" if same30 else "FAIL"),
        Figure("30M --jobs 1 wall, OMP_NUM_THREADS=1", _fmt(j1_one.median("wall"), unit=" s")),
        Figure(
            "30M speed-up --jobs 1 (1 thread) / --jobs 2",
            _fmt(_ratio(j1_one.median("wall"), w2), ".2f", "x"),
        ),
    ]

    # 4. 50M under an address-space limit -------------------------------------------------- #
    if args.data50m is None:
        print("\n== 4. 50M-line run under prlimit: skipped (no --data50m) ==")
        figures.append(Figure("50M prlimit --as run", "skipped"))
    else:
        print(f"\n== 4. 50M-line run, --jobs 1 under prlimit --as={AS_LIMIT} ==")
        q50, r50 = args.data50m.resolve() / "qrels.txt", args.data50m.resolve() / "run.txt"
        prlimit = shutil.which("prlimit")
        if prlimit is None or not (q50.exists() and r50.exists()):
            why = "no prlimit binary" if prlimit is None else f"{q50} or {r50} missing"
            print(f"  skipped: {why}")
            figures.append(Figure("50M prlimit --as run", f"skipped ({why})"))
        else:
            print(describe(q50, r50))
            lim = Command(
                "prlimit rankeval --jobs 1",
                [prlimit, f"--as={AS_LIMIT}", *rankeval_cmd(q50, r50, "--jobs", "1")],
            )
            bench([lim], args.warmup, args.reps)
            report_failures([lim])
            done = lim.ok
            figures += [
                Figure(
                    "50M --jobs 1 under 1.5 GiB AS completed", str(done), "True", "PASS" if done else "FAIL"
                ),
                Figure("50M --jobs 1 under 1.5 GiB AS wall", _fmt(lim.median("wall"), unit=" s")),
                Figure("50M --jobs 1 under 1.5 GiB AS peak RSS", _fmt(lim.median("peak_mb"), ".1f", " MB")),
            ]

    # 5. --help ---------------------------------------------------------------------------- #
    print("\n== 5. rankeval --help ==")
    hlp = Command("rankeval --help", [RANKEVAL, "--help"])
    bench([hlp], max(args.warmup, 1), args.help_reps)
    report_failures([hlp])
    wh = hlp.median("wall")
    figures.append(
        Figure(
            "rankeval --help wall",
            _fmt(wh, ".3f", " s"),
            f"< {TARGET_HELP_S} s",
            _check(wh, wh is not None and wh < TARGET_HELP_S),
        )
    )

    # summary ------------------------------------------------------------------------------ #
    print(f"\n== summary (median of {args.reps} timed run(s); --help: {args.help_reps}) ==")
    print(
        _fmt_table(
            ["figure", "value", "target", "status"], [[f.name, f.value, f.target, f.status] for f in figures]
        )
    )
    statuses = [f.status for f in figures if f.status]
    print(
        f"\n{statuses.count('PASS')} PASS, {statuses.count('FAIL')} FAIL, {statuses.count('n/a')} n/a   "
        f"(total {time.perf_counter() - t_start:.0f} s, load avg now {load_average()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
