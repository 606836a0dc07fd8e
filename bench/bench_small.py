"""Benchmark: a small run (about 100,000 lines), where start-up is most of the time.

Most TREC runs are small: 50 to 250 queries x 1,000 documents. On such a run this times, in
one go, each command as a fresh child process (best of ``--reps`` after one untimed warm-up,
round-robin over the commands; the helpers of ``run_bench.py``), with Python's bytecode
cache on, as for an installed package (in a temporary ``PYTHONPYCACHEPREFIX`` that the
warm-up run fills, whatever ``PYTHONDONTWRITEBYTECODE`` says):

- ``trec_eval -m map -m ndcg_cut.10 -m P.10 -m recip_rank QRELS RUN`` (the binary of
  ``--trec-eval``, by default ``/work/shared/tools/trec_eval-v9.0.8`` or ``trec_eval`` on
  PATH; skipped if there is none);
- ``ir_measures QRELS RUN 'AP nDCG@10 P@10 RR'`` (ir_measures' command line: the script next
  to this interpreter, else ``python -m ir_measures``; skipped if not installed);
- ``rankeval QRELS RUN -m AP -m nDCG@10 -m P@10 -m RR`` with the default ``--jobs`` and with
  ``--jobs 1``;
- ``rankeval trec_eval -m map -m ndcg_cut.10 -m P.10 -m recip_rank QRELS RUN``;
- the floor: ``python -c "import numpy, pyarrow"``.

With ``--baseline DIR`` (a checkout of another commit, e.g. ``git archive COMMIT | tar -x -C
DIR``) the three rankeval commands are also timed from that checkout, in the same rounds.

It prints the best and median wall times, the ratios the issue asks about (default ``--jobs``
over ``--jobs 1``; the main command over ir_measures; ``rankeval trec_eval`` beside trec_eval
and the floor), and whether the tools agree on the four values.

Data: ``--qrels``/``--run`` (default: the Robust03 qrels and the 100,000-line run
``input.InexpC2`` of ``/work/shared/verify/robust03``, decompressed into a temporary
directory, since trec_eval reads no gzip); where they are missing, a 100 x 1,000 run generated
by ``bench/generate.py``.

    python bench/bench_small.py --reps 5
    python bench/bench_small.py --reps 5 --baseline /tmp/rankeval-base
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_bench
from run_bench import (
    BASELINE_CHILD,
    Tool,
    _fmt_table,
    _versions,
    count_lines,
    ensure_data,
    load_average,
    parse_tab_lines,
    parse_trec_lines,
    time_tools,
)

VERIFY = Path("/work/shared/verify/robust03")
DEFAULT_QRELS = VERIFY / "robust03_qrels.txt"
DEFAULT_RUN = VERIFY / "runs" / "input.InexpC2.gz"
DEFAULT_TREC_EVAL = Path("/work/shared/tools/trec_eval-v9.0.8")

SPECS = ["AP", "nDCG@10", "P@10", "RR"]
#: trec_eval's -m names and the names it prints, for the same four measures
TREC_M = ["map", "ndcg_cut.10", "P.10", "recip_rank"]
TREC_PRINTED = {"map": "AP", "ndcg_cut_10": "nDCG@10", "P_10": "P@10", "recip_rank": "RR"}

#: the issue's targets: default --jobs no slower than --jobs 1; the main command faster than
#: ir_measures; ``rankeval trec_eval`` at most this many seconds
TARGET_TREC_EVAL_S = 0.6


#: the CPU time (user + system, of the child and the processes it waited for) of each timed run,
#: by command line: on a busy machine it varies less than the wall time
CPU: dict[tuple[str, ...], list[float]] = {}


def _run_child(argv: list[str], cwd: Path) -> tuple[float, float, int, str, str]:
    """:func:`run_bench.run_child`, recording the child's CPU time in :data:`CPU` as well."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        CPU.setdefault(tuple(argv), []).append(usage.ru_utime + usage.ru_stime)
        out.seek(0)
        err.seek(0)
        stdout, stderr = (f.read().decode(errors="replace") for f in (out, err))
        return wall, usage.ru_maxrss / 1024, proc.returncode, stdout, stderr


