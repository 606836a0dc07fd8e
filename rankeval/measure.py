"""The :class:`Measure` base class, parameter types and value conversion.

A measure is a small frozen dataclass: its fields are its parameters (with types, defaults
and help text in the field metadata), class variables carry its name, the parameter the
``@`` part sets, a description and its source. ``str(measure)`` is the canonical spec and
parses back to an equal measure.

A measure's :meth:`Measure.compute` receives the :class:`~rankeval.ranked.RankedLists` of one
run and returns one value per query, computed with array operations over all queries.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args, get_origin

from rankeval.spec import MeasureSpec, Value, format_value_text

if TYPE_CHECKING:
    import numpy as np

    from rankeval.ranked import RankedLists

__all__ = ["Duration", "Measure", "ParamInfo", "param"]


class Duration(float):
    """A time in seconds; specs accept units: ``224``, ``224s``, ``30m``, ``3h``."""

    def __repr__(self) -> str:
        return format_duration(self)

    __str__ = __repr__


def format_duration(seconds: float) -> str:
    """Shortest spec text for a duration: ``3h``, ``30m`` or plain seconds."""
    if seconds and seconds % 3600 == 0:
        return f"{_num(seconds / 3600)}h"
    if seconds and seconds % 60 == 0:
        return f"{_num(seconds / 60)}m"
    return _num(float(seconds))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def param(default: Any, help: str, **extra: Any) -> Any:
    """Declare a measure parameter: a dataclass field with a default and help text."""
    return dataclasses.field(default=default, metadata={"help": help, **extra})


@dataclasses.dataclass(frozen=True)
class ParamInfo:
    """What the registry and docs know about one parameter."""

    name: str
    type: Any
    default: Any
    help: str

    @property
    def type_name(self) -> str:
        """Readable type name (``int``, ``float``, ``duration``, ``exp|linear`` ...)."""
        return _type_name(self.type)


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
        trec_prefixes: trec_eval name prefixes taking a cutoff suffix that sets :attr:`at`
            (``("P",)`` accepts ``P.5`` and ``P_5``).
        integer: values are counts (printed without decimals in trec format; summed in the
            aggregate, as trec_eval does).
        whole: per-query values are whole numbers that are not summed (a rank, say): printed
            without decimals per query, while the aggregate (a mean) keeps its decimals.
    """

    name: ClassVar[str] = ""
    at: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    aliases: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    trec_prefixes: ClassVar[tuple[str, ...]] = ()
    integer: ClassVar[bool] = False
    whole: ClassVar[bool] = False

    # -- behaviour -------------------------------------------------------------------
    def compute(self, data: RankedLists) -> np.ndarray:
        """One value per query of *data* (``(Q,)`` float64)."""
        raise NotImplementedError

    def aggregate(self, values: np.ndarray) -> float:
        """Summary over queries (mean; counts are summed, as trec_eval does)."""
        import numpy as np

        if len(values) == 0:
            return math.nan
        return float(np.sum(values)) if self.integer else float(np.mean(values))

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
            queries: for each of *values*, the index of its query in ``data.outer_ids``
                (``data.query_ids`` at nesting level 1).
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
            data.outer_ids[queries], values, self.aggregate_parts(data, values, queries)
        )

    def view_level(self) -> int:
        """Nesting level whose ranked lists this measure reads (its ``level`` parameter if it
        has one; 1 = top-level items)."""
        level = getattr(self, "level", 1)
        return level if isinstance(level, int) else 1

    # -- introspection ---------------------------------------------------------------
    @classmethod
    def params(cls) -> list[ParamInfo]:
        """The parameters of this measure, in declaration order."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else None
            out.append(ParamInfo(f.name, hints[f.name], default, f.metadata.get("help", "")))
        return out

    def __str__(self) -> str:
        parts = []
        at_text = None
        for info in self.params():
            value = getattr(self, info.name)
            if info.name == self.at:
                if value != info.default:
                    at_text = format_param_value(value)
                continue
            if value != info.default:
                parts.append(f"{info.name}={format_param_value(value)}")
        out = self.name
        if parts:
            out += "(" + ",".join(parts) + ")"
        if at_text is not None:
            out += "@" + at_text
        return out

    # -- construction from a parsed spec ----------------------------------------------
    @classmethod
    def from_spec(cls, spec: MeasureSpec, fixed: Mapping[str, Any] | None = None) -> Measure:
        """Build the measure from a parsed spec, converting and checking parameter values."""
        infos = {p.name: p for p in cls.params()}
        valid = ", ".join(f"{p.name} ({p.type_name}, default {p.default})" for p in infos.values())
        values: dict[str, Any] = dict(fixed or {})
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
        try:
            return cls(**values)
        except (ValueError, TypeError) as exc:
            raise spec.error(f"invalid {cls.name}: {exc}") from None


def format_param_value(value: Any) -> str:
    """Spec text of a parameter value (parses back to the same value)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Duration):
        return format_duration(value)
    if isinstance(value, (int, float)):
        return _num(value) if not isinstance(value, float) or value.is_integer() else repr(value)
    return format_value_text(str(value))


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
        raise ValueError(f"expected one of {', '.join(choices)}, found {value.text!r}")
    if tp is bool:
        low = value.text.lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise ValueError(f"expected true or false, found {value.text!r}")
    if tp is Duration:
        if value.kind != "number" or value.unit == "%":
            raise ValueError(f"expected a duration such as 224, 224s, 30m or 3h, found {value.text!r}")
        assert value.number is not None
        scale = {None: 1, "s": 1, "m": 60, "h": 3600}[value.unit]
        return Duration(value.number * scale)
    if tp is int:
        if (
            value.kind != "number"
            or value.unit is not None
            or value.number is None
            or not value.number.is_integer()
        ):
            raise ValueError(f"expected an integer, found {value.text!r}")
        return int(value.number)
    if tp is float:
        if value.kind != "number" or value.number is None or value.unit not in (None, "%"):
            raise ValueError(f"expected a number, found {value.text!r}")
        return value.number / 100 if value.unit == "%" else value.number
    if tp is str:
        return value.text
    raise ValueError(f"unsupported parameter type {tp!r}")
