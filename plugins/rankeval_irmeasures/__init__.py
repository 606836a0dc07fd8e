"""Any other measure ir_measures knows (ERR@10, RBP(p=0.8), infAP, ...), computed by ir_measures.

Registered through the ``resolve_measure`` hook: when a spec's name is not a registered
measure, this plugin asks ``ir_measures.parse_measure`` for it. Values come from ir_measures'
own providers on the top-level ranking, so they appear in the same output table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param
from rankeval.errors import SpecError

if TYPE_CHECKING:
    from rankeval.ranked import RankedLists


@dataclass(frozen=True)
class IrMeasure(Measure):
    """A measure computed by ir_measures; ``spec`` is its ir_measures spelling."""

    name: ClassVar[str] = "ir_measures"
    description: ClassVar[str] = "Any ir_measures measure, by its ir_measures name (ERR@10, RBP(p=0.8), ...)"
    source: ClassVar[str] = "ir_measures (github terrierteam/ir_measures) and its providers"

    spec: str = param("", "the measure in ir_measures syntax")

    def __str__(self) -> str:
        return self.spec

    def compute(self, data: RankedLists) -> np.ndarray:
        import ir_measures
        import pandas as pd
        import pyarrow as pa

        measure = ir_measures.parse_measure(self.spec)
        jq = data.judged_query()
        qrels = pd.DataFrame(
            {
                "query_id": data.query_ids[jq] if len(jq) else np.zeros(0, object),
                "doc_id": np.asarray(data.judged_doc_ids.to_pylist(), dtype=object),
                "relevance": data.judged_relevance.astype(np.int64),
            }
        )
        run = pd.DataFrame(
            {
                "query_id": data.query_ids[data.query] if len(data.query) else np.zeros(0, object),
                "doc_id": np.asarray(pa.array(data.doc_ids).to_pylist(), dtype=object),
                "score": data.score,
            }
        )
        out = np.zeros(data.num_queries)
        index = {q: i for i, q in enumerate(data.query_ids.tolist())}
        for metric in ir_measures.iter_calc([measure], qrels, run):
            i = index.get(metric.query_id)
            if i is not None:
                out[i] = float(metric.value)
        return out

    def aggregate(self, values: np.ndarray) -> float:
        return float(np.mean(values)) if len(values) else float("nan")


@hookimpl
def resolve_measure(spec: str) -> Any:
    """Wrap *spec* if ir_measures can parse it."""
    try:
        import ir_measures

        measure = ir_measures.parse_measure(spec)
    except Exception:
        return None
    try:  # known to ir_measures, but can an installed provider compute it?
        ir_measures.evaluator([measure], {})
    except ValueError as exc:
        raise SpecError(
            f"ir_measures knows {measure} but none of its installed providers computes it: "
            f"{' '.join(str(exc).split())}",
            source="measure spec",
            column=1,
            text=spec,
        ) from None
    return IrMeasure(spec=str(measure))
