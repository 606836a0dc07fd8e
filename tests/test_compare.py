"""`rankeval.compare` and `rankeval compare` (docs: compare.md): tests against scipy and statsmodels on
real per-query vectors, the random baseline against full enumeration, tables, rows, plots, CLI."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.comparison import stats
from rankeval.comparison.curves import expand_template, parameter_curve
from rankeval.comparison.data import COLUMNS
from rankeval.engine.random_ranking import random_positions
from rankeval.errors import UsageError

multitest = pytest.importorskip("statsmodels.stats.multitest")

DATA = Path(__file__).parent / "data"
DL = DATA / "dl-hard"
QRELS = DL / "dl_hard-passage.qrels"
RUNS = [DL / "bm25.run.gz", DL / "bm25-rm3.run.gz", DL / "bm25-t5_zs_.run.gz"]
NAMES = [p.name for p in RUNS]
MEASURES = ["AP(rel=2)", "nDCG@10", "RR(rel=2)"]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def per_query() -> dict[tuple[str, str], np.ndarray]:
    """(run, measure) -> per-query values in sorted query order, from rankeval.evaluate."""
    df = rankeval.evaluate(QRELS, RUNS, MEASURES)
    df = df[df.query_id.notna()].sort_values("query_id")
    return {(r, m): g["value"].to_numpy() for (r, m), g in df.groupby(["run", "measure"])}


@pytest.fixture(scope="module")
def ttest_cmp() -> rankeval.Comparison:
    return rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(test="ttest", correction="holm")
    )


# ------------------------------------------------------------------ tests on real data
def test_ttest_p_values_equal_scipy(ttest_cmp, per_query) -> None:
    cmp = ttest_cmp
    assert cmp.runs == NAMES and cmp.measures == MEASURES and cmp.baseline == NAMES[0]
    assert cmp.pairs == [(1, 0), (2, 0)]
    assert len(cmp.query_ids) == 50
    for m, measure in enumerate(MEASURES):
        for p, (r, b) in enumerate(cmp.pairs):
            x, y = per_query[(NAMES[r], measure)], per_query[(NAMES[b], measure)]
            ref = sps.ttest_rel(x, y)
            assert abs(cmp.p_value[m, p] - ref.pvalue) < 1e-12
            assert cmp.statistic[m, p] == pytest.approx(ref.statistic, rel=1e-12)
            assert cmp.difference[m, p] == pytest.approx((x - y).mean(), abs=1e-15)
            assert cmp.cohens_d[m, p] == pytest.approx((x - y).mean() / (x - y).std(ddof=1), rel=1e-12)
            low, high = sps.t.interval(0.95, len(x) - 1, loc=(x - y).mean(), scale=sps.sem(x - y))
            assert (cmp.diff_ci_low[m, p], cmp.diff_ci_high[m, p]) == pytest.approx((low, high), abs=1e-12)
            assert cmp.n[m, p] == 50


def test_wilcoxon_p_values_equal_scipy(per_query) -> None:
    cmp = rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(test="wilcoxon", baseline=NAMES[2])
    )
    assert cmp.pairs == [(0, 2), (1, 2)]
    for m, measure in enumerate(MEASURES):
        for p, (r, b) in enumerate(cmp.pairs):
            ref = sps.wilcoxon(per_query[(NAMES[r], measure)], per_query[(NAMES[b], measure)])
            assert abs(cmp.p_value[m, p] - ref.pvalue) < 1e-12
            assert cmp.statistic[m, p] == ref.statistic


@pytest.mark.parametrize("test", ["bootstrap", "randomization"])
def test_resampling_tests_are_the_library_tests_on_the_same_vectors(test, per_query) -> None:
    cmp = rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(test=test, samples=3000, seed=5, ci="bootstrap")
    )
    again = rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(test=test, samples=3000, seed=5, ci="bootstrap")
    )
    np.testing.assert_array_equal(cmp.p_value, again.p_value)  # reproducible
    for m, measure in enumerate(MEASURES):
        for p, (r, b) in enumerate(cmp.pairs):
            d = per_query[(NAMES[r], measure)] - per_query[(NAMES[b], measure)]
            fn = stats.bootstrap if test == "bootstrap" else stats.randomization
            assert cmp.p_value[m, p] == pytest.approx(fn(d, 3000, 5)[1], abs=1e-12)
            low, high = stats.bootstrap_interval(d, 0.05, 3000, 5)
            assert (cmp.diff_ci_low[m, p], cmp.diff_ci_high[m, p]) == pytest.approx((low, high), abs=1e-12)
        for r in range(3):  # the interval of each run's mean
            low, high = stats.bootstrap_interval(per_query[(NAMES[r], measure)], 0.05, 3000, 5)
            assert (cmp.ci_low[r, m], cmp.ci_high[r, m]) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("correction, sm", [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(correction, sm) -> None:
    cmp = rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(pairs="all", correction=correction)
    )
    assert len(cmp.pairs) == 3
    for m in range(len(MEASURES)):  # one family per measure
        ref = multitest.multipletests(cmp.p_value[m], method=sm)[1]
        np.testing.assert_allclose(cmp.p_adjusted[m], ref, atol=1e-15, rtol=0)
    every = rankeval.compare(
        QRELS, RUNS, MEASURES, stats=rankeval.CompareOptions(pairs="all", correction=correction, family="all")
    )
    ref = multitest.multipletests(every.p_value.ravel(), method=sm)[1]
    np.testing.assert_allclose(every.p_adjusted.ravel(), ref, atol=1e-15, rtol=0)
    assert (cmp.significant == (cmp.p_adjusted < 0.05)).all()


def test_run_scores_and_intervals(ttest_cmp, per_query) -> None:
    cmp = ttest_cmp
    df = rankeval.evaluate(QRELS, RUNS, MEASURES)
    agg = df[df.query_id.isna()].set_index(["run", "measure"])["value"]
    for r, run in enumerate(NAMES):
        for m, measure in enumerate(MEASURES):
            v = per_query[(run, measure)]
            assert cmp.aggregate[r, m] == agg[(run, measure)]
            assert cmp.std[r, m] == pytest.approx(v.std(ddof=1), rel=1e-12)
            assert cmp.se[r, m] == pytest.approx(v.std(ddof=1) / math.sqrt(50), rel=1e-12)
            low, high = sps.t.interval(0.95, 49, loc=v.mean(), scale=sps.sem(v))
            assert (cmp.ci_low[r, m], cmp.ci_high[r, m]) == pytest.approx((low, high), abs=1e-12)


def test_frames_and_rows(ttest_cmp) -> None:
    cmp = ttest_cmp
    frame = cmp.to_dataframe()
    assert list(frame.columns) == list(COLUMNS)
    # baseline: one row per measure without a baseline; others: one comparison row per measure
    assert len(frame) == 3 * len(MEASURES)
    base_rows = frame[frame.run == NAMES[0]]
    assert base_rows.baseline.isna().all() and base_rows.p_value.isna().all()
    rows = frame[frame.run == NAMES[2]]
    assert (rows.baseline == NAMES[0]).all() and rows.query_id.isna().all()
    assert cmp.tests.shape == (2 * len(MEASURES), 12)
    assert cmp.scores.shape == (3 * len(MEASURES), 8)
    pq = cmp.per_query
    assert len(pq) == 3 * 50 * len(MEASURES)
    one = pq[(pq.run == NAMES[1]) & (pq.measure == "nDCG@10")].set_index("query_id")
    base = pq[(pq.run == NAMES[0]) & (pq.measure == "nDCG@10")].set_index("query_id")
    np.testing.assert_allclose(one.difference, one.value - base.value)
    full = cmp.to_dataframe(per_query=True)
    assert len(full) == len(frame) + len(pq)


def test_missing_queries_leave_the_comparison(tmp_path) -> None:
    qrels = {"1": {"a": 1, "b": 0}, "2": {"c": 1}, "3": {"d": 1}, "4": {"e": 1, "f": 1}}
    full = {"1": {"a": 2, "b": 1}, "2": {"c": 1, "x": 2}, "3": {"y": 1, "d": 0.5}, "4": {"f": 1}}
    part = {"1": {"b": 2, "a": 1}, "2": {"c": 1}}
    runs = [rankeval.Run.from_dict(full, "full"), rankeval.Run.from_dict(part, "part")]
    cmp = rankeval.compare(qrels, runs, "AP", options=rankeval.EvalOptions(missing_zero=False))
    assert cmp.n[0, 0] == 2  # queries 1 and 2 only
    assert np.isnan(cmp.values[1, 0, 2:]).all()
    zero = rankeval.compare(qrels, runs, "AP")
    assert zero.n[0, 0] == 4


def test_paper_tables(ttest_cmp) -> None:
    md = ttest_cmp.to_markdown(spread="std")
    lines = md.splitlines()
    assert lines[0] == "| run | AP(rel=2) | nDCG@10 | RR(rel=2) |"
    assert lines[2].startswith("| bm25.run.gz (baseline) | 0.1731 ± ")
    t5 = lines[4]
    assert t5.startswith("| bm25-t5\\_zs\\_.run.gz | **0.2383**† ± ")  # best, significantly better; _ escaped
    assert "‡" in lines[3]  # bm25-rm3 is significantly worse on nDCG@10
    assert "† / ‡: significantly better / worse than bm25.run.gz (paired t-test" in md
    assert "Holm correction per measure" in md and "standard deviation over queries" in md
    tex = ttest_cmp.to_latex()
    assert tex.startswith("\\begin{table}\n\\centering\n\\caption{Best value per measure in bold.")
    assert "{!}{%\n\\begin{tabular}{lrrr}\n\\toprule\n" in tex
    assert "bm25-t5\\_zs\\_.run.gz & \\textbf{0.2383}\\textsuperscript{\\dag}" in tex
    assert "\\caption{Best value per measure in bold. \\dag{} / \\ddag{}" in tex
    assert "$\\alpha$ = 0.05" in tex and tex.rstrip().endswith("\\end{table}")
    assert " $\\pm$ " not in tex
    assert " $\\pm$ " in ttest_cmp.to_latex(spread="se")
    with pytest.raises(UsageError, match="unknown spread"):
        ttest_cmp.to_markdown(spread="var")


def test_all_pairs_table_uses_letters() -> None:
    cmp = rankeval.compare(
        QRELS,
        RUNS,
        ["nDCG@10"],
        stats=rankeval.CompareOptions(pairs="all", test="randomization", samples=2000),
    )
    md = cmp.to_markdown()
    assert "| (a) bm25.run.gz |" in md and "| (c) bm25-t5\\_zs\\_.run.gz |" in md
    # t5 is significantly better than both bm25 (a) and bm25-rm3 (b)
    assert "**0.4084**<sup>a,b</sup>" in md
    assert "Superscript letters: significantly better than the run with that letter" in md
    assert "\\textsuperscript{a,b}" in cmp.to_latex()


def test_bad_arguments() -> None:
    with pytest.raises(UsageError, match="at least two runs"):
        rankeval.compare(QRELS, RUNS[:1], "AP")
    with pytest.raises(UsageError, match=r"unknown baseline 'nope'; the runs are: bm25\.run\.gz, "):
        rankeval.compare(QRELS, RUNS, "AP", stats=rankeval.CompareOptions(baseline="nope"))
    for kw, msg in [
        ({"test": "z"}, "unknown test 'z'"),
        ({"correction": "sidak"}, "unknown correction"),
        ({"pairs": "some"}, "unknown pairs"),
        ({"ci": "bca"}, "unknown ci"),
        ({"family": "x"}, "unknown family"),
        ({"alpha": 1.5}, "alpha must be between 0 and 1"),
        ({"samples": 0}, "samples must be an integer from 1 to 10,000,000"),
    ]:
        with pytest.raises(UsageError, match=msg):
            rankeval.compare(QRELS, RUNS, "AP", stats=rankeval.CompareOptions(**kw))
    named = rankeval.compare(
        QRELS, RUNS, "AP", stats=rankeval.CompareOptions(baseline=str(RUNS[1]))
    )  # a path works too
    assert named.baseline == NAMES[1]


# ------------------------------------------------------------------- random baseline
def expectation_by_enumeration(qrels, candidates, measures, **options) -> dict[tuple[str, str], float]:
    """Mean over all orderings of each query's candidates, each ordering evaluated by the
    measure itself (one query per ordering, one evaluate call)."""
    run, judged = {}, {}
    for qid, docs in candidates.items():
        for i, perm in enumerate(itertools.permutations(docs)):
            key = f"{qid}#{i}"
            run[key] = {d: float(len(perm) - rank) for rank, d in enumerate(perm)}
            judged[key] = qrels[qid]
    for qid in qrels:
        if qid not in candidates:
            judged[f"{qid}#none"] = qrels[qid]
    df = rankeval.evaluate(judged, run, measures, options=rankeval.EvalOptions(**options))
    df = df[df.query_id.notna()].copy()
    df["qid"] = df.query_id.str.split("#").str[0]
    return df.groupby(["qid", "measure"])["value"].mean().to_dict()


def small_instance(seed: int, max_n: int = 6) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    qrels, candidates = {}, {}
    for q in range(4):
        n = int(rng.integers(1, max_n + 1))
        docs = [f"d{q}_{i}" for i in range(n)]
        judged = {d: int(rng.integers(-1, 4)) for d in docs if rng.random() < 0.7}
        for i in range(int(rng.integers(0, 3))):  # relevant documents the run did not retrieve
            judged[f"u{q}_{i}"] = int(rng.integers(1, 4))
        if not judged:
            judged[docs[0]] = 1
        qrels[f"q{q}"] = judged
        candidates[f"q{q}"] = docs
    qrels["q9"] = {"z": 2}  # not retrieved: scores 0 (trec_eval -c)
    return qrels, candidates


EXACT_MEASURES = [
    "AP",
    "AP@3",
    "AP(rel=2)",
    "P",
    "P@3",
    "P(rel=2)@10",
    "R@2",
    "R(rel=3)",
    "RR",
    "RR@2",
    "RR(rel=2)",
    "nDCG",
    "nDCG@3",
    "Success@2",
    "Success(rel=2)",
    "Rprec",
    "Judged@3",
    "NumRet",
    "NumRel",
    "NumRelRet",
]


@pytest.mark.parametrize(
    "seed, max_n, max_docs", [(0, 6, None), (1, 6, None), (2, 5, 3), (3, 8, None), (4, 7, 4)]
)
def test_random_baseline_exact_equals_enumeration(seed, max_n, max_docs) -> None:
    qrels, candidates = small_instance(seed, max_n)
    run = {q: {d: 1.0 + i for i, d in enumerate(docs)} for q, docs in candidates.items()}
    rb = rankeval.random_baseline(
        qrels, run, EXACT_MEASURES, samples=200, options=rankeval.EvalOptions(max_docs=max_docs)
    )
    assert rb.exact.all()
    ref = expectation_by_enumeration(qrels, candidates, EXACT_MEASURES, max_docs=max_docs)
    for i, measure in enumerate(rb.measures):
        for j, qid in enumerate(rb.query_ids):
            assert rb.values[i, j] == pytest.approx(ref[(qid, measure)], abs=1e-12), (measure, qid)
    # the aggregate is the measure's (mean; counts are summed)
    assert rb.aggregate[rb.measures.index("NumRet")] == pytest.approx(
        rb.values[rb.measures.index("NumRet")].sum()
    )
    assert rb.aggregate[0] == pytest.approx(rb.values[0].mean())


def test_random_baseline_monte_carlo_converges_to_exact() -> None:
    qrels, candidates = small_instance(5, 7)
    run = {q: {d: 1.0 + i for i, d in enumerate(docs)} for q, docs in candidates.items()}
    exact = rankeval.random_baseline(qrels, run, EXACT_MEASURES, samples=4000, seed=1)
    mc = rankeval.random_baseline(qrels, run, EXACT_MEASURES, samples=4000, seed=1, exact=False)
    assert not mc.exact.any()
    np.testing.assert_allclose(mc.aggregate, exact.aggregate, rtol=0.02, atol=0.02)
    np.testing.assert_array_equal(mc.sample_aggregates, exact.sample_aggregates)  # same draws


@pytest.mark.parametrize("n, c", [(4, 2), (6, 2), (4, 3), (5, 5), (9, 1)])
def test_random_positions_are_uniform(n, c) -> None:
    samples = 30_000
    pos = random_positions(np.random.default_rng(n * 10 + c), n, c, samples)
    assert pos.shape == (samples, c) and pos.min() >= 0 and pos.max() < n
    assert all(len(set(row)) == c for row in pos[:1000].tolist())
    keys, counts = np.unique(pos, axis=0, return_counts=True)
    total = math.perm(n, c)
    assert len(keys) == total
    expected = samples / total
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert sps.chi2.sf(chi2, total - 1) > 1e-4


def test_random_baseline_monte_carlo_through_the_measures() -> None:
    """Measures without a closed form (here Bpref and CS-DCG) are estimated by evaluating
    random orderings with the measure itself."""
    qrels, candidates = small_instance(7, 5)
    run = {q: {d: 1.0 + i for i, d in enumerate(docs)} for q, docs in candidates.items()}
    measures = ["Bpref", "CS-DCG@3", "AP(level=1)"]
    rb = rankeval.random_baseline(qrels, run, measures, samples=3000, seed=2)
    assert list(rb.exact) == [False, False, True]
    ref = expectation_by_enumeration(qrels, candidates, measures)
    for i, measure in enumerate(rb.measures[:2]):
        for j, qid in enumerate(rb.query_ids):
            assert rb.values[i, j] == pytest.approx(ref[(qid, measure)], abs=0.08), (measure, qid)
        assert rb.aggregate[i] == pytest.approx(np.mean([ref[(q, measure)] for q in rb.query_ids]), abs=0.03)
    assert rb.sample_aggregates.shape == (3, 3000) and rb.se[0] > 0


def test_random_baseline_map_0_7283() -> None:
    """19 queries, each with 5 candidates of which 3 are relevant: expected MAP 0.7283 (exact),
    spread of the 19-query mean about 0.04 -- Rummer-Downing & Weeds' "0.73 ± 0.04"."""
    qrels = {f"q{i}": {"a": 1, "b": 1, "c": 1, "d": 0, "e": 0} for i in range(19)}
    run = {f"q{i}": {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1} for i in range(19)}
    rb = rankeval.random_baseline(qrels, run, "AP", samples=10_000, seed=0)
    assert rb.aggregate[0] == pytest.approx((1.5 + 0.3 * (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5)) / 3, abs=1e-15)
    assert f"{rb.aggregate[0]:.4f}" == "0.7283"
    # exact spread: sd of AP over the 10 placements of the relevant docs, / sqrt(19)
    aps = [sum((j + 1) / (p + 1) for j, p in enumerate(c)) / 3 for c in itertools.combinations(range(5), 3)]
    assert rb.se[0] == pytest.approx(np.std(aps) / math.sqrt(19), abs=0.001)
    assert round(float(rb.se[0]), 2) == 0.04
    cmp = rankeval.compare(
        qrels,
        rankeval.Run.from_dict(run, "system"),
        "MAP",
        stats=rankeval.CompareOptions(random_baseline=True, samples=10_000),
    )
    assert cmp.runs == ["system", "random"]
    assert "| random | 0.7283‡ ± 0.037" in cmp.to_markdown(spread="se")
    row = next(r for r in cmp.records() if r["run"] == "random")
    assert row["baseline"] == "system" and row["value"] == pytest.approx(0.728333, abs=1e-6)


