"""Record what the ``rankeval`` command prints for each case of :data:`CASES` (issue 25: the
refactor keeps every output byte-identical). Run from anywhere:

    python tests/data/golden/make_golden.py                  # this checkout, into this folder
    python tests/data/golden/make_golden.py --root DIR --out OUTDIR

A case is a name and the arguments of ``python -m rankeval.cli`` (the ``rankeval`` command),
run with the repository root as working directory, so that every input is a path under
``tests/data/`` or ``rankeval/examples/``. ``<name>.out`` receives the command's standard
output, byte for byte, and ``exit_codes.txt`` one line ``<name><TAB><exit status>`` per case.
``--root DIR`` runs the code of another checkout (``git worktree add DIR COMMIT``): its
``rankeval`` package and its ``plugins/`` come first on the import path (:func:`run`). Help
texts are left out on purpose: they may change with the code.

``tests/test_golden_outputs.py`` imports :data:`CASES` and :func:`run` and compares.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
EXIT_CODES = "exit_codes.txt"
"""The file of this folder that holds every case's exit status."""


class Case(NamedTuple):
    """A case: its name and the ``rankeval`` command line after ``rankeval`` (shell quoting)."""

    name: str
    command: str

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(shlex.split(self.command))


TE = "tests/data/trec_eval"
OR = "tests/data/trec_eval_oracle"
ORACLE = f"{OR}/graded.qrels {OR}/ties.run"
DL = "tests/data/dl-hard"
DL_QRELS = f"{DL}/dl_hard-passage.qrels"
BM25, RM3, BERT, RM3_BERT, T5, RM3_T5 = (
    f"{DL}/{r}.run.gz"
    for r in ("bm25", "bm25-rm3", "bm25-bert_zs_", "bm25-rm3-bert_zs_", "bm25-t5_zs_", "bm25-rm3-t5_zs_")
)
SIX = f"{BM25} {RM3} {BERT} {RM3_BERT} {T5} {RM3_T5}"
THREE = f"{BM25} {RM3} {T5}"
# the measures and options of the DL-HARD .run.eval files (trec_eval -l 2 -o -c -M1000 -q -m
# all_trec; -c is the main command's default, -o is obsolete)
ALL_TREC = "-m all_trec -l 2 -M 1000"
ONE_JOB = "-j 1"  # one process: faster than a pool of workers on these small runs
CLEF = "tests/data/clef-tar"
CLEF_ABS, CLEF_CONTENT = (f"{CLEF}/full.test.dta.{kind}.2019.qrels.gz" for kind in ("abs", "content"))
SHEFFIELD, ODDS_RATIO = f"{CLEF}/DTA_sheffield-baseline.gz", f"{CLEF}/DTA_sheffield-Odds_Ratio.gz"
# what the CLEF TAR evaluator prints for task 2 and rankeval has (tests/test_tar.py, OFFICIAL)
RECALLS = " ".join(f"recall@{i}%" for i in range(1, 101))
CLEF_OFFICIAL = (
    "-m 'num_shown rels_found num_rels last_rel norm_last_rel threshold norm_threshold wss_100 wss_95"
    f" recall_threshold' -m '{RECALLS}' -m 'total_cost norm_area ap loss_er'"
)
CLEF_FEW = "-m 'wss_95 recall@50% norm_threshold ap'"
TAR = (
    "-m 'tar_num_docs tar_wss_95 tar_recall@50% tar_norm_threshold tar_ap tar_last_rel' --on-duplicate first"
)
TOY = "tests/data/htbg-toy/truth.json tests/data/htbg-toy/prediction.json"
# the hTBG reference's published values: hTBG and TBG (-t) at h = 3, 5, 10 s, evaluate and best
HTBG = " ".join(
    f"-m '{m}@h={h}{ideal}'"
    for m in ("hTBG", "TBG")
    for h in (3, 5, 10)
    for ideal in ("", "(ideal=true)", "(ideal=true,ideal_rule=reference)")
)
N = "rankeval/examples/nested"
NESTED = f"{N}/qrels.txt bm25={N}/bm25.run bert={N}/bert.run --docinfo {N}/posts.docinfo"
CMP = "-m 'AP(rel=2)' -m nDCG@10"
RANDOMIZATION = "--test randomization --seed 1 --samples 2000 --correction holm"
# the worked table of docs/compare.md (fewer resamples)
PAPER = f"{SIX} -m 'AP(rel=2)' -m nDCG@10 -m 'RR(rel=2)' {RANDOMIZATION} --random-baseline --spread std"

