"""Plots of a :class:`~rankeval.comparison.compare.Comparison` (matplotlib, no display needed),
drawn as paper figures.

Figures are built with :class:`matplotlib.figure.Figure` directly — no ``pyplot``, no global
backend switch — and saved as PNG, PDF or SVG through an atomic write.

Every figure is drawn in one style, :data:`PAPER_STYLE`: sized for a printed page (one panel
a column wide, :data:`COLUMN_WIDTH`; a row of panels or a bar per query the text width,
:data:`TEXT_WIDTH`), so that its 7 and 8 pt text keeps that size when the figure is included
at that width; PDF fonts embedded as TrueType (publishers' checkers refuse Type 3 fonts);
PNGs at 300 dpi. A run has the same colour and marker in every figure (from its position
among the runs; the random baseline is grey and dashed), so that a reader learns them once
and a greyscale print still tells the lines apart. Legends sit outside the axes: they never
hide data. Runs are labelled with their names (``Run.name``, the ``run`` column of the
results), never with a path.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.options` (the plot formats),
:mod:`rankeval.comparison.data` (the numbers of a comparison, for types only, and the name of
the random baseline); matplotlib, :mod:`rankeval.report.outputs` and
:func:`rankeval.report.formats.safe_name` lazily. Not
:mod:`rankeval.comparison.compare`, which calls this module.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import numpy as np

from rankeval.comparison.data import RANDOM
from rankeval.errors import UsageError
from rankeval.options import PLOT_FORMATS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rankeval.comparison.data import ComparisonData

__all__ = [
    "COLUMN_WIDTH",
    "PAPER_STYLE",
    "PLOT_FORMATS",
    "TEXT_WIDTH",
    "curve_figure",
    "curves_figure",
    "differences_figure",
    "distribution_figure",
    "plot_comparison",
    "plot_format_of",
    "plot_panels",
    "save_figure",
    "scores_figure",
]

#: width in inches of a one-panel figure: a column of a two-column paper (ACM, IEEE: 3.3-3.5 in)
COLUMN_WIDTH = 3.4
#: width in inches of a figure across the page (the text width of a one-column paper)
TEXT_WIDTH = 7.0
#: the matplotlib settings every figure is drawn and saved with
PAPER_STYLE: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.linewidth": 0.5,
    "grid.alpha": 0.35,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
}
_DPI = 300
# matplotlib's tab10 without its grey, which is the random baseline's
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
_MARKERS = "os^Dv<>pPXh*"
_PANEL_COLUMNS = 3
_PANEL_SIZE = (2.3, 1.9)  # inches, one panel of a multi-panel figure
_UNSAFE = re.compile(r"[^A-Za-z0-9.@=+-]+")

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _paper(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run *fn* with :data:`PAPER_STYLE` (text and lines take the style when created, fonts
    and resolution when saved)."""

    @functools.wraps(fn)
    def styled(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from matplotlib import rc_context

        with rc_context(cast(Any, PAPER_STYLE)):  # its stubs want literal keys
            return fn(*args, **kwargs)

    return styled


def _slug(text: str) -> str:
    """A file-name-safe form of a run or measure name."""
    return _UNSAFE.sub("_", text).strip("_") or "x"


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _run_style(index: int, run: str) -> dict[str, Any]:
    """The colour, marker and line style of the run at *index* among the runs."""
    if run == RANDOM:
        return {"color": "0.45", "marker": "x", "linestyle": "--"}
    return {
        "color": _COLOURS[index % len(_COLOURS)],
        "marker": _MARKERS[index % len(_MARKERS)],
        "linestyle": "-",
    }


def _legend_columns(labels: Sequence[str], width: float) -> int:
    """How many columns of *labels* fit across *width* inches (7 pt text: about 0.055 in a
    character, and 0.4 in for the marker and the gaps)."""
    per = 0.4 + 0.055 * max((len(s) for s in labels), default=1)
    return max(1, min(len(labels), int(width / per)))


def _legend_height(labels: Sequence[str], width: float) -> float:
    """Inches a legend of *labels* below the axes takes (a row of 7 pt text: about 0.16 in)."""
    return 0.1 + 0.16 * math.ceil(len(labels) / _legend_columns(labels, width))


def _shared_legend(fig: Figure, handles: Sequence[Any], labels: Sequence[str], width: float) -> None:
    """One legend for every panel of *fig*, below them (outside every axes)."""
    fig.legend(handles, labels, loc="outside lower center", ncols=_legend_columns(labels, width))


def _panels(n: int, legend: Sequence[str]) -> tuple[Figure, list[Axes]]:
    """A figure of *n* panels, :data:`_PANEL_COLUMNS` a row, with room for a legend of
    *legend* below them; one panel is a column wide."""
    cols = min(n, _PANEL_COLUMNS)
    rows = math.ceil(n / cols)
    width = COLUMN_WIDTH if n == 1 else min(TEXT_WIDTH, _PANEL_SIZE[0] * cols + 0.2)
    height = (2.3 if n == 1 else _PANEL_SIZE[1] * rows) + (_legend_height(legend, width) if legend else 0.0)
    fig = _figure(width, height)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
    return fig, axes


def plot_format_of(path: str | Path, fmt: str | None = None) -> str:
    """*fmt* (checked), or the plot format that the suffix of *path* names; else a UsageError."""
    if fmt is None:
        fmt = Path(path).suffix.lstrip(".").lower()
        if fmt not in PLOT_FORMATS:
            raise UsageError(
                f"{str(path)!r}: the file name must end in {', '.join('.' + f for f in PLOT_FORMATS)} "
                "(the plot format)"
            )
    if fmt not in PLOT_FORMATS:
        raise UsageError(f"unknown plot format {fmt!r}; expected one of {', '.join(PLOT_FORMATS)}")
    return fmt


@_paper
def save_figure(fig: Figure, path: str | Path, fmt: str | None = "png") -> Path:
    """Save *fig* to *path* in *fmt* (``png``, ``pdf`` or ``svg``; ``None``: from the suffix
    of *path*), atomically (:func:`rankeval.report.outputs.write_output`)."""
    from matplotlib.text import Text

    from rankeval.io.inputs import safe_name
    from rankeval.report.outputs import write_output

    fmt = plot_format_of(path, fmt)
    for text in fig.findobj(Text):  # a run file name that is not UTF-8: its bytes as \xNN
        text.set_text(safe_name(text.get_text()))
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=_DPI)
    write_output(path, buf.getvalue())
    return Path(path)


