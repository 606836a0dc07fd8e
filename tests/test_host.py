"""The host: one registry per command, each ``register_*`` hook called once on it; dialects
(``--compat``, ``--names``) registered by plugins, a third-party one with the same powers as
the built-in ``trec_eval`` and ``clef``."""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import PluginError, UsageError
from rankeval.measures import plugins as host

DATA = Path(__file__).parent / "data"
QRELS = str(DATA / "trec_eval" / "qrels.test")
RUN = str(DATA / "trec_eval" / "results.test")
DIALECT = str(DATA / "plugins" / "rk_ranx_dialect.py")
REGISTER_HOOKS = ("register_measures", "register_formats", "register_dialects", "register_commands")

COUNTING = '''
from rankeval import hookimpl

CALLS = []


@hookimpl
def register_measures(register):
    CALLS.append("register_measures")


@hookimpl
def register_formats(register):
    CALLS.append("register_formats")


@hookimpl
def register_dialects(register):
    CALLS.append("register_dialects")


@hookimpl
def register_commands(register):
    CALLS.append("register_commands")
'''


def invoke(args: list[str]):
    return CliRunner().invoke(app, args, catch_exceptions=False)


@pytest.fixture
def counting(tmp_path, monkeypatch):
    """A plugin installed as an entry point that counts the calls of its register_* hooks."""
    (tmp_path / "rk_counting.py").write_text(COUNTING)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.delenv(host.DISABLE_AUTOLOAD_ENV, raising=False)
    monkeypatch.setattr(host, "_entry_points", lambda: [("rk_counting", "rk_counting")])
    module = importlib.import_module("rk_counting")
    yield module.CALLS
    sys.modules.pop("rk_counting", None)


@pytest.mark.parametrize(
    "args",
    [
        [QRELS, RUN, "-m", "AP"],
        [QRELS, RUN, "-m", "P.5,10", "-f", "json", "--names", "trec"],
        [QRELS, RUN, "-m", "AP", "--compat", "trec_eval"],
        [QRELS, RUN, "-m", "AP", "-f", "clef"],
        ["compare", QRELS, f"a={RUN}", f"b={RUN}", "-m", "AP", "--names", "trec"],
        ["trec_eval", "-q", QRELS, RUN],
        ["measures", "AP"],
        ["plugins"],
    ],
    ids=lambda a: " ".join(Path(x).name if "/" in x else x for x in a),
)
def test_one_command_calls_each_register_hook_once(counting, args) -> None:
    result = invoke(args)
    assert result.exit_code == 0, result.output
    assert Counter(counting) == dict.fromkeys(REGISTER_HOOKS, 1)


def test_a_registry_keeps_what_the_hooks_registered() -> None:
    registry = rankeval.load_registry(entry_points=False)
    assert registry.compat_names() == ["none", "trec_eval", "clef"]
    assert registry.namings() == ["rankeval", "trec", "clef"]
    assert registry.dialects["clef"][0] == "rankeval_tar" and registry.dialects["trec_eval"][0] == "rankeval_trec"
    assert registry.formats["clef"][0] == "rankeval_tar"
    assert registry.commands["trec_eval"][0] == "rankeval_trec"
    with pytest.raises(UsageError, match="unknown compat 'nope'; expected one of none, trec_eval, clef"):
        registry.dialect("nope")


# ------------------------------------------------------------------ a third-party dialect
def test_a_plugin_dialect_names_measures() -> None:
    result = invoke([QRELS, RUN, "-m", "AP", "-m", "nDCG@10", "-m", "bpref", "--plugin", DIALECT, "--names", "ranx"])
    assert result.exit_code == 0, result.output
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert names == ["map", "ndcg@10", "Bpref"]  # Bpref: no ranx name, its spec
    plain = invoke([QRELS, RUN, "-m", "AP", "-m", "nDCG@10", "-m", "bpref"])
    values = [line.split("\t")[-1] for line in plain.stdout.splitlines()]
    assert [line.split("\t")[-1] for line in result.stdout.splitlines()] == values


def test_a_plugin_dialect_as_compat_mode(tmp_path) -> None:
    run = tmp_path / "dup.run"  # a document given twice: an error, or its first line under the dialect
    text = Path(RUN).read_text()
    first = text.splitlines()[0]
    run.write_text(text + first.replace(first.split()[4], "-1") + "\n")
    args = [QRELS, str(run), "-m", "ndcg@10", "-m", "mrr", "--plugin", DIALECT]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 1 and "duplicate" in refused.output
    result = invoke([*args, "--compat", "ranx"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "| run | ndcg@10 | mrr |"  # its format (markdown) and its names
    expected = rankeval.evaluate(QRELS, RUN, ["nDCG@10", "RR"])
    aggregate = expected[expected.query_id.isna()].value.tolist()
    assert lines[2].split(" | ")[1:] == [f"{aggregate[0]:.4f}", f"{aggregate[1]:.4f} |"]


def test_a_plugin_dialect_expands_a_spelling() -> None:
    result = invoke([QRELS, RUN, "-m", "ranx_all", "--plugin", DIALECT, "-f", "json"])
    assert result.exit_code == 0, result.output
    assert [row["measure"] for row in json.loads(result.stdout)] == ["AP", "nDCG@10", "P@5", "RR"]


def test_a_dialect_that_fails_names_its_plugin(tmp_path, monkeypatch) -> None:
    (tmp_path / "rk_baddialect.py").write_text(
        "from rankeval import Dialect, hookimpl\n\n@hookimpl\ndef register_dialects(register):\n"
        "    register(Dialect('bad', naming='bad', name_of=lambda m: 1 / 0))\n"
        "    register(Dialect('none'))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        registry = rankeval.load_registry(["rk_baddialect"], entry_points=False)
        with pytest.raises(PluginError, match="Dialect 'none' is registered by both rankeval and plugin 'rk_baddialect'"):
            registry.dialects  # noqa: B018 - the error is raised where the dialects are used
        assert registry.formats["clef"][0] == "rankeval_tar"  # the other hooks' items stay usable
    finally:
        sys.modules.pop("rk_baddialect", None)


def test_a_dialect_with_an_unknown_option_names_its_plugin(tmp_path, monkeypatch) -> None:
    (tmp_path / "rk_badoption.py").write_text(
        "from rankeval import Dialect, hookimpl\n\n@hookimpl\ndef register_dialects(register):\n"
        "    register(Dialect('odd', options={'float64_scores': True}))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        registry = rankeval.load_registry(["rk_badoption"], entry_points=False)
        options = rankeval.EvalOptions(compat="odd")
        with pytest.raises(PluginError, match="plugin rk_badoption gives dialect 'odd' the options float64_scores"):
            rankeval.evaluate(QRELS, RUN, "AP", options=options, registry=registry)
    finally:
        sys.modules.pop("rk_badoption", None)
