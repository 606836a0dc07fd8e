"""Faults of plugins and of the tools they call are isolated and named (docs: plugins.md,
"When something goes wrong"; measures.md, ir_measures): a plugin's exception is an error naming the measure and
the plugin, never a traceback; a plugin that fails to load leaves the others working;
``RANKEVAL_DISABLE_PLUGIN_AUTOLOAD`` switches entry-point plugins off; the ir_measures bridge
turns every parse or validation problem into a spec error and every provider failure into
one line naming the measure and the provider."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import MeasureError, PluginError, RankevalError, SpecError
from rankeval.measures.plugins import load_registry

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 1\n2 0 y 1\n3 0 z 1\n"
RUN = "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 c 3 1 t\n2 Q0 y 1 5 t\n2 Q0 w 2 4 t\n"
QIDS = {"1": {"a": 1, "b": 0, "c": 2}, "2": {"x": 1, "y": 1}, "3": {"z": 1}}
RUN_DICT = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"y": 5.0, "w": 4.0}}
AP_ALL = (5 / 6 + 1 / 2) / 3


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    q, r = tmp_path / "t.qrels", tmp_path / "t.run"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


@pytest.fixture
def make_module(tmp_path, monkeypatch):
    """Write importable modules into a fresh directory on sys.path; forget them afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("RANKEVAL_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("RANKEVAL_DEBUG", raising=False)
    created: list[str] = []

    def make(name: str, source: str) -> str:
        (site / f"{name}.py").write_text(textwrap.dedent(source))
        created.append(name)
        importlib.invalidate_caches()
        return name

    make.dir = site  # type: ignore[attr-defined]
    yield make
    for name in created:
        sys.modules.pop(name, None)


def invoke(args):
    return CliRunner().invoke(app, [str(a) for a in args])


def values(frame) -> dict[tuple[str, str], float]:
    """``{(measure, query id): value}``, the aggregate under query id ``None``."""
    return {
        (m, q if isinstance(q, str) else None): v
        for q, m, v in zip(frame["query_id"], frame["measure"], frame["value"], strict=True)
    }


def assert_clean_cli(result, exit_code: int, words: list[str]) -> None:
    """Exit code, one ``rankeval: error:`` message with *words*, no traceback."""
    assert result.exit_code == exit_code, result.output
    assert "rankeval: error:" in result.output, result.output
    for word in words:
        assert word in result.output, (word, result.output)
    assert "Traceback" not in result.output, result.output


# ------------------------------------------------------------- faults in a measure's code
MEASURE = """
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param


@dataclass(frozen=True)
class Faulty(Measure):
    name: ClassVar[str] = "Faulty"
    at: ClassVar[str | None] = "k"

    k: int = param(1, "a parameter")

    def __post_init__(self):
        POST_INIT

    def view_level(self):
        VIEW_LEVEL

    def compute(self, data):
        COMPUTE

    def aggregate(self, values):
        AGGREGATE


@hookimpl
def register_measures(register):
    register(Faulty)
"""
DEFAULTS = {
    "POST_INIT": "pass",
    "VIEW_LEVEL": "return 1",
    "COMPUTE": "return np.ones(data.num_queries)",
    "AGGREGATE": "return float(np.mean(values))",
}


def measure_module(**parts: str) -> str:
    source = MEASURE
    for key, default in DEFAULTS.items():
        source = source.replace(key, parts.get(key.lower(), default))
    return source


# (id, what the measure does, the library's exception, exit code, words of the message)
MEASURE_FAULTS = [
    ("compute-raises", {"compute": "return 1 / 0"}, MeasureError, 1, ["ZeroDivisionError"]),
    (
        "aggregate-raises",
        {"aggregate": "raise RuntimeError('no aggregate today')"},
        MeasureError,
        1,
        ["RuntimeError: no aggregate today"],
    ),
    ("wrong-length", {"compute": "return [1.0, 2.0]"}, MeasureError, 1, ["(2,) values for"]),
    ("a-string", {"compute": "return 'abc'"}, MeasureError, 1, ["returned a str, not one number per query"]),
    ("a-scalar", {"compute": "return 0.5"}, MeasureError, 1, ["() values for"]),
    ("None", {"compute": "return None"}, MeasureError, 1, ["returned a NoneType"]),
    ("strings", {"compute": "return np.array(['a'] * data.num_queries)"}, MeasureError, 1, ["not numbers"]),
    ("ragged", {"compute": "return [1.0, [2.0, 3.0], 4.0]"}, MeasureError, 1, ["not one number per query"]),
    ("aggregate-a-string", {"aggregate": "return 'high'"}, MeasureError, 1, ["not a number"]),
    ("view-level-raises", {"view_level": "raise KeyError('level')"}, MeasureError, 1, ["KeyError"]),
    ("view-level-garbage", {"view_level": "return 'two'"}, MeasureError, 1, ["view_level"]),
    (
        "post-init-raises",
        {"post_init": "raise ZeroDivisionError('in post_init')"},
        PluginError,
        1,
        ["failed building measure spec 'Faulty@2'", "ZeroDivisionError: in post_init"],
    ),
]


@pytest.mark.parametrize(
    ("parts", "error", "exit_code", "words"),
    [case[1:] for case in MEASURE_FAULTS],
    ids=[case[0] for case in MEASURE_FAULTS],
)
def test_fault_in_measure_code(make_module, files, parts, error, exit_code, words) -> None:
    name = make_module(f"rk_faulty_{abs(hash(str(parts)))}", measure_module(**parts))
    q, r = files
    reg = load_registry([name])
    assert reg.failures == {}
    with pytest.raises(error) as info:
        rankeval.evaluate(q, r, ["AP", "Faulty@2"], registry=reg)
    message = str(info.value)
    assert f"plugin {name}" in message
    assert "Faulty" in message
    for word in words:
        assert word in message, message
    if error is MeasureError:
        assert message.startswith(f"measure Faulty@2 (plugin {name}) ")
    assert info.value.exit_code == exit_code
    assert_clean_cli(
        invoke([q, r, "--plugin", name, "-m", "AP", "-m", "Faulty@2"]), exit_code, [name, *words]
    )


def test_fault_keeps_the_original_as_cause(make_module, files) -> None:
    """--debug shows the plugin's own traceback: the original exception is the __cause__."""
    name = make_module("rk_faulty_cause", measure_module(compute="return 1 / 0"))
    q, r = files
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(q, r, "Faulty", registry=load_registry([name]))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_fault_names_the_entry_point_plugin(make_module, files) -> None:
    """An entry-point plugin is named as `rankeval plugins` lists it, not by its module."""
    make_module("ep_faulty_module", measure_module(compute="return 1 / 0"))
    _dist_info(make_module.dir, "epfaulty", "epfaulty", "ep_faulty_module")
    importlib.invalidate_caches()
    q, r = files
    reg = load_registry()
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(q, r, "Faulty", registry=reg)
    assert "(plugin epfaulty)" in str(info.value)
    assert_clean_cli(invoke([q, r, "-m", "Faulty"]), 1, ["(plugin epfaulty) failed"])


def test_measure_objects_without_registry_are_named_by_module(make_module, files) -> None:
    name = make_module("rk_faulty_object", measure_module(aggregate="raise ValueError('x')"))
    module = importlib.import_module(name)
    q, r = files
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(q, r, [module.Faulty(k=3)])
    assert str(info.value) == f"measure Faulty@3 (plugin {name}) failed: ValueError: x"


def test_nan_values_are_not_a_fault(make_module, files) -> None:
    """NaN is a legitimate value (undefined for a query); only the shape and type are checked."""
    name = make_module("rk_faulty_nan", measure_module(compute="return [float('nan')] * data.num_queries"))
    q, r = files
    got = rankeval.evaluate(q, r, "Faulty", registry=load_registry([name]))
    assert len(got) == 4


# ------------------------------------------------------------- faults in hooks
RESOLVER = """
from rankeval import hookimpl


@hookimpl
def resolve_measure(spec):
    BODY
"""

# (id, resolve_measure body, words)
RESOLVER_FAULTS = [
    ("raises", "raise ValueError('cannot think')", ["failed resolving measure spec 'Zork@3'", "ValueError"]),
    ("sys-exit", "raise SystemExit(4)", ["failed resolving measure spec 'Zork@3'", "SystemExit: 4"]),
    (
        "not-a-measure",
        "return 'Zork'",
        ["resolved measure spec 'Zork@3' to 'Zork'", "not a rankeval Measure"],
    ),
]


@pytest.mark.parametrize(
    ("body", "words"), [c[1:] for c in RESOLVER_FAULTS], ids=[c[0] for c in RESOLVER_FAULTS]
)
def test_resolve_measure_hook_fault(make_module, files, body, words) -> None:
    name = make_module(f"rk_resolver_{abs(hash(body))}", RESOLVER.replace("BODY", body))
    reg = load_registry([name])
    # names the registry knows never reach the hook
    assert str(reg.parse("AP")) == "AP"
    with pytest.raises(PluginError) as info:
        reg.parse("Zork@3")
    assert f"plugin {name} " in str(info.value)
    for word in words:
        assert word in str(info.value)
    assert info.value.exit_code == 1
    q, r = files
    assert_clean_cli(invoke([q, r, "--plugin", name, "-m", "Zork@3"]), 1, [f"plugin {name}", *words])


# (id, module source, words in the recorded failure)
LOAD_FAULTS = [
    (
        "import-raises",
        "raise RuntimeError('boom at import')\n",
        ["cannot load (--plugin)", "RuntimeError: boom"],
    ),
    ("import-sys-exit", "import sys\nsys.exit(3)\n", ["cannot load (--plugin)", "SystemExit: 3"]),
    (
        "import-keyboard-interrupt",
        "raise KeyboardInterrupt\n",
        ["cannot load (--plugin)", "KeyboardInterrupt"],
    ),
    (
        "register-raises",
        measure_module().replace("    register(Faulty)", "    register(Faulty)\n    1 / 0"),
        ["register_measures failed: ZeroDivisionError"],
    ),
    (
        "register-sys-exit",
        measure_module().replace("    register(Faulty)", "    raise SystemExit('bye')"),
        ["register_measures failed: SystemExit: bye"],
    ),
    (
        "register-keyboard-interrupt",
        measure_module().replace("    register(Faulty)", "    raise KeyboardInterrupt"),
        ["register_measures failed: KeyboardInterrupt"],
    ),
    (
        "register-not-a-measure",
        measure_module().replace("register(Faulty)", "register(42)"),
        ["register_measures failed: TypeError"],
    ),
]


@pytest.mark.parametrize(("source", "words"), [c[1:] for c in LOAD_FAULTS], ids=[c[0] for c in LOAD_FAULTS])
def test_plugin_that_fails_to_load(make_module, files, source, words) -> None:
    name = make_module(f"rk_load_{abs(hash(source))}", source)
    reg = load_registry([name])
    assert name not in reg.plugins
    for word in words:
        assert word in reg.failures[name]
    assert "Faulty" not in reg.measures  # what it registered before failing is withdrawn
    q, r = files
    got = values(rankeval.evaluate(q, r, ["AP", "ERR@10"], registry=reg))
    assert got[("AP", None)] == pytest.approx(AP_ALL)
    result = invoke([q, r, "--plugin", name, "-m", "AP"])
    assert result.exit_code == 0, result.output
    assert f"rankeval: warning: plugin {name!r}" in result.output
    assert "AP                    \tall\t0.4444\n" in result.output
    assert "Traceback" not in result.output
    out = invoke(["plugins", "--plugin", name]).output
    assert any(line.startswith(f"{name}\tBROKEN\t") for line in out.splitlines()), out


# ------------------------------------------------------------- RANKEVAL_DISABLE_PLUGIN_AUTOLOAD
HITS = """
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param


@dataclass(frozen=True)
class NAME(Measure):
    name: ClassVar[str] = "NAME"
    at: ClassVar[str | None] = "k"

    k: int = param(10, "cutoff")

    def compute(self, data):
        rows = data.relevant_rows(1)
        return data.query_sum(rows, (data.rank[rows] < self.k).astype(np.float64))


@hookimpl
def register_measures(register):
    register(NAME)
"""


def _dist_info(where: Path, dist: str, entry: str, module: str) -> None:
    info = where / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rankeval]\n{entry} = {module}\n")


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_disable_plugin_autoload(make_module, files, monkeypatch, value) -> None:
    make_module("autoload_ep_mod", HITS.replace("NAME", "EpHits"))
    _dist_info(make_module.dir, "autoloadep", "autoloadep", "autoload_ep_mod")
    make_module("autoload_p_mod", HITS.replace("NAME", "PHits"))
    importlib.invalidate_caches()
    q, r = files
    assert load_registry().plugins["autoloadep"] == "entry point"

    monkeypatch.setenv("RANKEVAL_DISABLE_PLUGIN_AUTOLOAD", value)
    reg = load_registry(["autoload_p_mod"])
    assert reg.autoload is False
    assert "autoloadep" not in reg.plugins
    assert "EpHits" not in reg.measures
    assert reg.plugins["autoload_p_mod"] == "--plugin"  # --plugin still works
    assert reg.plugins["rankeval_trec"] == "built-in"  # built-ins still load
    assert str(reg.parse("ERR@10")) == "ERR@10"  # and the ir_measures bridge
    # -p NAME of an entry point loads it, as pytest's -p does
    by_name = load_registry(["autoloadep"])
    assert by_name.measures["EpHits"].plugin == "autoloadep"
    assert by_name.failures == {}

    result = invoke([q, r, "-m", "EpHits@2"])
    assert result.exit_code == 2, result.output
    assert "unknown measure 'EpHits'" in result.output
    result = invoke([q, r, "--plugin", "autoload_p_mod", "-m", "PHits@2", "-m", "AP"])
    assert result.exit_code == 0, result.output
    assert "PHits@2               \tall\t0.6667\n" in result.output


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_autoload_stays_on(make_module, monkeypatch, value) -> None:
    make_module("autoload_on_mod", HITS.replace("NAME", "OnHits"))
    _dist_info(make_module.dir, "autoloadon", "autoloadon", "autoload_on_mod")
    importlib.invalidate_caches()
    monkeypatch.setenv("RANKEVAL_DISABLE_PLUGIN_AUTOLOAD", value)
    reg = load_registry()
    assert reg.autoload is True
    assert reg.plugins["autoloadon"] == "entry point"
    assert load_registry(entry_points=False).autoload is False


