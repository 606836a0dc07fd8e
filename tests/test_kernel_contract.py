"""The kernel contract (docs/kernels.md): what a measure's ``compute(data)`` may read.

* the public names of :class:`RankedLists` are exactly ``KERNEL_API``, at most 25, and each is
  documented, as are the public names of its three records (``Judged``, ``Items``, ``Nesting``);
* the built-in plugins read no other name of a ranked-lists object or of its records (an AST
  scan of ``plugins/``);
* a view holds no reference back to its alignment: a task of the block engine leaves no
  cyclic garbage, so its memory goes as soon as the task is done (no ``gc.collect`` needed).
"""

from __future__ import annotations

import ast
import gc
import re
from pathlib import Path

import numpy as np
import pytest

from rankeval.ranking.ranked_lists import KERNEL_API, Items, Judged, Nesting, RankedLists, Ties

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "plugins"
DOCS = ROOT / "docs" / "kernels.md"
EXAMPLES = ROOT / "rankeval" / "examples" / "nested"
TREC = ROOT / "tests" / "data" / "trec_eval"

#: data.<record> -> the record's type
RECORDS: dict[str, type] = {"judged": Judged, "items": Items, "nesting": Nesting, "ties": Ties}


def _alignment(qrels, run, **kw):
    from rankeval.io.data import Qrels, Run
    from rankeval.ranking.alignment import Alignment

    return Alignment(Qrels.from_dict(qrels), Run.from_dict(run), **kw)


NESTED = ({"q": {"p": 1, "p/x": 1, "p/y": 0}, "r": {"s": 2}}, {"q": {"p": 1.0, "p/x": 2.0}, "r": {"t": 1.0}})


def _public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


# ------------------------------------------------------------------ the public surface
def test_the_public_names_are_the_kernel_api():
    view = _alignment(*NESTED).view(1)
    assert len(set(KERNEL_API)) == len(KERNEL_API) <= 26  # (26th: ties, issue 27)
    assert _public(view) == set(KERNEL_API)
    assert _public(RankedLists) <= set(KERNEL_API)  # (fields without a default live on instances)


