"""``rankeval trec_eval``: trec_eval 9.0.8's command line and output, computed by rankeval.

The measures come from :mod:`rankeval_trec.trec_names` (trec_eval's table, names, parameter
forms and nicknames); the values from :meth:`rankeval.Evaluator.results`. In this mode
trec_eval's own behaviour is reproduced on purpose (see ``docs/trec_eval.md``): scores read as
float32, queries sorted as strings, means summed left to right over the evaluated queries,
``-c`` averaging over every query of the qrels (``num_q`` and ``num_rel`` counting them too),
``runid`` from the run's tag column, and trec_eval's number formats.
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
import typer

from rankeval import Domain, EvalOptions, Evaluator, Measure, Qrels, TieWarning, param
from rankeval.errors import InputError, UsageError
from rankeval.segments import ordered_sum

from .classic import NumRel, NumRet
from .interpolated import IPrec, IPrecAvg, parse_points, reach
from .trec_names import DIALECT_OPTIONS, TrecMeasure, expand_all

if TYPE_CHECKING:
    from rankeval import RankedLists

__all__ = ["GradeAt", "trec_eval", "trec_eval_command"]

VERSION = "9.0.8"
MIN_GEO_MEAN = 0.00001  # trec_eval's floor of a value in a geometric mean
NONPOOL, OUT_OF_LIST = -1000.0, -2000.0  # GradeAt codes: not in the qrels; past the list's end
MISSING_ZSCORE = -1000000.0  # trec_eval -Z: no mean and standard deviation for the value


@dataclass(frozen=True)
class GradeAt(Measure):
    """The qrels grade of the document at 0-based rank ``pos`` of each query (``relstring``):
    its grade, -1000 if the qrels do not judge it, -2000 if the ranking is shorter."""

    name: ClassVar[str] = "trec_eval.grade_at"

    pos: int = param(0, "0-based rank", domain=Domain(0, 2**31 - 1))

    def compute(self, data: RankedLists) -> np.ndarray:
        out = np.full(data.num_queries, OUT_OF_LIST)
        at = data.rank == self.pos
        grade = np.where(np.isnan(data.relevance), NONPOOL, data.relevance)
        out[data.query[at]] = grade[at]
        return out


def _with_num_docs(entry: TrecMeasure, num_docs: int) -> TrecMeasure:
    """*entry* with trec_eval's ``-N`` given to its measure if it reads it (``utility``)."""
    import dataclasses

    m = entry.measure
    if m is None or "num_docs" not in {f.name for f in dataclasses.fields(m)}:
        return entry
    changes: dict[str, Any] = {"num_docs": num_docs}
    changed: Measure = dataclasses.replace(m, **changes)
    return dataclasses.replace(entry, measure=changed)


def _recall_levels(measure: Measure | None) -> tuple[float, ...]:
    """The recall levels whose interpolated precision *measure* reads (``iprec_at_recall``,
    ``11pt_avg``), none for the other measures."""
    if isinstance(measure, IPrec) and measure.recall is not None:
        return (measure.recall,)
    if isinstance(measure, IPrecAvg):
        return parse_points(measure.points)
    return ()


def _undefined_when_empty(levels: tuple[float, ...], num_ret: np.ndarray, num_rel: np.ndarray) -> np.ndarray:
    """The queries where trec_eval's interpolated precision at one of *levels* is 0 / 0: an
    empty ranking (``-J``) and a level reached at 0 relevant documents (level 0, or R = 0)."""
    at_zero = np.zeros(len(num_rel), dtype=bool)
    for level in levels:
        at_zero |= reach(level, num_rel) == 0
    out: np.ndarray = (num_ret == 0) & at_zero
    return out


def _relstring(grades: np.ndarray) -> str:
    """trec_eval's relstring characters of one query's grades (top first)."""
    chars = []
    for g in grades:
        if g == OUT_OF_LIST:
            break
        if g == NONPOOL:
            chars.append("-")
        elif g > 9:
            chars.append(">")
        elif g >= 0:
            chars.append(str(int(g)))
        else:  # a negative label: in the pool, not judged (infAP's sampling), as trec_eval
            chars.append(".")
    return "'" + "".join(chars) + "'"


def _line(name: str, qid: str, text: str, prefix: str = "") -> str:
    """One line as trec_eval prints it: *prefix* (``Z`` for a Z score, ``-Z``), the name
    padded to 22 characters, the query and the text, separated by tabs."""
    return f"{prefix}{name:<22}\t{qid}\t{text}\n"


