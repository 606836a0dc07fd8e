"""The cost of ``--ties expected`` (issue 27): its time against ``--ties trec_eval`` on the
same run, without ties and with many.

    python bench/bench_ties.py                       # /tmp/bench7m: 7M lines (a few minutes)
    python bench/bench_ties.py --data /tmp/s1m --queries 1000 --reps 1   # smoke test

The run (``--data DIR``: ``qrels.txt`` and ``run.txt``, made with ``generate.py`` if missing;
its scores have six decimals and almost no ties) is also written with every score rounded to
one decimal (``run-ties.txt``, made once): most documents of a query then share their score
with others. Each file is evaluated by ``rankeval QRELS RUN -m AP -m nDCG@10 -m P@10 -m RR
-m R@100 --jobs 1 --quiet-ties`` with ``--ties trec_eval``, ``expected`` and ``given``, each
in a fresh process (``run_measured`` of ``bench_blocks.py``; best of ``--reps``, round-robin),
and prints the wall times, peak RSS and the ratios the issue asks about: ``expected`` over
``trec_eval`` on each run (targets: 1.2 without ties, 2 with many). It also checks that on the
run without ties ``expected`` prints what ``trec_eval`` prints. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench_blocks import RANKEVAL, run_measured
from run_bench import count_lines, ensure_data, load_average

MEASURES = ["-m", "AP", "-m", "nDCG@10", "-m", "P@10", "-m", "RR", "-m", "R@100"]
RULES = ("trec_eval", "expected", "given")


def rounded(run: Path, out: Path, decimals: int) -> None:
    """Write *run* with every score rounded to *decimals* decimals (line by line)."""
    tmp = out.with_suffix(".part")
    with run.open() as src, tmp.open("w") as dst:
        for line in src:
            q, it, doc, rank, score, tag = line.split()
            dst.write(f"{q} {it} {doc} {rank} {float(score):.{decimals}f} {tag}\n")
    tmp.rename(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/tmp/bench7m"))
    parser.add_argument("--queries", type=int, default=7000, help="for generate.py, if the data is missing")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)

    qrels, run = ensure_data(args.data, args.queries)
    tied = args.data / "run-ties.txt"
    if not tied.exists():
        t0 = time.perf_counter()
        rounded(run, tied, 1)
        print(f"wrote {tied} in {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"run: {run} ({count_lines(run):,} lines); load average {load_average()}", flush=True)
    files = {"no ties": run, "many ties": tied}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    outputs: dict[tuple[str, str], str] = {}
    for rep in range(args.reps):
        for label, path in files.items():
            for rule in RULES:
                argv_ = [RANKEVAL, str(qrels), f"run={path}", *MEASURES, "--jobs", "1", "--quiet-ties", "--ties", rule]
                r = run_measured(argv_)
                if r.rc != 0:
                    print(f"{label} {rule}: exit {r.rc}\n{r.stderr}", file=sys.stderr)
                    return 1
                outputs[(label, rule)] = r.stdout
                old = best.get((label, rule))
                if old is None or r.wall < old[0]:
                    best[(label, rule)] = (r.wall, r.maxrss_mb)
                print(f"  rep {rep + 1}: {label:9} --ties {rule:9} {r.wall:6.2f} s {r.maxrss_mb:7.1f} MB", flush=True)
    print("\nbest of", args.reps)
    print(f"{'run':10} {'rule':10} {'wall s':>8} {'RSS MB':>8} {'vs trec_eval':>13}")
    for label in files:
        base = best[(label, "trec_eval")][0]
        for rule in RULES:
            wall, rss = best[(label, rule)]
            print(f"{label:10} {rule:10} {wall:8.2f} {rss:8.1f} {wall / base:12.2f}x")
    same = outputs[("no ties", "expected")] == outputs[("no ties", "trec_eval")]
    print(f"\nwithout ties, expected prints what trec_eval prints: {same}")
    for label, target in (("no ties", 1.2), ("many ties", 2.0)):
        ratio = best[(label, "expected")][0] / best[(label, "trec_eval")][0]
        print(f"{label}: expected / trec_eval = {ratio:.2f} (target <= {target}: {'PASS' if ratio <= target else 'FAIL'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
