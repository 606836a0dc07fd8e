"""The console examples of the docs are executed: every ```console block of README.md and docs/*.md.

How a block is read (the docs' own conventions):

* A line ``$ COMMAND`` is a command (a line ending in ``\\`` continues on the next one); the
  lines after it, up to the next ``$ `` line or the end of the block, are what it prints on a
  terminal: standard output and standard error together, in the order they are written (the
  command runs with ``PYTHONUNBUFFERED=1`` and both streams on one pipe).
* ``<!-- output: begin -->`` ... ``<!-- output: end -->`` after a block (before the next one)
  holds the output of the block's last command when the docs show it outside the console block
  (a ```latex block, or a Markdown table rendered as it comes out); a single fenced block in
  there counts by its content, and blank lines around the region's content are not output.
* ``<!-- not-tested: REASON -->`` right before a block skips it with REASON; every other block
  must run and print what it shows.

Where a command runs: bash, with the venv's ``bin`` first on ``PATH`` (its ``rankeval`` console
script), ``RANKEVAL_DISABLE_PLUGIN_AUTOLOAD``, ``RANKEVAL_DEBUG`` and ``PYTHONPATH`` unset, in a
fresh directory per block that holds:

* ``rankeval`` and ``tests``: links to the package and to the tests directory of this checkout,
  so the docs' paths (``rankeval/examples/...``, ``tests/data/...``) work as from the root of
  the repository, and a command is run exactly as shown (``PYTHONPATH=. rankeval ... -p myhits``);
* the page's files: a fenced block introduced by a line that is just ```NAME`:`` or preceded by
  ``<!-- file: NAME -->`` is written to NAME; the lines a ``$ cat NAME`` command shows are
  written to NAME when no earlier command of its block names NAME (``cat`` of an input the page
  defines; ``cat results.tsv`` after ``-o results.tsv`` is checked, not written);
* the small files a page uses but describes only in prose or in its error messages
  (``DOC_FILES`` below: ``tie.qrels``, the plugins ``myap``, ``shaky``, ...), and links to
  data of this repository (``DOC_LINKS``).

Shell variables set by a bare ``$ NAME=value`` command (``D=tests/data/dl-hard``) stay set for
the later commands of the page. ``<!-- installed: NAME -->`` before a block runs it as if the
page's package NAME had been installed with pip: the modules its ```toml block (the package's
``pyproject.toml``) lists, and a ``NAME.dist-info`` with its entry points, on ``PYTHONPATH``.

The only normalisation before comparing: whitespace at the end of each line is dropped, on
both sides. A block whose output shows a bug of rankeval rather than stale docs is listed in
``XFAIL``; a command that prints what the docs show plus the C++ runtime's abort line of a known
intermittent crash (``KNOWN_ABORT``) makes its block an expected failure.
"""

from __future__ import annotations

