"""Shared fixtures, the layers of the suite, and where the libraries under test may write.

Layers: every test module belongs to exactly one layer (:data:`LAYERS`), given to each of its
tests as a marker, so ``python -m pytest -m engine`` runs one layer. The layers are rankeval's
packages (``io``, ``ranking``, ``measures``, ``engine``, ``report``, ``comparison``, ``cli``)
and the plugin system (``plugins``: loading, hooks, the host, extension points; the measures
the built-in plugins define are ``measures``). ``cli`` is the top: the command, and the
checks of the program as a whole (docs, golden outputs, architecture, the suite itself). A new
module must be placed here: ``tests/test_suite_hygiene.py`` fails until it is.

Nothing written outside a temporary directory: the places the libraries under test write to
by default (:data:`PRIVATE_LOCATIONS`: ir_datasets' home, created when ir_datasets is
imported; Dask's scratch space; Hypothesis' example database, otherwise ``.hypothesis/`` in
the working directory; matplotlib's configuration and font cache) point into a scratch
directory of this pytest process, made when pytest starts (before any test module is
imported, since some import ir_datasets) and removed when it ends. The environment variables
are inherited by the commands the tests start. Each xdist worker has its own.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# layer -> the test modules that belong to it (each module in exactly one)
LAYERS: dict[str, tuple[str, ...]] = {
    "io": (
        "test_blocks",
        "test_docinfo",
        "test_edges_inputs",
        "test_fast_readers",
        "test_fuzz",
        "test_input_contract",
        "test_io",
        "test_ir_datasets",
        "test_parquet",
    ),
    "ranking": ("test_kernel_contract", "test_nesting", "test_ranked"),
    "measures": (
        "test_csdcg",
        "test_csdcg_properties",
        "test_domains",
        "test_edges_measures",
        "test_htbg_json_reference",
        "test_htbg_reference_best",
        "test_names",
        "test_nested_example",
        "test_properties",
        "test_spec",
        "test_tar",
        "test_tar_estimators",
        "test_tbg",
        "test_tbg_properties",
        "test_ties",
        "test_trec_measures",
        "test_trec_parity",
    ),
    "engine": (
        "test_allocators",
        "test_api_forms",
        "test_distributed",
        "test_distributed_faults",
        "test_edges_blocks",
        "test_interop",
        "test_judged_only",
        "test_unsorted_runs",
    ),
    "report": ("test_edges_outputs", "test_outputs"),
    "comparison": ("test_compare", "test_compare_blocks", "test_paper_output", "test_report_stack", "test_stats"),
    "meta": ("test_meta_cli", "test_meta_correlation", "test_meta_power", "test_meta_repro", "test_meta_stability", "test_meta_topics", "test_meta_values"),
    "cli": (
        "test_architecture",
        "test_cli",
        "test_docs_examples",
        "test_docs_site",
        "test_edges_cli",
        "test_environment_faults",
        "test_errors",
        "test_golden_outputs",
        "test_progress",
        "test_public_api",
        "test_signals",
        "test_startup",
        "test_suite_hygiene",
        "test_trec_eval_command",
        "test_trec_eval_oracle",
    ),
    "plugins": (
        "test_docs_hooks",
        "test_extension_points",
        "test_host",
        "test_plugin_faults",
        "test_plugins",
    ),
}

# modules whose module-scoped fixture is expensive (a docs build, a Dask cluster of processes):
# under pytest-xdist (-n, with --dist loadgroup from pyproject.toml) all the tests of each run
# on one worker, so that the fixture is made once
ONE_WORKER = frozenset({"test_compare_blocks", "test_distributed", "test_docs_site"})

# environment variable -> its directory under the scratch directory
PRIVATE_LOCATIONS = {
    "IR_DATASETS_HOME": "ir_datasets",
    "DASK_TEMPORARY_DIRECTORY": "dask",
    "HYPOTHESIS_STORAGE_DIRECTORY": "hypothesis",
    "MPLCONFIGDIR": "matplotlib",
}

_SCRATCH = pytest.StashKey[tuple[Path, pytest.MonkeyPatch]]()


def pytest_configure(config: pytest.Config) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="rankeval-tests-"))
    environment = pytest.MonkeyPatch()
    for name, directory in PRIVATE_LOCATIONS.items():
        environment.setenv(name, str(scratch / directory))
    config.stash[_SCRATCH] = (scratch, environment)


def pytest_unconfigure(config: pytest.Config) -> None:
    scratch, environment = config.stash[_SCRATCH]
    environment.undo()
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    layer_of = {module: layer for layer, modules in LAYERS.items() for module in modules}
    for item in items:
        module = item.path.stem
        if module in layer_of:  # a module of no layer: test_suite_hygiene.py names it
            item.add_marker(layer_of[module])
        if module in ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group(module))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
