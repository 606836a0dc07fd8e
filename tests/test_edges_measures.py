"""Edges of measures, names and nesting (issue 24, round two): undefined (NaN) queries left out
of the default aggregate with a warning (docs: plugins.md), suggestions that are working specs,
every written parameter printed in a measure's name, the measure and plugin catalogues, and
nested sub-queries keyed by (query, parent)."""

from __future__ import annotations

import math
import re
import textwrap
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankeval
from rankeval import Domain, Measure, param
from rankeval.cli.catalogue import IR_MEASURES_NOTE, measure_lines
from rankeval.errors import RankevalWarning, SpecError
from rankeval.measures.base import convert_value, format_param_value
from rankeval.measures.plugins import load_registry
from rankeval.measures.registry import MeasureEntry
from rankeval.spec import parse_spec

QRELS3 = "1 0 a 1\n2 0 b 1\n3 0 c 1\n"
RUN3 = "1 Q0 a 1 1 t\n2 Q0 b 1 1 t\n3 Q0 c 1 1 t\n"


@pytest.fixture
def files3(tmp_path):
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text(QRELS3)
    r.write_text(RUN3)
    return str(q), str(r)


def _summary(results):
    """The aggregate rows of ``rankeval.evaluate``'s results (query id ``None``, formerly
    ``"all"``)."""
    return results.query_id.isna() | (results.query_id == "all")


# ------------------------------------------------------- item 8: NaN left out of the mean
@dataclass(frozen=True)
class Given(Measure):
    """The values of ``values`` (comma separated, ``nan`` allowed), one per query."""

    name: ClassVar[str] = "Given"
    values: str = param("nan,2,3", "one value per query")

    def compute(self, data):
        return np.array([float(v) for v in self.values.split(",")])[: data.num_queries]


@dataclass(frozen=True)
class GivenCount(Given):
    """As :class:`Given`, but counts: the aggregate is a sum."""

    name: ClassVar[str] = "GivenCount"
    integer: ClassVar[bool] = True


# (measure, expected `all`, expected warning or None)
NAN_CASES = [
    (Given(), 2.5, "Given: 1 of 3 queries undefined, left out of the mean"),
    (
        Given(values="2,nan,nan"),
        2.0,
        'Given(values="2,nan,nan"): 2 of 3 queries undefined, left out of the mean',
    ),
    (Given(values="nan,nan,nan"), math.nan, "queries undefined, no query left: the mean is nan"),
    (Given(values="1,2,3"), 2.0, None),
    (GivenCount(values="nan,2,3"), 5.0, "1 of 3 queries undefined, left out of the sum"),
]


@pytest.mark.parametrize(("measure", "expected", "warning"), NAN_CASES, ids=[str(c[0]) for c in NAN_CASES])
def test_default_aggregate_leaves_undefined_queries_out(files3, measure, expected, warning) -> None:
    q, r = files3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rankeval.evaluate(q, r, [measure])
    value = got[_summary(got)].value.item()
    assert value == pytest.approx(expected, nan_ok=True)
    messages = [str(w.message) for w in caught if issubclass(w.category, RankevalWarning)]
    if warning is None:
        assert messages == []
    else:
        assert len(messages) == 1 and warning in messages[0], messages
    per_query = got[~_summary(got)].value.to_numpy()
    assert np.isnan(per_query).sum() == measure.values.count("nan")  # per query: still nan


# ------------------------------------------------ item 10: every suggestion is a working spec
NESTED = Path(rankeval.__file__).parent / "examples" / "nested"
REGISTRY = load_registry(entry_points=False)


def _nested(measures: list[str]):
    return rankeval.evaluate(
        str(NESTED / "qrels.txt"),
        str(NESTED / "bm25.run"),
        measures,
        options=rankeval.EvalOptions(docinfo=str(NESTED / "posts.docinfo")),
        registry=REGISTRY,
    )


def _same_but(a: Measure, b: Measure, **changed: object) -> bool:
    """*b* is *a* with the parameters *changed* (every other parameter kept)."""
    return type(a) is type(b) and {**asdict(a), **changed} == asdict(b)


