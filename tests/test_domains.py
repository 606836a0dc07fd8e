"""Parameter domains (docs: formats.md, Error messages): every measure parameter declares the values its formula
admits; a value outside is a usage error (exit code 2) pointing at the value and giving the
allowed range; ``str()`` of every accepted measure parses back to an equal measure; and the
spec parser raises nothing but :class:`~rankeval.errors.SpecError`, whatever the text."""

from __future__ import annotations

import math
import traceback
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from rankeval_csdcg import NCSDCG
from rankeval_tar import Threshold
from rankeval_tbg import HTBG, TBG
from rankeval_trec import AP, P
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import MeasureError, SpecError, UsageError
from rankeval.measures.base import INT32_MAX, Domain, Duration, Measure, ParamError, ParamInfo, param
from rankeval.measures.plugins import load_registry
from rankeval.spec import format_value_text, parse_spec

DATA = Path(__file__).parent / "data"
QRELS = str(DATA / "trec_eval" / "qrels.test")
RUN = str(DATA / "trec_eval" / "results.test")
TOY = DATA / "htbg-toy"

# the four built-in families; the ir_measures bridge is fuzzed separately (see the end)
REGISTRY = load_registry(blocked=["rankeval_irmeasures"], entry_points=False)
CLASSES = [e.cls for e in REGISTRY]
FAMILIES = {"rankeval_trec", "rankeval_tbg", "rankeval_csdcg", "rankeval_tar"}


# ------------------------------------------------------------------ the declarations
CUTOFF = "[1, 2147483647]"
GRADE = "[-2147483648, 2147483647]"
# every numeric parameter of the built-in measures and its domain (same name, same domain)
DOMAINS = {
    "k": CUTOFF,  # trec cutoffs, CS-DCG's k
    "level": CUTOFF,
    "rel": GRADE,  # trec_eval -l; TBG's relevant grade: 0 and negative grades are grades too
    "h": "(0, inf)",  # a half-life (seconds)
    "p_click_rel": "[0, 1]",
    "p_click_nonrel": "[0, 1]",
    "p_save_rel": "[0, 1]",
    "p_save_nonrel": "[0, 1]",
    "t_summary": "[0, inf)",
    "t_alpha": "[0, inf)",
    "t_beta": "[0, inf)",
    "max_docs": "[0, 2147483647]",  # 0 = all
    "smax": "(0, inf)",  # a divisor
    "default_cost": "[0, inf)",
    "cost": "[0, inf)",  # CS-DCG's C
    "p": "(0, 100]",  # recall@P%
    "r": "[0, 1]",  # reliability@r
    "recall": "[0, 1]",  # IPrec's recall level
    "mult": "(0, inf)",  # Rprec_mult's multiple of R
    "beta": "[0, inf)",  # set_F's beta
    "a": "(-inf, inf)",  # utility's coefficients
    "b": "(-inf, inf)",
    "c": "(-inf, inf)",
    "d": "(-inf, inf)",
    "num_docs": "[0, 9007199254740992]",  # utility's documents in the collection (trec_eval -N)
}


