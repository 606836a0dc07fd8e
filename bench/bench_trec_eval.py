"""Benchmark: ``rankeval trec_eval -m official`` vs ir_measures on the same measure set.

Times ``rankeval trec_eval -m official QRELS RUN`` (trec_eval 9.0.8's command
line) against ir_measures computing, with ``calc_aggregate`` and its own TREC
readers, the measures that trec_eval's ``official`` nickname prints, in
ir_measures' names: NumRet, NumRel(rel=1), NumRelRet, AP, Rprec, Bpref, RR,
IPrec@0.0 ... IPrec@1.0 and P@5,10,15,20,30,100,200,500,1000. ``gm_map``,
``runid`` and ``num_q`` have no ir_measures equivalent and are left out of the
ir_measures side. A ``trec_eval`` binary on PATH is timed too.

Each tool runs in a fresh child process (the helpers of ``run_bench.py``): one
untimed warm-up, then ``--reps`` timed runs round-robin; wall time around the
child, peak RSS from ``os.wait4``. The shared measures' aggregate values are
compared at 4 decimals.

    python bench/bench_trec_eval.py --data /tmp/bench7m --reps 3
    python bench/bench_trec_eval.py --quick
    python bench/bench_trec_eval.py --quick --trec-measures P.5,10 map

See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_bench import (
    BENCH_DIR,
    IR_MEASURES_CHILD,
    Tool,
    _fmt_table,
    _versions,
    bench_data,
    load_average,
    parse_tab_lines,
    parse_trec_lines,
    print_timings,
    time_tools,
)

# Acceptance targets (issue), on the ~7M-line run, relative to ir_measures.
TARGET_TIME_RATIO = 0.25
TARGET_RSS_RATIO = 0.6

# --------------------------------------------------------------------------- #
# trec_eval measures -> ir_measures measures
# --------------------------------------------------------------------------- #

#: Measures without parameters: trec_eval's printed name -> ir_measures spec (None: no equivalent).
PLAIN: dict[str, str | None] = {
    "runid": None,
    "num_q": None,
    "num_ret": "NumRet",
    "num_rel": "NumRel(rel=1)",
    "num_rel_ret": "NumRelRet",
    "map": "AP",
    "gm_map": None,
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "recip_rank": "RR",
    "ndcg": "nDCG",
}
_CUTOFFS = ("5", "10", "15", "20", "30", "100", "200", "500", "1000")
#: Measures with a parameter list (``-m NAME.p1,p2``): (trec_eval printed name, ir_measures spec, defaults).
PARAMETRIC: dict[str, tuple] = {
    "P": (lambda p: f"P_{int(p)}", lambda p: f"P@{int(p)}", _CUTOFFS),
    "recall": (lambda p: f"recall_{int(p)}", lambda p: f"R@{int(p)}", _CUTOFFS),
    "ndcg_cut": (lambda p: f"ndcg_cut_{int(p)}", lambda p: f"nDCG@{int(p)}", _CUTOFFS),
    "map_cut": (lambda p: f"map_cut_{int(p)}", lambda p: f"AP@{int(p)}", _CUTOFFS),
    "iprec_at_recall": (
        lambda p: f"iprec_at_recall_{float(p):.2f}",
        lambda p: f"IPrec@{float(p):.1f}",
        tuple(f"{i / 10:.1f}" for i in range(11)),
    ),
}
#: trec_eval 9.0.8's ``official`` nickname, in its output order.
OFFICIAL = [
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
]


def expand(trec_measures: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Expand ``-m`` arguments into (trec_eval printed name, ir_measures spec or None) pairs.

    Returns the pairs and the arguments this bench does not know (they are still
    passed to rankeval, but not compared).
    """
    pairs: list[tuple[str, str | None]] = []
    unknown: list[str] = []
    for arg in trec_measures:
        names = OFFICIAL if arg == "official" else [arg]
        for name in names:
            base, _, params = name.partition(".")
            if base in PLAIN and not params:
                pairs.append((base, PLAIN[base]))
            elif base in PARAMETRIC:
                trec_fmt, irm_fmt, defaults = PARAMETRIC[base]
                try:
                    pairs += [(trec_fmt(p), irm_fmt(p)) for p in (params.split(",") if params else defaults)]
                except ValueError:
                    unknown.append(name)
            else:
                unknown.append(name)
    seen: set[str] = set()
    return [p for p in pairs if not (p[0] in seen or seen.add(p[0]))], unknown


# --------------------------------------------------------------------------- #
# Tools
# --------------------------------------------------------------------------- #


