"""The block engine: runs evaluated block by block, with identical results.

A run file is cut into query-aligned blocks (:func:`rankeval.io.blocks.split_run`). Each
block is a task: parse it, take the qrels of its queries (:meth:`~rankeval.Qrels.select`),
align and compute every measure with the same code as a whole run
(:class:`~rankeval.ranking.alignment.Alignment`,
:func:`~rankeval.engine.scoring.evaluate_measure`), and send back per measure the per-query
values and the measure's :meth:`~rankeval.Measure.aggregate_parts`. The driver then

1. checks that no query turned up in two blocks of a run (an unsorted run): such a run is
   evaluated again as one task, in memory (its blocks read again and put together), with a
   warning;
2. evaluates the qrels' queries that no block retrieved (on an empty ranking, as a whole
   run does) as one more task;
3. evaluates again, as parts of a nested collection, the tasks of a run that found no
   nested item while others did (an item without children reads differently there);
4. sorts each measure's values by query id and computes the aggregate from all of them
   (:meth:`~rankeval.Measure.aggregate_from_parts`): the same numbers, in the same order,
   as one alignment of the whole run.

Each run file is held open for the whole evaluation (:class:`~rankeval.io.blocks.RunFile`):
every block, and every second reading of it, comes from the same file, and a file that
changes meanwhile is an error naming it.

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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rankeval.engine.scoring import as_number
from rankeval.errors import InputError, RankevalWarning, ResourceError, UsageError, measure_guard
from rankeval.io import trec as io
from rankeval.io.blocks import RunBlock, RunFile, read_block, split_run
from rankeval.io.data import Qrels, Run
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
    "run_files",
    "run_task",
]


@dataclass(frozen=True)
class Shared:
    """What every task needs, sent once to each worker: the qrels (side files applied), the
    measures as computed, and the evaluation options (duplicate rule resolved)."""

    qrels: Qrels
    measures: tuple[Measure, ...]
    options: EvalOptions
    plugins: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Task:
    """One unit of work: a block of a run file, a whole run in memory, or the qrels' queries
    that a run does not retrieve (*rest*), for run number *run* named *name*."""

    run: int
    name: str
    block: RunBlock | None = None
    memory: Run | None = None
    rest: tuple[str, ...] | None = None
    nested: bool = False
    threads: bool = True


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
    elif task.memory is not None:
        run = task.memory
    else:
        run = _empty_run(task.name)
    try:
        return _evaluate(shared, run, task)
    except MemoryError:
        if task.block is None:  # a run in memory, whole: the block size does not bound it
            raise ResourceError(
                f"out of memory while evaluating run {task.name} ({len(run):,} lines, in memory as a "
                "whole): evaluate fewer runs at a time, or use a machine with more memory (a run "
                "file sorted by query is evaluated in blocks, with bounded memory)"
            ) from None
        raise ResourceError(
            f"out of memory while evaluating run {task.name} ({len(run):,} lines in this block): "
            "lower --block-size or --jobs, or use a machine with more memory"
        ) from None


def _empty_run(name: str) -> Run:
    import pyarrow as pa

    empty = pa.array([], pa.string()).dictionary_encode()
    table = pa.table(
        {
            "query_id": empty,
            "q0": empty,
            "doc_id": pa.array([], pa.string()),
            "score": pa.array([], pa.float64()),
            "tag": empty,
        }
    )
    return Run(table, name)


def _evaluate(shared: Shared, run: Run, task: Task) -> BlockValues:
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankeval.engine.scoring import evaluate_measure
    from rankeval.ranking.alignment import Alignment

    qid = run.table.column("query_id")
    queries = pc.unique(qid)
    if pa.types.is_dictionary(queries.type):
        queries = queries.dictionary_decode()
    if task.rest is not None:
        queries = pa.array(task.rest, pa.string())
    qrels = shared.qrels
    if task.memory is None:  # a block: the judgments of its queries
        mask = pc.is_in(qrels.table.column("query_id"), value_set=queries.cast(pa.string()))
        if not pc.all(mask).as_py():  # (a block with every judged query: no copy)
            qrels = qrels.select(mask.to_numpy(zero_copy_only=False))
    tags = pc.unique(run.table.column("tag")).cast(pa.string()).to_pylist() if len(run) else []
    if tags:  # the last line's tag last (trec_eval's runid)
        last = str(run.table.column("tag")[-1].cast(pa.string()).as_py())
        tags = [t for t in tags if t != last] + [last]
    rows = len(run)
    opts = shared.options
    if opts.float32_scores:
        run = run.with_float32_scores()
    if opts.judged_only and opts.max_docs is None:  # (with -M: after the cut, in Alignment)
        run = run.judged_only(qrels)
    out: list[PartValues] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alignment = Alignment(
            qrels,
            run,
            nest_sep=opts.nest_sep,
            max_docs=opts.max_docs,
            on_duplicate=opts.duplicate_rule,
            nested=task.nested,
            judged_only=opts.judged_only and opts.max_docs is not None,
        )
        plugins = shared.plugins or (None,) * len(shared.measures)
        for measure, plugin in zip(shared.measures, plugins, strict=True):
            view, ids, values, index = evaluate_measure(
                alignment, measure, opts.missing_zero, require_level=False, plugin=plugin
            )
            with measure_guard(measure, "failed", plugin):
                parts = measure.aggregate_parts(view, values, index)
            out.append(PartValues(ids, values, parts, view.nesting.level == 1 or view.num_queries > 0))
    seen = np.asarray(queries.to_pylist() if task.rest is None else [], dtype=object)
    return BlockValues(out, seen, tags, rows, alignment.nested, [str(w.message) for w in caught])


# ------------------------------------------------------------------------------ the driver
@dataclass
class _RunState:
    """One run while its tasks are evaluated."""

    name: str | None  # None: named after evaluation (a file by its file name, else as_runs)
    source: Any  # the path (or glob), or the Run in memory
    file: bool
    files: list[str]  # the files of a path or glob, in order
    tasks: list[Task]
    values: list[BlockValues]


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
    run file is opened once, when its first block is cut, and held open until the end.

    Raises:
        InputError: a run file cannot be read, holds a bad line, or changed while read.
    """
    import contextlib

    with contextlib.ExitStack() as stack:
        files = _HeldFiles(stack)
        return _evaluate_runs(runs, scheduler, shared, block_size, files)


