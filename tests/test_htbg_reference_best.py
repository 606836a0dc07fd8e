"""``hTBG(ideal=true, ideal_rule=reference)`` is the hTBG reference's ``evaluate_best``, also on
the inputs where that value is not the best (issue 24, item 17).

The reference (github sidenver/hTBG, ``best_possible_htbg``) ranks individuals by label,
descending, then by expected words, ascending, and lets every individual with a label > 0
gain. It sorts each individual's posts by the key ``R · P / W``, descending (``-inf`` for
``R = 0``), with Python's stable sort over the truth order, where ``P`` is ``np.prod`` of all
of the individual's word counts: an int64 for JSON integers, which wraps past 2^63, else a
float64, which reaches inf past 1.8e308. Each case below is one way this departs from the R/W
order or from the maximum; its reading (the labels and expected words, in the reference's
order) is worked out by hand in the comment, and the value follows from the formulas. The
same cases are also checked against the plain-loop restatement of
``tests/test_htbg_json_reference.py`` (whose hypothesis test draws such inputs at random),
and against the exact ideal, which is higher on every one of them: the reference's best is
not an upper bound there.
"""

from __future__ import annotations

import pytest
from test_htbg_json_reference import GAIN, _discounted, _time, reference_best, score

H = 60


def _posts(*judgments: tuple[float, float], zeros: int = 0, words: float = 0) -> dict[str, list[float]]:
    """Posts ``p0, p1, ...`` with these ``[R, W]``, then *zeros* posts ``[0, words]``."""
    listed = [list(j) for j in judgments] + [[0, words]] * zeros
    return {f"p{i}": judgment for i, judgment in enumerate(listed)}


# (case, truth of query q, the reference's reading: (label, expected words) in its order,
# whether the exact ideal is higher)
CASES = [
    (
        # a's grade 2 ranks it first although b is quicker to read
        "graded labels: the higher grade first",
        {"a": [2, _posts((1, 400))], "b": [1, _posts((1, 10))]},
        [(2, 400), (1, 10)],
        True,
    ),
    (
        # P = 0: keys 0.5*0/10 = 0 and 1*0/0 = NaN; Python's sort leaves [0, NaN] as it is,
        # so p0 is read first: 10 + 0.5*0 = 10 words (p1 first would read 0)
        "a post of zero words: the key 0/0 is NaN",
        {"a": [1, _posts((0.5, 10), (1, 0))], "b": [1, _posts((1, 12))]},
        [(1, 10), (1, 12)],
        True,
    ),
    (
        # P = 80^10 wraps to a negative int64: the smaller R first, p1 then p0:
        # 80 + 0.9*80 + 0.9*0.1*80*8 = 209.6 words, more than b's 150
        "integer word counts whose product wraps past 2^63",
        {"a": [1, _posts((0.9, 80), (0.1, 80), zeros=8, words=80)], "b": [1, _posts((1, 150))]},
        [(1, 150), (1, 209.6)],
        True,
    ),
    (
        # the same as floats: P = 1.07e19 in float64, the R/W order, p0 then p1:
        # 80 + 0.1*80 + 0.1*0.9*80*8 = 145.6 words, fewer than b's 150 (and the maximum)
        "the same word counts as floats: no wrap",
        {"a": [1, _posts((0.9, 80.0), (0.1, 80.0), zeros=8, words=80.0)], "b": [1, _posts((1, 150))]},
        [(1, 145.6), (1, 150)],
        False,
    ),
    (
        # P = 256^8 = 2^64 wraps to 0: both keys 0, the truth order, p0 then p1:
        # 256 + 0.9*256 + 0.9*0.1*256*6 = 624.64 words, more than b's 450
        # (p1 first: 256 + 0.1*256 + 0.1*0.9*256*6 = 419.84)
        "integer word counts whose product wraps to 0",
        {"a": [1, _posts((0.1, 256), (0.9, 256), zeros=6, words=256)], "b": [1, _posts((1, 450))]},
        [(1, 450), (1, 624.64)],
        True,
    ),
    (
        # P = 400.0^120 = inf: both keys inf, the truth order, p0 then p1:
        # 400 + 0.99*400 = 796 words, more than b's 500
        "float word counts whose product reaches inf",
        {"a": [1, _posts((0.01, 400.0), (1, 400.0), zeros=118, words=400.0)], "b": [1, _posts((1, 500))]},
        [(1, 500), (1, 796)],
        True,
    ),
    (
        # P = 1e200 * 1e200 * 0 = inf * 0 = NaN: every key NaN, the truth order:
        # 1e200 + 0.5*1e200 = 1.5e200 words, and b, reached after them, finds nothing
        "float product inf times a zero word count: every key NaN",
        {"a": [2, _posts((0.5, 1e200), (0.5, 1e200), (1, 0.0))], "b": [1, _posts((1, 10))]},
        [(2, 1.5e200), (1, 10)],
        True,
    ),
]


def _prediction(truth: dict) -> dict:
    return {
        q: {u: [0.5, dict.fromkeys(posts, 0.5)] for u, (_, posts) in ind.items()} for q, ind in truth.items()
    }


@pytest.mark.parametrize(("truth", "reading", "beaten"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reference_rule_is_the_reference_best(tmp_path, truth, reading, beaten):
    truth = {"q": truth}
    gains = [GAIN if label > 0 else 0.0 for label, _ in reading]
    by_hand = _discounted(gains, [_time(label > 0, words) for label, words in reading], H)
    ours = score(tmp_path, truth, _prediction(truth), f"hTBG(max_docs=0,ideal=true,ideal_rule=reference)@{H}")
    assert ours["q"] == pytest.approx(by_hand, rel=1e-12)
    assert ours["q"] == pytest.approx(reference_best(truth, H, None)["q"], rel=1e-12)
    # a ranking of the same individuals and posts does better: the exact ideal
    exact = score(tmp_path, truth, _prediction(truth), f"hTBG(max_docs=0,ideal=true)@{H}")
    assert exact["q"] > ours["q"] + 1e-6 if beaten else exact["q"] == pytest.approx(ours["q"], rel=1e-12)


def test_a_sum_past_the_largest_float_reads_for_ever(tmp_path):
    """Expected words past 1.8e308 are inf, as the reference's float sum: whoever comes after
    is reached at time inf and finds nothing (no NaN from inf - inf)."""
    truth = {"q": {"a": [2, _posts((0, 1e308), (0, 1e308))], "b": [1, _posts((1, 10))]}}
    ours = score(tmp_path, truth, _prediction(truth), f"hTBG(max_docs=0,ideal=true,ideal_rule=reference)@{H}")
    assert ours["q"] == GAIN == reference_best(truth, H, None)["q"]
