"""Recall estimated from sampled judgments (see ``docs/tar.md``, "Estimated recall").

The Horvitz-Thompson and Hansen-Hurwitz estimators of a per-topic total, and
:func:`estimates`: the estimated number of relevant documents of each topic, and of those
among the lines screened, from qrels that carry ``pi=`` (inclusion probabilities) or
``p=`` and ``draws=`` (sampling with replacement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rankeval import Domain

from .view import screening

if TYPE_CHECKING:
    from rankeval import RankedLists

__all__ = ["EST_HELP", "LI_KANOULAS", "THOMPSON", "estimates", "hansen_hurwitz", "horvitz_thompson"]

LI_KANOULAS = "Li & Kanoulas, Automatic Thresholding by Sampling Documents and Estimating Recall, CLEF 2019"
THOMPSON = "Thompson, Sampling (3rd ed., Wiley 2012), ch. 6 (Horvitz-Thompson, Hansen-Hurwitz)"
EST_HELP = (
    "recall estimated from sampled judgments: exact = the judged documents as they are; "
    "ht = Horvitz-Thompson (qrels pi=); hh = Hansen-Hurwitz (qrels p=, draws=)"
)


_PROBABILITY = Domain(0, 1, low_open=True)
_POSITIVE = Domain(0, low_open=True)
_DRAWS = "the number of times the document was drawn (1 or more)"


def horvitz_thompson(topic: np.ndarray, y: np.ndarray, pi: np.ndarray, num_topics: int) -> np.ndarray:
    """Horvitz-Thompson estimate of the total of *y* per topic: Σ y_i / π_i over the sampled
    units i (π_i = 1 for units judged with certainty)."""
    return np.bincount(topic, weights=y / pi, minlength=num_topics)


def hansen_hurwitz(
    topic: np.ndarray, y: np.ndarray, p: np.ndarray, draws: np.ndarray, num_topics: int
) -> np.ndarray:
    """Hansen-Hurwitz estimate of the total of *y* per topic from sampling with replacement:
    (1/n) Σ_i m_i y_i / p_i over the distinct units drawn, m_i the times unit i was drawn,
    p_i its per-draw selection probability, n = Σ m_i the draws of the topic. Units with
    ``p`` NaN were judged with certainty (outside the sampled stratum) and add y_i."""
    sampled = ~np.isnan(p)
    n = np.bincount(topic[sampled], weights=draws[sampled], minlength=num_topics)
    weight = np.ones(len(y))
    weight[sampled] = draws[sampled] / (n[topic[sampled]] * p[sampled])
    return np.bincount(topic, weights=y * weight, minlength=num_topics)


def _array(x: Any) -> Any:
    """One pyarrow Array from a (chunked) array."""
    import pyarrow as pa

    return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x


def _numpy(x: Any) -> np.ndarray:
    """A (chunked) pyarrow array as numpy (nulls of a float array as NaN)."""
    return _array(x).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def estimates(data: RankedLists, est: str, clef: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(R̂, R̂_screened)`` per topic: the estimated number of relevant documents, and of
    relevant documents among the lines screened (positions up to the threshold)."""
    return data.memo(("rankeval_tar.estimates", est, clef), lambda: _make_estimates(data, est, clef))


def _make_estimates(data: RankedLists, est: str, clef: bool) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    qrels = data.qrels
    qt = qrels.table
    nq = data.num_queries
    qids = pa.array([str(x) for x in data.query_ids], pa.string())
    rel = _numpy(qt.column("relevance"))
    lines = pa.table(
        {
            "t": data.judged.lines,
            "d": pc.cast(qt.column("doc_id"), pa.string()),
            "y": ((rel > 0) & (rel < 3)).astype(np.float64),
        }
    )
    if est == "ht":
        pi = qrels.number_attribute("pi", domain=_PROBABILITY, expected="an inclusion probability in (0, 1]")
        lines = lines.append_column("pi", pa.array(pi, from_pandas=True))  # NaN: no pi=
        aggs = [("y", "max"), ("pi", "min")]
    else:
        p = qrels.number_attribute(
            "p", domain=_PROBABILITY, expected="a per-draw selection probability in (0, 1]"
        )
        m = qrels.number_attribute("draws", domain=_POSITIVE, expected=_DRAWS)
        m = np.where(np.isnan(p), 0.0, np.where(np.isnan(m), 1.0, np.floor(m)))
        lines = lines.append_column("p", pa.array(p, from_pandas=True)).append_column("m", pa.array(m))
        aggs = [("y", "max"), ("p", "min"), ("m", "sum")]
    lines = lines.filter(pc.greater_equal(lines.column("t"), 0))
    docs = lines.group_by(["t", "d"]).aggregate(aggs)
    t = _numpy(docs.column("t")).astype(np.int64)
    y = _numpy(docs.column("y_max"))
    # documents among the lines screened
    s = screening(data)
    scr = s.pos <= s.screened(clef)[s.q]
    run_docs = pc.cast(_array(pc.take(data.run.table.column("doc_id"), pa.array(s.row[scr]))), pa.string())
    sep = "\x1f"
    screened_keys = pc.binary_join_element_wise(pc.take(qids, pa.array(s.q[scr])), run_docs, sep)
    doc_keys = pc.binary_join_element_wise(pc.take(qids, pa.array(t)), _array(docs.column("d")), sep)
    in_screened = _numpy(pc.is_in(doc_keys, value_set=_array(screened_keys))).astype(bool)
    if est == "ht":
        pi = _numpy(docs.column("pi_min")).astype(np.float64)
        pi = np.where(np.isnan(pi), 1.0, pi)
        out = horvitz_thompson(t, y, pi, nq), horvitz_thompson(t, y * in_screened, pi, nq)
    else:
        p = _numpy(docs.column("p_min")).astype(np.float64)
        m = _numpy(docs.column("m_sum")).astype(np.float64)
        out = hansen_hurwitz(t, y, p, m, nq), hansen_hurwitz(t, y * in_screened, p, m, nq)
    return out
