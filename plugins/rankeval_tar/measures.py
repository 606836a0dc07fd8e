"""The 18 TAR measures (``docs/tar.md`` has their definitions): the 16 of the CLEF TAR
evaluator, ``tar_reliability`` and ``tar_R_est``.

Each is a :class:`~rankeval_tar.base.TarMeasure` whose ``value`` gives the unrounded
per-topic number from the :class:`~rankeval_tar.view.Screening`; ``tar_R_est`` is a plain
measure over the estimators. :data:`MEASURES` lists them in the order they are registered.

Names: rankeval's is ``tar_`` and the evaluator's name (``tar_wss_95``), so that no TAR name
is another measure's (the evaluator's ``ap`` is not rankeval's ``AP``); the evaluator's own
(``clef_name``, collected in :data:`CLEF_NAMES`) are accepted and printed under
``--compat clef``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rankeval import Domain, Measure, param
from rankeval.segments import safe_divide
from rankeval.spec import MeasureSpec, Value

from .base import TarMeasure
from .clef import CLEF
from .estimators import EST_HELP, LI_KANOULAS, THOMPSON, estimates
from .view import Screening

if TYPE_CHECKING:
    from rankeval import RankedLists

__all__ = [
    "CLEF_NAMES",
    "MEASURES",
    "WSS95",
    "WSS100",
    "LastRel",
    "LossER",
    "NormArea",
    "NormLastRel",
    "NormThreshold",
    "NumDocs",
    "NumRels",
    "NumShown",
    "REst",
    "RecallAt",
    "RecallThreshold",
    "Reliability",
    "RelsFound",
    "TarAP",
    "Threshold",
    "TotalCost",
]

# costs of the evaluator's total_cost (UtilityBasedMeasure): screening a document costs 1,
# missing a relevant one 20; a relevant document screened costs 1 - 20
_C_SHOWN, _C_MISSED = 1.0, 20.0


@dataclass(frozen=True)
class NumDocs(TarMeasure):
    """N: the topic's judged documents, labels -1 and 3 or more excluded (summed)."""

    name: ClassVar[str] = "tar_num_docs"
    clef_name: ClassVar[str | None] = "num_docs"
    description: ClassVar[str] = "N: judged documents of the topic (labels -1 and >= 3 excluded); summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.N


@dataclass(frozen=True)
class NumRels(TarMeasure):
    """R: the topic's documents labelled 1 or 2 (summed)."""

    name: ClassVar[str] = "tar_num_rels"
    clef_name: ClassVar[str | None] = "num_rels"
    description: ClassVar[str] = "R: relevant documents of the topic (labels 1 and 2); summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.R


@dataclass(frozen=True)
class NumShown(TarMeasure):
    """n: the lines of the topic's ranking (after dropping repeated documents and labels of 3
    or more), screened or not, as the evaluator counts them (summed)."""

    name: ClassVar[str] = "tar_num_shown"
    clef_name: ClassVar[str | None] = "num_shown"
    description: ClassVar[str] = (
        "n: documents in the topic's ranking (whole ranking, not only screened); summed"
    )
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.n


@dataclass(frozen=True)
class RelsFound(TarMeasure):
    """Relevant documents anywhere in the ranking (summed)."""

    name: ClassVar[str] = "tar_rels_found"
    clef_name: ClassVar[str | None] = "rels_found"
    description: ClassVar[str] = "Relevant documents in the whole ranking; summed"
    integer: ClassVar[bool] = True
    printed: ClassVar[str] = "count"
    summed: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.found


@dataclass(frozen=True)
class LastRel(TarMeasure):
    """Position of the last relevant document in the ranking (0 if none; mean)."""

    name: ClassVar[str] = "tar_last_rel"
    clef_name: ClassVar[str | None] = "last_rel"
    description: ClassVar[str] = "Rank of the last relevant document (file order); mean"
    whole: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.last_rel


