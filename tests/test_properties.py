"""Property tests: random qrels/runs against pytrec_eval; invariants of the engine."""

from __future__ import annotations

import random

import pandas as pd
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import qrels_and_run

import rankeval
from rankeval.io.data import Qrels, Run

TREC = {
    "map": "AP(rel={l})",
    "ndcg": "nDCG",
    "ndcg_cut_5": "nDCG@5",
    "P_5": "P(rel={l})@5",
    "recip_rank": "RR(rel={l})",
    "recall_5": "R(rel={l})@5",
    "Rprec": "Rprec(rel={l})",
    "bpref": "Bpref(rel={l})",
    "success_5": "Success(rel={l})@5",
    "num_ret": "NumRet",
    "num_rel": "NumRel(rel={l})",
    "num_rel_ret": "NumRelRet(rel={l})",
    "map_cut_5": "AP(rel={l})@5",
}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _values(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    """``{(measure, query id): value}``, the aggregate under query id ``None``."""
    return {
        (m, q if isinstance(q, str) else None): v
        for m, q, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)
    }


@pytest.mark.slow
@SETTINGS
@given(data=qrels_and_run(), level=st.integers(1, 2))
def test_matches_pytrec_eval(data, level):
    qrels, run = data
    specs = {name: str(rankeval.parse_measure(s.format(l=level))) for name, s in TREC.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(TREC), relevance_level=level).evaluate(run)
    if not ref:
        return
    ours = _values(
        rankeval.evaluate(
            Qrels.from_dict(qrels),
            Run.from_dict(run),
            list(specs.values()),
            options=rankeval.EvalOptions(missing_zero=False),
        )
    )
    for qid, values in ref.items():
        for name, spec in specs.items():
            assert ours[(spec, qid)] == pytest.approx(values[name], abs=1e-12), (spec, qid)


@SETTINGS
@given(data=qrels_and_run(), seed=st.integers(0, 2**32 - 1))
def test_shuffling_run_lines_changes_nothing(data, seed):
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    measures = ["AP", "nDCG@5", "RR(rel=2)", "Bpref", "P@3", "Judged@4", "NumRet"]
    a = rankeval.evaluate(
        Qrels.from_dict(qrels),
        Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])),
        measures,
    )
    b = rankeval.evaluate(
        Qrels.from_dict(qrels),
        Run.from_frame(pd.DataFrame(shuffled, columns=["query_id", "doc_id", "score"])),
        measures,
    )
    assert _values(a) == _values(b)


@SETTINGS
@given(data=qrels_and_run(ties=False))
def test_bounds(data):
    qrels, run = data
    bounded = [
        "AP",
        "nDCG",
        "nDCG@3",
        "P@2",
        "R@3",
        "RR",
        "Rprec",
        "Bpref",
        "Success@2",
        "Judged@3",
        "AP(rel=2)@4",
    ]
    frame = rankeval.evaluate(Qrels.from_dict(qrels), Run.from_dict(run), bounded)
    assert ((frame["value"] >= 0) & (frame["value"] <= 1 + 1e-12)).all()


def test_missing_queries_count_as_zero_by_default():
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    run = {"1": {"a": 1.0}}
    with_zero = rankeval.evaluate(qrels, Run.from_dict(run), "AP NumRel")
    without = rankeval.evaluate(
        qrels, Run.from_dict(run), "AP NumRel", options=rankeval.EvalOptions(missing_zero=False)
    )
    v = _values(with_zero)
    assert v[("AP", None)] == 0.5 and v[("AP", "2")] == 0.0
    assert v[("NumRel", None)] == 2  # the unretrieved query keeps its count (trec_eval -c)
    w = _values(without)
    assert w[("AP", None)] == 1.0 and ("AP", "2") not in w


def test_ties_broken_by_docno_descending():
    # equal scores: trec_eval ranks "b" before "a" (docno descending)
    qrels = {"1": {"a": 1}}
    run = {"1": {"a": 1.0, "b": 1.0, "c": 0.5}}
    assert _values(rankeval.evaluate(qrels, Run.from_dict(run), "RR"))[("RR", "1")] == 0.5


def test_duplicate_detection_is_exact_for_colliding_keys():
    # '07' and '7' share a numeric key in the reader's fast duplicate check; they are
    # different documents, so this run is valid
    run = Run.from_frame(pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["07", "7"], "score": [2.0, 1.0]}))
    values = _values(rankeval.evaluate({"1": {"7": 1}}, run, "RR"))
    assert values[("RR", "1")] == 0.5
