"""Edges of the command-line surface (issue "Edges, round two"): seeds checked where they are
given, ``--help`` and ``--version`` without plugin code, ``--plugin FILE.py``, one declaration
per option shared by the commands (docs: cli.md, compare.md)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.comparison import stats
from rankeval.errors import UsageError
from rankeval.options import MAX_SEED, check_seed

DATA = Path(__file__).parent / "data" / "dl-hard"
QRELS, BM25, RM3 = DATA / "dl_hard-passage.qrels", DATA / "bm25.run.gz", DATA / "bm25-rm3.run.gz"
TINY_QRELS = {"1": {"a": 1, "b": 0}, "2": {"c": 1}}
TINY_RUNS = {
    "x": {"1": {"a": 2.0, "b": 1.0}, "2": {"c": 1.0, "d": 0.5}},
    "y": {"1": {"b": 2.0, "a": 1.0}, "2": {"d": 1.0, "c": 0.5}},
}
DIFFS = np.array([0.1, -0.2, 0.3, 0.05])


# ------------------------------------------------------------------------------- seeds
BAD_SEEDS = [-1, -(2**70), MAX_SEED + 1, 1.5, True, "5", [1, 2]]

# every public function that takes a seed, called with one (all of them draw)
SEEDED: dict[str, Callable[[Any], Any]] = {
    "compare": lambda s: rankeval.compare(TINY_QRELS, TINY_RUNS, "AP", stats=rankeval.CompareOptions(test="bootstrap", samples=10, seed=s)),
    "random_baseline": lambda s: rankeval.random_baseline(TINY_QRELS, TINY_RUNS["x"], "AP", samples=10, seed=s),
    "stats.randomization": lambda s: stats.randomization(DIFFS, 10, s),
    "stats.randomization exact": lambda s: stats.randomization(DIFFS, 10_000, s),
    "stats.bootstrap": lambda s: stats.bootstrap(DIFFS, 10, s),
    "stats.bootstrap no queries": lambda s: stats.bootstrap(DIFFS[:0], 10, s),
    "stats.bootstrap_means": lambda s: stats.bootstrap_means(DIFFS, 10, s),
    "stats.bootstrap_interval": lambda s: stats.bootstrap_interval(DIFFS, 0.05, 10, s),
    "stats.bootstrap_indices": lambda s: stats.bootstrap_indices(4, 10, s),
    "stats.sign_flips": lambda s: stats.sign_flips(4, 10, s),
    "stats.paired_test": lambda s: stats.paired_test(DIFFS, DIFFS[::-1], "ttest", seed=s),
}


@pytest.mark.parametrize("entry", sorted(SEEDED))
@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_a_bad_seed_is_a_usage_error_naming_the_range(entry: str, seed: Any) -> None:
    """Each Python entry refuses the seed when it is called (not numpy's ValueError or
    TypeError, and not later, when a generator of draws is first iterated)."""
    with pytest.raises(UsageError, match=rf"^seed must be a whole number from 0 to {MAX_SEED} \(or None\), not "):
        SEEDED[entry](seed)


@pytest.mark.parametrize("entry", sorted(SEEDED))
@pytest.mark.parametrize("seed", [0, 7, MAX_SEED, np.int64(3), None], ids=repr)
def test_good_seeds_are_taken(entry: str, seed: Any) -> None:
    SEEDED[entry](seed)


def test_the_check_keeps_the_draws() -> None:
    """The checked seed draws what numpy draws from it (the documented formulas)."""
    flips = np.vstack(list(stats.sign_flips(5, 7, 3, chunk=10)))
    assert (flips == 1 - 2 * np.random.default_rng(3).integers(0, 2, size=(7, 5))).all()
    indices = np.vstack(list(stats.bootstrap_indices(5, 7, 3, chunk=10)))
    assert (indices == np.random.default_rng(3).integers(0, 5, size=(7, 5))).all()
    rng = np.random.default_rng(9)
    assert stats.bootstrap_means(DIFFS, 10, rng).shape == (1, 10)


@pytest.mark.parametrize("text", ["-1", "abc", "1.5", "", " ", "1e3", "+-2", "٣", str(MAX_SEED + 1), "none"])
def test_cli_seed_out_of_range_is_one_usage_line(text: str) -> None:
    result = CliRunner().invoke(
        app, ["compare", str(QRELS), str(BM25), str(RM3), "-m", "AP", "-t", "bootstrap", "--seed", text]
    )
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"rankeval: error: --seed must be a whole number from 0 to {MAX_SEED}, not {text!r}\n"
    )


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("+3", 3), (" 12 ", 12), (str(MAX_SEED), MAX_SEED)])
def test_cli_seed_text(text: str, value: int) -> None:
    assert check_seed(text, "--seed", text=True) == value


# ------------------------------------------------------------ --help runs no plugin code
SPY_PLUGIN = """
import os
from pathlib import Path

