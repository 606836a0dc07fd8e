"""The Python API takes qrels, runs and measures in the forms researchers have them.

Every form of a run (path, ``Run``, DataFrame with rankeval's or PyTerrier's columns, dict of
dicts, ir_measures ``ScoredDoc`` iterables), of qrels (the same, with ``Qrel``) and of
measures (specs, ``Measure`` objects, ir_measures measure objects) gives the values of the
same data read from files, and those equal ir_measures' (pytrec_eval's) values, computed here
as the independent oracle.
"""

from __future__ import annotations

import math
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.errors import SpecError, UsageError

# query 3 is judged but not retrieved: it scores 0 and counts in the mean (both tools)
QRELS_TEXT = "1 0 d1 2\n1 0 d2 1\n1 0 d3 0\n1 0 d4 1\n2 0 d1 1\n2 0 d5 0\n2 0 d6 2\n3 0 d7 1\n"
RUN_A = (
    "1 Q0 d1 1 3.0 a\n1 Q0 d3 2 2.5 a\n1 Q0 d2 3 2.0 a\n1 Q0 d9 4 1.0 a\n2 Q0 d5 1 2.0 a\n2 Q0 d6 2 1.5 a\n"
)
RUN_B = "1 Q0 d9 1 4.0 b\n1 Q0 d4 2 3.0 b\n1 Q0 d1 3 1.0 b\n2 Q0 d6 1 5.0 b\n2 Q0 d1 2 4.0 b\n"
IRM = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P(rel=2) @ 2, ir_measures.RR]
SPECS = [str(m) for m in IRM]


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def qrels_dict() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, _, d, r in rows(QRELS_TEXT):
        out.setdefault(q, {})[d] = int(r)
    return out


