"""rankeval.meta.repro: reproducibility and replicability measures equal repro_eval 0.5's.

The oracle is repro_eval itself (``tests/data/repro/make_expected.py``, run live when
repro_eval is installed); its values on the bundled inputs are stored in
``tests/data/repro/expected.json`` so that the comparison runs without it. KTU and RBO are
also checked against plain loops of their definitions on small hand-made rankings.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rankeval.errors import InputError, RankevalError, SpecError, UsageError
from rankeval.meta.repro import REPRO_EVAL_MEASURES, Reproduction, reproducibility

DATA = Path(__file__).parent / "data" / "repro"
EXPECTED = json.loads((DATA / "expected.json").read_text())
#: repro_eval's measure names -> rankeval specs
NAMES = dict(zip(EXPECTED["measures"], REPRO_EVAL_MEASURES, strict=True))
ORIG = {"baseline": DATA / "orig_b.run.gz", "advanced": DATA / "orig_a.run.gz"}
RPD = {"baseline": DATA / "rpd_b.run.gz", "advanced": DATA / "rpd_a.run.gz"}
RPL = {"baseline": DATA / "rpl_b.run.gz", "advanced": DATA / "rpl_a.run.gz"}
TOL = 1e-9


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_expected", DATA / "make_expected.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def computed() -> dict[str, Reproduction]:
    qrels = DATA / "orig.qrels"
    return {
        "reproducibility": reproducibility(qrels, ORIG, RPD),
        "replicability": reproducibility(qrels, ORIG, RPL, reproduced_qrels=DATA / "rpl.qrels"),
        "identical": reproducibility(qrels, ORIG, ORIG),
    }


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= TOL


def _ours(result: Reproduction, what: str, role: str | None) -> dict[str, float]:
    """One statistic of *result* keyed as repro_eval keys it (topics, or its measure names)."""
    if what in ("KTU", "RBO"):
        assert role is not None
        ordering = result.runs[role].ordering
        assert ordering is not None
        values = ordering.ktu if what == "KTU" else ordering.rbo
        return dict(zip(ordering.topics, map(float, values), strict=True))
    if role is None:
        per = result.er if what == "ER" else result.delta_ri
    else:
        per = {"RMSE": result.runs[role].rmse, "nRMSE": result.runs[role].nrmse}.get(
            what, result.runs[role].p_value
        )
    assert per is not None
    return {name: per[spec] for name, spec in NAMES.items()}


# every statistic repro_eval reports, per kind of reproduction: (kind, what, run or None)
STATISTICS = [
    *(("reproducibility", w, r) for w in ("KTU", "RBO", "RMSE", "nRMSE", "p_value") for r in ORIG),
    ("reproducibility", "ER", None),
    ("reproducibility", "DeltaRI", None),
    *(("replicability", "p_value", r) for r in ORIG),
    ("replicability", "ER", None),
    ("replicability", "DeltaRI", None),
    *(("identical", "p_value", r) for r in ORIG),
]


@pytest.mark.parametrize(("kind", "what", "role"), STATISTICS)
def test_equals_repro_eval_stored(
    computed: dict[str, Reproduction], kind: str, what: str, role: str | None
) -> None:
    """rankeval's values equal repro_eval 0.5's (stored in expected.json) to 1e-9, for every
    statistic, run, topic and measure of repro_eval's default measure set."""
    stored = EXPECTED[kind][what]
    expected: dict[str, float] = stored if role is None else stored[role]
    ours = _ours(computed[kind], what, role)
    assert sorted(ours) == sorted(expected)
    bad = {k: (ours[k], expected[k]) for k in expected if not _close(ours[k], expected[k])}
    assert not bad


def test_repro_eval_live_oracle() -> None:
    """repro_eval 0.5 itself, run on the bundled inputs, gives the stored values (so the
    comparison above is with repro_eval, not with numbers copied once), and its default
    measures are REPRO_EVAL_MEASURES."""
    pytest.importorskip("repro_eval")
    import warnings

    from repro_eval.util import load_measures

    from rankeval.engine.prepare import prepare

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its own zero divisions (ER of RR)
        live = json.loads(json.dumps(_generator().oracle(DATA), default=float))
    assert live.keys() == EXPECTED.keys()
    for kind, whats in EXPECTED.items():
        if kind in ("repro_eval", "measures"):
            assert live[kind] == whats
            continue
        for what, per in whats.items():
            flat = pd.json_normalize(per, sep="|").iloc[0]
            got = pd.json_normalize(live[kind][what], sep="|").iloc[0]
            assert sorted(got.index) == sorted(flat.index)
            assert all(_close(float(got[k]), float(flat[k])) for k in flat.index), (kind, what)
    qrels = DATA / "orig.qrels"
    assert (
        prepare(qrels, load_measures(), None, None).measures
        == prepare(qrels, REPRO_EVAL_MEASURES, None, None).measures
    )


