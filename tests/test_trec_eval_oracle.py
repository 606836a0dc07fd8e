"""``rankeval trec_eval`` against the trec_eval 9.0.8 binary on constructed inputs (issue 24,
item 18), and the deliberate differences of docs/trec_eval.md.

``tests/data/trec_eval_oracle/`` holds the inputs (graded and negative labels, fractional
labels, ties in the scores, float32-only ties, a query only in the qrels and one only in the
run, a last run line with another tag, queries that ``-J`` empties, a Z score file) and, per
case of its ``cases.txt``, what the binary printed (``make_oracle.py`` wrote both; see
tests/data/SOURCES.md). The recorded outputs are compared byte for byte, so the suite checks
them without the binary; where the binary is present (``../shared/tools``), it is run again
and must print the recorded outputs.
"""

from __future__ import annotations

import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import SpecError
from rankeval.measures.plugins import load_registry

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT / "tests" / "data" / "trec_eval_oracle"
BINARY = ROOT.parent / "shared" / "tools" / "trec_eval-v9.0.8"


def _cases() -> dict[str, list[str]]:
    out = {}
    for line in (ORACLE / "cases.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, args = line.split("\t")
            out[name] = shlex.split(args)
    return out


CASES = _cases()


def _paths(args: list[str]) -> list[str]:
    """*args* with the file names of the oracle folder made absolute."""
    return [str(ORACLE / a) if (ORACLE / a).is_file() else a for a in args]


def invoke(*args: object):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["trec_eval", "-j", "1", *[str(a) for a in args]])


def trec_eval(*args: object) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return str(result.stdout)


# cases where rankeval differs on purpose (docs/trec_eval.md, "Deliberate differences"):
# strict, so that a change that removes the difference shows
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN[c], strict=True)) if c in KNOWN else c
        for c in sorted(CASES)
    ],
)
def test_same_output_as_trec_eval(case: str) -> None:
    expected = (ORACLE / f"{case}.out").read_text()
    got = trec_eval(*_paths(CASES[case]))
    assert got.splitlines() == expected.splitlines()  # a readable diff on failure
    assert got == expected


@pytest.mark.skipif(not BINARY.is_file(), reason="the trec_eval 9.0.8 binary (../shared/tools) is not here")
@pytest.mark.parametrize("case", sorted(CASES))
def test_recorded_outputs_are_the_binarys(case: str) -> None:
    done = subprocess.run([str(BINARY), *CASES[case]], cwd=ORACLE, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ORACLE / f"{case}.out").read_text()


def test_cases_cover_each_item() -> None:
    """The cases exercise every flag and each difference of issue 24 (a-f, h)."""
    flags = {a for args in CASES.values() for a in args if a.startswith("-")}
    assert {"-q", "-c", "-l", "-M", "-J", "-n", "-N", "-Z", "-m"} <= flags
    assert len([c for c in CASES if c.startswith("repeat_")]) >= 5  # (a)
    assert "runB" in (ORACLE / "ties.run").read_text().splitlines()[-1]  # (b): last line's tag
    assert any("-nan" in (ORACLE / f"{c}.out").read_text() for c in CASES if "-J" in CASES[c])  # (e)
    assert "'" in (ORACLE / "all_q.out").read_text() and "." in (ORACLE / "all_q.out").read_text()  # (c)


# -- (b) runid: the last line's tag, also when the run is read in several blocks --------------


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("block_size", [None, 64])
def test_runid_is_the_last_lines_tag(tmp_path: Path, jobs: int, block_size: int | None) -> None:
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 1\n2 0 b 1\n3 0 c 1\n")
    lines = [
        f"{q} Q0 {d} {r} {5 - r} tag{i}\n"
        for i, (q, d, r) in enumerate([(1, "a", 1), (1, "x", 2), (2, "b", 1), (3, "y", 1), (3, "c", 2)])
    ]
    run = tmp_path / "r"
    run.write_text("".join(lines))
    results = rankeval.Evaluator(qrels, ["P@1"]).results(run, jobs=jobs, block_size=block_size)
    assert results.run_tags == {"r": "tag4"}


