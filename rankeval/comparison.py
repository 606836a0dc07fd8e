"""Comparing runs for a paper: scores, paired significance tests against a baseline (or between
all pairs) with a correction for multiple comparisons, effect sizes, confidence intervals, a
random-ranking baseline, paper tables (LaTeX, Markdown) and plots.

    import rankeval
    cmp = rankeval.compare("qrels.txt", ["bm25.run", "rm3.run", "t5.run"], ["AP(rel=2)", "nDCG@10"],
                           test="randomization", correction="holm", random_baseline=True)
    print(cmp.to_latex(spread="std"))

Data flows one way: :func:`rankeval.engine.evaluate_results` gives per-query values → aligned
on the union of queries → :mod:`rankeval.stats` tests, corrections and intervals →
:class:`Comparison` → tables, rows, plots (:mod:`rankeval.plots`).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval import stats
from rankeval.errors import UsageError
from rankeval.measure import Measure

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.random_ranking import RandomBaseline
    from rankeval.registry import Registry

__all__ = [
    "CIS",
    "FAMILIES",
    "FORMATS",
    "PAIRS",
    "RANDOM",
    "SPREADS",
    "Comparison",
    "compare",
    "expand_template",
    "parameter_curve",
]

PAIRS = ("baseline", "all")
CIS = ("t", "bootstrap")
FAMILIES = ("measure", "all")
FORMATS = ("trec", "tsv", "csv", "json", "jsonl", "markdown", "latex")
SPREADS = ("none", "std", "se")
#: name of the random-ranking baseline's row
RANDOM = "random"
ALL = "all"
#: columns of :meth:`Comparison.to_dataframe` (and of json/jsonl/tsv/csv output), in order
COLUMNS = (
    "run",
    "baseline",
    "measure",
    "query_id",
    "value",
    "p_value",
    "p_adjusted",
    "ci_low",
    "ci_high",
    "difference",
    "diff_ci_low",
    "diff_ci_high",
    "cohens_d",
    "statistic",
    "n",
    "std",
    "se",
    "significant",
)
TEST_NAMES = {
    "ttest": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "bootstrap": "paired bootstrap test",
    "randomization": "randomisation test",
}
CORRECTION_NAMES = {
    "none": "no correction for multiple comparisons",
    "bonferroni": "Bonferroni correction",
    "holm": "Holm correction",
    "bh": "Benjamini-Hochberg correction (false discovery rate)",
}


# --------------------------------------------------------------------------- result
@dataclass
class Comparison:
    """The result of :func:`compare`.

    Runs are indexed ``r``, measures ``m``, queries ``q``, comparisons ``p`` (in
    :attr:`pairs` order). The random baseline, if asked for, is the last run, named
    ``random``.

    Attributes:
        runs: run names, in the order given (``random`` last).
        measures: canonical measure specs, in the order given.
        query_ids: ``(Q,)`` the union of the queries of all runs (sorted).
        values: ``(R, M, Q)`` per-query values; NaN where a run has no value for a query
            (with ``missing_zero=False``, or an undefined value).
        aggregate: ``(R, M)`` each run's score: the measure's aggregate (the mean over
            queries, a sum for counts, or the measure's own), as :func:`rankeval.evaluate`.
        std: ``(R, M)`` standard deviation of the per-query values (``n - 1``).
        se: ``(R, M)`` standard error of the mean, ``std / √n`` (random baseline: the
            standard deviation of its mean over random orderings).
        ci_low: ``(R, M)`` lower end of the confidence interval of each run's mean (``ci``
            method; random baseline: quantile of its mean over random orderings).
        ci_high: ``(R, M)`` upper end.
        pairs: the comparisons, ``(run index, baseline index)``.
        n: ``(M, P)`` queries in each comparison (both runs have a value).
        difference: ``(M, P)`` mean per-query difference run - baseline (effect size).
        diff_ci_low: ``(M, P)`` lower end of the confidence interval of the difference.
        diff_ci_high: ``(M, P)`` upper end.
        cohens_d: ``(M, P)`` Cohen's d for paired data: mean difference / sd of differences.
        statistic: ``(M, P)`` test statistic (t, W, or the mean difference).
        p_value: ``(M, P)`` two-sided p-value.
        p_adjusted: ``(M, P)`` p-value after the correction for multiple comparisons.
        baseline: the reference run (the baseline; with ``pairs="all"``, the run that
            per-query differences and difference plots refer to).
        pair_mode: ``"baseline"`` or ``"all"``.
        test: the significance test.
        correction: the correction for multiple comparisons.
        family: what one family of comparisons is for the correction: the comparisons of
            one ``"measure"``, or ``"all"`` comparisons.
        alpha: significance level.
        samples: resamples of the bootstrap/randomisation tests and intervals and random
            orderings of the random baseline.
        seed: seed of the random draws.
        ci: ``"t"`` or ``"bootstrap"`` (percentile) intervals.
        random: the random baseline's details, if asked for.
        integer_measures: measures whose values are counts.
        whole_measures: measures whose per-query values are whole numbers.
    """

    runs: list[str]
    measures: list[str]
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: np.ndarray
    std: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    pairs: list[tuple[int, int]]
    n: np.ndarray
    difference: np.ndarray
    diff_ci_low: np.ndarray
    diff_ci_high: np.ndarray
    cohens_d: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray
    baseline: str
    pair_mode: str = "baseline"
    test: str = "ttest"
    correction: str = "none"
    family: str = "measure"
    alpha: float = 0.05
    samples: int = 10_000
    seed: int | None = 0
    ci: str = "t"
    random: RandomBaseline | None = None
    integer_measures: set[str] = field(default_factory=set)
    whole_measures: set[str] = field(default_factory=set)

    # -- lookups -----------------------------------------------------------------------
    @property
    def significant(self) -> np.ndarray:
        """``(M, P)`` whether each comparison is significant: ``p_adjusted < alpha``."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.p_adjusted < self.alpha)

    def run_index(self, run: str) -> int:
        """Index of the run named *run*."""
        try:
            return self.runs.index(run)
        except ValueError:
            raise UsageError(f"no run named {run!r}; runs: {', '.join(self.runs)}") from None

    def measure_index(self, measure: str | Measure) -> int:
        """Index of *measure* (its canonical spec, or the spec as given)."""
        text = str(measure)
        if text in self.measures:
            return self.measures.index(text)
        from rankeval.plugins import load_registry

        try:
            return self.measures.index(str(load_registry().parse(text)))
        except (ValueError, UsageError):
            raise UsageError(f"no measure {text!r}; measures: {', '.join(self.measures)}") from None

    def pair_index(self, run: str, baseline: str | None = None) -> int | None:
        """Index of the comparison of *run* against *baseline* (default: :attr:`baseline`),
        in either direction, or ``None``."""
        r, b = self.run_index(run), self.run_index(baseline or self.baseline)
        for i, (x, y) in enumerate(self.pairs):
            if (x, y) in ((r, b), (b, r)):
                return i
        return None

    # -- frames ------------------------------------------------------------------------
    @property
    def scores(self) -> pd.DataFrame:
        """One row per run and measure: ``run, measure, value, std, se, ci_low, ci_high, n``."""
        import pandas as pd

        rows = []
        for r, run in enumerate(self.runs):
            for m, measure in enumerate(self.measures):
                n = int(np.count_nonzero(~np.isnan(self.values[r, m])))
                rows.append(
                    (
                        run,
                        measure,
                        self.aggregate[r, m],
                        self.std[r, m],
                        self.se[r, m],
                        self.ci_low[r, m],
                        self.ci_high[r, m],
                        n,
                    )
                )
        return pd.DataFrame(rows, columns=["run", "measure", "value", "std", "se", "ci_low", "ci_high", "n"])

    @property
    def tests(self) -> pd.DataFrame:
        """One row per comparison and measure: ``run, baseline, measure, n, difference,
        diff_ci_low, diff_ci_high, cohens_d, statistic, p_value, p_adjusted, significant``."""
        import pandas as pd

        sig = self.significant
        rows = []
        for m, measure in enumerate(self.measures):
            for p, (r, b) in enumerate(self.pairs):
                rows.append(
                    (
                        self.runs[r],
                        self.runs[b],
                        measure,
                        int(self.n[m, p]),
                        self.difference[m, p],
                        self.diff_ci_low[m, p],
                        self.diff_ci_high[m, p],
                        self.cohens_d[m, p],
                        self.statistic[m, p],
                        self.p_value[m, p],
                        self.p_adjusted[m, p],
                        bool(sig[m, p]),
                    )
                )
        columns = [
            "run",
            "baseline",
            "measure",
            "n",
            "difference",
            "diff_ci_low",
            "diff_ci_high",
            "cohens_d",
            "statistic",
            "p_value",
            "p_adjusted",
            "significant",
        ]
        return pd.DataFrame(rows, columns=columns)

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per run, query and measure: ``run, baseline, measure, query_id, value,
        difference`` (difference from :attr:`baseline` on that query; NaN for the baseline)."""
        import pandas as pd

        rows = [r for r in self.records(per_query=True) if r["query_id"] != ALL]
        frame = pd.DataFrame(rows, columns=["run", "baseline", "measure", "query_id", "value", "difference"])
        return frame.astype({"value": "float64", "difference": "float64"})

    def to_dataframe(self, per_query: bool = False) -> pd.DataFrame:
        """The output rows as a DataFrame with the columns :data:`COLUMNS`: per run and
        measure its comparisons (``query_id == "all"``; a run compared with nothing, such as
        the baseline, has one row with ``baseline`` null), with *per_query* also per-query
        rows (value and difference from the baseline)."""
        import pandas as pd

        frame = pd.DataFrame(self.records(per_query), columns=list(COLUMNS))
        floats = [
            c for c in COLUMNS if c not in ("run", "baseline", "measure", "query_id", "n", "significant")
        ]
        return frame.astype({c: "float64" for c in floats} | {"n": "Int64", "significant": "boolean"})

    def records(self, per_query: bool = False) -> list[dict[str, Any]]:
        """The output rows as dicts (keys :data:`COLUMNS`, ``None`` where not applicable):
        per run, its per-query rows (with *per_query*; queries sorted, measures in order)
        then its aggregate rows (``query_id == "all"``)."""
        sig = self.significant
        ref = self.runs.index(self.baseline)
        out: list[dict[str, Any]] = []
        for r, run in enumerate(self.runs):
            if per_query:
                for q, qid in enumerate(self.query_ids):
                    for m, measure in enumerate(self.measures):
                        v = self.values[r, m, q]
                        if math.isnan(v):
                            continue
                        row = dict.fromkeys(COLUMNS)
                        diff = v - self.values[ref, m, q] if r != ref else math.nan
                        row.update(
                            run=run,
                            baseline=None if r == ref else self.baseline,
                            measure=measure,
                            query_id=str(qid),
                            value=float(v),
                            difference=None if math.isnan(diff) else float(diff),
                        )
                        out.append(row)
            for m, measure in enumerate(self.measures):
                base = {
                    "run": run,
                    "measure": measure,
                    "query_id": ALL,
                    "value": _num(self.aggregate[r, m]),
                    "ci_low": _num(self.ci_low[r, m]),
                    "ci_high": _num(self.ci_high[r, m]),
                    "std": _num(self.std[r, m]),
                    "se": _num(self.se[r, m]),
                }
                mine = [p for p, (x, _) in enumerate(self.pairs) if x == r]
                if not mine:
                    row = dict.fromkeys(COLUMNS)
                    row.update(base, n=int(np.count_nonzero(~np.isnan(self.values[r, m]))))
                    out.append(row)
                for p in mine:
                    row = dict.fromkeys(COLUMNS)
                    row.update(
                        base,
                        baseline=self.runs[self.pairs[p][1]],
                        p_value=_num(self.p_value[m, p]),
                        p_adjusted=_num(self.p_adjusted[m, p]),
                        difference=_num(self.difference[m, p]),
                        diff_ci_low=_num(self.diff_ci_low[m, p]),
                        diff_ci_high=_num(self.diff_ci_high[m, p]),
                        cohens_d=_num(self.cohens_d[m, p]),
                        statistic=_num(self.statistic[m, p]),
                        n=int(self.n[m, p]),
                        significant=None if math.isnan(self.p_adjusted[m, p]) else bool(sig[m, p]),
                    )
                    out.append(row)
        return out

    # -- output ------------------------------------------------------------------------
    def format(
        self,
        fmt: str = "trec",
        *,
        per_query: bool = False,
        precision: int | None = None,
        spread: str | None = None,
    ) -> str:
        """Render the comparison.

        Args:
            fmt: one of :data:`FORMATS`. ``trec``: one tab-separated line per row, ``run
                measure query value`` and, for a comparison, ``baseline difference p_value
                p_adjusted`` and ``*`` when significant. ``tsv``/``csv``: a header and the
                columns :data:`COLUMNS`. ``json``/``jsonl``: the rows as objects (null where
                not applicable). ``markdown``/``latex``: the paper table
                (:meth:`to_markdown`, :meth:`to_latex`).
            per_query: also per-query rows (not in the paper tables).
            precision: decimals; default 4 in trec, markdown and latex, full otherwise.
            spread: paper tables only: ``"std"`` or ``"se"`` shows value ± spread.
        """
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        from rankeval.report import check_precision

        check_precision(precision)
        if fmt == "markdown":
            return self.to_markdown(spread=spread, precision=4 if precision is None else precision)
        if fmt == "latex":
            return self.to_latex(spread=spread, precision=4 if precision is None else precision)
        rows = self.records(per_query)
        if fmt == "trec":
            return self._trec(rows, 4 if precision is None else precision)
        if fmt in ("json", "jsonl"):
            import json

            objs = [{k: _json(v, precision) for k, v in row.items()} for row in rows]
            if fmt == "json":
                return json.dumps(objs, indent=1) + "\n"
            return "".join(json.dumps(o) + "\n" for o in objs)
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([self._cell(k, row, precision) for k in COLUMNS])
        return buf.getvalue()

    def _is_int(self, measure: str, query_id: str) -> bool:
        return measure in self.integer_measures or (query_id != ALL and measure in self.whole_measures)

    def _cell(self, key: str, row: dict[str, Any], precision: int | None) -> str:
        from rankeval.report import _value

        v = row[key]
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return _value(v, key == "value" and self._is_int(row["measure"], row["query_id"]), precision)
        return str(v)

    def _trec(self, rows: list[dict[str, Any]], precision: int) -> str:
        from rankeval.report import _value

        width = max([22, *(len(m) for m in self.measures)])
        lines = []
        for row in rows:
            value = _value(row["value"], self._is_int(row["measure"], row["query_id"]), precision)
            text = f"{row['run']}\t{row['measure']:<{width}}\t{row['query_id']}\t{value}"
            if row["baseline"] is not None and row["query_id"] == ALL:
                text += "\t" + "\t".join(
                    [
                        f"vs {row['baseline']}",
                        _signed(row["difference"], precision),
                        "p=" + _value(_nan(row["p_value"]), False, precision),
                        "p_adj=" + _value(_nan(row["p_adjusted"]), False, precision),
                    ]
                )
                if row["significant"]:
                    text += "\t*"
            elif row["baseline"] is not None and row["difference"] is not None:
                text += f"\tvs {row['baseline']}\t{_signed(row['difference'], precision)}"
            lines.append(text)
        return "\n".join(lines) + ("\n" if lines else "")

    def to_markdown(self, spread: str | None = None, precision: int = 4) -> str:
        """A paper table in Markdown: one row per run, one column per measure, the best
        value of each measure in bold, significance markers and a legend below.

        Args:
            spread: ``"std"`` (standard deviation over queries) or ``"se"`` (standard error
                of the mean) shown as value ± spread; ``None``/``"none"``: values only.
            precision: decimals.
        """
        return self._paper_table("markdown", spread, precision)

    def to_latex(self, spread: str | None = None, precision: int = 4) -> str:
        """A paper table in LaTeX (``table`` environment; ``booktabs`` rules): as
        :meth:`to_markdown`, bold with ``\\textbf``, markers as superscripts, the legend as
        the caption."""
        return self._paper_table("latex", spread, precision)

    def _paper_table(self, fmt: str, spread: str | None, precision: int) -> str:
        from rankeval.report import _TEX, _value

        spread = spread or "none"
        if spread not in SPREADS:
            raise UsageError(f"unknown spread {spread!r}; expected one of {', '.join(SPREADS)}")
        tex = fmt == "latex"
        letters = _letters(len(self.runs)) if self.pair_mode == "all" else []
        ref = self.runs.index(self.baseline)
        marks = self._markers(letters)

        def esc(s: str) -> str:
            return s.translate(_TEX) if tex else s.replace("|", "\\|")

        shown = np.array(
            [
                [
                    _value(self.aggregate[r, m], m_ in self.integer_measures, precision)
                    for m, m_ in enumerate(self.measures)
                ]
                for r in range(len(self.runs))
            ],
            dtype=object,
        )
        best = []
        for m in range(len(self.measures)):
            finite = [float(v) for v in shown[:, m] if v != "nan"]
            best.append(max(finite) if finite else math.nan)
        body = []
        for r, run in enumerate(self.runs):
            label = esc(run)
            if letters:
                label = f"({letters[r]}) {label}"
            elif r == ref:
                label += " (baseline)"
            cells = [label]
            for m in range(len(self.measures)):
                text = shown[r, m]
                if text != "nan" and float(text) == best[m]:
                    text = f"\\textbf{{{text}}}" if tex else f"**{text}**"
                mark = marks[r][m]
                if mark:
                    if tex:
                        sym = {"†": "\\dag", "‡": "\\ddag"}.get(mark, mark)
                        text += f"\\textsuperscript{{{sym}}}"
                    else:
                        text += mark if mark in ("†", "‡") else f"<sup>{mark}</sup>"
                if spread != "none":
                    s = self.std[r, m] if spread == "std" else self.se[r, m]
                    if not math.isnan(s):
                        text += (" $\\pm$ " if tex else " ± ") + _value(float(s), False, precision)
                cells.append(text)
            body.append(cells)
        head = ["run", *(esc(m) for m in self.measures)]
        legend = self._legend(spread, tex, letters)
        if not tex:
            lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(self.measures)]
            lines += ["| " + " | ".join(row) + " |" for row in body]
            return "\n".join(lines) + "\n\n" + legend + "\n"
        spec = "l" + "r" * len(self.measures)
        lines = [
            "\\begin{table}",
            "\\centering",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(head) + " \\\\",
            "\\midrule",
        ]
        for r, row in enumerate(body):
            if self.runs[r] == RANDOM and self.random is not None and r > 0:
                lines.append("\\midrule")
            lines.append(" & ".join(row) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{legend}}}", "\\end{table}"]
        return "\n".join(lines) + "\n"

    def _markers(self, letters: list[str]) -> list[list[str]]:
        """Per run and measure: ``†``/``‡`` (significantly better/worse than the baseline),
        or, with all pairs, the letters of the runs it is significantly better than."""
        sig = self.significant
        out: list[list[Any]] = [[[] for _ in self.measures] for _ in self.runs]
        for m in range(len(self.measures)):
            for p, (r, b) in enumerate(self.pairs):
                if not sig[m, p]:
                    continue
                diff = self.difference[m, p]
                if letters:
                    winner, loser = (r, b) if diff > 0 else (b, r)
                    out[winner][m].append(letters[loser])
                else:
                    out[r][m].append("†" if diff > 0 else "‡")
        if letters:
            return [[",".join(sorted(c)) for c in row] for row in out]
        return [["".join(c) for c in row] for row in out]

    def _legend(self, spread: str, tex: bool, letters: list[str]) -> str:
        from rankeval.report import _TEX

        def esc(s: str) -> str:
            return s.translate(_TEX) if tex else s

        alpha = f"$\\alpha$ = {self.alpha:g}" if tex else f"α = {self.alpha:g}"  # noqa: RUF001
        test = TEST_NAMES[self.test]
        if self.test in ("bootstrap", "randomization"):
            test += f", {self.samples:,} resamples"
        family = "per measure" if self.family == "measure" else "over all comparisons"
        how = f"{test}, two-sided, {CORRECTION_NAMES[self.correction]}"
        if self.correction != "none":
            how += f" {family}"
        how += f", {alpha}"
        parts = ["Best value per measure in bold."]
        if letters:
            parts.append(
                f"Superscript letters: significantly better than the run with that letter ({esc(how)})."
                if not tex
                else f"Superscript letters: significantly better than the run with that letter ({how})."
            )
        else:
            dag = "\\dag{} / \\ddag{}" if tex else "† / ‡"
            parts.append(f"{dag}: significantly better / worse than {esc(self.baseline)} ({how}).")
        if spread == "std":
            parts.append(("$\\pm$" if tex else "±") + " standard deviation over queries.")
        elif spread == "se":
            sqrt = "$\\sqrt{n}$" if tex else "√n"
            parts.append(
                ("$\\pm$" if tex else "±") + f" standard error of the mean (std / {sqrt}; for random: "
                "its standard deviation over random orderings)."
            )
        if self.random is not None:
            rb = self.random
            kind = (
                "exact"
                if rb.exact.all()
                else (
                    "Monte Carlo"
                    if not rb.exact.any()
                    else "exact where a closed form exists, else Monte Carlo"
                )
            )
            parts.append(
                f"random: expected value under a uniformly random ordering of the documents "
                f"{esc(rb.source)} retrieved ({kind}; spread over {rb.samples:,} random orderings)."
            )
        return " ".join(parts)

    def plot(
        self, directory: str | Path, fmt: str = "png", curves: Sequence[pd.DataFrame] = ()
    ) -> list[Path]:
        """Write the plots into *directory* (created if needed) and return their paths:
        per measure and compared run, the per-query differences from the baseline (sorted
        bars, ``differences-MEASURE-RUN.FMT``); per measure, the distribution of the per-query
        scores of every run (``distribution-MEASURE.FMT``); each of *curves*
        (:func:`parameter_curve` frames, ``curve-MEASURE.FMT``)."""
        from rankeval.plots import plot_comparison

        return plot_comparison(self, directory, fmt, curves)


def _num(v: Any) -> float | None:
    f = float(v)
    return None if math.isnan(f) else f


def _nan(v: float | None) -> float:
    return math.nan if v is None else v


def _json(v: Any, precision: int | None) -> Any:
    if isinstance(v, float):
        if not math.isfinite(v):
            return None  # JSON has no NaN or infinity (an infinite Cohen's d: zero spread)
        return round(v, precision) if precision is not None else v
    return v


def _signed(v: float | None, precision: int) -> str:
    if v is None or math.isnan(v):
        return "nan"
    return f"{v:+.{precision}f}"


def _letters(n: int) -> list[str]:
    out = []
    for i in range(n):
        s = ""
        i += 1
        while i:
            i, rem = divmod(i - 1, 26)
            s = chr(ord("a") + rem) + s
        out.append(s)
    return out


# --------------------------------------------------------------------------- progress
@contextmanager
def _progress(enabled: bool | None) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """A factory of progress bars on stderr (rich), or of no-ops: ``task(label, total)``
    returns ``advance(n)``. ``enabled=None``: only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda label, total: lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:

        def task(label: str, total: int) -> Callable[[int], None]:
            tid = bar.add_task(label, total=total)
            return lambda n: bar.advance(tid, n)

        yield task