# measures ranking the people of the nested example while sens= is given on their posts
LEVEL_HINTS = [
    "nCS-DCG@10",
    "CS-DCG(cost=3)@5",
    "nCS-DCG@10(gain=linear)",
    "CS-DCG@3(level=1)",
    "CS-DCG-neg@5",
]


def test_every_class_of_the_level_hint_is_provoked() -> None:
    readers = {
        e.cls.name
        for e in REGISTRY
        if "sens" in e.cls.attributes and "level" in {p.name for p in e.cls.params()}
    }
    assert readers == {REGISTRY.parse(s).name for s in LEVEL_HINTS}


@pytest.mark.parametrize("typed", LEVEL_HINTS)
def test_level_hint_is_a_working_spec(typed: str) -> None:
    with pytest.warns(RankevalWarning) as caught:
        _nested([typed])
    hints = [m.group(1) for w in caught if (m := re.search(r"add level=2 \(e\.g\. (.+)\)$", str(w.message)))]
    assert len(hints) == 1, [str(w.message) for w in caught]
    suggested = REGISTRY.parse(hints[0])
    assert _same_but(REGISTRY.parse(typed), suggested, level=2), hints[0]
    got = _nested([hints[0]])  # the suggestion runs, under the name it was suggested as
    assert set(got.measure) == {hints[0]}


# (typed, the names whose suggestion keeps what was typed)
UNKNOWN_NAMES = [
    ("nDGC@10", ["nDCG"]),
    ("nCS-DGC@10(level=2)", ["nCS-DCG", "CS-DCG"]),
    ("hTGB@h=3h", ["hTBG", "nhTBG"]),
    ("Rpecr(rel=2)", ["Rprec"]),
    ("Prec@5", []),  # close names whose @5 does not work: named alone
    ("ndcg_cutt", []),  # a trec_eval prefix alone is no spec: not suggested
]


@pytest.mark.parametrize(("typed", "keeping"), UNKNOWN_NAMES)
def test_did_you_mean_suggests_working_specs(typed: str, keeping: list[str]) -> None:
    with pytest.raises(SpecError) as info:
        REGISTRY.parse(typed)
    found = re.search(r"did you mean (.+)\?", info.value.message)
    assert found is not None, info.value.message
    suggestions = found.group(1).split(", ")
    for text in suggestions:
        REGISTRY.parse(text)  # each suggestion works
    user = parse_spec(typed)
    for name in keeping:
        kept = typed.replace(user.name, name, 1)
        assert kept in suggestions, suggestions
        assert REGISTRY.parse(kept).written == {
            k or REGISTRY.parse(kept).at for k, _ in (*user.params, *([user.at] if user.at else []))
        }
    if keeping:
        assert len(_nested(suggestions[:1])) > 0


# (typed, the parameters the suggestion must add)
MISSING_AT = [
    ("nCS-DCG(level=2)", {"k": 10}),
    ("CS-DCG(cost=3,gain=linear,level=2)", {"k": 10}),
    ("IPrec(rel=2)", {"recall": 0.1}),
]


@pytest.mark.parametrize(("typed", "added"), MISSING_AT)
def test_missing_cutoff_suggestion_keeps_what_was_typed(typed: str, added: dict) -> None:
    with pytest.raises(SpecError) as info:
        REGISTRY.parse(typed)
    found = re.search(r"e\.g\. (\S+)$", info.value.message)
    assert found is not None, info.value.message
    suggested = REGISTRY.parse(found.group(1))
    user = parse_spec(typed)
    for key, value in user.params:
        assert getattr(suggested, key) == convert_value(value, type(getattr(suggested, key))), key
    for key, value in added.items():
        assert getattr(suggested, key) == value
    assert len(_nested([found.group(1)])) > 0


# ----------------------------------------- item 11: every parameter written is printed
def _written_defaults() -> list[tuple[str, str]]:
    """(spec writing one parameter at its default, the text that must appear in its name),
    for every parameter with a default of every registered measure."""
    cases = []
    for entry in REGISTRY:
        cls = entry.cls
        for info in cls.params():
            if info.default is None:
                continue
            text = format_param_value(info.default)
            base = cls.name
            if cls.at is not None and cls.at != info.name:
                at = next(p for p in cls.params() if p.name == cls.at)
                base += (
                    ""
                    if at.default is not None
                    else "@" + ("0.5" if at.type_name.startswith("float") else "3")
                )
            spec = f"{cls.name}@{text}" if info.name == cls.at else f"{base}({info.name}={text})"
            shown = f"@{text}" if info.name == cls.at else f"{info.name}={text}"
            cases.append((spec, shown))
    return cases


