"""Text lines: bytes → checked, whitespace-split content lines, and the errors that name a line.

This is the general path of :mod:`rankeval.io.trec` (and all of the qrels and docinfo readers):
the text is checked as a whole first — UTF-16/UTF-32 text is named, control bytes are
refused (ids are split on whitespace only, so a NUL or an escape sequence would silently
become part of an id), lines over :data:`MAX_LINE` are refused — then pyarrow's CSV
reader cuts it into lines, which are trimmed and split on ASCII whitespace (space, tab, CR,
LF, VT, FF: what trec_eval's ``sscanf`` splits on) with vectorised kernels. Comments
(``#``) and blank lines are dropped and every remaining line keeps its number, so that any
later check can name the file, the line and the column (:meth:`Lines.fail`).

Everything that locates an error in the raw bytes (a line that is too long, a byte that is
not UTF-8, a control byte) runs on the error path only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankeval.errors import MAX_ECHO, InputError, clip

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "CONTROL_REGEX",
    "MAX_LINE",
    "Lines",
    "check_encoding",
    "check_utf8",
    "need_columns",
    "show",
    "split_lines",
    "surrogate_message",
    "to_float",
]

MAX_LINE = 1 << 20
"""Longest line accepted by the readers, in bytes (1 MiB, without the line end). Real
qrels and run lines are well under a kilobyte; the limit keeps a corrupt or hostile file
(a decompression bomb of one endless line, a file without newlines) from taking the memory
and the time of a whole-file parse, and its message from being megabytes long."""


_CONTROL = bytes([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])
"""Bytes no line may contain: C0 controls except tab, LF, VT, FF, CR (whitespace, i.e.
separators), and DEL."""
_ASCII_SPACE = " \t\n\v\f\r"
CONTROL_REGEX = r"[\x00-\x1f\x7f]"
"""The characters no id may hold (a regular expression for pyarrow's kernels): C0 controls,
DEL. In a file, tab, LF, VT, FF and CR separate fields; an id in JSON or in memory (a
DataFrame, a dict) cannot hold them either."""
_UTF16_32_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def surrogate_message(char: str) -> str:
    """The error for an id holding *char*, half of a UTF-16 surrogate pair without the other
    half: Python strings can hold one (a JSON escape ``\\ud800``, a ``str`` of the API), but
    it is no Unicode character and no file can hold it as UTF-8."""
    return (
        f"unpaired surrogate {char!r} in an id; expected text that UTF-8 can encode "
        "(\\ud800-\\udfff only in pairs)"
    )


def show(value: object, limit: int = 60) -> str:
    """*value* for a message: its ``repr``, cut to about *limit* characters."""
    return repr(clip(str(value), limit))


# ---------------------------------------------------------------------------- error path
def _locate(data: bytes, pos: int) -> tuple[int, int, str, int]:
    """Line number, 1-based column (in characters), text (at most ``MAX_ECHO`` characters
    of it) and length in bytes of the line of *data* that holds byte *pos*."""
    line = data.count(b"\n", 0, pos) + 1
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    end = len(data) if end < 0 else end
    column = len(data[start:pos].decode("utf-8", "replace")) + 1
    text = data[start : min(end, start + 4 * MAX_ECHO)].decode("utf-8", "replace").rstrip("\r")
    if end - start > 4 * MAX_ECHO:
        text = text[:MAX_ECHO]
    return line, column, text, end - start


def _error_at(data: bytes, pos: int, name: str, message: str, first_line: int) -> InputError:
    line, column, text, _ = _locate(data, pos)
    return InputError(message, source=name, line=line + first_line - 1, column=column, text=text)


def check_utf8(data: bytes, name: str, first_line: int = 1) -> None:
    """Raise an InputError naming the first line that is not valid UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error_at(data, exc.start, name, "not valid UTF-8 text", first_line) from None


def _wide_encoding(data: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` if *data* looks like text in that encoding: a byte
    order mark, or (without one) NUL bytes in every other (every fourth) position, as ASCII
    text in UTF-16 (UTF-32) has."""
    for bom, encoding in _UTF16_32_BOMS:
        if data.startswith(bom):
            return encoding
    sample = data[:4096]
    if len(sample) < 4:
        return None
    nul = [sample[k::4].count(0) / len(sample[k::4]) for k in range(4)]
    if sum(v > 0.9 for v in nul) == 3:
        return "UTF-32"
    if (nul[0] > 0.6 and nul[2] > 0.6) or (nul[1] > 0.6 and nul[3] > 0.6):
        return "UTF-16"
    return None


def check_encoding(data: bytes, name: str, first_line: int = 1) -> None:
    """Refuse UTF-16 and UTF-32 text by name (it would otherwise be reported as a NUL byte
    or as invalid UTF-8, which does not tell the user what to do).

    Raises:
        InputError: naming the encoding.
    """
    encoding = _wide_encoding(data[:4096])
    if encoding is not None:
        raise InputError(
            f"{encoding} text; expected UTF-8 (convert it with iconv)", source=name, line=first_line
        )


def _check_bytes(data: bytes, name: str, first_line: int = 1) -> None:
    """Refuse UTF-16/UTF-32 text and control bytes: a reader splits on whitespace only, so a
    NUL or an escape sequence would otherwise silently become part of an id.

    Raises:
        InputError: naming the encoding, or the line and column of the first control byte.
    """
    check_encoding(data, name, first_line)
    found = [pos for pos in (data.find(bytes([b])) for b in _CONTROL) if pos >= 0]
    if found:
        pos = min(found)
        raise _error_at(
            data,
            pos,
            name,
            f"control character \\x{data[pos]:02x}; expected text (ids cannot contain it)",
            first_line,
        )


def _long_line(data: bytes, name: str, first_line: int) -> InputError | None:
    """The error for the first line of *data* longer than :data:`MAX_LINE`, if any (read in
    windows: the file may be large and the error path should not double its memory)."""
    import numpy as np

    arr = np.frombuffer(data, np.uint8)
    window = 1 << 26
    start, line = 0, 1  # start of the current line, its number
    for pos in range(0, len(arr), window):
        ends = np.flatnonzero(arr[pos : pos + window] == 10) + pos
        if ends.size:
            starts = np.concatenate(([start], ends[:-1] + 1))
            long = np.flatnonzero(ends - starts > MAX_LINE)
            if long.size:
                k = int(long[0])
                begin = int(starts[k])
                return _too_long(
                    data[begin : begin + 4 * _LONG_ECHO],
                    int(ends[k]) - begin,
                    line + k + first_line - 1,
                    name,
                )
            line += ends.size
            start = int(ends[-1]) + 1
        if min(pos + window, len(arr)) - start > MAX_LINE:  # the open line is already too long
            stop = data.find(b"\n", start)
            length = (len(data) if stop < 0 else stop) - start
            return _too_long(data[start : start + 4 * _LONG_ECHO], length, line + first_line - 1, name)
    return None


_LONG_ECHO = 100
"""Characters echoed of a line over the limit: its start says what the file is."""


def _too_long(head: bytes, length: int, line: int, name: str) -> InputError:
    """The error for line *line* of *length* bytes that starts with *head*."""
    return InputError(
        f"line of {length:,} bytes, over the limit of {MAX_LINE:,} bytes (1 MiB)",
        source=name,
        line=line,
        text=head[: 4 * _LONG_ECHO].decode("utf-8", "replace")[:_LONG_ECHO],
    )


@dataclass
class Lines:
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
        while pos < n and text[pos] in _ASCII_SPACE:
            pos += 1
        if i == field:
            return pos + 1
        while pos < n and text[pos] not in _ASCII_SPACE:
            pos += 1
    return n + 1


def split_lines(data: bytes, name: str, first_line: int = 1) -> Lines:
    """The content lines of *data* split on whitespace; *first_line* is the line number of
    its first line (a block of a larger file).

    Raises:
        InputError: UTF-16/32 or invalid UTF-8 text, a control byte, a line longer than
            :data:`MAX_LINE`.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    from rankeval.io.memory import reserve, threads_fit

    _check_bytes(data, name, first_line)
    if not data or data.isspace():
        empty = pa.array([], pa.string())
        return Lines(name, pc.ascii_split_whitespace(empty), np.zeros(0, np.int64), empty)
    reserve(len(data))
    try:
        table = pcsv.read_csv(
            pa.BufferReader(data),
            # no control byte is left, so \x1f never splits a line: one column, the line
            read_options=pcsv.ReadOptions(
                column_names=["line"], block_size=1 << 24, use_threads=threads_fit(len(data))
            ),
            parse_options=pcsv.ParseOptions(delimiter="\x1f", quote_char=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types={"line": pa.string()},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        # a line longer than the block ("straddling object"), or not UTF-8
        error = _long_line(data, name, first_line)
        if error is not None:
            raise error from None
        check_utf8(data, name, first_line)
        raise InputError(f"cannot be read as text lines: {clip(str(exc))}", source=name) from None
    raw = table.column("line").combine_chunks()
    del table
    if len(raw) == 0:
        return Lines(name, pc.ascii_split_whitespace(raw), np.zeros(0, np.int64), raw)
    length = pc.binary_length(raw)
    if pc.max(length).as_py() > MAX_LINE:
        row = int(np.flatnonzero(length.to_numpy(zero_copy_only=False) > MAX_LINE)[0])
        start = int(np.frombuffer(raw.buffers()[1], np.int32)[raw.offset + row])
        head = raw.buffers()[2][start : start + 4 * _LONG_ECHO].to_pybytes()
        raise _too_long(head, int(length[row].as_py()), row + first_line, name)
    del length
    tokens = pc.ascii_split_whitespace(raw)
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
            return Lines(name, tokens, np.arange(first_line, first_line + len(raw)), raw)
    del tokens, flat
    trimmed = pc.ascii_trim_whitespace(raw)
    keep = pc.and_(pc.not_equal(pc.binary_length(trimmed), 0), pc.invert(pc.starts_with(trimmed, "#")))
    line_numbers = np.flatnonzero(keep.to_numpy(zero_copy_only=False)) + first_line
    return Lines(name, pc.ascii_split_whitespace(trimmed.filter(keep)), line_numbers, raw.filter(keep))


def need_columns(lines: Lines, count: int, what: str) -> None:
    import numpy as np
    import pyarrow.compute as pc

    n = pc.list_value_length(lines.tokens).to_numpy()
    bad = np.flatnonzero(n < count)
    if bad.size:
        row = int(bad[0])
        raise lines.fail(row, f"expected {count} columns ({what}), found {int(n[row])}", int(n[row]))


def to_float(lines: Lines, field: int, what: str) -> pa.Array:
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
    raise lines.fail(row, f"expected a number for {what}, found {show(col[row].as_py())}", field)
