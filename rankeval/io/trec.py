"""Reading TREC qrels and runs: bytes → validated pyarrow tables.

Two paths, one result:

* the **fast path** hands a clean run file (one space or one tab between columns; plain or
  compressed, decompressed as a stream) straight to pyarrow's multi-threaded CSV parser;
* the **general path** reads whole lines, trims them and splits on ASCII whitespace (space,
  tab, CR, LF, VT, FF: what trec_eval's ``sscanf`` splits on) with vectorised pyarrow
  kernels. It accepts comments, blank lines, CRLF, a UTF-8 BOM, runs of mixed whitespace,
  trailing junk columns (as trec_eval does) and ``key=value`` attributes, and it knows every
  line number, so it is also what reports errors: whenever the fast path meets anything
  unusual it steps aside and the general path decides.

Files are opened only through :mod:`rankeval.io.inputs` (one error handling for missing,
unreadable and directory paths; streaming decompression; memory limits); the general path's
line splitting and its checks are in :mod:`rankeval.io.lines`.

What is an error (an :class:`~rankeval.errors.InputError` naming the file, the line and,
where useful, the column):

* a line longer than :data:`MAX_LINE` (1 MiB); the message echoes at most 200 characters;
* a control byte (``\\x00``-``\\x08``, ``\\x0e``-``\\x1f``, ``\\x7f``) anywhere in a line:
  ids cannot contain them and trec_eval would read them differently; UTF-16 or UTF-32 text
  is recognised and named; text that is not valid UTF-8;
* too few columns, a score or relevance that is not a number, a NaN score (``±inf`` are
  valid scores, ranked first or last), a relevance that is not finite or outside
  :data:`~rankeval.io.validate.GRADES`;
* a run given as the qrels, or qrels as the run: when the first line fails and has the other
  format's shape, the error says so (``run.txt looks like a run file; the qrels come first``);
* the same ``(query_id, iteration, doc_id)`` on two qrels lines (naming both, as trec_eval
  rejects them), the same docno on two lines of a docinfo file;
* more than :data:`MAX_ATTRIBUTES` different ``key=value`` names in one file;
* a file without any judgment (qrels) or any line (run): empty, blank or only comments.

There is no Python loop per line, except on the error path (to find the offending line).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rankeval.errors import InputError
from rankeval.io import inputs
from rankeval.io.fast_run import dictionary_encode, read_run_fast
from rankeval.io.inputs import source_name
from rankeval.io.lines import MAX_LINE, Lines, need_columns, show, split_lines, to_float
from rankeval.io.schema import run_table
from rankeval.io.validate import (
    GRADES_EXPECTED,
    bad_grade,
    repeated_judgment,
    repeated_message,
    trec_swapped,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_LINE",
    "RESERVED",
    "is_compressed",
    "parse_qrels",
    "parse_run",
    "read_bytes",
    "read_docinfo_table",
    "read_qrels_table",
    "read_run_table",
    "source_name",
]

MAX_ATTRIBUTES = 100
"""Most different ``key=value`` names one qrels or docinfo file may use: each becomes a
column with one entry per line, so their number multiplies the memory a file takes."""

_BOM = b"\xef\xbb\xbf"
RESERVED = ("query_id", "iteration", "doc_id", "relevance", "line")
"""Columns of a qrels table that are not attributes: no ``key=value`` may use these names."""


def is_compressed(path: str | Path) -> bool:
    """Whether the file at *path* starts with gzip, bzip2 or xz magic bytes.

    Raises:
        InputError: the file cannot be read (missing, a directory, permission denied ...).
    """
    return inputs.compression_of(inputs.read_raw_head(path, 16)) is not None


def read_bytes(source: str | Path) -> bytes:
    """Whole file as bytes: stdin for ``-``; gzip, bzip2 and xz decompressed (as a stream,
    detected by magic bytes); a UTF-8 byte order mark removed.

    Raises:
        InputError: the file cannot be read, or its compressed data is corrupt.
        ResourceError: it decompresses to more than the memory available.
    """
    data = inputs.read_all(source)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    return data


def _empty(data: bytes, name: str, what: str, expected: str) -> InputError:
    """The error for a file that gave no content line."""
    if not data:
        how = "the file is empty"
        if name == "<stdin>":
            how = "stdin gave no data (it can be read only once: if '-' was also the qrels, it was read for them)"
    elif data.isspace():
        how = "the file has only blank lines"
    else:
        how = "the file has only comments and blank lines"
    return InputError(f"{what}: {how}; expected lines '{expected}'", source=name)


def _attributes(lines: Lines, first: int, where: str, reserved: set[str]) -> dict[str, pa.Array]:
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
    if n_fields.max() == first + 1:
        simple = _one_attribute_per_line(lines, n_fields, first, reserved)
        if simple is not None:
            return simple
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
            int(parent[i]),
            f"expected key=value attribute {where}, found {show(flat[i].as_py())}",
            field_no(i),
        )
    parts = pc.split_pattern(flat, "=", max_splits=1)
    keys = pc.list_element(parts, 0)
    values = pc.list_element(parts, 1)
    names = pc.unique(keys)
    if len(names) > MAX_ATTRIBUTES:
        i = int(
            np.flatnonzero(pc.is_in(keys, value_set=names[MAX_ATTRIBUTES:]).to_numpy(zero_copy_only=False))[0]
        )
        raise lines.fail(
            int(parent[i]),
            f"more than {MAX_ATTRIBUTES} different attribute names (key=value); expected a few, "
            "such as cost= and sens=",
            field_no(i),
        )
    for key in names.to_pylist():
        mask = pc.equal(keys, key).to_numpy(zero_copy_only=False)
        rows = parent[mask]
        if key in reserved:
            i = int(np.flatnonzero(mask)[0])
            raise lines.fail(int(parent[i]), f"attribute name {show(key)} is reserved", field_no(i))
        dup = np.flatnonzero(np.diff(rows) == 0)
        if dup.size:
            i = int(np.flatnonzero(mask)[dup[0] + 1])
            raise lines.fail(int(parent[i]), f"attribute {show(key)} given twice on one line", field_no(i))
        # scatter this key's values onto their lines (null elsewhere), all in pyarrow
        index = np.full(len(lines.line), -1, dtype=np.int64)
        index[rows] = np.arange(len(rows))
        columns[key] = values.filter(pa.array(mask)).take(pa.array(index, mask=index < 0))
    return columns


def _one_attribute_per_line(
    lines: Lines, n_fields: np.ndarray, first: int, reserved: set[str]
) -> dict[str, pa.Array] | None:
    """:func:`_attributes` of lines that give at most one attribute each (field *first*),
    all of whose names have the same length (``cost=`` on every line, say): cut at that
    byte instead of split; ``None`` for anything else (other lines, a field that is not
    ``key=value``, a reserved or a hundredth name), which the general path reads or
    explains."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = lines.tokens
    offsets = np.frombuffer(tokens.buffers()[1], np.int32)[tokens.offset : tokens.offset + len(tokens) + 1]
    rows = np.flatnonzero(n_fields == first + 1)
    field = pc.cast(tokens.values.take(pa.array(offsets[rows] + first)), pa.binary())
    pos = pc.find_substring(field, b"=").to_numpy()
    if pos[0] <= 0 or not (pos == pos[0]).all():
        return None
    keys = pc.binary_slice(field, 0, int(pos[0]))
    names = pc.unique(keys)
    if len(names) > min(MAX_ATTRIBUTES, 8):
        return None
    try:
        values = pc.cast(pc.binary_slice(field, int(pos[0]) + 1, 2**31 - 1), pa.string())
        names = pc.cast(names, pa.string())
    except pa.ArrowInvalid:  # pragma: no cover - the text was UTF-8, cut at an ASCII byte
        return None
    del field
    columns: dict[str, pa.Array] = {}
    for key in names.to_pylist():
        if key in reserved:
            return None
        mask = pc.equal(keys, pa.scalar(key.encode(), pa.binary())) if len(names) > 1 else None
        index = np.full(len(lines.line), -1, dtype=np.int64)
        on = rows if mask is None else rows[mask.to_numpy(zero_copy_only=False)]
        index[on] = np.arange(len(on))
        own = values if mask is None else values.filter(mask)
        columns[key] = own.take(pa.array(index, mask=index < 0))
    return columns