from rankeval import Command, OutputFormat, hookimpl

with open(os.environ["SPY_LOG"], "a") as log:  # the import itself is what is watched
    log.write("imported\\n")


@hookimpl
def register_commands(register):
    register(Command("spy", lambda: "spied\\n", "A command of the spy plugin."))


@hookimpl
def register_formats(register):
    register(OutputFormat("spyformat", lambda rows, precision: "spied\\n"))
"""


@pytest.fixture
def spy_site(tmp_path: Path) -> Path:
    """A directory laid out as pip installs a distribution ``rk-spy`` advertising the entry
    point ``spy = rk_spy`` in the ``rankeval`` group; its module logs every import."""
    site = tmp_path / "site"
    (site / "rk_spy-0.1.dist-info").mkdir(parents=True)
    (site / "rk_spy-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: rk-spy\nVersion: 0.1\n")
    (site / "rk_spy-0.1.dist-info" / "entry_points.txt").write_text("[rankeval]\nspy = rk_spy\n")
    (site / "rk_spy.py").write_text(SPY_PLUGIN)
    return site


def _rankeval(site: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``rankeval ARGS`` in a fresh interpreter with *site* on its path: the process and what the
    spy plugin logged."""
    log = site.parent / "spy.log"
    log.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("RANKEVAL_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(site), "SPY_LOG": str(log), "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-m", "rankeval.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )
    return proc, log.read_text()


# no arguments: the help, with click's exit code 2 for a command line without a command
HELP_CALLS = [
    (["--help"], 0),
    (["-h"], 0),
    ([], 2),
    (["--version"], 0),
    *(([command, "--help"], 0) for command in ("evaluate", "compare", "measures", "plugins", "convert")),
]


@pytest.mark.parametrize(("args", "code"), HELP_CALLS, ids=str)
def test_help_and_version_import_no_entry_point_plugin(spy_site: Path, args: list[str], code: int) -> None:
    proc, log = _rankeval(spy_site, *args)
    assert proc.returncode == code, proc.stderr
    assert log == "", f"rankeval {' '.join(args)} imported the entry-point plugin"
    if args in ([], ["--help"], ["-h"]):
        assert "trec_eval" in proc.stdout  # the built-in plugins' commands are listed
        assert "`rankeval plugins` lists them" in proc.stdout
    if args == ["evaluate", "--help"]:  # the built-in plugins' formats and modes are listed
        assert "clef (default trec; clef with --compat clef)" in " ".join(proc.stdout.replace("│", " ").split())
        assert "spyformat" not in proc.stdout


def test_the_spy_plugin_is_seen_where_plugins_are_asked_for(spy_site: Path) -> None:
    """The control: the same layout is an installed plugin, whose command ``rankeval plugins``
    lists and which runs when named."""
    proc, log = _rankeval(spy_site, "plugins")
    assert proc.returncode == 0, proc.stderr
    assert log == "imported\n"
    line = next(line for line in proc.stdout.splitlines() if line.startswith("spy\t"))
    assert line.startswith("spy\tentry point\t") and line.endswith("(format spyformat; command spy)"), line
    proc, log = _rankeval(spy_site, "spy")
    assert (proc.returncode, proc.stdout, log) == (0, "spied\n", "imported\n")


