"""``rankeval trec_eval`` against trec_eval 9.0.8's own output, byte for byte (docs:
trec_eval.md), and trec_eval's spellings in the main command.

Golden files (tests/data/SOURCES.md): trec_eval's test outputs ``out.test*`` with the command
lines trec_eval's ``test/`` directory documents, and the DL-HARD ``.run.eval`` files
(``trec_eval -l 2 -o -c -M1000 -q -m all_trec``), whose lines are compared measure by measure.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rankeval.cli.app import app
from rankeval.segments import ordered_mean

DATA = Path(__file__).parent / "data"
TE = DATA / "trec_eval"
DLH = DATA / "dl-hard"
QRELS, RESULTS, TRUNC, LEVELS = TE / "qrels.test", TE / "results.test", TE / "results.trunc", TE / "qrels.rel_level"

# golden file -> trec_eval's arguments (trec_eval's test/README and tests/data/SOURCES.md)
GOLDEN = {
    "out.test": [QRELS, RESULTS],
    "out.test.a": ["-m", "all_trec", QRELS, RESULTS],
    "out.test.aq": ["-m", "all_trec", "-q", QRELS, RESULTS],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", QRELS, TRUNC],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", QRELS, TRUNC],
    "out.test.aql": ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", LEVELS, RESULTS],
    "out.test.meas_params": [
        "-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
        "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
        "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20", QRELS, RESULTS,
    ],
}


def trec_eval(*args: object) -> str:
    result = CliRunner().invoke(app, ["trec_eval", *[str(a) for a in args]])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_byte_identical_to_trec_eval(golden: str) -> None:
    expected = (TE / golden).read_text()
    got = trec_eval(*GOLDEN[golden])
    assert got.splitlines() == expected.splitlines()  # a readable diff on failure
    assert got == expected


@pytest.mark.parametrize("run", sorted(p.name[: -len(".run.gz")] for p in DLH.glob("*.run.gz")))
def test_dl_hard_run_eval_lines(run: str, tmp_path: Path) -> None:
    """Every line of trec_eval's -l 2 -o -c -M1000 -q -m all_trec output, in its order (the
    files were written upstream by trec_eval 9.0.x)."""
    plain = tmp_path / f"{run}.run"
    plain.write_bytes(gzip.decompress((DLH / f"{run}.run.gz").read_bytes()))
    expected = gzip.decompress((DLH / f"{run}.run.eval.gz").read_bytes()).decode()
    if run == "bm25-bert_zs_":
        # every line of the run file is tagged BERT-P, but the upstream .run.eval prints runid
        # T5-P: it was written from a copy with another tag (its 4,550 other lines are equal)
        expected = expected.replace("runid                 \tall\tT5-P\n", "runid                 \tall\tBERT-P\n")
    got = trec_eval("-l", "2", "-o", "-c", "-M1000", "-q", "-m", "all_trec", DLH / "dl_hard-passage.qrels", plain)
    assert got.splitlines() == expected.splitlines()


def test_ordered_mean_is_trec_eval_left_to_right_sum() -> None:
    """A mean summed left to right (C's loop) can differ from numpy's pairwise sum in the last
    bit: here 0.1 + 0.2 + 0.3 + ... accumulated in order."""
    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] * 50)
    running = 0.0
    for v in values:
        running += float(v)
    assert ordered_mean(values) == running / len(values)


def test_main_command_takes_trec_spellings() -> None:
    """-m P.5,10 and -m ndcg_cut (its 9 default cutoffs), -l 2 and --names trec in the main
    command give the values and names of the trec_eval command."""
    main = CliRunner().invoke(
        app, [str(QRELS), str(RESULTS), "-m", "P.5,10", "-m", "ndcg_cut", "-m", "map", "--names", "trec"]
    )
    assert main.exit_code == 0, main.output
    te = trec_eval("-m", "P.5,10", "-m", "ndcg_cut", "-m", "map", QRELS, RESULTS)
    assert sorted(main.stdout.splitlines()) == sorted(te.splitlines())
    names = [line.split("\t")[0].strip() for line in main.stdout.splitlines()]
    assert names[:2] == ["P_5", "P_10"] and len([n for n in names if n.startswith("ndcg_cut_")]) == 9


@pytest.mark.parametrize("complete", [True, False])
def test_main_command_official_equals_trec_eval(complete: bool) -> None:
    """-m official in the main command: the values of rankeval trec_eval -m official (runid
    and num_q aside, which are not per-query numbers); without -c: --no-missing-zero."""
    flags = [] if complete else ["--no-missing-zero"]
    main = CliRunner().invoke(app, [str(QRELS), str(TRUNC), "-m", "official", "--names", "trec", *flags])
    assert main.exit_code == 0, main.output
    te = trec_eval("-m", "official", *(["-c"] if complete else []), QRELS, TRUNC).splitlines()
    assert sorted(main.stdout.splitlines()) == sorted(te[2:])
    assert te[1] == f"num_q                 \tall\t{3 if complete else 2}"


def test_level_applies_to_measures_without_rel() -> None:
    main = CliRunner().invoke(app, [str(LEVELS), str(RESULTS), "-m", "P@10", "-m", "P(rel=1)@5", "-l", "2"])
    assert main.exit_code == 0, main.output
    assert [line.split("\t")[0].strip() for line in main.stdout.splitlines()] == ["P(rel=2)@10", "P(rel=1)@5"]  # rel=1 written: printed (P@5 would mean rel=2 under -l 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "nosuch", QRELS, RESULTS], "illegal measure 'nosuch'"),
        (["-m", "P.x", QRELS, RESULTS], "illegal measure 'P.x'"),
        (["-R", "prefs", QRELS, RESULTS], "-R prefs: not supported"),
        (["-M", "0", QRELS, RESULTS], "-M 0"),
        ([QRELS, TE / "missing.run"], "missing.run"),
    ],
)
def test_trec_eval_errors_are_one_line(args: list[object], message: str) -> None:
    result = CliRunner().invoke(app, ["trec_eval", *[str(a) for a in args]])
    assert result.exit_code in (1, 2)
    assert message in result.output and "Traceback" not in result.output


def test_num_rel_with_c_counts_every_qrels_query(tmp_path: Path) -> None:
    """trec_eval -c: the summary num_rel counts the relevant documents (grade >= 1) of every
    query of the qrels, whatever -l; num_q counts those queries, the means divide by it."""
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 2\n1 0 b 1\n2 0 c 1\n2 0 d 2\n3 0 e 0\n")
    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 x 2 1.0 t\n")
    out = trec_eval("-c", "-l", "2", "-m", "num_q", "-m", "num_rel", "-m", "P.1", qrels, run)
    # q1: P_1 = 1 (a has grade 2); q2, q3 missing count 0; num_rel: a, b, c, d (>= 1)
    assert out == "num_q                 \tall\t3\nnum_rel               \tall\t4\nP_1                   \tall\t0.3333\n"


def test_judged_only_nosummary_and_zscores(tmp_path: Path) -> None:
    """-J drops unjudged documents before ranking; -n prints no summary; -Z prints
    (value - mean) / std per query and measure name, -1000000 where the file has none."""
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run = tmp_path / "r"
    run.write_text("1 Q0 x 1 3.0 t\n1 Q0 a 2 2.0 t\n1 Q0 b 3 1.0 t\n2 Q0 c 1 1.0 t\n")
    # without -J, q1 ranks x (unjudged), a, b: P_1 = 0; with -J, a is first: P_1 = 1
    assert trec_eval("-q", "-n", "-m", "P.1", qrels, run) == (
        "P_1                   \t1\t0.0000\nP_1                   \t2\t1.0000\n"
    )
    assert trec_eval("-q", "-n", "-J", "-m", "P.1", qrels, run) == (
        "P_1                   \t1\t1.0000\nP_1                   \t2\t1.0000\n"
    )
    z = tmp_path / "z"
    z.write_text("1 P_1 0.5 0.25\n")
    # q1: (0 - 0.5) / 0.25 = -2; q2 has no mean: -1000000; the summary is their mean; the
    # names are trec_eval's Z scores' (Z, then the name padded to 22)
    assert trec_eval("-q", "-Z", z, "-m", "P.1", qrels, run) == (
        "ZP_1                   \t1\t-2.0000\n"
        "ZP_1                   \t2\t-1000000.0000\n"
        "ZP_1                   \tall\t-500001.0000\n"
    )


def test_relstring_characters(tmp_path: Path) -> None:
    """relstring: the grade digit, '-' for a document the qrels do not judge, '.' for one
    judged -1 (in the pool, not judged), '>' above 9; as long as the ranking, at most N."""
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 2\n1 0 b -1\n1 0 c 12\n1 0 d 0\n")
    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 5 t\n1 Q0 b 2 4 t\n1 Q0 x 3 3 t\n1 Q0 c 4 2 t\n1 Q0 d 5 1 t\n")
    assert trec_eval("-q", "-m", "relstring.4", qrels, run) == "relstring_4           \t1\t'2.->'\n"
    assert trec_eval("-q", "-m", "relstring", qrels, run) == "relstring             \t1\t'2.->0'\n"


def test_num_docs_reaches_utility(tmp_path: Path) -> None:
    """-N: utility's d term counts the non-relevant documents not retrieved, N - retrieved -
    (R - relevant retrieved). q1: a relevant, retrieved with x: 1·1 - 1·1 + 0·0 + 1·(10 - 2 - 0)."""
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 1\n1 0 b 0\n")
    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 x 2 1.0 t\n")
    assert trec_eval("-N", "10", "-m", "utility.1,-1,0,1", qrels, run) == "utility_1,-1,0,1      \tall\t8.0000\n"
