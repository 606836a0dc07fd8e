"""Alignment and ranking: (qrels, run) → :class:`~rankeval.ranking.ranked_lists.RankedLists` per level.

:class:`Alignment` checks the run for duplicates (:mod:`rankeval.ranking.duplicates`), numbers the
items once (:mod:`rankeval.ranking.numbering`) and builds, per nesting level, the ranked lists: the
run rows of each (sub-)query ordered by score descending, ties broken by doc_id descending
(trec_eval's rule), each row carrying its judged relevance, plus the judged documents of
each (sub-)query sorted by relevance descending (for ideal rankings).

May import: :mod:`rankeval.ranking.arrays`, :mod:`rankeval.ranking.duplicates`, :mod:`rankeval.errors`,
:mod:`rankeval.ranking.numbering`, :mod:`rankeval.ranking.ranked_lists`, :mod:`rankeval.segments` (and,
for annotations only, :mod:`rankeval.io.data`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.errors import UsageError
from rankeval.options import TIE_RULES, check_choice
from rankeval.ranking.arrays import index_type, to_numpy
from rankeval.ranking.duplicates import DUPLICATE_POLICIES, check_duplicates
from rankeval.ranking.numbering import Numbering, number
from rankeval.ranking.ranked_lists import Judged, Nesting, RankedLists
from rankeval.segments import segment_blocks, segment_offsets

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.io.data import Qrels, Run

__all__ = ["Alignment"]


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
        judged_only: drop from each ranking the rows the qrels do not judge, after the
            *max_docs* cut (trec_eval ``-J`` with ``-M``: a query keeps the judged rows of its
            top *max_docs*); the query still counts as retrieved.
        ties: the order of rows with equal scores within a query
            (:data:`rankeval.options.TIE_RULES`): ``"trec_eval"``: the run's own rule (doc id
            descending; an hTBG JSON run: qrels order); ``"given"`` (and ``"expected"``, whose
            kernels average over the orders of each tied group): the run's line order;
            ``"best"`` / ``"worst"``: judged items of higher / lower grade first (unjudged
            items count as lower than any grade).

    Attributes:
        numbering: the items, numbered (see :class:`~rankeval.ranking.numbering.Numbering`).
        cache: memo shared by all views of this alignment (``memo(shared=True)``).
    """

    def __init__(
        self,
        qrels: Qrels,
        run: Run,
        nest_sep: str | None = "/",
        max_docs: int | None = None,
        on_duplicate: str = "error",
        nested: bool = False,
        judged_only: bool = False,
        ties: str = "trec_eval",
    ) -> None:
        self.qrels, self.ties = qrels, ties
        check_choice("tie rule", ties, TIE_RULES)
        if on_duplicate not in DUPLICATE_POLICIES:
            raise UsageError(
                f"on_duplicate must be one of {', '.join(DUPLICATE_POLICIES)}, not {on_duplicate!r}"
            )
        self.sep = nest_sep or "/"
        self.run, self.numbering = _numbered(qrels, run, nest_sep, nested, on_duplicate)
        # the views are built by _Levels, which they reference (for children()); it keeps
        # them weakly, and the alignment keeps them: no reference cycle
        self._levels = _Levels(qrels, self.run, self.numbering, self.sep, max_docs, judged_only, ties)
        self._views: dict[tuple[int, bool], RankedLists] = {}
        self.cache = self._levels.cache

    @property
    def nested(self) -> bool:
        """Whether the collection is nested (see docs/formats.md, "Nested items")."""
        return self.numbering.nested

    def attribute_levels(self, key: str) -> set[int]:
        """The nesting levels (1 = top level) of the items that have attribute *key*, on
        their qrels lines or, for the run's items, in a ``--docinfo`` side file (cached)."""
        if ("attribute-levels", key) not in self.cache:
            import pyarrow.compute as pc

            nb = self.numbering
            levels: set[int] = set()
            if key in self.qrels.table.column_names:
                given = self.qrels.table.column(key).is_valid().to_numpy(zero_copy_only=False)
                levels.update((np.unique(nb.depth[nb.qrels_item[given]]) + 1).tolist())
            sides = [info for _, info in self.qrels.docinfo if key in info.column_names]
            if sides and len(nb.run_item):
                known = nb.run_item >= 0
                doc = self.run.table.column("doc_id")
                for info in sides:
                    ids = info.filter(info.column(key).is_valid()).column("doc_id")
                    hit = pc.is_in(doc, value_set=ids.combine_chunks()).to_numpy(zero_copy_only=False)
                    levels.update((np.unique(nb.depth[nb.run_item[hit & known]]) + 1).tolist())
            self.cache[("attribute-levels", key)] = levels
        return self.cache[("attribute-levels", key)]  # type: ignore[no-any-return]

    def view(self, level: int = 1, every_parent: bool = False) -> RankedLists:
        """Ranked lists of the items at nesting *level* (1 = top level; 2 = children
        ranked within each parent, one sub-query ``qid/parent`` per parent with judged
        children; with *every_parent*, also one per parent whose children only the run has,
        for measures that read the unjudged children too, such as TBG's reading times)."""
        key = (level, every_parent and level > 1)
        if key not in self._views:
            self._views[key] = self._levels.view(*key)
        return self._views[key]


