"""Properties of CS-DCG / nCS-DCG against brute force over all rankings of small pools.

A *ranking of the pool* is an ordering of all the query's judged documents; CS-DCG@k reads
its top min(k, m) documents (m = pool size), so brute force enumerates every ordered choice
of min(k, m) documents of the pool (``itertools.permutations(pool, min(k, m))``), which are
exactly the distinct top-k prefixes of all m! orderings.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rankeval_csdcg import exact_bounds, gain_of, greedy_bounds

import rankeval
from rankeval.errors import RankevalWarning

C = 12.0

pools = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=8)
cutoffs = st.integers(1, 10)
gains = st.sampled_from(["exp", "linear"])


def brute_force(rel: list[int], sens: list[int], k: int, gain: str, cost: float = C):
    """CS-DCG@k of every distinct top-min(k, m) of the pool: (rankings, values)."""
    g = gain_of(np.array(rel), gain)
    s = np.array(sens, dtype=float)
    m = len(rel)
    tops = np.array(list(itertools.permutations(range(m), min(k, m))))
    disc = 1 / np.log2(np.arange(tops.shape[1]) + 2)
    return tops, (g[tops] * disc).sum(axis=1) - cost * s[tops].sum(axis=1)


def sasc_greedy(rel: list[int], sens: list[int], k: int, gain: str, cost: float = C) -> tuple[float, float]:
    """A line-by-line transcription of SASC's CSNDCGScorer.getMaxDCG / getMinDCG (the
    paper's Algorithm 1), with topK = min(k, m) as its score() uses."""
    g = list(gain_of(np.array(rel), gain))
    s = [float(x) for x in sens]
    top_k = min(k, len(rel))

    def disc(i: int) -> float:
        return 1 / math.log2(i + 2)

    def value(j: int, i: int) -> float:
        return g[j] * disc(i) - s[j] * cost

    def run(best: bool) -> float:
        better = (lambda a, b: a > b) if best else (lambda a, b: a < b)
        visited = [False] * len(g)
        total = 0.0
        left = -1
        for i in range(top_k):  # phase 1
            pick, start = -1, -math.inf if best else math.inf
            for j in range(len(g)):
                first_kind = (g[j] != 0 and s[j] == 0) if best else (g[j] == 0 and s[j] > 0)
                if visited[j] or not first_kind:
                    continue
                if better(value(j, i), start):
                    pick, start = j, value(j, i)
            if pick != -1:
                total += start
                visited[pick] = True
                left = i
        right = top_k
        for i in range(top_k - 1, left, -1):  # phase 2
            pick, start = -1, -math.inf if best else 0.0
            for j in range(len(g)):
                second_kind = (g[j] == 0 and s[j] == 0) if best else (g[j] != 0 and s[j] > 0)
                if visited[j] or not second_kind:
                    continue
                if better(value(j, i), start):
                    pick, start = j, value(j, i)
            if pick != -1:
                total += start
                visited[pick] = True
                right = i
        for i in range(left + 1, right):  # phase 3
            pick, start = -1, -math.inf if best else math.inf
            for j in range(len(g)):
                if not visited[j] and better(value(j, i), start):
                    pick, start = j, value(j, i)
            if pick != -1:
                total += start
                visited[pick] = True
        return total

    return run(True), run(False)


def one_query(pool):
    rel = [r for r, _ in pool]
    sens = [s for _, s in pool]
    return np.zeros(len(pool), dtype=np.int64), rel, sens


