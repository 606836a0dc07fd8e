"""Measure names (docs: measures.md#names): unique across plugins case-insensitively, a plugin
whose name collides refused naming both plugins, lookup exact then case-insensitive, names
the registry knows never handed to the resolve_measure hooks (the ir_measures bridge), and a
compat mode's own names first."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import PluginError, SpecError
from rankeval.measures.plugins import load_registry

DATA = Path(__file__).parent / "data" / "trec_eval"

CLASS = '''
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param

CALLS = []


@dataclass(frozen=True)
class Named(Measure):
    """Constant measure: every query scores x."""

    name: ClassVar[str] = {name!r}
    aliases: ClassVar = {aliases!r}
    cut_prefixes: ClassVar = {prefixes!r}

    x: int = param(1, "the constant")

    def compute(self, data):
        return np.full(data.num_queries, float(self.x))


@hookimpl
def register_measures(register):
    register(Named)


@hookimpl
def resolve_measure(spec):
    CALLS.append(spec)
    return None
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """``plugin(module, name, aliases={}, prefixes=())``: an importable plugin module that
    registers one measure class with these names (and records what reaches its resolver)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(module: str, name: str, aliases: dict | None = None, prefixes: tuple = ()) -> str:
        source = CLASS.format(name=name, aliases=aliases or {}, prefixes=prefixes)
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        made.append(module)
        importlib.invalidate_caches()
        return module

    yield make
    for module in made:
        sys.modules.pop(module, None)


# ------------------------------------------------------------------------------ uniqueness
def test_names_of_distinct_classes_are_disjoint_case_insensitively():
    registry = load_registry(entry_points=False)
    classes: dict[str, set[str]] = defaultdict(set)
    for entry in registry:
        for name in (entry.cls.name, *entry.cls.aliases, *entry.cls.cut_prefixes):
            classes[name.casefold()].add(entry.cls.name)
    assert {name: owners for name, owners in classes.items() if len(owners) > 1} == {}
    assert len({e.cls.name.casefold() for e in registry}) == len(registry.measures)


@pytest.mark.parametrize(
    ("name", "aliases", "prefixes", "taken", "owner", "as_registered"),
    [
        ("ap", {}, (), "ap", "rankeval_trec", "AP"),
        ("Ndcg", {}, (), "Ndcg", "rankeval_trec", "nDCG"),
        ("Named", {"Map": {}}, (), "Map", "rankeval_trec", "map"),
        ("Named", {}, ("NDCG_CUT",), "NDCG_CUT", "rankeval_trec", "ndcg_cut"),
        ("TAR_WSS_95", {}, (), "TAR_WSS_95", "rankeval_tar", "tar_wss_95"),
        ("AP", {}, (), "AP", "rankeval_trec", None),  # the same spelling: a duplicate
    ],
)
def test_a_name_taken_in_any_case_is_refused_naming_both_plugins(
    plugin, name, aliases, prefixes, taken, owner, as_registered
):
    module = plugin("rk_clash", name, aliases, prefixes)
    with pytest.raises(PluginError) as info:
        load_registry([module], entry_points=False)
    message = str(info.value)
    assert f"measure name {taken!r} is registered by both plugin {owner!r}" in message
    assert "and plugin 'rk_clash'" in message
    if as_registered is None:
        assert "case-insensitive" not in message
    else:
        assert f"(as {as_registered!r}: names are case-insensitive)" in message