WRITTEN = _written_defaults()


@pytest.mark.parametrize(("spec", "shown"), WRITTEN, ids=[c[0] for c in WRITTEN])
def test_a_written_default_is_printed(spec: str, shown: str) -> None:
    try:
        m = REGISTRY.parse(spec)
    except SpecError as exc:  # a measure needing another parameter written with it
        pytest.skip(f"{spec}: {exc.message}")
    assert shown in str(m), (spec, str(m))
    again = REGISTRY.parse(str(m))
    assert again == m and str(again) == str(m)


def test_written_defaults_cover_the_registry() -> None:
    built = 0
    for spec, _ in WRITTEN:
        try:
            REGISTRY.parse(spec)
            built += 1
        except SpecError:
            pass
    assert built >= 0.9 * len(WRITTEN) and len({s.split("(")[0].split("@")[0] for s, _ in WRITTEN}) >= 30


@dataclass(frozen=True)
class MyHits(Measure):
    """Relevant documents in the top k (k defaults to 10)."""

    name: ClassVar[str] = "MyHits"
    at: ClassVar[str] = "k"
    k: int = param(10, "cutoff")
    rel: int = param(1, "minimum grade")

    def compute(self, data):
        return np.zeros(data.num_queries)


# (spec typed, name printed): defaults written are printed, those not written are not
PRINTED = [
    ("MyHits@10", "MyHits@10"),
    ("MyHits", "MyHits"),
    ("MyHits(k=10)", "MyHits@10"),
    ("MyHits(rel=1)", "MyHits(rel=1)"),
    ("MyHits@10(rel=1)", "MyHits(rel=1)@10"),
    ("MyHits@5", "MyHits@5"),
    ("hTBG@h=224s", "hTBG@224"),
    ("hTBG", "hTBG"),
    ("TBG(h=224)", "TBG@224"),
    ("AP(rel=1,level=1)", "AP(rel=1,level=1)"),
    ("nDCG@10", "nDCG@10"),
]


@pytest.mark.parametrize(("typed", "printed"), PRINTED)
def test_written_parameters_are_printed(files3, typed: str, printed: str) -> None:
    registry = load_registry(entry_points=False)
    registry.add(MyHits, "test")
    m = registry.parse(typed)
    assert str(m) == printed
    assert registry.parse(printed) == m
    if typed.startswith("MyHits"):
        got = rankeval.evaluate(*files3, [typed], registry=registry)
        assert set(got.measure) == {printed}


