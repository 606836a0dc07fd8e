"""The data model: :class:`Qrels` and :class:`Run`, columnar (pyarrow tables, pandas views).

Both are thin wrappers over a :class:`pyarrow.Table` read by :mod:`rankeval.io.trec` or built from
a pandas DataFrame or a ``{query_id: {doc_id: value}}`` dict. Ranking, alignment and nesting
happen later, in :mod:`rankeval.ranking`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankeval.errors import InputError, RankevalError, UsageError
from rankeval.io import attributes, forms, htbg_json, inputs, trec
from rankeval.io.schema import run_table
from rankeval.io.validate import check_ids, check_judgments, dict_rows, float_column, id_strings

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from rankeval.extension import Domain

__all__ = ["Qrels", "Run", "as_qrels", "as_run"]


class Qrels:
    """Relevance judgments: one row per judgment line.

    Columns of :attr:`table`: ``query_id``, ``iteration`` (the assessor), ``doc_id``,
    ``relevance`` (float64), ``line`` (1-based source line, 0 when not read from a file) and
    one string column per ``key=value`` attribute (e.g. ``cost``, ``sens``).
    """

    def __init__(
        self, table: pa.Table, source: str = "<qrels>", docinfo: Sequence[tuple[str, pa.Table]] = ()
    ) -> None:
        self.table = table
        self.source = source
        self.docinfo: tuple[tuple[str, pa.Table], ...] = tuple(docinfo)
        """The side files of item attributes applied (:meth:`with_docinfo`), first wins:
        ``(file name, table)``, each table as :func:`rankeval.io.trec.read_docinfo_table`
        reads it. They give attributes to items the qrels do not judge
        (:meth:`docinfo_number`)."""
        # attribute -> [(side file, its line number per row, 0 where the value is not from it)]
        self._origins: dict[str, list[tuple[str, np.ndarray]]] = {}

    def __repr__(self) -> str:
        return f"Qrels({self.source!r}, {self.table.num_rows} judgments)"

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def frame(self) -> pd.DataFrame:
        """The judgments as a pandas DataFrame."""
        return self.table.to_pandas()

    @property
    def attributes(self) -> list[str]:
        """Names of the ``key=value`` attribute columns."""
        return [c for c in self.table.column_names if c not in trec.RESERVED]

    def with_docinfo(self, sources: str | Path | Sequence[str | Path]) -> Qrels:
        """These judgments with the item attributes of one or more side files.

        A side file has lines ``docno [key=value ...]`` (see
        :func:`rankeval.io.trec.read_docinfo_table`). Its attributes are query-independent:
        they describe the item ``docno`` (a nested item by its full id, ``alice/p3``) in every
        query, judged or not. **Precedence**, for each attribute of each item: the item's own
        qrels lines (a judgment that gives the key on any of its lines keeps its value and no
        line of it takes a side file's), then the side files in the order given (the first
        that gives the key for the docno wins). Items of a side file that the qrels do not
        judge are not added to the judgments: measures read their attributes through
        :meth:`docinfo_number` (e.g. the reading cost of an unjudged post).

        Returns:
            A new :class:`Qrels` (same source name and lines) whose table has the merged
            attribute columns and whose :attr:`docinfo` lists the side files;
            :meth:`attribute_origin` tells where each value came from.

        Raises:
            InputError: a side file cannot be read or has a bad line.
        """
        out = self
        for source in [sources] if isinstance(sources, (str, Path)) else list(sources):
            out = out._with_side_file(source)
        return out

    def select(self, rows: np.ndarray) -> Qrels:
        """These judgments restricted to table rows where *rows* (a boolean mask) is true,
        in file order, with their side files and the origins of their attribute values
        (what one block of a run is evaluated against)."""
        import pyarrow as pa

        out = Qrels(self.table.filter(pa.array(rows)), self.source, self.docinfo)
        out._origins = {
            key: [(name, lines[rows]) for name, lines in origins] for key, origins in self._origins.items()
        }
        return out

    def _with_side_file(self, source: str | Path) -> Qrels:
        """:meth:`with_docinfo` of one side file."""
        info = trec.read_docinfo_table(source)
        name = trec.source_name(source)
        table, origins = attributes.merge_side_file(self.table, self._origins, info, name)
        out = Qrels(table, self.source, (*self.docinfo, (name, info)))
        out._origins = origins
        return out

    def docinfo_number(
        self,
        key: str,
        doc_ids: pa.Array,
        what: str = "",
        minimum: float | None = None,
        *,
        domain: Domain | None = None,
    ) -> np.ndarray:
        """Attribute *key* of the items *doc_ids* from the side files (:attr:`docinfo`, the
        first that gives it wins) as float64, NaN where none gives it. For items the qrels
        do not judge; a judged item's attributes are on its qrels rows (:meth:`number_attribute`).

        Raises:
            InputError: a value of a side file that is not a finite number (or is outside
                *minimum* or *domain*), naming the file and line.
        """
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        out = np.full(len(doc_ids), np.nan)
        if not self.docinfo or not len(doc_ids):
            return out
        doc = pc.cast(doc_ids, pa.string())
        for name, info in self.docinfo:
            if key not in info.column_names:
                continue
            values, bad = attributes.numbers(info.column(key).combine_chunks(), minimum, domain)
            if bad is not None:
                found = info.column(key)[bad].as_py()
                raise InputError(
                    f"expected {attributes.expected(minimum, domain, key, what)}, found {found!r}",
                    source=name,
                    line=int(info.column("line")[bad].as_py()),
                )
            at = pc.index_in(doc, value_set=info.column("doc_id").combine_chunks())
            at = at.fill_null(-1).to_numpy(zero_copy_only=False)
            take = (at >= 0) & np.isnan(out)
            out[take] = values[at[take]]
        return out

    def number_attribute(
        self,
        key: str,
        what: str = "",
        minimum: float | None = None,
        *,
        domain: Domain | None = None,
        expected: str | None = None,
    ) -> np.ndarray:
        """Attribute *key* of each row of :attr:`table` as float64 (NaN where a line does not
        give it), for measures that read numbers such as ``cost=``, ``sens=`` or ``pi=``.

        Args:
            key: The attribute (``cost`` for ``cost=``).
            what: What the number is, quoted in the error (``the reading cost``).
            minimum: The smallest value accepted (``Domain(minimum)``).
            domain: The values accepted, e.g. ``Domain(0, 1, low_open=True)`` for (0, 1].
            expected: The error's wording instead of ``expected a number for key= (what),
                found 'x'``: ``bad key='x': expected <expected>``, followed by the qrels line.

        Raises:
            InputError: for a value that is not a finite number (or is outside *minimum* or
                *domain*), naming the file and line it came from (the qrels or a
                ``--docinfo`` file).
        """
        import numpy as np

        if key not in self.table.column_names:
            return np.full(self.table.num_rows, np.nan)
        text = self.table.column(key)
        values, bad = attributes.numbers(text, minimum, domain)
        if bad is not None:
            source, line = self.attribute_origin(key, bad)
            found = text[bad].as_py()
            if expected is not None:
                row = " ".join(
                    str(self.table.column(c)[bad].as_py()) for c in ("query_id", "iteration", "doc_id")
                )
                echo = f"{row} {self.table.column('relevance')[bad].as_py():g} {key}={found}"
                raise InputError(
                    f"bad {key}={str(found)!r}: expected {expected}",
                    source=source,
                    line=line,
                    text=echo if source == self.source else None,
                )
            raise InputError(
                f"expected {attributes.expected(minimum, domain, key, what)}, found {found!r}",
                source=source,
                line=line,
            )
        return values

    def attribute_origin(self, key: str, row: int) -> tuple[str, int | None]:
        """File name and 1-based line number where attribute *key* of table row *row* was
        given: the side file's line for a value from :meth:`with_docinfo`, else the qrels
        line (``None`` when the qrels were not read from a file)."""
        for name, lines in self._origins.get(key, []):
            if lines[row]:
                return name, int(lines[row])
        line = int(self.table.column("line")[row].as_py())
        return self.source, line or None

    @classmethod
    def read(cls, source: str | Path) -> Qrels:
        """Read a TREC qrels file (``-`` = stdin, compressed files accepted), a Parquet file
        written by ``rankeval convert --to parquet`` or an hTBG truth JSON file.

        A *source* that is not an existing path is tried as an ir_datasets id.

        Raises:
            InputError: the path is missing, unreadable or a directory; a bad line (naming
                the file, line and column); no judgment at all; a relevance that is not
                finite; the same ``(query_id, iteration, doc_id)`` twice.
            ResourceError: memory ran out while reading.
        """
        _check_source(source)
        kind = inputs.path_kind(source)
        if kind == "missing" and _looks_like_dataset_id(str(source)):
            return cls.from_ir_datasets(str(source))
        name = trec.source_name(source)
        if str(source).endswith(".parquet") and kind in ("file", "directory"):  # `convert --to parquet`
            from rankeval.io.parquet import read_parquet_qrels

            return cls(read_parquet_qrels(source), name)
        if htbg_json.is_json(source):
            return cls(htbg_json.read_truth_table(source), name)
        return cls(trec.read_qrels_table(source), name)

    @classmethod
    def from_ir_datasets(cls, dataset_id: str) -> Qrels:
        """Load the qrels of an ir_datasets dataset (``msmarco-passage/dev/small``); see
        :mod:`rankeval.io.irds` (what is an id; a failed download is one clear error)."""
        import pandas as pd

        from rankeval.io.irds import qrels_rows

        frame = pd.DataFrame(qrels_rows(dataset_id), columns=["query_id", "iteration", "doc_id", "relevance"])
        return cls.from_frame(frame, source=dataset_id)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str = "<DataFrame>") -> Qrels:
        """Build from a DataFrame with ``query_id, doc_id, relevance`` (``iteration`` optional),
        or with PyTerrier's ``qid, docno, label``.

        Any other column is kept as an attribute (a ``cost`` or ``sens`` column, say).

        Raises:
            UsageError: a required column is missing, or the relevance is not numeric.
            InputError: as in a qrels file: a missing (``None``, ``NaN``) or empty id, one
                with a control character or an unpaired surrogate; a relevance outside
                :data:`rankeval.io.validate.GRADES` or not finite; the same ``(query_id,
                iteration, doc_id)`` on two rows (naming both).
        """
        import pyarrow as pa

        frame = forms.with_columns(frame, ("query_id", "doc_id", "relevance"), "qrels", source)
        cols: dict[str, Any] = {
            "query_id": id_strings(frame["query_id"], "query_id", source),
            "iteration": (
                id_strings(frame["iteration"], "iteration", source)
                if "iteration" in frame
                else pa.repeat(pa.scalar("0", pa.string()), len(frame))
            ),
            "doc_id": id_strings(frame["doc_id"], "doc_id", source),
            "relevance": pa.array(float_column(frame["relevance"], "relevance", source), pa.float64()),
            "line": pa.array([0] * len(frame), pa.int64()),
        }
        for c in frame.columns:
            if c not in cols:
                cols[str(c)] = id_strings(frame[c], str(c), source)  # null: not given
        table = pa.table(cols)
        check_judgments(table, source)
        return cls(table, source)

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, float]], source: str = "<dict>") -> Qrels:
        """Build from ``{query_id: {doc_id: relevance}}`` (the pytrec_eval/ir_measures shape)."""
        import pandas as pd

        rows = dict_rows(data, "relevance", source)
        return cls.from_frame(
            pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"], dtype=object), source
        )


class Run:
    """A ranked run: one row per retrieved document, in file order.

    Columns of :attr:`table`: ``query_id``, ``q0`` (column 2, kept: CLEF TAR runs put a
    threshold flag there), ``doc_id``, ``score`` (float64), ``tag``. The ranking (score
    descending, ties by doc_id descending, as trec_eval) is computed at evaluation time.
    ``tie_break`` is ``"docno"`` (trec_eval's rule), ``"file"`` (equal scores keep the run's
    file order) or ``"qrels"`` (equal scores follow the order of the items in the qrels;
    unjudged items after, in file order): runs read from the hTBG reference's JSON format,
    whose stable sort keeps the truth file's order of individuals and of their posts.
    """

    def __init__(
        self,
        table: pa.Table,
        name: str = "run",
        source: str | None = None,
        lines: np.ndarray | None = None,
        tie_break: str = "docno",
    ) -> None:
        self.table = table
        self.name = name
        self.source = source
        self.lines = lines
        self.tie_break = tie_break

    def line_of(self, row: int) -> tuple[int | None, str]:
        """Source line number of table row *row* (``None`` if not read from a file) and the
        text of that line (rebuilt from the row when the source cannot be re-read)."""
        t = self.table
        text = " ".join(str(t.column(c)[row].as_py()) for c in ("query_id", "q0", "doc_id"))
        text += f" - {t.column('score')[row].as_py()!r} {t.column('tag')[row].as_py()}"
        if self.source is None:
            return None, text
        line = int(self.lines[row]) if self.lines is not None else row + 1
        if self.source != "<stdin>" and self.tie_break != "qrels":  # "qrels": read from JSON
            try:
                text = _nth_line(trec.read_bytes(self.source), line) or text
            except RankevalError:  # the file went away or changed: the rebuilt text will do
                pass
        return line, text

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {self.table.num_rows} lines)"

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def frame(self) -> pd.DataFrame:
        """The run as a pandas DataFrame (file order)."""
        return self.table.to_pandas()

    def with_float32_scores(self) -> Run:
        """This run with every score rounded to the nearest float32, as trec_eval 9 reads
        scores (``atof`` into a ``float``): two scores that differ only beyond float32's
        precision then tie, and the tie is broken by docno as trec_eval does."""
        import numpy as np
        import pyarrow as pa

        scores = self.table.column("score").to_numpy().astype(np.float32).astype(np.float64)
        table = self.table.set_column(
            self.table.column_names.index("score"), "score", pa.array(scores, pa.float64())
        )
        return Run(table, self.name, self.source, self.lines, self.tie_break)

    def judged_only(self, qrels: Qrels) -> Run:
        """This run without the documents the qrels do not judge for their query, nor those
        judged only with a negative grade (trec_eval's unjudged-in-pool mark): condensed lists
        (Sakai, SIGIR 2007), as trec_eval ``-J`` removes them before any calculation."""
        import pyarrow as pa
        import pyarrow.compute as pc

        def keys(table: pa.Table) -> pa.Array:
            qid = table.column("query_id").cast(pa.string())
            return pc.binary_join_element_wise(qid, table.column("doc_id").cast(pa.string()), "\x00")

        judged = qrels.table.filter(pc.greater_equal(qrels.table.column("relevance"), 0))
        keep = pc.is_in(keys(self.table), value_set=keys(judged))
        table = self.table.filter(keep)
        lines = None if self.lines is None else self.lines[keep.to_numpy(zero_copy_only=False)]
        return Run(table, self.name, self.source, lines, self.tie_break)

    @classmethod
    def read(cls, source: str | Path, name: str | None = None) -> Run:
        """Read a TREC run file (``-`` = stdin, compressed files accepted), a Parquet run
        (:mod:`rankeval.io.parquet`) or an hTBG prediction JSON file.

        The run is named *name*, or by its file name.

        Raises:
            InputError: the path is missing, unreadable or a directory; a bad line (naming
                the file, line and column); no line at all; a NaN score.
            ResourceError: memory ran out while reading.
        """
        from rankeval.io.sources import run_kind

        _check_source(source)
        kind = run_kind(source)
        if name is None:
            name = "stdin" if str(source) == "-" else Path(source).name
        if kind == "parquet":
            from rankeval.io.parquet import read_parquet_run_table

            rows, numbers = read_parquet_run_table(source)
            return cls(rows, name, trec.source_name(source), numbers)
        if kind == "json":
            run = cls(htbg_json.read_prediction_table(source, tag=name), name)
            run.source, run.tie_break = trec.source_name(source), "qrels"
            return run
        table, lines = trec.read_run_table(source)
        return cls(table, name, trec.source_name(source), lines)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str = "run") -> Run:
        """Build from a DataFrame with ``query_id, doc_id, score`` (``q0``, ``tag`` optional),
        or with PyTerrier's ``qid, docno, score``. Other columns are not read.

        Raises:
            UsageError: a required column is missing, or the score is not numeric.
            InputError: as in a run file (naming the row): a NaN score; a missing
                (``None``, ``NaN``) or empty id, one with a control character or an
                unpaired surrogate.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        frame = forms.with_columns(frame, ("query_id", "doc_id", "score"), "run", name)
        n = len(frame)

        def col(key: str, default: str) -> pa.Array:
            return (
                id_strings(frame[key], key, name)
                if key in frame
                else pa.repeat(pa.scalar(default, pa.string()), n)
            )

        ids = pa.table(
            {
                "query_id": col("query_id", ""),
                "q0": col("q0", "Q0"),
                "doc_id": col("doc_id", ""),
                "tag": col("tag", name),
            }
        )
        check_ids(ids, tuple(ids.column_names), name)
        table = run_table(
            ids.column("query_id"),
            ids.column("q0"),
            ids.column("doc_id"),
            pa.array(float_column(frame["score"], "score", name), pa.float64()),
            ids.column("tag"),
        )
        # pandas' NaN becomes a null in pyarrow: both are a NaN score
        nan = pc.fill_null(pc.is_nan(table.column("score")), True).to_numpy(zero_copy_only=False)
        if nan.any():
            row = int(nan.argmax())
            raise InputError(
                f"score is NaN (row {row + 1}); expected a number (inf and -inf are allowed, "
                "NaN cannot be ranked)",
                source=name,
            )
        return cls(table, name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, float]], name: str = "run") -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (the pytrec_eval/ir_measures shape)."""
        import pandas as pd

        rows = dict_rows(data, "score", f"<dict {name}>")
        return cls.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"], dtype=object), name)


def _check_source(source: Any) -> None:
    if not isinstance(source, (str, Path)):
        raise UsageError(f"expected a path (or '-' for standard input), not {type(source).__name__}")


def _nth_line(data: bytes, line: int) -> str | None:
    """Text of 1-based line *line* of *data* (at most ``MAX_ECHO`` characters), or ``None``."""
    import numpy as np

    from rankeval.errors import MAX_ECHO

    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    if line > len(ends) + 1:
        return None
    start = int(ends[line - 2]) + 1 if line > 1 else 0
    end = int(ends[line - 1]) if line <= len(ends) else len(data)
    return data[start : min(end, start + 4 * MAX_ECHO)].decode("utf-8", "replace").rstrip("\r")[:MAX_ECHO]


def _looks_like_dataset_id(text: str) -> bool:
    """Whether a missing path *text* names an ir_datasets dataset (without importing
    ir_datasets, nor creating its home directory, for a name that is not one)."""
    from rankeval.io.irds import is_dataset_id

    return is_dataset_id(text)


def as_qrels(qrels: Any) -> Qrels:
    """Coerce qrels in any form the Python API accepts to :class:`Qrels`: a path (or an
    ir_datasets id), a :class:`Qrels`, a DataFrame (``query_id, doc_id, relevance`` or
    PyTerrier's ``qid, docno, label``), ``{query_id: {doc_id: relevance}}`` or an iterable of
    ir_measures ``Qrel`` namedtuples (:mod:`rankeval.io.forms`).

    Raises:
        UsageError: *qrels* is none of these, or lacks a column or field.
    """
    import sys

    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, Path)):
        return Qrels.read(qrels)
    pd = sys.modules.get("pandas")  # a DataFrame implies pandas is loaded
    if pd is not None and isinstance(qrels, pd.DataFrame):
        return Qrels.from_frame(qrels)
    if isinstance(qrels, Mapping):
        return Qrels.from_dict(qrels)
    rows = forms.namedtuple_rows(qrels)
    if rows is not None:
        return Qrels.from_frame(forms.namedtuple_frame(rows, "<qrels>"), "<qrels>")
    raise UsageError(f"cannot use {forms.describe(qrels)} as qrels; expected {forms.QRELS_FORMS}")


def as_run(run: Any, name: str | None = None) -> Run:
    """Coerce one run in any form the Python API accepts to :class:`Run`: a path, a
    :class:`Run`, a DataFrame (``query_id, doc_id, score`` or PyTerrier's ``qid, docno,
    score``), ``{query_id: {doc_id: score}}`` or an iterable of ir_measures ``ScoredDoc``
    namedtuples (:mod:`rankeval.io.forms`).

    Args:
        run: the run.
        name: its name; default: a path's file name, a :class:`Run`'s own name, else ``run``.

    Raises:
        UsageError: *run* is none of these, or lacks a column or field.
    """
    import sys

    if isinstance(run, Run):
        if name is not None and name != run.name:
            return Run(run.table, name, run.source, run.lines, run.tie_break)
        return run
    if isinstance(run, (str, Path)):
        return Run.read(run, name)
    pd = sys.modules.get("pandas")  # a DataFrame implies pandas is loaded
    if pd is not None and isinstance(run, pd.DataFrame):
        return Run.from_frame(run, name or "run")
    if isinstance(run, Mapping):
        return Run.from_dict(run, name or "run")
    rows = forms.namedtuple_rows(run)
    if rows is not None:
        return Run.from_frame(forms.namedtuple_frame(rows, name or "run"), name or "run")
    raise UsageError(f"cannot use {forms.describe(run)} as a run; expected {forms.RUN_FORMS}")
