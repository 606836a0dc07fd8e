"""The house's dependency rules, measured from the code, and the kernel toolkit's segments.

* A plugin uses only public core names: no import of a private name of ``rankeval`` and no
  ``_private`` attribute of a core object (``data._cache``, ``alignment._u_q``); a plugin's
  own private names are its business.
* The core knows no measure family: nothing under ``rankeval/`` imports a ``plugins/`` package.
* The core's packages form layers that import only downward; plugins import the core only
  through its public modules.
* :mod:`rankeval.segments` agrees with plain per-segment loops.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankeval import segments

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"
CORE = ROOT / "rankeval"
PLUGIN_PACKAGES = sorted(p.name for p in PLUGINS.iterdir() if (p / "__init__.py").is_file())


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_names(tree: ast.AST) -> set[str]:
    """Private names the module defines itself: functions, classes, variables, fields,
    attributes it assigns on its own objects (``self._x = ...``), import aliases and
    parameters."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            own.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname:
            own.add(node.asname)
        elif isinstance(node, ast.arg):
            own.add(node.arg)
    return {n for n in own if _private(n)}


def _foreign_modules(tree: ast.AST) -> set[str]:
    """Names the module binds to other packages than rankeval (``import ir_measures``):
    their private attributes are not the core's."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                a.asname or a.name.split(".")[0] for a in node.names if not a.name.startswith("rankeval")
            }
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(source: str) -> list[str]:
    """Each use of a private core name in a plugin module's *source*, as ``line: what``."""
    tree = ast.parse(source)
    own = _own_names(tree)
    foreign = _foreign_modules(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            names = [a.name for a in node.names]
            if parts[0] == "rankeval" and any(_private(n) for n in parts + names):
                found.append(f"{line}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "rankeval" and any(_private(p) for p in parts):
                    found.append(f"{line}: import {a.name}")
        elif (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and node.attr not in own
            and _root(node) not in foreign
        ):
            found.append(f"{line}: .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and node.args[1].value not in own
        ):
            found.append(f"{line}: {node.func.id}(..., {node.args[1].value!r})")
    return found


def _modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_checker_finds_private_core_names():
    source = """
import rankeval.ranking._helpers
from rankeval.ranking import _np, RankedLists
from rankeval._internal import thing

class _Mine:
    def __init__(self):
        self._width = 2

def f(data, alignment, _hint=None):
    import numpy
    numpy.core._multiarray_umath  # another package's private name: not the core's
    data._cache["k"] = 1
    alignment._u_q
    getattr(data, "_views")
    _Mine()._width, _hint, data.__class__, _Mine.__name__
    return rankeval.ranking._blocks
"""
    found = private_uses(source)
    assert {f.split(": ", 1)[1] for f in found} == {
        "import rankeval.ranking._helpers",
        "from rankeval.ranking import _np, RankedLists",
        "from rankeval._internal import thing",
        "._cache",
        "._u_q",
        "getattr(..., '_views')",
        "._blocks",
    }
    assert len(found) == 7


@pytest.mark.parametrize("path", _modules(PLUGINS), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_use_only_public_core_names(path):
    found = private_uses(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)} reaches into the core: " + "; ".join(found)


def plugin_imports(source: str) -> list[str]:
    """Imports of a ``plugins/`` package in *source* (lazy imports inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [f"{node.lineno}: {n}" for n in names if n.split(".")[0] in PLUGIN_PACKAGES]
    return found


def test_the_checker_finds_plugin_imports():
    source = "import os\ndef f():\n    import rankeval_trec\n    from rankeval_tar.x import y\n"
    assert plugin_imports(source) == ["3: rankeval_trec", "4: rankeval_tar.x"]


def test_the_core_imports_no_plugin_package():
    assert "rankeval_trec" in PLUGIN_PACKAGES
    found = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in _modules(CORE)
        for hit in plugin_imports(path.read_text(encoding="utf-8"))
    ]
    assert not found, "the core imports measure families: " + "; ".join(found)


# ---------------------------------------------------------------------------- segments
def _runs(seg: list[int]) -> list[list[int]]:
    """Row indices of each run of equal values, by a plain loop."""
    out: list[list[int]] = []
    for i, s in enumerate(seg):
        if i and seg[i - 1] == s:
            out[-1].append(i)
        else:
            out.append([i])
    return out


@st.composite
def grouped(draw, values: bool = True):
    """A grouped segment index (blocks of distinct segments in random order) and values."""
    lengths = draw(st.lists(st.integers(0, 5), max_size=6))
    order = draw(st.permutations(range(len(lengths))))
    seg = [s for s in order for _ in range(lengths[s])]
    vals = draw(
        st.lists(
            st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.1, 0.2, 1e300]),
            min_size=len(seg),
            max_size=len(seg),
        )
    )
    return np.array(seg, dtype=np.int64), np.array(vals, dtype=np.float64), len(lengths)


@settings(max_examples=60, deadline=None)
@given(grouped())
def test_segment_position(case):
    seg, _, _ = case
    expected = [0] * len(seg)
    for run in _runs(seg.tolist()):
        for k, i in enumerate(run):
            expected[i] = k
    pos = segments.segment_position(seg)
    assert pos.tolist() == expected and pos.dtype == np.int64


@settings(max_examples=60, deadline=None)
@given(grouped())
def test_segment_exclusive_sum_is_the_plain_loop(case):
    seg, values, _ = case
    expected = [0.0] * len(seg)
    for run in _runs(seg.tolist()):
        total = 0.0
        for i in run:
            expected[i] = total
            total += values[i]
    assert segments.segment_exclusive_sum(seg, values).tolist() == expected  # exact


@settings(max_examples=60, deadline=None)
@given(grouped())
def test_segment_cumsum(case):
    seg, values, _ = case
    values = np.round(values)  # integers: the global-minus-base sum is then exact too
    values[np.abs(values) > 1e6] = 3.0
    expected = [0.0] * len(seg)
    for run in _runs(seg.tolist()):
        total = 0.0
        for i in run:
            total += values[i]
            expected[i] = total
    assert segments.segment_cumsum(seg, values).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(grouped())
def test_segment_blocks_and_offsets(case):
    seg, _, n = case
    starts, counts = segments.segment_blocks(seg, n)
    for s in range(n):
        rows = [i for i, x in enumerate(seg.tolist()) if x == s]
        assert counts[s] == len(rows)
        assert starts[s] == (rows[0] if rows else 0)
    ordered = np.sort(seg)
    offsets = segments.segment_offsets(ordered, n)
    assert offsets[0] == 0 and offsets[-1] == len(seg)
    for s in range(n):
        assert (ordered[offsets[s] : offsets[s + 1]] == s).all()
        assert offsets[s + 1] - offsets[s] == int((seg == s).sum())


@settings(max_examples=60, deadline=None)
@given(grouped())
def test_segment_grid(case):
    seg, values, n = case
    pos = segments.segment_position(seg)
    grid = segments.segment_grid(seg, pos, values, n, fill=-7.0)
    width = int(pos.max()) + 1 if len(pos) else 1
    assert grid.shape == (n, width)
    expected = np.full((n, width), -7.0)
    for i in range(len(seg)):
        expected[seg[i], pos[i]] = values[i]
    assert np.array_equal(grid, expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-1e6, 1e6, allow_nan=False),
            st.integers(-10, 10).map(float) | st.sampled_from([0.25, 1e-3, float("nan")]),
        ),
        max_size=8,
    )
)
def test_safe_divide(pairs):
    num = np.array([p[0] for p in pairs])
    den = np.array([p[1] for p in pairs])
    expected = [n / d if d > 0 else 0.0 for n, d in pairs]
    out = segments.safe_divide(num, den)
    assert out.dtype == np.float64 and out.tolist() == expected
    assert segments.safe_divide(np.array([1, 2]), np.array(2)).tolist() == [0.5, 1.0]  # broadcast


# ------------------------------------------------------------------ RankedLists accessors
def _alignment(qrels, run):
    from rankeval.io.data import Qrels, Run
    from rankeval.ranking.alignment import Alignment

    return Alignment(Qrels.from_dict(qrels), Run.from_dict(run))


def test_memo_computes_once_keeps_none_and_shares_across_levels():
    a = _alignment({"q": {"p": 1, "p/x": 1}}, {"q": {"p": 1.0, "p/x": 1.0}})
    top, kids = a.view(1), a.view(2)
    calls = []

    def make():
        calls.append(1)
        return None

    assert top.memo(("test", 1), make) is None and top.memo(("test", 1), make) is None
    assert len(calls) == 1
    kids.memo(("test", 1), make)  # another view: its own memo
    assert len(calls) == 2
    assert top.memo("shared", lambda: [1], shared=True) is kids.memo("shared", lambda: [2], shared=True)


# --------------------------------------------------------------------- import cycles
def _module_name(path: Path) -> str:
    rel = path.relative_to(PLUGINS if PLUGINS in path.parents else ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Project module → project modules it imports: top-level and lazy imports inside
    functions count, and so do imports under ``if TYPE_CHECKING:`` (a type a module names in
    its annotations is a dependency of its design, even when Python does not import it)."""
    files = {_module_name(p): p for p in [*_modules(CORE), *_modules(PLUGINS)]}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                # a submodule importing names from its own top-level package (`from rankeval
                # import Measure`) depends on the package's public surface, not a cycle of its own
                if name and name != module and name != module.split(".")[0]:
                    graph[module].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_project_modules():
    graph = import_graph()
    assert "rankeval.engine.evaluation" in graph and "rankeval_trec" in graph
    assert "rankeval.engine.distributed" in graph["rankeval.engine.evaluation"]  # a lazy import counts
    assert "rankeval.ranking.ranked_lists" in graph["rankeval.measures.base"]  # so does TYPE_CHECKING
    assert cycles(graph) == []


# --------------------------------------------------------------------- layers
#: The core's one-way flow, bottom to top: a module may import (at run time) only modules of
#: its own layer or of layers below. Each package's docstring says the same in words.
LAYERS = [
    # foundation, with the plugin contract (rankeval.extension)
    ("rankeval.errors", "rankeval.options", "rankeval.spec", "rankeval.segments", "rankeval.extension"),
    ("rankeval.io",),
    ("rankeval.ranking",),
    ("rankeval.measures",),
    ("rankeval.engine",),
    ("rankeval.report",),
    ("rankeval.comparison", "rankeval.meta"),
    # the command, the public API, its evaluator object and its adapter to ir_measures: the top
    ("rankeval.cli", "rankeval.examples", "rankeval.interop", "rankeval.evaluator", "rankeval"),
]


def layer(module: str) -> int:
    """Index in :data:`LAYERS` of the most specific prefix of *module*."""
    best = (-1, -1)
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                best = max(best, (len(prefix), i))
    assert best[1] >= 0, f"{module}: in no layer; add its package to LAYERS"
    return best[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} (layer {layer(m)}) imports {d} (layer {layer(d)})"
        for m, deps in graph.items()
        if m.split(".")[0] == "rankeval"
        for d in deps
        if d.split(".")[0] == "rankeval" and layer(d) > layer(m)
    )


def test_the_layer_check_finds_an_upward_import():
    assert layer("rankeval.io.trec") == 1 and layer("rankeval.segments") == 0 and layer("rankeval") == 7
    assert upward_imports({"rankeval.io.data": {"rankeval.engine.scoring"}}) == [
        "rankeval.io.data (layer 1) imports rankeval.engine.scoring (layer 4)"
    ]
    assert upward_imports({"rankeval.engine.scoring": {"rankeval.io.data"}}) == []


def test_the_core_imports_only_downward():
    """io → ranking → measures → engine → report → comparison → cli, each above the
    foundation modules (lazy and annotation-only imports count)."""
    graph = import_graph()
    assert set(graph) >= {"rankeval.io.trec", "rankeval.comparison.compare"}
    assert upward_imports(graph) == []


def test_the_contract_imports_only_the_foundation():
    """``rankeval.extension``, what every plugin builds on, names nothing above the foundation,
    not even in annotations."""
    graph = import_graph()
    core = {d for d in graph["rankeval.extension"] if d.split(".")[0] == "rankeval"}
    assert core and all(layer(d) == 0 for d in core), sorted(core)


# --------------------------------------------------------------------- dialects
#: names that may carry ``trec``: the TREC file formats (qrels, runs), not the trec_eval tool
TREC_FORMAT_NAMES = {"trec", "_trec", "json_to_trec", "trec_to_json", "_trec_id", "trec_swapped"}


def tool_identifiers(source: str) -> list[str]:
    """Identifiers in *source* that name another evaluator (trec_eval, the CLEF TAR
    evaluator) rather than a file format: names, attributes, definitions, parameters,
    keywords and imports; string contents and comments are not identifiers."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.keyword) and node.arg:
            names = [node.arg]
        elif isinstance(node, ast.alias):
            names = [*node.name.split("."), *([node.asname] if node.asname else [])]
        found += [
            f"{getattr(node, 'lineno', 0)}: {n}"
            for n in names
            if re.search(r"(?i)clef|trec", n) and n not in TREC_FORMAT_NAMES
        ]
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


def test_the_tool_name_check_finds_names():
    source = "def trec_name(m): pass\nx.clef_round\nNAMES = f(compat_clef=1)\nread_trec = trec\n"
    assert tool_identifiers(source) == ["1: trec_name", "2: clef_round", "3: compat_clef", "4: read_trec"]


def test_the_core_names_no_other_evaluator():
    """trec_eval and CLEF are dialects their plugins register: no identifier of the core names
    either (its docs and messages may mention them)."""
    found = [f"{p.relative_to(ROOT)}:{hit}" for p in _modules(CORE) for hit in tool_identifiers(p.read_text("utf-8"))]
    assert found == []


PUBLIC_MODULES = {"rankeval", "rankeval.errors", "rankeval.spec", "rankeval.segments"}


@pytest.mark.parametrize("path", _modules(PLUGINS), ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_import_the_core_only_through_its_public_modules(path: Path) -> None:
    """The kernel toolkit is ``rankeval`` (its ``__all__``), ``rankeval.errors``,
    ``rankeval.spec`` and ``rankeval.segments``; the core's packages may be rearranged freely."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
        if isinstance(n, ast.Import) or (n.module and not n.level)
    }
    assert sorted(m for m in used if m and m.split(".")[0] == "rankeval" and m not in PUBLIC_MODULES) == []


# --------------------------------------------------------------------- sizes
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _all_modules() -> list[Path]:
    return [*_modules(CORE), *_modules(PLUGINS)]


@pytest.mark.parametrize("path", _all_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_are_small(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every function whose body — from its first statement after the
    signature, so a command's declarative option list does not count — is too long."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.body[0].lineno + 1  # type: ignore[operator]
            if length > MAX_FUNCTION_LINES:
                out.append((node.name, length))
    return out


def test_the_length_check_counts_the_body():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES + 1))
    assert long_functions(f"def f(\n    a: int = 1,\n):\n{body}\n") == [("f", MAX_FUNCTION_LINES + 1)]
    options = "\n".join(f"    a{i}: int = {i}," for i in range(200))
    assert long_functions(f"def g(\n{options}\n):\n    return 1\n") == []


@pytest.mark.parametrize("path", _all_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_functions_are_short(path: Path) -> None:
    assert long_functions(path.read_text(encoding="utf-8")) == []
