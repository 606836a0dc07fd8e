"""The engine: (qrels, runs, measures) → a long result table.

For each run the qrels and the run are aligned once (:class:`~rankeval.ranking.alignment.Alignment`);
each measure reads the ranked lists of its nesting level and returns one value per query;
values of nested sub-queries are averaged per query; the aggregate row (``query_id`` null:
no query id can take it; trec output labels it ``all``) is the measure's own aggregate (mean
by default).

A long evaluation shows its progress if the caller gives a *progress* callback
(:data:`BlockProgress`; the callers above the engine make it a bar on stderr,
:mod:`rankeval.comparison.progress`): the tasks done out of an estimate from the run files'
sizes, counted as each task's values come back, on every scheduler. Runs whose files hold
no more than one block of text start none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine.blockwise import BlockValues, Scheduler, Shared, Task
from rankeval.engine.prepare import Prepared
from rankeval.engine.runs import as_runs, run_items
from rankeval.errors import UsageError
from rankeval.io.blocks import DEFAULT_BLOCK_SIZE
from rankeval.io.data import as_run
from rankeval.measures.base import Measure

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.distributed import DaskOptions

#: the engines by name (a :class:`~rankeval.engine.distributed.DaskOptions` is the Dask engine too)
ENGINES = ("local", "dask")

BlockProgress = Callable[[int], Callable[[int], None]]
"""``progress(total)``: start a progress display of *total* tasks (an estimate: the total may
be passed) and return its ``advance(n)`` (*n* more tasks done; called from another thread on
the Dask engine)."""

__all__ = [
    "ENGINES",
    "Block",
    "BlockProgress",
    "Results",
    "as_runs",
    "check_engine",
    "evaluate_prepared",
]

COLUMNS = ["run", "query_id", "measure", "value"]


@dataclass(frozen=True)
class Block:
    """One run's values of one measure.

    Attributes:
        run: the run's name.
        measure: the measure's spec as given.
        query_ids: the queries scored, sorted.
        values: the per-query values, aligned with *query_ids*.
        aggregate: the aggregate value (the measure's aggregate of *values*).
    """

    run: str
    measure: str
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: float


@dataclass
class Results:
    """Evaluation results: one :class:`Block` per run and measure (what :func:`rankeval.evaluate` turns
    into a DataFrame).

    Attributes:
        blocks: in evaluation order: per run, per measure.
        integer_measures: names of count measures (printed without decimals).
        whole_measures: names of measures whose per-query values are whole numbers (printed
            without decimals per query; their aggregate is a mean).
        run_queries: per run, the queries it retrieves (sorted, distinct; before
            ``judged_only`` drops any item).
        run_tags: per run, the tag of its last line (trec_eval's ``runid``).
    """

    blocks: list[Block] = field(default_factory=list)
    integer_measures: set[str] = field(default_factory=set)
    whole_measures: set[str] = field(default_factory=set)
    run_queries: dict[str, np.ndarray] = field(default_factory=dict)
    run_tags: dict[str, str] = field(default_factory=dict)

    def add(
        self, run: str, measure: str, query_ids: np.ndarray, values: np.ndarray, aggregate: float
    ) -> None:
        """Append one run's and measure's per-query values and its aggregate."""
        self.blocks.append(
            Block(run, measure, np.asarray(query_ids), np.asarray(values, np.float64), float(aggregate))
        )

    def renamed(self, names: dict[str, str]) -> Results:
        """These results with each measure *m* labelled ``names.get(m, m)`` (``--names``)."""
        from dataclasses import replace

        return Results(
            [replace(b, measure=names.get(b.measure, b.measure)) for b in self.blocks],
            {names.get(m, m) for m in self.integer_measures},
            {names.get(m, m) for m in self.whole_measures},
            self.run_queries,
            self.run_tags,
        )

    def columns(self) -> dict[str, np.ndarray]:
        """Four columns ``run, query_id, measure, value``: each block's queries, then its
        aggregate row (query id ``None``); run names as text any writer can encode
        (:func:`~rankeval.report.formats.safe_name`)."""
        if not self.blocks:
            return {
                "run": np.zeros(0, object),
                "query_id": np.zeros(0, object),
                "measure": np.zeros(0, object),
                "value": np.zeros(0, np.float64),
            }
        from rankeval.io.inputs import safe_name  # a file name's bytes that are not UTF-8

        sizes = [len(b.query_ids) + 1 for b in self.blocks]
        all_row = np.array([None], dtype=object)
        return {
            "run": np.repeat(np.array([safe_name(b.run) for b in self.blocks], dtype=object), sizes),
            "query_id": np.concatenate(
                [np.concatenate([b.query_ids.astype(object), all_row]) for b in self.blocks]
            ),
            "measure": np.repeat(np.array([b.measure for b in self.blocks], dtype=object), sizes),
            "value": np.concatenate([np.append(b.values, b.aggregate) for b in self.blocks]),
        }

    def to_frame(self) -> pd.DataFrame:
        """A long DataFrame ``run, query_id, measure, value``."""
        import pandas as pd

        frame = pd.DataFrame(self.columns())
        frame.attrs["integer_measures"] = sorted(self.integer_measures)
        frame.attrs["whole_measures"] = sorted(self.whole_measures)
        return frame


def check_engine(engine: Any) -> None:
    """A :class:`~rankeval.errors.UsageError` unless *engine* is one of :data:`ENGINES` or a
    :class:`~rankeval.engine.distributed.DaskOptions`."""
    if isinstance(engine, str):
        if engine not in ENGINES:
            raise UsageError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        return
    from rankeval.engine.distributed import DaskOptions

    if not isinstance(engine, DaskOptions):
        raise UsageError(f"engine must be one of {', '.join(ENGINES)} or a DaskOptions, not {engine!r}")


def evaluate_prepared(
    prepared: Prepared,
    runs: Any,
    *,
    jobs: int | None = 1,
    engine: str | DaskOptions = "local",
    block_size: int | None = None,
    progress: BlockProgress | None = None,
) -> Results:
    """Evaluate *runs* on a :class:`~rankeval.engine.prepare.Prepared` evaluation (its qrels,
    measures and options) with the block engine (:meth:`rankeval.Evaluator.results`
    documents the arguments; *progress*: see :data:`BlockProgress`, started only when the
    run files hold more than one block of text)."""
    check_engine(engine)
    measure_list = list(prepared.measures)
    out = Results(
        integer_measures={str(m) for m in measure_list if m.integer},
        whole_measures={str(m) for m in measure_list if m.whole and not m.integer},
    )
    shared = Shared(prepared.qrels, prepared.computed, prepared.options, prepared.plugins)
    _evaluate_blocks(out, runs, measure_list, shared, jobs, block_size, engine, progress)
    names = prepared.result_names()
    return out if names is None else out.renamed(names)


def _evaluate_blocks(
    out: Results,
    runs: Any,
    measures: list[Measure],
    shared: Shared,
    jobs: int | None,
    block_size: int | None,
    engine: str | DaskOptions,
    progress: BlockProgress | None = None,
) -> None:
    """Evaluate the runs with the block engine (:mod:`rankeval.engine.blockwise`) into *out*:
    in this process (``jobs=1``, or run text that fits in one block: :func:`_block_size`), in a
    pool of ``jobs`` worker processes (default: one per core), or on Dask (*engine* ``"dask"`` or a
    :class:`~rankeval.engine.distributed.DaskOptions`); *progress* advanced as tasks end."""
    from rankeval.engine import blockwise

    if block_size is not None and (
        not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1
    ):
        raise UsageError(f"the block size must be a positive number of bytes, not {block_size!r}")
    items = _block_runs(runs)
    sizes = _text_sizes(items)
    text = sum(sizes)
    if engine != "local":
        from rankeval.engine.distributed import DaskOptions, dask_scheduler

        options = engine if isinstance(engine, DaskOptions) else DaskOptions()
        size = block_size or _block_size(text, options.workers if options.scheduler is None else 1)
        done = _started(progress, items, sizes, size)
        with dask_scheduler(shared, options, [m for m in shared.measures], done) as scheduler:
            per_run = blockwise.evaluate_blocks(items, scheduler, shared, size)
    else:
        from rankeval.engine.local_pool import default_jobs, local_scheduler

        size = block_size or _block_size(text, default_jobs() if jobs is None else jobs)
        done = _started(progress, items, sizes, size)
        with local_scheduler(shared, jobs, text, size) as scheduler:
            counted = scheduler if done is None else _Counted(scheduler, done)
            per_run = blockwise.evaluate_blocks(items, counted, shared, size)
    for run in per_run:
        out.run_queries[run.name], out.run_tags[run.name] = run.queries, run.tag
        for measure, v in zip(measures, run.measures, strict=True):
            out.add(run.name, str(measure), v.query_ids, v.values, v.aggregate)


def _block_runs(runs: Any) -> list[tuple[str | None, Any]]:
    """The runs as the block engine takes them (:func:`rankeval.io.sources.run_kind`):
    ``(name or None, path)`` for TREC text files (a file or a pattern, cut into blocks) and
    Parquet runs (read in blocks of rows), else ``(name or None, Run)`` read here (stdin,
    JSON, DataFrames, dicts, :class:`Run` objects)."""
    from rankeval.io.parquet import parquet_files
    from rankeval.io.sources import run_files, run_kind

    out: list[tuple[str | None, Any]] = []
    for name, item in run_items(runs):
        kind = run_kind(item)
        if kind in ("text", "pattern"):
            run_files(item)  # (a pattern's files are checked now, before any block)
            out.append((name, str(item)))
        elif kind == "parquet":
            parquet_files(item)  # (checked now, before any block)
            out.append((name, str(item)))
        else:
            out.append((name, as_run(item, name)))
    return out


def _block_size(text_bytes: int, processes: Any) -> int:
    """The default block size: :data:`~rankeval.io.blocks.DEFAULT_BLOCK_SIZE`, or smaller so
    that each of *processes* (if several) gets at least 4 blocks of the *text_bytes* (but
    not below :data:`~rankeval.io.blocks.MIN_DEFAULT_BLOCK_SIZE`): the last blocks of the
    run then end at about the same time on every process. Text that fits in one default
    block stays one block, which this process evaluates (a worker would take longer to start
    than the block takes: see :func:`~rankeval.engine.local_pool.local_scheduler`)."""
    from rankeval.io.blocks import MIN_DEFAULT_BLOCK_SIZE

    if not isinstance(processes, int) or processes < 2 or text_bytes <= DEFAULT_BLOCK_SIZE:
        return DEFAULT_BLOCK_SIZE
    return max(MIN_DEFAULT_BLOCK_SIZE, min(DEFAULT_BLOCK_SIZE, text_bytes // (4 * processes)))


def _text_sizes(items: list[tuple[str | None, Any]]) -> list[int]:
    """About how many bytes of text each run file among *items* holds (to choose a scheduler
    and a block size, and to estimate the tasks): its size on disk, a compressed file's
    counted five times, a Parquet file's four times."""
    import os

    from rankeval.io.parquet import parquet_files
    from rankeval.io.sources import run_files, run_kind
    from rankeval.io.trec import is_compressed

    sizes = []
    for _, item in items:
        if not isinstance(item, str):
            continue
        if run_kind(item) == "parquet":
            sizes += [os.path.getsize(path) * 4 for path in parquet_files(item)]
        else:
            sizes += [
                os.path.getsize(path) * (5 if is_compressed(path) else 1)
                for path in run_files(item)
                if os.path.isfile(path)
            ]
    return sizes


def _started(
    progress: BlockProgress | None, items: list[tuple[str | None, Any]], sizes: list[int], block_size: int
) -> Callable[[int], None] | None:
    """*progress* started with the estimated number of tasks (a run file's blocks from its
    :func:`_text_sizes`, one per run in memory) if the run files hold more than one block of
    text; else ``None`` (small runs, however many, take no time to show)."""
    if progress is None or sum(sizes) <= block_size:
        return None
    in_memory = sum(not isinstance(item, str) for _, item in items)
    return progress(sum(-(-size // block_size) for size in sizes) + in_memory)


class _Counted:
    """A local scheduler whose finished tasks advance a progress display (one step each, as
    their values come back)."""

    def __init__(self, scheduler: Scheduler, done: Callable[[int], None]) -> None:
        self.scheduler = scheduler
        self.threads = scheduler.threads
        self.done = done

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]:
        for values in self.scheduler.map(tasks):
            self.done(1)
            yield values
