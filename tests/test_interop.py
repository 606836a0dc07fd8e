"""rankeval's measures inside ir_measures (and so PyTerrier): :func:`rankeval.as_ir_measure`.

Per-query values and aggregates through ``ir_measures.calc_aggregate`` / ``iter_calc`` equal
rankeval's own, checked against independent figures where there are some: the hTBG
reference's published toy values, pytrec_eval's AP, hand-computed aggregates that are not a
mean (pooled recall, geometric mean, sums).
"""

from __future__ import annotations

import json
import math
import pickle
import warnings
from itertools import permutations
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.errors import InputError, RankevalWarning, SpecError, UsageError
from rankeval.interop import QueryValue

DATA = Path(__file__).parent / "data"
TOY = DATA / "htbg-toy"
EXPECTED = json.loads((TOY / "expected.json").read_text())
CLEF = DATA / "clef-tar"


def per_query(measure, qrels, run) -> dict:
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def rankeval_values(qrels, run, spec, **kw) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        frame = rankeval.evaluate(qrels, run, spec, **kw)
    return {
        q if isinstance(q, str) else None: v for q, v in zip(frame["query_id"], frame["value"], strict=True)
    }


# ------------------------------------------------------------------------ hTBG (reference toy)
@pytest.fixture(scope="module")
def toy() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The toy as DataFrames: the qrels keep their ``cost`` column through ir_measures."""
    qrels = rankeval.Qrels.read(TOY / "truth.json").frame
    run = rankeval.Run.read(TOY / "prediction.json").frame
    return qrels, run


@pytest.mark.parametrize("h", ["3", "5", "10"])
@pytest.mark.parametrize(("kind", "ideal"), [("evaluate", ""), ("best", "(ideal=true)")])
def test_htbg_through_ir_measures_equals_the_published_values(toy, h, kind, ideal) -> None:
    qrels, run = toy
    measure = rankeval.as_ir_measure(f"hTBG{ideal}@h={h}")
    want = EXPECTED["hierarchical"][kind]
    got = per_query(measure, qrels, run)
    assert got.keys() == want.keys() == {"q_1", "q_2"}
    for qid, by_h in want.items():
        assert got[qid] == pytest.approx(by_h[h], rel=1e-12, abs=0)
    aggregate = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    assert aggregate == pytest.approx((want["q_1"][h] + want["q_2"][h]) / 2, rel=1e-12)
    assert (
        aggregate == rankeval_values(TOY / "truth.json", TOY / "prediction.json", f"hTBG{ideal}@h={h}")[None]
    )


def toy_qrels_namedtuples() -> list[ir_measures.Qrel]:
    """The toy's judgments as ir_measures has them: no ``cost``."""
    frame = rankeval.Qrels.read(TOY / "truth.json").frame
    return [
        ir_measures.Qrel(q, d, float(r), i)
        for q, i, d, r in zip(frame.query_id, frame.iteration, frame.doc_id, frame.relevance, strict=True)
    ]


def test_htbg_with_ir_measures_qrels_needs_the_cost_from_elsewhere(toy, tmp_path) -> None:
    _, run = toy
    qrels = toy_qrels_namedtuples()
    # without cost=: rankeval's error, through ir_measures
    with pytest.raises(InputError, match=r"16 items have no cost= attribute .* or give default_cost=N"):
        ir_measures.calc_aggregate([rankeval.as_ir_measure("hTBG@h=3")], qrels, run)
    # the costs as a side file of item attributes (they do not depend on the query here)
    costs = rankeval.Qrels.read(TOY / "truth.json").frame.dropna(subset=["cost"])
    docinfo = tmp_path / "toy.docinfo"
    docinfo.write_text(
        "".join(f"{d} cost={c}\n" for d, c in dict(zip(costs.doc_id, costs.cost, strict=True)).items())
    )
    measure = rankeval.as_ir_measure("hTBG@h=3", options=rankeval.EvalOptions(docinfo=docinfo))
    got = per_query(measure, qrels, run)
    for qid, by_h in EXPECTED["hierarchical"]["evaluate"].items():
        assert got[qid] == pytest.approx(by_h["3"], rel=1e-12, abs=0)


