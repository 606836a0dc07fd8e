"""Tie diagnostics: how many tied scores fall where they can change a value.

Every task counts, on the ranked lists of its block (nesting level 1), the tied groups whose
order can change a value (rows with equal scores, not all of one grade; unjudged counts as a
grade of its own) that reach into the measures' depth (the largest cutoff asked for; all
ranks when a measure has none): the queries that have one, the groups, the tied pairs
(``n (n - 1) / 2`` per group of ``n``) and the pairs more that rounding every score to
float32 (as trec_eval reads scores) would tie. Measures that read item attributes (TBG's
lengths, CS-DCG's costs) can change with the order of items of one grade too: the count
leaves those out. The driver adds the counts of all
blocks and warns once, in one line for all runs (:class:`~rankeval.errors.TieWarning`), when
a tie can change a value under the tie rule in force (``trec_eval``, ``given``): the values
then depend on an arbitrary order (docs/ties.md).

May import: :mod:`rankeval.ranking`, :mod:`rankeval.measures`, :mod:`rankeval.errors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rankeval.measures.base import Measure
    from rankeval.ranking.ranked_lists import RankedLists

__all__ = ["RANGE_RULES", "TIE_FIELDS", "depth_of", "tie_counts", "tie_message"]

#: what :func:`tie_counts` counts, in order
TIE_FIELDS = ("queries", "groups", "pairs", "float32_pairs")


def depth_of(measures: Iterable[Measure]) -> int | None:
    """The deepest rank the measures read: the largest cutoff (``@k``), ``None`` (every
    rank) if a measure has no cutoff."""
    depth = 0
    for m in measures:
        k = getattr(m, m.at, None) if m.at else None
        if not isinstance(k, int) or isinstance(k, bool):
            return None
        depth = max(depth, k)
    return depth


def _pairs(
    query: np.ndarray, score: np.ndarray, grade: np.ndarray, rank: np.ndarray, depth: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Query and size of each tied group that can change a value: two rows or more, not all
    of one grade (unjudged counts as a grade of its own), starting above *depth*."""
    n = len(query)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = (query[1:] != query[:-1]) | (score[1:] != score[:-1])
    heads = np.flatnonzero(new)
    size = np.diff(np.append(heads, n))
    mixed = np.maximum.reduceat(grade, heads) != np.minimum.reduceat(grade, heads)
    keep = (size > 1) & mixed
    if depth is not None:
        keep &= rank[heads] < depth
    return query[heads][keep], size[keep]


def tie_counts(view: RankedLists, depth: int | None) -> np.ndarray:
    """``(4,)`` int64 counts (:data:`TIE_FIELDS`) of the ties of *view* within *depth* whose
    order can change a value: groups of rows with equal scores and different grades."""
    query, score, rank = view.query, view.score, view.rank
    grade = np.nan_to_num(view.relevance, nan=-np.inf)
    q, size = _pairs(query, score, grade, rank, depth)
    pairs = int((size * (size - 1) // 2).sum())
    # float32: the order stays (rounding is monotone), groups may merge
    _, size32 = _pairs(query, score.astype(np.float32), grade, rank, depth)
    pairs32 = int((size32 * (size32 - 1) // 2).sum())
    return np.array([len(np.unique(q)), len(size), pairs, max(pairs32 - pairs, 0)], dtype=np.int64)


def tie_message(counts: Mapping[str, np.ndarray], depth: int | None, rule: str) -> str | None:
    """The one warning line for the runs' summed *counts* (run name -> :func:`tie_counts`),
    or ``None`` when no tie can change a value. *rule*: the tie rule in force; under
    ``expected``, ``best`` and ``worst`` the order within a group is not arbitrary, and only
    the float32 ties are reported."""
    where = "at the ranks the measures read" if depth is None else f"within the top {depth}"
    arbitrary = rule in ("trec_eval", "given")
    tied = [
        f"{run} {_n(int(c[0]), 'query', 'queries')}, {_n(int(c[1]), 'group')}, {_n(int(c[2]), 'pair')}"
        for run, c in counts.items()
        if arbitrary and c[2]
    ]
    merged = [f"{run} {_n(int(c[3]), 'pair')}" for run, c in counts.items() if c[3]]
    parts = []
    if tied:
        parts.append(
            f"tied scores of different grades {where}: {', '.join(tied)}; the values depend on the "
            f"tie rule ({rule}; see --ties, and `rankeval ties` for their range)"
        )
    if merged:
        parts.append(
            f"scores that differ only beyond float32 precision (trec_eval reads them as equal) {where}: "
            f"{', '.join(merged)}"
        )
    return "; ".join(parts) or None


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


#: the columns of :meth:`rankeval.Evaluator.tie_range`: the tie rules, worst to best, the
#: default among them
RANGE_RULES = ("worst", "trec_eval", "expected", "best")
