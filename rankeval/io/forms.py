"""The forms of qrels and runs the Python API accepts, beside files and rankeval's own objects.

:func:`rankeval.io.data.as_qrels` and :func:`rankeval.io.data.as_run` take what researchers
have in Python, and this module turns the foreign forms into rankeval's columns:

* a pandas DataFrame with rankeval's columns (``query_id, doc_id, relevance`` for qrels,
  ``query_id, doc_id, score`` for a run) or with PyTerrier's (``qid, docno, label`` and
  ``qid, docno, score``): :func:`with_columns` renames PyTerrier's;
* ``{query_id: {doc_id: number}}``, the form of pytrec_eval and ir_measures (read by
  ``Qrels.from_dict`` and ``Run.from_dict``);
* an iterable of ir_measures' ``Qrel(query_id, doc_id, relevance, iteration)`` or
  ``ScoredDoc(query_id, doc_id, score)`` namedtuples, or of any namedtuples with these fields
  (ir_datasets' qrels and scored documents): :func:`namedtuple_frame`.

Several runs are a list of runs or a mapping ``{name: run}``; a mapping whose values are
``{doc_id: score}`` dicts is one run instead (:func:`is_one_run`).

May import: :mod:`rankeval.errors`; pandas lazily.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rankeval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "QRELS_FORMS",
    "RUN_FORMS",
    "describe",
    "is_namedtuple",
    "is_one_run",
    "namedtuple_frame",
    "namedtuple_rows",
    "with_columns",
]

#: PyTerrier's column names → rankeval's
PYTERRIER = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}

QRELS_FORMS = (
    "a path (or ir_datasets id), a Qrels, a DataFrame with query_id, doc_id, relevance (or "
    "PyTerrier's qid, docno, label), {query_id: {doc_id: relevance}} or an iterable of "
    "ir_measures Qrel namedtuples"
)
RUN_FORMS = (
    "a path, a Run, a DataFrame with query_id, doc_id, score (or PyTerrier's qid, docno, "
    "score), {query_id: {doc_id: score}} or an iterable of ir_measures ScoredDoc namedtuples"
)


def with_columns(frame: pd.DataFrame, required: Sequence[str], what: str, source: str) -> pd.DataFrame:
    """*frame* with PyTerrier's columns (``qid``, ``docno``, ``label``) renamed to rankeval's
    where rankeval's are absent.

    Raises:
        UsageError: a column of *required* is still missing (naming both spellings).
    """
    given = [str(c) for c in frame.columns]
    columns = set(frame.columns)
    rename = {
        old: new
        for old, new in PYTERRIER.items()
        if new in required and new not in columns and old in columns
    }
    if rename:
        frame = frame.rename(columns=rename)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        theirs = {new: old for old, new in PYTERRIER.items()}
        raise UsageError(
            f"{what} DataFrame lacks column(s) {missing}: expected {', '.join(required)} (or PyTerrier's "
            f"{', '.join(theirs.get(c, c) for c in required)}), found {given[:20]}",
            source=source,
        )
    return frame


def is_namedtuple(value: Any) -> bool:
    """Whether *value* is a namedtuple (an ir_measures ``Qrel`` or ``ScoredDoc``, say)."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def namedtuple_rows(value: Any) -> list[Any] | None:
    """The items of *value* if it is an iterable of namedtuples (a list, a tuple, a generator
    such as ``ir_measures.read_trec_run(...)``; empty is an empty list), else ``None``.
    A generator is consumed."""
    if isinstance(value, (str, bytes, Mapping)) or is_namedtuple(value) or not isinstance(value, Iterable):
        return None
    items = value if isinstance(value, list) else list(value)
    return items if not items or is_namedtuple(items[0]) else None


def namedtuple_frame(items: list[Any], source: str) -> pd.DataFrame:
    """A DataFrame of namedtuples of one type, one column per field.

    Raises:
        UsageError: an item is not of the first item's type.
    """
    import pandas as pd

    if not items:
        raise UsageError("no items: the iterable of namedtuples is empty", source=source)
    kind = type(items[0])
    for i, item in enumerate(items):
        if type(item) is not kind:
            raise UsageError(
                f"item {i + 1} is {describe(item)}, not a {kind.__name__} like the first item", source=source
            )
    # object columns: values as given (an id pandas cannot make a string is the reader's to name)
    return pd.DataFrame(items, columns=list(items[0]._fields), dtype=object)


def is_one_run(runs: Mapping[Any, Any]) -> bool:
    """Whether a mapping is one run ``{query_id: {doc_id: score}}`` — every value a mapping
    none of whose values is itself a mapping — rather than runs by name ``{name: run}``."""
    return all(
        isinstance(docs, Mapping) and not any(isinstance(v, Mapping) for v in docs.values())
        for docs in runs.values()
    )


def describe(value: Any) -> str:
    """What *value* is, for a message (``a list of int``, ``one ScoredDoc``, ``None``)."""
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if is_namedtuple(value):
        return f"one {type(value).__name__} (a single item; give an iterable of them)"
    if isinstance(value, (list, tuple)) and value:
        return f"a {type(value).__name__} of {type(value[0]).__name__}"
    return f"a {type(value).__name__}"
