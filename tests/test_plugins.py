"""Plugin loading: -p modules, entry points, broken plugins, name conflicts, blocking, and
each hook of rankeval/extension.py (docs: plugins.md)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval import extension
from rankeval.cli.app import app
from rankeval.errors import PluginError, SpecError
from rankeval.measures.plugins import load_registry

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 1\n2 0 y 1\n3 0 z 1\n"
RUN = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 c 3 1 t\n2 Q0 y 1 5 t\n2 Q0 w 2 4 t\n"
# Hits@2 (relevant documents in the top 2): q1 1 (a) ; q2 1 (y) ; q3 0 ; mean 2/3
# Hits@3(rel=2): q1 1 (c) ; q2 0 ; q3 0 ; mean 1/3

HITS_MODULE = '''
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param


@dataclass(frozen=True)
class Hits(Measure):
    """Relevant documents in the top k."""

    name: ClassVar[str] = "{name}"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "relevant documents in the top k"
    source: ClassVar[str] = "test"

    k: int = param(10, "cutoff")
    rel: int = param(1, "minimum grade")

    def compute(self, data):
        rows = data.relevant_rows(self.rel)
        return data.query_sum(rows, (data.rank[rows] < self.k).astype(np.float64))


@hookimpl
def register_measures(register):
    register(Hits)
'''


def hits_module(name: str = "Hits") -> str:
    return HITS_MODULE.replace("{name}", name)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    q = tmp_path / "t.qrels"
    r = tmp_path / "t.run"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


@pytest.fixture
def make_module(tmp_path, monkeypatch):
    """Write importable modules into a fresh directory on sys.path; forget them afterwards."""
    pkg_dir = tmp_path / "site"
    pkg_dir.mkdir()
    monkeypatch.syspath_prepend(str(pkg_dir))
    created: list[str] = []

    def make(name: str, source: str) -> str:
        (pkg_dir / f"{name}.py").write_text(textwrap.dedent(source))
        created.append(name)
        importlib.invalidate_caches()
        return name

    make.dir = pkg_dir  # type: ignore[attr-defined]
    yield make
    for name in created:
        sys.modules.pop(name, None)


def invoke(args, **kw):
    return CliRunner().invoke(app, [str(a) for a in args], **kw)


def values(frame) -> dict[tuple[str, str], float]:
    """``{(measure, query id): value}``, the aggregate under query id ``None``."""
    return {
        (m, q if isinstance(q, str) else None): v
        for q, m, v in zip(frame["query_id"], frame["measure"], frame["value"], strict=True)
    }


def _smallest_plugin() -> str:
    """The first Python block under "The smallest plugin" in docs/plugins.md."""
    text = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("## The smallest plugin", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_smallest_plugin_in_the_docs(make_module, files) -> None:
    """docs/plugins.md's smallest plugin has at most 12 lines and works: Hits@k counts the
    relevant documents of the top k (QRELS/RUN above: q1 a, q2 y in the top 2; q3 has none)."""
    source = _smallest_plugin()
    assert len([line for line in source.splitlines() if line.strip()]) <= 12
    module = make_module("myhits_docs", source)
    q, r = files
    frame = rankeval.evaluate(q, r, "Hits@2 P@2", registry=load_registry([module]))
    got = values(frame)
    assert got[("Hits@2", "1")] == 1 and got[("Hits@2", "2")] == 1 and got[("Hits@2", "3")] == 0
    assert got[("Hits@2", None)] == pytest.approx(2 * got[("P@2", None)])


# --------------------------------------------------------------------- -p modules
def test_module_plugin_by_name(make_module, files) -> None:
    make_module("rk_hits", hits_module())
    reg = load_registry(["rk_hits"])
    assert reg.plugins["rk_hits"] == "--plugin"
    assert reg.plugins["rankeval_trec"] == "built-in"
    assert reg.measures["Hits"].plugin == "rk_hits"
    assert reg.failures == {}
    m = reg.parse("Hits@2")
    assert str(m) == "Hits@2"
    assert reg.parse(str(m)) == m
    q, r = files
    got = values(rankeval.evaluate(q, r, ["Hits@2", "Hits(rel=2)@3", "AP"], registry=reg))
    assert got[("Hits@2", "1")] == 1.0
    assert got[("Hits@2", "2")] == 1.0
    assert got[("Hits@2", "3")] == 0.0
    assert got[("Hits@2", None)] == pytest.approx(2 / 3)
    assert got[("Hits(rel=2)@3", None)] == pytest.approx(1 / 3)
    assert got[("AP", None)] == pytest.approx((5 / 6 + 1 / 2) / 3)


def test_module_plugin_object(make_module, files) -> None:
    make_module("rk_hits_obj", hits_module("HitsObj"))
    module = importlib.import_module("rk_hits_obj")
    reg = load_registry([module])
    assert reg.plugins["rk_hits_obj"] == "--plugin"
    assert reg.measures["HitsObj"].plugin == "rk_hits_obj"
    q, r = files
    got = values(rankeval.evaluate(q, r, "HitsObj@2", registry=reg))
    assert got[("HitsObj@2", None)] == pytest.approx(2 / 3)


def test_unknown_without_the_plugin() -> None:
    with pytest.raises(SpecError) as info:
        load_registry().parse("Hits@2")
    assert "unknown measure 'Hits'" in str(info.value)


def test_module_plugin_cli(make_module, files) -> None:
    make_module("rk_hits_cli", hits_module())
    q, r = files
    result = invoke([q, r, "-P", "rk_hits_cli", "-m", "Hits@2", "-q", "-p", "3"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "Hits@2                \t1\t1.000\n"
        "Hits@2                \t2\t1.000\n"
        "Hits@2                \t3\t0.000\n"
        "Hits@2                \tall\t0.667\n"
    )
    # --plugin is the long spelling
    result = invoke([q, r, "--plugin", "rk_hits_cli", "-m", "Hits@2"])
    assert result.output == "Hits@2                \tall\t0.6667\n"
    # the catalogue commands see it too
    out = invoke(["measures", "--plugin", "rk_hits_cli"]).output
    assert "Hits@k  [plugin: rk_hits_cli]" in out.splitlines()
    assert "    k: int in [1, 2147483647], default 10  — cutoff" in out.splitlines()
    out = invoke(["plugins", "--plugin", "rk_hits_cli"]).output
    assert "rk_hits_cli\t--plugin\tHits" in out.splitlines()


def test_module_plugin_missing_module(files) -> None:
    reg = load_registry(["rk_no_such_module_xyz"])
    assert "rk_no_such_module_xyz" in reg.failures
    assert "ModuleNotFoundError" in reg.failures["rk_no_such_module_xyz"]
    assert "rk_no_such_module_xyz" not in reg.plugins
    assert str(reg.parse("AP")) == "AP"


# --------------------------------------------------------------------- entry points
def _dist_info(where: Path, dist: str, entry: str, module: str) -> None:
    info = where / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rankeval]\n{entry} = {module}\n")


def test_entry_point_plugin(make_module, files) -> None:
    make_module("myplug_mod", hits_module("MyHits"))
    _dist_info(make_module.dir, "myplug", "myplug", "myplug_mod")
    importlib.invalidate_caches()
    reg = load_registry()
    assert reg.plugins["myplug"] == "entry point"
    assert reg.measures["MyHits"].plugin == "myplug"
    assert reg.failures == {}
    q, r = files
    got = values(rankeval.evaluate(q, r, "MyHits@2", registry=reg))
    assert got[("MyHits@2", None)] == pytest.approx(2 / 3)
    # without entry points, or blocked, it is not loaded
    assert "myplug" not in load_registry(entry_points=False).plugins
    blocked = load_registry(blocked=["myplug"])
    assert "myplug" not in blocked.plugins
    assert "MyHits" not in blocked.measures
    # the CLI loads entry-point plugins without -p
    result = invoke([q, r, "-m", "MyHits@2"])
    assert result.exit_code == 0, result.output
    assert result.output == "MyHits@2              \tall\t0.6667\n"
    out = invoke(["plugins"]).output
    assert "myplug\tentry point\tMyHits" in out.splitlines()
    result = invoke([q, r, "--plugin", "no:myplug", "-m", "MyHits@2"])
    assert result.exit_code == 2
    assert "unknown measure 'MyHits'" in result.output


def test_broken_entry_point_plugin(make_module) -> None:
    make_module("badplug_mod", "raise ImportError('badplug needs a missing dependency')\n")
    _dist_info(make_module.dir, "badplug", "badplug", "badplug_mod")
    importlib.invalidate_caches()
    reg = load_registry()
    assert "badplug" in reg.failures
    assert "entry point" in reg.failures["badplug"]
    assert "badplug needs a missing dependency" in reg.failures["badplug"]
    assert "badplug" not in reg.plugins
    assert str(reg.parse("nDCG@10")) == "nDCG@10"


# --------------------------------------------------------------------- broken plugins
def test_plugin_that_fails_to_import(make_module, files) -> None:
    make_module("rk_broken", "raise RuntimeError('boom at import')\n")
    make_module("rk_hits_ok", hits_module())
    reg = load_registry(["rk_broken", "rk_hits_ok"])
    assert "rk_broken" in reg.failures
    assert "cannot load" in reg.failures["rk_broken"]
    assert "RuntimeError: boom at import" in reg.failures["rk_broken"]
    assert "rk_broken" not in reg.plugins
    # built-in measures, the ir_measures fallback and the other plugin still work
    assert str(reg.parse("AP(rel=2)")) == "AP(rel=2)"
    assert str(reg.parse("ERR@10")) == "ERR@10"
    assert reg.measures["Hits"].plugin == "rk_hits_ok"

    q, r = files
    result = invoke([q, r, "--plugin", "rk_broken", "-m", "AP"])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert "rankeval: warning: plugin 'rk_broken'" in result.output
    assert "boom at import" in result.output
    assert "AP                    \tall\t0.4444\n" in result.output
    assert "Traceback" not in result.output
    out = invoke(["plugins", "--plugin", "rk_broken"]).output
    broken = [line for line in out.splitlines() if line.startswith("rk_broken\t")]
    assert len(broken) == 1
    assert broken[0].startswith("rk_broken\tBROKEN\t")
    assert "boom at import" in broken[0]


def test_plugin_whose_register_measures_raises(make_module, files) -> None:
    make_module(
        "rk_regfail",
        hits_module("GoodBefore").replace(
            "    register(Hits)\n", "    register(Hits)\n    raise RuntimeError('boom in register')\n"
        ),
    )
    make_module("rk_hits_ok2", hits_module())
    reg = load_registry(["rk_regfail", "rk_hits_ok2"])
    assert reg.failures["rk_regfail"] == "register_measures failed: RuntimeError: boom in register"
    # what it registered before failing is withdrawn
    assert "GoodBefore" not in reg.measures
    with pytest.raises(SpecError):
        reg.parse("GoodBefore@2")
    # everything else is there
    assert reg.measures["Hits"].plugin == "rk_hits_ok2"
    assert reg.measures["AP"].plugin == "rankeval_trec"
    q, r = files
    got = values(rankeval.evaluate(q, r, ["Hits@2", "AP"], registry=reg))
    assert got[("Hits@2", None)] == pytest.approx(2 / 3)


def test_plugin_with_misspelled_hook(make_module) -> None:
    make_module(
        "rk_typo",
        """
        from rankeval import hookimpl

        @hookimpl
        def register_measure(register):  # not a hook of rankeval
            pass
        """,
    )
    reg = load_registry(["rk_typo"])
    assert "rk_typo" in reg.failures
    assert "register_measure" in reg.failures["rk_typo"]
    assert "rk_typo" not in reg.plugins
    assert reg.measures["AP"].plugin == "rankeval_trec"


# --------------------------------------------------------------------- name conflicts
DUPLICATE_AP = """
from dataclasses import dataclass
from typing import ClassVar