def _base(tp: Any) -> Any:
    """*tp* without ``None`` (``int | None`` → ``int``)."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        return next(a for a in get_args(tp) if a is not type(None))
    return tp


def _numeric(tp: Any) -> bool:
    return _base(tp) in (int, float, Duration)


def test_the_four_families_are_loaded() -> None:
    assert {e.plugin for e in REGISTRY} == FAMILIES
    assert not REGISTRY.failures


@pytest.mark.parametrize("cls", CLASSES, ids=[c.name for c in CLASSES])
def test_every_numeric_parameter_has_its_domain(cls: type[Measure]) -> None:
    for info in cls.params():
        if _numeric(info.type):
            assert info.domain is not None, f"{cls.name}.{info.name}"
            assert str(info.domain) == DOMAINS[info.name], f"{cls.name}.{info.name}"
            # the default is in the domain (None: the measure needs the value, or it is optional)
            assert info.default is None or info.default in info.domain, f"{cls.name}.{info.name}"
        else:
            assert info.domain is None, f"{cls.name}.{info.name}"


@pytest.mark.parametrize(
    ("domain", "text", "inside", "outside"),
    [
        (Domain(0, 1), "[0, 1]", [0, 1, 0.5, 5e-324], [-5e-324, 1.0000000000000002, math.nan]),
        (Domain(0, low_open=True), "(0, inf)", [5e-324, 1e308, 10**400], [0, -1, math.inf, math.nan]),
        (Domain(0), "[0, inf)", [0, 0.0, -0.0, 1e308], [-1e-300, math.inf]),
        (Domain(), "(-inf, inf)", [-1e308, 0, 1e308, -(10**400)], [math.inf, -math.inf, math.nan]),
        (Domain(1, INT32_MAX), CUTOFF, [1, 2**31 - 1], [0, 2**31, -1, 10**400]),
        (Domain(0, 100, low_open=True), "(0, 100]", [100, 1e-300], [0, 100.00000000000001]),
        (Domain(0, 1, high_open=True), "[0, 1)", [0, 0.9999999999999999], [1]),
    ],
)
def test_domain(domain: Domain, text: str, inside: list[Any], outside: list[Any]) -> None:
    assert str(domain) == text
    for x in inside:
        assert x in domain, x
    for x in outside:
        assert x not in domain, x
    assert True not in domain  # a bool is not a number here
    assert "1" not in domain


def test_default_domains_by_type() -> None:
    @dataclass_measure
    class M(Measure):
        name: ClassVar[str] = "M"
        n: int = param(3, "an int")
        x: float = param(0.5, "a float")
        t: Duration = param(Duration(60), "a duration")
        y: float | None = param(None, "optional", domain=Domain(0, 1))
        flag: bool = param(False, "a bool")
        word: str = param("a", "a string")
        choice: Literal["a", "b"] = param("a", "a choice")

    info = {p.name: p for p in M.params()}
    assert [str(info[n].domain) for n in ("n", "x", "t", "y")] == [
        CUTOFF,
        "(-inf, inf)",
        "(0, inf)",
        "[0, 1]",
    ]
    assert info["flag"].domain is info["word"].domain is info["choice"].domain is None
    assert isinstance(info["n"], ParamInfo)
    assert info["n"].problem(0) == "0 is outside [1, 2147483647]"
    assert info["t"].problem(Duration(-60)) == "-1m is outside (0, inf) seconds"
    assert info["y"].problem(None) is None
    with pytest.raises(ParamError, match=r"M: bad value for 'y': 2 is outside \[0, 1\]"):
        M(y=2.0)


def dataclass_measure(cls: type) -> Any:
    from dataclasses import dataclass

    return dataclass(frozen=True)(cls)


# ------------------------------------------------------------------ out of domain: specs
# (spec, words the message must contain, column of the caret: the offending value)
BAD_SPECS = [
    ("TBG(p_click_rel=2)", ["'p_click_rel'", "2 is outside [0, 1]"], 17),
    ("TBG(p_click_rel=-1)", ["'p_click_rel'", "-1 is outside [0, 1]"], 17),
    ("nTBG(p_save_rel=150%)", ["'p_save_rel'", "150% is outside [0, 1]"], 17),
    ("TBG(p_click_nonrel=1.0000001)", ["1.0000001 is outside [0, 1]"], 20),
    ("hTBG(p_save_nonrel=-0.1)", ["-0.1 is outside [0, 1]"], 20),
    ("hTBG@inf", ["'h'", "expected a duration", "'inf'"], 6),
    ("hTBG@1e999", ["'h'", "1e999 is outside (0, inf) seconds"], 6),
    ("hTBG@0", ["0 is outside (0, inf) seconds"], 6),
    ("TBG@h=-3h", ["-3h is outside (0, inf) seconds"], 7),
    ("nhTBG(h=1e306h)", ["1e306h is outside (0, inf) seconds"], 9),
    ("TBG(t_summary=-1)", ["'t_summary'", "-1 is outside [0, inf)"], 15),
    ("TBG(t_alpha=1e999)", ["'t_alpha'", "1e999 is outside [0, inf)"], 13),
    ("TBG(t_beta=-0.5)", ["'t_beta'", "-0.5 is outside [0, inf)"], 12),
    ("TBG(default_cost=-1)", ["'default_cost'", "-1 is outside [0, inf)"], 18),
    ("hTBG(smax=0)", ["'smax'", "0 is outside (0, inf)"], 11),
    ("hTBG(max_docs=-1)", ["'max_docs'", "-1 is outside [0, 2147483647]"], 15),
    ("hTBG(max_docs=2147483648)", ["2147483648 is outside [0, 2147483647]"], 15),
    ("TBG(rel=1e10)", ["'rel'", f"1e10 is outside {GRADE}"], 9),
    ("nCS-DCG@1e308", ["'k'", f"1e308 is outside {CUTOFF}"], 9),
    ("nCS-DCG@0", ["'k'", f"0 is outside {CUTOFF}"], 9),
    ("CS-DCG(cost=-1)@10", ["'cost'", "-1 is outside [0, inf)"], 13),
    ("nCS-DCG(cost=1e999)@10", ["'cost'", "1e999 is outside [0, inf)"], 14),
    ("CS-DCG-neg@2147483648", [f"2147483648 is outside {CUTOFF}"], 12),
    ("P@0", ["'k'", f"0 is outside {CUTOFF}"], 3),
    ("P.0", ["'k'", f"0 is outside {CUTOFF}"], 3),
    ("ndcg_cut_0", [f"0 is outside {CUTOFF}"], 10),
    ("nDCG@-1", [f"-1 is outside {CUTOFF}"], 6),
    ("nDCG@2147483648", [f"2147483648 is outside {CUTOFF}"], 6),
    ("RR@" + "9" * 30, [f"{'9' * 30} is outside {CUTOFF}"], 4),
    ("AP(level=0)", ["'level'", f"0 is outside {CUTOFF}"], 10),
    ("map(rel=2147483648)", ["'rel'", f"2147483648 is outside {GRADE}"], 9),
    ("Bpref(rel=-1e300)", ["'rel'", f"-1e300 is outside {GRADE}"], 11),
    ("tar_recall@101%", ["'p'", "101% is outside (0, 100]"], 12),
    ("tar_recall@0%", ["'p'", "0% is outside (0, 100]"], 12),
    ("tar_recall@0", ["'p'", "0 is outside (0, 100]"], 12),
    ("tar_recall@1e999", ["'p'", "1e999 is outside (0, 100]"], 12),
    ("tar_reliability@1.5", ["'r'", "1.5 is outside [0, 1]"], 17),
    ("tar_reliability@150%", ["'r'", "150% is outside [0, 1]"], 17),
    ("tar_reliability(r=-0.01)", ["'r'", "-0.01 is outside [0, 1]"], 19),
]


def caret(text: str, column: int) -> list[str]:
    """The two lines under a message: the spec and a caret at *column*."""
    return ["    " + text, "    " + " " * (column - 1) + "^"]


@pytest.mark.parametrize(("text", "words", "column"), BAD_SPECS, ids=[t for t, _, _ in BAD_SPECS])
def test_out_of_domain_spec(text: str, words: list[str], column: int) -> None:
    with pytest.raises(SpecError) as info:
        REGISTRY.parse(text)
    err = info.value
    assert err.exit_code == 2
    for word in words:
        assert word in err.message, err.message
    assert err.message.startswith("bad value for '")
    assert err.column == column
    assert str(err).split("\n")[-2:] == caret(text, column)


@pytest.mark.parametrize(("text", "words", "column"), BAD_SPECS, ids=[t for t, _, _ in BAD_SPECS])
def test_out_of_domain_spec_on_the_command_line(text: str, words: list[str], column: int) -> None:
    result = CliRunner().invoke(app, [QRELS, RUN, "-m", "AP", "-m", text])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.output.startswith("rankeval: error: "), result.output
    for word in words:
        assert word in result.output
    assert result.output.rstrip("\n").split("\n")[-2:] == caret(text, column)


def test_the_caret_points_into_the_offending_spec_of_several() -> None:
    with pytest.raises(SpecError) as info:
        REGISTRY.parse_many("AP  nDCG@10 TBG(p_click_rel=2) P@5")
    assert info.value.column == 17
    assert str(info.value).split("\n")[-2:] == caret("TBG(p_click_rel=2)", 17)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("CS-DCG", ["CS-DCG needs a cutoff, e.g. CS-DCG@10"]),
        ("tar_recall", ["needs a percentage 0 < P <= 100"]),
        ("CS-DCG(agg=gmean)@10", ["agg=gmean is not defined for CS-DCG"]),
    ],
)
def test_checks_across_parameters_stay_with_the_measure(text: str, words: list[str]) -> None:
    with pytest.raises(SpecError) as info:
        REGISTRY.parse(text)
    assert not isinstance(info.value, ParamError)
    for word in words:
        assert word in info.value.message


# ------------------------------------------------------------------ out of domain: Python
@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TBG(p_click_rel=2), "TBG: bad value for 'p_click_rel': 2 is outside [0, 1]"),
        (lambda: TBG(p_click_rel=-1.0), "TBG: bad value for 'p_click_rel': -1 is outside [0, 1]"),
        (lambda: TBG(t_alpha=math.nan), "TBG: bad value for 't_alpha': nan is outside [0, inf)"),
        (lambda: HTBG(h=Duration(math.inf)), "hTBG: bad value for 'h': inf is outside (0, inf) seconds"),
        (lambda: HTBG(h=Duration(0)), "hTBG: bad value for 'h': 0 is outside (0, inf) seconds"),
        (lambda: HTBG(smax=0.0), "hTBG: bad value for 'smax': 0 is outside (0, inf)"),
        (lambda: HTBG(ideal="yes"), "hTBG: bad value for 'ideal': expected true or false, found yes"),
        (lambda: HTBG(ideal_rule="best"), "expected one of exact, reference, found best"),
        (lambda: NCSDCG(k=10, cost=math.inf), "nCS-DCG: bad value for 'cost': inf is outside [0, inf)"),
        (lambda: NCSDCG(k=2**31), f"nCS-DCG: bad value for 'k': 2147483648 is outside {CUTOFF}"),
        (lambda: P(k=0), f"P: bad value for 'k': 0 is outside {CUTOFF}"),
        (lambda: P(k=2.5), "P: bad value for 'k': expected an integer, found 2.5"),
        (lambda: P(k=True), "P: bad value for 'k': expected an integer, found true"),
        (lambda: AP(rel=10**400), "AP: bad value for 'rel': 1000000"),
        (lambda: AP(level=0), f"AP: bad value for 'level': 0 is outside {CUTOFF}"),
        (lambda: Threshold(compat="trec"), "expected one of none, clef, found trec"),
    ],
)
def test_out_of_domain_in_python(build: Any, message: str) -> None:
    with pytest.raises(ParamError) as info:
        build()
    err = info.value
    assert isinstance(err, SpecError) and isinstance(err, UsageError) and isinstance(err, ValueError)
    assert err.exit_code == 2
    assert message in str(err)
    assert len(str(err)) < 300  # a huge value is clipped


def test_in_domain_edges_in_python() -> None:
    assert TBG(p_click_rel=0.0, p_save_rel=1, t_summary=0, max_docs=0, rel=-(2**31)).rel == -(2**31)
    assert P(k=INT32_MAX).k == INT32_MAX
    assert HTBG(h=Duration(5e-324)).h == 5e-324
    import numpy as np

    assert P(k=np.int64(5)) == P(k=5)  # numpy numbers are numbers
    assert TBG(p_click_rel=np.float64(0.5)) == TBG(p_click_rel=0.5)


# ------------------------------------------------------------------ canonical text
@pytest.mark.parametrize(
    ("measure", "text"),
    [
        (TBG(h=Duration(5400)), "TBG@90m"),  # 1.5h
        (TBG(h=Duration(10800)), "TBG@3h"),
        (TBG(h=Duration(90)), "TBG@90"),
        (TBG(h=Duration(0.001)), "TBG@0.001"),
        (TBG(h=Duration(7200.5)), "TBG@7200.5"),
        (TBG(h=Duration(1e-320)), "TBG@1e-320"),
        (TBG(h=Duration(1e300)), None),  # 1e300 / 3600 * 3600 != 1e300: not written in hours
        (TBG(h=Duration(3600 * 0.1)), "TBG@6m"),
        (TBG(h=Duration(3600 * 1e-7)), None),
        (TBG(p_click_rel=1e-300), "TBG(p_click_rel=1e-300)"),
        (TBG(p_click_rel=0.1 + 0.2), "TBG(p_click_rel=0.30000000000000004)"),
        (TBG(p_click_rel=5e-324), "TBG(p_click_rel=5e-324)"),
        (TBG(t_summary=1e300, t_beta=1e16), "TBG(t_summary=1e+300,t_beta=1e+16)"),
        (TBG(t_alpha=123456789012345.0), "TBG(t_alpha=123456789012345)"),
        (TBG(default_cost=0.0), "TBG(default_cost=0)"),
        (P(k=INT32_MAX), "P@2147483647"),
        (AP(rel=-(2**31)), "AP(rel=-2147483648)"),
        (NCSDCG(k=10, cost=0.1 + 0.7), "nCS-DCG(cost=0.7999999999999999)@10"),
    ],
)
def test_canonical_text_parses_back(measure: Measure, text: str | None) -> None:
    if text is not None:
        assert str(measure) == text
    again = REGISTRY.parse(str(measure))
    assert again == measure
    assert type(again) is type(measure)
    assert str(again) == str(measure)


@pytest.mark.parametrize(
    "text",
    ["a", 'a"b', "it's", "back\\slash", '\\"', "a b", "", "none", "None", "1e5", "5%", "3h", "é", "\n"],
)
def test_string_values_parse_back(text: str) -> None:
    value = parse_spec(f"X(s={format_value_text(text)})").params[0][1]
    assert value.text == text


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text())
def test_any_string_value_parses_back(text: str) -> None:
    assert parse_spec(f"X(s={format_value_text(text)})").params[0][1].text == text


def test_optional_string_none_stays_a_string() -> None:
    @dataclass_measure
    class Labelled(Measure):
        name: ClassVar[str] = "Labelled"
        label: str | None = param("x", "a label")

    for value in ("none", "None", None, "a b", 'say "hi"'):
        m = Labelled(label=value)
        assert Labelled.from_spec(parse_spec(str(m))) == m, str(m)


# ------------------------------------------------------------------ property: round trip
def _bounds(domain: Domain, integer: bool) -> tuple[Any, Any]:
    low, high = domain.low, domain.high
    if integer:
        lo = None if math.isinf(low) else int(low) + (1 if domain.low_open else 0)
        hi = None if math.isinf(high) else int(high) - (1 if domain.high_open else 0)
        return lo, hi
    return (None if math.isinf(low) else low), (None if math.isinf(high) else high)


def in_domain(info: ParamInfo) -> st.SearchStrategy[Any]:
    """Values of a parameter that its type and domain accept."""
    tp = _base(info.type)
    optional = type(None) in get_args(info.type)
    if get_origin(tp) is Literal:
        base: st.SearchStrategy[Any] = st.sampled_from(get_args(tp))
    elif tp is bool:
        base = st.booleans()
    elif tp is str:
        base = st.text(max_size=12)
    else:
        assert info.domain is not None
        d = info.domain
        lo, hi = _bounds(d, tp is int)
        if tp is int:
            base = st.integers(lo, hi)
            edges = [x for x in (lo, hi, 0, 1, -1, 10**9) if x is not None and x in d]
        else:
            base = st.floats(
                lo,
                hi,
                exclude_min=d.low_open and lo is not None,
                exclude_max=d.high_open and hi is not None,
                allow_nan=False,
                allow_infinity=False,
            )
            specials = [0.0, 1.0, 0.1 + 0.2, 1e-300, 5e-324, 1e300, 5400.0, 0.001, 3600 * 1e-7, 7200.5, 1e16]
            edges = [x for x in [*specials, lo, hi] if x is not None and x in d]
        base = st.one_of(base, st.sampled_from(edges)) if edges else base
        if tp is Duration:
            base = base.map(Duration)
    return st.none() | base if optional else base


@pytest.mark.parametrize("cls", CLASSES, ids=[c.name for c in CLASSES])
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_str_parses_back_for_in_domain_values(cls: type[Measure], data: st.DataObject) -> None:
    values = {info.name: data.draw(in_domain(info), label=info.name) for info in cls.params()}
    try:
        m = cls(**values)
    except ParamError as exc:  # in-domain values never fail the domain check
        raise AssertionError(f"{cls.name}{values} rejected: {exc}") from exc
    except ValueError:  # the measure's own checks across parameters (a missing cutoff ...)
        reject()
    text = str(m)
    again = REGISTRY.parse(text)
    assert type(again) is cls
    assert again == m, text
    assert str(again) == text


# ------------------------------------------------------------------ property: out of domain
def _spec_text(value: Any) -> str | None:
    """How a spec writes *value* (None: a spec cannot write it)."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "1e999" if value > 0 else "-1e999"
    return repr(float(value))


