"""Hook specifications of rankeval plugins (markers and specs only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from rankeval.measure import Measure

hookspec = pluggy.HookspecMarker("rankeval")
hookimpl = pluggy.HookimplMarker("rankeval")


@hookspec
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register measure classes by calling ``register(MeasureClass)`` for each."""


@hookspec(firstresult=True)
def resolve_measure(spec: str) -> Measure | None:
    """Return a measure for a spec whose name no registered measure has, or ``None``."""
