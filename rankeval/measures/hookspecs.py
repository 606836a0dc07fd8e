"""Hook specifications of rankeval plugins (markers and specs only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from rankeval.engine.random_ranking import RandomModel
    from rankeval.measures.base import Measure
    from rankeval.report.formats import Command, CompatMode, OutputFormat

hookspec = pluggy.HookspecMarker("rankeval")
hookimpl = pluggy.HookimplMarker("rankeval")


@hookspec
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register measure classes by calling ``register(MeasureClass)`` for each."""


@hookspec(firstresult=True)
def resolve_measure(spec: str) -> Measure | None:
    """Return a measure for a spec whose name no registered measure has, or ``None``."""


@hookspec
def register_formats(register: Callable[[OutputFormat], None]) -> None:
    """Register output formats of ``-f`` by calling ``register(OutputFormat(...))`` for each."""


@hookspec
def register_compat_modes(register: Callable[[CompatMode], None]) -> None:
    """Register modes of ``--compat`` by calling ``register(CompatMode(...))`` for each."""


@hookspec(firstresult=True)
def random_model(measure: Measure) -> RandomModel | None:
    """Return the random-ranking closed forms of *measure* (a ``RandomModel``), or ``None``."""


@hookspec
def register_commands(register: Callable[[Command], None]) -> None:
    """Register ``rankeval`` sub-commands by calling ``register(Command(...))`` for each."""


@hookspec(firstresult=True)
def expand_measures(text: str) -> list[Measure] | None:
    """Return the measures a spelling names that the registry cannot parse (a measure set,
    a parameter list such as trec_eval's ``P.5,10``), or ``None``."""


@hookspec(firstresult=True)
def measure_name(measure: Measure, names: str) -> str | None:
    """Return *measure*'s name in the naming convention *names* (e.g. ``"trec"``, ``"clef"``),
    or ``None``."""
