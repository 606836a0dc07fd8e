"""The block engine: runs evaluated block by block, with identical results.

A run file is cut into query-aligned blocks (:func:`rankeval.io.blocks.split_run`). Each
block is a task: parse it, take the qrels of its queries (:meth:`~rankeval.Qrels.select`),
align and compute every measure with the same code as a whole run
(:class:`~rankeval.ranking.alignment.Alignment`,
:func:`~rankeval.engine.scoring.evaluate_measure`), and send back per measure the per-query
values and the measure's :meth:`~rankeval.Measure.aggregate_parts`. Whether the collection
is nested (an item without children reads differently there) is decided once, from the
qrels, before any block is cut (:attr:`Shared.nested`): each block is evaluated once (unless
the qrels are flat and a run's own items nest: that run is evaluated again, as a nested
collection). The driver then

1. checks, as each block's values come back, that no query turned up in two blocks of a run
   file (a run not sorted by query): such a run's remaining blocks are not evaluated; its
   lines are grouped by query into temporary part files, in memory bounded by the block
   size (:func:`rankeval.io.partition.partition_run`), each part one task, with a warning;
2. evaluates the qrels' queries that no block retrieved (on an empty ranking, as a whole
   run does) as one more task;
3. sorts each measure's values by query id and computes the aggregate from all of them
   (:meth:`~rankeval.Measure.aggregate_from_parts`): the same numbers, in the same order,
   as one alignment of the whole run.

Each run file is held open for the whole evaluation (:class:`~rankeval.io.blocks.RunFile`):
every block, and the second reading of an unsorted one, comes from the same file, and a file
that changes meanwhile is an error naming it. The part files live in a temporary directory
removed when the evaluation ends, however it ends.

Runs that are not files of TREC text (``-``, JSON, Parquet, DataFrames, dicts, :class:`Run`
objects) are one task each, evaluated whole. The tasks of all runs form one list, which a
scheduler runs: :class:`Sequential` (this process, one block at a time: bounded memory),
:class:`Pool` (``--jobs N`` worker processes; :mod:`rankeval.engine.local_pool`) or Dask
(:mod:`rankeval.engine.distributed`).

May import: numpy, :mod:`rankeval.io`, :mod:`rankeval.ranking`, :mod:`rankeval.engine.scoring`,
:mod:`rankeval.engine.runs` and the foundation modules.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rankeval.engine.scoring import as_number
from rankeval.engine.ties import depth_of, tie_counts, tie_message  # (not late: ulimit -n)
from rankeval.errors import InputError, RankevalWarning, ResourceError, TieWarning, UsageError, measure_guard
from rankeval.io import trec
from rankeval.io.blocks import RunBlock, RunFile, read_block, split_run
from rankeval.io.data import Qrels, Run
from rankeval.io.partition import RunPart, partition_run, read_part
from rankeval.io.schema import empty_run_table
from rankeval.io.sources import run_files, run_kind
from rankeval.options import EvalOptions

if TYPE_CHECKING:
    from rankeval.measures.base import Measure

__all__ = [
    "BlockValues",
    "MeasureValues",
    "PartValues",
    "RunValues",
    "Scheduler",
    "Sequential",
    "Shared",
    "Task",
    "evaluate_blocks",
    "run_task",
]


@dataclass(frozen=True)
class Shared:
    """What every task needs, sent once to each worker: the qrels (side files applied), the
    measures as computed, and the evaluation options (duplicate rule resolved).

    :attr:`nested` is decided here, once, before any block is cut: whether the collection is
    nested, i.e. the qrels hold an item ``PARENT/CHILD`` (``nest_sep``) whose parent the
    qrels hold too, in the same query (:func:`rankeval.ranking.numbering.number` on the
    qrels). Every task then evaluates its rows as parts of that collection; a block's own
    run lines can still nest items within their query, as in a whole run (side files add
    attributes, never items: they do not change it)."""

    qrels: Qrels
    measures: tuple[Measure, ...]
    options: EvalOptions
    plugins: tuple[str | None, ...] = ()
    nested: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nested", _qrels_nested(self.qrels, self.options.nest_sep))


def _qrels_nested(qrels: Qrels, sep: str | None) -> bool:
    """Whether *qrels* alone form a nested collection (see :class:`Shared`)."""
    if not sep:
        return False
    from rankeval.ranking.numbering import number

    return number(qrels, _empty_run("qrels"), sep).nested


@dataclass(frozen=True)
class Task:
    """One unit of work: a block of a run file, a part of an unsorted run file grouped by
    query, a run in memory (whole, or a block of a Parquet run), or the qrels' queries that a
    run does not retrieve (*rest*), for run number *run* named *name*."""

    run: int
    name: str
    block: RunBlock | None = None
    memory: Run | None = None
    rest: tuple[str, ...] | None = None
    part: RunPart | None = None
    nested: bool = False  # nested, though the qrels are not: the run's own items nest
    threads: bool = True
    whole: bool = True  # *memory* is a whole run (every judged query), not a block of one


@dataclass(frozen=True)
class PartValues:
    """One measure's values in one task.

    Attributes:
        query_ids: the task's queries.
        values: their per-query values.
        parts: the measure's aggregate parts (:meth:`~rankeval.Measure.aggregate_parts`).
        found: the task has items of the level the measure ranks.
    """

    query_ids: np.ndarray
    values: np.ndarray
    parts: dict[str, np.ndarray]
    found: bool


@dataclass(frozen=True)
class BlockValues:
    """What a task sends back: per measure its values; the run's queries the task saw (in
    file order), its distinct tags (its last line's last), its number of rows, whether its
    collection is nested, and the warnings raised."""

    results: list[PartValues]
    queries: np.ndarray
    tags: list[str]
    rows: int
    nested: bool
    warnings: list[str]
    ties: np.ndarray  # (4,) tie counts (rankeval.engine.ties.TIE_FIELDS)


@dataclass(frozen=True)
class MeasureValues:
    """One measure's values over a whole run: sorted by query id, and the aggregate."""

    query_ids: np.ndarray
    values: np.ndarray
    aggregate: float


@dataclass(frozen=True)
class RunValues:
    """A run's name, its :class:`MeasureValues` (one per measure in the order given), the
    queries it retrieves (sorted, distinct) and the tag of its last line."""

    name: str
    measures: list[MeasureValues]
    queries: np.ndarray
    tag: str


class Scheduler(Protocol):
    """Runs tasks: the results in the order of the tasks."""

    #: whether pyarrow may parse with its threads
    threads: bool

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]: ...


