"""Nested items (docs: formats.md, Nested items): the prefix rule, level=2 sub-queries, deeper nesting.

Expected values are hand calculations written next to each assertion.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rankeval
from rankeval.errors import UsageError

QRELS = """\
1 0 alice 1
1 0 alice/p1 1
1 0 alice/p2 0
1 0 bob 0
1 0 bob/p1 1
1 0 a/b 1
2 0 carol 1
2 0 carol/p1 1
"""
# query 1, top level: bob 2.0, alice 1.5, a/b 1.0 ('a' is no item, so 'a/b' is top level)
# children: alice -> p2 0.9, p1 0.8 ; bob -> p1 0.5 ; query 2 retrieves carol but no child
RUN = """\
1 Q0 bob 1 2.0 r
1 Q0 alice 2 1.5 r
1 Q0 a/b 3 1.0 r
1 Q0 alice/p2 1 0.9 r
1 Q0 alice/p1 2 0.8 r
1 Q0 bob/p1 1 0.5 r
2 Q0 carol 1 1.0 r
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    q = tmp_path / "qrels.txt"
    r = tmp_path / "run.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def values(frame):
    """``{(measure, query id): value}``, the aggregate under query id ``None``."""
    return {
        (m, q if isinstance(q, str) else None): v
        for m, q, v in zip(frame["measure"], frame["query_id"], frame["value"], strict=True)
    }


def test_top_level_ranks_parents_and_opaque_ids(files):
    v = values(rankeval.evaluate(*files, "AP NumRet NumRel"))
    # relevant top-level items of query 1: alice (rank 2) and a/b (rank 3): AP = (1/2 + 2/3) / 2
    assert v[("AP", "1")] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert v[("NumRet", "1")] == 3 and v[("NumRel", "1")] == 2
    assert v[("AP", "2")] == 1.0  # carol at rank 1


def test_level2_children_within_each_parent(files):
    v = values(rankeval.evaluate(*files, "AP(level=2) NumRet(level=2)"))
    # sub-query 1/alice: p2 (non-rel), p1 (rel) -> AP 1/2 ; 1/bob: p1 at rank 1 -> AP 1
    assert v[("AP(level=2)", "1")] == pytest.approx((0.5 + 1.0) / 2)
    # sub-query 2/carol is judged but none of its children is retrieved: 0 (missing-zero rule)
    assert v[("AP(level=2)", "2")] == 0.0
    assert v[("AP(level=2)", None)] == pytest.approx((0.75 + 0.0) / 2)
    assert v[("NumRet(level=2)", "1")] == pytest.approx((2 + 1) / 2)  # mean over sub-queries


def test_level2_without_missing_zero_skips_unretrieved_parents(files):
    v = values(rankeval.evaluate(*files, "AP(level=2)", options=rankeval.EvalOptions(missing_zero=False)))
    assert v[("AP(level=2)", "1")] == pytest.approx(0.75)
    assert ("AP(level=2)", "2") not in v


def test_nesting_disabled_makes_everything_flat(files):
    v = values(rankeval.evaluate(*files, "AP", options=rankeval.EvalOptions(nest_sep=None)))
    # one flat ranking: bob, alice, a/b, alice/p2, alice/p1, bob/p1; relevant: alice (2),
    # a/b (3), alice/p1 (5), bob/p1 (6): AP = (1/2 + 2/3 + 3/5 + 4/6) / 4
    assert v[("AP", "1")] == pytest.approx((1 / 2 + 2 / 3 + 3 / 5 + 4 / 6) / 4)


def test_other_separator(tmp_path):
    q = tmp_path / "q"
    r = tmp_path / "r"
    q.write_text(QRELS.replace("/", "::"))
    r.write_text(RUN.replace("/", "::"))
    v = values(rankeval.evaluate(q, r, "AP(level=2)", options=rankeval.EvalOptions(nest_sep="::")))
    assert v[("AP(level=2)", "1")] == pytest.approx(0.75)


def test_deeper_nesting_follows_the_rule_recursively(tmp_path):
    q = tmp_path / "q"
    r = tmp_path / "r"
    q.write_text("1 0 u 1\n1 0 u/p 1\n1 0 u/p/c1 0\n1 0 u/p/c2 1\n")
    r.write_text("1 Q0 u 1 1 r\n1 Q0 u/p 1 1 r\n1 Q0 u/p/c1 1 2 r\n1 Q0 u/p/c2 2 1 r\n")
    v = values(rankeval.evaluate(q, r, "AP(level=3) AP(level=2) AP"))
    assert v[("AP(level=3)", "1")] == 0.5  # c1 (non-rel) then c2 (rel)
    assert v[("AP(level=2)", "1")] == 1.0  # u/p alone under u
    assert v[("AP", "1")] == 1.0


def test_level2_on_a_flat_run_is_a_clear_error(tmp_path):
    q = tmp_path / "q"
    r = tmp_path / "r"
    q.write_text("1 0 d1 1\n")
    r.write_text("1 Q0 d1 1 1 r\n")
    with pytest.raises(UsageError, match="no judged item of that level"):
        rankeval.evaluate(q, r, "AP(level=2)")


def test_ids_with_separator_but_no_parent_item_stay_opaque(tmp_path):
    # MS MARCO-like ids with '/' (no item equals their prefix): plain flat evaluation
    q = tmp_path / "q"
    r = tmp_path / "r"
    q.write_text("1 0 x/1 1\n1 0 x/2 0\n")
    r.write_text("1 Q0 x/2 1 2 r\n1 Q0 x/1 2 1 r\n")
    v = values(rankeval.evaluate(q, r, "RR NumRet"))
    assert v[("RR", "1")] == 0.5 and v[("NumRet", "1")] == 2
