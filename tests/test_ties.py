"""Which ranking is scored (issue 27, SPEC §10): the tie rules.

- ``--ties expected`` equals the brute-force mean over every order of every tied group: each
  order is written as its own query with distinct scores (so no tie rule is involved) and
  evaluated with the default rule; the mean per original query is the oracle.
- ``--ties given`` equals scoring the run after a stable sort by score (equal scores keep
  their line order), also when the file is not sorted by score.
- worst <= expected <= best, all three equal when no tie falls within a measure's depth.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rankeval
from rankeval import EvalOptions
from rankeval.errors import UsageError
from tests.strategies import qrels_and_run

#: every measure that claims an exact tie-aware value, with its parameters exercised
TIE_AWARE = [
    "AP",
    "AP@3",
    "AP(rel=2)",
    "nDCG",
    "nDCG@3",
    "nDCG(gains='1=3,2=9')@4",
    "P@3",
    "P",
    "R@2",
    "R",
    "RR",
    "RR@2",
    "RR(rel=2)",
    "Rprec",
    "Bpref",
    "Bpref(rel=2)",
    "Success@1",
    "Success@3",
    "Judged@3",
    "NumRet",
    "NumRelRet",
    "NumRel",
]

#: the most orders of one query's tied groups the brute force walks
MAX_ORDERS = 720


def _qrels_frame(qrels: dict[str, dict[str, int]]) -> pd.DataFrame:
    rows = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def _run_frame(run: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _orders(docs: dict[str, float]) -> list[list[str]]:
    """Every ranking of *docs* that sorts them by score descending: the product of the
    permutations of each group of equal scores."""
    groups = [
        [d for d in docs if docs[d] == s] for s in sorted({*docs.values()}, reverse=True)
    ]
    return [[d for part in combo for d in part] for combo in itertools.product(*map(itertools.permutations, groups))]


def _count_orders(run: dict[str, dict[str, float]]) -> int:
    worst = 1
    for docs in run.values():
        counts: dict[float, int] = {}
        for s in docs.values():
            counts[s] = counts.get(s, 0) + 1
        worst = max(worst, math.prod(math.factorial(c) for c in counts.values()))
    return worst


def _brute_force_mean(qrels: dict, run: dict, measures: list[str]) -> pd.DataFrame:
    """Per query and measure: the mean over all tie orders, each order a query of its own
    (``qid#i``, distinct scores), evaluated with the default rule."""
    big_qrels: dict[str, dict[str, int]] = {}
    big_run: dict[str, dict[str, float]] = {}
    owner: dict[str, str] = {}
    for qid, docs in run.items():
        if qid not in qrels:
            continue
        for i, order in enumerate(_orders(docs)):
            name = f"{qid}#{i}"
            owner[name] = qid
            big_qrels[name] = qrels[qid]
            big_run[name] = {d: float(len(order) - j) for j, d in enumerate(order)}
    for qid in qrels:  # a query the run lacks: one empty ranking
        if qid not in run:
            owner[qid] = qid
            big_qrels[qid] = qrels[qid]
    df = rankeval.evaluate(_qrels_frame(big_qrels), _run_frame(big_run), measures)
    df = df[df.query_id.notna()].copy()
    df["query_id"] = df.query_id.map(owner)
    return df.groupby(["query_id", "measure"], sort=True).value.mean()


def _per_query(df: pd.DataFrame) -> pd.Series:
    df = df[df.query_id.notna()]
    return df.set_index(["query_id", "measure"]).value.sort_index()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels_and_run(max_queries=3))
def test_expected_is_the_mean_over_every_order_of_the_tied_groups(case):
    qrels, run = case
    run = {q: docs for q, docs in run.items() if q in qrels}
    assume(run and _count_orders(run) <= MAX_ORDERS)
    got = _per_query(
        rankeval.evaluate(_qrels_frame(qrels), _run_frame(run), TIE_AWARE, options=EvalOptions(ties="expected"))
    )
    want = _brute_force_mean(qrels, run, TIE_AWARE)
    pd.testing.assert_series_equal(got, want.rename("value"), check_exact=False, rtol=1e-9, atol=1e-12)


