"""The ``rankeval meta`` commands (corr, topics, power, swap, stability, repro): their values
equal the library's on the same evaluation, every table format parses, plots are written,
seeds reproduce the output byte for byte, the evaluation options reach the evaluation, and
errors are one line. Small runs written here, and DL-HARD runs cut to their top 50 documents."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from rankeval import EvalOptions, Evaluator
from rankeval.cli.app import app
from rankeval.meta.correlation import correlation
from rankeval.meta.power import discriminative_power
from rankeval.meta.repro import REPRO_EVAL_MEASURES, reproducibility
from rankeval.meta.stability import swap_rates, topic_subset_stability
from rankeval.meta.topics import topics_for_anova, topics_for_ci, topics_for_ttest, variance_estimate
from tests.conftest import DATA

QUERIES = [str(q) for q in range(101, 109)]
DOCS = [f"d{k}" for k in range(12)]
DL = DATA / "dl-hard"
DL_RUNS = ("bm25", "bm25-rm3", "bm25-t5_zs_", "bm25-rm3-t5_zs_", "bm25-bert_zs_", "bm25-rm3-bert_zs_")
DEPTH = 50  # documents of each DL-HARD query kept

Collection = tuple[Path, Path, list[Path]]
# the library's own evaluations of the DL-HARD runs (the expected values) warn of their ties
pytestmark = pytest.mark.filterwarnings("ignore::rankeval.errors.TieWarning")


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    """A qrels, a second qrels (other judgments) and 5 runs of varied quality."""
    rng = np.random.default_rng(11)
    where = tmp_path_factory.mktemp("meta")
    judged = {q: rng.integers(0, 3, len(DOCS)) for q in QUERIES}
    qrels, qrels2 = where / "a.qrels", where / "b.qrels"
    qrels.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q in QUERIES for d, g in zip(DOCS, judged[q], strict=True))
    )
    flipped = {q: np.where(rng.random(len(DOCS)) < 0.3, 2 - judged[q], judged[q]) for q in QUERIES}
    qrels2.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q in QUERIES for d, g in zip(DOCS, flipped[q], strict=True))
    )
    runs = []
    for k, noise in enumerate([0.2, 0.6, 1.0, 1.5, 3.0]):
        path = where / f"run{k}.txt"
        lines = []
        for q in QUERIES:
            scores = judged[q] + rng.normal(0, noise, len(DOCS))
            lines += [f"{q} Q0 {d} 0 {s:.6f} r{k}\n" for d, s in zip(DOCS, scores, strict=True)]
        path.write_text("".join(lines))
        runs.append(path)
    return qrels, qrels2, runs


@pytest.fixture(scope="module")
def dl_hard(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """DL-HARD's qrels and its six runs, each query cut to its first :data:`DEPTH` lines (the
    runs are in rank order; their tied scores stay)."""
    where = tmp_path_factory.mktemp("dl")
    runs = []
    for name in DL_RUNS:
        kept, seen = [], dict[str, int]()
        with gzip.open(DL / f"{name}.run.gz", "rt") as f:
            for line in f:
                q = line.split(maxsplit=1)[0]
                seen[q] = seen.get(q, 0) + 1
                if seen[q] <= DEPTH:
                    kept.append(line)
        path = where / f"{name}.run"
        path.write_text("".join(kept))
        runs.append(path)
    return DL / "dl_hard-passage.qrels", runs


def invoke(args: list[object]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def rows_of(args: list[object]) -> list[dict[str, Any]]:
    """The rows of a meta command's table, through ``-f json``."""
    code, out, err = invoke([*args, "-f", "json"])
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def frame_of(qrels: Path, runs: list[Path], measures: list[str], **options: Any) -> pd.DataFrame:
    """The library's per-query rows of *runs* (what every meta command starts from)."""
    frame = Evaluator(str(qrels), measures, options=EvalOptions(**options)).evaluate([str(r) for r in runs])
    return frame[frame["query_id"].notna()]


def means(qrels: Path, runs: list[Path], measure: str) -> list[float]:
    """Each run's mean per-query value, straight from the library's long frame."""
    by_run = frame_of(qrels, runs, [measure]).groupby("run", sort=True)["value"].mean()
    return [float(by_run[r.name]) for r in runs]


