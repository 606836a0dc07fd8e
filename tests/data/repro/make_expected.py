"""Inputs and expected values of tests/test_meta_repro.py (repro_eval 0.5 as the oracle).

    python tests/data/repro/make_expected.py          # rewrites the inputs and expected.json

Inputs, written deterministically from the DL-HARD passage data in ``tests/data/dl-hard``:

- ``orig.qrels``: the qrels of 9 topics (the original collection);
- ``rpl.qrels``: the qrels of 7 other topics (the "other collection" of a replication);
- ``orig_b.run.gz``, ``orig_a.run.gz``: BM25 and BM25+RM3+T5 on the 9 topics, top 100 lines;
- ``rpd_b.run.gz``, ``rpd_a.run.gz``: a "reproduction" of each: every score of the top 150
  moved by a hash-seeded amount and rounded to 2 decimals (which makes ties, written in
  ascending docno order so that the docno-descending tie rule matters), top 100 kept;
  ``rpd_b`` lacks topic 182539;
- ``rpl_b.run.gz``, ``rpl_a.run.gz``: the same perturbation on the 7 topics of ``rpl.qrels``.

``expected.json`` holds what repro_eval 0.5 computes on them, as its README's workflow does
(``trim()``, ``evaluate()``, then each measure): per-topic KTU and RBO, RMSE, nRMSE, ER, ΔRI
and the p-values for reproducibility (``RpdEvaluator``), and ER, ΔRI and p-values for
replicability (``RplEvaluator``), for repro_eval's default measures (``load_measures()``),
and the p-values of a "reproduction" that is the original runs themselves (``identical``).
The test calls :func:`oracle` itself when repro_eval is installed.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "dl-hard"
ORIG_TOPICS = (
    "1056204",
    "1103812",
    "1105792",
    "1106007",
    "1109707",
    "1112341",
    "1114646",
    "174463",
    "182539",
)
RPL_TOPICS = ("19335", "332593", "443396", "451602", "47923", "489204", "527433")
RUNS = {"b": "bm25.run.gz", "a": "bm25-rm3-t5_zs_.run.gz"}
DEPTH = 100
RUN_FILES = {f"{kind}_{role}": f"{kind}_{role}.run.gz" for kind in ("orig", "rpd", "rpl") for role in "ba"}


def _read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            qid, _, doc, _, score, _ = line.split()
            out.setdefault(qid, []).append((doc, float(score)))
    return out


def _perturbed(ranking: list[tuple[str, float]], qid: str) -> list[tuple[str, float]]:
    top = ranking[: DEPTH + 50]
    spread = max(s for _, s in top) - min(s for _, s in top)
    moved = [
        (d, round(s + (zlib.crc32(f"{qid} {d}".encode()) / 2**32 - 0.5) * 0.1 * spread, 2)) for d, s in top
    ]
    moved.sort(key=lambda ds: (-ds[1], ds[0]))  # ties in ascending docno: the tie rule reorders them
    return moved[:DEPTH]


def _write_run(path: Path, rankings: dict[str, list[tuple[str, float]]], tag: str) -> None:
    lines = [
        f"{qid} Q0 {doc} {rank} {score!r} {tag}\n"
        for qid, ranking in rankings.items()
        for rank, (doc, score) in enumerate(ranking, 1)
    ]
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write("".join(lines).encode())


def make_inputs() -> None:
    """Write the qrels and runs (see the module docstring)."""
    qrels = (SOURCE / "dl_hard-passage.qrels").read_text().splitlines(keepends=True)
    for name, topics in (("orig.qrels", ORIG_TOPICS), ("rpl.qrels", RPL_TOPICS)):
        (HERE / name).write_text("".join(line for line in qrels if line.split()[0] in topics))
    for role, source in RUNS.items():
        full = _read_run(SOURCE / source)
        _write_run(HERE / f"orig_{role}.run.gz", {q: full[q][:DEPTH] for q in ORIG_TOPICS}, f"orig_{role}")
        rpd = {q: _perturbed(full[q], q) for q in ORIG_TOPICS if not (role == "b" and q == "182539")}
        _write_run(HERE / f"rpd_{role}.run.gz", rpd, f"rpd_{role}")
        _write_run(
            HERE / f"rpl_{role}.run.gz", {q: _perturbed(full[q], q) for q in RPL_TOPICS}, f"rpl_{role}"
        )


def oracle(folder: Path = HERE) -> dict[str, Any]:
    """What repro_eval 0.5 computes on the inputs in *folder* (``expected.json``'s content)."""
    from repro_eval.Evaluator import RpdEvaluator, RplEvaluator
    from repro_eval.util import load_measures

    runs = {key: str(folder / name) for key, name in RUN_FILES.items()}
    rpd = RpdEvaluator(
        qrels_orig_path=str(folder / "orig.qrels"),
        run_b_orig_path=runs["orig_b"],
        run_a_orig_path=runs["orig_a"],
        run_b_rep_path=runs["rpd_b"],
        run_a_rep_path=runs["rpd_a"],
    )
    rpd.trim()
    rpd.evaluate()
    rpl = RplEvaluator(
        qrels_orig_path=str(folder / "orig.qrels"),
        run_b_orig_path=runs["orig_b"],
        run_a_orig_path=runs["orig_a"],
        run_b_rep_path=runs["rpl_b"],
        run_a_rep_path=runs["rpl_a"],
        qrels_rpl_path=str(folder / "rpl.qrels"),
    )
    rpl.trim()
    rpl.evaluate()
    same = RpdEvaluator(
        qrels_orig_path=str(folder / "orig.qrels"),
        run_b_orig_path=runs["orig_b"],
        run_a_orig_path=runs["orig_a"],
        run_b_rep_path=runs["orig_b"],
        run_a_rep_path=runs["orig_a"],
    )
    same.trim()
    same.evaluate()
    return {
        "repro_eval": "0.5",
        "measures": [str(m) for m in load_measures()],
        "reproducibility": {
            "KTU": rpd.ktu(per_topic=True),
            "RBO": rpd.rbo(per_topic=True),
            "RMSE": rpd.rmse(),
            "nRMSE": rpd.nrmse(),
            "ER": rpd.er(),
            "DeltaRI": rpd.dri(),
            "p_value": rpd.ttest(),
        },
        "replicability": {"ER": rpl.er(), "DeltaRI": rpl.dri(), "p_value": rpl.ttest()},
        "identical": {"p_value": same.ttest()},
    }


def _plain(value: Any) -> Any:
    """*value* with numpy numbers as Python floats (for JSON)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return float(value)


def main() -> None:
    make_inputs()
    expected = oracle()
    expected = {k: v if k in ("repro_eval", "measures") else _plain(v) for k, v in expected.items()}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