# -- (g) -v --------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["-v"], ["-v", "no-such-qrels", "no-such-run"]])
def test_version_on_stderr_without_files(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["trec_eval", *args])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr.startswith("trec_eval version 9.0.8")


def test_files_needed_without_v() -> None:
    result = CliRunner().invoke(app, ["trec_eval", str(ORACLE / "graded.qrels")])
    assert (
        result.exit_code == 2 and "expected two files" in result.output and "Traceback" not in result.output
    )


# -- (h) deliberate differences: refused here, or evaluated here, one line each ------------------

# name -> (qrels text, run text, arguments, exit code, part of the one-line message); trec_eval
# evaluates the first four and refuses the rest (exit 2 for a bad -m, 4 for its other faults)
REFUSED = {
    "duplicate_doc_beyond_M": (
        "1 0 a 1\n",
        "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 a 3 1 t\n",
        ["-M", "2"],
        1,
        "duplicate document 'a'",
    ),
    "duplicate_judgment_query_not_in_run": (
        "1 0 a 1\n2 0 b 1\n2 0 b 1\n",
        "1 Q0 a 1 1 t\n",
        [],
        1,
        "given twice",
    ),
    "M_0": ("1 0 a 1\n", "1 Q0 a 1 1 t\n", ["-M", "0"], 2, "-M 0"),
    "score_not_a_number": ("1 0 a 1\n", "1 Q0 a 1 x t\n", [], 1, "expected a number for the score"),
    "label_not_a_number": ("1 0 a x\n", "1 Q0 a 1 1 t\n", [], 1, "expected a number for the relevance"),
    "cutoff_twice": ("1 0 a 1\n", "1 Q0 a 1 1 t\n", ["-m", "P.5,5"], 2, "illegal measure 'P.5,5'"),
    "recall_level_twice": ("1 0 a 1\n", "1 Q0 a 1 1 t\n", ["-m", "iprec_at_recall..5,.50"], 2, "given twice"),
    "nothing_after_dot": ("1 0 a 1\n", "1 Q0 a 1 1 t\n", ["-m", "P."], 2, "illegal measure 'P.'"),
    "bad_later_params": (
        "1 0 a 1\n",
        "1 Q0 a 1 1 t\n",
        ["-m", "P.5", "-m", "P.x"],
        2,
        "illegal measure 'P.x'",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_in_one_line(name: str, tmp_path: Path) -> None:
    qrels_text, run_text, args, code, message = REFUSED[name]
    (tmp_path / "q").write_text(qrels_text)
    (tmp_path / "r").write_text(run_text)
    result = invoke(*args, tmp_path / "q", tmp_path / "r")
    assert result.exit_code == code, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if not line.startswith("    ")]) == 1


