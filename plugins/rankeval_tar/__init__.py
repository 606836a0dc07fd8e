"""Thresholding recall and cost (CLEF eHealth TAR 2017-2019) as a rankeval plugin.

A TAR run ranks the candidate documents of a systematic review (a *topic*) and marks a
threshold: a reviewer screens the documents in the run's order and stops there. The measures
are those of the official evaluator (github CLEF-TAR/tar, ``scripts/tar_eval_2018.py``,
task 2): what the screening costs (``tar_norm_threshold``, the share of the topic's documents
screened) and what it finds (``tar_recall_threshold``), plus the ranking measures of the lab
(``tar_wss_95``, ``tar_norm_area``, ``tar_recall@P%``, ...).

Names: each is ``tar_`` and the name the evaluator prints, so that no TAR name is another
measure's (the evaluator's ``ap`` is not rankeval's ``AP``). Under ``--compat clef`` the
evaluator's own names are accepted and printed (:data:`CLEF_NAMES`, the ``clef`` naming
convention of the ``measure_name`` hook); elsewhere one of them is an error that says the
rankeval name.

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
from rankeval.spec import parse_spec

from .base import TarMeasure
from .clef import clef_round, render_clef, with_clef
from .estimators import hansen_hurwitz, horvitz_thompson
from .measures import (
    CLEF_NAMES,
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
    from rankeval import Dialect, OutputFormat

__all__ = [
    "CLEF_NAMES",
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
    "TarMeasure",
    "Threshold",
    "TotalCost",
    "clef_round",
    "hansen_hurwitz",
    "horvitz_thompson",
    "measure_name",
    "register_dialects",
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


#: :data:`CLEF_NAMES` by case-folded CLEF name
_FOLDED = {clef.casefold(): name for clef, name in CLEF_NAMES.items()}


@hookimpl(tryfirst=True)
def resolve_measure(spec: str) -> Measure | None:
    """No measure; but a spec named as one of the evaluator's measures, which the registry
    did not know (``wss_95``; ``ap`` is rankeval's ``AP``), is a spec error that says the
    rankeval name and ``--compat clef``."""
    try:
        parsed = parse_spec(spec)
    except SpecError:
        return None
    name = _FOLDED.get(parsed.name.casefold())
    if name is None:
        return None
    start = parsed.column - 1  # the spec as written, with rankeval's name
    written = parsed.text[:start] + name + parsed.text[start + len(parsed.name) :]
    raise parsed.error(
        f"unknown measure {parsed.name!r}; did you mean {written} (or --compat clef for CLEF's names)?"
    )


def measure_name(measure: Measure) -> str | None:
    """The evaluator's name of a TAR measure (``ap`` for ``tar_ap``) in the ``clef``
    naming (``--names clef``, and the output of ``--compat clef``)."""
    return measure.clef_spelling() if isinstance(measure, TarMeasure) else None


@hookimpl
def register_formats(register: Callable[[OutputFormat], None]) -> None:
    """``-f clef``: the CLEF TAR evaluator's output layout."""
    from rankeval import OutputFormat

    register(OutputFormat("clef", render_clef, "the CLEF TAR evaluator's layout (tar_eval_2018.py)"))


@hookimpl
def register_dialects(register: Callable[[Dialect], None]) -> None:
    """``--compat clef``: the CLEF TAR evaluator's values, names, layout and duplicate rule;
    ``--names clef``: its names only."""
    from rankeval import Dialect

    register(
        Dialect(
            "clef",
            apply=with_clef,
            naming="clef",
            name_of=measure_name,
            aliases=CLEF_NAMES,
            format="clef",
            options={"on_duplicate": "first"},
            description="the CLEF eHealth TAR evaluator (tar_eval_2018.py): its rounding, "
            "aggregates, measure names and output layout (TAR measures)",
        )
    )