def test_random_baseline_name_clash_and_source() -> None:
    with pytest.raises(UsageError, match="named 'random'"):
        rankeval.compare(
            QRELS,
            {"random": RUNS[0], "x": RUNS[1]},
            "AP",
            stats=rankeval.CompareOptions(random_baseline=True),
        )
    cmp = rankeval.compare(
        QRELS, RUNS[:2], "P@10", stats=rankeval.CompareOptions(random_baseline=NAMES[1], samples=500)
    )
    assert cmp.random is not None and cmp.random.source == NAMES[1]
    assert "documents bm25-rm3.run.gz retrieved" in cmp.to_markdown()


# ------------------------------------------------------------------- EvalOptions
def test_the_evaluator_gives_what_the_one_call_functions_give() -> None:
    """One Evaluator, resolved once, and the functions that build one per call agree on
    every result, with options of every kind."""
    opts = rankeval.EvalOptions(missing_zero=False, max_docs=20, nest_sep=None, on_duplicate="first")
    stats = rankeval.CompareOptions(random_baseline=True, samples=200)
    ev = rankeval.Evaluator(QRELS, MEASURES, options=opts)
    assert ev.evaluate(RUNS).equals(rankeval.evaluate(QRELS, RUNS, MEASURES, options=opts))
    a = ev.compare(RUNS[:2], stats=stats)
    b = rankeval.compare(QRELS, RUNS[:2], MEASURES, options=opts, stats=stats)
    assert a.format("tsv", per_query=True) == b.format("tsv", per_query=True)
    c = ev.random_baseline(RUNS[0], samples=100)
    d = rankeval.random_baseline(QRELS, RUNS[0], MEASURES, options=opts, samples=100)
    assert np.array_equal(c.values, d.values) and np.array_equal(c.sample_aggregates, d.sample_aggregates)
    curve = parameter_curve(QRELS, RUNS[:1], "nDCG@{5,10}", options=opts)
    assert curve.equals(ev.curve(RUNS[:1], "nDCG@{5,10}"))
    aggregates = rankeval.evaluate(QRELS, RUNS[0], "nDCG@5 nDCG@10", options=opts).query("query_id.isna()")
    assert curve["value"].tolist() == aggregates["value"].tolist()


