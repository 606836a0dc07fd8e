"""The block engine gives exactly the results of whole runs in memory, on every scheduler,
for every built-in family.

The reference evaluates each run read whole (one alignment of the whole run against all the
qrels, as rankeval did before blocks). Each test compares it, value for value (exact
equality, NaN equal to NaN), with: this process one block at a time (``jobs=1``) at the
default and at tiny block sizes (so that runs are cut into many blocks, and some blocks hold
no query of a kind, e.g. no nested item); a pool of two worker processes (``jobs=2``); and a
2-worker Dask ``LocalCluster`` (processes), which serves the whole module.
"""

from __future__ import annotations

import gzip
import itertools
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


def in_memory(runs):
    """*runs* read whole, with the names the engine gives them."""
    from rankeval.engine.runs import as_runs

    return {r.name: r for r in as_runs(runs)}


def same(qrels, runs, measures, scheduler, block_sizes=(None, 700), **options):
    """Every scheduler and block size gives the values of the whole runs in memory (*options*:
    the fields of the EvalOptions)."""
    ev = rankeval.Evaluator(qrels, measures, options=rankeval.EvalOptions(**options))
    whole = ev.evaluate(in_memory(runs))
    variants = [{"jobs": 1, "block_size": b} for b in block_sizes]
    variants.append({"jobs": 2, "block_size": block_sizes[-1]})
    variants.append({"engine": DaskOptions(scheduler=scheduler), "block_size": block_sizes[-1]})
    for variant in variants:
        got = ev.evaluate(runs, **variant)
        assert list(got.columns) == list(whole.columns)
        assert len(got) == len(whole), variant
        pd.testing.assert_frame_equal(
            got.reset_index(drop=True), whole.reset_index(drop=True), check_exact=True
        )
    return whole


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
    same(
        DATA / "dl-hard" / "dl_hard-passage.qrels",
        runs,
        ["AP(rel=2)", "nDCG@10", "P(rel=2)@10"],
        scheduler,
        block_sizes=(None, 400_000),
    )
    same(
        DATA / "dl-hard" / "dl_hard-passage.qrels",
        runs[0],
        ["AP", "NumRet"],
        scheduler,
        block_sizes=(None, 400_000),
        missing_zero=False,
        max_docs=100,
    )


def test_judged_only_and_float32_scores_apply_per_block():
    """trec_eval's -J and float32 scores (EvalOptions), applied block by block, give the
    values of the whole run filtered and rounded first (Run.judged_only, with_float32_scores)."""
    qrels = rankeval.Qrels.read(DATA / "dl-hard" / "dl_hard-passage.qrels")
    path = DATA / "dl-hard" / "bm25-rm3.run.gz"
    whole = rankeval.Run.read(path).judged_only(qrels).with_float32_scores()
    measures = ["AP(rel=2)", "nDCG@10", "NumRet", "P@5"]
    expected = rankeval.evaluate(qrels, {"r": whole}, measures)
    options = rankeval.EvalOptions(judged_only=True, float32_scores=True)
    for jobs in (1, 2):
        got = rankeval.evaluate(qrels, {"r": path}, measures, options=options, jobs=jobs, block_size=300_000)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    plain = rankeval.evaluate(qrels, {"r": path}, measures, block_size=300_000)
    assert not plain.value.equals(expected.value)  # the options change the values


