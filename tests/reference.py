"""Helpers to read reference-tool outputs and to call pytrec_eval as an oracle."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path

import numpy as np

# trec_eval measure name -> rankeval spec (binary measures take the relevance level)
TREC_TO_SPEC = {
    "map": "AP(rel={l})",
    "ndcg": "nDCG",
    "ndcg_cut_10": "nDCG@10",
    "P_10": "P(rel={l})@10",
    "recip_rank": "RR(rel={l})",
    "recall_1000": "R(rel={l})@1000",
    "Rprec": "Rprec(rel={l})",
    "bpref": "Bpref(rel={l})",
    "success_10": "Success(rel={l})@10",
    "num_ret": "NumRet",
    "num_rel": "NumRel(rel={l})",
    "num_rel_ret": "NumRelRet(rel={l})",
    "map_cut_10": "AP(rel={l})@10",
    "P_5": "P(rel={l})@5",
    "recall_5": "R(rel={l})@5",
}


def open_text(path: Path) -> list[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt").read().splitlines()
    return path.read_text().splitlines()


def read_trec_eval_output(path: Path, measures: Iterable[str]) -> dict[tuple[str, str], str]:
    """{(trec measure, qid): printed value} from trec_eval -q output."""
    wanted = set(measures)
    out = {}
    for line in open_text(path):
        parts = line.split()
        if len(parts) == 3 and parts[0] in wanted:
            out[(parts[0], parts[1])] = parts[2]
    return out


def float32_tied_queries(run_path: Path) -> set[str]:
    """Queries where two scores differ in float64 but are equal in float32.

    trec_eval 9 (and pytrec_eval) read scores as float32, so such scores tie there and the
    docno decides; rankeval keeps float64. Those queries are excluded from exact parity.
    """
    by_q: dict[str, list[float]] = {}
    for line in open_text(run_path):
        parts = line.split()
        if len(parts) >= 6:
            by_q.setdefault(parts[0], []).append(float(parts[4]))
    tied = set()
    for q, scores in by_q.items():
        s64 = np.array(scores, dtype=np.float64)
        n64 = len(np.unique(s64))
        n32 = len(np.unique(s64.astype(np.float32)))
        if n32 < n64:
            tied.add(q)
    return tied


def read_qrels_dict(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in open_text(path):
        parts = line.split()
        if len(parts) >= 4:
            docs = out.setdefault(parts[0], {})
            docs[parts[2]] = max(int(parts[3]), docs.get(parts[2], -(10**9)))
    return out


def read_run_dict(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in open_text(path):
        parts = line.split()
        if len(parts) >= 6:
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return out
