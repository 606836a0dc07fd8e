"""Runs as an API call gives them: one run, a list, or ``{name: run}``, each in any form
:func:`rankeval.io.data.as_run` accepts; and the rule that names them uniquely.

May import: :mod:`rankeval.io` and the foundation modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rankeval.errors import UsageError
from rankeval.io import forms
from rankeval.io.data import Run, as_run

__all__ = ["as_runs", "run_items", "unique_names"]


def _frame_types() -> tuple[type, ...]:
    """``(pandas.DataFrame,)`` if pandas is loaded (a DataFrame implies it is), else ``()``."""
    import sys

    pd = sys.modules.get("pandas")
    return (pd.DataFrame,) if pd is not None else ()


def as_runs(runs: Any) -> list[Run]:
    """The runs of an API call, read and uniquely named.

    *runs* is one run, a list (or other iterable) of runs, or a mapping ``{name: run}``; a
    run is a path, a :class:`Run`, a DataFrame, ``{query_id: {doc_id: score}}`` or an
    iterable of ir_measures ``ScoredDoc`` namedtuples (:func:`rankeval.io.data.as_run`).

    * A mapping whose values are all ``{doc_id: score}`` dicts is **one run** ``{query_id:
      {doc_id: score}}``; any other mapping is **runs by name** ``{name: run}``.
    * An iterable whose first item is a namedtuple is one run (of ``ScoredDoc``); any other
      is a list of runs.
    * Names: a mapping's keys; else a path's file name and a :class:`Run`'s own name, and
      ``run1``, ``run2``, ... (the place in the list) for the other forms; a single run that
      is none of these is ``run``. Runs of different files with the same file name are named
      by their tag column if that tells them apart, else by their paths; in-memory
      :class:`Run` objects with the same name by their place in the list.

    Raises:
        UsageError: no runs, a value that is no run, or two runs with the same name.
    """
    items = run_items(runs)
    out = [as_run(value, name) for name, value in items]
    entries = [
        (r.name, given is not None, r.source, _single_tag(r))
        for (given, _), r in zip(items, out, strict=True)
    ]
    names = unique_names(entries)
    return [r if r.name == n else as_run(r, n) for r, n in zip(out, names, strict=True)]


def unique_names(entries: list[tuple[str, bool, str | None, str | None]]) -> list[str]:
    """Unique names for runs, each given as ``(name, given, source, tag)``: *given* names
    (a mapping's keys) are kept; runs of files with the same file name are named by their
    tag (*tag*: the run's one tag, or ``None``) when that tells them apart, else by their
    paths; other runs with the same name by their place in the list (``run3``).

    Raises:
        UsageError: two runs still have the same name.
    """
    names = [e[0] for e in entries]
    for name in {n for n in names if names.count(n) > 1}:
        group = [i for i, n in enumerate(names) if n == name]
        sources = [entries[i][2] for i in group]
        if None not in sources and len(set(sources)) == len(sources):
            tags = [entries[i][3] for i in group]
            use_tags = None not in tags and len(set(tags)) == len(tags)
            for i, tag, source in zip(group, tags, sources, strict=True):
                if not entries[i][1]:
                    names[i] = str(tag if use_tags else source)
        else:
            for i in group:
                if entries[i][2] is None and not entries[i][1]:
                    names[i] = f"run{i + 1}"
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"several runs are named {', '.join(dup)}; give unique names ({{name: run}})")
    return names


def run_items(runs: Any) -> list[tuple[str | None, Any]]:
    """*runs* (as :func:`as_runs` takes them) as ``(name, run)`` pairs, not read yet; the name
    is ``None`` where the run names itself (a path, a :class:`Run`, a single run)."""
    if isinstance(runs, (str, Path, Run, *_frame_types())):
        return [(None, runs)]
    if isinstance(runs, Mapping):
        if not runs:
            raise UsageError(
                f"no runs given: the mapping is empty; expected {{name: run}} or {forms.RUN_FORMS}"
            )
        if forms.is_one_run(runs):
            return [(None, runs)]
        for key, value in runs.items():
            if isinstance(value, Mapping) and forms.is_one_run({key: value}):
                raise UsageError(
                    f"cannot tell one run from runs by name: {key!r} maps to {{doc_id: score}} while other "
                    "keys map to runs; give either one run {query_id: {doc_id: score}} or {name: run} "
                    "where every run is a path, a Run, a DataFrame, a {query_id: {doc_id: score}} dict or "
                    "an iterable of ScoredDoc"
                )
        return [(str(k), v) for k, v in runs.items()]
    if isinstance(runs, bytes) or forms.is_namedtuple(runs) or not isinstance(runs, Iterable):
        return [(None, runs)]  # no run: as_run says what is expected
    items = list(runs)
    if not items:
        raise UsageError(
            f"no runs given; expected a run ({forms.RUN_FORMS}), a list of runs or {{name: run}}"
        )
    if forms.is_namedtuple(items[0]):
        return [(None, items)]  # one run of ScoredDoc
    return [(None if isinstance(r, (str, Path, Run)) else f"run{i}", r) for i, r in enumerate(items, 1)]


def _single_tag(run: Run) -> str | None:
    tags = run.table.column("tag").unique().to_pylist() if run.table.num_rows else []
    return str(tags[0]) if len(tags) == 1 else None