# ------------------------------------------------------------- the ir_measures bridge: specs
# (spec, words of the message): each is a spec error (exit 2) naming the spec; none reaches a
# provider with a bad value (P@0 through pytrec_eval would abort the process)
IR_SPEC_ERRORS = [
    ("BPM", ["BPM needs cutoff", "max_rel"]),
    ("IPrec", ["IPrec needs recall"]),
    ("SDCG", ["SDCG needs cutoff", "max_rel"]),
    ("RBP(p=2)", ["RBP: p=2.0 is out of range", "[0, 1)"]),
    ("Compat(p=8e48, p=1e999)", ["parameter 'p' given twice"]),
    ("Compat(p=1e999)", ["Compat: p=inf is not a finite number"]),
    ("NumQ@0", ["NumQ has no parameter 'cutoff'", "'@' sets it"]),
    ("RBP(_=None)", ["RBP has no parameter '_'"]),
    ("ERR(foo=1)@5", ["ERR has no parameter 'foo'"]),
    ("SetP@5", ["SetP has no parameter 'cutoff'"]),
    ("ERR@2.5", ["cutoff must be of type int"]),
    ("ERR@0", ["cutoff=0 is out of range", "1 to 2147483647"]),
    ("Precision@0", ["cutoff=0 is out of range"]),
    ("NDCG@0", ["bad value for 'k'", "0 is outside [1, 2147483647]"]),  # rankeval's nDCG: any case
    ("ERR@2147483648", ["out of range"]),
    ("IPrec@1.5", ["'recall': 1.5 is outside [0, 1]"]),  # native since trec_eval's set is
    ("SetP(rel=0)", ["rejects SetP(rel=0)", "relevance_level"]),
    ("SDCG(max_rel=3,min_rel=5)@5", ["min_rel must be less than max_rel"]),
    ("RBP(p=0.5)@5", ["no ir_measures provider computes"]),
    ("ERR.5", ["ir_measures cannot parse 'ERR.5'"]),
]


