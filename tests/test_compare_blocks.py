"""`compare` and parameter curves on the block engine (issue 26, item 1): the same comparison
whatever the scheduler, the number of jobs and the block size, as when each run is read whole
and evaluated as one task (what compare did before); and no run read whole.

The reference compares the runs read whole (:class:`rankeval.Run` objects, one task each).
Each variant (this process at the default and at a tiny block size, so that every query is a
block of its own; two worker processes; a 2-worker Dask ``LocalCluster``, which serves the
whole module) must give the same frames, value for value (exact; NaN equal to NaN).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.engine.distributed import DaskOptions
from rankeval.errors import UsageError

DL = Path(__file__).parent / "data" / "dl-hard"
QRELS = DL / "dl_hard-passage.qrels"
RUNS = [DL / "bm25.run.gz", DL / "bm25-rm3.run.gz", DL / "bm25-t5_zs_.run.gz"]
MEASURES = ["AP(rel=2)", "nDCG@10", "RR(rel=2)", "NumRelRet"]
# the statistics that draw random numbers, every pair, and the random baseline (its source run
# is the one run compare still reads whole)
STATS = rankeval.CompareOptions(
    test="randomization", samples=300, ci="bootstrap", correction="holm", pairs="all", random_baseline=True
)

pytestmark = pytest.mark.filterwarnings("ignore::rankeval.errors.RankevalWarning")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The DL-HARD runs as plain text files (cut into blocks from their byte ranges)."""
    out = tmp_path_factory.mktemp("plain")
    paths = []
    for run in RUNS:
        path = out / run.name.removesuffix(".gz")
        path.write_bytes(gzip.decompress(run.read_bytes()))
        paths.append(path)
    return paths


def whole(runs: list[Path]) -> dict[str, rankeval.Run]:
    """*runs* read whole, with the names the engine gives them."""
    from rankeval.engine.runs import as_runs

    return {r.name: r for r in as_runs(runs)}


def assert_same(got: rankeval.Comparison, expected: rankeval.Comparison) -> None:
    """Two comparisons have the same runs, queries and frames, value for value."""
    assert got.runs == expected.runs and got.baseline == expected.baseline
    assert list(got.query_ids) == list(expected.query_ids)
    for frame in ("scores", "tests"):
        pd.testing.assert_frame_equal(getattr(got, frame), getattr(expected, frame), check_exact=True)
    pd.testing.assert_frame_equal(
        got.to_dataframe(per_query=True), expected.to_dataframe(per_query=True), check_exact=True
    )


