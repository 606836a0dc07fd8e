"""Plots of a :class:`~rankeval.comparison.compare.Comparison` (matplotlib, no display needed).

Figures are built with :class:`matplotlib.figure.Figure` directly — no ``pyplot``, no global
backend switch — and saved as PNG, PDF or SVG through an atomic write.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.options` (the plot formats),
:mod:`rankeval.comparison.data` (the numbers of a
comparison, for types only); matplotlib and :mod:`rankeval.report.outputs` lazily. Not
:mod:`rankeval.comparison.compare`, which calls this module.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.errors import UsageError
from rankeval.options import PLOT_FORMATS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from rankeval.comparison.data import ComparisonData

__all__ = [
    "PLOT_FORMATS",
    "curve_figure",
    "differences_figure",
    "distribution_figure",
    "plot_comparison",
    "save_figure",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9.@=+-]+")


def _slug(text: str) -> str:
    """A file-name-safe form of a run or measure name."""
    return _UNSAFE.sub("_", text).strip("_") or "x"


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save_figure(fig: Figure, path: str | Path, fmt: str = "png") -> Path:
    """Save *fig* to *path* in *fmt* (``png``, ``pdf`` or ``svg``), atomically
    (:func:`rankeval.report.outputs.write_output`)."""
    from rankeval.report.outputs import write_output

    if fmt not in PLOT_FORMATS:
        raise UsageError(f"unknown plot format {fmt!r}; expected one of {', '.join(PLOT_FORMATS)}")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150)
    write_output(path, buf.getvalue())
    return Path(path)


def differences_figure(cmp: ComparisonData, measure: str, run: str, baseline: str | None = None) -> Figure:
    """Per-query differences *run* - *baseline* on *measure*, as bars sorted from the largest
    gain to the largest loss (queries where either run has no value are left out)."""
    m = cmp.measure_index(measure)
    r, b = cmp.run_index(run), cmp.run_index(baseline or cmp.baseline)
    d = cmp.values[r, m] - cmp.values[b, m]
    d = np.sort(d[~np.isnan(d)])[::-1]
    fig = _figure(max(6.0, min(14.0, 0.08 * len(d) + 4)), 3.6)
    ax = fig.add_subplot()
    colours = np.where(d > 0, "#2a7ab9", np.where(d < 0, "#d2553f", "#999999"))
    ax.bar(np.arange(len(d)), d, width=0.85, color=colours)
    ax.axhline(0, color="black", linewidth=0.8)
    title = f"{cmp.runs[r]} - {cmp.runs[b]}: {cmp.measures[m]}"
    p = cmp.pair_index(cmp.runs[r], cmp.runs[b])
    if p is not None and len(d):
        sign = 1 if cmp.pairs[p] == (r, b) else -1
        label = "p" if cmp.correction == "none" else "adjusted p"
        title += f"  (mean {sign * cmp.difference[m, p]:+.4f}, {label} = {cmp.p_adjusted[m, p]:.3g})"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"queries, sorted by difference ({int((d > 0).sum())} better, {int((d < 0).sum())} worse)")
    ax.set_ylabel(f"Δ {cmp.measures[m]}")
    ax.set_xlim(-0.6, max(len(d), 1) - 0.4)
    ax.set_xticks([])
    return fig


def distribution_figure(cmp: ComparisonData, measure: str) -> Figure:
    """Box plots of each run's per-query scores on *measure*, the mean marked."""
    m = cmp.measure_index(measure)
    data = [v[~np.isnan(v)] for v in cmp.values[:, m]]
    fig = _figure(max(5.0, 0.9 * len(data) + 2), 4.0)
    ax = fig.add_subplot()
    ax.boxplot(data, showmeans=True, widths=0.6)
    ax.set_xticks(np.arange(1, len(data) + 1), cmp.runs, rotation=30 if len(data) > 3 else 0, ha="right")
    ax.set_ylabel(cmp.measures[m])
    ax.set_title(f"{cmp.measures[m]} per query ({len(cmp.query_ids)} queries)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return fig


def curve_figure(frame: pd.DataFrame, title: str | None = None) -> Figure:
    """Each run's score against a measure parameter (a :func:`~rankeval.comparison.curves.parameter_curve`
    frame); a logarithmic x axis when the values span more than two orders of magnitude."""
    fig = _figure(6.0, 4.0)
    ax = fig.add_subplot()
    for run, part in frame.groupby("run", sort=False):
        part = part.sort_values("x")
        ax.plot(part["x"], part["value"], marker="o", label=str(run))
    xs = frame["x"].to_numpy(dtype=float)
    labels = frame.drop_duplicates("x").sort_values("x")
    if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 100:
        ax.set_xscale("log")
    ax.set_xticks(labels["x"].to_numpy(dtype=float), labels["label"].astype(str).tolist())
    ax.minorticks_off()
    param = str(frame["parameter"].iloc[0]) if len(frame) else "parameter"
    ax.set_xlabel(param)
    measures = frame["measure"].tolist()
    ax.set_ylabel(_common_name(measures))
    ax.set_title(title or frame.attrs.get("template", ""), fontsize=9)
    ax.grid(alpha=0.3)
    if frame["run"].nunique() > 1:
        ax.legend(fontsize=8)
    return fig


def _common_name(measures: list[Any]) -> str:
    if not measures:
        return "value"
    name = re.match(r"[A-Za-z_][A-Za-z0-9_.-]*", str(measures[0]))
    return name.group(0) if name else str(measures[0])


def plot_comparison(
    cmp: ComparisonData, directory: str | Path, fmt: str = "png", curves: Sequence[pd.DataFrame] = ()
) -> list[Path]:
    """Write every plot of *cmp* into *directory*: ``differences-MEASURE-RUN.FMT`` (each
    run against the baseline), ``distribution-MEASURE.FMT`` and, for each curve frame,
    ``curve-TEMPLATE.FMT``. Returns the paths written."""
    if fmt not in PLOT_FORMATS:
        raise UsageError(f"unknown plot format {fmt!r}; expected one of {', '.join(PLOT_FORMATS)}")
    out_dir = Path(directory)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the plot directory {str(directory)!r}: {exc.strerror}") from None
    written = []
    ref = cmp.baseline
    for measure in cmp.measures:
        for run in cmp.runs:
            if run == ref:
                continue
            fig = differences_figure(cmp, measure, run, ref)
            written.append(
                save_figure(fig, out_dir / f"differences-{_slug(measure)}-{_slug(run)}.{fmt}", fmt)
            )
        fig = distribution_figure(cmp, measure)
        written.append(save_figure(fig, out_dir / f"distribution-{_slug(measure)}.{fmt}", fmt))
    for frame in curves:
        name = _slug(str(frame.attrs.get("template", "curve")).replace("{", "").replace("}", ""))
        written.append(save_figure(curve_figure(frame), out_dir / f"curve-{name}.{fmt}", fmt))
    return written
