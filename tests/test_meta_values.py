"""rankeval.meta.values: the query x run matrix of one measure, from every form of per-query
values, and the system scores computed from it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.errors import UsageError
from rankeval.meta.values import Matrix, per_query, system_scores
from tests.conftest import DATA

DL = DATA / "dl-hard"

# run -> query -> value, in no particular order (per_query sorts queries and runs)
TOY = {"b": {"q2": 0.5, "q1": 0.25, "q3": 1.0}, "a": {"q3": 0.0, "q1": 0.75, "q2": 0.5}}
TOY_MATRIX = Matrix(("a", "b"), ("q1", "q2", "q3"), np.array([[0.75, 0.25], [0.5, 0.5], [0.0, 1.0]]))


def _long(data: dict[str, dict[str, float]], measure: str = "AP", aggregate: bool = True) -> pd.DataFrame:
    rows = [(run, q, measure, v) for run, qs in data.items() for q, v in qs.items()]
    if aggregate:  # the evaluation's aggregate rows: query_id null, dropped by per_query
        rows += [(run, None, measure, 99.0) for run in data]
    return pd.DataFrame(rows, columns=["run", "query_id", "measure", "value"])


def _wide(data: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(data)


def _assert_matrix(got: Matrix, want: Matrix) -> None:
    assert (got.runs, got.queries) == (want.runs, want.queries)
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize(
    ("make", "measure"),
    [
        (lambda d: d, None),
        (_wide, None),
        (_long, None),
        (lambda d: pd.concat([_long(d), _long(d, "nDCG")]), "AP"),
        (lambda d: per_query(d), None),
    ],
    ids=["mapping", "wide", "long", "long-two-measures", "matrix"],
)
def test_every_form_gives_the_same_matrix(make: Any, measure: str | None) -> None:
    _assert_matrix(per_query(make(TOY), measure), TOY_MATRIX)


def test_input_order_does_not_matter() -> None:
    frame = _long(TOY)
    _assert_matrix(per_query(frame.sample(frac=1.0, random_state=3)), per_query(frame))


GAP = {"a": {"q1": 0.5, "q2": 0.25, "q3": 1.0}, "b": {"q1": 0.75, "q3": float("nan")}}


@pytest.mark.parametrize(
    ("missing", "queries", "b_values"),
    [("drop", ("q1",), [0.75]), ("zero", ("q1", "q2", "q3"), [0.75, 0.0, 0.0])],
)
def test_missing_and_nan_values(missing: str, queries: tuple[str, ...], b_values: list[float]) -> None:
    m = per_query(GAP, missing=missing)
    assert m.queries == queries
    np.testing.assert_array_equal(m.values[:, 1], b_values)


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        (GAP, {}, "run 'b' has no value for 2 of 3 queries"),
        (pd.concat([_long(TOY), _long(TOY, "nDCG")]), {}, "2 measures (AP, nDCG); name one"),
        (_long(TOY), {"measure": "P@10"}, "no per-query values of measure 'P@10'; the values hold AP"),
        (pd.concat([_long(TOY), _long({"a": {"q1": 0.1}}, aggregate=False)]), {}, "two values of AP"),
        (TOY, {"measure": "AP"}, "a mapping of one measure"),
        (_wide(TOY), {"measure": "AP"}, "a wide frame of one measure"),
        ([1.0, 2.0], {}, "not list"),
        ({}, {}, "no per-query values"),
        ({"a": {"q1": 1.0}, "b": {"q2": 1.0}}, {"missing": "drop"}, "no query has a value for every run"),
        (TOY, {"missing": "skip"}, "unknown missing 'skip'"),
        ({"a": {"q1": "high"}}, {}, "expected a mapping run -> {query -> value}"),
    ],
    ids=[
        "missing",
        "measures",
        "unknown-measure",
        "duplicate",
        "mapping-measure",
        "wide-measure",
        "type",
        "empty",
        "drop-all",
        "bad-missing",
        "not-a-number",
    ],
)
def test_bad_values_are_one_usage_error(values: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as err:
        per_query(values, **kwargs)
    assert message in str(err.value)


@pytest.mark.filterwarnings("ignore::rankeval.errors.TieWarning")  # the runs have tied scores
def test_system_scores_are_the_evaluations_means_on_real_runs() -> None:
    frame = rankeval.Evaluator(DL / "dl_hard-passage.qrels", ["ap", "ndcg_cut_10"]).evaluate(
        sorted(DL.glob("*.run.gz"))
    )
    scores = system_scores(frame, "AP")
    aggregate = frame[frame["query_id"].isna() & (frame["measure"] == "AP")].set_index("run")["value"]
    assert len(scores) == 6 == len(aggregate)
    for run, score in scores.items():  # the per-query mean is trec_eval's MAP (no -c: same queries)
        assert math.isclose(score, float(aggregate[run]), rel_tol=1e-12)
    m = per_query(frame, "AP")
    assert m.values.shape == (len(m.queries), 6) and not np.isnan(m.values).any()
