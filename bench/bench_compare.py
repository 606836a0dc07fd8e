"""`rankeval compare` on 17 runs x 100 queries x 4 measures with 10,000 bootstrap samples.

    python bench/bench_compare.py                      # generates the data into bench/out/compare
    python bench/bench_compare.py --reps 3 --pairs all

Generates (seeded) a qrels file (100 queries, 200 judged documents each, graded 0-3) and 17
synthetic runs of 1,000 documents per query whose scores follow the relevance grades more or
less closely (so that some differences are significant), then times, in fresh processes,

    rankeval compare QRELS RUN x17 -m "AP(rel=2)" -m nDCG@10 -m "RR(rel=2)" -m "R(rel=2)@1000"
        --test bootstrap --samples 10000 --ci bootstrap --correction holm -f latex

end to end (start-up, reading 1.7M run lines, evaluation, 64 bootstrap tests and intervals,
output), median of --reps after one warm-up run. Acceptance target (docs: compare.md): < 30 s on the
2-core machine. It also prints where the time goes, measured in this process.

    python bench/bench_compare.py --large /tmp/bench7m --reps 3

instead times, on a large run given twice (``DIR/run.txt`` as ``a=`` and ``b=``, qrels
``DIR/qrels.txt``), ``rankeval QRELS a=RUN b=RUN -m AP -m nDCG@10`` against ``rankeval compare``
with the same arguments (statistics included: the t-test and t intervals), wall and peak RSS
(the child's ru_maxrss), median of --reps, and prints compare's ratios to evaluate's. Targets
(issue 26): compare at most 1.1x evaluate's peak RSS and 1.2x its wall.
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

MEASURES = ["AP(rel=2)", "nDCG@10", "RR(rel=2)", "R(rel=2)@1000"]


def generate(out: Path, runs: int, queries: int, docs: int, judged: int, seed: int = 6) -> list[Path]:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    grades = rng.choice([0, 1, 2, 3], p=[0.7, 0.15, 0.1, 0.05], size=(queries, judged))
    with (out / "qrels.txt").open("w") as fh:
        for q in range(queries):
            fh.writelines(f"q{q} 0 d{d} {grades[q, d]}\n" for d in range(judged))
    paths = []
    for r in range(runs):
        skill = 0.3 + 0.05 * r  # later runs follow the grades more closely
        path = out / f"run{r:02d}.txt"
        with path.open("w") as fh:
            for q in range(queries):
                ids = rng.choice(docs * 2, size=docs, replace=False)  # judged ids are d0..d199
                rel = np.where(ids < judged, grades[q, np.minimum(ids, judged - 1)], 0)
                score = skill * rel + rng.normal(size=docs)
                fh.writelines(f"q{q} Q0 d{i} 0 {s:.6f} run{r:02d}\n" for i, s in zip(ids, score, strict=True))
        paths.append(path)
    return paths


def timed(args: list[str], reps: int) -> tuple[float, float, str]:
    exe = str(Path(sys.executable).with_name("rankeval"))
    walls, rss, output = [], [], ""
    for i in range(reps + 1):  # the first run warms the page cache and is not counted
        start = time.perf_counter()
        proc = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        text = proc.stdout.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            raise SystemExit(f"failed: rankeval {' '.join(args)}")
        if i:
            walls.append(time.perf_counter() - start)
            rss.append(usage.ru_maxrss / 1024)
        output = text
    return statistics.median(walls), statistics.median(rss), output


def breakdown(qrels: Path, runs: list[Path], samples: int, pairs: str) -> None:
    import rankeval

    start = time.perf_counter()
    q = rankeval.Qrels.read(qrels)
    r = [rankeval.Run.read(p) for p in runs]
    read = time.perf_counter() - start
    evaluator = rankeval.Evaluator(q, MEASURES)
    start = time.perf_counter()
    evaluator.results(r)
    evaluation = time.perf_counter() - start
    start = time.perf_counter()
    stats = rankeval.CompareOptions(
        test="bootstrap", samples=samples, ci="bootstrap", correction="holm", pairs=pairs
    )
    evaluator.compare(r, stats=stats)
    total = time.perf_counter() - start
    print(
        f"in process: reading {read:.2f} s, evaluation {evaluation:.2f} s, statistics {total - evaluation:.2f} s"
    )


def versus_evaluate(directory: Path, reps: int, extra: list[str]) -> None:
    """``rankeval compare`` against ``rankeval`` (evaluate) on ``DIR/run.txt`` given twice."""
    run, qrels = directory / "run.txt", directory / "qrels.txt"
    args = [str(qrels), f"a={run}", f"b={run}", "-m", "AP", "-m", "nDCG@10", *extra]
    lines = sum(1 for _ in run.open("rb"))
    print(
        f"{run}: {lines:,} lines, given twice; -m AP -m nDCG@10 {' '.join(extra)}; "
        f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; median of {reps} after a warm-up"
    )
    figures = {}
    for label, cmd in (("evaluate", args), ("compare", ["compare", *args])):
        wall, rss, _ = timed(cmd, reps)
        figures[label] = (wall, rss)
        print(f"rankeval {' '.join(cmd)}\n  {label}: wall {wall:.2f} s, peak RSS {rss:.0f} MB")
    (ew, er), (cw, cr) = figures["evaluate"], figures["compare"]
    print(
        f"compare / evaluate: wall {cw / ew:.2f}x (target <= 1.2: {'PASS' if cw <= 1.2 * ew else 'FAIL'}), "
        f"peak RSS {cr / er:.2f}x (target <= 1.1: {'PASS' if cr <= 1.1 * er else 'FAIL'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out/compare"))
    parser.add_argument("--runs", type=int, default=17)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--pairs", choices=["baseline", "all"], default="baseline")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--large",
        type=Path,
        metavar="DIR",
        help="time compare against evaluate on DIR/run.txt given twice (qrels DIR/qrels.txt) instead",
    )
    parser.add_argument("--jobs", help="with --large: --jobs of both commands (default: theirs)")
    args = parser.parse_args()
    if args.large is not None:
        versus_evaluate(args.large, args.reps, [] if args.jobs is None else ["--jobs", args.jobs])
        return
    runs = sorted(args.out.glob("run*.txt"))
    if len(runs) != args.runs or not (args.out / "qrels.txt").exists():
        runs = generate(args.out, args.runs, args.queries, args.docs, 200)
    qrels = args.out / "qrels.txt"
    cmd = [
        "compare",
        str(qrels),
        *map(str, runs),
        *[x for m in MEASURES for x in ("-m", m)],
        "--test",
        "bootstrap",
        "--samples",
        str(args.samples),
        "--ci",
        "bootstrap",
        "--correction",
        "holm",
        "--pairs",
        args.pairs,
        "-f",
        "latex",
    ]
    lines = sum(1 for p in runs for _ in p.open())
    print(
        f"{len(runs)} runs x {args.queries} queries ({lines:,} run lines) x {len(MEASURES)} measures, "
        f"{args.samples:,} bootstrap samples, pairs={args.pairs}; load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores"
    )
    wall, rss, output = timed(cmd, args.reps)
    print(output.splitlines()[6] if len(output.splitlines()) > 6 else output)
    print(f"rankeval compare: median wall {wall:.2f} s over {args.reps} reps, peak RSS {rss:.0f} MB")
    print(f"target < 30 s: {'PASS' if wall < 30 else 'FAIL'}")
    breakdown(qrels, runs, args.samples, args.pairs)


if __name__ == "__main__":
    main()
