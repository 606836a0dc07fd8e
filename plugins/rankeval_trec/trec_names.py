"""trec_eval's names for the classic measures: its measure table (in its order), its parameter
forms (``P.5,10``, ``iprec_at_recall..1,.2``, ``utility.2,-1,0,0``), its nicknames
(``official``, ``all_trec``, ``set``) and the names it prints (``P_5``, ``map_cut_10``).

:func:`expand` turns one trec_eval ``-m`` value into :class:`TrecMeasure` entries, each a
printed name and the rankeval measure that computes it (or a measure only the ``trec_eval``
command prints: ``runid``, ``num_q``, ``relstring``); :func:`trec_name` gives a rankeval measure
its trec_eval name, for ``--names trec``. Definitions of the measures are in ``docs/measures.md``;
the command is in :mod:`rankeval_trec.command`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rankeval import Measure
from rankeval.errors import SpecError

__all__ = [
    "DIALECT_OPTIONS",
    "NICKNAMES",
    "TABLE",
    "TrecMeasure",
    "expand",
    "expand_all",
    "trec_name",
]

#: the evaluation options of the trec_eval dialect (``--compat trec_eval``), which the
#: ``rankeval trec_eval`` command uses too: scores read as float32, as trec_eval 9 reads them
DIALECT_OPTIONS: dict[str, Any] = {"float32_scores": True}

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALLS = tuple(i / 10 for i in range(11))
MULTS = tuple(i / 10 for i in range(2, 21, 2))
_NO_PARAMS = ""


@dataclass(frozen=True)
class TrecMeasure:
    """One printed trec_eval measure.

    Attributes:
        name: the name trec_eval prints (``P_5``, ``map``, ``utility_2,-1,0,0``).
        family: trec_eval's measure (``P``, ``map``, ``utility``): its index in :data:`TABLE`
            orders the output.
        measure: the rankeval measure computing it, or ``None`` for ``runid``, ``num_q`` and
            ``relstring``, which only the ``trec_eval`` command prints.
        kind: ``"float"`` (``%6.4f``), ``"long"`` (a count, ``%ld``), ``"string"``.
        per_query: printed for each query with ``-q``.
        summary: printed in the summary (``all``).
        param: the parameter of ``relstring`` (its length).
    """

    name: str
    family: str
    measure: Measure | None
    kind: str = "float"
    per_query: bool = True
    summary: bool = True
    param: float | None = None


@dataclass(frozen=True)
class _Family:
    """How trec_eval reads the parameters of one of its measures and names its outputs.

    *form*: ``"none"`` (no parameter), ``"cutoffs"`` (integers, one output each, ``name_k``),
    ``"levels"`` (floats, one output each, ``name_%3.2f``), ``"text"`` (one output, named
    ``name_params`` when parameters are given; *parse* reads them).
    """

    name: str
    cls: str | None  # class name in this package (None: printed by the command itself)
    form: str = "none"
    defaults: tuple[float, ...] = ()
    param: str = ""  # the measure's parameter set by each cutoff/level
    parse: Callable[[str], dict[str, Any]] | None = None
    kind: str = "float"
    per_query: bool = True
    summary: bool = True
    fixed: tuple[tuple[str, Any], ...] = ()


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"expected numbers separated by ',', found {text!r}") from None


def _utility(text: str) -> dict[str, Any]:
    values = _floats(text)
    if len(values) != 4:
        raise ValueError(f"utility takes 4 numbers a,b,c,d, found {len(values)}")
    return dict(zip("abcd", values, strict=True))


def _gains(text: str) -> dict[str, Any]:
    return {"gains": text}


def _points(text: str) -> dict[str, Any]:
    return {"points": ",".join(repr(x) for x in sorted(_floats(text)))}


def _beta(text: str) -> dict[str, Any]:
    return {"beta": _floats(text)[0]}


def _relstring(text: str) -> dict[str, Any]:
    return {"length": _floats(text)[0]}


# trec_eval 9.0.8's measure table (measures.c), in its order: the order of the output
TABLE: tuple[_Family, ...] = (
    _Family("runid", None, kind="string", per_query=False),
    _Family("num_q", None, kind="long", per_query=False),
    _Family("num_ret", "NumRet", kind="long"),
    _Family("num_rel", "NumRel", kind="long"),
    _Family("num_rel_ret", "NumRelRet", kind="long"),
    _Family("map", "AP"),
    _Family("gm_map", "GMAP", per_query=False),
    _Family("Rprec", "Rprec"),
    _Family("bpref", "Bpref"),
    _Family("recip_rank", "RR"),
    _Family("iprec_at_recall", "IPrec", "levels", RECALLS, "recall"),
    _Family("P", "P", "cutoffs", CUTOFFS, "k"),
    _Family("relstring", None, "text", parse=_relstring, kind="string", summary=False),
    _Family("recall", "R", "cutoffs", CUTOFFS, "k"),
    _Family("infAP", "InfAP"),
    _Family("gm_bpref", "GMBpref", per_query=False),
    _Family("Rprec_mult", "RprecMult", "levels", MULTS, "mult"),
    _Family("utility", "Utility", "text", parse=_utility),
    _Family("11pt_avg", "IPrecAvg", "text", parse=_points),
    _Family("binG", "BinG"),
    _Family("G", "G", "text", parse=_gains),
    _Family("ndcg", "NDCG", "text", parse=_gains),
    _Family("ndcg_rel", "NDCGRel", "text", parse=_gains),
    _Family("Rndcg", "RNDCG", "text", parse=_gains),
    _Family("ndcg_cut", "NDCG", "cutoffs", CUTOFFS, "k"),
    _Family("map_cut", "AP", "cutoffs", CUTOFFS, "k"),
    _Family("relative_P", "RelativeP", "cutoffs", CUTOFFS, "k"),
    _Family("success", "Success", "cutoffs", (1, 5, 10), "k"),
    _Family("set_P", "P"),
    _Family("set_relative_P", "SetRelativeP"),
    _Family("set_recall", "R"),
    _Family("set_map", "SetAP"),
    _Family("set_F", "SetF", "text", parse=_beta),
    _Family("num_nonrel_judged_ret", "NumNonrelJudgedRet", kind="long"),
)
_BY_NAME = {f.name: f for f in TABLE}

_OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
             "recip_rank", "iprec_at_recall", "P")  # fmt: skip
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": tuple(f.name for f in TABLE),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}


def _classes() -> dict[str, type[Measure]]:
    from rankeval_trec import MEASURES

    return {cls.__name__: cls for cls in MEASURES}


def _build(family: _Family, params: dict[str, Any], rel: int | None) -> Measure | None:
    """The rankeval measure of *family* with *params*, and ``rel`` = trec_eval's ``-l`` if the
    measure has that parameter."""
    if family.cls is None:
        return None
    cls = _classes()[family.cls]
    names = {f.name for f in dataclasses.fields(cls)}
    if rel is not None and "rel" in names:
        params = {**params, "rel": rel}
    return cls(**dict(family.fixed), **params)


def _label(value: float) -> str:
    """trec_eval's name suffix of a float parameter (``%3.2f``)."""
    return f"{value:3.2f}"


