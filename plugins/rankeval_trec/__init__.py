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

from rankeval import Measure, hookimpl

from .classic import AP, NDCG, RR, Bpref, Judged, NumRel, NumRelRet, NumRet, P, R, Rprec, Success
from .random import random_model

__all__ = [
    "AP",
    "MEASURES",
    "NDCG",
    "RR",
    "Bpref",
    "Judged",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "P",
    "R",
    "Rprec",
    "Success",
    "random_model",
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
)


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register the classic measures."""
    for cls in MEASURES:
        register(cls)