# name -> (qrels text trec_eval refuses, the same judgments as trec_eval would take them)
ACCEPTED = {
    "blank_qrels_line": ("1 0 a 2\n\n1 0 b 0\n", "1 0 a 2\n1 0 b 0\n"),
    "two_iterations": ("1 0 a 2\n1 1 a 1\n1 0 b 0\n", "1 0 a 2\n1 0 b 0\n"),  # the highest grade
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_evaluated_where_trec_eval_refuses(name: str, tmp_path: Path) -> None:
    given, meant = ACCEPTED[name]
    (tmp_path / "given").write_text(given)
    (tmp_path / "meant").write_text(meant)
    (tmp_path / "r").write_text("1 Q0 b 1 2 t\n1 Q0 a 2 1 t\n")
    assert trec_eval("-q", "-m", "all_trec", tmp_path / "given", tmp_path / "r") == trec_eval(
        "-q", "-m", "all_trec", tmp_path / "meant", tmp_path / "r"
    )


# -- (i) a query whose labels are all negative (trec_eval: exit 4 or a crash) -------------------


def test_query_with_only_negative_labels_evaluates(tmp_path: Path) -> None:
    """Such a query has no relevant document: its official values are those of the same query
    judged 0 throughout (R = 0); the other query is unaffected."""
    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 2 t\n1 Q0 x 2 1 t\n2 Q0 c 1 1 t\n")
    (tmp_path / "neg").write_text("1 0 a -1\n1 0 b -2\n2 0 c 1\n")
    (tmp_path / "zero").write_text("1 0 a 0\n1 0 b 0\n2 0 c 1\n")
    assert trec_eval("-q", tmp_path / "neg", run) == trec_eval("-q", tmp_path / "zero", run)


# -- (j) the duplicate-document error names no option this command lacks ------------------------


def test_duplicate_document_error_names_the_main_commands_option(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("1 0 a 1\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n")
    result = invoke(tmp_path / "q", tmp_path / "r")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "duplicate document 'a'" in result.output and "r:2" in result.output
    assert "in the main command (rankeval QRELS RUN), --on-duplicate first|max" in result.output
    # the command rejects the option, as trec_eval would
    assert invoke("--on-duplicate", "first", tmp_path / "q", tmp_path / "r").exit_code == 2


# -- (k) runid, num_q, relstring in the main command: the user's spec, not a plugin fault --------


@pytest.mark.parametrize("name", ["num_q", "runid", "relstring", "relstring.5"])
def test_trec_only_names_in_the_main_command(name: str) -> None:
    result = CliRunner().invoke(app, [str(ORACLE / "graded.qrels"), str(ORACLE / "ties.run"), "-m", name])
    assert result.exit_code == 2, result.output
    assert f"'{name}' is no number per query" in result.output and "rankeval trec_eval" in result.output
    assert "plugin" not in result.output and "Traceback" not in result.output


def test_a_spelling_expanded_to_nothing_is_a_spec_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core's rule for any plugin: a dialect's expansion to an empty list is the user's
    spec naming no measure (exit 2), not a broken plugin."""
    (tmp_path / "rk_nothing.py").write_text(
        textwrap.dedent(
            """
            from rankeval import Dialect, hookimpl

            @hookimpl
            def register_dialects(register):
                register(Dialect("nothing", expand=lambda text: [] if text == "nothing" else None))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_registry(["rk_nothing"])
    with pytest.raises(SpecError, match="'nothing' names no measure"):
        registry.parse_many("nothing")
    with pytest.raises(SpecError, match="names no measure"):
        rankeval.evaluate(ORACLE / "graded.qrels", ORACLE / "ties.run", "nothing", registry=registry)


@pytest.mark.parametrize("spec", ["P.5,5", "iprec_at_recall..5,.50", "ndcg_cut.10,10.4"])
def test_value_given_twice_refused_in_both_commands(spec: str) -> None:
    """trec_eval refuses a cutoff or level given twice (exit 2); so do both commands, with
    trec_eval's reason rather than a spec parser's."""
    files = [str(ORACLE / "graded.qrels"), str(ORACLE / "ties.run")]
    for args in (["trec_eval", "-m", spec, *files], [*files, "-m", spec]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert f"illegal measure '{spec}': a value is given twice" in result.output


def test_judged_only_after_the_max_docs_cut_in_the_library() -> None:
    """-J with -M keeps the judged documents among each query's top M (trec_eval's order of
    the two steps), by hand: run d1 d2(unjudged) d3, qrels d1 d3 relevant, M = 2 → the
    ranking is [d1] only: P@2 = 1/2, num_ret 1, num_rel_ret 1."""
    import pandas as pd

    import rankeval

    qrels = pd.DataFrame({"query_id": ["q"] * 2, "doc_id": ["d1", "d3"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    options = rankeval.EvalOptions(max_docs=2, judged_only=True)
    frame = rankeval.evaluate(qrels, run, ["P@2", "NumRet", "NumRelRet"], options=options)
    got = {m: v for m, q, v in zip(frame.measure, frame.query_id, frame.value, strict=True) if q == "q"}
    assert got == {"P@2": 0.5, "NumRet": 1, "NumRelRet": 1}
