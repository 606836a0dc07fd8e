"""CLEF eHealth TAR thresholding measures (docs: tar.md): parity with the official
evaluator's output on the CLEF 2019 DTA runs, hand-computed topics for every measure, a
line-by-line screening oracle on random runs, the run format and its errors."""

from __future__ import annotations

import dataclasses
import gzip
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rankeval_tar import CLEF_NAMES
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError, RankevalWarning, UsageError
from rankeval.measures.plugins import DEFAULT_PLUGINS, load_registry

CLEF = Path(__file__).parent / "data" / "clef-tar"
QRELS = {kind: CLEF / f"full.test.dta.{kind}.2019.qrels.gz" for kind in ("abs", "content")}
RUNS = ("DTA_sheffield-baseline", "DTA_sheffield-Odds_Ratio")

# what the official evaluator prints for task 2 (tar_eval_2018.py 2 qrels run), in its order;
# cg_total, cg_max, cg_threshold, r, loss_e and loss_r are not rankeval measures, and the
# second `threshold` line repeats the first
OFFICIAL = [
    "num_shown",
    "rels_found",
    "num_rels",
    "last_rel",
    "norm_last_rel",
    "threshold",
    "norm_threshold",
    "wss_100",
    "wss_95",
    "recall_threshold",
    *(f"recall@{i}%" for i in range(1, 101)),
    "total_cost",
    "norm_area",
    "ap",
    "loss_er",
]
NOT_OURS = {"cg_total", "cg_max", "cg_threshold", "r", "loss_e", "loss_r"}
# rankeval's names: the evaluator's with tar_ in front (its own are for --compat clef)
ALL_TAR = [
    f"tar_{m}"
    for m in (
        "num_docs",
        "num_rels",
        "num_shown",
        "rels_found",
        "last_rel",
        "norm_last_rel",
        "threshold",
        "norm_threshold",
        "recall_threshold",
        "wss_100",
        "wss_95",
        "ap",
        "norm_area",
        "recall@10%",
        "recall@50%",
        "recall@95%",
        "recall@100%",
        "loss_er",
        "total_cost",
        "reliability@0.5",
        "reliability",
    )
]


def invoke(args):
    return CliRunner().invoke(app, [str(a) for a in args])


def official_lines(path: Path) -> list[tuple[str, str, str]]:
    """(topic, measure, value text) of an official .out file, for the measures rankeval has,
    the repeated `threshold` line dropped."""
    out, seen = [], set()
    with gzip.open(path, "rt") as fh:
        for line in fh.read().splitlines():
            topic, measure, value = line.split("\t")
            if measure in NOT_OURS or (topic, measure) in seen:
                continue
            seen.add((topic, measure))
            out.append((topic, measure, value))
    return out


# ------------------------------------------------------------------------------ parity
@pytest.mark.parametrize("kind", ["abs", "content"])
@pytest.mark.parametrize("run", RUNS)
def test_compat_clef_output_equals_the_official_evaluator(kind, run):
    # every line the evaluator prints for these measures, per topic and ALL, in its order,
    # with its rounding and number formatting
    result = invoke([QRELS[kind], CLEF / f"{run}.gz", "-m", " ".join(OFFICIAL), "--compat", "clef", "-q"])
    assert result.exit_code == 0, result.output
    ours = [tuple(line.split("\t")) for line in result.stdout.splitlines()]
    expected = official_lines(CLEF / "official" / kind / f"{run}.out.gz")
    assert len(expected) == 9 * len(OFFICIAL)  # 8 topics and ALL
    assert ours == expected


