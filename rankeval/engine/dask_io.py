"""Runs as Dask dataframes, for the Dask engine and ``rankeval convert --to parquet``: a run in
TREC text (one file, or many through a glob) split into blocks at line ends, each block parsed
on a worker by the local engine's reader (:func:`rankeval.io.trec.parse_run`) keeping every line's
number; or a run in Parquet, checked as the text reader checks a file. And the way back: a run
written as a directory of Parquet files.

May import: numpy, :mod:`rankeval.io.trec`, :mod:`rankeval.errors`, :mod:`rankeval.engine.dask_cluster`
(computing on the run's cluster, holding Ctrl-C); dask, pandas and pyarrow lazily. Not
:mod:`rankeval.engine.distributed`, which uses it.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval.engine import dask_cluster
from rankeval.errors import InputError, RankevalError, UsageError
from rankeval.io import trec as io

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.dask_cluster import DaskOptions
    from rankeval.io.data import Run

__all__ = [
    "RUN_META_COLUMNS",
    "block_frame",
    "check_run_files",
    "is_parquet",
    "read_parquet_run",
    "read_run_frame",
    "to_parquet",
    "write_run_parquet",
]

RUN_META_COLUMNS = ("query_id", "q0", "doc_id", "score", "tag", "file", "line")


def _run_files(source: str | Path) -> list[str]:
    """The files *source* names: itself, or the files a glob matches (sorted)."""
    text = str(source)
    if not any(ch in text for ch in "*?["):
        return [text]
    try:
        files = sorted(glob.glob(text))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a usable file pattern: {exc}", source=text) from None
    if not files:
        raise InputError("no file matches this pattern", source=text)
    return files


def _parse_block(data: bytes, name: str, first_line: int, file_no: int) -> pd.DataFrame:
    table, lines = io.parse_run(data, name, first_line)
    return block_frame(table, lines, file_no)


def block_frame(table: Any, lines: np.ndarray | None, file_no: int) -> pd.DataFrame:
    import pandas as pd
    import pyarrow as pa

    n = table.num_rows
    strings = pd.ArrowDtype(pa.string())
    frame = pd.DataFrame(
        {
            name: pd.Series(
                table.column(name).cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
            )
            for name in ("query_id", "q0", "doc_id")
        }
    )
    frame["score"] = table.column("score").to_numpy()
    frame["tag"] = pd.Series(
        table.column("tag").cast(pa.string()).to_pandas(types_mapper=pd.ArrowDtype), dtype=strings
    )
    frame["file"] = np.full(n, file_no, dtype=np.int32)
    frame["line"] = np.asarray(lines if lines is not None else np.arange(1, n + 1), dtype=np.int64)
    return frame


def _run_meta() -> pd.DataFrame:
    import pyarrow as pa

    empty = pa.table(
        {
            "query_id": pa.array([], pa.string()),
            "q0": pa.array([], pa.string()),
            "doc_id": pa.array([], pa.string()),
            "score": pa.array([], pa.float64()),
            "tag": pa.array([], pa.string()),
        }
    )
    return block_frame(empty, np.zeros(0, np.int64), 0)


def read_run_frame(source: str | Path, options: DaskOptions) -> Any:
    """A run as a Dask dataframe (columns ``query_id, q0, doc_id, score, tag, file, line``):
    TREC text files (a path or a glob; compressed files are one block each) or Parquet.

    Raises:
        InputError: a glob matching no file; a missing, unreadable or directory path (a
            directory is read only as a Parquet run); text and Parquet mixed; Parquet that is
            not a run (missing columns, columns of the wrong type, not Parquet at all). Bad
            lines and values are found while the blocks are read, on the workers.
    """
    files, parquet = check_run_files(source)
    options.files = files
    if parquet:
        return _read_parquet(str(source), files)
    return _read_text(str(source), files, options)


def check_run_files(source: str | Path) -> tuple[list[str], bool]:
    """The files of run *source* and whether they are Parquet, checked as far as can be
    without reading them (on the client, before a cluster starts)."""
    files = _run_files(source)
    parquet = [_is_parquet(f) for f in files]
    if any(parquet) and not all(parquet):
        raise InputError(
            "the pattern matches both Parquet and text files; a run is one or the other", source=str(source)
        )
    if not parquet[0]:
        for path in files:
            if Path(path).is_dir():
                raise InputError(
                    "is a directory without Parquet files; expected a run file, or a directory "
                    "written by rankeval convert --to parquet",
                    source=io.source_name(path),
                )
            io.is_compressed(path)  # the shared reader's checks: missing, unreadable, not a file
    return files, parquet[0]


def write_run_parquet(frame: Any, path: str | Path) -> None:
    """Write a run read by :func:`read_run_frame` as a directory of Parquet files, one per
    block, with this process's threads (no cluster). However it ends (an error in a block,
    Ctrl-C), it returns only once no thread writes into *path* any more, so that the caller
    can remove a half-written directory for good."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(min(4, os.cpu_count() or 1))
    try:
        frame.to_parquet(str(path), write_index=False, compute_kwargs={"scheduler": "threads", "pool": pool})
    finally:
        with dask_cluster.interrupts_held():
            pool.shutdown(wait=True, cancel_futures=True)


