"""The columns of a run and of qrels in memory: the one place they are spelled out.

A run table (:class:`rankeval.io.data.Run`) has :data:`RUN_COLUMNS`: ``query_id``, ``q0`` and
``tag`` dictionary-encoded strings (few distinct values), ``doc_id`` strings and ``score``
float64 (:func:`run_schema`). Every reader builds its table with :func:`run_table`, and an
empty run is :func:`empty_run_table`. Qrels tables have :data:`QRELS_COLUMNS` first
(:func:`qrels_schema`), then one string column per attribute key.

May import: pyarrow (lazily) and the standard library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "QRELS_COLUMNS",
    "RUN_COLUMNS",
    "empty_run_table",
    "qrels_schema",
    "run_schema",
    "run_table",
]

#: a run table's columns, in order
RUN_COLUMNS = ("query_id", "q0", "doc_id", "score", "tag")
#: a qrels table's first columns (attribute columns follow)
QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "relevance", "line")


def run_schema() -> pa.Schema:
    """The schema of a run table."""
    import pyarrow as pa

    codes = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            ("query_id", codes),
            ("q0", codes),
            ("doc_id", pa.string()),
            ("score", pa.float64()),
            ("tag", codes),
        ]
    )


def qrels_schema() -> pa.Schema:
    """The schema of a qrels table's first columns."""
    import pyarrow as pa

    return pa.schema(
        [
            ("query_id", pa.string()),
            ("iteration", pa.string()),
            ("doc_id", pa.string()),
            ("relevance", pa.float64()),
            ("line", pa.int64()),
        ]
    )


def run_table(
    query_id: pa.Array | pa.ChunkedArray,
    q0: pa.Array | pa.ChunkedArray,
    doc_id: pa.Array | pa.ChunkedArray,
    score: pa.Array | pa.ChunkedArray,
    tag: pa.Array | pa.ChunkedArray,
) -> pa.Table:
    """A run table (:func:`run_schema`) of these columns: strings (or dictionary-encoded
    strings) for the ids, the tag and ``q0``, numbers for the score; the ids and tag are
    encoded and the doc ids decoded as the schema has them, in one chunk each."""
    import pyarrow as pa

    def codes(column: pa.Array | pa.ChunkedArray) -> pa.Array:
        if isinstance(column, pa.ChunkedArray):
            if pa.types.is_dictionary(column.type) and column.num_chunks:
                column = column.unify_dictionaries()
            column = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
        if not pa.types.is_dictionary(column.type):
            column = (column if column.type == pa.string() else column.cast(pa.string())).dictionary_encode()
        target = pa.dictionary(pa.int32(), pa.string())
        return column if column.type == target else column.cast(target)

    def plain(column: pa.Array | pa.ChunkedArray, kind: pa.DataType) -> pa.Array:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        return column if column.type == kind else column.cast(kind)

    return pa.Table.from_arrays(
        [codes(query_id), codes(q0), plain(doc_id, pa.string()), plain(score, pa.float64()), codes(tag)],
        schema=run_schema(),
    )


def empty_run_table() -> pa.Table:
    """A run table without rows."""
    return run_schema().empty_table()
