"""hTBG end to end: the hTBG reference's JSON format, the same collection as nested TREC files,
qrels with and without attributes, and hTBG on a large nested run vs AP on a flat one.

    python bench/bench_htbg.py --out /tmp/bench_htbg --baseline /tmp/rankeval-base
    python bench/bench_htbg.py --out /tmp/bench_htbg --skip-scale          # reference part only

Reference part (issue 15): generates (seeded) the reference's JSON collection — 1 query x
10,000 individuals x 100 posts: ``truth.json`` ``{q: {individual: [label, {post: [stop,
words]}]}}`` and ``prediction.json`` — and the same collection as nested TREC files
(``nested.qrels``: ``q1 0 u5 1`` and ``q1 0 u5/p3 0.2 cost=56``; ``nested.run``), plus
``plain.qrels`` (the same lines without ``cost=``). Then times, in fresh processes (one
untimed warm-up, then the median of ``--reps``):

* ``rankeval truth.json prediction.json -m hTBG@h=3h`` and the same on the TREC files;
* ``Qrels.read`` of ``nested.qrels`` and of ``plain.qrels`` (the reader alone, in a fresh
  process; the clock starts after the imports), and ``-m P@10`` end to end with each;

with this checkout (``python -m rankeval.cli`` with ``PYTHONPATH`` on it; ``--current DIR``
times another) and, with ``--baseline DIR``, with an older checkout the same way (e.g. ``git
worktree add /tmp/rankeval-base ba4cbc0``), so that every ratio comes from one run on one
machine. The outputs (``-q -p 17``) of both checkouts, and of JSON vs TREC, are compared too.
Targets: JSON <= 0.25 x baseline and <= 1.5 x the TREC files; TREC files <= 0.3 x
baseline; qrels with ``cost=`` read in <= 1.5 x the plain qrels' time.

Scale part: a nested qrels/run pair (``--queries`` x ``--individuals`` x ``--children``)
and a flat run with the same number of lines; ``-m hTBG@h=3h`` vs ``-m AP``.
Target: hTBG time <= 1.5 x AP time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
READ_QRELS = (
    "import sys, time, numpy, pyarrow, pyarrow.compute, pandas\n"
    "from rankeval.io.data import Qrels\n"
    "start = time.perf_counter()\n"
    "Qrels.read(sys.argv[1])\n"
    "print(time.perf_counter() - start)\n"
)


# ---------------------------------------------------------------------------- data
def generate(out: Path, queries: int, individuals: int, children: int, seed: int = 7) -> None:
    """The scale part's nested qrels/run and flat qrels/run (seeded)."""
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


def generate_reference(out: Path, individuals: int = 10_000, posts: int = 100, seed: int = 11) -> None:
    """The reference's JSON collection (1 query) and the same as nested TREC files, and the
    nested qrels without ``cost=`` (seeded). Scores are written in full (``repr``): both
    forms hold the same numbers."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    labels = (rng.random(individuals) < 0.2).astype(int).tolist()
    stops = np.where(rng.random((individuals, posts)) < 0.1, rng.random((individuals, posts)).round(3), 0.0)
    words = rng.integers(5, 500, (individuals, posts)).tolist()
    ind_scores = rng.random(individuals).tolist()
    post_scores = rng.random((individuals, posts)).tolist()
    stop_list = stops.tolist()
    truth = {
        "q1": {
            f"u{i}": [labels[i], {f"p{c}": [stop_list[i][c], words[i][c]] for c in range(posts)}]
            for i in range(individuals)
        }
    }
    prediction = {
        "q1": {
            f"u{i}": [ind_scores[i], {f"p{c}": post_scores[i][c] for c in range(posts)}]
            for i in range(individuals)
        }
    }
    (out / "truth.json").write_text(json.dumps(truth))
    (out / "prediction.json").write_text(json.dumps(prediction))
    qrels, plain, run = [], [], []
    for i in range(individuals):
        qrels.append(f"q1 0 u{i} {labels[i]}\n")
        plain.append(f"q1 0 u{i} {labels[i]}\n")
        run.append(f"q1 Q0 u{i} 0 {ind_scores[i]!r} bench\n")
        for c in range(posts):
            line = f"q1 0 u{i}/p{c} {stop_list[i][c]!r}"
            qrels.append(f"{line} cost={words[i][c]}\n")
            plain.append(f"{line}\n")
            run.append(f"q1 Q0 u{i}/p{c} 0 {post_scores[i][c]!r} bench\n")
    (out / "nested.qrels").write_text("".join(qrels))
    (out / "plain.qrels").write_text("".join(plain))
    (out / "nested.run").write_text("".join(run))


def in_child(args: list[str]) -> None:
    """This script with *args* in a child process: generating the data takes memory, and a
    process started from a large one reports the parent's peak RSS as its own."""
    subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], check=True)


