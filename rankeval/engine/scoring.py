"""One measure on one aligned run: per-query values and the aggregate, the measure's own code
guarded. Both engines (local and Dask) and the random baseline evaluate measures through
:func:`evaluate_measure`, so they share the missing-query rule, the averaging of nested
sub-queries and the checks of what a plugin returns.

May import: numpy, ``errors``, ``measure``, ``ranked``, ``segments`` (not the engines).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rankeval.errors import MeasureError, RankevalWarning, UsageError, measure_guard, plugin_of
from rankeval.measures.base import Measure
from rankeval.segments import safe_divide

if TYPE_CHECKING:
    from rankeval.io.data import Qrels, Run
    from rankeval.measures.registry import Registry
    from rankeval.options import EvalOptions
    from rankeval.ranking.alignment import Alignment
    from rankeval.ranking.ranked_lists import RankedLists

__all__ = [
    "MeasureValues",
    "aggregate",
    "aggregate_lists",
    "aligned",
    "as_number",
    "as_values",
    "evaluate_measure",
    "measure_plugins",
]


class MeasureValues(NamedTuple):
    """What :func:`evaluate_measure` returns."""

    view: RankedLists
    """The ranked lists the measure read (its nesting level)."""
    query_ids: np.ndarray
    """The query of each value (top-level ids)."""
    values: np.ndarray
    """One value per query (nested sub-queries averaged per query)."""
    query_index: np.ndarray
    """For each value, the index of its query in ``view.nesting.outer_ids``."""


def aligned(qrels: Qrels, run: Run, options: EvalOptions, nested: bool = False) -> Alignment:
    """*run* aligned with *qrels* as *options* say, the one way every entry point aligns a
    run: scores rounded to float32 (``float32_scores``), the unjudged items dropped
    (``judged_only``: before anything else, or with ``max_docs`` after the cut, as
    trec_eval ``-J -M``), duplicates, nesting (*nested*: decided for the whole collection)
    and the tie rule."""
    from rankeval.ranking.alignment import Alignment

    if options.float32_scores:
        run = run.with_float32_scores()
    if options.judged_only and options.max_docs is None:  # (with -M: after the cut, in Alignment)
        run = run.judged_only(qrels)
    return Alignment(
        qrels,
        run,
        nest_sep=options.nest_sep,
        max_docs=options.max_docs,
        on_duplicate=options.duplicate_rule,
        nested=nested,
        judged_only=options.judged_only and options.max_docs is not None,
        ties=options.ties,
    )


def measure_plugins(measures: Sequence[Measure], registry: Registry | None) -> list[str | None]:
    """The plugin providing each measure, as *registry* knows it (``None``: let
    :func:`~rankeval.errors.measure_guard` name it by the module that defines the class)."""
    return [registry.plugin_of(m) if registry is not None else None for m in measures]


def aggregate_lists(
    measure: Measure, view: RankedLists, values: np.ndarray, index: np.ndarray, plugin: str | None = None
) -> float:
    """*measure*'s :meth:`~rankeval.Measure.aggregate_lists`, guarded: an exception, or a
    result that is not a number, is a :class:`~rankeval.errors.MeasureError` naming the
    measure and its plugin."""
    with measure_guard(measure, "failed", plugin):
        result = measure.aggregate_lists(view, values, index)
    return as_number(result, measure, plugin)


def aggregate(measure: Measure, values: np.ndarray, plugin: str | None = None) -> float:
    """*measure*'s :meth:`~rankeval.Measure.aggregate` of *values*, guarded as
    :func:`aggregate_lists`."""
    with measure_guard(measure, "failed", plugin):
        result = measure.aggregate(values)
    return as_number(result, measure, plugin)


def as_number(result: Any, measure: Measure, plugin: str | None = None) -> float:
    """*result* of *measure*'s aggregate as a float (a 0-d array or numpy scalar is fine)."""
    if isinstance(result, (bool, np.bool_)) or not isinstance(result, (int, float, np.number, np.ndarray)):
        raise _bad_result(measure, plugin, f"returned {_kind_of(result)} as its aggregate, not a number")
    arr = np.asarray(result)
    if arr.shape != () or arr.dtype.kind not in "iuf":
        raise _bad_result(measure, plugin, f"returned {_kind_of(result)} as its aggregate, not a number")
    return float(arr)


