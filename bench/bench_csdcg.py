"""nCS-DCG@10 vs nDCG@10 on the benchmark run, end to end (the scale target).

    python bench/generate.py --out /tmp/bench7m                 # the 7M-line run, if not there
    python bench/bench_csdcg.py --data /tmp/bench7m --reps 5
    python bench/bench_csdcg.py --quick                         # smoke test: small data, temp dir

Writes ``qrels.sens.txt`` next to ``qrels.txt`` in ``--data DIR``: a copy of the qrels with
``sens=1`` or ``sens=2`` (2 for a tenth of them) on about 10% of the judged documents
(seeded). With ``--pool N``, each query also gets up to N extra judged documents drawn from
its run (grades 0-2, same sensitivity rate), for pools deeper than MS MARCO's one passage per
query. Then it times ``rankeval QRELS.SENS RUN -m nCS-DCG@10`` and ``-m nDCG@10`` (the same
files, so both parse the same attributes) in fresh processes, one untimed warm-up each, then
``--reps`` rounds, and prints the medians, peak RSS and the time ratio.
Target: nCS-DCG@10 time <= 1.5 x nDCG@10 time.

Note: with the generated qrels' ~1 judged passage per query, most queries' pools have one
document (or equal ones): every ranking scores the same and nCS-DCG is undefined there
(rankeval prints one warning line counting them); the timing covers the whole computation
anyway. Use ``--pool`` for pools where most queries are defined.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
GENERATE = BENCH_DIR / "generate.py"
TARGET = 1.5
MEASURES = ("nCS-DCG@10", "nDCG@10")


def ensure_data(data: Path, queries: int | None = None, depth: int | None = None) -> tuple[Path, Path]:
    """``qrels.txt`` and ``run.txt`` in *data*, made by generate.py if missing."""
    qrels, run = data / "qrels.txt", data / "run.txt"
    if not (qrels.exists() and run.exists()):
        cmd = [sys.executable, str(GENERATE), "--out", str(data)]
        cmd += ["--queries", str(queries)] if queries else []
        cmd += ["--depth", str(depth)] if depth else []
        print("generating data:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return qrels, run


def _run_docs(run: Path, per_query: int, rng: np.random.Generator) -> dict[str, list[str]]:
    """Up to *per_query* random documents of each query of *run* (pyarrow's CSV reader)."""
    import pyarrow as pa
    import pyarrow.csv as csv

    table = csv.read_csv(
        run,
        read_options=csv.ReadOptions(column_names=["q", "q0", "doc", "rank", "score", "tag"]),
        parse_options=csv.ParseOptions(delimiter=" "),
        convert_options=csv.ConvertOptions(column_types={"q": pa.string(), "doc": pa.string()}),
    )
    q = table.column("q").to_numpy(zero_copy_only=False)
    doc = table.column("doc").to_numpy(zero_copy_only=False)
    pick = np.lexsort((rng.random(len(q)), q))  # each query's rows in random order
    q, doc = q[pick], doc[pick]
    first = np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1, [len(q)]))
    return {q[a]: list(doc[a : min(b, a + per_query)]) for a, b in itertools.pairwise(first)}


def write_sens_qrels(qrels: Path, run: Path, out: Path, rate: float, pool: int, seed: int) -> tuple[int, int]:
    """Copy *qrels* to *out* with ``sens=`` on about *rate* of the judged documents (and
    *pool* extra judged documents per query from the run); returns (judged, sensitive)."""
    rng = np.random.default_rng(seed)
    judged: dict[tuple[str, str], str] = {}
    lines: list[tuple[str, str, str, str]] = []
    for line in qrels.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and not line.startswith("#"):
            lines.append((parts[0], parts[1], parts[2], parts[3]))
            judged[(parts[0], parts[2])] = parts[3]
    if pool:
        for qid, docs in _run_docs(run, pool, rng).items():
            for doc in docs:
                if (qid, doc) not in judged:
                    grade = str(int(rng.choice([0, 0, 0, 1, 2])))
                    lines.append((qid, "0", doc, grade))
                    judged[(qid, doc)] = grade
    sensitive = rng.random(len(lines)) < rate
    grade2 = rng.random(len(lines)) < 0.1
    with out.open("w") as fh:
        for (qid, it, doc, rel), s, two in zip(lines, sensitive, grade2, strict=True):
            fh.write(f"{qid} {it} {doc} {rel}" + (f" sens={2 if two else 1}" if s else "") + "\n")
    return len(lines), int(sensitive.sum())


def timed(argv: list[str], reps: int) -> tuple[list[float], list[float], str, str]:
    """Wall times and peak RSS (MB) of *reps* fresh runs after one warm-up; the warm-up's
    stdout and stderr."""
    walls, rss = [], []
    out_text = err_text = ""
    for i in range(reps + 1):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            if proc.returncode != 0:
                raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}\n{err.read().decode()}")
            if i == 0:
                out_text, err_text = out.read().decode(), err.read().decode()
            else:
                walls.append(wall)
                rss.append(usage.ru_maxrss / 1024)
    return walls, rss, out_text, err_text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=BENCH_DIR / "out", help="dir with qrels.txt and run.txt")
    ap.add_argument(
        "--reps", type=int, default=None, help="timed reps per measure (default 3; 1 with --quick)"
    )
    ap.add_argument("--rate", type=float, default=0.1, help="share of judged documents made sensitive")
    ap.add_argument("--pool", type=int, default=0, help="extra judged documents per query, from its run")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="500 queries x 100 docs in a temp dir")
    args = ap.parse_args(argv)
    reps = args.reps if args.reps is not None else (1 if args.quick else 3)
    tmp = tempfile.TemporaryDirectory(prefix="rankeval-csdcg-") if args.quick else None
    try:
        data = Path(tmp.name) if tmp is not None else args.data.resolve()
        qrels, run = ensure_data(data, 500, 100) if tmp is not None else ensure_data(data)
        sens_qrels = data / "qrels.sens.txt"
        judged, sensitive = write_sens_qrels(qrels, run, sens_qrels, args.rate, args.pool, args.seed)
        exe = str(Path(sys.executable).with_name("rankeval"))
        print(f"data: {data}  run {run.stat().st_size / 1e6:.0f} MB")
        print(
            f"qrels: {judged:,} judged, {sensitive:,} with sens= -> {sens_qrels.name}   reps: {reps} (+1 warm-up)"
        )
        times = {}
        for spec in MEASURES:
            walls, rss, out, err = timed([exe, str(sens_qrels), str(run), "-m", spec], reps)
            times[spec] = statistics.median(walls)
            print(
                f"{spec:<11} median {times[spec]:6.2f} s  min {min(walls):6.2f} s  peak RSS {statistics.median(rss):7.1f} MB"
            )
            print("            " + out.strip().replace("\n", "\n            "))
            for line in err.strip().splitlines():
                print(f"            {line}")
        ratio = times["nCS-DCG@10"] / times["nDCG@10"]
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        note = " (quick data: the target applies to the 7M-line run)" if args.quick else ""
        print(f"nCS-DCG@10 / nDCG@10 time: {ratio:.2f}x (target <= {TARGET}x) {verdict}{note}")
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
