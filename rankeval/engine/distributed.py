"""The Dask engine: the same evaluation, partitioned by query over a Dask cluster.

Data flow (one run at a time):

1. **Read.** A run given as TREC text (one file, or many through a glob) is split into
   blocks at line ends (``dask.bytes.read_bytes``) and each block is parsed on a worker by
   the same reader as the local engine (:func:`rankeval.io.trec.parse_run`), keeping every line's
   number for messages; a run in Parquet (``rankeval convert --to parquet``) is read with
   ``dask.dataframe.read_parquet``. Qrels are the small side: they are read on the client
   (any form :func:`rankeval.evaluate` accepts, ``--docinfo`` applied) and handed to Dask
   as a dataframe.
2. **Partition by query.** Both dataframes get a partition number from a hash of the query
   id and are shuffled on it (the only all-to-all step), so partition *i* of the run and of
   the qrels hold the same, whole queries.
3. **Evaluate.** Each pair of partitions is evaluated on a worker by the local engine's
   code (:class:`~rankeval.ranking.alignment.Alignment`, the measures' ``compute``): per-query values,
   plus each measure's :meth:`~rankeval.Measure.aggregate_parts`.
4. **Combine.** The client gathers the per-query values (one number per query and measure),
   sorts them by query id as the local engine does, and computes each aggregate from all of
   them with :meth:`~rankeval.Measure.aggregate_from_parts`: the same numbers in the same
   order as the local engine, so results are identical (not merely close).

What a plugin measure must satisfy to run here (checked by :func:`check_measure`): it is a
picklable object (a frozen dataclass of plain parameters, its class importable on the
workers), its ``compute`` reads only the ranked lists it is given (a query's value depends
on that query's data only), and an aggregate that needs more than the per-query values goes
through ``aggregate_parts``/``aggregate_from_parts`` (per-query arrays), not through the
ranked lists.

This module partitions, evaluates and combines. Reading runs into Dask dataframes (step 1)
is :mod:`rankeval.engine.dask_io`; the cluster itself (options, client, local cluster, faults,
Ctrl-C, Dask's logs) is :mod:`rankeval.engine.dask_cluster`. :class:`DaskOptions`,
:func:`dask_setup`, :func:`read_run_frame` and :func:`write_run_parquet` are re-exported here.

May import: numpy, :mod:`rankeval.io.trec`, :mod:`rankeval.io.data`, :mod:`rankeval.errors`,
:mod:`rankeval.options` (the evaluation options each partition gets),
:mod:`rankeval.engine.dask_cluster`, :mod:`rankeval.engine.dask_io`; dask, pandas, pyarrow, the engine and
the ranked view lazily (inside the functions, most of which run on the workers).
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine import dask_cluster
from rankeval.engine.dask_cluster import DaskOptions, dask_setup
from rankeval.engine.dask_io import block_frame, check_run_files, read_run_frame, write_run_parquet
from rankeval.errors import EngineError, InputError, RankevalError, UsageError, measure_guard
from rankeval.io import trec as io
from rankeval.io.data import Qrels, Run

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from rankeval.measures.base import Measure
    from rankeval.options import EvalOptions

__all__ = [
    "DaskOptions",
    "MeasureValues",
    "PartValues",
    "RunValues",
    "check_measure",
    "dask_setup",
    "evaluate_partitioned",
    "read_run_frame",
    "write_run_parquet",
]


def check_measure(measure: Measure) -> None:
    """Raise :class:`~rankeval.errors.UsageError` if *measure* cannot run on the Dask engine
    (it must survive pickling unchanged, to be sent to the workers)."""
    try:
        again = pickle.loads(pickle.dumps(measure))
    except Exception as exc:
        raise UsageError(f"measure {measure} cannot be sent to Dask workers (not picklable: {exc})") from None
    if again != measure:
        raise UsageError(f"measure {measure} changes when pickled; it cannot run on the Dask engine")


# ------------------------------------------------------------------------------ partitions
def _part(query_ids: Any, n: int) -> np.ndarray:
    """Partition number of each query id (a stable hash, the same on every machine)."""
    import pandas as pd

    values = np.asarray(query_ids, dtype=object)
    hashed: np.ndarray = pd.util.hash_array(values, categorize=False)
    return (hashed % np.uint64(n)).astype(np.int32)


def _with_part(frame: Any, n: int) -> Any:
    return frame.assign(part=frame["query_id"].map_partitions(lambda s: _part(s, n), meta=("part", "int32")))


def _qrels_frame(qrels: Qrels) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    table = qrels.table
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        if (
            pa.types.is_dictionary(col.type)
            or pa.types.is_string(col.type)
            or pa.types.is_large_string(col.type)
        ):
            cols[name] = pd.Series(
                col.cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=pd.ArrowDtype(pa.string())
            )
        else:
            cols[name] = col.to_numpy()
    frame = pd.DataFrame(cols)
    frame["order"] = np.arange(len(frame), dtype=np.int64)  # the qrels file order
    return frame


@dataclass(frozen=True)
class PartValues:
    """One measure's values in one partition.

    Attributes:
        query_ids: the partition's queries.
        values: their per-query values.
        parts: the measure's aggregate parts (:meth:`~rankeval.Measure.aggregate_parts`).
        found: the partition has items of the level the measure ranks.
    """

    query_ids: np.ndarray
    values: np.ndarray
    parts: dict[str, np.ndarray]
    found: bool


@dataclass(frozen=True)
class MeasureValues:
    """One measure's values over all partitions of a run: sorted by query id, and the aggregate."""

    query_ids: np.ndarray
    values: np.ndarray
    aggregate: float