@pytest.mark.parametrize(("spec", "words"), IR_SPEC_ERRORS, ids=[c[0] for c in IR_SPEC_ERRORS])
def test_ir_measures_spec_errors(files, spec, words) -> None:
    with pytest.raises(SpecError) as info:
        load_registry().parse(spec)
    message = str(info.value)
    assert spec in message
    for word in words:
        assert word in message, message
    q, r = files
    result = invoke([q, r, "-m", spec])
    assert_clean_cli(result, 2, [spec, *words])
    assert "<object object" not in result.output


def test_ir_measures_unknown_name_is_unknown(files) -> None:
    with pytest.raises(SpecError) as info:
        load_registry().parse("Zzqxv@5")
    assert "unknown measure 'Zzqxv'" in str(info.value)


def test_ir_measures_spec_int_for_float(files) -> None:
    """ir_measures wants p=1.0 where a user writes p=1: the bridge converts, as for T."""
    reg = load_registry()
    assert str(reg.parse("BPM(T=2,max_rel=2)@10")) == "BPM(T=2.0,max_rel=2)@10"
    for spec in ("ERR@10", "RBP(p=0.8)", "NumQ", "Compat(p=0.8)", "BPM(T=2,max_rel=2)@10"):
        m = reg.parse(spec)
        assert reg.parse(str(m)) == m