def test_compat_clef_values_without_per_query_rows_are_the_all_lines():
    result = invoke(
        [QRELS["abs"], CLEF / f"{RUNS[0]}.gz", "-m", "norm_threshold recall@10% ap", "--compat", "clef"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "ALL\tnorm_threshold\t1.0\nALL\trecall@10.0%\t0.336\nALL\tap\t0.175\n"


def test_default_values_are_unrounded_and_round_to_the_official_ones():
    frame = rankeval.evaluate(
        QRELS["content"], CLEF / f"{RUNS[1]}.gz", ["tar_wss_95", "tar_ap", "tar_recall@10%", "tar_loss_er"]
    )
    official = {
        (t, m): float(v) for t, m, v in official_lines(CLEF / "official" / "content" / f"{RUNS[1]}.out.gz")
    }
    for _, row in frame.iterrows():
        topic = row.query_id if isinstance(row.query_id, str) else "ALL"
        clef_name = row.measure.removeprefix("tar_")
        assert round(row.value, 3) == pytest.approx(official[(topic, clef_name)], abs=1e-12)
    # the aggregate of recall@P% is pooled: Σ found / Σ R, not the mean over topics
    per_topic = frame[(frame.measure == "tar_recall@10.0%") & frame.query_id.notna()].value
    pooled = frame[(frame.measure == "tar_recall@10.0%") & frame.query_id.isna()].value.item()
    assert pooled != pytest.approx(per_topic.mean())


# ------------------------------------------------------------------------------ hand-computed
# t1: N = 8 (d8 is labelled -1, d9 3: both excluded), R = 3 (d1, d3, d6).
#     The run, in file order (scores rise, so score order would reverse it):
#       pos 1 d3 (rel), pos 2 d2, [d9 dropped: label 3], pos 3 d1 (rel, flag 1 = threshold),
#       pos 4 d4, pos 5 d6 (rel), pos 6 d5, pos 7 u1 (not judged: not relevant)
# t2: R = 0: skipped by every TAR measure.
# t3: in the qrels (N = 2, R = 1), not in the run.
# t4: a document twice (g2; its second line carries a flag, dropped with it); flag on the
#     last line; N = 3, R = 2.
# t5: no threshold flag; the run (2 lines) is shorter than N = 4; R = 2.
# t6: every screened line flagged 1 (first flag at 1, last at 3); N = 4, R = 2.
HAND_QRELS = """\
t1 0 d1 1
t1 0 d2 0
t1 0 d3 1
t1 0 d4 0
t1 0 d5 0
t1 0 d6 2
t1 0 d7 0
t1 0 d8 -1
t1 0 d9 3
t1 0 d10 0
t2 0 e1 0
t2 0 e2 -1
t3 0 f1 1
t3 0 f2 0
t4 0 g1 1
t4 0 g2 0
t4 0 g3 1
t5 0 h1 1
t5 0 h2 0
t5 0 h3 0
t5 0 h4 1
t6 0 k1 1
t6 0 k2 0
t6 0 k3 1
t6 0 k4 0
"""
HAND_RUN = """\
t1 0 d3 1 1.0 x
t1 0 d2 2 2.0 x
t1 0 d9 3 3.0 x
t1 1 d1 4 4.0 x
t1 0 d4 5 5.0 x
t1 0 d6 6 6.0 x
t1 0 d5 7 7.0 x
t1 0 u1 8 8.0 x
t2 0 e1 1 1.0 x
t4 0 g2 1 1.0 x
t4 0 g1 2 1.0 x
t4 1 g2 3 1.0 x
t4 1 g3 4 1.0 x
t5 0 h2 1 1.0 x
t5 0 h1 2 1.0 x
t6 1 k1 1 1.0 x
t6 1 k2 2 1.0 x
t6 1 k3 3 1.0 x
t6 0 k4 4 1.0 x
"""
L95 = (3 / 103) ** 2  # t1: (s / (R + 100))² with s = 3 screened


def hand_expected(clef: bool) -> dict[str, dict[str, float]]:
    # t1 -----------------------------------------------------------------------------
    t1 = {
        "num_docs": 8,
        "num_rels": 3,
        "num_shown": 7,
        "rels_found": 3,
        "last_rel": 5,
        "norm_last_rel": 5 / 8,  # last_rel / max(N, n) = 5 / 8
        "threshold": 3,
        "norm_threshold": 3 / 8,
        "recall_threshold": 2 / 3,  # d3, d1 screened of R = 3
        "wss_100": (8 - 5) / 8,  # all 3 found; last at 5
        "wss_95": (8 - 5) / 8 - 0.05,  # round(0.95 * 3) = 3: the 3rd relevant, at 5
        "ap": (1 / 1 + 2 / 3 + 3 / 5) / 3,
        # area: Σ (found before + v/2) = .5 + 1 + 1.5 + 2 + 2.5 + 3 + 3 = 13.5, plus the
        # unshown 8th position at 3: 16.5; best R·N - R²/2 = 24 - 4.5 = 19.5
        "norm_area": 16.5 / 19.5,
        "recall@10.0%": 1 / 3,  # k = round(0.8) = 1: d3
        "recall@50.0%": 2 / 3,  # k = 4: d3, d1
        "recall@95.0%": 3 / 3,  # k = round(7.6) = 8 > n = 7: the whole ranking
        "recall@100.0%": 3 / 3,
        # 3 screened (d3, d2, d1): recall 2/3; effort (100/8)² (3/103)²
        "loss_er": (1 - 2 / 3) ** 2 + (100 / 8) ** 2 * L95,
        # screened: d3 -19, d2 +1, d1 -19; past the threshold d6 (relevant) +20; the one
        # relevant not screened (d6) +20 again
        "total_cost": -19 + 1 - 19 + 20 + 20,
        "reliability@0.5": 1,
        "reliability": 0,  # 2/3 < 0.95
    }
    # t4 (duplicate g2 dropped with its flag): g2, g1 (rel), g3 (rel, flag) -----------
    t4 = {
        "num_docs": 3,
        "num_rels": 2,
        "num_shown": 3,
        "rels_found": 2,
        "last_rel": 3,
        "norm_last_rel": 1.0,
        "threshold": 3,
        "norm_threshold": 1.0,
        "recall_threshold": 1.0,
        "wss_100": 0.0,  # (3 - 3) / 3
        "wss_95": -0.05,  # round(1.9) = 2: the 2nd relevant at 3: 0 - 0.05
        "ap": (1 / 2 + 2 / 3) / 2,
        "norm_area": (0 + 0.5 + 1.5) / (2 * 3 - 2 * 2 / 2),  # Σ (found before + v/2) over R·N - R²/2
        "recall@10.0%": 0.0,  # k = round(0.3) = 0
        "recall@50.0%": 0.5,  # k = round(1.5) = 2 (half to even): g2, g1
        "recall@95.0%": 1.0,
        "recall@100.0%": 1.0,
        "loss_er": 0.0 + (100 / 3) ** 2 * (3 / 102) ** 2,
        "total_cost": 1 - 19 - 19,  # all three screened, nothing missed
        "reliability@0.5": 1,
        "reliability": 1,
    }
    # t5: no flag; h2, h1 (rel); N = 4 ----------------------------------------------
    t5 = {
        "num_docs": 4,
        "num_rels": 2,
        "num_shown": 2,
        "rels_found": 1,
        "last_rel": 2,
        "norm_last_rel": 2 / 4,
        # without a flag the whole ranking is screened: n = 2; the evaluator says N = 4
        "threshold": 4 if clef else 2,
        "norm_threshold": 4 / 4 if clef else 2 / 4,
        "recall_threshold": 1 / 2,
        "wss_100": 0.0,  # h4 never found
        "wss_95": 0.0,  # round(1.9) = 2 > 1 found
        "ap": (1 / 2) / 2,
        # (0) + (0 + .5) = .5 over the 2 lines, then 2 unshown positions at 1: 2.5; best 8 - 2
        "norm_area": 2.5 / 6,
        "recall@10.0%": 0.0,
        "recall@50.0%": 0.5,  # k = 2
        "recall@95.0%": 0.5,
        "recall@100.0%": 0.5,
        "loss_er": (1 - 1 / 2) ** 2 + (100 / 4) ** 2 * (2 / 102) ** 2,
        "total_cost": 1 - 19 + 20,  # h2 +1, h1 -19, h4 missed +20
        "reliability@0.5": 1,
        "reliability": 0,
    }
    # t6: flags on k1, k2, k3 ---------------------------------------------------------
    t6 = {
        "num_docs": 4,
        "num_rels": 2,
        "num_shown": 4,
        "rels_found": 2,
        "last_rel": 3,
        "norm_last_rel": 3 / 4,
        "threshold": 3,  # the last 1
        "norm_threshold": 3 / 4,
        "recall_threshold": 1.0,
        "wss_100": (4 - 3) / 4,
        "wss_95": (4 - 3) / 4 - 0.05,
        "ap": (1 / 1 + 2 / 3) / 2,
        "norm_area": (0.5 + 1 + 1.5 + 2) / (8 - 2),
        "recall@10.0%": 0.0,
        "recall@50.0%": 0.5,
        "recall@95.0%": 1.0,
        "recall@100.0%": 1.0,
        # rankeval: k1..k3 screened (recall 1); the evaluator stops "seeing" at the FIRST 1
        "loss_er": (1 / 2) ** 2 + (100 / 4) ** 2 * (1 / 102) ** 2
        if clef
        else 0.0 + (100 / 4) ** 2 * (3 / 102) ** 2,
        # evaluator: k1 -19, then k3 past the threshold +20, k3 missed +20 again
        "total_cost": -19 + 20 + 20 if clef else -19 + 1 - 19,
        "reliability@0.5": 1,
        "reliability": 1,
    }
    out = {"t1": t1, "t4": t4, "t5": t5, "t6": t6}
    if not clef:  # t3: scored on an empty ranking (rankeval's rule for a missing query)
        out["t3"] = {
            **{k: 0.0 for k in t1},
            "num_docs": 2,
            "num_rels": 1,
            "loss_er": 1.0,  # (1 - 0)² + 0 effort
            "total_cost": 20.0,  # f1 missed
        }
    return out


@pytest.fixture
def hand(tmp_path: Path) -> tuple[Path, Path]:
    q, r = tmp_path / "hand.qrels", tmp_path / "hand.run"
    q.write_text(HAND_QRELS)
    r.write_text(HAND_RUN)
    return q, r


def evaluate(q, r, specs, options=None) -> dict[tuple[str, str], float]:
    """``{(measure, topic): value}``, each measure under the evaluator's name (rankeval's
    without its ``tar_``; with ``compat="clef"`` the results carry the evaluator's names)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        options = dataclasses.replace(options or rankeval.EvalOptions(), on_duplicate="first")
        frame = rankeval.evaluate(q, r, specs, options=options)
    return {
        (m.removeprefix("tar_"), t): v
        for m, t, v in zip(
            frame.measure,
            [t if isinstance(t, str) else None for t in frame.query_id],
            frame.value,
            strict=True,
        )
    }


@pytest.mark.parametrize("clef", [False, True])
def test_hand_computed_topics(hand, clef):
    got = evaluate(*hand, ALL_TAR, options=rankeval.EvalOptions(compat="clef" if clef else None))
    expected = hand_expected(clef)
    for topic, values in expected.items():
        for measure, value in values.items():
            if clef:  # as printed: 3 decimals below 1, 0 decimals from 1 on (recall: 3)
                r = round(value, 3) if (value < 1 or measure.startswith("recall")) else round(value, 0)
                assert got[(measure, topic)] == r, (measure, topic)
            else:
                assert got[(measure, topic)] == pytest.approx(value, abs=1e-12), (measure, topic)
    # R = 0 (t2), and for the evaluator a topic not in the run (t3): skipped
    skipped = ["t2", "t3"] if clef else ["t2"]
    for measure in {m for m, _ in got}:
        for topic in skipped:
            assert math.isnan(got[(measure, topic)])


def test_hand_computed_aggregates(hand):
    got = evaluate(*hand, ALL_TAR)
    exp = hand_expected(False)
    topics = ["t1", "t3", "t4", "t5", "t6"]  # t2 (R = 0) is left out
    for measure in ("num_docs", "num_rels", "num_shown", "rels_found"):  # counts: summed
        assert got[(measure, None)] == sum(exp[t][measure] for t in topics)
    for measure in ("norm_threshold", "recall_threshold", "ap", "total_cost", "reliability"):
        assert got[(measure, None)] == pytest.approx(np.mean([exp[t][measure] for t in topics]))
    # recall@50%: pooled, Σ found / Σ R = (2 + 0 + 1 + 1 + 1) / (3 + 1 + 2 + 2 + 2)
    assert got[("recall@50.0%", None)] == pytest.approx(5 / 10)
    # --no-missing-zero leaves t3 out
    got = evaluate(
        *hand, ["tar_num_docs", "tar_recall@50%"], options=rankeval.EvalOptions(missing_zero=False)
    )
    assert got[("num_docs", None)] == 8 + 3 + 4 + 4
    assert got[("recall@50.0%", None)] == pytest.approx(5 / 9)


def test_hand_computed_compat_aggregates(hand):
    # the evaluator: mean over the topics it scored (t1, t4, t5, t6) of the values it kept —
    # norm_threshold rounded per topic first — then printed with its rounding
    got = evaluate(
        *hand,
        ["norm_threshold", "wss_95", "recall@50%", "num_docs", "threshold"],
        options=rankeval.EvalOptions(compat="clef"),
    )
    mean = (round(3 / 8, 3) + 1.0 + 1.0 + 0.75) / 4  # 0.375 + 1 + 1 + .75 = 3.125 / 4
    assert got[("norm_threshold", None)] == round(mean, 3) == 0.781
    wss95 = ((8 - 5) / 8 - 0.05, (3 - 3) / 3 - 0.05, 0, (4 - 3) / 4 - 0.05)  # t1, t4, t5, t6
    assert got[("wss_95", None)] == round((((wss95[0] + wss95[1]) + wss95[2]) + wss95[3]) / 4, 3) == 0.119
    assert got[("recall@50.0%", None)] == round((2 + 1 + 1 + 1) / 4 / ((3 + 2 + 2 + 2) / 4), 3) == 0.556
    assert got[("num_docs", None)] == 8 + 3 + 4 + 4
    assert got[("threshold", None)] == round((3 + 3 + 4 + 3) / 4, 0) == 3.0


def test_hand_computed_cli_clef_format(hand):
    q, r = hand
    result = invoke([q, r, "-m", "last_rel threshold norm_threshold total_cost", "--compat", "clef", "-q"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # ints as ints, floats as Python prints them, ALL last; skipped topics (t2, t3) absent
    assert lines[:4] == [
        "t1\tlast_rel\t5",
        "t1\tthreshold\t3",
        "t1\tnorm_threshold\t0.375",
        "t1\ttotal_cost\t3.0",
    ]
    assert {line.split("\t")[0] for line in lines} == {"t1", "t4", "t5", "t6", "ALL"}
    assert lines[-4:] == [
        "ALL\tlast_rel\t3.0",  # mean (5 + 3 + 2 + 3) / 4 = 3.25: from 1 on, 0 decimals
        "ALL\tthreshold\t3.0",  # (3 + 3 + 4 + 3) / 4 = 3.25
        "ALL\tnorm_threshold\t0.781",  # (0.375 + 1 + 1 + 0.75) / 4 = 0.78125
        "ALL\ttotal_cost\t-2.75",  # (3 - 37 + 2 + 21) / 4: below 1, so 3 decimals
    ]
    assert result.stderr.splitlines() == [
        "rankeval: warning: tied scores of different grades at the ranks the measures read: hand.run 3 queries, "
        "3 groups, 10 pairs; the values depend on the tie rule (trec_eval; see --ties, and `rankeval ties` for "
        "their range)",
        "rankeval: warning: run hand.run: TAR measures: 1 topic(s) without relevant documents "
        "(R = 0) skipped: t2; 1 topic(s) not in the run skipped (as the CLEF evaluator): t3"
    ]


def test_file_order_not_score_order(tmp_path):
    # the same lines with scores that rank them the other way round: nothing changes
    q = tmp_path / "q"
    q.write_text(HAND_QRELS)
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    r1.write_text(HAND_RUN)
    r2.write_text(
        "".join(line.rsplit(" ", 2)[0] + f" {-i}.0 x\n" for i, line in enumerate(HAND_RUN.splitlines()))
    )
    a, b = evaluate(q, r1, ALL_TAR), evaluate(q, r2, ALL_TAR)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], nan_ok=True)


def test_recall_at_percent_past_the_end_of_a_short_run(tmp_path):
    # N = 250 judged documents, R = 2; the run has 11 lines, relevant at 3 and 11.
    # recall@100%: k = 250 > 11. rankeval counts the whole ranking: 2/2. The evaluator only
    # looks at positions round(2.5 i): ..., 8, 10, 12, ...; the last one the run reaches is
    # 10, so it keeps the count at 10: 1/2.
    docs = [f"p{i}" for i in range(250)]
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"t 0 {d} {1 if i in (2, 10) else 0}\n" for i, d in enumerate(docs)))
    r.write_text("".join(f"t 0 {d} {i + 1} 0 x\n" for i, d in enumerate(docs[:11])))
    assert evaluate(q, r, ["tar_recall@100%"])[("recall@100.0%", "t")] == 1.0
    assert (
        evaluate(q, r, ["recall@100%"], options=rankeval.EvalOptions(compat="clef"))[("recall@100.0%", "t")]
        == 0.5
    )
    # recall@4%: k = round(10.0) = 10 (1/2); recall@5%: k = round(12.5) = 12 > 11
    assert (
        evaluate(q, r, ["recall@4% recall@5%"], options=rankeval.EvalOptions(compat="clef"))[
            ("recall@5.0%", "t")
        ]
        == 0.5
    )
    assert evaluate(q, r, ["tar_recall@5%"])[("recall@5.0%", "t")] == 1.0


# ------------------------------------------------------------------------------ run format
def test_2017_interaction_codes(tmp_path):
    # AF/NF screened, NS not shown: the threshold is the last AF/NF line (position 3)
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("t 0 a 1\nt 0 b 0\nt 0 c 0\nt 0 d 1\nt 0 e 0\n")
    r.write_text("t AF a 1 0 x\nt NF b 2 0 x\nt AF c 3 0 x\nt NS d 4 0 x\nt NS e 5 0 x\n")
    got = evaluate(q, r, ["tar_threshold", "tar_norm_threshold", "tar_recall_threshold", "tar_total_cost"])
    assert got[("threshold", "t")] == 3
    assert got[("norm_threshold", "t")] == pytest.approx(3 / 5)
    assert got[("recall_threshold", "t")] == pytest.approx(1 / 2)
    # a -19, b +1, c +1; d past the threshold +20, and missed +20
    assert got[("total_cost", "t")] == -19 + 1 + 1 + 20 + 20
    clef = evaluate(q, r, ["total_cost"], options=rankeval.EvalOptions(compat="clef"))
    assert clef[("total_cost", "t")] == 23.0  # the same: 2017 runs have one screened prefix


def test_q0_is_no_flag(tmp_path):
    # a plain TREC run: nothing flagged, the whole ranking is screened
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("t 0 a 1\nt 0 b 0\nt 0 c 1\n")
    r.write_text("t Q0 a 1 3 x\nt Q0 b 2 2 x\n")
    got = evaluate(q, r, ["tar_threshold", "tar_recall_threshold"])
    assert got[("threshold", "t")] == 2
    assert got[("recall_threshold", "t")] == 0.5


def test_a_duplicate_is_an_error_unless_on_duplicate_first(hand):
    q, r = hand
    result = invoke([q, r, "-m", "tar_threshold"])
    assert result.exit_code == 1
    assert "hand.run:12" in result.output and "duplicate document 'g2'" in result.output
    assert "first on line 10" in result.output
    # --compat clef keeps the first line, as the evaluator does
    result = invoke([q, r, "-m", "threshold", "--compat", "clef", "-q"])
    assert result.exit_code == 0, result.output
    assert "t4\tthreshold\t3" in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("t1 X d1 4 4.0 x", "bad threshold flag 'X' in column 2"),
        ("t1 2 d1 4 4.0 x", "bad threshold flag '2' in column 2"),
        ("t1 AF d1 4 4.0 x", "column 2 mixes CLEF TAR 2018-2019 threshold flags (0/1) with 2017"),
    ],
)
def test_bad_threshold_flag_names_file_and_line(hand, line, message):
    q, r = hand
    lines = HAND_RUN.splitlines()
    lines[3] = line  # line 4 of the file
    r.write_text("\n".join(lines) + "\n")
    result = invoke([q, r, "-m", "tar_threshold", "--on-duplicate", "first"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"hand.run:4: {message}" in result.output
    assert line in result.output  # the offending text
    # other measures do not read column 2
    assert invoke([q, r, "-m", "AP", "--on-duplicate", "first"]).exit_code == 0
    with pytest.raises(InputError) as info:
        evaluate(q, r, ["tar_norm_threshold"])
    assert info.value.line == 4


def test_flag_styles_mixed_across_blocks_are_an_error(tmp_path):
    """A run whose topics use 0/1 flags in one block and 2017 codes in another: read in
    blocks, each block is consistent, and the check over all blocks names the first line of
    the later style; read whole, the line check names the same line."""
    q, r = tmp_path / "mixed.qrels", tmp_path / "mixed.run"
    q.write_text("".join(f"t{t} 0 d{i} {i % 2}\n" for t in (1, 2) for i in range(30)))
    lines = [f"t1 {int(i == 5)} d{i} {i + 1} {30 - i}.0 x\n" for i in range(30)]
    lines += [f"t2 {'AF' if i < 5 else 'NS'} d{i} {i + 1} {30 - i}.0 x\n" for i in range(30)]
    r.write_text("".join(lines))
    for block_size in (None, 200):  # one block; then t1 and t2 in different blocks
        with pytest.raises(InputError, match="column 2 mixes CLEF TAR 2018-2019") as info:
            rankeval.evaluate(q, r, ["tar_threshold", "tar_recall_threshold"], jobs=1, block_size=block_size)
        assert info.value.line == 31, block_size  # t2's first line, the first 2017 code
        assert "mixed.run" in str(info.value)
    consistent = "".join(line.replace(" AF ", " 1 ").replace(" NS ", " 0 ") for line in lines)
    r.write_text(consistent)
    whole = rankeval.evaluate(q, r, ["tar_threshold"], jobs=1)
    pd.testing.assert_frame_equal(whole, rankeval.evaluate(q, r, ["tar_threshold"], jobs=1, block_size=200))


def test_skipped_topics_are_reported(hand):
    q, r = hand
    with pytest.warns(
        RankevalWarning, match=r"1 topic\(s\) without relevant documents \(R = 0\) skipped: t2"
    ):
        rankeval.evaluate(q, r, ["tar_threshold"], options=rankeval.EvalOptions(on_duplicate="first"))
    with pytest.warns(RankevalWarning, match=r"not in the run skipped \(as the CLEF evaluator\): t3"):
        rankeval.evaluate(
            q, r, ["threshold"], options=rankeval.EvalOptions(on_duplicate="first", compat="clef")
        )
    result = invoke([q, r, "-m", "tar_threshold", "--on-duplicate", "first"])
    assert "rankeval: warning: run hand.run: TAR measures: 1 topic(s) without relevant" in result.output


def test_trec_format_prints_ranks_without_decimals(hand):
    q, r = hand
    result = invoke([q, r, "-m", "tar_last_rel tar_num_docs", "-q", "--on-duplicate", "first"])
    rows = {tuple(line.split()[:2]): line.split()[2] for line in result.stdout.splitlines()}
    assert rows[("tar_last_rel", "t1")] == "5"
    assert rows[("tar_last_rel", "all")] == "2.6000"  # mean (5 + 0 + 3 + 2 + 3) / 5
    assert rows[("tar_num_docs", "all")] == "21"


# ------------------------------------------------------------------------------ specs, plugin
@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("tar_recall@10%", "tar_recall@10.0%"),
        ("tar_recall@10.0%", "tar_recall@10.0%"),
        ("tar_recall@12.5%", "tar_recall@12.5%"),
        ("tar_recall@10", "tar_recall@10.0%"),
        ("TAR_Recall@10%", "tar_recall@10.0%"),
        ("tar_recall(compat=clef)@5%", "tar_recall(compat=clef)@5.0%"),
        ("tar_reliability@95%", "tar_reliability@0.95"),  # written: printed, though the default
        ("tar_reliability@0.9", "tar_reliability@0.9"),
        ("tar_recall_threshold(est=ht)", "tar_recall_threshold(est=ht)"),
        ("tar_R_est(est=hh)", "tar_R_est(est=hh)"),
        ("tar_r_est", "tar_R_est"),
        ("tar_norm_threshold(compat=clef)", "tar_norm_threshold(compat=clef)"),
        ("tar_wss_95", "tar_wss_95"),
    ],
)
def test_spec_round_trip(spec, canonical):
    registry = load_registry(entry_points=False)
    m = registry.parse(spec)
    assert str(m) == canonical
    assert registry.parse(str(m)) == m


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tar_recall", "needs a percentage 0 < P <= 100"),
        ("tar_recall@0", "bad value for 'p': 0 is outside (0, 100]"),
        ("tar_recall@101%", "bad value for 'p': 101% is outside (0, 100]"),
        ("tar_reliability@2", r"bad value for 'r': 2 is outside \[0, 1]"),
        ("tar_threshold(compat=trec)", "expected one of none, clef"),
        ("tar_recall_threshold(est=mc)", "expected one of exact, ht, hh"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        load_registry(entry_points=False).parse(spec)


def test_plugin_is_built_in_and_lists_its_measures():
    assert DEFAULT_PLUGINS.index("rankeval_tar") < DEFAULT_PLUGINS.index("rankeval_irmeasures")
    registry = load_registry(entry_points=False)
    names = {n for n, e in registry.measures.items() if e.plugin == "rankeval_tar"}
    assert len(names) == 18
    assert all(n.startswith("tar_") for n in names)
    assert {"tar_num_docs", "tar_norm_threshold", "tar_recall", "tar_reliability", "tar_R_est"} <= names
    result = invoke(["measures"])
    assert "tar_recall@p  [plugin: rankeval_tar]" in result.output


# ------------------------------------------------------------------------------ names
def test_rankeval_names_are_the_evaluators_with_tar_in_front():
    registry = load_registry(entry_points=False)
    ours = {n for n, e in registry.measures.items() if e.plugin == "rankeval_tar"}
    assert len(CLEF_NAMES) == 16
    assert all(name == f"tar_{clef}" for clef, name in CLEF_NAMES.items())
    assert set(CLEF_NAMES.values()) <= ours
    assert ours - set(CLEF_NAMES.values()) == {"tar_reliability", "tar_R_est"}  # not the evaluator's


def test_the_docs_table_of_names_is_the_plugins():
    text = (Path(__file__).parents[1] / "docs" / "tar.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`[^`]+`|—) \| \[`([^`@]+)[^`]*`\]", text, re.MULTILINE)
    documented = {clef.strip("`").split("@")[0]: ours for clef, ours in rows if clef != "—"}
    assert documented == CLEF_NAMES
    registry = load_registry(entry_points=False)
    assert {ours for _, ours in rows} == {
        n for n, e in registry.measures.items() if e.plugin == "rankeval_tar"
    }


@pytest.mark.parametrize("clef", sorted(set(CLEF_NAMES) - {"ap", "recall"}))
def test_a_clef_name_outside_compat_clef_says_what_to_write(clef):
    registry = load_registry(entry_points=False)
    for spec in (clef, f"{clef}(compat=clef)"):
        with pytest.raises(UsageError) as info:
            registry.parse(spec)
        suggested = f"tar_{spec}"  # the spec as written, with rankeval's name: and it works
        hint = f"unknown measure {clef!r}; did you mean {suggested} (or --compat clef for CLEF's names)?"
        assert hint in str(info.value)
        assert str(registry.parse(suggested)).startswith(f"tar_{clef}")
    with pytest.raises(UsageError, match=re.escape(f"did you mean tar_{clef} ")):
        registry.parse(clef.upper())


def test_ap_and_recall_at_k_are_other_measures_outside_compat_clef():
    registry = load_registry(entry_points=False)
    assert type(registry.parse("ap")).__module__ == "rankeval_trec.classic"
    assert str(registry.parse("ap")) == "AP"
    assert str(registry.parse("recall@10")) == "R@10"
    # under --compat clef, the evaluator's names, spelled as it spells them, come first
    aliases = registry.dialects["clef"][1].aliases
    assert str(registry.parse("ap", aliases=aliases)) == "tar_ap"
    assert str(registry.parse("AP", aliases=aliases)) == "AP"
    assert str(registry.parse("recall@10%", aliases=aliases)) == "tar_recall@10.0%"
    assert str(registry.parse("wss_95(compat=clef)", aliases=aliases)) == "tar_wss_95(compat=clef)"


def test_compat_clef_results_carry_the_evaluators_names(hand):
    specs = "tar_ap ap tar_recall@10% tar_reliability@0.5 tar_recall_threshold(est=ht) AP"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        frame = rankeval.evaluate(
            *hand, specs, options=rankeval.EvalOptions(compat="clef", on_duplicate="first")
        )
        plain = rankeval.evaluate(
            *hand, specs.replace(" ap ", " "), options=rankeval.EvalOptions(on_duplicate="first")
        )
    # a measure the evaluator lacks, or with a parameter it lacks, keeps rankeval's name
    assert list(dict.fromkeys(frame.measure)) == [
        "ap",
        "recall@10.0%",
        "tar_reliability@0.5",
        "tar_recall_threshold(est=ht)",
        "AP",
    ]
    assert list(dict.fromkeys(plain.measure)) == [
        "tar_ap",
        "tar_recall@10.0%",
        "tar_reliability@0.5",
        "tar_recall_threshold(est=ht)",
        "AP",
    ]


def test_names_clef_prints_the_evaluators_names_of_unrounded_values(hand):
    registry = load_registry(entry_points=False)
    measures = registry.parse_many("tar_wss_95 tar_recall@50% tar_wss_95(compat=clef) nDCG")
    assert registry.measure_names(measures, "clef") == {
        "tar_wss_95": "wss_95",
        "tar_recall@50.0%": "recall@50.0%",
        "tar_wss_95(compat=clef)": "wss_95",
        "nDCG": "nDCG",
    }
    q, r = hand
    result = invoke([q, r, "-m", "tar_wss_95 tar_recall@50%", "--names", "clef", "--on-duplicate", "first"])
    assert result.exit_code == 0, result.output
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["wss_95", "all", f"{np.mean([(8 - 5) / 8 - 0.05, 0, -0.05, 0, (4 - 3) / 4 - 0.05]):.4f}"],
        ["recall@50.0%", "all", "0.5000"],
    ]


def test_cli_clef_names_only_with_compat_clef(hand):
    q, r = hand
    result = invoke([q, r, "-m", "wss_95", "--on-duplicate", "first"])
    assert result.exit_code == 2
    assert "did you mean tar_wss_95 (or --compat clef for CLEF's names)?" in result.output
    result = invoke([q, r, "-m", "wss_95 ap", "--compat", "clef"])
    assert result.exit_code == 0, result.output
    ap = ((1 + 2 / 3 + 3 / 5) / 3 + (1 / 2 + 2 / 3) / 2 + (1 / 2) / 2 + (1 + 2 / 3) / 2) / 4  # t1, t4, t5, t6
    assert result.stdout.splitlines() == ["ALL\twss_95\t0.119", f"ALL\tap\t{round(ap, 3)}"]


def test_compat_option_errors(hand):
    q, r = hand
    result = invoke([q, r, "-m", "AP", "--compat", "clef"])
    assert result.exit_code == 2
    assert "none of the measures AP has a compat mode" in result.output
    result = invoke([q, r, "-m", "tar_threshold", "--compat", "trec"])
    assert result.exit_code == 2
    assert "unknown --compat 'trec'; expected one of none, trec_eval, clef" in result.output
    # --compat clef with another format: the values are the evaluator's, the layout trec
    result = invoke([q, r, "-m", "norm_threshold", "--compat", "clef", "-f", "trec", "-p", "3"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].split() == ["norm_threshold", "all", "0.781"]


# ------------------------------------------------------------------------------ oracle
def screen_like_the_evaluator(qrels, lines, clef):
    """Per topic, the values of every TAR measure, by screening the lines one at a time —
    an independent, line-by-line reading of the evaluator's rules (tar_eval_2018.py, task 2);
    with ``clef`` its quirks, without them rankeval's reading (threshold = last 1 for every
    measure, the whole ranking without a flag, missing topics on an empty ranking)."""
    topics = list(dict.fromkeys(t for t, _, _ in lines))
    if not clef:
        topics = sorted(qrels)
    out = {}
    for topic in topics:
        labels = qrels.get(topic, {})
        N = sum(1 for v in labels.values() if v != -1 and v <= 2)
        R = sum(1 for v in labels.values() if v in (1, 2))
        if R == 0:
            continue
        ranking, docs_seen = [], set()
        for t, flag, doc in lines:
            if t != topic or doc in docs_seen:
                continue
            docs_seen.add(doc)
            label = labels.get(doc, 0)
            if label < 3:
                ranking.append((label in (1, 2), flag == "1"))
        n = len(ranking)
        r95 = round(R * 0.95)
        grid = [round(N * i / 100) for i in range(1, 101)]
        last_flag = max([i + 1 for i, (_, f) in enumerate(ranking) if f], default=0)
        end = last_flag or (N if clef else n)  # the threshold
        found = last_rel = l95 = 0
        ap = area = cost = 0.0
        seeing, seen, seen_found = True, 0, 0
        cg_at_threshold = 0
        cgat = [0] * 100
        for pos, (rel, flag) in enumerate(ranking, start=1):
            area += found + (0.5 if rel else 0.0)
            if rel:
                if found < r95:
                    l95 = pos
                found += 1
                last_rel = pos
                ap += found / pos
            screened = seeing if clef else pos <= end
            if screened:
                seen += 1
                seen_found += rel
                cost += 1.0 - 20.0 * rel
            else:
                cost += 20.0 * rel
            if clef and flag:
                seeing = False
            if pos == end:
                cg_at_threshold = found
            if pos in grid:
                for j in range(grid.index(pos), 100):
                    cgat[j] = found
        if clef and end == N:
            cg_at_threshold = found
        if not clef:
            cgat = [sum(1 for p, (r, _) in enumerate(ranking, 1) if r and p <= min(k, n)) for k in grid]
        cost += 20.0 * (R - seen_found)
        docs = max(N, n)
        shown = n
        if n < N:
            area += (N - n) * found
        best_docs = n if n > N else N
        best = R * best_docs - R * R / 2.0
        recall = seen_found / R
        effort_docs = max(N, seen)
        values = {
            "num_docs": N,
            "num_rels": R,
            "num_shown": shown,
            "rels_found": found,
            "last_rel": last_rel,
            "norm_last_rel": last_rel / docs,
            "threshold": end,
            "norm_threshold": end / docs,
            "recall_threshold": cg_at_threshold / R,
            "wss_100": 0 if found < R else (docs - last_rel) / docs,
            "wss_95": 0 if found < r95 else (docs - l95) / docs - 0.05,
            "ap": ap / R,
            "norm_area": area / best if best > 0 else 0.0,
            "loss_er": (1 - recall) ** 2 + (100 / effort_docs) ** 2 * (seen / (R + 100)) ** 2,
            "total_cost": cost,
            "_cgat": cgat,
        }
        out[topic] = values
    return out


def printed(value, measure):
    """The evaluator's printing of a kept value."""
    if isinstance(value, int):
        return value
    if measure == "recall_threshold":
        return round(value, 3)
    return round(value, 3) if value < 1 else round(value, 0)


# the evaluator's names of the measures without a parameter
SIMPLE = [m.removeprefix("tar_") for m in ALL_TAR if not m.startswith(("tar_recall@", "tar_reliability"))]
PERCENTS = (1, 7, 10, 33, 50, 95, 100)


@st.composite
def tar_collections(draw):
    """A few topics with CLEF labels (-1, 0, 1, 2 and 3-4), runs in file order with repeated
    and unjudged documents, threshold flags anywhere (or none), topics missing from the run."""
    topics = [f"T{i}" for i in range(draw(st.integers(1, 4)))]
    qrels, lines = {}, []
    for topic in draw(st.permutations(topics)):
        docs = [f"{topic}d{i}" for i in range(draw(st.integers(1, 30)))]
        qrels[topic] = {d: draw(st.sampled_from([-1, 0, 0, 0, 0, 1, 1, 2, 3, 4])) for d in docs}
        if draw(st.integers(0, 5)) == 0:
            continue  # not in the run
        pool = [*docs, f"{topic}u0", f"{topic}u1"]
        order = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=40))
        flags = draw(st.lists(st.sampled_from("0000000001"), min_size=len(order), max_size=len(order)))
        lines += [(topic, f, d) for d, f in zip(order, flags, strict=True)]
    if not lines:  # an empty run file is an input error; keep one retrieved document
        lines.append((topics[0], "0", f"{topics[0]}u0"))
    return qrels, lines


