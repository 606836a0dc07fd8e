"""The :class:`Measure` base class, parameter types, parameter domains and value conversion.

A measure is a small frozen dataclass: its fields are its parameters (with types, defaults,
help text and domains in the field metadata), class variables carry its name, the parameter
the ``@`` part sets, a description and its source. ``str(measure)`` is the canonical spec and
parses back to an equal measure.

Every numeric parameter has a :class:`Domain`: the one it declares
(``param(0.64, "...", domain=Domain(0, 1))``), else the default of its type (``int``:
1 … 2³¹-1; ``float``: any finite number; :class:`Duration`: finite and > 0 seconds). A value
of the wrong type or outside the domain is a :class:`ParamError`: :meth:`Measure.from_spec`
raises it with a caret at the value, the constructor (:meth:`Measure.__post_init__`) for a
measure built in Python. Both use :meth:`ParamInfo.problem`, so the rule lives in one place.

A measure's :meth:`Measure.compute` receives the :class:`~rankeval.ranking.ranked_lists.RankedLists` of one
run and returns one value per query, computed with array operations over all queries.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
import types
import typing
import warnings
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args, get_origin

from rankeval.errors import RankevalWarning, SpecError, clip
from rankeval.extension import Domain
from rankeval.spec import MeasureSpec, Value, format_value_text
from rankeval.spec import number_text as _num

if TYPE_CHECKING:
    import numpy as np

    from rankeval.ranking.ranked_lists import RankedLists

__all__ = ["INT32_MAX", "Domain", "Duration", "Measure", "ParamError", "ParamInfo", "param"]

INT32_MAX = 2**31 - 1
"""The largest value of an ``int`` parameter by default (cutoffs, depths, levels: 2³¹-1)."""
_ECHO = 60  # characters of a value quoted in a message, at most


class Duration(float):
    """A time in seconds; specs accept units: ``224``, ``224s``, ``30m``, ``3h``."""

    def __repr__(self) -> str:
        return format_duration(self)

    __str__ = __repr__


def format_duration(seconds: float) -> str:
    """Shortest spec text for a duration: ``3h``, ``90m`` or plain seconds; always one that
    parses back to exactly *seconds* (``0.001``; ``1e+300``, never ``2.7…e+296h``)."""
    seconds = float(seconds)
    if seconds and math.isfinite(seconds):
        for unit, scale in (("h", 3600), ("m", 60)):
            if seconds % scale == 0:
                text = _num(seconds / scale)
                if float(text) * scale == seconds:  # as the spec parser scales it back
                    return text + unit
    return _num(seconds)


INT_DOMAIN = Domain(1, INT32_MAX)
"""Default domain of an ``int`` parameter: 1 … 2³¹-1 (cutoffs, depths, levels)."""
FLOAT_DOMAIN = Domain()
"""Default domain of a ``float`` parameter: any finite number."""
DURATION_DOMAIN = Domain(0, low_open=True)
"""Default domain of a :class:`Duration` parameter: finite and > 0 seconds."""


class ParamError(SpecError, ValueError):
    """A measure parameter has a value of the wrong type or outside its :class:`Domain`.

    A :class:`~rankeval.errors.SpecError` (a usage error, exit code 2) and, for code that
    builds measures in Python, also a :class:`ValueError`.
    """


def param(default: Any, help: str, *, domain: Domain | None = None, **extra: Any) -> Any:
    """Declare a measure parameter: a dataclass field with a default and help text.

    Args:
        default: The value when a spec does not give one.
        help: One line for ``rankeval measures`` and the docs.
        domain: The numbers the parameter accepts; by default that of its type (``int``:
            1 … 2³¹-1, ``float``: finite, :class:`Duration`: finite and > 0).
        **extra: More field metadata.
    """
    return dataclasses.field(default=default, metadata={"help": help, "domain": domain, **extra})


@dataclasses.dataclass(frozen=True)
class ParamInfo:
    """What the registry and docs know about one parameter.

    Attributes:
        name: The parameter (field) name.
        type: Its declared type (``int``, ``float | None``, ``Literal["exp", "linear"]`` ...).
        default: Its default value.
        help: Its help text.
        domain: The numbers it accepts (declared, or the default of its type); ``None`` for a
            parameter that is not a number.
    """

    name: str
    type: Any
    default: Any
    help: str
    domain: Domain | None = None

    @property
    def type_name(self) -> str:
        """Readable type name (``int``, ``float``, ``duration``, ``exp|linear`` ...)."""
        return _type_name(self.type)

    def problem(self, value: Any, text: str | None = None) -> str | None:
        """Why *value* is not a valid value of this parameter, or ``None`` if it is.

        Args:
            value: The value (as converted from a spec, or given in Python).
            text: The value as written in a spec, quoted instead of *value* in the message.
        """
        return _problem(self.type, self.domain, value, text)


def _numeric(tp: Any) -> Any:
    """The numeric type (``int``, ``float``, :class:`Duration`) in *tp* (``int | None`` → ``int``)."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        found = [_numeric(a) for a in get_args(tp)]
        return next((f for f in found if f is not None), None)
    return tp if tp in (int, float, Duration) else None


