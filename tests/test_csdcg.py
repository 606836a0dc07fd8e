"""CS-DCG, nCS-DCG and CS-DCG-neg (docs: csdcg.md): hand-computed cases, errors, output of
undefined queries, aggregates and the CLI warning."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import RankevalWarning

D2 = 1 / math.log2(3)  # discount of rank 2: 0.6309297535714575
D3 = 1 / math.log2(4)  # discount of rank 3: 0.5


def write(tmp_path: Path, qrels: str, run: str) -> tuple[Path, Path]:
    q, r = tmp_path / "t.qrels", tmp_path / "t.run"
    q.write_text(qrels)
    r.write_text(run)
    return q, r


def values(frame) -> dict[tuple[str, str], float]:
    """``{(measure, query id): value}``, the aggregate under query id ``None``."""
    return {
        (m, q if isinstance(q, str) else None): v
        for m, q, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)
    }


def evaluate(q: Path, r: Path, specs) -> dict[tuple[str, str], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        return values(rankeval.evaluate(q, r, specs))


def run_lines(qid: str, docs: list[str]) -> str:
    """A run ranking *docs* in the order given (descending scores)."""
    return "".join(f"{qid} Q0 {d} {i + 1} {100 - i} t\n" for i, d in enumerate(docs))


# ------------------------------------------------------------------------ the paper's check
def test_ten_highly_relevant_documents_give_13_63(tmp_path):
    # gain 2^2 - 1 = 3 at every rank: 3 * Σ_{i=1..10} 1/log2(i+1)
    # = 3 * (1 + 0.6309 + 0.5 + 0.4307 + 0.3869 + 0.3562 + 0.3333 + 0.3155 + 0.3010 + 0.2891)
    # = 3 * 4.5436 = 13.6309 ; no document is sensitive, so CS-DCG@10 = DCG@10
    docs = [f"d{i}" for i in range(10)]
    q, r = write(tmp_path, "".join(f"q1 0 {d} 2\n" for d in docs), run_lines("q1", docs))
    got = evaluate(q, r, ["CS-DCG@10", "nCS-DCG@10"])
    assert got[("CS-DCG@10", "q1")] == pytest.approx(13.63, abs=5e-3)
    assert got[("CS-DCG@10", "q1")] == pytest.approx(3 * sum(1 / math.log2(i + 1) for i in range(1, 11)))
    # every ranking of ten equal documents is the same: best == worst, undefined
    assert math.isnan(got[("nCS-DCG@10", "q1")])


def test_sensitive_documents_cost_undiscounted(tmp_path):
    # ranks: a (rel 2, sens 1), b (rel 1), u (unjudged), c (rel 0, sens 2)
    # CS-DCG@4 = (3 - 12) + 1 * D2 + 0 + (0 - 24) = -33 + 0.6309 = -32.3691
    # CS-DCG@2 = -9 + 0.6309 = -8.3691 (c is below the cutoff and costs nothing)
    q, r = write(
        tmp_path,
        "q1 0 a 2 sens=1\nq1 0 b 1\nq1 0 c 0 sens=2\n",
        run_lines("q1", ["a", "b", "u", "c"]),
    )
    got = evaluate(q, r, ["CS-DCG@4", "CS-DCG@2", "CS-DCG(gain=linear,cost=5)@4"])
    assert got[("CS-DCG@4", "q1")] == pytest.approx(3 - 12 + D2 - 24)
    assert got[("CS-DCG@2", "q1")] == pytest.approx(3 - 12 + D2)
    # linear gain and C = 5: (2 - 5) + 1 * D2 + 0 + (0 - 10)
    assert got[("CS-DCG(gain=linear,cost=5)@4", "q1")] == pytest.approx(2 - 5 + D2 - 10)


def test_negative_grades_gain_nothing_and_sensitivity_is_the_max_over_assessors(tmp_path):
    # a: grade -1 (judged non-relevant) but sensitive; b: two assessors, sens 1 and 2 -> 2
    # CS-DCG@2 = (0 - 12) + (1 * D2 - 24)
    q, r = write(
        tmp_path,
        "q1 0 a -1 sens=1\nq1 0 b 1 sens=1\nq1 1 b 0 sens=2\n",
        run_lines("q1", ["a", "b"]),
    )
    got = evaluate(q, r, ["CS-DCG@2"])
    assert got[("CS-DCG@2", "q1")] == pytest.approx(-12 + D2 - 24)


def test_fractional_sensitivity_scales_the_cost(tmp_path):
    q, r = write(tmp_path, "q1 0 a 1 sens=0.5\n", run_lines("q1", ["a"]))
    assert evaluate(q, r, ["CS-DCG@1"])[("CS-DCG@1", "q1")] == pytest.approx(1 - 6)


# ------------------------------------------------------------------------ bounds by hand
def test_best_ranking_must_show_a_sensitive_document(tmp_path):
    # pool: a (rel 2), b (rel 1), d (rel 0, sens 1); k = 3. Only two documents are not
    # sensitive, and a ranking of the pool fills all min(k, 3) = 3 slots, so every ranking
    # shows d:
    #   best  = a, b, d: 3 + 1 * D2 + 0 - 12 = -8.3691
    #   worst = d, b, a: 0 - 12 + 1 * D2 + 3 * D3 = -9.8691
    best, worst = 3 + D2 - 12, -12 + D2 + 3 * D3
    runs = {
        "q1": ["a", "b", "d"],  # the best ranking: 1
        "q2": ["d", "b", "a"],  # the worst ranking: 0
        "q3": ["d", "a", "b"],  # -12 + 3 * D2 + 1 * D3
        "q4": ["a", "b"],  # stops before d: 3 + D2 = 3.6309 > best, clamped to 1
    }
    pool = "q{n} 0 a 2\nq{n} 0 b 1\nq{n} 0 d 0 sens=1\n"
    q, r = write(
        tmp_path,
        "".join(pool.format(n=i) for i in range(1, 5)),
        "".join(run_lines(qid, docs) for qid, docs in runs.items()),
    )
    got = evaluate(q, r, ["nCS-DCG@3", "CS-DCG@3", "nCS-DCG(bounds=greedy)@3"])
    assert got[("CS-DCG@3", "q1")] == pytest.approx(best)
    assert got[("CS-DCG@3", "q2")] == pytest.approx(worst)
    assert got[("nCS-DCG@3", "q1")] == pytest.approx(1.0)
    assert got[("nCS-DCG@3", "q2")] == pytest.approx(0.0)
    middle = -12 + 3 * D2 + D3
    assert got[("nCS-DCG@3", "q3")] == pytest.approx((middle - worst) / (best - worst))
    assert got[("nCS-DCG@3", "q3")] == pytest.approx(0.26186 / 1.5, abs=1e-5)  # 0.17457
    assert got[("CS-DCG@3", "q4")] == pytest.approx(3 + D2)
    assert got[("nCS-DCG@3", "q4")] == 1.0
    # the greedy algorithm finds the same bounds here
    for qid in runs:
        assert got[("nCS-DCG(bounds=greedy)@3", qid)] == pytest.approx(got[("nCS-DCG@3", qid)])


def test_greedy_bounds_differ_from_exact(tmp_path):
    # pool: a (rel 2), b (rel 1), c (rel 2, sens 1), d (rel 0, sens 1); k = 3.
    # Every top 3 shows c or d. Exact best: a, c, b (c is worth showing early, since its
    # cost is paid anyway): 3 + 3 * D2 + 1 * D3 - 12 = -6.6072.
    # Greedy (Algorithm 1) puts the non-sensitive relevant documents first, a, b, and then
    # the best remaining document at rank 3, c: 3 + 1 * D2 + 3 * D3 - 12 = -6.8691.
    # Worst (both): d, b, c: -12 + 1 * D2 + 3 * D3 - 12 = -21.8691.
    exact_best = 3 + 3 * D2 + D3 - 12
    greedy_best = 3 + D2 + 3 * D3 - 12
    worst = -12 + D2 + 3 * D3 - 12
    pool = "q{n} 0 a 2\nq{n} 0 b 1\nq{n} 0 c 2 sens=1\nq{n} 0 d 0 sens=1\n"
    q, r = write(
        tmp_path,
        pool.format(n=1) + pool.format(n=2),
        run_lines("q1", ["a", "b", "c"]) + run_lines("q2", ["a", "c", "b"]),
    )
    got = evaluate(q, r, ["CS-DCG@3", "nCS-DCG@3", "nCS-DCG(bounds=greedy)@3"])
    assert got[("CS-DCG@3", "q1")] == pytest.approx(greedy_best)
    assert got[("CS-DCG@3", "q2")] == pytest.approx(exact_best)
    # q1 ranks greedy's best ranking: 1 with greedy bounds; exact: 15 / (14 + 2 * D2) = 0.98284
    assert got[("nCS-DCG(bounds=greedy)@3", "q1")] == pytest.approx(1.0)
    assert got[("nCS-DCG@3", "q1")] == pytest.approx((greedy_best - worst) / (exact_best - worst))
    assert got[("nCS-DCG@3", "q1")] == pytest.approx(15 / (14 + 2 * D2)) == pytest.approx(0.98284, abs=1e-5)
    # q2 beats greedy's "best": clamped to 1; exactly 1 with the exact bounds
    assert got[("nCS-DCG(bounds=greedy)@3", "q2")] == 1.0
    assert got[("nCS-DCG@3", "q2")] == pytest.approx(1.0)


def test_module_bounds_on_the_greedy_counter_examples():
    from rankeval_csdcg import exact_bounds, gain_of, greedy_bounds

    # query 0: the pool above (k = 3). query 1 (k = 1 for both, see below): u (rel 0, sens
    # 1), v (rel 1, sens 2): greedy's worst puts the non-relevant sensitive u first, -12;
    # the exact worst is v, 1 - 24 = -23. Its best is u, -12 -- greedy's best and worst are
    # equal, so greedy leaves that query undefined.
    query = np.array([0, 0, 0, 0])
    gain = gain_of(np.array([2, 1, 2, 0]), "exp")
    sens = np.array([0.0, 0, 1, 1])
    best, worst = exact_bounds(query, gain, sens, 1, 3, 12.0)
    g_best, g_worst = greedy_bounds(query, gain, sens, 1, 3, 12.0)
    assert best[0] == pytest.approx(3 + 3 * D2 + D3 - 12)
    assert g_best[0] == pytest.approx(3 + D2 + 3 * D3 - 12)
    assert worst[0] == pytest.approx(g_worst[0]) == pytest.approx(-24 + D2 + 3 * D3)
    q1, g1, s1 = np.array([0, 0]), np.array([0.0, 1.0]), np.array([1.0, 2.0])
    assert [x[0] for x in exact_bounds(q1, g1, s1, 1, 1, 12.0)] == [-12.0, -23.0]
    assert [x[0] for x in greedy_bounds(q1, g1, s1, 1, 1, 12.0)] == [-12.0, -12.0]


def test_missing_query_is_scored_on_an_empty_ranking(tmp_path):
    # q2 is judged but not retrieved: CS-DCG 0; pool x (rel 1), y (rel 0, sens 1), k = 1:
    # best 1 (x), worst -12 (y): nCS-DCG = (0 + 12) / 13
    q, r = write(tmp_path, "q1 0 a 1\nq1 0 b 0\nq2 0 x 1\nq2 0 y 0 sens=1\n", run_lines("q1", ["a"]))
    got = evaluate(q, r, ["nCS-DCG@1", "CS-DCG@1"])
    assert got[("CS-DCG@1", "q2")] == 0.0
    assert got[("nCS-DCG@1", "q2")] == pytest.approx(12 / 13)
    assert got[("nCS-DCG@1", "q1")] == 1.0


# ------------------------------------------------------------------------ negative share
def test_negative_share(tmp_path):
    # q1: a (sens 1) at rank 1: 3 - 12 < 0 -> 1 ; q2: 1 > 0 -> 0 ; q3: nothing retrieved,
    # CS-DCG 0, not below 0 -> 0 ; share = 1/3
    q, r = write(
        tmp_path,
        "q1 0 a 2 sens=1\nq2 0 b 1\nq3 0 c 1\n",
        run_lines("q1", ["a"]) + run_lines("q2", ["b"]),
    )
    got = evaluate(q, r, ["CS-DCG-neg@10"])
    assert [got[("CS-DCG-neg@10", x)] for x in ("q1", "q2", "q3")] == [1.0, 0.0, 0.0]
    assert got[("CS-DCG-neg@10", None)] == pytest.approx(1 / 3)


# ------------------------------------------------------------------------ undefined queries
UNDEFINED_QRELS = "q1 0 a 2\nq1 0 b 0 sens=1\nq2 0 x 1\nq2 0 y 1\n"
# q1 (k = 1): best a = 3, worst b = -12 ; q2: x and y are alike, best == worst: undefined
UNDEFINED_RUN = run_lines("q1", ["b", "a"]) + run_lines("q2", ["x", "y"])


def test_undefined_query_is_nan_left_out_of_the_mean_and_warned(tmp_path):
    q, r = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    with pytest.warns(RankevalWarning, match=r"nCS-DCG@1: 1 of 2 queries undefined") as record:
        frame = rankeval.evaluate(q, r, "nCS-DCG@1")
    assert len(record) == 1
    got = values(frame)
    assert got[("nCS-DCG@1", "q1")] == 0.0  # b first: the worst ranking
    assert math.isnan(got[("nCS-DCG@1", "q2")])
    assert got[("nCS-DCG@1", None)] == 0.0  # the mean over q1 only, not nan


def test_all_queries_undefined_gives_nan_aggregate(tmp_path):
    q, r = write(tmp_path, "q2 0 x 1\nq2 0 y 1\n", run_lines("q2", ["x"]))
    with pytest.warns(RankevalWarning, match="no query left"):
        got = values(rankeval.evaluate(q, r, "nCS-DCG@1"))
    assert math.isnan(got[("nCS-DCG@1", None)])


@pytest.mark.parametrize(
    ("fmt", "line"),
    [
        ("trec", "nCS-DCG@1             \tq2\tnan"),
        ("tsv", "run\tq2\tnCS-DCG@1\tnan"),
        ("jsonl", '{"run": "run", "query_id": "q2", "measure": "nCS-DCG@1", "value": null}'),
    ],
)
def test_undefined_query_is_printed_as_nan(tmp_path, fmt, line):
    q, _ = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    (tmp_path / "run").write_text(UNDEFINED_RUN)  # named "run" in the output
    result = CliRunner().invoke(app, [str(q), str(tmp_path / "run"), "-m", "nCS-DCG@1", "-q", "-f", fmt])
    assert result.exit_code == 0, result.output
    assert line in result.stdout.splitlines()


def test_cli_prints_values_and_one_warning_line(tmp_path):
    # q1 (k = 10): pool a (rel 2), b (rel 0, sens 1); run b, a:
    #   CS-DCG@10 = (0 - 12) + 3 * D2 = -10.1072 ; best a, b = 3 - 12 = -9 ;
    #   worst b, a = -10.1072 -> nCS-DCG 0 ; q2 undefined (x, y alike)
    q, r = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "nCS-DCG@10", "-m", "CS-DCG@10", "-q"])
    assert result.exit_code == 0, result.output
    rows = {tuple(x.split("\t")[:2]): x.split("\t")[2] for x in result.stdout.splitlines()}
    rows = {(m.strip(), qid): v for (m, qid), v in rows.items()}
    assert rows[("CS-DCG@10", "q1")] == f"{-12 + 3 * D2:.4f}" == "-10.1072"
    assert rows[("nCS-DCG@10", "q1")] == "0.0000"
    assert rows[("nCS-DCG@10", "q2")] == "nan"
    assert rows[("CS-DCG@10", "q2")] == f"{1 + D2:.4f}"
    assert rows[("nCS-DCG@10", "all")] == "0.0000"
    assert rows[("CS-DCG@10", "all")] == f"{(-12 + 3 * D2 + 1 + D2) / 2:.4f}"
    assert result.stderr.splitlines() == [
        "rankeval: warning: nCS-DCG@10: 1 of 2 queries undefined (best == worst CS-DCG@10 over "
        "all rankings of the judged documents); left out of the mean"
    ]


def test_cli_warns_once_for_several_runs_and_not_on_error(tmp_path):
    q, r = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    r2 = tmp_path / "other.run"
    r2.write_text(UNDEFINED_RUN)
    result = CliRunner().invoke(app, [str(q), str(r), str(r2), "-m", "nCS-DCG@10"])
    assert result.exit_code == 0, result.output
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("rankeval: warning: nCS-DCG@10: 1 of 2 queries undefined")
    bad = tmp_path / "bad.qrels"
    bad.write_text(UNDEFINED_QRELS + "q3 0 z 1 sens=high\n")
    result = CliRunner().invoke(app, [str(bad), str(r), "-m", "nCS-DCG@10"])
    assert result.exit_code == 1
    assert "warning" not in result.stderr


# ------------------------------------------------------------------------ aggregates
def test_gmean_floors_zeros_as_trec_eval_gm_map(tmp_path):
    # three queries, pool a (rel 1), b (rel 0, sens 1), k = 1: best 1, worst -12
    #   q1 ranks a: 1 ; q2 ranks b: 0 -> floored to 1e-5 ; q3 ranks u (unjudged): 12/13
    # gmean = exp((log 1 + log 1e-5 + log(12/13)) / 3)
    pool = "q{n} 0 a 1\nq{n} 0 b 0 sens=1\n"
    q, r = write(
        tmp_path,
        "".join(pool.format(n=i) for i in (1, 2, 3)),
        run_lines("q1", ["a"]) + run_lines("q2", ["b"]) + run_lines("q3", ["u"]),
    )
    got = evaluate(q, r, ["nCS-DCG(agg=gmean)@1", "nCS-DCG@1"])
    assert got[("nCS-DCG(agg=gmean)@1", "q3")] == pytest.approx(12 / 13)
    assert got[("nCS-DCG(agg=gmean)@1", None)] == pytest.approx(
        math.exp((0 + math.log(1e-5) + math.log(12 / 13)) / 3)
    )
    assert got[("nCS-DCG@1", None)] == pytest.approx((1 + 0 + 12 / 13) / 3)


def test_gmean_skips_undefined_queries(tmp_path):
    q, r = write(tmp_path, UNDEFINED_QRELS, run_lines("q1", ["a"]) + run_lines("q2", ["x"]))
    got = evaluate(q, r, ["nCS-DCG(agg=gmean)@1"])
    assert got[("nCS-DCG(agg=gmean)@1", None)] == 1.0


# ------------------------------------------------------------------------ specs and errors
@pytest.mark.parametrize(
    "spec",
    [
        "CS-DCG@10",
        "nCS-DCG@5",
        "nCS-DCG(bounds=greedy,agg=gmean)@10",
        "CS-DCG(gain=linear,cost=5)@3",
        "CS-DCG-neg@10",
        "nCS-DCG(cost=2.5)@20",
    ],
)
def test_canonical_spec_round_trips(spec):
    m = rankeval.parse_measure(spec)
    assert rankeval.parse_measure(str(m)) == m
    assert rankeval.parse_measure("nCS-DCG(k=10)") == rankeval.parse_measure("nCS-DCG@10")


@pytest.mark.parametrize("spec", ["CS-DCG", "nCS-DCG", "CS-DCG-neg", "nCS-DCG(agg=gmean)"])
def test_missing_cutoff_is_an_error(spec):
    name = spec.split("(")[0]
    # the suggestion keeps what was written: nCS-DCG(agg=gmean)@10
    with pytest.raises(rankeval.SpecError, match=re.escape(f"{name} needs a cutoff, e.g. {spec}@10")):
        rankeval.parse_measure(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("CS-DCG(agg=gmean)@10", "agg=gmean is not defined for CS-DCG, whose values can be negative"),
        ("nCS-DCG@0", r"bad value for 'k': 0 is outside \[1, 2147483647\]"),
        ("nCS-DCG(cost=-1)@10", r"bad value for 'cost': -1 is outside \[0, inf\)"),
        ("nCS-DCG(bounds=fast)@10", "expected one of exact, greedy"),
        ("nCS-DCG(gain=log)@10", "expected one of exp, linear"),
    ],
)
def test_bad_parameters(spec, message):
    with pytest.raises(rankeval.SpecError, match=message):
        rankeval.parse_measure(spec)


def test_missing_cutoff_on_the_command_line(tmp_path):
    q, r = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "nCS-DCG"])
    assert result.exit_code == 2
    assert "nCS-DCG needs a cutoff, e.g. nCS-DCG@10" in result.stderr


@pytest.mark.parametrize("bad", ["high", "-1", "nan", "1e308"])
def test_bad_sens_value_names_file_and_line(tmp_path, bad):
    q, r = write(tmp_path, f"q1 0 a 1 sens=1\n# comment\nq1 0 b 0 sens={bad}\n", run_lines("q1", ["a"]))
    with pytest.raises(rankeval.InputError) as info:
        rankeval.evaluate(q, r, "nCS-DCG@10")
    assert str(info.value) == (
        f"{q}:3: expected a number in [0, 2147483647] for sens= (the sensitivity grade), found {bad!r}"
    )
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "CS-DCG@10"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"rankeval: error: {q}:3: expected a number in [0, 2147483647] for sens=")
    # measures that do not read sens= do not mind
    assert rankeval.evaluate(q, r, "nDCG@10")["value"].iloc[-1] == 1.0


def test_json_output_of_an_undefined_query_is_null(tmp_path):
    q, r = write(tmp_path, UNDEFINED_QRELS, UNDEFINED_RUN)
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "nCS-DCG@1", "-q", "-f", "json"])
    rows = {(x["query_id"]): x["value"] for x in json.loads(result.stdout)}
    assert rows == {"q1": 0.0, "q2": None, None: 0.0}


def test_registered_by_the_builtin_plugin():
    from rankeval.measures.plugins import DEFAULT_PLUGINS, load_registry

    assert "rankeval_csdcg" in DEFAULT_PLUGINS
    registry = load_registry(entry_points=False)
    for name in ("CS-DCG", "nCS-DCG", "CS-DCG-neg"):
        assert registry.measures[name].plugin == "rankeval_csdcg"


def test_exp_gain_overflow_is_an_error(tmp_path) -> None:
    """A grade whose 2^rel overflows float64 is refused with gain=exp (it used to print inf
    and nan silently); gain=linear computes it."""
    from rankeval.errors import InputError

    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("q 0 d1 1024\nq 0 d2 1\n")
    r.write_text("q Q0 d1 1 3 t\nq Q0 d2 2 2 t\n")
    with pytest.raises(InputError, match="too large for gain=exp"):
        rankeval.evaluate(q, r, ["nCS-DCG@10"])
    df = rankeval.evaluate(q, r, ["CS-DCG(gain=linear)@10"])
    assert np.isfinite(df["value"]).all()