def matrix(qrels: Path, runs: list[Path], measure: str, **options: Any) -> np.ndarray:
    wide = frame_of(qrels, runs, [measure], **options).pivot(index="query_id", columns="run", values="value")
    return np.asarray(wide[[r.name for r in runs]].to_numpy(dtype=float))


# ------------------------------------------------------------------------------ corr
@pytest.mark.parametrize("method", ["tau_b", "tau_ap_b", "spearman", "pearson", "rbo"])
def test_corr_of_two_measures(collection: Collection, method: str) -> None:
    qrels, _, runs = collection
    (row,) = rows_of(["meta", "corr", qrels, *runs, "-m", "AP", "-m", "nDCG@5", "--method", method])
    assert (row["method"], row["x_measure"], row["y_measure"], row["runs"]) == (method, "AP", "nDCG@5", 5)
    assert row["x_qrels"] == row["y_qrels"] == str(qrels)
    expected = correlation(means(qrels, runs, "AP"), means(qrels, runs, "nDCG@5"), method)
    assert row["value"] == pytest.approx(expected, abs=1e-11)


def test_corr_across_two_qrels(collection: Collection) -> None:
    qrels, qrels2, runs = collection
    (row,) = rows_of(["meta", "corr", qrels, *runs, "-m", "nDCG", "--qrels2", qrels2])
    expected = correlation(means(qrels, runs, "nDCG"), means(qrels2, runs, "nDCG"), "tau_b")
    assert row["value"] == pytest.approx(expected, abs=1e-11)
    assert (row["x_qrels"], row["y_qrels"]) == (str(qrels), str(qrels2))
    # the same qrels twice: the same ranking
    (row,) = rows_of(["meta", "corr", qrels, *runs, "-m", "nDCG", "--qrels2", qrels])
    assert row["value"] == pytest.approx(1.0, abs=1e-12)


def test_corr_bootstrap_interval(collection: Collection) -> None:
    qrels, _, runs = collection
    args = ["meta", "corr", qrels, *runs, "-m", "AP", "-m", "P@5", "--ci", "--samples", "300", "--seed", "3"]
    (row,) = rows_of(args)
    assert -1 <= row["ci_low"] <= row["value"] + 1e-12 and row["ci_low"] <= row["ci_high"] <= 1 + 1e-12
    assert (row["alpha"], row["samples"], row["topics"], row["seed"]) == (0.05, 300, 8, 3)


@pytest.mark.parametrize("scored", [False, True], ids=["names", "names and scores"])
def test_corr_against_a_given_ordering(collection: Collection, tmp_path: Path, scored: bool) -> None:
    """--order FILE: the reference ranking is given (best first, or by score); the measure's
    ranking is correlated with it, the file's ranking being x."""
    qrels, _, runs = collection
    reference = [5.0, 1.0, 4.0, 2.0, 3.0]  # the runs' scores in the given ordering
    order = tmp_path / "order.txt"
    ranked = sorted(zip(runs, reference, strict=True), key=lambda p: -p[1])
    order.write_text("".join(f"{r.name} {s}\n" if scored else f"{r.name}\n" for r, s in ranked))
    (row,) = rows_of(["meta", "corr", qrels, *runs, "-m", "AP", "--order", order, "--method", "tau_ap_b"])
    assert (row["x_measure"], row["x_qrels"], row["y_measure"]) == ("order", str(order), "AP")
    expected = correlation(reference, means(qrels, runs, "AP"), "tau_ap_b")
    assert row["value"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a 1\nb\n", "expected every line as 'NAME' or every line as 'NAME SCORE'"),
        ("a 1 2\n", ":1: expected 'NAME' or 'NAME SCORE'"),
        ("a x\n", ":1: expected a number after the run name, found 'x'"),
        ("a\na\n", ":2: expected each run once ('a' again)"),
        ("run0.txt\nnope\n", "names other runs: missing"),
    ],
)
def test_a_bad_ordering_file_is_one_line(collection: Collection, tmp_path: Path, text: str, message: str) -> None:
    qrels, _, runs = collection
    order = tmp_path / "order.txt"
    order.write_text(text)
    code, out, err = invoke(["meta", "corr", qrels, *runs, "-m", "AP", "--order", order])
    assert code in (1, 2) and out == "" and message in err and len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------------------ topics
