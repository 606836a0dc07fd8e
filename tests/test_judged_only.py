"""Judged-only (condensed) evaluation, issue 27 item 3 (SPEC §10).

- ``EvalOptions(judged_only=True)`` (``--judged-only``) equals evaluating the run from which
  the unjudged lines, and those judged only with a negative grade, were deleted, for every
  native measure that evaluates on the data (flat and nested collections).
- ``X(judged_only=true)`` (ir_measures' spelling, a parameter of every measure) equals
  ``X`` under ``judged_only=True``, next to measures without it.
- ir_measures' own judged-only values (its pytrec_eval provider) per query.
- ``--judged-only`` on the command line: the main command and ``compare`` agree.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval import EvalOptions, Qrels, Run
from rankeval.cli.app import app
from rankeval.errors import RankevalError, TieWarning

DATA = "tests/data/trec_eval"
FLAT = (f"{DATA}/qrels.test", f"{DATA}/results.test")
NESTED = ("rankeval/examples/nested/qrels.txt", "rankeval/examples/nested/bm25.run")
DOCINFO = "rankeval/examples/nested/posts.docinfo"


@pytest.fixture(autouse=True)
def _no_tie_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TieWarning)
        yield


def _native_specs(qrels: Qrels, run: Run, options: EvalOptions) -> list[str]:
    """Every native measure class (not ir_measures'), at its defaults, that evaluates on
    these inputs (some need item attributes or nested items the data may lack)."""
    registry = rankeval.load_registry()
    specs = []
    for entry in registry:
        if entry.plugin == "rankeval_irmeasures":
            continue
        for spec in (entry.cls.name, f"{entry.cls.name}@10"):
            try:
                spec = str(rankeval.parse_measure(spec))
                rankeval.evaluate(qrels, run, [spec], options=options)
            except (RankevalError, TypeError, ValueError):
                continue  # needs parameters or attributes this data lacks
            specs.append(spec)
            break
    return specs


def _without_unjudged(qrels: Qrels, run: Run) -> pd.DataFrame:
    """The run's lines whose (query, doc) the qrels judge with a grade >= 0."""
    judged = qrels.frame
    keep = set(zip(judged.query_id[judged.relevance >= 0], judged.doc_id[judged.relevance >= 0], strict=True))
    frame = run.frame
    mask = [(q, d) in keep for q, d in zip(frame.query_id, frame.doc_id, strict=True)]
    return frame[mask][["query_id", "doc_id", "score"]]


@pytest.mark.parametrize(
    ("inputs", "options"),
    [(FLAT, EvalOptions()), (NESTED, EvalOptions(docinfo=DOCINFO))],
    ids=["flat", "nested"],
)
def test_judged_only_equals_deleting_the_unjudged_lines(inputs, options):
    qrels = rankeval.Evaluator(inputs[0], ["P@5"], options=options).qrels
    run = Run.read(inputs[1])
    specs = _native_specs(qrels, run, options)
    assert len(specs) >= (20 if inputs is FLAT else 10), specs  # the scan is not vacuous
    condensed = _without_unjudged(qrels, run)
    assert 0 < len(condensed) < len(run)  # the data has unjudged lines to drop
    from dataclasses import replace

    got = rankeval.evaluate(qrels, run, specs, options=replace(options, judged_only=True, docinfo=None))
    want = rankeval.evaluate(qrels, condensed, specs, options=replace(options, docinfo=None))
    # the condensed run is named after the frame: compare values only
    pd.testing.assert_frame_equal(got.drop(columns="run"), want.drop(columns="run"), check_exact=False, rtol=1e-12)


@pytest.mark.parametrize("inputs", [FLAT, NESTED], ids=["flat", "nested"])
def test_the_measure_parameter_equals_the_option(inputs):
    options = EvalOptions(docinfo=DOCINFO) if inputs is NESTED else EvalOptions()
    qrels = rankeval.Evaluator(inputs[0], ["P@5"], options=options).qrels
    run = Run.read(inputs[1])
    specs = _native_specs(qrels, run, EvalOptions(nest_sep=options.nest_sep))
    param = {str(rankeval.parse_measure(_with_param(s))): s for s in specs}
    both = rankeval.evaluate(qrels, run, [*specs, *param])
    plain = both[both.measure.isin(specs)].set_index(["query_id", "measure"]).value
    marked = both[both.measure.isin(list(param))].assign(measure=lambda f: f.measure.map(param))
    marked = marked.set_index(["query_id", "measure"]).value
    condensed = rankeval.evaluate(qrels, run, specs, options=EvalOptions(judged_only=True))
    condensed = condensed.set_index(["query_id", "measure"]).value
    assert len(marked) == len(condensed) == len(plain) > 0
    assert not np.allclose(plain.fillna(-1), condensed.reindex(plain.index).fillna(-1))  # it matters here
    pd.testing.assert_series_equal(marked.sort_index(), condensed.sort_index(), check_exact=False, rtol=1e-12)


def _with_param(spec: str) -> str:
    """*spec* with ``judged_only=true`` added to its parameters."""
    return str(rankeval.parse_measure(spec).with_params(judged_only=True))


IR_MEASURES = [
    "P(judged_only=True)@5",
    "RR(judged_only=True)",
    "Rprec(judged_only=True)",
    "AP(judged_only=True)",
    "nDCG(judged_only=True)@10",
    "R(judged_only=True)@10",
    "SetAP(judged_only=True)",
    "SetF(judged_only=True)",
    "SetP(judged_only=True)",
    "Success(judged_only=True)@5",
    "IPrec(judged_only=True)@0.5",
]


@pytest.mark.parametrize("spec", IR_MEASURES)
def test_ir_measures_judged_only_values(spec):
    ir_measures = pytest.importorskip("ir_measures")
    measure = ir_measures.parse_measure(spec)
    qrels = list(ir_measures.read_trec_qrels(FLAT[0]))
    run = list(ir_measures.read_trec_run(FLAT[1]))
    want = {m.query_id: m.value for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)}
    got = rankeval.evaluate(*FLAT, [spec])
    got = got[got.query_id.notna()]
    got = dict(zip(got.query_id, got.value, strict=True))
    assert set(want) <= set(got)
    for qid, value in want.items():
        assert got[qid] == pytest.approx(value, abs=1e-12), (spec, qid)


