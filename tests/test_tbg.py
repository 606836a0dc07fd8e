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
