"""Item attributes (``key=value`` on qrels lines and in ``--docinfo`` side files): their
numbers, checked, and the merge of a side file into the judgments.

Used by :class:`rankeval.io.data.Qrels`; see :meth:`~rankeval.io.data.Qrels.with_docinfo` for
the precedence of the sources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from rankeval.extension import Domain

__all__ = ["expected", "merge_side_file", "numbers"]


def numbers(text: Any, minimum: float | None, domain: Domain | None) -> tuple[np.ndarray, int | None]:
    """Attribute strings *text* (nulls: not given) as float64 (NaN where not given), and the
    index of the first value that is not a finite number within *minimum* and *domain*
    (``None`` when all are fine)."""
    import numpy as np
    import pyarrow.compute as pc

    try:
        values = pc.cast(text, "float64").to_numpy(zero_copy_only=False)
        given = text.is_valid().to_numpy(zero_copy_only=False)
        ok = np.isfinite(values) | ~given
    except Exception:  # some value is not a number: find it (a Python loop, error path only)
        strings = text.to_pylist()
        values, ok = np.full(len(strings), np.nan), np.ones(len(strings), dtype=bool)
        for i, t in enumerate(strings):
            if t is not None:
                try:
                    values[i] = float(t)
                except ValueError:
                    ok[i] = False
        ok &= np.isfinite(values) | np.array([t is None for t in strings])
    if minimum is not None:
        ok &= ~(values < minimum)
    if domain is not None:  # NaN (not given) compares False: never outside
        with np.errstate(invalid="ignore"):
            ok &= ~((values <= domain.low) if domain.low_open else (values < domain.low))
            ok &= ~((values >= domain.high) if domain.high_open else (values > domain.high))
    return values, (None if ok.all() else int(np.flatnonzero(~ok)[0]))


def expected(minimum: float | None, domain: Domain | None, key: str, what: str) -> str:
    """``a non-negative number for cost= (the reading cost)``: what a bad value should be."""
    if domain is not None:
        kind = f"a number in {domain}"
    else:
        kind = "a non-negative number" if minimum == 0 else "a number"
    return f"{kind} for {key}=" + (f" ({what})" if what else "")


def merge_side_file(
    table: pa.Table, origins: dict[str, list[tuple[str, np.ndarray]]], info: pa.Table, name: str
) -> tuple[pa.Table, dict[str, list[tuple[str, np.ndarray]]]]:
    """The qrels *table* with the attributes of side file *info* (read by
    :func:`rankeval.io.trec.read_docinfo_table` from file *name*) given to the rows of their
    docno, where the judgment does not give the key itself; and *origins* (attribute → side
    files with the line of each row's value, 0 where not from that file) extended."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    doc = pc.cast(table.column("doc_id"), pa.string())
    if isinstance(doc, pa.ChunkedArray):
        doc = doc.combine_chunks()
    found = pc.index_in(doc, value_set=info.column("doc_id").combine_chunks())
    side_line = info.column("line").combine_chunks().take(found)
    side_line = side_line.fill_null(0).to_numpy(zero_copy_only=False)
    pair: np.ndarray | None = None  # (query, doc) code of each row, made when needed
    origins = {key: list(v) for key, v in origins.items()}
    for key in info.column_names[2:]:
        side = info.column(key).combine_chunks().take(found)
        if key in table.column_names:
            own = table.column(key)
            has = own.is_valid().to_numpy(zero_copy_only=False)
            if pair is None:
                pair = _pair_codes(table)
            given = np.bincount(pair, weights=has, minlength=int(pair.max(initial=-1)) + 1) > 0
            side = pc.if_else(pa.array(given[pair]), pa.scalar(None, side.type), side)
            merged = pc.coalesce(own, pc.cast(side, own.type))
            table = table.set_column(table.column_names.index(key), key, merged)
        else:
            table = table.append_column(key, side)
        used = np.where(side.is_valid().to_numpy(zero_copy_only=False), side_line, 0)
        origins.setdefault(key, []).append((name, used))
    return table, origins


def _pair_codes(table: pa.Table) -> np.ndarray:
    """An integer code per row, equal for rows of the same (query_id, doc_id)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = []
    for name in ("query_id", "doc_id"):
        col = pc.dictionary_encode(pc.cast(table.column(name), pa.string()))
        if isinstance(col, pa.ChunkedArray):
            col = col.unify_dictionaries().combine_chunks()
        codes.append((np.asarray(col.indices, dtype=np.int64), len(col.dictionary)))
    (q, _), (d, nd) = codes
    inverse: np.ndarray = np.unique(q * max(nd, 1) + d, return_inverse=True)[1]
    return inverse.ravel()
