"""rankeval: trec_eval-style, plugin-based evaluation of ranked retrieval.

Public API::

    import rankeval
    df = rankeval.evaluate("qrels.txt", "run.txt", ["AP", "nDCG@10"])
    cmp = rankeval.compare("qrels.txt", ["base.txt", "new.txt"], ["AP", "nDCG@10"], test="randomization")
    htbg = rankeval.as_ir_measure("hTBG@h=3h")  # for ir_measures.calc_aggregate, pt.Experiment
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
from rankeval.measures.base import Domain, Duration, Measure, param
from rankeval.measures.hookspecs import hookimpl
from rankeval.options import EvalOptions

__version__ = "0.1.0"

__all__ = [
    "Block",
    "Candidates",
    "Command",
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
    "Results",
    "Row",
    "Run",
    "Sampler",
    "SpecError",
    "UsageError",
    "__version__",
    "as_ir_measure",
    "compare",
    "evaluate",
    "evaluate_results",
    "hookimpl",
    "load_registry",
    "param",
    "parse_measure",
    "random_baseline",
    "segments",
]

if TYPE_CHECKING:
    from rankeval import segments
    from rankeval.comparison.compare import Comparison, compare
    from rankeval.engine.evaluation import Block, Results, evaluate, evaluate_results
    from rankeval.engine.random_ranking import (
        Candidates,
        RandomBaseline,
        RandomModel,
        Sampler,
        random_baseline,
    )
    from rankeval.interop import as_ir_measure
    from rankeval.io.data import Qrels, Run
    from rankeval.measures.plugins import load_registry
    from rankeval.ranking.ranked_lists import RankedLists
    from rankeval.report.formats import Command, CompatMode, OutputFormat, Row


def parse_measure(spec: str) -> Measure:
    """Parse one measure spec with all installed plugins (``"nDCG@10"`` → measure)."""
    from rankeval.measures.plugins import load_registry

    return load_registry().parse(spec)


def __getattr__(name: str) -> Any:
    # heavy modules (pandas, pyarrow) load on first use, so `rankeval --help` starts fast
    if name in ("evaluate", "evaluate_results", "Results", "Block"):
        from rankeval.engine import evaluation

        return getattr(evaluation, name)
    if name in ("compare", "Comparison"):
        from rankeval.comparison import compare as comparison

        return getattr(comparison, name)
    if name in ("random_baseline", "RandomBaseline", "RandomModel", "Candidates", "Sampler"):
        from rankeval.engine import random_ranking

        return getattr(random_ranking, name)
    if name in ("Qrels", "Run"):
        from rankeval.io import data

        return getattr(data, name)
    if name in ("OutputFormat", "CompatMode", "Row", "Command"):  # what register_formats / register_compat_modes take
        from rankeval.report import formats as report

        return getattr(report, name)
    if name == "RankedLists":  # the kernel toolkit: what a measure's compute receives
        from rankeval.ranking.ranked_lists import RankedLists

        return RankedLists
    if name == "segments":  # a submodule: import_module, as `from rankeval import` would recurse here
        import importlib

        return importlib.import_module("rankeval.segments")
    if name == "as_ir_measure":  # rankeval's measures in ir_measures and PyTerrier
        from rankeval.interop import as_ir_measure

        return as_ir_measure
    if name == "load_registry":
        from rankeval.measures.plugins import load_registry

        return load_registry
    raise AttributeError(f"module 'rankeval' has no attribute {name!r}")