def _family_of(name: str, text: str) -> _Family:
    family = _BY_NAME.get(name)
    if family is None:
        raise SpecError(
            f"illegal measure {text!r}: trec_eval knows {', '.join(sorted(_BY_NAME, key=str.lower))} "
            f"and the nicknames {', '.join(NICKNAMES)}",
            source="trec_eval -m",
        )
    return family


def _asked(text: str) -> list[tuple[_Family, str | None]]:
    """The measures of one ``-m`` value, each with its parameter text (``None``: none given)."""
    if text in NICKNAMES:
        return [(_BY_NAME[name], None) for name in NICKNAMES[text]]
    name, dot, params = text.partition(".")
    return [(_family_of(name, text), params if dot else None)]


def _expand_checked(family: _Family, params: str | None, text: str, rel: int | None) -> list[TrecMeasure]:
    try:
        return _expand_family(family, params, rel)
    except (ValueError, TypeError) as exc:
        raise SpecError(f"illegal measure {text!r}: {exc}", source="trec_eval -m") from None


def expand(text: str, rel: int | None = None) -> list[TrecMeasure]:
    """The measures that trec_eval's ``-m TEXT`` asks for, in trec_eval's order.

    *text* is a measure (``P``, ``P.5,10``, ``ndcg.1=3,2=9``) or a nickname (``official``,
    ``all_trec``, ``set``); *rel* is ``-l``, given to every measure with a ``rel`` parameter.

    Raises:
        SpecError: an unknown measure or nickname, or parameters trec_eval would refuse.
    """
    return [m for family, params in _asked(text) for m in _expand_checked(family, params, text, rel)]