def out_of_domain(info: ParamInfo) -> st.SearchStrategy[Any]:
    """Numbers of the parameter's type outside its domain (NaN and ±inf included)."""
    assert info.domain is not None
    d = info.domain
    integer = _base(info.type) is int
    options: list[st.SearchStrategy[Any]] = []
    if not math.isinf(d.low):
        if integer:
            lo = int(d.low) + (1 if d.low_open else 0)
            options.append(st.integers(max_value=lo - 1).filter(lambda x: x > -(10**30)))
        else:
            options.append(
                st.floats(max_value=d.low, exclude_max=not d.low_open, allow_nan=False, allow_infinity=False)
            )
    if not math.isinf(d.high):
        if integer:
            hi = int(d.high) - (1 if d.high_open else 0)
            options.append(st.integers(min_value=hi + 1, max_value=10**30))
        else:
            options.append(
                st.floats(
                    min_value=d.high, exclude_min=not d.high_open, allow_nan=False, allow_infinity=False
                )
            )
    if not integer:
        options.append(st.sampled_from([math.nan, math.inf, -math.inf]))
    return st.one_of(options)


NUMERIC = [
    (cls, info)
    for cls in CLASSES
    for info in cls.params()
    if info.domain is not None and info.domain != Domain()  # any finite number: only ±inf, NaN
]