# ------------------------------------------------------------------------- one measure
@_paper
def differences_figure(cmp: ComparisonData, measure: str, run: str, baseline: str | None = None) -> Figure:
    """Per-query differences *run* - *baseline* on *measure*, as bars sorted from the largest
    gain to the largest loss (queries where either run has no value are left out)."""
    m = cmp.measure_index(measure)
    r, b = cmp.run_index(run), cmp.run_index(baseline or cmp.baseline)
    d = cmp.values[r, m] - cmp.values[b, m]
    d = np.sort(d[~np.isnan(d)])[::-1]
    fig = _figure(TEXT_WIDTH, 2.4)
    ax = fig.add_subplot()
    colours = np.where(d > 0, "#2a7ab9", np.where(d < 0, "#d2553f", "#999999"))
    ax.bar(np.arange(len(d)), d, width=0.85, color=colours)
    ax.axhline(0, color="black", linewidth=0.6)
    title = f"{cmp.runs[r]} vs {cmp.runs[b]}: {cmp.measures[m]}"
    p = cmp.pair_index(cmp.runs[r], cmp.runs[b])
    if p is not None and len(d):
        sign = 1 if cmp.pairs[p] == (r, b) else -1
        label = "p" if cmp.stats.correction == "none" else "adjusted p"
        title += (
            f" (mean difference {sign * cmp.difference[m, p]:+.4f}, {label} = {cmp.p_adjusted[m, p]:.3g})"
        )
    ax.set_title(title)
    ax.set_xlabel(f"queries, sorted by difference ({int((d > 0).sum())} better, {int((d < 0).sum())} worse)")
    ax.set_ylabel(f"Δ {cmp.measures[m]}")
    ax.set_xlim(-0.6, max(len(d), 1) - 0.4)
    ax.set_xticks([])
    ax.grid(axis="x", visible=False)
    return fig