# --- KTU and RBO on small rankings: plain loops of the definitions, and repro_eval -------


def _ktu_loops(orig: list[str], rep: list[str]) -> float:
    """repro_eval's KTU from its definition: over the common depth n, the pairs of ranks
    i < j are concordant when the docnos at i and j compare alike in both rankings."""
    n = min(len(orig), len(rep))
    if n < 2:
        return math.nan
    s = 0
    for i, j in itertools.combinations(range(n), 2):
        s += ((orig[i] > orig[j]) - (orig[i] < orig[j])) * ((rep[i] > rep[j]) - (rep[i] < rep[j]))
    return s / (n * (n - 1) / 2)


def _rbo_loops(orig: list[str], rep: list[str], p: float, depth: int) -> float:
    """Truncated normalised RBO: sum over d of p^(d-1) |overlap at d| / d, over sum p^(d-1)."""
    num = den = 0.0
    for d in range(1, depth + 1):
        num += p ** (d - 1) * len(set(orig[:d]) & set(rep[:d])) / d
        den += p ** (d - 1)
    return num / den


def _trec_order(ranking: dict[str, float]) -> list[str]:
    return [d for d, _ in sorted(ranking.items(), key=lambda ds: (-ds[1], _desc(ds[0])))]


def _desc(doc: str) -> tuple[int, ...]:
    return (*(-ord(c) for c in doc), 1)  # docno descending, a prefix after its extensions


def _scores(docs: str) -> dict[str, float]:
    """Docnos (one letter each) scored in the order given."""
    return {d: float(len(docs) - i) for i, d in enumerate(docs)}


# (name, original run, reproduced run, p, depth, whether repro_eval can read it as given)
ORDERINGS: list[tuple[str, dict[str, dict[str, float]], dict[str, dict[str, float]], float, int, bool]] = [
    ("identical", {"1": _scores("abcdef")}, {"1": _scores("abcdef")}, 0.95, 1000, True),
    ("reversed", {"1": _scores("abcdef")}, {"1": _scores("fedcba")}, 0.95, 1000, True),
    ("swapped pair", {"1": _scores("dacbfe")}, {"1": _scores("adcbfe")}, 0.9, 1000, True),
    ("other documents", {"1": _scores("abcdef")}, {"1": _scores("axcyez")}, 0.95, 1000, True),
    # equal scores, written in ascending docno order: both rank them docno descending
    (
        "ties",
        {"1": {"a": 2.0, "b": 1.0, "c": 1.0, "d": 1.0}},
        {"1": {"c": 2.0, "a": 1.0, "b": 1.0, "d": 1.0}},
        0.95,
        1000,
        True,
    ),
    ("depth below length", {"1": _scores("abcdefgh")}, {"1": _scores("bacdhgfe")}, 0.8, 3, True),
    (
        "two topics",
        {"1": _scores("abc"), "2": _scores("xyzw")},
        {"1": _scores("cab"), "2": _scores("wxyz")},
        0.95,
        1000,
        True,
    ),
    ("one document", {"1": _scores("a")}, {"1": _scores("a")}, 0.95, 10, True),
    # repro_eval stops here (scipy's kendalltau needs equal lengths): rankeval takes the common depth
    ("different lengths", {"1": _scores("abcdef")}, {"1": _scores("bac")}, 0.95, 1000, False),
    # repro_eval fails on a topic the original lacks; rankeval compares the topics both have
    (
        "topic only reproduced",
        {"1": _scores("abc")},
        {"1": _scores("bca"), "2": _scores("xy")},
        0.95,
        1000,
        False,
    ),
    # lines not sorted by score: rankeval ranks by score (repro_eval would keep file order)
    (
        "unsorted lines",
        {"1": {"c": 1.0, "a": 3.0, "b": 2.0}},
        {"1": {"b": 1.0, "c": 3.0, "a": 2.0}},
        0.95,
        1000,
        False,
    ),
]