def _default_domain(tp: Any) -> Domain | None:
    return {int: INT_DOMAIN, float: FLOAT_DOMAIN, Duration: DURATION_DOMAIN}.get(_numeric(tp))


def _problem(tp: Any, domain: Domain | None, value: Any, text: str | None) -> str | None:
    shown = clip(text if text is not None else format_param_value(value), _ECHO)
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        problems = [_problem(a, domain, value, text) for a in get_args(tp) if a is not type(None)]
        return None if None in problems else problems[0]
    if origin is Literal:
        if any(value == c and type(value) is type(c) for c in get_args(tp)):
            return None
        return f"expected one of {', '.join(str(c) for c in get_args(tp))}, found {shown}"
    if tp is bool:
        return None if isinstance(value, bool) else f"expected true or false, found {shown}"
    if tp is str:
        return None if isinstance(value, str) else f"expected a string, found {shown}"
    if tp not in (int, float, Duration):
        return None  # a type rankeval does not convert: the plugin checks it
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if tp is int else numbers.Real):
        return f"expected {'an integer' if tp is int else 'a number'}, found {shown}"
    if domain is None or value in domain:
        return None
    return f"{shown} is outside {domain}" + (" seconds" if tp is Duration else "")


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return "|".join(str(a) for a in get_args(tp))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args) + " (optional)"
    if tp is Duration:
        return "duration"
    return getattr(tp, "__name__", str(tp))


_PARAMS: weakref.WeakKeyDictionary[type, tuple[ParamInfo, ...]] = weakref.WeakKeyDictionary()


def _params_of(cls: type) -> tuple[ParamInfo, ...]:
    """The parameters of measure class *cls* (cached: every construction checks them)."""
    found = _PARAMS.get(cls)
    if found is None:
        found = _PARAMS[cls] = _read_params(cls)
    return found


def _common_of(cls: type) -> tuple[ParamInfo, ...]:
    """The parameters every measure has (:attr:`Measure.judged_only`), as *cls* declares them."""
    found = _COMMON.get(cls)
    if found is None:
        found = _COMMON[cls] = _read_params(cls, common=True)
    return found


_COMMON: dict[type, tuple[ParamInfo, ...]] = {}