def test_ir_measures_missing_provider_is_named(files) -> None:
    """Known to ir_measures, computed by a provider that is not installed: exit 1, what to install."""
    if importlib.util.find_spec("pyndeval") is not None:
        pytest.skip("pyndeval is installed")
    with pytest.raises(MeasureError) as info:
        load_registry().parse("alpha_nDCG@10")
    assert "none of its installed providers computes it" in str(info.value)
    assert "pyndeval" in str(info.value)
    q, r = files
    assert_clean_cli(invoke([q, r, "-m", "alpha_nDCG@10"]), 1, ["alpha_nDCG@10", "pyndeval"])


def test_ir_measures_missing_binary_is_named(files, monkeypatch) -> None:
    """ERR needs perl (ir_measures' gdeval provider): without it, one line saying so, exit 1."""
    import ir_measures

    monkeypatch.setattr(ir_measures.gdeval, "_is_available", False)
    q, r = files
    assert_clean_cli(invoke([q, r, "-m", "ERR@10"]), 1, ["ERR@10", "gdeval", "perl"])


def test_ir_measures_probe_is_quiet(files, capfd) -> None:
    """Checking a spec runs the provider on a probe; what it logs there is not shown."""
    reg = load_registry()
    reg.parse("SDCG(max_rel=3)@10")
    reg.parse("BPM(max_rel=2)@5")
    out, err = capfd.readouterr()
    assert out == ""
    assert err == ""
    q, r = files
    result = invoke([q, r, "-m", "SDCG(max_rel=2)@10", "-q"])
    assert result.exit_code == 0, result.output
    assert "inf" not in result.output
    assert "[ir_measures" not in result.output
    out, err = capfd.readouterr()
    assert "inf" not in err


