"""Discriminative power: how many pairs of systems a measure tells apart (Sakai, SIGIR 2006).

For every pair of runs, the achieved significance level (ASL) of a test of "no difference"
on the per-query values of one measure; a measure that gives more pairs an ASL below alpha, at
the same alpha and on the same runs and topics, is more discriminative. Two tests:

* ``bootstrap`` — Sakai's paired bootstrap test on the studentised statistic (T. Sakai,
  "Evaluating evaluation metrics based on the bootstrap", SIGIR 2006, Fig. 2). With ``z`` the
  per-topic differences of the pair over *n* topics, ``t(z) = mean(z) / (sd(z) / √n)``
  (``sd`` with ``n - 1`` degrees of freedom); under the null the differences are shifted to
  mean zero, ``w = z - mean(z)``; resample *b* draws *n* topics with replacement and gives
  ``t(w*b)``. ``ASL = #{b : |t(w*b)| ≥ |t(z)|} / B``. A resample whose ``w*b`` are all equal
  has ``t = 0`` when they are 0 and ``±∞`` otherwise; identical runs (``z = 0``) have ``t = 0``
  and ASL 1.
* ``tukey`` — the randomised Tukey HSD test (B. Carterette, "Multiple testing in statistical
  analysis of systems-based information retrieval experiments", TOIS 30(1), 2012; T. Sakai,
  "Statistical reform in information retrieval?", SIGIR Forum 48(1), 2014, and *Statistical
  Significance Testing in Information Retrieval*, 2018, §4.4): each trial permutes every
  topic's row of scores across the runs (the null: the runs are exchangeable on each topic)
  and records the range ``max - min`` of the runs' means. ``ASL(a, b) = #{trials : range ≥
  |mean_a - mean_b|} / B``. Since one trial's range covers every pair, the test controls the
  family-wise error over all pairs.

"At least as extreme" tolerates rounding: ``s* ≥ s · (1 - 1e-9)``. ASLs are ``count / B`` as
Sakai defines them (so an ASL can be 0), and a pair is significant when ``ASL < alpha`` (Sakai
2006, "ASL < alpha"). The discriminative power is the share of pairs significant at alpha.

Sakai's estimate of the difference required for significance at alpha (Sakai 2006, Fig. 4): for
each pair, the resample whose ``|t(w*b)|`` is the *k*-th largest, ``k = ceil(B·alpha)``, gives
``|mean(w*b)|`` (among resamples of equal ``|t(w*b)|``, they count in draw order); the
estimate is the largest of these over all pairs. For the Tukey test the same idea gives one
number: the *k*-th largest range (a pair whose means differ by more has an ASL below alpha).

Random draws (reproducible with *seed*): bootstrap: the topic indices
``np.random.default_rng(seed).integers(0, n, size=(B, n))`` (:func:`rankeval.comparison.stats.
bootstrap_indices`; every pair uses the same resamples); Tukey: ``rng.permuted`` of
``(rows, n, m)`` tiles of ``arange(m)`` along the last axis, ``rows`` a fixed chunk size that
depends only on *n* and *m*.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.options`,
:mod:`rankeval.comparison.stats`, :mod:`rankeval.meta.values`; matplotlib and
:mod:`rankeval.comparison.plots` lazily.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.comparison.stats import _counts, bootstrap_indices
from rankeval.errors import UsageError
from rankeval.meta.values import Values, per_query
from rankeval.options import check_choice, check_samples, check_seed

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["POWER_TESTS", "Power", "discriminative_power", "plot_asl_curves"]

#: the tests of :func:`discriminative_power`
POWER_TESTS = ("bootstrap", "tukey")
#: relative tolerance of "at least as extreme"
_RTOL = 1e-9
#: elements of one chunk of resampled values (8 MB of float64)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Power:
    """The discriminative power of one measure.

    Attributes:
        pairs: Every pair of runs ``(run_a, run_b)``, ``run_a`` before ``run_b`` in the
            matrix's (sorted) run order.
        asl: The achieved significance level of each pair (same order).
        alpha: The significance level.
        share: The share of pairs with ``asl < alpha`` (the discriminative power).
        delta: Sakai's estimated difference in mean score required for significance at
            *alpha* (see the module docstring); NaN when there is no pair.
        test: ``bootstrap`` or ``tukey``.
        samples: *B*, the resamples or trials.
    """

    pairs: tuple[tuple[str, str], ...]
    asl: np.ndarray
    alpha: float
    share: float
    delta: float
    test: str
    samples: int

    def curve(self) -> np.ndarray:
        """The ASLs sorted ascending (Sakai's ASL curve: x the pair's rank, y its ASL)."""
        return np.sort(self.asl)


def _rank_k(samples: int, alpha: float) -> int:
    """``ceil(B·alpha)`` (at least 1): the rank of the critical resample."""
    return max(1, math.ceil(samples * alpha - 1e-9))


def _t(mean: np.ndarray, var: np.ndarray, n: int, scale: np.ndarray) -> np.ndarray:
    """``mean / sqrt(var / n)``; 0 where mean and var are 0 (relative to *scale*), ±∞ where
    only var is."""
    tiny = (1e-12 * scale) ** 2
    zero_var = var <= tiny
    zero_mean = mean**2 <= tiny
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(np.where(zero_var, 1.0, var) / n)
    t = np.where(zero_var, np.where(zero_mean, 0.0, np.copysign(np.inf, mean)), t)
    return np.asarray(t, dtype=np.float64)


def _bootstrap(
    x: np.ndarray, ia: np.ndarray, ib: np.ndarray, samples: int, seed: int | None, k: int
) -> tuple[np.ndarray, float]:
    """Sakai's bootstrap ASLs of the pairs ``(ia, ib)`` of the columns of *x*, and delta."""
    n = x.shape[0]
    z = (x[:, ia] - x[:, ib]).T  # (P, n)
    scale = np.sqrt((z**2).mean(axis=1))
    t_obs = np.abs(_t(z.mean(axis=1), z.var(axis=1, ddof=1) if n > 1 else np.zeros(len(z)), n, scale))
    w = z - z.mean(axis=1, keepdims=True)
    w2 = w**2
    wscale = np.sqrt(w2.mean(axis=1))[:, None]
    t_abs, means = [], []
    for idx in bootstrap_indices(n, samples, seed):
        c = _counts(idx).T  # (n, rows)
        m1 = (w @ c) / n
        var = ((w2 @ c) - n * m1**2) / max(n - 1, 1)
        t_abs.append(np.abs(_t(m1, np.maximum(var, 0.0), n, wscale)))
        means.append(np.abs(m1))
    ts, ms = np.concatenate(t_abs, axis=1), np.concatenate(means, axis=1)  # (P, B)
    asl = (ts >= (t_obs * (1 - _RTOL))[:, None]).sum(axis=1) / samples
    crit = np.argsort(-ts, axis=1, kind="stable")[:, k - 1]  # ties: the earlier resample
    delta = float(ms[np.arange(len(ms)), crit].max()) if len(ms) else math.nan
    return asl, delta


