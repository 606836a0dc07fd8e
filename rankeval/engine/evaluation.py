"""The engine: (qrels, runs, measures) → a long result table.

For each run the qrels and the run are aligned once (:class:`~rankeval.ranking.alignment.Alignment`);
each measure reads the ranked lists of its nesting level and returns one value per query;
values of nested sub-queries are averaged per query; the aggregate row (``query_id`` null:
no query id can take it; trec output labels it ``all``) is the measure's own aggregate (mean
by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine.blockwise import Shared
from rankeval.engine.runs import as_runs, run_items
from rankeval.engine.scoring import measure_plugins
from rankeval.errors import InputError, PluginError, SpecError, UsageError
from rankeval.io.blocks import DEFAULT_BLOCK_SIZE, is_text_run
from rankeval.io.data import Qrels, as_qrels, as_run
from rankeval.measures.base import Measure
from rankeval.options import EvalOptions, eval_options

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.distributed import DaskOptions
    from rankeval.measures.registry import Registry
    from rankeval.report.formats import CompatMode

ENGINES = ("local", "dask")

__all__ = ["Block", "Results", "as_runs", "evaluate", "evaluate_results", "resolve_measures"]

COLUMNS = ["run", "query_id", "measure", "value"]


def resolve_measures(
    measures: str | Measure | Iterable[str | Measure],
    registry: Registry | None = None,
    *,
    aliases: Mapping[str, str] | None = None,
) -> list[Measure]:
    """Measures from specs (``"AP nDCG@10"``, ``["AP", "P@5"]``), rankeval measure objects or
    ir_measures measure objects (``ir_measures.nDCG@10``, ``ir_measures.AP(rel=2)``), without
    duplicates, in the order given (*aliases*: a compat mode's names,
    :meth:`~rankeval.measures.registry.Registry.parse_many`).

    An ir_measures measure becomes the measure its printed name (``str(m)``, ir_measures'
    canonical spelling) names in the registry: rankeval's own measure where rankeval has it
    (``AP``, ``nDCG@10``), else the ir_measures bridge's (``ERR@10``), as the same spec
    written as a string would.

    Raises:
        UsageError: *measures* is none of these, or empty; :class:`~rankeval.errors.SpecError`
            for a spec (or an ir_measures measure's name) that does not parse.
    """
    items: Iterable[Any]
    if isinstance(measures, (str, Measure)) or _is_ir_measure(measures):
        items = [measures]
    elif isinstance(measures, Iterable):
        items = measures
    else:
        raise UsageError(
            f"measures must be a spec, a Measure, an ir_measures measure or a list of them, not {measures!r}"
        )
    out: list[Measure] = []
    for m in items:
        if isinstance(m, Measure):
            out.append(m)
            continue
        if not isinstance(m, str) and not _is_ir_measure(m):
            raise UsageError(
                f"not a measure: {m!r}; expected a spec string, a rankeval Measure or an ir_measures measure"
            )
        if registry is None:
            from rankeval.measures.plugins import load_registry

            registry = load_registry()
        out.extend(
            registry.parse_many(m, aliases=aliases)
            if isinstance(m, str)
            else [_from_ir_measures(m, registry)]
        )
    seen: set[str] = set()
    unique = []
    for m in out:
        if str(m) not in seen:
            seen.add(str(m))
            unique.append(m)
    if not unique:
        raise UsageError("no measures given")
    return unique


def _is_ir_measure(value: Any) -> bool:
    """Whether *value* is an ir_measures measure object (``ir_measures.nDCG@10``)."""
    import sys

    ir_measures = sys.modules.get("ir_measures")  # such an object implies ir_measures is loaded
    return ir_measures is not None and isinstance(value, ir_measures.Measure)


def _from_ir_measures(measure: Any, registry: Registry) -> Measure:
    """The registry's measure of an ir_measures measure's printed name."""
    text = str(measure)
    try:
        return registry.parse(text)
    except SpecError as exc:  # e.g. nDCG(dcg='exp-log2')@10: rankeval's nDCG has no dcg
        raise SpecError(
            f"ir_measures measure {text}: {exc.message}", source=exc.source, column=exc.column, text=exc.text
        ) from None


def evaluate(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    options: EvalOptions | None = None,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str | None = None,
    compat: str | None = None,
    docinfo: str | Path | Sequence[str | Path] | None = None,
    engine: str = "local",
    jobs: int | None = 1,
    block_size: int | None = None,
    dask: DaskOptions | None = None,
    registry: Registry | None = None,
) -> pd.DataFrame:
    """Evaluate runs against qrels.

    Args:
        qrels: a :class:`~rankeval.Qrels`, a path (or ir_datasets id), a DataFrame with
            ``query_id, doc_id, relevance`` (or PyTerrier's ``qid, docno, label``), a
            ``{query_id: {doc_id: relevance}}`` dict, or an iterable of ir_measures ``Qrel``.
        runs: one run (:class:`~rankeval.Run`, path, DataFrame with ``query_id, doc_id,
            score`` or PyTerrier's ``qid, docno, score``, ``{query_id: {doc_id: score}}``, or
            an iterable of ir_measures ``ScoredDoc``), a list of runs, or ``{name: run}``
            (see :func:`as_runs` for how one run is told from several, and the names).
        measures: specs (``"AP nDCG@10"``, ``["P@5", "RR(rel=2)"]``), measure objects, or
            ir_measures measure objects (``ir_measures.nDCG@10``).
        options: the evaluation options (:class:`~rankeval.options.EvalOptions`: missing
            queries, nesting, ``max_docs``, duplicates, ``docinfo``, ``compat``); or give them
            one by one as the keyword arguments below (not both).
        missing_zero: queries in the qrels that a run does not retrieve score 0 and count in
            the mean (trec_eval ``-c``, the ir_measures default); ``False`` averages over the
            queries both have.
        nest_sep: separator of nested item ids (``PARENT/CHILD``); ``None`` disables nesting.
        max_docs: evaluate only each query's top *max_docs* documents (trec_eval ``-M``).
        on_duplicate: a (query, doc) pair given twice in a run is an error (``"error"``, as
            trec_eval), or keeps its ``"first"`` line, or its ``"max"``-scoring line; default
            ``"error"``, or the rule of the *compat* mode (``"first"`` for ``"clef"``).
        compat: reproduce another tool's output with a mode a plugin adds
            (:func:`rankeval.report.formats.compat_modes`; e.g. ``"clef"``, from the TAR plugin: the
            CLEF TAR evaluator's rounding and aggregation, on every TAR measure, and its measure
            names: ``"ap"`` is ``"tar_ap"``); ``None`` or ``"none"``: no mode. Results name
            the measures as the mode does (CLEF's names), or as given.
        docinfo: one or more side files of item attributes (lines ``docno key=value ...``,
            e.g. ``sens=1`` for CS-DCG or ``cost=120`` for TBG), for judged and unjudged items
            alike, in every query; an attribute a judgment gives on its qrels lines wins,
            then the files in the order given (:meth:`~rankeval.Qrels.with_docinfo`).
        engine: ``"local"`` (this machine) or ``"dask"`` (a Dask cluster). Either way a run
            file is cut into blocks of whole queries, each evaluated on its own, and every
            aggregate is computed from all per-query values: identical results whatever the
            engine, the number of jobs or the block size (:mod:`rankeval.engine.blockwise`).
        jobs: with the local engine, worker processes evaluating blocks in parallel
            (``None``: one per core); default ``1``: this process, one block at a time,
            which bounds the memory to about one block plus the qrels. Worker processes
            import the calling script again: call with ``jobs`` > 1 from code under
            ``if __name__ == "__main__":`` (the ``rankeval`` command uses all cores).
        block_size: bytes of run text per block (default 32 MiB; the cut moves to the next
            query). Any size is taken here; ``--block-size`` on the command line is at least
            :data:`~rankeval.io.blocks.MIN_BLOCK_SIZE` (64 KiB), since every block costs about
            a millisecond whatever its size.
        dask: options of the Dask engine (scheduler address, local workers, memory limit);
            default :class:`~rankeval.engine.distributed.DaskOptions`.
        registry: measure registry to resolve specs with (default: all installed plugins).

    Returns:
        A long DataFrame with columns ``run, query_id, measure, value``: one row per run,
        query and measure, plus one aggregate row per run and measure whose ``query_id`` is
        ``None`` (``df[df.query_id.isna()]``; no query id can be ``None``, so a query named
        ``all`` stays apart). Queries appear in sorted order, measures in the order given.
    """
    opts = eval_options(
        options,
        missing_zero=missing_zero,
        nest_sep=nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        compat=compat,
        docinfo=docinfo,
    )
    return evaluate_results(
        qrels,
        runs,
        measures,
        options=opts,
        engine=engine,
        jobs=jobs,
        block_size=block_size,
        dask=dask,
        registry=registry,
    ).to_frame()


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
    """Evaluation results: one :class:`Block` per run and measure (what :func:`evaluate` turns
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
        from rankeval.report.formats import safe_name  # a file name's bytes that are not UTF-8

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


def evaluate_results(
    qrels: Any,
    runs: Any,
    measures: str | Measure | Iterable[str | Measure],
    *,
    options: EvalOptions | None = None,
    missing_zero: bool = True,
    nest_sep: str | None = "/",
    max_docs: int | None = None,
    on_duplicate: str | None = None,
    compat: str | None = None,
    docinfo: str | Path | Sequence[str | Path] | None = None,
    engine: str = "local",
    jobs: int | None = 1,
    block_size: int | None = None,
    dask: DaskOptions | None = None,
    registry: Registry | None = None,
) -> Results:
    """:func:`evaluate` without pandas: the same rows as plain arrays (used by the CLI)."""
    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    opts = eval_options(
        options,
        missing_zero=missing_zero,
        nest_sep=nest_sep,
        max_docs=max_docs,
        on_duplicate=on_duplicate,
        compat=compat,
        docinfo=docinfo,
    )
    if opts.compat not in (None, "none") and registry is None:
        from rankeval.measures.plugins import load_registry

        registry = load_registry()  # the compat modes come from plugins
    from rankeval.report.formats import compat_mode

    mode = compat_mode(opts.compat, registry)
    measure_list = resolve_measures(measures, registry, aliases=mode[1].aliases if mode else None)
    computed, duplicate_rule = _with_compat(measure_list, mode, opts.on_duplicate)
    qrels_obj: Qrels = as_qrels(qrels)
    if opts.docinfo is not None:
        qrels_obj = qrels_obj.with_docinfo(opts.docinfo)
    opts = replace(opts, on_duplicate=duplicate_rule, compat=None, docinfo=None)
    out = Results(
        integer_measures={str(m) for m in measure_list if m.integer},
        whole_measures={str(m) for m in measure_list if m.whole and not m.integer},
    )
    shared = Shared(qrels_obj, tuple(computed), opts, tuple(measure_plugins(computed, registry)))
    _evaluate_blocks(out, qrels_obj, runs, measure_list, shared, engine, jobs, block_size, dask)
    if mode is not None and mode[1].names is not None and registry is not None:  # CLEF's names
        from rankeval.measures.plugins import measure_names

        out = out.renamed(measure_names(measure_list, mode[1].names, registry))
    return out


def _evaluate_blocks(
    out: Results,
    qrels: Qrels,
    runs: Any,
    measures: list[Measure],
    shared: Shared,
    engine: str,
    jobs: int | None,
    block_size: int | None,
    dask: DaskOptions | None,
) -> None:
    """Evaluate the runs with the block engine (:mod:`rankeval.engine.blockwise`) into *out*:
    in this process (``jobs=1``, or a small input), in a pool of ``jobs`` worker processes
    (default: one per core), or on Dask."""
    from rankeval.engine import blockwise

    if block_size is not None and (
        not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1
    ):
        raise UsageError(f"the block size must be a positive number of bytes, not {block_size!r}")
    items = _block_runs(runs)
    text = _text_bytes(items)
    if engine == "dask":
        from rankeval.engine.distributed import DaskOptions, dask_scheduler

        options = dask or DaskOptions()
        size = block_size or _block_size(text, options.workers if options.scheduler is None else 1)
        with dask_scheduler(shared, options, [m for m in shared.measures]) as scheduler:
            per_run = blockwise.evaluate_blocks(items, scheduler, shared, size)
    else:
        from rankeval.engine.local_pool import default_jobs, local_scheduler

        size = block_size or _block_size(text, default_jobs() if jobs is None else jobs)
        with local_scheduler(shared, jobs, text, size) as scheduler:
            per_run = blockwise.evaluate_blocks(items, scheduler, shared, size)
    for run in per_run:
        out.run_queries[run.name], out.run_tags[run.name] = run.queries, run.tag
        for measure, v in zip(measures, run.measures, strict=True):
            out.add(run.name, str(measure), v.query_ids, v.values, v.aggregate)


def _block_runs(runs: Any) -> list[tuple[str | None, Any]]:
    """The runs as the block engine takes them: ``(name or None, path)`` for a file of TREC
    text (cut into blocks), else ``(name or None, Run)`` read here (stdin, JSON, Parquet,
    DataFrames, dicts, :class:`Run` objects)."""
    import glob

    from rankeval.engine.dask_io import check_run_files, is_parquet, read_parquet_run

    out: list[tuple[str | None, Any]] = []
    for name, item in run_items(runs):
        if isinstance(item, (str, Path)) and is_text_run(item):
            out.append((name, str(item)))
        elif isinstance(item, (str, Path)) and is_parquet(str(item)):
            out.append((name, read_parquet_run(item, name)))
        elif isinstance(item, (str, Path)) and Path(item).is_dir():
            check_run_files(item)  # says what a directory may hold
        elif isinstance(item, (str, Path)) and _is_glob(str(item)):
            files = sorted(glob.glob(str(item)))
            if not files:
                raise InputError("no file matches this pattern", source=str(item))
            for path in files:
                if not is_text_run(path):
                    raise InputError(
                        "matches a file that is not run text (a directory, Parquet or JSON); "
                        "a pattern names the TREC text files of one run",
                        source=path,
                    )
            out.append((name, str(item)))
        else:
            out.append((name, as_run(item, name)))
    return out


def _is_glob(text: str) -> bool:
    """Whether *text* is a file pattern (a path that does not exist, with ``*?[``)."""
    import os

    return any(c in text for c in "*?[") and not os.path.lexists(text)


def _block_size(text_bytes: int, processes: Any) -> int:
    """The default block size: :data:`~rankeval.io.blocks.DEFAULT_BLOCK_SIZE`, or smaller so
    that each of *processes* (if several) gets at least 4 blocks of the *text_bytes* (but
    not below :data:`~rankeval.io.blocks.MIN_DEFAULT_BLOCK_SIZE`): the last blocks of the
    run then end at about the same time on every process."""
    from rankeval.io.blocks import MIN_DEFAULT_BLOCK_SIZE

    if not isinstance(processes, int) or processes < 2:
        return DEFAULT_BLOCK_SIZE
    return max(MIN_DEFAULT_BLOCK_SIZE, min(DEFAULT_BLOCK_SIZE, text_bytes // (4 * processes)))


def _text_bytes(items: list[tuple[str | None, Any]]) -> int:
    """About how many bytes of text the run files among *items* hold (to choose a
    scheduler): their size on disk, a compressed file's counted five times."""
    import os

    from rankeval.engine.blockwise import run_files
    from rankeval.io.trec import is_compressed

    paths = [
        path for _, item in items if isinstance(item, str) for path in run_files(item) if os.path.isfile(path)
    ]
    return sum(os.path.getsize(path) * (5 if is_compressed(path) else 1) for path in paths)


def _with_compat(
    measures: list[Measure], plugin_mode: tuple[str, CompatMode] | None, on_duplicate: str | None
) -> tuple[list[Measure], str]:
    """The measures as computed in the compat mode (``(plugin, mode)`` of
    :func:`~rankeval.report.formats.compat_mode`, or ``None``; an error if it concerns none of
    them), and the duplicate rule: *on_duplicate*, else the mode's, else ``error``."""
    if plugin_mode is None:
        return measures, on_duplicate or "error"
    from rankeval.measures.plugins import plugin_guard

    plugin, mode = plugin_mode
    compat = mode.name
    out: list[Measure] = []
    found = False
    for m in measures:
        try:
            with plugin_guard(plugin, f"applying compat {compat!r} to {m}"):
                applied = mode.apply(m)
        except PluginError as exc:
            if isinstance(exc.__cause__, (ValueError, TypeError)):  # a parameter the measure refuses
                raise UsageError(f"compat {compat!r}: {m}: {exc.__cause__}") from None
            raise
        if applied is not None:
            if not isinstance(applied, Measure):
                raise PluginError(
                    f"plugin {plugin} applied compat {compat!r} to {m} as {applied!r}, not a Measure"
                )
            m, found = applied, True
        out.append(m)
    if not found:
        raise UsageError(
            f"compat {compat!r}: none of the measures {', '.join(map(str, measures))} has a compat mode"
        )
    return out, on_duplicate or mode.on_duplicate or "error"