run_bench.run_child = _run_child  # time_tools runs each command through it


def _script(name: str) -> Path | None:
    """The console script *name* next to this interpreter, if there is one."""
    path = Path(sys.executable).parent / name
    return path if path.exists() else None


def _rankeval_argv(prefix: list[str], qrels: Path, run: Path) -> dict[str, list[str]]:
    """The three rankeval commands, each after *prefix* (how rankeval is started)."""
    main = [*prefix, str(qrels), str(run), *(a for s in SPECS for a in ("-m", s))]
    trec = [*prefix, "trec_eval", *(a for m in TREC_M for a in ("-m", m)), str(qrels), str(run)]
    return {"rankeval": main, "rankeval -j1": [*main, "--jobs", "1"], "rankeval trec_eval": trec}


def build_tools(
    qrels: Path, run: Path, trec_eval: Path | None, baseline: Path | None
) -> tuple[list[Tool], list[str]]:
    """The commands to time, and notes on those skipped."""
    notes: list[str] = []
    ident = {s: s for s in SPECS}
    is_all = lambda line: len(line.split()) >= 3 and line.split()[-2] == "all"  # noqa: E731
    tools: list[Tool] = []
    if trec_eval is not None:
        argv = [str(trec_eval), *(a for m in TREC_M for a in ("-m", m)), str(qrels), str(run)]
        tools.append(Tool("trec_eval", argv, lambda out: parse_trec_lines(out, TREC_PRINTED), is_all))
    else:
        notes.append("trec_eval: no binary (--trec-eval, or trec_eval on PATH): skipped")
    irm = _script("ir_measures")
    if irm is not None or shutil.which("ir_measures") or _importable("ir_measures"):
        prefix = [str(irm)] if irm is not None else [sys.executable, "-m", "ir_measures"]
        tools.append(
            Tool(
                "ir_measures",
                [*prefix, str(qrels), str(run), " ".join(SPECS)],
                lambda o: parse_tab_lines(o, SPECS),
            )
        )
    else:
        notes.append("ir_measures: not installed: skipped")
    script = _script("rankeval")
    prefix = [str(script)] if script is not None else [sys.executable, "-m", "rankeval"]
    parsers = {"rankeval trec_eval": lambda out: parse_trec_lines(out, TREC_PRINTED)}
    for name, argv in _rankeval_argv(prefix, qrels, run).items():
        tools.append(Tool(name, argv, parsers.get(name, lambda out: parse_trec_lines(out, ident)), is_all))
    if baseline is not None:
        path = f"{baseline}:{baseline / 'plugins'}"
        child = ["env", f"PYTHONPATH={path}", sys.executable, "-P", "-c", BASELINE_CHILD]
        for name, argv in _rankeval_argv(child, qrels, run).items():
            parse = parsers.get(name, lambda out: parse_trec_lines(out, ident))
            tools.append(Tool(f"{name} @baseline", argv, parse, is_all))
    floor = [sys.executable, "-c", "import numpy, pyarrow; print('AP\\t0')"]
    tools.append(Tool("floor: import numpy, pyarrow", floor, lambda out: {"floor": 0.0}))
    return tools, notes


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _best(tool: Tool) -> float:
    return min(tool.walls)