def run_dict(text: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, _, d, _, s, _ in rows(text):
        out.setdefault(q, {})[d] = float(s)
    return out


def oracle(text: str) -> dict[tuple[str, str], float]:
    """``{(measure, query): value}`` by ir_measures (pytrec_eval), with ``all`` the mean."""
    found = {
        (str(m.measure), m.query_id): m.value
        for m in ir_measures.iter_calc(IRM, qrels_dict(), run_dict(text))
    }
    for spec in SPECS:
        found[(spec, None)] = float(np.mean([v for (s, _), v in found.items() if s == spec]))
    return found


def values(frame: pd.DataFrame, run: str) -> dict[tuple[str, str], float]:
    got = frame[frame["run"] == run]
    qids = [q if isinstance(q, str) else None for q in got["query_id"]]  # the aggregate: None
    return dict(zip(zip(got["measure"], qids, strict=True), got["value"], strict=True))


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    q, a, b = tmp_path / "judged.qrels", tmp_path / "a.run", tmp_path / "b.run"
    q.write_text(QRELS_TEXT)
    a.write_text(RUN_A)
    b.write_text(RUN_B)
    return q, a, b


def check(frame: pd.DataFrame, run: str, text: str) -> None:
    got, want = values(frame, run), oracle(text)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def test_the_file_values_are_ir_measures_values(files) -> None:
    q, a, _ = files
    check(rankeval.evaluate(q, a, SPECS), "a.run", RUN_A)
    assert oracle(RUN_A)[("AP", "1")] == pytest.approx((1 + 2 / 3) / 3)  # d1 @1, d2 @3; R = 3


# ------------------------------------------------------------------------ one run, each form
def scored_docs(text: str) -> list[ir_measures.ScoredDoc]:
    return [ir_measures.ScoredDoc(q, d, float(s)) for q, _, d, _, s, _ in rows(text)]


RUN_FORMS = {
    "path": lambda p: p,
    "str path": lambda p: str(p),
    "Run": lambda p: rankeval.Run.read(p),
    "rankeval DataFrame": lambda p: rankeval.Run.read(p).frame,
    "PyTerrier DataFrame": lambda p: pd.DataFrame(
        [(q, d, float(s), int(r) - 1) for q, _, d, r, s, _ in rows(p.read_text())],
        columns=["qid", "docno", "score", "rank"],
    ),
    "dict of dicts": lambda p: run_dict(p.read_text()),
    "ScoredDoc list": lambda p: scored_docs(p.read_text()),
    "ScoredDoc generator": lambda p: ir_measures.read_trec_run(str(p)),
}


@pytest.mark.parametrize("form", RUN_FORMS)
def test_each_run_form(files, form) -> None:
    q, a, _ = files
    frame = rankeval.evaluate(q, RUN_FORMS[form](a), SPECS)
    name = "a.run" if form in ("path", "str path", "Run") else "run"
    assert set(frame["run"]) == {name}
    check(frame, name, RUN_A)


QRELS_FORMS = {
    "path": lambda p: p,
    "Qrels": lambda p: rankeval.Qrels.read(p),
    "rankeval DataFrame": lambda p: rankeval.Qrels.read(p).frame.drop(columns=["line"]),
    "PyTerrier DataFrame": lambda p: pd.DataFrame(
        [(q, d, int(r)) for q, _, d, r in rows(p.read_text())], columns=["qid", "docno", "label"]
    ),
    "dict of dicts": lambda p: qrels_dict(),
    "Qrel list": lambda p: [ir_measures.Qrel(q, d, int(r), i) for q, i, d, r in rows(p.read_text())],
    "Qrel generator": lambda p: ir_measures.read_trec_qrels(str(p)),
}


@pytest.mark.parametrize("form", QRELS_FORMS)
def test_each_qrels_form(files, form) -> None:
    q, a, _ = files
    check(rankeval.evaluate(QRELS_FORMS[form](q), a, SPECS), "a.run", RUN_A)


def test_a_pyterrier_frame_keeps_rankeval_columns_when_it_has_both(files) -> None:
    q, a, _ = files
    frame = rankeval.Run.read(a).frame
    frame["qid"], frame["docno"] = "x", "y"  # rankeval's columns win over PyTerrier's
    check(rankeval.evaluate(q, frame, SPECS), "run", RUN_A)


# ------------------------------------------------------------------------ several runs
@pytest.mark.parametrize("form", RUN_FORMS)
def test_named_runs_of_each_form(files, form) -> None:
    q, a, _ = files
    frame = rankeval.evaluate(q, {"first": RUN_FORMS[form](a), "second": run_dict(RUN_B)}, SPECS)
    assert list(dict.fromkeys(frame["run"])) == ["first", "second"]
    check(frame, "first", RUN_A)
    check(frame, "second", RUN_B)


def test_a_dict_of_dicts_is_one_run_and_a_dict_of_them_is_several(files) -> None:
    q, _, _ = files
    one = rankeval.evaluate(q, run_dict(RUN_A), SPECS)
    assert set(one["run"]) == {"run"}
    several = rankeval.evaluate(q, {"x": run_dict(RUN_A), "y": run_dict(RUN_B)}, SPECS)
    assert list(dict.fromkeys(several["run"])) == ["x", "y"]
    check(several, "x", RUN_A)
    check(several, "y", RUN_B)


def test_a_list_names_runs_by_file_name_or_place(files) -> None:
    q, a, b = files
    frame = rankeval.evaluate(q, [run_dict(RUN_A), run_dict(RUN_B)], SPECS)
    assert list(dict.fromkeys(frame["run"])) == ["run1", "run2"]
    check(frame, "run1", RUN_A)
    check(frame, "run2", RUN_B)
    frame = rankeval.evaluate(q, [a, scored_docs(RUN_B)], SPECS)
    assert list(dict.fromkeys(frame["run"])) == ["a.run", "run2"]
    check(frame, "run2", RUN_B)
    frame = rankeval.evaluate(q, iter([RUN_FORMS["PyTerrier DataFrame"](a), b]), SPECS)
    assert list(dict.fromkeys(frame["run"])) == ["run1", "b.run"]


def test_run_objects_keep_their_names_unless_they_collide(files) -> None:
    q, _, _ = files
    x, y = rankeval.Run.from_dict(run_dict(RUN_A), "x"), rankeval.Run.from_dict(run_dict(RUN_B), "y")
    assert list(dict.fromkeys(rankeval.evaluate(q, [x, y], "AP")["run"])) == ["x", "y"]
    same = [rankeval.Run.from_dict(run_dict(RUN_A)), rankeval.Run.from_dict(run_dict(RUN_B))]
    frame = rankeval.evaluate(q, same, SPECS)  # both are named "run"
    assert list(dict.fromkeys(frame["run"])) == ["run1", "run2"]
    check(frame, "run2", RUN_B)


def test_the_same_file_twice_is_still_an_error(files) -> None:
    q, a, _ = files
    with pytest.raises(UsageError, match=r"several runs are named a\.run"):
        rankeval.evaluate(q, [a, a], "AP")


# ------------------------------------------------------------------------ measures
def test_ir_measures_measure_objects(files) -> None:
    q, a, _ = files
    frame = rankeval.evaluate(q, a, IRM)
    assert list(dict.fromkeys(frame["measure"])) == SPECS  # rankeval prints them the same
    check(frame, "a.run", RUN_A)
    one = rankeval.evaluate(q, a, ir_measures.nDCG @ 10)  # one object, not in a list
    assert values(one, "a.run") == {k: v for k, v in values(frame, "a.run").items() if k[0] == "nDCG@10"}


def test_ir_measures_objects_resolve_like_their_spelling() -> None:
    from rankeval.engine.prepare import resolve_measures

    native = resolve_measures([ir_measures.AP(rel=2), ir_measures.Judged @ 5, ir_measures.nDCG])
    assert native == [rankeval.parse_measure(s) for s in ("AP(rel=2)", "Judged@5", "nDCG")]
    assert all(type(m).__module__.startswith("rankeval_trec") for m in native)
    bridged = resolve_measures(ir_measures.ERR @ 10)  # not native: the ir_measures bridge
    assert [str(m) for m in bridged] == ["ERR@10"]
    assert type(bridged[0]).__module__ == "rankeval_irmeasures"
    mixed = resolve_measures(["AP", ir_measures.AP, rankeval.parse_measure("AP"), ir_measures.P @ 5])
    assert [str(m) for m in mixed] == ["AP", "P@5"]  # duplicates dropped


def test_ir_measures_object_values_on_the_bridge(files) -> None:
    q, a, _ = files
    frame = rankeval.evaluate(q, a, [ir_measures.ERR @ 10])
    want = {
        m.query_id: m.value
        for m in ir_measures.iter_calc([ir_measures.ERR @ 10], qrels_dict(), run_dict(RUN_A))
    }
    got = values(frame, "a.run")
    for qid, value in want.items():
        assert got[("ERR@10", qid)] == pytest.approx(value, rel=1e-12)


# ------------------------------------------------------------------------ compare, random baseline
def test_compare_takes_the_same_forms(files) -> None:
    q, _, b = files
    cmp = rankeval.compare(qrels_dict(), {"A": scored_docs(RUN_A), "B": run_dict(RUN_B)}, [ir_measures.AP])
    assert cmp.runs == ["A", "B"]
    want = oracle(RUN_A)[("AP", None)], oracle(RUN_B)[("AP", None)]
    assert cmp.aggregate[:, 0] == pytest.approx(want, rel=1e-12)
    cmp = rankeval.compare(q, [run_dict(RUN_A), RUN_FORMS["PyTerrier DataFrame"](b)], "AP")
    assert cmp.runs == ["run1", "run2"]
    assert cmp.aggregate[:, 0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("form", ["dict of dicts", "ScoredDoc list", "PyTerrier DataFrame"])
def test_random_baseline_takes_the_same_forms(files, form) -> None:
    q, a, _ = files
    want = rankeval.random_baseline(q, a, ["AP", "P@2"], samples=50)
    got = rankeval.random_baseline(
        QRELS_FORMS["Qrel list"](q), RUN_FORMS[form](a), ["AP", ir_measures.P @ 2], samples=50
    )
    np.testing.assert_array_equal(got.values, want.values)
    np.testing.assert_array_equal(got.aggregate, want.aggregate)
    # one expected value by hand: query 2 retrieves d5 (0) and d6 (rel 2): P@2 = 1/2 always
    assert got.values[1, 1] == 0.5


# ------------------------------------------------------------------------ the Dask engine
@pytest.fixture(scope="module")
def scheduler():
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


def test_the_dask_engine_takes_the_same_forms(files, scheduler) -> None:
    from rankeval.engine.distributed import DaskOptions

    q, a, b = files
    dask = DaskOptions(scheduler=scheduler)
    runs = {"a.run": a, "renamed": b, "dict": run_dict(RUN_B), "docs": scored_docs(RUN_A)}
    local = rankeval.evaluate(q, runs, SPECS)
    dist = rankeval.evaluate(q, runs, SPECS, engine=dask)
    pd.testing.assert_frame_equal(dist, local, check_exact=True)
    assert list(dict.fromkeys(dist["run"])) == ["a.run", "renamed", "dict", "docs"]
    check(dist, "renamed", RUN_B)
    listed = rankeval.evaluate(q, [run_dict(RUN_A), run_dict(RUN_B)], SPECS, engine=dask)
    assert list(dict.fromkeys(listed["run"])) == ["run1", "run2"]
    check(listed, "run2", RUN_B)


def test_the_block_engine_cuts_files_and_reads_other_forms_whole(files) -> None:
    from rankeval.engine.evaluation import _block_runs

    _, a, b = files
    out = _block_runs({"a.run": a, "other": b, "d": run_dict(RUN_B)})
    assert out[0] == ("a.run", str(a))  # a file: cut into blocks
    assert out[1] == ("other", str(b))
    assert out[2][0] == "d" and isinstance(out[2][1], rankeval.Run)  # read here, named as given
    frame = rankeval.evaluate(files[0], {"x": a, "y": run_dict(RUN_B)}, "AP")
    assert list(dict.fromkeys(frame["run"])) == ["x", "y"]


# ------------------------------------------------------------------------ clear errors
BAD_RUNS = {
    "None": (None, "cannot use None as a run; expected a path, a Run, a DataFrame"),
    "a number": (5, "cannot use 5 as a run"),
    "one ScoredDoc": (ir_measures.ScoredDoc("1", "d1", 1.0), "one ScoredDoc (a single item"),
    "empty list": ([], "no runs given"),
    "empty mapping": ({}, "no runs given"),
    "plain tuples": ([("1", "d1", 1.0)], "cannot use a tuple of str as a run"),
    "a list of numbers": ([1, 2], "cannot use 1 as a run"),
    "mixed mapping": ({"x": {"1": {"d1": 1.0}}, "q": {"d1": 1.0}}, "cannot tell one run from runs by name"),
    "no score column": (pd.DataFrame({"qid": ["1"], "docno": ["d1"]}), "lacks column(s) ['score']"),
    "non-numeric score": ({"1": {"d1": "high"}}, "expected a number for the score, found 'high'"),
    "Qrels as run": ([ir_measures.Qrel("1", "d1", 1, "0")], "lacks column(s) ['score']"),
    "mixed namedtuples": (
        [ir_measures.ScoredDoc("1", "d1", 1.0), ir_measures.Qrel("1", "d1", 1, "0")],
        "item 2 is one Qrel",
    ),
}


@pytest.mark.parametrize("case", BAD_RUNS)
def test_bad_runs_are_clear_usage_errors(files, case) -> None:
    q, _, _ = files
    runs, message = BAD_RUNS[case]
    with pytest.raises(UsageError) as info:
        rankeval.evaluate(q, runs, "AP")
    assert message in str(info.value)


BAD_QRELS = {
    "None": (None, "cannot use None as qrels; expected a path (or ir_datasets id), a Qrels"),
    "a number": (3.5, "cannot use 3.5 as qrels"),
    "plain tuples": ([("1", "0", "d1", 1)], "cannot use a list of tuple as qrels"),
    "no label column": (pd.DataFrame({"qid": ["1"], "docno": ["d1"]}), "or PyTerrier's qid, docno, label"),
    "ScoredDocs as qrels": ([ir_measures.ScoredDoc("1", "d1", 1.0)], "lacks column(s) ['relevance']"),
}


@pytest.mark.parametrize("case", BAD_QRELS)
def test_bad_qrels_are_clear_usage_errors(files, case) -> None:
    _, a, _ = files
    qrels, message = BAD_QRELS[case]
    with pytest.raises(UsageError) as info:
        rankeval.evaluate(qrels, a, "AP")
    assert message in str(info.value)


def test_bad_measures_are_clear_errors(files) -> None:
    q, a, _ = files
    with pytest.raises(
        UsageError, match="expected a spec string, a rankeval Measure or an ir_measures measure"
    ):
        rankeval.evaluate(q, a, [object()])
    with pytest.raises(UsageError, match="measures must be a spec, a Measure, an ir_measures measure"):
        rankeval.evaluate(q, a, 5)
    # an ir_measures parameter rankeval's own measure does not have: a spec error naming it
    with pytest.raises(
        SpecError, match=r"ir_measures measure nDCG\(dcg='exp-log2'\)@10: unknown parameter 'dcg'"
    ):
        rankeval.evaluate(q, a, [ir_measures.nDCG(dcg="exp-log2") @ 10])


def test_a_query_without_documents_in_a_dict_run_counts_as_not_retrieved(files) -> None:
    q, _, _ = files
    frame = rankeval.evaluate(q, {**run_dict(RUN_A), "3": {}}, "AP")
    assert values(frame, "run")[("AP", "3")] == 0.0
    assert not math.isnan(values(frame, "run")[("AP", None)])
