"""End-to-end benchmark: rankeval CLI vs ir_measures vs ranx vs trec_eval.

Each tool is run in a fresh child process (so the peak RSS is that tool's
alone), end to end: interpreter start-up, imports, parsing the TREC files,
evaluating and printing. Wall time is measured around the child; peak RSS is
the child's ``ru_maxrss`` read with ``os.wait4`` on its pid. One untimed
warm-up run per tool warms the page cache (and ranx's numba cache); then
``--reps`` timed runs are made, round-robin over the tools.

    python bench/run_bench.py --data /tmp/bench7m --reps 3
    python bench/run_bench.py --quick

See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
GENERATE = BENCH_DIR / "generate.py"
DEFAULT_MEASURES = "AP nDCG@10 RR R@1000"
ALL_TOOLS = ("rankeval", "ir_measures", "ranx", "trec_eval")

# Acceptance targets (on the ~7M-line MS MARCO dev shaped run), relative to ir_measures.
TARGET_TIME_RATIO = 0.15
TARGET_RSS_RATIO = 0.5

# --------------------------------------------------------------------------- #
# Child scripts. Each prints one "<spec>\t<value>" line per measure, where
# <spec> is the measure as given on --measures (so outputs line up).
# --------------------------------------------------------------------------- #

IR_MEASURES_CHILD = r"""
import sys
import ir_measures
qrels_path, run_path, *specs = sys.argv[1:]
measures = [ir_measures.parse_measure(s) for s in specs]
res = ir_measures.calc_aggregate(
    measures, ir_measures.read_trec_qrels(qrels_path), ir_measures.read_trec_run(run_path)
)
for spec, m in zip(specs, measures):
    print(f"{spec}\t{res[m]!r}")
"""

RANX_CHILD = r"""
import sys
from ranx import Qrels, Run, evaluate
qrels_path, run_path, *pairs = sys.argv[1:]
specs, names = pairs[0::2], pairs[1::2]
qrels = Qrels.from_file(qrels_path, kind="trec")
run = Run.from_file(run_path, kind="trec")
res = evaluate(qrels, run, names)
if not isinstance(res, dict):  # a single metric returns a bare float
    res = {names[0]: res}
for spec, name in zip(specs, names):
    print(f"{spec}\t{float(res[name])!r}")