def report(tools: list[Tool]) -> None:
    """The table of times, the ratios and targets, and the values side by side."""
    ok = {t.name: t for t in tools if t.error is None and t.walls}
    rows = [
        [
            t.name,
            f"{_best(t):.3f}",
            f"{statistics.median(t.walls):.3f}",
            f"{min(CPU[tuple(t.argv)][1:]):.3f}",  # (the first is the warm-up's)
            f"{statistics.median(t.rss_mb):.0f}",
        ]
        for t in ok.values()
    ]
    print()
    print(_fmt_table(["command", "best wall s", "median wall s", "best CPU s", "median peak RSS MB"], rows))
    for t in tools:
        if t.error is not None:
            print(f"\n{t.name}: FAILED ({t.error})")

    print("\nratios (best times):")
    checks = [
        ("rankeval", "rankeval -j1", 1.0),
        ("rankeval", "ir_measures", 1.0),
        ("rankeval -j1", "ir_measures", None),
        ("rankeval trec_eval", "trec_eval", None),
        *((name, f"{name} @baseline", None) for name in ("rankeval", "rankeval -j1", "rankeval trec_eval")),
    ]
    for a, b, target in checks:
        if a in ok and b in ok:
            value = _best(ok[a]) / _best(ok[b])
            verdict = (
                ""
                if target is None
                else f"  (target <= {target:.2f}: {'PASS' if value <= target else 'FAIL'})"
            )
            print(f"  {a + ' / ' + b:<50} {value:6.3f}{verdict}")
    if "rankeval trec_eval" in ok:
        best = _best(ok["rankeval trec_eval"])
        beside = "; ".join(
            f"{name} {_best(ok[name]):.3f} s"
            for name in ("trec_eval", "floor: import numpy, pyarrow")
            if name in ok
        )
        verdict = "PASS" if best <= TARGET_TREC_EVAL_S else "FAIL"
        print(f"  rankeval trec_eval {best:.3f} s (target <= {TARGET_TREC_EVAL_S} s: {verdict}; {beside})")

    valued = [t for t in tools if t.values and not t.name.startswith("floor")]
    print("\naggregate values (from each command's warm-up run):")
    vrows = [[s, *(f"{t.values[s]:.4f}" if s in t.values else "-" for t in valued)] for s in SPECS]
    print(_fmt_table(["measure", *(t.name for t in valued)], vrows))
    disagree = [s for s in SPECS if len({round(t.values[s], 4) for t in valued if s in t.values}) > 1]
    print(
        f"\nWARNING: the commands disagree on {', '.join(disagree)}"
        if disagree
        else "\nall agree at 4 decimals."
    )


def _data(args: argparse.Namespace, tmp: Path) -> tuple[Path, Path]:
    """The qrels and run to time: the given (or default Robust03) files, a gzip run
    decompressed into *tmp*; a generated 100 x 1,000 run where they are missing."""
    qrels, run = args.qrels, args.run
    if not (qrels.exists() and run.exists()):
        print(f"{qrels} or {run} is missing: generating a run of 100 queries x 1,000 documents")
        return ensure_data(tmp, queries=100, depth=1000)
    if run.suffix == ".gz":
        plain = tmp / run.stem
        with gzip.open(run, "rb") as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        run = plain
    return qrels, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qrels", type=Path, default=DEFAULT_QRELS, help="qrels (default: Robust03's)")
    ap.add_argument(
        "--run", type=Path, default=DEFAULT_RUN, help="run, TREC text or .gz (default: input.InexpC2)"
    )
    ap.add_argument("--reps", type=int, default=5, help="timed runs of each command (default 5)")
    ap.add_argument("--trec-eval", type=Path, default=None, help="the trec_eval binary (default: see above)")
    ap.add_argument("--baseline", type=Path, default=None, help="also time rankeval from this checkout")
    args = ap.parse_args(argv)
    trec_eval = args.trec_eval
    if trec_eval is None:
        found = shutil.which("trec_eval")
        trec_eval = DEFAULT_TREC_EVAL if DEFAULT_TREC_EVAL.exists() else Path(found) if found else None
    with tempfile.TemporaryDirectory(prefix="rankeval-bench-small-") as name:
        # every command as an installed package runs: its bytecode compiled once (here, by the
        # warm-up run, into a temporary cache: nothing is written into the checkout)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(name) / "pycache")
        qrels, run = _data(args, Path(name))
        print(f"{_versions()}; load average {load_average()}")
        print(f"data: {qrels} ({count_lines(qrels):,} lines), {run} ({count_lines(run):,} lines)")
        tools, notes = build_tools(qrels, run, trec_eval, args.baseline)
        for note in notes:
            print(note)
        time_tools(tools, Path(name), args.reps)
        report(tools)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
