"""The generated parts of the plugin guide (docs/hooks.py, docs: plugins.md): the contract
section, generated from ``rankeval.extension``, names every hook and every type a plugin may
use; the list of built-in plugins names every format, dialect and command they register; and
no page names a part of the contract that is gone (issue 25)."""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rankeval
from rankeval import Dialect, extension
from rankeval.measures.plugins import DEFAULT_PLUGINS, load_registry, make_plugin_manager

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _docs_hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rankeval_docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = _docs_hooks()


def _section(page: str, title: str) -> str:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


# ------------------------------------------------------------------------- the contract
def test_the_contract_names_every_hook_and_every_type(caplog: pytest.LogCaptureFixture) -> None:
    """Each hook the plugin manager knows is a row (signature, description, the built-in
    plugins that implement it); each name of the contract that ``rankeval`` re-exports is a
    row with a description, and none is missing one (a warning would fail the strict build)."""
    with caplog.at_level(logging.WARNING, logger="mkdocs.hooks.rankeval"):
        table = HOOKS.contract_markdown()
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    rows = {line.split(" | ")[0].lstrip("| ") for line in table.splitlines() if line.startswith("| ")}
    hooks = {name for name in vars(make_plugin_manager().hook) if not name.startswith("_")}
    named = {m.group(1) for row in rows if (m := re.match(r"\[?`(\w+)\(", row))}
    assert named == hooks
    types = {m.group(1) for row in rows if (m := re.match(r"\[?`(\w+)`", row))}
    assert types == set(extension.__all__) & set(rankeval.__all__)
    for line in table.splitlines()[2:]:
        if line.startswith("| "):
            assert all(cell.strip() for cell in line.strip("|").split(" | ")), line


def test_the_contract_shows_which_builtin_plugins_implement_each_hook() -> None:
    registry = load_registry(entry_points=False)
    assert registry.pm is not None
    table = HOOKS.contract_markdown()
    for hook in (name for name in vars(registry.pm.hook) if not name.startswith("_")):
        row = next(line for line in table.splitlines() if f"`{hook}(" in line)
        implementing = {impl.plugin_name for impl in getattr(registry.pm.hook, hook).get_hookimpls()}
        shown = set(re.findall(r"`(\w+)`", row.rsplit(" | ", 1)[1]))
        assert shown == implementing & set(DEFAULT_PLUGINS), (hook, row)


def test_the_plugin_guide_opens_with_the_contract_and_its_modules() -> None:
    """The first section of plugins.md is the contract; its table of modules is the one
    tests/test_architecture.py lets a plugin import (``PUBLIC_MODULES``)."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, re.MULTILINE)[0] == "The contract"
    section = _section("plugins.md", "The contract")
    assert "<!-- contract -->" in section
    listed = set(re.findall(r"^\| `([\w.]+)` \|", section, re.MULTILINE))
    tree = ast.parse((ROOT / "tests" / "test_architecture.py").read_text(encoding="utf-8"))
    public = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PUBLIC_MODULES"
    )
    assert listed == public


# ------------------------------------------------------------------- built-in plugins
def _plugin_lines() -> dict[str, str]:
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^- `(\w+)`: (.*)$", HOOKS.builtin_plugins_markdown(), re.MULTILINE)
    }


def _dialect(_: str, dialect: Dialect) -> list[str]:
    return [f"`--compat {dialect.name}`"] * (dialect.name is not None) + [f"`--names {dialect.naming}`"] * (
        dialect.naming is not None
    )


@pytest.mark.parametrize(
    ("kind", "shown"),
    [
        ("formats", lambda name, _: [f"`-f {name}`"]),
        ("dialects", _dialect),
        ("commands", lambda name, _: [f"`rankeval {name}`"]),
    ],
    ids=["formats", "dialects", "commands"],
)
def test_the_builtin_plugin_list_names_what_each_registers(
    kind: str, shown: Callable[[str, Any], list[str]]
) -> None:
    registry = load_registry(entry_points=False)
    lines = _plugin_lines()
    assert list(lines) == list(DEFAULT_PLUGINS)
    items = getattr(registry, kind)
    assert items, f"no built-in plugin registers {kind}: the table is not tested"
    for name, (plugin, item) in items.items():
        for phrase in shown(name, item):
            assert phrase in lines[plugin], (kind, name, lines[plugin])


# ------------------------------------------------------------ what the contract dropped
# The names issue 25 removed from the plugin contract, and what replaced them.
REMOVED = {
    r"register_compat_modes": "register_dialects",
    r"\bCompatMode\b": "Dialect",
    r"\bcompat_modes\(": "Registry.dialects",
    r"\bplugin_formats\(": "Registry.formats",
    r"\bexpand_measures\b": "Dialect.expand",
    r"[`\"']measure_name\b": "Dialect.name_of (the measure_name hook is gone)",
    r"measures\.hookspecs": "rankeval.extension",
    r"\btrec_prefixes\b": "Measure.cut_prefixes",
    r"\bNAMES\b": "Registry.namings()",
}


@pytest.mark.parametrize("pattern", list(REMOVED), ids=list(REMOVED.values()))
@pytest.mark.parametrize("path", [*PAGES, ROOT / "docs" / "hooks.py"], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_removed_part_of_the_contract(path: Path, pattern: str) -> None:
    text = path.read_text(encoding="utf-8")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert not found, f"write {REMOVED[pattern]} instead: {found}"