"""

# --------------------------------------------------------------------------- #
# Measure-name translation (only the handful of measures this bench needs).
# --------------------------------------------------------------------------- #

_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z]+)(?:@(?P<k>\d+))?$")


def _split_spec(spec: str) -> tuple[str, str | None]:
    m = _SPEC_RE.match(spec)
    if not m:
        raise ValueError(f"cannot translate measure {spec!r} (only NAME or NAME@k)")
    return m["name"], m["k"]


def ranx_name(spec: str) -> str:
    name, k = _split_spec(spec)
    base = {"AP": "map", "nDCG": "ndcg", "RR": "mrr", "R": "recall", "P": "precision"}
    if name not in base:
        raise ValueError(f"no ranx equivalent for {spec!r}")
    return base[name] + (f"@{k}" if k else "")


def trec_eval_name(spec: str) -> tuple[str, str]:
    """Return (``-m`` argument, name printed in trec_eval's output)."""
    name, k = _split_spec(spec)
    if k is None:
        plain = {"AP": "map", "nDCG": "ndcg", "RR": "recip_rank", "Rprec": "Rprec"}
        if name not in plain:
            raise ValueError(f"no trec_eval equivalent for {spec!r}")
        return plain[name], plain[name]
    cut = {"AP": "map_cut", "nDCG": "ndcg_cut", "R": "recall", "P": "P"}
    if name not in cut:
        raise ValueError(f"no trec_eval equivalent for {spec!r}")
    return f"{cut[name]}.{k}", f"{cut[name]}_{k}"


def parse_trec_lines(stdout: str, name_to_spec: dict[str, str]) -> dict[str, float]:
    """Parse ``NAME all VALUE`` lines (trec_eval and rankeval's trec format)."""
    out: dict[str, float] = {}
    for line in stdout.splitlines():
        tok = line.split()
        if len(tok) >= 3 and tok[-2] == "all" and tok[0] in name_to_spec:
            try:
                out[name_to_spec[tok[0]]] = float(tok[-1])
            except ValueError:
                pass
    return out


def parse_tab_lines(stdout: str, specs: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in stdout.splitlines():
        spec, _, val = line.partition("\t")
        if spec in specs:
            try:
                out[spec] = float(val)
            except ValueError:
                pass
    return out


# --------------------------------------------------------------------------- #
# Tools
# --------------------------------------------------------------------------- #


@dataclass
class Tool:
    name: str
    argv: list[str]
    parse: Callable[[str], dict[str, float]]
    raw_filter: Callable[[str], bool] = lambda line: True
    walls: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    raw: list[str] = field(default_factory=list)
    error: str | None = None


def build_tools(wanted: list[str], qrels: Path, run: Path, specs: list[str]) -> tuple[list[Tool], list[str]]:
    tools: list[Tool] = []
    notes: list[str] = []
    py = sys.executable
    for name in wanted:
        try:
            if name == "rankeval":
                exe = Path(sys.executable).parent / "rankeval"
                if not exe.exists():
                    notes.append(f"rankeval: skipped ({exe} not found)")
                    continue
                argv = [str(exe), str(qrels), str(run)]
                for s in specs:
                    argv += ["-m", s]
                ident = {s: s for s in specs}
                tools.append(
                    Tool(
                        name,
                        argv,
                        lambda out, ident=ident: parse_trec_lines(out, ident),
                        lambda line: len(line.split()) >= 3 and line.split()[-2] == "all",
                    )
                )
            elif name == "ir_measures":
                if importlib.util.find_spec("ir_measures") is None:
                    notes.append("ir_measures: skipped (not installed)")
                    continue
                argv = [py, "-c", IR_MEASURES_CHILD, str(qrels), str(run), *specs]
                tools.append(Tool(name, argv, lambda out: parse_tab_lines(out, specs)))
            elif name == "ranx":
                if importlib.util.find_spec("ranx") is None:
                    notes.append("ranx: skipped (not installed)")
                    continue
                pairs: list[str] = []
                for s in specs:
                    pairs += [s, ranx_name(s)]
                argv = [py, "-c", RANX_CHILD, str(qrels), str(run), *pairs]
                tools.append(Tool(name, argv, lambda out: parse_tab_lines(out, specs)))
            elif name == "trec_eval":
                exe = shutil.which("trec_eval")
                if exe is None:
                    notes.append("trec_eval: skipped (no trec_eval binary on PATH)")
                    continue
                argv = [exe, "-c"]
                out_names: dict[str, str] = {}
                for s in specs:
                    arg, printed = trec_eval_name(s)
                    argv += ["-m", arg]
                    out_names[printed] = s
                argv += [str(qrels), str(run)]
                tools.append(
                    Tool(
                        name,
                        argv,
                        lambda out, m=out_names: parse_trec_lines(out, m),
                        lambda line, m=out_names: bool(line.split()) and line.split()[0] in m,
                    )
                )
        except ValueError as exc:
            notes.append(f"{name}: skipped ({exc})")
    return tools, notes


BASELINE_CHILD = "import sys; sys.argv[0] = 'rankeval'; from rankeval.cli import main; main()"


def baseline_tool(checkout: Path, qrels: Path, run: Path, specs: list[str]) -> Tool:
    """rankeval from another checkout (e.g. ``git worktree add /tmp/base COMMIT``), run by this
    interpreter with that checkout first on the path (``python -P``: nothing else prepended),
    so that a change is timed against its baseline in the same run."""
    path = f"{checkout}:{checkout / 'plugins'}"
    argv = ["env", f"PYTHONPATH={path}", sys.executable, "-P", "-c", BASELINE_CHILD, str(qrels), str(run)]
    for s in specs:
        argv += ["-m", s]
    ident = {s: s for s in specs}
    return Tool(
        "rankeval@baseline",
        argv,
        lambda out: parse_trec_lines(out, ident),
        lambda line: len(line.split()) >= 3 and line.split()[-2] == "all",
    )


# --------------------------------------------------------------------------- #
# Running one child
# --------------------------------------------------------------------------- #


def _maxrss_mb(ru_maxrss: int) -> float:
    # Linux reports KiB, macOS bytes.
    return ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else ru_maxrss / 1024


def run_child(argv: list[str], cwd: Path) -> tuple[float, float, int, str, str]:
    """Run *argv* to completion; return (wall s, peak RSS MB, exit code, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it was reaped
        out.seek(0)
        err.seek(0)
        return (
            wall,
            _maxrss_mb(rusage.ru_maxrss),
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def run_once(tool: Tool, cwd: Path, timed: bool) -> None:
    wall, rss, rc, stdout, stderr = run_child(tool.argv, cwd)
    if rc != 0:
        tail = "\n".join((stderr.strip() or stdout.strip()).splitlines()[-15:])
        tool.error = f"exit code {rc}:\n{tail}"
        return
    if timed:
        tool.walls.append(wall)
        tool.rss_mb.append(rss)
    else:
        tool.values = tool.parse(stdout)
        tool.raw = [ln.rstrip() for ln in stdout.splitlines() if ln.strip() and tool.raw_filter(ln)]
        if not tool.values:
            tool.error = "could not parse any measure values from stdout:\n" + stdout[-2000:]
    print(f"  {tool.name:<12} {'rep ' if timed else 'warm-up'} {wall:8.2f} s  {rss:8.1f} MB", flush=True)


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def ensure_data(data: Path, queries: int | None = None, depth: int | None = None) -> tuple[Path, Path]:
    qrels, run = data / "qrels.txt", data / "run.txt"
    if not (qrels.exists() and run.exists()):
        cmd = [sys.executable, str(GENERATE), "--out", str(data)]
        if queries is not None:
            cmd += ["--queries", str(queries)]
        if depth is not None:
            cmd += ["--depth", str(depth)]
        print("generating data:", " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    return qrels, run


def count_lines(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 24), b""):
            n += chunk.count(b"\n")
    return n


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def _fmt_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def print_timings(tools: list[Tool]) -> dict[str, tuple[float, float]]:
    """Print the table of median wall time and peak RSS of each tool that ran, with the ratios
    to ir_measures, trec_eval and a baseline checkout, and the tools that failed; return the medians by tool."""
    ok = [t for t in tools if t.error is None and t.walls]
    med = {t.name: (statistics.median(t.walls), statistics.median(t.rss_mb)) for t in ok}
    refs = [r for r in ("ir_measures", "trec_eval", "rankeval@baseline") if r in med]

    header = ["tool", "median wall s", "min wall s", "median peak RSS MB"]
    for r in refs:
        header += [f"time/{r}", f"RSS/{r}"]
    rows = []
    for t in ok:
        w, m = med[t.name]
        row = [t.name, f"{w:.2f}", f"{min(t.walls):.2f}", f"{m:.1f}"]
        for r in refs:
            rw, rm = med[r]
            row += [f"{w / rw:.3f}x", f"{m / rm:.3f}x"]
        rows.append(row)
    print()
    print(_fmt_table(header, rows))
    for t in tools:
        if t.error is not None:
            print(f"\n{t.name}: FAILED ({t.error})")
    return med


def report(tools: list[Tool], specs: list[str], quick: bool) -> None:
    ok = [t for t in tools if t.error is None and t.walls]
    by = {t.name: t for t in ok}
    med = print_timings(tools)
    if "ranx" in by:
        print(
            "\nnote: ranx times are end to end as-is, including numba JIT compilation/cache "
            "loading in each fresh process (the warm-up run populates numba's on-disk cache)."
        )

    # Values, one column per tool, so agreement is visible.
    print("\naggregate values (from each tool's warm-up run):")
    vt = [t for t in tools if t.values]
    vrows = [[s, *(f"{t.values[s]:.4f}" if s in t.values else "-" for t in vt)] for s in specs]
    print(_fmt_table(["measure", *(t.name for t in vt)], vrows))
    for t in vt:
        print(f"\n  raw {t.name} output:")
        for ln in t.raw[:20]:
            print(f"    {ln}")
    disagree = [s for s in specs if len({round(t.values[s], 4) for t in vt if s in t.values}) > 1]
    if disagree:
        print(f"\nWARNING: tools disagree (at 4 decimals) on: {', '.join(disagree)}")
    else:
        print("\nall tools agree at 4 decimals.")

    if "rankeval" in by and "ir_measures" in by:
        tr = med["rankeval"][0] / med["ir_measures"][0]
        rr = med["rankeval"][1] / med["ir_measures"][1]
        label = " (quick data: targets apply to the 7M-line run only)" if quick else ""
        print(f"\nacceptance targets vs ir_measures{label}:")
        print(
            f"  wall     {tr:.3f}x  (target <= {TARGET_TIME_RATIO}x)  "
            f"{'PASS' if tr <= TARGET_TIME_RATIO else 'FAIL'}"
        )
        print(
            f"  peak RSS {rr:.3f}x  (target <= {TARGET_RSS_RATIO}x)  "
            f"{'PASS' if rr <= TARGET_RSS_RATIO else 'FAIL'}"
        )


def _versions() -> str:
    parts = [f"python {platform.python_version()}"]
    for mod in ("rankeval", "ir_measures", "ranx", "numba", "numpy", "pandas"):
        try:
            from importlib.metadata import version

            dist = {"rankeval": "rankeval-ir"}.get(mod, mod)
            parts.append(f"{mod} {version(dist)}")
        except Exception:
            pass
    return ", ".join(parts)


# --------------------------------------------------------------------------- #


@contextlib.contextmanager
def bench_data(quick: bool, data_dir: Path) -> Iterator[tuple[Path, Path, Path]]:
    """``(data dir, qrels, run)``: a small generated set in a temporary directory (``--quick``)
    or *data_dir*'s files (generated if missing); prints their size."""
    tmp = tempfile.TemporaryDirectory(prefix="rankeval-bench-") if quick else None
    try:
        if tmp is not None:
            data = Path(tmp.name)
            qrels, run = ensure_data(data, queries=500, depth=100)
        else:
            data = data_dir.resolve()
            qrels, run = ensure_data(data)
        print(
            f"data: {data}  (qrels {count_lines(qrels):,} lines, run {count_lines(run):,} lines, "
            f"{run.stat().st_size / 1e6:.0f} MB)"
        )
        yield data, qrels, run
    finally:
        if tmp is not None:
            tmp.cleanup()


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def time_tools(tools: list[Tool], data: Path, reps: int) -> None:
    """One warm-up run of each tool (page cache; a failing tool is dropped), then *reps* timed
    runs of each."""
    print("\nwarm-up (page cache; not counted):")
    for t in tools:
        run_once(t, data, timed=False)
        if t.error:
            print(f"  {t.name:<12} FAILED, skipping: {t.error.splitlines()[0]}")
    for i in range(reps):
        print(f"rep {i + 1}/{reps}:")
        for t in tools:
            if t.error is None:
                run_once(t, data, timed=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data",
        type=Path,
        default=BENCH_DIR / "out",
        help="dir with qrels.txt and run.txt (generated there if missing; default bench/out)",
    )
    ap.add_argument("--reps", type=int, default=None, help="timed reps per tool (default 3; 1 with --quick)")
    ap.add_argument(
        "--tools",
        nargs="+",
        choices=ALL_TOOLS,
        default=list(ALL_TOOLS),
        help="tools to run (default: all available)",
    )
    ap.add_argument(
        "--measures",
        nargs="+",
        default=[DEFAULT_MEASURES],
        help=f"measures, space separated (default {DEFAULT_MEASURES!r})",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke test on a small generated dataset (500 queries x 100 docs) in a temp dir",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time rankeval from the checkout DIR (e.g. a git worktree of an older commit)",
    )
    args = ap.parse_args(argv)

    specs = [s for chunk in args.measures for s in chunk.split()]
    reps = args.reps if args.reps is not None else (1 if args.quick else 3)
    if reps < 1:
        ap.error("--reps must be >= 1")

    with bench_data(args.quick, args.data) as (data, qrels, run):
        print(
            f"measures: {' '.join(specs)}   reps: {reps} (+1 warm-up)   cpus: {os.cpu_count()}   "
            f"load avg: {load_average()}"
        )
        print(_versions())

        tools, notes = build_tools(args.tools, qrels, run, specs)
        if args.baseline is not None:
            tools.append(baseline_tool(args.baseline.resolve(), qrels, run, specs))
        for n in notes:
            print(n)
        if not tools:
            print("no tools to run")
            return 1
        time_tools(tools, data, reps)
        report(tools, specs, args.quick)
        return 0

if __name__ == "__main__":
    sys.exit(main())