def test_cli_prints_written_parameters() -> None:
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = [str(NESTED / "qrels.txt"), str(NESTED / "bm25.run"), "--docinfo", str(NESTED / "posts.docinfo")]
    result = CliRunner().invoke(app, [*args, "-m", "hTBG@h=224s", "-m", "AP(rel=1)"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == ["hTBG@224", "AP(rel=1)"]


# ----------------------------------------------------- item 16: the catalogues read well
@dataclass(frozen=True)
class Bare(Measure):
    """A plugin measure declaring neither a description nor a source."""

    name: ClassVar[str] = "Bare"
    rel: int = param(1, "minimum grade", domain=Domain(-(2**31), 2**31 - 1))
    weight: float = param(1.0, "any finite number")

    def compute(self, data):
        return np.zeros(data.num_queries)


CATALOGUED = [*REGISTRY, MeasureEntry(Bare, "bare_plugin")]


@pytest.mark.parametrize("entry", CATALOGUED, ids=[e.cls.name for e in CATALOGUED])
def test_measure_listing_lines(entry: MeasureEntry) -> None:
    lines = measure_lines(entry)
    for line in lines:
        assert line.strip(), lines  # no blank line (a plugin without description or source)
        assert line == line.rstrip(), line
        assert not line.endswith(":"), line
        assert "-2147483648" not in line and "(-inf, inf)" not in line, line  # bounds that say nothing
    for info in entry.cls.params():
        if info.domain is not None and str(info.domain) not in ("[-2147483648, 2147483647]", "(-inf, inf)"):
            assert any(f"{info.name}: " in line and f" in {info.domain}," in line for line in lines), (
                info.name
            )


@pytest.mark.parametrize("entry", list(REGISTRY), ids=[e.cls.name for e in REGISTRY])
def test_spec_error_lists_defaults_as_specs_write_them(entry: MeasureEntry) -> None:
    with pytest.raises(SpecError) as info:
        entry.cls.from_spec(parse_spec(f"{entry.cls.name}(zzz=1)"))
    message = info.value.message
    assert "default None" not in message
    for p in entry.cls.params():
        assert f"{p.name} ({p.type_name}, default {format_param_value(p.default)})" in message


def test_the_ir_measures_note_names_only_ir_measures_measures() -> None:
    examples = re.search(r"\((.*), \.\.\.\)", IR_MEASURES_NOTE)
    assert examples is not None
    for text in re.split(r", (?![^(]*\))", examples.group(1)):
        assert REGISTRY.plugin_of(REGISTRY.parse(text)) == "rankeval_irmeasures", text


def test_plugins_listing_has_three_clean_fields() -> None:
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    result = CliRunner().invoke(app, ["plugins"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert any(line.startswith("rankeval_irmeasures\t") for line in lines)
    for line in lines:
        fields = line.split("\t")
        assert len(fields) == 3 and all(f == f.strip() and f for f in fields), repr(line)


# ------------------------------------------ item 21: sub-queries keyed by (query, parent)
def _frames(qrels: list[tuple[str, str, int]], run: list[tuple[str, str, float]]):
    import pandas as pd

    return (
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
        pd.DataFrame(run, columns=["query_id", "doc_id", "score"]),
    )


def _per_query(qrels, run, measure: str, sep: str = "/") -> dict[str, float]:
    q, r = _frames(qrels, run)
    got = rankeval.evaluate(q, r, [measure], options=rankeval.EvalOptions(nest_sep=sep), registry=REGISTRY)
    return dict(zip(got[~_summary(got)].query_id, got[~_summary(got)].value, strict=True))


# query q, parent a/b (one relevant child ranked first: AP 1) and query q/a, parent b (its
# relevant child ranked second: AP 1/2); joined, both would be the sub-query q/a/b
COLLIDING_QRELS = [("q", "a/b", 1), ("q", "a/b/c", 1), ("q/a", "b", 1), ("q/a", "b/c", 1), ("q/a", "b/d", 0)]
COLLIDING_RUN = [
    ("q", "a/b", 1.0),
    ("q", "a/b/c", 1.0),
    ("q/a", "b", 1.0),
    ("q/a", "b/d", 2.0),
    ("q/a", "b/c", 1.0),
]


@pytest.mark.parametrize("sep", ["/", "::", "|"])
def test_colliding_sub_queries_are_apart(sep: str) -> None:
    def spelled(rows):
        return [(q.replace("/", sep), d.replace("/", sep), v) for q, d, v in rows]

    qrels, run = spelled(COLLIDING_QRELS), spelled(COLLIDING_RUN)
    together = _per_query(qrels, run, "AP(level=2)", sep)
    for query in ("q", f"q{sep}a"):  # each query alone: no other query to collide with
        alone = _per_query(
            [x for x in qrels if x[0] == query], [x for x in run if x[0] == query], "AP(level=2)", sep
        )
        assert together[query] == alone[query]
    assert together == {"q": 1.0, f"q{sep}a": 0.5}


def test_sub_query_ids_use_the_nesting_separator() -> None:
    from rankeval.io.data import Qrels, Run
    from rankeval.ranking.alignment import Alignment

    q, r = _frames(
        [(q.replace("/", "::"), d.replace("/", "::"), v) for q, d, v in COLLIDING_QRELS],
        [(q.replace("/", "::"), d.replace("/", "::"), v) for q, d, v in COLLIDING_RUN],
    )
    view = Alignment(Qrels.from_frame(q), Run.from_frame(r), nest_sep="::").view(2)
    assert sorted(view.query_ids) == ["q::a::b", "q::a::b"]  # display names; apart by (query, parent)
    nesting = view.nesting
    assert sorted(zip(nesting.outer_ids[nesting.outer], nesting.parent_ids, strict=True)) == [
        ("q", "a::b"),
        ("q::a", "b"),
    ]


_SEGMENT = st.sampled_from(["a", "b"])


@st.composite
def _colliding(draw) -> tuple[list, list]:
    """Queries and parents spelled with the same few segments, so that ``query/parent``
    strings collide; each parent's children ranked by random scores."""
    queries = draw(
        st.lists(
            st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=4, unique=True
        )
    )
    qrels, run = [], []
    for query in queries:
        depth = draw(st.integers(1, 2))  # parents of one depth: none is another's prefix
        parents = draw(
            st.lists(
                st.lists(_SEGMENT, min_size=depth, max_size=depth).map("/".join),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        for parent in parents:
            qrels.append((query, parent, 1))
            run.append((query, parent, draw(st.floats(0, 1))))
            for child in range(draw(st.integers(1, 3))):
                doc = f"{parent}/x{child}"
                qrels.append((query, doc, draw(st.integers(0, 1))))
                if draw(st.booleans()):
                    run.append((query, doc, draw(st.floats(0, 1))))
    return qrels, run


@settings(max_examples=40, deadline=None)
@given(data=_colliding())
def test_nested_ap_with_colliding_ids(data) -> None:
    qrels, run = data
    got = _per_query(qrels, run, "AP(level=2)")
    assert all(0 <= v <= 1 for v in got.values()), got
    # the same collection with query ids that cannot collide gives the same values
    renamed = {q: f"Q{i}" for i, q in enumerate(sorted({x[0] for x in qrels}))}
    plain = _per_query(
        [(renamed[q], d, v) for q, d, v in qrels], [(renamed[q], d, v) for q, d, v in run], "AP(level=2)"
    )
    assert {renamed[q]: v for q, v in got.items()} == plain


def test_the_documented_aggregate_override_works(files3) -> None:
    """docs/plugins.md shows ``aggregate``'s signature with another rule (a median, NaN as 0)."""
    text = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text(encoding="utf-8")
    block = text.split("override `aggregate`:", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {"np": np}
    exec(textwrap.dedent(block), namespace)  # the documented method, as a plugin would write it

    @dataclass(frozen=True)
    class Median(Given):
        name: ClassVar[str] = "Median"
        aggregate = namespace["aggregate"]

    with warnings.catch_warnings():
        warnings.simplefilter("error", RankevalWarning)  # its own rule: no warning
        got = rankeval.evaluate(*files3, [Median(values="nan,2,3")])
    assert got[_summary(got)].value.item() == 2.0  # median of 0, 2, 3


def test_random_baseline_moments_leave_undefined_queries_out() -> None:
    """The random baseline's per-sample aggregate follows the default aggregate's rule: a
    query undefined (NaN) in a sample is left out of that sample's mean (and of a count's
    sum), and the spread is over the defined queries. By hand: 2 samples, 3 queries."""
    import numpy as np

    from rankeval.engine.random_sampling import _Moments

    registry = rankeval.load_registry()
    mean_measure, count_measure = registry.parse("AP"), registry.parse("NumRet")
    per_query = [np.array([1.0, np.nan]), np.array([np.nan, 0.5]), np.array([0.0, 0.25])]
    moments = _Moments(2, 2)
    for values in per_query:
        moments.add(np.vstack([values, values]))
    agg, spread = moments.result([mean_measure, count_measure])
    assert agg[0].tolist() == [0.5, 0.375]  # (1 + 0) / 2, (0.5 + 0.25) / 2
    assert agg[1].tolist() == [1.0, 0.75]  # sums of the defined values
    # sample variances: [(1-.5)^2 + (0-.5)^2] / 1 = 0.5, [(.5-.375)^2 + (.25-.375)^2] / 1 = 0.03125
    assert spread[0] == pytest.approx(np.sqrt((0.5 + 0.03125) / 2))