# ------------------------------------------------------------------------ bounds
@settings(max_examples=300, deadline=None)
@given(pools, cutoffs, gains)
def test_exact_bounds_equal_brute_force(pool, k, gain):
    query, rel, sens = one_query(pool)
    best, worst = exact_bounds(query, gain_of(np.array(rel), gain), np.array(sens, float), 1, k, C)
    _, every = brute_force(rel, sens, k, gain)
    assert best[0] == pytest.approx(every.max(), abs=1e-9)
    assert worst[0] == pytest.approx(every.min(), abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 3), st.sampled_from([0, 0, 0.25, 0.5, 1, 1.5, 2, 3])),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 3),
    gains,
    st.sampled_from([12.0, 2.0, 0.3]),
)
def test_exact_bounds_with_many_grades_small_cutoffs_and_costs(pool, k, gain, cost):
    # small k and many distinct gains and sensitivity grades: the candidate pruning (k per
    # grade and k per gain) is active; grade -1 gains nothing
    query, rel, sens = one_query(pool)
    g = gain_of(np.array(rel), gain)
    best, worst = exact_bounds(query, g, np.array(sens, float), 1, k, cost)
    _, every = brute_force(rel, sens, k, gain, cost)
    assert best[0] == pytest.approx(every.max(), abs=1e-9)
    assert worst[0] == pytest.approx(every.min(), abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(pools, cutoffs, gains)
def test_greedy_bounds_are_algorithm_1_and_never_beat_exact(pool, k, gain):
    query, rel, sens = one_query(pool)
    g = gain_of(np.array(rel), gain)
    s = np.array(sens, float)
    g_best, g_worst = greedy_bounds(query, g, s, 1, k, C)
    ref_best, ref_worst = sasc_greedy(rel, sens, k, gain)
    assert g_best[0] == pytest.approx(ref_best, abs=1e-9)
    assert g_worst[0] == pytest.approx(ref_worst, abs=1e-9)
    best, worst = exact_bounds(query, g, s, 1, k, C)
    assert worst[0] - 1e-9 <= g_worst[0] and g_best[0] <= best[0] + 1e-9


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(pools, cutoffs), min_size=1, max_size=12), gains, st.sampled_from([12.0, 5.0, 0.5]))
def test_bounds_vectorised_over_queries_equal_per_query(queries, gain, cost):
    # one call for many queries with different pools and cutoffs' maximum: each query's
    # bounds equal those of the query alone (the candidates and DP never mix queries)
    k = max(kk for _, kk in queries)
    query = np.concatenate([np.full(len(p), i) for i, (p, _) in enumerate(queries)])
    rel = np.concatenate([[r for r, _ in p] for p, _ in queries])
    sens = np.concatenate([[s for _, s in p] for p, _ in queries]).astype(float)
    order = np.random.default_rng(len(query)).permutation(len(query))  # any order of the pool
    g = gain_of(rel, gain)
    for solve in (exact_bounds, greedy_bounds):
        best, worst = solve(query[order], g[order], sens[order], len(queries), k, cost)
        for i, (p, _) in enumerate(queries):
            alone = solve(
                np.zeros(len(p), np.int64),
                gain_of(np.array([r for r, _ in p]), gain),
                np.array([s for _, s in p], float),
                1,
                k,
                cost,
            )
            assert best[i] == pytest.approx(alone[0][0], abs=1e-9)
            assert worst[i] == pytest.approx(alone[1][0], abs=1e-9)