@_paper
def distribution_figure(cmp: ComparisonData, measure: str) -> Figure:
    """Box plots of each run's per-query scores on *measure*, one box a row (the first run on
    top, its name beside it), the median a line, the mean a white diamond."""
    m = cmp.measure_index(measure)
    data = [v[~np.isnan(v)] for v in cmp.values[:, m]]
    fig = _figure(COLUMN_WIDTH + 0.04 * max(len(r) for r in cmp.runs), 0.8 + 0.3 * len(data))
    ax = fig.add_subplot()
    boxes = ax.boxplot(
        data,
        **_horizontal(),
        showmeans=True,
        widths=0.6,
        patch_artist=True,
        medianprops={"color": "black", "linewidth": 1},
        meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black", "markersize": 3.5},
        flierprops={"marker": ".", "markersize": 3, "markeredgecolor": "0.4"},
    )
    for i, (box, run) in enumerate(zip(boxes["boxes"], cmp.runs, strict=True)):
        box.set_facecolor(_run_style(i, run)["color"])
        box.set_alpha(0.55)
    from rankeval.io.inputs import safe_name

    ax.set_yticks(np.arange(1, len(data) + 1), [safe_name(run) for run in cmp.runs])  # ticks: drawn late
    ax.invert_yaxis()
    ax.set_xlabel(cmp.measures[m])
    ax.set_title(f"{cmp.measures[m]} per query ({len(cmp.query_ids)} queries)")
    ax.grid(axis="y", visible=False)
    return fig


def _horizontal() -> dict[str, Any]:
    """The keyword of :meth:`~matplotlib.axes.Axes.boxplot` for horizontal boxes (``vert``
    is deprecated since matplotlib 3.10, which has ``orientation``)."""
    import matplotlib

    major, minor = (int(x) for x in matplotlib.__version__.split(".")[:2])
    return {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}


# ------------------------------------------------------------------ panels of measures
def _runs_of(frames: Sequence[pd.DataFrame]) -> list[str]:
    """The runs of *frames*, in the order first seen."""
    return list(dict.fromkeys(str(run) for frame in frames for run in frame["run"]))


def _log_scale(xs: np.ndarray) -> bool:
    """Whether the sorted distinct positive *xs* are further apart on a logarithmic axis: its
    closest two values, as a share of the axis, are further apart than on a linear one
    (1, 5, 10, 20, 100 and 30 s ... 3 h are; 10, 20, ..., 100 are not)."""
    if len(xs) < 3 or xs[0] <= 0:
        return False
    logs = np.log(xs)
    return bool(np.diff(logs).min() / (logs[-1] - logs[0]) > np.diff(xs).min() / (xs[-1] - xs[0]))


def _curve_panel(ax: Axes, frame: pd.DataFrame, runs: list[str], title: str | None) -> None:
    """Draw one parameter curve frame on *ax*: a line per run, the parameter's values as ticks."""
    for run, part in frame.groupby("run", sort=False):
        part = part.sort_values("x")
        ax.plot(part["x"], part["value"], label=str(run), **_run_style(runs.index(str(run)), str(run)))
    ticks = frame.drop_duplicates("x").sort_values("x")
    if _log_scale(ticks["x"].to_numpy(dtype=float)):
        ax.set_xscale("log")
    ax.set_xticks(ticks["x"].to_numpy(dtype=float), ticks["label"].astype(str).tolist())
    ax.minorticks_off()
    param = str(frame["parameter"].iloc[0]) if len(frame) else "parameter"
    ax.set_xlabel(frame.attrs.get("parameter_label", param))
    ax.set_ylabel(frame.attrs.get("measure_label", _common_name(frame["measure"].tolist())))
    ax.set_title(title or frame.attrs.get("title", frame.attrs.get("template", "")))


