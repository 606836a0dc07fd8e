"""The engine: (qrels, runs, measures) → a long result table.

For each run the qrels and the run are aligned once (:class:`~rankeval.ranking.alignment.Alignment`);
each measure reads the ranked lists of its nesting level and returns one value per query;
values of nested sub-queries are averaged per query; the aggregate row (``query_id ==
"all"``) is the measure's own aggregate (mean by default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine.scoring import aggregate_lists, evaluate_measure, measure_plugins
from rankeval.errors import PluginError, ResourceError, SpecError, UsageError
from rankeval.io import forms
from rankeval.io.data import Qrels, Run, as_qrels, as_run
from rankeval.measures.base import Measure
from rankeval.options import EvalOptions, eval_options
from rankeval.ranking.alignment import Alignment

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.distributed import DaskOptions
    from rankeval.measures.registry import Registry
    from rankeval.report.formats import CompatMode

ENGINES = ("local", "dask")

__all__ = ["ALL", "Block", "Results", "as_runs", "evaluate", "evaluate_results", "resolve_measures"]

ALL = "all"
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


def _frame_types() -> tuple[type, ...]:
    """``(pandas.DataFrame,)`` if pandas is loaded (a DataFrame implies it is), else ``()``."""
    import sys

    pd = sys.modules.get("pandas")
    return (pd.DataFrame,) if pd is not None else ()


def as_runs(runs: Any) -> list[Run]:
    """The runs of an API call, read and uniquely named.

    *runs* is one run, a list (or other iterable) of runs, or a mapping ``{name: run}``; a
    run is a path, a :class:`Run`, a DataFrame, ``{query_id: {doc_id: score}}`` or an
    iterable of ir_measures ``ScoredDoc`` namedtuples (:func:`rankeval.io.data.as_run`).

    * A mapping whose values are all ``{doc_id: score}`` dicts is **one run** ``{query_id:
      {doc_id: score}}``; any other mapping is **runs by name** ``{name: run}``.
    * An iterable whose first item is a namedtuple is one run (of ``ScoredDoc``); any other
      is a list of runs.
    * Names: a mapping's keys; else a path's file name and a :class:`Run`'s own name, and
      ``run1``, ``run2``, ... (the place in the list) for the other forms; a single run that
      is none of these is ``run``. Runs of different files with the same file name are named
      by their tag column if that tells them apart, else by their paths; in-memory
      :class:`Run` objects with the same name by their place in the list.

    Raises:
        UsageError: no runs, a value that is no run, or two runs with the same name.
    """
    items = _run_items(runs)
    out = [as_run(value, name) for name, value in items]
    names = [r.name for r in out]
    for name in {n for n in names if names.count(n) > 1}:
        group = [i for i, r in enumerate(out) if r.name == name]
        sources = [out[i].source for i in group]
        if None not in sources and len(set(sources)) == len(sources):
            # same file name in different folders: name those runs by their tag column (as
            # trec_eval prints it) when that tells them apart, else by their path
            tags = [_single_tag(out[i]) for i in group]
            use_tags = None not in tags and len(set(tags)) == len(tags)
            for i, tag, source in zip(group, tags, sources, strict=True):
                out[i] = as_run(out[i], tag if use_tags else source)
        else:  # Run objects built in memory: by their place (the same file twice: an error below)
            for i in group:
                if out[i].source is None and items[i][0] is None:
                    out[i] = as_run(out[i], f"run{i + 1}")
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"several runs are named {', '.join(dup)}; give unique names ({{name: run}})")
    return out


def _run_items(runs: Any) -> list[tuple[str | None, Any]]:
    """*runs* (as :func:`as_runs` takes them) as ``(name, run)`` pairs, not read yet; the name
    is ``None`` where the run names itself (a path, a :class:`Run`, a single run)."""
    if isinstance(runs, (str, Path, Run, *_frame_types())):
        return [(None, runs)]
    if isinstance(runs, Mapping):
        if not runs:
            raise UsageError(
                f"no runs given: the mapping is empty; expected {{name: run}} or {forms.RUN_FORMS}"
            )
        if forms.is_one_run(runs):
            return [(None, runs)]
        for key, value in runs.items():
            if isinstance(value, Mapping) and forms.is_one_run({key: value}):
                raise UsageError(
                    f"cannot tell one run from runs by name: {key!r} maps to {{doc_id: score}} while other "
                    "keys map to runs; give either one run {query_id: {doc_id: score}} or {name: run} "
                    "where every run is a path, a Run, a DataFrame, a {query_id: {doc_id: score}} dict or "
                    "an iterable of ScoredDoc"
                )
        return [(str(k), v) for k, v in runs.items()]
    if isinstance(runs, bytes) or forms.is_namedtuple(runs) or not isinstance(runs, Iterable):
        return [(None, runs)]  # no run: as_run says what is expected
    items = list(runs)
    if not items:
        raise UsageError(
            f"no runs given; expected a run ({forms.RUN_FORMS}), a list of runs or {{name: run}}"
        )
    if forms.is_namedtuple(items[0]):
        return [(None, items)]  # one run of ScoredDoc
    return [(None if isinstance(r, (str, Path, Run)) else f"run{i}", r) for i, r in enumerate(items, 1)]


def _single_tag(run: Run) -> str | None:
    tags = run.table.column("tag").unique().to_pylist() if run.table.num_rows else []
    return str(tags[0]) if len(tags) == 1 else None


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
        engine: ``"local"`` (this process) or ``"dask"``: the same evaluation partitioned by
            query over a Dask cluster, with identical results (:mod:`rankeval.engine.distributed`);
            run paths may then be globs of TREC files or Parquet.
        dask: options of the Dask engine (scheduler address, local workers, memory limit,
            block size); default :class:`~rankeval.engine.distributed.DaskOptions`.
        registry: measure registry to resolve specs with (default: all installed plugins).

    Returns:
        A long DataFrame with columns ``run, query_id, measure, value``: one row per run,
        query and measure, plus one aggregate row per run and measure with
        ``query_id == "all"``. Queries appear in sorted order, measures in the order given.
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
        qrels, runs, measures, options=opts, engine=engine, dask=dask, registry=registry
    ).to_frame()


@dataclass(frozen=True)
class Block:
    """One run's values of one measure.

    Attributes:
        run: the run's name.
        measure: the measure's spec as given.
        query_ids: the queries scored, sorted.
        values: the per-query values, aligned with *query_ids*.
        aggregate: the ``all`` value (the measure's aggregate of *values*).
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
    """

    blocks: list[Block] = field(default_factory=list)
    integer_measures: set[str] = field(default_factory=set)
    whole_measures: set[str] = field(default_factory=set)

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
        )

    def columns(self) -> dict[str, np.ndarray]:
        """Four columns ``run, query_id, measure, value``: each block's queries, then its
        ``all`` row."""
        if not self.blocks:
            return {
                "run": np.zeros(0, object),
                "query_id": np.zeros(0, object),
                "measure": np.zeros(0, object),
                "value": np.zeros(0, np.float64),
            }
        sizes = [len(b.query_ids) + 1 for b in self.blocks]
        all_row = np.array([ALL], dtype=object)
        return {
            "run": np.repeat(np.array([b.run for b in self.blocks], dtype=object), sizes),
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
    if engine == "dask":
        _evaluate_dask(out, qrels_obj, runs, measure_list, computed, opts, dask)
    else:
        _evaluate_local(out, qrels_obj, runs, measure_list, computed, opts, registry)
    if mode is not None and mode[1].names is not None and registry is not None:  # CLEF's names
        from rankeval.measures.plugins import measure_names

        out = out.renamed(measure_names(measure_list, mode[1].names, registry))
    return out


def _evaluate_local(
    out: Results,
    qrels: Qrels,
    runs: Any,
    measures: list[Measure],
    computed: list[Measure],
    options: EvalOptions,
    registry: Registry | None,
) -> None:
    """Evaluate each run in this process into *out* (*computed*: *measures* as the compat
    mode computes them; *options*: duplicate rule resolved, docinfo applied)."""
    plugins = measure_plugins(computed, registry)
    for run in as_runs(runs):
        try:
            alignment = Alignment(
                qrels,
                run,
                nest_sep=options.nest_sep,
                max_docs=options.max_docs,
                on_duplicate=options.duplicate_rule,
            )
            for measure, as_computed, plugin in zip(measures, computed, plugins, strict=True):
                view, query_ids, values, index = evaluate_measure(
                    alignment, as_computed, options.missing_zero, plugin=plugin
                )
                aggregate = aggregate_lists(as_computed, view, values, index, plugin)
                out.add(run.name, str(measure), query_ids, values, aggregate)
        except MemoryError:
            raise ResourceError(
                f"out of memory while evaluating run {run.name} ({len(run):,} lines against "
                f"{len(qrels):,} judgments): try --engine dask (partitions by query) or a "
                "machine with more memory"
            ) from None


def _evaluate_dask(
    out: Results,
    qrels: Qrels,
    runs: Any,
    measures: list[Measure],
    computed: list[Measure],
    options: EvalOptions,
    dask: DaskOptions | None,
) -> None:
    """Evaluate each run on the Dask engine (:mod:`rankeval.engine.distributed`) into *out*."""
    from rankeval.engine.distributed import DaskOptions, evaluate_partitioned

    per_run = evaluate_partitioned(qrels, _dask_runs(runs), computed, dask or DaskOptions(), options)
    for run in per_run:
        for measure, v in zip(measures, run.measures, strict=True):
            out.add(run.name, str(measure), v.query_ids, v.values, v.aggregate)


def _dask_runs(runs: Any) -> list[tuple[str | Path, Run | None]]:
    """Runs for the Dask engine, in the forms and with the names of :func:`as_runs`: files (and
    globs) of TREC text or Parquet are read by Dask, which names them by their file name;
    anything else (JSON, a file named otherwise in ``{name: path}``, DataFrames, dicts, Run
    objects) is read here first."""
    from rankeval.io import htbg_json

    out: list[tuple[str | Path, Run | None]] = []
    for i, (name, item) in enumerate(_run_items(runs), 1):
        by_dask = isinstance(item, (str, Path)) and str(item) != "-" and not htbg_json.is_json(item)
        if by_dask and name in (None, Path(str(item)).name):
            out.append((item, None))
            continue
        if by_dask and any(c in str(item) for c in "*?["):
            raise UsageError(
                f"run {name!r}: the Dask engine names the runs of a glob by its file name "
                f"({Path(str(item)).name}); give the glob without a name"
            )
        run = as_run(item, name)
        if name is None and run.source is None and run.name in _dask_names(out):
            run = as_run(run, f"run{i}")  # an in-memory Run named like another: by its place
        out.append((run.name, run))
    names = _dask_names(out)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"several runs are named {', '.join(dup)}; give unique names ({{name: run}})")
    return out


def _dask_names(runs: list[tuple[str | Path, Run | None]]) -> list[str]:
    """The names of :func:`_dask_runs`' runs: a file read by Dask is named by its file name."""
    return [Path(str(s)).name if r is None else str(s) for s, r in runs]


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
