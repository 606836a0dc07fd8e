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
import warnings

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
    "RelativeP@3",
    "RprecMult@0.5",
    "SetAP",
    "SetF",
    "SetRelativeP",
    "Utility",
    "NumNonrelJudgedRet",
    "GMAP",
    "GMBpref",
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


@st.composite
def nested_qrels_and_run(draw):
    """A nested collection (parents ``p0..p2``, children ``pN/cM``) with graded judgments of
    parents and children, and a run of both with few distinct scores (many ties)."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in ("q1", "q2")[: draw(st.integers(1, 2))]:
        parents = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
        items = {p: [f"{p}/c{j}" for j in range(draw(st.integers(1, 3)))] for p in parents}
        judged = {p: draw(st.integers(0, 2)) for p in parents}
        for children in items.values():
            for c in children:
                if draw(st.booleans()):
                    judged[c] = draw(st.integers(0, 2))
            if not any(c in judged for c in children):
                judged[children[0]] = 1  # every parent has a judged child
        qrels[qid] = judged
        shown = [d for p in parents for d in (p, *items[p]) if draw(st.booleans()) or d in judged]
        run[qid] = {d: float(draw(st.integers(0, 2))) for d in shown}
    return qrels, run


NESTED_AWARE = ["AP(level=2)", "nDCG(level=2)@2", "P(level=2)@1", "RR(level=2)", "R(level=2)@1", "AP", "nDCG@2"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_qrels_and_run())
def test_expected_at_a_nested_level_is_the_mean_over_every_order(case):
    qrels, run = case
    assume(_count_orders(run) <= MAX_ORDERS)
    got = _per_query(
        rankeval.evaluate(_qrels_frame(qrels), _run_frame(run), NESTED_AWARE, options=EvalOptions(ties="expected"))
    )
    want = _brute_force_mean(qrels, run, NESTED_AWARE)
    pd.testing.assert_series_equal(got, want.rename("value"), check_exact=False, rtol=1e-9, atol=1e-12)


def test_the_tie_counts_of_a_hand_made_run():
    """Two queries: q1 has a tie of a relevant and a non-relevant document at the top and a
    float32-only tie (0.30000001 and 0.3) between two documents of different grades; q2 a
    tie of two unjudged documents (cannot change a value: not counted) and, below the
    cutoff, a tie of different grades."""
    from rankeval.engine.ties import tie_counts, tie_message
    from rankeval.io.data import Qrels, Run
    from rankeval.ranking.alignment import Alignment

    qrels = Qrels.from_frame(
        pd.DataFrame(
            [("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 2), ("q1", "d", 0), ("q2", "x", 1), ("q2", "y", 0)],
            columns=["query_id", "doc_id", "relevance"],
        )
    )
    run = Run.from_frame(
        pd.DataFrame(
            [
                ("q1", "a", 1.0),
                ("q1", "b", 1.0),
                ("q1", "c", 0.30000001),
                ("q1", "d", 0.3),
                ("q2", "u1", 5.0),
                ("q2", "u2", 5.0),
                ("q2", "z", 4.0),
                ("q2", "x", 1.0),
                ("q2", "y", 1.0),
            ],
            columns=["query_id", "doc_id", "score"],
        )
    )
    view = Alignment(qrels, run).view(1)
    # every rank: q1's a/b and q2's x/y (u1/u2 are both unjudged): 2 queries, 2 groups,
    # 2 pairs; c/d tie only at float32
    assert tie_counts(view, None).tolist() == [2, 2, 2, 1]
    # top 3: q1's a/b only (q2's x/y start at rank 3); c/d start at rank 2 < 3
    assert tie_counts(view, 3).tolist() == [1, 1, 1, 1]
    assert tie_counts(view, 1).tolist() == [1, 1, 1, 0]
    message = tie_message({"run": np.array([1, 1, 1, 1])}, 3, "trec_eval")
    assert message == (
        "tied scores of different grades within the top 3: run 1 query, 1 group, 1 pair; the values depend on "
        "the tie rule (trec_eval; see --ties, and `rankeval ties` for their range); scores that differ only "
        "beyond float32 precision (trec_eval reads them as equal) within the top 3: run 1 pair"
    )
    assert tie_message({"run": np.array([1, 1, 1, 0])}, 3, "expected") is None
    # through an evaluation: the warning, once, with the summed counts
    with pytest.warns(rankeval.TieWarning, match=r"at the ranks the measures read: run 2 queries, 2 groups, 2 pairs"):
        rankeval.evaluate(qrels, run, ["AP"])


@pytest.mark.parametrize("rule", ["given", "expected", "best", "worst"])
def test_every_rule_gives_the_same_values_in_blocks_and_on_the_whole_file(rule, tmp_path):
    """The block engine cuts a file between queries: each rule sees a query's lines in the
    file's order whatever the block size (values equal to the whole run's, in memory)."""
    run = rankeval.Run.read("rankeval/examples/dl-hard-bm25.run.gz")
    frame = run.frame
    frame = frame.assign(score=frame.score.round(0))  # many ties
    path = tmp_path / "tied.run"
    frame.assign(rank=1)[["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
        path, sep=" ", header=False, index=False
    )
    ev = rankeval.Evaluator("rankeval/examples/dl-hard.qrels.txt", ["AP", "nDCG@10", "RR", "P@5"],
                            options=EvalOptions(ties=rule))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rankeval.TieWarning)
        whole = ev.evaluate({"r": rankeval.Run.read(path)})
        blocks = ev.evaluate({"r": str(path)}, jobs=1, block_size=20_000)
        pool = ev.evaluate({"r": str(path)}, jobs=2, block_size=20_000)
    pd.testing.assert_frame_equal(blocks, whole)
    pd.testing.assert_frame_equal(pool, whole)


def test_the_ties_command_prints_the_range(tmp_path):
    """``rankeval ties``: per run and measure, worst <= trec_eval <= best, the expected value
    (nan without an exact method), equal to the library's values under each rule."""
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\n")
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 2.0 t\nq2 Q0 y 1 1.0 t\nq2 Q0 x 2 1.0 t\n")
    measures = ["AP", "nDCG@2", "IPrec@0.5"]
    options = [a for m in measures for a in ("-m", m)]
    result = CliRunner().invoke(app, ["ties", str(qrels), str(run), *options, "-f", "json"])
    assert result.exit_code == 0, result.output
    import json

    rows = {r["measure"]: r for r in json.loads(result.stdout)}
    assert list(rows) == measures
    for m in measures:
        values = {rule: rankeval.evaluate(str(qrels), str(run), [m], options=EvalOptions(ties=rule))
                  for rule in ("worst", "trec_eval", "best")}
        for rule, df in values.items():
            assert rows[m][rule] == pytest.approx(float(df[df.query_id.isna()].value.iloc[0]), abs=5e-5)
        assert rows[m]["worst"] <= rows[m]["trec_eval"] <= rows[m]["best"]
    assert rows["AP"]["worst"] < rows["AP"]["best"]  # the ties matter here
    expected = rankeval.evaluate(str(qrels), str(run), ["AP"], options=EvalOptions(ties="expected"))
    assert rows["AP"]["expected"] == pytest.approx(float(expected[expected.query_id.isna()].value.iloc[0]), abs=5e-5)
    assert rows["IPrec@0.5"]["expected"] is None  # no exact method: null in json