def test_topics(collection: Collection) -> None:
    qrels, _, runs = collection
    rows = rows_of(["meta", "topics", qrels, *runs, "-m", "AP", "--min-diff", "0.05", "--width", "0.1"])
    variance = variance_estimate(matrix(qrels, runs, "AP"))
    assert [r["design"] for r in rows] == ["ttest", "anova", "ci"]
    assert all(r["measure"] == "AP" and r["variance"] == pytest.approx(variance, abs=1e-12) for r in rows)
    assert [r["topics"] for r in rows] == [
        topics_for_ttest(variance, 0.05),
        topics_for_anova(variance, 0.05, 5),
        topics_for_ci(variance, 0.1),
    ]
    assert (rows[1]["systems"], rows[0]["systems"], rows[2]["width"], rows[2]["beta"]) == (5, None, 0.1, None)


# ------------------------------------------------------------------------------ power
@pytest.mark.parametrize("test", ["bootstrap", "tukey"])
def test_power_equals_the_library(dl_hard: tuple[Path, list[Path]], test: str) -> None:
    qrels, runs = dl_hard
    args = ["meta", "power", qrels, *runs, "-m", "AP", "-m", "nDCG@10", "--test", test, "--samples", "200"]
    rows = rows_of([*args, "--seed", "5", "-q", "--quiet-ties"])
    frame = frame_of(qrels, runs, ["AP", "nDCG@10"])
    for name in ("AP", "nDCG@10"):
        power = discriminative_power(frame, name, test=test, samples=200, seed=5)
        mine = [r for r in rows if r["measure"] == name]
        assert [(r["run_a"], r["run_b"]) for r in mine[:-1]] == list(power.pairs) and len(power.pairs) == 15
        assert [r["asl"] for r in mine[:-1]] == pytest.approx(list(power.asl), abs=1e-12)
        summary = mine[-1]
        assert (summary["run_a"], summary["asl"], summary["pairs"]) == (None, None, 15)
        assert summary["significant"] == int((power.asl < 0.05).sum())
        assert summary["share"] == pytest.approx(power.share, abs=1e-12)
        assert summary["delta"] == pytest.approx(power.delta, abs=1e-12)
        assert all((r["test"], r["samples"], r["alpha"]) == (test, 200, 0.05) for r in mine)
    # without -q: the summary rows alone
    assert [r for r in rows_of([*args, "--seed", "5"]) if r["run_a"] is None] == [
        r for r in rows if r["run_a"] is None
    ]


# ------------------------------------------------------------------------------ swap, stability
@pytest.mark.parametrize("replacement", [False, True])
def test_swap_equals_the_library(dl_hard: tuple[Path, list[Path]], replacement: bool) -> None:
    qrels, runs = dl_hard
    args = ["meta", "swap", qrels, *runs, "-m", "AP", "--sizes", "5,20", "--bins", "0.02", "--samples", "40"]
    rows = rows_of([*args, "--seed", "9", "--quiet-ties", *(["--replacement"] if replacement else [])])
    expected = swap_rates(
        frame_of(qrels, runs, ["AP"]),
        "AP",
        sizes=[5, 20],
        bins=0.02,
        samples=40,
        replacement=replacement,
        seed=9,
    )
    assert pd.DataFrame(rows).drop(columns="measure").to_dict("records") == expected.to_dict("records")
    assert {r["measure"] for r in rows} == {"AP"}


def test_stability_equals_the_library(dl_hard: tuple[Path, list[Path]]) -> None:
    qrels, runs = dl_hard
    args = ["meta", "stability", qrels, *runs, "-m", "AP", "-m", "P@10", "--sizes", "5,25,50"]
    rows = rows_of([*args, "--samples", "30", "--method", "tau_ap_b", "--seed", "2", "--quiet-ties"])
    frame = frame_of(qrels, runs, ["AP", "P@10"])
    for name in ("AP", "P@10"):
        expected = topic_subset_stability(
            frame, name, sizes=[5, 25, 50], samples=30, method="tau_ap_b", seed=2
        )
        mine = pd.DataFrame([r for r in rows if r["measure"] == name]).drop(columns=["measure", "method"])
        pd.testing.assert_frame_equal(mine, expected, check_exact=False, rtol=0, atol=1e-12)
    assert {r["method"] for r in rows} == {"tau_ap_b"}


