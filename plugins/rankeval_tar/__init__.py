"""Thresholding recall and cost (CLEF eHealth TAR 2017-2019) as a rankeval plugin.

A TAR run ranks the candidate documents of a systematic review (a *topic*) and marks a
threshold: a reviewer screens the documents in the run's order and stops there. The measures
are those of the official evaluator (github CLEF-TAR/tar, ``scripts/tar_eval_2018.py``,
task 2), under the names it prints: what the screening costs (``norm_threshold``, the share
of the topic's documents screened) and what it finds (``recall_threshold``), plus the
ranking measures of the lab (``wss_95``, ``norm_area``, ``recall@P%``, ...).

How the run is read (the evaluator's rules, see ``docs/tar.md``):

* the ranking of a topic is its lines in **file order** (scores are ignored);
* column 2 is a threshold flag: ``1`` marks the threshold (the last ``1`` line is the last
  document screened), ``0`` (or ``Q0``) does not; runs of 2017 use interaction codes instead
  (``AF``/``NF`` screened, ``NS`` not shown): the threshold is then the last ``AF``/``NF`` line;
* lines of documents labelled 3 or more are dropped; a document not in the qrels counts as
  not relevant; a document repeated in a topic is an error unless ``--on-duplicate first``
  (the default with ``--compat clef``) keeps its first line, as the evaluator does;
* N is the number of judged documents of the topic, labels -1 and 3 or more excluded; R is the
  number labelled 1 or 2; topics with R = 0 are skipped (NaN, left out of the aggregate, and
  reported in a warning).

Every measure has a ``compat`` parameter. ``compat=none`` (the default) gives unrounded
values; ``compat=clef`` (set on all of them by ``--compat clef``) reproduces the evaluator's
output value for value: its per-topic rounding, its aggregate for each measure and its
printing. Estimated recall from sampled judgments (``R_est``, ``recall_threshold(est=ht|hh)``)
uses the Horvitz-Thompson or Hansen-Hurwitz estimator on qrels that carry ``pi=`` or ``p=``.

Everything is computed for all topics at once with numpy segment operations; the only loops
run over the distinct column-2 codes and the few values near a rounding tie.

The package: ``clef`` (the evaluator's rounding, output layout and compat mode), ``view`` (the
screening view of a run), ``estimators`` (recall from sampled judgments), ``base`` (what every
TAR measure shares), ``measures`` (the 18 measures); this module holds the hook
implementations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rankeval import Measure, hookimpl
from rankeval.errors import SpecError
from rankeval.spec import MeasureSpec, parse_spec

from .clef import clef_round, render_clef, with_clef
from .estimators import hansen_hurwitz, horvitz_thompson
from .measures import (
    MEASURES,
    WSS95,
    WSS100,
    LastRel,
    LossER,
    NormArea,
    NormLastRel,
    NormThreshold,
    NumDocs,
    NumRels,
    NumShown,
    RecallAt,
    RecallThreshold,
    Reliability,
    RelsFound,
    REst,
    TarAP,
    Threshold,
    TotalCost,
)
from .view import Screening, screening

if TYPE_CHECKING:
    from rankeval import CompatMode, OutputFormat

__all__ = [
    "MEASURES",
    "WSS95",
    "WSS100",
    "LastRel",
    "LossER",
    "NormArea",
    "NormLastRel",
    "NormThreshold",
    "NumDocs",
    "NumRels",
    "NumShown",
    "REst",
    "RecallAt",
    "RecallThreshold",
    "Reliability",
    "RelsFound",
    "Screening",
    "TarAP",
    "Threshold",
    "TotalCost",
    "clef_round",
    "hansen_hurwitz",
    "horvitz_thompson",
    "register_compat_modes",
    "register_formats",
    "register_measures",
    "render_clef",
    "resolve_measure",
    "screening",
    "with_clef",
]


@hookimpl
def register_measures(register: Callable[[type[Measure]], None]) -> None:
    """Register the CLEF TAR measures."""
    for cls in MEASURES:
        register(cls)


@hookimpl(tryfirst=True)
def resolve_measure(spec: str) -> Measure | None:
    """``recall@P%`` (the evaluator's name; ``recall`` alone is taken by trec_eval's
    ``recall.k``): a spec named ``recall`` whose ``@`` value is a percentage."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        return None
    if parsed.name != "recall" or parsed.at is None:
        return None
    key, value = parsed.at
    if key not in (None, "p") or value.kind != "number" or value.unit != "%":
        return None
    return RecallAt.from_spec(
        MeasureSpec(RecallAt.name, parsed.text, parsed.column, parsed.at, parsed.params)
    )


@hookimpl
def register_formats(register: Callable[[OutputFormat], None]) -> None:
    """``-f clef``: the CLEF TAR evaluator's output layout."""
    from rankeval import OutputFormat

    register(OutputFormat("clef", render_clef, "the CLEF TAR evaluator's layout (tar_eval_2018.py)"))


@hookimpl
def register_compat_modes(register: Callable[[CompatMode], None]) -> None:
    """``--compat clef``: the CLEF TAR evaluator's values, layout and duplicate rule."""
    from rankeval import CompatMode

    register(
        CompatMode(
            "clef",
            with_clef,
            format="clef",
            on_duplicate="first",
            description="the CLEF eHealth TAR evaluator (tar_eval_2018.py): its rounding, "
            "aggregates and output layout (TAR measures)",
        )
    )