def read_parquet_run(source: str | Path, name: str | None = None) -> Run:
    """A run in Parquet (a file, or a directory written by ``rankeval convert --to parquet``),
    read whole with this process's threads, checked as :func:`read_run_frame` checks it, in
    the files' row order; named *name* or by its file name."""
    import dask
    import pyarrow as pa

    from rankeval.io.data import Run

    frame = read_run_frame(source, _threads_options())
    with dask.config.set(scheduler="threads"):
        part = frame.compute().sort_values(["file", "line"], kind="stable")
    table = pa.table(
        {
            "query_id": pa.array(part["query_id"].astype(str), pa.string()).dictionary_encode(),
            "q0": pa.array(part["q0"].astype(str), pa.string()).dictionary_encode(),
            "doc_id": pa.array(part["doc_id"].astype(str), pa.string()),
            "score": pa.array(part["score"].to_numpy(dtype=np.float64), pa.float64()),
            "tag": pa.array(part["tag"].astype(str), pa.string()).dictionary_encode(),
        }
    )
    lines = part["line"].to_numpy(dtype=np.int64)
    return Run(table, name or Path(str(source)).name, io.source_name(source), lines)


def _threads_options() -> DaskOptions:
    from rankeval.engine.dask_cluster import DaskOptions

    return DaskOptions()


def is_parquet(path: str) -> bool:
    """Whether *path* names a Parquet run (a ``.parquet`` file, or a directory of them)."""
    return _is_parquet(path)


def _is_parquet(path: str) -> bool:
    p = Path(path)
    return p.suffix == ".parquet" or (p.is_dir() and any(p.glob("*.parquet")))


def _read_text(source: str, files: list[str], options: DaskOptions) -> Any:
    import dask
    import dask.dataframe as dd
    from dask.bytes import read_bytes

    parts = []
    for file_no, path in enumerate(files):
        name = io.source_name(path)
        if io.is_compressed(path):  # one block: the reader decompresses the whole file
            blocks = [dask.delayed(io.read_bytes)(path)]
        else:
            _, per_file = read_bytes(path, delimiter=b"\n", blocksize=options.blocksize, sample=False)
            blocks = per_file[0]
        if not blocks:  # an empty file
            continue
        counts = dask_cluster.compute([dask.delayed(bytes.count)(b, b"\n") for b in blocks])
        first = np.concatenate(([1], np.cumsum(counts)[:-1] + 1)).astype(int)
        parts += [
            dask.delayed(_parse_block)(b, name, int(f), file_no) for b, f in zip(blocks, first, strict=True)
        ]
    if not parts:  # only empty files
        raise InputError(
            "empty run: the file is empty; expected lines 'query_id Q0 doc_id rank score tag'",
            source=io.source_name(source),
        )
    return dd.from_delayed(parts, meta=_run_meta(), verify_meta=False)


_TEXT_COLUMNS = ("query_id", "q0", "doc_id", "tag")