def test_expected_on_a_hand_made_tie():
    # q1: d1 (rel) and d2, d3 (non-relevant) tie at the top: the relevant one is first,
    # second or third with probability 1/3 each
    qrels = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [1, 0, 0]})
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [1.0, 1.0, 1.0]})
    df = rankeval.evaluate(qrels, run, ["RR", "P@1", "AP", "nDCG"], options=EvalOptions(ties="expected"))
    got = dict(zip(df.measure[df.query_id.notna()], df.value[df.query_id.notna()], strict=True))
    third = 1 / 3
    assert got["RR"] == pytest.approx(third * (1 + 1 / 2 + 1 / 3), abs=1e-12)
    assert got["P@1"] == pytest.approx(third, abs=1e-12)
    assert got["AP"] == pytest.approx(third * (1 + 1 / 2 + 1 / 3), abs=1e-12)
    assert got["nDCG"] == pytest.approx(third * (1 + 1 / math.log2(3) + 1 / 2), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(qrels_and_run(max_queries=3), st.randoms(use_true_random=False))
def test_given_keeps_the_line_order_among_equal_scores(case, rnd):
    qrels, run = case
    frame = _run_frame(run)
    frame = frame.iloc[rnd.sample(range(len(frame)), len(frame))].reset_index(drop=True)  # any order
    measures = ["AP", "nDCG@3", "RR", "P@2", "Bpref"]
    got = rankeval.evaluate(_qrels_frame(qrels), frame, measures, options=EvalOptions(ties="given"))
    # the oracle: a stable sort by score, then distinct scores in that order
    ranked = frame.sort_values(["query_id", "score"], ascending=[True, False], kind="stable")
    ranked = ranked.assign(score=-ranked.groupby("query_id").cumcount().astype(float))
    want = rankeval.evaluate(_qrels_frame(qrels), ranked, measures)
    pd.testing.assert_frame_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(qrels_and_run(max_queries=3))
def test_worst_expected_best_are_ordered(case):
    qrels, run = case
    measures = ["AP", "nDCG@3", "P@2", "RR", "R@3", "Success@2", "Rprec", "Bpref"]
    values = {
        rule: _per_query(
            rankeval.evaluate(_qrels_frame(qrels), _run_frame(run), measures, options=EvalOptions(ties=rule))
        )
        for rule in ("worst", "expected", "best")
    }
    assert (values["worst"] <= values["expected"] + 1e-12).all()
    assert (values["expected"] <= values["best"] + 1e-12).all()


def test_without_ties_every_rule_gives_the_same_values():
    qrels = rankeval.Qrels.read("rankeval/examples/dl-hard.qrels.txt")
    run = rankeval.Run.read("rankeval/examples/dl-hard-bm25.run.gz")
    frame = run.frame
    frame = frame.assign(score=frame.score + np.arange(len(frame)) * 1e-9)  # no two equal
    measures = ["AP", "nDCG@10", "P@10", "RR", "Bpref", "R@100", "Success@5", "Judged@10"]
    base = rankeval.evaluate(qrels, frame, measures)
    for rule in ("given", "expected", "best", "worst"):
        other = rankeval.evaluate(qrels, frame, measures, options=EvalOptions(ties=rule))
        pd.testing.assert_frame_equal(other, base, check_exact=False, rtol=1e-12)


def test_a_measure_without_an_exact_method_is_refused_before_any_work():
    with pytest.raises(UsageError, match=r"--ties expected: no exact tie-aware value for IPrec@0\.5 "
                       r"\(plugin rankeval_trec\); these support the tie rules trec_eval, given, best, worst"):
        rankeval.Evaluator("rankeval/examples/dl-hard.qrels.txt", ["AP", "IPrec@0.5"],
                           options=EvalOptions(ties="expected"))


def test_an_unknown_rule_names_the_rules():
    with pytest.raises(UsageError, match="unknown tie rule 'random'; expected one of trec_eval, given, expected"):
        EvalOptions(ties="random")