from rankeval import Measure, hookimpl


@dataclass(frozen=True)
class AP(Measure):
    name: ClassVar[str] = "AP"

    def compute(self, data):
        raise NotImplementedError


@hookimpl
def register_measures(register):
    register(AP)
"""

DUPLICATE_ALIAS = """
from dataclasses import dataclass
from typing import ClassVar

from rankeval import Measure, hookimpl


@dataclass(frozen=True)
class MyMap(Measure):
    name: ClassVar[str] = "MyMap"
    aliases: ClassVar = {"map": {}}

    def compute(self, data):
        raise NotImplementedError


@hookimpl
def register_measures(register):
    register(MyMap)
"""


def test_duplicate_measure_name(make_module, files) -> None:
    make_module("rk_dupe", DUPLICATE_AP)
    with pytest.raises(PluginError) as info:
        load_registry(["rk_dupe"])
    msg = str(info.value)
    assert "'AP'" in msg
    assert "'rankeval_trec'" in msg
    assert "'rk_dupe'" in msg

    q, r = files
    result = invoke([q, r, "--plugin", "rk_dupe", "-m", "AP"])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert "rankeval_trec" in result.output and "rk_dupe" in result.output


def test_duplicate_alias(make_module) -> None:
    make_module("rk_dupe_alias", DUPLICATE_ALIAS)
    with pytest.raises(PluginError) as info:
        load_registry(["rk_dupe_alias"])
    msg = str(info.value)
    assert "'map'" in msg
    assert "'rankeval_trec'" in msg
    assert "'rk_dupe_alias'" in msg


def test_two_external_plugins_same_name(make_module) -> None:
    make_module("rk_zap_a", hits_module("Zap"))
    make_module("rk_zap_b", hits_module("Zap"))
    with pytest.raises(PluginError) as info:
        load_registry(["rk_zap_a", "rk_zap_b"])
    msg = str(info.value)
    assert "'Zap'" in msg
    assert "'rk_zap_a'" in msg
    assert "'rk_zap_b'" in msg


# --------------------------------------------------------------------- blocking
def test_block_irmeasures_plugin(files) -> None:
    reg = load_registry(blocked=["rankeval_irmeasures"])
    assert "rankeval_irmeasures" not in reg.plugins
    assert str(reg.parse("AP")) == "AP"
    with pytest.raises(SpecError) as info:
        reg.parse("ERR@10")
    assert "unknown measure 'ERR'" in str(info.value)
    # not blocked: resolves
    assert str(load_registry().parse("ERR@10")) == "ERR@10"

    q, r = files
    result = invoke([q, r, "--plugin", "no:rankeval_irmeasures", "-m", "ERR@10"])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    assert "unknown measure 'ERR'" in result.output
    assert "Traceback" not in result.output
    out = invoke(["plugins", "--plugin", "no:rankeval_irmeasures"]).output
    listed = [line.split("\t")[0] for line in out.splitlines()]
    assert "rankeval_trec" in listed
    assert "rankeval_irmeasures" not in listed


def test_block_builtin_trec_plugin() -> None:
    reg = load_registry(blocked=["rankeval_trec"])
    assert "rankeval_trec" not in reg.plugins
    assert "AP" not in reg.measures
    assert "nDCG" not in reg.measures
    assert all(e.plugin != "rankeval_trec" for e in reg.measures.values())
    assert "rankeval_irmeasures" in reg.plugins


# --------------------------------------------------------------------- hooks
def test_hookspecs_are_the_ones_tested() -> None:
    names = sorted(n for n in dir(extension) if hasattr(getattr(extension, n), "rankeval_spec"))
    # every hook has its own tests: register_measures (test_register_measures_hook_*),
    # resolve_measure (test_resolve_measure_hook_*) here; random_model, register_formats and
    # register_commands in tests/test_extension_points.py; register_dialects in tests/test_host.py
    assert names == [
        "random_model",
        "register_commands",
        "register_dialects",
        "register_formats",
        "register_measures",
        "resolve_measure",
    ]


def test_register_measures_hook_builtin_dogfooding(make_module) -> None:
    make_module("rk_hits_hook", hits_module())
    reg = load_registry(["rk_hits_hook"])
    impls = [i.plugin_name for i in reg.pm.hook.register_measures.get_hookimpls()]
    assert "rankeval_trec" in impls
    assert "rk_hits_hook" in impls
    assert {e.cls.name: e.plugin for e in reg}["AP"] == "rankeval_trec"
    assert {e.cls.name: e.plugin for e in reg}["Hits"] == "rk_hits_hook"


RESOLVER = '''
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param

CALLS = []


@dataclass(frozen=True)
class Zed(Measure):
    """Constant measure: every query scores k."""

    name: ClassVar[str] = "Zed"
    at: ClassVar = "k"

    k: int = param(1, "the constant")

    def compute(self, data):
        return np.full(data.num_queries, float(self.k))


@hookimpl
def resolve_measure(spec):
    CALLS.append(spec)
    if spec.startswith("Zed@"):
        return Zed(k=int(spec[4:]))
    if spec == "ERR@10":
        return Zed(k=7)
    return None
'''


def test_resolve_measure_hook(make_module, files) -> None:
    make_module("rk_resolver", RESOLVER)
    reg = load_registry(["rk_resolver"])
    module = sys.modules["rk_resolver"]
    assert reg.plugins["rk_resolver"] == "--plugin"

    m = reg.parse("Zed@3")
    assert type(m).__name__ == "Zed"
    assert m.k == 3
    assert module.CALLS == ["Zed@3"]

    # registered names and aliases never reach the hook
    module.CALLS.clear()
    assert str(reg.parse("AP")) == "AP"
    assert str(reg.parse("map")) == "AP"
    assert str(reg.parse("P.5")) == "P@5"
    assert module.CALLS == []

    # in a multi-spec string, the hook sees only its own spec
    module.CALLS.clear()
    ms = reg.parse_many("AP Zed@4  nDCG@10")
    assert [str(x) for x in ms] == ["AP", "Zed@4", "nDCG@10"]
    assert module.CALLS == ["Zed@4"]

    # the measure it returns is evaluated like any other
    q, r = files
    got = values(rankeval.evaluate(q, r, ["Zed@3"], registry=reg))
    assert got == {("Zed@3", "1"): 3.0, ("Zed@3", "2"): 3.0, ("Zed@3", "3"): 3.0, ("Zed@3", None): 3.0}


def test_resolve_measure_hook_none_falls_through(make_module) -> None:
    make_module("rk_resolver2", RESOLVER)
    reg = load_registry(["rk_resolver2"])
    module = sys.modules["rk_resolver2"]
    # rk_resolver2 returns None for Compat: the ir_measures plugin resolves it
    m = reg.parse("Compat(p=0.8)")
    assert str(m) == "Compat(p=0.8)"
    assert type(m).__name__ != "Zed"
    assert module.CALLS == ["Compat(p=0.8)"]
    # nobody knows it: unknown measure
    with pytest.raises(SpecError) as info:
        reg.parse("Zzqxv@5")
    assert "unknown measure 'Zzqxv'" in str(info.value)
    assert module.CALLS == ["Compat(p=0.8)", "Zzqxv@5"]


def test_resolve_measure_hook_plugin_before_fallback(make_module) -> None:
    """A -p plugin's resolver is asked before the built-in ir_measures fallback."""
    make_module("rk_resolver3", RESOLVER)
    reg = load_registry(["rk_resolver3"])
    m = reg.parse("ERR@10")
    assert type(m).__name__ == "Zed"
    assert m.k == 7


