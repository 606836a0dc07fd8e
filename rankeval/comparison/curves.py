"""Parameter curves: each run's score as one parameter of a measure varies, from a measure-spec
template with one ``{v1,v2,...}`` group (``"hTBG@h={30s,1m,5m}"``, ``"nDCG@{5,10,20}"``).

May import: :mod:`rankeval.errors`, :mod:`rankeval.options` (types only); :mod:`rankeval.engine.evaluation`
and pandas lazily. Not
:mod:`rankeval.comparison.compare` (which re-exports these names); :mod:`rankeval.comparison.plots` draws the
curves.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rankeval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.measures.registry import Registry
    from rankeval.options import EvalOptions

__all__ = ["expand_template", "parameter_curve"]

_BRACES = re.compile(r"\{([^{}]*)\}")


def expand_template(template: str) -> tuple[str | None, list[str], list[str]]:
    """Expand a measure-spec template with one ``{v1,v2,...}`` group:
    ``"hTBG@h={1m,5m,1h}"`` → ``("h", ["1m", "5m", "1h"], ["hTBG@h=1m", "hTBG@h=5m",
    "hTBG@h=1h"])``. The parameter is the name before ``=`` in front of the braces, ``None``
    after a bare ``@`` (the measure's ``@`` parameter)."""
    groups = _BRACES.findall(template)
    if len(groups) != 1 or template.count("{") != 1 or template.count("}") != 1:
        raise UsageError(
            f"a curve template needs exactly one {{v1,v2,...}} group, e.g. 'nDCG@{{5,10,20}}', "
            f"not {template!r}"
        )
    values = [v.strip() for v in groups[0].split(",") if v.strip()]
    if not values:
        raise UsageError(f"no values in the curve template {template!r}")
    start = template.index("{")
    before = template[:start]
    match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$", before)
    param = match.group(1) if match else None
    if param is None and not before.rstrip().endswith("@"):
        raise UsageError(f"the {{...}} group of {template!r} must follow '@' or 'NAME='")
    specs = [before + v + template[template.index("}") + 1 :] for v in values]
    return param, values, specs


def parameter_curve(
    qrels: Any,
    runs: Any,
    template: str,
    *,
    options: EvalOptions | None = None,
    registry: Registry | None = None,
    **keywords: Any,
) -> pd.DataFrame:
    """Each run's score as one parameter of a measure varies (e.g. hTBG against its
    half-life, ``"hTBG@h={30s,1m,5m,30m,1h,3h}"``; see :func:`expand_template`).

    Args:
        qrels: as for :func:`rankeval.evaluate`.
        runs: as for :func:`rankeval.evaluate`.
        template: a measure spec with one ``{v1,v2,...}`` group.
        options: the evaluation options (:class:`~rankeval.options.EvalOptions`).
        registry: measure registry.
        keywords: further keyword arguments of :func:`rankeval.evaluate` (``engine=``, or
            the options one by one instead of *options*).

    Returns:
        A DataFrame ``run, measure, parameter, label, x, value``: *x* is the parameter's
        value as a number (durations in seconds), or its position when it is not a number.
    """
    import pandas as pd

    from rankeval.engine.evaluation import ALL, evaluate, resolve_measures

    param, labels, specs = expand_template(template)
    measures = [resolve_measures(s, registry)[0] for s in specs]
    name = param or type(measures[0]).at or "value"
    xs = []
    for i, m in enumerate(measures):
        v = getattr(m, name, None)
        xs.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(i))
    frame = evaluate(qrels, runs, measures, options=options, registry=registry, **keywords)
    frame = frame[frame["query_id"] == ALL]
    where = {str(m): i for i, m in enumerate(measures)}
    rows = [
        (run, measure, name, labels[where[measure]], xs[where[measure]], value)
        for run, measure, value in zip(frame["run"], frame["measure"], frame["value"], strict=True)
    ]
    out = pd.DataFrame(rows, columns=["run", "measure", "parameter", "label", "x", "value"])
    out.attrs["template"] = template
    return out