# (jobs, block size, Dask?) of each variant
VARIANTS = {
    "jobs=1": (1, None, False),
    "jobs=1, one query per block": (1, 700, False),
    "jobs=2, one query per block": (2, 700, False),
    "dask, one query per block": (1, 700, True),
}
OPTIONS = {
    "default": rankeval.EvalOptions(),
    "missing queries left out, top 100": rankeval.EvalOptions(missing_zero=False, max_docs=100),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
@pytest.mark.parametrize("variant", VARIANTS.values(), ids=VARIANTS.keys())
def test_compare_is_the_same_on_every_scheduler(
    plain_runs: list[Path], scheduler: str, variant: tuple[int, int | None, bool], options: Any
) -> None:
    jobs, block_size, dask = variant
    ev = rankeval.Evaluator(QRELS, MEASURES, options=options)
    expected = ev.compare(whole(plain_runs), stats=STATS)
    engine = DaskOptions(scheduler=scheduler) if dask else "local"
    got = ev.compare(plain_runs, stats=STATS, jobs=jobs, engine=engine, block_size=block_size)
    assert_same(got, expected)
    assert got.random is not None and got.runs[-1] == "random"


@pytest.mark.parametrize("variant", VARIANTS.values(), ids=VARIANTS.keys())
def test_curves_are_the_same_on_every_scheduler(
    scheduler: str, variant: tuple[int, int | None, bool]
) -> None:
    jobs, block_size, dask = variant
    ev = rankeval.Evaluator(QRELS, MEASURES)
    expected = ev.curve(whole(RUNS), "nDCG@{5,10,20}")
    engine = DaskOptions(scheduler=scheduler) if dask else "local"
    got = ev.curve(RUNS, "nDCG@{5,10,20}", jobs=jobs, engine=engine, block_size=block_size)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.attrs == expected.attrs


# the command line: each way of running gives the same bytes
CLI_VARIANTS = {
    "jobs 1": ["--jobs", "1"],
    "jobs 2, small blocks": ["--jobs", "2", "--block-size", "64KiB"],
    "dask": ["--engine", "dask", "--scheduler", "{scheduler}", "--block-size", "64KiB"],
}


@pytest.mark.parametrize("how", CLI_VARIANTS.values(), ids=CLI_VARIANTS.keys())
def test_cli_compare_takes_the_engine_options(scheduler: str, how: list[str]) -> None:
    args = ["compare", str(QRELS), *map(str, RUNS), "-m", "AP(rel=2)", "-m", "nDCG@10", "-q", "-f", "tsv"]
    args += ["--test", "bootstrap", "--samples", "200", "--random-baseline"]
    expected = CliRunner().invoke(app, args)
    assert expected.exit_code == 0, expected.output
    got = CliRunner().invoke(app, [*args, *(a.format(scheduler=scheduler) for a in how)])
    assert got.exit_code == 0, got.output
    assert got.stdout == expected.stdout


BAD = {
    "unknown engine": ({"engine": "spark"}, "engine must be one of local, dask"),
    "block size 0": ({"block_size": 0}, "block size must be a positive number"),
}


@pytest.mark.parametrize(("keywords", "message"), BAD.values(), ids=BAD.keys())
def test_bad_engine_arguments_are_usage_errors(keywords: dict[str, Any], message: str) -> None:
    ev = rankeval.Evaluator(QRELS, MEASURES)
    with pytest.raises(UsageError, match=message):
        ev.compare(RUNS[:2], **keywords)


# ------------------------------------------------------------------------- no run read whole
@pytest.fixture
def no_whole_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a run file whole fails (the readers compare used before: Run.read, the whole-file
    table reader)."""
    from rankeval.io import trec
    from rankeval.io.data import Run

    def whole_read(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a run was read whole: {args}")

    monkeypatch.setattr(Run, "read", classmethod(whole_read))
    monkeypatch.setattr(trec, "read_run_table", whole_read)


def test_compare_reads_no_run_whole(plain_runs: list[Path], no_whole_run: None) -> None:
    ev = rankeval.Evaluator(QRELS, MEASURES)
    got = ev.compare(plain_runs[:2])
    assert got.runs == [p.name for p in plain_runs[:2]]
    assert got.values.shape == (2, len(MEASURES), len(got.query_ids))
    assert len(ev.curve(plain_runs[:2], "nDCG@{5,10}")) == 4


def test_cli_compare_and_its_curves_read_no_run_whole(
    plain_runs: list[Path], no_whole_run: None, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    args = ["compare", str(QRELS), f"a={plain_runs[0]}", f"b={plain_runs[1]}", "-m", "AP(rel=2)"]
    args += ["--curve", "nDCG@{5,10}", "--plot", str(tmp_path / "plots")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "plots").glob("curve-*.png"))) == 1


def test_stdin_is_read_once_for_the_comparison_and_its_curves(plain_runs: list[Path], tmp_path: Path) -> None:
    """A run on stdin (read whole by the engine anyway) serves the comparison, the random
    baseline and each curve."""
    pytest.importorskip("matplotlib")
    args = [
        "compare",
        str(QRELS),
        "-",
        str(plain_runs[1]),
        "-m",
        "AP(rel=2)",
        "-f",
        "tsv",
        "--random-baseline",
    ]
    args += ["--samples", "50", "--curve", "nDCG@{5,10}", "--plot", str(tmp_path / "plots")]
    got = CliRunner().invoke(app, args, input=plain_runs[0].read_bytes())
    assert got.exit_code == 0, got.output
    expected = CliRunner().invoke(app, [*args[:2], str(plain_runs[0]), *args[3:]])
    assert expected.exit_code == 0, expected.output
    assert got.stdout == expected.stdout.replace(plain_runs[0].name, "stdin")