# ------------------------------------------------------------------------------ one task
def run_task(shared: Shared, task: Task) -> BlockValues:
    """Evaluate one task (in this process, or on a worker)."""
    if task.block is not None:
        table, lines = read_block(task.block, task.threads)
        run = Run(table, task.name, task.block.name, lines)
    elif task.part is not None:
        try:
            table, lines = read_part(task.part)
        except MemoryError:
            raise _out_of_memory(task, task.part.rows) from None
        run = Run(table, task.name, task.part.name, lines)
    elif task.memory is not None:
        run = task.memory
    else:
        run = _empty_run(task.name)
    try:
        return _evaluate(shared, run, task)
    except MemoryError:
        raise _out_of_memory(task, len(run)) from None


def _out_of_memory(task: Task, rows: int) -> ResourceError:
    """The error for memory running out in *task*, of *rows* run lines."""
    if task.memory is not None and task.whole:  # a run in memory, whole: the block size does not bound it
        return ResourceError(
            f"out of memory while evaluating run {task.name} ({rows:,} lines, in memory as a "
            "whole): evaluate fewer runs at a time, or use a machine with more memory (a run "
            "file is evaluated in blocks, with bounded memory)"
        )
    return ResourceError(
        f"out of memory while evaluating run {task.name} ({rows:,} lines in this block): "
        "lower --block-size or --jobs, or use a machine with more memory"
    )


