"""Reading TREC qrels and runs: bytes → validated pyarrow tables.

Two paths, one result:

* the **fast path** hands a clean run file (one space or one tab between columns) straight
  to pyarrow's multi-threaded CSV parser;
* the **general path** reads whole lines, trims them and splits on any whitespace with
  vectorised pyarrow kernels. It accepts comments, blank lines, CRLF, a UTF-8 BOM, runs of
  mixed whitespace, trailing junk columns (as trec_eval does) and ``key=value`` attributes,
  and it knows every line number, so it is also what reports errors.

There is no Python loop per line, except when a file fails to decode as UTF-8 and the
offending line has to be found for the error message.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rankeval.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "RESERVED",
    "read_bytes",
    "read_docinfo_table",
    "read_qrels_table",
    "read_run_table",
    "source_name",
]

_MAGIC = {b"\x1f\x8b": gzip.decompress, b"BZh": bz2.decompress, b"\xfd7zXZ\x00": lzma.decompress}
_BOM = b"\xef\xbb\xbf"
RUN_COLUMNS = ("query_id", "q0", "doc_id", "rank", "score", "tag")
RESERVED = ("query_id", "iteration", "doc_id", "relevance", "line")
"""Columns of a qrels table that are not attributes: no ``key=value`` may use these names."""


def source_name(source: str | Path) -> str:
    """Name used for *source* in messages (``<stdin>`` for ``-``)."""
    return "<stdin>" if str(source) == "-" else str(source)


def is_compressed(path: str | Path) -> bool:
    """Whether the file at *path* starts with gzip, bz2 or xz magic bytes."""
    with Path(path).open("rb") as fh:
        head = fh.read(8)
    return any(head.startswith(m) for m in _MAGIC)


def read_bytes(source: str | Path) -> bytes:
    """Whole file as bytes: stdin for ``-``; gzip, bz2 and xz decompressed by magic bytes."""
    name = source_name(source)
    try:
        if str(source) == "-":
            data = sys.stdin.buffer.read()
        else:
            data = Path(source).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=name) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", source=name) from None
    for magic, decompress in _MAGIC.items():
        if data.startswith(magic):
            try:
                data = decompress(data)
            except (OSError, EOFError, lzma.LZMAError, ValueError, zlib.error) as exc:
                raise InputError(f"corrupt compressed file: {exc}", source=name) from None
            break
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    return data


def _check_utf8(data: bytes, name: str) -> None:
    """Raise an InputError naming the first line that is not valid UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        text = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
        raise InputError(
            "not valid UTF-8 text",
            source=name,
            line=line,
            column=exc.start - start + 1,
            text=text.rstrip("\r"),
        ) from None


@dataclass
class _Lines:
    """Content lines of a text file, split on whitespace (the general path)."""

    name: str
    tokens: pa.ListArray  # per content line, its whitespace-separated fields
    line: np.ndarray  # 1-based line number of each content line
    raw: pa.Array  # the original text of each content line (for messages)

    def fail(self, row: int, message: str, field: int | None = None) -> InputError:
        """An InputError for content line *row*, pointing at field *field* (0-based)."""
        text = str(self.raw[row].as_py()).rstrip("\r")
        column = None
        if field is not None:
            column = _field_column(text, field)
        return InputError(message, source=self.name, line=int(self.line[row]), column=column, text=text)

    def column(self, i: int) -> pa.Array:
        import pyarrow.compute as pc

        return pc.list_element(self.tokens, i)


def _field_column(text: str, field: int) -> int:
    """1-based column where whitespace-separated field *field* of *text* starts."""
    pos = 0
    n = len(text)
    for i in range(field + 1):
        while pos < n and text[pos].isspace():
            pos += 1
        if i == field:
            return pos + 1
        while pos < n and not text[pos].isspace():
            pos += 1
    return n + 1


def _split_lines(data: bytes, name: str, first_line: int = 1) -> _Lines:
    """The content lines of *data* split on whitespace; *first_line* is the line number of
    its first line (a block of a larger file)."""
    lines = _split_content_lines(data, name)
    if first_line != 1:
        lines.line = lines.line + (first_line - 1)
    return lines


