"""Thresholding recall and cost (CLEF eHealth TAR 2017-2019) as a rankeval plugin.

A TAR run ranks the candidate documents of a systematic review (a *topic*) and marks a
threshold: a reviewer screens the documents in the run's order and stops there. The measures
are those of the official evaluator (github CLEF-TAR/tar, ``scripts/tar_eval_2018.py``,
task 2), under the names it prints: what the screening costs (``norm_threshold``, the share
of the topic's documents screened) and what it finds (``recall_threshold``), plus the
ranking measures of the lab (``wss_95``, ``norm_area``, ``recall@P%``, ...).

How the run is read (the evaluator's rules, see ``docs/tar.md``):

* the ranking of a topic is its lines in **file order** (scores are ignored);
* column 2 is a threshold flag: ``1`` marks the threshold (the last ``1`` line is the last
  document screened), ``0`` (or ``Q0``) does not; runs of 2017 use interaction codes instead
  (``AF``/``NF`` screened, ``NS`` not shown): the threshold is then the last ``AF``/``NF`` line;
* lines of documents labelled 3 or more are dropped; a document not in the qrels counts as
  not relevant; a document repeated in a topic is an error unless ``--on-duplicate first``
  (the default with ``--compat clef``) keeps its first line, as the evaluator does;
* N is the number of judged documents of the topic, labels -1 and 3 or more excluded; R is the
  number labelled 1 or 2; topics with R = 0 are skipped (NaN, left out of the aggregate, and
  reported in a warning).

Every measure has a ``compat`` parameter. ``compat=none`` (the default) gives unrounded
values; ``compat=clef`` (set on all of them by ``--compat clef``) reproduces the evaluator's
output value for value: its per-topic rounding, its aggregate for each measure and its
printing. Estimated recall from sampled judgments (``R_est``, ``recall_threshold(est=ht|hh)``)
uses the Horvitz-Thompson or Hansen-Hurwitz estimator on qrels that carry ``pi=`` or ``p=``.

Everything is computed for all topics at once with numpy segment operations; the only loops
run over the distinct column-2 codes and the few values near a rounding tie.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rankeval import Domain, Measure, hookimpl, param
from rankeval.errors import InputError, RankevalWarning, SpecError
from rankeval.measure import format_param_value
from rankeval.segments import safe_divide, segment_position
from rankeval.spec import MeasureSpec, Value, parse_spec

if TYPE_CHECKING:
    from rankeval.data import Run
    from rankeval.ranked import RankedLists

__all__ = [
    "MEASURES",
    "Screening",
    "clef_round",
    "hansen_hurwitz",
    "horvitz_thompson",
    "register_measures",
    "resolve_measure",
    "screening",
]

CLEF = (
    "CLEF eHealth TAR 2017-2019 overviews (Kanoulas et al.); official evaluator github CLEF-TAR/tar, "
    "scripts/tar_eval_2018.py, task 2"
)
LI_KANOULAS = "Li & Kanoulas, Automatic Thresholding by Sampling Documents and Estimating Recall, CLEF 2019"
THOMPSON = "Thompson, Sampling (3rd ed., Wiley 2012), ch. 6 (Horvitz-Thompson, Hansen-Hurwitz)"
_COMPAT = (
    "none = unrounded values; clef = the CLEF evaluator's per-topic rounding, aggregate and "
    "printing (set on every TAR measure by --compat clef)"
)
_EST = (
    "recall estimated from sampled judgments: exact = the judged documents as they are; "
    "ht = Horvitz-Thompson (qrels pi=); hh = Hansen-Hurwitz (qrels p=, draws=)"
)

# column-2 codes
_NONE, _ZERO, _FLAG, _SHOWN, _NOT_SHOWN, _BAD = 0, 1, 2, 3, 4, -1
_CODES = {"Q0": _NONE, "0": _ZERO, "1": _FLAG, "AF": _SHOWN, "NF": _SHOWN, "NS": _NOT_SHOWN}
_EXPECTED = "expected 1 (threshold) or 0 (CLEF TAR 2018-2019), AF, NF or NS (CLEF TAR 2017), or Q0"

# costs of the evaluator's total_cost (UtilityBasedMeasure): screening a document costs 1,
# missing a relevant one 20; a relevant document screened costs 1 - 20
_C_SHOWN, _C_MISSED = 1.0, 20.0


# ------------------------------------------------------------------------------ rounding
def clef_round(x: np.ndarray, ndigits: int) -> np.ndarray:
    """Python's ``round(x, ndigits)`` element-wise: the exact binary value rounded half to
    even, as the CLEF evaluator rounds. numpy's scaled rounding agrees except within a hair
    of a tie, where Python's own ``round`` decides (those few values only)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.round(x, ndigits)
    with np.errstate(invalid="ignore"):
        scaled = np.abs(x) * 10.0**ndigits
        near = np.isfinite(x) & (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
    if near.any():
        out[near] = [round(v, ndigits) for v in x[near].tolist()]
    return out


def _print_rule(x: np.ndarray, rule: str) -> np.ndarray:
    """What the evaluator prints: ``eval`` rounds values below 1 to 3 decimals and the others
    to 0 (``EvalMeasure.print_scores``); ``gain`` rounds to 3 decimals; ``count`` prints as is."""
    if rule == "count":
        return x
    three = clef_round(x, 3)
    if rule == "gain":
        return three
    with np.errstate(invalid="ignore"):
        return np.where(x < 1, three, np.round(x))


# ------------------------------------------------------------------------------ screening
@dataclass
class Screening:
    """A run as the CLEF evaluator reads it: per topic, its lines in file order.

    Line arrays (``(m,)``, grouped by topic, file order within a topic) hold the lines kept
    (documents labelled 3 or more dropped); topic arrays are ``(Q,)``, indexed like the
    topics of the :class:`~rankeval.ranked.RankedLists`.

    Attributes:
        q: topic index of each line.
        pos: 1-based position of each line in its topic's ranking.
        relevant: whether the line's document is labelled 1 or 2.
        row: index of the line in ``run.table``.
        n: lines kept per topic (the evaluator's ``num_shown``).
        N: judged documents per topic, labels -1 and 3 or more excluded.
        R: relevant documents (labels 1 and 2) per topic.
        found: relevant documents in the ranking.
        last_rel: position of the last relevant line (0 if none).
        first_flag: position of the first threshold line (0 if none).
        last_flag: position of the last threshold line (0 if none).
        retrieved: whether the run has lines for the topic.
        first_row: ``run.table`` row of the topic's first line (the evaluator's topic order).
    """

    q: np.ndarray
    pos: np.ndarray
    relevant: np.ndarray
    row: np.ndarray
    n: np.ndarray
    N: np.ndarray
    R: np.ndarray
    found: np.ndarray
    last_rel: np.ndarray
    first_flag: np.ndarray
    last_flag: np.ndarray
    retrieved: np.ndarray
    first_row: np.ndarray

    def __post_init__(self) -> None:
        rel = np.flatnonzero(self.relevant)
        self._width = int(self.n.max()) + 2 if len(self.n) else 2
        self._rel_key = self.q[rel] * self._width + self.pos[rel]  # sorted: lines are grouped
        self._rel_start = np.searchsorted(self._rel_key, np.arange(len(self.n)) * self._width)
        self._rel_pos = self.pos[rel]

    def cg(self, t: np.ndarray) -> np.ndarray:
        """``(Q,)`` relevant lines at positions ``1..t`` of each topic (*t* per topic)."""
        topics = np.arange(len(self.n))
        t = np.clip(np.asarray(t, dtype=np.int64), 0, self._width - 1)
        end = np.searchsorted(self._rel_key, topics * self._width + t, side="right")
        out: np.ndarray = (end - self._rel_start).astype(np.float64)
        return out

    def nth_relevant(self, k: np.ndarray) -> np.ndarray:
        """``(Q,)`` position of the *k*-th relevant line of each topic (0 if k < 1 or fewer)."""
        k = np.asarray(k, dtype=np.int64)
        ok = (k >= 1) & (k <= self.found)
        idx = np.where(ok, self._rel_start + k - 1, 0)
        out: np.ndarray = np.where(ok, self._rel_pos[idx] if len(self._rel_pos) else 0, 0)
        return out

    @property
    def Nn(self) -> np.ndarray:
        """The evaluator's N after its fix for runs longer than N: max(N, n)."""
        out: np.ndarray = np.maximum(self.N, self.n).astype(np.float64)
        return out

    def threshold(self, clef: bool) -> np.ndarray:
        """Position of the last threshold line; without one, the whole ranking (n), or N as
        the evaluator has it."""
        out: np.ndarray = np.where(self.last_flag > 0, self.last_flag, self.N if clef else self.n)
        return out

    def screened(self, clef: bool) -> np.ndarray:
        """Lines screened for recall at the threshold: the first ``threshold`` lines (the
        evaluator takes all lines when the threshold equals N)."""
        t = self.threshold(clef)
        return np.where(clef & (t == self.N), np.maximum(t, self.n), t)

    def seen(self, clef: bool) -> np.ndarray:
        """Lines the reviewer screens for ``total_cost`` and ``loss_er``: up to the threshold;
        the evaluator stops at the *first* ``1`` line there (all lines without one)."""
        if clef:
            out: np.ndarray = np.where(self.first_flag > 0, self.first_flag, self.n)
            return out
        return self.threshold(False)

    def skipped(self, clef: bool) -> np.ndarray:
        """Topics no TAR measure scores: R = 0; with ``clef`` also topics not in the run."""
        skip: np.ndarray = self.R == 0
        return skip | ~self.retrieved if clef else skip


def _flag_codes(run: Run, rows: np.ndarray) -> np.ndarray:
    """Column-2 code of each of *rows* (``run.table`` rows); a bad code, or a run mixing the
    2018-2019 flags with the 2017 codes, is an :class:`InputError` naming the line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    taken = pc.take(run.table.column("q0"), pa.array(rows))
    if isinstance(taken, pa.ChunkedArray):
        taken = taken.combine_chunks()
    if pa.types.is_dictionary(taken.type):
        taken = taken.dictionary_decode()
    encoded = pc.dictionary_encode(taken)
    names = encoded.dictionary.to_pylist()
    table = np.array([_CODES.get(str(v), _BAD) for v in names], dtype=np.int64)  # distinct codes
    codes: np.ndarray = table[encoded.indices.to_numpy(zero_copy_only=False)]

    def fail(mask: np.ndarray, message: str) -> None:
        first = int(rows[mask].min())
        value = run.table.column("q0")[first].as_py()
        line, text = run.line_of(first)
        raise InputError(message.format(value=value), source=run.source or run.name, line=line, text=text)

    bad = codes == _BAD
    if bad.any():
        fail(bad, f"bad threshold flag {{value!r}} in column 2 for the TAR measures: {_EXPECTED}")
    new = np.isin(codes, (_ZERO, _FLAG))
    old = np.isin(codes, (_SHOWN, _NOT_SHOWN))
    if new.any() and old.any():
        later = new if rows[new].min() > rows[old].min() else old
        fail(
            later,
            "column 2 mixes CLEF TAR 2018-2019 threshold flags (0/1) with 2017 interaction codes "
            "(AF/NF/NS); {value!r} here",
        )
    return codes


def screening(data: RankedLists) -> Screening:
    """The :class:`Screening` of *data*'s run (computed once per ranked lists)."""
    return data.memo("rankeval_tar.screening", lambda: _screening(data))


def _screening(data: RankedLists) -> Screening:
    nq = data.num_queries
    order = np.lexsort((data.rows, data.query))  # topic, then file order
    q = data.query[order].astype(np.int64)
    row = data.rows[order].astype(np.int64)
    label = data.relevance[order]  # NaN: not judged, i.e. not relevant
    codes = _flag_codes(data.run, row)
    with np.errstate(invalid="ignore"):
        keep = ~(label >= 3)
    q, row, label, codes = q[keep], row[keep], label[keep], codes[keep]
    n = np.bincount(q, minlength=nq)
    pos = segment_position(q) + 1
    with np.errstate(invalid="ignore"):
        relevant = (label > 0) & (label < 3)
    jrel, jq = data.judged_relevance, data.judged_query()
    N = np.bincount(jq, weights=(jrel != -1) & (jrel < 3), minlength=nq).astype(np.int64)
    R = np.bincount(jq, weights=(jrel > 0) & (jrel < 3), minlength=nq).astype(np.int64)
    found = np.bincount(q, weights=relevant, minlength=nq).astype(np.int64)
    last_rel = np.zeros(nq, dtype=np.int64)
    rq = q[relevant]
    if len(rq):
        last = np.concatenate((rq[1:] != rq[:-1], [True]))
        last_rel[rq[last]] = pos[relevant][last]
    old_style = np.isin(codes, (_SHOWN, _NOT_SHOWN)).any()
    flagged = codes == (_SHOWN if old_style else _FLAG)
    first_flag = np.zeros(nq, dtype=np.int64)
    last_flag = np.zeros(nq, dtype=np.int64)
    fq, fpos = q[flagged], pos[flagged]
    if len(fq):
        first = np.concatenate(([True], fq[1:] != fq[:-1]))
        last = np.concatenate((fq[1:] != fq[:-1], [True]))
        first_flag[fq[first]] = fpos[first]
        last_flag[fq[last]] = fpos[last]
    if old_style:  # 2017: the screened documents end at the last AF/NF line
        first_flag = last_flag.copy()
    first_row = np.full(nq, np.iinfo(np.int64).max)
    if len(q):
        head = np.concatenate(([True], q[1:] != q[:-1]))
        first_row[q[head]] = row[head]
    return Screening(
        q=q,
        pos=pos,
        relevant=relevant,
        row=row,
        n=n,
        N=N,
        R=R,
        found=found,
        last_rel=last_rel,
        first_flag=first_flag,
        last_flag=last_flag,
        retrieved=np.asarray(data.retrieved, dtype=bool),
        first_row=first_row,
    )


# ------------------------------------------------------------------------------ estimators
def horvitz_thompson(topic: np.ndarray, y: np.ndarray, pi: np.ndarray, num_topics: int) -> np.ndarray:
    """Horvitz-Thompson estimate of the total of *y* per topic: Σ y_i / π_i over the sampled
    units i (π_i = 1 for units judged with certainty)."""
    return np.bincount(topic, weights=y / pi, minlength=num_topics)


def hansen_hurwitz(
    topic: np.ndarray, y: np.ndarray, p: np.ndarray, draws: np.ndarray, num_topics: int
) -> np.ndarray:
    """Hansen-Hurwitz estimate of the total of *y* per topic from sampling with replacement:
    (1/n) Σ_i m_i y_i / p_i over the distinct units drawn, m_i the times unit i was drawn,
    p_i its per-draw selection probability, n = Σ m_i the draws of the topic. Units with
    ``p`` NaN were judged with certainty (outside the sampled stratum) and add y_i."""
    sampled = ~np.isnan(p)
    n = np.bincount(topic[sampled], weights=draws[sampled], minlength=num_topics)
    weight = np.ones(len(y))
    weight[sampled] = draws[sampled] / (n[topic[sampled]] * p[sampled])
    return np.bincount(topic, weights=y * weight, minlength=num_topics)


def _numbers(data: RankedLists, column: str, what: str, low: float, high: float) -> np.ndarray:
    """Attribute *column* of the qrels lines as floats (NaN where absent); a value that is not a
    number in [low, high] (low excluded) is an :class:`InputError` naming the line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    qt = data.qrels.table
    if column not in qt.column_names:
        return np.full(qt.num_rows, np.nan)
    encoded = pc.dictionary_encode(_array(pc.cast(qt.column(column), pa.string())))
    names = encoded.dictionary.to_pylist()

    def number(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return np.nan

    table = np.array([number(v) for v in names] + [np.nan])  # distinct values, then null
    index = encoded.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
    values: np.ndarray = table[index]
    given = index < len(names)
    bad = given & ~((values > low) & (values <= high))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        line = int(qt.column("line")[i].as_py()) or None
        text = " ".join(str(qt.column(c)[i].as_py()) for c in ("query_id", "iteration", "doc_id"))
        text += f" {qt.column('relevance')[i].as_py():g}"
        raise InputError(
            f"bad {column}={names[index[i]]!r}: expected {what}",
            source=data.qrels.source,
            line=line,
            text=f"{text} {column}={names[index[i]]}",
        )
    return values


def _array(x: Any) -> Any:
    """One pyarrow Array from a (chunked) array."""
    import pyarrow as pa

    return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x


def _numpy(x: Any) -> np.ndarray:
    """A (chunked) pyarrow array as numpy (nulls of a float array as NaN)."""
    return _array(x).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _estimates(data: RankedLists, est: str, clef: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(R̂, R̂_screened)`` per topic: the estimated number of relevant documents, and of
    relevant documents among the lines screened (positions up to the threshold)."""
    return data.memo(("rankeval_tar.estimates", est, clef), lambda: _make_estimates(data, est, clef))


def _make_estimates(data: RankedLists, est: str, clef: bool) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    qt = data.qrels.table
    nq = data.num_queries
    qids = pa.array([str(x) for x in data.query_ids], pa.string())
    rel = _numpy(qt.column("relevance"))
    lines = pa.table(
        {
            "t": data.qrels_query(),
            "d": pc.cast(qt.column("doc_id"), pa.string()),
            "y": ((rel > 0) & (rel < 3)).astype(np.float64),
        }
    )
    if est == "ht":
        pi = _numbers(data, "pi", "an inclusion probability in (0, 1]", 0, 1)
        lines = lines.append_column("pi", pa.array(pi, from_pandas=True))  # NaN: no pi=
        aggs = [("y", "max"), ("pi", "min")]
    else:
        p = _numbers(data, "p", "a per-draw selection probability in (0, 1]", 0, 1)
        m = _numbers(data, "draws", "the number of times the document was drawn (1 or more)", 0, np.inf)
        m = np.where(np.isnan(p), 0.0, np.where(np.isnan(m), 1.0, np.floor(m)))
        lines = lines.append_column("p", pa.array(p, from_pandas=True)).append_column("m", pa.array(m))
        aggs = [("y", "max"), ("p", "min"), ("m", "sum")]
    lines = lines.filter(pc.greater_equal(lines.column("t"), 0))
    docs = lines.group_by(["t", "d"]).aggregate(aggs)
    t = _numpy(docs.column("t")).astype(np.int64)
    y = _numpy(docs.column("y_max"))
    # documents among the lines screened
    s = screening(data)
    scr = s.pos <= s.screened(clef)[s.q]
    run_docs = pc.cast(_array(pc.take(data.run_doc_ids, pa.array(s.row[scr]))), pa.string())
    sep = "\x1f"
    screened_keys = pc.binary_join_element_wise(pc.take(qids, pa.array(s.q[scr])), run_docs, sep)
    doc_keys = pc.binary_join_element_wise(pc.take(qids, pa.array(t)), _array(docs.column("d")), sep)
    in_screened = _numpy(pc.is_in(doc_keys, value_set=_array(screened_keys))).astype(bool)
    if est == "ht":
        pi = _numpy(docs.column("pi_min")).astype(np.float64)
        pi = np.where(np.isnan(pi), 1.0, pi)
        out = horvitz_thompson(t, y, pi, nq), horvitz_thompson(t, y * in_screened, pi, nq)
    else:
        p = _numpy(docs.column("p_min")).astype(np.float64)
        m = _numpy(docs.column("m_sum")).astype(np.float64)
        out = hansen_hurwitz(t, y, p, m, nq), hansen_hurwitz(t, y * in_screened, p, m, nq)
    return out


# ------------------------------------------------------------------------------ measures
@dataclass(frozen=True)
class _Tar(Measure):
    """Shared behaviour: skipped topics, the ``compat`` parameter, the aggregate.

    Class variables: ``printed`` — how the evaluator prints the value (``count``, ``eval``:
    3 decimals below 1 and none from 1 on, ``gain``: 3 decimals); ``summed`` — the aggregate
    is a sum (else a mean); ``rounded`` — the evaluator keeps the per-topic value rounded to 3
    decimals, and averages those.
    """

    source: ClassVar[str] = CLEF
    printed: ClassVar[str] = "eval"
    summed: ClassVar[bool] = False
    rounded: ClassVar[bool] = False

    compat: Literal["none", "clef"] = param("none", _COMPAT)

    @property
    def clef(self) -> bool:
        """Whether the measure reproduces the CLEF evaluator (``compat=clef``)."""
        return self.compat == "clef"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        """``(Q,)`` unrounded value per topic (skipped topics are set aside by the caller)."""
        raise NotImplementedError

    def _kept(self, data: RankedLists) -> np.ndarray:
        """Per-topic values as the evaluator keeps them (NaN for skipped topics)."""
        s = screening(data)
        v = np.asarray(self.value(s, data), dtype=np.float64)
        if self.clef and self.rounded:
            v = clef_round(v, 3)
        return np.where(self._skip(s, data), np.nan, v)

    def _skip(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.skipped(self.clef)

    def compute(self, data: RankedLists) -> np.ndarray:
        v = self._kept(data)
        return _print_rule(v, self.printed) if self.clef else v

    def pool(self, s: Screening, data: RankedLists) -> tuple[np.ndarray, np.ndarray] | None:
        """``(numerator, denominator)`` per topic if the aggregate is pooled over topics."""
        return None

    def aggregate_parts(
        self, data: RankedLists, values: np.ndarray, queries: np.ndarray
    ) -> dict[str, np.ndarray]:
        s = screening(data)
        first = s.first_row[queries]
        lines = data.run.lines
        # the topic's place in the run file (its first line), comparable across partitions
        order = first
        if lines is not None and len(lines):
            at = np.minimum(first, len(lines) - 1)
            order = np.where(first < len(lines), lines[at], np.iinfo(np.int64).max)
        parts = {
            "kept": self._kept(data)[queries],
            "R": s.R[queries].astype(np.float64),
            "order": order,
            "run": np.full(len(queries), data.run.name, dtype=object),  # for the warning
        }
        pooled = self.pool(s, data)
        if pooled is not None:
            parts["num"], parts["den"] = pooled[0][queries], pooled[1][queries]
        return parts

    def aggregate_from_parts(
        self, query_ids: np.ndarray, values: np.ndarray, parts: dict[str, np.ndarray]
    ) -> float:
        kept = parts["kept"]
        ok = ~np.isnan(kept)
        run = str(parts["run"][0]) if len(parts["run"]) else ""
        _warn_skipped(run, query_ids[~ok], parts["R"][~ok], self.clef)
        topics = np.flatnonzero(ok)
        if self.clef:  # the evaluator adds the topics up in the order of the run file
            topics = topics[np.argsort(parts["order"][topics], kind="stable")]
        count = len(topics)
        if count == 0:
            return float("nan")
        pooled = "num" in parts
        if pooled:
            num, den = (np.cumsum(parts[x][topics])[-1] for x in ("num", "den"))
            total = (num / count) / (den / count) if self.clef else num / den
        elif self.summed:
            total = float(np.sum(kept[topics]))
        else:  # a sequential sum (np.cumsum), as the evaluator's loop adds
            total = float(np.cumsum(kept[topics])[-1]) / count
        if self.clef:
            return float(_print_rule(np.array([total]), "gain" if pooled else self.printed)[0])
        return float(total)


def _warn_skipped(run: str, ids: np.ndarray, R: np.ndarray, clef: bool) -> None:
    """Warn about run *run*'s skipped topics (*ids*, with their relevant documents *R*)."""
    if len(ids) == 0:
        return
    zero = ids[R == 0]
    absent = ids[R > 0]
    parts = []
    if len(zero):
        names = ", ".join(str(x) for x in zero[:10]) + (", ..." if len(zero) > 10 else "")
        parts.append(f"{len(zero)} topic(s) without relevant documents (R = 0) skipped: {names}")
    if len(absent) and clef:
        names = ", ".join(str(x) for x in absent[:10]) + (", ..." if len(absent) > 10 else "")
        parts.append(f"{len(absent)} topic(s) not in the run skipped (as the CLEF evaluator): {names}")
    if parts:
        warnings.warn(f"run {run}: TAR measures: " + "; ".join(parts), RankevalWarning, stacklevel=3)


@dataclass(frozen=True)
class NumDocs(_Tar):
    """N: the topic's judged documents, labels -1 and 3 or more excluded (summed)."""

    name: ClassVar[str] = "num_docs"
    description: ClassVar[str] = "N: judged documents of the topic (labels -1 and >= 3 excluded); summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.N


@dataclass(frozen=True)
class NumRels(_Tar):
    """R: the topic's documents labelled 1 or 2 (summed)."""

    name: ClassVar[str] = "num_rels"
    description: ClassVar[str] = "R: relevant documents of the topic (labels 1 and 2); summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.R


@dataclass(frozen=True)
class NumShown(_Tar):
    """n: the lines of the topic's ranking (after dropping repeated documents and labels of 3
    or more), screened or not, as the evaluator counts them (summed)."""

    name: ClassVar[str] = "num_shown"
    description: ClassVar[str] = (
        "n: documents in the topic's ranking (whole ranking, not only screened); summed"
    )
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.n


@dataclass(frozen=True)
class RelsFound(_Tar):
    """Relevant documents anywhere in the ranking (summed)."""

    name: ClassVar[str] = "rels_found"
    description: ClassVar[str] = "Relevant documents in the whole ranking; summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.found


@dataclass(frozen=True)
class LastRel(_Tar):
    """Position of the last relevant document in the ranking (0 if none; mean)."""

    name: ClassVar[str] = "last_rel"
    description: ClassVar[str] = "Rank of the last relevant document (file order); mean"
    whole: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.last_rel


@dataclass(frozen=True)
class NormLastRel(_Tar):
    """last_rel / max(N, n): the share of the documents read to find every relevant one the
    ranking has (mean; the evaluator rounds each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "norm_last_rel"
    description: ClassVar[str] = "last_rel / N: share of documents read to reach the last relevant one; mean"
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(s.last_rel, s.Nn)


@dataclass(frozen=True)
class Threshold(_Tar):
    """Position of the threshold: the last line whose column 2 is ``1`` (or the last
    ``AF``/``NF`` line of a 2017 run). Without one the whole ranking is screened: n, or N
    with ``compat=clef`` (mean)."""

    name: ClassVar[str] = "threshold"
    description: ClassVar[str] = "Rank of the threshold (last line flagged 1 in column 2); mean"
    whole: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.threshold(self.clef)


@dataclass(frozen=True)
class NormThreshold(_Tar):
    """The cost: threshold / max(N, n), the share of the topic's documents screened (mean; the
    evaluator rounds each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "norm_threshold"
    description: ClassVar[str] = "Cost: threshold / N, the share of documents screened; mean"
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(s.threshold(self.clef), s.Nn)


@dataclass(frozen=True)
class RecallThreshold(_Tar):
    """Recall at the threshold: relevant documents screened / R (mean). With ``est=ht`` or
    ``est=hh``, both numbers are estimated from sampled judgments (the ratio R̂_t / R̂)."""

    name: ClassVar[str] = "recall_threshold"
    description: ClassVar[str] = (
        "Recall at the threshold (relevant screened / R); mean; est= for sampled qrels"
    )
    source: ClassVar[str] = f"{CLEF}; {LI_KANOULAS}; {THOMPSON}"
    printed: ClassVar[str] = "gain"

    est: Literal["exact", "ht", "hh"] = param("exact", _EST)

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return _recall_threshold(self, s, data)

    def _skip(self, s: Screening, data: RankedLists) -> np.ndarray:
        skip = s.skipped(self.clef)
        if self.est != "exact":
            skip = skip | (_estimates(data, self.est, self.clef)[0] <= 0)
        return skip


def _recall_threshold(m: RecallThreshold | Reliability, s: Screening, data: RankedLists) -> np.ndarray:
    est = getattr(m, "est", "exact")
    if est != "exact":
        total, screened = _estimates(data, est, m.clef)
        return safe_divide(screened, total)
    return safe_divide(s.cg(s.screened(m.clef)), s.R)


@dataclass(frozen=True)
class WSS100(_Tar):
    """Work saved over sampling at 100% recall: (max(N, n) - last_rel) / max(N, n); 0 when the
    ranking lacks a relevant document (mean)."""

    name: ClassVar[str] = "wss_100"
    description: ClassVar[str] = "Work saved over sampling at 100% recall; mean"
    source: ClassVar[str] = f"{CLEF}; Cohen et al., JAMIA 2006"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return np.where(s.found < s.R, 0.0, safe_divide(s.Nn - s.last_rel, s.Nn))


@dataclass(frozen=True)
class WSS95(_Tar):
    """Work saved over sampling at 95% recall: (max(N, n) - r95) / max(N, n) - 0.05, r95 the
    position of the ⌊0.95 R⌉-th relevant document (R·0.95 rounded half to even); 0 when the
    ranking has fewer relevant documents (mean)."""

    name: ClassVar[str] = "wss_95"
    description: ClassVar[str] = "Work saved over sampling at 95% recall; mean"
    source: ClassVar[str] = f"{CLEF}; Cohen et al., JAMIA 2006"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        r95 = np.rint(s.R * 0.95).astype(np.int64)
        at = s.nth_relevant(np.minimum(r95, s.found))
        return np.where(s.found < r95, 0.0, safe_divide(s.Nn - at, s.Nn) - 0.05)


@dataclass(frozen=True)
class TarAP(_Tar):
    """Average precision of the file-order ranking: Σ over relevant lines of (relevant lines
    so far / position), divided by R (mean)."""

    name: ClassVar[str] = "ap"
    description: ClassVar[str] = "Average precision of the ranking in file order, over R; mean"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        rel = np.flatnonzero(s.relevant)
        q = s.q[rel]
        k = np.arange(len(rel)) - s._rel_start[q] + 1  # rank among the topic's relevant lines
        total = np.bincount(q, weights=k / s.pos[rel], minlength=len(s.n))  # sequential per topic
        return safe_divide(total, s.R)


@dataclass(frozen=True)
class NormArea(_Tar):
    """Area under the cumulative-recall curve over the positions 1..N (trapezoids; past the
    ranking's end the count stays flat) over its maximum R·N - R²/2 (N replaced by n when the
    ranking is longer; mean; the evaluator rounds each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "norm_area"
    description: ClassVar[str] = "Normalised area under the cumulative recall curve; mean"
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        rel = np.flatnonzero(s.relevant)
        nq = len(s.n)
        # Σ_i (found before line i + v_i / 2): each relevant line counts once for every later line
        area = np.bincount(s.q[rel], weights=(s.n[s.q[rel]] - s.pos[rel]).astype(np.float64), minlength=nq)
        area = area + 0.5 * s.found + np.maximum(s.N - s.n, 0) * s.found
        docs = np.where(s.n > s.N, s.n, s.N).astype(np.float64)
        R = s.R.astype(np.float64)
        best = R * docs - R * R / 2.0
        return safe_divide(area, best)


@dataclass(frozen=True)
class RecallAt(_Tar):
    """Recall after screening P% of the topic's N documents: relevant documents in the first
    k = round(P·N/100) lines (half to even), over R. The aggregate is **pooled**, as the
    evaluator's: Σ found / Σ R over topics, not the mean of the per-topic values.
    Spelled ``recall@10%`` (this plugin resolves ``recall@P%``; ``recall`` alone is
    trec_eval's ``recall.k``) or ``recall_pct@10``."""

    name: ClassVar[str] = "recall_pct"
    at: ClassVar[str | None] = "p"
    description: ClassVar[str] = "recall@P%: recall after screening P% of the N documents; pooled over topics"
    printed: ClassVar[str] = "gain"

    p: float | None = param(
        None,
        "percentage P of the topic's N documents screened (required: recall@10%)",
        domain=Domain(0, 100, low_open=True),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.p is None:
            raise ValueError("recall@P% needs a percentage 0 < P <= 100, e.g. recall@10%")

    @classmethod
    def from_spec(cls, spec: MeasureSpec, fixed: Any = None) -> Measure:
        """As :meth:`Measure.from_spec`; the percentage may carry its ``%`` (``recall_pct@10%``)."""

        def plain(key: str | None, v: Value) -> Value:
            if key in (None, "p") and v.kind == "number" and v.unit == "%":
                return Value(v.kind, v.text, v.column, v.number, None)  # text as written: 101%
            return v

        at = None if spec.at is None else (spec.at[0], plain(spec.at[0], spec.at[1]))
        params = tuple((k, plain(k, v)) for k, v in spec.params)
        return super().from_spec(MeasureSpec(spec.name, spec.text, spec.column, at, params), fixed)

    def __str__(self) -> str:
        extra = [
            f"{i.name}={format_param_value(getattr(self, i.name))}"
            for i in self.params()
            if i.name != "p" and getattr(self, i.name) != i.default
        ]
        return "recall" + (f"({','.join(extra)})" if extra else "") + f"@{float(self.p or 0)!r}%"

    def _found(self, s: Screening) -> np.ndarray:
        assert self.p is not None
        k = np.rint(s.N * self.p / 100.0).astype(np.int64)
        if not self.clef:
            return s.cg(np.minimum(k, s.n))
        # the evaluator only looks at the positions round(N·i/100), i = 1..100: past the
        # ranking's end, the count stays at the last of those positions the ranking reached
        grid = np.rint(np.outer(s.N, np.arange(1, 101)) / 100.0).astype(np.int64)
        reached = np.where(grid <= s.n[:, None], grid, 0).max(axis=1)
        return s.cg(np.where(k <= s.n, k, reached))

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(self._found(s), s.R)

    def pool(self, s: Screening, data: RankedLists) -> tuple[np.ndarray, np.ndarray]:
        return self._found(s), s.R.astype(np.float64)


@dataclass(frozen=True)
class LossER(_Tar):
    """loss_er = loss_r + loss_e: (1 - recall)² with recall over the documents screened, plus
    (100 / max(N, s))² · (s / (R + 100))², s the documents screened (mean)."""

    name: ClassVar[str] = "loss_er"
    description: ClassVar[str] = "Loss of recall plus loss of effort (Cormack & Grossman); mean"
    source: ClassVar[str] = f"{CLEF}; Cormack & Grossman, SIGIR 2016"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        seen = s.seen(self.clef)
        r = safe_divide(s.cg(seen), s.R)
        docs = np.maximum(s.N, seen)
        b = 100.0
        effort = safe_divide(np.full(len(docs), b), docs) ** 2.0 * (seen / (s.R + b)) ** 2.0
        return (1 - r) ** 2.0 + effort


@dataclass(frozen=True)
class TotalCost(_Tar):
    """The evaluator's total cost: 1 per document screened, -19 (1 - 20) per relevant one
    screened, 20 per relevant document in the ranking past the threshold, and 20 per relevant
    document not screened — so a relevant document past the threshold costs 20 twice (mean)."""

    name: ClassVar[str] = "total_cost"
    description: ClassVar[str] = (
        "Screening cost: 1 per document read, 20 per relevant one missed (see docs); mean"
    )

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        seen = s.seen(self.clef)
        hit = s.cg(seen)
        unseen_in_ranking = s.found - hit
        cost: np.ndarray = seen * _C_SHOWN - hit * _C_MISSED + (unseen_in_ranking + s.R - hit) * _C_MISSED
        return cost


@dataclass(frozen=True)
class Reliability(_Tar):
    """1 if the topic's recall at the threshold is at least r, else 0: its mean is the share of
    topics whose screening reached the target recall."""

    name: ClassVar[str] = "reliability"
    at: ClassVar[str | None] = "r"
    description: ClassVar[str] = "Share of topics whose recall at the threshold is >= r; mean"
    source: ClassVar[str] = f"{CLEF}; Cormack & Grossman, SIGIR 2016"

    r: float = param(0.95, "target recall (0.95 or 95%)", domain=Domain(0, 1))

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return (_recall_threshold(self, s, data) >= self.r).astype(np.float64)


@dataclass(frozen=True)
class REst(Measure):
    """Estimated number of relevant documents of a topic from sampled judgments:
    Horvitz-Thompson Σ y/π over the judged documents (``pi=``; 1 without it), or
    Hansen-Hurwitz (1/n) Σ m y / p over the documents drawn (``p=``, ``draws=`` m; n = Σ m)
    plus the documents judged without ``p=``. y = 1 for labels 1 and 2 (mean)."""

    name: ClassVar[str] = "R_est"
    description: ClassVar[str] = (
        "Estimated R from sampled judgments (Horvitz-Thompson or Hansen-Hurwitz); mean"
    )
    source: ClassVar[str] = f"{LI_KANOULAS}; {THOMPSON}"

    est: Literal["ht", "hh"] = param(
        "ht", "estimator: ht = Horvitz-Thompson (pi=), hh = Hansen-Hurwitz (p=, draws=)"
    )

    def compute(self, data: RankedLists) -> np.ndarray:
        return _estimates(data, self.est, False)[0]


MEASURES: tuple[type[Measure], ...] = (
    NumDocs,
    NumRels,
    NumShown,
    RelsFound,
    LastRel,
    NormLastRel,
    Threshold,
    NormThreshold,
    RecallThreshold,
    WSS100,
    WSS95,
    TarAP,
    NormArea,
    RecallAt,
    LossER,
    TotalCost,
    Reliability,
    REst,
)


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register the CLEF TAR measures."""
    for cls in MEASURES:
        register(cls)


@hookimpl(tryfirst=True)
def resolve_measure(spec: str) -> Measure | None:
    """``recall@P%`` (the evaluator's name; ``recall`` alone is taken by trec_eval's
    ``recall.k``): a spec named ``recall`` whose ``@`` value is a percentage."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        return None
    if parsed.name != "recall" or parsed.at is None:
        return None
    key, value = parsed.at
    if key not in (None, "p") or value.kind != "number" or value.unit != "%":
        return None
    return RecallAt.from_spec(
        MeasureSpec(RecallAt.name, parsed.text, parsed.column, parsed.at, parsed.params)
    )


# ------------------------------------------------------------------ --compat clef, -f clef
if TYPE_CHECKING:
    from rankeval.report import CompatMode, OutputFormat, Row


def render_clef(rows: list[Row], precision: int | None) -> str:
    """The CLEF TAR evaluator's layout: ``topic<TAB>measure<TAB>value``, the aggregate as
    topic ``ALL``, numbers as Python prints them (*precision* ignored), per-topic values that
    are undefined left out; with several runs, each line starts with the run's name."""
    import math

    several = len({row.run for row in rows}) > 1
    lines = []
    for run, qid, m, v, is_int in rows:
        if qid != "all" and math.isnan(v):
            continue  # a topic the measure skips: the CLEF evaluator prints nothing
        text = str(int(v)) if is_int and float(v).is_integer() else repr(float(v))
        row = f"{'ALL' if qid == 'all' else qid}\t{m}\t{text}"
        lines.append(f"{run}\t{row}" if several else row)
    return "\n".join(lines) + ("\n" if lines else "")


def with_clef(measure: Measure) -> Measure | None:
    """*measure* with ``compat=clef`` if it has a ``compat`` parameter (every TAR measure)."""
    import dataclasses

    if not any(f.name == "compat" for f in dataclasses.fields(measure)):
        return None
    return dataclasses.replace(measure, compat="clef")  # type: ignore[call-arg]


@hookimpl
def register_formats(register: Callable[[OutputFormat], None]) -> None:
    """``-f clef``: the CLEF TAR evaluator's output layout."""
    from rankeval.report import OutputFormat

    register(OutputFormat("clef", render_clef, "the CLEF TAR evaluator's layout (tar_eval_2018.py)"))


@hookimpl
def register_compat_modes(register: Callable[[CompatMode], None]) -> None:
    """``--compat clef``: the CLEF TAR evaluator's values, layout and duplicate rule."""
    from rankeval.report import CompatMode

    register(
        CompatMode(
            "clef",
            with_clef,
            format="clef",
            on_duplicate="first",
            description="the CLEF eHealth TAR evaluator (tar_eval_2018.py): its rounding, "
            "aggregates and output layout (TAR measures)",
        )
    )