def build_tools(
    qrels: Path, run: Path, trec_measures: list[str], pairs: list[tuple[str, str | None]]
) -> tuple[list[Tool], list[str]]:
    tools: list[Tool] = []
    notes: list[str] = []
    m_args = [a for m in trec_measures for a in ("-m", m)]
    trec_names = {t: t for t, _ in pairs}

    def trec_tool(name: str, command: list[str]) -> Tool:
        argv = [*command, *m_args, str(qrels), str(run)]
        return Tool(name, argv, lambda out: parse_trec_lines(out, trec_names))

    exe = Path(sys.executable).parent / "rankeval"
    if exe.exists():
        tools.append(trec_tool("rankeval", [str(exe), "trec_eval"]))
    else:
        notes.append(f"rankeval: skipped ({exe} not found)")

    irm_specs = [s for _, s in pairs if s is not None]
    if importlib.util.find_spec("ir_measures") is None:
        notes.append("ir_measures: skipped (not installed)")
    elif not irm_specs:
        notes.append("ir_measures: skipped (none of the measures has an ir_measures equivalent)")
    else:
        argv = [sys.executable, "-c", IR_MEASURES_CHILD, str(qrels), str(run), *irm_specs]
        tools.append(Tool("ir_measures", argv, lambda out: parse_tab_lines(out, irm_specs)))

    te = shutil.which("trec_eval")
    if te is None:
        notes.append("trec_eval: skipped (no trec_eval binary on PATH)")
    else:
        tools.append(trec_tool("trec_eval", [te]))
    return tools, notes


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def _fmt_value(trec_name: str, v: float) -> str:
    return str(round(v)) if trec_name.startswith("num_") else f"{v:.4f}"


def report(tools: list[Tool], pairs: list[tuple[str, str | None]], quick: bool) -> bool:
    """Print the timing table and the value comparison; return True if the values agree."""
    med = print_timings(tools)

    # Values: rankeval / trec_eval report trec_eval names, ir_measures its own specs.
    by = {t.name: t for t in tools if t.values}
    print("\naggregate values (from each tool's warm-up run):")
    cols = [n for n in ("rankeval", "ir_measures", "trec_eval") if n in by]
    vrows: list[list[str]] = []
    diffs: list[str] = []
    for trec_name, spec in pairs:
        vals: dict[str, str] = {}
        for n in cols:
            key = spec if n == "ir_measures" else trec_name
            if key is not None and key in by[n].values:
                vals[n] = _fmt_value(trec_name, by[n].values[key])
            elif n != "ir_measures":  # non-numeric, e.g. runid: show the printed token
                tok = [ln.split() for ln in by[n].raw if ln.split()[:1] == [trec_name]]
                if tok:
                    vals[n] = tok[0][-1]
        if spec is not None and len(set(vals.values())) > 1:
            diffs.append(f"{trec_name} / {spec}: " + ", ".join(f"{n} {v}" for n, v in vals.items()))
        vrows.append([trec_name, spec or "(none)", *(vals.get(n, "-") for n in cols)])
    print(_fmt_table(["trec_eval name", "ir_measures", *cols], vrows))
    missing = [t for t, s in pairs if s is None]
    if missing:
        print(
            f"\nno ir_measures equivalent (left out of the ir_measures side; rankeval still "
            f"computes and prints them): {', '.join(missing)}"
        )
    agree = not diffs
    if len(cols) < 2:
        print("\nvalues not compared (fewer than two tools produced values).")
    elif diffs:
        print("\nWARNING: tools disagree at 4 decimals on:")
        for d in diffs:
            print(f"  {d}")
    else:
        n_shared = sum(1 for _, s in pairs if s is not None)
        print(f"\nall {n_shared} shared measures agree at 4 decimals ({', '.join(cols)}).")

    if "rankeval" in med and "ir_measures" in med:
        tr = med["rankeval"][0] / med["ir_measures"][0]
        rr = med["rankeval"][1] / med["ir_measures"][1]
        label = " (quick data: targets apply to the 7M-line run only)" if quick else ""
        print(f"\nacceptance targets vs ir_measures{label}:")
        print(
            f"  wall     {tr:.3f}x  (target <= {TARGET_TIME_RATIO}x)  {'PASS' if tr <= TARGET_TIME_RATIO else 'FAIL'}"
        )
        print(
            f"  peak RSS {rr:.3f}x  (target <= {TARGET_RSS_RATIO}x)  {'PASS' if rr <= TARGET_RSS_RATIO else 'FAIL'}"
        )
    return agree


# --------------------------------------------------------------------------- #


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
        "--trec-measures",
        nargs="+",
        default=["official"],
        metavar="M",
        help="trec_eval -m arguments (default: official), e.g. --trec-measures P.5,10 map",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke test on a small generated dataset (500 queries x 100 docs) in a temp dir",
    )
    args = ap.parse_args(argv)
    reps = args.reps if args.reps is not None else (1 if args.quick else 3)
    if reps < 1:
        ap.error("--reps must be >= 1")
    pairs, unknown = expand(args.trec_measures)

    with bench_data(args.quick, args.data) as (data, qrels, run):
        load = load_average()
        print(
            f"trec_eval measures: -m {' -m '.join(args.trec_measures)}   reps: {reps} (+1 warm-up)   "
            f"cpus: {os.cpu_count()}   load avg: {load}"
        )
        print(f"ir_measures measures: {' '.join(s for _, s in pairs if s is not None)}")
        if unknown:
            print(f"not known to this bench (passed to rankeval, not compared): {', '.join(unknown)}")
        print(_versions())

        tools, notes = build_tools(qrels, run, args.trec_measures, pairs)
        for n in notes:
            print(n)
        if not tools:
            print("no tools to run")
            return 1
        for t in tools:
            print(f"  {t.name}: {' '.join(a if len(a) < 200 else '<script>' for a in t.argv)}")

        time_tools(tools, data, reps)
        agree = report(tools, pairs, args.quick)
        return 0 if agree and all(t.error is None for t in tools) else 1


if __name__ == "__main__":
    sys.exit(main())
