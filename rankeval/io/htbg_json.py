"""The hTBG reference's JSON format (github sidenver/hTBG) as nested qrels and runs.

Truth: ``{query: {individual: [label, {doc: [stop_probability, word_count]}]}}``.
Prediction: ``{query: {individual: [score, {doc: score}]}}``.

They become the nested TREC convention (docs: formats.md, "Nested items"): an individual is an item ``individual``
(relevance = label), each of its documents an item ``individual/doc`` whose relevance is the
stopping probability and whose ``cost=`` attribute is the word count. Runs read from JSON keep
the file order for equal scores (the reference sorts with Python's stable sort).

The reader checks what the TREC readers check, and names the place by its JSON path
(``$["q_1"]["user_1"][1]["doc_2"]``): UTF-8 text (UTF-16 and invalid bytes are named),
valid JSON no deeper than the format needs (a deeper document stops with a message, not
with Python's ``RecursionError``), the structure above, finite numbers (a score may be
``±Infinity``, not ``NaN``; a label or stopping probability within the grades' range,
:data:`rankeval.io.validate.GRADES`), no key twice in one object (Python's ``json`` would keep
the last silently), no control characters in ids and no unpaired surrogate escape
(``"\\ud800"``: valid JSON, but no text), no item twice, and at least one judgment. A truth
file given as the prediction (or the other way round) is named as such.

Two paths, one result, to the bit. The **fast path** decodes with msgspec into the format's
types (structure and number types checked in C), flattens into columns and checks the rest
in bulk. On *any* anomaly it steps aside and the **exact path** (Python's ``json``, a walk
over every item) decides: it raises the error with its JSON path, or gives the rows.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rankeval.errors import InputError
from rankeval.io import inputs, lines, trec
from rankeval.io.schema import run_table
from rankeval.io.validate import JsonInteger, JsonReader, bad_grade, htbg_swapped, is_htbg_judgment

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["is_json", "read_prediction", "read_prediction_table", "read_truth", "read_truth_table"]

_BOM = b"\xef\xbb\xbf"
_TRUTH = "{query: {individual: [label, {doc: [stop_probability, words]}]}}"
_PREDICTION = "{query: {individual: [score, {doc: score}]}}"


def is_json(source: str | Path) -> bool:
    """Whether *source* names a JSON file (by suffix, or by its first character).

    Only a regular file is looked into (a pipe could be read only once); a missing path or
    a directory is not JSON, and its reader reports it.

    Raises:
        InputError: the file exists but cannot be read (permission denied ...).
    """
    if inputs.path_kind(source) != "file":
        return False
    if Path(source).suffix.lower() == ".json":
        return True
    head = inputs.read_head(source, 64)
    return head.removeprefix(_BOM).lstrip().startswith(b"{")


# ---------------------------------------------------------------------------- exact path
TruthRow = tuple[str, str, str, float, str | None, str | None]


def _exact_truth(data: bytes, name: str, sep: str) -> list[TruthRow]:
    """The rows of :func:`read_truth`, by a walk over every item (the exact path)."""
    reader = JsonReader(data, name, _TRUTH, "label, {doc: [stop_probability, words]}")
    del data
    rows: list[TruthRow] = []
    seen: dict[tuple[str, str], tuple[str | int, ...]] = {}
    documents = 0
    for qid, ind, label, docs in reader.individuals():
        reader.unique(seen, qid, ind, (qid, ind))
        if label is None:
            rows.append((qid, "0", ind, 0.0, None, "1"))
        else:
            rows.append((qid, "0", ind, reader.grade(label, (qid, ind, 0)), None, None))
        for doc, judgment in docs.items():
            keys = (qid, ind, 1, doc)
            if not documents and isinstance(judgment, (int, float)) and not isinstance(judgment, bool):
                raise htbg_swapped(reader.name, "prediction")  # {doc: score}: the run
            documents += 1
            stop, words = reader.pair(judgment, keys, "stop_probability, words")
            cost = reader.number(words, (*keys, 1))
            item = f"{ind}{sep}{doc}"
            reader.unique(seen, qid, item, keys)
            text = words.text if isinstance(words, JsonInteger) else repr(cost)
            rows.append((qid, "0", item, reader.grade(stop, (*keys, 0)), text, None))
    if not rows:
        raise InputError(f"no judgments: it has no individual; expected {_TRUTH}", source=reader.name)
    return rows


def _exact_prediction(data: bytes, name: str, sep: str) -> list[tuple[str, str, float]]:
    """The rows of :func:`read_prediction`, by a walk over every item (the exact path)."""
    reader = JsonReader(data, name, _PREDICTION, "score, {doc: score}")
    del data
    rows: list[tuple[str, str, float]] = []
    seen: dict[tuple[str, str], tuple[str | int, ...]] = {}
    documents = 0
    for qid, ind, score, docs in reader.individuals():
        reader.unique(seen, qid, ind, (qid, ind))
        rows.append((qid, ind, reader.number(score, (qid, ind, 0), infinite=True)))
        for doc, doc_score in docs.items():
            if not documents and is_htbg_judgment(doc_score):
                raise htbg_swapped(reader.name, "truth")  # {doc: [stop_probability, words]}: the qrels
            documents += 1
            item = f"{ind}{sep}{doc}"
            reader.unique(seen, qid, item, (qid, ind, 1, doc))
            rows.append((qid, item, reader.number(doc_score, (qid, ind, 1, doc), infinite=True)))
    if not rows:
        raise InputError(f"empty run: it has no individual; expected {_PREDICTION}", source=reader.name)
    return rows


# ---------------------------------------------------------------------------- fast path
_Score = float | Literal["Infinity", "-Infinity"]
_TruthDoc = dict[str, dict[str, tuple[float | None, dict[str, tuple[float, int | float]]]]]
_PredictionDoc = dict[str, dict[str, tuple[float, dict[str, float]]]]
_InfinitePredictionDoc = dict[str, dict[str, tuple[_Score, dict[str, _Score]]]]

# a token -0 (an integer: msgspec reads it as 0.0, Python's json as -0.0), or an id ending so
_NEGATIVE_ZERO = re.compile(rb"-0(?![.0-9eE])")
# an infinite number in a value position: made a string, which the decoder's type takes
_INFINITY = re.compile(rb"([\[,:][ \t\n\r]*)(-?Infinity)")
_TRUTH_COLUMNS = ("query_id", "iteration", "doc_id", "relevance", "line", "cost", "exclude")


@dataclass
class _Flat:
    """A decoded document flattened: ids as pyarrow strings, values as numpy arrays, in
    file order (queries, their individuals, each individual's documents)."""

    queries: pa.Array  # (Q,)
    individuals: pa.Array  # (I,)
    docs: pa.Array  # (D,)
    per_query: np.ndarray  # (Q,) individuals of each query
    per_individual: np.ndarray  # (I,) documents of each individual
    first: list[Any]  # (I,) each individual's label or score, as decoded
    values: list[Any]  # (D,) each document's judgment [stop, words] or score, as decoded


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The garbage collector paused: the million tuples of a large document would otherwise
    trigger collections that take as long as the decoding itself (they hold no cycle)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _flatten(document: dict[str, dict[str, tuple[Any, dict[str, Any]]]]) -> _Flat | None:
    """The columns of a decoded document; ``None`` if an id cannot be a pyarrow string."""
    import numpy as np
    import pyarrow as pa

    per_query_dicts = list(document.values())
    pairs = list(chain.from_iterable(map(dict.values, per_query_dicts)))
    doc_dicts = list(map(itemgetter(1), pairs))
    try:
        queries = pa.array(list(document), pa.string())
        individuals = pa.array(list(chain.from_iterable(per_query_dicts)), pa.string())
        docs = pa.array(list(chain.from_iterable(doc_dicts)), pa.string())
    except (pa.ArrowException, UnicodeError):  # a lone surrogate: the exact path decides
        return None
    return _Flat(
        queries=queries,
        individuals=individuals,
        docs=docs,
        per_query=np.fromiter(map(len, per_query_dicts), np.int64, len(per_query_dicts)),
        per_individual=np.fromiter(map(len, doc_dicts), np.int64, len(doc_dicts)),
        first=list(map(itemgetter(0), pairs)),
        values=list(chain.from_iterable(map(dict.values, doc_dicts))),
    )


def _consistent(data: bytes, flat: _Flat, sep: str) -> bool:
    """Whether the checks that msgspec's types do not make hold: every key of *data* was
    kept (a decoder keeps the last of a key given twice in one object: the colons outside
    strings, counted on the raw text, must be as many as the keys; an escaped colon
    ``\\u003a`` counts there too, conservatively), every id is non-empty and free of control
    characters, and no item of a query is given twice (only possible when an id holds the
    separator)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = (flat.queries, flat.individuals, flat.docs)
    colons, keys = data.count(b":"), sum(len(a) for a in ids)
    if colons != keys:  # (equal: no colon in any id, and no key dropped)
        in_keys = sum(int(pc.sum(pc.count_substring(a, ":")).as_py() or 0) for a in ids)
        escaped = data.count(b"\\u003a") + data.count(b"\\u003A") if b"\\" in data else 0
        if colons - in_keys + escaped != keys:
            return False
    if b'""' in data and any(len(a) and pc.min(pc.binary_length(a)).as_py() == 0 for a in ids):
        return False
    if (b"\\" in data or b"\x7f" in data) and any(
        pc.any(pc.match_substring_regex(a, lines.CONTROL_REGEX)).as_py() for a in ids
    ):
        return False  # a raw control byte cannot be in a string: only an escape, or DEL
    if (sep.encode() not in data and b"\\" not in data) or not any(
        pc.any(pc.match_substring(a, sep)).as_py() for a in ids[1:]
    ):
        return True  # no id holds the separator: an individual's item and its documents' differ
    layout = _Layout(flat)
    query = flat.queries.take(pa.array(layout.query_of_row))
    keyed = pc.binary_join_element_wise(query, layout.items(flat, sep), "\x00")  # no control character
    return int(pc.count_distinct(keyed).as_py()) == len(keyed)


class _Layout:
    """Where the rows of each individual and document go: an individual's row, then its
    documents' rows, individual after individual, in file order."""

    def __init__(self, flat: _Flat) -> None:
        import numpy as np

        n_ind = len(flat.per_individual)
        self.rows = n_ind + int(flat.per_individual.sum())
        self.individual_row = np.arange(n_ind) + np.cumsum(flat.per_individual) - flat.per_individual
        self.doc_row = np.delete(np.arange(self.rows), self.individual_row)
        self.owner = np.repeat(np.arange(n_ind), flat.per_individual)  # each document's individual
        ind_query = np.repeat(np.arange(len(flat.per_query)), flat.per_query)
        self.query_of_row = self.spread(ind_query, ind_query[self.owner])

    def source_index(self) -> np.ndarray:
        """For each row, its index in ``[individuals..., documents...]``."""
        import numpy as np

        index = np.empty(self.rows, dtype=np.int64)
        index[self.individual_row] = np.arange(len(self.individual_row))
        index[self.doc_row] = len(self.individual_row) + np.arange(len(self.doc_row))
        return index

    def items(self, flat: _Flat, sep: str) -> pa.Array:
        """The item id of each row: ``individual``, or ``individual{sep}doc``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        doc_items = pc.binary_join_element_wise(flat.individuals.take(pa.array(self.owner)), flat.docs, sep)
        return pa.concat_arrays([flat.individuals, doc_items]).take(pa.array(self.source_index()))

    def spread(self, individual: np.ndarray, doc: np.ndarray) -> np.ndarray:
        """Row values from the individuals' and the documents' values."""
        import numpy as np

        out = np.empty(self.rows, dtype=individual.dtype)
        out[self.individual_row] = individual
        out[self.doc_row] = doc
        return out


def _float_reprs(values: np.ndarray) -> pa.Array:
    """``repr`` of each float of *values* as pyarrow strings (``56.0``, ``7.5``): whole
    numbers below 1e16 in bulk, any other value (rare in word counts) one by one."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    whole = (values == np.trunc(values)) & (np.abs(values) < 1e16) & ~np.signbit(values)
    digits = pc.cast(pa.array(values[whole].astype(np.int64)), pa.string())
    fast = pc.binary_join_element_wise(digits, pa.scalar(".0"), "")
    if whole.all():
        return fast
    other = pa.array([repr(v) for v in values[~whole].tolist()], pa.string())
    index = np.empty(len(values), dtype=np.int64)
    index[whole] = np.arange(len(fast))
    index[~whole] = len(fast) + np.arange(len(other))
    return pa.concat_arrays([fast, other]).take(pa.array(index))


def _cost_texts(words: np.ndarray, judgments: list[Any]) -> pa.Array:
    """The ``cost=`` text of each document's word count *words* (its *judgments*, as
    decoded): a JSON integer as written (``120``), any other number as its float's ``repr``
    (``120.0``), as the exact path writes them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    integer = np.fromiter((type(j[1]) is int for j in judgments), bool, len(judgments))
    exact = np.abs(words) < 2**53  # an integer exact as a float: its digits in bulk
    if integer.all() and exact.all():  # the usual case
        return pc.cast(pa.array(words.astype(np.int64)), pa.string())
    texts = _float_reprs(words)
    if not integer.any():
        return texts
    at = np.flatnonzero(integer)
    small = exact[at]
    digits = pc.cast(pa.array(words[at[small]].astype(np.int64)), pa.string())
    large = pa.array([str(judgments[i][1]) for i in at[~small].tolist()], pa.string())
    index = np.empty(len(at), dtype=np.int64)
    index[small] = np.arange(len(digits))
    index[~small] = len(digits) + np.arange(len(large))
    replacements = pa.concat_arrays([digits, large]).take(pa.array(index))
    return pc.replace_with_mask(texts, pa.array(integer), replacements)


def _has_negative_zero(data: bytes) -> bool:
    """Whether *data* may hold the number ``-0``: a ``-0`` (not ``-0.5``, ``-0e1``) after
    ``[``, ``,`` or ``:`` and whitespace; conservative (a long run of whitespace counts)."""
    for match in _NEGATIVE_ZERO.finditer(data):
        before = data[max(match.start() - 64, 0) : match.start()].rstrip(b" \t\n\r")
        if not before or before[-1:] in (b"[", b",", b":"):
            return True
    return False


def _checked(data: bytes, kind: Any, sep: str) -> _Flat | None:
    """The flattened document of *data* decoded by msgspec as type *kind*, or ``None`` on
    any anomaly (an error of msgspec's included: the exact path then decides)."""
    import msgspec

    document = None
    if not (b"-0" in data and _has_negative_zero(data)):
        with contextlib.suppress(msgspec.MsgspecError, ValueError, RecursionError):
            document = msgspec.json.decode(data, type=kind)
    flat = _flatten(document) if document else None  # None: not of the format, or no query
    del document
    if flat is None or len(flat.individuals) == 0 or not _consistent(data, flat, sep):
        return None
    return flat


def _fast_truth(data: bytes, sep: str) -> pa.Table | None:
    """The truth table of *data* (see :func:`read_truth_table`), or ``None`` if the fast
    path cannot vouch for it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    flat = _checked(data, _TruthDoc, sep)
    if flat is None:
        return None
    layout = _Layout(flat)
    label = pa.array(flat.first, pa.float64())  # null: an individual left out of the ranking
    values = flat.values
    try:
        pairs = np.fromiter(chain.from_iterable(values), np.float64, 2 * len(values)).reshape(-1, 2)
    except OverflowError:  # an integer word count too large for a float: the exact path refuses it
        return None
    stop, words = pairs[:, 0].copy(), pairs[:, 1].copy()
    texts = _cost_texts(words, values)
    del flat.first[:], values[:]
    relevance = layout.spread(pc.fill_null(label, 0.0).to_numpy(zero_copy_only=False), stop)
    if bad_grade(pa.array(relevance)) is not None:  # the exact path names it
        return None
    no_cost = pa.nulls(len(label), pa.string())
    cost = pa.concat_arrays([no_cost, texts]).take(pa.array(layout.source_index()))
    n = layout.rows
    columns: dict[str, pa.Array] = {
        "query_id": flat.queries.take(pa.array(layout.query_of_row)),
        "iteration": pa.repeat(pa.scalar("0"), n),
        "doc_id": layout.items(flat, sep),
        "relevance": pa.array(relevance, pa.float64()),
        "line": pa.array(np.zeros(n, dtype=np.int64)),
        "cost": cost,
    }
    if label.null_count:
        excluded = layout.spread(label.is_null().to_numpy(zero_copy_only=False), np.zeros(len(stop), bool))
        columns["exclude"] = pc.if_else(pa.array(excluded), pa.scalar("1"), pa.scalar(None, pa.string()))
    return pa.table(columns)


# ---------------------------------------------------------------------------- the readers
def _read(source: str | Path) -> tuple[bytes, str]:
    """The bytes of *source* (UTF-16 and UTF-32 text refused by name) and its name."""
    name = inputs.source_name(source)
    data = trec.read_bytes(source)
    lines.check_encoding(data, name)
    return data, name


def read_truth_table(source: str | Path, sep: str = "/") -> pa.Table:
    """The judgments of a truth file as a qrels table: ``query_id``, ``iteration`` (``"0"``),
    ``doc_id`` (the item), ``relevance``, ``line`` (0), ``cost`` (a document's word count: a
    JSON integer as written, another number as its float's ``repr``; null for an individual)
    and, if an individual's label is null, ``exclude`` (``"1"`` there; see :func:`read_truth`).

    Raises:
        InputError: see the module docstring; no individual at all.
        ResourceError: memory ran out.
    """
    import numpy as np
    import pyarrow as pa

    with inputs.reading(source, "qrels"):
        data, name = _read(source)
        with _gc_paused():
            table = _fast_truth(data, sep)
        if table is not None:
            return table
        rows = _exact_truth(data, name, sep)
        del data
        kinds = [pa.string(), pa.string(), pa.string(), pa.float64(), pa.string(), pa.string()]
        names = [c for c in _TRUTH_COLUMNS if c != "line"]
        columns = {key: pa.array([r[i] for r in rows], kinds[i]) for i, key in enumerate(names)}
        columns["line"] = pa.array(np.zeros(len(rows), np.int64))
        if columns["exclude"].null_count == len(rows):
            del columns["exclude"]
        columns = {key: columns[key] for key in _TRUTH_COLUMNS if key in columns}
        return pa.table(columns)


def read_truth(source: str | Path, sep: str = "/") -> list[TruthRow]:
    """Rows ``(query, iteration, item, relevance, cost, exclude)`` of a truth file (cost for
    documents; exclude ``"1"`` for an individual whose label is null: the reference leaves
    such individuals out of the ranking, and so does rankeval, through ``exclude=1``).

    Raises:
        InputError: see the module docstring; no individual at all (no judgment; an
            individual whose label is null is one: the reference scores such a query 0).
        ResourceError: memory ran out.
    """
    import pyarrow as pa

    table = read_truth_table(source, sep)
    if "exclude" not in table.column_names:
        table = table.append_column("exclude", pa.nulls(table.num_rows, pa.string()))
    return list(zip(*(table.column(c).to_pylist() for c in _TRUTH_COLUMNS if c != "line"), strict=True))


def read_prediction_table(source: str | Path, tag: str = "run", sep: str = "/") -> pa.Table:
    """The rows of a prediction file as a run table, as :meth:`rankeval.Run.from_frame`
    builds it: ``query_id`` (dictionary), ``q0`` (``"Q0"``), ``doc_id`` (the item),
    ``score``, ``tag`` (*tag*), in file order.

    Raises:
        InputError: see the module docstring; no individual (an empty run).
        ResourceError: memory ran out.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    with inputs.reading(source, "run"):
        data, name = _read(source)
        exact = data
        kind: Any = _PredictionDoc
        if b"Infinity" in data and b'"Infinity"' not in data and b'"-Infinity"' not in data:
            # a string the decoder's type takes (in a string, it leaves a bare token: refused)
            data, kind = _INFINITY.sub(rb'\1"\2"', data), _InfinitePredictionDoc
        with _gc_paused():
            flat = _checked(data, kind, sep)
        if flat is None:
            del data
            rows = _exact_prediction(exact, name, sep)
            del exact
            query_id = pc.dictionary_encode(pa.array([r[0] for r in rows], pa.string()))
            items = pa.array([r[1] for r in rows], pa.string())
            score = np.array([r[2] for r in rows], dtype=np.float64)
        else:
            del data, exact
            layout = _Layout(flat)  # np.array reads "Infinity" and "-Infinity" as the infinities
            score = layout.spread(np.array(flat.first, np.float64), np.array(flat.values, np.float64))
            items = layout.items(flat, sep)
            used = np.flatnonzero(flat.per_query > 0)  # a query without individuals has no row
            code = np.full(len(flat.per_query), -1, dtype=np.int32)
            code[used] = np.arange(len(used), dtype=np.int32)
            queries = flat.queries.take(pa.array(used))
            query_id = pa.DictionaryArray.from_arrays(pa.array(code[layout.query_of_row]), queries)
        zeros = pa.array(np.zeros(len(score), np.int32))
        return run_table(
            query_id,
            pa.DictionaryArray.from_arrays(zeros, pa.array(["Q0"], pa.string())),
            items,
            pa.array(score, pa.float64()),
            pa.DictionaryArray.from_arrays(zeros, pa.array([tag], pa.string())),
        )


def read_prediction(source: str | Path, sep: str = "/") -> list[tuple[str, str, float]]:
    """Rows ``(query, item, score)`` of a prediction file, in file order.

    Raises:
        InputError: see the module docstring; no individual (an empty run).
        ResourceError: memory ran out.
    """
    table = read_prediction_table(source, sep=sep)
    columns = [table.column(c).to_pylist() for c in ("query_id", "doc_id", "score")]
    return list(zip(*columns, strict=True))
