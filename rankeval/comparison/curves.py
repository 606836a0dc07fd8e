"""Parameter curves: each run's score as one parameter of a measure varies, from a measure-spec
template with one ``{v1,v2,...}`` group (``"hTBG@h={30s,1m,5m}"``, ``"nDCG@{5,10,20}"``).

May import: :mod:`rankeval.errors`, :mod:`rankeval.options` (types only);
:mod:`rankeval.engine.prepare`, :mod:`rankeval.engine.evaluation` and pandas lazily. Not
:mod:`rankeval.comparison.compare` (which re-exports these names); :mod:`rankeval.comparison.plots` draws the
curves.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rankeval.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from rankeval.engine.distributed import DaskOptions
    from rankeval.engine.prepare import Prepared
    from rankeval.measures.registry import Registry
    from rankeval.options import EvalOptions

__all__ = ["curve_labels", "curve_of", "expand_template", "parameter_curve"]

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


def curve_labels(template: str, parameter: str, help_text: str = "") -> dict[str, str]:
    """How a figure names the curve of *template*: the measure and the parameter varied.

    ``"nDCG@{5,10}"`` (varying the ``@`` parameter ``k``, "rank cutoff") gives the title and
    measure ``nDCG@k`` and the parameter ``rank cutoff k``; ``"hTBG@h={1m,1h}"`` (help
    "half-life of ...") gives the measure ``hTBG``, the parameter ``half-life h`` and the
    title ``hTBG, half-life h``; the other parameters of the template stay in the measure
    (``"RBP(p={0.5,0.8}, rel=2)"`` → ``RBP(rel=2), p``).

    Args:
        template: the curve's template (:func:`expand_template`).
        parameter: the name of the parameter varied.
        help_text: its help text; its first words, up to "of", "(" or a comma, describe the
            parameter when they are at most three words.

    Returns:
        ``{"title": ..., "measure_label": ..., "parameter_label": ...}``.
    """
    words = re.split(r" \(|[,;:]| of | for | per | to | in ", help_text, maxsplit=1)[0].strip()
    what = f"{words} {parameter}" if words and len(words.split()) <= 3 else parameter
    start, end = template.index("{"), template.index("}")
    named = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$", template[:start])
    if named is None:  # nDCG@{5,10}: the value after '@' becomes the parameter's name
        measure = (template[:start] + parameter + template[end + 1 :]).strip()
        return {"title": measure, "measure_label": measure, "parameter_label": what}
    measure = template[: named.start()].rstrip().removesuffix("@") + template[end + 1 :]
    for pattern, repl in ((r"\(\s*,\s*", "("), (r",\s*\)", ")"), (r",\s*,", ","), (r"\(\s*\)", "")):
        measure = re.sub(pattern, repl, measure)
    measure = measure.strip()
    return {"title": f"{measure}, {what}", "measure_label": measure, "parameter_label": what}


def parameter_curve(
    qrels: Any,
    runs: Any,
    template: str,
    *,
    options: EvalOptions | None = None,
    jobs: int | None = 1,
    engine: str | DaskOptions = "local",
    block_size: int | None = None,
    registry: Registry | None = None,
) -> pd.DataFrame:
    """Each run's score as one parameter of a measure varies (e.g. hTBG against its
    half-life, ``"hTBG@h={30s,1m,5m,30m,1h,3h}"``; see :func:`expand_template`):
    :meth:`rankeval.Evaluator.curve` in one call.

    Args:
        qrels: as for :func:`rankeval.evaluate`.
        runs: as for :func:`rankeval.evaluate`.
        template: a measure spec with one ``{v1,v2,...}`` group.
        options: the evaluation options (:class:`~rankeval.options.EvalOptions`).
        jobs: as for :func:`rankeval.evaluate`.
        engine: as for :func:`rankeval.evaluate`.
        block_size: as for :func:`rankeval.evaluate`.
        registry: measure registry.

    Returns:
        A DataFrame ``run, measure, parameter, label, x, value``: *x* is the parameter's
        value as a number (durations in seconds), or its position when it is not a number.
        Its ``attrs`` hold the ``template`` and how a figure names the curve
        (:func:`curve_labels`: ``title``, ``measure_label``, ``parameter_label``).
    """
    from rankeval.engine.prepare import prepare

    specs = expand_template(template)[2]
    prepared = prepare(qrels, specs, options, registry)
    return curve_of(prepared, runs, template, jobs=jobs, engine=engine, block_size=block_size)


def curve_of(
    prepared: Prepared,
    runs: Any,
    template: str,
    *,
    jobs: int | None = 1,
    engine: str | DaskOptions = "local",
    block_size: int | None = None,
) -> pd.DataFrame:
    """:func:`parameter_curve` on a :class:`~rankeval.engine.prepare.Prepared` evaluation: its
    qrels, options and registry, the measures of *template* (its own measures are not used).
    The runs are evaluated by the block engine (*jobs*, *engine*, *block_size*: as for
    :func:`rankeval.evaluate`), never read whole."""
    import pandas as pd

    from rankeval.engine.evaluation import evaluate_prepared

    param, labels, specs = expand_template(template)
    prepared = prepared.with_measures(specs)
    measures = list(prepared.measures)
    name = param or type(measures[0]).at or "value"
    xs = []
    for i, m in enumerate(measures):
        v = getattr(m, name, None)
        xs.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(i))
    frame = evaluate_prepared(prepared, runs, jobs=jobs, engine=engine, block_size=block_size).to_frame()
    frame = frame[frame["query_id"].isna()]  # the aggregate rows
    where = {str(m): i for i, m in enumerate(measures)}
    rows = [
        (run, measure, name, labels[where[measure]], xs[where[measure]], value)
        for run, measure, value in zip(frame["run"], frame["measure"], frame["value"], strict=True)
    ]
    out = pd.DataFrame(rows, columns=["run", "measure", "parameter", "label", "x", "value"])
    help_text = next((p.help for p in measures[0].params() if p.name == name), "")
    out.attrs.update(template=template, **curve_labels(template, name, help_text))
    return out