# --------------------------------------------------------------------------- compare
def _check(name: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise UsageError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")


def compare(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    baseline: str | None = None,
    pairs: str = "baseline",
    test: str = "ttest",
    correction: str = "none",
    family: str = "measure",
    alpha: float = 0.05,
    samples: int = 10_000,
    seed: int | None = 0,
    ci: str = "t",
    random_baseline: bool | str = False,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str = "error",
    docinfo: str | Path | None = None,
    registry: Registry | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Compare runs: scores, paired significance tests, corrections, effect sizes and
    confidence intervals.

    Args:
        qrels: as for :func:`rankeval.evaluate`.
        runs: two or more runs (a list, or ``{name: run}``), as for :func:`rankeval.evaluate`;
            one run is enough with *random_baseline*.
        measures: measure specs or objects.
        baseline: name of the baseline run (default: the first run).
        pairs: ``"baseline"``: each run against the baseline; ``"all"``: every pair of runs.
        test: ``"ttest"`` (paired t-test), ``"wilcoxon"`` (signed-rank), ``"bootstrap"``
            (paired bootstrap) or ``"randomization"`` (Fisher's randomisation test); see
            :mod:`rankeval.stats`.
        correction: ``"none"``, ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg).
        family: the comparisons corrected together: those of each ``"measure"`` (default),
            or ``"all"`` of them.
        alpha: significance level (markers in tables, :attr:`Comparison.significant`).
        samples: resamples of the bootstrap and randomisation tests and of bootstrap
            intervals; random orderings of the random baseline.
        seed: seed of :func:`numpy.random.default_rng` for all random draws (every comparison
            on the same queries uses the same resamples).
        ci: confidence intervals: ``"t"`` (mean ± t·sd/√n) or ``"bootstrap"`` (percentile).
        random_baseline: add a run ``random``: the expected value of each measure under a
            uniformly random ordering of the baseline run's retrieved documents (a run name:
            of that run's documents); see :mod:`rankeval.random_ranking`.
        missing_zero: as for :func:`rankeval.evaluate`; with ``False``, the queries a run
            lacks are left out of each comparison that involves that run (as are queries
            whose value is undefined).
        nest_sep: as for :func:`rankeval.evaluate`.
        max_docs: as for :func:`rankeval.evaluate`.
        on_duplicate: as for :func:`rankeval.evaluate`.
        docinfo: as for :func:`rankeval.evaluate`.
        registry: as for :func:`rankeval.evaluate`.
        progress: show a progress bar on stderr (default: when stderr is a terminal).

    Returns:
        A :class:`Comparison`.

    Raises:
        UsageError: fewer than two runs, an unknown baseline, or a bad option value.
    """
    from rankeval.data import as_qrels
    from rankeval.engine import as_runs, evaluate_results, resolve_measures

    _check("pairs", pairs, PAIRS)
    _check("test", test, stats.TESTS)
    _check("correction", correction, stats.CORRECTIONS)
    _check("family", family, FAMILIES)
    _check("ci", ci, CIS)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1 (exclusive), not {alpha!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= stats.MAX_SAMPLES:
        raise UsageError(f"samples must be an integer from 1 to {stats.MAX_SAMPLES:,}, not {samples!r}")
    measure_list = resolve_measures(measures, registry)
    qrels_obj = as_qrels(qrels)
    if docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(docinfo)
    run_objs = as_runs(runs)
    names = [r.name for r in run_objs]
    if len(run_objs) + bool(random_baseline) < 2:
        raise UsageError(
            f"compare needs at least two runs (or one run and the random baseline); got {len(run_objs)}"
        )
    if random_baseline and RANDOM in names:
        raise UsageError(f"a run is named {RANDOM!r}, the name of the random baseline; rename it")
    base = _find_run(run_objs, baseline, "baseline") if baseline is not None else 0
    source = base
    if isinstance(random_baseline, str):
        source = _find_run(run_objs, random_baseline, "random-baseline run")

    results = evaluate_results(
        qrels_obj,
        run_objs,
        measure_list,
        missing_zero=missing_zero,
        nest_sep=nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        registry=registry,
    )
    specs = [str(m) for m in measure_list]
    blocks: list[tuple[int, int, np.ndarray, np.ndarray, float]] = []
    for run_col, qid_col, m_col, val_col in zip(
        results.run, results.query_id, results.measure, results.value, strict=True
    ):
        r, m = names.index(str(run_col[0])), specs.index(str(m_col[0]))
        blocks.append((r, m, qid_col[:-1].astype(str), val_col[:-1], float(val_col[-1])))

    with _progress(progress) as task:
        rb = None
        if random_baseline:
            import pyarrow.compute as pc

            from rankeval import random_ranking as rbm

            work = rbm.work(
                int(pc.count_distinct(qrels_obj.table.column("query_id")).as_py()),
                len(run_objs[source]),
                measure_list,
                samples,
            )
            rb = rbm.random_baseline(
                qrels_obj,
                run_objs[source],
                measure_list,
                samples=samples,
                seed=seed,
                missing_zero=missing_zero,
                nest_sep=nest_sep,
                max_docs=max_docs,
                on_duplicate=on_duplicate,
                registry=registry,  # names the plugin if a measure's code fails
                progress=task("random baseline", work),
            )
            names = [*names, RANDOM]
        query_ids = np.unique(
            np.concatenate(
                [b[2] for b in blocks]
                + ([rb.query_ids.astype(str)] if rb is not None else [np.zeros(0, str)])
            )
        )
        n_r, n_m, n_q = len(names), len(specs), len(query_ids)
        values = np.full((n_r, n_m, n_q), np.nan)
        aggregate = np.full((n_r, n_m), np.nan)
        for r, m, qids, vals, agg in blocks:
            values[r, m, np.searchsorted(query_ids, qids)] = vals
            aggregate[r, m] = agg
        if rb is not None:
            pos = np.searchsorted(query_ids, rb.query_ids.astype(str))
            values[-1][:, pos] = rb.values
            aggregate[-1] = rb.aggregate
        if pairs == "baseline":
            pair_list = [(r, base) for r in range(n_r) if r != base]
        else:
            pair_list = [(j, i) for i in range(n_r) for j in range(i + 1, n_r)]
        out = _pair_stats(values, pair_list, test, ci, alpha, samples, seed, task)
        run_std, run_se, run_low, run_high = _run_stats(values, ci, alpha, samples, seed, task)
        if rb is not None:
            run_std[-1], run_se[-1] = rb.std, rb.se
            run_low[-1], run_high[-1] = rb.interval(alpha)
    p_adj = _correct(out["p_value"], correction, family)
    return Comparison(
        runs=names,
        measures=specs,
        query_ids=query_ids.astype(object),
        values=values,
        aggregate=aggregate,
        std=run_std,
        se=run_se,
        ci_low=run_low,
        ci_high=run_high,
        pairs=pair_list,
        p_adjusted=p_adj,
        baseline=names[base],
        pair_mode=pairs,
        test=test,
        correction=correction,
        family=family,
        alpha=float(alpha),
        samples=samples,
        seed=seed,
        ci=ci,
        random=rb,
        integer_measures=set(results.integer_measures),
        whole_measures=set(results.whole_measures),
        **out,
    )


def _find_run(runs: Sequence[Any], name: str, what: str) -> int:
    """Index of the run named *name* (or read from the path *name*)."""
    for i, r in enumerate(runs):
        if r.name == name:
            return i
    for i, r in enumerate(runs):
        if r.source is not None and (r.source == name or Path(r.source) == Path(name)):
            return i
    raise UsageError(f"unknown {what} {name!r}; the runs are: {', '.join(r.name for r in runs)}")


def _groups(valid: np.ndarray) -> dict[bytes, list[int]]:
    """Rows of a boolean matrix grouped by equal rows."""
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(valid):
        groups.setdefault(row.tobytes(), []).append(i)
    return groups


def _pair_stats(
    values: np.ndarray,
    pairs: list[tuple[int, int]],
    test: str,
    ci: str,
    alpha: float,
    samples: int,
    seed: int | None,
    task: Callable[[str, int], Callable[[int], None]],
) -> dict[str, np.ndarray]:
    """Tests, differences, intervals and effect sizes of every comparison and measure."""
    n_m, n_p = values.shape[1], len(pairs)
    out = {
        k: np.full((n_m, n_p), np.nan)
        for k in ("difference", "diff_ci_low", "diff_ci_high", "cohens_d", "statistic", "p_value")
    }
    out["n"] = np.zeros((n_m, n_p), dtype=np.int64)
    if not pairs:
        return out
    run_idx = np.array([r for r, _ in pairs])
    base_idx = np.array([b for _, b in pairs])
    resampling = test in ("bootstrap", "randomization") or ci == "bootstrap"
    plan: list[tuple[int, np.ndarray, list[int]]] = []
    for m in range(n_m):
        d = values[run_idx, m] - values[base_idx, m]  # (P, Q)
        plan.extend((m, d, rows) for rows in _groups(~np.isnan(d)).values())
    advance = task(f"{TEST_NAMES[test]}s", len(plan) * samples) if resampling else (lambda n: None)
    for m, d, rows in plan:
        idx = np.array(rows)
        mask = ~np.isnan(d[idx[0]])
        x = d[idx][:, mask]
        n = x.shape[1]
        out["n"][m, idx] = n
        if n == 0:
            continue
        out["difference"][m, idx] = x.mean(axis=1)
        out["cohens_d"][m, idx] = stats.cohens_d(x)
        means = None
        if test == "bootstrap" or ci == "bootstrap":
            means = stats.bootstrap_means(x, samples, seed, progress=advance)
        if test == "ttest":
            stat, p = stats.ttest(x)
        elif test == "wilcoxon":
            stat, p = stats.wilcoxon(x)
        elif test == "randomization":
            stat, p = stats.randomization(x, samples, seed, progress=None if ci == "bootstrap" else advance)
        else:
            assert means is not None
            stat, p = x.mean(axis=1), stats.bootstrap_p(x, means)
        out["statistic"][m, idx], out["p_value"][m, idx] = stat, p
        if ci == "bootstrap":
            assert means is not None
            low, high = stats.percentile_interval(means, alpha)
        else:
            low, high = stats.t_interval(x, alpha)
        out["diff_ci_low"][m, idx], out["diff_ci_high"][m, idx] = low, high
    return out


def _run_stats(
    values: np.ndarray,
    ci: str,
    alpha: float,
    samples: int,
    seed: int | None,
    task: Callable[[str, int], Callable[[int], None]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per run and measure: std over queries, standard error, interval of the mean."""
    n_r, n_m, _ = values.shape
    std, se, low, high = (np.full((n_r, n_m), np.nan) for _ in range(4))
    plan: list[tuple[int, list[int]]] = []
    for m in range(n_m):
        plan.extend((m, rows) for rows in _groups(~np.isnan(values[:, m])).values())
    advance = task("intervals", len(plan) * samples) if ci == "bootstrap" else (lambda n: None)
    for m, rows in plan:
        idx = np.array(rows)
        mask = ~np.isnan(values[idx[0], m])
        x = values[idx, m][:, mask]
        n = x.shape[1]
        if n == 0:
            continue
        if n > 1:
            std[idx, m] = x.std(axis=1, ddof=1)
            se[idx, m] = std[idx, m] / math.sqrt(n)
        if ci == "bootstrap":
            lo, hi = stats.percentile_interval(
                stats.bootstrap_means(x, samples, seed, progress=advance), alpha
            )
        else:
            lo, hi = stats.t_interval(x, alpha)
        low[idx, m], high[idx, m] = lo, hi
    return std, se, low, high


def _correct(p: np.ndarray, correction: str, family: str) -> np.ndarray:
    if family == "all":
        return stats.adjust(p.ravel(), correction).reshape(p.shape)
    return np.array([stats.adjust(row, correction) for row in p]).reshape(p.shape)


# --------------------------------------------------------------------- parameter curves
_BRACES = re.compile(r"\{([^{}]*)\}")


def expand_template(template: str) -> tuple[str | None, list[str], list[str]]:
    """Expand a measure-spec template with one ``{v1,v2,...}`` group:
    ``"hTBG@h={1m,5m,1h}"`` → ``("h", ["1m", "5m", "1h"], ["hTBG@h=1m", "hTBG@h=5m",
    "hTBG@h=1h"])``. The parameter is the name before ``=`` in front of the braces, ``None``
    after a bare ``@`` (the measure's ``@`` parameter)."""
    groups = _BRACES.findall(template)
    if len(groups) != 1 or template.count("{") != 1 or template.count("}") != 1:
        raise UsageError(
            f"a curve template needs exactly one {{v1,v2,...}} group, e.g. 'nDCG@{{5,10,20}}', "
            f"not {template!r}"
        )
    values = [v.strip() for v in groups[0].split(",") if v.strip()]
    if not values:
        raise UsageError(f"no values in the curve template {template!r}")
    start = template.index("{")
    before = template[:start]
    match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$", before)
    param = match.group(1) if match else None
    if param is None and not before.rstrip().endswith("@"):
        raise UsageError(f"the {{...}} group of {template!r} must follow '@' or 'NAME='")
    specs = [before + v + template[template.index("}") + 1 :] for v in values]
    return param, values, specs


def parameter_curve(
    qrels: Any,
    runs: Any,
    template: str,
    *,
    registry: Registry | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Each run's score as one parameter of a measure varies (e.g. hTBG against its
    half-life, ``"hTBG@h={30s,1m,5m,30m,1h,3h}"``; see :func:`expand_template`).

    Args:
        qrels: as for :func:`rankeval.evaluate`.
        runs: as for :func:`rankeval.evaluate`.
        template: a measure spec with one ``{v1,v2,...}`` group.
        registry: measure registry.
        options: further keyword arguments of :func:`rankeval.evaluate`.

    Returns:
        A DataFrame ``run, measure, parameter, label, x, value``: *x* is the parameter's
        value as a number (durations in seconds), or its position when it is not a number.
    """
    import pandas as pd

    from rankeval.engine import evaluate, resolve_measures

    param, labels, specs = expand_template(template)
    measures = [resolve_measures(s, registry)[0] for s in specs]
    name = param or type(measures[0]).at or "value"
    xs = []
    for i, m in enumerate(measures):
        v = getattr(m, name, None)
        xs.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(i))
    frame = evaluate(qrels, runs, measures, registry=registry, **options)
    frame = frame[frame["query_id"] == ALL]
    where = {str(m): i for i, m in enumerate(measures)}
    rows = [
        (run, measure, name, labels[where[measure]], xs[where[measure]], value)
        for run, measure, value in zip(frame["run"], frame["measure"], frame["value"], strict=True)
    ]
    out = pd.DataFrame(rows, columns=["run", "measure", "parameter", "label", "x", "value"])
    out.attrs["template"] = template
    return out
