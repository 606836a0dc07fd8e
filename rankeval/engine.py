"""The engine: (qrels, runs, measures) → a long result table.

For each run the qrels and the run are aligned once (:class:`~rankeval.ranked.Alignment`);
each measure reads the ranked lists of its nesting level and returns one value per query;
values of nested sub-queries are averaged per query; the aggregate row (``query_id ==
"all"``) is the measure's own aggregate (mean by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.data import Qrels, Run, as_qrels, as_run
from rankeval.errors import MeasureError, ResourceError, UsageError, measure_guard, plugin_of
from rankeval.measure import Measure
from rankeval.ranked import Alignment, RankedLists

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.distributed import DaskOptions
    from rankeval.registry import Registry

ENGINES = ("local", "dask")

__all__ = ["ALL", "Results", "as_runs", "evaluate", "evaluate_results", "resolve_measures"]

ALL = "all"
COLUMNS = ["run", "query_id", "measure", "value"]


MAX_INT = 2**31 - 1


def check_options(max_docs: Any = None, nest_sep: Any = "/") -> None:
    """Check the evaluation options shared by :func:`evaluate`, :func:`rankeval.compare` and
    :func:`rankeval.random_baseline`.

    Raises:
        UsageError: *max_docs* is not ``None`` or an integer from 1 to 2**31 - 1; *nest_sep* is
            not ``None`` or a non-empty string without whitespace.
    """
    import numbers

    if max_docs is not None and (
        isinstance(max_docs, bool)
        or not isinstance(max_docs, numbers.Integral)
        or not 1 <= int(max_docs) <= MAX_INT
    ):
        raise UsageError(f"max_docs must be an integer from 1 to {MAX_INT} (or None), not {max_docs!r}")
    if nest_sep is not None and (
        not isinstance(nest_sep, str)
        or not nest_sep
        or any(c.isspace() or not c.isprintable() for c in nest_sep)
    ):
        raise UsageError(
            f"nest_sep must be a non-empty string without whitespace (or None: no nesting), not {nest_sep!r}"
        )


def resolve_measures(
    measures: str | Measure | Iterable[str | Measure], registry: Registry | None = None
) -> list[Measure]:
    """Measures from specs (``"AP nDCG@10"``, ``["AP", "P@5"]``) or measure objects,
    without duplicates, in the order given."""
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    elif not isinstance(measures, Iterable):
        raise UsageError(f"measures must be a spec, a Measure or a list of them, not {measures!r}")
    out: list[Measure] = []
    for m in measures:
        if isinstance(m, str):
            if registry is None:
                from rankeval.plugins import load_registry

                registry = load_registry()
            out.extend(registry.parse_many(m))
        elif isinstance(m, Measure):
            out.append(m)
        else:
            raise UsageError(f"not a measure or measure spec: {m!r}")
    seen: set[str] = set()
    unique = []
    for m in out:
        if str(m) not in seen:
            seen.add(str(m))
            unique.append(m)
    if not unique:
        raise UsageError("no measures given")
    return unique


def _frame_types() -> tuple[type, ...]:
    """``(pandas.DataFrame,)`` if pandas is loaded (a DataFrame implies it is), else ``()``."""
    import sys

    pd = sys.modules.get("pandas")
    return (pd.DataFrame,) if pd is not None else ()


def as_runs(runs: Any) -> list[Run]:
    """Runs from one run (path, DataFrame, ``{qid: {doc: score}}``, :class:`Run`), a list of
    them, or a ``{name: run}`` mapping. Names must be unique."""
    single = (str, Path, Run, *_frame_types())
    if isinstance(runs, single):
        out = [as_run(runs)]
    elif isinstance(runs, Mapping):
        values = list(runs.values())
        if values and all(isinstance(v, single) for v in values):
            out = [as_run(v, str(k)) for k, v in runs.items()]
        else:
            out = [as_run(runs)]
    elif isinstance(runs, Sequence):
        out = [as_run(r) for r in runs]
    else:
        out = [as_run(runs)]
    if not out:
        raise UsageError("no runs given; expected a run (a path, a DataFrame, a dict) or a list of them")
    names = [r.name for r in out]
    for name in {n for n in names if names.count(n) > 1}:
        # same file name in different folders: name those runs by their tag column (as
        # trec_eval prints it) when that tells them apart, else by their path
        group = [i for i, r in enumerate(out) if r.name == name]
        sources = [out[i].source for i in group]
        if None in sources or len(set(sources)) != len(sources):
            continue  # the same file twice: an error below
        tags = [_single_tag(out[i]) for i in group]
        use_tags = None not in tags and len(set(tags)) == len(tags)
        for i, tag, source in zip(group, tags, sources, strict=True):
            out[i] = as_run(out[i], tag if use_tags else source)
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"several runs are named {', '.join(dup)}; give unique names")
    return out


def _single_tag(run: Run) -> str | None:
    tags = run.table.column("tag").unique().to_pylist() if run.table.num_rows else []
    return str(tags[0]) if len(tags) == 1 else None


def evaluate(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str = "error",
    compat: str | None = None,
    docinfo: str | Path | None = None,
    engine: str = "local",
    dask: DaskOptions | None = None,
    registry: Registry | None = None,
) -> pd.DataFrame:
    """Evaluate runs against qrels.

    Args:
        qrels: a :class:`~rankeval.Qrels`, a path (or ir_datasets id), a DataFrame with
            ``query_id, doc_id, relevance`` or a ``{query_id: {doc_id: relevance}}`` dict.
        runs: one run (:class:`~rankeval.Run`, path, DataFrame with ``query_id, doc_id,
            score``, or ``{query_id: {doc_id: score}}``), a list of runs, or ``{name: run}``.
        measures: specs (``"AP nDCG@10"``, ``["P@5", "RR(rel=2)"]``) or measure objects.
        missing_zero: queries in the qrels that a run does not retrieve score 0 and count in
            the mean (trec_eval ``-c``, the ir_measures default); ``False`` averages over the
            queries both have.
        nest_sep: separator of nested item ids (``PARENT/CHILD``); ``None`` disables nesting.
        max_docs: evaluate only each query's top *max_docs* documents (trec_eval ``-M``).
        on_duplicate: a (query, doc) pair given twice in a run is an error (``"error"``, as
            trec_eval), or keeps its ``"first"`` line, or its ``"max"``-scoring line.
        compat: reproduce another tool's output: every measure that has a ``compat``
            parameter is computed with ``compat=<value>`` (e.g. ``"clef"``: the CLEF TAR
            evaluator's rounding and aggregation); results keep the measure names as given.
        docinfo: a side file of document attributes (lines ``docno key=value ...``, e.g.
            ``sens=1`` for CS-DCG or ``cost=120`` for TBG), given to every qrels line of the
            document in every query; an attribute a judgment gives on its qrels lines wins
            (:meth:`~rankeval.Qrels.with_docinfo`).
        engine: ``"local"`` (this process) or ``"dask"``: the same evaluation partitioned by
            query over a Dask cluster, with identical results (:mod:`rankeval.distributed`);
            run paths may then be globs of TREC files or Parquet.
        dask: options of the Dask engine (scheduler address, local workers, memory limit,
            block size); default :class:`~rankeval.distributed.DaskOptions`.
        registry: measure registry to resolve specs with (default: all installed plugins).

    Returns:
        A long DataFrame with columns ``run, query_id, measure, value``: one row per run,
        query and measure, plus one aggregate row per run and measure with
        ``query_id == "all"``. Queries appear in sorted order, measures in the order given.
    """
    return evaluate_results(
        qrels,
        runs,
        measures,
        missing_zero=missing_zero,
        nest_sep=nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        compat=compat,
        docinfo=docinfo,
        engine=engine,
        dask=dask,
        registry=registry,
    ).to_frame()


@dataclass
class Results:
    """Evaluation results as plain columns (what :func:`evaluate` turns into a DataFrame).

    Attributes:
        rows: ``(run, query_id, measure, value)`` column arrays, in evaluation order: per run,
            per measure, its queries (sorted) then the ``all`` aggregate.
        integer_measures: names of count measures (printed without decimals).
        whole_measures: names of measures whose per-query values are whole numbers (printed
            without decimals per query; their aggregate is a mean).
    """

    run: list[np.ndarray] = field(default_factory=list)
    query_id: list[np.ndarray] = field(default_factory=list)
    measure: list[np.ndarray] = field(default_factory=list)
    value: list[np.ndarray] = field(default_factory=list)
    integer_measures: set[str] = field(default_factory=set)
    whole_measures: set[str] = field(default_factory=set)

    def add(
        self, run: str, measure: str, query_ids: np.ndarray, values: np.ndarray, aggregate: float
    ) -> None:
        """Append one run's and measure's per-query rows and its ``all`` row."""
        n = len(query_ids)
        self.run.append(np.full(n + 1, run, dtype=object))
        self.query_id.append(np.concatenate([query_ids.astype(object), np.array([ALL], dtype=object)]))
        self.measure.append(np.full(n + 1, measure, dtype=object))
        self.value.append(np.concatenate([values.astype(np.float64), [aggregate]]))

    def columns(self) -> dict[str, np.ndarray]:
        """The four columns, concatenated."""

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return {
            "run": cat(self.run, object),
            "query_id": cat(self.query_id, object),
            "measure": cat(self.measure, object),
            "value": cat(self.value, np.float64),
        }

    def to_frame(self) -> pd.DataFrame:
        """A long DataFrame ``run, query_id, measure, value``."""
        import pandas as pd

        frame = pd.DataFrame(self.columns())
        frame.attrs["integer_measures"] = sorted(self.integer_measures)
        frame.attrs["whole_measures"] = sorted(self.whole_measures)
        return frame


def evaluate_results(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str = "error",
    compat: str | None = None,
    docinfo: str | Path | None = None,
    engine: str = "local",
    dask: DaskOptions | None = None,
    registry: Registry | None = None,
) -> Results:
    """:func:`evaluate` without pandas: the same rows as plain arrays (used by the CLI)."""
    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    measure_list = resolve_measures(measures, registry)
    check_options(max_docs, nest_sep)
    computed = _with_compat(measure_list, compat)
    qrels_obj: Qrels = as_qrels(qrels)
    if docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(docinfo)
    out = Results(
        integer_measures={str(m) for m in measure_list if m.integer},
        whole_measures={str(m) for m in measure_list if m.whole and not m.integer},
    )
    if engine == "dask":
        from rankeval.distributed import DaskOptions, evaluate_partitioned

        per_run = evaluate_partitioned(
            qrels_obj,
            _dask_runs(runs),
            computed,
            dask or DaskOptions(),
            missing_zero=missing_zero,
            nest_sep=nest_sep,
            max_docs=max_docs,
            on_duplicate=on_duplicate,
        )
        for name, results in per_run:
            for measure, (query_ids, values, agg) in zip(measure_list, results, strict=True):
                out.add(name, str(measure), query_ids, values, agg)
        return out
    plugins = measure_plugins(computed, registry)
    for run in as_runs(runs):
        try:
            alignment = Alignment(
                qrels_obj, run, nest_sep=nest_sep, max_docs=max_docs, on_duplicate=on_duplicate
            )
            for measure, as_computed, plugin in zip(measure_list, computed, plugins, strict=True):
                view, query_ids, values, index = _per_query(
                    alignment, as_computed, missing_zero, plugin=plugin
                )
                aggregate = aggregate_lists(as_computed, view, values, index, plugin)
                out.add(run.name, str(measure), query_ids, values, aggregate)
        except MemoryError:
            raise ResourceError(
                f"out of memory while evaluating run {run.name} ({len(run):,} lines against "
                f"{len(qrels_obj):,} judgments): try --engine dask (partitions by query) or a "
                "machine with more memory"
            ) from None
    return out


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


def _dask_runs(runs: Any) -> list[tuple[str | Path, Run | None]]:
    """Runs for the Dask engine: files (and globs) of TREC text or Parquet are read by Dask;
    anything else (JSON, DataFrames, dicts, Run objects) is read here first."""
    from rankeval import htbg_json

    items = list(runs) if isinstance(runs, Sequence) and not isinstance(runs, str) else [runs]
    out: list[tuple[str | Path, Run | None]] = []
    for item in items:
        if isinstance(item, (str, Path)) and str(item) != "-" and not htbg_json.is_json(item):
            out.append((item, None))
        else:
            for run in as_runs(item):
                out.append((run.name, run))
    names = [Path(str(s)).name if r is None else s for s, r in out]
    if len(set(names)) != len(names):
        raise UsageError("several runs have the same name; give unique names")
    return out


def _with_compat(measures: list[Measure], compat: str | None) -> list[Measure]:
    """The measures as computed under *compat*: ``compat=<value>`` set on every measure that
    has a ``compat`` parameter (an error if none has)."""
    if compat is None:
        return measures
    import dataclasses

    out: list[Measure] = []
    found = False
    for m in measures:
        if any(f.name == "compat" for f in dataclasses.fields(m)):
            try:
                m = dataclasses.replace(m, compat=compat)  # type: ignore[call-arg]
            except (ValueError, TypeError) as exc:
                raise UsageError(f"compat {compat!r}: {m}: {exc}") from None
            found = True
        out.append(m)
    if not found:
        raise UsageError(
            f"compat {compat!r}: none of the measures {', '.join(map(str, measures))} has a compat mode"
        )
    return out


def _per_query(
    alignment: Alignment,
    measure: Measure,
    missing_zero: bool,
    require_level: bool = True,
    plugin: str | None = None,
) -> tuple[RankedLists, np.ndarray, np.ndarray, np.ndarray]:
    """(ranked lists, query ids, values, index of each value's query in the lists'
    ``outer_ids``) of one measure on one aligned run, missing-query rule applied.
    *require_level*: a measure of nested items finding none is an error (the Dask engine
    checks that over all partitions instead). The measure's own code (``view_level``,
    ``compute``) runs guarded: its exceptions and a malformed result are a
    :class:`~rankeval.errors.MeasureError` naming the measure and *plugin*."""
    with measure_guard(measure, "failed", plugin):
        level = measure.view_level()
    if not isinstance(level, int) or isinstance(level, bool) or level < 1:
        raise _bad_result(measure, plugin, f"returned {level!r} as its view_level, not a level >= 1")
    view = alignment.view(level)
    if view.level > 1 and view.num_queries == 0 and require_level:
        raise UsageError(
            f"{measure} ranks nested items (level={view.level}), but no judged item of that level "
            f"was found: nested ids look like PARENT{alignment.sep}CHILD, where PARENT is itself an "
            "item of the query (see --nest-sep)"
        )
    with measure_guard(measure, "failed", plugin):
        result = measure.compute(view)
    values = as_values(result, measure, view.num_queries, plugin)
    # a query of the qrels that the run lacks is evaluated on an empty ranking, as trec_eval
    # -c does: every rank-based measure is 0 there, while e.g. NumRel keeps its count
    retrieved = view.retrieved
    if view.level == 1:
        ids = view.query_ids
    else:
        # average sub-queries (qid/parent) per top-level query
        keep = retrieved if not missing_zero else np.ones(len(values), dtype=bool)
        n_outer = len(view.outer_ids)
        total = np.bincount(view.outer[keep], weights=values[keep], minlength=n_outer)
        count = np.bincount(view.outer[keep], minlength=n_outer)
        retrieved = np.bincount(view.outer, weights=retrieved, minlength=n_outer) > 0
        values = np.divide(total, count, out=np.zeros(n_outer), where=count > 0)
        ids = view.outer_ids
    index = np.arange(len(ids))
    if not missing_zero:
        ids, values, index = ids[retrieved], values[retrieved], index[retrieved]
    return view, ids, values, index
