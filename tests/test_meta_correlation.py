"""rankeval.meta.correlation against ircor's published values, scipy and brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from rankeval.errors import UsageError
from rankeval.meta.correlation import METHODS, RBO, correlation, rbo

# ircor README.md (github.com/julian-urbano/ircor, "Usage" section): x, y and the values
# its examples print (7 significant digits, hence the tolerance of half a unit in the last).
README_X = [0.06, 0.2, 0.27, 0.37, 0.57, 0.63, 0.66, 0.9, 0.91, 0.94]
README_Y = [0.37, 0.06, 0.2, 0.27, 0.57, 0.66, 0.63, 0.91, 0.9, 0.94]
README_Y_TIES = [round(v * 5) / 5 for v in README_Y]  # `y <- round(y*5)/5`
README_X_TIES = [round(v * 5) / 5 for v in README_X]  # `x <- round(x*5)/5`
README_CASES = [
    ("tau", README_X, README_Y, 0.7777778),  # tau(x,y)
    ("tau_ap", README_X, README_Y, 0.7491182),  # tauAP(x,y)
    ("tau_a", README_X, README_Y_TIES, 0.7111111),  # tau_a(x,y), ties in y
    ("tau_ap_a", README_X, README_Y_TIES, 0.6074515),  # tauAP_a(x,y)
    ("tau_b", README_X_TIES, README_Y_TIES, 0.75),  # tau_b(x,y), ties in both
    ("tau_ap_b", README_X_TIES, README_Y_TIES, 0.6269841),  # tauAP_b(x,y)
]

# ircor tests/testthat/helper_data.R (set1..set3) and the values test_tau.R and
# test_tauAP.R expect (4 decimals, checked there with tolerance 5e-5).
SETS = {
    "set1": dict(
        x=[0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
        y=[0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
        xt=[0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
        yt=[0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
    ),
    "set2": dict(
        x=[0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
        y=[0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
        xt=[0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
        yt=[0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
    ),
    "set3": dict(
        x=[0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
        y=[0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
        xt=[0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
        yt=[0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
    ),
}
# (method, set, x field, y field, expected)
TESTTHAT_CASES = [
    ("tau", "set1", "x", "y", 0.9111), ("tau", "set2", "x", "y", 0.2889),
    ("tau", "set3", "x", "y", -0.6889), ("tau", "set1", "y", "x", 0.9111),
    ("tau_a", "set1", "x", "yt", 0.8889), ("tau_a", "set2", "x", "yt", 0.3333),
    ("tau_a", "set3", "x", "yt", -0.6222),
    ("tau_b", "set1", "xt", "yt", 0.9398), ("tau_b", "set2", "xt", "yt", 0.3765),
    ("tau_b", "set3", "xt", "yt", -0.6510), ("tau_b", "set3", "yt", "xt", -0.6510),
    ("tau_ap", "set1", "x", "y", 0.8519), ("tau_ap", "set2", "x", "y", 0.2504),
    ("tau_ap", "set3", "x", "y", -0.6971),
    ("tau_ap_a", "set1", "x", "y", 0.8519), ("tau_ap_a", "set1", "x", "yt", 0.7454),
    ("tau_ap_a", "set2", "x", "yt", 0.2692), ("tau_ap_a", "set3", "x", "yt", -0.5558),
    ("tau_ap_b", "set1", "x", "y", 0.8333), ("tau_ap_b", "set2", "x", "y", 0.2880),
    ("tau_ap_b", "set3", "x", "y", -0.668),
    ("tau_ap_b", "set1", "xt", "yt", 0.7321), ("tau_ap_b", "set2", "xt", "yt", 0.297),
    ("tau_ap_b", "set3", "xt", "yt", -0.7047), ("tau_ap_b", "set1", "yt", "xt", 0.7321),
    ("tau_ap_b", "set2", "yt", "xt", 0.297), ("tau_ap_b", "set3", "yt", "xt", -0.7047),
]  # fmt: skip


@pytest.mark.parametrize(("method", "x", "y", "expected"), README_CASES)
def test_ircor_readme_examples(method: str, x: list[float], y: list[float], expected: float) -> None:
    assert correlation(x, y, method) == pytest.approx(expected, abs=5e-8)


@pytest.mark.parametrize(("method", "name", "fx", "fy", "expected"), TESTTHAT_CASES)
def test_ircor_testthat_values(method: str, name: str, fx: str, fy: str, expected: float) -> None:
    data = SETS[name]
    assert correlation(data[fx], data[fy], method) == pytest.approx(expected, abs=5e-5)


def test_increasing_order_is_the_negated_decreasing_one() -> None:
    # ircor README: tauAP(x,y) and tauAP(-x,-y, decreasing = FALSE) are equivalent
    x, y = np.array(README_X_TIES), np.array(README_Y_TIES)
    for method in ("tau_b", "tau_ap_b", "spearman", "pearson"):
        assert correlation(-x, -y, method, decreasing=False) == correlation(x, y, method)
    assert correlation(-np.array(README_X), -np.array(README_Y), "tau_ap", decreasing=False) == (
        pytest.approx(0.7491182, abs=5e-8)
    )


# --- brute force straight from the definitions -------------------------------------------


def brute_tau_ap(x: list[float], y: list[float]) -> float:
    """Yilmaz et al. (2008), decreasing scores: items in the order of y; C(i) counts
    the items above the i-th that x also puts above it."""
    order = sorted(range(len(y)), key=lambda k: -y[k])
    total = 0.0
    for i in range(1, len(order)):
        c = 0
        for j in range(i):
            if x[order[j]] > x[order[i]]:
                c += 1
        total += c / i
    return 2 / (len(x) - 1) * total - 1


def brute_tau_ap_a(x: list[float], y: list[float]) -> float:
    """Urbano & Marrero (2017): τ_AP,a is the mean τ_AP over every way of breaking y's ties
    (every ordering of every tie group, all equally likely)."""
    groups = [[k for k in range(len(y)) if y[k] == v] for v in sorted(set(y), reverse=True)]
    values = []
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranked = [k for group in orders for k in group]
        strict = [0.0] * len(y)
        for position, k in enumerate(ranked):
            strict[k] = -float(position)
        values.append(brute_tau_ap(x, strict))
    return sum(values) / len(values)


def brute_tau_ap_b_half(x: list[float], y: list[float]) -> float:
    """Urbano & Marrero (2017), the asymmetric τ_AP,b: items not in y's top tie group; C(i)
    the items of the tie groups above i's that x puts strictly above i, divided by how many
    items those groups hold; averaged over those items, rescaled to [-1, 1]."""
    top = max(y)
    total, count = 0.0, 0
    for i in range(len(y)):
        if y[i] == top:
            continue
        above = [j for j in range(len(y)) if y[j] > y[i]]
        total += sum(1 for j in above if x[j] > x[i]) / len(above)
        count += 1
    return 2 * total / count - 1


def brute_tau_ap_b(x: list[float], y: list[float]) -> float:
    return (brute_tau_ap_b_half(x, y) + brute_tau_ap_b_half(y, x)) / 2


distinct = st.lists(st.integers(0, 50), min_size=2, max_size=12, unique=True)
tied = st.lists(st.integers(0, 3), min_size=2, max_size=7)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_tau_ap_equals_its_definition(data: st.DataObject) -> None:
    x = [float(v) for v in data.draw(distinct)]
    y = [float(v) for v in data.draw(st.permutations(x))]
    expected = brute_tau_ap(x, y)
    assert correlation(x, y, "tau_ap") == pytest.approx(expected, abs=1e-9)
    assert correlation(x, y, "tau_ap_a") == pytest.approx(expected, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_tau_ap_a_is_the_expected_tau_ap_over_tie_breakings(data: st.DataObject) -> None:
    y = [float(v) for v in data.draw(tied)]
    x = [float(v) for v in data.draw(st.permutations(list(range(len(y)))))]
    assert correlation(x, y, "tau_ap_a") == pytest.approx(brute_tau_ap_a(x, y), abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(tied, tied)
def test_tau_ap_b_equals_its_definition(x: list[int], y: list[int]) -> None:
    n = min(len(x), len(y))
    fx, fy = [float(v) for v in x[:n]], [float(v) for v in y[:n]]
    if len(set(fx)) == 1 or len(set(fy)) == 1:  # undefined: no item below a top group
        assert math.isnan(correlation(fx, fy, "tau_ap_b"))
        return
    assert correlation(fx, fy, "tau_ap_b") == pytest.approx(brute_tau_ap_b(fx, fy), abs=1e-9)
    assert correlation(fx, fy, "tau_ap_b") == pytest.approx(correlation(fy, fx, "tau_ap_b"), abs=1e-12)


# --- scipy ---------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(tied, tied)
def test_tau_b_spearman_pearson_equal_scipy(x: list[int], y: list[int]) -> None:
    n = min(len(x), len(y))
    a, b = np.array(x[:n], dtype=float), np.array(y[:n], dtype=float)
    if len(set(a)) == 1 or len(set(b)) == 1:  # scipy warns and returns nan; so do we
        assert math.isnan(correlation(a, b, "tau_b")) and math.isnan(correlation(a, b, "pearson"))
        return
    assert correlation(a, b, "tau_b") == pytest.approx(
        stats.kendalltau(a, b, variant="b").statistic, abs=1e-12
    )
    assert correlation(a, b, "spearman") == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert correlation(a, b, "pearson") == pytest.approx(stats.pearsonr(a, b).statistic, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_without_ties_every_kendall_variant_is_one_value(data: st.DataObject) -> None:
    x = [float(v) for v in data.draw(distinct)]
    y = [float(v) for v in data.draw(st.permutations(x))]
    scipy_c = stats.kendalltau(x, y, variant="c").statistic  # Stuart's τ_c = τ_a without ties
    for method in ("tau", "tau_a", "tau_b"):
        assert correlation(x, y, method) == pytest.approx(scipy_c, abs=1e-12)


def test_tau_b_is_scipy_variant_b_not_c() -> None:
    x, y = SETS["set1"]["xt"], SETS["set1"]["yt"]
    ours = correlation(x, y, "tau_b")
    assert ours == pytest.approx(stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)
    assert abs(ours - stats.kendalltau(x, y, variant="c").statistic) > 1e-3


def test_tau_a_counts_pairs_as_in_its_formula() -> None:
    # tau_a = (concordant - discordant) / (n(n-1)/2), ties in y count as neither
    x, y = SETS["set2"]["x"], SETS["set2"]["yt"]
    pairs = list(itertools.combinations(range(len(x)), 2))
    signs = [np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i, j in pairs]
    assert correlation(x, y, "tau_a") == pytest.approx(float(sum(signs)) / len(pairs), abs=1e-12)


# --- inputs --------------------------------------------------------------------------------


def test_mappings_are_matched_by_key() -> None:
    x = dict(zip("abcdefghij", SETS["set1"]["x"], strict=True))
    y = dict(reversed(list(zip("abcdefghij", SETS["set1"]["y"], strict=True))))
    for method in METHODS:
        assert correlation(x, y, method) == correlation(SETS["set1"]["x"], SETS["set1"]["y"], method)


TIES = [1.0, 1.0, 2.0]
STRICT = [1.0, 2.0, 3.0]
BAD_CALLS = [
    # (x, y, method, words the message must hold)
    (TIES, STRICT, "tau", ["ties in x", "tau_b"]),
    (STRICT, TIES, "tau", ["ties in y", "tau_a or tau_b"]),
    (TIES, STRICT, "tau_a", ["ties in x", "tau_b"]),
    (TIES, STRICT, "tau_ap", ["ties in x", "tau_ap_b"]),
    (STRICT, TIES, "tau_ap", ["ties in y", "tau_ap_a or tau_ap_b"]),
    (TIES, STRICT, "tau_ap_a", ["ties in x", "tau_ap_b"]),
    (TIES, STRICT, "rbo", ["ties in x", "rbo"]),
    (STRICT, TIES, "rbo", ["ties in y", "rbo"]),
    (STRICT, STRICT, "kendall", ["unknown correlation method 'kendall'", "tau_b"]),
    (STRICT, [1.0, 2.0], "tau_b", ["same length", "3 and 2"]),
    ([1.0], [2.0], "tau_b", ["at least 2 systems"]),
    (STRICT, [1.0, math.nan, 2.0], "tau_b", ["y has a score that is not a finite number"]),
    ({"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0}, "tau_b", ["only in x: b", "only in y: c"]),
    ({"a": 1.0, "b": 2.0}, [1.0, 2.0], "tau_b", ["both be mappings"]),
    ([[1.0, 2.0]], [[1.0, 2.0]], "tau_b", ["one score per system"]),
]


@pytest.mark.parametrize(("x", "y", "method", "words"), BAD_CALLS)
def test_bad_calls_name_the_problem(x: object, y: object, method: str, words: list[str]) -> None:
    with pytest.raises(UsageError) as caught:
        correlation(x, y, method)  # type: ignore[arg-type]
    for word in words:
        assert word in str(caught.value)


def test_allowed_ties_are_accepted() -> None:
    assert correlation(STRICT, TIES, "tau_a") == pytest.approx(2 / 3)
    assert correlation(TIES, STRICT, "tau_b") == pytest.approx(2 / math.sqrt(6))


# --- RBO -----------------------------------------------------------------------------------


def brute_rbo(first: list[str], second: list[str], p: float, depth: int = 3000) -> tuple[float, float, float]:
    """RBO_min, RBO_max and RBO_ext as the truncated sums (1-p) Σ_d p^(d-1) A_d of Webber et
    al.'s definitions: beyond what is seen, min assumes no new overlap, max that every
    unseen item matches, ext that S's unseen items agree at S's rate X_s/s (for d ≤ l) and
    that the agreement stays at depth l's beyond l."""
    short, long_ = sorted((first, second), key=len)
    s, l = len(short), len(long_)  # noqa: E741 (the paper's names)
    low = high = ext = 0.0

    def seen(d: int) -> int:
        return len(set(short[: min(d, s)]) & set(long_[: min(d, l)]))

    x_s, x_l = seen(s), seen(l)
    for d in range(1, depth + 1):
        x_d = seen(d)
        if d <= s:
            best = x_d
        elif d <= l:
            best = x_d + (d - s)
        else:
            best = min(d, x_l + (d - s) + (d - l))
        guess = x_d + (d - s) * x_s / s if s < d <= l else x_d
        a_ext = guess / d if d <= l else (x_l + (l - s) * x_s / s) / l
        weight = (1 - p) * p ** (d - 1)
        low, high, ext = low + weight * x_d / d, high + weight * best / d, ext + weight * a_ext
    return low, high, ext


