"""Extension points of the core that measure families implement: the random-ranking model
(``random_model`` hook), output formats (``register_formats``), dialects
(``register_dialects``: ``--compat``, measure spellings and ``--names``), sub-commands
(``register_commands``); and the rule that the core imports no measure family."""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.engine.random_ranking import Candidates, random_models, random_positions
from rankeval.errors import InputError, PluginError, RankevalWarning, UsageError
from rankeval.io.data import as_qrels, as_run
from rankeval.measures.plugins import load_registry
from rankeval.ranking.alignment import Alignment
from rankeval.report.formats import FORMATS, format_results

ROOT = Path(__file__).resolve().parent.parent

# a third-party plugin: one measure, its exact random expectation, a format, a dialect
THIRD_PARTY = '''
"""rk_ext: Hits@k with its random expectation, the `pipes` format and the `double` dialect."""

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from rankeval import Dialect, Measure, OutputFormat, RandomModel, hookimpl, param


@dataclass(frozen=True)
class Hits(Measure):
    """Relevant documents (grade >= 1) in the top k, times scale."""

    name: ClassVar[str] = "Hits"
    at: ClassVar[str | None] = "k"
    description: ClassVar[str] = "relevant documents in the top k"
    source: ClassVar[str] = "a test"

    k: int = param(10, "rank cutoff")
    scale: float = param(1.0, "factor (2 in the double mode)")

    def compute(self, data):
        return self.scale * data.sum(((data.relevance >= 1) & (data.rank < self.k)).astype(float))


def expected_hits(measure, cand):
    """c relevant among n candidates, m = min(n, k) shown: c * m / n (hypergeometric mean)."""
    c = cand.count(cand.grades >= 1)
    n = cand.n.astype(float)
    return measure.scale * np.divide(c * cand.cut(measure.k), n, out=np.zeros(len(n)), where=n > 0)


@hookimpl
def register_measures(register):
    register(Hits)


@hookimpl
def random_model(measure):
    if type(measure) is Hits:
        return RandomModel(expectation=lambda cand: expected_hits(measure, cand))
    return None


def pipes(rows, precision):
    digits = 2 if precision is None else precision
    return "".join(
        f"{r.run}|{'all' if r.query_id is None else r.query_id}|{r.measure}|{r.value:.{digits}f}\\n"
        for r in rows
    )


@hookimpl
def register_formats(register):
    register(OutputFormat("pipes", pipes, "run|query|measure|value"))


def hello(name: str = "world") -> str:
    if name == "bad":
        from rankeval.errors import UsageError

        raise UsageError("a bad name")
    return f"hello {name}\\n"


@hookimpl
def register_commands(register):
    from rankeval import Command

    register(Command("hello", hello, "Say hello."))


@hookimpl
def register_dialects(register):
    double = Dialect(
        "double",
        apply=lambda m: replace(m, scale=2.0) if isinstance(m, Hits) else None,
        naming="hits",
        name_of=lambda m: f"hits_{m.k}" if isinstance(m, Hits) else None,
        expand=lambda text: [Hits(k=1), Hits(k=2)] if text == "hits12" else None,
        format="pipes",
        options={"on_duplicate": "first"},
        description="hits counted twice",
    )
    register(double)
'''

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 1\nq2 0 a 1\n"
RUN = "q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\nq2 Q0 x 1 2.0 t\nq2 Q0 a 2 1.0 t\n"
DUPLICATE = "q2 Q0 x 3 0.5 t\n"  # q2's x again: an error unless a duplicate rule keeps one


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The third-party plugin, importable as ``rk_ext`` (for ``-p rk_ext``)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "rk_ext.py").write_text(textwrap.dedent(THIRD_PARTY))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield "rk_ext"
    sys.modules.pop("rk_ext", None)


@pytest.fixture
def files(tmp_path):
    q, r, d = tmp_path / "q.txt", tmp_path / "r.txt", tmp_path / "dup.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    d.write_text(RUN + DUPLICATE)
    return q, r, d


def invoke(args):
    return CliRunner().invoke(app, [str(a) for a in args])


