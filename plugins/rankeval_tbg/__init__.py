"""Time-biased gain measures as a rankeval plugin: TBG, hTBG and their normalised forms.

TBG (Smucker & Clarke, SIGIR 2012): ``TBG = Σ_k g_k · 2^(-T(k)/h)``, ``T(k)`` the time to reach
rank k (summaries, plus clicked documents' reading times, of the items above it).
hTBG (Shing, Resnik & Oard, ACL 2020): the reading time of an individual is the expected
number of words read in its documents, which are read in the run's order until one settles
the assessment (stopping probability R): ``E_i = Σ_l W_l Π_{m<l} (1 - R_m)``; a relevant
individual gains only if one of its first ``max_docs`` documents has R > 0.

Individuals are the top-level items of a nested run (``PARENT/CHILD`` ids), their documents
the children; a flat run's items are read whole (their own ``cost=``). All kernels work on
all queries and individuals at once: segmented products and sums over padded 2-D arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rankeval import Domain, Duration, Measure, hookimpl, param
from rankeval.errors import missing_attribute
from rankeval.segments import safe_divide, segment_exclusive_sum, segment_grid, segment_position

if TYPE_CHECKING:
    from rankeval import RankedLists

SMUCKER_CLARKE = "Smucker & Clarke, Time-based calibration of effectiveness measures, SIGIR 2012"
SHING = "Shing, Resnik & Oard, A Prioritization Model for Suicidality Risk Assessment, ACL 2020"

# parameter domains: the user model's probabilities are in [0, 1] (above 1, TBG exceeds the
# number of relevant items; below 0, it is negative); times, word costs and the default cost
# are finite and >= 0 (0 leaves that part of the time out); a grade threshold is any integer
_P = Domain(0, 1)
_NONNEG = Domain(0)
_GRADE = Domain(-(2**31), 2**31 - 1)


# ------------------------------------------------------------------------------ helpers


@dataclass
class _Items:
    """Per item (see ``RankedLists.items``): stopping probability R, cost W (NaN if
    absent), and whether W was written as an integer (``cost=120``, JSON ``120``; not
    ``120.0``): the hTBG reference multiplies integer word counts in 64-bit integers."""

    stop: np.ndarray
    cost: np.ndarray
    integer: np.ndarray

    def lookup(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R, W) of *items* (R 0 and W NaN where the item code is -1: judged nowhere)."""
        found = items >= 0
        i = np.where(found, items, 0)
        stop = np.where(found, self.stop[i], 0.0) if len(self.stop) else np.zeros(len(items))
        cost = np.where(found, self.cost[i], np.nan) if len(self.cost) else np.full(len(items), np.nan)
        return stop, cost


def _items(data: RankedLists, smax: float) -> _Items:
    """Stopping probabilities (multi-assessor formula) and costs of every judged item."""
    return data.memo(("tbg-items", smax), lambda: _make_items(data, smax), shared=True)


def _make_items(data: RankedLists, smax: float) -> _Items:
    table = data.qrels.table
    index = data.items.lines
    n = data.items.count
    rel = table.column("relevance").to_numpy()
    share = np.clip(rel, 0.0, smax) / smax  # per assessor: min(r, smax) / smax
    # R = 1 - Π (1 - share) in log space, so that a tiny R > 0 stays > 0 (1 - 1e-20 == 1.0)
    with np.errstate(divide="ignore"):  # share 1: log 0 = -inf, R = 1
        log_keep = np.bincount(index, weights=np.log1p(-share), minlength=n)
    stop = -np.expm1(log_keep)
    # one assessor (the usual case): R is the share itself, exactly
    single = np.bincount(index, minlength=n) == 1
    first_share = np.zeros(n)
    first_share[index] = share
    stop[single] = first_share[single]
    cost = np.full(n, np.nan)
    given = data.qrels.number_attribute("cost", "the reading cost", minimum=0)  # NaN where not given
    has = ~np.isnan(given)
    cost[index[has]] = given[has]
    integer = np.zeros(n, dtype=bool)
    if has.any():
        import pyarrow.compute as pc

        # an integer literal below 2^63: JSON's json module reads it as an int, which NumPy
        # multiplies as int64 (a larger one it multiplies as a float)
        literal = pc.match_substring_regex(table.column("cost"), r"^[+-]?[0-9]+$")
        written = pc.fill_null(literal, False).to_numpy(zero_copy_only=False)
        integer[index[has]] = written[has] & (given[has] < 2.0**63)
    return _Items(stop, cost, integer)