class _HeldFiles:
    """The run files of an evaluation, each opened once (at its first use) and closed when
    the evaluation ends (*stack*)."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.files: dict[str, RunFile] = {}

    def __getitem__(self, path: str) -> RunFile:
        if path not in self.files:
            self.files[path] = self.stack.enter_context(RunFile(path))
        return self.files[path]


def _evaluate_runs(
    runs: Sequence[tuple[str | None, Any]],
    scheduler: Scheduler,
    shared: Shared,
    block_size: int,
    files: _HeldFiles,
) -> list[RunValues]:
    """:func:`evaluate_blocks` with its run files held in *files*."""
    states = [
        _RunState(name, item, not isinstance(item, Run), run_files(item), [], []) for name, item in runs
    ]
    order: list[int] = []

    def first_round() -> Iterator[Task]:
        for i, state in enumerate(states):
            if not state.file:
                task = Task(i, state.source.name, memory=state.source, threads=scheduler.threads)
                order.append(i)
                state.tasks.append(task)
                yield task
                continue
            for path in state.files:
                for block in split_run(files[path], block_size):
                    task = Task(i, _file_name(state), block=block, threads=scheduler.threads)
                    order.append(i)
                    state.tasks.append(replace(task, block=block.without_data()))
                    yield task
                    del task, block  # a compressed block's bytes: not kept while the next is cut

    for k, values in enumerate(scheduler.map(first_round())):
        states[order[k]].values.append(values)
    for i, state in enumerate(states):
        if state.file:
            _whole_queries(i, state, shared, block_size, files)
    _nested_again(states, scheduler, block_size, files)
    names = _names(states)
    _warn_once(v for state in states for v in state.values)
    return [
        RunValues(
            name,
            [
                _combine(m, [v.results[k] for v in state.values], shared.options.nest_sep)
                for k, m in enumerate(shared.measures)
            ],
            np.unique(np.concatenate([v.queries for v in state.values]).astype(str)),
            next((v.tags[-1] for v in reversed(state.values) if v.tags), ""),
        )
        for name, state in zip(names, states, strict=True)
    ]


def run_files(item: Any) -> list[str]:
    """The files of a run path: itself, or the files a glob matches (sorted); none for a Run."""
    import glob
    import os

    if isinstance(item, Run):
        return []
    text = str(item)
    if os.path.lexists(text) or not any(c in text for c in "*?["):
        return [text]
    return sorted(glob.glob(text))


def _file_name(state: _RunState) -> str:
    from pathlib import Path

    return state.name or Path(str(state.source)).name


def _whole_queries(i: int, state: _RunState, shared: Shared, block_size: int, files: _HeldFiles) -> None:
    """After the blocks of a run file: an empty run is an error; a query in two blocks (an
    unsorted run) has the run evaluated again whole, in memory (:func:`_read_whole`); the
    qrels' queries that no block retrieved are evaluated on an empty ranking (in this
    process: no run line)."""
    name = _file_name(state)
    if not sum(v.rows for v in state.values):
        for path in state.files:
            io.read_run_table(path)  # raises the whole-file reader's "empty run" error
        raise InputError("empty run: no run line in it", source=io.source_name(state.source))
    seen = np.concatenate([v.queries for v in state.values])
    unique, first, counts = np.unique(seen.astype(str), return_index=True, return_counts=True)
    if (counts > 1).any():
        again = str(unique[counts > 1][np.argmin(first[counts > 1])])
        if len(state.files) > 1:
            raise InputError(
                f"query {again!r} appears in more than one place of the files this pattern matches; "
                "expected each query's lines together (sort the files by query, e.g. 'sort -s -k1,1')",
                source=str(state.source),
            )
        warnings.warn(
            RankevalWarning(
                f"run {name}: not sorted by query (query {again!r} appears in more than one place): "
                "it is evaluated in memory, as a whole (same results; its memory is not bounded by "
                "the block size); sort it with 'sort -s -k1,1' to evaluate it in blocks"
            ),
            stacklevel=4,
        )
        task = Task(i, name, memory=_read_whole(state, name, block_size, files))
        state.tasks, state.values = [task], [run_task(shared, task)]
        return
    judged = shared.qrels.table.column("query_id").unique().cast("string").to_numpy(zero_copy_only=False)
    rest = np.setdiff1d(judged.astype(str), unique, assume_unique=True)
    if len(rest):
        task = Task(i, name, rest=tuple(rest.tolist()), nested=any(v.nested for v in state.values))
        state.tasks.append(task)
        state.values.append(run_task(shared, task))


def _read_whole(state: _RunState, name: str, block_size: int, files: _HeldFiles) -> Run:
    """The run of a file read whole, in this process: its blocks read again (from the file
    held open; a compressed one cut again) and put together. Each block is parsed as in
    the first round (:func:`~rankeval.io.blocks.read_block`: pyarrow's threads only with
    memory to spare), so that memory running out ends in an error, never an abort."""
    import pyarrow as pa

    from rankeval.io.fast_run import dictionary_encode

    tables: list[pa.Table] = []
    lines: list[np.ndarray] = []
    try:
        for task in _with_data(state.tasks, block_size, files):
            assert task.block is not None
            table, rows = read_block(task.block)
            tables.append(table)
            lines.append(rows)
            del task, table, rows
        whole = pa.concat_tables(tables)
        del tables
        columns = {
            c: dictionary_encode(whole.column(c))
            if pa.types.is_dictionary(whole.column(c).type)
            else whole.column(c)
            for c in whole.column_names
        }
        return Run(pa.table(columns), name, io.source_name(state.files[0]), np.concatenate(lines))
    except (MemoryError, ResourceError):  # (read_block's own advice, a smaller block, would not help)
        raise ResourceError(
            f"out of memory while reading run {name} whole (it is not sorted by query, so it is "
            "evaluated in memory): sort it with 'sort -s -k1,1' to evaluate it in blocks, or use a "
            "machine with more memory",
            source=io.source_name(state.files[0]),
        ) from None


def _nested_again(states: list[_RunState], scheduler: Scheduler, block_size: int, files: _HeldFiles) -> None:
    """Evaluate again, as parts of a nested collection, the tasks of a run that found no
    nested item when other tasks of the run did (until every task of each run agrees)."""
    while True:
        todo = [
            (state, k)
            for state in states
            if any(v.nested for v in state.values)
            for k, v in enumerate(state.values)
            if not v.nested
        ]
        if not todo:
            return
        tasks = [replace(state.tasks[k], nested=True) for state, k in todo]  # (blocks without bytes)
        results = scheduler.map(_with_data(tasks, block_size, files))
        for (state, k), task, values in zip(todo, tasks, results, strict=True):
            state.tasks[k] = task
            state.values[k] = values


def _with_data(tasks: list[Task], block_size: int, files: _HeldFiles) -> Iterator[Task]:
    """*tasks*, one at a time, the blocks of compressed files with their bytes back: each
    file (held open in *files*) is cut again, as a stream, once for all its blocks in file
    order (plain files' blocks are read from their byte range where they are evaluated)."""
    cuts: dict[str, Iterator[RunBlock]] = {}
    for task in tasks:
        block = task.block
        if block is not None and block.compressed and block.data is None:
            found = next((b for b in cuts.get(block.path, iter(())) if b.start == block.start), None)
            if found is None:  # an earlier block than the last one found: cut the file again
                cuts[block.path] = split_run(files[block.path], block_size)
                found = next(b for b in cuts[block.path] if b.start == block.start)
            task = replace(task, block=found)
        yield task


def _names(states: list[_RunState]) -> list[str]:
    """The runs' names: as given; a file by its file name, a Run by its own; runs of files
    with the same name told apart by their tags, else by their paths."""
    from rankeval.engine.runs import unique_names

    entries: list[tuple[str, bool, str | None, str | None]] = []
    for state in states:
        tags = {t for v in state.values for t in v.tags}
        tag = next(iter(tags)) if len(tags) == 1 else None
        if state.file:
            entries.append((_file_name(state), state.name is not None, io.source_name(state.source), tag))
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
