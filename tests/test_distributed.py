"""The Dask engine gives exactly the local engine's results, for every built-in family.

One 2-worker ``LocalCluster`` (processes) serves the whole module. Each test evaluates the same
inputs on both engines and compares every per-query and aggregate value for exact equality
(NaN equal to NaN), with several partition counts so that queries land in different
partitions and some partitions hold no query of a kind (e.g. no nested item).
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rankeval
from rankeval.engine.distributed import DaskOptions, check_measure
from rankeval.errors import InputError, UsageError

DATA = Path(__file__).parent / "data"

pytestmark = pytest.mark.filterwarnings("ignore::rankeval.errors.RankevalWarning")


@pytest.fixture(scope="module")
def scheduler():
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def same(qrels, runs, measures, scheduler, partitions=(None, 7), **kw):
    local = rankeval.evaluate(qrels, runs, measures, **kw)
    for n in partitions:
        options = DaskOptions(scheduler=scheduler, partitions=n, blocksize=kw.pop("blocksize", 64 * 2**20))
        dist = rankeval.evaluate(qrels, runs, measures, engine="dask", dask=options, **kw)
        assert list(dist.columns) == list(local.columns)
        assert len(dist) == len(local)
        pd.testing.assert_frame_equal(
            dist.reset_index(drop=True), local.reset_index(drop=True), check_exact=True
        )
    return local


# ------------------------------------------------------------------------------ classic
CLASSIC = [
    "AP",
    "nDCG",
    "nDCG@10",
    "P@5",
    "R@100",
    "RR",
    "Rprec",
    "Bpref",
    "Success@10",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "AP@10",
    "Judged@10",
    "ERR@10",
    "infAP",
]


def test_classic_measures_trec_eval_test_run(scheduler):
    frame = same(DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test", CLASSIC, scheduler)
    assert len(frame) == 4 * len(CLASSIC)  # 3 queries and "all"


def test_classic_measures_compressed_dl_hard_runs_and_options(scheduler):
    runs = [DATA / "dl-hard" / "bm25.run.gz", DATA / "dl-hard" / "bm25-rm3.run.gz"]
    same(DATA / "dl-hard" / "dl_hard-passage.qrels", runs, ["AP(rel=2)", "nDCG@10", "P(rel=2)@10"], scheduler)
    same(
        DATA / "dl-hard" / "dl_hard-passage.qrels",
        runs[0],
        ["AP", "NumRet"],
        scheduler,
        partitions=(3,),
        missing_zero=False,
        max_docs=100,
    )


def test_blocks_and_globs_equal_one_file(scheduler, tmp_path):
    """A run split over several blocks and over several files (a glob)."""
    lines = (DATA / "trec_eval" / "results.test").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    (tmp_path / "part-0.txt").write_text("".join(lines[:half]))
    (tmp_path / "part-1.txt").write_text("".join(lines[half:]))
    local = rankeval.evaluate(DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test", CLASSIC)
    dist = rankeval.evaluate(
        DATA / "trec_eval" / "qrels.test",
        str(tmp_path / "part-*.txt"),
        CLASSIC,
        engine="dask",
        dask=DaskOptions(scheduler=scheduler, blocksize=4096),
    )
    assert (dist["value"].to_numpy() == local["value"].to_numpy()).all()
    assert (dist["query_id"].to_numpy() == local["query_id"].to_numpy()).all()


def test_parquet_run_equals_text(scheduler, tmp_path):
    from rankeval.engine.dask_io import to_parquet

    qrels, run = DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test"
    to_parquet(qrels, run, tmp_path / "qrels.parquet", tmp_path / "run.parquet")
    assert (tmp_path / "run.parquet").is_dir()
    local = rankeval.evaluate(qrels, run, CLASSIC)
    dist = rankeval.evaluate(
        tmp_path / "qrels.parquet",
        tmp_path / "run.parquet",
        CLASSIC,
        engine="dask",
        dask=DaskOptions(scheduler=scheduler),
    )
    assert (dist["value"].to_numpy() == local["value"].to_numpy()).all()


def test_foreign_parquet_run_without_line_numbers_equals_text(scheduler, tmp_path):
    """Parquet written by someone else (no ``file``/``line`` columns, several files, integer
    query ids): rows are numbered in the files' order, values as from the text run."""
    qrels, run = DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test"
    frame = rankeval.Run.read(run).table.to_pandas()
    frame["query_id"] = frame["query_id"].astype(str).astype(int)
    (tmp_path / "run.parquet").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[part][["query_id", "doc_id", "score"]].to_parquet(
            tmp_path / "run.parquet" / f"part.{i}.parquet"
        )
    local = rankeval.evaluate(qrels, run, CLASSIC)
    dist = rankeval.evaluate(
        qrels, tmp_path / "run.parquet", CLASSIC, engine="dask", dask=DaskOptions(scheduler=scheduler)
    )
    assert (dist["value"].to_numpy() == local["value"].to_numpy()).all()
    assert (dist["query_id"].to_numpy() == local["query_id"].to_numpy()).all()


