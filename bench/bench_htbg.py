"""hTBG on a large nested run vs AP on a flat run of the same number of lines.

    python bench/bench_htbg.py --queries 100 --individuals 1000 --children 100 --out /tmp/bench_htbg

Generates (seeded) a nested qrels/run pair (every individual judged 0/1, every child judged
with a stopping probability and cost=) and a flat run with the same number of lines (plus
qrels with the same number of judged items), then times `rankeval ... -m hTBG@h=3h` and
`rankeval ... -m AP` end to end in fresh processes (median of --reps) and prints the ratio.
Target: hTBG time <= 1.5 x AP time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def generate(out: Path, queries: int, individuals: int, children: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "nested.qrels").open("w") as qf, (out / "nested.run").open("w") as rf:
        for q in range(queries):
            ind_scores = rng.random(individuals)
            rels = rng.random(individuals) < 0.2
            q_lines, r_lines = [], []
            for i in range(individuals):
                q_lines.append(f"q{q} 0 u{i} {int(rels[i])}\n")
                r_lines.append(f"q{q} Q0 u{i} 0 {ind_scores[i]:.6f} bench\n")
                stops = np.where(rng.random(children) < 0.1, rng.random(children).round(3), 0.0)
                costs = rng.integers(5, 500, children)
                scores = rng.random(children)
                q_lines.extend(f"q{q} 0 u{i}/p{c} {stops[c]:g} cost={costs[c]}\n" for c in range(children))
                r_lines.extend(f"q{q} Q0 u{i}/p{c} 0 {scores[c]:.6f} bench\n" for c in range(children))
            qf.writelines(q_lines)
            rf.writelines(r_lines)
    per_query = individuals * (children + 1)
    with (out / "flat.qrels").open("w") as qf, (out / "flat.run").open("w") as rf:
        for q in range(queries):
            rels = rng.random(per_query) < 0.02
            qf.writelines(f"q{q} 0 d{d} {int(rels[d])}\n" for d in range(per_query))
            scores = rng.random(per_query)
            rf.writelines(f"q{q} Q0 d{d} 0 {scores[d]:.6f} bench\n" for d in range(per_query))


def timed(args: list[str], reps: int) -> tuple[float, float]:
    exe = str(Path(sys.executable).with_name("rankeval"))
    walls, rss = [], []
    for _ in range(reps + 1):  # the first run warms the page cache and is not counted
        start = time.perf_counter()
        proc = subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        rss.append(usage.ru_maxrss / 1024)
        if status != 0:
            raise SystemExit(f"failed: rankeval {' '.join(args)}")
    return statistics.median(walls[1:]), statistics.median(rss[1:])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out/htbg"))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--individuals", type=int, default=1000)
    parser.add_argument("--children", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if not (args.out / "nested.run").exists():
        generate(args.out, args.queries, args.individuals, args.children)
    o = args.out
    lines = sum(1 for _ in (o / "nested.run").open())
    htbg = timed([str(o / "nested.qrels"), str(o / "nested.run"), "-m", "hTBG@h=3h"], args.reps)
    ap = timed([str(o / "flat.qrels"), str(o / "flat.run"), "-m", "AP"], args.reps)
    print(f"run lines: {lines:,}")
    print(f"hTBG@h=3h nested: median {htbg[0]:.2f} s, peak RSS {htbg[1]:.0f} MB")
    print(f"AP flat:          median {ap[0]:.2f} s, peak RSS {ap[1]:.0f} MB")
    ratio = htbg[0] / ap[0]
    print(f"hTBG / AP time: {ratio:.2f}x (target <= 1.5x) {'PASS' if ratio <= 1.5 else 'FAIL'}")


if __name__ == "__main__":
    main()