# ---------------------------------------------------------------------------- timing
def environment(checkout: Path) -> dict[str, str]:
    """The environment that runs *checkout*'s rankeval (its core and its plugins); the
    children run with ``python -P``, so that the working directory (a checkout itself,
    perhaps) does not come first on ``sys.path``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(checkout / "plugins")])
    return env


def timed(argv: list[str], env: dict[str, str], reps: int) -> tuple[float, float]:
    """Median wall time and peak RSS (MB) of *argv* in fresh processes, after one untimed
    warm-up (page cache)."""
    walls, rss = [], []
    for _ in range(reps + 1):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        rss.append(usage.ru_maxrss / 1024)
        if status != 0:
            raise SystemExit(f"failed: {' '.join(argv)}")
    return statistics.median(walls[1:]), statistics.median(rss[1:])


def timed_reader(qrels: Path, env: dict[str, str], reps: int) -> float:
    """Median time of ``Qrels.read(qrels)`` alone, each in a fresh process (after a warm-up)."""
    times = []
    for _ in range(reps + 1):
        out = subprocess.run(
            [sys.executable, "-P", "-c", READ_QRELS, str(qrels)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times[1:])


def output(args: list[str], env: dict[str, str]) -> str:
    """The per-query output of ``rankeval ARGS -q -p 17``."""
    argv = [sys.executable, "-P", "-m", "rankeval.cli", *args, "-q", "-p", "17"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


def verdict(name: str, value: float, target: float) -> str:
    return f"{name}: {value:.2f}x (target <= {target}x) {'PASS' if value <= target else 'FAIL'}"


# ---------------------------------------------------------------------------- parts
def reference_part(out: Path, reps: int, current: Path, baseline: Path | None) -> None:
    """Time the reference collection (JSON, TREC, qrels with and without attributes) with
    this checkout and the baseline; compare the outputs; print the ratios."""
    if not (out / "nested.run").exists():
        print(f"generating the reference collection in {out} ...", flush=True)
        in_child(["--generate", "reference", "--out", str(out)])
    checkouts = {"current": current} | ({"baseline": baseline} if baseline else {})
    json_args = [str(out / "truth.json"), str(out / "prediction.json"), "-m", "hTBG@h=3h"]
    trec_args = [str(out / "nested.qrels"), str(out / "nested.run"), "-m", "hTBG@h=3h"]
    p10 = {
        kind: [str(out / f"{kind}.qrels"), str(out / "nested.run"), "-m", "P@10"]
        for kind in ("nested", "plain")
    }
    rows: dict[str, dict[str, str]] = {}
    figures: dict[tuple[str, str], float] = {}
    for who, checkout in checkouts.items():
        env = environment(checkout)
        cli = [sys.executable, "-P", "-m", "rankeval.cli"]
        for label, args in (
            ("hTBG@h=3h, reference JSON", json_args),
            ("hTBG@h=3h, nested TREC files", trec_args),
        ):
            wall, rss = timed([*cli, *args], env, reps)
            figures[(label, who)] = wall
            rows.setdefault(label, {})[who] = f"{wall:6.2f} s {rss:6.0f} MB"
        for kind, label in (
            ("nested", "Qrels.read, cost= on each line"),
            ("plain", "Qrels.read, plain qrels"),
        ):
            figures[(label, who)] = timed_reader(out / f"{kind}.qrels", env, reps)
            rows.setdefault(label, {})[who] = f"{figures[(label, who)]:6.2f} s"
            wall, _ = timed([*cli, *p10[kind]], env, reps)
            rows.setdefault(f"P@10 end to end, {kind} qrels", {})[who] = f"{wall:6.2f} s"
    print(f"{'':34s}" + "".join(f"{who:>22s}" for who in checkouts))
    for label, cells in rows.items():
        print(f"{label:34s}" + "".join(f"{cells.get(who, ''):>22s}" for who in checkouts))
    outputs = {
        who: [output(args, environment(c)) for args in (json_args, trec_args)] for who, c in checkouts.items()
    }
    print(f"outputs (-q -p 17): JSON = TREC files: {outputs['current'][0] == outputs['current'][1]}", end="")
    if baseline:
        print(
            f"; current = baseline: JSON {outputs['current'][0] == outputs['baseline'][0]}, "
            f"TREC {outputs['current'][1] == outputs['baseline'][1]}"
        )
    print()
    json_t, trec_t = (
        figures[("hTBG@h=3h, reference JSON", "current")],
        figures[("hTBG@h=3h, nested TREC files", "current")],
    )
    if baseline:
        print(
            verdict(
                "target 1: JSON, current / baseline",
                json_t / figures[("hTBG@h=3h, reference JSON", "baseline")],
                0.25,
            )
        )
    print(verdict("target 1: JSON / nested TREC files (current)", json_t / trec_t, 1.5))
    if baseline:
        print(
            verdict(
                "target 2: TREC files, current / baseline",
                trec_t / figures[("hTBG@h=3h, nested TREC files", "baseline")],
                0.3,
            )
        )
    attr = (
        figures[("Qrels.read, cost= on each line", "current")]
        / figures[("Qrels.read, plain qrels", "current")]
    )
    print(verdict("target 3: qrels read, cost= / plain (current)", attr, 1.5))


def scale_part(out: Path, queries: int, individuals: int, children: int, reps: int, current: Path) -> None:
    """hTBG on the large nested run vs AP on the flat one, with the *current* checkout."""
    if not (out / "nested.run").exists():
        sizes = ["--queries", str(queries), "--individuals", str(individuals), "--children", str(children)]
        in_child(["--generate", "scale", "--out", str(out), *sizes])
    env = environment(current)
    cli = [sys.executable, "-P", "-m", "rankeval.cli"]
    lines = sum(1 for _ in (out / "nested.run").open())
    htbg = timed([*cli, str(out / "nested.qrels"), str(out / "nested.run"), "-m", "hTBG@h=3h"], env, reps)
    ap = timed([*cli, str(out / "flat.qrels"), str(out / "flat.run"), "-m", "AP"], env, reps)
    print(f"run lines: {lines:,}")
    print(f"hTBG@h=3h nested: median {htbg[0]:.2f} s, peak RSS {htbg[1]:.0f} MB")
    print(f"AP flat:          median {ap[0]:.2f} s, peak RSS {ap[1]:.0f} MB")
    print(verdict("hTBG / AP time", htbg[0] / ap[0], 1.5))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("bench/out/htbg"))
    parser.add_argument("--baseline", type=Path, default=None, help="an older checkout to time the same way")
    parser.add_argument("--current", type=Path, default=REPO, help="the checkout timed (default: this one)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--individuals", type=int, default=1000)
    parser.add_argument("--children", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-reference", action="store_true", help="only the scale part")
    parser.add_argument("--skip-scale", action="store_true", help="only the reference part")
    parser.add_argument("--generate", choices=["reference", "scale"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate == "reference":
        return generate_reference(args.out)
    if args.generate == "scale":
        return generate(args.out, args.queries, args.individuals, args.children)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.skip_reference:
        reference_part(args.out / "reference", args.reps, args.current, args.baseline)
    if not args.skip_scale:
        scale_part(args.out, args.queries, args.individuals, args.children, args.reps, args.current)


if __name__ == "__main__":
    main()
