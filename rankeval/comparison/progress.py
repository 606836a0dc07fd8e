"""Progress bars on stderr for long computations (the resampling of :func:`rankeval.compare`
and the random baseline): a factory of bars, or of no-ops when there is no terminal.

May import: the standard library; rich lazily (only when a bar is shown). Nothing of rankeval.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Advance", "Task", "progress"]

Advance = Callable[[int], None]
"""``advance(n)``: *n* more steps done."""

Task = Callable[[str, int], Advance]
"""``task(label, total)``: a new bar of *total* steps, and its :data:`Advance`."""


@contextmanager
def progress(enabled: bool | None) -> Iterator[Task]:
    """A factory of progress bars on stderr (rich), or of no-ops: ``task(label, total)``
    returns ``advance(n)``. ``enabled=None``: only when stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda label, total: lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:

        def task(label: str, total: int) -> Advance:
            tid = bar.add_task(label, total=total)
            return lambda n: bar.advance(tid, n)

        yield task
