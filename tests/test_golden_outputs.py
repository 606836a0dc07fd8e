"""Golden outputs (issue 25): what the ``rankeval`` command prints, byte for byte, and its exit
status, for each case of ``tests/data/golden/make_golden.py`` (trec_eval's golden files and
options, the DL-HARD runs in every format, the CLEF TAR evaluator's outputs, the hTBG
reference's toy input, the nested example, ``rankeval compare`` tables). The expected files
were recorded by that script; a deliberate change of an output is recorded again with it
(``python tests/data/golden/make_golden.py``) and said in the commit.
"""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

GOLDEN = Path(__file__).parent / "data" / "golden"
DIFF_LINES = 40


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_golden = _load_generator()
CASES = {case.name: case for case in make_golden.CASES}


def _recorded_exit_codes() -> dict[str, int]:
    lines = (GOLDEN / make_golden.EXIT_CODES).read_text().splitlines()
    return {name: int(code) for name, code in (line.split("\t") for line in lines)}


def _first_differences(expected: bytes, got: bytes) -> str:
    diff = difflib.unified_diff(
        expected.decode(errors="backslashreplace").splitlines(),
        got.decode(errors="backslashreplace").splitlines(),
        "recorded",
        "now",
        lineterm="",
    )
    return "\n".join(line for _, line in zip(range(DIFF_LINES), diff, strict=False))


@pytest.mark.parametrize("name", list(CASES))
def test_output_is_byte_identical_to_the_recorded_one(name: str) -> None:
    case = CASES[name]
    done = make_golden.run(case.argv)
    expected, recorded_code = (GOLDEN / f"{name}.out").read_bytes(), _recorded_exit_codes()[name]
    problems = []
    if done.returncode != recorded_code:
        stderr = done.stderr.decode(errors="backslashreplace")[-2000:]
        problems.append(f"exit status {done.returncode}, recorded {recorded_code}; stderr:\n{stderr}")
    if done.stdout != expected:
        diff = _first_differences(expected, done.stdout)
        problems.append(f"output differs from {name}.out (first {DIFF_LINES} lines of the diff):\n{diff}")
    advice = "a deliberate change: record it with python tests/data/golden/make_golden.py"
    assert not problems, f"rankeval {case.command}\n" + "\n".join([*problems, advice])


def test_the_table_and_the_recorded_files_agree() -> None:
    """Every case has its output and exit status recorded, and nothing else is recorded; each
    case is a command that succeeds and prints something (no error recorded as golden)."""
    recorded = {path.stem for path in GOLDEN.glob("*.out")}
    assert sorted(recorded) == sorted(CASES)
    assert len(make_golden.CASES) == len(CASES)  # no name used twice
    codes = _recorded_exit_codes()
    assert sorted(codes) == sorted(CASES)
    assert [name for name, code in codes.items() if code != 0] == []
    assert [name for name in CASES if (GOLDEN / f"{name}.out").stat().st_size == 0] == []