# ------------------------------------------------------------- the ir_measures bridge: computing
def _ir_measures_values(spec: str, qrels, run) -> dict[str, float]:
    import ir_measures

    measure = ir_measures.parse_measure(spec)
    return {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], qrels, run)}


def _renamed(data: dict, names: dict[str, str]) -> dict:
    return {names[q]: docs for q, docs in data.items()}


@pytest.mark.parametrize(
    "names",
    [
        {"1": "q1", "2": "q2", "3": "q3"},  # gdeval's perl script refuses non-numeric topics
        {"1": "a-1", "2": "b-1", "3": "c-7"},  # and cuts everything up to a '-'
        {"1": "007", "2": "7", "3": "x"},  # and compares topics as numbers
    ],
    ids=["letters", "hyphens", "numeric-clash"],
)
def test_err_on_any_query_ids(names) -> None:
    """ERR@10 works whatever the query ids: equal to ir_measures' own values on numeric ids."""
    reference = _ir_measures_values("ERR@10", QIDS, RUN_DICT)
    got = values(rankeval.evaluate(_renamed(QIDS, names), _renamed(RUN_DICT, names), "ERR@10"))
    for qid, name in names.items():
        assert got[("ERR@10", name)] == pytest.approx(reference.get(qid, 0.0), abs=1e-12)
    assert got[("ERR@10", None)] == pytest.approx(sum(reference.values()) / 3, abs=1e-12)
    assert got[("ERR@10", names["1"])] > 0