def _number(entry: TrecMeasure, value: float, zscores: bool = False) -> str:
    """*value* as trec_eval prints it: a count as an integer (a Z score of one with decimals)."""
    if entry.kind == "long" and not zscores:
        return str(math.trunc(value))
    if math.isnan(value):  # C's printf of x86's 0 / 0
        return f"{'-nan':>6}"
    return f"{value:6.4f}"


def trec_eval(
    qrels: str | Path,
    run: str | Path,
    measures: list[str] | None = None,
    *,
    per_query: bool = False,
    complete: bool = False,
    summary: bool = True,
    rel_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
    num_docs: int | None = None,
    zscores: str | Path | None = None,
    jobs: int | None = 1,
) -> str:
    """What ``trec_eval`` prints for these options (``-m`` values, ``-q``, ``-c``, ``-n``
    (``summary=False``), ``-l``, ``-M``, ``-J``, ``-N`` (*num_docs*, read by ``utility``),
    ``-Z``), byte for byte. *jobs*: processes evaluating the run's blocks (``None``: one
    per core), as :func:`rankeval.evaluate`'s.

    Raises:
        SpecError: an unknown measure or bad parameters.
        InputError: bad qrels or run; no query with both results and judgments.
    """
    entries = expand_all(list(measures or []), rel=rel_level)
    if num_docs:
        entries = [_with_num_docs(e, num_docs) for e in entries]
    qrels_obj = _read_qrels(qrels, judged_only)
    lengths = [int(e.param) for e in entries if e.family == "relstring" and e.param is not None]
    grade_at = [GradeAt(pos=p) for p in range(max(lengths, default=0))]
    computed: list[Measure] = [e.measure for e in entries if e.measure is not None]
    # -c: trec_eval's summary num_rel counts the relevant documents (grade >= 1, whatever -l)
    # of every query of the qrels
    all_rel = NumRel(rel=1) if complete and any(e.family == "num_rel" for e in entries) else None
    # -J can leave a query without documents: interpolated precision is then 0 / 0 (NaN)
    counts = [NumRet(), NumRel(rel=rel_level)] if any(_recall_levels(e.measure) for e in entries) else []
    computed = list(dict.fromkeys([*computed, *grade_at, *([all_rel] if all_rel else []), *counts]))
    # the run is read block by block (bounded memory; all cores with jobs=None); with only
    # runid/num_q asked for, one cheap measure still has it read for its queries and tag
    options = EvalOptions(
        missing_zero=True, nest_sep=None, max_docs=max_docs, judged_only=judged_only, **DIALECT_OPTIONS
    )
    results = _evaluated(Evaluator(qrels_obj, computed or [GradeAt(pos=0)], options=options), run, jobs)
    blocks = results.blocks if computed else []
    values = {b.measure: b.values for b in blocks}
    (run_name,) = results.run_tags
    runid = results.run_tags[run_name]
    qrels_ids = np.asarray(sorted(set(qrels_obj.table.column("query_id").unique().to_pylist())), dtype=object)
    present = np.isin(qrels_ids.astype(str), results.run_queries[run_name])
    if not present.any():
        raise InputError("no queries with both results and relevance info", source=str(run))
    if blocks:
        assert list(blocks[0].query_ids) == list(qrels_ids)
    zfile = _read_zscores(zscores) if zscores is not None else None
    measured = [e for e in entries if e.measure is not None]
    per = {e.name: _printed_values(e, values, present, counts, zfile, qrels_ids) for e in measured}
    summary_of = dict(per)
    if all_rel is not None:
        summary_of.update({e.name: values[str(all_rel)] for e in entries if e.family == "num_rel"})
    out: list[str] = []
    z_on = zfile is not None

    def z(e: TrecMeasure) -> str:  # -Z: trec_eval names a number's Z score Zname
        return "Z" if z_on and e.kind != "string" else ""

    if per_query:
        for i in np.flatnonzero(present):
            qid = str(qrels_ids[i])
            for e in entries:
                if not e.per_query:
                    continue
                if e.family == "relstring":
                    grades = np.array([values[str(g)][i] for g in grade_at[: int(e.param or 0)]])
                    out.append(_line(e.name, qid, _relstring(grades)))
                else:
                    out.append(_line(e.name, qid, _number(e, float(per[e.name][i]), z_on), z(e)))
    if summary:
        n = int(len(qrels_ids) if complete else present.sum())
        used = np.ones(len(qrels_ids), bool) if complete else present
        for e in entries:
            if not e.summary:
                continue
            if e.family == "runid":
                out.append(_line(e.name, "all", runid))
            elif e.family == "num_q":
                out.append(_line(e.name, "all", _number(e, n, z_on), z(e)))
            else:
                value = _summary(e, summary_of[e.name], present, used, n)
                out.append(_line(e.name, "all", _number(e, value, z_on), z(e)))
    return "".join(out)