CASES: tuple[Case, ...] = (
    # trec_eval's own golden files (tests/test_trec_eval_command.py, GOLDEN), and its -Z test
    Case("te_out.test", f"trec_eval {TE}/qrels.test {TE}/results.test"),
    Case("te_out.test.a", f"trec_eval -m all_trec {TE}/qrels.test {TE}/results.test"),
    Case("te_out.test.aq", f"trec_eval -m all_trec -q {TE}/qrels.test {TE}/results.test"),
    Case("te_out.test.aqc", f"trec_eval -m all_trec -q -c {TE}/qrels.test {TE}/results.trunc"),
    Case("te_out.test.aqcM", f"trec_eval -m all_trec -q -c -M100 {TE}/qrels.test {TE}/results.trunc"),
    Case(
        "te_out.test.aql",
        f"trec_eval -m all_trec -mrelstring.20 -q -l2 {TE}/qrels.rel_level {TE}/results.test",
    ),
    Case(
        "te_out.test.meas_params",
        "trec_eval -q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35"
        " -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20"
        f" {TE}/qrels.test {TE}/results.test",
    ),
    Case("te_aqZ", f"trec_eval -m all_trec -q -Z {TE}/zscores_file {TE}/qrels.test {TE}/results.test"),
    # trec_eval's options on the oracle's constructed inputs (tests/data/trec_eval_oracle/cases.txt)
    Case("te_oracle_official", f"trec_eval -m official {ORACLE}"),
    Case("te_oracle_q_J", f"trec_eval -q -J -m all_trec {ORACLE}"),
    Case("te_oracle_q_M5", f"trec_eval -q -M 5 -m all_trec {ORACLE}"),
    Case("te_oracle_qcJ_l2", f"trec_eval -q -c -J -l 2 -m all_trec {ORACLE}"),
    Case("te_oracle_M_then_J", f"trec_eval -q -J -M 10 -m official {ORACLE}"),
    Case(
        "te_oracle_repeat_all_trec",
        f"trec_eval -m ndcg_cut.3 -m all_trec -m ndcg_cut.5 -m iprec_at_recall..5 {ORACLE}",
    ),
    # the DL-HARD .run.eval files' command line (on a gzip-compressed run)
    Case("te_dl_hard_bm25", f"trec_eval -l 2 -o -c -M1000 -q -m all_trec {DL_QRELS} {BM25}"),
    # the main command on DL-HARD: the .run.eval measures per query (two runs in the trec
    # format, one in csv and json: the files are large), and the six runs' means as tables (trec
    # with the default jobs, a pool of workers; markdown and latex in one process)
    Case("dl_all_trec_q", f"{DL_QRELS} {BM25} {RM3_T5} {ALL_TREC} -q {ONE_JOB}"),
    Case("dl_all_trec_q_names_trec", f"{DL_QRELS} {RM3_T5} {ALL_TREC} -q --names trec"),
    Case("dl_all_trec_q_csv", f"{DL_QRELS} {RM3_T5} {ALL_TREC} -q -f csv"),
    Case("dl_all_trec_q_json", f"{DL_QRELS} {RM3_T5} {ALL_TREC} -q -f json"),
    Case("dl_six_trec", f"{DL_QRELS} {SIX} {ALL_TREC}"),
    *(
        Case(f"dl_six_{fmt}", f"{DL_QRELS} {SIX} {ALL_TREC} -f {fmt} {ONE_JOB}")
        for fmt in ("markdown", "latex")
    ),
    Case(
        "dl_six_tsv_q_p6", f"{DL_QRELS} {SIX} -m 'AP(rel=2) nDCG@10 RR(rel=2) P@10' -q -f tsv -p 6 {ONE_JOB}"
    ),
    Case("dl_jsonl_q_no_missing_zero", f"{DL_QRELS} {RM3} -m official -q -f jsonl --no-missing-zero"),
    # CLEF TAR: the official evaluator's outputs (tests/test_tar.py), and TAR measures elsewhere
    Case("clef_abs_baseline_q", f"{CLEF_ABS} {SHEFFIELD} {CLEF_OFFICIAL} --compat clef -q"),
    Case("clef_abs_odds_ratio_q", f"{CLEF_ABS} {ODDS_RATIO} {CLEF_OFFICIAL} --compat clef -q"),
    Case("clef_content_baseline_q", f"{CLEF_CONTENT} {SHEFFIELD} {CLEF_OFFICIAL} --compat clef -q"),
    Case("clef_content_odds_ratio_q", f"{CLEF_CONTENT} {ODDS_RATIO} {CLEF_OFFICIAL} --compat clef -q"),
    Case(
        "clef_abs_both_f_clef",
        f"{CLEF_ABS} {SHEFFIELD} {ODDS_RATIO} {CLEF_OFFICIAL} --compat clef -f clef {ONE_JOB}",
    ),
    Case("clef_abs_csv_q", f"{CLEF_ABS} {SHEFFIELD} {CLEF_FEW} --compat clef -f csv -q"),
    Case("tar_abs_q", f"{CLEF_ABS} {SHEFFIELD} {ODDS_RATIO} {TAR} -q {ONE_JOB}"),
    Case("tar_abs_names_clef", f"{CLEF_ABS} {SHEFFIELD} {ODDS_RATIO} {TAR} --names clef {ONE_JOB}"),
    # the hTBG reference's toy input (tests/test_htbg_json_reference.py, docs/tbg.md)
    Case("htbg_toy_q", f"{TOY} {HTBG} -q -p 12"),
    Case("htbg_toy_hours_q", f"{TOY} -m 'hTBG@h=1h nhTBG@h=3h TBG@h=6h' -q"),
    # the nested example: the README's command, and per query
    Case("nested_readme", f"{NESTED} -m hTBG@h=1m -m nhTBG@h=1m -m 'nCS-DCG@10(level=2)'"),
    Case(
        "nested_q_tsv",
        f"{NESTED} -m 'hTBG@h=1m nCS-DCG@10(level=2) AP AP(level=2) RR(level=2) nDCG@10' -q -f tsv -p 12",
    ),
    # rankeval compare on the DL-HARD runs; the paper table of docs/compare.md
    Case("cmp_default", f"compare {DL_QRELS} {THREE} {CMP}"),
    Case(
        "cmp_randomization_latex_width_se",
        f"compare {DL_QRELS} {THREE} {CMP} {RANDOMIZATION} --spread se --latex-width '0.9\\textwidth' -f latex",
    ),
    Case("cmp_randomization_csv_q", f"compare {DL_QRELS} {THREE} {CMP} {RANDOMIZATION} -q -f csv"),
    Case(
        "cmp_named_pairs_all_markdown",
        f"compare {DL_QRELS} BM25={BM25} RM3={RM3} T5={T5} -m nDCG@10 --pairs all {RANDOMIZATION} -f markdown",
    ),
    Case(
        "cmp_wilcoxon_bh_bootstrap_ci_json",
        f"compare {DL_QRELS} {THREE} {CMP} --test wilcoxon --correction bh --ci bootstrap --seed 1 --samples 2000 -f json",
    ),
    Case("cmp_paper_latex", f"compare {DL_QRELS} {PAPER} -f latex"),
    Case("cmp_paper_markdown", f"compare {DL_QRELS} {PAPER} -f markdown"),
)


