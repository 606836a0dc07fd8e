"""Measure-spec grammar (rankeval.spec) and resolution through the registry (docs: formats.md, Measure specs)."""

from __future__ import annotations

import typing
from typing import Any, Literal, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rankeval.errors import SpecError, UsageError
from rankeval.measures.base import Duration, Measure
from rankeval.measures.plugins import load_registry
from rankeval.spec import MeasureSpec, Value, parse_spec, parse_specs

# one registry for the whole module (loading is cheap, but there is no need to repeat it)
REGISTRY = load_registry()


@pytest.fixture(scope="module")
def registry():
    return REGISTRY


def num(text: str, number: float, unit: str | None = None) -> Value:
    """A number Value (the column is not part of equality)."""
    return Value("number", text, 0, number, unit)


def spec(name: str, at=None, params=()) -> MeasureSpec:
    """A MeasureSpec to compare against (text and column are not part of equality)."""
    return MeasureSpec(name, "", 0, at, tuple(params))


def caret_lines(err: SpecError) -> tuple[str, str]:
    lines = str(err).split("\n")
    return lines[-2], lines[-1]


# ------------------------------------------------------------------ syntax errors
SYNTAX_ERRORS = [
    # (input, 1-based column of the offending character, message substring)
    ("", 1, "empty measure spec"),
    ("   ", 4, "empty measure spec"),
    ("1AP", 1, "expected a measure name, found '1'"),
    ("@10", 1, "expected a measure name, found '@'"),
    ("AP(", 4, "expected a parameter name, found end of spec"),
    ("AP(rel", 7, "expected '=' after parameter 'rel'"),
    ("AP(rel=", 8, "expected a value (number, word or quoted string), found end of spec"),
    ("AP(rel=2", 9, "expected ',' or ')', found end of spec"),
    ("AP(rel=2,", 10, "expected a parameter name, found end of spec"),
    ("AP(rel=2;", 9, "expected ',' or ')', found ';'"),
    ("AP(rel=2 x=3)", 10, "expected ',' or ')', found 'x'"),
    ("AP(=2)", 4, "expected a parameter name, found '='"),
    ("AP)", 3, "unexpected ')' in measure spec"),
    ("AP,nDCG", 3, "unexpected ',' in measure spec"),
    ("nDCG@", 6, "expected a value (number, word or quoted string), found end of spec"),
    ("nDCG@@", 6, "found '@'"),
    ("nDCG@10x", 8, "unexpected 'x' after number (units are s, m, h and %)"),
    ("nDCG@3q", 7, "unexpected 'q' after number"),
    ("nDCG@10.5.3", 10, "unexpected '.' after number"),
    ("hTBG@h=", 8, "expected a value"),
    ("hTBG@h=3hh", 10, "unexpected 'h' after number"),
    ('AP(rel="x', 8, 'unterminated string (missing closing ")'),
    ("AP(rel='x", 8, "unterminated string (missing closing ')"),
    ('AP(rel="x\\', 8, "unterminated string (backslash at end)"),
    ("AP(rel=2)@10(k=3)", 13, "parameters given twice: use one '(...)' list"),
    ("P@5(rel=2)(x=1)", 11, "unexpected '(' in measure spec"),
    ("AP(rel=2) )", 11, "expected a measure name, found ')'"),
    # in a multi-spec string the column counts from the start of the whole string
    ("AP nDCG@", 9, "expected a value"),
    ("AP  P@5 nDCG@10;", 16, "unexpected ';' in measure spec"),
]


