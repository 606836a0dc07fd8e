"""What a run argument is: the one classifier the CLI, the library and every scheduler use.

A run is given as (:func:`run_kind`):

- ``"text"``: a regular file of TREC run text, plain or compressed, that the block engine
  cuts into blocks (:mod:`rankeval.io.blocks`);
- ``"stream"``: TREC text read whole by :meth:`rankeval.io.data.Run.read`: ``-`` (standard
  input), a pipe or a device — and a path that is not there, which that reader names as
  missing (or as an ir_datasets id);
- ``"pattern"``: a file pattern (``*?[`` in a path that does not exist) naming the TREC text
  files of one run, cut into blocks file after file (:func:`pattern_files`);
- ``"parquet"``: a ``.parquet`` file, a directory of them (``rankeval convert --to parquet``)
  or a pattern ending in ``.parquet`` (:mod:`rankeval.io.parquet`);
- ``"json"``: an hTBG prediction JSON file (:mod:`rankeval.io.htbg_json`);
- ``"object"``: anything else the Python API takes (a :class:`~rankeval.io.data.Run`, a
  DataFrame, ``{query_id: {doc_id: score}}``, ScoredDoc rows), coerced by
  :func:`rankeval.io.data.as_run`.

May import: ``inputs``, ``htbg_json`` and the foundation modules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from rankeval.errors import InputError

__all__ = ["PATTERN_CHARACTERS", "RunKind", "is_pattern", "pattern_files", "run_files", "run_kind"]

RunKind = Literal["text", "stream", "pattern", "parquet", "json", "object"]
#: the characters that make a path that does not exist a file pattern
PATTERN_CHARACTERS = "*?["


def is_pattern(text: str) -> bool:
    """Whether *text* is a file pattern: a path that does not exist, holding ``*``, ``?`` or ``[``."""
    return any(c in text for c in PATTERN_CHARACTERS) and not os.path.lexists(text)


def pattern_files(pattern: str) -> list[str]:
    """The files *pattern* matches, sorted.

    Raises:
        InputError: no file matches it, or it cannot be used as a pattern.
    """
    import glob

    try:
        files = sorted(glob.glob(pattern))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a usable file pattern: {exc}", source=pattern) from None
    if not files:
        raise InputError("no file matches this pattern", source=pattern)
    return files


def run_kind(item: Any) -> RunKind:
    """What run argument *item* is (see the module docstring). Reads at most a file's first bytes."""
    from rankeval.io import htbg_json, inputs

    if not isinstance(item, (str, Path)):
        return "object"
    text = str(item)
    if inputs.is_stdin(text):
        return "stream"
    if Path(text).suffix == ".parquet":
        return "parquet"
    if is_pattern(text):
        return "pattern"
    kind = inputs.path_kind(text)
    if kind == "directory":
        return "parquet"  # (a directory written by convert; the reader says if it is not one)
    if kind != "file":
        return "stream"
    return "json" if htbg_json.is_json(text) else "text"


def run_files(item: Any) -> list[str]:
    """The text files the block engine cuts for run *item*: a text file itself, the files a
    pattern matches (sorted; a match that is not run text is an error); none for any other kind.

    Raises:
        InputError: a pattern matches no file, or a file that is not TREC run text.
    """
    kind = run_kind(item)
    if kind == "text":
        return [str(item)]
    if kind != "pattern":
        return []
    files = pattern_files(str(item))
    for path in files:
        if run_kind(path) != "text":
            raise InputError(
                "matches a file that is not run text (a directory, Parquet or JSON); "
                "a pattern names the TREC text files of one run",
                source=path,
            )
    return files