@_paper
def curves_figure(frames: Sequence[pd.DataFrame], title: str | None = None) -> Figure:
    """One figure, one panel per parameter curve (:func:`~rankeval.comparison.curves.parameter_curve`
    frames): each run's score against the parameter, on a logarithmic x axis when that sets
    the values further apart; one legend for all panels, below them.

    Args:
        frames: the curves, one per panel.
        title: the title of a one-panel figure (default: the measure and the parameter
            varied, as :func:`~rankeval.comparison.curves.parameter_curve` names them).
    """
    if not frames:
        raise UsageError("no curves to plot")
    runs = _runs_of(frames)
    legend = runs if len(runs) > 1 else []
    fig, axes = _panels(len(frames), legend)
    for ax, frame in zip(axes, frames, strict=True):
        _curve_panel(ax, frame, runs, title if len(frames) == 1 else None)
    if legend:
        handles, labels = axes[0].get_legend_handles_labels()
        for ax in axes[1:]:  # a run missing from the first panel
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                if label not in labels:
                    handles, labels = [*handles, h], [*labels, label]
        order = sorted(range(len(labels)), key=lambda i: runs.index(labels[i]))
        _shared_legend(fig, [handles[i] for i in order], [labels[i] for i in order], fig.get_figwidth())
    return fig


def curve_figure(frame: pd.DataFrame, title: str | None = None) -> Figure:
    """Each run's score against a measure parameter (a :func:`~rankeval.comparison.curves.parameter_curve`
    frame): :func:`curves_figure` of one panel."""
    return curves_figure([frame], title)


@_paper
def scores_figure(cmp: ComparisonData, measures: Sequence[str] | None = None) -> Figure:
    """One figure, one panel per measure (default: every measure of *cmp*): each run's score
    as a bar, its confidence interval (:attr:`~rankeval.comparison.compare.Comparison.ci_low`
    … ``ci_high``) as a whisker; one legend for all panels, below them."""
    picked = [cmp.measure_index(m) for m in (cmp.measures if measures is None else measures)]
    if not picked:
        raise UsageError("no measures to plot")
    fig, axes = _panels(len(picked), cmp.runs)
    handles = []
    for ax, m in zip(axes, picked, strict=True):
        low = cmp.aggregate[:, m] - cmp.ci_low[:, m]
        high = cmp.ci_high[:, m] - cmp.aggregate[:, m]
        handles = [
            ax.bar(
                r,
                cmp.aggregate[r, m],
                width=0.8,
                color=_run_style(r, run)["color"],
                hatch="//" if run == RANDOM else None,
                edgecolor="white" if run == RANDOM else None,
                yerr=[[low[r]], [high[r]]] if math.isfinite(low[r] + high[r]) else None,
                error_kw={"elinewidth": 0.7, "capsize": 2, "capthick": 0.7},
            )
            for r, run in enumerate(cmp.runs)
        ]
        ax.set_title(cmp.measures[m])
        ax.set_xticks([])
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel(f"score (whiskers: {100 * (1 - cmp.stats.alpha):g}% CI)")
    _shared_legend(fig, handles, cmp.runs, fig.get_figwidth())
    return fig


def _common_name(measures: list[Any]) -> str:
    if not measures:
        return "value"
    name = re.match(r"[A-Za-z_][A-Za-z0-9_.-]*", str(measures[0]))
    return name.group(0) if name else str(measures[0])


# ------------------------------------------------------------------------------- files
def plot_comparison(
    cmp: ComparisonData, directory: str | Path, fmt: str = "png", curves: Sequence[pd.DataFrame] = ()
) -> list[Path]:
    """Write every plot of *cmp* into *directory*: ``differences-MEASURE-RUN.FMT`` (each
    run against the baseline), ``distribution-MEASURE.FMT`` and, for each curve frame,
    ``curve-TEMPLATE.FMT``. Returns the paths written."""
    fmt = plot_format_of(directory, fmt)
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


def plot_panels(
    cmp: ComparisonData, path: str | Path, fmt: str | None = None, curves: Sequence[pd.DataFrame] = ()
) -> Path:
    """Write one figure of one panel per measure to *path*: with *curves*, one panel per
    curve (:func:`curves_figure`); without, one per measure of *cmp*, each run's score and
    its confidence interval (:func:`scores_figure`). *fmt* (default: from the suffix of
    *path*) is ``png``, ``pdf`` or ``svg``. Returns the path written."""
    fmt = plot_format_of(path, fmt)
    fig = curves_figure(curves) if curves else scores_figure(cmp)
    return save_figure(fig, path, fmt)
