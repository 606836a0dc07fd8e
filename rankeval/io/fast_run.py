"""The fast path of reading a TREC run: a clean file (one space or one tab between columns;
plain, or compressed and decompressed as a stream) goes straight to pyarrow's multi-threaded
CSV reader. Anything unusual — a sample that does not look clean, a field the reader refuses,
an empty field, whitespace or a control byte inside a field — returns ``None``, and the
general path of :mod:`rankeval.io.trec` reads the file and explains any error.

May import: pyarrow, numpy, ``inputs``, ``lines``, ``memory``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankeval.io import inputs
from rankeval.io.lines import MAX_LINE
from rankeval.io.memory import reserve, threads_fit

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RUN_COLUMNS", "dictionary_encode", "parse_run_fast", "read_run_fast"]

_BOM = b"\xef\xbb\xbf"
RUN_COLUMNS = ("query_id", "q0", "doc_id", "rank", "score", "tag")


def dictionary_encode(arr: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
    """*arr* dictionary-encoded as one array (chunks unified)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = pc.dictionary_encode(arr)
    if isinstance(out, pa.ChunkedArray):
        out = out.unify_dictionaries().combine_chunks() if out.num_chunks else pa.array([], out.type)
    return out


def _fast_sample_ok(head: bytes) -> bytes | None:
    """The delimiter if the first 64 KiB of a run look like clean one-space or one-tab
    separated lines, else ``None``."""
    if not head or head.startswith(_BOM) or inputs.compression_of(head) is not None:
        return None
    sample = head[: head.rfind(b"\n") + 1] or head
    has_tab, has_space = b"\t" in sample, b" " in sample
    if has_tab == has_space:
        return None
    delim = b"\t" if has_tab else b" "
    if (
        delim + delim in sample
        or b"\n" + delim in sample
        or sample.startswith(delim)
        or delim + b"\n" in sample
        or b"\r" in sample
        or b"#" in sample
        or b"\n\n" in sample
    ):
        return None
    return delim


def read_run_fast(source: str | Path) -> pa.Table | None:
    """Parse a clean run file (plain, or compressed: decompressed as a stream) with
    pyarrow's CSV reader directly; ``None`` if it is not clean, and the general path decides.

    Raises:
        InputError: the compressed data is corrupt (the general path would say the same).
        ResourceError: it decompresses to more than the memory available.
    """
    import pyarrow as pa

    delim = _fast_sample_ok(inputs.read_head(source, 1 << 16))
    if delim is None:
        return None
    with inputs.open_input(source) as opened:
        if opened.compression is None:
            threads = threads_fit(os.path.getsize(source))
            reserve(os.path.getsize(source))
            # pyarrow's own file reader: faster than a Python stream (no compression
            # guessed from the file name either)
            with pa.OSFile(os.fsencode(source)) as stream:  # bytes: a name that is not UTF-8 too
                return _clean_table(_read_run_csv(stream, delim, threads))
        return _clean_table(_read_run_csv(opened.stream, delim, threads_fit(0)))


def parse_run_fast(data: bytes, threads: bool = True) -> pa.Table | None:
    """:func:`read_run_fast` of run text in memory (a block of a run file; *threads*:
    pyarrow's parsing threads); ``None`` if it is not clean."""
    import pyarrow as pa

    delim = _fast_sample_ok(data[: 1 << 16])
    if delim is None:
        return None
    return _clean_table(_read_run_csv(pa.BufferReader(data), delim, threads))


def _clean_table(table: pa.Table | None) -> pa.Table | None:
    """The run table of pyarrow's parse *table*, or ``None`` if it is not clean."""
    import pyarrow as pa

    if table is None:
        return None
    columns = {name: table.column(name) for name in table.column_names}
    del table
    out = _combine_run_columns(columns)
    if out is None or not _run_fields_clean(out):
        return None
    return pa.table(out)


