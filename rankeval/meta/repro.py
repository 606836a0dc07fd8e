"""Reproducibility and replicability measures, as repro_eval 0.5 computes them.

Breuer, Ferro, Fuhr, Maistro, Sakai, Schaer & Soboroff, "How to Measure the Reproducibility
of System-oriented IR Experiments" (SIGIR 2020), and their package repro_eval 0.5. An
original experiment is a *baseline* run and an *advanced* run (the one that improves on it);
a reproduction runs both again, on the same test collection (**reproducibility**: the topics
are paired) or on another one (**replicability**: ``reproduced_qrels``, unpaired topics).
The per-topic scores come from rankeval's own evaluation (the block engine: every measure,
plugin measures included); the document rankings from the run files, each topic ranked as
trec_eval ranks it (score descending, ties by docno descending).

Reproducibility (paired), for each of baseline and advanced, original *o* against reproduced
*r*:

- **KTU**, Kendall's τ union, per topic: repro_eval's own definition (below);
- **RBO**, rank-biased overlap, per topic, with persistence *p* (0.95) to *depth* (1000):
  ``Σ_{d=1..depth} p^{d-1} |O_{:d} ∩ R_{:d}| / d  /  Σ_{d=1..depth} p^{d-1}``, the
  normalised, truncated RBO of Clarke, Vtyurina & Smucker, "Assessing top-k preferences"
  (ACM TOIS 39(3), 2021), as repro_eval computes it;
- **RMSE** per measure: ``sqrt(mean_t (o_t - r_t)²)`` over the topics;
- **nRMSE** per measure: RMSE divided by the largest RMSE any reproduction could have,
  ``sqrt(mean_t max(o_t, 1 - o_t)²)`` (repro_eval's normalisation, for measures in [0, 1]);
- **p-value** of the paired two-sided t-test of *o* against *r* (:func:`scipy.stats.ttest_rel`).

Replicability (unpaired): the **p-value** of Student's two-sided t-test with equal variances,
:func:`scipy.stats.ttest_ind` with its default ``equal_var=True`` (not Welch's test), of the
original topics' scores against the other collection's.

Both, when there is an advanced run (per measure, with *a* advanced and *b* baseline):

- **ER**, the effect ratio: the reproduced mean per-topic improvement over the original one,
  ``mean_t(a'_t - b'_t) / mean_t(a_t - b_t)``;
- **ΔRI**, the delta relative improvement: ``RI - RI'`` with ``RI = (mean(a) - mean(b)) /
  mean(b)``.

A zero denominator gives ``inf`` or ``NaN``, as in repro_eval.

Where repro_eval computes a measure in its own way, rankeval matches it:

- *KTU is not Kendall's τ over the union of the two rankings' documents* as the paper
  describes it. repro_eval pairs the two rankings rank by rank (the top *depth* documents of
  each; both must have as many) and correlates, with :func:`scipy.stats.kendalltau` (τ_b; no
  ties can occur), the positions of the two documents at each rank in the sorted union of
  both lists, that is their docnos' alphabetical order; the value is rounded to 14 decimals.
  Identical rankings give 1 and one ranking reversed gives -1, as with the textbook τ, but
  in between the value depends on the docnos. Where a topic's two lists have different
  lengths repro_eval fails (scipy requires equal lengths); rankeval compares their common
  depth.
- *RBO is the truncated, normalised RBO@depth* of Clarke et al., not Webber, Moffat & Zobel's
  extrapolated RBO (:func:`rankeval.meta.correlation.correlation` has that one): identical
  rankings of ``depth`` documents or more give 1, shorter identical rankings less than 1.
- *nRMSE*'s normaliser ``max(o_t, 1 - o_t)`` assumes a measure bounded by 0 and 1.
- *Mean KTU and RBO* are plain means: one topic's NaN makes the mean NaN.
- *p-values*: where every measure's p-value is NaN and the two runs' per-topic scores are all
  equal (a reproduction that gives identical scores), every p-value is 1.
- *Depth*: repro_eval cuts every run to its top 1000 documents (``trim()``) before it
  evaluates them; the default *options* do the same (``EvalOptions(max_docs=1000)``).
- *Rankings*: repro_eval ranks each topic's documents in file order, only sorting runs of
  equal, adjacent scores by docno descending; the scores it evaluates are sorted by score
  (pytrec_eval). Both equal rankeval's trec_eval order for a run whose lines are sorted by
  score within each topic (as TREC runs are); for a run that is not, KTU and RBO differ.
- *Topics*: KTU and RBO cover the topics both runs retrieve (repro_eval: the reproduced run's
  topics, failing on a topic the original lacks); the paired measures cover the topics both
  runs are scored on (with the default options every qrels topic, as ir_measures scores them),
  matched by topic id.

The default measures are repro_eval's (:data:`REPRO_EVAL_MEASURES`: ``load_measures()``,
trec_eval's P, recall, ndcg, ndcg_cut, map_cut, set_map, set_P, set_relative_P, set_recall,
set_F, Rprec, infAP, bpref, recip_rank, map and iprec_at_recall as ir_measures names them).

May import: :mod:`rankeval.engine`, :mod:`rankeval.ranking`, :mod:`rankeval.io`,
:mod:`rankeval.options`, :mod:`rankeval.errors`; numpy; scipy and pandas lazily.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from rankeval.errors import UsageError
from rankeval.options import EvalOptions

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.evaluation import Results
    from rankeval.engine.prepare import Measures
    from rankeval.io.data import Run

__all__ = [
    "RBO_P",
    "REPRO_EVAL_MEASURES",
    "ROLES",
    "RUN_LENGTH",
    "Ordering",
    "Reproduction",
    "RunReproduction",
    "reproducibility",
]

#: repro_eval's depth: runs are cut to this many documents, KTU compares them, RBO sums to it
RUN_LENGTH = 1000
#: repro_eval's RBO persistence
RBO_P = 0.95
#: the runs of an experiment: a baseline, and optionally an advanced run
ROLES = ("baseline", "advanced")
#: repro_eval 0.5's measures (``repro_eval.util.load_measures()``) as rankeval specs, in its order
REPRO_EVAL_MEASURES: tuple[str, ...] = (
    *(f"P@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"R@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    "nDCG",
    *(f"nDCG@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    *(f"AP@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    "SetAP",
    "SetP",
    "SetP(relative=True)",
    "SetR",
    "SetF",
    "Rprec",
    "InfAP",
    "Bpref",
    "RR",
    "AP",
    "IPrec@0",
    *(f"IPrec@0.{k}" for k in range(1, 10)),
    "IPrec@1",
)

Kind = Literal["reproducibility", "replicability"]
_Scores = dict[str, tuple[np.ndarray, np.ndarray]]  # measure -> (sorted topic ids, values)


@dataclass(frozen=True)
class Ordering:
    """How the reproduced run orders each topic's documents like the original run.

    Attributes:
        topics: the topics both runs retrieve, sorted.
        ktu: repro_eval's Kendall's τ union per topic (see the module docstring).
        rbo: repro_eval's RBO per topic.
    """

    topics: tuple[str, ...]
    ktu: npt.NDArray[np.float64]
    rbo: npt.NDArray[np.float64]

    @property
    def mean_ktu(self) -> float:
        """The mean KTU over the topics (repro_eval's ``ktu()``)."""
        return float(np.mean(self.ktu)) if len(self.ktu) else math.nan

    @property
    def mean_rbo(self) -> float:
        """The mean RBO over the topics (repro_eval's ``rbo()``)."""
        return float(np.mean(self.rbo)) if len(self.rbo) else math.nan


@dataclass(frozen=True)
class RunReproduction:
    """The measures of one run (baseline or advanced) against its reproduction.

    Attributes:
        ordering: KTU and RBO per topic (reproducibility only, else ``None``).
        rmse: RMSE per measure (reproducibility only, else ``None``).
        nrmse: nRMSE per measure (reproducibility only, else ``None``).
        p_value: the t-test's p-value per measure: paired (reproducibility) or unpaired
            (replicability).
    """

    ordering: Ordering | None
    rmse: dict[str, float] | None
    nrmse: dict[str, float] | None
    p_value: dict[str, float]


@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproducibility` measures.

    Attributes:
        kind: ``"reproducibility"`` (same qrels) or ``"replicability"`` (other qrels).
        measures: the measures' names, in the order given.
        runs: per role (``"baseline"``, and ``"advanced"`` if given), its measures.
        er: the effect ratio per measure (``None`` without an advanced run).
        delta_ri: ΔRI per measure (``None`` without an advanced run).
    """

    kind: Kind
    measures: tuple[str, ...]
    runs: dict[str, RunReproduction]
    er: dict[str, float] | None
    delta_ri: dict[str, float] | None

    def to_frame(self) -> pd.DataFrame:
        """A long DataFrame ``what, run, measure, topic, value``: ``what`` is ``KTU``,
        ``RBO`` (one row per topic, then their mean with ``topic`` None; ``measure`` None),
        ``RMSE``, ``nRMSE``, ``p_value`` (per run and measure), ``ER`` and ``DeltaRI`` (per
        measure; ``run`` None)."""
        import pandas as pd

        rows: list[tuple[str, str | None, str | None, str | None, float]] = []
        for role, rep in self.runs.items():
            if rep.ordering is not None:
                o = rep.ordering
                for what, values, mean in (("KTU", o.ktu, o.mean_ktu), ("RBO", o.rbo, o.mean_rbo)):
                    rows += [(what, role, None, t, float(v)) for t, v in zip(o.topics, values, strict=True)]
                    rows.append((what, role, None, None, mean))
            for what, per in (("RMSE", rep.rmse), ("nRMSE", rep.nrmse), ("p_value", rep.p_value)):
                rows += [(what, role, m, None, v) for m, v in (per or {}).items()]
        for what, per in (("ER", self.er), ("DeltaRI", self.delta_ri)):
            rows += [(what, None, m, None, v) for m, v in (per or {}).items()]
        columns = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
        labels = ("what", "run", "measure", "topic")
        frame = {k: pd.Series(c, dtype=object) for k, c in zip(labels, columns, strict=False)}
        return pd.DataFrame({**frame, "value": pd.Series(columns[4], dtype=np.float64)})


def reproducibility(
    qrels: Any,
    original: Mapping[str, Any],
    reproduced: Mapping[str, Any],
    measures: Measures | None = None,
    *,
    reproduced_qrels: Any = None,
    options: EvalOptions | None = None,
    p: float = RBO_P,
    depth: int = RUN_LENGTH,
) -> Reproduction:
    """Reproducibility (same qrels) or replicability (*reproduced_qrels*) measures of a
    reproduced experiment, as repro_eval 0.5 computes them (the module docstring gives the
    formulas, and where repro_eval's own definitions differ from the textbook).

    Source: Breuer et al., "How to Measure the Reproducibility of System-oriented IR
    Experiments", SIGIR 2020.

    Args:
        qrels: the original test collection's qrels, in any form :class:`rankeval.Evaluator`
            takes.
        original: ``{"baseline": run}`` or ``{"baseline": run, "advanced": run}``: the original
            runs, each in any form :meth:`rankeval.Evaluator.evaluate` takes for one run (a
            path, a :class:`~rankeval.Run`, a DataFrame, a dict ...).
        reproduced: the reproduced runs, with the same keys.
        measures: the measures (specs or measure objects); default :data:`REPRO_EVAL_MEASURES`.
        reproduced_qrels: the other test collection's qrels, for replicability (no KTU, RBO,
            RMSE and nRMSE, and an unpaired t-test); ``None``: reproducibility.
        options: how the runs are evaluated; default ``EvalOptions(max_docs=1000)`` (repro_eval
            cuts runs to 1000 documents).
        p: RBO's persistence, 0 < *p* < 1.
        depth: documents of each ranking that KTU and RBO compare.

    Returns:
        A :class:`Reproduction`; ER and ΔRI only with an advanced run.

    Raises:
        UsageError: *original* and *reproduced* lack ``"baseline"``, have other keys or not
            the same ones; *p* or *depth* out of range; bad *measures* or *options* (as
            :class:`rankeval.Evaluator`). InputError: a run or qrels that cannot be read.
    """
    from rankeval.engine.prepare import prepare

    roles = _roles(original, reproduced)
    _check_rbo(p, depth)
    opts = EvalOptions(max_docs=RUN_LENGTH) if options is None else options
    chosen = REPRO_EVAL_MEASURES if measures is None else measures
    prepared = prepare(qrels, chosen, opts, None)
    orig_runs = {role: _read(original[role], f"original {role}") for role in roles}
    rep_runs = {role: _read(reproduced[role], f"reproduced {role}") for role in roles}
    orig = _scores(prepared, orig_runs)
    if reproduced_qrels is None:
        rep = _scores(prepared, rep_runs)
    else:
        rep = _scores(prepare(reproduced_qrels, chosen, opts, prepared.registry), rep_runs)
    names = tuple(orig["baseline"])
    paired = reproduced_qrels is None
    runs: dict[str, RunReproduction] = {}
    for role in roles:
        o, r = orig[role], rep[role]
        ordering = None
        if paired:
            rule = prepared.options.duplicate_rule
            ordering = _ordering(orig_runs[role], rep_runs[role], rule, p, depth)
        runs[role] = RunReproduction(
            ordering=ordering,
            rmse={m: _rmse(*_aligned(o[m], r[m])) for m in names} if paired else None,
            nrmse={m: _nrmse(*_aligned(o[m], r[m])) for m in names} if paired else None,
            p_value=_p_values(o, r, paired),
        )
    er = delta_ri = None
    if "advanced" in roles:
        ob, oa, rb, ra = orig["baseline"], orig["advanced"], rep["baseline"], rep["advanced"]
        with np.errstate(divide="ignore", invalid="ignore"):
            er = {m: float(_improvement(ra[m], rb[m]) / _improvement(oa[m], ob[m])) for m in names}
            delta_ri = {m: float(_relative(oa[m], ob[m]) - _relative(ra[m], rb[m])) for m in names}
    return Reproduction("reproducibility" if paired else "replicability", names, runs, er, delta_ri)


def _roles(original: Mapping[str, Any], reproduced: Mapping[str, Any]) -> tuple[str, ...]:
    """The roles of the runs (``("baseline",)`` or :data:`ROLES`), checked."""
    keys = []
    for name, runs in (("original", original), ("reproduced", reproduced)):
        if not isinstance(runs, Mapping) or "baseline" not in runs or not set(runs) <= set(ROLES):
            got = sorted(map(str, runs)) if isinstance(runs, Mapping) else type(runs).__name__
            raise UsageError(
                f"{name} runs: expected a mapping with the keys 'baseline' and optionally "
                f"'advanced', not {got}"
            )
        keys.append(tuple(role for role in ROLES if role in runs))
    if keys[0] != keys[1]:
        raise UsageError(
            f"the original runs are {', '.join(keys[0])} and the reproduced runs "
            f"{', '.join(keys[1])}: expected the same"
        )
    return keys[0]


def _check_rbo(p: Any, depth: Any) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise UsageError(f"RBO's p must be a number between 0 and 1 (exclusive), not {p!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"depth must be a positive whole number of documents, not {depth!r}")


def _read(run: Any, name: str) -> Run:
    """*run* read once (for the evaluation and for the rankings)."""
    from rankeval.io.data import as_run

    return as_run(run, name)


def _scores(prepared: Any, runs: dict[str, Run]) -> dict[str, _Scores]:
    """Per role, per measure: the sorted topic ids and their values (the block engine's)."""
    from rankeval.engine.evaluation import evaluate_prepared

    results: Results = evaluate_prepared(
        prepared, {r.name: r for r in runs.values()}, jobs=1, engine="local", block_size=None
    )
    role_of = {r.name: role for role, r in runs.items()}
    out: dict[str, _Scores] = {role: {} for role in runs}
    for b in results.blocks:
        out[role_of[b.run]][b.measure] = (b.query_ids.astype(str), b.values)
    return out


def _aligned(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The values of *a* and *b* on the topics both have, matched by topic."""
    _, ia, ib = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    return a[1][ia], b[1][ib]


def _rmse(o: np.ndarray, r: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(o - r))))


def _nrmse(o: np.ndarray, r: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(_rmse(o, r) / np.sqrt(np.mean(np.square(np.maximum(o, 1 - o)))))


def _improvement(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.float64:
    """The mean per-topic improvement of *a* over *b* (ER's numerator and denominator)."""
    va, vb = _aligned(a, b)
    return np.float64(np.mean(va - vb))


def _relative(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.float64:
    """The relative improvement of *a*'s mean over *b*'s (ΔRI's terms)."""
    ma, mb = np.float64(np.mean(a[1])), np.float64(np.mean(b[1]))
    return np.float64((ma - mb) / mb)


def _p_values(o: _Scores, r: _Scores, paired: bool) -> dict[str, float]:
    """The two-sided t-test's p-value per measure: paired (``ttest_rel`` on the topics both
    have) or unpaired (Student's ``ttest_ind``); all 1 where every one is NaN and the scores
    are identical (repro_eval's rule)."""
    from scipy.stats import ttest_ind, ttest_rel

    out: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero variance: NaN, as scipy says
        for m in o:
            if paired:
                out[m] = float(ttest_rel(*_aligned(o[m], r[m])).pvalue)
            else:
                out[m] = float(ttest_ind(o[m][1], r[m][1]).pvalue)
    identical = all(np.array_equal(o[m][0], r[m][0]) and np.array_equal(o[m][1], r[m][1]) for m in o)
    if identical and all(np.isnan(v) for v in out.values()):
        return dict.fromkeys(out, 1.0)
    return out


def _rankings(run: Run, rule: str, depth: int) -> dict[str, np.ndarray]:
    """Each topic's top *depth* docnos in trec_eval's order (score descending, docno
    descending); a (topic, docno) given twice is handled by *rule* as the evaluation does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankeval.ranking.duplicates import check_duplicates

    t = check_duplicates(run, rule).table
    table = pa.table(
        {
            "q": t.column("query_id").cast(pa.string()),
            "s": t.column("score"),
            "d": t.column("doc_id").cast(pa.string()),
        }
    )
    order = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    table = table.take(order)
    q = np.asarray(table.column("q").to_numpy(zero_copy_only=False), dtype=str)
    d = np.asarray(table.column("d").to_numpy(zero_copy_only=False), dtype=str)
    starts = np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1]))) if len(q) else np.zeros(0, int)
    ends = np.append(starts[1:], len(q))
    return {str(q[s]): d[s : min(e, s + depth)] for s, e in zip(starts, ends, strict=True)}


def _ordering(orig: Run, rep: Run, rule: str, p: float, depth: int) -> Ordering:
    """KTU and RBO per topic that both runs retrieve."""
    a, b = _rankings(orig, rule, depth), _rankings(rep, rule, depth)
    topics = tuple(sorted(set(a) & set(b)))
    ktu = np.array([_ktu(a[t], b[t]) for t in topics], dtype=np.float64)
    rbo = np.array([_rbo(a[t], b[t], p, depth) for t in topics], dtype=np.float64)
    return Ordering(topics, ktu, rbo)


def _ktu(orig: np.ndarray, rep: np.ndarray) -> float:
    """repro_eval's Kendall's τ union: τ_b between the positions, in the sorted union of both
    lists, of the documents at each rank (down to the shorter list's length)."""
    from scipy.stats import kendalltau

    n = min(len(orig), len(rep))
    union = np.unique(np.concatenate([orig, rep]))
    x, y = np.searchsorted(union, orig[:n]), np.searchsorted(union, rep[:n])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fewer than 2 ranks: NaN
        return round(float(kendalltau(x, y).statistic), 14)


def _rbo(orig: np.ndarray, rep: np.ndarray, p: float, depth: int) -> float:
    """Truncated, normalised RBO (Clarke et al. 2021; repro_eval's ``_rbo``): a document in
    both lists joins the overlap at the depth of its lower occurrence."""
    docs, inverse = np.unique(np.concatenate([orig, rep]), return_inverse=True)
    rank = np.full((2, len(docs)), depth, dtype=np.int64)  # depth: not in the list's top depth
    rank[0, inverse[: len(orig)]] = np.arange(len(orig))
    rank[1, inverse[len(orig) :]] = np.arange(len(rep))
    joins = rank.max(axis=0)
    overlap = np.cumsum(np.bincount(joins[joins < depth], minlength=depth))
    weight = np.float64(p) ** np.arange(depth)
    return float(np.sum(weight * overlap / np.arange(1, depth + 1)) / np.sum(weight))