@pytest.mark.parametrize(("cls", "info"), NUMERIC, ids=[f"{c.name}.{i.name}" for c, i in NUMERIC])
@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data())
def test_out_of_domain_values_are_spec_errors(
    cls: type[Measure], info: ParamInfo, data: st.DataObject
) -> None:
    value = data.draw(out_of_domain(info), label=info.name)
    if _base(info.type) is Duration:
        value = Duration(value)
    with pytest.raises(ParamError) as raised:
        cls(**{info.name: value})
    assert f"bad value for {info.name!r}" in raised.value.message
    assert f"is outside {info.domain}" in raised.value.message
    text = _spec_text(value)
    if text is None:
        return
    name = cls.name
    spec = f"{name}({info.name}={text})"
    with pytest.raises(SpecError) as parsed:
        REGISTRY.parse(spec)
    assert f"{text} is outside {info.domain}" in parsed.value.message, parsed.value.message
    assert parsed.value.column == len(name) + len(info.name) + 3


# ------------------------------------------------------------------ the largest values work
def test_the_largest_cutoff_is_computable(tmp_path: Path) -> None:
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 a 2 sens=1\nq1 0 b 1\nq1 0 c 0 sens=2\nq2 0 a 1\nq2 0 d 0 sens=1\n")
    r.write_text("q1 Q0 c 1 3 t\nq1 Q0 a 2 2 t\nq1 Q0 x 3 1 t\nq2 Q0 a 1 2 t\nq2 Q0 d 2 1 t\n")
    bases = ["R", "RR", "AP", "nDCG", "Success", "Judged", "nCS-DCG", "CS-DCG", "nCS-DCG(bounds=greedy)"]
    big = rankeval.evaluate(q, r, [f"{b}@{INT32_MAX}" for b in bases])
    small = rankeval.evaluate(q, r, [f"{b}@1000" for b in bases])
    assert big["value"].tolist() == small["value"].tolist()
    assert len(big) == len(bases) * 3  # two queries and the summary
    exact = rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", ["hTBG(max_docs=0)@3"])
    most = rankeval.evaluate(TOY / "truth.json", TOY / "prediction.json", [f"hTBG(max_docs={INT32_MAX})@3"])
    assert exact["value"].tolist() == most["value"].tolist()


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_csdcg_bounds_do_not_change_past_the_pool_size(method: str) -> None:
    # nCS-DCG computes its bounds with k capped at the largest pool: that must change nothing
    import numpy as np
    from rankeval_csdcg import exact_bounds, greedy_bounds

    solve = exact_bounds if method == "exact" else greedy_bounds
    rng = np.random.default_rng(7)
    for _ in range(50):
        query = np.sort(rng.integers(0, 3, 9))
        gain = np.exp2(rng.integers(0, 3, 9)) - 1.0
        sens = rng.integers(0, 3, 9).astype(float)
        pool = int(np.bincount(query).max())
        at_pool = solve(query, gain, sens, 3, pool, 2.5)
        beyond = solve(query, gain, sens, 3, pool + 7, 2.5)
        assert np.array_equal(at_pool[0], beyond[0]) and np.array_equal(at_pool[1], beyond[1])