# ------------------------------------------------------------------------------ nested
def nested_collection(tmp_path: Path, queries: int = 30) -> tuple[Path, Path]:
    """Individuals with posts (cost=, stopping probabilities); the last queries are flat
    (individuals without posts), so some partitions see no nesting at all."""
    rnd = random.Random(11)
    q_lines, r_lines = [], []
    for q in range(queries):
        for u in range(rnd.randint(1, 6)):
            q_lines.append(f"q{q} 0 u{u} {rnd.choice([0, 1, 1, 2])} cost={rnd.randint(0, 50)}\n")
            r_lines.append(f"q{q} Q0 u{u} 0 {rnd.choice([0.1, 0.5, 0.9, 0.5])} r\n")
            if q >= queries - 8:
                continue
            for p in range(rnd.randint(0, 7)):
                q_lines.append(
                    f"q{q} 0 u{u}/p{p} {rnd.choice([0, 0, 0.2, 1, 2])} cost={rnd.randint(1, 400)}\n"
                )
                if rnd.random() < 0.9:
                    r_lines.append(f"q{q} Q0 u{u}/p{p} 0 {rnd.choice([0.2, 0.4, 0.6])} r\n")
    rnd.shuffle(r_lines)
    (tmp_path / "n.qrels").write_text("".join(q_lines))
    (tmp_path / "n.run").write_text("".join(r_lines))
    return tmp_path / "n.qrels", tmp_path / "n.run"


NESTED = [
    "hTBG@60",
    "nhTBG@60",
    "hTBG(ideal=true)@60",
    "hTBG(max_docs=2,ideal=true)@60",
    "hTBG(smax=2)@600",
    "TBG@60",
    "nTBG@60",
    "AP",
    "nDCG(level=2)",
    "P(level=2)@2",
]


def test_nested_run_all_tbg_measures(scheduler, tmp_path):
    qrels, run = nested_collection(tmp_path)
    same(qrels, run, NESTED, scheduler, partitions=(None, 5, 40))


def test_json_inputs_run_in_memory(scheduler):
    toy = DATA / "htbg-toy"
    same(
        toy / "truth.json",
        toy / "prediction.json",
        ["hTBG@3", "nhTBG@3", "TBG@5"],
        scheduler,
        partitions=(2,),
    )


# ------------------------------------------------------------------------------ CS-DCG
def test_cost_sensitive_measures(scheduler, tmp_path):
    rnd = random.Random(5)
    q_lines, r_lines = [], []
    for q in range(25):
        docs = [f"d{i}" for i in range(rnd.randint(1, 12))]
        for d in docs:
            sens = f" sens={rnd.choice([1, 2])}" if rnd.random() < 0.3 else ""
            q_lines.append(f"q{q} 0 {d} {rnd.choice([0, 1, 2])}{sens}\n")
        for i, d in enumerate(rnd.sample(docs, len(docs))):
            r_lines.append(f"q{q} Q0 {d} {i} {rnd.random():.3f} r\n")
    (tmp_path / "s.qrels").write_text("".join(q_lines))
    (tmp_path / "s.run").write_text("".join(r_lines))
    specs = ["CS-DCG@5", "nCS-DCG@5", "nCS-DCG(bounds=greedy)@3", "CS-DCG-neg@5", "nCS-DCG(agg=gmean)@10"]
    same(tmp_path / "s.qrels", tmp_path / "s.run", specs, scheduler, partitions=(None, 6))