# ------------------------------------------------------------------------------ repro
def _repro_rows(qrels: Path, runs: list[Path], *extra: object) -> list[dict[str, Any]]:
    return rows_of(["meta", "repro", qrels, *runs[:4], *extra, "--quiet-ties"])


@pytest.mark.parametrize("replicability", [False, True])
def test_repro_equals_the_library(dl_hard: tuple[Path, list[Path]], replicability: bool) -> None:
    qrels, runs = dl_hard
    other = ["--qrels2", qrels] if replicability else []
    rows = _repro_rows(qrels, runs, "-m", "AP", "-m", "P@10", "-q", *other)
    expected = reproducibility(
        str(qrels),
        original={"baseline": str(runs[0]), "advanced": str(runs[1])},
        reproduced={"baseline": str(runs[2]), "advanced": str(runs[3])},
        measures=["AP", "P@10"],
        reproduced_qrels=str(qrels) if replicability else None,
    ).to_frame()

    def key(r: dict[str, Any]) -> tuple[str, ...]:
        return tuple(
            "" if r[c] is None or r[c] != r[c] else str(r[c]) for c in ("what", "run", "measure", "topic")
        )

    values = {key(r): r["value"] for r in expected.to_dict("records")}
    assert {key(r): r["value"] for r in rows} == pytest.approx(values, abs=1e-12, nan_ok=True)
    assert len(rows) == len(values)
    whats = {r["what"] for r in rows}
    assert whats == (
        {"p_value", "ER", "DeltaRI"}
        if replicability
        else {"KTU", "RBO", "RMSE", "nRMSE", "p_value", "ER", "DeltaRI"}
    )
    if not replicability:  # without -q: the means of KTU and RBO, no topic
        summary = _repro_rows(qrels, runs, "-m", "AP", "-m", "P@10")
        assert {key(r) for r in summary} == {key(r) for r in rows if r["topic"] is None}
        # per measure: KTU and RBO first, then each measure's rows together
        order = [r["measure"] for r in summary]
        assert order == sorted(order, key=lambda m: [None, "AP", "P@10"].index(m))


def test_repro_cuts_runs_to_1000_documents_by_default(collection: Collection, tmp_path: Path) -> None:
    """As repro_eval (and the library's default), unless -M says otherwise: runs whose judged
    documents all lie below rank 1000 score 0 there."""
    qrels = collection[0]
    rng = np.random.default_rng(5)
    runs = []
    for k in range(4):
        lines = []
        for q in QUERIES:
            docs = [f"junk{j}" for j in range(1000)] + list(rng.permutation(DOCS))
            lines += [f"{q} Q0 {d} {r} {2000 - r} r{k}\n" for r, d in enumerate(docs)]
        runs.append(tmp_path / f"deep{k}.run")
        runs[-1].write_text("".join(lines))
    args = ["meta", "repro", qrels, *runs, "-m", "AP", "-f", "json"]
    expected = reproducibility(
        str(qrels),
        original={"baseline": str(runs[0]), "advanced": str(runs[1])},
        reproduced={"baseline": str(runs[2]), "advanced": str(runs[3])},
        measures=["AP"],
    )
    assert expected.runs["baseline"].rmse == {"AP": 0.0}

    def rmse(*extra: object) -> float:
        rows = rows_of([*args, *extra])
        return float(next(r["value"] for r in rows if r["what"] == "RMSE" and r["run"] == "baseline"))

    assert rmse() == rmse("-M", "1000") == 0.0
    assert rmse("-M", "2000") > 0


@pytest.mark.slow
def test_repro_default_measures_are_repro_evals(dl_hard: tuple[Path, list[Path]]) -> None:
    qrels, runs = dl_hard
    rows = _repro_rows(qrels, runs)
    assert list(dict.fromkeys(r["measure"] for r in rows if r["measure"] is not None)) == list(
        REPRO_EVAL_MEASURES
    )


# ------------------------------------------------------------------------------ every command
@dataclass(frozen=True)
class Command:
    """A meta command on the small collection: its arguments after QRELS RUN..., and whether it
    draws at random (takes --seed) and plots (--plot)."""

    name: str
    args: tuple[str, ...]
    seeded: bool = False
    plots: bool = False


