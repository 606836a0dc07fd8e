"""rankeval.meta.stability: swap rates (Voorhees & Buckley 2002; with replacement, Sanderson &
Zobel 2005) and the correlation of subset rankings with the full ranking, on a hand-computed
toy, on explicit draws against scipy, by their properties, and on real runs."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import rankeval
from rankeval.errors import TieWarning, UsageError
from rankeval.meta.stability import (
    plot_stability,
    plot_swap_rates,
    subset_draws,
    swap_draws,
    swap_rates,
    topic_subset_stability,
)
from rankeval.meta.values import Matrix
from tests.conftest import DATA

DL = DATA / "dl-hard"

# 4 topics x 3 systems
TOY = {
    "A": {"q1": 0.5, "q2": 0.3, "q3": 0.1, "q4": 0.2},
    "B": {"q1": 0.3, "q2": 0.4, "q3": 0.6, "q4": 0.5},
    "C": {"q1": 0.1, "q2": 0.1, "q3": 0.2, "q4": 0.4},
}
# two draws of size 2: (Q1, Q2) = ({q1, q2}, {q3, q4}) and ({q1, q3}, {q2, q4})
TOY_DRAWS = {2: np.array([[[0, 1], [2, 3]], [[0, 2], [1, 3]]])}
# By hand. Draw 1: means on {q1,q2} A .40, B .35, C .10; on {q3,q4} A .15, B .55, C .30:
# A-B d1 = .05, d2 = -.40 swap; A-C d1 = .30, d2 = -.15 swap; B-C d1 = .25, d2 = .25 no swap.
# Draw 2: on {q1,q3} A .30, B .45, C .15; on {q2,q4} A .25, B .45, C .25:
# A-B d1 = -.15, d2 = -.20 no swap; A-C d1 = .15, d2 = 0 (a tie: no swap); B-C .30, .20 no swap.
TOY_RATES = [  # (bin, pairs, swaps) with bins of 0.01
    (0.05, 1, 1),
    (0.15, 2, 0),
    (0.25, 1, 0),
    (0.30, 2, 1),
]


def test_swap_rates_of_the_toy_by_hand() -> None:
    got = swap_rates(TOY, draws=TOY_DRAWS, bins=0.01)
    want = pd.DataFrame(
        [(2, b, p, s, s / p) for b, p, s in TOY_RATES], columns=["size", "bin", "pairs", "swaps", "rate"]
    )
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    coarse = swap_rates(TOY, draws=TOY_DRAWS, bins=0.1)  # Δ .05 falls in [0, .1), .15 in [.1, .2) ...
    assert list(zip(coarse["bin"], coarse["pairs"], coarse["swaps"], strict=True)) == [
        (0.0, 1, 1),
        (0.1, 2, 0),
        (0.2, 1, 0),
        (0.3, 2, 1),
    ]


def _strong(n: int, m: int, seed: int) -> Matrix:
    """m systems whose true means are 0.05 apart, topic effects and noise (sd 0.2)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 1)) * 0.5 + np.arange(m) * 0.05 + rng.normal(0, 0.2, (n, m))
    return Matrix(tuple(f"s{j}" for j in range(m)), tuple(f"t{i:03d}" for i in range(n)), x)


@pytest.mark.parametrize("replacement", [False, True])
def test_swap_rate_properties(replacement: bool) -> None:
    mat = _strong(40, 5, 1)
    sizes = [2, 10, 20] if not replacement else [2, 20, 40]
    rates = swap_rates(mat, sizes=sizes, samples=200, replacement=replacement, seed=4)
    assert ((rates["rate"] >= 0) & (rates["rate"] <= 1)).all()
    assert (rates["swaps"] <= rates["pairs"]).all() and (
        rates["rate"] == rates["swaps"] / rates["pairs"]
    ).all()
    assert (rates.groupby("size")["pairs"].sum() == 200 * 10).all()  # every pair once per draw
    again = swap_rates(mat, sizes=sizes, samples=200, replacement=replacement, seed=4)
    pd.testing.assert_frame_equal(rates, again)  # reproducible by seed
    explicit = swap_rates(mat, draws=swap_draws(40, sizes, 200, replacement=replacement, seed=4))
    pd.testing.assert_frame_equal(rates, explicit)  # the seed's draws are swap_draws'
    other = swap_rates(mat, sizes=sizes, samples=200, replacement=replacement, seed=5)
    assert not rates.equals(other)


def test_disjoint_sets_without_replacement() -> None:
    for c, d in swap_draws(21, None, 50, seed=1).items():
        assert c <= 10 and d.shape == (50, 2, c)
        for first, second in d:
            assert len(set(first) | set(second)) == 2 * c  # no topic twice, none in both


@pytest.mark.parametrize("replacement", [False, True])
def test_identical_systems_never_swap(replacement: bool) -> None:
    rng = np.random.default_rng(2)
    same = np.repeat(rng.random((30, 1)), 3, axis=1)
    rates = swap_rates(Matrix(("a", "b", "c"), tuple(map(str, range(30))), same), replacement=replacement)
    assert rates["swaps"].sum() == 0 and set(rates["bin"]) == {0.0}


@pytest.mark.parametrize("replacement", [False, True])
def test_more_topics_fewer_swaps(replacement: bool) -> None:
    rates = swap_rates(_strong(100, 8, 3), sizes=[5, 10, 25, 50], samples=300, replacement=replacement)
    totals = rates.groupby("size")[["swaps", "pairs"]].sum()
    overall = list(totals["swaps"] / totals["pairs"])
    assert overall == sorted(overall, reverse=True) and overall[0] > 2 * overall[-1]