def test_resolve_measure_hook_builtin_irmeasures(files) -> None:
    import ir_measures

    q, r = files
    reg = load_registry()
    got = values(rankeval.evaluate(q, r, ["ERR@10", "Compat(p=0.8)"], registry=reg))
    qrels = {"1": {"a": 1, "b": 0, "c": 2}, "2": {"x": 1, "y": 1}, "3": {"z": 1}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"y": 5.0, "w": 4.0}}
    for spec in ("ERR@10", "Compat(p=0.8)"):
        measure = ir_measures.parse_measure(spec)
        per_query = {mm.query_id: mm.value for mm in ir_measures.iter_calc([measure], qrels, run)}
        assert set(per_query) <= {"1", "2", "3"}
        assert got[(spec, "1")] == pytest.approx(per_query["1"], abs=1e-12)
        assert got[(spec, "2")] == pytest.approx(per_query["2"], abs=1e-12)
        assert got[(spec, "3")] == 0.0  # judged, not retrieved: 0 (trec_eval -c)
        assert per_query.get("3", 0.0) == 0.0
        assert got[(spec, None)] == pytest.approx((per_query["1"] + per_query["2"]) / 3, abs=1e-12)
    assert got[("ERR@10", "1")] > 0
    assert got[("Compat(p=0.8)", "1")] > 0


