"""Shared hypothesis strategies: small random qrels and runs."""

from __future__ import annotations

from hypothesis import strategies as st

DOCS = ["d0", "d1", "d10", "d2", "x", "D3", "d4", "aa", "b7", "07", "7", "z9"]


@st.composite
def qrels_and_run(draw, max_queries: int = 4, ties: bool = True):
    """({qid: {doc: rel}}, {qid: {doc: score}}) with grades -1..3 and float32-exact scores."""
    n_q = draw(st.integers(1, max_queries))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_q):
        qid = str(100 + i)
        judged = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=8))
        qrels[qid] = {d: draw(st.integers(-1, 3)) for d in judged}
        # pytrec_eval (the oracle) hangs or crashes on a query whose judgments are all
        # negative, so every query gets one judgment >= 0
        qrels[qid][judged[0]] = draw(st.integers(0, 3))
        retrieved = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=0, max_size=10))
        if retrieved:
            scores = st.integers(0, 4) if ties else st.integers(0, 10**6)
            run[qid] = {d: float(draw(scores)) / 4 for d in retrieved}
    # a query only in the run (ignored) now and then
    if draw(st.booleans()):
        run["999"] = {"d0": 1.0}
    return qrels, run
