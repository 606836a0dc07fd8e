"""rankeval: trec_eval-style, plugin-based evaluation of ranked retrieval.

Public API::

    import rankeval
    df = rankeval.evaluate("qrels.txt", "run.txt", ["AP", "nDCG@10"])
    cmp = rankeval.compare("qrels.txt", ["base.txt", "new.txt"], ["AP", "nDCG@10"], test="randomization")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankeval.errors import (
    EngineError,
    InputError,
    MeasureError,
    OutputError,
    PluginError,
    RankevalError,
    ResourceError,
    SpecError,
    UsageError,
)
from rankeval.hookspecs import hookimpl
from rankeval.measure import Domain, Duration, Measure, param
from rankeval.options import EvalOptions

__version__ = "0.1.0"

__all__ = [
    "Candidates",
    "Comparison",
    "CompatMode",
    "Domain",
    "Duration",
    "EngineError",
    "EvalOptions",
    "InputError",
    "Measure",
    "MeasureError",
    "OutputError",
    "OutputFormat",
    "PluginError",
    "Qrels",
    "RandomBaseline",
    "RandomModel",
    "RankedLists",
    "RankevalError",
    "ResourceError",
    "Run",
    "SpecError",
    "UsageError",
    "__version__",
    "compare",
    "evaluate",
    "hookimpl",
    "load_registry",
    "param",
    "parse_measure",
    "random_baseline",
    "segments",
]

if TYPE_CHECKING:
    from rankeval import segments
    from rankeval.comparison import Comparison, compare
    from rankeval.data import Qrels, Run
    from rankeval.engine import evaluate
    from rankeval.plugins import load_registry
    from rankeval.random_ranking import Candidates, RandomBaseline, RandomModel, random_baseline
    from rankeval.ranked import RankedLists
    from rankeval.report import CompatMode, OutputFormat


def parse_measure(spec: str) -> Measure:
    """Parse one measure spec with all installed plugins (``"nDCG@10"`` → measure)."""
    from rankeval.plugins import load_registry

    return load_registry().parse(spec)


def __getattr__(name: str) -> Any:
    # heavy modules (pandas, pyarrow) load on first use, so `rankeval --help` starts fast
    if name == "evaluate":
        from rankeval.engine import evaluate

        return evaluate
    if name in ("compare", "Comparison"):
        from rankeval import comparison

        return getattr(comparison, name)
    if name in ("random_baseline", "RandomBaseline", "RandomModel", "Candidates"):
        from rankeval import random_ranking

        return getattr(random_ranking, name)
    if name in ("Qrels", "Run"):
        from rankeval import data

        return getattr(data, name)
    if name in ("OutputFormat", "CompatMode"):  # what register_formats / register_compat_modes take
        from rankeval import report

        return getattr(report, name)
    if name == "RankedLists":  # the kernel toolkit: what a measure's compute receives
        from rankeval.ranked import RankedLists

        return RankedLists
    if name == "segments":  # a submodule: import_module, as `from rankeval import` would recurse here
        import importlib

        return importlib.import_module("rankeval.segments")
    if name == "load_registry":
        from rankeval.plugins import load_registry

        return load_registry
    raise AttributeError(f"module 'rankeval' has no attribute {name!r}")
