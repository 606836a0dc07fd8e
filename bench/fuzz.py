"""Fuzz campaign: mutated real files through every reader, evaluate, convert and the spec parser.

    python bench/fuzz.py --cases 100000 --seed 0 --out /tmp/fuzz
    python bench/fuzz.py --seconds 600 --targets qrels run
    python bench/fuzz.py --seed 0 --replay 1234        # run case 1234 of seed 0 again

Uses the mutations and targets of ``tests/fuzz_strategies.py`` (the CI test
``tests/test_fuzz.py`` draws them from hypothesis; here ``random.Random(f"{seed}-{i}")`` drives
case *i*, so any case can be replayed by its number). Targets take turns. Every exception
must be a ``RankevalError``; any other exception (or a case running past ``--timeout``) is a
failure. Distinct failures (exception type + innermost frame in rankeval's code) are shrunk
and saved under ``--out``: ``NNN-<type>/repro.py`` (standalone), the input files,
``traceback.txt``; ``--out/findings.md`` lists them and ``--out/summary.json`` has the counts.
Exit status: 0 without failures, 1 with.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import re
import resource
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

# the mutations and targets live in tests/, shared with the CI test (tests/test_fuzz.py)
import fuzz_strategies as fs

# ------------------------------------------------------------------------------ shrinking


def _ddmin(units: list[Any], still_fails: Callable[[list[Any]], bool], budget: list[int]) -> list[Any]:
    """Delta debugging: drop chunks of *units* while *still_fails* holds (budget[0] tries)."""
    n = 2
    while len(units) >= 2 and budget[0] > 0:
        size = -(-len(units) // n)
        for start in range(0, len(units), size):
            if budget[0] <= 0:
                return units
            budget[0] -= 1
            candidate = units[:start] + units[start + size :]
            if still_fails(candidate):
                units = candidate
                n = max(n - 1, 2)
                break
        else:
            if n >= len(units):
                return units
            n = min(len(units), 2 * n)
    return units


def _shrink_file(
    case: fs.Case, name: str, size: int, still_fails: Callable[[fs.Case], bool], budget: list[int]
) -> fs.Case:
    """*case* with file *name* cut down, in units of lines (*size* 0) or of *size* bytes."""
    data = case.files[name]
    if size:
        units = [data[i : i + size] for i in range(0, len(data), size)]
    else:
        units = data.splitlines(keepends=True)
    if len(units) > 5_000:
        return case

    def rebuilt(u: list[bytes]) -> fs.Case:
        return dataclasses.replace(case, files={**case.files, name: b"".join(u)})

    return rebuilt(_ddmin(units, lambda u: still_fails(rebuilt(u)), budget))


def shrink(case: fs.Case, still_fails: Callable[[fs.Case], bool], tries: int = 1000) -> fs.Case:
    """A smaller case that still fails the same way: the files' lines, then blocks of
    bytes, then single bytes (mutated files first), then the spec text's characters (at
    most *tries* runs in all)."""
    budget = [tries]
    names = sorted(
        case.files, key=lambda n: not any(note.startswith(f"{n} = ") and " + " in note for note in case.notes)
    )
    for name in names:
        case = _shrink_file(case, name, 0, still_fails, budget)
    for name in names:
        case = _shrink_file(case, name, max(1, len(case.files[name]) // 1000), still_fails, budget)
        case = _shrink_file(case, name, 1, still_fails, budget)
    m = re.fullmatch(r"registry\.parse_many\((.*)\)", case.call, re.DOTALL)
    if m:
        spec = case

        def rebuilt(chars: list[str]) -> fs.Case:
            return dataclasses.replace(spec, call=f"registry.parse_many({''.join(chars)!r})")

        case = rebuilt(_ddmin(list(ast.literal_eval(m.group(1))), lambda c: still_fails(rebuilt(c)), budget))
    return case


@dataclass
class Finding:
    """One distinct failure: its first (shrunk) case and every case number that hit it."""

    outcome: fs.Outcome
    case: fs.Case
    number: int
    targets: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    count: int = 0


@dataclass
class Tally:
    """Counts of one campaign."""

    cases: Counter[str] = field(default_factory=Counter)
    clean: Counter[str] = field(default_factory=Counter)
    rejected: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    failed: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    warnings: Counter[str] = field(default_factory=Counter)
    first_warned: dict[str, int] = field(default_factory=dict)  # warning -> first case number
    slowest: list[tuple[float, int, str]] = field(default_factory=list)


def make_case(seed: int, number: int, targets: list[str]) -> fs.Case:
    target = targets[number % len(targets)]
    return fs.TARGETS[target](Random(f"{seed}-{number}"))


def traceback_text(case: fs.Case, directory: Path, timeout: float) -> str:
    """The full traceback of *case* (run once more, without the verdict's catch-all)."""
    import rankeval
    import rankeval.io.convert

    fs.write_files(case, directory)
    namespace = {"rankeval": rankeval, "d": directory, "registry": fs.registry()}
    try:
        with fs.time_limit(timeout):
            result = eval(compile(case.call, "<fuzz case>", "eval"), namespace)  # the reproducer's text
        return f"returned {result!r}\n"
    except (Exception, SystemExit, fs.FuzzTimeout):
        return traceback.format_exc()


def save(finding: Finding, index: int, out: Path, directory: Path, timeout: float) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", finding.outcome.error.rsplit(".", 1)[-1])[:40]
    where = out / f"{index:03d}-{slug}"
    where.mkdir(parents=True, exist_ok=True)
    for name, data in finding.case.files.items():
        (where / name).write_bytes(data)
    (where / "repro.py").write_text(finding.case.script())
    (where / "traceback.txt").write_text(traceback_text(finding.case, directory, timeout))
    return where


def findings_markdown(findings: list[Finding], paths: list[Path], seed: int) -> str:
    out = ["# rankeval fuzz findings", ""]
    by_target: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(findings):
        by_target[f.targets.most_common(1)[0][0]].append(i)
    for target in sorted(by_target):
        out += [f"## {target}", ""]
        for i in sorted(by_target[target], key=lambda i: findings[i].outcome.key):
            f = findings[i]
            tag = " **[ir_measures bridge]**" if f.outcome.irmeasures else ""
            seen = ", ".join(f"{t} {n}" for t, n in f.targets.most_common())
            script = f.case.script(inline_limit=3000)
            out += [
                f"### {f.outcome.error} at `{f.outcome.frame}`{tag}",
                "",
                f"- {f.count} cases ({seen}); first: case {f.number} of seed {seed}; saved in `{paths[i]}`",
                f"- message: `{f.outcome.message.splitlines()[0] if f.outcome.message else ''}`"[:400],
                f"- mutations that hit it: {', '.join(m for m, _ in f.mutations.most_common(6))}",
                "",
                "```python",
                script.rstrip(),
                "```",
                "",
            ]
    return "\n".join(out) + "\n"


def report(tally: Tally, findings: dict[tuple[str, str], Finding], elapsed: float, seed: int) -> str:
    lines = [f"rankeval fuzz: {sum(tally.cases.values())} cases, seed {seed}, {elapsed:.0f} s", ""]
    lines.append(f"{'target':<16}{'cases':>8}{'clean':>8}{'rejected':>10}{'failures':>10}")
    for t in tally.cases:
        rejected, failed = sum(tally.rejected[t].values()), sum(tally.failed[t].values())
        lines.append(f"{t:<16}{tally.cases[t]:>8}{tally.clean[t]:>8}{rejected:>10}{failed:>10}")
    lines += ["", "rejected (RankevalError), by type:"]
    for t in tally.cases:
        counts = ", ".join(f"{e.rsplit('.', 1)[-1]} {n}" for e, n in tally.rejected[t].most_common())
        lines.append(f"  {t:<16}{counts or '-'}")
    lines += ["", "failures (not RankevalError), by type:"]
    for t in tally.cases:
        counts = ", ".join(f"{e} {n}" for e, n in tally.failed[t].most_common())
        lines.append(f"  {t:<16}{counts or '-'}")
    lines += ["", f"distinct failures: {len(findings)}"]
    for f in sorted(findings.values(), key=lambda f: -f.count):
        tag = " [ir_measures bridge]" if f.outcome.irmeasures else ""
        lines.append(f"  {f.count:>6}  {f.outcome.error} at {f.outcome.frame}{tag}")
    if tally.warnings:
        lines += ["", "warnings other than RankevalWarning (not failures), cases:"]
        lines += [
            f"  {n:>6}  {w} (first: case {tally.first_warned[w]})" for w, n in tally.warnings.most_common(10)
        ]
    lines += ["", "slowest cases:"]
    lines += [f"  {s:7.2f} s  case {n} ({t})" for s, n, t in sorted(tally.slowest, reverse=True)[:5]]
    return "\n".join(lines)


class Campaign:
    """Runs cases, tallies outcomes and keeps the first (shrunk) case of each distinct failure."""

    def __init__(self, args: argparse.Namespace, directory: Path) -> None:
        self.args, self.directory = args, directory
        self.tally = Tally()
        self.findings: dict[tuple[str, str], Finding] = {}

    def run(self, cases: int | None) -> tuple[int, float]:
        """Run until *cases* or ``--seconds`` (or Ctrl-C); (cases run, seconds)."""
        start = last = time.monotonic()
        number = 0
        try:
            while cases is None or number < cases:
                if self.args.seconds is not None and time.monotonic() - start >= self.args.seconds:
                    break
                case = make_case(self.args.seed, number, self.args.targets)
                self.record(number, case, fs.run_case(case, self.directory, self.args.timeout))
                number += 1
                if time.monotonic() - last > 30:
                    last = time.monotonic()
                    failed = sum(sum(c.values()) for c in self.tally.failed.values())
                    print(
                        f"{number} cases, {failed} failures, {len(self.findings)} distinct, {last - start:.0f} s",
                        file=sys.stderr,
                    )
        except KeyboardInterrupt:
            print(f"interrupted after {number} cases", file=sys.stderr)
        return number, time.monotonic() - start

    def record(self, number: int, case: fs.Case, outcome: fs.Outcome) -> None:
        t, tally = case.target, self.tally
        tally.cases[t] += 1
        tally.warnings.update(outcome.warnings)
        for w in outcome.warnings:
            tally.first_warned.setdefault(w, number)
        tally.slowest = sorted([*tally.slowest, (outcome.seconds, number, t)], reverse=True)[:5]
        if outcome.kind == "clean":
            tally.clean[t] += 1
            return
        if outcome.kind == "rejected":
            tally.rejected[t][outcome.error] += 1
            return
        tally.failed[t][outcome.error] += 1
        finding = self.findings.get(outcome.key)
        if finding is None:
            print(f"case {number}: new failure {outcome.error} at {outcome.frame}", file=sys.stderr)
            finding = self.findings[outcome.key] = Finding(outcome, self.shrunk(case, outcome.key), number)
        finding.count += 1
        finding.targets[t] += 1
        finding.mutations.update(case.mutations)

    def shrunk(self, case: fs.Case, key: tuple[str, str]) -> fs.Case:
        if not self.args.shrink:
            return case

        def same_failure(c: fs.Case) -> bool:
            return fs.run_case(c, self.directory, self.args.timeout).key == key

        return shrink(case, same_failure, self.args.shrink)

    def write(self, elapsed: float) -> str:
        """Save the findings and the summary under ``--out``; the printed report."""
        out, seed = self.args.out, self.args.seed
        out.mkdir(parents=True, exist_ok=True)
        ordered = sorted(
            self.findings.values(), key=lambda f: (f.targets.most_common(1)[0][0], f.outcome.key)
        )
        paths = [save(f, i + 1, out, self.directory, self.args.timeout) for i, f in enumerate(ordered)]
        (out / "findings.md").write_text(findings_markdown(ordered, paths, seed))
        text = report(self.tally, self.findings, elapsed, seed)
        (out / "summary.txt").write_text(text + "\n")
        tally = self.tally
        summary = {
            "seed": seed,
            "cases": sum(tally.cases.values()),
            "seconds": round(elapsed, 1),
            "per_target": {
                t: {
                    "cases": tally.cases[t],
                    "clean": tally.clean[t],
                    "rejected": dict(tally.rejected[t]),
                    "failures": dict(tally.failed[t]),
                }
                for t in tally.cases
            },
            "findings": [
                {
                    "error": f.outcome.error,
                    "frame": f.outcome.frame,
                    "irmeasures": f.outcome.irmeasures,
                    "count": f.count,
                    "targets": dict(f.targets),
                    "first_case": f.number,
                    "saved": str(p),
                }
                for f, p in zip(ordered, paths, strict=True)
            ],
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", type=int, default=None, help="number of cases (default 5000 unless --seconds)"
    )
    parser.add_argument("--seconds", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", nargs="+", choices=list(fs.TARGETS), default=list(fs.TARGETS))
    default_out = Path(tempfile.gettempdir()) / "rankeval-fuzz"
    parser.add_argument("--out", type=Path, default=default_out, help="where failures are saved")
    parser.add_argument(
        "--timeout", type=float, default=30, help="seconds per case before it counts as a hang"
    )
    parser.add_argument("--memory", type=int, default=4096, help="address-space limit in MiB (0 = none)")
    parser.add_argument(
        "--shrink", type=int, default=400, help="runs spent shrinking each new failure (0 = off)"
    )
    parser.add_argument("--replay", type=int, default=None, help="run case N only and print its reproducer")
    args = parser.parse_args(argv)
    if args.memory:
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (args.memory << 20, hard))
    with tempfile.TemporaryDirectory(prefix="rankeval-fuzz-") as scratch:
        directory = Path(scratch)
        if args.replay is not None:
            case = make_case(args.seed, args.replay, args.targets)
            print(case.script(), end="")
            print(fs.run_case(case, directory, args.timeout), file=sys.stderr)
            print(traceback_text(case, directory, args.timeout), file=sys.stderr)
            return 0
        fs.spec_vocabulary()  # built before the clock starts, and everything imported
        for case in fs.seed_cases():
            outcome = fs.run_case(case, directory, args.timeout)
            if outcome.kind != "clean":
                print(
                    f"warning: unmutated seed {case.target} is not read cleanly: {outcome}", file=sys.stderr
                )
        campaign = Campaign(args, directory)
        _, elapsed = campaign.run(args.cases if args.cases is not None else (None if args.seconds else 5000))
        print(campaign.write(elapsed))
    print(f"\nfindings: {args.out / 'findings.md'}")
    return 1 if campaign.findings else 0


if __name__ == "__main__":
    sys.exit(main())
