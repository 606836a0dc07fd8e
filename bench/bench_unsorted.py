"""A run not sorted by query, evaluated in bounded memory: sorted vs shuffled in chunks.

    python bench/bench_unsorted.py                          # /tmp/bench30m: 30M lines (~1 min)
    python bench/bench_unsorted.py --data /tmp/s1m --queries 1000 --chunk 77777   # smoke test

The run (``--data DIR``: ``qrels.txt`` and ``run.txt``, made with ``generate.py --queries
N`` if missing; written query by query) is cut into chunks of ``--chunk`` lines (777,777 by
default) and the chunks written in a random order (``run-chunksCHUNK.txt``, made once): the
queries cut at a chunk's edge then lie in two places of the file, far apart, as in a run
concatenated from shards. Both files are evaluated by ``rankeval QRELS run=RUN -m AP -m
nDCG@10 --jobs 1 -q -f tsv`` (one name, so that the outputs can be compared) under ``prlimit
--as=`` ``--limit-mb`` MiB (1.5 GiB by default), each in a fresh process (``run_measured`` of
``bench_blocks.py``: wall time, and peak RSS from ``os.wait4`` and a sampler), and their
per-query outputs compared byte for byte (the values do not depend on the order of a query's
lines: the generated run has no duplicate document, and ties are broken by document id).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import sys
import time
from pathlib import Path

from bench_blocks import RANKEVAL, run_measured
from run_bench import count_lines, ensure_data

MEASURES = ["-m", "AP", "-m", "nDCG@10"]


def chunk_shuffled(run: Path, out: Path, chunk: int, seed: int) -> int:
    """Write *run*'s lines to *out* in chunks of *chunk* lines, the chunks in a random order
    (one chunk in memory at a time); the number of chunks."""
    starts = [0]
    with run.open("rb") as fh:
        n = 0
        for _ in fh:
            n += 1
            if n % chunk == 0:
                starts.append(fh.tell())
        end = fh.tell()
    if starts[-1] != end:
        starts.append(end)
    spans = list(itertools.pairwise(starts))
    random.Random(seed).shuffle(spans)
    tmp = out.with_suffix(".part")
    with run.open("rb") as src, tmp.open("wb") as dst:
        for a, b in spans:
            src.seek(a)
            dst.write(src.read(b - a))
    tmp.rename(out)
    return len(spans)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("/tmp/bench30m"))
    parser.add_argument("--queries", type=int, default=30000, help="for generate.py, if the data is missing")
    parser.add_argument("--chunk", type=int, default=777_777, help="lines per shuffled chunk")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit-mb", type=int, default=1536, help="prlimit --as, in MiB (0: none)")
    args = parser.parse_args(argv)

    qrels, run = ensure_data(args.data, args.queries)
    shuffled = args.data / f"run-chunks{args.chunk}.txt"
    if not shuffled.exists():
        t0 = time.perf_counter()
        chunks = chunk_shuffled(run, shuffled, args.chunk, args.seed)
        print(f"wrote {shuffled}: {chunks} chunks in {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"run: {run} ({count_lines(run):,} lines, {run.stat().st_size / 2**20:,.0f} MiB)", flush=True)
    limit: list[str] = []
    if args.limit_mb:
        if shutil.which("prlimit") is None:
            print("prlimit is not installed: running without a limit", flush=True)
        else:
            limit = ["prlimit", f"--as={args.limit_mb * 2**20}"]
    rows = []
    outputs = {}
    for label, path in (("sorted", run), ("shuffled in chunks", shuffled)):
        argv_ = [*limit, RANKEVAL, str(qrels), f"run={path}", *MEASURES, "--jobs", "1", "-q", "-f", "tsv"]
        print("$", " ".join(argv_), flush=True)
        r = run_measured(argv_)
        if r.rc != 0:
            print(f"  exit {r.rc}: {r.stderr.strip()[-2000:]}", flush=True)
        outputs[label] = r.stdout
        rows.append((label, r.rc, r.wall, r.max_proc_mb, r.peak_mb))
        print(f"  exit {r.rc}, wall {r.wall:.1f} s, peak RSS {r.max_proc_mb:,.0f} MB", flush=True)
    print()
    print(f"{'run':<20} {'exit':>4} {'wall s':>8} {'peak RSS MB':>12}")
    for label, rc, wall, proc, _tree in rows:
        print(f"{label:<20} {rc:>4} {wall:>8.1f} {proc:>12,.0f}")
    same = outputs["sorted"] == outputs["shuffled in chunks"] and bool(outputs["sorted"])
    lines = outputs["sorted"].count("\n")
    print(f"per-query outputs identical: {same} ({lines:,} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
