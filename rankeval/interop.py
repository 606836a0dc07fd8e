"""rankeval's measures inside ir_measures, and so inside PyTerrier: :func:`as_ir_measure`.

    import ir_measures, rankeval
    htbg = rankeval.as_ir_measure("hTBG@h=3h")
    ir_measures.calc_aggregate([ir_measures.nDCG@10, htbg], qrels, run)
    pt.Experiment([bm25, monot5], topics, qrels, eval_metrics=[ir_measures.nDCG@10, htbg])

The measure is an ir_measures runtime measure (``ir_measures.define``): ir_measures hands its
function the qrels and the run as DataFrames, all queries at once; the function reads them as
:class:`~rankeval.Qrels` and :class:`~rankeval.Run` (their extra columns, such as a ``cost`` or
``sens`` column of a qrels DataFrame, are item attributes) and evaluates them with the local
engine's code, so the per-query values are rankeval's.

ir_measures aggregates the per-query values with the measure's ``aggregator()``, which only
sees the values. Each value is therefore a :class:`QueryValue`, a ``float`` that also carries
its query id and the per-query numbers the measure's aggregate needs
(:meth:`~rankeval.Measure.aggregate_parts`); the aggregator gathers them and computes
rankeval's aggregate (:meth:`~rankeval.Measure.aggregate_from_parts`) as the Dask engine
combines partitions: a pooled recall, a geometric mean or a sum of counts comes out as
rankeval computes it, also when PyTerrier evaluates the queries in batches. Queries rankeval
gives no value (a TAR topic without relevant documents, a query of the qrels the run lacks
with ``missing_zero=False``) get ir_measures' default, NaN, and do not count in the aggregate.

This module is a front end beside the public API (the top layer): it uses the engine and the
data model, and nothing in rankeval uses it. May import: :mod:`rankeval.engine`,
:mod:`rankeval.io`, :mod:`rankeval.ranking`, :mod:`rankeval.measures`, :mod:`rankeval.errors`,
:mod:`rankeval.options`; ir_measures, pandas and numpy lazily.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rankeval.errors import UsageError, measure_guard
from rankeval.options import EvalOptions

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from rankeval.engine.prepare import Resolved
    from rankeval.measures.base import Measure
    from rankeval.measures.registry import Registry

__all__ = ["QueryValue", "as_ir_measure"]


def as_ir_measure(
    measure: Any, *, options: EvalOptions | None = None, registry: Registry | None = None
) -> Any:
    """An ir_measures measure that computes a rankeval measure, for ``ir_measures.calc_aggregate``,
    ``ir_measures.iter_calc``, ``ir_measures.evaluator`` and PyTerrier's
    ``pt.Experiment(eval_metrics=[...])``.

    Per-query values are rankeval's, and so is the aggregate, also where it is not a mean
    (pooled recall@P%, GMAP, counts). Qrels that ir_measures reads (files, ``Qrel``
    namedtuples, dicts) have only ``query_id, doc_id, relevance, iteration``: give the item
    attributes a measure needs (``cost=`` for TBG/hTBG, ``sens=`` for CS-DCG) with the
    options' ``docinfo`` (``options=rankeval.EvalOptions(docinfo=...)``),
    with a parameter such as hTBG's ``default_cost=``, or as columns of a qrels DataFrame
    (ir_measures passes a DataFrame's columns through: ``rankeval.Qrels.read(path).frame``).
    ir_measures sorts the run by descending score before the measure sees it; measures that
    read the run's order and its column 2 (the CLEF TAR thresholds) need a run DataFrame
    whose file order has descending scores and a ``q0`` column (``rankeval.Run.read(path).frame``).

    Args:
        measure: one measure: a spec (``"hTBG@h=3h"``), a rankeval :class:`~rankeval.Measure`
            or an ir_measures measure.
        options: the evaluation options (:class:`~rankeval.EvalOptions`, no ``compat``): its
            ``docinfo`` side files are applied to the qrels ir_measures gives.
        registry: measure registry to resolve specs with (default: all installed plugins).

    Returns:
        An ``ir_measures`` measure named by the measure's canonical spec (``str(measure)``).
        ir_measures compares measures by name, so do not list it beside ir_measures' own
        measure of the same name (``ir_measures.nDCG@10`` and ``as_ir_measure("nDCG@10")``).

    Raises:
        UsageError: not exactly one measure, a ``compat`` option, an option out of its
            domain, or ir_measures is not installed; :class:`~rankeval.errors.SpecError` for
            a spec that does not parse. Errors while evaluating (a missing ``cost=``, a bad
            input) are rankeval's, raised through ir_measures.
    """
    try:
        import ir_measures
    except ImportError:  # pragma: no cover - a dependency of rankeval
        raise UsageError("as_ir_measure needs ir_measures (pip install ir_measures)") from None
    from rankeval.engine.prepare import resolve

    resolved = resolve(measure, options, registry)
    resolved.check_no_compat("rankeval.as_ir_measure")
    if len(resolved.measures) != 1:
        found = resolved.measures
        raise UsageError(f"as_ir_measure takes one measure, not {len(found)}: {' '.join(map(str, found))}")
    m, plugin = resolved.measures[0], resolved.plugins[0]
    defined = ir_measures.define(
        _Evaluation(resolved),
        name=str(m),
        support_cutoff=False,  # a rankeval spec carries its own cutoff
        pretty_name=str(m),
        short_desc=f"rankeval: {m.description}" if m.description else "rankeval measure",
    )
    kind = type(defined)  # a class of its own, made by this define() call
    kind.DEFAULT = math.nan  # a query rankeval gives no value
    kind.aggregator = lambda self: _Aggregate(m, plugin)
    return defined


class QueryValue(float):
    """A per-query value of an :func:`as_ir_measure` measure: a ``float`` that also carries
    its query id and its :meth:`~rankeval.Measure.aggregate_parts`, for the aggregate.

    Attributes:
        query_id: the query, as rankeval names it.
        parts: the measure's aggregate parts of this query (one-element arrays).
    """

    query_id: str
    parts: dict[str, np.ndarray]

    def __new__(cls, value: float, query_id: str, parts: dict[str, np.ndarray]) -> QueryValue:
        self = super().__new__(cls, value)
        self.query_id = query_id
        self.parts = parts
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (QueryValue, (float(self), self.query_id, self.parts))


class _Evaluation:
    """The function ir_measures calls with (qrels, run) DataFrames: ``(query_id, value)`` pairs."""

    def __init__(self, resolved: Resolved) -> None:
        self.resolved = resolved
        self.measure, self.plugin = resolved.measures[0], resolved.plugins[0]

    def __call__(self, qrels: pd.DataFrame, run: pd.DataFrame) -> list[tuple[Any, QueryValue]]:
        from rankeval.engine.scoring import aligned, evaluate_measure
        from rankeval.io.data import Qrels, Run

        opts = self.resolved.options
        alignment = aligned(
            self.resolved.read_qrels(Qrels.from_frame(qrels, "<ir_measures qrels>")),
            Run.from_frame(run, "run"),
            replace(opts, judged_only=opts.judged_only or self.measure.judged_only),
        )
        view, ids, values, index = evaluate_measure(
            alignment, self.measure, opts.missing_zero, plugin=self.plugin
        )
        with measure_guard(self.measure, "failed", self.plugin):
            parts = self.measure.aggregate_parts(view, values, index)
        # ir_measures matches the queries by its own ids (an int stays an int)
        given = {str(q): q for q in (*run["query_id"].unique(), *qrels["query_id"].unique())}
        return [
            (given.get(str(q), str(q)), QueryValue(v, str(q), {k: p[i : i + 1] for k, p in parts.items()}))
            for i, (q, v) in enumerate(zip(ids, values, strict=True))
        ]


class _Aggregate:
    """ir_measures' aggregator protocol (``add``, ``result``) giving rankeval's aggregate of
    the :class:`QueryValue` values added (other values are ir_measures' NaN defaults)."""

    def __init__(self, measure: Measure, plugin: str | None) -> None:
        self.measure, self.plugin = measure, plugin
        self.values: list[QueryValue] = []

    def add(self, value: float) -> None:
        if isinstance(value, QueryValue):
            self.values.append(value)

    def result(self) -> float:
        import numpy as np

        from rankeval.engine.scoring import as_number

        if not self.values:
            return math.nan
        done = sorted(self.values, key=lambda v: v.query_id)  # query order, as the engines add
        ids = np.array([v.query_id for v in done], dtype=object)
        values = np.array([float(v) for v in done])
        parts = {k: np.concatenate([v.parts[k] for v in done]) for k in done[0].parts}
        with measure_guard(self.measure, "failed", self.plugin):
            result = self.measure.aggregate_from_parts(ids, values, parts)
        return as_number(result, self.measure, self.plugin)