# ------------------------------------------------------------------------------ measures
@dataclass(frozen=True)
class _TimeBiased(Measure):
    """Parameters and kernel shared by TBG and hTBG (value, ideal and normalised)."""

    at: ClassVar[str | None] = "h"
    hierarchical: ClassVar[bool] = False
    attributes: ClassVar[tuple[str, ...]] = ("cost",)
    normalised: ClassVar[bool] = False

    h: Duration = param(Duration(224), "half-life of the user's persistence (units s, m, h)")  # noqa: RUF009
    p_click_rel: float = param(0.64, "probability of clicking a relevant item's summary", domain=_P)
    p_click_nonrel: float = param(0.39, "probability of clicking a non-relevant item's summary", domain=_P)
    p_save_rel: float = param(0.77, "probability of saving a relevant item once read", domain=_P)
    p_save_nonrel: float = param(
        0.27, "probability of saving a non-relevant item (no gain; kept for the model)", domain=_P
    )
    t_summary: float = param(4.4, "seconds to read a summary", domain=_NONNEG)
    t_alpha: float = param(0.018, "seconds per word read", domain=_NONNEG)
    t_beta: float = param(7.8, "seconds of overhead per item read", domain=_NONNEG)
    rel: int = param(1, "minimum relevance grade of a relevant (at-risk) individual", domain=_GRADE)
    max_docs: int = param(50, "documents read per individual at most (0 = all)", domain=Domain(0, 2**31 - 1))
    smax: float = param(
        1.0,
        "maximum label: a child's stopping probability is min(label, smax)/smax per assessor",
        domain=Domain(0, low_open=True),  # a divisor
    )
    default_cost: float | None = param(
        None, "cost of an item without cost= (none: missing costs are an error)", domain=_NONNEG
    )
    ideal: bool = param(False, "the value of the ideal ranking instead (Theorems 3.2 and 3.3)")
    ideal_rule: Literal["exact", "reference"] = param(
        "exact",
        "exact: the ideal is the maximum over all rankings; reference: the hTBG reference's "
        "best_possible_htbg (posts by its key R*prod(W)/W cut at max_docs, individuals by grade "
        "then words, every at-risk individual gains)",
    )

    @classmethod
    def reads(cls) -> str:
        """The ranked items and their children (the posts read in each individual)."""
        ranked, _, attributes = super().reads().partition("; attributes: ")
        return f"{ranked} and their children; attributes: {attributes} (of the items, and of their children)"

    def attribute_levels(self) -> dict[str, tuple[int, ...]]:
        """``cost=`` of the ranked items (read when they have no children) and of their
        children (the words read in them)."""
        return {"cost": (self.view_level(), self.view_level() + 1)}

    # -- the user model ---------------------------------------------------------------
    def _shared_key(self) -> tuple[Any, ...]:
        """Everything but the half-life: runs differing only in h share the work."""
        return (
            type(self).hierarchical,
            *(getattr(self, f.name) for f in fields(self) if f.name not in ("h", "ideal")),
        )

    def compute(self, data: RankedLists) -> np.ndarray:
        if self.normalised or self.ideal:
            ideal = self._discounted(data, *self._ideal_times(data))
            if not self.normalised:
                return ideal
        value = self._discounted(data, *self._times(data))
        if not self.normalised:
            return value
        return safe_divide(value, ideal)

    def _discounted(
        self, data: RankedLists, query: np.ndarray, gain: np.ndarray, before: np.ndarray
    ) -> np.ndarray:
        decay = np.exp2(-before / float(self.h))
        return np.bincount(query, weights=gain * decay, minlength=data.num_queries)

    def _gain(self) -> float:
        return self.p_click_rel * self.p_save_rel

    def _time(self, relevant: np.ndarray, words: np.ndarray) -> np.ndarray:
        click = np.where(relevant, self.p_click_rel, self.p_click_nonrel)
        return self.t_summary + click * (self.t_alpha * words + self.t_beta)

    def _children(self, data: RankedLists) -> RankedLists | None:
        # every individual's posts, judged or not: the unjudged ones take reading time too
        return data.children(every_parent=True)

    def _child_stats(self, data: RankedLists, ideal: bool) -> dict[str, np.ndarray] | None:
        """Per individual item key: expected words E, total words W, signal; from the
        children in run order (or in the ideal order)."""
        return data.memo(
            ("tbg-children", ideal, self._shared_key()), lambda: self._make_child_stats(data, ideal)
        )

    def _make_child_stats(self, data: RankedLists, ideal: bool) -> dict[str, np.ndarray] | None:
        kids = self._children(data)
        if kids is None:  # a flat collection
            return None
        if kids.num_queries == 0:
            # a nested collection whose items here have no (remaining) children: no
            # individual reads children, and none can gain under the signal rule
            return {
                "expected": np.zeros(0),
                "total": np.zeros(0),
                "signal": np.zeros(0, dtype=bool),
                "items": np.zeros(0, dtype=np.int64),
            }
        items = _items(data, self.smax)
        nsub = kids.num_queries
        if ideal:
            # every judged child of each parent, best order: R/W descending (hTBG), or
            # fewest words first (TBG)
            jq = kids.judged.query
            stop, cost = items.lookup(kids.items.judged)
            seg = jq
        else:
            rows = np.arange(len(kids.query))
            seg = kids.query
            stop, cost = items.lookup(kids.items.rows)
        cost = self._fill_cost(cost, kids, ideal)
        if ideal:
            # equal keys: the qrels order (the reference's stable sort over the truth file)
            position = kids.items.first_judgment[kids.items.judged]
            if self.ideal_rule == "reference":
                integer = items.integer[kids.items.judged]
                order = _reference_post_order(seg, position, stop, cost, integer)
            else:
                # a subnormal cost overflows stop / cost to inf: the right order (read it first)
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    ratio = np.where(cost > 0, stop / cost, np.where(stop > 0, np.inf, 0.0))
                order = np.lexsort((position, -ratio if self.hierarchical else cost, seg))
            seg, stop, cost = seg[order], stop[order], cost[order]
            pos = segment_position(seg)
        else:
            pos = kids.rank_of(rows)
        truncated = None
        exact = self.ideal_rule == "exact"
        if (
            ideal
            and exact
            and self.hierarchical
            and self.max_docs
            and len(pos)
            and pos.max() >= self.max_docs
        ):
            # more posts than are read: the best posts to read first are a choice, not just
            # an order (see _best_truncated_reading); computed on the full R/W-sorted lists
            truncated = _best_truncated_reading(
                segment_grid(seg, pos, stop, nsub), segment_grid(seg, pos, cost, nsub, fill=np.inf), self.max_docs
            )
        if self.max_docs:
            keep = pos < self.max_docs
            seg, pos, stop, cost = seg[keep], pos[keep], stop[keep], cost[keep]
        read_on = segment_grid(seg, pos, 1.0 - stop, nsub, fill=1.0)
        words = segment_grid(seg, pos, cost, nsub)
        with np.errstate(over="ignore"):  # past 1.8e308 words: inf, as the reference's float sum
            expected, total = (words * _exclusive_product(read_on)).sum(axis=1), words.sum(axis=1)
        stats = {
            "expected": expected,
            "total": total,
            "signal": (segment_grid(seg, pos, stop, nsub) > 0).any(axis=1),
            "items": kids.nesting.parent_items,
        }
        if truncated is not None:
            stats["expected"], stats["signal"] = truncated
        return stats

    def _fill_cost(
        self, cost: np.ndarray, view: RankedLists, ideal: bool, at: np.ndarray | None = None
    ) -> np.ndarray:
        """*cost* of the ranked rows of *view* (or of its judged items if *ideal*; *at*: their
        positions there, default all) completed: from a ``--docinfo`` side file (unjudged
        rows), else ``default_cost=``; items that still have none are an error naming them."""
        missing = np.isnan(cost)
        if not missing.any():
            return cost
        at = np.arange(len(cost)) if at is None else at
        if not ideal:  # a judged item's side-file cost is on its qrels rows already
            rows = np.flatnonzero(missing)
            cost = cost.copy()
            cost[rows] = view.docinfo_number("cost", at[rows], "the reading cost", minimum=0)
            missing = np.isnan(cost)
            if not missing.any():
                return cost
        if self.default_cost is not None:
            return np.where(missing, self.default_cost, cost)
        where = at[np.flatnonzero(missing)]
        doc_ids, query = (view.judged.doc_ids, view.judged.query) if ideal else (view.doc_ids, view.query)
        outer, outer_ids = view.nesting.outer, view.nesting.outer_ids
        items = [f"{doc_ids[int(i)].as_py()!r} (query {outer_ids[outer[query[i]]]!r})" for i in where[:3]]
        error = missing_attribute(self, "cost", items, len(where), "default_cost=N")
        error.source = view.qrels.source
        raise error

    def _words(
        self, data: RankedLists, keys: np.ndarray, own_cost: np.ndarray, ideal: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """(words read, signal) per individual: from its children, else its own cost."""
        stats = self._child_stats(data, ideal)
        signal = np.ones(len(own_cost), dtype=bool)
        words = own_cost
        if stats is not None:
            at = np.full(data.items.count, -1, dtype=np.int64)
            at[stats["items"]] = np.arange(len(stats["items"]))
            idx = np.where(keys >= 0, at[keys], -1)
            has = idx >= 0
            nested_words = stats["expected"] if self.hierarchical else stats["total"]
            words = own_cost.copy()
            words[has] = nested_words[idx[has]]
            if self.hierarchical and getattr(self, "signal", True):
                # as the reference: in a nested collection an individual without (judged)
                # posts has no post that can settle the assessment, so it never gains
                signal = np.zeros(len(own_cost), dtype=bool)
                signal[has] = stats["signal"][idx[has]]
        return words, signal

    def _times(self, data: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, gain, time before) of each ranked individual, in the run's order."""
        return data.memo(("tbg-times", self._shared_key()), lambda: self._make_times(data))

    def _make_times(self, data: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.arange(len(data.query))
        keys = data.items.rows
        _, own = _items(data, self.smax).lookup(keys)
        relevant = data.relevance >= self.rel
        has_children = self._child_stats(data, False)
        own = own if has_children is None else np.where(np.isnan(own), 0.0, own)
        words, signal = self._words(data, keys, self._own_cost(own, data, rows, has_children), False)
        time = self._time(relevant, words)
        gain = np.where(relevant & signal, self._gain(), 0.0)
        return data.query, gain, segment_exclusive_sum(data.query, time)

    def _own_cost(self, own: np.ndarray, data: RankedLists, rows: np.ndarray, nested: Any) -> np.ndarray:
        if nested is not None:
            return own  # individuals read through their children; own cost only if childless
        return self._fill_cost(own, data, False)

    def _ideal_times(self, data: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, gain, time before) of the ideal ranking of each query's judged items:
        gaining individuals first, by ascending time (Theorem 3.2)."""
        return data.memo(("tbg-ideal", self._shared_key()), lambda: self._make_ideal_times(data))

    def _make_ideal_times(self, data: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        jq = data.judged.query
        keys = data.items.judged
        relevant = data.judged.relevance >= self.rel
        _, own = _items(data, self.smax).lookup(keys)
        nested = self._child_stats(data, True)
        own = np.where(np.isnan(own), 0.0 if nested is not None else np.nan, own)
        if nested is None and np.isnan(own[relevant]).any():
            # only the relevant items' costs matter for the ideal ranking (Theorem 3.2)
            own[relevant] = self._fill_cost(own[relevant], data, True, np.flatnonzero(relevant))
        words, signal = self._words(data, keys, own, True)
        if self.ideal_rule == "exact":
            gaining = relevant & signal
            sort_by: tuple[np.ndarray, ...] = (~gaining, jq)
        else:
            # the reference's best: every relevant individual gains, the higher grades first
            gaining = relevant
            sort_by = (-data.judged.relevance, ~gaining, jq)
        time = self._time(relevant, np.where(gaining, words, 0.0))
        order = np.lexsort((time, *sort_by))
        q, t, g = jq[order], time[order], gaining[order]
        before = segment_exclusive_sum(q, np.where(g, t, 0.0))
        return q, np.where(g, self._gain(), 0.0), before


def _reference_post_order(
    seg: np.ndarray, position: np.ndarray, stop: np.ndarray, cost: np.ndarray, integer: np.ndarray
) -> np.ndarray:
    """The order in which the hTBG reference's best value (``best_possible_htbg``) reads each
    individual's judged posts: descending key ``R · P / W`` (``-inf`` for ``R = 0``), ties in
    the qrels order (Python's stable sort over the truth file), *seg* the individual.

    ``P`` is NumPy's product of all of the individual's word counts, in the qrels order: in
    int64, which wraps past 2^63, when every one is an integer (the reference's ``np.prod``
    of JSON integers), else in float64, which can reach ``inf`` (and ``inf · 0 = NaN``).
    The key is then float64 arithmetic, so a zero word count gives ``0/0 = NaN``: an
    individual with a NaN key is sorted by Python's ``sorted`` itself, for which NaN
    compares neither below nor above anything (the order then depends on the sort's steps).
    """
    if len(seg) == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.lexsort((position, seg))
    seg, stop, cost, integer = seg[first], stop[first], cost[first], integer[first]
    starts = np.flatnonzero(np.concatenate(([True], seg[1:] != seg[:-1])))
    ends = np.append(starts[1:], len(seg))
    whole = np.logical_and.reduceat(integer, starts)
    wrapped = np.multiply.reduceat(np.where(integer, cost, 1.0).astype(np.int64), starts)
    with np.errstate(all="ignore"):  # past 1.8e308 the float64 product is inf, as the reference's
        product = np.where(whole, wrapped.astype(np.float64), np.multiply.reduceat(cost, starts))
        product = np.repeat(product, ends - starts)
        key = np.where(stop > 0, stop * product / cost, -np.inf)
    order = np.lexsort((-key, seg))  # stable: equal keys keep the qrels order
    for i in np.unique(np.searchsorted(starts, np.flatnonzero(np.isnan(key)), "right") - 1):
        keys = key[starts[i] : ends[i]].tolist()
        within = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
        order[starts[i] : ends[i]] = starts[i] + np.asarray(within)
    return first[order]


def _best_truncated_reading(stop: np.ndarray, words: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Least expected words to read per individual when only the first *limit* posts are read,
    over every choice of which posts come first, with at least one post that has R > 0.

    Rows are individuals, columns their posts sorted by R/W descending (padding: W = inf).
    For a fixed set of posts the R/W order is best (Theorem 3.3), so the best reading is a
    subsequence of this order: a dynamic programme over the posts, from the last, whose cost
    of "the k posts still to choose, from post i on" scales with the chance of reaching post
    i, so f_i(k) = min(f_{i+1}(k), W_i + (1 - R_i) f_{i+1}(k - 1)). Vectorised over the
    individuals; a loop over post positions and read counts only.

    Returns:
        (expected words, whether a post with R > 0 can be read) per individual.
    """
    n_ind, n_posts = stop.shape
    counts = np.isfinite(words).sum(axis=1)
    reads = np.minimum(counts, limit)
    inf = np.inf
    # best[k, s]: least words reading k more posts; s = 1 if a signal post is still needed
    best = np.full((n_ind, limit + 1, 2), inf)
    best[:, 0, 0] = 0.0
    for i in range(n_posts - 1, -1, -1):
        w, r = words[:, i : i + 1], stop[:, i : i + 1]
        take_any = w + _scaled(1.0 - r, best[:, :-1, 0])  # this post read, no signal needed after
        need_after = np.where(r > 0, best[:, :-1, 0], best[:, :-1, 1])
        take_need = w + _scaled(1.0 - r, need_after)
        new = best.copy()
        new[:, 1:, 0] = np.minimum(best[:, 1:, 0], take_any)
        new[:, 1:, 1] = np.minimum(best[:, 1:, 1], take_need)
        best = new
    rows = np.arange(n_ind)
    with_signal = best[rows, reads, 1]
    signal = np.isfinite(with_signal)
    return np.where(signal, with_signal, best[rows, reads, 0]), signal


def _scaled(factor: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """factor * cost, where an infeasible (infinite) cost stays infinite even for factor 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(cost), np.inf, factor * cost)


def _exclusive_product(grid: np.ndarray) -> np.ndarray:
    """Row-wise product of the entries before each position (exact, no division)."""
    out = np.ones_like(grid)
    if grid.shape[1] > 1:
        out[:, 1:] = np.cumprod(grid[:, :-1], axis=1)
    return out


@dataclass(frozen=True)
class TBG(_TimeBiased):
    """Time-biased gain: Σ_k g_k · 2^(-T(k)/h), g_k = p_click_rel · p_save_rel for relevant
    items, T(k) the time to reach rank k. A nested individual's words are its first max_docs
    children's costs summed; a flat item's words its cost=."""

    name: ClassVar[str] = "TBG"
    description: ClassVar[str] = "Time-biased gain (expected relevant items found in the time budget)"
    source: ClassVar[str] = SMUCKER_CLARKE

    level: int = param(
        1, "nesting level ranked: 1 = top-level items (reading their children), 2 = children within each parent"
    )


@dataclass(frozen=True)
class NTBG(TBG):
    """TBG divided by the TBG of the ideal ranking."""

    name: ClassVar[str] = "nTBG"
    description: ClassVar[str] = "TBG / ideal TBG"
    normalised: ClassVar[bool] = True


@dataclass(frozen=True)
class HTBG(_TimeBiased):
    """Hierarchical TBG: an individual's reading time uses the expected words read in its
    documents, Σ_l W_l Π_{m<l}(1 - R_l), and it gains only if one of its first max_docs
    documents can settle the assessment (R > 0)."""

    name: ClassVar[str] = "hTBG"
    description: ClassVar[str] = (
        "Hierarchical time-biased gain (expected at-risk individuals found in the time budget)"
    )
    source: ClassVar[str] = SHING + "; reference github sidenver/hTBG"
    hierarchical: ClassVar[bool] = True

    signal: bool = param(
        True, "gain only if one of the first max_docs documents has R > 0 (the paper's rule)"
    )


@dataclass(frozen=True)
class NHTBG(HTBG):
    """hTBG divided by the hTBG of the ideal ranking."""

    name: ClassVar[str] = "nhTBG"
    description: ClassVar[str] = "hTBG / ideal hTBG"
    normalised: ClassVar[bool] = True


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register TBG, nTBG, hTBG and nhTBG."""
    for cls in (TBG, NTBG, HTBG, NHTBG):
        register(cls)
