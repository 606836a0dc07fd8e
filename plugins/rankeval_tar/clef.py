"""The CLEF TAR evaluator's rules (``scripts/tar_eval_2018.py``, see ``docs/tar.md``).

What ``compat=clef`` and ``--compat clef`` reproduce, apart from the measures themselves: the
evaluator's rounding (:func:`clef_round`, :func:`print_rule`), its output layout
(:func:`render_clef`, ``-f clef``) and the compat mode that sets ``compat=clef`` on every TAR
measure (:func:`with_clef`). The hooks that register the format and the mode are in the
package's ``__init__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rankeval import Measure

if TYPE_CHECKING:
    from rankeval import Row

__all__ = ["CLEF", "COMPAT_HELP", "clef_round", "print_rule", "render_clef", "with_clef"]

CLEF = (
    "CLEF eHealth TAR 2017-2019 overviews (Kanoulas et al.); official evaluator github CLEF-TAR/tar, "
    "scripts/tar_eval_2018.py, task 2"
)
COMPAT_HELP = (
    "none = unrounded values; clef = the CLEF evaluator's per-topic rounding, aggregate and "
    "printing (set on every TAR measure by --compat clef)"
)


def clef_round(x: np.ndarray, ndigits: int) -> np.ndarray:
    """Python's ``round(x, ndigits)`` element-wise: the exact binary value rounded half to
    even, as the CLEF evaluator rounds. numpy's scaled rounding agrees except within a hair
    of a tie, where Python's own ``round`` decides (those few values only)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.round(x, ndigits)
    with np.errstate(invalid="ignore"):
        scaled = np.abs(x) * 10.0**ndigits
        near = np.isfinite(x) & (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
    if near.any():
        out[near] = [round(v, ndigits) for v in x[near].tolist()]
    return out


def print_rule(x: np.ndarray, rule: str) -> np.ndarray:
    """What the evaluator prints: ``eval`` rounds values below 1 to 3 decimals and the others
    to 0 (``EvalMeasure.print_scores``); ``gain`` rounds to 3 decimals; ``count`` prints as is."""
    if rule == "count":
        return x
    three = clef_round(x, 3)
    if rule == "gain":
        return three
    with np.errstate(invalid="ignore"):
        return np.where(x < 1, three, np.round(x))


def render_clef(rows: list[Row], precision: int | None) -> str:
    """The CLEF TAR evaluator's layout: ``topic<TAB>measure<TAB>value``, the aggregate as
    topic ``ALL``, numbers as Python prints them (*precision* ignored), per-topic values that
    are undefined left out; with several runs, each line starts with the run's name."""
    import math

    several = len({row.run for row in rows}) > 1
    lines = []
    for run, qid, m, v, is_int in rows:
        if qid is not None and math.isnan(v):
            continue  # a topic the measure skips: the CLEF evaluator prints nothing
        text = str(int(v)) if is_int and float(v).is_integer() else repr(float(v))
        row = f"{'ALL' if qid is None else qid}\t{m}\t{text}"
        lines.append(f"{run}\t{row}" if several else row)
    return "\n".join(lines) + ("\n" if lines else "")


def with_clef(measure: Measure) -> Measure | None:
    """*measure* with ``compat=clef`` if it has a ``compat`` parameter (every TAR measure)."""
    import dataclasses

    if not any(f.name == "compat" for f in dataclasses.fields(measure)):
        return None
    return dataclasses.replace(measure, compat="clef")  # type: ignore[call-arg]