@dataclass(frozen=True)
class RunValues:
    """A run's name and its :class:`MeasureValues`, one per measure in the order given."""

    name: str
    measures: list[MeasureValues]


@dataclass(frozen=True)
class _Part:
    """What one partition sends back: per measure its values, and what the client needs."""

    results: list[PartValues]
    nested: bool
    warnings: list[str]
    rows: int


def _evaluate_part(
    qrels_frame: pd.DataFrame,
    run_frame: pd.DataFrame,
    qrels_source: str,
    docinfo: tuple[tuple[str, pa.Table], ...],
    run_name: str,
    run_source: str | None,
    tie_break: str,
    measures: Sequence[Measure],
    settings: EvalOptions,
    nested: bool,
) -> _Part:
    """Evaluate one partition with the local engine's code (runs on a worker); *nested*: the
    partition is part of a nested collection; *docinfo*: the qrels' side files (attributes of
    unjudged items)."""
    import pyarrow as pa

    from rankeval.engine.scoring import evaluate_measure
    from rankeval.ranking.alignment import Alignment

    qrels_frame = qrels_frame.sort_values("order", kind="stable")
    qt = pa.Table.from_pandas(qrels_frame.drop(columns=["part", "order"]), preserve_index=False)
    qrels = Qrels(
        qt.cast(
            pa.schema(
                [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in qt.schema]
            )
        ),
        qrels_source,
        docinfo,
    )
    run_frame = run_frame.sort_values(["file", "line"], kind="stable")
    rt = pa.Table.from_pandas(run_frame[["query_id", "q0", "doc_id", "score"]], preserve_index=False)
    run_table = pa.table(
        {
            "query_id": rt.column("query_id").cast(pa.string()).combine_chunks().dictionary_encode(),
            "q0": rt.column("q0").cast(pa.string()).combine_chunks().dictionary_encode(),
            "doc_id": rt.column("doc_id").cast(pa.string()).combine_chunks(),
            "score": rt.column("score").cast(pa.float64()).combine_chunks(),
            # the tag column is not shuffled (no measure reads it): the run's name stands in
            "tag": pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(rt.num_rows, dtype=np.int32)), pa.array([run_name], pa.string())
            ),
        }
    )
    run = Run(run_table, run_name, run_source, run_frame["line"].to_numpy(dtype=np.int64), tie_break)
    out: list[PartValues] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alignment = Alignment(
            qrels,
            run,
            nest_sep=settings.nest_sep,
            max_docs=settings.max_docs,
            on_duplicate=settings.duplicate_rule,
            nested=nested,
        )
        for measure in measures:
            # the measure's own code: a failure is a MeasureError naming measure and plugin,
            # which reaches the client as it is (rankeval's errors pickle)
            with measure_guard(measure):
                view, ids, values, index = evaluate_measure(
                    alignment, measure, settings.missing_zero, require_level=False
                )
                found = view.level == 1 or view.num_queries > 0
                parts = measure.aggregate_parts(view, values, index)
            out.append(PartValues(ids, values, parts, found))
    return _Part(out, alignment.nested, [str(w.message) for w in caught], len(run_frame))


def evaluate_partitioned(
    qrels: Qrels,
    runs: Sequence[tuple[str | Path, Run | None]],
    measures: Sequence[Measure],
    options: DaskOptions,
    settings: EvalOptions,
) -> list[RunValues]:
    """Evaluate every run on Dask: per run, its name and per measure its values, exactly as
    the local engine computes them. *settings*: the evaluation
    options (its ``docinfo`` already applied to *qrels*, its ``compat`` to *measures*).

    *runs* are ``(source, None)`` for a run file to read with Dask, or ``(name, Run)`` for a
    run already in memory (e.g. read from the hTBG JSON format).
    """

    options.check()
    for m in measures:
        check_measure(m)
    for source, run in runs:
        if run is None:
            check_run_files(source)  # a bad path fails before a cluster starts
    try:
        with dask_cluster.client(options):
            qrels_frame = _qrels_frame(qrels)
            return [
                _evaluate_run(qrels, qrels_frame, source, run, measures, options, settings)
                for source, run in runs
            ]
    except RankevalError:
        raise
    except Exception as exc:  # workers lost (killed, frozen, out of memory), the scheduler gone ...
        raise EngineError(f"the Dask engine failed: {_reason(exc, options)}") from None


