"""Paper output of `rankeval compare` (docs: compare.md, "Width" and "Plots"): LaTeX tables that
fit the text width (checked with pdflatex when it is installed), run names in tables and figures,
curve titles that name the measure and the parameter, legends outside the axes, multi-panel
figures."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.text import Text
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.comparison.curves import curve_labels, parameter_curve
from rankeval.comparison.plots import (
    curve_figure,
    curves_figure,
    differences_figure,
    distribution_figure,
    save_figure,
    scores_figure,
)
from rankeval.errors import UsageError

DATA = Path(__file__).parent / "data"
DL = DATA / "dl-hard"
QRELS = DL / "dl_hard-passage.qrels"
SIX = ["bm25", "bm25-rm3", "bm25-bert_zs_", "bm25-rm3-bert_zs_", "bm25-t5_zs_", "bm25-rm3-t5_zs_"]
# user-chosen run names, as given by {name: path} (or NAME=PATH on the command line)
NAMED = {"BM25": DL / "bm25.run.gz", "RM3": DL / "bm25-rm3.run.gz", "T5": DL / "bm25-t5_zs_.run.gz"}
MEASURES = ["AP(rel=2)", "nDCG@10", "RR(rel=2)"]
RESIZE = "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%"


@pytest.fixture(scope="module")
def six() -> rankeval.Comparison:
    """The six DL-HARD runs of the docs' worked example (t-test: the table's width is the same)."""
    return rankeval.compare(
        QRELS,
        [DL / f"{n}.run.gz" for n in SIX],
        MEASURES,
        stats=rankeval.CompareOptions(random_baseline=True),
    )


@pytest.fixture(scope="module")
def named() -> rankeval.Comparison:
    return rankeval.compare(QRELS, NAMED, MEASURES)


@pytest.fixture(scope="module")
def curve() -> object:
    return parameter_curve(QRELS, NAMED, "nDCG@{1,5,10,100}")


def texts(fig: object) -> list[str]:
    """Every piece of text drawn in *fig* (titles, labels, ticks, legends)."""
    fig.draw_without_rendering()  # type: ignore[attr-defined]
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------- LaTeX width
def test_latex_table_is_shrunk_to_the_line_width(six) -> None:
    lines = six.to_latex(spread="std").splitlines()
    assert lines[:2] == ["\\begin{table}", "\\centering"]
    assert lines[2].startswith("\\caption{Best value per measure in bold.")  # caption above the table
    assert lines[3] == RESIZE and lines[4] == "\\begin{tabular}{lrrr}"
    assert lines[-2:] == ["\\end{tabular}}", "\\end{table}"]
    body = "\n".join(lines[3:-1])
    unescaped = re.sub(r"\\[{}]", "", body)
    assert unescaped.count("{") == unescaped.count("}")  # the \resizebox group is closed


def test_latex_width_option(six) -> None:
    tex = six.to_latex(width="0.9\\textwidth")
    assert "\\resizebox{\\ifdim\\width>0.9\\textwidth0.9\\textwidth\\else\\width\\fi}{!}{%" in tex
    assert "\\resizebox{\\ifdim\\width>12cm12cm\\else" in six.format("latex", width="12cm")
    for natural in (None, "none"):
        lines = six.to_latex(width=natural).splitlines()
        assert "\\resizebox" not in "\n".join(lines)
        assert lines[3] == "\\begin{tabular}{lrrr}" and lines[-2] == "\\end{tabular}"
    assert "resizebox" not in six.to_markdown()
    for bad in ("wide", "10", "\\linewidth}", "1\\textwidth{", ""):
        with pytest.raises(UsageError, match="bad LaTeX width"):
            six.to_latex(width=bad)


def _tex_widths(tmp_path: Path, boxes: dict[str, str], preamble: str = "") -> dict[str, float]:
    """The widths in pt that pdflatex gives the LaTeX *boxes*, and ``linewidth``."""
    shows = "\n".join(f"\\sbox0{{{tex}}}\\typeout{{{name}=\\the\\wd0}}" for name, tex in boxes.items())
    doc = (
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
        f"{preamble}\n\\begin{{document}}\n\\typeout{{linewidth=\\the\\linewidth}}\n{shows}\n\\end{{document}}\n"
    )
    (tmp_path / "w.tex").write_text(doc)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "w.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    return {k: float(v) for k, v in re.findall(r"^(\w+)=([0-9.]+)pt$", run.stdout, re.M)}


def _box(tex: str) -> str:
    """The table's content without the float: what takes the width."""
    return tex[tex.index("\\caption") :].split("\n", 1)[1].rsplit("\\end{table}", 1)[0].strip()