def test_rbp_through_irmeasures(files) -> None:
    """docs: measures.md names RBP(p=0.8) as computed through ir_measures."""
    q, r = files
    # binary-relevance query so the gain is unambiguous: q2 has y (rel 1) at rank 1, w unjudged
    # ir_measures computes RBP with its cwl_eval provider, which needs the rel parameter
    result = invoke([q, r, "-m", "RBP(p=0.5,rel=1)", "-q", "-p", "6"])
    assert result.exception is None, repr(result.exception)
    assert result.exit_code == 0, result.output
    rows = {line.split("\t")[1]: float(line.split("\t")[2]) for line in result.output.splitlines()}
    # RBP = (1 - p) * sum_i rel_i p^(i-1): q2 = 0.5 * 1 = 0.5
    assert rows["2"] == pytest.approx(0.5)
    assert rows["3"] == 0.0


def test_ir_measures_name_without_provider_is_a_clear_error(files) -> None:
    """alpha_nDCG: ir_measures parses it but no installed provider (pyndeval) computes it —
    an environment fault (exit 1) that names what to install."""
    q, r = files
    result = invoke([q, r, "-m", "alpha_nDCG@10"])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "none of its installed providers computes it" in result.output
    assert "pyndeval" in result.output


DECLARATION_MISTAKES = [
    (
        "not a dataclass",
        "class Bad(Measure):\n    name: ClassVar[str] = 'Bad'\n    k: int = 3\n",
        "must be decorated with @dataclass(frozen=True)",
    ),
    (
        "not frozen",
        "@dataclass\nclass Bad(Measure):\n    name: ClassVar[str] = 'Bad'\n",
        "cannot inherit non-frozen dataclass from a frozen one",  # Python refuses it at import
    ),
    (
        "name without ClassVar",
        "@dataclass(frozen=True)\nclass Bad(Measure):\n    name: str = 'Bad'\n",
        "'name' became a parameter",
    ),
]


