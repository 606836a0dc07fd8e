"""Interpolated precision at recall levels: trec_eval's ``iprec_at_recall`` and ``11pt_avg``.

The interpolated precision at a recall level is the highest precision at any rank at or after
the rank where that level is reached. trec_eval turns the recall level into a number of
relevant documents, ``floor(recall * R + 0.9)``, and reads the interpolated precision at the
relevant retrieved document of that number (at the first one for 0); a level the run never
reaches gives 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankeval import Domain, Measure, param
from rankeval.segments import segment_position

from .classic import _GRADE, _LEVEL, _REL, TREC_EVAL

if TYPE_CHECKING:
    from rankeval import RankedLists

ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_RECALL = Domain(0, 1)


def segment_suffix_max(seg: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The maximum of *values* from each row to the end of its run of equal *seg* values.

    Exact: the values are replaced by their rank among all values, offset per segment so that
    a running maximum over the reversed array never crosses into another segment.
    """
    if len(values) == 0:
        return np.zeros(0)
    distinct, code = np.unique(values, return_inverse=True)
    back_seg, back_code = seg[::-1], code[::-1].astype(np.int64)
    run = np.cumsum(np.concatenate(([0], back_seg[1:] != back_seg[:-1])))  # ascending per segment
    key = run * len(distinct) + back_code
    best = np.maximum.accumulate(key) - run * len(distinct)
    out: np.ndarray = distinct[best[::-1]]
    return out


def reach(recall: float, num_rel: np.ndarray) -> np.ndarray:
    """trec_eval 9.0.8's number of relevant documents of a recall level: ``(long)(recall * R +
    0.9)`` (later versions round instead)."""
    return np.floor(recall * num_rel + 0.9).astype(np.int64)


def interpolated_precision(data: RankedLists, rel: int, recall: float) -> np.ndarray:
    """``(Q,)`` trec_eval's interpolated precision at recall level *recall*."""

    def curve() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = data.relevant_rows(rel)
        nth = segment_position(data.query[rows])
        precision = (nth + 1.0) / (data.rank_of(rows) + 1.0)
        best = segment_suffix_max(data.query[rows], precision)
        first = np.full(data.num_queries, -1, dtype=np.int64)
        first[data.query[rows[nth == 0]]] = np.flatnonzero(nth == 0)
        return best, first, data.query_sum(rows)

    best, first, found = data.memo(("rankeval_trec.iprec", rel), curve)
    # the relevant document where the level is reached (the first one for a level of 0)
    need = np.maximum(reach(recall, data.num_rel(rel)), 1)
    reached = need <= found
    out = np.zeros(data.num_queries)
    out[reached] = best[first[reached] + need[reached] - 1]
    return out


@dataclass(frozen=True)
class IPrec(Measure):
    """Interpolated precision at recall level ``recall`` (trec_eval ``iprec_at_recall``): the
    highest precision at or after the rank of the n-th relevant retrieved document, n =
    floor(recall · R + 0.9) (the first one for n = 0); 0 if fewer than n relevant documents
    are retrieved."""

    name: ClassVar[str] = "IPrec"
    at: ClassVar[str | None] = "recall"
    description: ClassVar[str] = "Interpolated precision at a recall level; trec_eval iprec_at_recall"
    source: ClassVar[str] = TREC_EVAL

    recall: float | None = param(None, "recall level (required, e.g. IPrec@0.1)", domain=_RECALL)
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.recall is None:
            raise ValueError(
                f"{self.name} needs recall, a level in [0, 1], e.g. {self.with_params(recall=0.1)}"
            )

    def compute(self, data: RankedLists) -> np.ndarray:
        assert self.recall is not None  # checked in __post_init__
        return interpolated_precision(data, self.rel, self.recall)


def parse_points(text: str | None) -> tuple[float, ...]:
    """The recall levels of ``IPrecAvg(points=...)``: numbers in [0, 1] separated by commas
    (``None``: the eleven levels 0, 0.1, ..., 1)."""
    if text is None:
        return ELEVEN_POINTS
    points = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"points are recall levels in [0, 1] separated by ',', found {part!r}") from None
        if not (math.isfinite(value) and 0 <= value <= 1):
            raise ValueError(f"a recall level is in [0, 1], found {part.strip()!r}")
        points.append(value)
    return tuple(points)


@dataclass(frozen=True)
class IPrecAvg(Measure):
    """Mean interpolated precision over recall levels (trec_eval ``11pt_avg``): the mean of
    ``IPrec@p`` over the levels p of ``points``, by default the eleven levels 0, 0.1, ..., 1."""

    name: ClassVar[str] = "IPrecAvg"
    description: ClassVar[str] = "Mean interpolated precision over recall levels; trec_eval 11pt_avg"
    source: ClassVar[str] = TREC_EVAL

    points: str | None = param(None, "recall levels in [0, 1], e.g. '0.2,0.5,0.8' (none: 0, 0.1, ..., 1)")
    rel: int = param(1, _REL, domain=_GRADE)
    level: int = param(1, _LEVEL)

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_points(self.points)  # malformed levels are a ValueError here

    def compute(self, data: RankedLists) -> np.ndarray:
        points = sorted(parse_points(self.points))
        total = np.zeros(data.num_queries)
        for p in reversed(points):  # trec_eval adds the highest level first
            total = total + interpolated_precision(data, self.rel, p)
        return total / len(points)