def test_a_colliding_plugin_is_reported_by_the_cli_like_a_duplicate(plugin):
    plugin("rk_clash_cli", "Ap")
    result = CliRunner().invoke(app, ["plugins", "--plugin", "rk_clash_cli"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "'Ap' is registered by both plugin 'rankeval_trec' (as 'AP'" in result.output
    assert "'rk_clash_cli'" in result.output


def test_names_of_one_class_may_differ_by_case(plugin):
    # AP itself is registered with the aliases map and MAP
    module = plugin("rk_cases", "Foo", {"foo": {}, "FOO_ALL": {}, "foo_all": {}})
    registry = load_registry([module], entry_points=False)
    assert registry.measures["Foo"].plugin == "rk_cases"
    assert [str(registry.parse(s)) for s in ("foo", "fOO", "Foo_All")] == ["Foo", "Foo", "Foo"]


def test_aliases_of_one_class_differing_by_case_and_parameters_are_ambiguous(plugin):
    module = plugin("rk_ambiguous", "Foo", {"foo1": {"x": 1}, "FOO1": {"x": 2}})
    registry = load_registry([module], entry_points=False)
    assert registry.parse("foo1").x == 1  # an exact spelling is not ambiguous
    assert registry.parse("FOO1").x == 2
    with pytest.raises(SpecError, match="measure name 'Foo1' is ambiguous: foo1, FOO1"):
        registry.parse("Foo1")


# ------------------------------------------------------------------------------ lookup
@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("AP", "AP"),
        ("ap", "AP"),
        ("Ap", "AP"),
        ("map", "AP"),
        ("MAP", "AP"),
        ("Map", "AP"),
        ("ap(rel=2)@10", "AP(rel=2)@10"),
        ("nDCG@10", "nDCG@10"),
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("p@5", "P@5"),
        ("p_5", "P@5"),
        ("NDCG_CUT.10", "nDCG@10"),
        ("rprec", "Rprec"),
        ("RPrec", "Rprec"),  # ir_measures' spelling: rankeval's own measure, not the bridge
        ("BPREF", "Bpref"),
        ("recip_RANK", "RR"),
        ("TAR_AP", "tar_ap"),
    ],
)
def test_lookup_is_exact_then_case_insensitive(spec, canonical):
    registry = load_registry(entry_points=False)
    measure = registry.parse(spec)
    assert str(measure) == canonical
    assert type(measure).__module__.startswith(("rankeval_trec", "rankeval_tar"))
    assert registry.parse(str(measure)) == measure


def test_names_found_in_any_case_never_reach_the_resolvers(plugin):
    module = plugin("rk_resolver", "Named")
    registry = load_registry([module], entry_points=False)
    calls = sys.modules[module].CALLS
    measures = registry.parse_many("ap Ndcg@10 RPrec p_5 bpref named")
    assert [str(m) for m in measures] == ["AP", "nDCG@10", "Rprec", "P@5", "Bpref", "Named"]
    assert calls == []
    # a name nobody registered does reach them (the bridge resolves ERR)
    assert str(registry.parse("ERR@10")) == "ERR@10"
    assert calls == ["ERR@10"]


def test_unknown_names_suggest_close_ones_in_any_case():
    with pytest.raises(SpecError, match=r"unknown measure 'NDGC'; did you mean nDCG"):
        load_registry(entry_points=False).parse("NDGC@10")


def test_ap_is_average_precision():
    # issue: -m ap computed the CLEF TAR evaluator's ap (file order) instead of AP
    frame = rankeval.evaluate(DATA / "qrels.test", DATA / "results.test", ["ap", "AP", "map"])
    summary = frame[frame.query_id.isna()]
    assert summary.measure.tolist() == ["AP"]
    assert summary.value.item() == pytest.approx(0.1785, abs=5e-5)  # trec_eval's map


# ------------------------------------------------------------------------------ compat names
def test_a_compat_modes_names_come_first_spelled_exactly():
    registry = load_registry(entry_points=False)
    aliases = {"ap": "nDCG", "official": "P"}
    assert [str(m) for m in registry.parse_many("ap AP Ap", aliases=aliases)] == ["nDCG", "AP", "AP"]
    # not expanded as trec_eval's measure set: the mode's name wins
    assert [str(m) for m in registry.parse_many("official", aliases=aliases)] == ["P"]
    assert len(registry.parse_many("official")) > 1
    assert str(registry.parse("ap@10", aliases=aliases)) == "nDCG@10"
