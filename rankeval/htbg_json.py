"""The hTBG reference's JSON format (github sidenver/hTBG) as nested qrels and runs.

Truth: ``{query: {individual: [label, {doc: [stop_probability, word_count]}]}}``.
Prediction: ``{query: {individual: [score, {doc: score}]}}``.

They become the nested TREC convention (SPEC §2.3): an individual is an item ``individual``
(relevance = label), each of its documents an item ``individual/doc`` whose relevance is the
stopping probability and whose ``cost=`` attribute is the word count. Runs read from JSON keep
the file order for equal scores (the reference sorts with Python's stable sort).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rankeval.errors import InputError

__all__ = ["is_json", "read_prediction", "read_truth"]


def is_json(source: str | Path) -> bool:
    """Whether *source* names a JSON file (by suffix, or by its first character)."""
    path = Path(source)
    if str(source) == "-" or not path.is_file():
        return False
    if path.suffix.lower() == ".json":
        return True
    with path.open("rb") as fh:
        return fh.read(64).lstrip().startswith(b"{")


def _load(source: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(source).read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg}", source=str(source), line=exc.lineno, column=exc.colno
        ) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {query: {individual: [...]}}", source=str(source))
    return data


def _pair(value: Any, where: str, source: str, what: str) -> tuple[Any, Any]:
    if not (isinstance(value, list) and len(value) == 2):
        raise InputError(f"{where}: expected [{what}], found {json.dumps(value)[:60]}", source=source)
    return value[0], value[1]


def _number(value: Any, where: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected a number, found {json.dumps(value)[:60]}", source=source)
    return float(value)


def _walk(source: str | Path, what: str) -> Iterator[tuple[str, str, Any, dict[str, Any]]]:
    """``(query, individual, first value, documents)`` of each individual, in file order."""
    name = str(source)
    for qid, individuals in _load(source).items():
        if not isinstance(individuals, dict):
            raise InputError(f"query {qid!r}: expected an object of individuals", source=name)
        for ind, value in individuals.items():
            first, docs = _pair(value, f"{qid}/{ind}", name, what)
            if not isinstance(docs, dict):
                raise InputError(f"{qid}/{ind}: expected an object of documents", source=name)
            yield qid, ind, first, docs


TruthRow = tuple[str, str, str, float, str | None, str | None]


def read_truth(source: str | Path, sep: str = "/") -> list[TruthRow]:
    """Rows ``(query, iteration, item, relevance, cost, exclude)`` of a truth file (cost for
    documents; exclude ``"1"`` for an individual whose label is null: the reference leaves
    such individuals out of the ranking, and so does rankeval, through ``exclude=1``)."""
    rows: list[TruthRow] = []
    name = str(source)
    for qid, ind, label, docs in _walk(source, "label, {doc: [stop_probability, words]}"):
        if label is None:
            rows.append((qid, "0", ind, 0.0, None, "1"))
        else:
            rows.append((qid, "0", ind, _number(label, f"{qid}/{ind} label", name), None, None))
        for doc, judgment in docs.items():
            where = f"{qid}/{ind}{sep}{doc}"
            stop, words = _pair(judgment, where, name, "stop_probability, words")
            cost = _number(words, where + " words", name)
            rows.append((qid, "0", f"{ind}{sep}{doc}", _number(stop, where, name), repr(cost), None))
    return rows


def read_prediction(source: str | Path, sep: str = "/") -> list[tuple[str, str, float]]:
    """Rows ``(query, item, score)`` of a prediction file, in file order."""
    rows: list[tuple[str, str, float]] = []
    name = str(source)
    for qid, ind, score, docs in _walk(source, "score, {doc: score}"):
        rows.append((qid, ind, _number(score, f"{qid}/{ind} score", name)))
        for doc, doc_score in docs.items():
            rows.append((qid, f"{ind}{sep}{doc}", _number(doc_score, f"{qid}/{ind}{sep}{doc}", name)))
    return rows