def test_err_gdeval_grade_limit(tmp_path) -> None:
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("1 0 a 5\n")
    r.write_text("1 Q0 a 1 1 t\n")
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(q, r, "ERR@10")
    assert "measure ERR@10 (plugin rankeval_irmeasures) failed: ir_measures provider gdeval" in str(
        info.value
    )
    assert "up to 4" in str(info.value)
    assert_clean_cli(invoke([q, r, "-m", "ERR@10"]), 1, ["ERR@10", "gdeval", "up to 4"])


def test_provider_failure_while_computing(files, monkeypatch) -> None:
    """A provider's helper that fails while computing (resolved fine before): one line naming
    the measure and the provider, exit 1."""
    import subprocess

    from ir_measures.providers import gdeval_provider

    reg = load_registry()
    measure = reg.parse("ERR@10")

    def broken(cmd, *args, **kw):
        raise subprocess.CalledProcessError(25, cmd)

    monkeypatch.setattr(gdeval_provider.subprocess, "check_output", broken)
    q, r = files
    with pytest.raises(MeasureError) as info:
        rankeval.evaluate(q, r, [measure])
    assert str(info.value) == (
        "measure ERR@10 (plugin rankeval_irmeasures) failed: ir_measures provider gdeval: "
        "its helper perl exited with status 25"
    )
    assert isinstance(info.value.__cause__, subprocess.CalledProcessError)
    # through the CLI the spec is checked first: the probe finds the broken helper
    assert_clean_cli(invoke([q, r, "-m", "ERR@10"]), 1, ["ERR@10", "gdeval", "does not run"])


def test_numq_is_a_count(files) -> None:
    """NumQ is trec_eval's num_q: 1 per evaluated query, summed (3 for 3 queries)."""
    q, r = files
    frame = rankeval.evaluate(q, r, "NumQ")
    got = values(frame)
    assert got[("NumQ", None)] == 3.0  # with -c semantics the query the run lacks counts
    assert got[("NumQ", "1")] == got[("NumQ", "3")] == 1.0
    assert frame.attrs["integer_measures"] == ["NumQ"]
    assert (
        values(rankeval.evaluate(q, r, "NumQ", options=rankeval.EvalOptions(missing_zero=False)))[
            ("NumQ", None)
        ]
        == 2.0
    )
    # ir_measures itself: 3 for a run that retrieves all 3 queries
    import ir_measures

    full = {**RUN_DICT, "3": {"z": 1.0}}
    assert ir_measures.calc_aggregate([ir_measures.NumQ], QIDS, full)[ir_measures.NumQ] == 3
    result = invoke([q, r, "-m", "NumQ"])
    assert result.exit_code == 0, result.output
    assert result.output == "NumQ                  \tall\t3\n"


def test_rbp_documented_example(files) -> None:
    """RBP(p=0.8) works on a default install: binary RBP (rel=1), equal to ir_measures' value."""
    q, r = files
    got = values(rankeval.evaluate(q, r, "RBP(p=0.8)"))
    reference = _ir_measures_values("RBP(p=0.8,rel=1)", QIDS, RUN_DICT)
    for qid in ("1", "2"):
        assert got[("RBP(rel=1)", qid)] == pytest.approx(reference[qid], abs=1e-12)
    assert got[("RBP(rel=1)", "3")] == 0.0
    assert got[("RBP(rel=1)", None)] == pytest.approx(sum(reference.values()) / 3, abs=1e-12)
    # q2: y (relevant) at rank 1, w unjudged: (1 - p) = 0.2
    assert got[("RBP(rel=1)", "2")] == pytest.approx(0.2)
    result = invoke([q, r, "-m", "RBP(p=0.8)"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("RBP(rel=1)")


def test_every_bridge_error_is_a_rankeval_error(files) -> None:
    """A sweep of odd specs with known ir_measures names: RankevalError or a measure, nothing else."""
    import ir_measures

    reg = load_registry()
    tails = ["", "@0", "@1", "@-1", "@1.5", "@1e9", "(p=1)", "(rel=-1)", "(rel=0)", "(x=1)", "(p=none)"]
    names = [n for n in ir_measures.measures.registry if n not in reg.measures and n not in reg.aliases]
    for name in names:
        for tail in tails:
            try:
                reg.parse(name + tail)
            except RankevalError:
                pass
    assert "ERR" in names and "RBP" in names