@dataclass(frozen=True)
class NormLastRel(TarMeasure):
    """The position of the last relevant document (``tar_last_rel``) / max(N, n): the share of
    the documents read to find every relevant one the ranking has (mean; the evaluator rounds
    each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "tar_norm_last_rel"
    clef_name: ClassVar[str | None] = "norm_last_rel"
    description: ClassVar[str] = (
        "Share of the documents read to reach the last relevant one (tar_last_rel / N); mean"
    )
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(s.last_rel, s.Nn)


@dataclass(frozen=True)
class Threshold(TarMeasure):
    """Position of the threshold: the last line whose column 2 is ``1`` (or the last
    ``AF``/``NF`` line of a 2017 run). Without one the whole ranking is screened: n, or N
    with ``compat=clef`` (mean)."""

    name: ClassVar[str] = "tar_threshold"
    clef_name: ClassVar[str | None] = "threshold"
    description: ClassVar[str] = "Rank of the threshold (last line flagged 1 in column 2); mean"
    whole: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return s.threshold(self.clef)


@dataclass(frozen=True)
class NormThreshold(TarMeasure):
    """The cost: threshold / max(N, n), the share of the topic's documents screened (mean; the
    evaluator rounds each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "tar_norm_threshold"
    clef_name: ClassVar[str | None] = "norm_threshold"
    description: ClassVar[str] = "Cost: threshold / N, the share of documents screened; mean"
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(s.threshold(self.clef), s.Nn)


@dataclass(frozen=True)
class RecallThreshold(TarMeasure):
    """Recall at the threshold: relevant documents screened / R (mean). With ``est=ht`` or
    ``est=hh``, both numbers are estimated from sampled judgments (the ratio R̂_t / R̂)."""

    name: ClassVar[str] = "tar_recall_threshold"
    clef_name: ClassVar[str | None] = "recall_threshold"
    description: ClassVar[str] = (
        "Recall at the threshold (relevant screened / R); mean; est= for sampled qrels"
    )
    source: ClassVar[str] = f"{CLEF}; {LI_KANOULAS}; {THOMPSON}"
    printed: ClassVar[str] = "gain"

    est: Literal["exact", "ht", "hh"] = param("exact", EST_HELP)

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return _recall_threshold(self, s, data)

    def _skip(self, s: Screening, data: RankedLists) -> np.ndarray:
        skip = s.skipped(self.clef)
        if self.est != "exact":
            skip = skip | (estimates(data, self.est, self.clef)[0] <= 0)
        return skip


def _recall_threshold(m: RecallThreshold | Reliability, s: Screening, data: RankedLists) -> np.ndarray:
    est = getattr(m, "est", "exact")
    if est != "exact":
        total, screened = estimates(data, est, m.clef)
        return safe_divide(screened, total)
    return safe_divide(s.cg(s.screened(m.clef)), s.R)


@dataclass(frozen=True)
class WSS100(TarMeasure):
    """Work saved over sampling at 100% recall: (max(N, n) - last_rel) / max(N, n); 0 when the
    ranking lacks a relevant document (mean)."""

    name: ClassVar[str] = "tar_wss_100"
    clef_name: ClassVar[str | None] = "wss_100"
    description: ClassVar[str] = "Work saved over sampling at 100% recall; mean"
    source: ClassVar[str] = f"{CLEF}; Cohen et al., JAMIA 2006"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return np.where(s.found < s.R, 0.0, safe_divide(s.Nn - s.last_rel, s.Nn))


@dataclass(frozen=True)
class WSS95(TarMeasure):
    """Work saved over sampling at 95% recall: (max(N, n) - r95) / max(N, n) - 0.05, r95 the
    position of the ⌊0.95 R⌉-th relevant document (R·0.95 rounded half to even); 0 when the
    ranking has fewer relevant documents (mean)."""

    name: ClassVar[str] = "tar_wss_95"
    clef_name: ClassVar[str | None] = "wss_95"
    description: ClassVar[str] = "Work saved over sampling at 95% recall; mean"
    source: ClassVar[str] = f"{CLEF}; Cohen et al., JAMIA 2006"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        r95 = np.rint(s.R * 0.95).astype(np.int64)
        at = s.nth_relevant(np.minimum(r95, s.found))
        return np.where(s.found < r95, 0.0, safe_divide(s.Nn - at, s.Nn) - 0.05)


@dataclass(frozen=True)
class TarAP(TarMeasure):
    """Average precision of the file-order ranking: Σ over relevant lines of (relevant lines
    so far / position), divided by R (mean)."""

    name: ClassVar[str] = "tar_ap"
    clef_name: ClassVar[str | None] = "ap"
    description: ClassVar[str] = (
        "Average precision of the ranking in file order (not by score, unlike AP), over R; mean"
    )

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        rel = np.flatnonzero(s.relevant)
        q = s.q[rel]
        k = np.arange(len(rel)) - s.relevant_start[q] + 1  # rank among the topic's relevant lines
        total = np.bincount(q, weights=k / s.pos[rel], minlength=len(s.n))  # sequential per topic
        return safe_divide(total, s.R)