# ----------------------------------------------------------------- a third-party plugin
def test_third_party_format_through_the_cli_and_the_api(plugin, files) -> None:
    q, r, _ = files
    result = invoke([q, r, "--plugin", plugin, "-m", "Hits@2", "-f", "pipes", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "r.txt|q1|Hits@2|1.00\nr.txt|q2|Hits@2|1.00\nr.txt|all|Hits@2|1.00\n"
    registry = load_registry([plugin])
    assert registry.output_formats() == [*FORMATS, "clef", "pipes"]
    frame = rankeval.evaluate(q, r, "Hits@2", registry=registry)
    text = format_results(frame, "pipes", per_query=True, precision=3, registry=registry)
    assert text.splitlines()[-1] == "r.txt|all|Hits@2|1.000"
    # without the plugin the format is unknown, and the message lists what there is
    with pytest.raises(UsageError, match=r"unknown format 'pipes'; expected one of trec, .*, clef$"):
        format_results(frame, "pipes", registry=load_registry(entry_points=False))
    result = invoke([q, r, "-m", "P@2", "-f", "pipes"])
    assert result.exit_code == 2 and "unknown format 'pipes'" in result.output


def test_third_party_command(plugin, monkeypatch) -> None:
    """A ``register_commands`` hook adds a sub-command, run inside the CLI's error boundary."""
    import rankeval.measures.plugins as plugins

    real = plugins.load_registry
    monkeypatch.setattr(plugins, "load_registry", lambda *a, **k: real([plugin]))
    result = invoke(["hello", "--name", "you"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello you\n"
    result = invoke(["hello", "--name", "bad"])
    assert result.exit_code == 2 and result.output == "rankeval: error: a bad name\n"
    assert "hello" in invoke(["--help"]).stdout and "Say hello." in invoke(["--help"]).stdout


def test_third_party_expansion_and_names(plugin, files) -> None:
    """A dialect's ``expand`` turns one spelling into several measures, in every mode; its
    ``name_of`` names them for ``--names NAMING`` (the other measures keep their specs)."""
    q, r, _ = files
    result = invoke([q, r, "--plugin", plugin, "-m", "hits12", "-m", "P.2", "--names", "hits"])
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[0].strip() for line in result.stdout.splitlines()] == ["hits_1", "hits_2", "P@2"]
    registry = load_registry([plugin])
    assert [str(m) for m in registry.parse_many("hits12")] == ["Hits@1", "Hits@2"]
    assert [str(m) for m in registry.parse_many("hits12", {"rel": 2})] == ["Hits@1", "Hits@2"]  # no rel


def test_third_party_compat_mode_same_in_the_cli_and_the_api(plugin, files) -> None:
    q, _, dup = files
    # the dialect's format, duplicate rule and names are the defaults, in the CLI ...
    result = invoke([q, dup, "--plugin", plugin, "-m", "Hits@2", "--compat", "double"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "dup.txt|all|hits_2|2.00\n"
    # ... and in the API (no on_duplicate given: the mode's "first")
    registry = load_registry([plugin])
    frame = rankeval.evaluate(q, dup, "Hits@2", options=rankeval.EvalOptions(compat="double"), registry=registry)
    assert frame.value.tolist() == [2.0, 2.0, 2.0]
    assert frame.measure.tolist() == ["hits_2"] * 3  # the dialect's names
    with pytest.raises(InputError, match="duplicate document 'x'"):
        rankeval.evaluate(q, dup, "Hits@2", registry=registry)
    # an explicit rule wins over the mode's
    with pytest.raises(InputError, match="duplicate document 'x'"):
        rankeval.evaluate(q, dup, "Hits@2", options=rankeval.EvalOptions(compat="double", on_duplicate="error"), registry=registry)
    # a mode that concerns none of the measures, an unknown mode
    with pytest.raises(UsageError, match="none of the measures P@2 has a compat mode"):
        rankeval.evaluate(q, dup, "P@2", options=rankeval.EvalOptions(compat="double"), registry=registry)
    with pytest.raises(UsageError, match="unknown compat 'triple'; expected one of none, trec_eval, clef, double"):
        rankeval.evaluate(q, dup, "Hits@2", options=rankeval.EvalOptions(compat="triple"), registry=registry)
    result = invoke([q, dup, "--plugin", plugin, "-m", "Hits@2", "--compat", "triple"])
    assert result.exit_code == 2
    assert "unknown --compat 'triple'; expected one of none, trec_eval, clef, double" in result.output


def test_third_party_random_expectation(plugin, files) -> None:
    q, r, _ = files
    registry = load_registry([plugin])
    rb = rankeval.random_baseline(
        q, r, ["Hits@2", "Hits(scale=3)@1"], samples=2000, seed=3, registry=registry
    )
    assert rb.exact.all()
    # q1: 2 relevant of 3 candidates, 2 shown: 4/3; q2: 1 of 2, both shown: 1
    np.testing.assert_allclose(rb.values[0], [4 / 3, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rb.values[1], [3 * 2 / 3, 3 * 1 / 2], rtol=0, atol=1e-15)
    assert rb.aggregate[0] == pytest.approx(7 / 6, abs=1e-15)
    # the spread, and the check of the closed form, come from the Monte Carlo
    mc = rankeval.random_baseline(
        q, r, ["Hits@2", "Hits(scale=3)@1"], samples=2000, seed=3, exact=False, registry=registry
    )
    assert not mc.exact.any()
    np.testing.assert_allclose(mc.values, rb.values, atol=0.08)
    np.testing.assert_array_equal(mc.sample_aggregates, rb.sample_aggregates)
    # through the CLI too: the compare command's random baseline
    result = invoke(["compare", q, r, "--plugin", plugin, "-m", "Hits@2", "--random-baseline", "--samples", "200"])
    assert result.exit_code == 0, result.output
    assert "1.1667" in result.stdout


def test_random_model_faults_name_the_plugin(tmp_path, monkeypatch, files) -> None:
    site = tmp_path / "faulty"
    site.mkdir()
    (site / "rk_badmodel.py").write_text(
        "from rankeval import hookimpl\n\n@hookimpl\ndef random_model(measure):\n    return 42\n"
    )
    (site / "rk_badformat.py").write_text(
        "from rankeval import OutputFormat, hookimpl\n\n"
        "@hookimpl\ndef register_formats(register):\n"
        "    register(OutputFormat('boom', lambda rows, precision: 1 / 0))\n"
        "    register(OutputFormat('trec', lambda rows, precision: ''))\n"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    try:
        q, r, _ = files
        with pytest.raises(PluginError, match="plugin rk_badmodel returned int as the random model of AP"):
            rankeval.random_baseline(q, r, "AP", samples=10, registry=load_registry(["rk_badmodel"]))
        with pytest.raises(
            PluginError, match="'trec' is registered by both rankeval and plugin 'rk_badformat'"
        ):
            load_registry(["rk_badformat"]).output_formats()
    finally:
        sys.modules.pop("rk_badmodel", None)
        sys.modules.pop("rk_badformat", None)


# ------------------------------------------------------------------ the built-in families
def test_clef_compat_same_in_the_cli_and_the_api(tmp_path) -> None:
    """``compat="clef"`` keeps the first of a repeated line in the API as in the CLI, and
    the ``clef`` format the CLI prints is ``format_results(..., "clef")`` of the API."""
    q, r = tmp_path / "t.qrels", tmp_path / "t.run"
    q.write_text("t1 0 a 1\nt1 0 b 0\nt1 0 c 1\nt1 0 d 0\n")
    r.write_text("t1 0 a 1 4 x\nt1 1 b 2 3 x\nt1 0 c 3 2 x\nt1 0 b 4 1 x\n")
    specs = "threshold norm_threshold recall_threshold"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        api = rankeval.Evaluator(q, specs, options=rankeval.EvalOptions(compat="clef")).results(r)
        first = rankeval.evaluate(q, r, specs, options=rankeval.EvalOptions(compat="clef", on_duplicate="first"))
        with pytest.raises(InputError, match="duplicate document 'b'"):
            rankeval.evaluate(q, r, "tar_threshold tar_norm_threshold tar_recall_threshold")
    assert api.to_frame().equals(first)
    result = invoke([q, r, "-m", specs, "--compat", "clef", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout == format_results(api, "clef", per_query=True)
    assert "t1\tthreshold\t2" in result.stdout.splitlines()
    dialects = load_registry(entry_points=False).dialects
    assert dialects["clef"][0] == "rankeval_tar" and dialects["clef"][1].format == "clef"


def test_help_lists_the_formats_and_modes_of_the_plugins() -> None:
    result = CliRunner().invoke(app, ["evaluate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    assert "trec, tsv, csv, json, jsonl, markdown, latex, clef (default trec; clef with --compat clef)" in text
    assert "none (the default); trec_eval = trec_eval 9.0.8: its measure names" in text
    assert "; clef = the CLEF eHealth TAR evaluator" in text
    assert "(default error; first with --compat clef)" in text


def test_classic_samplers_equal_the_measures() -> None:
    """The samplers of the classic measures (``rankeval_trec``'s random model) value each
    random ordering as the measures themselves do."""
    from test_compare import EXACT_MEASURES, small_instance

    qrels, candidates = small_instance(6, 8)
    run = {q: {d: 1.0 + i for i, d in enumerate(docs)} for q, docs in candidates.items()}
    view = Alignment(as_qrels(qrels), as_run(run)).view(1)
    cand = Candidates.of(view, np.ones(view.num_queries, dtype=bool), max_docs=5)
    registry = load_registry(entry_points=False)
    measures = [registry.parse(m) for m in EXACT_MEASURES]
    models = random_models(measures, registry)
    assert all(plugin == "rankeval_trec" and model and model.sampler for plugin, model in models)
    samplers = [model.sampler(cand) for _, model in models if model and model.sampler]
    rng = np.random.default_rng(0)
    doc_ids = np.asarray(view.doc_ids.to_pylist(), dtype=object)
    for q, qid in enumerate(view.query_ids):
        n = int(cand.n[q])
        if n == 0:
            continue
        sl = slice(cand.offsets[q], cand.offsets[q + 1])
        judged_docs = doc_ids[cand.rows[sl]]
        others = [d for d in candidates[qid] if d not in set(judged_docs)]
        pos = random_positions(rng, n, len(judged_docs), 30)
        orderings = {}
        for s, row in enumerate(pos):
            ranked = [None] * n
            for doc, p in zip(judged_docs, row, strict=True):
                ranked[p] = doc
            rest = iter(others)
            ranked = [d if d is not None else next(rest) for d in ranked]
            orderings[f"{qid}#{s}"] = {d: float(n - i) for i, d in enumerate(ranked)}
        df = rankeval.evaluate({k: qrels[qid] for k in orderings}, orderings, measures, options=rankeval.EvalOptions(max_docs=5))
        df = df[df.query_id.notna()]
        for measure, sampler in zip(measures, samplers, strict=True):
            theirs = df[df.measure == str(measure)].set_index("query_id")["value"]
            expected = np.array([theirs[f"{qid}#{s}"] for s in range(len(pos))])
            np.testing.assert_allclose(sampler(q, pos), expected, atol=1e-12, err_msg=str(measure))


def test_nested_and_subclassed_measures_have_no_closed_form() -> None:
    registry = load_registry(entry_points=False)
    models = random_models([registry.parse("AP(level=2)"), registry.parse("Bpref")], registry)
    assert models == [(None, None), (None, None)]


# --------------------------------------------------------------- the core knows no family
def _imported(tree: ast.AST) -> set[str]:
    """Top-level names of every module an AST imports, at any depth (inside functions too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_core_imports_no_plugin_package() -> None:
    families = {p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists()}
    assert {"rankeval_trec", "rankeval_tar"} <= families
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported(ast.parse(path.read_text())) & families)
        for path in sorted((ROOT / "rankeval").rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_import_walk_sees_imports_inside_functions() -> None:
    tree = ast.parse("def f():\n    import rankeval_trec.x\n    from rankeval_tar import y\n")
    assert _imported(tree) == {"rankeval_trec", "rankeval_tar"}