@pytest.mark.parametrize(("text", "column", "message"), SYNTAX_ERRORS)
def test_syntax_errors(text: str, column: int, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_specs(text)
    err = info.value
    assert isinstance(err, UsageError)  # usage error: exit code 2 in the CLI
    assert err.exit_code == 2
    assert err.column == column
    assert message in err.message
    assert err.text == text
    assert err.source == "measure spec"
    text_line, caret_line = caret_lines(err)
    assert text_line == "    " + text
    assert caret_line == "    " + " " * (column - 1) + "^"
    assert str(err).startswith(f"measure spec: {err.message}")


def test_parse_spec_rejects_several_specs() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("AP nDCG@10")
    assert "expected one measure spec, found 2" in str(info.value)


# ------------------------------------------------------------------ valid syntax
VALID = [
    ("nDCG@10", spec("nDCG", (None, num("10", 10.0)))),
    ("hTBG@h=3h", spec("hTBG", ("h", num("3h", 3.0, "h")))),
    ("AP(rel=2)", spec("AP", None, [("rel", num("2", 2.0))])),
    ("R(rel=2)@1000", spec("R", (None, num("1000", 1000.0)), [("rel", num("2", 2.0))])),
    ("P@5(rel=2)", spec("P", (None, num("5", 5.0)), [("rel", num("2", 2.0))])),
    ("AP( rel = 2 , k = 7 )", spec("AP", None, [("rel", num("2", 2.0)), ("k", num("7", 7.0))])),
    ("nCS-DCG@10", spec("nCS-DCG", (None, num("10", 10.0)))),
    ("ndcg_cut.10", spec("ndcg_cut.10")),
    ("P.5", spec("P.5")),
    ("TBG(h=3h)", spec("TBG", None, [("h", num("3h", 3.0, "h"))])),
    ("TBG(h=30m)", spec("TBG", None, [("h", num("30m", 30.0, "m"))])),
    ("TBG(h=224s)", spec("TBG", None, [("h", num("224s", 224.0, "s"))])),
    ("X@95%", spec("X", (None, num("95%", 95.0, "%")))),
    (
        "X(a=-1.5e3,b=.5,c=+2)",
        spec("X", None, [("a", num("-1.5e3", -1500.0)), ("b", num(".5", 0.5)), ("c", num("+2", 2.0))]),
    ),
    ("CS(gain=linear)", spec("CS", None, [("gain", Value("ident", "linear", 0))])),
    ('X(s="a b,c)")', spec("X", None, [("s", Value("string", "a b,c)", 0))])),
    ("X(s='it\\'s')", spec("X", None, [("s", Value("string", "it's", 0))])),
    ('X(s="a\\"b\\\\c")', spec("X", None, [("s", Value("string", 'a"b\\c', 0))])),
    ('X@"q x"', spec("X", (None, Value("string", "q x", 0)))),
    ("X(s='')", spec("X", None, [("s", Value("string", "", 0))])),
]


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[t for t, _ in VALID])
def test_valid_syntax(text: str, expected: MeasureSpec) -> None:
    got = parse_spec(text)
    assert got == expected
    assert got.text == text
    assert got.column == 1


def test_value_columns() -> None:
    got = parse_spec("R(rel=2)@1000")
    assert got.params[0][1].column == 7
    assert got.at is not None and got.at[1].column == 10


def test_several_specs_in_one_string() -> None:
    got = parse_specs("AP nDCG@10  P@5")
    assert [s.name for s in got] == ["AP", "nDCG", "P"]
    assert got == [spec("AP"), spec("nDCG", (None, num("10", 10.0))), spec("P", (None, num("5", 5.0)))]
    # each spec keeps only its own text, and columns point into it
    assert [s.text for s in got] == ["AP", "nDCG@10", "P@5"]
    assert [s.column for s in got] == [1, 1, 1]
    assert got[1].at is not None and got[1].at[1].column == 6
    assert got[2].at is not None and got[2].at[1].column == 3
    # leading/trailing whitespace and tabs/newlines between specs
    assert parse_specs("  AP\tP@5\n") == [spec("AP"), spec("P", (None, num("5", 5.0)))]


