"""The options an evaluation shares (:class:`EvalOptions`) and the choices of the comparison
options, in one light module: the engines, :func:`rankeval.compare`,
:func:`rankeval.random_baseline`, :func:`rankeval.parameter_curve` and the CLI import them from
here, and the CLI validates with the library's own checks.

May import: :mod:`rankeval.errors` only (the CLI imports this module at start-up, so no numpy,
no pandas).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, fields
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
    "EvalOptions",
    "check_choice",
    "check_compare_options",
    "check_no_compat",
    "check_samples",
    "check_seed",
    "eval_options",
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


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """A :class:`~rankeval.errors.UsageError` ``unknown NAME 'value'; expected one of ...``
    if *value* is not one of *choices*."""
    if value not in choices:
        raise UsageError(f"unknown {name} {value!r}; expected one of {', '.join(choices)}")


def check_compare_options(
    pairs: str, test: str, correction: str, family: str, ci: str, alpha: float, samples: int
) -> None:
    """A :class:`~rankeval.errors.UsageError` for an option of :func:`rankeval.compare` out of
    its domain."""
    check_choice("pairs", pairs, PAIRS)
    check_choice("test", test, TESTS)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("family", family, FAMILIES)
    check_choice("ci", ci, CIS)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1 (exclusive), not {alpha!r}")
    check_samples(samples)


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
    """How runs are evaluated: the options :func:`rankeval.evaluate`, :func:`rankeval.compare`,
    :func:`rankeval.random_baseline`, :func:`rankeval.parameter_curve` and the engines share.

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
            :func:`rankeval.evaluate` applies it.
        judged_only: drop from each ranking the items the qrels do not judge for its query
            (any grade) before anything is computed: condensed lists, trec_eval ``-J``
            (:meth:`~rankeval.Run.judged_only`). The query still counts as retrieved.
        float32_scores: round every score to the nearest float32 first, as trec_eval 9 reads
            them (:meth:`~rankeval.Run.with_float32_scores`): scores that differ only beyond
            float32's precision then tie.

    Raises:
        UsageError: *max_docs* is not ``None`` or an integer from 1 to 2**31 - 1; *nest_sep*
            is not ``None`` or a non-empty string without whitespace; *judged_only* or
            *float32_scores* is not a bool.
    """

    missing_zero: bool = True
    nest_sep: str | None = "/"
    max_docs: int | None = None
    on_duplicate: str | None = None
    docinfo: str | Path | tuple[str | Path, ...] | None = None
    compat: str | None = None
    judged_only: bool = False
    float32_scores: bool = False

    def __post_init__(self) -> None:
        max_docs, nest_sep = self.max_docs, self.nest_sep
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


_DEFAULTS = EvalOptions()


def check_no_compat(options: EvalOptions, what: str) -> None:
    """A :class:`~rankeval.errors.UsageError` if *options* ask for a compat mode, which only
    :func:`rankeval.evaluate` applies (*what*: the function that does not)."""
    if options.has_compat:
        raise UsageError(f"{what} applies no compat mode (compat={options.compat!r}); rankeval.evaluate does")


def eval_options(options: EvalOptions | None = None, **keywords: Any) -> EvalOptions:
    """The options of a call that takes ``options=`` beside the keyword arguments of its
    fields: *options*, or one built from *keywords* (``missing_zero=``, ``nest_sep=``, ...).

    Raises:
        UsageError: *options* is not an :class:`EvalOptions`, or a keyword argument other than
            its default is given with it (set it in the :class:`EvalOptions`).
    """
    if options is None:
        return EvalOptions(**keywords)
    if not isinstance(options, EvalOptions):
        raise UsageError(f"options must be a rankeval.EvalOptions, not {options!r}")
    names = {f.name for f in fields(EvalOptions)}
    given = [k for k, v in keywords.items() if k in names and v != getattr(_DEFAULTS, k)]
    if given:
        raise UsageError(
            f"{', '.join(given)} given with options=; set {'it' if len(given) == 1 else 'them'} in the EvalOptions"
        )
    return options
