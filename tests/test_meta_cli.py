"""The ``rankeval meta`` commands: corr and topics, on small runs written here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from rankeval import Evaluator
from rankeval.cli.app import app
from rankeval.meta.correlation import correlation
from rankeval.meta.topics import topics_for_anova, topics_for_ci, topics_for_ttest, variance_estimate

QUERIES = [str(q) for q in range(101, 109)]
DOCS = [f"d{k}" for k in range(12)]


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
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


def invoke(args: list[object]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def means(qrels: Path, runs: list[Path], measure: str) -> list[float]:
    """Each run's mean per-query value, straight from the library's long frame."""
    frame = Evaluator(str(qrels), [measure]).evaluate([str(r) for r in runs])
    rows = frame[frame["query_id"].notna()]
    by_run = rows.groupby("run", sort=True)["value"].mean()
    return [float(by_run[r.name]) for r in runs]


def matrix(qrels: Path, runs: list[Path], measure: str) -> np.ndarray:
    frame = Evaluator(str(qrels), [measure]).evaluate([str(r) for r in runs])
    rows = frame[frame["query_id"].notna()]
    wide = rows.pivot(index="query_id", columns="run", values="value")
    return np.asarray(wide[[r.name for r in runs]].to_numpy(dtype=float))


@pytest.mark.parametrize("method", ["tau_b", "tau_ap_b", "spearman", "pearson", "rbo"])
def test_corr_of_two_measures(collection: tuple[Path, Path, list[Path]], method: str) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(
        ["meta", "corr", qrels, *runs, "-m", "AP", "-m", "nDCG@5", "--method", method, "-p", "12"]
    )
    assert code == 0, err
    fields = out.rstrip("\n").split("\t")
    assert fields[:4] == [method, "AP", "nDCG@5", "5 runs"]
    expected = correlation(means(qrels, runs, "AP"), means(qrels, runs, "nDCG@5"), method)
    assert float(fields[4]) == pytest.approx(expected, abs=1e-11)


def test_corr_across_two_qrels(collection: tuple[Path, Path, list[Path]]) -> None:
    qrels, qrels2, runs = collection
    code, out, err = invoke(["meta", "corr", qrels, *runs, "-m", "nDCG", "--qrels2", qrels2, "-p", "12"])
    assert code == 0, err
    expected = correlation(means(qrels, runs, "nDCG"), means(qrels2, runs, "nDCG"), "tau_b")
    assert float(out.split("\t")[4]) == pytest.approx(expected, abs=1e-11)
    # the same qrels twice: the same ranking
    code, out, _ = invoke(["meta", "corr", qrels, *runs, "-m", "nDCG", "--qrels2", qrels])
    assert code == 0 and out.rstrip("\n").split("\t")[4] == "1.0000"


def test_corr_bootstrap_is_seeded(collection: tuple[Path, Path, list[Path]]) -> None:
    qrels, _, runs = collection
    args = ["meta", "corr", qrels, *runs, "-m", "AP", "-m", "P@5", "--ci", "--samples", "300"]
    first, again, other = (
        invoke([*args, "--seed", "3"]),
        invoke([*args, "--seed", "3"]),
        invoke([*args, "--seed", "4"]),
    )
    assert first[0] == 0, first[2]
    assert first[1] == again[1] and first[1] != other[1]
    interval = first[1].split("\t")[5]
    low, high = (float(v) for v in interval[interval.index("[") + 1 : interval.index("]")].split(", "))
    assert -1 <= low <= high <= 1
    assert "300 bootstrap samples of 8 topics, seed 3" in first[1]


def test_topics(collection: tuple[Path, Path, list[Path]]) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(
        ["meta", "topics", qrels, *runs, "-m", "AP", "--min-diff", "0.05", "--width", "0.1", "-p", "12"]
    )
    assert code == 0, err
    table = pd.DataFrame([line.split("\t") for line in out.splitlines()])
    variance = variance_estimate(matrix(qrels, runs, "AP"))
    assert list(table[1]) == ["residual variance", "paired t-test", "one-way ANOVA", "CI width"]
    assert float(table[2][0]) == pytest.approx(variance, abs=1e-11)
    assert int(table[2][1]) == topics_for_ttest(variance, 0.05)
    assert int(table[2][2]) == topics_for_anova(variance, 0.05, 5)
    assert int(table[2][3]) == topics_for_ci(variance, 0.1)


BAD = [
    # (arguments after QRELS RUN..., words of the one-line message)
    (["-m", "AP"], "needs two measures (-m A -m B) or --qrels2; the -m options give 1: AP"),
    (["-m", "AP", "-m", "P@5", "-m", "nDCG"], "the -m options give 3"),
    (["-m", "AP", "-m", "P@5", "--method", "kendall"], "unknown --method 'kendall'"),
    (["-m", "AP", "-m", "P@5", "--seed", "-1"], "--seed"),
    (["-m", "AP", "-m", "P@5", "--ci", "--samples", "0"], "--samples must be at least 1"),
    ([], "no measure given"),
]


@pytest.mark.parametrize(("extra", "words"), BAD)
def test_corr_errors_are_one_line(
    collection: tuple[Path, Path, list[Path]], extra: list[str], words: str
) -> None:
    qrels, _, runs = collection
    code, out, err = invoke(["meta", "corr", qrels, *runs, *extra])
    assert code == 2 and out == ""
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_topics_errors(collection: tuple[Path, Path, list[Path]]) -> None:
    qrels, _, runs = collection
    code, _, err = invoke(["meta", "topics", qrels, *runs, "-m", "AP"])
    assert code == 2 and "needs --min-diff D" in err
    code, _, err = invoke(["meta", "topics", qrels, *runs, "-m", "AP", "--min-diff", "0.05", "--alpha", "2"])
    assert code == 2 and "alpha must be between 0 and 1" in err
    code, _, err = invoke(["meta", "topics", qrels, runs[0], "-m", "AP", "--min-diff", "0.05"])
    assert code == 2 and "at least 2 of each" in err


def test_meta_is_a_command_name() -> None:
    code, out, _ = invoke(["meta", "--help"])
    assert code == 0 and "corr" in out and "topics" in out
