"""Classic trec_eval measures as a rankeval plugin.

Each measure is a frozen dataclass whose fields are its parameters and whose ``compute``
turns the ranked lists of all queries into one value per query with numpy segment
operations (no loop over queries). Definitions follow trec_eval 9.0.8; the docs page of each
measure gives the formula.

This package is registered through the same ``register_measures`` hook as any third-party
plugin, so it doubles as the example of how to write one: ``classic`` holds the measures,
``random`` their closed forms under a random ordering (the ``random_model`` hook).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rankeval import Measure, hookimpl

from .classic import AP, NDCG, RR, Bpref, Judged, NumRel, NumRelRet, NumRet, P, R, Rprec, Success
from .graded import RNDCG, BinG, G, NDCGRel
from .interpolated import IPrec, IPrecAvg
from .random import random_model
from .sampled import GMAP, GMBpref, InfAP
from .sets import NumNonrelJudgedRet, RelativeP, RprecMult, SetAP, SetF, SetRelativeP, Utility

if TYPE_CHECKING:
    from rankeval import Command, Dialect

__all__ = [
    "AP",
    "GMAP",
    "MEASURES",
    "NDCG",
    "RNDCG",
    "RR",
    "BinG",
    "Bpref",
    "G",
    "GMBpref",
    "IPrec",
    "IPrecAvg",
    "InfAP",
    "Judged",
    "NDCGRel",
    "NumNonrelJudgedRet",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "P",
    "R",
    "RelativeP",
    "Rprec",
    "RprecMult",
    "SetAP",
    "SetF",
    "SetRelativeP",
    "Success",
    "Utility",
    "expand_measures",
    "measure_name",
    "random_model",
    "register_commands",
    "register_dialects",
    "register_measures",
]

MEASURES: tuple[type[Measure], ...] = (
    AP,
    NDCG,
    P,
    R,
    RR,
    Rprec,
    Bpref,
    Success,
    NumRet,
    NumRel,
    NumRelRet,
    Judged,
    IPrec,
    IPrecAvg,
    InfAP,
    GMAP,
    GMBpref,
    RprecMult,
    Utility,
    BinG,
    G,
    NDCGRel,
    RNDCG,
    RelativeP,
    SetRelativeP,
    SetAP,
    SetF,
    NumNonrelJudgedRet,
)


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register the classic measures."""
    for cls in MEASURES:
        register(cls)


# ------------------------------------------------------ trec_eval's names and command
@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``rankeval trec_eval``: trec_eval's command line (:mod:`rankeval_trec.command`)."""
    from rankeval import Command

    from .command import HELP, trec_eval_command

    register(Command("trec_eval", trec_eval_command, HELP))


def expand_measures(text: str) -> list[Measure] | None:
    """trec_eval's spellings of one ``-m`` value: ``P.5,10``, ``ndcg_cut`` (its default
    cutoffs), ``official``, ``all_trec``, ``set`` (the measures of :mod:`rankeval_trec.trec_names`
    that rankeval computes: ``runid``, ``num_q`` and ``relstring`` are left out)."""
    from rankeval.errors import SpecError

    from .trec_names import TABLE, expand

    try:
        found = expand(text)
    except SpecError:
        name, dot, _ = text.partition(".")
        if dot and name in {f.name for f in TABLE}:  # trec_eval's measure, bad parameters
            raise
        return None
    measures = list(dict.fromkeys(m.measure for m in found if m.measure is not None))
    if not measures:  # runid, num_q, relstring: no value per query
        raise SpecError(
            f"{text!r} is no number per query: only 'rankeval trec_eval -m {text}' prints it (trec_eval's {text})",
            source="-m",
        )
    return measures


def measure_name(measure: Measure) -> str | None:
    """trec_eval's name of a measure of this package (``--names trec``)."""
    from .trec_names import trec_name

    return trec_name(measure)


@hookimpl
def register_dialects(register: Callable[[Dialect], None]) -> None:
    """``--compat trec_eval`` and ``--names trec``: trec_eval's names of measures (``map``,
    ``P_10``), its spellings (``P.5,10``, ``official``) and its float32 scores."""
    from rankeval import Dialect

    from .trec_names import DIALECT_OPTIONS

    register(
        Dialect(
            "trec_eval",
            naming="trec",
            name_of=measure_name,
            expand=expand_measures,
            format="trec",
            options=DIALECT_OPTIONS,
            description="trec_eval 9.0.8: its measure names and spellings, scores read as float32",
        )
    )