def _empty_run(name: str) -> Run:
    return Run(empty_run_table(), name)


def _evaluate(shared: Shared, run: Run, task: Task) -> BlockValues:
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankeval.engine.scoring import aligned, evaluate_measure

    qid = run.table.column("query_id")
    queries = pc.unique(qid)
    if pa.types.is_dictionary(queries.type):
        queries = queries.dictionary_decode()
    if task.rest is not None:
        queries = pa.array(task.rest, pa.string())
    qrels = shared.qrels
    if task.memory is None or not task.whole:  # a block: the judgments of its queries
        mask = pc.is_in(qrels.table.column("query_id"), value_set=queries.cast(pa.string()))
        if not pc.all(mask).as_py():  # (a block with every judged query: no copy)
            qrels = qrels.select(mask.to_numpy(zero_copy_only=False))
    tags = pc.unique(run.table.column("tag")).cast(pa.string()).to_pylist() if len(run) else []
    if tags:  # the last line's tag last (trec_eval's runid)
        last = str(run.table.column("tag")[-1].cast(pa.string()).as_py())
        tags = [t for t in tags if t != last] + [last]
    rows = len(run)
    opts = shared.options
    out: list[PartValues] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nested = shared.nested or task.nested
        alignment = aligned(qrels, run, opts, nested=nested)
        condensed = None  # the measures with judged_only=True: condensed lists
        plugins = shared.plugins or (None,) * len(shared.measures)
        for measure, plugin in zip(shared.measures, plugins, strict=True):
            this = alignment
            if measure.judged_only and not opts.judged_only:
                if condensed is None:
                    condensed = aligned(qrels, run, replace(opts, judged_only=True), nested=nested)
                this = condensed
            view, ids, values, index = evaluate_measure(
                this, measure, opts.missing_zero, require_level=False, plugin=plugin
            )
            with measure_guard(measure, "failed", plugin):
                parts = measure.aggregate_parts(view, values, index)
            out.append(PartValues(ids, values, parts, view.nesting.level == 1 or view.num_queries > 0))
        ties = tie_counts(alignment.view(1), depth_of(shared.measures))
    seen = np.asarray(queries.to_pylist() if task.rest is None else [], dtype=object)
    return BlockValues(out, seen, tags, rows, alignment.nested, [str(w.message) for w in caught], ties)


# ------------------------------------------------------------------------------ the driver
@dataclass
class _RunState:
    """One run while its tasks are evaluated."""

    name: str | None  # None: named after evaluation (a file by its file name, else as_runs)
    source: Any  # the path (or glob), or the Run in memory
    file: bool
    files: list[str]  # the files of a path or glob, in order
    parquet: bool  # a Parquet run (read in blocks of rows), not run text
    nested: bool  # its tasks evaluate a nested collection
    values: list[BlockValues] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # the queries of its blocks so far
    again: bool = False  # its values so far are dropped: evaluate it again (another round)
    unsorted: str | None = None  # a query found in two blocks (a run file not sorted by query)
    parts: list[RunPart] | None = None  # then its parts, grouped by query
    last_tag: str | None = None  # and its file's last tag (the parts are not in file order)

    def add(self, values: BlockValues) -> None:
        """Keep a task's *values*, unless they show that the run file's tasks must be made
        again: a query already seen in another block (a run not sorted by query: grouped by
        query, then evaluated again), or nested items in a collection whose qrels are not
        nested (the run's own items nest: every block evaluated again as part of a nested
        collection, since an item without children reads differently there)."""
        if self.again:
            return  # (a block in flight when the run was found out)
        queries = [str(q) for q in values.queries] if self.file else []
        repeated = next((q for q in queries if q in self.seen), None)
        if repeated is not None and len(self.files) > 1:
            raise InputError(
                f"query {repeated!r} appears in more than one place of the files this pattern matches; "
                "expected each query's lines together (sort the files by query, e.g. 'sort -s -k1,1')",
                source=str(self.source),
            )
        if repeated is not None:
            self.unsorted = f"query {repeated!r} appears in more than one place" if self.parquet else repeated
        elif values.nested and not self.nested and self.file:
            self.nested = True
        else:
            self.seen.update(queries)
            self.values.append(values)
            return
        self.again, self.values, self.seen = True, [], set()


