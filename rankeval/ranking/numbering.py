"""Item numbering: each distinct (query, doc) pair of a qrels and a run gets an int code.

:func:`number` hashes the strings once per side (query ids against the distinct query ids,
doc ids against the distinct doc ids) and returns a :class:`Numbering`: integer arrays over
the items, the qrels rows and the run rows. Everything after it (ranking, the measures) is
integer work. In a nested collection (see docs/formats.md, "Nested items") each item is
linked to its parent item.

May import: :mod:`rankeval.ranking.arrays` (and, for annotations only, :mod:`rankeval.io.data`).
:mod:`rankeval.ranking.alignment` uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.ranking.arrays import contiguous, index_type, to_numpy

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.io.data import Qrels, Run

__all__ = ["Numbering", "number"]


@dataclass(frozen=True, eq=False)
class Numbering:
    """The items of a qrels and a run, numbered 0.. in (query, doc) order.

    Query codes index :attr:`query_ids`, doc codes :attr:`doc_ids`; item codes index the
    per-item arrays (``item_*``, :attr:`judged`, :attr:`depth`, :attr:`excluded`).

    Attributes:
        query_ids: distinct query ids of both sides (pyarrow strings), by query code.
        doc_ids: distinct doc ids (pyarrow strings), by doc code: those of the qrels, and
            in a nested collection those of the run too.
        run_doc: the run's doc ids in file order (may stay chunked: large runs).
        run_score: ``(n,)`` float64 score of each run row.
        run_query: ``(n,)`` int32 query code of each run row.
        qrels_item: item code of each row of ``qrels.table`` (per assessor line).
        run_item: item code of each run row (-1: a doc judged nowhere, in a flat collection).
        item_query: query code of each item.
        item_doc: doc code of each item.
        item_relevance: maximum relevance over assessors of each item (-inf: unjudged).
        judged: whether each item is judged.
        judged_items: the judged items' codes, ascending.
        excluded: whether each item leaves the ranking (a judgment says ``exclude=1``, or
            its parent is excluded); ``None`` if no item does.
        depth: nesting depth of each item (0: top level).
        item_parent: item code of each item's parent (-1: none).
        nested: whether the collection is nested.
    """

    query_ids: pa.Array
    doc_ids: pa.Array
    run_doc: pa.Array | pa.ChunkedArray
    run_score: np.ndarray
    run_query: np.ndarray
    qrels_item: np.ndarray
    run_item: np.ndarray
    item_query: np.ndarray
    item_doc: np.ndarray
    item_relevance: np.ndarray
    judged: np.ndarray
    judged_items: np.ndarray
    excluded: np.ndarray | None
    depth: np.ndarray
    item_parent: np.ndarray
    nested: bool

    @property
    def num_items(self) -> int:
        """Number of items."""
        return len(self.item_query)

    @cached_property
    def first_judgment(self) -> np.ndarray:
        """The first row of ``qrels.table`` of each item (the judgments' file order; the int64
        maximum for an unjudged item), built on first use (only ``tie_break="qrels"`` and
        hTBG's reference ideal need it)."""
        first = np.full(self.num_items, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, self.qrels_item, np.arange(len(self.qrels_item)))
        return first


def number(qrels: Qrels, run: Run, sep: str | None, force_nested: bool = False) -> Numbering:
    """Number the items: each distinct (query, doc) pair of the qrels (and, in a nested
    collection, of the run) gets an int code (see :class:`Numbering`). In a flat collection
    the run's unjudged docs get no item (code -1): only judged doc ids are ever hashed.

    Args:
        qrels: the judgments.
        run: the run (without duplicate pairs).
        sep: nested-item separator (``None`` disables nesting).
        force_nested: treat the collection as nested even if these ids show no nesting.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    qt = qrels.table
    q_qid = pc.cast(contiguous(qt.column("query_id")), pa.string())
    q_doc = pc.cast(contiguous(qt.column("doc_id")), pa.string())
    r_doc = run.table.column("doc_id")  # may stay chunked (large runs)
    r_score = to_numpy(run.table.column("score")).astype(np.float64, copy=False)
    nested = bool(sep) and (
        force_nested or _contains(q_doc, sep) or _contains(r_doc, sep)  # type: ignore[arg-type]
    )
    uq, qq, r_q = _query_codes(q_qid, run.table.column("query_id"))
    ud, q_d, r_d = _doc_codes(q_doc, r_doc, nested)
    nd = max(len(ud), 1)
    qkey = qq * nd + q_d
    del q_d
    index, qrels_item, run_item = _item_index(qkey, r_q, r_d, nd, nested, len(uq) * nd)
    del qkey
    u_query, u_doc = index.keys // nd, index.keys % nd
    num_items = len(index.keys)
    # judged items: maximum relevance over assessors
    rel = np.full(num_items, -np.inf)
    np.maximum.at(rel, qrels_item, to_numpy(qt.column("relevance")).astype(np.float64))
    judged = np.isfinite(rel)
    excluded = _excluded_items(qt, qrels_item, num_items)
    depth = np.zeros(num_items, dtype=np.int64)
    u_parent = np.full(num_items, -1, dtype=np.int64)
    if nested:
        u_parent = _item_parents(ud, sep or "/", u_query, u_doc, nd, index)
        _add_depths(u_parent, depth, excluded)
        nested = force_nested or bool(depth.max() > 0)
    return Numbering(
        query_ids=uq,
        doc_ids=ud,
        run_doc=r_doc,
        run_score=r_score,
        run_query=r_q,
        qrels_item=qrels_item,
        run_item=run_item,
        item_query=u_query,
        item_doc=u_doc,
        item_relevance=rel,
        judged=judged,
        judged_items=np.flatnonzero(judged),
        excluded=excluded,
        depth=depth,
        item_parent=u_parent,
        nested=nested,
    )


def _query_codes(q_qid: pa.Array, run_qid: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The distinct query ids of both sides, the query code (int64) of each qrels row and
    the query code (int32) of each run row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rq = contiguous(run_qid)
    rq = rq if pa.types.is_dictionary(rq.type) else pc.dictionary_encode(rq)
    r_dict = pc.cast(rq.dictionary, pa.string())
    uq = pc.unique(pa.concat_arrays([q_qid, r_dict]))
    qq = to_numpy(pc.index_in(q_qid, value_set=uq)).astype(np.int64)
    r_codes = to_numpy(pc.index_in(r_dict, value_set=uq)).astype(np.int32)
    return uq, qq, r_codes[to_numpy(rq.indices)]


def _doc_codes(q_doc: pa.Array, r_doc: Any, nested: bool) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The distinct doc ids (in order of first appearance: the qrels', then, in a nested
    collection, the run's), the doc code (int64) of each qrels row and of each run row (-1:
    a doc the qrels do not judge, in a flat collection). One hash table over both sides (over
    one, when the run's doc ids are the qrels', in the same order: a converted collection)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if nested:
        r_chunks = _chunks(r_doc)
        if sum(map(len, r_chunks)) == len(q_doc) and pa.chunked_array(r_chunks, pa.string()).equals(
            pa.chunked_array([q_doc])
        ):  # the run lists the judged items, in their order
            encoded = pc.dictionary_encode(q_doc, null_encoding="encode")  # as below: same codes
            codes = to_numpy(encoded.indices).astype(np.int64)
            return encoded.dictionary, codes, codes.copy()
        encoded = pc.dictionary_encode(pa.concat_arrays([q_doc, *r_chunks]), null_encoding="encode")
        codes = to_numpy(encoded.indices).astype(np.int64)
        return encoded.dictionary, codes[: len(q_doc)], codes[len(q_doc) :]
    encoded = pc.dictionary_encode(q_doc, null_encoding="encode")  # a null id: a value, as in pc.unique
    r_d = to_numpy(pc.fill_null(pc.index_in(r_doc, value_set=encoded.dictionary), -1)).astype(np.int64)
    return encoded.dictionary, to_numpy(encoded.indices).astype(np.int64), r_d


def _item_index(
    qkey: np.ndarray, r_q: np.ndarray, r_d: np.ndarray, nd: int, nested: bool, span: int
) -> tuple[_KeyIndex, np.ndarray, np.ndarray]:
    """The items' key index (keys ``query * nd + doc``) and the item code of each qrels row
    (keys *qkey*) and of each run row (query codes *r_q*, doc codes *r_d*)."""
    rkey = r_q.astype(np.int64)  # in place from here: these arrays are run-sized
    rkey *= nd
    rkey += r_d
    rkey[r_d < 0] = -1
    index = _KeyIndex(np.concatenate([qkey, rkey[rkey >= 0]]) if nested else qkey, span)
    return index, index.find(qkey), index.find(rkey)


def _excluded_items(qt: pa.Table, qrels_item: np.ndarray, num_items: int) -> np.ndarray | None:
    """Items whose judgment says exclude=1: they leave the ranking (condensed lists; the
    hTBG reference drops individuals whose label is null). ``None`` if there are none."""
    import pyarrow.compute as pc

    if "exclude" not in qt.column_names:
        return None
    flag = to_numpy(pc.fill_null(pc.equal(qt.column("exclude"), "1"), False)).astype(bool)
    if not flag.any():
        return None
    excluded = np.zeros(num_items, dtype=bool)
    excluded[qrels_item[flag]] = True
    return excluded


def _item_parents(
    ud: pa.Array, sep: str, u_query: np.ndarray, u_doc: np.ndarray, nd: int, index: _KeyIndex
) -> np.ndarray:
    """The parent item of each item (-1: none): the item of the same query whose doc id is
    the item's doc id before the last separator."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = pc.split_pattern(ud, sep, max_splits=1, reverse=True)
    has_sep = to_numpy(pc.fill_null(pc.greater(pc.list_value_length(parts), 1), False))
    d_parent = np.full(len(ud), -1, dtype=np.int64)
    if has_sep.any():
        # the distinct parent ids (few) looked up among the doc ids: a small hash table
        # (the first element of every list, then filtered: several times faster than the
        # other way round)
        parents = pc.dictionary_encode(pc.list_element(parts, 0).filter(pa.array(has_sep)))
        found = to_numpy(pc.fill_null(pc.index_in(ud, value_set=parents.dictionary), -1)).astype(np.int64)
        at = np.full(len(parents.dictionary), -1, dtype=np.int64)
        hit = np.flatnonzero(found >= 0)
        at[found[hit]] = hit
        d_parent[has_sep] = at[to_numpy(parents.indices)]
    del parts
    p_doc = d_parent[u_doc]
    p_key = np.where(p_doc >= 0, u_query * nd + p_doc, -1)
    return index.find(p_key)


def _add_depths(u_parent: np.ndarray, depth: np.ndarray, excluded: np.ndarray | None) -> None:
    """Add each item's depth to *depth*, by pointer jumping over parent links; mark the
    children of an excluded item excluded too (both in place)."""
    cur = u_parent.copy()
    while (cur >= 0).any():
        on = cur >= 0
        depth[on] += 1
        cur[on] = u_parent[cur[on]]
    if excluded is not None:
        for _ in range(int(depth.max())):
            has_parent = u_parent >= 0
            excluded[has_parent] |= excluded[u_parent[has_parent]]


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
            self._table = np.full(span, -1, dtype=index_type(len(self.keys)))
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
            out = out.astype(index_type(len(self.keys)))
        out[~ok] = -1
        return out


def _chunks(arr: Any) -> list[Any]:
    """The chunks of a (chunked) pyarrow array, as plain string arrays."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return [pc.cast(c, pa.string()) for c in parts]


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