def write_collection(tmp_path, qrels, lines):
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"{t} 0 {d} {v}\n" for t, docs in qrels.items() for d, v in docs.items()))
    r.write_text("".join(f"{t} {f} {d} {i + 1} {len(lines) - i} x\n" for i, (t, f, d) in enumerate(lines)))
    return q, r


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=tar_collections())
def test_vectorised_measures_equal_line_by_line_screening(tmp_path, data):
    qrels, lines = data
    q, r = write_collection(tmp_path, qrels, lines)
    for clef in (False, True):
        prefix = "" if clef else "tar_"  # the evaluator's names under compat clef, else rankeval's
        specs = [prefix + m for m in SIMPLE] + [f"{prefix}recall@{p}%" for p in PERCENTS]
        expected = screen_like_the_evaluator(qrels, lines, clef)
        got = evaluate(q, r, specs, options=rankeval.EvalOptions(compat="clef" if clef else None))
        for topic in qrels:
            for measure in SIMPLE:
                value = got[(measure, topic)]
                if topic not in expected:
                    assert math.isnan(value), (clef, topic, measure)
                elif clef:
                    assert value == printed(expected[topic][measure], measure), (topic, measure)
                else:
                    assert value == pytest.approx(expected[topic][measure], abs=1e-12), (topic, measure)
            for p in PERCENTS:
                value = got[(f"recall@{p}.0%", topic)]
                if topic in expected:
                    want = expected[topic]["_cgat"][p - 1] / expected[topic]["num_rels"]
                    assert value == (round(want, 3) if clef else pytest.approx(want)), (topic, p)
        # aggregates: in the evaluator's topic order (file order), sums and means as it adds
        scored = list(expected) if clef else [t for t in sorted(qrels) if t in expected]
        if not scored:
            continue
        for measure in SIMPLE:
            values = [expected[t][measure] for t in scored]
            if measure in ("num_docs", "num_rels", "num_shown", "rels_found"):
                want = sum(values)
            else:
                if clef and measure in ("norm_last_rel", "norm_threshold", "norm_area"):
                    values = [round(v, 3) for v in values]  # kept rounded per topic
                total = 0.0
                for v in values:
                    total = total + v
                want = total / float(len(values))
            value = got[(measure, None)]
            if clef:
                want = printed(want if isinstance(want, int) else float(want), measure)
                assert value == want, measure
            else:
                assert value == pytest.approx(want, abs=1e-9), measure
        for p in PERCENTS:
            num = sum(expected[t]["_cgat"][p - 1] for t in scored)
            den = sum(expected[t]["num_rels"] for t in scored)
            value = got[(f"recall@{p}.0%", None)]
            if clef:
                assert value == round((num / len(scored)) / (den / len(scored)), 3)
            else:
                assert value == pytest.approx(num / den)
