"""A third-party dialect, written as a plugin outside rankeval: ranx's names of measures.

It uses only the public contract (``rankeval.Dialect``, ``rankeval.hookimpl``) and gets the
same powers as the built-in ``trec_eval`` and ``clef`` dialects: ``--names ranx`` prints
ranx's names (``map``, ``ndcg@10``, ``precision@5``); ``--compat ranx`` also accepts them as
measure names, keeps the first of a document given twice and prints Markdown; ``ranx_all``
is one ``-m`` value that names a set of measures (in every mode, as ``official`` of trec_eval).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rankeval import Dialect, hookimpl

#: rankeval's measure name → ranx's metric name
RANX = {"AP": "map", "RR": "mrr", "nDCG": "ndcg", "P": "precision", "R": "recall", "Rprec": "r-precision"}


def ranx_name(measure: Any) -> str | None:
    """ranx's name of *measure* (``ndcg@10``), or ``None`` for one ranx does not have."""
    base = RANX.get(type(measure).name)
    if base is None:
        return None
    at = getattr(measure, "at", None)  # the class's cutoff parameter, if it has one
    k = getattr(measure, at, None) if isinstance(at, str) else None
    return f"{base}@{k}" if k is not None else base


def expand(text: str) -> list[str] | None:
    """``ranx_all``: the measures of ranx's README example, as rankeval specs."""
    return ["AP", "nDCG@10", "P@5", "RR"] if text == "ranx_all" else None


@hookimpl
def register_dialects(register: Callable[[Dialect], None]) -> None:
    register(
        Dialect(
            "ranx",
            naming="ranx",
            name_of=ranx_name,
            expand=expand,
            aliases={"ndcg": "nDCG", "precision": "P", "recall": "R", "mrr": "RR"},
            format="markdown",
            options={"on_duplicate": "first"},
            description="ranx's names of measures",
        )
    )