def test_htbg_with_a_default_cost(toy) -> None:
    _, run = toy
    qrels = toy_qrels_namedtuples()
    spec = "hTBG(default_cost=100)@h=3"
    got = per_query(rankeval.as_ir_measure(spec), qrels, run)
    want = rankeval_values(qrels, run, spec)
    assert got == {q: want[q] for q in ("q_1", "q_2")}
    # by hand, q_2: the run ranks user_1 (not relevant; posts' R 0, 0), user_2 and user_3
    # (relevant; their posts by score have R 0.1, 0.3, 0.3), every post 100 words long
    assert got["q_2"] == pytest.approx(
        _htbg([(0, [0, 0]), (1, [0.1, 0.3, 0.3]), (1, [0.1, 0.3, 0.3])]), rel=1e-12
    )


def _htbg(individuals: list[tuple[int, list[float]]], h: float = 3.0, words: float = 100) -> float:
    """hTBG by its definition (Shing et al., ACL 2020), the paper's parameters, every post
    *words* long: expected words E_i = sum over posts l of words * prod_{m<l} (1 - R_m); time
    t_i = T_s + P_click(rel_i) * (T_alpha * E_i + T_beta); a relevant individual with a post
    of R > 0 gains P_click(1) * P_save(1) * 2^(-(time spent before it) / h)."""
    total, clock = 0.0, 0.0
    for rel, stops in individuals:
        expected, keep = 0.0, 1.0
        for r in stops:
            expected += words * keep
            keep *= 1 - r
        if rel and any(stops):
            total += 0.64 * 0.77 * 2 ** (-clock / h)
        clock += 4.4 + (0.64 if rel else 0.39) * (0.018 * expected + 7.8)
    return total


# ------------------------------------------------------------------------ nCS-DCG
SENS_QRELS = pd.DataFrame(
    {
        "query_id": ["1", "1", "1", "2", "2", "3", "3"],
        "doc_id": ["a", "b", "c", "d", "e", "f", "g"],
        "relevance": [2, 1, 0, 1, 0, 0, 0],
        "sens": [0, 1, 1, 0, 1, 0, 0],  # a column: ir_measures passes it through
    }
)
SENS_RUN = pd.DataFrame(
    {
        "query_id": ["1", "1", "1", "2", "2", "3"],
        "doc_id": ["b", "a", "c", "e", "d", "f"],
        "score": [3.0, 2, 1, 2, 1, 1],
    }
)


def test_ncs_dcg_leaves_undefined_queries_out_of_the_mean() -> None:
    measure = rankeval.as_ir_measure("nCS-DCG@2")
    with pytest.warns(RankevalWarning, match="1 of 3 queries undefined"):
        got = per_query(measure, SENS_QRELS, SENS_RUN)
        aggregate = ir_measures.calc_aggregate([measure], SENS_QRELS, SENS_RUN)[measure]
    want = rankeval_values(SENS_QRELS, SENS_RUN, "nCS-DCG@2")
    assert got["1"] == want["1"] and got["2"] == want["2"] == 0.0
    assert math.isnan(got["3"])  # query 3: best == worst (nothing relevant, nothing sensitive)

    # by hand, query 1 @2, gain 2^rel - 1, cost 12 per sensitive document: the run shows b (rel 1,
    # sens 1) then a (rel 2); best and worst by brute force over the rankings of its 3 documents
    def cs_dcg(ranking):
        return sum((2**rel - 1) / math.log2(i + 2) - 12 * sens for i, (rel, sens) in enumerate(ranking))

    every = [cs_dcg(r) for r in permutations([(2, 0), (1, 1), (0, 1)], 2)]
    value = cs_dcg([(1, 1), (2, 0)])
    assert got["1"] == pytest.approx((value - min(every)) / (max(every) - min(every)), rel=1e-12)
    # the mean of the defined queries (ir_measures' plain mean of the values would be NaN)
    assert aggregate == want[None] == pytest.approx((got["1"] + got["2"]) / 2, rel=1e-15)


