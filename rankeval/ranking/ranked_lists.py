"""The ranked lists of one run: :class:`RankedLists`, the one view every measure reads.

It holds the run rows of every query, ranked, with their judged relevance, and the judged
documents of every query for ideal rankings, as flat segment arrays (see
:mod:`rankeval.segments`), plus the helpers measure kernels use. Its public names, listed in
:data:`KERNEL_API`, are the kernel contract (docs/kernels.md): stable for plugins, and a test
keeps the class from growing another. Three small records group the rest: :class:`Judged`
(the judged documents), :class:`Items` (item codes) and :class:`Nesting` (the nesting level).

A view holds no reference to the :class:`~rankeval.ranking.alignment.Alignment` that built
it: one level down (:meth:`RankedLists.children`) comes from a function the alignment hands
it, and the work shared by all levels (``memo(shared=True)``) from a dictionary. So the
views and the alignment form no reference cycle, and a block's memory is freed as soon as
its last reference goes.

May import: :mod:`rankeval.ranking.arrays`, :mod:`rankeval.ranking.numbering`,
:mod:`rankeval.segments` (and, for annotations only, :mod:`rankeval.io.data`).
:mod:`rankeval.ranking.alignment` builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from rankeval.ranking.arrays import contiguous, index_type, to_numpy
from rankeval.ranking.numbering import Numbering

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.io.data import Qrels, Run

__all__ = ["KERNEL_API", "Items", "Judged", "Nesting", "RankedLists", "Ties"]

T = TypeVar("T")

#: The public names of :class:`RankedLists`: the whole surface a measure kernel may use,
#: stable for plugins (docs/kernels.md). ``tests/test_kernel_contract.py`` checks that the
#: class has no other public name and that the plugins use no other.
KERNEL_API: tuple[str, ...] = (
    # the (sub-)queries, (Q,)
    "query_ids",
    "num_queries",
    "starts",
    "counts",
    "retrieved",
    # the ranked rows, (n,)
    "query",
    "score",
    "rows",
    "doc_ids",
    "rank",
    "relevance",
    # the judged ranked rows, sparse
    "judged_rows",
    "relevant_rows",
    "rank_of",
    "ties",
    # per-query sums
    "sum",
    "query_sum",
    "num_rel",
    # the judged documents, the item codes, the nesting level
    "judged",
    "items",
    "nesting",
    # the inputs, shared work, one level down, item attributes
    "qrels",
    "run",
    "memo",
    "children",
    "docinfo_number",
)


@dataclass(frozen=True, eq=False)
class Judged:
    """The judged documents of every (sub-)query, best first: each query's documents by
    relevance descending (an ideal ranking), the queries' segments one after the other.

    Attributes:
        relevance: ``(m,)`` relevance of each judged document (maximum over assessors).
        offsets: ``(Q+1,)`` query ``q``'s documents are ``[offsets[q], offsets[q + 1])``.
        doc_ids: ``(m,)`` doc id of each judged document (pyarrow string array).
    """

    relevance: np.ndarray
    offsets: np.ndarray
    doc_ids: pa.Array
    # what lines needs: the items, and the view's query ids and parent items (level > 1)
    _numbering: Numbering = field(repr=False)
    _query_ids: np.ndarray = field(repr=False)
    _parent_items: np.ndarray | None = field(repr=False)

    @cached_property
    def query(self) -> np.ndarray:
        """``(m,)`` query index of each judged document."""
        return np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))

    @cached_property
    def rank(self) -> np.ndarray:
        """``(m,)`` 0-based position of each judged document in its query's ideal ranking."""
        return np.arange(len(self.relevance)) - self.offsets[self.query]  # type: ignore[no-any-return]

    @cached_property
    def lines(self) -> np.ndarray:
        """``(r,)`` index of the (sub-)query each row of ``qrels.table`` (one per assessor
        line) judges for, -1 for none.

        At level 1, the query of the line's ``query_id``; at a nested level, the sub-query of
        the line's parent item. Use it to aggregate qrels attributes per query, e.g.
        ``np.bincount(q[q >= 0], weights=values[q >= 0], minlength=data.num_queries)``.
        """
        nb = self._numbering
        if self._parent_items is None:
            import pyarrow as pa
            import pyarrow.compute as pc

            names = pa.array([str(x) for x in self._query_ids], pa.string())
            lut = contiguous(pc.index_in(nb.query_ids, value_set=names).fill_null(-1))
            code = to_numpy(lut).astype(np.int64)[nb.item_query]  # per item: its query here
        else:
            lut = np.full(nb.num_items, -1, dtype=np.int64)
            lut[self._parent_items] = np.arange(len(self._query_ids))
            code = np.where(nb.item_parent >= 0, lut[np.maximum(nb.item_parent, 0)], -1)
        out: np.ndarray = code[nb.qrels_item].astype(np.int64)
        return out


