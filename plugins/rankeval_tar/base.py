"""What every TAR measure shares: :class:`TarMeasure`, the base class.

The ``compat`` parameter, the topics a measure skips (R = 0; with ``compat=clef`` also the
topics the run lacks, with a warning), the evaluator's rounding of per-topic values and its
aggregate (a mean, a sum or pooled over topics, added in the order of the run file).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np

from rankeval import Measure, param
from rankeval.errors import RankevalWarning

from .clef import CLEF, COMPAT_HELP, clef_round, print_rule
from .view import Screening, check_one_style, screening

if TYPE_CHECKING:
    from rankeval import RankedLists

__all__ = ["TarMeasure"]


@dataclass(frozen=True)
class TarMeasure(Measure):
    """Shared behaviour: skipped topics, the ``compat`` parameter, the aggregate.

    Class variables: ``printed`` — how the evaluator prints the value (``count``, ``eval``:
    3 decimals below 1 and none from 1 on, ``gain``: 3 decimals); ``summed`` — the aggregate
    is a sum (else a mean); ``rounded`` — the evaluator keeps the per-topic value rounded to 3
    decimals, and averages those; ``clef_name`` — the evaluator's name of the measure
    (``wss_95``; ``None`` for a measure it lacks).
    """

    source: ClassVar[str] = CLEF
    clef_name: ClassVar[str | None] = None
    printed: ClassVar[str] = "eval"
    summed: ClassVar[bool] = False
    rounded: ClassVar[bool] = False

    compat: Literal["none", "clef"] = param("none", COMPAT_HELP)

    @property
    def clef(self) -> bool:
        """Whether the measure reproduces the CLEF evaluator (``compat=clef``)."""
        return self.compat == "clef"

    def clef_spelling(self) -> str | None:
        """The name the evaluator prints for this measure (``wss_95``), or ``None`` if it has
        none: a measure it lacks, or a parameter other than ``compat`` and the ``@`` one set."""
        if self.clef_name is None:
            return None
        fixed = ("compat", self.at)
        every = (*self.params(), *self.common_params())
        if any(getattr(self, i.name) != i.default for i in every if i.name not in fixed):
            return None
        return self.clef_name

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        """``(Q,)`` unrounded value per topic (skipped topics are set aside by the caller)."""
        raise NotImplementedError

    def _kept(self, data: RankedLists) -> np.ndarray:
        """Per-topic values as the evaluator keeps them (NaN for skipped topics)."""
        s = screening(data)
        v = np.asarray(self.value(s, data), dtype=np.float64)
        if self.clef and self.rounded:
            v = clef_round(v, 3)
        return np.where(self._skip(s, data), np.nan, v)

    def _skip(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.skipped(self.clef)

    def compute(self, data: RankedLists) -> np.ndarray:
        v = self._kept(data)
        return print_rule(v, self.printed) if self.clef else v

    def pool(self, s: Screening, data: RankedLists) -> tuple[np.ndarray, np.ndarray] | None:
        """``(numerator, denominator)`` per topic if the aggregate is pooled over topics."""
        return None

    def aggregate_parts(
        self, data: RankedLists, values: np.ndarray, queries: np.ndarray
    ) -> dict[str, np.ndarray]:
        s = screening(data)
        first = s.first_row[queries]
        lines = data.run.lines
        # the topic's place in the run file (its first line), comparable across partitions
        order = first
        if lines is not None and len(lines):
            at = np.minimum(first, len(lines) - 1)
            order = np.where(first < len(lines), lines[at], np.iinfo(np.int64).max)
        parts = {
            "kept": self._kept(data)[queries],
            "R": s.R[queries].astype(np.float64),
            "order": order,
            "run": np.full(len(queries), data.run.name, dtype=object),  # for the warning
            "source": np.full(len(queries), data.run.source or data.run.name, dtype=object),
            "new_line": s.style_lines[queries, 0],  # column-2 styles, checked over all blocks
            "old_line": s.style_lines[queries, 1],
        }
        pooled = self.pool(s, data)
        if pooled is not None:
            parts["num"], parts["den"] = pooled[0][queries], pooled[1][queries]
        return parts

    def aggregate_from_parts(
        self, query_ids: np.ndarray, values: np.ndarray, parts: dict[str, np.ndarray]
    ) -> float:
        kept = parts["kept"]
        ok = ~np.isnan(kept)
        run = str(parts["run"][0]) if len(parts["run"]) else ""
        check_one_style(parts["new_line"], parts["old_line"], str(parts["source"][0]) if len(kept) else run)
        _warn_skipped(run, query_ids[~ok], parts["R"][~ok], self.clef)
        topics = np.flatnonzero(ok)
        if self.clef:  # the evaluator adds the topics up in the order of the run file
            topics = topics[np.argsort(parts["order"][topics], kind="stable")]
        count = len(topics)
        if count == 0:
            return float("nan")
        pooled = "num" in parts
        if pooled:
            num, den = (np.cumsum(parts[x][topics])[-1] for x in ("num", "den"))
            total = (num / count) / (den / count) if self.clef else num / den
        elif self.summed:
            total = float(np.sum(kept[topics]))
        else:  # a sequential sum (np.cumsum), as the evaluator's loop adds
            total = float(np.cumsum(kept[topics])[-1]) / count
        if self.clef:
            return float(print_rule(np.array([total]), "gain" if pooled else self.printed)[0])
        return float(total)


def _warn_skipped(run: str, ids: np.ndarray, R: np.ndarray, clef: bool) -> None:
    """Warn about run *run*'s skipped topics (*ids*, with their relevant documents *R*)."""
    if len(ids) == 0:
        return
    zero = ids[R == 0]
    absent = ids[R > 0]
    parts = []
    if len(zero):
        names = ", ".join(str(x) for x in zero[:10]) + (", ..." if len(zero) > 10 else "")
        parts.append(f"{len(zero)} topic(s) without relevant documents (R = 0) skipped: {names}")
    if len(absent) and clef:
        names = ", ".join(str(x) for x in absent[:10]) + (", ..." if len(absent) > 10 else "")
        parts.append(f"{len(absent)} topic(s) not in the run skipped (as the CLEF evaluator): {names}")
    if parts:
        warnings.warn(f"run {run}: TAR measures: " + "; ".join(parts), RankevalWarning, stacklevel=3)