def run(argv: tuple[str, ...], root: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """``rankeval ARGV`` run in the checkout *root* with its code (its ``rankeval`` and
    ``plugins/`` first on the import path, no entry-point plugin); output captured."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(root), str(root / "plugins"), env.get("PYTHONPATH")) if p
    )
    env["RANKEVAL_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "rankeval.cli", *argv]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=300, check=False)


def write(root: Path, out: Path) -> None:
    """Run every case with the code of *root* and write its outputs into *out*, where no other
    ``.out`` file is left."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in set(out.glob("*.out")) - {out / f"{case.name}.out" for case in CASES}:
        stale.unlink()
    codes = []
    for case in CASES:
        start = time.perf_counter()
        done = run(case.argv, root)
        (out / f"{case.name}.out").write_bytes(done.stdout)
        codes.append(f"{case.name}\t{done.returncode}\n")
        seconds = time.perf_counter() - start
        print(
            f"{case.name}: exit {done.returncode}, {len(done.stdout)} bytes, {seconds:.2f} s", file=sys.stderr
        )
    (out / EXIT_CODES).write_text("".join(codes))


def main() -> None:
    parser = argparse.ArgumentParser(description="Record the outputs of the golden-output cases.")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="checkout whose code runs (default: this one)"
    )
    parser.add_argument("--out", type=Path, default=HERE, help="folder of the outputs (default: this one)")
    args = parser.parse_args()
    write(args.root.resolve(), args.out)


if __name__ == "__main__":
    main()