def test_blocks_and_globs_equal_one_file(scheduler, tmp_path):
    """A run split over several blocks and over several files (a glob)."""
    lines = (DATA / "trec_eval" / "results.test").read_text().splitlines(keepends=True)
    lines.sort(key=lambda line: line.split()[0])  # stable: grouped by query, each in its order
    half = len(lines) // 2
    while lines[half].split()[0] == lines[half - 1].split()[0]:
        half += 1  # the files of one run hold whole queries (a query in two files is an error)
    (tmp_path / "part-0.txt").write_text("".join(lines[:half]))
    (tmp_path / "part-1.txt").write_text("".join(lines[half:]))
    local = rankeval.evaluate(DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test", CLASSIC)
    dist = rankeval.evaluate(
        DATA / "trec_eval" / "qrels.test",
        str(tmp_path / "part-*.txt"),
        CLASSIC,
        engine=DaskOptions(scheduler=scheduler),
        block_size=4096,
    )
    assert (dist["value"].to_numpy() == local["value"].to_numpy()).all()
    assert dist["query_id"].equals(local["query_id"])  # the aggregates: NaN in both


def test_parquet_run_equals_text(scheduler, tmp_path):
    from rankeval.io.convert import to_parquet

    qrels, run = DATA / "trec_eval" / "qrels.test", DATA / "trec_eval" / "results.test"
    to_parquet(qrels, run, tmp_path / "qrels.parquet", tmp_path / "run.parquet")
    assert (tmp_path / "run.parquet").is_dir()
    local = rankeval.evaluate(qrels, run, CLASSIC)
    dist = rankeval.evaluate(
        tmp_path / "qrels.parquet", tmp_path / "run.parquet", CLASSIC, engine=DaskOptions(scheduler=scheduler)
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
        qrels, tmp_path / "run.parquet", CLASSIC, engine=DaskOptions(scheduler=scheduler)
    )
    assert (dist["value"].to_numpy() == local["value"].to_numpy()).all()
    assert dist["query_id"].equals(local["query_id"])  # the aggregates: NaN in both


# ------------------------------------------------------------------------------ nested
def nested_collection(tmp_path: Path, queries: int = 30, shuffle: bool = True) -> tuple[Path, Path]:
    """Individuals with posts (cost=, stopping probabilities); the last queries are flat
    (individuals without posts), so some blocks see no nesting at all. *shuffle*: the run's
    lines in random order (an unsorted run), else grouped by query."""
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
    if not shuffle:
        r_lines.sort(key=lambda line: int(line.split()[0][1:]))  # stable: each query's own order
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
    qrels, run = nested_collection(tmp_path, shuffle=False)
    same(qrels, run, NESTED, scheduler, block_sizes=(None, 300, 2000))


def test_nested_compressed_run_is_cut_once(scheduler, tmp_path, monkeypatch):
    """A gzipped nested run whose last queries are flat: the collection is known to be nested
    from the qrels, so no block is evaluated again and the file is cut once."""
    from rankeval.engine import blockwise

    qrels, run = nested_collection(tmp_path, shuffle=False)
    gz = tmp_path / "n.run.gz"
    gz.write_bytes(gzip.compress(run.read_bytes()))
    cuts = []
    split = blockwise.split_run
    monkeypatch.setattr(blockwise, "split_run", lambda *a: cuts.append(a) or split(*a))
    same(qrels, gz, NESTED[:2], scheduler, block_sizes=(300,))
    assert len(cuts) == 3  # per evaluation (jobs 1, jobs 2, Dask): one cut


def test_unsorted_run_is_grouped_by_query_with_a_warning(scheduler, tmp_path):
    """A run whose queries are not grouped: detected, grouped by query, same values."""
    qrels, run = nested_collection(tmp_path, shuffle=True)
    same(qrels, run, NESTED, scheduler)
    with pytest.warns(rankeval.errors.RankevalWarning, match=r"n\.run: not sorted by query .* grouped by query"):
        rankeval.evaluate(qrels, run, "AP", jobs=1, block_size=700)


def test_many_runs_at_once_are_one_task_list(scheduler):
    """Six compressed runs, each cut into blocks, and the trec_eval run twice under names."""
    runs = sorted(str(p) for p in (DATA / "dl-hard").glob("*.run.gz"))
    assert len(runs) == 6
    same(
        DATA / "dl-hard" / "dl_hard-passage.qrels",
        runs,
        ["AP", "nDCG@10", "RR(rel=2)"],
        scheduler,
        block_sizes=(None, 20000),
    )


def test_block_cuts_fall_between_queries(tmp_path, monkeypatch):
    """Every cut of a sorted run is at a change of query, lines are counted across blocks,
    and a query longer than two blocks is cut anyway (then found in two blocks)."""
    from rankeval.io.blocks import split_run

    data = (DATA / "trec_eval" / "results.test").read_bytes()
    blocks = list(split_run(DATA / "trec_eval" / "results.test", 500))
    assert len(blocks) >= 3 and blocks[0].start == 0 and blocks[-1].end == len(data)
    for before, after in itertools.pairwise(blocks):
        assert before.end == after.start
        last = data[: after.start].splitlines()[-1].split()[0]
        assert data[after.start :].split()[0] != last
        assert after.first_line == data[: after.start].count(b"\n") + 1
    big = b"".join(b"q1 Q0 d%d 1 %d.0 t\n" % (i, i) for i in range(300))
    (tmp_path / "one.run").write_bytes(big)
    assert len(list(split_run(tmp_path / "one.run", 1000))) == 1  # a query is not cut ...
    monkeypatch.setattr("rankeval.io.blocks.LONGEST_QUERY", 0)
    assert len(list(split_run(tmp_path / "one.run", 1000))) > 1  # ... unless it is too long
    monkeypatch.undo()
    gz = tmp_path / "r.gz"
    gz.write_bytes(gzip.compress(data))
    zipped = list(split_run(gz, 500))
    assert [(b.start, b.end, b.first_line) for b in zipped] == [
        (b.start, b.end, b.first_line) for b in blocks
    ]
    assert b"".join(b.data for b in zipped) == data


def test_json_inputs_run_in_memory(scheduler):
    toy = DATA / "htbg-toy"
    same(
        toy / "truth.json",
        toy / "prediction.json",
        ["hTBG@3", "nhTBG@3", "TBG@5"],
        scheduler,
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
    same(tmp_path / "s.qrels", tmp_path / "s.run", specs, scheduler)


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
    same(qrels, run, TAR, scheduler, block_sizes=(None, 400_000), compat=compat, on_duplicate="first")


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
            engine=DaskOptions(scheduler=scheduler),
            block_size=2048,
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
            engine=DaskOptions(scheduler=scheduler),
            block_size=2048,
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
    assert np.char.count(np.array(local.stdout.splitlines()), "\t").min() == 2
    bad = CliRunner().invoke(app, [*args, "--engine", "spark"])
    assert bad.exit_code == 2 and "unknown --engine" in bad.output


@pytest.mark.slow
def test_unreachable_scheduler_is_a_clear_error():
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    args = [str(DATA / "trec_eval" / "qrels.test"), str(DATA / "trec_eval" / "results.test"), "-m", "AP"]
    result = CliRunner().invoke(app, [*args, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    assert result.output.startswith("rankeval: error: the Dask engine failed: ")
    assert "Traceback" not in result.output