import difflib
import os
import re
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT = 120  # seconds per command

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<kind>not-tested|file|installed|output)\s*:\s*(?P<value>.*?)\s*-->\s*$")
NAMED_BY_PROSE = re.compile(r"^`(?P<name>[\w./-]+\.\w+)`:\s*$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
CAT = re.compile(r"^cat (?P<name>[\w./-]+)$")

# Files that a page uses but shows only in prose or through the error messages about them.
DOC_FILES: dict[str, dict[str, str]] = {
    "docs/formats.md": {
        # "with `a` relevant and `b` not"; "`c` (relevant), `b`, `a` (relevant)"
        "tie.qrels": "q1 0 a 1\nq1 0 b 0\n",
        "ties.qrels": "q1 0 a 1\nq1 0 b 0\nq1 0 c 1\n",
        "bad.qrels": "q1 0 d1 1\nq1 0 d2 yes\n",
        "attr.qrels": "q1 0 d1 1 cost\n",
        "short.run": "q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0\n",
        "word.run": "q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 high mine\n",
        "dup.run": "q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\nq1 Q0 d1 3 0.5 mine\n",
        "noeq.docs": "letter2 sens=1\nletter3 sens 2\n",
        "dup.docs": "# docno key=value ...\nletter2 sens=1\nletter3 sens=2\nletter2 sens=0\n",
        "twice.docs": "letter2 sens=1 sens=2\n",
        "reserved.docs": "letter2 doc_id=x\n",
        "badsens.docs": "letter2 sens=yes\n",
    },
    "docs/csdcg.md": {
        # archive.qrels' q1 with a bad sens= on line 3
        "bad.qrels": "q1 0 letter1 2\nq1 0 letter2 2 sens=1\nq1 0 memo 0 sens=yes\nq1 0 note 1\n",
        # "ten highly relevant documents (grade 2) in the top 10, none sensitive"
        "ten.qrels": "".join(f"q1 0 d{i} 2\n" for i in range(1, 11)),
        "ten.run": "".join(f"q1 Q0 d{i} {i} {11 - i} sys\n" for i in range(1, 11)),
    },
    "docs/tar.md": {
        # the run of "The run" with a bad flag on line 4
        "bad.run": (
            "CD001 0 p1 1 0.95 mine\nCD001 0 p4 2 0.90 mine\nCD001 0 p2 3 0.70 mine\n"
            "CD001 yes p3 4 0.60 mine\nCD001 0 p7 5 0.40 mine\n"
        ),
        # CD002 only, q2 repeated on line 3
        "dup.run": "CD002 0 q2 1 0.80 mine\nCD002 1 q5 2 0.75 mine\nCD002 0 q2 3 0.50 mine\n",
        # screen.run's CD001 with every screened line flagged 1
        "flags.run": (
            "CD001 1 p1 1 0.95 mine\nCD001 1 p4 2 0.90 mine\nCD001 1 p2 3 0.70 mine\n"
            "CD001 1 p3 4 0.60 mine\nCD001 0 p7 5 0.40 mine\nCD001 0 p5 6 0.30 mine\n"
            "CD001 0 p6 7 0.20 mine\nCD001 0 p8 8 0.10 mine\nCD001 0 p9 9 0.05 mine\n"
        ),
        "badpi.qrels": "CD001 0 p1 1 pi=0\nCD001 0 p2 0 pi=0.8\n",
    },
    "docs/tbg.md": {
        # people.qrels with carol/p2's stopping probability 0, and without its cost=
        "nosig.qrels": (
            "q1 0 alice 1\nq1 0 bob 0\nq1 0 carol 1\n"
            "q1 0 alice/p1 0.5 cost=120\nq1 0 alice/p2 0.2 cost=300\nq1 0 bob/p1 0 cost=80\n"
            "q1 0 bob/p2 0 cost=200\nq1 0 carol/p1 0 cost=60\nq1 0 carol/p2 0 cost=150\n"
        ),
        "nocost.qrels": (
            "q1 0 alice 1\nq1 0 bob 0\nq1 0 carol 1\n"
            "q1 0 alice/p1 0.5 cost=120\nq1 0 alice/p2 0.2 cost=300\nq1 0 bob/p1 0 cost=80\n"
            "q1 0 bob/p2 0 cost=200\nq1 0 carol/p1 0 cost=60\nq1 0 carol/p2 1\n"
        ),
    },
    "docs/plugins.md": {
        # "fails to import": a missing dependency
        "broken_plugin.py": "import a_module_that_is_not_installed  # noqa: F401\n",
        # "a module myap.py whose measure is also called AP"
        "myap.py": (
            "from dataclasses import dataclass\n\nfrom rankeval import Measure, hookimpl\n\n\n"
            "@dataclass(frozen=True)\nclass MyAP(Measure):\n"
            '    """Another AP."""\n\n    name = "AP"\n\n'
            "    def compute(self, data):\n        return data.sum(data.relevance > 0)\n\n\n"
            "@hookimpl\ndef register_measures(register):\n    register(MyAP)\n"
        ),
        # a measure whose compute divides by zero
        "shaky.py": (
            "from dataclasses import dataclass\n\nfrom rankeval import Measure, hookimpl, param\n\n\n"
            "@dataclass(frozen=True)\nclass Shaky(Measure):\n"
            '    """Fails."""\n\n    name, at = "Shaky", "k"\n    k: int = param(10, "rank cutoff")\n\n'
            "    def compute(self, data):\n        return data.sum(data.rank < self.k) * (self.k / (self.k - self.k))\n\n\n"
            "@hookimpl\ndef register_measures(register):\n    register(Shaky)\n"
        ),
    },
}
# Examples whose output shows a bug of rankeval rather than stale docs: (page, a command of the
# block) -> reason. The test of the block is expected to fail, strictly.
XFAIL: dict[tuple[str, str], str] = {}
# A known intermittent bug: now and then a rankeval process ends with this line from the C++
# runtime and exit code 134 (SIGABRT) right after printing its error message (seen with the
# --docinfo errors of docs/formats.md, a few times in a hundred). A command whose output differs
# only by it makes its block an expected failure, not a pass.
KNOWN_ABORT = "terminate called without an active exception"

# Files of this repository a page names without their directory.
DOC_LINKS: dict[str, dict[str, str]] = {
    "docs/tbg.md": {
        "truth.json": "tests/data/htbg-toy/truth.json",
        "prediction.json": "tests/data/htbg-toy/prediction.json",
    },
}


@dataclass
class Command:
    text: str
    line: int
    expected: list[str]


@dataclass
class Block:
    page: str
    line: int
    commands: list[Command]
    skip: str | None = None
    installed: str | None = None
    problem: str | None = None  # a block the parser cannot read

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Page:
    path: str
    blocks: list[Block] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    packages: dict[str, dict] = field(default_factory=dict)  # pyproject.toml blocks by project name
    assignments: list[tuple[int, str]] = field(default_factory=list)  # (line, NAME=value)


def _fenced(lines: list[str]) -> Iterator[tuple[int, str, str, list[str], int]]:
    """(opening line index, indent, language, content lines, closing line index) of each fenced
    block, the content without the fence's indentation."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        j = i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence[0] * len(fence)) and lines[j].strip().strip(fence[0]) == ""
        ):
            j += 1
        content = [
            line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[i + 1 : j]
        ]
        yield i, indent, m["lang"], content, j
        i = j + 1


def _marker_before(lines: list[str], index: int) -> tuple[str, str] | None:
    """The marker comment on the last non-blank line before line *index*."""
    k = index - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    if k >= 0 and (m := MARKER.match(lines[k])) and m["kind"] != "output":
        return m["kind"], m["value"]
    return None


def _is_marker(line: str, kind: str, value: str) -> bool:
    return bool((m := MARKER.match(line)) and (m["kind"], m["value"]) == (kind, value))


def _output_region(lines: list[str], start: int, stop: int) -> list[str] | None:
    """The lines between ``<!-- output: begin -->`` and ``<!-- output: end -->``, if such a
    region begins between line indices *start* and *stop*."""
    begin = next((k for k in range(start, stop) if _is_marker(lines[k], "output", "begin")), None)
    if begin is None:
        return None
    end = next((k for k in range(begin + 1, len(lines)) if _is_marker(lines[k], "output", "end")), len(lines))
    region = lines[begin + 1 : end]
    while region and not region[0].strip():
        region.pop(0)
    while region and not region[-1].strip():
        region.pop()
    if region and FENCE.match(region[0]) and FENCE.match(region[-1]) and len(region) >= 2:
        region = region[1:-1]
    return region


def _commands(content: list[str], first_line: int) -> tuple[list[Command], str | None]:
    commands: list[Command] = []
    i = 0
    while i < len(content):
        line = content[i]
        if not line.startswith("$ "):
            if not commands:
                return commands, f"line {first_line + i}: output before any '$ ' command"
            commands[-1].expected.append(line)
            i += 1
            continue
        text, line_no = line[2:], first_line + i
        while text.endswith("\\") and i + 1 < len(content):
            i += 1
            text = text + "\n" + content[i]
        commands.append(Command(text, line_no, []))
        i += 1
    return commands, None


def parse_page(path: Path) -> Page:
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    page = Page(rel)
    fenced = list(_fenced(lines))
    console_starts = [start for start, _indent, lang, _content, _end in fenced if lang == "console"]
    for start, _indent, lang, content, end in fenced:
        marker = _marker_before(lines, start)
        if lang != "console":
            name = None
            if marker and marker[0] == "file":
                name = marker[1]
            else:
                k = start - 1
                while k >= 0 and not lines[k].strip():
                    k -= 1
                if k >= 0 and (m := NAMED_BY_PROSE.search(lines[k])):
                    name = m["name"]
            if name:
                page.files[name] = "\n".join(content) + "\n"
            if lang == "toml":
                try:
                    data = tomllib.loads("\n".join(content))
                except tomllib.TOMLDecodeError:
                    data = {}
                if "name" in data.get("project", {}):
                    page.packages[data["project"]["name"]] = data
            continue
        block = Block(rel, start + 1, [])
        block.commands, block.problem = _commands(content, start + 2)
        if marker and marker[0] == "not-tested":
            block.skip = marker[1]
        elif marker and marker[0] == "installed":
            block.installed = marker[1]
        elif marker:
            block.problem = f"marker {marker[0]!r} does not apply to a console block"
        following = [k for k in console_starts if k > start]
        region = _output_region(lines, end + 1, following[0] if following else len(lines))
        if region is not None and block.commands:
            if block.commands[-1].expected:
                block.problem = "output shown both in the block and after it"
            block.commands[-1].expected = region
        named_before: set[str] = set()  # the words of the block's commands so far
        for command in block.commands:
            if ASSIGNMENT.match(command.text):
                page.assignments.append((command.line, command.text))
            if (m := CAT.match(command.text)) and m["name"] not in named_before:
                page.files[m["name"]] = "\n".join(command.expected) + "\n"
            named_before.update(re.findall(r"[\w./-]+", command.text))
        page.blocks.append(block)
    return page


PARSED = {page.path: page for page in map(parse_page, PAGES)}
BLOCKS = [block for page in PARSED.values() for block in page.blocks]


def _param(block: Block) -> object:
    reasons = [XFAIL[block.page, c.text] for c in block.commands if (block.page, c.text) in XFAIL]
    marks = [pytest.mark.xfail(strict=True, reason=reasons[0])] if reasons else []
    return pytest.param(block, id=block.id, marks=marks)


def _environment(site: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RANKEVAL_DISABLE_PLUGIN_AUTOLOAD", "RANKEVAL_DEBUG", "PYTHONPATH"):
        env.pop(name, None)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def _install(page: Page, name: str, site: Path) -> None:
    """Lay out the page's package *name* as pip would install it: its modules and a dist-info
    with its entry points."""
    project = page.packages[name]
    site.mkdir()
    for module in project.get("tool", {}).get("setuptools", {}).get("py-modules", []):
        (site / f"{module}.py").write_text(page.files[f"{module}.py"], encoding="utf-8")
    info = site / f"{name}-{project['project']['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {project['project']['version']}\n", encoding="utf-8"
    )
    groups = project["project"].get("entry-points", {})
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
            for group, points in groups.items()
        ),
        encoding="utf-8",
    )


def _prepare(page: Page, workdir: Path) -> None:
    (workdir / "rankeval").symlink_to(ROOT / "rankeval", target_is_directory=True)
    (workdir / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    for name, target in DOC_LINKS.get(page.path, {}).items():
        (workdir / name).symlink_to(ROOT / target)
    for name, text in {**DOC_FILES.get(page.path, {}), **page.files}.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _normalised(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]


def _location(block: Block, command: Command) -> str:
    return f"{block.page}:{command.line}"


@pytest.mark.parametrize("block", [_param(block) for block in BLOCKS])
def test_console_example(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(block.skip)
    assert block.problem is None, f"{block.id}: {block.problem}"
    assert block.commands, f"{block.id}: a console block without a '$ ' command"
    page = PARSED[block.page]
    workdir = tmp_path / "work"
    workdir.mkdir()
    _prepare(page, workdir)
    site = None
    if block.installed:
        assert block.installed in page.packages, f"{block.id}: no pyproject.toml of {block.installed}"
        site = tmp_path / "site-packages"
        _install(page, block.installed, site)
    env = _environment(site)
    for command in block.commands:
        prelude = "".join(f"{text}\n" for line, text in page.assignments if line < command.line)
        with subprocess.Popen(
            ["bash", "-c", prelude + command.text],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, to end the whole pipeline on a timeout
        ) as process:
            try:
                output, _ = process.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                pytest.fail(f"{_location(block, command)}: `{command.text}` ran longer than {TIMEOUT} s")
        actual = _normalised(output.decode("utf-8", errors="replace").splitlines())
        expected = _normalised(command.expected)
        if actual != expected and [line for line in actual if line != KNOWN_ABORT] == expected:
            pytest.xfail(f"{_location(block, command)}: rankeval aborted at exit ({KNOWN_ABORT!r})")
        if actual != expected:
            diff = "\n".join(
                difflib.unified_diff(expected, actual, "shown in the docs", "printed now", lineterm="")
            )
            pytest.fail(f"{_location(block, command)}: `{command.text}` printed otherwise:\n{diff}")