@dataclass(frozen=True, eq=False)
class Items:
    """Item codes: every distinct (query, doc) pair of the collection has a code
    ``0 .. count - 1``, the same at every nesting level, to carry a per-item value (an
    attribute of the qrels, say) to the rankings: index an array of size :attr:`count` with
    the codes.

    Attributes:
        count: number of items (of the qrels, and in a nested collection of the run too).
        lines: ``(r,)`` code of each row of ``qrels.table`` (one per assessor line).
        rows: ``(n,)`` code of each ranked row (-1: a doc judged nowhere, in a flat collection).
        judged: ``(m,)`` code of each judged document (:class:`Judged`).
    """

    count: int
    lines: np.ndarray
    rows: np.ndarray
    judged: np.ndarray
    _numbering: Numbering = field(repr=False)

    @property
    def first_judgment(self) -> np.ndarray:
        """``(count,)`` the row of ``qrels.table`` of each item's first judgment (the
        judgments' file order; the int64 maximum for an item the qrels do not judge)."""
        return self._numbering.first_judgment


@dataclass(frozen=True, eq=False)
class Nesting:
    """Where a view's (sub-)queries sit: its level and, below the top, their parents.

    Attributes:
        level: nesting level (1 = top-level items; 2 = their children, ranked within each
            parent: one sub-query ``qid/parent`` per parent).
        outer: ``(Q,)`` index in :attr:`outer_ids` of each (sub-)query's top-level query.
        outer_ids: the top-level query ids (sorted) that :attr:`outer` indexes.
        parent_ids: ``(Q,)`` the parent item's doc id of each sub-query (``None`` at level 1).
        parent_items: ``(Q,)`` the parent's item code (:class:`Items`) of each sub-query
            (``None`` at level 1).
    """

    level: int
    outer: np.ndarray
    outer_ids: np.ndarray
    parent_ids: np.ndarray | None = None
    parent_items: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Ties:
    """The tied groups of the ranked rows: the rows of one query with equal scores, which
    the tie rule put in one of their orders (``--ties``). A row whose score no other row of
    its query shares is a group of one.

    Attributes:
        group: ``(n,)`` group index of each ranked row (groups numbered in row order).
        query: ``(G,)`` query index of each group.
        first: ``(G,)`` 0-based rank of each group's first row.
        size: ``(G,)`` number of rows in each group (its rows hold ranks
            ``first .. first + size - 1``).
    """

    group: np.ndarray
    query: np.ndarray
    first: np.ndarray
    size: np.ndarray

    @property
    def num_groups(self) -> int:
        """Number of groups (``G``)."""
        return len(self.size)