def test_the_command_line_option_in_evaluate_and_compare():
    args = [*FLAT, "-m", "AP", "-m", "nDCG@10", "--judged-only", "-f", "tsv", "--quiet-ties"]
    evaluated = CliRunner().invoke(app, args)
    compared = CliRunner().invoke(app, ["compare", FLAT[0], f"a={FLAT[1]}", f"b={FLAT[1]}", *args[2:]])
    assert evaluated.exit_code == 0 and compared.exit_code == 0, evaluated.output + compared.output
    want = rankeval.evaluate(*FLAT, ["AP", "nDCG@10"], options=EvalOptions(judged_only=True))
    want = want[want.query_id.isna()]

    def scores(tsv: str) -> dict[str, float]:
        header, *rows = (line.split("\t") for line in tsv.splitlines())
        m, v = header.index("measure"), header.index("value")
        return {r[m].strip(): float(r[v]) for r in rows}

    expected = dict(zip(want.measure, want.value, strict=True))
    assert scores(evaluated.stdout) == pytest.approx(expected, abs=5e-5)
    assert scores(compared.stdout) == pytest.approx(expected, abs=5e-5)


def test_the_random_baseline_refuses_a_measure_judged_only_alone():
    ev = rankeval.Evaluator(FLAT[0], ["AP(judged_only=true)", "P@5"])
    with pytest.raises(rankeval.UsageError, match=r"judged_only=true on AP\(judged_only=true\) alone"):
        ev.random_baseline(FLAT[1], samples=10)
