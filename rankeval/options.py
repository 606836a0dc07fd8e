"""The options an evaluation shares (:class:`EvalOptions`) and those of a comparison's
statistics (:class:`CompareOptions`), with their choices, in one light module: the engines,
:class:`rankeval.Evaluator` and the CLI import them from here, and the CLI validates with the
library's own checks (each options object checks itself when it is made).

May import: :mod:`rankeval.errors` only (the CLI imports this module at start-up, so no numpy,
no pandas).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankeval.errors import UsageError

__all__ = [
    "CIS",
    "CORRECTIONS",
    "FAMILIES",
    "FORMATS",
    "MAX_INT",
    "MAX_SAMPLES",
    "MAX_SEED",
    "PAIRS",
    "PLOT_FORMATS",
    "SPREADS",
    "TESTS",
    "TIE_RULES",
    "CompareOptions",
    "EvalOptions",
    "check_choice",
    "check_samples",
    "check_seed",
]

MAX_INT = 2**31 - 1
#: the most resamples (or random orderings) a comparison draws
MAX_SAMPLES = 10_000_000
#: the largest seed of the random draws (numpy takes any non-negative integer; a seed is kept
#: in results, and fits a signed 64-bit column up to this)
MAX_SEED = 2**63 - 1

#: significance tests of :func:`rankeval.compare` (:mod:`rankeval.comparison.stats`)
TESTS = ("ttest", "wilcoxon", "bootstrap", "randomization")
#: corrections for multiple comparisons (:mod:`rankeval.comparison.stats`)
CORRECTIONS = ("none", "bonferroni", "holm", "bh")
#: which runs a comparison pairs
PAIRS = ("baseline", "all")
#: confidence intervals
CIS = ("t", "bootstrap")
#: what one family of comparisons is, for the correction
FAMILIES = ("measure", "all")
#: renderings of a comparison (:meth:`rankeval.Comparison.format`)
FORMATS = ("trec", "tsv", "csv", "json", "jsonl", "markdown", "latex")
#: the spread shown in paper tables
SPREADS = ("none", "std", "se")
#: file formats of the plots
PLOT_FORMATS = ("png", "pdf", "svg")
#: which ranking is scored when scores tie (docs/ties.md): trec_eval's rule (score descending,
#: then doc id descending), the file's order among equal scores, the tie-aware expected value
#: over all orders of each tied group (McSherry & Najork, ECIR 2008), and the best and worst
#: orders (the judged items of higher grade first, or last)
TIE_RULES = ("trec_eval", "given", "expected", "best", "worst")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """A :class:`~rankeval.errors.UsageError` ``unknown NAME 'value'; expected one of ...``
    if *value* is not one of *choices*."""
    if value not in choices:
        raise UsageError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")


def check_samples(samples: Any) -> None:
    """A :class:`~rankeval.errors.UsageError` unless *samples* is an integer from 1 to
    :data:`MAX_SAMPLES`."""
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"samples must be an integer from 1 to {MAX_SAMPLES:,}, not {samples!r}")


def check_seed(seed: Any, name: str = "seed", *, text: bool = False) -> int | None:
    """The seed of the random draws, checked where it is given: an integer from 0 to
    :data:`MAX_SEED`, or ``None`` (fresh draws each time); with *text*, the digits of a
    command-line option (*name*: ``--seed``), for which ``None`` is not a value.

    Raises:
        UsageError: anything else (a negative number, a bool, a float, a string), naming
            *name* and the accepted range.
    """
    value = seed
    if text and isinstance(seed, str) and re.fullmatch(r"[+-]?[0-9]+", seed.strip()):
        value = int(seed)
    if value is None and not text:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= MAX_SEED:
        none = "" if text else " (or None)"
        raise UsageError(f"{name} must be a whole number from 0 to {MAX_SEED}{none}, not {seed!r}")
    return int(value)


@dataclass(frozen=True)
class EvalOptions:
    """How runs are evaluated: the options of a :class:`rankeval.Evaluator` (and so of
    :func:`rankeval.evaluate`, :func:`rankeval.compare`, :func:`rankeval.random_baseline`,
    :func:`rankeval.parameter_curve` and :func:`rankeval.as_ir_measure`), which the engines share.
    Options are given only here: no function takes them one by one.

    Attributes:
        missing_zero: queries in the qrels that a run does not retrieve score 0 and count in
            the mean (trec_eval ``-c``, the ir_measures default); ``False`` averages over the
            queries both have.
        nest_sep: separator of nested item ids (``PARENT/CHILD``); ``None`` disables nesting.
        max_docs: evaluate only each query's top *max_docs* documents (trec_eval ``-M``).
        on_duplicate: a (query, doc) pair given twice in a run is an error (``"error"``, as
            trec_eval), or keeps its ``"first"`` line, or its ``"max"``-scoring line;
            ``None``: ``"error"``, or the rule of the *compat* mode.
        docinfo: one or more side files of item attributes (lines ``docno key=value ...``),
            for judged and unjudged items alike; the qrels lines win, then the files in the
            order given (:meth:`~rankeval.Qrels.with_docinfo`).
        compat: reproduce another tool's output with a mode a plugin adds
            (:func:`rankeval.report.formats.compat_modes`); ``None`` or ``"none"``: no mode. Only
            an evaluation applies it (:meth:`rankeval.Evaluator.evaluate`), not a comparison,
            a random baseline or :func:`rankeval.as_ir_measure`.
        judged_only: drop from each ranking the items the qrels do not judge for its query
            (any grade) before anything is computed: condensed lists, trec_eval ``-J``
            (:meth:`~rankeval.Run.judged_only`). The query still counts as retrieved.
        float32_scores: round every score to the nearest float32 first, as trec_eval 9 reads
            them (:meth:`~rankeval.Run.with_float32_scores`): scores that differ only beyond
            float32's precision then tie.
        ties: which ranking is scored when scores tie within a query (:data:`TIE_RULES`,
            docs/ties.md): ``"trec_eval"`` (default: doc id descending; an hTBG JSON run keeps
            its qrels order, as the hTBG reference), ``"given"`` (the run's line order),
            ``"expected"`` (the mean over all orders of each tied group, exact: measures
            without an exact method are refused), ``"best"`` / ``"worst"`` (the judged items
            of higher grade first / last, unjudged ones last / first).

    Raises:
        UsageError: *max_docs* is not ``None`` or an integer from 1 to 2**31 - 1; *nest_sep*
            is not ``None`` or a non-empty string without whitespace; *judged_only* or
            *float32_scores* is not a bool; *ties* is not one of :data:`TIE_RULES`.
    """

    missing_zero: bool = True
    nest_sep: str | None = "/"
    max_docs: int | None = None
    on_duplicate: str | None = None
    docinfo: str | Path | tuple[str | Path, ...] | None = None
    compat: str | None = None
    judged_only: bool = False
    float32_scores: bool = False
    ties: str = "trec_eval"

    def __post_init__(self) -> None:
        max_docs, nest_sep = self.max_docs, self.nest_sep
        check_choice("tie rule", self.ties, TIE_RULES)
        for flag in ("judged_only", "float32_scores"):
            if not isinstance(getattr(self, flag), bool):
                raise UsageError(f"{flag} must be True or False, not {getattr(self, flag)!r}")
        if isinstance(self.docinfo, (list, tuple)):  # several side files: a tuple, hashable
            object.__setattr__(self, "docinfo", tuple(self.docinfo) or None)
        if max_docs is not None and (
            isinstance(max_docs, bool)
            or not isinstance(max_docs, numbers.Integral)
            or not 1 <= int(max_docs) <= MAX_INT
        ):
            raise UsageError(f"max_docs must be an integer from 1 to {MAX_INT} (or None), not {max_docs!r}")
        if nest_sep is not None and (
            not isinstance(nest_sep, str)
            or not nest_sep
            or any(c.isspace() or not c.isprintable() for c in nest_sep)
        ):
            raise UsageError(
                f"nest_sep must be a non-empty string without whitespace (or None: no nesting), not {nest_sep!r}"
            )

    @property
    def duplicate_rule(self) -> str:
        """The rule for a (query, doc) pair given twice, without a compat mode: *on_duplicate*,
        else ``"error"``."""
        return self.on_duplicate or "error"

    @property
    def has_compat(self) -> bool:
        """Whether a compat mode is asked for."""
        return self.compat not in (None, "none")


@dataclass(frozen=True)
class CompareOptions:
    """The statistics of a comparison of runs (:meth:`rankeval.Evaluator.compare`,
    :func:`rankeval.compare`), checked when made.

    Attributes:
        baseline: name (or path) of the baseline run (default: the first run).
        pairs: ``"baseline"``: each run against the baseline; ``"all"``: every pair of runs.
        test: ``"ttest"`` (paired t-test), ``"wilcoxon"`` (signed-rank), ``"bootstrap"``
            (paired bootstrap) or ``"randomization"`` (Fisher's randomisation test); see
            :mod:`rankeval.comparison.stats`.
        correction: ``"none"``, ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg).
        family: the comparisons corrected together: those of each ``"measure"`` (default),
            or ``"all"`` of them.
        alpha: significance level (markers in tables, :attr:`rankeval.Comparison.significant`).
        samples: resamples of the bootstrap and randomisation tests and of bootstrap
            intervals; random orderings of the random baseline.
        seed: seed of :func:`numpy.random.default_rng` for all random draws (every comparison
            on the same queries uses the same resamples); ``None``: fresh draws.
        ci: confidence intervals: ``"t"`` (mean ± t·sd/√n) or ``"bootstrap"`` (percentile).
        random_baseline: add a run ``random``: the expected value of each measure under a
            uniformly random ordering of the baseline run's retrieved documents (a run name:
            of that run's documents); see :mod:`rankeval.engine.random_ranking`.

    Raises:
        UsageError: a choice not among :data:`PAIRS`, :data:`TESTS`, :data:`CORRECTIONS`,
            :data:`FAMILIES`, :data:`CIS`; *alpha* not between 0 and 1; *samples* not from 1
            to :data:`MAX_SAMPLES`; a bad *seed* (:func:`check_seed`).
    """

    baseline: str | None = None
    pairs: str = "baseline"
    test: str = "ttest"
    correction: str = "none"
    family: str = "measure"
    alpha: float = 0.05
    samples: int = 10_000
    seed: int | None = 0
    ci: str = "t"
    random_baseline: bool | str = False

    def __post_init__(self) -> None:
        check_choice("pairs", self.pairs, PAIRS)
        check_choice("test", self.test, TESTS)
        check_choice("correction", self.correction, CORRECTIONS)
        check_choice("family", self.family, FAMILIES)
        check_choice("ci", self.ci, CIS)
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
            raise UsageError(f"alpha must be between 0 and 1 (exclusive), not {alpha!r}")
        check_samples(self.samples)
        object.__setattr__(self, "alpha", float(alpha))
        object.__setattr__(self, "seed", check_seed(self.seed))