def as_values(result: Any, measure: Measure, num_queries: int, plugin: str | None = None) -> np.ndarray:
    """*result* of *measure*'s ``compute`` as ``(num_queries,)`` float64 values: an array (or a
    sequence) of numbers, one per query; anything else is a
    :class:`~rankeval.errors.MeasureError` naming the measure and its plugin."""
    if isinstance(result, (str, bytes, dict)) or result is None:
        raise _bad_result(measure, plugin, f"returned {_kind_of(result)}, not one number per query")
    try:
        arr = np.asarray(result)
        if arr.dtype.kind == "O":
            arr = arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise _bad_result(
            measure, plugin, f"returned {_kind_of(result)} that is not one number per query ({exc})"
        ) from None
    if arr.dtype.kind not in "biuf":
        raise _bad_result(measure, plugin, f"returned {_kind_of(arr)} values, not numbers")
    if arr.shape != (num_queries,):
        raise _bad_result(measure, plugin, f"returned {arr.shape} values for {num_queries} queries")
    return arr.astype(np.float64, copy=False)


def _kind_of(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    return f"a {type(value).__name__}"


def _bad_result(measure: Measure, plugin: str | None, what: str) -> MeasureError:
    return MeasureError(f"measure {measure} (plugin {plugin or plugin_of(measure)}) {what}")


def evaluate_measure(
    alignment: Alignment,
    measure: Measure,
    missing_zero: bool,
    require_level: bool = True,
    plugin: str | None = None,
) -> MeasureValues:
    """One measure on one aligned run: its per-query values, missing-query rule applied.
    *require_level*: a measure of nested items finding none is an error (the Dask engine
    checks that over all partitions instead). The measure's own code (``view_level``,
    ``compute``) runs guarded: its exceptions and a malformed result are a
    :class:`~rankeval.errors.MeasureError` naming the measure and *plugin*."""
    with measure_guard(measure, "failed", plugin):
        level = measure.view_level()
    if not isinstance(level, int) or isinstance(level, bool) or level < 1:
        raise _bad_result(measure, plugin, f"returned {level!r} as its view_level, not a level >= 1")
    view = alignment.view(level)
    if level > 1 and view.num_queries == 0 and require_level:
        raise UsageError(
            f"{measure} ranks nested items (level={level}), but no judged item of that level "
            f"was found: nested ids look like PARENT{alignment.sep}CHILD, where PARENT is itself an "
            "item of the query (see --nest-sep)"
        )
    if alignment.nested:
        _warn_attribute_levels(alignment, measure, plugin)
    with measure_guard(measure, "failed", plugin):
        result = measure.expected(view) if alignment.ties == "expected" else measure.compute(view)
    values = as_values(result, measure, view.num_queries, plugin)
    # a query of the qrels that the run lacks is evaluated on an empty ranking, as trec_eval
    # -c does: every rank-based measure is 0 there, while e.g. NumRel keeps its count
    retrieved = view.retrieved
    if level == 1:
        ids = view.query_ids
    else:
        # average sub-queries (qid/parent) per top-level query; an undefined (NaN) sub-query
        # is left out, as undefined queries are left out of an aggregate
        keep = retrieved if not missing_zero else np.ones(len(values), dtype=bool)
        outer, ids = view.nesting.outer, view.nesting.outer_ids
        n_outer = len(ids)
        undefined = np.bincount(outer[keep], minlength=n_outer) > 0  # until one is defined
        keep = keep & ~np.isnan(values)
        total = np.bincount(outer[keep], weights=values[keep], minlength=n_outer)
        count = np.bincount(outer[keep], minlength=n_outer)
        undefined &= count == 0
        retrieved = np.bincount(outer, weights=retrieved, minlength=n_outer) > 0
        values = np.where(undefined, np.nan, safe_divide(total, count))
    index = np.arange(len(ids))
    if not missing_zero:
        ids, values, index = ids[retrieved], values[retrieved], index[retrieved]
    return MeasureValues(view, ids, values, index)


def _warn_attribute_levels(alignment: Alignment, measure: Measure, plugin: str | None) -> None:
    """A warning for each attribute *measure* reads that the nested collection gives only
    at other levels than those the measure reads it at (e.g. ``sens=`` on posts, with
    nCS-DCG ranking the people)."""
    with measure_guard(measure, "failed", plugin):
        wanted = measure.attribute_levels()
    for key, levels in wanted.items():
        given = alignment.attribute_levels(key)
        if not given or given & set(levels):
            continue
        at = ", ".join(map(str, sorted(given)))
        reads = " and ".join(map(str, levels))
        hint = (
            f"; to score the items of level {min(given)}, add level={min(given)} (e.g. "
            f"{measure.with_params(level=min(given))})"
            if any(p.name == "level" for p in measure.params())
            else ""
        )
        warnings.warn(
            RankevalWarning(
                f"{measure} reads {key}= of the items of level {reads}, but {key}= is given only "
                f"on items of level {at}: it is not used{hint}"
            ),
            stacklevel=2,
        )