@pytest.mark.parametrize("case,body,words", DECLARATION_MISTAKES, ids=[d[0] for d in DECLARATION_MISTAKES])
def test_declaration_mistakes_are_a_broken_plugin(make_module, case, body, words) -> None:
    """A measure class that would silently lose its parameters (not a frozen dataclass
    itself) or gain one (a class variable without ClassVar) is refused by name."""
    source = (
        "from dataclasses import dataclass\nfrom typing import ClassVar\n"
        "from rankeval import Measure, hookimpl\n\n"
        + body
        + "\n@hookimpl\ndef register_measures(register):\n    register(Bad)\n"
    )
    make_module("rk_bad_decl", source)
    registry = rankeval.load_registry(["rk_bad_decl"])
    assert "Bad" not in registry.measures
    assert words in registry.failures["rk_bad_decl"]


def test_plugin_that_registers_nothing_is_reported(make_module) -> None:
    """A --plugin module without hooks, or a folder imported as a namespace package (the
    PYTHONPATH=. mistake of a plugin kept in mything/mything.py), is a broken plugin saying
    why, not a plugin listed with no measures."""
    from rankeval.measures.plugins import load_registry

    make_module("rk_nothing", "x = 1\n")
    (make_module.dir / "rk_folder").mkdir()
    (make_module.dir / "rk_folder" / "rk_folder.py").write_text(HITS_MODULE.replace("{name}", "Hits"))
    importlib.invalidate_caches()
    try:
        reg = load_registry(["rk_nothing", "rk_folder"])
        assert "rk_nothing" not in reg.plugins and "rk_folder" not in reg.plugins
        assert "defines no @hookimpl function" in reg.failures["rk_nothing"]
        assert "without __init__.py" in reg.failures["rk_folder"]
        assert "PYTHONPATH=rk_folder" in reg.failures["rk_folder"]
        assert "Hits" not in reg.measures
    finally:
        sys.modules.pop("rk_folder", None)