@dataclass(eq=False)
class RankedLists:
    """Ranked run rows and judged documents of every query, as flat segment arrays.

    Rows of the run are grouped by query (one contiguous block per query) and ranked within
    each query. Queries are those of the qrels (at this nesting level); a query of the qrels
    that the run does not retrieve has an empty segment. The public names are
    :data:`KERNEL_API` (docs/kernels.md).

    Attributes:
        query_ids: ``(Q,)`` query ids (sorted; for nested sub-queries ``qid/parent``,
            joined with the nesting separator, sorted by query, then parent).
        starts: ``(Q,)`` index of each query's first row (its rows are contiguous; the
            blocks of different queries may come in any order).
        counts: ``(Q,)`` number of ranked rows of each query.
        retrieved: ``(Q,)`` whether the run has any row for the query (before ``max_docs``
            and ``judged_only`` drop rows).
        query: ``(n,)`` query index of each ranked row.
        score: ``(n,)`` run score of each row.
        rows: ``(n,)`` index of each row in ``run.table`` (file order), e.g. for attributes.
        judged: the judged documents of each query, best first (:class:`Judged`).
        nesting: the nesting level and the parents of the sub-queries (:class:`Nesting`).
        qrels: the :class:`~rankeval.io.data.Qrels` the view was built from.
        run: the :class:`~rankeval.io.data.Run` the view was built from.
    """

    query_ids: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    retrieved: np.ndarray
    query: np.ndarray
    score: np.ndarray
    rows: np.ndarray
    judged: Judged
    nesting: Nesting
    qrels: Qrels
    run: Run
    # the judged rows (sorted) and their relevance; see judged_rows()
    _judged_row_index: np.ndarray = field(repr=False)
    _judged_row_relevance: np.ndarray = field(repr=False)
    _judged_items: np.ndarray = field(repr=False)  # item code of each judged document
    _numbering: Numbering = field(repr=False)
    # (level, every_parent) -> the view of that level; kept by the alignment, which the
    # view does not reference (no cycle)
    _descend: Callable[[int, bool], RankedLists] | None = field(default=None, repr=False)
    _shared: dict[Any, Any] | None = field(default=None, repr=False)  # memo(shared=True)
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)  # memo()

    def children(self, every_parent: bool = False) -> RankedLists | None:
        """The ranked lists one nesting level down: each item's children ranked within it,
        one sub-query per parent with judged children (*every_parent*: per parent with
        children in the qrels or the run); ``None`` in a flat collection. A nested collection
        whose items here have no (remaining) children gives a view without queries."""
        descend = self._descend
        if descend is None or not self._numbering.nested:
            return None
        level = self.nesting.level + 1
        return self.memo(("rankeval.children", every_parent), lambda: descend(level, every_parent))

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
                ranked lists of one level (e.g. a per-item array, see :class:`Items`).
        """
        cache = self._shared if shared and self._shared is not None else self._cache
        if key not in cache:
            cache[key] = make()
        return cache[key]  # type: ignore[no-any-return]

    # -- sizes and ids -------------------------------------------------------------------
    @property
    def num_queries(self) -> int:
        """Number of (sub-)queries."""
        return len(self.query_ids)

    @property
    def doc_ids(self) -> pa.Array:
        """``(n,)`` doc id of each ranked row (pyarrow string array; built on first use)."""

        def make() -> pa.Array:
            import pyarrow as pa
            import pyarrow.compute as pc

            return pc.take(self._numbering.run_doc, pa.array(self.rows))

        return self.memo("rankeval.doc_ids", make)

    @property
    def items(self) -> Items:
        """The item codes of the ranked rows, the judged documents and the qrels lines
        (:class:`Items`; built on first use)."""

        def make() -> Items:
            nb = self._numbering
            return Items(nb.num_items, nb.qrels_item, nb.run_item[self.rows], self._judged_items, nb)

        return self.memo("rankeval.items", make)

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

    # -- ranks and relevance of the rows -------------------------------------------
    @property
    def rank(self) -> np.ndarray:
        """``(n,)`` 0-based rank of every row within its query (built on first use; kernels
        that need a few rows' ranks use :meth:`rank_of`)."""

        def make() -> np.ndarray:
            itype = index_type(len(self.query))
            out: np.ndarray = np.arange(len(self.query), dtype=itype) - self.starts.astype(itype)[self.query]
            return out

        return self.memo("rankeval.rank", make)

    @property
    def ties(self) -> Ties:
        """The groups of rows with equal scores within each query (:class:`Ties`; built on
        first use): what ``--ties expected`` averages over."""

        def make() -> Ties:
            n = len(self.query)
            new = np.ones(n, dtype=bool)
            if n > 1:
                new[1:] = (self.query[1:] != self.query[:-1]) | (self.score[1:] != self.score[:-1])
            heads = np.flatnonzero(new)
            group = np.cumsum(new) - 1
            size = np.diff(np.append(heads, n))
            query = self.query[heads]
            return Ties(group, query, heads - self.starts[query], size)

        return self.memo("rankeval.ties", make)

    @property
    def relevance(self) -> np.ndarray:
        """``(n,)`` judged relevance of every row, NaN if unjudged (built on first use;
        kernels that only need judged rows use :meth:`judged_rows` instead)."""

        def make() -> np.ndarray:
            dense = np.full(len(self.query), np.nan)
            dense[self._judged_row_index] = self._judged_row_relevance
            return dense

        return self.memo("rankeval.relevance", make)

    def rank_of(self, rows: np.ndarray) -> np.ndarray:
        """0-based rank of each of *rows* within its query."""
        return rows - self.starts[self.query[rows]]  # type: ignore[no-any-return]

    def judged_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The ranked rows that are judged (indices, in row order) and their relevance
        (maximum over assessors)."""
        return self._judged_row_index, self._judged_row_relevance

    def relevant_rows(self, rel: float = 1) -> np.ndarray:
        """Indices of the ranked rows with relevance ≥ *rel* (in row order; cached).

        Measures that only depend on where the relevant documents are ranked work on these
        few rows instead of all retrieved rows.
        """
        return self.memo(
            ("rankeval.relevant_rows", rel),
            lambda: self._judged_row_index[self._judged_row_relevance >= rel],
        )

    # -- per-query sums ----------------------------------------------------------
    def sum(self, values: np.ndarray) -> np.ndarray:
        """Per-query sum of a per-row array (``(n,)`` → ``(Q,)``)."""
        out = np.zeros(self.num_queries)
        if len(values):
            q, starts = self._blocks_in_order()
            out[q] = np.add.reduceat(values, starts, dtype=np.float64)
        return out

    def _blocks_in_order(self) -> tuple[np.ndarray, np.ndarray]:
        def make() -> tuple[np.ndarray, np.ndarray]:
            nonempty = np.flatnonzero(self.counts > 0)
            q = nonempty[np.argsort(self.starts[nonempty], kind="stable")]
            return q, self.starts[q]

        return self.memo("rankeval.blocks", make)

    def query_sum(self, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """``(Q,)`` per-query sum of *weights* over *rows* (count of rows if no weights)."""
        return np.bincount(self.query[rows], weights=weights, minlength=self.num_queries).astype(np.float64)

    def num_rel(self, rel: float = 1) -> np.ndarray:
        """``(Q,)`` number of judged documents with relevance ≥ *rel* (cached)."""
        return self.memo(
            ("rankeval.num_rel", rel),
            lambda: np.bincount(
                self.judged.query, weights=self.judged.relevance >= rel, minlength=self.num_queries
            ),
        )
