"""The allocator settings of rankeval's own processes (:mod:`rankeval.engine.allocators`).

Each check runs in a fresh interpreter: the settings are process-wide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rankeval.engine.allocators import ALLOCATOR_ENVIRONMENT

# how many page faults the second allocation of a 48 MiB buffer takes, after the first was
# freed: the buffer is above glibc's largest adaptive mmap threshold (32 MiB), so by default it
# is a new mapping whose pages all fault in again (12,288 of 4 KiB); from a heap that keeps
# freed memory, it reuses pages already there
_FAULTS = """
import json, os, resource, sys
if sys.argv[1] == "tuned":
    from rankeval.engine.allocators import tune_this_process
    tune_this_process()
def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffer = bytearray(48 << 20)
    buffer[::4096] = b"x" * len(buffer[::4096])  # touch every page
    del buffer
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults()
print(json.dumps(faults()))
"""


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env={**clean, **(env or {})}, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_settings_are_defaults_for_this_process_and_its_children():
    code = (
        "import json, os, subprocess, sys\n"
        "from rankeval.engine.allocators import ALLOCATOR_ENVIRONMENT, tune_this_process\n"
        "tune_this_process()\n"
        "child = subprocess.run([sys.executable, '-c', 'import json, os; print(json.dumps(dict(os.environ)))'],\n"
        "                       capture_output=True, text=True, check=True).stdout\n"
        "print(json.dumps({k: json.loads(child).get(k) for k in ALLOCATOR_ENVIRONMENT}))\n"
    )
    assert json.loads(_python(code)) == ALLOCATOR_ENVIRONMENT
    # a value the user set wins
    mine = json.loads(_python(code, env={"MIMALLOC_PURGE_DELAY": "7"}))
    assert mine == {**ALLOCATOR_ENVIRONMENT, "MIMALLOC_PURGE_DELAY": "7"}


def test_the_command_process_tunes_before_pyarrow_is_imported():
    code = (
        "import json, os, sys\n"
        "import rankeval.cli\n"
        "print(json.dumps(['pyarrow' in sys.modules, os.environ.get('MIMALLOC_PURGE_DELAY')]))\n"
    )
    assert json.loads(_python(code)) == [False, ALLOCATOR_ENVIRONMENT["MIMALLOC_PURGE_DELAY"]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_reused_without_faulting_pages_in_again():
    tuned = json.loads(_python(_FAULTS, "tuned"))
    assert tuned < 500, tuned
    untuned = json.loads(_python(_FAULTS, "default"))
    if untuned < 5000:  # a system mapping large pages (or not glibc): nothing to compare
        pytest.skip(f"this system's default already faults {untuned} pages only")
    assert tuned < untuned / 10


def test_a_local_dask_cluster_passes_the_settings_to_its_workers():
    from rankeval.engine import dask_cluster
    from rankeval.engine.distributed import DaskOptions

    config = dask_cluster._dask_config(DaskOptions())
    for name, value in ALLOCATOR_ENVIRONMENT.items():
        assert config[f"distributed.nanny.pre-spawn-environ.{name}"] == os.environ.get(name, value)


@pytest.mark.parametrize("value", ["abc", "-5", "99999999999999999999", " 7 ", "", "1e9"])
def test_a_users_odd_value_is_kept_and_the_command_still_runs(value):
    """Whatever the user's own value (not a number, negative, too large for mallopt's C int),
    the command starts and the value is left as it was."""
    code = (
        "import json, os, sys\n"
        "sys.argv = ['rankeval', '--version']\n"
        "import rankeval.cli\n"
        "print(json.dumps(os.environ['MALLOC_TRIM_THRESHOLD_']))\n"
    )
    assert json.loads(_python(code, env={"MALLOC_TRIM_THRESHOLD_": value})) == value


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt, RLIMIT_AS")
def test_arenas_are_few_under_an_address_space_limit():
    """Under ``ulimit -v`` (an address-space limit) the command limits glibc's arenas (each
    reserves 64 MiB of address space) for itself and its children; without a limit, or with
    the user's own value, nothing is set."""
    code = (
        "import json, os, resource, sys\n"
        "if sys.argv[1] == 'limited':\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "import rankeval.cli\n"
        "print(json.dumps(os.environ.get('MALLOC_ARENA_MAX')))\n"
    )
    from rankeval.engine.allocators import LIMITED_ARENAS

    assert json.loads(_python(code, "limited")) == LIMITED_ARENAS
    assert json.loads(_python(code, "free")) is None
    assert json.loads(_python(code, "limited", env={"MALLOC_ARENA_MAX": "4"})) == "4"
