"""Generate an MS MARCO-dev-shaped benchmark run and qrels.

About 7,000 queries x 1,000 documents (~7M run lines) and qrels with about one
relevant passage per query, written as TREC text files. Deterministic (seeded).

    python bench/generate.py --out bench/out --queries 6980 --depth 1000
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def generate(out: Path, queries: int, depth: int, seed: int = 42) -> tuple[Path, Path]:
    """Write ``qrels.txt`` and ``run.txt`` under *out* and return their paths."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    qids = np.sort(rng.choice(np.arange(1_000, 1_200_000), size=queries, replace=False))
    collection = 8_841_823  # MS MARCO passage collection size
    # distinct documents per query (a run with duplicate docs is invalid for trec_eval):
    # a random start plus positive increments spanning less than the collection, shuffled
    steps = rng.integers(1, collection // depth, size=(queries, depth))
    start = rng.integers(0, collection, size=(queries, 1))
    docs = rng.permuted((start + np.cumsum(steps, axis=1)) % collection, axis=1)
    scores = np.sort(rng.normal(15.0, 3.0, size=(queries, depth)), axis=1)[:, ::-1]
    # qrels: ~1.07 relevant per query; the relevant passage is retrieved for ~80% of queries
    n_rel = 1 + (rng.random(queries) < 0.07)
    qrels_path = out / "qrels.txt"
    with qrels_path.open("w") as fh:
        for i, q in enumerate(qids):
            judged = set()
            for _ in range(n_rel[i]):
                if rng.random() < 0.8:
                    doc = docs[i, rng.integers(0, depth)]
                else:
                    doc = rng.integers(0, collection)
                if doc not in judged:  # the same judgment twice is an input error (as in trec_eval)
                    judged.add(doc)
                    fh.write(f"{q} 0 {doc} 1\n")
    run_path = out / "run.txt"
    with run_path.open("w") as fh:
        for i, q in enumerate(qids):
            qs = str(q)
            lines = [
                f"{qs} Q0 {d} {r + 1} {s:.6f} bench\n"
                for r, (d, s) in enumerate(zip(docs[i].tolist(), scores[i].tolist(), strict=True))
            ]
            fh.writelines(lines)
    return qrels_path, run_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    q, r = generate(args.out, args.queries, args.depth, args.seed)
    print(q, r)


if __name__ == "__main__":
    main()