# ------------------------------------------------------------------ resolution errors
def resolve_error(registry, text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        registry.parse(text)
    return info.value


def test_unknown_measure_suggests_close_names(registry) -> None:
    err = resolve_error(registry, "APP")
    assert err.column == 1
    assert "unknown measure 'APP'" in err.message
    assert "did you mean" in err.message
    suggestions = err.message.split("did you mean", 1)[1]
    assert "AP" in suggestions.replace("?", "").replace(",", " ").split()

    err = resolve_error(registry, "nDCGG@10")
    assert "unknown measure 'nDCGG'" in err.message
    assert "nDCG" in err.message.split("did you mean", 1)[1]
    assert caret_lines(err) == ("    nDCGG@10", "    ^")


def test_unknown_measure_without_close_names(registry) -> None:
    err = resolve_error(registry, "Zzqxv@3")
    assert "unknown measure 'Zzqxv'" in err.message
    assert "rankeval measures" in err.message


def test_unknown_measure_in_multi_spec_points_at_it(registry) -> None:
    err = resolve_error(registry, "AP Zzqxv@3")
    assert "unknown measure 'Zzqxv'" in err.message
    assert err.text == "Zzqxv@3"
    assert err.column == 1


def test_unknown_parameter_lists_valid_parameters(registry) -> None:
    err = resolve_error(registry, "AP(foo=1)")
    assert "unknown parameter 'foo' for AP" in err.message
    assert "valid parameters:" in err.message
    listed = err.message.split("valid parameters:", 1)[1]
    for p in ("k", "rel", "level"):
        assert f"{p} (" in listed
    assert err.column == 8
    assert caret_lines(err) == ("    AP(foo=1)", "           ^")


def test_at_on_measure_without_at_parameter(registry) -> None:
    err = resolve_error(registry, "Rprec@5")
    assert "Rprec takes no '@' value" in err.message
    assert "rel (int, default 1)" in err.message
    assert err.column == 7


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("AP(rel=1,rel=2)", 14),
        ("AP(k=5)@10", None),  # k is set by both the '@' part and the list
        ("nDCG@10(k=5)", None),
        ("map_cut.10(k=5)", None),  # the trec_eval name already fixes the cutoff
    ],
)
def test_parameter_given_twice(registry, text: str, column: int | None) -> None:
    err = resolve_error(registry, text)
    assert "given twice" in err.message
    assert "'k'" in err.message or "'rel'" in err.message
    if column is not None:
        assert err.column == column


def test_trec_name_with_cutoff_and_at(registry) -> None:
    err = resolve_error(registry, "P.5@10")
    assert "'P.5' already has a cutoff" in err.message


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("nDCG@ten", 6, "bad value for 'k': expected an integer, found 'ten'"),
        ("AP(rel=x)", 8, "bad value for 'rel': expected an integer, found 'x'"),
        ("P@1.5", 3, "bad value for 'k': expected an integer, found '1.5'"),
        ("AP(rel=2.5)", 8, "bad value for 'rel': expected an integer"),
        ("P@3h", 3, "expected an integer, found '3h'"),
        ("P@5%", 3, "expected an integer, found '5%'"),
        ('AP(rel="2")', 8, "expected an integer, found '2'"),
        ("P@0", 3, "bad value for 'k': 0 is outside [1, 2147483647]"),
        ("nDCG@-1", 6, "bad value for 'k': -1 is outside [1, 2147483647]"),
        ("AP(level=0)", 10, "bad value for 'level': 0 is outside [1, 2147483647]"),
    ],
)
def test_wrong_type_or_value(registry, text: str, column: int, message: str) -> None:
    err = resolve_error(registry, text)
    assert message in err.message
    assert err.column == column
    assert caret_lines(err) == ("    " + text, "    " + " " * (column - 1) + "^")


# ------------------------------------------------------------------ aliases and canonical text
ALIASES = [
    ("map", "AP"),
    ("MAP", "AP"),
    ("P.5", "P@5"),
    ("P_5", "P@5"),
    ("ndcg_cut.10", "nDCG@10"),
    ("ndcg_cut_10", "nDCG@10"),
    ("ndcg", "nDCG"),
    ("recall.1000", "R@1000"),
    ("recall_1000", "R@1000"),
    ("recip_rank", "RR"),
    ("map_cut.10", "AP@10"),
    ("success.10", "Success@10"),
    ("bpref", "Bpref"),
    ("num_ret", "NumRet"),
    ("num_rel", "NumRel"),
    ("num_rel_ret", "NumRelRet"),
    ("map(rel=2)", "AP(rel=2)"),
    ("P.5(rel=2)", "P@5(rel=2)"),
    ("nDCG(k=10)", "nDCG@10"),
]


@pytest.mark.parametrize(("alias", "canonical"), ALIASES)
def test_aliases_equal_canonical(registry, alias: str, canonical: str) -> None:
    a = registry.parse(alias)
    b = registry.parse(canonical)
    assert a == b
    assert type(a) is type(b)
    assert str(a) == str(b)


