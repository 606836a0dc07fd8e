"""The plugin contract: every hook a plugin may implement and every type it registers or
receives, in one module at the bottom of the house.

A plugin is a module with ``@hookimpl`` functions named after the hook specs below. It imports
from ``rankeval`` (which re-exports this module's names), :mod:`rankeval.errors`,
:mod:`rankeval.spec` and :mod:`rankeval.segments`, and nothing else of the core.

==========================  =====================================================================
hook                        what the plugin gives
==========================  =====================================================================
``register_measures``       measure classes (subclasses of :class:`rankeval.Measure`)
``resolve_measure``         a measure for a spec no registered name matches (the ir_measures bridge)
``register_formats``        :class:`OutputFormat` s of ``-f``
``register_dialects``       :class:`Dialect` s: ``--compat NAME`` and ``--names NAMING``
``register_commands``       :class:`Command` s: ``rankeval NAME ...``
``random_model``            a :class:`RandomModel`: a measure's closed forms under a random ordering
==========================  =====================================================================

:func:`rankeval.load_registry` calls each ``register_*`` hook once and keeps what it gets;
every call into a plugin's code goes through one guard that names the plugin
(:func:`rankeval.errors.plugin_guard`).

May import: :mod:`rankeval.errors`, :mod:`rankeval.spec` (the foundation) and pluggy. A measure
(:class:`rankeval.Measure`) and the ranked lists it reads (:class:`rankeval.RankedLists`) live
in the layers above; here they are ``Any``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

import pluggy

from rankeval.spec import number_text

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Candidates",
    "Command",
    "Dialect",
    "Domain",
    "OutputFormat",
    "RandomModel",
    "Row",
    "Sampler",
    "hookimpl",
    "hookspec",
]

hookspec = pluggy.HookspecMarker("rankeval")
hookimpl = pluggy.HookimplMarker("rankeval")

#: a :class:`rankeval.Measure` (its class for ``register_measures``)
MeasureObject: TypeAlias = Any


# ------------------------------------------------------------------------------ the hooks
@hookspec
def register_measures(register: Callable[[type[MeasureObject]], None]) -> None:
    """Register measure classes by calling ``register(MeasureClass)`` for each."""


@hookspec(firstresult=True)
def resolve_measure(spec: str) -> MeasureObject | None:
    """Return a measure for a spec whose name no registered measure has, or ``None``."""


@hookspec
def register_formats(register: Callable[[OutputFormat], None]) -> None:
    """Register output formats of ``-f`` by calling ``register(OutputFormat(...))`` for each."""


@hookspec
def register_dialects(register: Callable[[Dialect], None]) -> None:
    """Register dialects (``--compat NAME``, ``--names NAMING``) by calling
    ``register(Dialect(...))`` for each."""


@hookspec
def register_commands(register: Callable[[Command], None]) -> None:
    """Register ``rankeval`` sub-commands by calling ``register(Command(...))`` for each."""


@hookspec(firstresult=True)
def random_model(measure: MeasureObject) -> RandomModel | None:
    """Return the random-ranking closed forms of *measure* (a :class:`RandomModel`), or ``None``."""


# ------------------------------------------------------------------- parameter domains
@dataclass(frozen=True)
class Domain:
    """The numbers a parameter accepts: an interval of finite numbers.

    ``Domain(0, 1)`` is [0, 1] (a probability); ``Domain(0)`` is [0, inf), finite and ≥ 0;
    ``Domain(0, low_open=True)`` is (0, inf), finite and > 0; ``Domain(1, INT32_MAX)`` is the
    default of an ``int``. NaN and ±inf are in no domain (a spec could not write them back).

    Attributes:
        low: The smallest value (``-inf``: no lower bound).
        high: The largest value (``inf``: no upper bound).
        low_open: ``low`` itself is excluded.
        high_open: ``high`` itself is excluded.
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False

    def __post_init__(self) -> None:
        if not self.low <= self.high:  # also NaN
            raise ValueError(f"a domain needs low <= high, not {self.low!r} and {self.high!r}")

    def __contains__(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if isinstance(value, numbers.Integral):
            x: float = int(value)  # compared exactly: 10**400 must not overflow a float
        else:
            x = float(value)
            if not math.isfinite(x):
                return False
        above = x > self.low if self.low_open else x >= self.low
        below = x < self.high if self.high_open else x <= self.high
        return above and below

    def __str__(self) -> str:
        """Interval notation: ``[0, 1]``, ``(0, 100]``, ``(0, inf)``, ``[1, 2147483647]``."""
        left = "(" if self.low_open or self.low == -math.inf else "["
        right = ")" if self.high_open or self.high == math.inf else "]"
        return f"{left}{_bound(self.low)}, {_bound(self.high)}{right}"


def _bound(x: float) -> str:
    return ("inf" if x > 0 else "-inf") if x in (math.inf, -math.inf) else number_text(x)


# ------------------------------------------------------------------------------ output
class Row(NamedTuple):
    """One result row as an :class:`OutputFormat` receives it."""

    run: str
    query_id: str | None  #: ``None`` for the aggregate
    measure: str
    value: float  #: ``nan`` when undefined
    integer: bool  #: the value is a count or a rank: printed without decimals when whole


@dataclass(frozen=True)
class OutputFormat:
    """An output format a plugin adds (``register_formats`` hook).

    Attributes:
        name: the name given to ``-f`` / ``format_results(fmt=...)``.
        render: ``render(rows, precision)``: the text of the result :class:`Row` s (per run,
            queries sorted with the aggregate, query id ``None``, last; measures as given; only
            the aggregate rows unless ``-q``); *precision* is ``-p N`` or ``None``.
        description: one line for ``--help``.
    """

    name: str
    render: Callable[[list[Row], int | None], str]
    description: str = ""


@dataclass(frozen=True)
class Command:
    """A ``rankeval`` sub-command a plugin adds (``register_commands`` hook).

    Attributes:
        name: the command's name (``rankeval NAME ...``).
        function: a function whose parameters are typer arguments and options (annotated
            with ``typer.Argument`` / ``typer.Option``) and which returns the text to print on
            standard output; it raises :class:`~rankeval.errors.RankevalError` subclasses for
            bad input or usage, which the CLI reports as for its own commands.
        help: one line for ``rankeval --help``.
    """

    name: str
    function: Callable[..., str]
    help: str = ""


# ----------------------------------------------------------------------------- dialects
@dataclass(frozen=True)
class Dialect:
    """How another evaluator is reproduced (``register_dialects`` hook): ``--compat NAME``
    (``EvalOptions(compat=NAME)``) applies it whole; ``--names NAMING`` only its names.

    Attributes:
        name: the name given to ``--compat`` / ``EvalOptions(compat=...)``; ``None``: the
            dialect only names measures (``--names``) and expands spellings.
        apply: ``apply(measure)``: *measure* as computed in this dialect, or ``None`` when the
            dialect does not change it; ``None`` (the field): no measure changes.
        naming: the name given to ``--names`` for this dialect's names of measures.
        name_of: ``name_of(measure)``: *measure*'s name in this dialect, or ``None`` to keep
            its spec.
        expand: ``expand(text)``: the measures (or rankeval specs of them) one ``-m`` value
            written in this dialect's form names (a parameter list such as ``P.5,10``, a set
            such as ``official``), or ``None`` for a spelling it does not know. Every dialect's spellings are accepted in
            every mode (they do not collide with rankeval's specs).
        aliases: the measure names of the other tool that this dialect accepts, each mapped to
            the rankeval name it means (``{"ap": "tar_ap"}``): spelled exactly so, they come
            before every other name in the specs of this dialect (and only under ``--compat``).
        format: the output format of the CLI in this dialect, unless ``-f`` is given.
        options: default evaluation options in this dialect (``{"on_duplicate": "first"}``,
            ``{"float32_scores": True}``): :class:`rankeval.EvalOptions` fields, each applied
            where the caller left the field at its default.
        description: one line for ``--help``.
    """

    name: str | None
    apply: Callable[[MeasureObject], MeasureObject | None] | None = None
    naming: str | None = None
    name_of: Callable[[MeasureObject], str | None] | None = None
    expand: Callable[[str], Sequence[MeasureObject | str] | None] | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    format: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


# ---------------------------------------------------------------------- random ranking
Sampler: TypeAlias = "Callable[[int, np.ndarray], np.ndarray]"
"""``sampler(query, positions) -> values``: ``(samples,)`` values of a measure on query
*query* (an index into :class:`Candidates`) when its judged candidates, in the order of
:meth:`Candidates.grades_of`, sit at the 0-based ranks *positions* (``(samples, c)``)."""


class Candidates(Protocol):
    """What a :class:`RandomModel` receives: per kept query, the number of candidates (the
    documents the run retrieved) and the grades of the judged ones, whose random ranks the
    baseline draws.

    Attributes:
        n: ``(Q,)`` candidates of each query.
        offsets: ``(Q+1,)`` segments of :attr:`grades`: query *q*'s judged candidates are
            ``grades[offsets[q]:offsets[q + 1]]``.
        grades: the judged candidates' grades.
        view: the run's ranked lists of nesting level 1 (a :class:`rankeval.RankedLists`), for
            what the qrels say beyond the candidates (judged documents not retrieved).
        keep: ``(view.num_queries,)`` which of the view's queries are kept (the missing-query
            rule), in order: query *q* here is the *q*-th kept query of the view.
        max_docs: the cutoff of every random ordering (``max_docs`` of the evaluation), or
            ``None``.
    """

    n: np.ndarray
    offsets: np.ndarray
    grades: np.ndarray
    view: Any
    keep: np.ndarray
    max_docs: int | None

    def grades_of(self, q: int) -> np.ndarray:
        """The grades of query *q*'s judged candidates."""

    def num_rel(self, rel: float) -> np.ndarray:
        """``(Q,)`` relevant documents (grade ≥ *rel*) in the qrels, retrieved or not."""

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per query: judged candidates where *mask* (over :attr:`grades`) holds (or the sum
        of *mask*'s values)."""

    def cut(self, k: int | None = None) -> np.ndarray:
        """``(Q,)`` ranks of each random ordering that count: ``min(n, k, max_docs)``."""


@dataclass(frozen=True)
class RandomModel:
    """What a measure family knows about a measure under a uniformly random ordering of each
    query's candidates (returned by the ``random_model`` hook). Either part may be missing.

    Attributes:
        expectation: ``expectation(candidates)``: the exact expected value of each query of
            *candidates* (``(Q,)``), a closed form; the baseline reports it (and the
            measure's aggregate of it) instead of the Monte Carlo mean.
        sampler: ``sampler(candidates)``: a :data:`Sampler` for the Monte Carlo by rank
            positions (faster than evaluating replicated runs through ``compute``); it must
            give the values ``compute`` gives on the same orderings.
    """

    expectation: Callable[[Candidates], np.ndarray] | None = None
    sampler: Callable[[Candidates], Sampler] | None = None
