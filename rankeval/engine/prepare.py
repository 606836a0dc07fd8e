"""An evaluation's inputs, resolved once: :func:`prepare` gives a :class:`Prepared`.

Every entry point (:class:`rankeval.Evaluator` and the functions that wrap it, the CLI, the
comparison, the random baseline, parameter curves, :func:`rankeval.as_ir_measure`) starts here,
so that each of these steps happens in one place, in this order:

1. the measure registry (all installed plugins, unless one is given);
2. the dialect the options' ``compat`` asks for (:func:`compat_of`: the one look-up of a
   dialect), and its default options where the caller left a field at its default;
3. the measures, from specs in the dialect's names or from measure objects
   (:func:`resolve_measures`), then as the dialect computes them, and the duplicate rule;
4. each measure's plugin (named when its code fails);
5. the qrels, read once, with the options' side files (``docinfo``) applied
   (:meth:`Resolved.read_qrels`, the one place they are applied);
6. the options left for the engines: the duplicate rule resolved, no ``docinfo`` (applied) and
   no ``compat`` (applied to the measures).

May import: :mod:`rankeval.io`, :mod:`rankeval.measures`, :mod:`rankeval.extension`,
:mod:`rankeval.errors`, :mod:`rankeval.options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rankeval.errors import PluginError, SpecError, UsageError, plugin_guard, plugin_of
from rankeval.measures.base import Measure
from rankeval.options import TIE_RULES, EvalOptions

if TYPE_CHECKING:
    from rankeval.extension import Dialect
    from rankeval.io.data import Qrels
    from rankeval.measures.registry import Registry

__all__ = ["Prepared", "Resolved", "check_tie_rule", "compat_of", "prepare", "resolve", "resolve_measures"]

Measures = str | Measure | Iterable[str | Measure]
"""What an evaluation is asked to compute: a spec (``"AP nDCG@10"``), a measure object (rankeval's
or ir_measures'), or a list of them."""

_R = TypeVar("_R", bound="Resolved")


@dataclass(frozen=True)
class Resolved:
    """The measures and options of an evaluation, resolved (see the module docstring), before
    any qrels are read.

    Attributes:
        registry: the measure registry.
        measures: the measures asked for (results are named after them), without duplicates.
        computed: the measures as computed (the dialect applied), aligned with *measures*.
        plugins: the plugin of each of *computed* (named when its code fails).
        options: the options for the engines: the dialect's defaults applied,
            ``on_duplicate`` the rule in force, no ``docinfo`` and no ``compat``.
        docinfo: the side files of item attributes, applied by :meth:`read_qrels`.
        mode: ``(plugin, dialect)`` of the ``compat`` dialect, or ``None``.
    """

    registry: Registry
    measures: tuple[Measure, ...]
    computed: tuple[Measure, ...]
    plugins: tuple[str | None, ...]
    options: EvalOptions
    docinfo: str | Path | tuple[str | Path, ...] | None
    mode: tuple[str, Dialect] | None

    def read_qrels(self, qrels: Any) -> Qrels:
        """*qrels* in any form :func:`~rankeval.io.data.as_qrels` takes, with the side files
        of :attr:`docinfo` applied (:meth:`~rankeval.Qrels.with_docinfo`)."""
        from rankeval.io.data import as_qrels

        qrels_obj = as_qrels(qrels)
        return qrels_obj if self.docinfo is None else qrels_obj.with_docinfo(self.docinfo)

    def with_measures(self: _R, measures: Measures) -> _R:
        """The same registry, options and qrels with other *measures* (a parameter curve's)."""
        asked = resolve_measures(measures, self.registry, aliases=self.mode[1].aliases if self.mode else None)
        computed = _with_compat(asked, self.mode)
        check_tie_rule(computed, self.options, self.registry)
        return replace(
            self,
            measures=tuple(asked),
            computed=tuple(computed),
            plugins=tuple(self.registry.plugin_of(m) for m in computed),
        )

    def check_no_compat(self, what: str) -> None:
        """A :class:`~rankeval.errors.UsageError` if a dialect (``compat``) is in force, which
        only an evaluation applies (*what*: what does not apply one)."""
        if self.mode is not None:
            raise UsageError(
                f"{what} applies no compat mode (compat={self.mode[1].name!r}); rankeval.evaluate does"
            )

    def result_names(self) -> dict[str, str] | None:
        """``{spec: name}``: how the dialect names the measures in its results (CLEF's
        ``wss_95``), or ``None`` when they keep their specs."""
        if self.mode is None or self.mode[1].naming is None:
            return None
        return self.registry.measure_names(list(self.measures), self.mode[1].naming)


@dataclass(frozen=True)
class Prepared(Resolved):
    """A :class:`Resolved` evaluation and its qrels, read once, side files applied.

    Attributes:
        qrels: the qrels.
    """

    qrels: Qrels


def resolve(
    measures: Measures, options: EvalOptions | None = None, registry: Registry | None = None
) -> Resolved:
    """The measures and options of an evaluation, resolved (steps 1-4 and 6 of the module
    docstring); *registry*: default all installed plugins.

    Raises:
        UsageError: *options* is not an :class:`~rankeval.EvalOptions`; an unknown compat
            mode, or one that concerns none of the measures; no measures;
            :class:`~rankeval.errors.SpecError` for a spec that does not parse.
    """
    if options is None:
        options = EvalOptions()
    elif not isinstance(options, EvalOptions):
        raise UsageError(f"options must be a rankeval.EvalOptions, not {options!r}")
    from rankeval.measures.plugins import current_registry

    registry = current_registry(registry)
    mode = compat_of(options.compat, registry)
    asked = resolve_measures(measures, registry, aliases=mode[1].aliases if mode else None)
    computed = _with_compat(asked, mode)
    options = _with_defaults(options, mode)
    check_tie_rule(computed, options, registry)
    return Resolved(
        registry=registry,
        measures=tuple(asked),
        computed=tuple(computed),
        plugins=tuple(registry.plugin_of(m) for m in computed),
        options=replace(options, on_duplicate=options.duplicate_rule, compat=None, docinfo=None),
        docinfo=options.docinfo,
        mode=mode,
    )


def prepare(
    qrels: Any, measures: Measures, options: EvalOptions | None = None, registry: Registry | None = None
) -> Prepared:
    """Everything an evaluation of runs against *qrels* needs, resolved once (the steps of the
    module docstring). Raises as :func:`resolve`, and :class:`~rankeval.errors.InputError`
    for qrels or side files that cannot be read."""
    resolved = resolve(measures, options, registry)
    fields = {name: getattr(resolved, name) for name in Resolved.__dataclass_fields__}
    return Prepared(**fields, qrels=resolved.read_qrels(qrels))


def check_tie_rule(measures: Iterable[Measure], options: EvalOptions, registry: Registry) -> None:
    """A :class:`~rankeval.errors.UsageError` naming the measures that have no exact tie-aware
    value (:meth:`~rankeval.Measure.tie_aware`) when the tie rule is ``"expected"``."""
    if options.ties != "expected":
        return
    lacking = [m for m in measures if not m.tie_aware()]
    if lacking:
        names = ", ".join(f"{m} (plugin {registry.plugin_of(m) or plugin_of(m)})" for m in lacking)
        other = ", ".join(t for t in TIE_RULES if t != "expected")
        raise UsageError(
            f"--ties expected: no exact tie-aware value for {names}; these support the tie rules {other}"
        )


def compat_of(name: str | None, registry: Registry) -> tuple[str, Dialect] | None:
    """``(plugin, dialect)`` of the dialect named *name* (``EvalOptions.compat``;
    ``None``/``"none"``: ``None``), the one place an evaluation looks a dialect up; an unknown
    name is a :class:`~rankeval.errors.UsageError` listing the dialects."""
    return registry.dialect(name)


def _with_defaults(options: EvalOptions, mode: tuple[str, Dialect] | None) -> EvalOptions:
    """*options* with the dialect's default options (``{"on_duplicate": "first"}``) in each
    field the caller left at its default."""
    if mode is None or not mode[1].options:
        return options
    plain = EvalOptions()
    settable = set(EvalOptions.__dataclass_fields__) - {"compat", "docinfo"}
    unknown = sorted(set(mode[1].options) - settable)
    if unknown:
        raise PluginError(
            f"plugin {mode[0]} gives dialect {mode[1].name!r} the options {', '.join(unknown)}, "
            f"which a dialect cannot set; it sets fields of rankeval.EvalOptions: {', '.join(sorted(settable))}"
        )
    chosen = {k: v for k, v in mode[1].options.items() if getattr(options, k) == getattr(plain, k)}
    return replace(options, **chosen)


def resolve_measures(
    measures: Measures,
    registry: Registry | None = None,
    *,
    aliases: Mapping[str, str] | None = None,
) -> list[Measure]:
    """Measures from specs (``"AP nDCG@10"``, ``["AP", "P@5"]``), rankeval measure objects or
    ir_measures measure objects (``ir_measures.nDCG@10``, ``ir_measures.AP(rel=2)``), without
    duplicates, in the order given (*aliases*: a compat mode's names,
    :meth:`~rankeval.measures.registry.Registry.parse_many`).

    An ir_measures measure becomes the measure its printed name (``str(m)``, ir_measures'
    canonical spelling) names in the registry: rankeval's own measure where rankeval has it
    (``AP``, ``nDCG@10``), else the ir_measures bridge's (``ERR@10``), as the same spec
    written as a string would.

    Raises:
        UsageError: *measures* is none of these, or empty; :class:`~rankeval.errors.SpecError`
            for a spec (or an ir_measures measure's name) that does not parse.
    """
    items: Iterable[Any]
    if isinstance(measures, (str, Measure)) or _is_ir_measure(measures):
        items = [measures]
    elif isinstance(measures, Iterable):
        items = measures
    else:
        raise UsageError(
            f"measures must be a spec, a Measure, an ir_measures measure or a list of them, not {measures!r}"
        )
    out: list[Measure] = []
    for m in items:
        if isinstance(m, Measure):
            out.append(m)
            continue
        if not isinstance(m, str) and not _is_ir_measure(m):
            raise UsageError(
                f"not a measure: {m!r}; expected a spec string, a rankeval Measure or an ir_measures measure"
            )
        if registry is None:
            from rankeval.measures.plugins import current_registry

            registry = current_registry()
        out.extend(
            registry.parse_many(m, aliases=aliases)
            if isinstance(m, str)
            else [_from_ir_measures(m, registry)]
        )
    seen: set[str] = set()
    unique = []
    for m in out:
        if str(m) not in seen:
            seen.add(str(m))
            unique.append(m)
    if not unique:
        raise UsageError("no measures given")
    return unique


def _is_ir_measure(value: Any) -> bool:
    """Whether *value* is an ir_measures measure object (``ir_measures.nDCG@10``)."""
    import sys

    ir_measures = sys.modules.get("ir_measures")  # such an object implies ir_measures is loaded
    return ir_measures is not None and isinstance(value, ir_measures.Measure)


def _from_ir_measures(measure: Any, registry: Registry) -> Measure:
    """The registry's measure of an ir_measures measure's printed name."""
    text = str(measure)
    try:
        return registry.parse(text)
    except SpecError as exc:  # e.g. nDCG(dcg='exp-log2')@10: rankeval's nDCG has no dcg
        raise SpecError(
            f"ir_measures measure {text}: {exc.message}", source=exc.source, column=exc.column, text=exc.text
        ) from None


def _with_compat(measures: list[Measure], plugin_mode: tuple[str, Dialect] | None) -> list[Measure]:
    """The measures as computed in the dialect (``(plugin, dialect)`` of :func:`compat_of`, or
    ``None``); an error if it changes measures but none of these."""
    if plugin_mode is None or plugin_mode[1].apply is None:
        return measures
    plugin, mode = plugin_mode
    compat, apply = mode.name, plugin_mode[1].apply
    out: list[Measure] = []
    found = False
    for m in measures:
        try:
            with plugin_guard(plugin, f"applying compat {compat!r} to {m}"):
                applied = apply(m)
        except PluginError as exc:
            if isinstance(exc.__cause__, (ValueError, TypeError)):  # a parameter the measure refuses
                raise UsageError(f"compat {compat!r}: {m}: {exc.__cause__}") from None
            raise
        if applied is not None:
            if not isinstance(applied, Measure):
                raise PluginError(
                    f"plugin {plugin} applied compat {compat!r} to {m} as {applied!r}, not a Measure"
                )
            m, found = applied, True
        out.append(m)
    if not found:
        raise UsageError(
            f"compat {compat!r}: none of the measures {', '.join(map(str, measures))} has a compat mode"
        )
    return out