@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("kpsewhich") is None, reason="pdflatex not installed"
)
@pytest.mark.parametrize("preamble", ["", "\\usepackage{calc}"])  # calc redefines \setlength
def test_latex_tables_fit_an_article_page(tmp_path, six, preamble) -> None:
    if not subprocess.run(["kpsewhich", "booktabs.sty"], capture_output=True, text=True).stdout.strip():
        pytest.skip("booktabs not installed")
    two = rankeval.compare(QRELS, NAMED, ["nDCG@10"])
    widths = _tex_widths(
        tmp_path,
        {
            "wide": _box(six.to_latex(spread="std")),
            "wideNatural": _box(six.to_latex(spread="std", width=None)),
            "narrow": _box(two.to_latex()),
            "narrowNatural": _box(two.to_latex(width=None)),
        },
        preamble,
    )
    line = widths["linewidth"]
    assert line == 345.0  # article, 10 pt
    assert widths["wideNatural"] > line + 40  # the reported table: about 45 pt too wide
    assert widths["wide"] == pytest.approx(line, abs=0.1)
    assert widths["narrowNatural"] < line / 2
    # never enlarged (a narrow table is "scaled" to its own width: graphicx's factor is rounded)
    assert widths["narrow"] == pytest.approx(widths["narrowNatural"], abs=0.1)


# ------------------------------------------------------------------------- run names
def test_tables_and_figures_name_runs_by_their_names(tmp_path, named, curve) -> None:
    assert named.runs == ["BM25", "RM3", "T5"]
    assert "| BM25 (baseline) |" in named.to_markdown() and "\nT5 & " in named.to_latex()
    figures = [
        differences_figure(named, "nDCG@10", "T5"),
        distribution_figure(named, "nDCG@10"),
        scores_figure(named),
        curve_figure(curve),  # type: ignore[arg-type]
    ]
    for fig in figures:
        shown = texts(fig)
        assert any("T5" in t for t in shown)
        assert not any(".run" in t or "dl-hard" in t for t in shown), shown
    names = {p.name for p in named.plot(tmp_path, curves=[curve])}  # type: ignore[list-item]
    assert "differences-nDCG@10-T5.png" in names and "distribution-nDCG@10.png" in names


# ------------------------------------------------------------------------- curve titles
@pytest.mark.parametrize(
    "template, parameter, help_text, title, measure, axis",
    [
        ("nDCG@{5,10}", "k", "rank cutoff (none = all retrieved)", "nDCG@k", "nDCG@k", "rank cutoff k"),
        ("nDCG(rel=2)@{5,10}", "k", "rank cutoff", "nDCG(rel=2)@k", "nDCG(rel=2)@k", "rank cutoff k"),
        ("hTBG@h={1m,1h}", "h", "half-life of the user's persistence", "hTBG, half-life h", "hTBG", "half-life h"),
        ("TBG(max_docs=5)@h={1m,1h}", "h", "half-life of it", "TBG(max_docs=5), half-life h", "TBG(max_docs=5)", "half-life h"),
        ("RBP(p={0.5,0.8}, rel=2)", "p", "", "RBP(rel=2), p", "RBP(rel=2)", "p"),
        ("AP(rel={1,2})", "rel", "minimum relevance grade counted as relevant", "AP, rel", "AP", "rel"),
    ],
)  # fmt: skip
def test_curve_labels(template, parameter, help_text, title, measure, axis) -> None:
    assert curve_labels(template, parameter, help_text) == {
        "title": title,
        "measure_label": measure,
        "parameter_label": axis,
    }


def test_curve_figures_are_titled_by_measure_and_parameter(curve) -> None:
    ax = curve_figure(curve).axes[0]  # type: ignore[arg-type]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("nDCG@k", "rank cutoff k", "nDCG@k")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "5", "10", "100"]
    toy = DATA / "htbg-toy"
    htbg = parameter_curve(toy / "truth.json", toy / "prediction.json", "hTBG@h={3,5,10}")
    ax = curve_figure(htbg).axes[0]
    assert ax.get_title() == "hTBG, half-life h" and ax.get_xlabel() == "half-life h"
    assert curve_figure(htbg, title="Figure 3").axes[0].get_title() == "Figure 3"


