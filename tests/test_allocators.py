"""The allocator settings of rankeval's own processes (:mod:`rankeval.engine.allocators`),
applied by the command's :func:`rankeval.cli.main` and by nothing at import.

Each check runs in a fresh interpreter: the settings are process-wide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rankeval.engine.allocators import ALLOCATOR_ENVIRONMENT, LIMITED_ENVIRONMENT

ROOT = Path(__file__).resolve().parent.parent

#: every variable the command may set (the test process's own values are left out of each check)
SETTINGS = {**ALLOCATOR_ENVIRONMENT, **LIMITED_ENVIRONMENT}

#: the start of a check's script: ``sys.argv[1] == 'limited'`` puts it under an address-space
#: limit (8 GiB, ``ulimit -v``), as the command sees it
_LIMIT = (
    "import resource, sys\n"
    "if sys.argv[1] == 'limited':\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
)

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
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS}
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


def _modules() -> list[str]:
    """Every module of rankeval and of its built-in plugins, from the files (nothing imported)."""
    names = []
    for top in [ROOT / "rankeval", *sorted(p for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").is_file())]:
        for path in sorted(top.rglob("*.py")):
            parts = path.relative_to(top.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("limit", ["free", "limited"])
def test_importing_any_module_changes_no_environment_variable(limit):
    """Importing rankeval, rankeval.cli or any other module of rankeval and its plugins (the
    ``__main__`` modules included) sets nothing in the environment, with or without an
    address-space limit: a program that imports rankeval keeps its own settings."""
    modules = _modules()
    assert {"rankeval", "rankeval.cli", "rankeval.cli.__main__", "rankeval.__main__", "rankeval_trec"} <= set(modules)
    code = _LIMIT + (
        "import importlib, json, os\n"
        "before = dict(os.environ)\n"
        "for name in json.loads(sys.argv[2]):\n"
        "    importlib.import_module(name)\n"
        "    now = dict(os.environ)\n"
        "    if now != before:\n"
        "        print(json.dumps([name, sorted(k for k in now.keys() | before.keys() if now.get(k) != before.get(k))]))\n"
        "        before = now\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, limit, json.dumps(modules)],
        env={k: v for k, v in os.environ.items() if k not in SETTINGS},
        capture_output=True,
        text=True,
        timeout=300,
    )
    changed = [json.loads(line) for line in done.stdout.splitlines()]
    assert changed == [], changed
    assert done.returncode == 0, done.stderr[-2000:]


#: a script that runs the command (``sys.argv[2:]``), recording when pyarrow, numpy and typer
#: are first imported whether the stop signals are caught and the settings then; it prints
#: those and the settings after the command
_COMMAND = _LIMIT + (
    "import json, os, signal\n"
    f"names = {sorted(SETTINGS)!r}\n"
    "seen = {}\n"
    "class Watch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name in ('pyarrow', 'numpy', 'typer') and name not in seen:\n"
    "            caught = signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)\n"
    "            seen[name] = [caught, {k: os.environ.get(k) for k in names}]\n"
    "sys.meta_path.insert(0, Watch())\n"
    "from rankeval.cli import main\n"
    "sys.argv = ['rankeval', *sys.argv[2:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    assert not exc.code, exc.code\n"
    "print(json.dumps([seen, {k: os.environ.get(k) for k in names}]))\n"
)


def _command(limit: str, *args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, str | None]]:
    """What :data:`_COMMAND` saw: at each heavy import, and after the command."""
    seen, after = json.loads(_python(_COMMAND, limit, *args, env=env).splitlines()[-1])
    return seen, after


@pytest.mark.parametrize(("limit", "expected"), [("free", ALLOCATOR_ENVIRONMENT), ("limited", SETTINGS)])
def test_the_command_tunes_after_taking_the_signals_and_before_the_heavy_imports(tmp_path, limit, expected):
    """:func:`rankeval.cli.main` (the console script, ``python -m rankeval``) sets the allocators
    first thing after taking the stop signals over: typer, numpy and pyarrow, which read the
    settings when first imported, find them set; the settings for an address-space limit only
    under one."""
    qrels, run = tmp_path / "q.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 1.5 t\n")
    seen, after = _command(limit, str(qrels), str(run), "-m", "P@5")
    wanted = {k: expected.get(k) for k in SETTINGS}
    assert seen == {name: [True, wanted] for name in ("pyarrow", "numpy", "typer")}
    assert after == wanted


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize("step", ["_hold_standard_descriptors", "tune_this_process"])
def test_a_stop_signal_while_the_command_sets_the_process_up_is_one_line(step):
    """Each step of :func:`rankeval.cli.main`'s set-up runs after it took the stop signals over
    and inside its boundary: a SIGTERM there is the one line and exit 143, not a traceback."""
    code = (
        "import os, signal, sys\n"
        "import rankeval.cli\n"
        f"rankeval.cli.{step} = lambda: os.kill(os.getpid(), signal.SIGTERM)\n"
        "sys.argv = ['rankeval', '--version']\n"
        "rankeval.cli.main()\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    done = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (143, "rankeval: terminated (SIGTERM)\n", "")


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
    _, after = _command("free", "--version", env={"MALLOC_TRIM_THRESHOLD_": value})
    assert after["MALLOC_TRIM_THRESHOLD_"] == value


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt, RLIMIT_AS")
def test_arenas_are_few_under_an_address_space_limit():
    """Under ``ulimit -v`` (an address-space limit) the command limits glibc's arenas (each
    reserves 64 MiB of address space) for itself and its children; without a limit, or with
    the user's own value, nothing is set."""
    assert _command("limited", "--version")[1]["MALLOC_ARENA_MAX"] == LIMITED_ENVIRONMENT["MALLOC_ARENA_MAX"]
    assert _command("free", "--version")[1]["MALLOC_ARENA_MAX"] is None
    assert _command("limited", "--version", env={"MALLOC_ARENA_MAX": "4"})[1]["MALLOC_ARENA_MAX"] == "4"