COMMANDS = [
    Command("corr", ("-m", "AP", "-m", "P@5", "--ci", "--samples", "50"), seeded=True),
    Command("topics", ("-m", "AP", "-m", "P@5", "--min-diff", "0.1", "--width", "0.2")),
    Command("power", ("-m", "AP", "-m", "P@5", "--samples", "100", "-q"), seeded=True, plots=True),
    Command("swap", ("-m", "AP", "--samples", "50", "--bins", "0.05"), seeded=True, plots=True),
    Command("stability", ("-m", "AP", "-m", "P@5", "--samples", "30"), seeded=True, plots=True),
    Command("repro", ("-m", "AP", "-m", "P@5", "-q")),
]


def command_args(collection: Collection, command: Command) -> list[object]:
    qrels, _, runs = collection
    return ["meta", command.name, qrels, *(runs[:4] if command.name == "repro" else runs), *command.args]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_format_parses_to_the_same_table(collection: Collection, command: Command) -> None:
    args = command_args(collection, command)
    rows = rows_of(args)
    assert rows and all(set(r) == set(rows[0]) for r in rows)
    columns = list(rows[0])
    code, out, err = invoke([*args, "-f", "jsonl"])
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == rows
    for fmt, sep in (("tsv", "\t"), ("csv", ",")):
        code, out, err = invoke([*args, "-f", fmt])
        assert code == 0, err
        read = list(csv.reader(io.StringIO(out), delimiter=sep))
        assert read[0] == columns
        _same([dict(zip(columns, r, strict=True)) for r in read[1:]], rows)
    code, out, err = invoke([*args, "-f", "markdown"])
    lines = out.splitlines()
    assert (
        code == 0
        and len(lines) == len(rows) + 2
        and lines[0].startswith("| " + columns[0].replace("_", "\\_"))
    )
    code, out, err = invoke([*args, "-f", "latex"])
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("\\begin{tabular}") and lines[-1] == "\\end{tabular}"
    assert len(lines) == len(rows) + 6


def _same(back: list[dict[str, str]], rows: list[dict[str, Any]]) -> None:
    """The cells of csv/tsv rows equal the json rows: texts as they are, numbers exactly (both
    are written at full precision), json's null an empty cell (or NaN, infinity)."""
    assert len(back) == len(rows)
    for b, r in zip(back, rows, strict=True):
        for c, v in r.items():
            if v is None:
                assert b[c] in ("", "nan", "inf", "-inf"), (c, b[c])
            elif isinstance(v, str):
                assert b[c] == v, (c, b[c], v)
            else:
                assert float(b[c]) == v, (c, b[c], v)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_output_file_and_precision(collection: Collection, command: Command, tmp_path: Path) -> None:
    args = command_args(collection, command)
    code, out, err = invoke([*args, "-p", "3"])
    assert code == 0, err
    target = tmp_path / "table.tsv"
    code, written, err = invoke([*args, "-p", "3", "-o", target])
    assert code == 0 and written == "", err
    assert target.read_text() == out
    floats = [
        c for line in out.splitlines()[1:] for c in line.split("\t") if re.fullmatch(r"-?[0-9]+\.[0-9]+", c)
    ]
    assert floats and all(len(c.split(".")[1]) == 3 for c in floats)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.seeded], ids=lambda c: c.name)
def test_a_seed_reproduces_the_output_byte_for_byte(collection: Collection, command: Command) -> None:
    args = command_args(collection, command)
    first, again, other = (invoke([*args, "--seed", s]) for s in ("7", "7", "8"))
    assert first[0] == 0, first[2]
    assert first[1] == again[1] and first[1] != other[1]


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.plots], ids=lambda c: c.name)
@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG\r\n\x1a\n"), (".pdf", b"%PDF-")])
def test_plot_is_written(
    collection: Collection, command: Command, suffix: str, magic: bytes, tmp_path: Path
) -> None:
    figure = tmp_path / f"figure{suffix}"
    code, out, err = invoke([*command_args(collection, command), "--plot", figure])
    assert code == 0, err
    assert figure.read_bytes().startswith(magic) and out.startswith("measure\t")


