"""The suite itself: every test module has exactly one layer (``tests/conftest.py``, LAYERS),
each layer is a registered marker, and the tests write nothing outside a temporary directory:
a run of the tests that touch each place a library writes to by default leaves an empty home
directory, an empty temporary directory and an empty working directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LAYERS, PRIVATE_LOCATIONS

TESTS = Path(__file__).resolve().parent

# tests that make a library write where it does by default: ir_datasets (its home, at import),
# Dask (its scratch space), Hypothesis (its example database), matplotlib (its font cache)
WRITERS = [
    "test_ir_datasets.py::test_qrels_from_ir_datasets_id_equal_file",
    "test_api_forms.py::test_the_dask_engine_takes_the_same_forms",
    "test_blocks.py::test_cut_matches_the_line_by_line_definition",
    "test_compare.py::test_plots_are_written",
]


def test_every_module_has_exactly_one_layer() -> None:
    modules = sorted(path.stem for path in TESTS.glob("test_*.py"))
    placed = [module for layer in LAYERS.values() for module in layer]
    assert [m for m in modules if m not in placed] == [], "place these modules in a layer of conftest.LAYERS"
    assert sorted({m for m in placed if placed.count(m) > 1}) == [], "modules in more than one layer"
    assert [m for m in placed if m not in modules] == [], "LAYERS names modules that do not exist"


def test_every_layer_is_a_registered_marker(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert {*LAYERS, "slow"} <= registered


def test_a_test_has_the_marker_of_its_layer(request: pytest.FixtureRequest) -> None:
    assert [mark.name for mark in request.node.iter_markers() if mark.name in LAYERS] == ["cli"]


def test_test_ids_are_the_same_in_every_process() -> None:
    """pytest-xdist requires each worker to collect the same ids: none may hold an object's
    address (the ``repr`` of a function, or of an instance without one of its own)."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", str(TESTS)],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ids = result.stdout.splitlines()
    assert result.returncode == 0 and len(ids) > 1000, result.stdout[-3000:] + result.stderr[-3000:]
    assert [i for i in ids if re.search(r" at 0x[0-9a-fA-F]+", i)] == []


@pytest.mark.parametrize("writer", WRITERS)
def test_writers_exist(writer: str) -> None:
    """The subset below names tests that exist (a renamed test would make it vacuous)."""
    module, _, name = writer.partition("::")
    assert f"def {name}(" in (TESTS / module).read_text(encoding="utf-8")


def test_the_tests_write_nothing_outside_a_temporary_directory(tmp_path: Path) -> None:
    home, tmp, cwd = tmp_path / "home", tmp_path / "tmp", tmp_path / "cwd"
    for directory in (home, tmp, cwd):
        directory.mkdir()
    # this process's own settings (PRIVATE_LOCATIONS, pytest's and xdist's) are not passed on:
    # what is checked is what the suite sets up by itself
    env = {k: v for k, v in os.environ.items() if k not in PRIVATE_LOCATIONS and not k.startswith("PYTEST_")}
    env.update(HOME=str(home), TMPDIR=str(tmp))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "basetemp"),
            *(str(TESTS / writer) for writer in WRITERS),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary  # they ran
    places = {"HOME": home, "TMPDIR": tmp, "cwd": cwd}
    left = {name: sorted(p.name for p in d.iterdir()) for name, d in places.items()}
    assert left == {"HOME": [], "TMPDIR": [], "cwd": []}