@dataclass(frozen=True)
class NormArea(TarMeasure):
    """Area under the cumulative-recall curve over the positions 1..N (trapezoids; past the
    ranking's end the count stays flat) over its maximum R·N - R²/2 (N replaced by n when the
    ranking is longer; mean; the evaluator rounds each topic's value to 3 decimals first)."""

    name: ClassVar[str] = "tar_norm_area"
    clef_name: ClassVar[str | None] = "norm_area"
    description: ClassVar[str] = "Normalised area under the cumulative recall curve; mean"
    rounded: ClassVar[bool] = True

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        rel = np.flatnonzero(s.relevant)
        nq = len(s.n)
        # Σ_i (found before line i + v_i / 2): each relevant line counts once for every later line
        area = np.bincount(s.q[rel], weights=(s.n[s.q[rel]] - s.pos[rel]).astype(np.float64), minlength=nq)
        area = area + 0.5 * s.found + np.maximum(s.N - s.n, 0) * s.found
        docs = np.where(s.n > s.N, s.n, s.N).astype(np.float64)
        R = s.R.astype(np.float64)
        best = R * docs - R * R / 2.0
        return safe_divide(area, best)


@dataclass(frozen=True)
class RecallAt(TarMeasure):
    """Recall after screening P% of the topic's N documents: relevant documents in the first
    k = round(P·N/100) lines (half to even), over R. The aggregate is **pooled**, as the
    evaluator's: Σ found / Σ R over topics, not the mean of the per-topic values.
    Spelled ``tar_recall@10%`` or ``tar_recall@10`` (the evaluator's ``recall@10%`` under
    ``--compat clef``)."""

    name: ClassVar[str] = "tar_recall"
    clef_name: ClassVar[str | None] = "recall"
    at: ClassVar[str | None] = "p"
    description: ClassVar[str] = (
        "Recall after screening P% of the N documents (tar_recall@10%); pooled over topics"
    )
    printed: ClassVar[str] = "gain"

    p: float | None = param(
        None,
        "percentage P of the topic's N documents screened (required: tar_recall@10%)",
        domain=Domain(0, 100, low_open=True),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.p is None:
            raise ValueError("tar_recall@P% needs a percentage 0 < P <= 100, e.g. tar_recall@10%")

    @classmethod
    def from_spec(cls, spec: MeasureSpec, fixed: Any = None, defaults: Any = None) -> Measure:
        """As :meth:`Measure.from_spec`; the percentage may carry its ``%`` (``tar_recall@10%``)."""

        def plain(key: str | None, v: Value) -> Value:
            if key in (None, "p") and v.kind == "number" and v.unit == "%":
                return Value(v.kind, v.text, v.column, v.number, None)  # text as written: 101%
            return v

        at = None if spec.at is None else (spec.at[0], plain(spec.at[0], spec.at[1]))
        params = tuple((k, plain(k, v)) for k, v in spec.params)
        return super().from_spec(MeasureSpec(spec.name, spec.text, spec.column, at, params), fixed, defaults)

    def __str__(self) -> str:
        extra = [
            f"{i.name}={self.param_text(i.name)}"
            for i in (*self.params(), *self.common_params())
            if i.name != "p" and self.prints(i.name)
        ]
        return self.name + (f"({','.join(extra)})" if extra else "") + f"@{float(self.p or 0)!r}%"

    def clef_spelling(self) -> str | None:
        """The evaluator's name: ``recall@10.0%``."""
        name = super().clef_spelling()
        return None if name is None else f"{name}@{float(self.p or 0)!r}%"

    def _found(self, s: Screening) -> np.ndarray:
        assert self.p is not None
        k = np.rint(s.N * self.p / 100.0).astype(np.int64)
        if not self.clef:
            return s.cg(np.minimum(k, s.n))
        # the evaluator only looks at the positions round(N·i/100), i = 1..100: past the
        # ranking's end, the count stays at the last of those positions the ranking reached
        grid = np.rint(np.outer(s.N, np.arange(1, 101)) / 100.0).astype(np.int64)
        reached = np.where(grid <= s.n[:, None], grid, 0).max(axis=1)
        return s.cg(np.where(k <= s.n, k, reached))

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return safe_divide(self._found(s), s.R)

    def pool(self, s: Screening, data: RankedLists) -> tuple[np.ndarray, np.ndarray]:
        return self._found(s), s.R.astype(np.float64)


@dataclass(frozen=True)
class LossER(TarMeasure):
    """loss_er = loss_r + loss_e: (1 - recall)² with recall over the documents screened, plus
    (100 / max(N, s))² · (s / (R + 100))², s the documents screened (mean)."""

    name: ClassVar[str] = "tar_loss_er"
    clef_name: ClassVar[str | None] = "loss_er"
    description: ClassVar[str] = "Loss of recall plus loss of effort (Cormack & Grossman); mean"
    source: ClassVar[str] = f"{CLEF}; Cormack & Grossman, SIGIR 2016"

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        seen = s.seen(self.clef)
        r = safe_divide(s.cg(seen), s.R)
        docs = np.maximum(s.N, seen)
        b = 100.0
        effort = safe_divide(np.full(len(docs), b), docs) ** 2.0 * (seen / (s.R + b)) ** 2.0
        return (1 - r) ** 2.0 + effort


@dataclass(frozen=True)
class TotalCost(TarMeasure):
    """The evaluator's total cost: 1 per document screened, -19 (1 - 20) per relevant one
    screened, 20 per relevant document in the ranking past the threshold, and 20 per relevant
    document not screened — so a relevant document past the threshold costs 20 twice (mean)."""

    name: ClassVar[str] = "tar_total_cost"
    clef_name: ClassVar[str | None] = "total_cost"
    description: ClassVar[str] = (
        "Screening cost: 1 per document read, 20 per relevant one missed (see docs); mean"
    )

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        seen = s.seen(self.clef)
        hit = s.cg(seen)
        unseen_in_ranking = s.found - hit
        cost: np.ndarray = seen * _C_SHOWN - hit * _C_MISSED + (unseen_in_ranking + s.R - hit) * _C_MISSED
        return cost


@dataclass(frozen=True)
class Reliability(TarMeasure):
    """1 if the topic's recall at the threshold is at least r, else 0: its mean is the share of
    topics whose screening reached the target recall."""

    name: ClassVar[str] = "tar_reliability"
    at: ClassVar[str | None] = "r"
    description: ClassVar[str] = "Share of topics whose recall at the threshold is >= r; mean"
    source: ClassVar[str] = f"{CLEF}; Cormack & Grossman, SIGIR 2016"

    r: float = param(0.95, "target recall (0.95 or 95%)", domain=Domain(0, 1))

    def value(self, s: Screening, data: RankedLists) -> np.ndarray:
        return (_recall_threshold(self, s, data) >= self.r).astype(np.float64)


@dataclass(frozen=True)
class REst(Measure):
    """Estimated number of relevant documents of a topic from sampled judgments:
    Horvitz-Thompson Σ y/π over the judged documents (``pi=``; 1 without it), or
    Hansen-Hurwitz (1/n) Σ m y / p over the documents drawn (``p=``, ``draws=`` m; n = Σ m)
    plus the documents judged without ``p=``. y = 1 for labels 1 and 2 (mean)."""

    name: ClassVar[str] = "tar_R_est"
    description: ClassVar[str] = (
        "Estimated R from sampled judgments (Horvitz-Thompson or Hansen-Hurwitz); mean"
    )
    source: ClassVar[str] = f"{LI_KANOULAS}; {THOMPSON}"

    est: Literal["ht", "hh"] = param(
        "ht", "estimator: ht = Horvitz-Thompson (pi=), hh = Hansen-Hurwitz (p=, draws=)"
    )

    def compute(self, data: RankedLists) -> np.ndarray:
        return estimates(data, self.est, False)[0]


MEASURES: tuple[type[Measure], ...] = (
    NumDocs,
    NumRels,
    NumShown,
    RelsFound,
    LastRel,
    NormLastRel,
    Threshold,
    NormThreshold,
    RecallThreshold,
    WSS100,
    WSS95,
    TarAP,
    NormArea,
    RecallAt,
    LossER,
    TotalCost,
    Reliability,
    REst,
)

#: the CLEF evaluator's names → rankeval's (``{"ap": "tar_ap", "recall": "tar_recall", ...}``):
#: the names ``--compat clef`` accepts
CLEF_NAMES: dict[str, str] = {
    cls.clef_name: cls.name for cls in MEASURES if issubclass(cls, TarMeasure) and cls.clef_name is not None
}