def _options(*path: str) -> dict[str, Any]:
    """``{long name: click option}`` of the command at *path*, as declared."""
    import click

    command: Any = typer.main.get_command(app)
    for name in path:  # (get_command: the meta group is added when first asked for)
        command = command.get_command(click.Context(command), name)
    return {max(p.opts, key=len): p for p in command.params if p.param_type_name == "option"}


def _declaration(option: Any) -> tuple[Any, ...]:
    return (
        option.opts,
        option.metavar,
        option.help,
        option.type_descriptor.annotation,
        option.is_flag,
        option.default,
    )


EVALUATION = (
    "--plugin --no-missing-zero --max-docs --rel-level --nest-sep --on-duplicate --docinfo --ties "
    "--judged-only --quiet-ties --debug"
).split()
ENGINE = "--engine --jobs --block-size --scheduler --workers --memory-limit".split()


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_evaluation_options_are_compares(command: str) -> None:
    """Every meta command takes compare's evaluation options (and, but repro, which evaluates
    its four runs in one process, its engine options), declared as compare declares them."""
    compare, mine = _options("compare"), _options("meta", command)
    expected = EVALUATION + (ENGINE if command != "repro" else [])
    assert set(expected) <= set(mine)
    assert not set(ENGINE) & set(mine) if command == "repro" else True
    for name in expected:
        assert _declaration(mine[name]) == _declaration(compare[name]), name
    assert {"--format", "--output", "--precision"} <= set(mine)


OPTIONS = [
    # (evaluation options, the EvalOptions that give the same per-query values, measure)
    (["--judged-only"], {"judged_only": True}, "AP"),
    (["-M", "5"], {"max_docs": 5}, "AP"),
    (["--ties", "expected"], {"ties": "expected"}, "AP"),
    (["--ties", "best"], {"ties": "best"}, "AP"),
    (["-l", "2"], {}, "AP(rel=2)"),
]


@pytest.mark.parametrize(("given", "options", "spec"), OPTIONS)
def test_evaluation_options_reach_the_evaluation(
    dl_hard: tuple[Path, list[Path]], given: list[str], options: dict[str, Any], spec: str
) -> None:
    """The residual variance ``meta topics`` prints is the library's, under the same options
    (and differs from the default's: the option is not ignored)."""
    qrels, runs = dl_hard
    measure = spec.split("(")[0]
    args = ["meta", "topics", qrels, *runs, "-m", measure, "--width", "0.1", "--quiet-ties"]
    (row,) = rows_of([*args, *given])
    (plain,) = rows_of(args)
    expected = variance_estimate(matrix(qrels, runs, spec, **options))
    assert row["variance"] == pytest.approx(expected, abs=1e-14)
    assert row["variance"] != plain["variance"]


def test_tie_warning_and_quiet_ties(dl_hard: tuple[Path, list[Path]]) -> None:
    qrels, runs = dl_hard
    args = ["meta", "topics", qrels, *runs, "-m", "AP", "--width", "0.1"]
    code, out, err = invoke(args)
    assert code == 0 and err.startswith("rankeval: warning: tied scores") and len(err.splitlines()) == 1
    code, quiet, err = invoke([*args, "--quiet-ties"])
    assert code == 0 and err == "" and quiet == out