def _evaluated(evaluator: Evaluator, run: str | Path, jobs: int | None) -> Any:
    """The evaluator's results of *run*, quiet as trec_eval is: no tie warning, no progress
    bar; a bad input's message without the main command's option hints."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TieWarning)
            return evaluator.results(run, jobs=jobs, progress=False)
    except InputError as exc:
        raise _without_option_hint(exc) from None


def _read_qrels(path: str | Path, judged_only: bool) -> Qrels:
    """The qrels as trec_eval reads them: integer labels; with ``-J``, without the negative
    labels (trec_eval's unjudged documents, which ``-J`` drops too)."""
    qrels = _integer_labels(Qrels.read(path))
    if judged_only:
        qrels = qrels.select(qrels.table.column("relevance").to_numpy() >= 0)
    return qrels


def _printed_values(
    e: TrecMeasure,
    values: dict[str, np.ndarray],
    present: np.ndarray,
    counts: list[Measure],
    zfile: dict[tuple[str, str], tuple[float, float]] | None,
    qrels_ids: np.ndarray,
) -> np.ndarray:
    """Each query's value of *e* as trec_eval prints it: NaN where trec_eval divides 0 by 0
    (interpolated precision of an evaluated query without documents), a Z score with ``-Z``."""
    v = values[str(e.measure)]
    levels = _recall_levels(e.measure)
    if levels:
        num_ret, num_rel = (values[str(m)] for m in counts)
        v = np.where(present & _undefined_when_empty(levels, num_ret, num_rel), np.nan, v)
    return v if zfile is None else _zscore(zfile, e.name, qrels_ids, v)


def _integer_labels(qrels: Qrels) -> Qrels:
    """*qrels* with each label truncated to an integer (toward 0), as trec_eval reads labels
    (``atol``: 2.7 is 2, -1.5 is -1)."""
    import pyarrow as pa

    labels = qrels.table.column("relevance").to_numpy()
    if (labels == np.trunc(labels)).all():
        return qrels
    column = qrels.table.column_names.index("relevance")
    table = qrels.table.set_column(column, "relevance", pa.array(np.trunc(labels), pa.float64()))
    return Qrels(table, qrels.source, qrels.docinfo)


def _without_option_hint(exc: InputError) -> InputError:
    """*exc*, its hint at the main command's ``--on-duplicate`` (a duplicate document) said as
    such: this command has no such option, as trec_eval has none."""
    head, hint, rest = exc.message.partition("; --on-duplicate")
    if not hint:
        return exc
    message = f"{head}; in the main command (rankeval QRELS RUN), --on-duplicate{rest}"
    return InputError(message, source=exc.source, line=exc.line, column=exc.column, text=exc.text)


def _summary(e: TrecMeasure, values: np.ndarray, present: np.ndarray, used: np.ndarray, n: int) -> float:
    """trec_eval's summary of one measure: counts summed over the evaluated queries (with
    ``-c``, ``num_rel`` over every query of the qrels: *used*), geometric means over the logs,
    other values summed left to right over the evaluated queries and divided by *n*."""
    if e.kind == "long":
        return ordered_sum(values[used if e.family == "num_rel" else present])
    if e.family in ("gm_map", "gm_bpref"):
        # the logs of the evaluated queries, then those of the missing ones (-c): log(floor)
        logs = ordered_sum(np.log(np.maximum(values[present], MIN_GEO_MEAN)))
        logs += (n - int(present.sum())) * math.log(MIN_GEO_MEAN)
        return math.exp(logs / n)
    return ordered_sum(values[present]) / n


def _read_zscores(path: str | Path) -> dict[tuple[str, str], tuple[float, float]]:
    """trec_eval ``-Z``: lines ``qid measure_name mean std_dev``."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the Z-score file: {exc.strerror}", source=str(path)) from None
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            qid, name, mean, std = fields
            out[(qid, name)] = (float(mean), float(std))
        except ValueError:
            raise InputError(
                "expected 'qid measure_name mean std_dev'", source=str(path), line=number, text=line
            ) from None
    return out


def _zscore(
    z: dict[tuple[str, str], tuple[float, float]], name: str, qids: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """Each query's value as a Z score, as trec_eval's ``te_convert_to_zscore``: -1000000
    where the file has no mean, or a standard deviation of 0 and a value other than the mean
    (0 where it is the mean)."""
    out = np.full(len(values), MISSING_ZSCORE)
    for i, qid in enumerate(qids):
        found = z.get((str(qid), name))
        if found is not None:
            mean, std = found
            if std:
                out[i] = (values[i] - mean) / std
            elif values[i] == mean:
                out[i] = 0.0
    return out


HELP = (
    "trec_eval 9.0.8's command line: the same measures, names, order and number formats, "
    "byte for byte (docs: trec_eval.md)."
)


def trec_eval_command(
    qrels: Annotated[
        Path | None, typer.Argument(help="Qrels file (trec_eval's rel_info_file).", show_default=False)
    ] = None,
    run: Annotated[Path | None, typer.Argument(help="Run file (trec_eval's results_file).", show_default=False)] = None,
    query: Annotated[bool, typer.Option("-q", "--query_eval_wanted", help="Also print each query's values.")] = False,
    measure: Annotated[
        list[str] | None,
        typer.Option("-m", "--measure", help="measure[.params] or a nickname: official (default), all_trec, set."),
    ] = None,
    complete: Annotated[
        bool, typer.Option("-c", "--complete_rel_info_wanted", help="Average over every query of the qrels.")
    ] = False,
    rel_level: Annotated[
        int, typer.Option("-l", "--level_for_rel", help="Minimum grade counted as relevant.")
    ] = 1,
    no_summary: Annotated[bool, typer.Option("-n", "--nosummary", help="Print no summary.")] = False,
    num_docs: Annotated[
        int | None, typer.Option("-N", "--Number_docs_in_coll", help="Documents in the collection (utility reads it).")
    ] = None,
    max_docs: Annotated[
        int | None, typer.Option("-M", "--Max_retrieved_per_topic", help="Evaluate each query's top N.")
    ] = None,
    judged_only: Annotated[
        bool, typer.Option("-J", "--Judged_docs_only", help="Drop unjudged (and negative-label) documents first.")
    ] = False,
    rel_format: Annotated[str, typer.Option("-R", "--Rel_info_format", help="Only 'qrels'.")] = "qrels",
    results_format: Annotated[
        str, typer.Option("-T", "--Results_format", help="Only 'trec_results'.")
    ] = "trec_results",
    zscores: Annotated[
        Path | None, typer.Option("-Z", "--Zscore", help="Print Z scores from a 'qid measure mean std' file.")
    ] = None,
    old_format: Annotated[bool, typer.Option("-o", help="Obsolete in trec_eval 9; accepted, ignored.")] = False,
    version: Annotated[bool, typer.Option("-v", "--version", help="Print the version on stderr and exit.")] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "-j",
            "--jobs",
            help="rankeval's own: processes evaluating the run's blocks (default: one per core).",
            show_default=False,
        ),
    ] = None,
) -> str:
    """trec_eval 9.0.8's command line: rankeval trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J]
    [-m measure[.params]]... QRELS RUN."""
    if version:  # as trec_eval: on standard error, the files not needed
        sys.stderr.write(f"trec_eval version {VERSION} (rankeval)\n")
        return ""
    if qrels is None or run is None:
        raise UsageError("expected two files: QRELS RUN (trec_eval's rel_info_file results_file)")
    if rel_format != "qrels":
        raise UsageError(f"-R {rel_format}: not supported; rankeval reads the 'qrels' rel_info format only")
    if results_format != "trec_results":
        raise UsageError(f"-T {results_format}: not supported; rankeval reads 'trec_results' only")
    if max_docs is not None and max_docs <= 0:
        raise UsageError(f"-M {max_docs}: expected a number of documents > 0")
    return trec_eval(
        qrels,
        run,
        measure,
        per_query=query,
        complete=complete,
        summary=not no_summary,
        rel_level=rel_level,
        max_docs=max_docs,
        judged_only=judged_only,
        num_docs=num_docs,
        zscores=zscores,
        jobs=jobs,
    )
