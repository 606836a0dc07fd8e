"""Duplicate detection: (query_id, doc_id) pairs given more than once in a run.

:func:`check_duplicates` raises (trec_eval's rule) or keeps one line of each pair. Pairs are
found by hashing (query code, doc id) to uint64 keys and sorting them; only the rare equal
keys are compared as strings.

May import: :mod:`rankeval.ranking.arrays`, :mod:`rankeval.errors` (and, for annotations only,
:mod:`rankeval.io.data`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rankeval.errors import InputError, clip
from rankeval.ranking.arrays import contiguous, to_numpy

if TYPE_CHECKING:
    import pyarrow as pa

    from rankeval.io.data import Run

__all__ = ["DUPLICATE_POLICIES", "check_duplicates"]


def _codes(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary codes of a (possibly dictionary-typed) string array and the values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = contiguous(arr)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    return to_numpy(arr.indices), to_numpy(arr.dictionary).astype(object)


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
    first = doc[0].as_py()
    if isinstance(first, str) and first.isascii() and first.isdigit():
        try:  # digit ids (MS MARCO style): the number is the key; '07' and '7' collide and
            # collisions are verified on the strings by the caller
            return to_numpy(pc.cast(doc, pa.uint64()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # (the first id tells: a failed cast of a whole run takes as long as a hash)
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
        codes = to_numpy(pc.dictionary_encode(pa.concat_arrays(long_ids)).indices).astype(np.uint64)
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
    drop = _dropped_rows(run, qcode, rows, on_duplicate)
    keep = np.ones(table.num_rows, dtype=bool)
    keep[drop] = False
    lines = run.lines[keep] if run.lines is not None else (np.flatnonzero(keep) + 1 if run.source else None)
    return type(run)(table.filter(pa.array(keep)), run.name, run.source, lines, run.tie_break)


def _dropped_rows(run: Run, qcode: np.ndarray, rows: np.ndarray, on_duplicate: str) -> list[int]:
    """The rows of *run* that *on_duplicate* drops, among the candidate *rows* (those whose
    pair key occurs twice; equal keys of unequal pairs are told apart here, on the strings).

    Raises:
        InputError: a true duplicate under ``on_duplicate="error"``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = run.table
    doc = table.column("doc_id")
    sub = pa.table({"q": pa.array(qcode[rows]), "d": pc.take(doc, pa.array(rows)), "r": pa.array(rows)})
    score = to_numpy(table.column("score"))
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
        raise _duplicate_error(run, d, first, r)
    return drop


def _duplicate_error(run: Run, doc: str, first: int, row: int) -> InputError:
    """The error for *doc* given on rows *first* and *row* of the same query of *run*."""
    qid = run.table.column("query_id")[row].as_py()
    first_line, _ = run.line_of(first)
    line, text = run.line_of(row)
    hint = "; --on-duplicate first|max keeps one of them"
    if line is None:
        return InputError(
            f"duplicate document {_show(doc)} for query {_show(qid)} (rows {first + 1} and {row + 1}){hint}",
            source=run.name,
        )
    return InputError(
        f"duplicate document {_show(doc)} for query {_show(qid)} (first on line {first_line}); "
        f"trec_eval rejects duplicate docs too{hint}",
        source=run.source,
        line=line,
        text=text,
    )