# ------------------------------------------------------------------------- legends
def _overlaps(a: object, b: object) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["curve", "scores"])
def test_legends_are_outside_every_axes(kind, named, curve) -> None:
    fig = curve_figure(curve) if kind == "curve" else scores_figure(named)  # type: ignore[arg-type]
    fig.draw_without_rendering()
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    box = legend.get_window_extent()
    assert [t.get_text() for t in legend.get_texts()] == ["BM25", "RM3", "T5"]
    for ax in fig.axes:
        assert not _overlaps(box, ax.get_window_extent())
    figure_box = fig.bbox
    assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 and figure_box.y0 <= box.y0  # not cut off


# ------------------------------------------------------------------------- panels
def test_scores_figure_has_one_panel_per_measure(named) -> None:
    fig = scores_figure(named)
    assert [ax.get_title() for ax in fig.axes] == MEASURES
    colours = [[tuple(p.get_facecolor()) for p in ax.patches] for ax in fig.axes]
    assert len(colours[0]) == 3 and len(set(colours[0])) == 3  # one colour a run ...
    assert colours[0] == colours[1] == colours[2]  # ... the same in every panel
    heights = np.array([[p.get_height() for p in ax.patches] for ax in fig.axes])
    assert np.allclose(heights, named.aggregate.T)
    assert [ax.get_title() for ax in scores_figure(named, ["RR(rel=2)"]).axes] == ["RR(rel=2)"]


def test_curves_figure_shares_one_legend(named) -> None:
    frames = [parameter_curve(QRELS, NAMED, t) for t in ("P@{5,10}", "R@{10,100}")]
    fig = curves_figure(frames)
    assert [ax.get_title() for ax in fig.axes] == ["P@k", "R@k"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["BM25", "RM3", "T5"]
    line_colours = [[line.get_color() for line in ax.get_lines()] for ax in fig.axes]
    assert line_colours[0] == line_colours[1] and len(set(line_colours[0])) == 3
    with pytest.raises(UsageError, match="no curves"):
        curves_figure([])


def test_plot_panels_and_pdf_fonts(tmp_path, named, curve) -> None:
    pdf = named.plot_panels(tmp_path / "scores.pdf")
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    assert b"/Subtype /Type3" not in data and b"/FontFile2" in data  # TrueType, not Type 3
    png = named.plot_panels(tmp_path / "curves.png", curves=[curve])  # type: ignore[list-item]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(UsageError, match=r"must end in \.png, \.pdf, \.svg"):
        named.plot_panels(tmp_path / "scores.gif")
    with pytest.raises(UsageError, match="unknown plot format"):
        save_figure(scores_figure(named), tmp_path / "x.png", "gif")


# ------------------------------------------------------------------------- CLI
def invoke(args: list) -> object:
    return CliRunner().invoke(app, ["compare", *[str(a) for a in args]])


BASE = [QRELS, DL / "bm25.run.gz", DL / "bm25-t5_zs_.run.gz", "-m", "nDCG@10", "--samples", "200"]


def test_cli_panels_and_latex_width(tmp_path) -> None:
    result = invoke([*BASE, "--panels", tmp_path / "s.svg", "-f", "latex", "--latex-width", "none"])
    assert result.exit_code == 0, result.output
    assert "\\resizebox" not in result.output and (tmp_path / "s.svg").read_bytes().find(b"<svg") >= 0
    result = invoke([*BASE, "--curve", "nDCG@{5,10}", "--panels", tmp_path / "c.png", "-f", "latex"])
    assert result.exit_code == 0, result.output
    assert RESIZE in result.output and (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--latex-width", "wide"], "bad LaTeX width 'wide'; expected a TeX length"),
        (["--panels", "fig.gif"], "'fig.gif': the file name must end in .png, .pdf, .svg"),
        (["--curve", "nDCG@{5,10}"], "--curve writes a plot: give --plot DIR or --panels FILE"),
        (["-o", "same.png", "--panels", "same.png"], "--panels same.png: the same file as -o same.png"),
    ],
)
def test_cli_paper_output_errors(extra, message) -> None:
    result = invoke([*BASE, *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