def test_alias_values() -> None:
    m = REGISTRY.parse("map_cut.10")
    assert type(m).__name__ == "AP"
    assert (m.k, m.rel, m.level) == (10, 1, 1)
    m = REGISTRY.parse("P_5")
    assert (m.name, m.k) == ("P", 5)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("AP(rel=2)", "AP(rel=2)"),
        ("nDCG@10", "nDCG@10"),
        ("R(rel=2)@1000", "R(rel=2)@1000"),
        ("P@5(rel=2)", "P(rel=2)@5"),
        ("AP(rel=1)", "AP(rel=1)"),  # a parameter written is printed, default or not
        ("hTBG@h=224s", "hTBG@224"),
        ("AP", "AP"),
        ("map", "AP"),
        ("recall.1000", "R@1000"),
        ("RR(level=2,rel=3)@5", "RR(rel=3,level=2)@5"),
    ],
)
def test_canonical_str(registry, text: str, canonical: str) -> None:
    m = registry.parse(text)
    assert str(m) == canonical
    assert registry.parse(canonical) == m


def test_parse_many_and_str(registry) -> None:
    ms = registry.parse_many("AP nDCG@10  P@5")
    assert [str(m) for m in ms] == ["AP", "nDCG@10", "P@5"]


def test_registry_parse_rejects_several(registry) -> None:
    with pytest.raises(SpecError) as info:
        registry.parse("AP P@5")
    assert "expected one measure spec, found 2" in str(info.value)


# ------------------------------------------------------------------ round-trip property
def _strategy(name: str, tp: Any) -> st.SearchStrategy[Any]:
    """Valid values of a parameter, by its declared type."""
    origin = get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in get_args(tp) if a is not type(None)]
        inner = st.one_of([_strategy(name, a) for a in args])
        return st.none() | inner if type(None) in get_args(tp) else inner
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if tp is bool:
        return st.booleans()
    if tp is Duration:
        return st.one_of(
            st.integers(1, 10**6).map(lambda s: Duration(float(s))),
            st.sampled_from([3 * 3600, 30 * 60, 224, 90 * 60, 7200]).map(lambda s: Duration(float(s))),
            st.floats(0.001, 1e6, allow_nan=False, allow_infinity=False).map(Duration),
        )
    if tp is int:
        if name == "rel":
            return st.integers(0, 4)
        return st.integers(1, 100_000)  # cutoffs, levels, counts
    if tp is float:
        # probabilities (TBG) and recalls are in [0, 1]; tests/test_domains.py draws every
        # parameter from its declared domain
        return st.floats(0.0, 1.0, allow_nan=False)
    if tp is str:
        return st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
    raise AssertionError(f"test_spec has no value strategy for parameter {name}: {tp!r}; extend _strategy")


MEASURE_CLASSES = [e.cls for e in REGISTRY]


def test_registry_has_the_classic_measures() -> None:
    names = {c.name for c in MEASURE_CLASSES}
    assert {
        "AP",
        "nDCG",
        "P",
        "R",
        "RR",
        "Rprec",
        "Bpref",
        "Success",
        "NumRet",
        "NumRel",
        "NumRelRet",
        "Judged",
    } <= names


@pytest.mark.parametrize("cls", MEASURE_CLASSES, ids=[c.name for c in MEASURE_CLASSES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_str_round_trip(cls: type[Measure], data: st.DataObject) -> None:
    values = {}
    for info in cls.params():
        values[info.name] = data.draw(_strategy(info.name, info.type), label=info.name)
    try:
        m = cls(**values)
    except (ValueError, TypeError):
        reject()
    text = str(m)
    again = REGISTRY.parse(text)
    assert type(again) is cls
    assert again == m, text
    assert str(again) == text


# ------------------------------------------------------------------ ir_measures fallback
@pytest.mark.parametrize(
    ("text", "expected_str"),
    [("ERR@10", "ERR@10"), ("RBP(p=0.5,rel=1)", "RBP(p=0.5,rel=1)"), ("Compat(p=0.8)", "Compat(p=0.8)")],
)
def test_ir_measures_name_resolves(registry, text: str, expected_str: str) -> None:
    m = registry.parse(text)
    assert isinstance(m, Measure)
    assert type(m) not in MEASURE_CLASSES  # not a registered rankeval measure
    assert str(m) == expected_str
    assert registry.parse(str(m)) == m


def test_ir_measures_rbp_default_round_trip(registry) -> None:
    m = registry.parse("RBP(p=0.8,rel=1)")
    assert isinstance(m, Measure)
    again = registry.parse(str(m))
    assert again == m
    # p=0.8 is ir_measures' default, so it equals RBP without p
    assert registry.parse("RBP(rel=1)") == m
