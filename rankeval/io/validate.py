"""The checks the readers share, and the checked conversion of input built in memory.

- grades: :data:`GRADES`, the relevance values accepted from any source, and :func:`bad_grade`;
- tables built in memory (a DataFrame, a dict, Parquet, the hTBG JSON format), checked as the
  TREC reader checks a file's lines: :func:`check_ids`, :func:`check_judgments`,
  :func:`check_text_columns`; :func:`repeated_judgment` (the TREC qrels reader's check too);
- the columns of a DataFrame and the rows of a ``{query_id: {doc_id: number}}`` dict, for
  :mod:`rankeval.io.data`: :func:`id_strings`, :func:`float_column`, :func:`dict_rows`;
- a file given in the other's place (a run as the qrels, or the other way round), named as
  such: :func:`trec_swapped`, :func:`htbg_swapped`;
- the exact path of :mod:`rankeval.io.htbg_json`: :class:`JsonReader`, one walk over a JSON
  document with the checks shared by truth and prediction files.

May import: :mod:`rankeval.errors`, ``lines``, ``fast_run``; numpy, pyarrow and pandas lazily.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rankeval.errors import InputError, UsageError, clip
from rankeval.io.fast_run import dictionary_encode
from rankeval.io.lines import CONTROL_REGEX, Lines, check_utf8, show, surrogate_message

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "GRADES",
    "GRADES_EXPECTED",
    "JsonInteger",
    "JsonReader",
    "bad_grade",
    "check_ids",
    "check_judgments",
    "check_text_columns",
    "dict_rows",
    "float_column",
    "htbg_swapped",
    "id_strings",
    "is_htbg_judgment",
    "repeated_judgment",
    "repeated_message",
    "trec_swapped",
]

GRADES = (-(2**31), 2**31 - 1)
"""The relevance values accepted, inclusive: those of a 32-bit integer, the range of the
measures' ``rel`` parameter (fractions in between are accepted: stopping probabilities,
fractional grades). A grade past it (``1e19``, ``1.7e308``) is refused rather than summed
into an infinite or inexact gain."""
GRADES_EXPECTED = f"a finite number in [{GRADES[0]}, {GRADES[1]}]"


def bad_grade(relevance: pa.Array | pa.ChunkedArray) -> int | None:
    """The first row whose relevance is missing, NaN, infinite or outside :data:`GRADES`, or
    ``None`` (vectorised)."""
    import numpy as np
    import pyarrow.compute as pc

    ok = pc.and_(pc.greater_equal(relevance, GRADES[0]), pc.less_equal(relevance, GRADES[1]))
    if not relevance.null_count and pc.all(ok, min_count=0).as_py():
        return None
    return int(np.flatnonzero(~pc.fill_null(ok, False).to_numpy(zero_copy_only=False))[0])


# --------------------------------------------------------------- tables built in memory
def _where(table: pa.Table, row: int) -> tuple[str, int | None]:
    """Where table row *row* came from, for a message: ``("line N", N)`` for a row read from
    a file (its ``line`` column), else ``("row N", None)`` (1-based)."""
    if "line" in table.column_names:
        line = table.column("line")[row].as_py()
        if line:
            return f"line {line}", int(line)
    return f"row {row + 1}", None


def _fail_at(table: pa.Table, row: int, message: str, source: str) -> InputError:
    """An InputError about table row *row*: on its line, or naming the row."""
    text, at = _where(table, row)
    return InputError(message + (f" ({text})" if at is None else ""), source=source, line=at)


def _suspect(ids: pa.Array) -> bool:
    """Whether an id of string array *ids* may be null, empty or hold a control character:
    numpy over its offsets and bytes (a control character is one byte in UTF-8, never part
    of another character's), many times faster than a regular expression per id."""
    import numpy as np
    import pyarrow as pa

    if ids.null_count:
        return True
    if not len(ids):
        return False
    kind = np.int64 if pa.types.is_large_string(ids.type) else np.int32
    offsets = np.frombuffer(ids.buffers()[1], kind)[ids.offset : ids.offset + len(ids) + 1]
    if (offsets[1:] == offsets[:-1]).any():
        return True
    data = np.frombuffer(ids.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    return bool(((data < 0x20) | (data == 0x7F)).any())


def check_ids(table: pa.Table, names: tuple[str, ...], source: str) -> None:
    """Check the id columns *names* of a table built in memory (a DataFrame, a dict, Parquet)
    as a file's ids are checked: each given (not null: pandas' ``None``, ``NaN``), not
    empty, without control characters (an unpaired surrogate cannot reach a table: see
    ``rankeval.io.data``).

    Raises:
        InputError: naming the column, the value and the row (or line).
    """
    import numpy as np
    import pyarrow.compute as pc

    for name in names:
        ids = table.column(name)
        if not any(map(_suspect, ids.chunks)):
            continue
        bad = pc.or_(pc.equal(pc.binary_length(ids), 0), pc.match_substring_regex(ids, CONTROL_REGEX))
        row = int(np.flatnonzero(pc.fill_null(bad, True).to_numpy(zero_copy_only=False))[0])
        value = ids[row].as_py()
        if value is None:
            message = f"missing {name} (None, NaN or NA); expected an id"
        elif not value:
            message = f"empty {name}; expected a non-empty id"
        else:
            char = next(c for c in value if ord(c) < 0x20 or ord(c) == 0x7F)
            message = (
                f"control character {char!r} in {name} {show(value)}; expected text (ids cannot contain it)"
            )
        # the row's other ids: a dict's rows have no order the user wrote
        known = [f"{c} {show(table.column(c)[row].as_py())}" for c in ("query_id", "doc_id") if c != name]
        raise _fail_at(table, row, f"{message} ({', '.join(known)})", source)


def check_judgments(table: pa.Table, source: str) -> None:
    """Check qrels built in memory (a DataFrame, a dict, the hTBG JSON format, Parquet) as
    the TREC reader checks a file: ids given and well-formed (:func:`check_ids`), every
    relevance a grade within :data:`GRADES`, no ``(query_id, iteration, doc_id)`` judged
    twice.

    Raises:
        InputError: naming the row (1-based; both rows for a repeated judgment) or, for
            rows read from a file, the line.
    """
    check_ids(table, ("query_id", "iteration", "doc_id"), source)
    rel = table.column("relevance")
    row = bad_grade(rel)
    if row is not None:
        found = show(rel[row].as_py()) if rel[row].is_valid else "NaN or a missing value"
        raise _fail_at(table, row, f"expected {GRADES_EXPECTED} for the relevance, found {found}", source)
    repeated = repeated_judgment(table)
    if repeated is None:
        return
    first, row = repeated
    raise _fail_at(table, row, repeated_message(table, row, _where(table, first)[0]), source)


def repeated_judgment(columns: dict[str, pa.Array] | pa.Table) -> tuple[int, int] | None:
    """Rows ``(first, later)`` of the first ``(query_id, iteration, doc_id)`` that a later
    row repeats (the later row being the earliest such), or ``None``. Hashing in pyarrow, then
    a count over the pair codes (a sort when they span too wide a range): O(total bytes +
    rows), or O(rows log rows)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    codes = []
    for name in ("query_id", "iteration", "doc_id"):
        encoded = dictionary_encode(columns[name])
        codes.append((np.asarray(encoded.indices, dtype=np.int64), max(len(encoded.dictionary), 1)))
    (q, nq), (i, ni), (d, nd) = codes
    if len(q) < 2:
        return None
    qi = q * ni + i  # < nq * ni <= rows * rows: no overflow
    if nq > 1 and ni > 1:  # codes of the (query, iteration) pairs, < rows
        qi = np.asarray(pc.dictionary_encode(pa.array(qi)).indices, dtype=np.int64)
    key = qi * nd + d
    span = (int(qi.max()) + 1) * nd
    if span <= 4 * len(key) + 1024:  # dense: a flag per possible key
        seen = np.zeros(span, dtype=bool)
        seen[key] = True
        if np.count_nonzero(seen) == len(key):
            return None
        del seen
    else:
        ordered = np.sort(key)
        if not (ordered[1:] == ordered[:-1]).any():
            return None
    # a judgment repeated (the error path): find the earliest repeating row
    order = np.argsort(key, kind="stable")
    same = key[order][1:] == key[order][:-1]
    later = int(order[1:][same].min())
    first = int(np.flatnonzero(key == key[later])[0])
    return first, later


def repeated_message(columns: dict[str, pa.Array] | pa.Table, row: int, first: str) -> str:
    def value(key: str) -> str:
        return show(columns[key][row].as_py())

    return (
        f"judgment of document {value('doc_id')} for query {value('query_id')} (iteration "
        f"{value('iteration')}) given twice (first on {first}); expected one line per "
        "(query_id, iteration, doc_id), as trec_eval"
    )


def check_text_columns(table: pa.Table, source: str) -> None:
    """Check that every string column of *table* holds UTF-8 text: pyarrow does not check
    the strings of a Parquet file it reads, and an id that is no text fails later, far
    from its file (a ``str`` with surrogates that no output can write).

    Raises:
        InputError: naming the column.
    """
    import pyarrow as pa

    for column in table.column_names:
        try:
            table.column(column).validate(full=True)
        except pa.ArrowInvalid as exc:
            raise InputError(
                f"column {column!r} is not valid UTF-8 text ({clip(str(exc), 100)})", source=source
            ) from None


# ----------------------------------------------------------------- DataFrames and dicts
def dict_rows(data: Any, what: str, source: str) -> list[tuple[Any, Any, float]]:
    """``(query_id, doc_id, number)`` rows of ``{query_id: {doc_id: number}}``.

    Raises:
        UsageError: *data* is not of that shape, or a value is not a number (naming the
            query and document). The finiteness rules are checked by ``from_frame``.
    """
    import numbers

    if not isinstance(data, Mapping):
        raise UsageError(f"{source}: expected {{query_id: {{doc_id: {what}}}}}, found {type(data).__name__}")
    rows = []
    for q, docs in data.items():
        if not isinstance(docs, Mapping):
            raise UsageError(
                f"{source}: query {q!r} maps to {type(docs).__name__}; expected {{doc_id: {what}}}"
            )
        for d, v in docs.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise UsageError(
                    f"{source}: query {q!r} document {d!r}: expected a number for the {what}, found {v!r}"
                )
            rows.append((q, d, float(v)))  # ids as given (in object columns): from_frame checks them
    return rows


def id_strings(values: pd.Series, column: str, source: str) -> pa.Array:
    """A DataFrame column of ids as strings (``str`` of each value), null where pandas sees
    a missing value (``None``, ``NaN``, ``pd.NA``) for :func:`check_ids` to refuse.

    Raises:
        InputError: a value whose text holds an unpaired surrogate (no file can hold it),
            naming the column and the row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = values.isna().to_numpy(dtype=bool)
    try:
        text = pa.array(values.astype(str), pa.string())
    except UnicodeEncodeError:
        for row, (value, gone) in enumerate(zip(values.tolist(), missing.tolist(), strict=True)):
            bad = None if gone else next((c for c in str(value) if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                raise InputError(
                    f"{surrogate_message(bad)} ({column} {value!r}, row {row + 1})", source=source
                ) from None
        raise  # pragma: no cover - pyarrow encodes any other str
    if missing.any():  # pandas 2 writes them "None", "nan"
        text = pc.if_else(pa.array(missing), pa.scalar(None, pa.string()), text)
    return text


def float_column(values: Any, what: str, source: str) -> Any:
    """A DataFrame column as float64, or a :class:`UsageError` naming the column."""
    try:
        return values.astype("float64")
    except (TypeError, ValueError) as exc:
        raise UsageError(f"the {what} column is not numeric: {clip(str(exc), 100)}", source=source) from None


# ---------------------------------------------------------- a file in the other's place
def trec_swapped(lines: Lines, first_line: int, error: InputError, reading: str) -> InputError | None:
    """The error for a run given where the qrels go, or qrels where a run goes (``rankeval
    RUN QRELS``), when *error* is at the first content line of a whole file (*first_line*
    1; *reading* it as ``"qrels"`` or ``"run"``) and the file has the other format's
    shape; else ``None``.

    A run's shape: every line has 6 fields or more, and the first ``qid Q0 docno rank score
    tag``, rank and score numbers, tag no ``key=value``. Qrels' shape: the first line is
    ``qid iter docno rel [key=value ...]``, rel a number, and it gives an attribute or no
    line has 6 fields (a run whose first line lost its last columns is no qrels file).
    """
    import pyarrow.compute as pc

    if first_line != 1 or not len(lines.line) or error.line != int(lines.line[0]):
        return None
    fields = [str(f) for f in lines.tokens[0].as_py()]
    count = pc.list_value_length(lines.tokens)
    if reading == "qrels":
        other = "a run file"
        shaped = (
            len(fields) == 6
            and _is_number(fields[3])
            and _is_number(fields[4])
            and "=" not in fields[5]
            and pc.min(count).as_py() >= 6
        )
    else:
        other = "a qrels file"
        attributes = fields[4:]
        shaped = (
            len(fields) >= 4
            and _is_number(fields[3])
            and all("=" in f for f in attributes)
            and (bool(attributes) or pc.max(count).as_py() < 6)
        )
    if not shaped:
        return None
    return InputError(f"{lines.name} looks like {other}; the qrels come first: rankeval QRELS RUN")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_htbg_judgment(value: Any) -> bool:
    """Whether *value* is a truth file's judgment of a document: two numbers."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    )


def htbg_swapped(name: str, other: str) -> InputError:
    """The error for a truth file given where the prediction goes, or the other way round:
    its first document is judged as the *other* file judges them."""
    return InputError(f"{name} looks like an hTBG {other} file; the qrels come first: rankeval QRELS RUN")


# --------------------------------------------------- hTBG JSON: the exact path's checks
# what Python's json makes of an escape \ud800-\udfff that is not half of a pair
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Object(dict[str, Any]):
    """A JSON object that remembers the first key it was given twice."""

    duplicate: str | None = None


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                obj.duplicate = key
                break
            seen.add(key)
    return obj


def _path(*keys: str | int) -> str:
    """A JSON path for messages: ``$["q_1"]["user_1"][1]``."""
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f"[{json.dumps(k)}]" for k in keys)


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:60] + "..."


class JsonInteger(float):
    """A JSON integer, read as a float that keeps its literal: a word count keeps it as its
    ``cost=`` text (``120``, not ``120.0``), since the hTBG reference multiplies integer
    word counts as 64-bit integers and others as floats (``rankeval_tbg``'s reference ideal)."""

    text: str

    def __new__(cls, literal: str) -> JsonInteger:
        number = super().__new__(cls, literal)
        number.text = literal
        return number


def _load(data: bytes, name: str, expected: str) -> dict[str, Any]:
    """The JSON document of *data* (the bytes of file *name*), which must be an object.

    Raises:
        InputError: the text is not UTF-8, not valid JSON, nested deeper than Python can
            parse, or not an object.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        check_utf8(data, name)
        raise  # pragma: no cover - check_utf8 raises
    del data
    try:
        # integers as floats: every number of the format is read as one, and Python's int()
        # refuses literals of more than 4300 digits (float() makes them infinite: refused below)
        document = json.loads(text, object_pairs_hook=_object, parse_int=JsonInteger)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg}; expected {expected}", source=name, line=exc.lineno, column=exc.colno
        ) from None
    except ValueError as exc:  # any other literal Python's json cannot convert
        raise InputError(f"not valid JSON: {clip(str(exc), 100)}; expected {expected}", source=name) from None
    except RecursionError:
        raise InputError(
            f"JSON nested too deeply to read; expected {expected} (four levels)", source=name
        ) from None
    if not isinstance(document, dict):
        raise InputError(
            f"{_path()}: expected a JSON object {expected}, found {_show(document)}", source=name
        )
    return document


class JsonReader:
    """One walk over a truth or prediction document, with the checks shared by both."""

    def __init__(self, data: bytes, name: str, expected: str, pair: str) -> None:
        self.name = name
        self.pair_what = pair  # what an individual's value is: [label, {...}] or [score, {...}]
        self.document = _load(data, name, expected)

    def fail(self, keys: tuple[str | int, ...], message: str) -> InputError:
        return InputError(f"{_path(*keys)}: {message}", source=self.name)

    def object(self, value: Any, keys: tuple[str | int, ...], what: str) -> dict[str, Any]:
        """*value* as a JSON object of *what*, its keys checked."""
        if not isinstance(value, dict):
            raise self.fail(keys, f"expected an object of {what}, found {_show(value)}")
        duplicate = getattr(value, "duplicate", None)
        if duplicate is not None:
            raise self.fail(keys, f"key {_show(duplicate)} given twice; expected each of the {what} once")
        for key in value:
            bad = [c for c in key if ord(c) < 0x20 or ord(c) == 0x7F]
            if bad:
                raise self.fail(
                    (*keys, key),
                    f"control character {bad[0]!r} in an id; expected text (ids cannot contain it)",
                )
            if not key:
                raise self.fail((*keys, key), "empty id; expected a non-empty id")
            surrogate = None if key.isascii() else _SURROGATE.search(key)
            if surrogate:
                raise self.fail((*keys, key), surrogate_message(surrogate.group()))
        return value

    def pair(self, value: Any, keys: tuple[str | int, ...], what: str) -> tuple[Any, Any]:
        if not (isinstance(value, list) and len(value) == 2):
            raise self.fail(keys, f"expected [{what}], found {_show(value)}")
        return value[0], value[1]

    def number(self, value: Any, keys: tuple[str | int, ...], infinite: bool = False) -> float:
        """*value* as a float: a finite JSON number (or ``±Infinity`` with *infinite*)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(keys, f"expected a number, found {_show(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise self.fail(keys, "number too large; expected a finite number") from None
        if number != number:
            raise self.fail(keys, "expected a number, found NaN")
        if not infinite and number in (float("inf"), float("-inf")):
            raise self.fail(keys, f"expected a finite number, found {_show(value)}")
        return number

    def grade(self, value: Any, keys: tuple[str | int, ...]) -> float:
        """*value* as a relevance: a number within :data:`GRADES`."""
        number = self.number(value, keys)
        if not GRADES[0] <= number <= GRADES[1]:
            raise self.fail(keys, f"expected {GRADES_EXPECTED}, found {_show(value)}")
        return number

    def individuals(self) -> Iterator[tuple[str, str, Any, dict[str, Any]]]:
        """``(query, individual, first value, documents)`` of each individual, in file order."""
        queries = self.object(self.document, (), "queries")
        for qid, individuals in queries.items():
            for ind, value in self.object(individuals, (qid,), "individuals").items():
                first, docs = self.pair(value, (qid, ind), self.pair_what)
                yield qid, ind, first, self.object(docs, (qid, ind, 1), "documents")

    def unique(
        self,
        seen: dict[tuple[str, str], tuple[str | int, ...]],
        qid: str,
        item: str,
        keys: tuple[str | int, ...],
    ) -> None:
        """Refuse an item id met twice in a query (individual ``a/b`` and document ``b`` of ``a``)."""
        first = seen.setdefault((qid, item), keys)
        if first != keys:
            raise self.fail(
                keys, f"item {_show(item)} of query {_show(qid)} already given at {_path(*first)}"
            )
