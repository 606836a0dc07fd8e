"""Progress bars on stderr for long computations (the blocks of an evaluation, the resampling
of :func:`rankeval.compare` and the random baseline): a factory of bars, or of no-ops when
there is no terminal.

rich is imported when the first bar is started, not before: a computation that starts none
(a run of one block) costs nothing, even on a terminal.

May import: the standard library; rich lazily (only when a bar is shown). Nothing of rankeval.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

__all__ = ["Advance", "Task", "block_progress", "progress"]

Advance = Callable[[int], None]
"""``advance(n)``: *n* more steps done."""

Task = Callable[[str, int], Advance]
"""``task(label, total)``: a new bar of *total* steps, and its :data:`Advance`. A total that
is an estimate may be passed: the bar's total grows to the steps done."""


@contextmanager
def progress(enabled: bool | None) -> Iterator[Task]:
    """A factory of progress bars on stderr (rich), or of no-ops: ``task(label, total)``
    returns ``advance(n)``. ``enabled=None``: only when stderr is a terminal. The bars are
    removed when the block ends."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda label, total: lambda n: None
        return
    with ExitStack() as stack:
        bars: list[Any] = []  # the rich display, once a bar is started

        def task(label: str, total: int) -> Advance:
            import threading

            if not bars:
                bars.append(stack.enter_context(_display()))
            bar = bars[0]
            tid = bar.add_task(label, total=total)
            steps = [0, total]  # done, total
            lock = threading.Lock()  # (a Dask client advances from its own threads)

            def advance(n: int) -> None:
                with lock:
                    steps[0] += n
                    if steps[0] > steps[1]:  # the total was an estimate
                        steps[1] = steps[0]
                    bar.update(tid, completed=steps[0], total=steps[1])

            return advance

        yield task


@contextmanager
def block_progress(enabled: bool | None) -> Iterator[Callable[[int], Advance] | None]:
    """The progress callback of an evaluation by the block engine
    (:data:`rankeval.engine.evaluation.BlockProgress`): a bar of the blocks evaluated, or
    ``None`` when not *enabled* (``None``: only when stderr is a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    with progress(True) as task:
        yield lambda total: task("evaluating blocks", total)


def _display() -> Any:
    """The rich display of the bars: label, bar, percent, steps, time left; on stderr."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