def as_scores(items: list[str]) -> dict[str, float]:
    return {item: float(len(items) - k) for k, item in enumerate(items)}


rankings = st.lists(st.sampled_from("abcdefghijklmn"), min_size=1, max_size=10, unique=True)


@settings(max_examples=150, deadline=None)
@given(rankings, rankings, st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_rbo_equals_its_definition(first: list[str], second: list[str], p: float) -> None:
    low, high, ext = brute_rbo(first, second, p)
    got = rbo(as_scores(first), as_scores(second), p)
    assert got.min == pytest.approx(low, abs=1e-9)
    assert got.min + got.residual == pytest.approx(high, abs=1e-9)
    assert got.ext == pytest.approx(ext, abs=1e-9)
    assert -1e-12 <= got.min <= got.ext + 1e-12 <= got.min + got.residual + 2e-12 <= 1 + 3e-12
    assert rbo(as_scores(second), as_scores(first), p) == got  # symmetric


def test_rbo_by_hand() -> None:
    # a > b against b > a, p = 0.5: X_1 = 0, X_2 = 2
    # min = (1-p)/p (Σ_d (X_d - X_2) p^d/d - X_2 ln(1-p)) = -2 (0.5) + 2 ln 2
    # ext = (1-p)/p (0 + (2/2) 0.25) + (2/2) 0.25 = 0.5
    # max: A_1 = 0 and A_d = 1 for d >= 2 at best, (1-p) Σ_{d>=2} p^(d-1) = p = 0.5
    got = rbo({"a": 2.0, "b": 1.0}, {"a": 1.0, "b": 2.0}, 0.5)
    assert got.min == pytest.approx(-1 + 2 * math.log(2), abs=1e-12)
    assert got.ext == pytest.approx(0.5, abs=1e-12)
    assert got.min + got.residual == pytest.approx(0.5, abs=1e-12)


def test_rbo_identical_and_disjoint() -> None:
    same = rbo([5.0, 4.0, 3.0, 2.0], [5.0, 4.0, 3.0, 2.0], 0.9)
    assert same.ext == pytest.approx(1.0, abs=1e-12)
    assert same.min + same.residual == pytest.approx(1.0, abs=1e-12)
    apart = rbo({"a": 2.0, "b": 1.0}, {"c": 2.0, "d": 1.0}, 0.9)
    assert apart.min == 0.0 and apart.ext == 0.0 and apart.residual > 0


def test_rbo_depth_and_correlation() -> None:
    x, y = SETS["set1"]["x"], SETS["set1"]["y"]
    assert correlation(x, y, "rbo", p=0.8) == rbo(x, y, 0.8).ext
    top = [int(i) for i in np.argsort(-np.array(x))[:4]]
    top_y = [int(i) for i in np.argsort(-np.array(y))[:4]]
    truncated = rbo({i: x[i] for i in top}, {i: y[i] for i in top_y}, 0.8)
    assert rbo(x, y, 0.8, depth=4) == truncated
    assert isinstance(truncated, RBO)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [({"p": 1.0}, "p must be between 0 and 1"), ({"p": 0.0}, "p must be"), ({"depth": 0}, "depth must be")],
)
def test_rbo_bad_arguments(kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        rbo([1.0, 2.0], [2.0, 1.0], **kwargs)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="empty ranking"):
        rbo([], [1.0])