def _ordering(
    orig: dict[str, dict[str, float]], rep: dict[str, dict[str, float]], p: float, depth: int
) -> Any:
    qrels = {q: {d: 1 for d in docs} for q, docs in orig.items()}
    result = reproducibility(qrels, {"baseline": orig}, {"baseline": rep}, ["P@5"], p=p, depth=depth)
    ordering = result.runs["baseline"].ordering
    assert ordering is not None
    return ordering


@pytest.mark.parametrize(
    ("orig", "rep", "p", "depth"), [c[1:5] for c in ORDERINGS], ids=[c[0] for c in ORDERINGS]
)
def test_ordering_equals_definition(
    orig: dict[str, dict[str, float]], rep: dict[str, dict[str, float]], p: float, depth: int
) -> None:
    """KTU and RBO per topic equal plain loops of repro_eval's definitions, on rankings in
    trec_eval's order (score descending, docno descending), over the topics both runs have."""
    ordering = _ordering(orig, rep, p, depth)
    topics = sorted(set(orig) & set(rep))
    assert list(ordering.topics) == topics
    for t, ktu, rbo in zip(topics, ordering.ktu, ordering.rbo, strict=True):
        o, r = _trec_order(orig[t])[:depth], _trec_order(rep[t])[:depth]
        assert _close(float(ktu), _ktu_loops(o, r))
        assert _close(float(rbo), _rbo_loops(o, r, p, depth))


READABLE = [c for c in ORDERINGS if c[5]]


@pytest.mark.parametrize(
    ("orig", "rep", "p", "depth"), [c[1:5] for c in READABLE], ids=[c[0] for c in READABLE]
)
def test_ordering_equals_repro_eval(
    orig: dict[str, dict[str, float]], rep: dict[str, dict[str, float]], p: float, depth: int
) -> None:
    """KTU and RBO per topic equal repro_eval's on every ranking it can read."""
    pytest.importorskip("repro_eval")
    import copy

    from repro_eval.measure.document_order import KTU, RBO

    ordering = _ordering(orig, rep, p, depth)
    ktu = KTU(copy.deepcopy(orig), copy.deepcopy(rep), trim_thresh=depth, per_topic=True)
    rbo = RBO(copy.deepcopy(orig), copy.deepcopy(rep), p=p, depth=depth, pbar=False, per_topic=True)
    assert list(ordering.topics) == sorted(ktu) == sorted(rbo)
    for t, ours_ktu, ours_rbo in zip(ordering.topics, ordering.ktu, ordering.rbo, strict=True):
        assert _close(float(ours_ktu), ktu[t])
        assert _close(float(ours_rbo), rbo[t])


# --- the other paths ------------------------------------------------------------------


def test_baseline_only(computed: dict[str, Reproduction]) -> None:
    """Without advanced runs: the baseline's values as with them, no ER and no ΔRI."""
    alone = reproducibility(
        DATA / "orig.qrels", {"baseline": ORIG["baseline"]}, {"baseline": RPD["baseline"]}
    )
    full = computed["reproducibility"]
    assert list(alone.runs) == ["baseline"]
    assert alone.er is None and alone.delta_ri is None
    pd.testing.assert_frame_equal(
        alone.to_frame(), full.to_frame().query("run == 'baseline'").reset_index(drop=True)
    )
    assert not alone.to_frame()["what"].isin(["ER", "DeltaRI"]).any()


def test_replicability_has_no_paired_measures(computed: dict[str, Reproduction]) -> None:
    result = computed["replicability"]
    assert result.kind == "replicability"
    assert all(r.ordering is None and r.rmse is None and r.nrmse is None for r in result.runs.values())
    assert set(result.to_frame()["what"]) == {"p_value", "ER", "DeltaRI"}


