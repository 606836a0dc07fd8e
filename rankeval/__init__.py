"""rankeval: trec_eval-style, plugin-based evaluation of ranked retrieval.

Public API::

    import rankeval
    df = rankeval.evaluate("qrels.txt", "run.txt", ["AP", "nDCG@10"])
    ev = rankeval.Evaluator("qrels.txt", ["AP", "nDCG@10"], options=rankeval.EvalOptions(max_docs=100))
    cmp = ev.compare(["base.txt", "new.txt"], stats=rankeval.CompareOptions(test="randomization"))
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
    TieWarning,
    UsageError,
)
from rankeval.extension import (
    Candidates,
    Command,
    Dialect,
    Domain,
    OutputFormat,
    RandomModel,
    Row,
    Sampler,
    hookimpl,
)
from rankeval.measures.base import Duration, Measure, param
from rankeval.options import CompareOptions, EvalOptions

__version__ = "0.1.0"

__all__ = [
    "Block",
    "Candidates",
    "Command",
    "CompareOptions",
    "Comparison",
    "Dialect",
    "Domain",
    "Duration",
    "EngineError",
    "EvalOptions",
    "Evaluator",
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
    "TieWarning",
    "UsageError",
    "__version__",
    "as_ir_measure",
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
    from rankeval.comparison.compare import Comparison
    from rankeval.engine.evaluation import Block, Results
    from rankeval.engine.random_ranking import RandomBaseline
    from rankeval.evaluator import Evaluator, compare, evaluate, random_baseline
    from rankeval.interop import as_ir_measure
    from rankeval.io.data import Qrels, Run
    from rankeval.measures.plugins import load_registry
    from rankeval.ranking.ranked_lists import RankedLists


def parse_measure(spec: str) -> Measure:
    """Parse one measure spec with all installed plugins (``"nDCG@10"`` → measure)."""
    from rankeval.measures.plugins import current_registry

    return current_registry().parse(spec)


def __getattr__(name: str) -> Any:
    # heavy modules (pandas, pyarrow) load on first use, so `rankeval --help` starts fast
    if name in ("Evaluator", "evaluate", "compare", "random_baseline"):  # the evaluator object
        from rankeval import evaluator

        return getattr(evaluator, name)
    if name in ("Results", "Block"):
        from rankeval.engine import evaluation

        return getattr(evaluation, name)
    if name == "Comparison":
        from rankeval.comparison import compare as comparison

        return getattr(comparison, name)
    if name == "RandomBaseline":
        from rankeval.engine import random_ranking

        return getattr(random_ranking, name)
    if name in ("Qrels", "Run"):
        from rankeval.io import data

        return getattr(data, name)
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