def test_eval_options_checks() -> None:
    with pytest.raises(UsageError, match="max_docs must be an integer from 1 to 2147483647"):
        rankeval.EvalOptions(max_docs=0)
    with pytest.raises(UsageError, match="nest_sep must be a non-empty string without whitespace"):
        rankeval.EvalOptions(nest_sep=" ")
    with pytest.raises(UsageError, match="judged_only must be True or False, not 'yes'"):
        rankeval.EvalOptions(judged_only="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="float32_scores must be True or False, not 1"):
        rankeval.EvalOptions(float32_scores=1)  # type: ignore[arg-type]
    opts = rankeval.EvalOptions(max_docs=10)
    with pytest.raises(AttributeError):
        opts.max_docs = 5  # type: ignore[misc]
    with pytest.raises(UsageError, match=r"options must be a rankeval\.EvalOptions"):
        rankeval.compare(QRELS, RUNS, "AP", options={"max_docs": 5})  # type: ignore[arg-type]
    clef = rankeval.EvalOptions(compat="clef")  # a dialect, of the TAR measures only
    with pytest.raises(UsageError, match="compare applies no compat mode"):
        rankeval.compare(QRELS, RUNS, "tar_num_docs", options=clef)
    with pytest.raises(UsageError, match="the random baseline applies no compat mode"):
        rankeval.random_baseline(QRELS, RUNS[0], "tar_num_docs", options=clef)
    with pytest.raises(UsageError, match="compat 'clef': none of the measures AP has a compat mode"):
        rankeval.compare(QRELS, RUNS, "AP", options=clef)


# ----------------------------------------------------------------- curves and plots
def test_expand_template() -> None:
    assert expand_template("hTBG@h={1m,5m,1h}") == (
        "h",
        ["1m", "5m", "1h"],
        ["hTBG@h=1m", "hTBG@h=5m", "hTBG@h=1h"],
    )
    assert expand_template("nDCG@{5, 10}") == (None, ["5", "10"], ["nDCG@5", "nDCG@10"])
    assert expand_template("RBP(p={0.5,0.8})")[2] == ["RBP(p=0.5)", "RBP(p=0.8)"]
    for bad in ("nDCG@10", "nDCG@{5}{10}", "nDCG{5,10}", "nDCG@{}"):
        with pytest.raises(UsageError):
            expand_template(bad)


def test_parameter_curve_htbg_half_life() -> None:
    toy = DATA / "htbg-toy"
    frame = parameter_curve(toy / "truth.json", toy / "prediction.json", "hTBG@h={3,5,10}")
    assert list(frame.x) == [3.0, 5.0, 10.0] and set(frame.parameter) == {"h"}
    expected = json.loads((toy / "expected.json").read_text())["hierarchical"]["evaluate"]
    for h, value in zip(["3", "5", "10"], frame.value, strict=True):
        assert value == pytest.approx((expected["q_1"][h] + expected["q_2"][h]) / 2, abs=1e-12)


def test_plots_are_written(tmp_path, ttest_cmp) -> None:
    curve = parameter_curve(QRELS, RUNS, "nDCG@{1,5,10,100}")
    paths = ttest_cmp.plot(tmp_path / "plots", curves=[curve])
    names = sorted(p.name for p in paths)
    assert "differences-nDCG@10-bm25-t5_zs_.run.gz.png" in names
    assert "distribution-AP_rel=2.png" in names and "curve-nDCG@1_5_10_100.png" in names
    assert len(paths) == len(MEASURES) * 3 + 1
    for p in paths:
        assert p.read_bytes()[:8] == PNG
    svg = ttest_cmp.plot(tmp_path / "svg", fmt="svg")
    assert all(b"<svg" in p.read_bytes()[:500] for p in svg)
    pdf = ttest_cmp.plot(tmp_path / "pdf", fmt="pdf")
    assert all(p.read_bytes()[:5] == b"%PDF-" for p in pdf)
    with pytest.raises(UsageError, match="unknown plot format"):
        ttest_cmp.plot(tmp_path, fmt="gif")


# ----------------------------------------------------------------------------- CLI
def invoke(args: list) -> object:
    return CliRunner().invoke(app, ["compare", *[str(a) for a in args]])


def ok(args: list) -> str:
    result = invoke(args)
    assert result.exception is None, repr(result.exception)
    assert result.exit_code == 0, result.output
    return result.stdout  # (warnings, on stderr, are not results)


BASE_ARGS = [QRELS, *RUNS, "-m", "AP(rel=2)", "-m", "nDCG@10", "--samples", "1000"]


def test_cli_trec() -> None:
    out = ok([*BASE_ARGS, "--correction", "holm"])
    lines = out.splitlines()
    assert len(lines) == 6
    assert lines[0].split("\t")[::2] == ["bm25.run.gz", "all"]
    fields = lines[5].split("\t")
    assert fields[0] == "bm25-t5_zs_.run.gz" and fields[1].strip() == "nDCG@10" and fields[3] == "0.4084"
    assert fields[4] == "vs bm25.run.gz" and fields[5] == "+0.1047" and fields[6].startswith("p=")
    assert fields[-1] == "*"


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_cli_json(fmt) -> None:
    out = ok([*BASE_ARGS, "-f", fmt, "--test", "bootstrap", "--random-baseline", "-q"])
    rows = json.loads(out) if fmt == "json" else [json.loads(line) for line in out.splitlines()]
    assert all(list(r) == list(COLUMNS) for r in rows)
    agg = [r for r in rows if r["query_id"] is None]
    assert {r["run"] for r in agg} == {*NAMES, "random"}
    t5 = next(r for r in agg if r["run"] == "bm25-t5_zs_.run.gz" and r["measure"] == "nDCG@10")
    assert t5["baseline"] == "bm25.run.gz" and t5["p_value"] <= 0.01 and t5["p_adjusted"] == t5["p_value"]
    assert t5["ci_low"] < t5["value"] < t5["ci_high"] and t5["significant"] is True
    base = next(r for r in agg if r["run"] == "bm25.run.gz")
    assert base["baseline"] is None and base["p_value"] is None
    per_q = [r for r in rows if r["query_id"] is not None]
    assert len(per_q) == 4 * 50 * 2 and all(r["p_value"] is None for r in per_q)


@pytest.mark.parametrize("fmt, sep", [("tsv", "\t"), ("csv", ",")])
def test_cli_tsv_csv(fmt, sep) -> None:
    out = ok([*BASE_ARGS, "-f", fmt, "-p", "6"])
    rows = list(csv.reader(io.StringIO(out), delimiter=sep))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 1 + 6
    t5 = dict(zip(COLUMNS, rows[-1], strict=True))
    assert t5["run"] == "bm25-t5_zs_.run.gz" and t5["value"] == "0.408399" and t5["n"] == "50"
    assert t5["significant"] == "true" and rows[1][1] == ""


def test_cli_markdown_and_latex(tmp_path) -> None:
    md = ok([*BASE_ARGS, "-f", "markdown", "--spread", "std", "--random-baseline", "--correction", "bh"])
    assert md.startswith("| run | AP(rel=2) | nDCG@10 |\n|---|---:|---:|\n| bm25.run.gz (baseline) |")
    assert "| random |" in md and "Benjamini-Hochberg" in md
    out = tmp_path / "table.tex"
    assert ok([*BASE_ARGS, "-f", "latex", "-o", out]) == ""
    tex = out.read_text()
    assert "\\begin{tabular}{lrr}" in tex and "\\textbf{0.4084}\\textsuperscript{\\dag}" in tex


def test_cli_plots(tmp_path) -> None:
    ok([*BASE_ARGS, "--plot", tmp_path / "p", "--curve", "nDCG@{5,10,20}", "--no-progress"])
    files = sorted((tmp_path / "p").iterdir())
    assert len(files) == 2 * 3 + 1
    assert all(f.read_bytes()[:8] == PNG for f in files)
    ok([*BASE_ARGS, "--plot", tmp_path / "s", "--plot-format", "svg"])
    assert all(f.suffix == ".svg" for f in (tmp_path / "s").iterdir())


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--baseline", "nope.run"], "unknown baseline 'nope.run'; the runs are: bm25.run.gz"),
        (["--test", "ztest"], "unknown test 'ztest'; expected one of ttest, wilcoxon"),
        (["--correction", "sidak"], "unknown correction 'sidak'"),
        (["--pairs", "some"], "unknown pairs 'some'"),
        (["-f", "html"], "unknown format 'html'; expected one of trec, tsv"),
        (["--alpha", "0"], "alpha must be between 0 and 1"),
        (["--samples", "0"], "samples must be an integer from 1 to 10,000,000"),
        (["--plot-format", "gif"], "unknown plot format 'gif'; expected one of png, pdf, svg"),
        (["--curve", "nDCG@{5,10}"], "--curve writes a plot: give --plot DIR or --panels FILE"),
        (["--plot", "/tmp/x", "--curve", "nDCG@10"], "a curve template needs exactly one"),
        (["--spread", "var"], "unknown spread 'var'; expected one of none, std, se"),
        (["-m", "nDCG@x"], "nDCG@x"),
    ],
)
def test_cli_errors(extra, message) -> None:
    result = invoke([*BASE_ARGS, *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, UsageError)


def test_cli_needs_two_runs_and_a_measure() -> None:
    result = invoke([QRELS, RUNS[0], "-m", "AP"])
    assert result.exit_code == 2 and "compare needs at least two runs" in result.output
    assert ok([QRELS, RUNS[0], "-m", "P@10", "--random-baseline", "--samples", "200"]).count("\n") == 2
    result = invoke([QRELS, *RUNS])
    assert result.exit_code == 2 and "no measure given" in result.output


def test_progress_bar_when_asked(capsys) -> None:
    cmp = rankeval.compare(
        QRELS, RUNS[:2], "AP", stats=rankeval.CompareOptions(test="bootstrap", samples=500), progress=True
    )
    assert cmp.p_value.shape == (1, 1)
