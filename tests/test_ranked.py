"""The RankedLists view: ranking rule, block layout and the segment helpers plugins use."""

from __future__ import annotations

import numpy as np
import pytest

from rankeval.io.data import Qrels, Run
from rankeval.ranking.alignment import Alignment


@pytest.fixture
def view():
    # query "2" is written first and out of score order; "1" has a tie (b, c at 0.5)
    run = Run.from_dict({"2": {"x": 0.1, "y": 0.9}, "1": {"a": 1.0, "b": 0.5, "c": 0.5}, "9": {"z": 1.0}})
    qrels = Qrels.from_dict({"1": {"a": 0, "c": 2, "d": 1}, "2": {"y": 1}, "3": {"q": 1}})
    return Alignment(qrels, run).view(1)


def ranked_docs(view, qid):
    q = list(view.query_ids).index(qid)
    rows = np.flatnonzero(view.query == q)
    rows = rows[np.argsort(view.rank[rows])]
    return [view.doc_ids[int(r)].as_py() for r in rows]


def test_queries_are_the_qrels_queries(view):
    assert list(view.query_ids) == ["1", "2", "3"]  # "9" (run only) is ignored
    assert view.counts.tolist() == [3, 2, 0] and view.retrieved.tolist() == [True, True, False]


def test_ranking_rule(view):
    assert ranked_docs(view, "1") == ["a", "c", "b"]  # tie at 0.5: docno descending
    assert ranked_docs(view, "2") == ["y", "x"]


def test_dense_and_sparse_relevance_agree(view):
    dense = view.relevance
    rows, relevance = view.judged_rows()
    assert np.array_equal(rows, np.flatnonzero(~np.isnan(dense)))
    assert np.array_equal(relevance, dense[rows])
    assert dense[view.relevant_rows(2)].tolist() == [2.0]  # only c


def test_segment_helpers(view):
    ones = np.ones(len(view.query))
    assert view.sum(ones).tolist() == [3.0, 2.0, 0.0]
    assert view.num_rel(1).tolist() == [2.0, 1.0, 1.0]
    rows = view.relevant_rows(1)
    assert view.query_sum(rows, view.rank_of(rows)).tolist() == [1.0, 0.0, 0.0]  # c at rank 1, y at 0
    assert np.array_equal(view.rank_of(rows), view.rank[rows])
    assert view.query_sum(rows).tolist() == [1.0, 1.0, 0.0]


def test_judged_documents_sorted_for_ideal_rankings(view):
    q = view.judged.query
    assert view.judged.relevance[q == 0].tolist() == [2.0, 1.0, 0.0]
    assert view.judged.rank[q == 0].tolist() == [0, 1, 2]
