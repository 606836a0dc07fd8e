"""Alignment and ranking: (qrels, run) → :class:`RankedLists`, the one view every measure reads.

Data flows one way: read → **align → rank** → measure kernels → aggregate → report.

For one run this module

1. checks the run for duplicate ``(query_id, doc_id)`` pairs (an error naming both lines);
2. resolves nested items (``PARENT/CHILD``, see docs/formats.md, "Nested items"): an id is a
   child only when its prefix before the last separator is itself an item of the same query
   in the qrels or the run;
3. builds, per nesting level, the ranked lists: the run rows of each (sub-)query ordered by
   score descending, ties broken by doc_id descending (trec_eval's rule), each row carrying
   its judged relevance (maximum over assessors), plus the judged documents of each
   (sub-)query sorted by relevance descending (for ideal rankings).

Everything is computed for all queries at once with numpy/pyarrow array operations; there is
no Python loop per query or per line.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from rankeval.errors import InputError, UsageError, clip
from rankeval.segments import segment_blocks, segment_cumsum, segment_offsets, segment_position

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.data import Qrels, Run

__all__ = ["Alignment", "RankedLists", "segment_offsets"]  # segment_offsets: re-exported

T = TypeVar("T")


def _index_type(n: int) -> type[np.signedinteger[Any]]:
    """Smallest index dtype for arrays of *n* rows (int32 saves memory on big runs)."""
    return np.int32 if n < 2**31 - 1 else np.int64


@dataclass(eq=False)
class RankedLists:
    """Ranked run rows and judged documents of every query, as flat segment arrays.

    Rows of the run are grouped by query (one contiguous block per query) and ranked within
    each query. Queries are those of the qrels (at this nesting level); a query of the qrels
    that the run does not retrieve has an empty segment.

    Attributes:
        query_ids: ``(Q,)`` query ids (sorted; ``qid/parent`` for nested sub-queries).
        outer: ``(Q,)`` index of each query's top-level query (identity at level 1).
        outer_ids: top-level query ids that :attr:`outer` indexes.
        starts: ``(Q,)`` index of each query's first row (its rows are contiguous; the
            blocks of different queries may come in any order).
        counts: ``(Q,)`` number of ranked rows of each query.
        query: ``(n,)`` query index of each ranked row.
        judged_row_index: indices of the judged rows (sorted); see also :attr:`rank`,
            :attr:`relevance` (dense, computed on first use), :meth:`relevant_rows`.
        judged_row_relevance: relevance of those rows (max over assessors).
        score: ``(n,)`` run score of each row.
        rows: ``(n,)`` index of each row in ``run.table`` (file order), e.g. for attributes.
        run_doc_ids: doc ids of the run in file order (index with :attr:`rows`).
        judged_offsets: ``(Q+1,)`` segments of the judged-document arrays.
        judged_relevance: ``(m,)`` relevance of each judged document, descending per query.
        judged_doc_ids: ``(m,)`` doc id of each judged document (pyarrow array).
        retrieved: ``(Q,)`` whether the run has any row for the query.
        run: the :class:`~rankeval.data.Run` the view was built from.
        qrels: the :class:`~rankeval.data.Qrels` the view was built from.
        level: nesting level (1 = top-level items).
        parent_ids: ``(Q,)`` the parent item's id of each sub-query (levels > 1).
        judged_items: ``(m,)`` item code (see :class:`Alignment`) of each judged document.
        parent_items: ``(Q,)`` item code of each sub-query's parent (levels > 1).
        alignment: the :class:`Alignment` the view belongs to.
    """

    query_ids: np.ndarray
    outer: np.ndarray
    outer_ids: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    query: np.ndarray
    judged_row_index: np.ndarray
    judged_row_relevance: np.ndarray
    score: np.ndarray
    rows: np.ndarray
    run_doc_ids: pa.Array
    judged_offsets: np.ndarray
    judged_relevance: np.ndarray
    judged_doc_ids: pa.Array
    retrieved: np.ndarray
    run: Run
    qrels: Qrels
    level: int = 1
    parent_ids: np.ndarray | None = None
    judged_items: np.ndarray | None = None
    parent_items: np.ndarray | None = None
    alignment: Alignment | None = field(default=None, repr=False)
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)  # see memo()

    def children(self) -> RankedLists | None:
        """The ranked lists one nesting level down (each item's children ranked within it,
        one sub-query per parent), or ``None`` if no item here has judged children."""
        if self.alignment is None or not self.alignment.nested:
            return None
        kids = self.alignment.view(self.level + 1)
        return kids if kids.num_queries else None

    def row_items(self) -> np.ndarray:
        """``(n,)`` item code of each ranked row (-1: a doc judged nowhere in a flat
        collection); index per-item arrays (size ``alignment.num_items``) with it."""
        if self.alignment is None:
            raise ValueError("this view has no alignment")
        return self.alignment.run_item[self.rows]  # type: ignore[no-any-return]

    # -- memo for kernels ------------------------------------------------------------
    def memo(self, key: Hashable, make: Callable[[], T], *, shared: bool = False) -> T:
        """``make()``, computed once per key and kept for the next call with an equal *key*.

        Measures evaluated on the same ranked lists share work this way: TBG and nTBG the
        reading times, nCS-DCG and CS-DCG the run's value. Key by the family and every
        parameter the value depends on, e.g. ``("csdcg-value", self.k, self.gain)``; a
        value of ``None`` is kept too.

        Args:
            key: a hashable key, unique to what *make* computes (start it with your
                plugin's name: other plugins use the same memo).
            make: computes the value (called at most once per key).
            shared: keep the value for every view of the same qrels and run (all nesting
                levels), for values that depend only on the qrels and run, not on the
                ranked lists of one level (e.g. a per-item array, see :meth:`row_items`).
        """
        cache = self.alignment.cache if shared and self.alignment is not None else self._cache
        if key not in cache:
            cache[key] = make()
        return cache[key]  # type: ignore[no-any-return]

    # -- sizes ---------------------------------------------------------------
    @property
    def num_queries(self) -> int:
        """Number of (sub-)queries."""
        return len(self.query_ids)

    @property
    def doc_ids(self) -> pa.Array:
        """``(n,)`` doc id of each ranked row (pyarrow string array)."""

        def make() -> pa.Array:
            import pyarrow as pa
            import pyarrow.compute as pc

            return pc.take(self.run_doc_ids, pa.array(self.rows))

        return self.memo("doc_ids", make)

    # -- segment helpers for measure kernels ----------------------------------
    def _blocks_in_order(self) -> tuple[np.ndarray, np.ndarray]:
        def make() -> tuple[np.ndarray, np.ndarray]:
            nonempty = np.flatnonzero(self.counts > 0)
            q = nonempty[np.argsort(self.starts[nonempty], kind="stable")]
            return q, self.starts[q]

        return self.memo("blocks", make)

    def sum(self, values: np.ndarray) -> np.ndarray:
        """Per-query sum of a per-row array (``(n,)`` → ``(Q,)``)."""
        out = np.zeros(self.num_queries)
        if len(values):
            q, starts = self._blocks_in_order()
            out[q] = np.add.reduceat(values, starts, dtype=np.float64)
        return out

    def cumsum(self, values: np.ndarray) -> np.ndarray:
        """Within-query inclusive cumulative sum of a per-row array.

        Computed as a global cumulative sum minus the sum before each query's block, so
        for float (non-integer) values the rounding error is relative to the global total.
        """
        return segment_cumsum(self.query, values)

    def judged_rows(self) -> np.ndarray:
        """Indices of the ranked rows that are judged (in row order)."""
        return self.judged_row_index

    def relevant_rows(self, rel: float = 1) -> np.ndarray:
        """Indices of the ranked rows with relevance ≥ *rel* (in row order; cached).

        Measures that only depend on where the relevant documents are ranked work on these
        few rows instead of all retrieved rows.
        """
        return self.memo(
            ("relevant_rows", rel), lambda: self.judged_row_index[self.judged_row_relevance >= rel]
        )

    def relevance_of(self, rows: np.ndarray) -> np.ndarray:
        """Judged relevance of *rows* (NaN for unjudged rows)."""
        pos = np.searchsorted(self.judged_row_index, rows)
        pos_c = np.minimum(pos, max(len(self.judged_row_index) - 1, 0))
        out = np.full(len(rows), np.nan)
        if len(self.judged_row_index):
            hit = self.judged_row_index[pos_c] == rows
            out[hit] = self.judged_row_relevance[pos_c[hit]]
        return out

    def rank_of(self, rows: np.ndarray) -> np.ndarray:
        """0-based rank of each of *rows* within its query."""
        return rows - self.starts[self.query[rows]]  # type: ignore[no-any-return]

    @property
    def rank(self) -> np.ndarray:
        """``(n,)`` 0-based rank of every row within its query (computed on first use)."""

        def make() -> np.ndarray:
            itype = _index_type(len(self.query))
            out: np.ndarray = np.arange(len(self.query), dtype=itype) - self.starts.astype(itype)[self.query]
            return out

        return self.memo("rank", make)

    @property
    def relevance(self) -> np.ndarray:
        """``(n,)`` judged relevance of every row, NaN if unjudged (built on first use;
        kernels that only need judged rows use :meth:`judged_rows` instead)."""

        def make() -> np.ndarray:
            dense = np.full(len(self.query), np.nan)
            dense[self.judged_row_index] = self.judged_row_relevance
            return dense

        return self.memo("relevance", make)

    def nth(self, rows: np.ndarray) -> np.ndarray:
        """0-based position of each of *rows* among the *rows* of the same query.

        *rows* must be in row order (as :meth:`relevant_rows` returns them).
        """
        return segment_position(self.query[rows])

    def query_sum(self, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """``(Q,)`` per-query sum of *weights* over *rows* (count of rows if no weights)."""
        return np.bincount(self.query[rows], weights=weights, minlength=self.num_queries).astype(np.float64)

    def is_relevant(self, rel: float = 1) -> np.ndarray:
        """``(n,)`` bool: the row's judged relevance is at least *rel* (cached)."""
        return self.memo(("is_relevant", rel), lambda: self.relevance >= rel)

    def num_rel(self, rel: float = 1) -> np.ndarray:
        """``(Q,)`` number of judged documents with relevance ≥ *rel* (cached)."""
        return self.memo(
            ("num_rel", rel),
            lambda: np.bincount(
                self.judged_query(), weights=self.judged_relevance >= rel, minlength=self.num_queries
            ),
        )

    def first_rank(self, rows: np.ndarray) -> np.ndarray:
        """``(Q,)`` 0-based rank of the first of *rows* (row indices in row order, or a
        boolean mask over rows) in each query; -1 if the query has none."""
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        out = np.full(self.num_queries, -1, dtype=np.int64)
        q, first = np.unique(self.query[rows], return_index=True)
        out[q] = self.rank_of(rows[first])
        return out

    def judged_rank(self) -> np.ndarray:
        """``(m,)`` 0-based position of each judged document in its query's ideal ranking."""
        return self.memo(
            "judged_rank",
            lambda: np.arange(len(self.judged_relevance)) - self.judged_offsets[self.judged_query()],
        )

    def judged_query(self) -> np.ndarray:
        """``(m,)`` query index of each judged document."""
        return self.memo(
            "judged_query", lambda: np.repeat(np.arange(self.num_queries), np.diff(self.judged_offsets))
        )

    def qrels_query(self) -> np.ndarray:
        """``(r,)`` index of the (sub-)query of this view that each row of ``qrels.table``
        (one per assessor line) judges for, -1 for none (cached).

        At level 1, the query of the line's ``query_id``; at a nested level, the sub-query of
        the line's parent item. Use it to aggregate qrels attributes per query, e.g.
        ``np.bincount(q[q >= 0], weights=values[q >= 0], minlength=data.num_queries)``.
        """
        return self.memo("qrels_query", self._qrels_query)

    def _qrels_query(self) -> np.ndarray:
        a = self.alignment
        if a is None:
            raise ValueError("this view has no alignment")
        if self.level == 1:
            import pyarrow as pa
            import pyarrow.compute as pc

            names = pa.array([str(x) for x in self.query_ids], pa.string())
            lut = contiguous(pc.index_in(a._uq, value_set=names).fill_null(-1))
            code = _np(lut).astype(np.int64)[a._u_q]  # per item: its query here
        else:
            lut = np.full(a.num_items, -1, dtype=np.int64)
            lut[self.parent_items] = np.arange(self.num_queries)
            code = np.where(a._u_parent >= 0, lut[np.maximum(a._u_parent, 0)], -1)
        out: np.ndarray = code[a.qrels_item].astype(np.int64)
        return out


# ---------------------------------------------------------------------------------------
def contiguous(arr: Any) -> Any:
    """One pyarrow Array from a (chunked) array, without a copy when there is one chunk."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


def _np(arr: Any) -> np.ndarray:
    return contiguous(arr).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def _codes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary codes of a (possibly dictionary-typed) string array and the values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = contiguous(arr)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    return _np(arr.indices), _np(arr.dictionary).astype(object)


_FNV_BYTES = 32
"""Bytes of each doc id that the vectorised FNV loop hashes (one numpy pass per byte);
longer ids are told apart by a dictionary code of the whole id, so the cost stays
O(rows * 32 + total bytes) instead of O(rows * longest id)."""


def _doc_key(doc: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A uint64 key per doc id: the number itself for digit ids, else a hash; equal ids get
    equal keys, unequal ids rarely do (callers verify collisions on the strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(doc)
    if n == 0:
        return np.zeros(0, np.uint64)
    try:  # digit ids (MS MARCO style): the number is the key; '07' and '7' collide and
        # collisions are verified on the strings by the caller
        return _np(pc.cast(doc, pa.uint64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    chunks = doc.chunks if isinstance(doc, pa.ChunkedArray) else [doc]
    keys, long_rows, long_ids, base = [], [], [], 0
    for chunk in chunks:
        if pa.types.is_large_string(chunk.type):
            chunk = pc.cast(chunk, pa.string())
        key, long = _fnv(chunk)
        keys.append(key)
        if long.size:
            long_rows.append(long + base)
            long_ids.append(pc.cast(chunk.take(pa.array(long)), pa.large_string()))
        base += len(chunk)
    out = np.concatenate(keys)
    if long_rows:
        # one dictionary over the long ids of every chunk: equal ids, equal codes
        rows = np.concatenate(long_rows)
        codes = _np(pc.dictionary_encode(pa.concat_arrays(long_ids)).indices).astype(np.uint64)
        with np.errstate(over="ignore"):
            out[rows] = (out[rows] ^ (codes + np.uint64(1))) * np.uint64(0x100000001B3)
    return out


def _fnv(doc: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """FNV-1a hash of the first :data:`_FNV_BYTES` bytes of each string of *doc*
    (vectorised over strings, one pass per byte), and the rows whose string is longer."""
    n = len(doc)
    if n == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    buffers = doc.buffers()
    offsets = np.frombuffer(buffers[1], np.int32)[doc.offset : doc.offset + n + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(1, np.uint8)
    size = np.diff(offsets)
    h = np.full(n, 0xCBF29CE484222325, dtype=np.uint64)
    last = max(len(data) - 1, 0)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for j in range(min(int(size.max(initial=0)), _FNV_BYTES)):
            byte = data[np.minimum(offsets[:-1] + j, last)].astype(np.uint64)
            h = np.where(size > j, (h ^ byte) * prime, h)
    return h, np.flatnonzero(size > _FNV_BYTES)


def _contains(arr: Any, sep: str) -> bool:
    """Whether any string of *arr* contains *sep* (a byte scan for one-byte separators)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = sep.encode()
    if len(encoded) != 1:
        return bool(pc.any(pc.match_substring(arr, sep)).as_py())
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        buffers = chunk.buffers()
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(buffers[1], width)[chunk.offset : chunk.offset + len(chunk) + 1]
        if buffers[2] is None:
            continue
        data = np.frombuffer(buffers[2], np.uint8)[offsets[0] : offsets[-1]]
        if (data == encoded[0]).any():
            return True
    return False


def _mix(q: np.ndarray, key: np.ndarray) -> np.ndarray:
    """A uint64 key per (query code, doc key) pair."""
    with np.errstate(over="ignore"):
        # equal pairs give equal values; rare collisions of unequal pairs are verified later
        out = key * np.uint64(0x9E3779B97F4A7C15)
        np.add(out, q, out=out, dtype=np.uint64, casting="unsafe")  # q: non-negative codes
        return out


DUPLICATE_POLICIES = ("error", "first", "max")


def _show(value: object) -> str:
    """An id for a message: its ``repr``, cut to 60 characters (ids can be a megabyte)."""
    return repr(clip(str(value), 60))


def check_duplicates(run: Run, on_duplicate: str = "error") -> Run:
    """Find (query_id, doc_id) pairs that occur more than once in *run*.

    Args:
        run: the run.
        on_duplicate: ``"error"`` (trec_eval's rule: an :class:`InputError` naming both
            lines), ``"first"`` (keep the first line of each pair in file order) or ``"max"``
            (keep the line with the highest score; the first of equal ones).

    Returns:
        *run* itself, or a copy without the dropped duplicate lines.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = run.table
    if table.num_rows < 2:
        return run
    qcode, _ = _codes(table.column("query_id"))
    doc = table.column("doc_id")
    pair = _mix(qcode, _doc_key(doc))
    pair.sort()  # in place: the unsorted keys are recomputed only if a duplicate shows up
    dup = pair[1:][pair[1:] == pair[:-1]]
    del pair
    if dup.size == 0:
        return run
    rows = np.flatnonzero(np.isin(_mix(qcode, _doc_key(doc)), dup))
    sub = pa.table({"q": pa.array(qcode[rows]), "d": pc.take(doc, pa.array(rows)), "r": pa.array(rows)})
    score = _np(table.column("score"))
    seen: dict[tuple[int, str], int] = {}
    drop: list[int] = []
    for q, d, r in zip(
        sub.column("q").to_pylist(), sub.column("d").to_pylist(), sub.column("r").to_pylist(), strict=True
    ):
        if (q, d) not in seen:
            seen[(q, d)] = r
            continue
        first = seen[(q, d)]
        if on_duplicate == "first" or (on_duplicate == "max" and score[r] <= score[first]):
            drop.append(r)
            continue
        if on_duplicate == "max":
            drop.append(first)
            seen[(q, d)] = r
            continue
        qid = table.column("query_id")[r].as_py()
        first_line, _ = run.line_of(first)
        line, text = run.line_of(r)
        hint = "; --on-duplicate first|max keeps one of them"
        if line is None:
            raise InputError(
                f"duplicate document {_show(d)} for query {_show(qid)} (rows {first + 1} and {r + 1}){hint}",
                source=run.name,
            )
        raise InputError(
            f"duplicate document {_show(d)} for query {_show(qid)} (first on line {first_line}); "
            f"trec_eval rejects duplicate docs too{hint}",
            source=run.source,
            line=line,
            text=text,
        )
    keep = np.ones(table.num_rows, dtype=bool)
    keep[drop] = False
    lines = run.lines[keep] if run.lines is not None else (np.flatnonzero(keep) + 1 if run.source else None)
    return type(run)(table.filter(pa.array(keep)), run.name, run.source, lines, run.tie_break)


# ---------------------------------------------------------------------------------------
class Alignment:
    """The qrels and one run, aligned once; :meth:`view` gives the ranked lists per level.

    Args:
        qrels: the judgments.
        run: the run.
        nest_sep: nested-item separator (``None`` disables nesting).
        max_docs: evaluate only the top *max_docs* rows of each query (trec_eval ``-M``).
        on_duplicate: what to do with a (query, doc) pair given twice: ``error`` (default,
            as trec_eval), ``first`` or ``max`` (see :func:`check_duplicates`).
        nested: treat the collection as nested even if these ids show no nesting. The Dask
            engine sets it for the partitions of a nested collection, since a measure such
            as hTBG treats an item without children differently in a nested collection.

    Attributes:
        num_items: number of items: distinct (query, doc) pairs of the qrels (and, in a
            nested collection, of the run), numbered 0.. in (query, doc) order.
        qrels_item: item code of each row of ``qrels.table`` (per assessor line), e.g. to
            aggregate a qrels attribute per item.
        run_item: item code of each row of ``run.table`` (-1: a doc judged nowhere, in a
            flat collection).
        cache: memo for measure kernels, shared by all views of this alignment (key it by
            measure family and parameters).
    """

    def __init__(
        self,
        qrels: Qrels,
        run: Run,
        nest_sep: str | None = "/",
        max_docs: int | None = None,
        on_duplicate: str = "error",
        nested: bool = False,
    ) -> None:
        self.qrels = qrels
        if on_duplicate not in DUPLICATE_POLICIES:
            raise UsageError(
                f"on_duplicate must be one of {', '.join(DUPLICATE_POLICIES)}, not {on_duplicate!r}"
            )
        self.max_docs = max_docs
        self._views: dict[int, RankedLists] = {}
        self.cache: dict[Any, Any] = {}
        self.run = check_duplicates(run, on_duplicate)
        self.sep = nest_sep or "/"
        self._number(nest_sep, nested)

    # -- items --------------------------------------------------------------------------
    def _number(self, sep: str | None, force_nested: bool = False) -> None:
        """Number the items: each distinct (query, doc) pair of the qrels (and, in a nested
        collection, of the run) gets an int code; the judged items carry the maximum
        relevance over assessors; in a nested collection each item is linked to its parent.

        Strings are hashed once per side (query ids against the distinct query ids, doc ids
        against the distinct doc ids); everything after is integer work. In a flat
        collection the run's unjudged docs get no item (code -1), so only the judged doc ids
        are ever held in a hash table.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        qt = self.qrels.table
        q_qid = pc.cast(contiguous(qt.column("query_id")), pa.string())
        q_doc = pc.cast(contiguous(qt.column("doc_id")), pa.string())
        rq = self.run.table.column("query_id")
        rq = contiguous(rq) if pa.types.is_dictionary(rq.type) else pc.dictionary_encode(contiguous(rq))
        r_dict = pc.cast(rq.dictionary, pa.string())
        r_doc = self.run.table.column("doc_id")  # may stay chunked (large runs)
        self._r_doc = r_doc
        self._r_score = _np(self.run.table.column("score")).astype(np.float64, copy=False)
        nested = bool(sep) and (
            force_nested or _contains(q_doc, sep) or _contains(r_doc, sep)  # type: ignore[arg-type]
        )

        uq = pc.unique(pa.concat_arrays([q_qid, r_dict]))
        self._uq = uq
        qq = _np(pc.index_in(q_qid, value_set=uq)).astype(np.int64)
        r_codes = _np(pc.index_in(r_dict, value_set=uq)).astype(np.int32)
        self._r_q = r_codes[_np(rq.indices)]  # query code of each run row
        ud = pc.unique(pa.concat_arrays([q_doc, *_chunks(r_doc)])) if nested else pc.unique(q_doc)
        self._ud = ud
        nd = max(len(ud), 1)
        qkey = qq * nd + _np(pc.index_in(q_doc, value_set=ud))
        r_d = _np(pc.fill_null(pc.index_in(r_doc, value_set=ud), -1)).astype(np.int64)
        rkey = self._r_q.astype(np.int64)  # in place from here: these arrays are run-sized
        rkey *= nd
        rkey += r_d
        rkey[r_d < 0] = -1
        del r_d
        index = _KeyIndex(np.concatenate([qkey, rkey[rkey >= 0]]) if nested else qkey, len(uq) * nd)
        u_key = index.keys
        self.num_items = len(u_key)
        self.qrels_item = index.find(qkey)
        self.run_item = index.find(rkey)
        del qkey, rkey
        self._u_q, self._u_doc = u_key // nd, u_key % nd
        # judged items: maximum relevance over assessors
        rel = np.full(self.num_items, -np.inf)
        np.maximum.at(rel, self.qrels_item, _np(qt.column("relevance")).astype(np.float64))
        self._judged = np.isfinite(rel)
        self._item_rel = rel
        self._j_item = np.flatnonzero(self._judged)

        # items whose judgment says exclude=1 leave the ranking (condensed lists; the hTBG
        # reference drops individuals whose label is null)
        self._excluded: np.ndarray | None = None
        if "exclude" in qt.column_names:
            flag = _np(pc.fill_null(pc.equal(qt.column("exclude"), "1"), False)).astype(bool)
            if flag.any():
                self._excluded = np.zeros(self.num_items, dtype=bool)
                self._excluded[self.qrels_item[flag]] = True
        self.nested = False
        self._depth = np.zeros(self.num_items, dtype=np.int64)
        self._u_parent = np.full(self.num_items, -1, dtype=np.int64)
        if not nested:
            return
        # the parent doc of each distinct doc id: its id before the last separator
        parts = pc.split_pattern(ud, sep, max_splits=1, reverse=True)
        has_sep = _np(pc.greater(pc.list_value_length(parts), 1))
        d_parent = _np(pc.fill_null(pc.index_in(pc.list_element(parts, 0), value_set=ud), -1)).astype(
            np.int64
        )
        d_parent[~has_sep] = -1
        p_doc = d_parent[self._u_doc]
        p_key = np.where(p_doc >= 0, self._u_q * nd + p_doc, -1)
        self._u_parent = index.find(p_key)
        # depth of each item, by pointer jumping over parent links
        cur = self._u_parent.copy()
        while (cur >= 0).any():
            on = cur >= 0
            self._depth[on] += 1
            cur[on] = self._u_parent[cur[on]]
        self.nested = force_nested or bool(self._depth.max() > 0)
        if self._excluded is not None:  # children of an excluded item are excluded too
            for _ in range(int(self._depth.max())):
                has_parent = self._u_parent >= 0
                self._excluded[has_parent] |= self._excluded[self._u_parent[has_parent]]

    def qrels_position(self, items: np.ndarray) -> np.ndarray:
        """Position in the qrels (row of the first judgment) of each of *items* (judged)."""
        return self._first_judgment()[items]  # type: ignore[no-any-return]

    def _first_judgment(self) -> np.ndarray:
        """The first qrels row of each item (the judgments' file order), built on first use
        (only ``tie_break="qrels"`` and hTBG's reference ideal need it)."""
        if "first-judgment" not in self.cache:
            first = np.full(self.num_items, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(first, self.qrels_item, np.arange(len(self.qrels_item)))
            self.cache["first-judgment"] = first
        return self.cache["first-judgment"]  # type: ignore[no-any-return]

    def _qrels_position(self, rows: np.ndarray) -> pa.Array:
        """Tie key of run *rows* for ``tie_break="qrels"``: the position of the row's item in
        the qrels (first judgment); unjudged rows after every judged one, in file order."""
        import pyarrow as pa

        item = self.run_item[rows]
        judged = item >= 0
        judged[judged] = self._judged[item[judged]]
        line = np.where(judged, self.qrels_position(np.where(judged, item, 0)), 0)
        base = int(self._first_judgment()[self._judged].max()) + 1 if self._judged.any() else 0
        return pa.array(np.where(judged, line, base + rows.astype(np.int64)))

    # -- views -----------------------------------------------------------------------
    def view(self, level: int = 1) -> RankedLists:
        """Ranked lists of the items at nesting *level* (1 = top level; 2 = children
        ranked within each parent, one sub-query ``qid/parent`` per parent)."""
        if level not in self._views:
            self._views[level] = self._build(level)
        return self._views[level]

    def _group(self, side: str, level: int) -> tuple[np.ndarray, np.ndarray, Any]:
        """Rows of one side at *level* (judged items, or run rows): (row indices, integer
        group code of each row, a function giving (names, outer query ids) of codes)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        uq = self._uq
        excluded = self._excluded
        if side == "j":
            item = self._j_item
            at_level = self._depth[item] == level - 1
            rows = np.flatnonzero(at_level if excluded is None else at_level & ~excluded[item])
            item = item[rows]
        elif not self.nested:
            n = len(self._r_q)
            rows = np.arange(n, dtype=_index_type(n)) if level == 1 else np.zeros(0, np.int64)
            if excluded is not None:
                rows = rows[~((self.run_item[rows] >= 0) & excluded[self.run_item[rows]])]
            return rows, self._r_q[rows], None
        else:
            at_level = self._depth[self.run_item] == level - 1
            if excluded is not None:
                at_level &= ~excluded[self.run_item]
            rows = np.flatnonzero(at_level)
            item = self.run_item[rows]
        if level == 1:
            return rows, self._u_q[item], lambda c: (uq.take(pa.array(c)), uq.take(pa.array(c)))

        def by_parent(c: np.ndarray) -> tuple[pa.Array, pa.Array]:
            q = uq.take(pa.array(self._u_q[c]))
            parent = self._ud.take(pa.array(self._u_doc[c]))
            return pc.binary_join_element_wise(q, parent, "/"), q

        return rows, self._u_parent[item], by_parent

    def _build(self, level: int) -> RankedLists:
        import pyarrow as pa
        import pyarrow.compute as pc

        # judged side: its groups (queries, or parents for nested levels) are the queries
        j_rows, j_codes, j_names = self._group("j", level)
        used = _present(j_codes)
        if len(used):
            names, outer_names = j_names(used)
            order = pa.array(_np(pc.sort_indices(names)))
            query_ids_pa, outer_names, used = names.take(order), outer_names.take(order), used[_np(order)]
        else:
            query_ids_pa = outer_names = pa.array([], pa.string())
        nq = len(query_ids_pa)
        query_ids = _np(query_ids_pa).astype(object)
        lut = np.full(len(self._uq) if level == 1 else self.num_items, -1, dtype=np.int64)
        lut[used] = np.arange(nq)
        jq = lut[j_codes]
        j_items = self._j_item[j_rows]
        j_rel = self._item_rel[j_items]
        # judged docs sorted by query, then relevance descending
        jorder = np.lexsort((-j_rel, jq))
        judged_rel = j_rel[jorder]
        judged_q = jq[jorder]
        judged_items = j_items[jorder]
        judged_doc = self._ud.take(pa.array(self._u_doc[judged_items]))
        judged_offsets = segment_offsets(judged_q, nq)
        # outer (top-level) query of each (sub-)query
        parent_ids = None
        if level == 1:
            outer = np.arange(nq)
            outer_ids = query_ids
        else:
            distinct = pc.unique(outer_names)
            distinct = distinct.take(pc.sort_indices(distinct))
            outer = _np(pc.index_in(outer_names, value_set=distinct)).astype(np.int64)
            outer_ids = _np(distinct).astype(object)
            # the parent item of each sub-query
            parent_ids = (
                _np(pc.take(self._ud, pa.array(self._u_doc[used]))).astype(object)
                if nq
                else np.zeros(0, object)
            )

        # run side: rows whose group has judged items
        r_rows, r_codes, r_names = self._group("r", level)
        if r_names is None:  # level 1, flat: the codes are query codes, as on the judged side
            rq = lut.astype(_index_type(len(r_codes)))[r_codes]
        else:
            r_used = _present(r_codes)
            r_lut = np.full(int(r_used.max()) + 1 if len(r_used) else 0, -1, dtype=np.int64)
            if len(r_used):
                found = pc.index_in(r_names(r_used)[0], value_set=query_ids_pa)
                r_lut[r_used] = _np(pc.fill_null(found, -1))
            rq = r_lut[r_codes]
        keep = rq >= 0
        if not keep.all():
            r_rows = r_rows[keep]
            rq = rq[keep]
        score = self._r_score[r_rows] if len(r_rows) != len(self._r_score) else self._r_score
        # judged rows only (sparse): their positions follow every reordering below
        r_item = self.run_item[r_rows] if len(r_rows) != len(self.run_item) else self.run_item
        jrows = np.flatnonzero(r_item >= 0)
        jrows = jrows[self._judged[r_item[jrows]]]
        jrel = self._item_rel[r_item[jrows]]
        del r_item

        # rank: query ascending, score descending, doc_id descending
        order = _rank_order(rq, score)
        if order is not None:
            rq, score, r_rows = rq[order], score[order], r_rows[order]
            new_pos = np.empty(len(order), dtype=_index_type(len(order)))
            new_pos[order] = np.arange(len(order), dtype=new_pos.dtype)
            jrows = new_pos[jrows]
            del new_pos
        # each query's rows are now one contiguous block (blocks in any query order)
        tie = None
        if self.run.tie_break == "docno":
            tie = _tie_order(rq, score, r_rows, lambda r: pc.take(self._r_doc, pa.array(r)), "descending")
        elif self.run.tie_break == "qrels":
            tie = _tie_order(rq, score, r_rows, self._qrels_position, "ascending")
        if tie is not None:
            pos, perm = tie  # equal scores within a query: only rows (and judged rows) move
            r_rows[pos] = r_rows[pos[perm]]
            k = np.searchsorted(pos, jrows)
            k_c = np.minimum(k, len(pos) - 1)
            moved = pos[k_c] == jrows
            jrows[moved] = pos[np.argsort(perm)[k_c[moved]]]
        jsort = np.argsort(jrows, kind="stable")
        jrows, jrel = jrows[jsort], jrel[jsort]
        starts, counts = segment_blocks(rq, nq)
        retrieved = counts > 0
        if self.max_docs is not None and (counts > self.max_docs).any():
            itype = _index_type(len(rq))
            top = (np.arange(len(rq), dtype=itype) - starts.astype(itype)[rq]) < self.max_docs
            new_pos = np.cumsum(top) - 1
            keep_j = top[jrows]
            jrows, jrel = new_pos[jrows[keep_j]], jrel[keep_j]
            rq, score, r_rows = rq[top], score[top], r_rows[top]
            starts, counts = segment_blocks(rq, nq)
        judged_rows, judged_row_relevance = jrows.astype(np.int64), jrel

        return RankedLists(
            query_ids=query_ids,
            outer=outer,
            outer_ids=np.asarray(outer_ids, dtype=object),
            starts=starts,
            counts=counts,
            query=rq,
            judged_row_index=judged_rows,
            judged_row_relevance=judged_row_relevance,
            score=score,
            rows=r_rows,
            run_doc_ids=self._r_doc,
            judged_offsets=judged_offsets,
            judged_relevance=judged_rel,
            judged_doc_ids=judged_doc,
            retrieved=retrieved,
            run=self.run,
            qrels=self.qrels,
            level=level,
            parent_ids=parent_ids,
            judged_items=judged_items,
            parent_items=used if level > 1 else None,
            alignment=self,
        )


class _KeyIndex:
    """The distinct non-negative int64 *keys* (sorted) and the code of any key among them.

    Keys are ``query * nd + doc``: when their range is small compared with their number
    (the usual case: few queries), a direct table maps key to code; otherwise a sort.
    (pyarrow's hash tables are slow on tens of millions of distinct integers.)
    """

    def __init__(self, keys: np.ndarray, span: int) -> None:
        self._dense = span <= 4 * len(keys) + 1024
        if self._dense:
            seen = np.zeros(span, dtype=bool)
            seen[keys] = True
            self.keys = np.flatnonzero(seen)
            del seen
            self._table = np.full(span, -1, dtype=_index_type(len(self.keys)))
            self._table[self.keys] = np.arange(len(self.keys))
        else:
            self.keys = np.unique(keys)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Code of each of *keys* (-1 where absent; negative keys are absent)."""
        ok = keys >= 0
        if self._dense:
            out = self._table[np.where(ok, keys, 0)]
        else:
            out = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
            if len(self.keys):
                ok &= self.keys[out] == keys
            out = out.astype(_index_type(len(self.keys)))
        out[~ok] = -1
        return out


def _chunks(arr: Any) -> list[Any]:
    """The chunks of a (chunked) pyarrow array, as plain string arrays."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return [pc.cast(c, pa.string()) for c in parts]


def _present(codes: np.ndarray) -> np.ndarray:
    """The distinct values of non-negative integer *codes*, ascending (no sort)."""
    if len(codes) == 0:
        return np.zeros(0, np.int64)
    seen = np.zeros(int(codes.max()) + 1, dtype=bool)
    seen[codes] = True
    return np.flatnonzero(seen)


def _rank_order(rq: np.ndarray, score: np.ndarray) -> np.ndarray | None:
    """Permutation ordering rows by query, then score descending; ``None`` if already so.

    Runs are usually written query by query, each sorted by score: then only whole query
    blocks move (no sort of the rows).
    """
    n = len(rq)
    if n < 2:
        return None
    same = rq[1:] == rq[:-1]
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
    block_q = rq[starts]
    in_order = bool(np.all(~same | (score[1:] <= score[:-1])))
    if in_order and len(np.unique(block_q)) == len(block_q):
        return None  # blocks in another query order: fine, RankedLists allows that
    by_score = np.argsort(-score, kind="stable")
    return by_score[np.argsort(rq[by_score], kind="stable")]


def _tie_order(
    rq: np.ndarray, score: np.ndarray, rows: np.ndarray, key: Callable[[np.ndarray], Any], direction: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows in runs of equal scores within a query, and the permutation of them that puts
    each run in *direction* order of ``key(run rows)`` (e.g. doc_id descending, trec_eval's
    tie rule); ``None`` without ties."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(rq) < 2:
        return None
    tie = np.flatnonzero((score[1:] == score[:-1]) & (rq[1:] == rq[:-1]))
    if tie.size == 0:
        return None
    pos = np.union1d(tie, tie + 1)
    tied_with_prev = np.isin(pos - 1, tie)
    label = np.cumsum(~tied_with_prev)
    sub = pa.table({"label": pa.array(label), "key": key(rows[pos])})
    perm = _np(pc.sort_indices(sub, sort_keys=[("label", "ascending"), ("key", direction)]))
    return pos, perm