def test_subset_stability_equals_scipy_on_explicit_draws() -> None:
    mat = _strong(30, 6, 5)
    draws = subset_draws(30, [3, 10, 30], 50, seed=8)
    got = topic_subset_stability(mat, draws=draws)  # tau_b
    full = mat.values.mean(axis=0)
    for row in got.itertuples():
        taus = [scipy_stats.kendalltau(full, mat.values[s].mean(axis=0)).statistic for s in draws[row.size]]
        assert row.samples == 50
        assert row.mean == pytest.approx(np.mean(taus), abs=1e-12)
        assert row.std == pytest.approx(np.std(taus), abs=1e-12)
        assert (row.q05, row.q95) == pytest.approx(tuple(np.quantile(taus, [0.05, 0.95])), abs=1e-12)
    # all 30 topics: the full ranking (tau_b's square root leaves 1 - 1e-16)
    assert got["mean"].iloc[-1] == pytest.approx(1.0, abs=1e-12) and got["std"].iloc[-1] == pytest.approx(
        0.0, abs=1e-12
    )


@pytest.mark.parametrize("method", ["tau_b", "tau_ap_b", "spearman", "pearson"])
def test_subset_stability_grows_with_size_and_is_reproducible(method: str) -> None:
    mat = _strong(60, 8, 6)
    got = topic_subset_stability(mat, sizes=[5, 15, 30, 60], samples=100, method=method, seed=1)
    assert list(got["mean"]) == sorted(got["mean"]) and got["mean"].iloc[0] < got["mean"].iloc[-1]
    assert (got["q05"] <= got["mean"]).all() and (got["mean"] <= got["q95"] + 1e-12).all()
    again = topic_subset_stability(mat, sizes=[5, 15, 30, 60], samples=100, method=method, seed=1)
    pd.testing.assert_frame_equal(got, again)


def test_default_sizes() -> None:
    assert list(swap_draws(50, samples=1)) == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24]
    assert list(swap_draws(50, samples=1, replacement=True)) == [5, 10, 15, 20, 25, 30, 35, 40, 45, 50]
    assert list(subset_draws(7, samples=1)) == [1, 2, 3, 4, 5, 6, 7]


@pytest.fixture(scope="module")
def dl_frame() -> Any:
    with warnings.catch_warnings():  # the runs have tied scores: not what these tests are about
        warnings.simplefilter("ignore", TieWarning)
        return rankeval.Evaluator(DL / "dl_hard-passage.qrels", ["ap", "ndcg_cut_10"]).evaluate(
            sorted(DL.glob("*.run.gz"))
        )


def test_stability_on_real_runs(dl_frame: Any, tmp_path: Path) -> None:
    rates = swap_rates(dl_frame, "AP", sizes=[5, 10, 25], samples=200, bins=0.02)
    assert set(rates["size"]) == {5, 10, 25} and (rates.groupby("size")["pairs"].sum() == 200 * 15).all()
    assert plot_swap_rates(rates, tmp_path / "swap.pdf").read_bytes()[:5] == b"%PDF-"
    stability = {
        m: topic_subset_stability(dl_frame, m, sizes=[5, 10, 25, 50], samples=100, method="tau_ap_b")
        for m in ("AP", "nDCG@10")
    }
    for f in stability.values():
        assert f["mean"].iloc[-1] == pytest.approx(1.0, abs=1e-12)  # 50 topics: all of them
    assert plot_stability(stability, tmp_path / "stab.svg").read_text().lstrip().startswith("<?xml")
    assert plot_stability(stability["AP"], tmp_path / "one.png").exists()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: swap_rates(TOY, sizes=[3]),
            "topic-set size 3 out of range: the swap method takes sizes from 1 to 2",
        ),
        (lambda: swap_rates(TOY, sizes=[5], replacement=True), "takes sizes from 1 to 4"),
        (lambda: swap_rates(TOY, sizes=[]), "no topic-set size given"),
        (lambda: swap_rates(TOY, bins=0), "bins must be a positive bin width"),
        (lambda: swap_rates(TOY, samples=0), "samples must be an integer"),
        (lambda: swap_rates(TOY, seed=-1), "seed"),
        (lambda: swap_rates({"a": {"q": 1.0}}), "at least two runs"),
        (lambda: swap_rates({"a": {"q": 1.0}, "b": {"q": 0.0}}), "needs more topics"),
        (lambda: swap_rates(TOY, draws={2: np.zeros((3, 2, 3), int)}), "expected integer topic indices"),
        (lambda: swap_rates(TOY, draws={2: np.full((3, 2, 2), 4)}), "topic indices must be from 0 to 3"),
        (lambda: topic_subset_stability(TOY, method="kendall"), "unknown correlation method 'kendall'"),
        (lambda: topic_subset_stability(TOY, sizes=[5]), "subset stability takes sizes from 1 to 4"),
        (lambda: topic_subset_stability(TOY, draws={2: np.zeros((3, 2, 2), int)}), "of shape (samples, 2)"),
        (lambda: plot_swap_rates(swap_rates(TOY).iloc[:0], "x.png"), "no swap rate to plot"),
        (lambda: plot_stability({}, "x.png"), "no stability result to plot"),
        (lambda: plot_swap_rates(swap_rates(TOY), "x.jpg"), "the file name must end in"),
    ],
)
def test_bad_arguments_are_usage_errors(call: Any, message: str) -> None:
    with pytest.raises(UsageError) as err:
        call()
    assert message in str(err.value)
