"""The query x run matrix of one measure: what every meta-evaluation starts from.

:func:`per_query` takes the per-query values in any of the forms an evaluation gives them and
returns a :class:`Matrix` (rows: queries, columns: runs). Accepted forms:

- the long frame of :meth:`rankeval.Evaluator.evaluate` (columns ``run``, ``query_id``,
  ``measure``, ``value``); its aggregate rows (``query_id`` null) are dropped, and ``measure``
  picks one measure when the frame holds several;
- a wide :class:`pandas.DataFrame`: index the queries, one column a run;
- a mapping run → {query → value};
- a :class:`Matrix` (returned as it is).

A query that some run lacks, or a NaN value, is a :class:`~rankeval.errors.UsageError`
naming the run and how many queries, unless ``missing="drop"`` (keep the queries every run
has a value for) or ``missing="zero"`` (a missing value counts as 0, as trec_eval's ``-c``).

May import: numpy, :mod:`rankeval.errors`, :mod:`rankeval.options`; pandas lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from rankeval.errors import UsageError
from rankeval.options import check_choice

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MISSING", "Matrix", "Values", "per_query", "system_scores"]

#: what :func:`per_query` does with a query some run has no (or a NaN) value for
MISSING = ("error", "drop", "zero")
_LONG = ("run", "query_id", "measure", "value")


@dataclass(frozen=True)
class Matrix:
    """Per-query values of one measure.

    Attributes:
        runs: The run names, one per column.
        queries: The query ids, one per row.
        values: ``(len(queries), len(runs))`` float64 array; no NaN.
    """

    runs: tuple[str, ...]
    queries: tuple[str, ...]
    values: np.ndarray

    def means(self) -> np.ndarray:
        """The mean of each run over the queries (one per run)."""
        return np.asarray(self.values.mean(axis=0), dtype=np.float64)


#: the forms :func:`per_query` accepts
Values = Union[Matrix, "pd.DataFrame", Mapping[str, Mapping[str, float]]]


def _long_to_wide(frame: pd.DataFrame, measure: str | None) -> pd.DataFrame:
    """The wide frame (index query, columns run) of one measure of a long frame."""
    frame = frame[frame["query_id"].notna()]
    measures = sorted({str(m) for m in frame["measure"].unique()})
    if measure is None:
        if len(measures) != 1:
            raise UsageError(
                f"the values hold {len(measures)} measures ({', '.join(measures) or 'none'}); "
                "name one (measure=...)"
            )
        measure = measures[0]
    elif measure not in measures:
        raise UsageError(f"no per-query values of measure {measure!r}; the values hold {', '.join(measures)}")
    one = frame[frame["measure"] == measure]
    dup = one.duplicated(["run", "query_id"])
    if dup.any():
        row = one[dup].iloc[0]
        raise UsageError(f"run {row['run']!r} has two values of {measure} for query {row['query_id']!r}")
    wide: pd.DataFrame = one.pivot(index="query_id", columns="run", values="value")
    return wide


def _to_wide(values: Any, measure: str | None) -> pd.DataFrame:
    import pandas as pd

    if isinstance(values, pd.DataFrame):
        if set(_LONG) <= set(values.columns):
            return _long_to_wide(values, measure)
        if measure is not None:
            raise UsageError(f"measure={measure!r} given, but the values are a wide frame of one measure")
        return values
    if isinstance(values, Mapping):
        if measure is not None:
            raise UsageError(f"measure={measure!r} given, but the values are a mapping of one measure")
        try:
            return pd.DataFrame({str(run): pd.Series(dict(q), dtype=np.float64) for run, q in values.items()})
        except (TypeError, ValueError) as exc:
            raise UsageError(f"expected a mapping run -> {{query -> value}}: {exc}") from None
    raise UsageError(
        "expected per-query values: an evaluation's long frame, a wide frame (index query, "
        f"columns run), a mapping run -> {{query -> value}} or a Matrix, not {type(values).__name__}"
    )


def per_query(values: Values, measure: str | None = None, *, missing: str = "error") -> Matrix:
    """The :class:`Matrix` of one measure's per-query values (see the module docstring for
    the forms *values* may take). Queries and runs are sorted by name (as strings), so the
    result does not depend on the order of the input rows.

    Raises:
        UsageError: several measures and no *measure* (the message lists them), an unknown
            *measure*, two values for one run and query, a query missing (or NaN) for some run
            with ``missing="error"`` (naming the run and the count), no query or no run left,
            or an unknown *missing*.
    """
    check_choice("missing", missing, MISSING)
    if isinstance(values, Matrix):
        return values
    wide = _to_wide(values, measure)
    wide = wide.rename(index=str, columns=str).sort_index(axis=0).sort_index(axis=1)
    arr = np.asarray(wide.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
    if arr.size == 0:
        raise UsageError(f"no per-query values ({arr.shape[1]} runs, {arr.shape[0]} queries)")
    gaps = np.isnan(arr)
    if gaps.any():
        if missing == "error":
            j = int(np.argmax(gaps.sum(axis=0)))
            raise UsageError(
                f"run {wide.columns[j]!r} has no value for {int(gaps[:, j].sum())} of {len(arr)} queries "
                '(missing="drop" keeps the queries every run has, missing="zero" counts them as 0)'
            )
        if missing == "zero":
            arr = np.where(gaps, 0.0, arr)
        else:
            keep = ~gaps.any(axis=1)
            if not keep.any():
                raise UsageError("no query has a value for every run")
            arr, wide = arr[keep], wide[keep]
    return Matrix(tuple(str(r) for r in wide.columns), tuple(str(q) for q in wide.index), arr)


def system_scores(values: Values, measure: str | None = None, *, missing: str = "error") -> dict[str, float]:
    """Each run's mean over the queries of :func:`per_query`'s matrix: run → score.

    Raises:
        UsageError: as :func:`per_query`.
    """
    m = per_query(values, measure, missing=missing)
    return {run: float(v) for run, v in zip(m.runs, m.means(), strict=True)}