def _read_run_csv(stream: Any, delim: bytes, threads: bool) -> pa.Table | None:
    """The run's table as pyarrow's CSV reader parses *stream* (fields split by *delim*);
    ``None`` if it refuses the text."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    options = {
        "read_options": pcsv.ReadOptions(
            column_names=list(RUN_COLUMNS), block_size=1 << 24, use_threads=threads
        ),
        "parse_options": pcsv.ParseOptions(
            delimiter=delim.decode(), quote_char=False, ignore_empty_lines=False
        ),
        "convert_options": pcsv.ConvertOptions(
            column_types={
                "query_id": pa.dictionary(pa.int32(), pa.string()),
                # q0 and tag are nearly always one constant: plain strings parse faster
                # than dictionaries, and _compact() encodes them after
                "q0": pa.string(),
                "doc_id": pa.string(),
                "score": pa.float64(),
                "tag": pa.string(),
            },
            # the rank is ignored, as trec_eval does, and not even converted (that would
            # cost 4% of the whole read): its text is the one thing this path leaves unchecked
            include_columns=["query_id", "q0", "doc_id", "score", "tag"],
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    }
    try:
        return pcsv.read_csv(stream, **options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None  # anything unusual: the general path reads it or explains the error


def _combine_run_columns(
    columns: dict[str, pa.ChunkedArray],
) -> dict[str, pa.Array | pa.ChunkedArray] | None:
    """The run's columns in their final layout, each popped from *columns* as it is done
    (so that only one column is ever held twice); ``None`` if a value is missing or a
    score is not finite."""
    import pyarrow as pa
    import pyarrow.compute as pc

    score = columns["score"]
    if score.null_count or not pc.all(pc.is_finite(score), min_count=0).as_py():
        return None  # a NaN is an error; an infinite score may be a megabyte of digits
    del score
    out: dict[str, pa.Array | pa.ChunkedArray] = {}
    for name in list(columns):
        col = columns.pop(name)
        if col.null_count:
            return None
        if name == "doc_id":
            out[name] = col  # kept chunked: combining would double the largest column
            continue
        if pa.types.is_dictionary(col.type):
            out[name] = col.unify_dictionaries().combine_chunks()
        elif name in ("q0", "tag"):
            out[name] = _compact(col)
        else:
            out[name] = col.combine_chunks()
        del col
    return out


def _run_fields_clean(out: dict[str, pa.Array | pa.ChunkedArray]) -> bool:
    """Whether the whole file was as clean as its sample: every field non-empty, free of
    whitespace and control bytes, no comment lines, no line that could be over the limit
    (the widest fields plus the rank, the score and five delimiters, one byte each at
    least). Otherwise the general path decides."""
    import pyarrow.compute as pc

    if pc.any(pc.starts_with(out["query_id"].dictionary, "#")).as_py():
        return False
    widths = [_field_width(out[name].dictionary) for name in ("query_id", "q0", "tag")]
    widths += [_field_width(chunk) for chunk in out["doc_id"].chunks]
    if any(w is None for w in widths):
        return False
    known = [w or 0 for w in widths]
    return sum(known[:3]) + max(known[3:], default=0) + 7 <= MAX_LINE


def _compact(col: pa.ChunkedArray) -> pa.DictionaryArray:
    """Dictionary-encode a string column; a constant column costs no hashing."""
    import numpy as np
    import pyarrow as pa

    n = len(col)
    if n:
        first = col[0].as_py()
        if all(_all_equal(chunk, first.encode()) for chunk in col.chunks):
            indices = pa.array(np.zeros(n, dtype=np.int32))
            return pa.DictionaryArray.from_arrays(indices, pa.array([first], pa.string()))
    return dictionary_encode(col)


def _all_equal(arr: pa.Array, value: bytes) -> bool:
    """Whether every string of *arr* equals *value* (compares the raw buffers)."""
    import numpy as np

    if len(arr) == 0:
        return True
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], np.int32)[arr.offset : arr.offset + len(arr) + 1]
    if not (np.diff(offsets) == len(value)).all():
        return False
    if not value:
        return True
    data = np.frombuffer(buffers[2], np.uint8)[offsets[0] : offsets[-1]]
    return bool((data.reshape(-1, len(value)) == np.frombuffer(value, np.uint8)).all())


def _field_width(arr: pa.Array) -> int | None:
    """Length in bytes of the longest string of *arr* (0 for none), or ``None`` if a string
    is empty or contains ASCII whitespace or a control byte: not a field of a clean line."""
    import numpy as np
    import pyarrow as pa

    if len(arr) == 0:
        return 0
    buffers = arr.buffers()
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(buffers[1], width)[arr.offset : arr.offset + len(arr) + 1]
    size = np.diff(offsets)
    if (size <= 0).any():
        return None
    data = np.frombuffer(buffers[2], np.uint8)[offsets[0] : offsets[-1]]
    # whitespace and control characters are all <= 32; DEL is 127
    if (data <= 32).any() or (data == 127).any():
        return None
    return int(size.max())
