"""Gain maps and ideal rankings for the graded measures of trec_eval (nDCG with ``gains``, G,
ndcg_rel, Rndcg).

trec_eval's graded measures give each judged grade a gain: the grade itself, or the value a
gain map assigns to it, written as trec_eval writes it after the measure name
(``ndcg.1=3,2=9,4=4.5``: grade 1 gains 3, grade 2 gains 9, grade 4 gains 4.5, other grades keep
their own value). Unjudged documents and negative grades gain 0. The ideal ranking orders the
judged documents of a query by gain, descending, and stops at the first gain that is not
positive (trec_eval's ``setup_gains`` and its walk down the gain levels).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rankeval.segments import segment_cumsum

if TYPE_CHECKING:
    from rankeval import RankedLists

GainTable = tuple[tuple[int, float], ...]
"""A parsed gain map: ``((grade, gain), ...)`` in the order written."""

GAINS_HELP = "trec_eval gain map 'grade=gain,...' (none: the gain is the grade)"
_LEVEL = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_gains(text: str | None) -> GainTable | None:
    """The gain map written as trec_eval's measure parameters (``"1=3,2=9,4=4.5"``).

    Raises:
        ValueError: a pair that is not ``grade=gain`` with a grade >= 0 (digits) and a finite
            gain, or a grade given twice.
    """
    if text is None:
        return None
    table: list[tuple[int, float]] = []
    for pair in text.split(","):
        level, eq, gain = pair.strip().partition("=")
        level, gain = level.strip(), gain.strip()
        if not eq or not _LEVEL.fullmatch(level) or not _NUMBER.fullmatch(gain):
            raise ValueError(
                f"gains are written grade=gain,... with grades >= 0 (e.g. '1=3,2=9'), found {pair!r}"
            )
        value = float(gain)
        if not math.isfinite(value):
            raise ValueError(f"gain {gain!r} of grade {level} is not a finite number")
        if any(lvl == int(level) for lvl, _ in table):
            raise ValueError(f"grade {int(level)} is given a gain twice")
        table.append((int(level), value))
    return tuple(table)


def gain_of(grades: np.ndarray, table: GainTable | None) -> np.ndarray:
    """The gain of each grade: the map's gain for a listed grade, else the grade itself; 0 for
    unjudged (NaN) and negative grades."""
    gain = np.where(grades >= 0, grades, 0.0)
    for level, value in table or ():
        gain = np.where(grades == level, value, gain)
    return np.asarray(gain, dtype=np.float64)


@dataclass(frozen=True)
class GainedRows:
    """The ranked rows whose gain is not 0 (judged, in row order), with their rank, gain and
    running discounted gain within the query."""

    rows: np.ndarray
    query: np.ndarray
    rank: np.ndarray
    gain: np.ndarray
    discounted: np.ndarray  # gain / log2(rank + 2)
    dcg: np.ndarray  # running sum of ``discounted`` within the query (inclusive)


def gained_rows(data: RankedLists, table: GainTable | None) -> GainedRows:
    """The rows with a non-zero gain under *table* (cached per gain map)."""

    def make() -> GainedRows:
        rows, relevance = data.judged_rows()
        gain = gain_of(relevance, table)
        keep = gain != 0
        rows, gain = rows[keep], gain[keep]
        query = data.query[rows]
        rank = data.rank_of(rows)
        discounted = gain / np.log2(rank + 2.0)
        return GainedRows(rows, query, rank, gain, discounted, segment_cumsum(query, discounted))

    return data.memo(("rankeval_trec.gained_rows", table), make)


def dcg_before(data: RankedLists, gained: GainedRows, query: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """DCG of the top ``cut[i]`` documents of query ``query[i]``, for each i."""
    out = np.zeros(len(query))
    if len(gained.rows) == 0:
        return out
    target = data.starts[query] + np.minimum(cut, data.counts[query])
    last = np.searchsorted(gained.rows, target) - 1  # the query's last gained row above the cut
    safe = np.maximum(last, 0)
    inside = (last >= 0) & (gained.rows[safe] >= data.starts[query])
    out[inside] = gained.dcg[safe[inside]]
    return out


@dataclass(frozen=True)
class Ideal:
    """The ideal ranking of every query: its judged documents with a positive gain, by gain
    descending (grouped by query, in query order)."""

    query: np.ndarray
    position: np.ndarray  # 0-based rank in the ideal ranking
    gain: np.ndarray
    dcg: np.ndarray  # running ideal DCG within the query (inclusive)
    cost: np.ndarray  # running sum of max(gain, 1) within the query (inclusive; G's cost)
    offsets: np.ndarray  # (Q + 1,): query q's documents are [offsets[q], offsets[q + 1])
    count: np.ndarray  # (Q,): documents with a positive gain

    def dcg_at(self, query: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """Ideal DCG of the top ``cut[i]`` positions of query ``query[i]``, for each i."""
        m = np.minimum(cut, self.count[query])
        at = self.offsets[query] + m - 1
        out = np.zeros(len(query))
        out[m > 0] = self.dcg[at[m > 0]]
        return out

    def total(self) -> np.ndarray:
        """``(Q,)`` ideal DCG of all positions (0 without a positive gain)."""
        return self.dcg_at(np.arange(len(self.count)), self.count)


def ideal(data: RankedLists, table: GainTable | None) -> Ideal:
    """The ideal ranking of each query under the gain map *table* (cached per gain map)."""

    def make() -> Ideal:
        gain = gain_of(data.judged.relevance, table)
        keep = gain > 0
        query, gain = data.judged.query[keep], gain[keep]
        order = np.lexsort((-gain, query))  # stable: grouped by query, gain descending
        query, gain = query[order], gain[order]
        count = np.bincount(query, minlength=data.num_queries)
        offsets = np.concatenate(([0], np.cumsum(count)))
        position = np.arange(len(query)) - offsets[query]
        dcg = segment_cumsum(query, gain / np.log2(position + 2.0))
        cost = segment_cumsum(query, np.maximum(gain, 1.0))
        return Ideal(query, position, gain, dcg, cost, offsets, count)

    return data.memo(("rankeval_trec.ideal", table), make)