def _documented() -> dict[str, set[str]]:
    """The names of the tables of docs/kernels.md: ``""`` for ``data.X``, a record's name for
    ``data.<record>.X``."""
    found: dict[str, set[str]] = {"": set(), **{r: set() for r in RECORDS}}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `data\.([a-z_]+)(?:\.([a-z_]+))?", line)
        if m:
            record, name = (m[1], m[2]) if m[2] else ("", m[1])
            found[record].add(name)
    return found


def test_the_docs_page_lists_exactly_the_contract():
    documented = _documented()
    assert documented[""] == set(KERNEL_API)
    view = _alignment(*NESTED).view(1)
    for name, cls in RECORDS.items():
        assert isinstance(getattr(view, name), cls)
        assert documented[name] == _public(getattr(view, name)), name


# ------------------------------------------------------------------ the plugins' uses
def _views_of(tree: ast.Module) -> list[tuple[ast.AST, set[str]]]:
    """Each function of *tree* with the names that hold ranked lists in it: parameters
    annotated ``RankedLists``, and names assigned from ``X.children(...)``, from ``X.view`` or
    from a call of a function of the module whose return annotation names ``RankedLists``."""
    returning = {
        f.name
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.returns is not None and "RankedLists" in ast.unparse(f.returns)
    }
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.Lambda):
            continue
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        names = {a.arg for a in args if a.annotation is not None and "RankedLists" in ast.unparse(a.annotation)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                called = value.func if isinstance(value, ast.Call) else None
                callee = (
                    called.attr
                    if isinstance(called, ast.Attribute)
                    else called.id
                    if isinstance(called, ast.Name)
                    else None
                )
                if callee in returning | {"children"} or (isinstance(value, ast.Attribute) and value.attr == "view"):
                    names.add(node.targets[0].id)
        if names:
            out.append((fn, names))
    return out


def view_uses(source: str) -> list[tuple[str, str]]:
    """Each name a module reads of a ranked-lists object: ``("", name)``, or of one of its
    records: ``(record, name)``."""
    uses = []
    for fn, names in _views_of(ast.parse(source)):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Attribute):
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id in names:
                uses.append(("", node.attr))
            elif (
                isinstance(base, ast.Attribute)
                and isinstance(base.value, ast.Name)
                and base.value.id in names
                and base.attr in RECORDS
            ):
                uses.append((base.attr, node.attr))
    return sorted(set(uses))


CHECKER_CASES = [
    ("def f(data: RankedLists):\n    return data.query_sum(data.rows)\n", [("", "query_sum"), ("", "rows")]),
    ("def f(view: 'RankedLists | None'):\n    return view.alignment\n", [("", "alignment")]),
    ("def f(data: RankedLists):\n    kids = data.children()\n    return kids.nth(1)\n", [("", "children"), ("", "nth")]),
    ("def f(cand):\n    v = cand.view\n    return v.judged.rank\n", [("", "judged"), ("judged", "rank")]),
    (
        "def g(data) -> RankedLists: ...\ndef f(self, data: RankedLists):\n    k = self.g(data)\n"
        "    return k.items.first_judgment\n",
        [("", "items"), ("items", "first_judgment")],
    ),
    ("def f(data):\n    return data.anything\n", []),  # not known to be ranked lists
]


@pytest.mark.parametrize(("source", "expected"), CHECKER_CASES)
def test_the_checker_finds_the_uses(source, expected):
    assert view_uses(source) == expected


def _allowed(record: str, name: str) -> bool:
    if not record:
        return name in KERNEL_API
    view = _alignment(*NESTED).view(1)
    return name in _public(getattr(view, record))


PLUGIN_MODULES = sorted(PLUGINS.rglob("*.py"))


@pytest.mark.parametrize("path", PLUGIN_MODULES, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_plugins_read_only_the_kernel_contract(path):
    uses = view_uses(path.read_text(encoding="utf-8"))
    assert [f"{r}.{n}" if r else n for r, n in uses if not _allowed(r, n)] == []


def test_the_scan_sees_the_kernels():
    """The scan is not vacuous: the built-in families read most of the contract."""
    used = {u for p in PLUGIN_MODULES for u in view_uses(p.read_text(encoding="utf-8"))}
    assert len({n for r, n in used if not r}) >= 20
    assert {r for r, _ in used if r} == set(RECORDS)


# ------------------------------------------------------------------ levels, no back-pointer
def test_children_none_when_flat_and_empty_when_no_item_has_children():
    flat = _alignment({"q": {"a": 1}}, {"q": {"a": 1.0}})
    assert flat.view(1).children() is None
    childless = _alignment({"q": {"a": 1}}, {"q": {"a": 1.0}}, nested=True).view(1).children()
    assert childless is not None and childless.num_queries == 0


def test_children_are_the_alignments_views_and_share_the_memo():
    a = _alignment(*NESTED)
    top = a.view(1)
    assert top.children() is a.view(2) and top.children(every_parent=True) is a.view(2, every_parent=True)
    assert top.memo("k", lambda: [1], shared=True) is a.view(2).memo("k", lambda: [2], shared=True)


def test_judged_lines_maps_each_qrels_line_to_its_query():
    qrels = {"b": {"d1": 1, "d1/x": 0}, "a": {"d2": 1, "d3": 0, "d3/y": 2}, "c": {"d4": 1}}
    a = _alignment(qrels, {"a": {"d2": 1.0}, "z": {"d9": 1.0}})
    top = a.view(1)
    table_q = a.qrels.table.column("query_id").to_pylist()
    ids = list(top.query_ids)
    assert top.judged.lines.tolist() == [ids.index(q) for q in table_q]
    kids = a.view(2)  # sub-queries "a/d3" and "b/d1": the lines of their children
    docs = a.qrels.table.column("doc_id").to_pylist()
    expected = [
        list(kids.query_ids).index(f"{q}/{d.split('/')[0]}") if "/" in d else -1
        for q, d in zip(table_q, docs, strict=True)
    ]
    assert kids.judged.lines.tolist() == expected


def test_item_codes_agree_between_rows_judged_documents_and_qrels_lines():
    a = _alignment(*NESTED)
    for view in (a.view(1), a.view(2)):
        items = view.items
        doc_of = np.full(items.count, None, dtype=object)
        doc_of[items.lines] = a.qrels.table.column("doc_id").to_pylist()
        assert doc_of[items.judged].tolist() == view.judged.doc_ids.to_pylist()
        judged_rows, _ = view.judged_rows()
        assert doc_of[items.rows[judged_rows]].tolist() == [view.doc_ids[int(i)].as_py() for i in judged_rows]
        first = items.first_judgment[items.judged]
        assert (np.asarray(a.qrels.table.column("doc_id").to_pylist(), dtype=object)[first] == doc_of[items.judged]).all()


def _garbage_after(task, shared) -> list[str]:
    """The types of the objects *task* leaves unreachable in cycles (run once before, so that
    imports and caches are warm), gc off meanwhile."""
    from rankeval.engine.blockwise import run_task

    run_task(shared, task)
    gc.collect()
    gc.disable()
    try:
        run_task(shared, task)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = sorted(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return found


CASES = {
    "nested": (
        EXAMPLES / "qrels.txt",
        EXAMPLES / "bm25.run",
        ["hTBG", "TBG", "nCS-DCG@10", "nDCG@10", "AP", "P(level=2)@2"],
        EXAMPLES / "posts.docinfo",
    ),
    "flat": (TREC / "qrels.test", TREC / "results.test", ["AP", "nDCG@10", "P@5", "RR", "bpref", "Rprec"], None),
}


@pytest.mark.parametrize("kind", ["memory", "block"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_task_leaves_no_cyclic_garbage(case, kind):
    import rankeval
    from rankeval.engine.blockwise import Shared, Task
    from rankeval.io.blocks import split_run
    from rankeval.io.data import Qrels, Run
    from rankeval.options import EvalOptions

    qrels_path, run_path, specs, docinfo = CASES[case]
    qrels = Qrels.read(str(qrels_path))
    if docinfo is not None:
        qrels = qrels.with_docinfo(str(docinfo))
    shared = Shared(qrels, tuple(rankeval.parse_measure(s) for s in specs), EvalOptions())
    if kind == "memory":
        tasks = [Task(0, "run", memory=Run.read(str(run_path)))]
    else:
        tasks = [Task(0, "run", block=b) for b in split_run(run_path, 500)]
        assert len(tasks) > 1
    for task in tasks:
        assert _garbage_after(task, shared) == []
