"""The Dask engine: the same evaluation, partitioned by query over a Dask cluster.

Data flow (one run at a time):

1. **Read.** A run given as TREC text (one file, or many through a glob) is split into
   blocks at line ends (``dask.bytes.read_bytes``) and each block is parsed on a worker by
   the same reader as the local engine (:func:`rankeval.io.parse_run`), keeping every line's
   number for messages; a run in Parquet (``rankeval convert --to parquet``) is read with
   ``dask.dataframe.read_parquet``. Qrels are the small side: they are read on the client
   (any form :func:`rankeval.evaluate` accepts, ``--docinfo`` applied) and handed to Dask
   as a dataframe.
2. **Partition by query.** Both dataframes get a partition number from a hash of the query
   id and are shuffled on it (the only all-to-all step), so partition *i* of the run and of
   the qrels hold the same, whole queries.
3. **Evaluate.** Each pair of partitions is evaluated on a worker by the local engine's
   code (:class:`~rankeval.ranked.Alignment`, the measures' ``compute``): per-query values,
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
"""

from __future__ import annotations

import contextlib
import glob
import pickle
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval import io
from rankeval.data import Qrels, Run
from rankeval.errors import EngineError, RankevalError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.measure import Measure

__all__ = ["DaskOptions", "check_measure", "evaluate_partitioned", "read_run_frame"]

RUN_META_COLUMNS = ("query_id", "q0", "doc_id", "score", "tag", "file", "line")


@dataclass
class DaskOptions:
    """How to run on Dask.

    Attributes:
        scheduler: address of a running Dask scheduler (``tcp://host:8786``); ``None``
            starts a ``LocalCluster`` of *workers* processes for the call.
        workers: worker processes of the local cluster.
        memory_limit: memory limit per worker of the local cluster (``"2GB"``; Dask's
            default: the machine's memory divided among the workers).
        blocksize: bytes of run text per block.
        partitions: number of query partitions (default: two per block, at least one per
            worker).
    """

    scheduler: str | None = None
    workers: int = 2
    memory_limit: str | None = None
    blocksize: int = 32 * 2**20
    partitions: int | None = None
    files: list[str] = field(default_factory=list)


def check_measure(measure: Measure) -> None:
    """Raise :class:`~rankeval.errors.UsageError` if *measure* cannot run on the Dask engine
    (it must survive pickling unchanged, to be sent to the workers)."""
    try:
        again = pickle.loads(pickle.dumps(measure))
    except Exception as exc:
        raise UsageError(f"measure {measure} cannot be sent to Dask workers (not picklable: {exc})") from None
    if again != measure:
        raise UsageError(f"measure {measure} changes when pickled; it cannot run on the Dask engine")


@contextlib.contextmanager
def client(options: DaskOptions) -> Iterator[Any]:
    """A Dask client: connected to ``options.scheduler``, or to a new local cluster."""
    import logging

    from dask.distributed import Client, LocalCluster

    # Dask's own progress notes (shuffle start/stop, ports) are not the user's business
    quiet = [logging.getLogger(n) for n in ("distributed", "distributed.shuffle._scheduler_plugin")]
    levels = [log.level for log in quiet]
    for log in quiet:
        log.setLevel(logging.ERROR)
    try:
        if options.scheduler:
            with Client(options.scheduler, timeout="10s") as c:
                yield c
            return
        kwargs: dict[str, Any] = {"n_workers": options.workers, "threads_per_worker": 1, "processes": True}
        if options.memory_limit:
            kwargs["memory_limit"] = options.memory_limit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "port in use": another dashboard
            cluster = LocalCluster(dashboard_address=None, silence_logs=logging.ERROR, **kwargs)
        with cluster, Client(cluster) as c:
            yield c
    finally:
        for log, level in zip(quiet, levels, strict=True):
            log.setLevel(level)


# ------------------------------------------------------------------------------ reading
def _run_files(source: str | Path) -> list[str]:
    text = str(source)
    files = sorted(glob.glob(text)) if any(ch in text for ch in "*?[") else [text]
    if not files:
        raise UsageError(f"no run file matches {text!r}")
    return files


def _is_parquet(path: str) -> bool:
    p = Path(path)
    return p.suffix == ".parquet" or (p.is_dir() and any(p.glob("*.parquet")))


def _parse_block(data: bytes, name: str, first_line: int, file_no: int) -> pd.DataFrame:
    table, lines = io.parse_run(data, name, first_line)
    return _run_block_frame(table, lines, file_no)


