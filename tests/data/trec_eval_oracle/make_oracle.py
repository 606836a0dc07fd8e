"""Write the constructed inputs of ``tests/test_trec_eval_oracle.py`` and record what trec_eval
9.0.8 prints for each case of ``cases.txt`` (``<case>.out``): run from the repository root,

    python tests/data/trec_eval_oracle/make_oracle.py ../shared/tools/trec_eval-v9.0.8

The inputs are drawn from a fixed seed, so a rerun writes the same files. A case line is
``name<TAB>trec_eval arguments`` (file names relative to this folder); the binary must exit 0
on each case (the inputs avoid what crashes it: a query whose labels are all negative, a Z
score file without an entry that trec_eval looks up).
"""

from __future__ import annotations

import random
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
QUERIES = ["1", "2", "3", "9", "10", "11", "25"]  # "10" sorts before "9" as a string
LABELS = [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4]


def _graded(rng: random.Random) -> tuple[str, dict[str, list[str]]]:
    """Qrels with grades -2..4: query 11 judged all 0 (R = 0), query 25 not in the run."""
    lines, judged = [], {}
    for q in QUERIES:
        docs = [f"d{q}-{i:02d}" for i in range(25)]
        rng.shuffle(docs)
        judged[q] = docs[:15]
        for d in judged[q]:
            label = 0 if q == "11" else rng.choice(LABELS)
            lines.append(f"{q} 0 {d} {label}\n")
    return "".join(lines), judged


def _run(rng: random.Random, judged: dict[str, list[str]]) -> str:
    """A run with ties in the scores (rounded to 0.1), ties that only float32 makes, judged
    and unjudged documents, query 7 not in the qrels, and another tag on its last line."""
    lines = []
    for q in [*QUERIES[:-1], "7"]:
        docs = [f"d{q}-{i:02d}" for i in range(25)]
        rng.shuffle(docs)
        scores = [round(rng.uniform(0, 3), 1) for _ in range(20)]
        scores[3] = 1.00000001  # equal to scores[4] in float32, not in float64
        scores[4] = 1.00000002
        for rank, (d, s) in enumerate(zip(docs[:20], scores, strict=True), 1):
            lines.append(f"{q} Q0 {d} {rank} {s} runA\n")
    lines[-1] = lines[-1].replace("runA", "runB")
    return "".join(lines)


def _fractional(rng: random.Random, judged: dict[str, list[str]]) -> str:
    """The graded qrels' documents with fractional labels (trec_eval truncates them)."""
    return "".join(
        f"{q} 0 {d} {rng.choice([-1.5, -0.5, 0.5, 1.2, 1.9, 2.7, 3.0])}\n"
        for q in QUERIES[:-1]
        for d in judged[q]
    )


def _emptied(judged: dict[str, list[str]]) -> tuple[str, str]:
    """Qrels and run where -J leaves query 2 without documents (its run has none judged, or
    only negative labels) and query 1 with some."""
    qrels = "1 0 a 2\n1 0 b 0\n1 0 c -1\n2 0 g 1\n2 0 h -3\n2 0 i 0\n"
    run = "1 Q0 a 1 5 t\n1 Q0 x 2 4 t\n1 Q0 c 3 3 t\n1 Q0 b 4 2 t\n2 Q0 h 1 3 t\n2 Q0 y 2 2 t\n"
    return qrels, run


def _zscores(binary: str) -> str:
    """A Z score file for every query and official measure of graded.qrels and ties.run:
    mean and standard deviation drawn, and some standard deviations 0, with the mean equal to
    the query's value or not (trec_eval: 0, or -1000000)."""
    rng = random.Random(7)
    out = subprocess.run(
        [binary, "-q", "-n", "-m", "official", "graded.qrels", "ties.run"],
        cwd=HERE,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    lines = []
    for row in out.splitlines():
        name, qid, value = (f.strip() for f in row.split("\t"))
        kind = rng.random()
        if kind < 0.1:
            lines.append(f"{qid} {name} {value} 0\n")  # std 0, value = mean: 0
        elif kind < 0.2:
            lines.append(f"{qid} {name} {float(value) + 1} 0\n")  # std 0, value != mean
        else:
            lines.append(f"{qid} {name} {rng.uniform(0, 1):.4f} {rng.uniform(0.05, 2):.4f}\n")
    for q in ("25", "7"):  # the query only in the qrels (-c), the one only in the run
        lines += [f"{q} {name} 0.5 0.25\n" for name in sorted({r.split()[0] for r in out.splitlines()})]
    return "".join(lines)


def write_inputs(binary: str) -> None:
    rng = random.Random(2024)
    graded, judged = _graded(rng)
    (HERE / "graded.qrels").write_text(graded)
    (HERE / "ties.run").write_text(_run(rng, judged))
    (HERE / "fractional.qrels").write_text(_fractional(rng, judged))
    qrels, run = _emptied(judged)
    (HERE / "emptied.qrels").write_text(qrels)
    (HERE / "emptied.run").write_text(run)
    (HERE / "zeros.qrels").write_text("1 0 a 0\n1 0 b 0\n2 0 c 1\n")
    (HERE / "zeros.run").write_text("1 Q0 a 1 2 t\n1 Q0 x 2 1 t\n2 Q0 c 1 1 t\n")
    (HERE / "graded.zscores").write_text(_zscores(binary))


def cases() -> dict[str, list[str]]:
    """``cases.txt``: case name -> trec_eval's arguments."""
    out = {}
    for line in (HERE / "cases.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, args = line.split("\t")
            out[name] = shlex.split(args)
    return out


def main(binary: str) -> None:
    binary = str(Path(binary).resolve())
    write_inputs(binary)
    for name, args in cases().items():
        done = subprocess.run([binary, *args], cwd=HERE, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name}: trec_eval exited {done.returncode}: {done.stderr.strip()}")
        (HERE / f"{name}.out").write_text(done.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