# ------------------------------------------------------------------------ TAR and other aggregates
@pytest.fixture(scope="module")
def clef() -> tuple[pd.DataFrame, pd.DataFrame, Path, Path]:
    q, r = CLEF / "full.test.dta.abs.2019.qrels.gz", CLEF / "DTA_sheffield-baseline.gz"
    return rankeval.Qrels.read(q).frame, rankeval.Run.read(r).frame, q, r


def test_tar_pooled_recall_is_rankevals_pooled_aggregate(clef) -> None:
    qrels, run, q, r = clef
    spec = "tar_recall@10%"
    measure = rankeval.as_ir_measure(spec)
    got = per_query(measure, qrels, run)
    aggregate = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    want = rankeval_values(q, r, spec)
    assert got == {k: v for k, v in want.items() if k is not None}
    assert aggregate == want[None]
    # pooled over topics (Σ found / Σ R), which is not the mean of the per-topic recalls
    found, relevant = _pooled_recall(qrels, run, 10)
    assert aggregate == pytest.approx(found / relevant, rel=1e-12)
    assert aggregate != pytest.approx(float(np.mean(list(got.values()))), rel=1e-6)


def _pooled_recall(qrels: pd.DataFrame, run: pd.DataFrame, percent: float) -> tuple[int, int]:
    """Σ relevant documents in the first round(P·N/100) lines of each topic, and Σ R (N: the
    topic's judged documents, R: the relevant ones). This run ranks each topic's judged
    documents once each, labelled 0 or 1, and every topic has R > 0: no CLEF exclusion applies."""
    assert set(qrels.relevance) == {0, 1} and not run.duplicated(["query_id", "doc_id"]).any()
    found = relevant = 0
    for qid, judged in qrels.groupby("query_id"):
        rels = set(judged.doc_id[judged.relevance > 0])
        k = int(np.rint(len(judged) * percent / 100))
        found += sum(d in rels for d in run.doc_id[run.query_id == qid].head(k))
        relevant += len(rels)
    return found, relevant


def test_geometric_mean_and_counts_aggregate_as_rankeval(clef) -> None:
    qrels, run, q, r = clef
    gmap, num_docs = rankeval.as_ir_measure("GMAP"), rankeval.as_ir_measure("tar_num_docs")
    got = ir_measures.calc_aggregate([gmap, num_docs], qrels, run)
    ap = per_query(rankeval.as_ir_measure("AP"), qrels, run)
    # trec_eval's gm_map: exp(mean(log(max(AP, 1e-5))))
    assert got[gmap] == pytest.approx(
        math.exp(np.mean(np.log(np.maximum(list(ap.values()), 1e-5)))), rel=1e-12
    )
    assert got[gmap] == rankeval_values(q, r, "GMAP")[None]
    # a count is summed: N over topics with a relevant document (all 30 521 lines are judged here)
    assert got[num_docs] == rankeval_values(q, r, "tar_num_docs")[None]
    assert got[num_docs] == sum(per_query(num_docs, qrels, run).values())


def test_ap_equals_pytrec_eval(clef) -> None:
    qrels, run, _, _ = clef
    graded = qrels.assign(relevance=qrels.relevance.astype(int))  # pytrec_eval wants integers
    ours = rankeval.as_ir_measure("AP")
    # beside a measure of ir_measures' own provider, in one call
    got = ir_measures.calc_aggregate([ours, ir_measures.nDCG @ 10], graded, run)
    theirs = ir_measures.calc_aggregate([ir_measures.AP, ir_measures.nDCG @ 10], graded, run)
    assert per_query(ours, graded, run) == pytest.approx(per_query(ir_measures.AP, graded, run), rel=1e-12)
    assert got[ours] == pytest.approx(theirs[ir_measures.AP], rel=1e-12)
    assert got[ir_measures.nDCG @ 10] == theirs[ir_measures.nDCG @ 10]


