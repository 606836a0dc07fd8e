"""Fuzz, bounded for CI: mutated real files through every reader, ``evaluate``, ``convert`` and
the measure-spec parser; every exception must be a ``RankevalError`` (docs: formats.md, Error messages).

The mutations, seeds and targets are in ``fuzz_strategies.py``; hypothesis supplies the
``random.Random`` they draw from, derandomized so that every CI run tries the same cases.
Shrinking is off (it can take minutes on a failure): the assertion message carries a
standalone reproducer instead. ``bench/fuzz.py`` runs the same targets for as long as it is
given, and shrinks and saves each distinct failure.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fuzz_strategies import DATA, TARGETS, Case, assert_no_crash, run_case, seed_cases
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rankeval import RankevalError, load_registry

EXAMPLES = {  # about 500 cases in all; a case takes a few milliseconds
    "qrels": 60,
    "run": 60,
    "docinfo": 50,
    "htbg_json": 60,
    "evaluate": 100,
    "convert": 50,
    "spec": 80,
    "spec_roundtrip": 60,
}


def fuzz_test(target: str):
    @settings(
        max_examples=EXAMPLES[target],
        derandomize=True,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(rng=st.randoms(use_true_random=False))
    def test(rng) -> None:
        with tempfile.TemporaryDirectory(prefix="rankeval-fuzz-") as scratch:
            assert_no_crash(TARGETS[target](rng), Path(scratch), timeout=60)

    test.__doc__ = f"Fuzz target {target!r}: only RankevalErrors escape."
    return test


test_fuzz_qrels_reader = fuzz_test("qrels")
test_fuzz_run_reader = fuzz_test("run")
test_fuzz_docinfo_reader = fuzz_test("docinfo")
test_fuzz_htbg_json_reader = fuzz_test("htbg_json")
test_fuzz_evaluate = fuzz_test("evaluate")
test_fuzz_convert = fuzz_test("convert")
test_fuzz_spec_parser = fuzz_test("spec")
test_fuzz_spec_round_trip = fuzz_test("spec_roundtrip")


def test_every_target_is_fuzzed():
    assert set(EXAMPLES) == set(TARGETS)


def test_unmutated_seeds_evaluate_cleanly(tmp_path):
    """The seeds are valid input, so what the fuzz finds comes from the mutations."""
    outcomes = {case.target: run_case(case, tmp_path) for case in seed_cases()}
    assert {name: o for name, o in outcomes.items() if o.kind != "clean"} == {}


# ------------------------------------------------------- what the campaigns found (kept fixed)
TRUTH = (DATA / "htbg-toy" / "truth.json").read_bytes()
PREDICTION = (DATA / "htbg-toy" / "prediction.json").read_bytes()
EVALUATE_JSON = 'rankeval.evaluate(d / "truth.json", d / "prediction.json", ["hTBG@h=3"])'
JSON_TO_TREC = 'rankeval.io.convert.json_to_trec(d / "truth.json", d / "prediction.json")'


def _json(prediction: bytes, call: str = EVALUATE_JSON) -> Case:
    return Case("htbg_json", {"truth.json": TRUTH, "prediction.json": prediction}, call)


FOUND = {  # the distinct failures of bench/fuzz.py, cut down by hand
    "json invalid UTF-8": _json(b"\x80"),
    "json UTF-16": _json(PREDICTION.decode().encode("utf-16")),
    "json deep nesting": _json(b"[" * 100_000 + b"]" * 100_000),
    "json integer too large for a float": _json(b'{"q": {"u": [1' + b"0" * 400 + b", {}]}}"),
    "json number over 4300 digits": _json(b"7" * 4321),
    "json_to_trec number over 4300 digits": _json(b"7" * 4321, JSON_TO_TREC),
    "json_to_trec invalid UTF-8": _json(b"\xff", JSON_TO_TREC),
    "qrels sniffed as JSON, invalid UTF-8": Case(
        "qrels", {"q.txt": b"{\x80"}, 'rankeval.Qrels.read(d / "q.txt")'
    ),
    "run of two BOMs": Case("run", {"r.txt": b"\xef\xbb\xbf" * 2}, 'rankeval.Run.read(d / "r.txt")'),
    "qrels of two BOMs": Case("qrels", {"q.txt": b"\xef\xbb\xbf" * 2}, 'rankeval.Qrels.read(d / "q.txt")'),
    "docinfo of two BOMs": Case(
        "docinfo",
        {"q.txt": b"q 0 d 1\n", "i.txt": b"\xef\xbb\xbf" * 2},
        'rankeval.Qrels.read(d / "q.txt").with_docinfo(d / "i.txt")',
    ),
    "ir_measures NumQ@2": Case("spec", {}, "registry.parse_many('NumQ@2')"),
    "ir_measures unknown parameter": Case("spec", {}, "registry.parse_many('NERR8(l=0)')"),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_fuzz_findings(name, tmp_path):
    """Each distinct failure a campaign found: only RankevalErrors escape."""
    assert_no_crash(FOUND[name], tmp_path)


@pytest.mark.parametrize(
    "spec",
    [
        "RPrec",
        "Precision@10",
        "NDCG@10",
        "BPref",
        "hTBG@1e308h",
        "nTBG@1e308h",
        "Compat(p=8e48, p=1e999)",
        "Compat(p=1e999)",
    ],
)
def test_fuzz_found_specs_parse_back(spec):
    """Specs whose measure did not parse back from its ``str()``: rejected, or round trip."""
    registry = load_registry()
    try:
        measure = registry.parse(spec)
    except RankevalError:
        return
    assert registry.parse(str(measure)) == measure