def _tukey(
    x: np.ndarray, ia: np.ndarray, ib: np.ndarray, samples: int, seed: int | None, k: int
) -> tuple[np.ndarray, float]:
    """Randomised Tukey HSD ASLs of the pairs ``(ia, ib)`` of the columns of *x*, and the
    critical range."""
    n, m = x.shape
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK // (n * m))
    order = np.arange(n)[None, :, None]
    ranges = []
    for start in range(0, samples, rows):
        tile = np.broadcast_to(np.arange(m), (min(rows, samples - start), n, m))
        perm = rng.permuted(tile, axis=2)
        means = x[order, perm].mean(axis=1)  # (rows, m)
        ranges.append(means.max(axis=1) - means.min(axis=1))
    r = np.concatenate(ranges)
    mu = x.mean(axis=0)
    diff = np.abs(mu[ia] - mu[ib])
    asl = (r[None, :] >= (diff * (1 - _RTOL))[:, None]).sum(axis=1) / samples
    return asl, float(np.sort(r)[::-1][k - 1])


def discriminative_power(
    values: Values,
    measure: str | None = None,
    *,
    test: str = "bootstrap",
    samples: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> Power:
    """The ASL of every pair of runs and the share significant at *alpha* (the module
    docstring gives the tests, their sources and the random draws).

    Args:
        values: Per-query values (:func:`rankeval.meta.values.per_query`'s forms).
        measure: The measure, when *values* is a long frame of several.
        test: ``bootstrap`` (Sakai 2006) or ``tukey`` (randomised Tukey HSD, Carterette 2012).
        samples: *B*, the bootstrap resamples or the Tukey trials (Sakai uses 1000 and 5000).
        alpha: The significance level, in (0, 1).
        seed: Seed of :func:`numpy.random.default_rng`; the same seed gives the same ASLs.

    Raises:
        UsageError: an unknown *test*, *samples* not an integer from 1 to
            :data:`rankeval.options.MAX_SAMPLES`, *alpha* outside (0, 1), a bad *seed*, fewer
            than two runs, or what :func:`~rankeval.meta.values.per_query` raises.
    """
    check_choice("test", test, POWER_TESTS)
    check_samples(samples)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UsageError(f"alpha must be a number between 0 and 1 (exclusive), not {alpha!r}")
    seed = check_seed(seed)
    mat = per_query(values, measure)
    if len(mat.runs) < 2:
        raise UsageError(f"discriminative power needs at least two runs, got {len(mat.runs)}")
    ia, ib = np.triu_indices(len(mat.runs), k=1)
    run = _bootstrap if test == "bootstrap" else _tukey
    asl, delta = run(mat.values, ia, ib, samples, seed, _rank_k(samples, alpha))
    return Power(
        pairs=tuple((mat.runs[a], mat.runs[b]) for a, b in zip(ia, ib, strict=True)),
        asl=asl,
        alpha=float(alpha),
        share=float((asl < alpha).mean()),
        delta=delta,
        test=test,
        samples=samples,
    )


def _plot(path: str | Path, fmt: str | None, draw: Callable[[Axes], None]) -> Path:
    """A one-column paper figure (:data:`rankeval.comparison.plots.PAPER_STYLE`) drawn by
    ``draw(ax)``, saved to *path* by :func:`rankeval.comparison.plots.save_figure` (*fmt*:
    ``png``, ``pdf``, ``svg``, or ``None`` for the suffix of *path*; checked first)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    from rankeval.comparison.plots import COLUMN_WIDTH, PAPER_STYLE, plot_format_of, save_figure

    plot_format_of(path, fmt)
    style: Any = PAPER_STYLE  # rc_context's stubs want literal keys
    with rc_context(style):
        fig = Figure(figsize=(COLUMN_WIDTH, 2.6), layout="constrained")
        draw(fig.add_subplot())
    return save_figure(fig, path, fmt)


def plot_asl_curves(powers: Mapping[str, Power], path: str | Path, fmt: str | None = None) -> Path:
    """Sakai's ASL curves of several measures in one figure: x the system pairs sorted by
    ASL, y the ASL, one line per measure (labelled with its discriminative power), and a
    dashed line at each alpha. Saved through :func:`rankeval.comparison.plots.save_figure`
    (*fmt*: ``png``, ``pdf``, ``svg``, or ``None`` for the suffix of *path*).

    Raises:
        UsageError: no curve, or a bad *path* suffix / *fmt*.
    """
    if not powers:
        raise UsageError("no ASL curve to plot")

    def draw(ax: Axes) -> None:
        for name, power in powers.items():
            y = power.curve()
            ax.plot(np.arange(1, len(y) + 1), y, label=f"{name} ({power.share:.0%})")
        for alpha in sorted({p.alpha for p in powers.values()}):
            ax.axhline(alpha, color="0.45", linestyle="--", linewidth=0.8)
        ax.set_xlabel("system pairs sorted by ASL")
        ax.set_ylabel("achieved significance level")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left")

    return _plot(path, fmt, draw)