# ------------------------------------------------------------------- --plugin FILE.py
FIRSTREL = '''
from dataclasses import dataclass

from rankeval import Measure, hookimpl


@dataclass(frozen=True)
class FirstRel(Measure):
    """1 if the first document is relevant."""

    name = "FirstRel"

    def compute(self, data):
        return data.sum((data.relevance > 0) & (data.rank < 1))


@hookimpl
def register_measures(register):
    register(FirstRel)
'''


@pytest.fixture
def firstrel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Plugins on no import path, in the current directory: the file ``elsewhere/firstrel.py``
    and the package ``elsewhere/pkgplug``; what importing them adds to ``sys.path`` and
    ``sys.modules`` goes with the test."""
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "firstrel.py").write_text(FIRSTREL)
    (where / "pkgplug").mkdir()
    (where / "pkgplug" / "__init__.py").write_text(FIRSTREL.replace('"FirstRel"', '"PkgFirstRel"'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield where
    for name in ("firstrel", "pkgplug"):
        sys.modules.pop(name, None)


def _evaluate(tmp_path: Path, *args: str) -> Any:
    (tmp_path / "q.txt").write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    (tmp_path / "r.txt").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n2 Q0 d 1 2 t\n2 Q0 c 2 1 t\n")
    return CliRunner().invoke(app, [str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), "--jobs", "1", *args])


@pytest.mark.parametrize(
    ("given", "measure"),
    [("elsewhere/firstrel.py", "FirstRel"), ("./elsewhere/pkgplug", "PkgFirstRel"), ("{tmp}/elsewhere/pkgplug/", "PkgFirstRel")],
)
def test_plugin_given_as_a_path(tmp_path: Path, firstrel: Path, given: str, measure: str) -> None:
    """A file or package folder given by its path is imported as its own module, and its
    measures are there."""
    result = _evaluate(tmp_path, "--plugin", given.format(tmp=tmp_path), "-m", measure)
    assert result.exit_code == 0, result.output
    assert result.output == f"{measure:<22}\tall\t0.5000\n"
    plugins = CliRunner().invoke(app, ["plugins", "--plugin", given.format(tmp=tmp_path)]).output
    name = Path(given.rstrip("/")).stem
    assert f"{name}\t--plugin\t{measure}" in plugins.splitlines()


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("elsewhere/nothere.py", "'elsewhere/nothere.py': no such file or folder; --plugin takes"),
        ("elsewhere/notes.txt", "'elsewhere/notes.txt': not a .py file or a folder with __init__.py; --plugin takes"),
        ("elsewhere", "No module named 'elsewhere'; --plugin takes"),  # a name, then
        ("elsewhere/", "'elsewhere/': not a .py file or a folder with __init__.py; --plugin takes"),
        ("elsewhere/my-plug.py", "'elsewhere/my-plug.py': 'my-plug' is not a Python module name; rename it"),
        ("elsewhere/json.py", "'elsewhere/json.py' would be module 'json', which is already "),
        ("no_such_plugin_module_xyz", "No module named 'no_such_plugin_module_xyz'; --plugin takes an importable module name"),
    ],
)
def test_a_plugin_that_cannot_be_found_says_what_to_give(
    tmp_path: Path, firstrel: Path, given: str, reason: str
) -> None:
    (firstrel / "notes.txt").write_text("not a plugin\n")
    (firstrel / "my-plug.py").write_text(FIRSTREL)
    (firstrel / "json.py").write_text(FIRSTREL)
    result = _evaluate(tmp_path, "--plugin", given, "-m", "AP")
    assert result.exit_code == 0, result.output  # a broken plugin is a warning; AP is built in
    name = given if "/" not in given else Path(given).stem if given.endswith(".py") else Path(given).name
    warning = result.output.splitlines()[0]
    assert warning.startswith(f"rankeval: warning: plugin {name!r} cannot load (--plugin): ")
    assert reason in warning, warning


# ------------------------------------------------------------ one declaration per option
def _options(command: str) -> dict[str, Any]:
    """``{long name: click option}`` of a built-in command, as declared (before any help is
    printed, which fills in the help of evaluate's plugin choices and the undeclared metavars)."""
    import typer

    group = typer.main.get_command(app)
    params = group.commands[command].params  # type: ignore[attr-defined]
    return {max(p.opts, key=len): p for p in params if p.param_type_name == "option"}


def _declaration(option: Any) -> tuple[Any, ...]:
    return (
        option.opts,
        option.secondary_opts,
        option.metavar,
        option.help,
        option.type_descriptor.annotation,
        option.multiple,
        option.is_flag,
        option.default,
    )


BUILTIN = ("evaluate", "compare", "measures", "plugins", "convert")
# evaluate's options that compare does not take, and why
EVALUATE_ONLY = {
    "--compat": "compare applies no compat mode (rankeval.compare refuses one)",
}


@pytest.mark.parametrize(("first", "second"), [(a, b) for i, a in enumerate(BUILTIN) for b in BUILTIN[i + 1 :]])
def test_an_option_two_commands_share_is_declared_once(first: str, second: str) -> None:
    """Every option of the same name in two commands has the same flags, metavar, help, type
    and default: one declaration (rankeval.cli.shared_options), used by each."""
    a, b = _options(first), _options(second)
    for name in sorted(a.keys() & b.keys()):
        assert _declaration(a[name]) == _declaration(b[name]), name
        assert a[name].metavar is not None or a[name].is_flag, f"{name}: no metavar declared"


def test_compare_takes_every_evaluation_option_of_evaluate() -> None:
    assert set(_options("evaluate")) - set(_options("compare")) == set(EVALUATE_ONLY)


@pytest.mark.parametrize(
    "shown",
    [
        "--output -o FILE",
        "--on-duplicate RULE",
        "--plot-format FORMAT",
        "--format -f FORMAT",
        "--rel-level -l N",
        "--names STYLE",
        "--docinfo FILE",
        "--seed N",
    ],
)
def test_compare_help_shows_values_as_evaluate_does(shown: str) -> None:
    result = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "200"})
    assert shown in " ".join(result.output.replace("│", " ").split())


