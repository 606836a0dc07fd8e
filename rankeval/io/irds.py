"""Qrels named by an ir_datasets id (``msmarco-passage/dev/small``), as the ir_measures CLI
accepts them: which names are ids, and reading a dataset's judgments.

Two things about ir_datasets shape this module:

* **Importing ir_datasets writes to disk**: it creates its home directory
  (``~/.ir_datasets``, or ``$IR_DATASETS_HOME``) and a directory per dataset family. So
  :func:`is_dataset_id` answers without importing it when it is not loaded yet, from the list
  of ids ir_datasets ships in its package data (``etc/metadata.json``): a missing file such as
  ``foo/bar`` stays a plain "file not found" and leaves the home directory alone. Once
  ir_datasets is loaded (a program registered its own datasets), its registry decides.
* **Its downloads log to standard error**: a failed download prints several ``[INFO]`` and
  ``[WARNING]`` lines with the HTTP error before the exception. :func:`qrels_rows` keeps those
  records while it works and prints them only if loading succeeds (the data usage agreement
  ir_datasets shows on a first download is not lost); a failure is one
  :class:`~rankeval.errors.InputError` naming the dataset and what to do.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from rankeval.errors import InputError, clip

__all__ = ["dataset_home", "is_dataset_id", "qrels_rows"]

NOT_AN_ID = "file not found, and not an ir_datasets id either"


def dataset_home() -> str:
    """Where ir_datasets keeps its downloads (``$IR_DATASETS_HOME``, else ``~/.ir_datasets``),
    as a user would type it; nothing is created."""
    return os.environ.get("IR_DATASETS_HOME") or "~/.ir_datasets"


def is_dataset_id(text: str) -> bool:
    """Whether *text* names a dataset ir_datasets knows, without importing ir_datasets (or
    touching its home directory) when it is not loaded yet, and without the network.

    *text* is registered with a loaded ir_datasets (a program may register its own datasets),
    one of the ids ir_datasets ships in its package data, or lies in a family whose ids
    ir_datasets makes on demand (listed there without any of its ids, such as ``clirmatrix``:
    asking its registry about one would download the family's index).
    """
    if not text or text != text.strip() or text.startswith((".", "/", "~", "-")):
        return False
    module = sys.modules.get("ir_datasets")
    if module is not None and text in set(module.registry):
        return True
    shipped = _shipped_ids()
    if shipped is None:  # an ir_datasets that keeps its ids elsewhere: ask its registry
        return module is None and _registered(text)
    if text in shipped:
        return True
    family = text.split("/", 1)[0]
    return family != text and family in shipped and not any(i.startswith(family + "/") for i in shipped)


@cache
def _shipped_ids() -> frozenset[str] | None:
    """The dataset ids of ir_datasets' package data, read without importing the package
    (``None`` if it is not installed or the file is not where this version keeps it)."""
    try:
        spec = importlib.util.find_spec("ir_datasets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        try:
            with open(Path(location) / "etc" / "metadata.json", encoding="utf-8") as fh:
                return frozenset(json.load(fh))
        except (OSError, ValueError):
            continue
    return None


def _registered(text: str) -> bool:
    """Whether ir_datasets' registry has *text* (importing ir_datasets)."""
    try:
        import ir_datasets
    except ImportError:  # pragma: no cover - ir_datasets is a dependency
        return False
    return text in set(ir_datasets.registry)


def qrels_rows(dataset_id: str) -> list[tuple[str, str, str, float]]:
    """``(query_id, iteration, doc_id, relevance)`` of each judgment of ir_datasets dataset
    *dataset_id*; downloaded by ir_datasets if it does not have them yet.

    Raises:
        InputError: *dataset_id* is not an ir_datasets id; the dataset has no qrels, or none
            at all; the download failed (one line: which dataset, that it needs the network
            or a local copy, and how to give a file instead).
    """
    if not is_dataset_id(dataset_id):
        raise InputError(NOT_AN_ID, source=dataset_id)
    try:
        return _qrels_rows(dataset_id)
    except OSError as exc:  # importing ir_datasets, or loading a dataset, makes its directories
        raise InputError(_home_failure(exc), source=dataset_id) from exc


def _qrels_rows(dataset_id: str) -> list[tuple[str, str, str, float]]:
    """:func:`qrels_rows` of an id; an OSError is ir_datasets failing to make or use its
    home directory (a download's errors are InputErrors here)."""
    with _ir_datasets_log() as replay:
        import ir_datasets

        try:
            dataset = ir_datasets.load(dataset_id)
        except KeyError:
            raise InputError(NOT_AN_ID, source=dataset_id) from None
        if not dataset.has_qrels():
            raise InputError("this ir_datasets dataset has no qrels", source=dataset_id)
        try:
            rows = [(q.query_id, q.iteration, q.doc_id, q.relevance) for q in dataset.qrels_iter()]
        except Exception as exc:
            raise InputError(_failure(exc), source=dataset_id) from exc
        replay()
    if not rows:
        raise InputError("no judgments: this ir_datasets dataset's qrels are empty", source=dataset_id)
    return rows


def _home_failure(exc: OSError) -> str:
    """The message of ir_datasets failing to make or use a directory of its home."""
    where = f"{exc.filename}: " if exc.filename and str(exc.filename) != dataset_home() else ""
    reason = exc.strerror or type(exc).__name__
    return (
        f"ir_datasets cannot use its home directory {dataset_home()} ({where}{reason}); "
        "set IR_DATASETS_HOME to a writable directory, or give the qrels as a file instead"
    )


def _failure(exc: BaseException) -> str:
    """The message of a failure to read a dataset's qrels."""
    if _offline(exc):
        return (
            f"the qrels of this ir_datasets dataset are not in {dataset_home()} and cannot be downloaded "
            "(no network?): connect once to download them, or give the qrels as a file instead"
        )
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return f"ir_datasets could not provide the qrels ({clip(reason, 120)}); give the qrels as a file instead"


def _offline(exc: BaseException) -> bool:
    """Whether *exc* (or an exception it carries) is a failure to reach a server."""
    network: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, socket.gaierror)
    requests = sys.modules.get("requests")
    if requests is not None:
        network += (requests.exceptions.ConnectionError, requests.exceptions.Timeout)
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, network):
            return True
        # ir_datasets' "All download sources failed" carries [(mirror, exception), ...]
        todo += [item.__cause__, item.__context__, *_flat(item.args)]
    return False


def _flat(values: Any) -> Iterator[Any]:
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


class _Keep(logging.Handler):
    """Keeps the records logged to it."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _ir_datasets_log() -> Iterator[Any]:
    """Import ir_datasets; inside, what it logs is kept, not printed; calling the yielded
    function prints it through ir_datasets' own handlers (after a success)."""
    import ir_datasets

    ir_datasets.log.easy().logger()  # its logger gets its handler now, not in the middle of the work
    loggers = [
        logging.getLogger(n) for n in logging.root.manager.loggerDict if n.split(".")[0] == "ir_datasets"
    ]
    saved = [(lg, lg.handlers[:], lg.propagate) for lg in loggers]
    keep = _Keep()
    for lg in loggers:
        lg.handlers, lg.propagate = [keep], False

    def replay() -> None:
        for lg, handlers, _ in saved:
            for record in keep.records:
                if record.name == lg.name:
                    for handler in handlers:
                        handler.handle(record)

    try:
        yield replay
    finally:
        for lg, handlers, propagate in saved:
            lg.handlers, lg.propagate = handlers, propagate