def test_negative_cost_attribute_is_an_input_error(tmp_path: Path) -> None:
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("q1 0 a 1 cost=10\nq1 0 b 0 cost=-5\n")
    r.write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")
    with pytest.raises(rankeval.InputError, match="expected a non-negative number for cost="):
        rankeval.evaluate(q, r, ["TBG"])
    result = CliRunner().invoke(app, [str(q), str(r), "-m", "TBG"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{q}:2: expected a non-negative number for cost=" in result.output


# ------------------------------------------------------------------ fuzz: the spec parser
IR_MEASURES_NAMES = ["ERR", "RBP", "BPM", "IPrec", "SDCG", "NumQ", "SetP", "infAP", "Compat", "alpha_nDCG"]


def _grammar(registry: Any, extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Spec-like text: measure names and their parameter names, values that are in or out of
    domain, of the wrong type or not values at all, in and out of place."""
    names = [*sorted({*registry.measures, *registry.aliases, *extra}), "P.5", "recall", "map_cut.0", "nDCG@"]
    params = [
        *sorted({p.name for e in registry for p in e.cls.params()}),
        "foo",
        "_",
        "cutoff",
        "judged_only",
    ]
    number = st.one_of(
        st.integers(-(10**20), 10**20).map(str),
        st.floats(allow_nan=False).map(repr),
        st.sampled_from(
            ["1e999", "-0", "0", "1e308", "5e-324", ".5", "1.", "+3", "2147483648", "9" * 400, "0x1"]
        ),
    )
    value = st.one_of(
        st.tuples(number, st.sampled_from(["", "s", "m", "h", "%", "x"])).map("".join),
        st.sampled_from(
            ["none", "None", "true", "false", "exact", "inf", "nan", "'x'", '"a b"', '"', "'", "\\"]
        ),
        st.text(max_size=4),
    )
    pair = st.tuples(st.sampled_from(params), st.sampled_from(["=", "", "==", " = "]), value).map("".join)
    plist = st.lists(pair, max_size=4).map(lambda xs: "(" + ",".join(xs) + ")" if xs else "")
    at = st.one_of(st.just(""), value.map(lambda v: "@" + v), pair.map(lambda v: "@" + v))
    spec = st.tuples(st.sampled_from(names), plist, at, plist).map("".join)
    return st.one_of(
        spec,
        st.lists(spec, min_size=1, max_size=3).map(" ".join),
        st.tuples(spec, st.text(max_size=3), spec).map("".join),
    )


def _from_bridge(exc: BaseException) -> bool:
    """Whether *exc* (or an exception it was raised from) went through the ir_measures bridge
    or ir_measures itself."""
    seen: BaseException | None = exc
    while seen is not None:
        if "rankeval_irmeasures" in str(seen):
            return True
        for frame in traceback.extract_tb(seen.__traceback__):
            if "rankeval_irmeasures" in frame.filename or "/ir_measures/" in frame.filename:
                return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_parse(registry: Any, text: str) -> tuple[str, str, bool] | None:
    """None if *text* parses (and every measure's str parses back to it) or is a usage error;
    else (text, what went wrong, whether it came from the ir_measures bridge)."""
    try:
        measures = registry.parse_many(text)
    except UsageError:
        return None
    except MeasureError as exc:
        if "none of its installed providers computes it" in str(exc):
            return None  # a known measure whose provider is not installed: an environment fault
        return text, f"{type(exc).__name__}: {exc}", _from_bridge(exc)
    except Exception as exc:  # the point of the test
        return text, f"{type(exc).__name__}: {exc}", _from_bridge(exc)
    for m in measures:
        try:
            again = registry.parse(str(m))
        except Exception as exc:
            why = f"str {str(m)!r} does not parse back: {type(exc).__name__}: {exc}"
            return text, why, _from_bridge(exc) or type(m).__module__ == "rankeval_irmeasures"
        if again != m:
            why = f"str {str(m)!r} parses to {again!r}, not {m!r}"
            return text, why, type(m).__module__ == "rankeval_irmeasures"
    return None


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_fuzz_any_text_is_a_spec_or_a_spec_error(text: str) -> None:
    assert _check_parse(REGISTRY, text) is None


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_grammar(REGISTRY))
def test_fuzz_spec_like_text_is_a_spec_or_a_spec_error(text: str) -> None:
    assert _check_parse(REGISTRY, text) is None


FULL = load_registry(entry_points=False)
BRIDGE_FAILURES: list[tuple[str, str, bool]] = []


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_grammar(FULL, tuple(IR_MEASURES_NAMES)), st.text()))
def _fuzz_with_the_bridge(text: str) -> None:
    bad = _check_parse(FULL, text)
    if bad is not None:
        BRIDGE_FAILURES.append(bad)


def test_fuzz_with_the_ir_measures_bridge() -> None:
    """As above with the ir_measures bridge loaded: every spec parses (and prints back) or is
    a usage error; a measure ir_measures knows but cannot compute here is an environment
    fault naming the provider to install (exit 1)."""
    BRIDGE_FAILURES.clear()
    _fuzz_with_the_bridge()
    assert not BRIDGE_FAILURES, BRIDGE_FAILURES[:5]
