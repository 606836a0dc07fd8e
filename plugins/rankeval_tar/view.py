"""The screening view: a run as the CLEF evaluator reads it (see ``docs/tar.md``).

:class:`Screening` holds, per topic, the run's lines in file order with their relevance,
the threshold flags of column 2, and the counts every TAR measure starts from (N, R, n, ...);
:func:`screening` builds it once per :class:`~rankeval.RankedLists`. Column 2 is read here:
a bad code is an :class:`~rankeval.errors.InputError` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rankeval.errors import InputError
from rankeval.segments import segment_position

if TYPE_CHECKING:
    from rankeval import RankedLists, Run

__all__ = ["Screening", "check_one_style", "screening"]

# column-2 codes
_NONE, _ZERO, _FLAG, _SHOWN, _NOT_SHOWN, _BAD = 0, 1, 2, 3, 4, -1
_CODES = {"Q0": _NONE, "0": _ZERO, "1": _FLAG, "AF": _SHOWN, "NF": _SHOWN, "NS": _NOT_SHOWN}
_EXPECTED = "expected 1 (threshold) or 0 (CLEF TAR 2018-2019), AF, NF or NS (CLEF TAR 2017), or Q0"


@dataclass
class Screening:
    """A run as the CLEF evaluator reads it: per topic, its lines in file order.

    Line arrays (``(m,)``, grouped by topic, file order within a topic) hold the lines kept
    (documents labelled 3 or more dropped); topic arrays are ``(Q,)``, indexed like the
    topics of the :class:`~rankeval.ranking.ranked_lists.RankedLists`.

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
        style_lines: ``(Q, 2)``: the file line of the topic's first CLEF TAR 2018-2019 flag
            (0/1) and of its first 2017 code (AF/NF/NS); 0 if none. A run read in blocks
            mixes the two only across blocks: :func:`check_one_style` then sees it.
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
    style_lines: np.ndarray

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
    def relevant_start(self) -> np.ndarray:
        """``(Q,)`` index, among the relevant lines (in line order), of each topic's first one."""
        return self._rel_start

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
    style_lines = _style_lines(data.run, q, row, codes, nq)
    with np.errstate(invalid="ignore"):
        keep = ~(label >= 3)
    q, row, label, codes = q[keep], row[keep], label[keep], codes[keep]
    n = np.bincount(q, minlength=nq)
    pos = segment_position(q) + 1
    with np.errstate(invalid="ignore"):
        relevant = (label > 0) & (label < 3)
    jrel, jq = data.judged.relevance, data.judged.query
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
        style_lines=style_lines,
    )


def _style_lines(run: Run, q: np.ndarray, row: np.ndarray, codes: np.ndarray, nq: int) -> np.ndarray:
    """:attr:`Screening.style_lines` from the lines (grouped by topic, file order)."""
    lines = run.lines if run.lines is not None and len(run.lines) else None
    out = np.zeros((nq, 2), dtype=np.int64)
    for k, style in enumerate(((_ZERO, _FLAG), (_SHOWN, _NOT_SHOWN))):
        hit = np.isin(codes, style)
        tq, trow = q[hit], row[hit]
        if len(tq):
            head = np.concatenate(([True], tq[1:] != tq[:-1]))  # each topic's first such line
            out[tq[head], k] = lines[trow[head]] if lines is not None else trow[head] + 1
    return out


def check_one_style(new_lines: np.ndarray, old_lines: np.ndarray, source: str) -> None:
    """An :class:`~rankeval.errors.InputError` if the topics of a run, together, have both
    2018-2019 flags and 2017 codes (per topic: the file line of its first of each; 0 if
    none), naming the first line of the style that comes later in the file."""
    new, old = new_lines[new_lines > 0], old_lines[old_lines > 0]
    if len(new) and len(old):
        raise InputError(
            "column 2 mixes CLEF TAR 2018-2019 threshold flags (0/1) with 2017 interaction codes "
            f"(AF/NF/NS): the first {'2017 code' if old.min() > new.min() else '0/1 flag'} is here",
            source=source,
            line=int(max(new.min(), old.min())),
        )
