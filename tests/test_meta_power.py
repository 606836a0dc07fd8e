"""rankeval.meta.power: discriminative power (Sakai 2006's paired bootstrap test and the
randomised Tukey HSD test), checked against straightforward loops over the same random draws,
against the t-test, and by the tests' statistical properties."""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

import rankeval
from rankeval.errors import TieWarning, UsageError
from rankeval.meta.power import Power, discriminative_power, plot_asl_curves
from rankeval.meta.values import Matrix
from tests.conftest import DATA

DL = DATA / "dl-hard"


def _matrix(x: np.ndarray) -> Matrix:
    n, m = x.shape
    return Matrix(tuple(f"r{j}" for j in range(m)), tuple(f"q{i:03d}" for i in range(n)), x)


def _t(z: np.ndarray) -> float:
    """Sakai's t(z), with the degenerate cases of the module docstring."""
    mean, sd = float(np.mean(z)), float(np.std(z, ddof=1))
    if sd <= 1e-12 * math.sqrt(float(np.mean(z**2))):
        return 0.0 if abs(mean) <= 1e-12 * math.sqrt(float(np.mean(z**2))) else math.copysign(math.inf, mean)
    return mean / (sd / math.sqrt(len(z)))


def _reference_bootstrap(x: np.ndarray, samples: int, seed: int, alpha: float) -> tuple[list[float], float]:
    """Sakai 2006 Fig. 2 and Fig. 4, one pair and one resample at a time, on the draws that the
    module docstring names."""
    n, m = x.shape
    idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    k = math.ceil(samples * alpha - 1e-9)
    asl, diffs = [], []
    for a, b in itertools.combinations(range(m), 2):
        z = x[:, a] - x[:, b]
        w = z - z.mean()
        t = abs(_t(z))
        star = [(abs(_t(w[row])), abs(float(w[row].mean()))) for row in idx]
        asl.append(sum(ts >= t * (1 - 1e-9) for ts, _ in star) / samples)
        diffs.append(sorted(star, key=lambda s: -s[0])[k - 1][1])
    return asl, max(diffs)


def _reference_tukey(x: np.ndarray, samples: int, seed: int) -> list[float]:
    """Randomised Tukey HSD, one trial at a time, on the draws of the module docstring (one
    chunk: the matrices here are small)."""
    n, m = x.shape
    perms = np.random.default_rng(seed).permuted(np.broadcast_to(np.arange(m), (samples, n, m)), axis=2)
    ranges = []
    for perm in perms:
        means = [float(np.mean([x[i, perm[i, j]] for i in range(n)])) for j in range(m)]
        ranges.append(max(means) - min(means))
    mu = x.mean(axis=0)
    return [
        sum(r >= abs(mu[a] - mu[b]) * (1 - 1e-9) for r in ranges) / samples
        for a, b in itertools.combinations(range(m), 2)
    ]


_rng = np.random.default_rng(7)
CASES = {
    "random": _rng.random((20, 4)),
    "shifted": _rng.random((15, 3)) + np.array([0.0, 0.1, 0.3]),
    "three-topics": _rng.random((3, 3)),  # degenerate resamples (a topic drawn 3 times)
    "ties-and-zeros": np.round(_rng.random((12, 4)) * 2) / 2,
    "identical-runs": np.repeat(_rng.random((10, 1)), 3, axis=1),
    "constant-difference": np.column_stack([np.linspace(0, 0.5, 8), np.linspace(0, 0.5, 8) + 0.1]),
}


@pytest.mark.parametrize("name", CASES)
def test_bootstrap_equals_sakais_procedure_on_the_same_draws(name: str) -> None:
    x = CASES[name]
    p = discriminative_power(_matrix(x), samples=300, alpha=0.05, seed=11)
    asl, delta = _reference_bootstrap(x, 300, 11, 0.05)
    np.testing.assert_array_equal(p.asl, asl)
    assert math.isclose(p.delta, delta, rel_tol=1e-9, abs_tol=1e-12)
    assert p.share == sum(a < 0.05 for a in asl) / len(asl)


@pytest.mark.parametrize("name", CASES)
def test_tukey_equals_the_trial_loop_on_the_same_draws(name: str) -> None:
    x = CASES[name]
    p = discriminative_power(_matrix(x), test="tukey", samples=200, seed=5)
    np.testing.assert_array_equal(p.asl, _reference_tukey(x, 200, 5))


def test_bootstrap_asl_is_close_to_the_t_test_on_many_topics() -> None:
    # 400 topics: the bootstrap-t distribution is close to Student's t (its error is O(1/n)),
    # and with B = 4000 the Monte Carlo standard error of an ASL is at most
    # sqrt(0.25 / 4000) = 0.008; 0.03 is about 4 standard errors
    rng = np.random.default_rng(3)
    base = rng.random((400, 1))
    x = np.clip(base + rng.normal(0, 0.15, (400, 4)) + np.array([0.0, 0.01, 0.02, 0.03]), 0, 1)
    p = discriminative_power(_matrix(x), samples=4000, seed=1)
    for (a, b), asl in zip(itertools.combinations(range(4), 2), p.asl, strict=True):
        pvalue = scipy_stats.ttest_rel(x[:, a], x[:, b]).pvalue
        assert abs(asl - pvalue) <= 0.03, (a, b, asl, pvalue)
    assert p.asl.min() < 0.01 and p.asl.max() > 0.2  # the case covers small and large p-values