class Sequential:
    """This process, one task at a time: memory for one block (plus the qrels) at a time (a
    task's alignment and ranked lists form no reference cycle: they are freed as soon as the
    task returns)."""

    def __init__(self, shared: Shared, threads: bool = True) -> None:
        self.shared = shared
        self.threads = threads

    def map(self, tasks: Iterable[Task]) -> Iterator[BlockValues]:
        for task in tasks:
            yield run_task(self.shared, task)
            del task  # (its bytes, for a compressed file) before the next is cut


def evaluate_blocks(
    runs: Sequence[tuple[str | None, Any]],
    scheduler: Scheduler,
    shared: Shared,
    block_size: int,
) -> list[RunValues]:
    """Evaluate *runs* (``(name or None, path or Run)``; a path is a TREC file to cut into
    blocks) with *scheduler*: per run, its name and its values of each measure of *shared*
    (:func:`rankeval.engine.runs.unique_names` names the runs given without a name). Each
    run file is opened once, when its first block is cut, and held open until the end; the
    part files of a run not sorted by query are removed at the end, however it ends.

    Raises:
        InputError: a run file cannot be read, holds a bad line, or changed while read.
    """
    import contextlib

    with contextlib.ExitStack() as stack:
        files = _HeldFiles(stack)
        return _evaluate_runs(runs, scheduler, shared, block_size, files)