def _read_parquet(source: str, files: list[str]) -> Any:
    """A run in Parquet (``rankeval convert --to parquet``; other Parquet with the columns
    ``query_id, doc_id, score``, optionally ``q0, tag, file, line``)."""
    import dask.dataframe as dd

    try:
        frame = dd.read_parquet(files)
        dtypes = frame.dtypes.to_dict()
    except RankevalError:
        raise
    except Exception as exc:
        raise InputError(
            f"cannot be read as a Parquet run: {type(exc).__name__}: {exc}", source=source
        ) from None
    missing = {"query_id", "doc_id", "score"} - set(dtypes)
    if missing:
        raise InputError(
            f"not a Parquet run: no column(s) {', '.join(sorted(missing))} (rankeval convert --to "
            "parquet writes one)",
            source=source,
        )
    for name, dtype in dtypes.items():
        expected = _parquet_type_error(str(name), dtype)
        if expected:
            raise InputError(
                f"not a Parquet run: column {name} holds {dtype}; expected {expected}", source=source
            )
    meta = _run_meta()
    for name in ("q0", "tag"):
        if name not in frame.columns:
            frame[name] = "Q0" if name == "q0" else Path(files[0]).name
    if "line" not in frame.columns:
        # positions in the files' row order; Dask's index restarts in every partition
        lengths = np.asarray(dask_cluster.compute([frame.map_partitions(len)])[0], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        frame = frame.map_partitions(
            _number_rows, offsets, partition_info=True, meta=frame._meta.assign(line=0)
        )
        frame["file"] = np.int32(0)
    elif "file" not in frame.columns:
        frame["file"] = np.int32(0)
    frame = frame[list(meta.columns)].astype(meta.dtypes.to_dict())
    return frame.map_partitions(_check_rows, io.source_name(source), meta=meta)


def _parquet_type_error(name: str, dtype: Any) -> str | None:
    """What column *name* of a Parquet run should hold, if *dtype* (a pandas dtype) is not that."""
    kind = getattr(dtype, "kind", "O")  # text: O (object, category, string) or U (Arrow string)
    if name in _TEXT_COLUMNS and kind not in "OUSiu":
        return "text"
    if name == "score" and kind not in "iuf":
        return "numbers"
    if name in ("line", "file") and kind not in "iu":
        return "integers"
    return None


def _number_rows(
    part: pd.DataFrame, offsets: np.ndarray, partition_info: dict[str, Any] | None = None
) -> pd.DataFrame:
    start = int(offsets[partition_info["number"]]) if partition_info else 0
    return part.assign(line=np.arange(start + 1, start + len(part) + 1, dtype=np.int64))


_CONTROL = "[\x00-\x1f\x7f]"


def _check_rows(part: pd.DataFrame, name: str) -> pd.DataFrame:
    """The checks a run file's reader makes, on rows of a Parquet run (runs on a worker)."""
    bad = part["score"].isna().to_numpy()  # null or NaN
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            "score is NaN or missing; expected a number (inf and -inf are allowed, NaN cannot be ranked)",
            source=name,
            line=int(part["line"].iloc[row]),
        )
    for col in ("query_id", "doc_id"):
        values = part[col]
        bad = (values.isna() | values.str.contains(_CONTROL, regex=True).fillna(False)).to_numpy(dtype=bool)
        bad |= (values.str.len() == 0).fillna(False).to_numpy(dtype=bool)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{col} is empty, missing or holds a control character; expected an id",
                source=name,
                line=int(part["line"].iloc[row]),
                text=repr(values.iloc[row]),
            )
    return part


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


def to_parquet(qrels_in: str | Path, run_in: str | Path, qrels_out: str | Path, run_out: str | Path) -> None:
    """Write the qrels as one Parquet file and the run (a TREC file, or a glob of them) as a
    directory of Parquet files, read block by block with Dask (no cluster needed), for the
    Dask engine (``--engine dask``). Each row keeps its source line number (column
    ``line``; ``file`` numbers the input files) for messages and for the file order."""
    import os
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    from rankeval.engine.dask_cluster import DaskOptions
    from rankeval.io.data import Qrels

    qrels = Qrels.read(qrels_in)
    qrels_out, run_out = Path(qrels_out), Path(run_out)
    fd, tmp = tempfile.mkstemp(dir=qrels_out.parent or ".", prefix=f".{qrels_out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(qrels.table, tmp)
        frame = read_run_frame(run_in, DaskOptions())
        tmp_dir = tempfile.mkdtemp(dir=run_out.parent or ".", prefix=f".{run_out.name}.")
        try:
            write_run_parquet(frame, tmp_dir)
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