class _Levels:
    """Builds the views of one alignment, level by level; each view it builds calls
    :meth:`view` for the level below (:meth:`RankedLists.children`). It keeps the views it
    built only weakly (their owner keeps them), so that views and builder form no cycle."""

    def __init__(
        self,
        qrels: Qrels,
        run: Run,
        numbering: Numbering,
        sep: str,
        max_docs: int | None,
        judged_only: bool,
        ties: str,
    ) -> None:
        self.qrels, self.run, self.numbering, self.sep = qrels, run, numbering, sep
        self.max_docs, self.judged_only, self.ties = max_docs, judged_only, ties
        self.cache: dict[Any, Any] = {}
        self._views: weakref.WeakValueDictionary[tuple[int, bool], RankedLists] = weakref.WeakValueDictionary()

    @property
    def nested(self) -> bool:
        return self.numbering.nested

    @property
    def run_item(self) -> np.ndarray:
        return self.numbering.run_item

    @property
    def num_items(self) -> int:
        return self.numbering.num_items

    def view(self, level: int, every_parent: bool) -> RankedLists:
        """The view of *level* (the one built before, while someone holds it)."""
        key = (level, every_parent and level > 1)
        found = self._views.get(key)
        if found is None:
            found = self._views[key] = self._build(*key)
        return found

    def _qrels_position(self, rows: np.ndarray) -> pa.Array:
        """Tie key of run *rows* for ``tie_break="qrels"``: the position of the row's item in
        the qrels (first judgment); unjudged rows after every judged one, in file order."""
        import pyarrow as pa

        first = self.numbering.first_judgment
        judged_item = self.numbering.judged
        item = self.run_item[rows]
        judged = item >= 0
        judged[judged] = judged_item[item[judged]]
        line = np.where(judged, first[np.where(judged, item, 0)], 0)
        base = int(first[judged_item].max()) + 1 if judged_item.any() else 0
        return pa.array(np.where(judged, line, base + rows.astype(np.int64)))

    def _group(self, side: str, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of one side at *level* (judged items, or run rows): (row indices, integer
        group code of each row: its query code at level 1, its parent item below)."""
        nb = self.numbering
        excluded = nb.excluded
        if side == "j":
            item = nb.judged_items
            at_level = nb.depth[item] == level - 1
            rows = np.flatnonzero(at_level if excluded is None else at_level & ~excluded[item])
            item = item[rows]
        elif not self.nested:
            n = len(nb.run_query)
            rows = np.arange(n, dtype=index_type(n)) if level == 1 else np.zeros(0, np.int64)
            if excluded is not None:
                rows = rows[~((self.run_item[rows] >= 0) & excluded[self.run_item[rows]])]
            return rows, nb.run_query[rows]
        else:
            at_level = nb.depth[self.run_item] == level - 1
            if excluded is not None:
                at_level &= ~excluded[self.run_item]
            rows = np.flatnonzero(at_level)
            item = self.run_item[rows]
        return rows, (nb.item_query if level == 1 else nb.item_parent)[item]

    def _group_keys(self, level: int, codes: np.ndarray) -> tuple[pa.Array, pa.Array]:
        """The (top-level query id, parent item id) of group *codes* at *level* (the parent
        ids are the query ids at level 1): a sub-query is keyed by both, never by one joined
        string, which two pairs can share (``q`` + ``a/b`` and ``q/a`` + ``b``)."""
        import pyarrow as pa

        nb = self.numbering
        if level == 1:
            ids = nb.query_ids.take(pa.array(codes))
            return ids, ids
        queries = nb.query_ids.take(pa.array(nb.item_query[codes]))
        return queries, nb.doc_ids.take(pa.array(nb.item_doc[codes]))

    def _build(self, level: int, every_parent: bool = False) -> RankedLists:
        """The ranked lists of *level*: the judged side, then the run rows ranked."""
        judged = self._judged_side(level, every_parent)
        nq = len(judged.query_ids)
        query_ids = to_numpy(judged.query_ids).astype(object)
        outer, outer_ids, parent_ids = self._outer_queries(level, judged, query_ids)
        ranked = self._run_rows(level, judged)
        self._rank(ranked)
        # each query's rows are now one contiguous block (blocks in any query order)
        starts, counts = segment_blocks(ranked.query, nq)
        retrieved = counts > 0
        if self.max_docs is not None and (counts > self.max_docs).any():
            _cut(ranked, starts, self.max_docs)
            starts, counts = segment_blocks(ranked.query, nq)
        if self.judged_only:
            # after the cut, as trec_eval -J -M: a query keeps the judged ones of its top M
            judged_rows = np.zeros(len(ranked.query), dtype=bool)
            judged_rows[ranked.judged[ranked.judged_relevance >= 0]] = True
            _keep(ranked, judged_rows)
            starts, counts = segment_blocks(ranked.query, nq)
        nesting = Nesting(
            level, outer, np.asarray(outer_ids, dtype=object), parent_ids, judged.groups if level > 1 else None
        )
        return RankedLists(
            query_ids=query_ids,
            starts=starts,
            counts=counts,
            retrieved=retrieved,
            query=ranked.query,
            score=ranked.score,
            rows=ranked.rows,
            judged=Judged(
                judged.relevance, judged.offsets, judged.doc_ids, self.numbering, query_ids, nesting.parent_items
            ),
            nesting=nesting,
            qrels=self.qrels,
            run=self.run,
            _judged_row_index=ranked.judged.astype(np.int64),
            _judged_row_relevance=ranked.judged_relevance,
            _judged_items=judged.items,
            _numbering=self.numbering,
            _descend=self.view,
            _shared=self.cache,
        )

    def _judged_side(self, level: int, every_parent: bool = False) -> _Judged:
        """The queries of *level* (groups with judged items: queries, or parents for nested
        levels; *every_parent*: also the parents of the run's items) and their judged
        documents, sorted by query, then relevance descending."""
        import pyarrow as pa
        import pyarrow.compute as pc

        nb = self.numbering
        j_rows, j_codes = self._group("j", level)
        used = _present(j_codes)
        if every_parent:
            used = np.union1d(used, _present(self._group("r", level)[1]))
        if len(used):
            outer_names, parents = self._group_keys(level, used)
            keys = pa.table({"query": outer_names, "parent": parents})
            order = pc.sort_indices(keys, sort_keys=[("query", "ascending"), ("parent", "ascending")])
            outer_names, parents, used = outer_names.take(order), parents.take(order), used[to_numpy(order)]
            query_ids_pa = (
                outer_names if level == 1 else pc.binary_join_element_wise(outer_names, parents, self.sep)
            )
        else:
            query_ids_pa = outer_names = pa.array([], pa.string())
        nq = len(query_ids_pa)
        lut = np.full(len(nb.query_ids) if level == 1 else self.num_items, -1, dtype=np.int64)
        lut[used] = np.arange(nq)
        jq = lut[j_codes]
        j_items = nb.judged_items[j_rows]
        j_rel = nb.item_relevance[j_items]
        jorder = _stable_order(jq, j_rel)
        judged_items = j_items[jorder]
        return _Judged(
            query_ids=query_ids_pa,
            outer_names=outer_names,
            groups=used,
            lut=lut,
            relevance=j_rel[jorder],
            items=judged_items,
            doc_ids=nb.doc_ids.take(pa.array(nb.item_doc[judged_items])),
            offsets=segment_offsets(jq[jorder], nq),
        )

    def _outer_queries(
        self, level: int, judged: _Judged, query_ids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The outer (top-level) query of each (sub-)query, the outer query ids, and the
        parent item's id of each sub-query (``None`` at level 1)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        nq = len(query_ids)
        if level == 1:
            return np.arange(nq), query_ids, None
        distinct = pc.unique(judged.outer_names)
        distinct = distinct.take(pc.sort_indices(distinct))
        outer = to_numpy(pc.index_in(judged.outer_names, value_set=distinct)).astype(np.int64)
        nb = self.numbering
        parent_ids = (
            to_numpy(pc.take(nb.doc_ids, pa.array(nb.item_doc[judged.groups]))).astype(object)
            if nq
            else np.zeros(0, object)
        )
        return outer, to_numpy(distinct).astype(object), parent_ids

    def _run_rows(self, level: int, judged: _Judged) -> _Rows:
        """The run rows of *level* whose group is a query of the judged side, in file order,
        with their judged rows (sparse)."""
        nb = self.numbering
        r_rows, r_codes = self._group("r", level)
        # the group codes are the judged side's: query codes at level 1, parent items below
        rq = judged.lut.astype(index_type(len(r_codes)))[r_codes]
        del r_codes
        keep = rq >= 0
        if not keep.all():
            r_rows = r_rows[keep]
            rq = rq[keep]
        del keep
        score = nb.run_score[r_rows] if len(r_rows) != len(nb.run_score) else nb.run_score
        # judged rows only (sparse): their positions follow every reordering below
        r_item = self.run_item[r_rows] if len(r_rows) != len(self.run_item) else self.run_item
        jrows = np.flatnonzero(r_item >= 0)
        jrows = jrows[nb.judged[r_item[jrows]]]
        jrel = nb.item_relevance[r_item[jrows]]
        del r_item
        return _Rows(query=rq, score=score, rows=r_rows, judged=jrows, judged_relevance=jrel)

    def _rank(self, ranked: _Rows) -> None:
        """Rank *ranked* in place: query ascending, score descending (stable: equal scores in
        file order), then the tie rule (the run's own: doc_id descending, or qrels order; or
        by grade); its judged rows follow and end sorted."""
        import pyarrow as pa
        import pyarrow.compute as pc

        _sort_rows(ranked)
        tie = None
        if self.ties in ("best", "worst"):
            tie = _tie_order(
                ranked.query,
                ranked.score,
                ranked.rows,
                self._grade_of_rows,
                "descending" if self.ties == "best" else "ascending",
            )
        elif self.ties in ("given", "expected"):
            # the stable sort kept the file's order among equal scores; the tie-aware kernels
            # of "expected" average over each group's orders, whatever order it is in
            pass
        elif self.run.tie_break == "docno":
            run_doc = self.numbering.run_doc
            tie = _tie_order(
                ranked.query, ranked.score, ranked.rows, lambda r: pc.take(run_doc, pa.array(r)), "descending"
            )
        elif self.run.tie_break == "qrels":
            tie = _tie_order(ranked.query, ranked.score, ranked.rows, self._qrels_position, "ascending")
        if tie is not None:
            pos, perm = tie  # equal scores within a query: only rows (and judged rows) move
            ranked.rows[pos] = ranked.rows[pos[perm]]
            jrows = ranked.judged
            k = np.searchsorted(pos, jrows)
            k_c = np.minimum(k, len(pos) - 1)
            moved = pos[k_c] == jrows
            jrows[moved] = pos[np.argsort(perm)[k_c[moved]]]
        jsort = _ascending(ranked.judged, len(ranked.rows))
        ranked.judged, ranked.judged_relevance = ranked.judged[jsort], ranked.judged_relevance[jsort]


    def _grade_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The judged grade of the items of run rows *rows*; -inf for an unjudged item."""
        nb = self.numbering
        item = nb.run_item[rows]
        known = item >= 0
        judged = np.zeros(len(rows), dtype=bool)
        judged[known] = nb.judged[item[known]]
        grade = np.full(len(rows), -np.inf)
        grade[judged] = nb.item_relevance[item[judged]]
        return grade


def _numbered(
    qrels: Qrels, run: Run, sep: str | None, nested: bool, on_duplicate: str
) -> tuple[Run, Numbering]:
    """*run* without duplicate (query, doc) pairs (see :func:`check_duplicates`) and the
    numbering of its items. A nested collection numbers every run row's item: distinct
    items are distinct pairs, and the duplicate check (a hash and a sort of the run) is
    needed only when two rows share an item."""
    numbering = number(qrels, run, sep, nested)
    items = numbering.run_item
    if len(items) and items.min() >= 0:
        seen = np.zeros(numbering.num_items, dtype=bool)
        seen[items] = True
        if np.count_nonzero(seen) == len(items):
            return run, numbering
    checked = check_duplicates(run, on_duplicate)
    return checked, numbering if checked is run else number(qrels, checked, sep, nested)


@dataclass(frozen=True, eq=False)
class _Judged:
    """The judged side of one view: its queries and their judged documents."""

    query_ids: pa.Array  # the view's query ids, sorted
    outer_names: pa.Array  # the top-level query id of each
    groups: np.ndarray  # group code (query code, or parent item) of each query
    lut: np.ndarray  # group code -> query index (-1: none)
    relevance: np.ndarray  # judged documents, by query then relevance descending
    items: np.ndarray  # their item codes
    doc_ids: pa.Array  # their doc ids
    offsets: np.ndarray  # (Q+1,) segments of the judged documents


@dataclass(eq=False)
class _Rows:
    """The run rows of one view while they are ranked: each step replaces the arrays (so
    that the old ones are freed at once, as with local variables)."""

    query: np.ndarray  # query index of each row
    score: np.ndarray
    rows: np.ndarray  # index of each row in run.table
    judged: np.ndarray  # positions of the judged rows
    judged_relevance: np.ndarray


def _sort_rows(ranked: _Rows) -> None:
    """Order *ranked* by query, then score descending (stable); judged rows follow."""
    order = _rank_order(ranked.query, ranked.score)
    if order is None:
        return
    ranked.query, ranked.score, ranked.rows = ranked.query[order], ranked.score[order], ranked.rows[order]
    new_pos = np.empty(len(order), dtype=index_type(len(order)))
    new_pos[order] = np.arange(len(order), dtype=new_pos.dtype)
    ranked.judged = new_pos[ranked.judged]


def _cut(ranked: _Rows, starts: np.ndarray, max_docs: int) -> None:
    """Keep the top *max_docs* rows of each query of *ranked* (blocks starting at *starts*)."""
    rq = ranked.query
    itype = index_type(len(rq))
    top = (np.arange(len(rq), dtype=itype) - starts.astype(itype)[rq]) < max_docs
    del rq
    _keep(ranked, top)


def _keep(ranked: _Rows, keep: np.ndarray) -> None:
    """Keep the rows of *ranked* where the boolean mask *keep* is true (order unchanged)."""
    new_pos = np.cumsum(keep) - 1
    keep_j = keep[ranked.judged]
    ranked.judged = new_pos[ranked.judged[keep_j]]
    ranked.judged_relevance = ranked.judged_relevance[keep_j]
    del new_pos, keep_j
    ranked.query, ranked.score, ranked.rows = ranked.query[keep], ranked.score[keep], ranked.rows[keep]


def _ascending(positions: np.ndarray, n: int) -> np.ndarray:
    """Permutation sorting distinct *positions* (in ``[0, n)``) ascending, without a sort."""
    slot = np.full(n, -1, dtype=np.int64)
    slot[positions] = np.arange(len(positions))
    return slot[slot >= 0]


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
    return _stable_order(rq, score)


def _stable_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Permutation ordering rows by *first* ascending, then *second* descending, stable (as
    ``np.lexsort((-second, first))``; pyarrow's multi-key sort is several times faster when
    there are many groups)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table({"a": first, "b": second})
    order = pc.sort_indices(table, sort_keys=[("a", "ascending"), ("b", "descending")])
    return to_numpy(order).astype(np.intp)


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
    # (boolean masks, not np.union1d / np.isin: those sort or hash, seconds on a run of
    # millions of tied rows)
    with_prev = np.zeros(len(rq), dtype=bool)
    with_prev[tie + 1] = True  # row i ties with row i - 1
    in_tie = with_prev.copy()
    in_tie[tie] = True
    pos = np.flatnonzero(in_tie)
    label = np.cumsum(~with_prev[pos])
    sub = pa.table({"label": pa.array(label), "key": key(rows[pos])})
    perm = to_numpy(pc.sort_indices(sub, sort_keys=[("label", "ascending"), ("key", direction)]))
    return pos, perm