# ---------------------------------------------------------------------------- runs
def read_run_table(source: str | Path) -> tuple[pa.Table, np.ndarray | None]:
    """Read a TREC run into a table ``query_id, q0, doc_id, score, tag`` in file order.

    ``query_id``, ``q0`` and ``tag`` are dictionary-encoded; ``score`` is float64; the rank
    column is checked to exist and otherwise ignored, as trec_eval does.

    Returns:
        The table and the 1-based line number of each row, or ``None`` when row *i* is
        line *i* + 1 (a file without comments or blank lines).

    Raises:
        InputError: naming the file, line and column of the first bad line; a file
            without any line (empty, blank, only comments); a missing, unreadable or
            directory path.
        ResourceError: memory ran out, or the file decompresses to more than there is.
    """
    name = source_name(source)
    with inputs.reading(
        source,
        "run",
        "use a machine with more memory (evaluating a run file sorted by query reads it in blocks)",
    ):
        if inputs.path_kind(source) == "file":  # pipes and stdin can be read only once
            table = read_run_fast(source)
            if table is not None:
                return table, None
        data = read_bytes(source)
        table, lines = parse_run(data, name)
        if table.num_rows == 0:
            raise _empty(data, name, "empty run", "query_id Q0 doc_id rank score tag")
        return table, lines