def _expand_family(family: _Family, params: str | None, rel: int | None) -> list[TrecMeasure]:
    def entry(name: str, measure: Measure | None, param: float | None = None) -> TrecMeasure:
        return TrecMeasure(name, family.name, measure, family.kind, family.per_query, family.summary, param)

    if params == "":
        raise ValueError("no parameters after the '.'")
    if family.form in ("cutoffs", "levels"):
        values: list[float] = list(family.defaults) if params is None else _floats(params)
        if family.form == "cutoffs":
            values = [int(v) for v in values]  # trec_eval reads cutoffs with atol: 23.4 is 23
            if min(values) <= 0:
                raise ValueError(f"cutoffs must be > 0, found {min(values)}")
        if len(set(values)) < len(values):
            raise ValueError("a value is given twice")
        out = []
        for v in sorted(values):
            if family.form == "cutoffs":
                out.append(entry(f"{family.name}_{int(v)}", _build(family, {family.param: int(v)}, rel)))
            else:
                out.append(entry(f"{family.name}_{_label(v)}", _build(family, {family.param: v}, rel)))
        return out
    if family.form == "text" and params:
        parsed = family.parse(params) if family.parse is not None else {}
        if family.cls is None:  # relstring
            return [entry(f"{family.name}_{params}", None, float(parsed["length"]))]
        return [entry(f"{family.name}_{params}", _build(family, parsed, rel))]
    if params:
        raise ValueError(f"{family.name} takes no parameters")
    return [entry(family.name, _build(family, {}, rel), 10.0 if family.name == "relstring" else None)]


def expand_all(texts: list[str], rel: int | None = None) -> list[TrecMeasure]:
    """The measures of several ``-m`` values (none: ``official``) in trec_eval's order. A
    measure asked for again keeps the parameters of the first ``-m`` that gave it some, as
    trec_eval does (``-m P.5 -m P.10`` is ``P_5``; ``-m P.5 -m official`` too); a measure never
    given parameters has its defaults. Every value is checked, the ignored ones too (trec_eval
    does not read those: ``-m P.5 -m P.x`` is refused here)."""
    chosen: dict[str, list[TrecMeasure]] = {}
    given: set[str] = set()  # the measures given parameters
    for text in texts or ["official"]:
        for family, params in _asked(text):
            found = _expand_checked(family, params, text, rel)
            if family.name not in given:
                chosen[family.name] = found
            if params is not None:
                given.add(family.name)
    order = {f.name: i for i, f in enumerate(TABLE)}
    return [m for name in sorted(chosen, key=order.__getitem__) for m in chosen[name]]


def trec_name(measure: Measure) -> str | None:
    """trec_eval's printed name of *measure*, or ``None`` if trec_eval has none for it (a
    parameter trec_eval cannot express, or a measure it does not have) — for ``--names
    trec``. The relevance level (``-l``) is not part of trec_eval's names."""
    rel = getattr(measure, "rel", None)
    k = getattr(measure, "k", None)
    for family in TABLE:
        if family.cls != type(measure).__name__:
            continue
        tries = [None] if k is None or family.form != "cutoffs" else [None, str(k)]
        for params in tries:
            try:
                found = _expand_family(family, params, rel)
            except (ValueError, TypeError):
                continue
            for m in found:
                if m.measure == measure:
                    return m.name
    return None