def _read_params(cls: type, common: bool = False) -> tuple[ParamInfo, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if bool(f.metadata.get("common")) != common:
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        tp = hints[f.name]
        domain = f.metadata.get("domain")
        if domain is not None and _numeric(tp) is None:
            raise TypeError(f"{cls.__name__}.{f.name}: a domain is for int, float or Duration parameters")
        domain = domain or _default_domain(tp)
        out.append(ParamInfo(f.name, tp, default, f.metadata.get("help", ""), domain))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Measure:
    """Base class of all measures (built-in and plugin).

    Subclasses are frozen dataclasses decorated with ``@dataclass(frozen=True)``; every field
    is a parameter. Class variables:

    Attributes:
        name: the measure name used in specs (``"nDCG"``).
        at: the parameter that ``@value`` sets (``"k"`` for ``nDCG@10``), or ``None``.
        description: one line for ``rankeval measures`` and the docs.
        source: where the definition comes from (paper, tool).
        aliases: other names, each mapped to fixed parameter values
            (``{"map": {}}``; ``{"ndcg": {}}``).
        cut_prefixes: name prefixes taking a cutoff suffix ``.K`` or ``_K`` that sets :attr:`at`
            (``("P",)`` accepts ``P.5`` and ``P_5``).
        integer: values are counts (printed without decimals in trec format; summed in the
            aggregate, as trec_eval does).
        whole: per-query values are whole numbers that are not summed (a rank, say): printed
            without decimals per query, while the aggregate (a mean) keeps its decimals.
        attributes: the item attributes (``key=`` of the qrels or a ``--docinfo`` file) the
            measure reads, at the levels :meth:`attribute_levels` gives (``("sens",)``).
    """

    #: Every measure's parameter (not listed by :meth:`params`): score condensed lists, the
    #: items the qrels do not judge (or judge with a negative grade) removed from each ranking
    #: first, as ``--judged-only`` does for all measures (ir_measures' ``judged_only=True``).
    judged_only: bool = dataclasses.field(
        default=False,
        kw_only=True,
        repr=False,
        metadata={
            "help": "score the condensed list: unjudged items (and negative grades) removed first",
            "common": True,
        },
    )

    name: ClassVar[str] = ""
    at: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    aliases: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    cut_prefixes: ClassVar[tuple[str, ...]] = ()
    integer: ClassVar[bool] = False
    whole: ClassVar[bool] = False
    attributes: ClassVar[tuple[str, ...]] = ()

    # -- behaviour -------------------------------------------------------------------
    def compute(self, data: RankedLists) -> np.ndarray:
        """One value per query of *data* (``(Q,)`` float64)."""
        raise NotImplementedError

    def expected(self, data: RankedLists) -> np.ndarray:
        """The tie-aware value (``--ties expected``): per query of *data*, the mean of
        :meth:`compute` over all orders of each group of rows with equal scores (McSherry &
        Najork, ECIR 2008), exact. The rows of each tied group of *data* are in the run's
        line order (any order would do: the value is their mean), and ``data.ties`` gives
        each row's group (:class:`~rankeval.ranking.ranked_lists.Ties`).

        A measure without an exact method leaves this as it is (:meth:`tie_aware` is then
        false) and ``--ties expected`` refuses it before any work. A measure whose value does
        not depend on the order (a count of the retrieved set) returns :meth:`compute`."""
        raise NotImplementedError

    @classmethod
    def tie_aware(cls) -> bool:
        """Whether the measure has an exact tie-aware value (overrides :meth:`expected`)."""
        return cls.expected is not Measure.expected

    def aggregate(self, values: np.ndarray) -> float:
        """Summary over queries: the mean, or the sum for counts (``integer``), added left to
        right in query order as trec_eval adds them (:func:`rankeval.segments.ordered_sum`).

        A query whose value is undefined (NaN) is left out, and a
        :class:`~rankeval.errors.RankevalWarning` counts them (``HalfNaN: 1 of 3 queries
        undefined, left out of the mean``); with no query left the summary is NaN. Override
        this method for another rule."""
        import numpy as np

        from rankeval.segments import ordered_mean, ordered_sum

        undefined = np.isnan(values)
        if undefined.any():
            values = values[~undefined]
            self._warn_undefined(int(undefined.sum()), len(undefined), bool(len(values)))
        if len(values) == 0:
            return math.nan
        return ordered_sum(values) if self.integer else ordered_mean(values)

    def _warn_undefined(self, count: int, total: int, some_left: bool) -> None:
        summary = "sum" if self.integer else "mean"
        left = f"left out of the {summary}" if some_left else f"no query left: the {summary} is nan"
        warnings.warn(RankevalWarning(f"{self}: {count} of {total} queries undefined, {left}"), stacklevel=3)

    def aggregate_parts(
        self, data: RankedLists, values: np.ndarray, queries: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Per-query numbers the aggregate needs beyond the values (default: none).

        Override it, with :meth:`aggregate_from_parts`, for a summary such as recall pooled
        over queries (Σ found / Σ R). Each array has one entry per value; the engines gather
        them over all queries (over all partitions, with the Dask engine) before calling
        :meth:`aggregate_from_parts`, so the summary is exact however the queries were split.

        Args:
            data: the ranked lists the values were computed from.
            values: the per-query values reported (after the missing-query rule).
            queries: for each of *values*, the index of its query in ``data.nesting.outer_ids``
                (the top-level query ids; ``data.query_ids`` at nesting level 1).
        """
        return {}

    def aggregate_from_parts(
        self, query_ids: np.ndarray, values: np.ndarray, parts: dict[str, np.ndarray]
    ) -> float:
        """Summary over queries from their ids, values and :meth:`aggregate_parts` (default:
        :meth:`aggregate` of *values*)."""
        return self.aggregate(values)

    def aggregate_lists(self, data: RankedLists, values: np.ndarray, queries: np.ndarray) -> float:
        """Summary over the queries of one set of ranked lists (the local engine's path):
        :meth:`aggregate_from_parts` of :meth:`aggregate_parts`."""
        return self.aggregate_from_parts(
            data.nesting.outer_ids[queries], values, self.aggregate_parts(data, values, queries)
        )

    def view_level(self) -> int:
        """Nesting level whose ranked lists this measure reads (its ``level`` parameter if it
        has one; 1 = top-level items)."""
        level = getattr(self, "level", 1)
        return level if isinstance(level, int) else 1

    @classmethod
    def reads(cls) -> str:
        """What the measure reads, in words, for listings and the docs: the nesting level it
        ranks and the item attributes it reads (``level= items (default 1, the top level);
        attributes: sens=``)."""
        ranked = (
            "the items of level= (default 1, the top level)"
            if any(p.name == "level" for p in cls.params())
            else "the top-level items"
        )
        attributes = ", ".join(f"{a}=" for a in cls.attributes)
        return ranked + (f"; attributes: {attributes}" if attributes else "")

    def attribute_levels(self) -> dict[str, tuple[int, ...]]:
        """The nesting levels at which the measure reads each of its :attr:`attributes`: the
        level it ranks (:meth:`view_level`) unless a subclass says otherwise (TBG reads
        ``cost=`` of the ranked items and of their children). When an attribute is given in
        a nested collection only at other levels, evaluation warns."""
        return {key: (self.view_level(),) for key in self.attributes}

    # -- introspection ---------------------------------------------------------------
    @classmethod
    def params(cls) -> list[ParamInfo]:
        """The parameters of this measure, in declaration order, with their domains."""
        return list(_params_of(cls))

    @classmethod
    def common_params(cls) -> list[ParamInfo]:
        """The parameters every measure has, not listed by :meth:`params`: ``judged_only``.
        A class that writes its own ``__str__`` prints them too (where :meth:`prints`)."""
        return list(_common_of(cls))

    def __post_init__(self) -> None:
        """Check every parameter against its type and domain (:meth:`ParamInfo.problem`).

        A subclass that defines its own ``__post_init__`` (for checks across parameters) calls
        ``super().__post_init__()`` first.

        Raises:
            ParamError: naming the measure, the parameter and the allowed range.
        """
        for info in (*_params_of(type(self)), *_common_of(type(self))):
            problem = info.problem(getattr(self, info.name))
            if problem is not None:
                raise ParamError(f"{self.name}: bad value for {info.name!r}: {problem}")

    def param_text(self, name: str) -> str:
        """Parameter *name*'s value as spec text (parses back to the same value)."""
        return format_param_value(getattr(self, name))

    @property
    def written(self) -> frozenset[str]:
        """The parameters a spec gave explicitly (``{"k"}`` for ``MyHits@10``, even when 10 is
        the default): ``str(measure)`` prints them, and the others only where they differ
        from their default. Empty for a measure built in Python."""
        return self._written

    _written: ClassVar[frozenset[str]] = frozenset()  # per instance: set by from_spec

    def with_params(self, **changes: Any) -> Measure:
        """This measure with some parameters changed (and counted as written), keeping the
        parameters written in its spec: ``nCS-DCG@10`` with ``level=2`` is
        ``nCS-DCG(level=2)@10``, a spec that works where ``nCS-DCG(level=2)`` does not."""
        return _built(type(self), {**_values(self), **changes}, self.written | set(changes))

    def prints(self, name: str) -> bool:
        """Whether ``str(measure)`` shows parameter *name*: it was written in the spec, or
        differs from its default (for a measure class that writes its own ``__str__``)."""
        info = next(p for p in (*self.params(), *self.common_params()) if p.name == name)
        return name in self.written or getattr(self, name) != info.default

    def __str__(self) -> str:
        parts = []
        at_text = None
        for info in (*self.params(), *self.common_params()):
            value = getattr(self, info.name)
            shown = self.prints(info.name)
            if info.name == self.at:
                if shown:
                    at_text = format_param_value(value)
                continue
            if shown:
                parts.append(f"{info.name}={format_param_value(value)}")
        out = self.name
        if parts:
            out += "(" + ",".join(parts) + ")"
        if at_text is not None:
            out += "@" + at_text
        return out

    # -- construction from a parsed spec ----------------------------------------------
    @classmethod
    def from_spec(
        cls,
        spec: MeasureSpec,
        fixed: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> Measure:
        """Build the measure from a parsed spec, converting and checking parameter values;
        *fixed* values (an alias's) cannot be given again, *defaults* (e.g. ``rel`` from
        ``-l``) replace the class's defaults of the parameters the measure has."""
        infos = {p.name: p for p in (*cls.params(), *_common_of(cls))}
        valid = ", ".join(
            f"{p.name} ({p.type_name}, default {format_param_value(p.default)})" for p in infos.values()
        )
        values: dict[str, Any] = {k: v for k, v in (defaults or {}).items() if k in infos}
        values.update(fixed or {})
        given: dict[str, int] = {}
        items: list[tuple[str | None, Value]] = list(spec.params)
        if spec.at is not None:
            items.insert(0, spec.at)
        for key, value in items:
            if key is None:
                if cls.at is None:
                    raise spec.error(
                        f"{cls.name} takes no '@' value; parameters: {valid or 'none'}", value.column
                    )
                key = cls.at
            if key not in infos:
                raise spec.error(
                    f"unknown parameter {key!r} for {cls.name}; valid parameters: {valid or 'none'}",
                    value.column,
                )
            if key in given or key in (fixed or {}):
                raise spec.error(f"parameter {key!r} given twice", value.column)
            given[key] = value.column
            try:
                values[key] = convert_value(value, infos[key].type)
            except ValueError as exc:
                raise spec.error(f"bad value for {key!r}: {exc}", value.column) from None
            problem = infos[key].problem(values[key], value.text)
            if problem is not None:
                raise spec.error(f"bad value for {key!r}: {problem}", value.column)
        try:
            return _built(cls, values, frozenset(given))
        except ParamError as exc:  # a fixed (alias) value, or a subclass's own check
            raise spec.error(exc.message) from None
        except (ValueError, TypeError) as exc:
            raise spec.error(f"invalid {cls.name}: {exc}") from None


def _values(measure: Measure) -> dict[str, Any]:
    return {f.name: getattr(measure, f.name) for f in dataclasses.fields(measure)}


def _built(cls: type[Measure], values: Mapping[str, Any], written: frozenset[str]) -> Measure:
    """``cls(**values)``, remembering the parameters *written* in a spec; they are set before
    ``__init__`` runs, so that ``__post_init__`` can suggest specs that keep them."""
    measure = cls.__new__(cls)
    if written:
        object.__setattr__(measure, "_written", frozenset(written))
    measure.__init__(**values)  # type: ignore[misc]
    return measure


def format_param_value(value: Any) -> str:
    """Spec text of a parameter value (parses back to the same value)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Duration):
        return format_duration(value)
    if isinstance(value, numbers.Real):
        return _num(value)
    return format_value_text(str(value))


def _found(value: Value) -> str:
    return repr(clip(value.text, _ECHO))


_DIGITS = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS = 4000  # Python refuses to convert longer digit strings to int (CVE-2020-10735)


def convert_value(value: Value, tp: Any) -> Any:
    """Convert a spec value to parameter type *tp* (raises ValueError with a reason)."""
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if value.kind == "ident" and value.text in ("none", "None"):
            return None
        errors = []
        for a in args:
            try:
                return convert_value(value, a)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))
    if origin is Literal:
        choices = [str(a) for a in get_args(tp)]
        if value.text in choices:
            return get_args(tp)[choices.index(value.text)]
        raise ValueError(f"expected one of {', '.join(choices)}, found {_found(value)}")
    if tp is bool:
        low = value.text.lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise ValueError(f"expected true or false, found {_found(value)}")
    if tp is Duration:
        if value.kind != "number" or value.unit == "%":
            raise ValueError(f"expected a duration such as 224, 224s, 30m or 3h, found {_found(value)}")
        assert value.number is not None
        scale = {None: 1, "s": 1, "m": 60, "h": 3600}[value.unit]
        return Duration(value.number * scale)
    if tp is int:
        if value.kind == "number" and value.unit is None and _DIGITS.fullmatch(value.text):
            if len(value.text) > _MAX_DIGITS:
                raise ValueError(
                    f"expected an integer of at most {_MAX_DIGITS} digits, found {_found(value)}"
                )
            return int(value.text)  # exact, even beyond 2**53 (a float would round it)
        if value.kind == "number" and value.unit is None:
            import decimal

            try:  # exact: 0.99999999999999999 is not an integer, though float64 rounds it to 1
                exact = decimal.Decimal(value.text)
            except decimal.InvalidOperation:
                exact = None
            if exact is not None and exact.is_finite() and exact.adjusted() < _MAX_DIGITS:
                if exact == exact.to_integral_value():
                    return int(exact)  # 1e3, 10.0
        raise ValueError(f"expected an integer, found {_found(value)}")
    if tp is float:
        if value.kind != "number" or value.number is None or value.unit not in (None, "%"):
            raise ValueError(f"expected a number, found {_found(value)}")
        return value.number / 100 if value.unit == "%" else value.number
    if tp is str:
        return value.text
    raise ValueError(f"unsupported parameter type {tp!r}")