# a measure that writes, from each process it runs in, whether it is a worker and the settings
# it found there (and takes a fifth of a second in the command's own process, so that the
# worker gets tasks)
_ENV_PLUGIN = """
import json, multiprocessing, os, time
from dataclasses import dataclass
from typing import ClassVar
from rankeval import Measure, hookimpl

@dataclass(frozen=True)
class Env(Measure):
    name: ClassVar[str] = "Env"
    def compute(self, data):
        seen = [multiprocessing.parent_process() is not None, {k: os.environ.get(k) for k in NAMES}]
        with open(os.path.join(os.environ["ENV_SEEN"], str(os.getpid())), "w") as f:
            json.dump(seen, f)
        if not seen[0]:
            time.sleep(0.2)
        return data.counts.astype(float)

@hookimpl
def register_measures(register):
    register(Env)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS")
@pytest.mark.parametrize(("limit", "expected"), [("free", ALLOCATOR_ENVIRONMENT), ("limited", SETTINGS)])
def test_the_commands_jobs_workers_get_the_settings(tmp_path, limit, expected):
    """The ``--jobs`` workers (started by the local pool's fork server, from the command's
    environment once :func:`rankeval.cli.main` has set it) find the command's settings."""
    (tmp_path / "env_plugin.py").write_text(f"NAMES = {sorted(SETTINGS)!r}\n" + _ENV_PLUGIN)
    seen_dir = tmp_path / "seen"
    seen_dir.mkdir()
    qrels, run = tmp_path / "q.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q{q} 0 d{q}_1 1\n" for q in range(2000)))
    run.write_text("".join(f"q{q} Q0 d{q}_{r} {r} {100 - r} t\n" for q in range(2000) for r in range(1, 11)))
    args = [str(qrels), str(run), "-m", "Env", "--plugin", "env_plugin", "--jobs", "2", "--block-size", "64KiB"]
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    _command(limit, *args, env={"PYTHONPATH": path, "ENV_SEEN": str(seen_dir)})
    seen = [json.loads(p.read_text()) for p in seen_dir.iterdir()]
    wanted = {k: expected.get(k) for k in SETTINGS}
    assert sorted(worker for worker, _ in seen) == [False, True]  # the command's process and one worker
    assert all(found == wanted for _, found in seen), seen