class _HeldFiles:
    """The run files of an evaluation, each opened once (at its first use) and closed when
    the evaluation ends (*stack*), and a temporary directory for part files, made at its
    first use and removed then too."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.files: dict[str, RunFile] = {}
        self.temporary: str | None = None

    def __getitem__(self, path: str) -> RunFile:
        if path not in self.files:
            self.files[path] = self.stack.enter_context(RunFile(path))
        return self.files[path]

    def directory(self) -> str:
        """The temporary directory (removed when the evaluation ends)."""
        if self.temporary is None:
            import tempfile

            self.temporary = self.stack.enter_context(tempfile.TemporaryDirectory(prefix="rankeval-"))
        return self.temporary


def _evaluate_runs(
    runs: Sequence[tuple[str | None, Any]],
    scheduler: Scheduler,
    shared: Shared,
    block_size: int,
    files: _HeldFiles,
) -> list[RunValues]:
    """:func:`evaluate_blocks` with its run files held in *files*: a round of all the runs'
    tasks, then rounds of the run files to evaluate again (:meth:`_RunState.add`: at most two
    more, and none for a run sorted by query whose qrels decide the nesting)."""
    states = [
        _RunState(
            name, item, not isinstance(item, Run), run_files(item), run_kind(item) == "parquet", shared.nested
        )
        for name, item in runs
    ]
    todo = states
    while todo:
        order: list[_RunState] = []
        for state in todo:
            state.again = False
        for k, values in enumerate(scheduler.map(_tasks(todo, order, scheduler, block_size, files))):
            order[k].add(values)
        todo = [state for state in states if state.again]
    for i, state in enumerate(states):
        if state.file:
            _rest(i, state, shared)
    names = _names(states)
    _warn_once(v for state in states for v in state.values)
    _warn_ties(names, states, shared)
    return [
        RunValues(
            name,
            [
                _combine(m, [v.results[k] for v in state.values], shared.options.nest_sep)
                for k, m in enumerate(shared.measures)
            ],
            np.unique(np.concatenate([v.queries for v in state.values]).astype(str)),
            state.last_tag
            if state.last_tag is not None
            else next((v.tags[-1] for v in reversed(state.values) if v.tags), ""),
        )
        for name, state in zip(names, states, strict=True)
    ]


def _tasks(
    states: list[_RunState], order: list[_RunState], scheduler: Scheduler, block_size: int, files: _HeldFiles
) -> Iterator[Task]:
    """The tasks of *states*, one at a time, each run's appended to *order*: a run in memory
    whole; a run file's blocks, cut as they are needed (no more once the run is found to need
    another round), or its parts once it is found unsorted (:func:`_parts`)."""
    for i, state in enumerate(states):
        if not state.file:
            order.append(state)
            yield Task(i, state.source.name, memory=state.source, threads=scheduler.threads)
            continue
        name = _file_name(state)
        if state.parquet:
            yield from _parquet_tasks(i, state, order, scheduler, block_size)
            continue
        if state.unsorted is not None:
            for part in _parts(state, block_size, files, scheduler.threads):
                order.append(state)
                yield Task(i, name, part=part, nested=state.nested, threads=scheduler.threads)
            continue
        for path in state.files:
            for block in split_run(files[path], block_size):
                if state.again:
                    break
                order.append(state)
                yield Task(i, name, block=block, nested=state.nested, threads=scheduler.threads)
                del block  # a compressed block's bytes: not kept while the next is cut


#: about how many bytes a run line takes as text: a Parquet run's blocks hold block_size / this rows
ROW_BYTES = 48


def _parquet_tasks(
    i: int, state: _RunState, order: list[_RunState], scheduler: Scheduler, block_size: int
) -> Iterator[Task]:
    """The tasks of a Parquet run: its blocks of rows (:func:`~rankeval.io.parquet.parquet_blocks`),
    read as they are needed; or, once its rows are found not in ``(file, line)`` order or
    a query in two blocks (:meth:`_RunState.add`), the whole run in memory as one block, with
    a warning. Either way the qrels' queries no block retrieves are :func:`_rest`'s."""
    from rankeval.io.parquet import parquet_blocks

    name = _file_name(state)
    source = trec.source_name(state.source)
    if state.unsorted is not None:
        warnings.warn(
            RankevalWarning(
                f"run {name}: its Parquet rows are not grouped by query in the files' order ({state.unsorted}): "
                "it is read whole into memory (same results); convert a run sorted by query to evaluate it "
                "in blocks"
            ),
            stacklevel=6,
        )
        order.append(state)
        run = Run.read(state.source, name)
        yield Task(i, name, memory=run, nested=state.nested, threads=scheduler.threads, whole=False)
        return
    for block in parquet_blocks(state.source, max(1, block_size // ROW_BYTES)):
        if state.again:
            return
        if block is None:
            state.unsorted = "rows out of line order"
            state.again, state.values, state.seen = True, [], set()
            return
        order.append(state)
        run = Run(block[0], name, source, block[1])
        yield Task(i, name, memory=run, nested=state.nested, threads=scheduler.threads, whole=False)


def _parts(state: _RunState, block_size: int, files: _HeldFiles, threads: bool) -> list[RunPart]:
    """The parts of a run file found not sorted by query: its lines grouped by query into
    part files (:func:`~rankeval.io.partition.partition_run`, one block in memory at a time),
    once; with a warning."""
    if state.parts is None:
        warnings.warn(
            RankevalWarning(
                f"run {_file_name(state)}: not sorted by query (query {state.unsorted!r} appears in more "
                "than one place): its lines are grouped by query through temporary files first (same "
                "results, more time); sort it with 'sort -s -k1,1' to evaluate it in one pass"
            ),
            stacklevel=6,
        )
        grouped = partition_run(files[state.files[0]], block_size, files.directory(), threads)
        state.parts, state.last_tag = grouped.parts, grouped.last_tag
    return state.parts


def _file_name(state: _RunState) -> str:
    from pathlib import Path

    return state.name or Path(str(state.source)).name


def _rest(i: int, state: _RunState, shared: Shared) -> None:
    """After the blocks of a run file: an empty run is an error; the qrels' queries that no
    block retrieved are evaluated on an empty ranking (in this process: no run line)."""
    if not sum(v.rows for v in state.values):
        for path in state.files:
            trec.read_run_table(path)  # raises the whole-file reader's "empty run" error
        raise InputError("empty run: no run line in it", source=trec.source_name(state.source))
    seen = np.unique(np.concatenate([v.queries for v in state.values]).astype(str))
    judged = shared.qrels.table.column("query_id").unique().cast("string").to_numpy(zero_copy_only=False)
    rest = np.setdiff1d(judged.astype(str), seen, assume_unique=True)
    if len(rest):
        task = Task(i, _file_name(state), rest=tuple(rest.tolist()), nested=state.nested)
        state.values.append(run_task(shared, task))


def _names(states: list[_RunState]) -> list[str]:
    """The runs' names: as given; a file by its file name, a Run by its own; runs of files
    with the same name told apart by their tags, else by their paths."""
    from rankeval.engine.runs import unique_names

    entries: list[tuple[str, bool, str | None, str | None]] = []
    for state in states:
        tags = {t for v in state.values for t in v.tags}
        tag = next(iter(tags)) if len(tags) == 1 else None
        if state.file:
            entries.append((_file_name(state), state.name is not None, trec.source_name(state.source), tag))
        else:
            entries.append((state.source.name, state.name is not None, state.source.source, tag))
    return unique_names(entries)


def _warn_once(values: Iterable[BlockValues]) -> None:
    """Each distinct warning of the tasks, once, in the order first raised."""
    seen: set[str] = set()
    for v in values:
        for message in v.warnings:
            if message not in seen:
                seen.add(message)
                warnings.warn(RankevalWarning(message), stacklevel=4)


def _warn_ties(names: list[str], states: list[_RunState], shared: Shared) -> None:
    """One :class:`~rankeval.errors.TieWarning` for the runs whose ties, summed over their
    blocks, can change a value (:func:`rankeval.engine.ties.tie_message`)."""
    counts = {
        name: np.sum([v.ties for v in state.values], axis=0) if state.values else np.zeros(4, np.int64)
        for name, state in zip(names, states, strict=True)
    }
    message = tie_message(counts, depth_of(shared.measures), shared.options.ties)
    if message is not None:
        warnings.warn(TieWarning(message), stacklevel=4)


def _combine(measure: Measure, parts: list[PartValues], sep: str | None) -> MeasureValues:
    """All tasks' values of one measure, sorted by query id, and the aggregate."""
    if measure.view_level() > 1 and not any(p.found for p in parts):
        raise UsageError(
            f"{measure} ranks nested items (level={measure.view_level()}), but no judged item of that "
            f"level was found: nested ids look like PARENT{sep or '/'}CHILD, where PARENT is itself an item of "
            "the query (see --nest-sep)"
        )
    ids = np.concatenate([p.query_ids.astype(object) for p in parts]) if parts else np.zeros(0, object)
    values = np.concatenate([p.values for p in parts]) if parts else np.zeros(0)
    order = np.argsort(ids.astype(str), kind="stable")
    keys = set().union(*(p.parts.keys() for p in parts)) if parts else set()
    extra = {k: np.concatenate([p.parts[k] for p in parts if k in p.parts])[order] for k in keys}
    ids, values = ids[order], values[order]
    with measure_guard(measure):
        aggregate = measure.aggregate_from_parts(ids, values, extra)
    return MeasureValues(ids, values, as_number(aggregate, measure))
