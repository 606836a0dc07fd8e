"""``rankeval convert``: the hTBG reference's JSON format ↔ nested TREC qrels and runs, and
TREC → Parquet (:func:`to_parquet`).

JSON → TREC writes an individual as an item ``individual`` and each of its documents as
``individual/doc`` (docs: formats.md, "Nested items"): qrels lines ``q 0 item label`` (``q 0 item 0 exclude=1`` for a
null label) and ``q 0 item/doc R cost=W``,
run lines ``q Q0 item rank score tag``. TREC → JSON does the reverse for two-level runs.
Both directions keep every number exactly (Python's shortest round-trip float repr); the JSON
written is strict RFC 8259, which has no infinity, so an infinite score is refused.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from rankeval.errors import InputError, UsageError
from rankeval.io import htbg_json
from rankeval.io.data import Qrels, Run

__all__ = ["json_to_trec", "to_parquet", "trec_to_json"]


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _trec_id(text: str, what: str, source: str | Path) -> str:
    """*text* if it can be a whitespace-separated TREC field, else an InputError: a JSON key
    may hold spaces or be empty, which would shift every later column of the line."""
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        raise InputError(
            f"{what} {text!r} cannot be written as a TREC field (empty, or contains whitespace or "
            "control characters)",
            source=str(source),
        )
    return text


def json_to_trec(
    truth: str | Path, prediction: str | Path, tag: str = "htbg", sep: str = "/"
) -> tuple[str, str]:
    """(qrels text, run text) in nested TREC form from a truth and a prediction JSON file.

    Raises:
        InputError: a query, individual or document id that a TREC line cannot hold (empty,
            whitespace or control characters), or an invalid *tag*.
    """
    if not tag or any(c.isspace() or not c.isprintable() for c in tag):
        raise UsageError(f"--tag {tag!r}: expected a word without whitespace or control characters")
    qrels_lines = []
    for qid, it, item, rel, cost, exclude in htbg_json.read_truth(truth, sep):
        _trec_id(qid, "query id", truth)
        _trec_id(item, "item", truth)
        extra = f" cost={_num(float(cost))}" if cost is not None else ""
        extra += f" exclude={exclude}" if exclude is not None else ""
        qrels_lines.append(f"{qid} {it} {item} {_num(rel)}{extra}")
    run_lines = []
    rank: dict[str, int] = defaultdict(int)
    for qid, item, score in htbg_json.read_prediction(prediction, sep):
        _trec_id(qid, "query id", prediction)
        _trec_id(item, "item", prediction)
        rank[qid] += 1
        run_lines.append(f"{qid} Q0 {item} {rank[qid]} {score!r} {tag}")
    return "\n".join(qrels_lines) + "\n", "\n".join(run_lines) + "\n"


def _split(items: set[tuple[str, str]], qid: str, item: str, sep: str) -> tuple[str, str] | None:
    """(parent, child) if *item* is a child under the nesting rule, else None."""
    if sep not in item:
        return None
    parent, child = item.rsplit(sep, 1)
    return (parent, child) if (qid, parent) in items else None


def _first_repeat(pairs: list[tuple[str, str]]) -> int | None:
    """Index of the first pair seen before, or None."""
    seen: set[tuple[str, str]] = set()
    for i, pair in enumerate(pairs):
        if pair in seen:
            return i
        seen.add(pair)
    return None


def trec_to_json(qrels: str | Path, run: str | Path, sep: str = "/") -> tuple[str, str]:
    """(truth JSON, prediction JSON) from nested TREC qrels and run (two levels).

    Raises:
        InputError: an item judged twice (the JSON format has one judgment per item, so a
            second assessor's would be lost) or retrieved twice, a document without a
            numeric ``cost=``, more than two levels, or an infinite score (JSON has no
            infinity).
    """
    q = Qrels.read(qrels)
    r = Run.read(run)
    qt, rt = q.table.to_pydict(), r.table.to_pydict()
    infinite = next((i for i, score in enumerate(rt["score"]) if not math.isfinite(score)), None)
    if infinite is not None:
        raise InputError(
            f"score {rt['score'][infinite]!r} cannot be written in JSON (RFC 8259 has no infinity); "
            "expected a finite score",
            source=str(run),
            line=r.line_of(infinite)[0],
        )
    for table, source, what in ((qt, qrels, "judged"), (rt, run, "retrieved")):
        repeat = _first_repeat(list(zip(table["query_id"], table["doc_id"], strict=True)))
        if repeat is not None:
            line = table["line"][repeat] if "line" in table else r.line_of(repeat)[0]
            raise InputError(
                f"query {table['query_id'][repeat]!r} item {table['doc_id'][repeat]!r} is {what} twice; "
                "the JSON format holds one line per item",
                source=str(source),
                line=line,
            )
    cost_values = q.number_attribute("cost", "the reading cost of a document", minimum=0)
    items = set(zip(qt["query_id"], qt["doc_id"], strict=True)) | set(
        zip(rt["query_id"], rt["doc_id"], strict=True)
    )
    costs = [None if c != c else float(c) for c in cost_values.tolist()]
    excludes = qt.get("exclude", [None] * len(qt["doc_id"]))
    truth: dict[str, dict[str, list[Any]]] = {}
    children: list[tuple[str, str, str, float, Any]] = []
    for qid, item, rel, cost, exclude in zip(
        qt["query_id"], qt["doc_id"], qt["relevance"], costs, excludes, strict=True
    ):
        split = _split(items, qid, item, sep)
        if split is None:
            truth.setdefault(qid, {})[item] = [None if exclude == "1" else _plain(rel), {}]
        else:
            children.append((qid, split[0], split[1], rel, cost))
    for qid, parent, child, rel, cost in children:
        if _split(items, qid, parent, sep) is not None:
            raise InputError(
                f"{qid} {parent}{sep}{child}: the JSON format has two levels only", source=str(qrels)
            )
        if cost is None:
            raise InputError(
                f"{qid} {parent}{sep}{child}: a document needs cost= in the JSON format", source=str(qrels)
            )
        individual = truth.setdefault(qid, {}).setdefault(parent, [0, {}])
        individual[1][child] = [_plain(rel), _plain(cost)]
    prediction: dict[str, dict[str, list[Any]]] = {}
    pending: list[tuple[str, str, str, float]] = []
    for qid, item, score in zip(rt["query_id"], rt["doc_id"], rt["score"], strict=True):
        split = _split(items, qid, item, sep)
        if split is None:
            prediction.setdefault(qid, {})[item] = [score, {}]
        else:
            pending.append((qid, split[0], split[1], score))
    for qid, parent, child, score in pending:
        prediction.setdefault(qid, {}).setdefault(parent, [0.0, {}])[1][child] = score
    return _json(truth), _json(prediction)


def _json(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=1, allow_nan=False) + "\n"  # RFC 8259: no NaN or Infinity


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def to_parquet(qrels_in: str | Path, run_in: str | Path, qrels_out: str | Path, run_out: str | Path) -> None:
    """Write the qrels as one Parquet file and the run (a TREC file, or a pattern of them) as
    a directory of Parquet files, one per block of text
    (:func:`~rankeval.io.parquet.write_run_parquet`). Each row keeps its source line number
    (column ``line``; ``file`` numbers the input files) for messages and for the file order.
    Both are written under temporary names and renamed when complete: an error or Ctrl-C
    leaves nothing behind, and an existing *run_out* is replaced only if it is an earlier
    Parquet output.

    Raises:
        InputError: a bad qrels or run line (naming file and line), an empty run.
        UsageError: *run_out* exists and is not a directory of Parquet files.
    """
    import os
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    from rankeval.io.parquet import write_run_parquet

    qrels = Qrels.read(qrels_in)
    qrels_out, run_out = Path(qrels_out), Path(run_out)
    fd, tmp = tempfile.mkstemp(dir=qrels_out.parent or ".", prefix=f".{qrels_out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(qrels.table, tmp)
        tmp_dir = tempfile.mkdtemp(dir=run_out.parent or ".", prefix=f".{run_out.name}.")
        try:
            write_run_parquet(run_in, tmp_dir)
            if run_out.exists():
                _check_replaceable(run_out)
                shutil.rmtree(run_out) if run_out.is_dir() else run_out.unlink()
            os.replace(tmp_dir, run_out)
        except BaseException:
            shutil.rmtree(tmp_dir, ignore_errors=True)
            raise
        os.replace(tmp, qrels_out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _check_replaceable(run_out: Path) -> None:
    """Refuse to delete an existing *run_out* unless it is an earlier Parquet output: a
    directory holding only ``*.parquet`` files (a typo must not remove a directory tree)."""
    if run_out.is_symlink() or not run_out.is_dir():
        raise UsageError(f"{run_out}: exists and is not a Parquet directory; refusing to replace it")
    if any(p.is_dir() or p.suffix != ".parquet" for p in run_out.iterdir()):
        raise UsageError(
            f"{run_out}: the directory holds files other than *.parquet; refusing to replace it "
            "(give a new directory name)"
        )