def parse_run(data: bytes, name: str, first_line: int = 1) -> tuple[pa.Table, np.ndarray]:
    """Parse TREC run text (the general path of :func:`read_run_table`); *first_line* is the
    line number of the first line of *data* (a block of a larger file).

    Returns:
        The table and the line number of each row (no row for an empty block).

    Raises:
        InputError: naming the file, line and column of the first bad line (see the module
            docstring); a NaN score.
        ResourceError: memory ran out.
    """
    import numpy as np
    import pyarrow.compute as pc

    with inputs.reading(name, "run block" if first_line != 1 else "run"):
        lines = split_lines(data, name, first_line)
        try:
            need_columns(lines, 6, "query_id Q0 doc_id rank score tag")
            score = to_float(lines, 4, "the score (column 5)")
        except InputError as exc:
            raise trec_swapped(lines, first_line, exc, "run") or exc from None
        if pc.any(pc.is_nan(score)).as_py():
            row = int(np.flatnonzero(pc.is_nan(score).to_numpy(zero_copy_only=False))[0])
            raise lines.fail(
                row, "score is NaN; expected a number (inf and -inf are allowed, NaN cannot be ranked)", 4
            )
        table = run_table(lines.column(0), lines.column(1), lines.column(2), score, lines.column(5))
    return table, lines.line


# ---------------------------------------------------------------------------- qrels
def read_qrels_table(source: str | Path) -> pa.Table:
    """Read TREC qrels (``qid iter docno rel [key=value ...]``) into a table.

    Columns: ``query_id``, ``iteration``, ``doc_id`` (strings), ``relevance`` (float64),
    ``line`` (int64, 1-based line number) and one string column per attribute key
    (null where a line does not give it).

    Raises:
        InputError: naming the file, line and column of the first bad line (see the module
            docstring); a file without any judgment; a missing, unreadable or directory path.
        ResourceError: memory ran out, or the file decompresses to more than there is.
    """
    name = source_name(source)
    with inputs.reading(source, "qrels"):
        data = read_bytes(source)
        table = parse_qrels(data, name)
        if table.num_rows == 0:
            raise _empty(data, name, "no judgments", "query_id iteration doc_id relevance")
        return table


def parse_qrels(data: bytes, name: str, first_line: int = 1) -> pa.Table:
    """Parse TREC qrels text (see :func:`read_qrels_table`); *first_line* is the line number
    of the first line of *data*.

    Raises:
        InputError: a bad line (see the module docstring), a relevance that is not finite,
            a ``(query_id, iteration, doc_id)`` given twice (naming both lines).
    """
    import pyarrow as pa

    lines = split_lines(data, name, first_line)
    need_columns(lines, 4, "query_id iteration doc_id relevance")
    rel = to_float(lines, 3, "the relevance (column 4)")
    row = bad_grade(rel)
    if row is not None:
        raise lines.fail(
            row,
            f"expected {GRADES_EXPECTED} for the relevance (column 4), found {show(lines.column(3)[row].as_py())}",
            3,
        )
    columns: dict[str, pa.Array] = {
        "query_id": lines.column(0),
        "iteration": lines.column(1),
        "doc_id": lines.column(2),
        "relevance": rel,
        "line": pa.array(lines.line, pa.int64()),
    }
    repeated = repeated_judgment(columns)
    if repeated is not None:
        first, row = repeated
        raise lines.fail(row, repeated_message(columns, row, f"line {int(lines.line[first])}"), 2)
    try:
        columns.update(_attributes(lines, 4, "after the relevance", reserved=set(RESERVED)))
    except InputError as exc:
        raise trec_swapped(lines, first_line, exc, "qrels") or exc from None
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
            (naming both); any line the qrels reader refuses too (control bytes, encodings,
            long lines); a missing, unreadable or directory path.
        ResourceError: memory ran out, or the file decompresses to more than there is.
    """
    import numpy as np
    import pyarrow as pa

    with inputs.reading(source, "docinfo file"):
        lines = split_lines(read_bytes(source), source_name(source))
        doc = lines.column(0)
        columns: dict[str, pa.Array] = {"doc_id": doc, "line": pa.array(lines.line, pa.int64())}
        if len(doc):
            code = np.asarray(dictionary_encode(doc).indices)
            order = np.argsort(code, kind="stable")
            later = order[1:][code[order][1:] == code[order][:-1]]  # every line but a docno's first
            if later.size:
                row = int(later.min())
                first = int(np.flatnonzero(code == code[row])[0])
                raise lines.fail(
                    row,
                    f"document {show(doc[row].as_py())} given twice (first on line {int(lines.line[first])}); "
                    "expected one line per document",
                    0,
                )
        columns.update(_attributes(lines, 1, "after the docno", reserved=set(RESERVED)))
        return pa.table(columns)