def test_to_frame_holds_every_value(computed: dict[str, Reproduction]) -> None:
    """The long frame has one row per value of the result (topic means with topic None)."""
    result = computed["reproducibility"]
    frame = result.to_frame()
    assert list(frame.columns) == ["what", "run", "measure", "topic", "value"]
    for role, rep in result.runs.items():
        assert rep.ordering is not None
        ktu = frame[(frame.what == "KTU") & (frame.run == role)]
        assert ktu.topic.tolist() == [*rep.ordering.topics, None]
        assert np.array_equal(
            ktu.value.to_numpy(), [*rep.ordering.ktu, rep.ordering.mean_ktu], equal_nan=True
        )
        p = frame[(frame.what == "p_value") & (frame.run == role)]
        assert dict(zip(p.measure, p.value, strict=True)) == pytest.approx(rep.p_value, nan_ok=True)
    er = frame[frame.what == "ER"]
    assert er.run.isna().all() and er.topic.isna().all()
    assert er.measure.tolist() == list(result.measures)


def test_run_forms_and_line_order_change_nothing() -> None:
    """A run given as a path, a DataFrame in shuffled line order or a dict gives the same."""
    measures = ["AP", "P@10", "nDCG@10"]
    paths = reproducibility(DATA / "orig.qrels", ORIG, RPD, measures)
    frames = {
        role: pd.read_csv(
            path, sep=" ", names=["query_id", "q0", "doc_id", "rank", "score", "tag"], dtype={0: str, 2: str}
        )
        for role, path in RPD.items()
    }
    shuffled = {role: f.sample(frac=1.0, random_state=7) for role, f in frames.items()}
    dicts = {
        role: {str(q): dict(zip(g.doc_id, g.score, strict=True)) for q, g in f.groupby("query_id")}
        for role, f in frames.items()
    }
    for reproduced in (shuffled, dicts):
        other = reproducibility(DATA / "orig.qrels", ORIG, reproduced, measures)
        pd.testing.assert_frame_equal(other.to_frame(), paths.to_frame())


def test_default_options_cut_runs_at_1000() -> None:
    """repro_eval trims runs to their top 1000 documents before it evaluates them; so do the
    default options: documents below rank 1000 change nothing (and count with other options)."""
    from rankeval.options import EvalOptions

    top = {f"d{i:04d}": float(3000 - i) for i in range(1000)}
    orig = {"1": {**top, **{f"r{i:03d}": float(1000 - i) for i in range(500)}}}
    rep = {"1": {**top, **{f"n{i:03d}": float(1000 - i) for i in range(500)}}}
    qrels = {"1": {f"r{i:03d}": 1 for i in range(500)}}
    args = (qrels, {"baseline": orig}, {"baseline": rep}, ["P@2000"])
    assert reproducibility(*args).runs["baseline"].rmse == {"P@2000": 0.0}
    assert reproducibility(*args, options=EvalOptions()).runs["baseline"].rmse == {"P@2000": 0.25}


BAD: list[tuple[dict[str, Any], type[RankevalError], str]] = [
    (
        {"original": {"advanced": "x"}},
        UsageError,
        "original runs: expected a mapping with the keys 'baseline'",
    ),
    ({"original": {"baseline": "x", "extra": "y"}}, UsageError, r"not \['baseline', 'extra'\]"),
    ({"original": ["x"]}, UsageError, "not list"),
    (
        {"reproduced": {"baseline": "x"}},
        UsageError,
        "the original runs are baseline, advanced and the reproduced runs baseline",
    ),
    ({"p": 0}, UsageError, "RBO's p must be a number between 0 and 1"),
    ({"p": 1.0}, UsageError, "RBO's p must be a number between 0 and 1"),
    ({"p": "0.9"}, UsageError, "RBO's p must be"),
    ({"depth": 0}, UsageError, "depth must be a positive whole number"),
    ({"depth": 2.5}, UsageError, "depth must be a positive whole number"),
    ({"depth": True}, UsageError, "depth must be a positive whole number"),
    ({"measures": ["AP@"]}, SpecError, "measure spec: expected a value"),
    ({"options": {"max_docs": 10}}, UsageError, "EvalOptions"),
    (
        {"original": {"baseline": DATA / "missing.run", "advanced": ORIG["advanced"]}},
        InputError,
        "missing.run",
    ),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD, ids=[str(b[0]) for b in BAD])
def test_bad_arguments(change: dict[str, Any], error: type[RankevalError], message: str) -> None:
    """Bad arguments are one RankevalError naming what was expected, never a traceback."""
    args: dict[str, Any] = {
        "qrels": DATA / "orig.qrels",
        "original": ORIG,
        "reproduced": RPD,
        "measures": ["AP"],
    }
    with pytest.raises(error, match=message):
        reproducibility(**{**args, **change})