# ------------------------------------------------------------------------------ TAR
TAR = [
    "tar_num_docs",
    "tar_num_rels",
    "tar_num_shown",
    "tar_rels_found",
    "tar_last_rel",
    "tar_norm_last_rel",
    "tar_threshold",
    "tar_norm_threshold",
    "tar_recall_threshold",
    "tar_wss_100",
    "tar_wss_95",
    "tar_ap",
    "tar_norm_area",
    "tar_recall@10%",
    "tar_recall@50%",
    "tar_loss_er",
    "tar_total_cost",
    "tar_reliability@0.95",
]


@pytest.mark.parametrize("compat", [None, "clef"])
def test_tar_measures(scheduler, tmp_path, compat):
    """Pooled recall@P% and the evaluator's topic order survive partitioning."""
    qrels = tmp_path / "abs.qrels"
    qrels.write_bytes(gzip.decompress((DATA / "clef-tar" / "full.test.dta.abs.2019.qrels.gz").read_bytes()))
    run = DATA / "clef-tar" / "DTA_sheffield-baseline.gz"
    same(qrels, run, TAR, scheduler, partitions=(None, 3), compat=compat, on_duplicate="first")


# ------------------------------------------------------------------------------ errors
def test_errors_name_the_file_and_global_line(scheduler, tmp_path):
    lines = (DATA / "trec_eval" / "results.test").read_text().splitlines(keepends=True)
    bad = [*lines[:500], "401 Q0 broken-line\n", *lines[500:]]
    (tmp_path / "bad.run").write_text("".join(bad))
    with pytest.raises(InputError) as info:
        rankeval.evaluate(
            DATA / "trec_eval" / "qrels.test",
            tmp_path / "bad.run",
            "AP",
            engine="dask",
            dask=DaskOptions(scheduler=scheduler, blocksize=2048),
        )
    assert info.value.line == 501
    assert str(tmp_path / "bad.run") in str(info.value)


def test_duplicates_are_found_across_blocks(scheduler, tmp_path):
    lines = (DATA / "trec_eval" / "results.test").read_text().splitlines(keepends=True)
    (tmp_path / "dup.run").write_text("".join([*lines, lines[3]]))
    with pytest.raises(InputError, match=r"duplicate document .*first on line 4") as info:
        rankeval.evaluate(
            DATA / "trec_eval" / "qrels.test",
            tmp_path / "dup.run",
            "AP",
            engine="dask",
            dask=DaskOptions(scheduler=scheduler, blocksize=2048),
        )
    assert info.value.line == len(lines) + 1


def test_bad_engine_and_unpicklable_measure():
    with pytest.raises(UsageError, match="engine must be one of"):
        rankeval.evaluate(
            DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test", "AP", engine="spark"
        )
    from rankeval_trec import AP

    check_measure(AP())  # a built-in measure pickles unchanged

    class Local(AP):  # a class defined in a function cannot be pickled by reference
        pass

    with pytest.raises(UsageError, match="cannot be sent to Dask workers"):
        check_measure(Local())


def test_cli_engine_dask(scheduler, tmp_path):
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = [
        str(DATA / "trec_eval" / "qrels.test"),
        str(DATA / "trec_eval" / "results.test"),
        "-m",
        "AP",
        "-m",
        "P@5",
        "-q",
    ]
    local = CliRunner().invoke(app, args)
    dist = CliRunner().invoke(app, [*args, "--engine", "dask", "--scheduler", scheduler])
    assert local.exit_code == 0 and dist.exit_code == 0, dist.output
    assert dist.output == local.output
    assert np.char.count(np.array(local.output.splitlines()), "\t").min() == 2
    bad = CliRunner().invoke(app, [*args, "--engine", "spark"])
    assert bad.exit_code == 2 and "unknown --engine" in bad.output


def test_unreachable_scheduler_is_a_clear_error():
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = [str(DATA / "trec_eval" / "qrels.test"), str(DATA / "trec_eval" / "results.test"), "-m", "AP"]
    result = CliRunner().invoke(app, [*args, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    assert result.output.startswith("rankeval: error: the Dask engine failed: ")
    assert "Traceback" not in result.output