def test_batches_aggregate_as_one_evaluation(clef) -> None:
    """PyTerrier's ``batch_size``: per-query values of batches of queries, then one aggregator."""
    qrels, run, _, _ = clef
    measure = rankeval.as_ir_measure("tar_recall@10%")
    whole = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    topics = sorted(run.query_id.unique())
    aggregator = measure.aggregator()
    for batch in (topics[:3], topics[3:]):
        for metric in ir_measures.iter_calc(
            [measure], qrels[qrels.query_id.isin(batch)], run[run.query_id.isin(batch)]
        ):
            aggregator.add(metric.value)
    assert aggregator.result() == whole


# ------------------------------------------------------------------------ queries and options
def test_missing_queries_follow_missing_zero() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 1}, "3": {"c": 1}}
    run = {"1": {"a": 2.0, "x": 1.0}, "2": {"x": 2.0, "b": 1.0}}
    zero = rankeval.as_ir_measure("AP")
    assert per_query(zero, qrels, run) == {"1": 1.0, "2": 0.5, "3": 0.0}
    assert ir_measures.calc_aggregate([zero], qrels, run)[zero] == pytest.approx(0.5)
    left_out = rankeval.as_ir_measure("AP", options=rankeval.EvalOptions(missing_zero=False))
    got = per_query(left_out, qrels, run)
    assert got["1"] == 1.0 and got["2"] == 0.5 and math.isnan(got["3"])  # ir_measures' default: NaN
    assert ir_measures.calc_aggregate([left_out], qrels, run)[left_out] == 0.75


def test_an_empty_run_scores_every_judged_query() -> None:
    """PyTerrier evaluates the judged queries no batch retrieved for with an empty run."""
    qrels = pd.DataFrame({"query_id": ["1", "2"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    empty = pd.DataFrame([], columns=["query_id", "doc_id", "score"])
    ap, num_rel = rankeval.as_ir_measure("AP"), rankeval.as_ir_measure("NumRel")
    assert per_query(ap, qrels, empty) == {"1": 0.0, "2": 0.0}
    assert ir_measures.calc_aggregate([ap, num_rel], qrels, empty) == {ap: 0.0, num_rel: 2.0}


def test_query_ids_keep_their_type() -> None:
    """ir_measures matches queries by its own ids: integers stay integers (no extra rows)."""
    qrels = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "c"], "relevance": [1, 0, 1]})
    run = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["b", "a", "c"], "score": [2.0, 1.0, 1.0]})
    metrics = list(ir_measures.iter_calc([rankeval.as_ir_measure("RR")], qrels, run))
    assert [(m.query_id, m.value) for m in metrics] == [(1, 0.5), (2, 1.0)]


def test_accepted_measures_and_names() -> None:
    spec = rankeval.as_ir_measure("hTBG@h=3h")
    assert str(spec) == "hTBG@3h" == str(rankeval.parse_measure("hTBG@h=3h"))
    assert str(rankeval.as_ir_measure(rankeval.parse_measure("nCS-DCG@10"))) == "nCS-DCG@10"
    assert str(rankeval.as_ir_measure(ir_measures.P(rel=2) @ 5)) == "P(rel=2)@5"
    assert repr(rankeval.as_ir_measure("AP")) == "AP"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("AP nDCG@10",), {}, UsageError, "as_ir_measure takes one measure, not 2"),
        (("tar_ap",), {"options": rankeval.EvalOptions(compat="clef")}, UsageError, "applies no compat mode"),
        (("AP",), {"options": rankeval.EvalOptions(compat="clef")}, UsageError, "none of the measures AP"),
        (("AP",), {"options": {"max_docs": 0}}, UsageError, "options must be a rankeval.EvalOptions"),
        (("nDCG@x",), {}, SpecError, "nDCG"),
        ((3,), {}, UsageError, "measures must be a spec"),
    ],
)
def test_bad_arguments_are_clear_errors(args, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        rankeval.as_ir_measure(*args, **kwargs)


def test_query_values_are_floats_that_pickle() -> None:
    value = QueryValue(0.25, "q1", {"kept": np.array([0.25])})
    assert value == 0.25 and isinstance(value, float) and value + 1 == 1.25 and repr(value) == "0.25"
    again = pickle.loads(pickle.dumps(value))
    assert again == 0.25 and again.query_id == "q1" and again.parts["kept"].tolist() == [0.25]
