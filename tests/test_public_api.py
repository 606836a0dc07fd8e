"""The shape of the public API, measured from the code: no public function or method of
``rankeval/`` takes more than :data:`MAX_PARAMETERS` parameters, and no option of
:class:`rankeval.EvalOptions` is a parameter of a function (options live only there); the
:class:`rankeval.Evaluator` resolves its inputs once, however many runs it evaluates.

A function is public when its name, and its class's name for a method, do not start with
``_``; ``self``/``cls`` are not counted, ``*args`` and ``**kwargs`` count one each. The
commands of the CLI are exempt: their parameters are their command-line options, declared
for typer (``Annotated[..., typer.Option(...)]``, or a shared ``...Option`` type of
:mod:`rankeval.cli.shared_options`) and turned into options objects in one place
(:func:`rankeval.cli.common.eval_options`).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import rankeval
from rankeval.options import CompareOptions, EvalOptions

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "rankeval"
MAX_PARAMETERS = 8
EXAMPLES = ROOT / "rankeval" / "examples"
QRELS = EXAMPLES / "dl-hard.qrels.txt"
BM25 = EXAMPLES / "dl-hard-bm25.run.gz"
T5 = EXAMPLES / "dl-hard-bm25-rm3-t5.run.gz"


def _is_command(fn: ast.FunctionDef) -> bool:
    """Whether every parameter of *fn* is a command-line option or argument declared for typer."""
    params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    if not params or fn.args.vararg or fn.args.kwarg:
        return False
    for a in params:
        ann = a.annotation
        if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Annotated":
            continue
        # an option type, or a group of options (rankeval.cli.meta_options: OutputOptions)
        if isinstance(ann, ast.Name) and ann.id.endswith(("Option", "Options", "Argument")):
            continue
        return False
    return True


def public_functions(source: str) -> list[tuple[str, list[str]]]:
    """``(qualified name, parameter names)`` of each public function and public method of a
    public class in *source* (``self``/``cls`` left out, ``*args``/``**kwargs`` as
    ``*args``/``**kwargs``), typer commands left out."""
    out: list[tuple[str, list[str]]] = []

    def params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
        a = fn.args
        names = [p.arg for p in [*a.posonlyargs, *a.args]]
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        if method and not static and names:
            names = names[1:]
        names += [p.arg for p in a.kwonlyargs]
        names += [f"*{a.vararg.arg}"] if a.vararg else []
        names += [f"**{a.kwarg.arg}"] if a.kwarg else []
        return names

    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            if not (isinstance(node, ast.FunctionDef) and _is_command(node)):
                out.append((node.name, params(node, method=False)))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("_"):
                    out.append((f"{node.name}.{item.name}", params(item, method=True)))
    return out


def too_many(source: str) -> list[str]:
    """``name (n)`` of each public function of *source* over :data:`MAX_PARAMETERS` parameters."""
    return [f"{name} ({len(p)})" for name, p in public_functions(source) if len(p) > MAX_PARAMETERS]


def options_declared_again(source: str) -> list[str]:
    """``name: option`` for each public function of *source* that takes an
    :class:`~rankeval.EvalOptions` field as a parameter of its own."""
    names = {f.name for f in dataclasses.fields(EvalOptions)}
    return [f"{fn}: {p}" for fn, params in public_functions(source) for p in params if p in names]


def _modules() -> list[Path]:
    return sorted(p for p in CORE.rglob("*.py") if "__pycache__" not in p.parts)


# ------------------------------------------------------------------ the checkers
CHECKER_CASES = [
    # (source, too many, options declared again)
    ("def f(a, b, c, d, e, f, g, h): pass", [], []),
    ("def f(a, b, c, d, e, f, g, h, i): pass", ["f (9)"], []),
    ("def f(a, b, c, d, e, f, g, *args, **kw): pass", ["f (9)"], []),
    ("def f(a, *, b, c, d, e, f, g, h, i): pass", ["f (9)"], []),
    ("def _f(a, b, c, d, e, f, g, h, i): pass", [], []),
    ("class C:\n    def m(self, a, b, c, d, e, f, g, h): pass", [], []),
    ("class C:\n    def m(self, a, b, c, d, e, f, g, h, i): pass", ["C.m (9)"], []),
    ("class C:\n    @staticmethod\n    def m(a, b, c, d, e, f, g, h, i): pass", ["C.m (9)"], []),
    ("class C:\n    def _m(self, a, b, c, d, e, f, g, h, i): pass", [], []),
    ("class _C:\n    def m(self, a, b, c, d, e, f, g, h, i): pass", [], []),
    ("def f(qrels, *, missing_zero=True, docinfo=None): pass", [], ["f: missing_zero", "f: docinfo"]),
    ("class C:\n    def m(self, compat=None): pass", [], ["C.m: compat"]),
    # a typer command: its parameters are its command-line options
    (
        "def cmd(a: QrelsArgument, b: Annotated[int, x], c: COption, d: DArgument, e: EOption, f: FOption,"
        " g: GOption, h: HOption, max_docs: MaxDocsOption): pass",
        [],
        [],
    ),
    (
        "def cmd(a: QrelsArgument, b: Annotated[int, x], c: COption, d: DArgument, e: EOption, f: FOption,"
        " g: GOption, h: HOption, max_docs: int): pass",
        ["cmd (9)"],
        ["cmd: max_docs"],
    ),
]


@pytest.mark.parametrize(("source", "many", "again"), CHECKER_CASES)
def test_the_checkers_find_long_signatures_and_repeated_options(source, many, again) -> None:
    assert too_many(source) == many
    assert options_declared_again(source) == again


# ------------------------------------------------------------------ the rules
@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_public_function_takes_more_than_eight_parameters(path: Path) -> None:
    found = too_many(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: " + ", ".join(found)


#: the functions that may take an option's value as a parameter of their own: the CLI's one
#: converter of command-line values into an EvalOptions, and kernels below the engines that
#: receive one value already resolved from the options (no caller sets an option through them)
TAKE_ONE_VALUE = {
    "cli/common.py": {"eval_options"},
    "engine/scoring.py": {"evaluate_measure"},  # missing_zero, from Shared.options
    "ranking/duplicates.py": {"check_duplicates"},  # on_duplicate, the rule in force
    "engine/random_ranking.py": {"Candidates.of"},  # max_docs: the Candidates field it fills
}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_option_is_declared_twice(path: Path) -> None:
    """An :class:`~rankeval.EvalOptions` field is set in an EvalOptions only."""
    allowed = TAKE_ONE_VALUE.get(str(path.relative_to(CORE)), set())
    found = [
        f for f in options_declared_again(path.read_text(encoding="utf-8")) if f.split(":")[0] not in allowed
    ]
    assert not found, f"{path.relative_to(ROOT)}: " + ", ".join(found)


def test_every_module_was_checked() -> None:
    names = {str(p.relative_to(CORE)) for p in _modules()}
    assert {"evaluator.py", "engine/prepare.py", "comparison/compare.py", "cli/app.py"} <= names
    entries = {name for p in _modules() for name, _ in public_functions(p.read_text(encoding="utf-8"))}
    assert {"evaluate", "compare", "random_baseline", "Evaluator.compare", "as_ir_measure"} <= entries


# ------------------------------------------------------------------ the old keyword forms
OLD_KEYWORDS = [
    (rankeval.evaluate, {"missing_zero": False}),
    (rankeval.evaluate, {"docinfo": "x.docinfo"}),
    (rankeval.evaluate, {"compat": "clef"}),
    (rankeval.evaluate, {"dask": None}),
    (rankeval.Evaluator, {"nest_sep": None}),
    (rankeval.compare, {"test": "randomization"}),
    (rankeval.compare, {"max_docs": 10}),
    (rankeval.random_baseline, {"on_duplicate": "first"}),
    (rankeval.random_baseline, {"progress": print}),
]


@pytest.mark.parametrize(("function", "keywords"), OLD_KEYWORDS, ids=lambda x: getattr(x, "__qualname__", str(x)))
def test_the_old_keyword_forms_are_gone(function, keywords) -> None:
    """Options are given as ``options=EvalOptions(...)`` and ``stats=CompareOptions(...)``."""
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        function(QRELS, BM25, "AP", **keywords)


def test_as_ir_measure_takes_options_only() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'docinfo'"):
        rankeval.as_ir_measure("AP", docinfo="x.docinfo")


# ------------------------------------------------------------------ the evaluator resolves once
def test_an_evaluator_resolves_its_inputs_once(monkeypatch) -> None:
    """Two evaluations and a comparison with one Evaluator load the registry once and read
    the qrels once, and give what the one-call functions give."""
    from rankeval.io.data import Qrels
    from rankeval.measures import plugins

    calls = {"load_registry": 0, "Qrels.read": 0}
    load, read = plugins.load_registry, Qrels.read.__func__

    def counted_load(*args, **kwargs):
        calls["load_registry"] += 1
        return load(*args, **kwargs)

    def counted_read(cls, *args, **kwargs):
        calls["Qrels.read"] += 1
        return read(cls, *args, **kwargs)

    monkeypatch.setattr(plugins, "load_registry", counted_load)
    monkeypatch.setattr(Qrels, "read", classmethod(counted_read))
    ev = rankeval.Evaluator(str(QRELS), ["AP(rel=2)", "nDCG@10"], options=EvalOptions(missing_zero=False))
    first = ev.evaluate(str(BM25))
    second = ev.evaluate([str(BM25), str(T5)])
    cmp = ev.compare([str(BM25), str(T5)], stats=CompareOptions(samples=50))
    assert calls == {"load_registry": 1, "Qrels.read": 1}
    one_call = rankeval.evaluate(
        str(QRELS), [str(BM25), str(T5)], ["AP(rel=2)", "nDCG@10"], options=EvalOptions(missing_zero=False)
    )
    assert calls == {"load_registry": 2, "Qrels.read": 2}
    assert second.equals(one_call)
    assert first.equals(second[second["run"] == BM25.name].reset_index(drop=True))
    assert (
        cmp.aggregate[:, 0].tolist()
        == one_call[one_call.query_id.isna() & (one_call.measure == "AP(rel=2)")]["value"].tolist()
    )


def test_docinfo_is_applied_once_to_the_qrels(tmp_path, monkeypatch) -> None:
    """The side files are read once per Evaluator, however many runs it evaluates."""
    from rankeval.io.data import Qrels

    qrels, run, info = tmp_path / "q", tmp_path / "r", tmp_path / "d"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run.write_text("q1 Q0 a 1 2 x\nq1 Q0 b 2 1 x\n")
    info.write_text("a cost=10\nb cost=20\n")
    calls = []
    apply = Qrels.with_docinfo

    def counted(self, *args, **kwargs):
        calls.append(args)
        return apply(self, *args, **kwargs)

    monkeypatch.setattr(Qrels, "with_docinfo", counted)
    ev = rankeval.Evaluator(qrels, "TBG", options=EvalOptions(docinfo=info))
    values = [ev.evaluate(run)["value"].tolist() for _ in range(2)]
    assert len(calls) == 1 and values[0] == values[1]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"test": "magic"}, "unknown test 'magic'"),
        ({"pairs": "some"}, "unknown pairs 'some'"),
        ({"correction": "x"}, "unknown correction 'x'"),
        ({"family": "x"}, "unknown family 'x'"),
        ({"ci": "x"}, "unknown ci 'x'"),
        ({"alpha": 1.5}, "alpha must be between 0 and 1"),
        ({"alpha": True}, "alpha must be between 0 and 1"),
        ({"samples": 0}, "samples must be an integer from 1"),
        ({"seed": -1}, "seed must be a whole number from 0"),
    ],
)
def test_compare_options_check_themselves(keywords, message) -> None:
    with pytest.raises(rankeval.UsageError, match=message):
        CompareOptions(**keywords)


def test_options_objects_of_the_wrong_kind() -> None:
    with pytest.raises(rankeval.UsageError, match=r"options must be a rankeval\.EvalOptions"):
        rankeval.Evaluator(QRELS, "AP", options={"missing_zero": False})  # type: ignore[arg-type]
    ev = rankeval.Evaluator(QRELS, "AP")
    with pytest.raises(rankeval.UsageError, match=r"stats must be a rankeval\.CompareOptions"):
        ev.compare([BM25, T5], stats={"test": "ttest"})  # type: ignore[arg-type]