def test_compare_rel_level_and_names() -> None:
    """-l and --names mean in compare what they mean in evaluate: the same scores (AP with -l 2
    is AP(rel=2), not AP), under the same names."""
    options = ["-m", "AP P@10", "-l", "2", "--names", "trec", "-f", "tsv"]
    evaluated = CliRunner().invoke(app, [str(QRELS), str(BM25), str(RM3), *options])
    compared = CliRunner().invoke(app, ["compare", str(QRELS), str(BM25), str(RM3), *options])
    assert evaluated.exit_code == 0 and compared.exit_code == 0, evaluated.output + compared.output

    def scores(tsv: str) -> dict[tuple[str, str], float]:
        header, *rows = (line.split("\t") for line in tsv.splitlines())
        run, measure, value = header.index("run"), header.index("measure"), header.index("value")
        return {(r[run], r[measure]): float(r[value]) for r in rows}

    expected = scores(evaluated.stdout)
    assert {m for _, m in expected} == {"map", "P_10"}
    assert scores(compared.stdout) == pytest.approx(expected)


# ------------------------------------------------------------------ README's first command
ROOT = Path(__file__).resolve().parent.parent


def _readme_blocks() -> list[tuple[str, str]]:
    """``(language, content)`` of README.md's fenced blocks, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def test_readme_first_command_prints_what_the_readme_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    """README.md starts with its two set-up commands (.ci/run runs them), the first one
    installing quietly; its first ```text block is what the first one prints (which .ci/run
    also checks, after a real install)."""
    blocks = _readme_blocks()
    assert [lang for lang, _ in blocks[:2]] == ["sh", "sh"]
    install, _, command = blocks[0][1].strip().partition(" && ")
    assert install == "pip install -q ."
    shown = next(content for lang, content in blocks if lang == "text")
    args = shlex.split(command)
    assert args[0] == "rankeval"
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, args[1:])
    assert result.exit_code == 0, result.output
    assert result.stdout == shown