def _run_block_frame(table: Any, lines: np.ndarray | None, file_no: int) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    n = table.num_rows
    strings = pd.ArrowDtype(pa.string())
    frame = pd.DataFrame(
        {
            name: pd.Series(
                table.column(name).cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
            )
            for name in ("query_id", "q0", "doc_id")
        }
    )
    frame["score"] = table.column("score").to_numpy()
    frame["tag"] = pd.Series(
        table.column("tag").cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
    )
    frame["file"] = np.full(n, file_no, dtype=np.int32)
    frame["line"] = np.asarray(lines if lines is not None else np.arange(1, n + 1), dtype=np.int64)
    return frame


def _run_meta() -> pd.DataFrame:
    import pyarrow as pa

    empty = pa.table(
        {
            "query_id": pa.array([], pa.string()),
            "q0": pa.array([], pa.string()),
            "doc_id": pa.array([], pa.string()),
            "score": pa.array([], pa.float64()),
            "tag": pa.array([], pa.string()),
        }
    )
    return _run_block_frame(empty, np.zeros(0, np.int64), 0)


def read_run_frame(source: str | Path, options: DaskOptions) -> Any:
    """A run as a Dask dataframe (columns ``query_id, q0, doc_id, score, tag, file, line``):
    TREC text files (a path or a glob; compressed files are one block each) or Parquet."""
    import dask
    import dask.dataframe as dd
    from dask.bytes import read_bytes

    files = _run_files(source)
    options.files = files
    if all(_is_parquet(f) for f in files):
        frame = dd.read_parquet(files)
        missing = {"query_id", "doc_id", "score"} - set(frame.columns)
        if missing:
            raise UsageError(f"Parquet run {source}: missing column(s) {sorted(missing)}")
        meta = _run_meta()
        for name in ("q0", "tag"):
            if name not in frame.columns:
                frame[name] = "Q0" if name == "q0" else Path(files[0]).name
        if "file" not in frame.columns:
            frame["file"] = np.int32(0)
        if "line" not in frame.columns:  # positions: the row order of the files
            frame = frame.reset_index(drop=True)
            frame["line"] = frame.index.astype("int64") + 1
        return frame[list(meta.columns)].astype(meta.dtypes.to_dict())
    parts = []
    for file_no, path in enumerate(files):
        if not Path(path).is_file():
            raise UsageError(f"{path}: no such run file")
        if io.is_compressed(path):  # one block: the reader decompresses the whole file
            blocks = [dask.delayed(io.read_bytes)(path)]
        else:
            _, per_file = read_bytes(path, delimiter=b"\n", blocksize=options.blocksize, sample=False)
            blocks = per_file[0]
        counts = dask.compute(*[dask.delayed(bytes.count)(b, b"\n") for b in blocks])
        first = np.concatenate(([1], np.cumsum(counts)[:-1] + 1)).astype(int)
        name = io.source_name(path)
        parts += [
            dask.delayed(_parse_block)(b, name, int(f), file_no) for b, f in zip(blocks, first, strict=True)
        ]
    return dd.from_delayed(parts, meta=_run_meta(), verify_meta=False)


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


@dataclass
class _Part:
    """What one partition sends back: per measure, its queries' ids, values and parts."""

    results: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]]
    nested: bool
    warnings: list[str]