def _reason(exc: Exception, options: DaskOptions) -> str:
    """What went wrong, for the message of an EngineError, and what to do."""
    if type(exc).__name__ == "KilledWorker":  # Dask's own text is a paragraph about its logs
        tries = options.allowed_failures + 1
        return (
            f"a task lost its worker {tries} time(s) (a worker was killed, ran out of memory, or stopped "
            "answering): give the workers more memory with --memory-limit, or add workers"
        )
    return f"{type(exc).__name__}: {exc}"


def _evaluate_run(
    qrels: Qrels,
    qrels_frame: pd.DataFrame,
    source: str | Path,
    run: Run | None,
    measures: Sequence[Measure],
    options: DaskOptions,
    settings: EvalOptions,
) -> RunValues:
    import dask
    import dask.dataframe as dd

    if run is None:
        frame = read_run_frame(source, options)
        name, run_source, tie_break = Path(str(source)).name, _single(options.files), "docno"
    else:
        frame = dd.from_pandas(block_frame(run.table, run.lines, 0), npartitions=max(options.workers, 1))
        name, run_source, tie_break = run.name, run.source, run.tie_break
    n = options.partitions or max(2 * frame.npartitions, options.workers)
    frame = frame.drop(columns=["tag"])  # less to shuffle: no measure reads the tag
    run_parts = _with_part(frame, n).shuffle(on="part", npartitions=n).to_delayed()
    qdf = dd.from_pandas(qrels_frame, npartitions=max(1, min(n, len(qrels_frame) // 50_000 + 1)))
    qrels_parts = _with_part(qdf, n).shuffle(on="part", npartitions=n).to_delayed()

    def tasks(nested: bool, which: list[int]) -> list[Any]:
        return [
            dask.delayed(_evaluate_part)(
                qrels_parts[i],
                run_parts[i],
                qrels.source,
                qrels.docinfo,
                name,
                run_source,
                tie_break,
                list(measures),
                settings,
                nested,
            )
            for i in which
        ]

    results: list[_Part] = dask_cluster.compute(tasks(False, list(range(n))))
    if not sum(r.rows for r in results):
        raise InputError(
            "empty run: no run line in it (an empty file, or only blank lines and comments); "
            "expected lines 'query_id Q0 doc_id rank score tag'",
            source=io.source_name(source) if run is None else (run.source or run.name),
        )
    if any(r.nested for r in results) and not all(r.nested for r in results):
        # a nested collection: the partitions without nested ids are evaluated again as
        # parts of it (an item without children reads differently there)
        again = [i for i, r in enumerate(results) if not r.nested]
        for i, r in zip(again, dask_cluster.compute(tasks(True, again)), strict=True):
            results[i] = r
    seen: set[str] = set()
    for r in results:
        for message in r.warnings:
            if message not in seen:
                seen.add(message)
                warnings.warn(message, _warning_class(), stacklevel=3)
    return RunValues(name, [_combine(m, [r.results[k] for r in results]) for k, m in enumerate(measures)])


def _warning_class() -> type[Warning]:
    from rankeval.errors import RankevalWarning

    return RankevalWarning


def _single(files: list[str]) -> str | None:
    return io.source_name(files[0]) if len(files) == 1 else None


def _combine(measure: Measure, parts: list[PartValues]) -> MeasureValues:
    """All partitions' values of one measure, sorted by query id, and the aggregate."""
    if measure.view_level() > 1 and not any(p.found for p in parts):
        raise UsageError(
            f"{measure} ranks nested items (level={measure.view_level()}), but no judged item of that "
            "level was found (see --nest-sep)"
        )
    ids = np.concatenate([p.query_ids.astype(object) for p in parts]) if parts else np.zeros(0, object)
    values = np.concatenate([p.values for p in parts]) if parts else np.zeros(0)
    order = np.argsort(ids.astype(str), kind="stable")
    keys = set().union(*(p.parts.keys() for p in parts)) if parts else set()
    extra = {k: np.concatenate([p.parts[k] for p in parts if k in p.parts])[order] for k in keys}
    ids, values = ids[order], values[order]
    with measure_guard(measure):
        aggregate = measure.aggregate_from_parts(ids, values, extra)
    return MeasureValues(ids, values, aggregate)
