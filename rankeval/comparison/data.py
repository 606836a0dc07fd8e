"""The numbers of a comparison of runs and what is read off them: lookups, data frames, output
rows. :class:`ComparisonData` is the base of :class:`~rankeval.comparison.compare.Comparison` (which
documents its fields); the renderings (:mod:`rankeval.comparison.tables`) and the plots
(:mod:`rankeval.comparison.plots`) take it, so that neither needs :mod:`rankeval.comparison.compare`.

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.measures.base`,
:func:`rankeval.report.formats.safe_name` (run names as text),
:mod:`rankeval.engine.random_ranking` (for types only); pandas and the plugin loader lazily. Nothing
that renders, plots or computes statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.errors import UsageError
from rankeval.io.inputs import safe_name
from rankeval.measures.base import Measure
from rankeval.options import CompareOptions

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.random_ranking import RandomBaseline

__all__ = ["COLUMNS", "RANDOM", "ComparisonData"]

#: name of the random-ranking baseline's row
RANDOM = "random"
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


@dataclass
class ComparisonData:
    """The fields of a :class:`~rankeval.comparison.compare.Comparison` (documented there), its
    lookups (:meth:`run_index`, :meth:`measure_index`, :meth:`pair_index`), its data frames
    and its output rows (:meth:`records`)."""

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
    stats: CompareOptions = field(default_factory=CompareOptions)
    random: RandomBaseline | None = None
    integer_measures: set[str] = field(default_factory=set)
    whole_measures: set[str] = field(default_factory=set)

    # -- lookups -----------------------------------------------------------------------
    @property
    def significant(self) -> np.ndarray:
        """``(M, P)`` whether each comparison is significant: ``p_adjusted < alpha``."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.p_adjusted < self.stats.alpha)

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
        from rankeval.measures.plugins import current_registry

        try:
            return self.measures.index(str(current_registry().parse(text)))
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

    @property
    def labels(self) -> list[str]:
        """The run names as the frames and outputs write them: a file name's bytes that are
        not UTF-8 as ``\\xNN`` (:func:`~rankeval.report.formats.safe_name`)."""
        return [safe_name(run) for run in self.runs]

    # -- frames ------------------------------------------------------------------------
    @property
    def scores(self) -> pd.DataFrame:
        """One row per run and measure: ``run, measure, value, std, se, ci_low, ci_high, n``."""
        import pandas as pd

        rows = []
        for r, run in enumerate(self.labels):
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
                        self.labels[r],
                        self.labels[b],
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

        rows = [r for r in self.records(per_query=True) if r["query_id"] is not None]
        frame = pd.DataFrame(rows, columns=["run", "baseline", "measure", "query_id", "value", "difference"])
        return frame.astype({"value": "float64", "difference": "float64"})

    def to_dataframe(self, per_query: bool = False) -> pd.DataFrame:
        """The output rows as a DataFrame with the columns :data:`COLUMNS`: per run and
        measure its comparisons (``query_id`` null; a run compared with nothing, such as
        the baseline, has one row with ``baseline`` null), with *per_query* also per-query
        rows (value and difference from the baseline)."""
        import pandas as pd

        frame = pd.DataFrame(self.records(per_query), columns=list(COLUMNS))
        floats = [
            c for c in COLUMNS if c not in ("run", "baseline", "measure", "query_id", "n", "significant")
        ]
        return frame.astype({c: "float64" for c in floats} | {"n": "Int64", "significant": "boolean"})

    def records(self, per_query: bool = False) -> list[dict[str, Any]]:
        """The output rows as dicts (keys :data:`COLUMNS`, ``None`` where not applicable; an
        undefined value is NaN, as in evaluate's results):
        per run, its per-query rows (with *per_query*; queries sorted, measures in order)
        then its aggregate rows (``query_id`` ``None``: no query id can take it)."""
        sig = self.significant
        ref = self.runs.index(self.baseline)
        out: list[dict[str, Any]] = []
        for r, run in enumerate(self.labels):
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
                            baseline=None if r == ref else self.labels[ref],
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
                    "query_id": None,
                    "value": float(self.aggregate[r, m]),  # NaN where undefined, as evaluate's
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
                        baseline=self.labels[self.pairs[p][1]],
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


def _num(v: Any) -> float | None:
    f = float(v)
    return None if math.isnan(f) else f