def _evaluate_part(
    qrels_frame: pd.DataFrame,
    run_frame: pd.DataFrame,
    qrels_source: str,
    run_name: str,
    run_source: str | None,
    tie_break: str,
    measures: Sequence[Measure],
    options: dict[str, Any],
) -> _Part:
    """Evaluate one partition with the local engine's code (runs on a worker)."""
    import pyarrow as pa

    from rankeval.engine import _per_query
    from rankeval.ranked import Alignment

    qrels_frame = qrels_frame.sort_values("order", kind="stable")
    qt = pa.Table.from_pandas(qrels_frame.drop(columns=["part", "order"]), preserve_index=False)
    qrels = Qrels(
        qt.cast(
            pa.schema(
                [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in qt.schema]
            )
        ),
        qrels_source,
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
    out: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alignment = Alignment(
            qrels,
            run,
            nest_sep=options["nest_sep"],
            max_docs=options["max_docs"],
            on_duplicate=options["on_duplicate"],
            nested=options["nested"],
        )
        for measure in measures:
            view, ids, values, index = _per_query(
                alignment, measure, options["missing_zero"], require_level=False
            )
            found = view.level == 1 or view.num_queries > 0
            out.append((ids, values, measure.aggregate_parts(view, values, index), found))
    return _Part(out, alignment.nested, [str(w.message) for w in caught])


def evaluate_partitioned(
    qrels: Qrels,
    runs: Sequence[tuple[str | Path, Run | None]],
    measures: Sequence[Measure],
    options: DaskOptions,
    *,
    missing_zero: bool,
    nest_sep: str | None,
    max_docs: int | None,
    on_duplicate: str,
) -> list[tuple[str, list[tuple[np.ndarray, np.ndarray, float]]]]:
    """Evaluate every run on Dask; per run, its name and per measure (query ids, values,
    aggregate), exactly as the local engine computes them.

    *runs* are ``(source, None)`` for a run file to read with Dask, or ``(name, Run)`` for a
    run already in memory (e.g. read from the hTBG JSON format).
    """

    for m in measures:
        check_measure(m)
    settings = {
        "nest_sep": nest_sep,
        "max_docs": max_docs,
        "on_duplicate": on_duplicate,
        "missing_zero": missing_zero,
        "nested": False,
    }
    try:
        with client(options):
            qrels_frame = _qrels_frame(qrels)
            return [
                _evaluate_run(qrels, qrels_frame, source, run, measures, options, settings)
                for source, run in runs
            ]
    except RankevalError:
        raise
    except Exception as exc:  # a worker killed (memory), the scheduler unreachable, ...
        hint = ""
        if "Killed" in type(exc).__name__:
            hint = " (workers ran out of memory? give them more with --memory-limit, or add workers)"
        raise EngineError(f"the Dask engine failed: {type(exc).__name__}: {exc}{hint}") from None


def _evaluate_run(
    qrels: Qrels,
    qrels_frame: pd.DataFrame,
    source: str | Path,
    run: Run | None,
    measures: Sequence[Measure],
    options: DaskOptions,
    settings: dict[str, Any],
) -> tuple[str, list[tuple[np.ndarray, np.ndarray, float]]]:
    import dask
    import dask.dataframe as dd

    if run is None:
        frame = read_run_frame(source, options)
        name, run_source, tie_break = Path(str(source)).name, _single(options.files), "docno"
    else:
        frame = dd.from_pandas(_run_block_frame(run.table, run.lines, 0), npartitions=max(options.workers, 1))
        name, run_source, tie_break = run.name, run.source, run.tie_break
    n = options.partitions or max(2 * frame.npartitions, options.workers)
    frame = frame.drop(columns=["tag"])  # less to shuffle: no measure reads the tag
    run_parts = _with_part(frame, n).shuffle(on="part", npartitions=n).to_delayed()
    qdf = dd.from_pandas(qrels_frame, npartitions=max(1, min(n, len(qrels_frame) // 50_000 + 1)))
    qrels_parts = _with_part(qdf, n).shuffle(on="part", npartitions=n).to_delayed()

    def tasks(nested: bool, which: list[int]) -> list[Any]:
        part_settings = {**settings, "nested": nested}
        return [
            dask.delayed(_evaluate_part)(
                qrels_parts[i],
                run_parts[i],
                qrels.source,
                name,
                run_source,
                tie_break,
                list(measures),
                part_settings,
            )
            for i in which
        ]

    results: list[_Part] = list(dask.compute(*tasks(False, list(range(n)))))
    if any(r.nested for r in results) and not all(r.nested for r in results):
        # a nested collection: the partitions without nested ids are evaluated again as
        # parts of it (an item without children reads differently there)
        again = [i for i, r in enumerate(results) if not r.nested]
        for i, r in zip(again, dask.compute(*tasks(True, again)), strict=True):
            results[i] = r
    seen: set[str] = set()
    for r in results:
        for message in r.warnings:
            if message not in seen:
                seen.add(message)
                warnings.warn(message, _warning_class(), stacklevel=3)
    return name, [_combine(m, [r.results[k] for r in results]) for k, m in enumerate(measures)]


def _warning_class() -> type[Warning]:
    from rankeval.errors import RankevalWarning

    return RankevalWarning


def _single(files: list[str]) -> str | None:
    return io.source_name(files[0]) if len(files) == 1 else None


def _combine(
    measure: Measure, parts: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], bool]]
) -> tuple[np.ndarray, np.ndarray, float]:
    """All partitions' values of one measure, sorted by query id, and the aggregate."""
    if measure.view_level() > 1 and not any(found for *_, found in parts):
        raise UsageError(
            f"{measure} ranks nested items (level={measure.view_level()}), but no judged item of that "
            "level was found (see --nest-sep)"
        )
    ids = np.concatenate([p[0].astype(object) for p in parts]) if parts else np.zeros(0, object)
    values = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    order = np.argsort(ids.astype(str), kind="stable")
    keys = set().union(*(p[2].keys() for p in parts)) if parts else set()
    extra = {k: np.concatenate([p[2][k] for p in parts if k in p[2]])[order] for k in keys}
    ids, values = ids[order], values[order]
    return ids, values, measure.aggregate_from_parts(ids, values, extra)
