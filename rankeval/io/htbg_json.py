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
``±Infinity``, not ``NaN``), no key twice in one object (Python's ``json`` would keep the
last silently), no control characters in ids, no item twice, and at least one judgment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rankeval.errors import InputError, clip
from rankeval.io import inputs, lines
from rankeval.io import trec as io

__all__ = ["is_json", "read_prediction", "read_truth"]

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


def _load(source: str | Path, expected: str) -> dict[str, Any]:
    """The JSON document of *source*, which must be an object.

    Raises:
        InputError: the file cannot be read, is not UTF-8, not valid JSON, nested deeper
            than Python can parse, or not an object.
    """
    name = inputs.source_name(source)
    data = io.read_bytes(source)
    lines.check_encoding(data, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        lines.check_utf8(data, name)
        raise  # pragma: no cover - check_utf8 raises
    del data
    try:
        # integers as floats: every number of the format is read as one, and Python's int()
        # refuses literals of more than 4300 digits (float() makes them infinite: refused below)
        document = json.loads(text, object_pairs_hook=_object, parse_int=float)
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


class _Reader:
    """One walk over a truth or prediction document, with the checks shared by both."""

    def __init__(self, source: str | Path, expected: str, pair: str) -> None:
        self.name = inputs.source_name(source)
        self.pair_what = pair  # what an individual's value is: [label, {...}] or [score, {...}]
        self.document = _load(source, expected)

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


TruthRow = tuple[str, str, str, float, str | None, str | None]


def read_truth(source: str | Path, sep: str = "/") -> list[TruthRow]:
    """Rows ``(query, iteration, item, relevance, cost, exclude)`` of a truth file (cost for
    documents; exclude ``"1"`` for an individual whose label is null: the reference leaves
    such individuals out of the ranking, and so does rankeval, through ``exclude=1``).

    Raises:
        InputError: see the module docstring; no individual at all (no judgment; an
            individual whose label is null is one: the reference scores such a query 0).
        ResourceError: memory ran out.
    """
    with inputs.reading(source, "qrels"):
        reader = _Reader(source, _TRUTH, "label, {doc: [stop_probability, words]}")
        rows: list[TruthRow] = []
        seen: dict[tuple[str, str], tuple[str | int, ...]] = {}
        for qid, ind, label, docs in reader.individuals():
            reader.unique(seen, qid, ind, (qid, ind))
            if label is None:
                rows.append((qid, "0", ind, 0.0, None, "1"))
            else:
                rows.append((qid, "0", ind, reader.number(label, (qid, ind, 0)), None, None))
            for doc, judgment in docs.items():
                keys = (qid, ind, 1, doc)
                stop, words = reader.pair(judgment, keys, "stop_probability, words")
                cost = reader.number(words, (*keys, 1))
                item = f"{ind}{sep}{doc}"
                reader.unique(seen, qid, item, keys)
                rows.append((qid, "0", item, reader.number(stop, (*keys, 0)), repr(cost), None))
        if not rows:
            raise InputError(f"no judgments: it has no individual; expected {_TRUTH}", source=reader.name)
    return rows


def read_prediction(source: str | Path, sep: str = "/") -> list[tuple[str, str, float]]:
    """Rows ``(query, item, score)`` of a prediction file, in file order.

    Raises:
        InputError: see the module docstring; no individual (an empty run).
        ResourceError: memory ran out.
    """
    with inputs.reading(source, "run"):
        reader = _Reader(source, _PREDICTION, "score, {doc: score}")
        rows: list[tuple[str, str, float]] = []
        seen: dict[tuple[str, str], tuple[str | int, ...]] = {}
        for qid, ind, score, docs in reader.individuals():
            reader.unique(seen, qid, ind, (qid, ind))
            rows.append((qid, ind, reader.number(score, (qid, ind, 0), infinite=True)))
            for doc, doc_score in docs.items():
                item = f"{ind}{sep}{doc}"
                reader.unique(seen, qid, item, (qid, ind, 1, doc))
                rows.append((qid, item, reader.number(doc_score, (qid, ind, 1, doc), infinite=True)))
        if not rows:
            raise InputError(f"empty run: it has no individual; expected {_PREDICTION}", source=reader.name)
    return rows