# ------------------------------------------------------------------------ through evaluate
def _files(tmp: Path, pool, rankings: list[list[int]]) -> tuple[Path, Path]:
    """One query per ranking, each with the same pool: d0..d{m-1} (rel, sens)."""
    qrels, run = [], []
    for n, ranking in enumerate(rankings):
        for d, (rel, sens) in enumerate(pool):
            qrels.append(f"q{n} 0 d{d} {rel}" + (f" sens={sens}" if sens else "") + "\n")
        run += [f"q{n} Q0 d{d} {i + 1} {100 - i} t\n" for i, d in enumerate(ranking)]
    q, r = tmp / "p.qrels", tmp / "p.run"
    q.write_text("".join(qrels))
    r.write_text("".join(run))
    return q, r


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pools, cutoffs, gains, st.randoms(use_true_random=False))
def test_normalised_values_against_brute_force(tmp_path, pool, k, gain, rnd):
    rel = [r for r, _ in pool]
    sens = [s for _, s in pool]
    tops, every = brute_force(rel, sens, k, gain)
    m = len(pool)
    best_top = list(tops[int(np.argmax(every))])
    worst_top = list(tops[int(np.argmin(every))])

    def complete(top):  # a full ranking of the pool starting with *top*
        return top + [d for d in range(m) if d not in top]

    rankings = [complete(best_top), complete(worst_top)]
    rankings += [rnd.sample(range(m), m) for _ in range(8)]
    q, r = _files(tmp_path, pool, rankings)
    specs = [f"CS-DCG(gain={gain})@{k}", f"nCS-DCG(gain={gain})@{k}"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        frame = rankeval.evaluate(q, r, specs)
    measures = [str(rankeval.parse_measure(s)) for s in specs]
    got = {(mm, qq): v for mm, qq, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)}
    hi, lo = every.max(), every.min()
    disc = 1 / np.log2(np.arange(min(k, m)) + 2)
    g = gain_of(np.array(rel), gain)
    for n, ranking in enumerate(rankings):
        top = ranking[: min(k, m)]
        want = float((g[top] * disc).sum() - C * sum(sens[d] for d in top))
        assert got[(measures[0], f"q{n}")] == pytest.approx(want, abs=1e-9)
        value = got[(measures[1], f"q{n}")]
        if hi - lo < 1e-9:
            assert math.isnan(value)  # every ranking is as good as any other: undefined
            continue
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx((want - lo) / (hi - lo), abs=1e-9)
    if hi - lo >= 1e-9:
        assert got[(measures[1], "q0")] == pytest.approx(1.0, abs=1e-12)  # a best ranking
        assert got[(measures[1], "q1")] == pytest.approx(0.0, abs=1e-12)  # a worst ranking


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(pools, st.integers(0, 12)), min_size=1, max_size=6), st.randoms(use_true_random=False)
)
def test_shuffling_qrels_and_run_lines_changes_nothing(tmp_path, queries, rnd):
    qrels, run = [], []
    for n, (pool, extra) in enumerate(queries):
        for d, (rel, sens) in enumerate(pool):
            qrels.append(f"q{n} 0 d{d} {rel}" + (f" sens={sens}" if sens else "") + "\n")
        docs = [f"d{d}" for d in range(len(pool))] + [f"u{i}" for i in range(extra)]  # u: unjudged
        scores = [rnd.choice([1, 2, 3, 4.5]) for _ in docs]  # ties broken by docno
        run += [f"q{n} Q0 {d} 0 {s} t\n" for d, s in zip(docs, scores, strict=True)]
    specs = ["CS-DCG@3", "nCS-DCG@3", "nCS-DCG(bounds=greedy)@5", "CS-DCG-neg@2", "nCS-DCG(agg=gmean)@10"]
    outputs = []
    for shuffle in (False, True):
        q_lines, r_lines = list(qrels), list(run)
        if shuffle:
            rnd.shuffle(q_lines)
            rnd.shuffle(r_lines)
        q, r = tmp_path / "s.qrels", tmp_path / "s.run"
        q.write_text("".join(q_lines))
        r.write_text("".join(r_lines))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RankevalWarning)
            outputs.append(rankeval.evaluate(q, r, specs))
    a, b = outputs
    assert a["query_id"].tolist() == b["query_id"].tolist()
    assert np.allclose(a["value"], b["value"], rtol=0, atol=1e-12, equal_nan=True)


def test_bounds_scale_to_many_queries():
    # 20,000 queries of up to 200 judged documents each, three sensitivity grades: one call
    rng = random.Random(3)
    sizes = [rng.randint(1, 200) for _ in range(20_000)]
    query = np.repeat(np.arange(len(sizes)), sizes)
    nrng = np.random.default_rng(3)
    rel = nrng.integers(0, 3, len(query))
    gain = gain_of(rel, "exp")
    sens = np.where(nrng.random(len(query)) < 0.1, nrng.integers(1, 3, len(query)), 0).astype(float)
    best, worst = exact_bounds(query, gain, sens, len(sizes), 10, C)
    assert (best >= worst - 1e-9).all()
    # spot-check a few small queries against brute force
    starts = np.concatenate(([0], np.cumsum(sizes)))
    for i in [i for i, n in enumerate(sizes) if n <= 6][:20]:
        pool = slice(starts[i], starts[i + 1])
        _, every = brute_force(list(rel[pool]), list(sens[pool]), 10, "exp")
        assert best[i] == pytest.approx(every.max()) and worst[i] == pytest.approx(every.min())