# ------------------------------------------------------------------------------ errors
BAD = [
    # (command, arguments after QRELS RUN..., words of the one-line message)
    ("corr", ["-m", "AP"], "needs two measures (-m A -m B), or one with --qrels2 or --order; the -m options give 1: AP"),
    ("corr", ["-m", "AP", "-m", "P@5", "-m", "nDCG"], "the -m options give 3"),
    ("corr", ["-m", "AP", "-m", "P@5", "--method", "kendall"], "unknown --method 'kendall'"),
    ("corr", ["-m", "AP", "-m", "P@5", "--seed", "-1"], "--seed must be a whole number from 0 to"),
    (
        "corr",
        ["-m", "AP", "-m", "P@5", "--ci", "--samples", "0"],
        "--samples must be a whole number from 1 to",
    ),
    ("corr", ["-m", "AP", "-m", "P@5", "--ci", "--alpha", "1"], "--alpha must be between 0 and 1"),
    ("corr", [], "no measure given"),
    ("topics", ["-m", "AP"], "needs --min-diff D"),
    ("topics", ["-m", "AP", "--min-diff", "0.05", "--alpha", "2"], "--alpha must be between 0 and 1"),
    ("topics", ["-m", "AP", "--min-diff", "0.05", "--beta", "0"], "--beta must be between 0 and 1"),
    ("power", ["-m", "AP", "--test", "ttest"], "unknown --test 'ttest'; expected one of bootstrap, tukey"),
    (
        "power",
        ["-m", "AP", "--seed", str(2**63)],
        "--seed must be a whole number from 0 to 9223372036854775807",
    ),
    ("power", ["-m", "AP", "--seed", "x"], "--seed must be a whole number"),
    ("power", ["-m", "AP", "--samples", "-5"], "--samples must be a whole number from 1 to"),
    ("power", ["-m", "AP", "--plot", "asl.txt"], "'asl.txt': the file name must end in .png, .pdf, .svg"),
    ("power", ["-m", "AP", "-f", "xml"], "unknown format 'xml'; expected one of tsv, csv, json"),
    ("power", ["-m", "AP", "-p", "x"], "-p/--precision takes a number of decimals"),
    ("power", ["-m", "AP", "--ties", "random"], "unknown tie rule 'random'"),
    (
        "swap",
        ["-m", "AP", "--sizes", "2,x"],
        "--sizes takes whole numbers separated by commas, e.g. 10,20,25, not '2,x'",
    ),
    ("swap", ["-m", "AP", "--sizes", "2,,3"], "--sizes takes whole numbers separated by commas"),
    ("swap", ["-m", "AP", "--sizes", ""], "--sizes takes whole numbers separated by commas"),
    (
        "swap",
        ["-m", "AP", "--sizes", "5"],
        "topic-set size 5 out of range: the swap method takes sizes from 1 to 4",
    ),
    ("swap", ["-m", "AP", "--sizes", "0"], "topic-set size 0 out of range"),
    ("swap", ["-m", "AP", "--bins", "0"], "--bins must be a positive bin width"),
    ("swap", ["-m", "AP", "-m", "P@5", "--plot", "s.png"], "--plot draws the swap rates of one measure"),
    (
        "stability",
        ["-m", "AP", "--sizes", "9"],
        "topic-set size 9 out of range: subset stability takes sizes from 1 to 8",
    ),
    ("stability", ["-m", "AP", "--method", "kendall"], "unknown --method 'kendall'"),
    ("stability", ["-m", "AP", "--samples", "0"], "--samples must be a whole number from 1 to"),
    ("stability", [], "no measure given"),
]


@pytest.mark.parametrize(("command", "extra", "words"), BAD)
def test_errors_are_one_line(
    collection: Collection, command: str, extra: list[str], words: str, tmp_path: Path
) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(
        ["meta", command, qrels, *runs, *[tmp_path / e if e == "s.png" else e for e in extra]]
    )
    assert (code, out) == (2, ""), err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.name != "repro"], ids=lambda c: c.name)
def test_too_few_runs(collection: Collection, command: Command) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(["meta", command.name, qrels, runs[0], *command.args])
    assert (code, out) == (
        2,
        "",
    ) and err == f"rankeval: error: meta {command.name} needs at least 2 runs, got 1\n"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_an_output_is_never_an_input(collection: Collection, command: Command) -> None:
    qrels = collection[0]
    before = qrels.read_bytes()
    code, out, err = invoke([*command_args(collection, command), "-o", qrels])
    assert (code, out) == (2, "") and "-o" in err and len(err.splitlines()) == 1
    assert qrels.read_bytes() == before


def test_repro_errors(collection: Collection) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(["meta", "repro", qrels, *runs[:3]])
    assert code == 2 and out == "" and "REP_ADV" in err
    code, out, err = invoke(["meta", "repro", qrels, *runs[:4], "-m", "AP", "--engine", "dask"])
    assert code == 2 and "--engine" in err  # not an option of repro: it evaluates in this process


def test_meta_lists_its_commands() -> None:
    code, out, _ = invoke(["meta", "--help"])
    assert code == 0
    assert all(name in out for name in ("corr", "topics", "power", "swap", "stability", "repro"))