def _split_content_lines(data: bytes, name: str) -> _Lines:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if not data or data.isspace():
        empty = pa.array([], pa.string())
        return _Lines(name, pc.utf8_split_whitespace(empty), np.zeros(0, np.int64), empty)
    if b"\x1f" in data:
        pos = data.index(b"\x1f")
        line = data.count(b"\n", 0, pos) + 1
        raise InputError("unexpected control character \\x1f", source=name, line=line)
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(column_names=["line"], block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter="\x1f", quote_char=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types={"line": pa.string()},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:
        _check_utf8(data, name)
        raise
    if table.num_rows == 0:
        empty = pa.array([], pa.string())
        return _Lines(name, pc.ascii_split_whitespace(empty), np.zeros(0, np.int64), empty)
    raw = table.column("line").combine_chunks()
    tokens = pc.utf8_split_whitespace(raw)
    flat = tokens.values
    flat_offsets = np.frombuffer(flat.buffers()[1], np.int32)[flat.offset : flat.offset + len(flat) + 1]
    if len(flat) and (np.diff(flat_offsets) > 0).all():
        # no empty field: no blank line and no leading or trailing whitespace, so only
        # comment lines (first field starts with '#') can need dropping
        offsets = np.frombuffer(tokens.buffers()[1], np.int32)[
            tokens.offset : tokens.offset + len(tokens) + 1
        ]
        first_byte = np.frombuffer(flat.buffers()[2], np.uint8)[flat_offsets[offsets[:-1]]]
        if not (first_byte == ord("#")).any():
            return _Lines(name, tokens, np.arange(1, len(raw) + 1), raw)
    del tokens, flat
    trimmed = pc.utf8_trim_whitespace(raw)
    keep = pc.and_(pc.not_equal(pc.utf8_length(trimmed), 0), pc.invert(pc.starts_with(trimmed, "#")))
    line_numbers = np.flatnonzero(keep.to_numpy(zero_copy_only=False)) + 1
    return _Lines(name, pc.utf8_split_whitespace(trimmed.filter(keep)), line_numbers, raw.filter(keep))


def _need_columns(lines: _Lines, count: int, what: str) -> None:
    import numpy as np
    import pyarrow.compute as pc

    n = pc.list_value_length(lines.tokens).to_numpy()
    bad = np.flatnonzero(n < count)
    if bad.size:
        row = int(bad[0])
        raise lines.fail(row, f"expected {count} columns ({what}), found {int(n[row])}", int(n[row]))


def _to_float(lines: _Lines, field: int, what: str) -> pa.Array:
    """Column *field* as float64, or an error naming the first line that is not a number."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    col = lines.column(field)
    try:
        return pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    ok = pc.match_substring_regex(
        col, r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|(?i:nan|inf|infinity))$"
    )
    bad = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
    row = int(bad[0]) if bad.size else 0
    raise lines.fail(row, f"expected a number for {what}, found {col[row].as_py()!r}", field)


def _dict(arr: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    out = pc.dictionary_encode(arr)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    return out


def _attributes(lines: _Lines, first: int, where: str, reserved: set[str]) -> dict[str, pa.Array]:
    """The ``key=value`` fields of *lines* from field *first* on: one string column per key,
    null on the lines that do not give it.

    Raises:
        InputError: at the first field that is not ``key=value`` (*where* says where such
            fields go), whose key is in *reserved*, or whose key its line already gave.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    columns: dict[str, pa.Array] = {}
    n_fields = pc.list_value_length(lines.tokens).to_numpy()
    if not (n_fields > first).any():
        return columns
    extra = pc.list_slice(lines.tokens, first)
    parent = pc.list_parent_indices(extra).to_numpy()
    flat = pc.list_flatten(extra)
    pos = pc.find_substring(flat, "=").to_numpy()

    def field_no(i: int) -> int:  # the attribute's field on its line (for messages)
        return int(i - np.searchsorted(parent, parent[i]) + first)

    bad = np.flatnonzero(pos <= 0)
    if bad.size:
        i = int(bad[0])
        raise lines.fail(
            int(parent[i]), f"expected key=value attribute {where}, found {flat[i].as_py()!r}", field_no(i)
        )
    parts = pc.split_pattern(flat, "=", max_splits=1)
    keys = pc.list_element(parts, 0)
    values = pc.list_element(parts, 1)
    for key in pc.unique(keys).to_pylist():
        mask = pc.equal(keys, key).to_numpy(zero_copy_only=False)
        rows = parent[mask]
        if key in reserved:
            i = int(np.flatnonzero(mask)[0])
            raise lines.fail(int(parent[i]), f"attribute name {key!r} is reserved", field_no(i))
        dup = np.flatnonzero(np.diff(rows) == 0)
        if dup.size:
            i = int(np.flatnonzero(mask)[dup[0] + 1])
            raise lines.fail(int(parent[i]), f"attribute {key!r} given twice on one line", field_no(i))
        # scatter this key's values onto their lines (null elsewhere), all in pyarrow
        index = np.full(len(lines.line), -1, dtype=np.int64)
        index[rows] = np.arange(len(rows))
        columns[key] = values.filter(pa.array(mask)).take(pa.array(index, mask=index < 0))
    return columns


# ---------------------------------------------------------------------------- runs
def _run_fast(path: Path) -> pa.Table | None:
    """Parse a clean, uncompressed run file with pyarrow directly; ``None`` if not clean."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    if not head or any(head.startswith(m) for m in _MAGIC) or head.startswith(_BOM):
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
    dict_type = pa.dictionary(pa.int32(), pa.string())
    try:
        # an explicit stream: no guessing of compression from the file name
        with pa.OSFile(str(path)) as stream:
            table = pcsv.read_csv(
                stream,
                read_options=pcsv.ReadOptions(column_names=list(RUN_COLUMNS), block_size=1 << 24),
                parse_options=pcsv.ParseOptions(
                    delimiter=delim.decode(), quote_char=False, ignore_empty_lines=False
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={
                        "query_id": dict_type,
                        # q0 and tag are nearly always one constant: plain strings parse
                        # faster than dictionaries, and _compact() encodes them after
                        "q0": pa.string(),
                        "doc_id": pa.string(),
                        "rank": pa.string(),
                        "score": pa.float64(),
                        "tag": pa.string(),
                    },
                    include_columns=["query_id", "q0", "doc_id", "score", "tag"],
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None  # anything unusual: the general path reads it or explains the error
    columns = {name: table.column(name) for name in table.column_names}
    del table
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
    # the sample looked clean; make sure the whole file was: every field non-empty and free
    # of whitespace, no comment lines. Otherwise the general path decides.
    for name in ("query_id", "q0", "tag"):
        values = out[name].dictionary.to_pylist()
        if any(not v or v != v.strip() or any(c.isspace() for c in v) for v in values):
            return None
        if name == "query_id" and any(v.startswith("#") for v in values):
            return None
    if not all(_clean_strings(chunk) for chunk in out["doc_id"].chunks):
        return None
    return pa.table(out)


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
    return _dict(col)


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


def _clean_strings(arr: pa.Array) -> bool:
    """True if no string of *arr* is empty or contains ASCII whitespace or control bytes."""
    import numpy as np

    if len(arr) == 0:
        return True
    buffers = arr.buffers()
    width = np.int64 if str(arr.type) == "large_string" else np.int32
    offsets = np.frombuffer(buffers[1], width)[arr.offset : arr.offset + len(arr) + 1]
    if (np.diff(offsets) <= 0).any():
        return False
    data = np.frombuffer(buffers[2], np.uint8)[offsets[0] : offsets[-1]]
    return not bool((data <= 32).any())  # whitespace and control characters are all <= 32


def read_run_table(source: str | Path) -> tuple[pa.Table, np.ndarray | None]:
    """Read a TREC run into a table ``query_id, q0, doc_id, score, tag`` in file order.

    ``query_id``, ``q0`` and ``tag`` are dictionary-encoded; ``score`` is float64; the rank
    column is checked to exist and otherwise ignored, as trec_eval does.

    Returns:
        The table and the 1-based line number of each row, or ``None`` when row *i* is
        line *i* + 1 (a file without comments or blank lines).

    Raises:
        InputError: naming the file, line and column of the first bad line.
    """
    if str(source) != "-":
        path = Path(source)
        if path.is_file() and path.stat().st_size > 0:
            table = _run_fast(path)
            if table is not None:
                return table, None
    return parse_run(read_bytes(source), source_name(source))


def parse_run(data: bytes, name: str, first_line: int = 1) -> tuple[pa.Table, np.ndarray]:
    """Parse TREC run text (the general path of :func:`read_run_table`); *first_line* is the
    line number of the first line of *data* (a block of a larger file).

    Returns:
        The table and the line number of each row.
    """
    import pyarrow as pa

    lines = _split_lines(data, name, first_line)
    _need_columns(lines, 6, "query_id Q0 doc_id rank score tag")
    score = _to_float(lines, 4, "the score (column 5)")
    table = pa.table(
        {
            "query_id": _dict(lines.column(0)),
            "q0": _dict(lines.column(1)),
            "doc_id": lines.column(2),
            "score": score,
            "tag": _dict(lines.column(5)),
        }
    )
    return table, lines.line


# ---------------------------------------------------------------------------- qrels
def read_qrels_table(source: str | Path) -> pa.Table:
    """Read TREC qrels (``qid iter docno rel [key=value ...]``) into a table.

    Columns: ``query_id``, ``iteration``, ``doc_id`` (strings), ``relevance`` (float64),
    ``line`` (int64, 1-based line number) and one string column per attribute key
    (null where a line does not give it).

    Raises:
        InputError: naming the file, line and column of the first bad line.
    """
    return parse_qrels(read_bytes(source), source_name(source))


def parse_qrels(data: bytes, name: str, first_line: int = 1) -> pa.Table:
    """Parse TREC qrels text (see :func:`read_qrels_table`); *first_line* is the line number
    of the first line of *data*."""
    import pyarrow as pa

    lines = _split_lines(data, name, first_line)
    _need_columns(lines, 4, "query_id iteration doc_id relevance")
    rel = _to_float(lines, 3, "the relevance (column 4)")
    columns: dict[str, pa.Array] = {
        "query_id": lines.column(0),
        "iteration": lines.column(1),
        "doc_id": lines.column(2),
        "relevance": rel,
        "line": pa.array(lines.line, pa.int64()),
    }
    columns.update(_attributes(lines, 4, "after the relevance", reserved=set(RESERVED)))
    return pa.table(columns)


# ---------------------------------------------------------------------------- docinfo
def read_docinfo_table(source: str | Path) -> pa.Table:
    """Read a side file of document attributes (``docno [key=value ...]``) into a table.

    Attributes are query-independent: :meth:`rankeval.Qrels.with_docinfo` gives them to every
    qrels line of the document. Comments, blank lines, compression and ``-`` work as in qrels;
    a line with a docno and no attribute is allowed (it gives the document no attribute).

    Columns: ``doc_id`` (string), ``line`` (int64, 1-based line number) and one string column
    per attribute key (null where a line does not give it).

    Raises:
        InputError: naming the file, line and column of the first bad line: a field that is
            not ``key=value``, a key given twice on a line, a reserved key (``query_id``,
            ``iteration``, ``doc_id``, ``relevance``, ``line``), or a docno given on two lines
            (naming both).
    """
    import numpy as np
    import pyarrow as pa

    lines = _split_lines(read_bytes(source), source_name(source))
    doc = lines.column(0)
    columns: dict[str, pa.Array] = {"doc_id": doc, "line": pa.array(lines.line, pa.int64())}
    if len(doc):
        code = np.asarray(_dict(doc).indices)
        order = np.argsort(code, kind="stable")
        later = order[1:][code[order][1:] == code[order][:-1]]  # every line but a docno's first
        if later.size:
            row = int(later.min())
            first = int(np.flatnonzero(code == code[row])[0])
            raise lines.fail(
                row,
                f"document {doc[row].as_py()!r} given twice (first on line {int(lines.line[first])}); "
                "expected one line per document",
                0,
            )
    columns.update(_attributes(lines, 1, "after the docno", reserved=set(RESERVED)))
    return pa.table(columns)