@pytest.mark.parametrize("test", ["bootstrap", "tukey"])
def test_identical_runs_never_differ_and_distant_runs_always(test: str) -> None:
    rng = np.random.default_rng(4)
    same = np.repeat(rng.random((30, 1)), 4, axis=1)
    assert (discriminative_power(_matrix(same), test=test, samples=500).asl == 1.0).all()
    apart = rng.random((30, 3)) * 0.1 + np.array([0.0, 0.5, 1.0])
    p = discriminative_power(_matrix(apart), test=test, samples=500)
    assert (p.asl == 0.0).all() and p.share == 1.0


def test_tukey_controls_the_family_wise_error_on_null_data() -> None:
    # 300 null data sets (5 exchangeable runs, 25 topics, topic effects): the share with at
    # least one pair significant at 0.05 must be <= 0.05 + 3 standard errors of a share
    # estimated from 300 data sets (3 * sqrt(0.05 * 0.95 / 300) = 0.038)
    rng = np.random.default_rng(9)
    false = 0
    for i in range(300):
        x = rng.random((25, 1)) + rng.normal(0, 0.2, (25, 5))
        false += bool((discriminative_power(_matrix(x), test="tukey", samples=5000, seed=i).asl < 0.05).any())
    assert false / 300 <= 0.05 + 0.038


def test_seed_reproduces_byte_for_byte_and_other_seeds_differ() -> None:
    x = CASES["random"]
    for test in ("bootstrap", "tukey"):
        a, b = (discriminative_power(_matrix(x), test=test, samples=400, seed=2) for _ in range(2))
        assert a.asl.tobytes() == b.asl.tobytes() and a.delta == b.delta
        c = discriminative_power(_matrix(x), test=test, samples=400, seed=3)
        assert c.asl.tobytes() != a.asl.tobytes()


def test_bootstrap_asl_falls_as_a_difference_grows() -> None:
    # adding c to one run moves mean(z) but not w = z - mean(z): same resampled t*, larger |t|
    x = CASES["random"].copy()
    asls = []
    for c in (0.0, 0.05, 0.1, 0.2, 0.4):
        y = x.copy()
        y[:, 0] += c
        asls.append(discriminative_power(_matrix(y), samples=500, seed=0).asl[:3])  # pairs of r0
    assert all((later <= earlier).all() for earlier, later in itertools.pairwise(asls))
    assert asls[-1].max() < asls[0].min()


def test_a_pair_at_alpha_is_not_significant() -> None:
    # Sakai 2006: significant when ASL < alpha; alpha set to an ASL the pairs reach
    p = discriminative_power(_matrix(CASES["random"]), samples=300, seed=1)
    alpha = float(np.sort(p.asl)[2])
    assert 0 < alpha < 1
    at = discriminative_power(_matrix(CASES["random"]), samples=300, seed=1, alpha=alpha)
    assert at.share == (p.asl < alpha).sum() / len(p.asl) < (p.asl <= alpha).sum() / len(p.asl)


def test_share_grows_with_alpha_and_the_curve_is_sorted() -> None:
    x = CASES["shifted"]
    shares = [discriminative_power(_matrix(x), samples=500, alpha=a).share for a in (0.01, 0.05, 0.1, 0.5)]
    assert shares == sorted(shares)
    p = discriminative_power(_matrix(x), samples=500)
    assert list(p.curve()) == sorted(p.asl) and len(p.pairs) == 3


@pytest.fixture(scope="module")
def dl_frame() -> Any:
    with warnings.catch_warnings():  # the runs have tied scores: not what these tests are about
        warnings.simplefilter("ignore", TieWarning)
        return rankeval.Evaluator(DL / "dl_hard-passage.qrels", ["ap", "ndcg_cut_10"]).evaluate(
            sorted(DL.glob("*.run.gz"))
        )


def test_power_on_real_runs(dl_frame: Any, tmp_path: Path) -> None:
    powers: dict[str, Power] = {}
    for measure, test in itertools.product(("AP", "nDCG@10"), ("bootstrap", "tukey")):
        p = discriminative_power(dl_frame, measure, test=test, samples=1000, seed=0)
        assert len(p.pairs) == 15 and len({frozenset(q) for q in p.pairs}) == 15
        assert ((p.asl >= 0) & (p.asl <= 1)).all() and 0 <= p.share <= 1 and p.delta > 0
        powers[f"{measure} {test}"] = p
    # the Tukey test corrects for the 15 comparisons: it finds no more pairs than the bootstrap
    assert powers["AP tukey"].share <= powers["AP bootstrap"].share
    out = plot_asl_curves(powers, tmp_path / "asl.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"test": "wilcoxon"}, "unknown test 'wilcoxon'; expected one of bootstrap, tukey"),
        ({"samples": 0}, "samples must be an integer from 1"),
        ({"alpha": 0}, "alpha must be a number between 0 and 1"),
        ({"alpha": 1.5}, "alpha must be a number between 0 and 1"),
        ({"alpha": True}, "alpha must be a number between 0 and 1"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_are_usage_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        discriminative_power(_matrix(CASES["random"]), **kwargs)


def test_bad_inputs_are_usage_errors(dl_frame: Any, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="at least two runs"):
        discriminative_power({"a": {"q1": 0.5, "q2": 0.1}})
    with pytest.raises(UsageError, match=r"2 measures \(AP, nDCG@10\); name one"):
        discriminative_power(dl_frame)
    with pytest.raises(UsageError, match="the file name must end in"):
        plot_asl_curves({"AP": discriminative_power(dl_frame, "AP", samples=10)}, tmp_path / "asl.gif")
    with pytest.raises(UsageError, match="no ASL curve"):
        plot_asl_curves({}, tmp_path / "asl.png")
