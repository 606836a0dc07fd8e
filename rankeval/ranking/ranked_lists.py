"""The ranked lists of one run: :class:`RankedLists`, the one view every measure reads.

It holds the run rows of every query, ranked, with their judged relevance, and the judged
documents of every query for ideal rankings, as flat segment arrays (see
:mod:`rankeval.segments`), plus the helpers measure kernels use.

May import: :mod:`rankeval.ranking.arrays`, :mod:`rankeval.segments` (and, for annotations only,
:mod:`rankeval.ranking.alignment` and :mod:`rankeval.io.data`). :mod:`rankeval.ranking.alignment` builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from rankeval.ranking.arrays import contiguous, index_type, to_numpy
from rankeval.segments import segment_cumsum, segment_position

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.io.data import Qrels, Run
    from rankeval.ranking.alignment import Alignment

__all__ = ["RankedLists"]

T = TypeVar("T")


@dataclass(eq=False)
class RankedLists:
    """Ranked run rows and judged documents of every query, as flat segment arrays.

    Rows of the run are grouped by query (one contiguous block per query) and ranked within
    each query. Queries are those of the qrels (at this nesting level); a query of the qrels
    that the run does not retrieve has an empty segment.

    Attributes:
        query_ids: ``(Q,)`` query ids (sorted; for nested sub-queries ``qid/parent``,
            joined with the nesting separator, sorted by query, then parent).
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
        run: the :class:`~rankeval.io.data.Run` the view was built from.
        qrels: the :class:`~rankeval.io.data.Qrels` the view was built from.
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

    def children(self, every_parent: bool = False) -> RankedLists | None:
        """The ranked lists one nesting level down (each item's children ranked within it,
        one sub-query per parent with judged children; *every_parent*: per parent with
        children in the qrels or the run), or ``None`` if there is no such parent."""
        if self.alignment is None or not self.alignment.nested:
            return None
        kids = self.alignment.view(self.level + 1, every_parent)
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

    # -- item attributes ---------------------------------------------------------
    def docinfo_number(
        self, key: str, rows: np.ndarray, what: str = "", minimum: float | None = None, *, domain: Any = None
    ) -> np.ndarray:
        """Attribute *key* (``cost`` for ``cost=``) of the items of ranked rows *rows*, from the
        ``--docinfo`` side files (:meth:`rankeval.Qrels.docinfo_number`), NaN where none gives
        it. A judged item's attributes are on its qrels rows already (side files merged,
        :meth:`rankeval.Qrels.number_attribute`); use this for the rows the qrels do not give
        the attribute, e.g. unjudged items."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.qrels.docinfo:
            return np.full(len(rows), np.nan)
        ids = pc.take(self.doc_ids, pa.array(np.asarray(rows, dtype=np.int64)))
        return self.qrels.docinfo_number(key, ids, what, minimum, domain=domain)

    def describe_rows(self, rows: np.ndarray, limit: int = 3) -> list[str]:
        """``'alice/p3' (query 1)`` for the first *limit* of ranked rows *rows* (messages)."""
        return [
            f"{self.doc_ids[int(i)].as_py()!r} (query {self.outer_ids[self.outer[self.query[int(i)]]]!r})"
            for i in rows[:limit]
        ]

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
            itype = index_type(len(self.query))
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
        nb = a.numbering
        if self.level == 1:
            import pyarrow as pa
            import pyarrow.compute as pc

            names = pa.array([str(x) for x in self.query_ids], pa.string())
            lut = contiguous(pc.index_in(nb.query_ids, value_set=names).fill_null(-1))
            code = to_numpy(lut).astype(np.int64)[nb.item_query]  # per item: its query here
        else:
            lut = np.full(a.num_items, -1, dtype=np.int64)
            lut[self.parent_items] = np.arange(self.num_queries)
            code = np.where(nb.item_parent >= 0, lut[np.maximum(nb.item_parent, 0)], -1)
        out: np.ndarray = code[a.qrels_item].astype(np.int64)
        return out
