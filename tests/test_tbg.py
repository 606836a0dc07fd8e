"""TBG and hTBG against the hTBG reference implementation's published toy outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rankeval

TOY = Path(__file__).parent / "data" / "htbg-toy"
EXPECTED = json.loads((TOY / "expected.json").read_text())


def _values(frame):
    return {(m, q): v for m, q, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)}


@pytest.mark.parametrize(("mode", "measure"), [("hierarchical", "hTBG"), ("tbg_mode_-t", "TBG")])
@pytest.mark.parametrize("kind", ["evaluate", "best"])
def test_reference_toy_values(mode, measure, kind):
    ideal = "(ideal=true)" if kind == "best" else ""
    specs = {h: f"{measure}{ideal}@h={h}" for h in ("3", "5", "10")}
    frame = rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", list(specs.values()))
    ours = _values(frame)
    checked = 0
    for qid, by_h in EXPECTED[mode][kind].items():
        for h, want in by_h.items():
            spec = str(rankeval.parse_measure(specs[h]))
            assert ours[(spec, qid)] == pytest.approx(want, rel=1e-12, abs=0), (spec, qid)
            checked += 1
    assert checked == 6


@pytest.mark.parametrize(("mode", "measure"), [("hierarchical", "hTBG"), ("tbg_mode_-t", "TBG")])
def test_reference_ideal_rule_gives_the_toy_best(mode, measure):
    specs = {h: f"{measure}(ideal=true,ideal_rule=reference)@h={h}" for h in ("3", "5", "10")}
    ours = _values(rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", list(specs.values())))
    for qid, by_h in EXPECTED[mode]["best"].items():
        for h, want in by_h.items():
            assert ours[(str(rankeval.parse_measure(specs[h])), qid)] == pytest.approx(want, rel=1e-12, abs=0)


def test_normalised_is_value_over_ideal():
    frame = rankeval.evaluate(
        TOY / "truth.json", TOY / "prediction.json", "nhTBG@3 hTBG@3 hTBG(ideal=true)@3"
    )
    v = _values(frame)
    for q in ("q_1", "q_2"):
        assert v[("nhTBG@3", q)] == pytest.approx(v[("hTBG@3", q)] / v[("hTBG(ideal=true)@3", q)], rel=1e-15)


def test_half_life_units_parse_to_seconds():
    assert rankeval.parse_measure("hTBG@h=3h") == rankeval.parse_measure("hTBG@10800")
    assert str(rankeval.parse_measure("hTBG@h=30m")) == "hTBG@30m"
    assert rankeval.parse_measure("TBG").h == 224


def test_converted_nested_trec_files_give_the_same_values(tmp_path):
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    q, r = tmp_path / "toy.qrels", tmp_path / "toy.run"
    result = CliRunner().invoke(
        app, ["convert", str(TOY / "truth.json"), str(TOY / "prediction.json"), str(q), str(r)]
    )
    assert result.exit_code == 0, result.output
    assert "q_1 0 user_1/doc_1 0.2 cost=56" in q.read_text()
    specs = [f"{m}{i}@h={h}" for m in ("hTBG", "TBG") for i in ("", "(ideal=true)") for h in (3, 5, 10)]
    from_json = rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", specs)
    from_trec = rankeval.evaluate(q, r, specs)
    assert from_json["value"].tolist() == from_trec["value"].tolist()
    assert len(from_trec) == len(specs) * 3


def test_convert_round_trip_is_lossless(tmp_path):
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    runner = CliRunner()
    q1, r1 = tmp_path / "a.qrels", tmp_path / "a.run"
    t2, p2 = tmp_path / "t.json", tmp_path / "p.json"
    q3, r3 = tmp_path / "b.qrels", tmp_path / "b.run"
    assert (
        runner.invoke(
            app, ["convert", str(TOY / "truth.json"), str(TOY / "prediction.json"), str(q1), str(r1)]
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["convert", str(q1), str(r1), str(t2), str(p2), "--to", "json"]).exit_code == 0
    assert json.loads(t2.read_text()) == json.loads((TOY / "truth.json").read_text())
    assert json.loads(p2.read_text()) == json.loads((TOY / "prediction.json").read_text())
    assert runner.invoke(app, ["convert", str(t2), str(p2), str(q3), str(r3)]).exit_code == 0
    assert q3.read_text() == q1.read_text() and r3.read_text() == r1.read_text()


def test_cli_reads_the_reference_json_directly():
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    result = CliRunner().invoke(
        app, [str(TOY / "truth.json"), str(TOY / "prediction.json"), "-m", "hTBG@h=3", "-q", "-f", "jsonl"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["query_id"]: r["value"] for r in map(json.loads, result.output.splitlines())}
    assert rows["q_1"] == pytest.approx(EXPECTED["hierarchical"]["evaluate"]["q_1"]["3"], rel=1e-12)


def test_missing_cost_is_an_error_naming_the_item(tmp_path):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("1 0 u 1\n1 0 u/p1 0.5 cost=10\n1 0 u/p2 0.5\n")
    r.write_text("1 Q0 u 1 1 s\n1 Q0 u/p1 1 2 s\n1 Q0 u/p2 2 1 s\n")
    with pytest.raises(rankeval.InputError, match=r"1 item has no cost= attribute \('u/p2' \(query '1'\)\)"):
        rankeval.evaluate(q, r, "hTBG")
    ok = rankeval.evaluate(q, r, "hTBG(default_cost=10)")
    assert ok["value"].iloc[0] == pytest.approx(0.64 * 0.77)  # the only individual, reached at time 0


def test_multi_assessor_stopping_probability_and_smax(tmp_path):
    # one relevant individual u (rank 1) and a relevant individual v behind it: v's gain is
    # discounted by u's time, which depends on u's expected words E_u
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text(
        "1 0 u 1\n1 a u/p1 2 cost=100\n1 b u/p1 1 cost=100\n1 a u/p2 0 cost=50\n1 0 v 1\n1 a v/p1 4 cost=10\n"
    )
    r.write_text("1 Q0 u 1 2 s\n1 Q0 u/p1 1 2 s\n1 Q0 u/p2 2 1 s\n1 Q0 v 2 1 s\n1 Q0 v/p1 1 1 s\n")
    value = rankeval.evaluate(q, r, "hTBG(smax=4)@60")["value"].iloc[0]
    # assessors a (grade 2) and b (grade 1) on u/p1 with smax 4: R = 1 - (1 - 2/4)(1 - 1/4) = 0.625
    stop = 1 - (1 - 2 / 4) * (1 - 1 / 4)
    expected_words = 100 + 50 * (1 - stop)
    time_u = 4.4 + 0.64 * (0.018 * expected_words + 7.8)
    gain = 0.64 * 0.77
    assert value == pytest.approx(gain + gain * 2 ** (-time_u / 60), rel=1e-12)


def test_half_life_sweep_computes_the_shared_work_once(monkeypatch):
    import rankeval_tbg

    calls = []
    original = rankeval_tbg.segment_grid

    def counting_grid(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(rankeval_tbg, "segment_grid", counting_grid)
    rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", "hTBG@h=1h")
    one = len(calls)
    calls.clear()
    rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", "hTBG@h=1h hTBG@h=3h hTBG@h=6h")
    # the per-individual times (all the array work) are shared; only the discount differs
    assert one > 0 and len(calls) == one


def test_ideal_with_truncation_chooses_which_posts_to_read(tmp_path):
    # max_docs=2: reading (0.001, 1 word) then (0, 1 word) costs 1 + 0.999 words and has a
    # signal; the R/W order would read the 100-word post first. Found by the property tests.
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text(
        "q1 0 a 1\nq1 0 a/x 0.001 cost=1\nq1 0 a/y 0 cost=1\nq1 0 a/z 1 cost=100\n"
        "q1 0 b 1\nq1 0 b/x 0.5 cost=10\n"
    )
    r.write_text(
        "q1 Q0 a 1 2 s\nq1 Q0 a/x 1 3 s\nq1 Q0 a/y 2 2 s\nq1 Q0 a/z 3 1 s\nq1 Q0 b 2 1 s\nq1 Q0 b/x 1 1 s\n"
    )
    v = _values(
        rankeval.evaluate(q, r, "hTBG(max_docs=2)@60 hTBG(max_docs=2,ideal=true)@60 nhTBG(max_docs=2)@60")
    )
    gain = 0.64 * 0.77
    time = lambda words: 4.4 + 0.64 * (0.018 * words + 7.8)  # noqa: E731
    # the ideal reads b first (10 words) then a (1 + 0.999 words), or a first: take the best
    b_first = gain + gain * 2 ** (-time(10) / 60)
    a_first = gain + gain * 2 ** (-time(1 + 0.999) / 60)
    assert v[("hTBG(max_docs=2,ideal=true)@1m", "q1")] == pytest.approx(max(a_first, b_first), rel=1e-12)
    assert v[("hTBG(max_docs=2)@1m", "q1")] <= v[("hTBG(max_docs=2,ideal=true)@1m", "q1")]
    assert v[("nhTBG(max_docs=2)@1m", "q1")] <= 1.0


# a relevant individual without posts (bob) in a nested collection: as the reference, which
# reads an empty post list as 0 words and no post that can settle the assessment, bob gains
# nothing under the signal rule; in TREC files bob reads his own cost= (issue 24, item 13)
NO_POSTS_QRELS = """\
q1 0 alice 1
q1 0 bob 1 cost=100
q1 0 carol 1
q1 0 alice/p1 1 cost=50
q1 0 carol/p1 1 cost=50
"""
NO_POSTS_RUN = """\
q1 Q0 alice 1 3 r
q1 Q0 bob 2 2 r
q1 Q0 carol 3 1 r
q1 Q0 alice/p1 1 1 r
q1 Q0 carol/p1 1 1 r
"""
G = 0.64 * 0.77
T_ALICE = 4.4 + 0.64 * (0.018 * 50 + 7.8)  # 9.968 s
T_BOB = 4.4 + 0.64 * (0.018 * 100 + 7.8)  # 10.544 s: his own cost=
T_BOB_JSON = 4.4 + 0.64 * 7.8  # 9.392 s: an empty post list is 0 words


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        # bob takes his time but finds nothing: 0.8816 (1.3208 if he gained)
        ("hTBG@60", G * (1 + 2 ** (-(T_ALICE + T_BOB) / 60))),
        ("hTBG(signal=false)@60", G * (1 + 2 ** (-T_ALICE / 60) + 2 ** (-(T_ALICE + T_BOB) / 60))),
        # TBG has no signal rule
        ("TBG@60", G * (1 + 2 ** (-T_ALICE / 60) + 2 ** (-(T_ALICE + T_BOB) / 60))),
    ],
)
def test_a_relevant_individual_without_posts_gains_only_without_the_signal_rule(tmp_path, spec, value):
    (tmp_path / "q").write_text(NO_POSTS_QRELS)
    (tmp_path / "r").write_text(NO_POSTS_RUN)
    frame = rankeval.evaluate(tmp_path / "q", tmp_path / "r", spec)
    assert frame["value"].iloc[0] == pytest.approx(value, rel=1e-12)


def test_an_empty_post_list_in_json_is_read_as_the_reference_reads_it(tmp_path):
    from test_htbg_json_reference import reference_evaluate, score

    truth = {"q1": {"alice": [1, {"p1": [1, 50]}], "bob": [1, {}], "carol": [1, {"p1": [1, 50]}]}}
    prediction = {"q1": {"alice": [3, {"p1": 1}], "bob": [2, {}], "carol": [1, {"p1": 1}]}}
    ours = score(tmp_path, truth, prediction, "hTBG@60")["q1"]
    assert ours == pytest.approx(G * (1 + 2 ** (-(T_ALICE + T_BOB_JSON) / 60)), rel=1e-12)
    assert ours == pytest.approx(reference_evaluate(truth, prediction, 60, None)["q1"], rel=1e-12)
