"""The measure registry: names and aliases → measure classes; specs → measures.

Names are case-insensitive: no two measure classes share a name, an alias or a trec_eval
prefix that differ only by case (:meth:`Registry.add` refuses it), so ``ap``, ``AP`` and
``map`` all mean average precision. A name is looked up exactly first, then
case-insensitively; only a name the registry does not know at all reaches the
``resolve_measure`` hooks (the ir_measures bridge). A compat mode may bring names of its own
(``aliases=`` of :meth:`Registry.parse_many`: CLEF's ``ap`` under ``--compat clef``), which
come before all others.

The registry also remembers which plugin provides each measure class (registered by its
``register_measures`` hook, or returned by its ``resolve_measure`` hook), so that an error in
a measure's own code can name the plugin (:meth:`Registry.plugin_of`). Every call into a
plugin's code here -- ``register_measures``, ``resolve_measure``, building a measure from a
spec -- is guarded: its exceptions become a recorded failure or a
:class:`~rankeval.errors.PluginError` naming the plugin, never a traceback.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rankeval.errors import (
    PluginError,
    RankevalError,
    SpecError,
    UsageError,
    clip,
    fault,
    measure_guard,
    plugin_guard,
)
from rankeval.errors import plugin_of as module_plugin
from rankeval.extension import Command, Dialect, OutputFormat, RandomModel
from rankeval.measures.base import Measure
from rankeval.options import FORMATS
from rankeval.spec import MeasureSpec, Value, parse_specs

if TYPE_CHECKING:
    import pluggy

__all__ = ["PLUGIN_FAULTS", "MeasureEntry", "Registry"]

_CUT_NAME = re.compile(r"^(?P<base>.+?)[._](?P<k>\d+)$")
_DOTTED = re.compile(r"^(?P<name>[A-Za-z0-9_]+)(\.[^\s()@]*)?$")  # a dialect's NAME[.PARAMS]

PLUGIN_FAULTS = (Exception, SystemExit, KeyboardInterrupt)
"""What a plugin's own code may raise while it is imported or registers its measures and still
count as a broken plugin rather than end rankeval: ``sys.exit()`` or a stray
``KeyboardInterrupt`` in a module body is the plugin's fault."""


#: what a command-line naming of measures is called when no dialect names them: their specs
SPEC_NAMING = "rankeval"
#: the ``--compat`` value of no dialect
NO_DIALECT = "none"
#: the sub-commands of rankeval itself, which no plugin may take
BUILTIN_COMMANDS = ("evaluate", "measures", "plugins", "convert", "compare", "ties", "meta")

#: per ``register_*`` hook of items: the type it registers and the names rankeval keeps
_KINDS: dict[str, tuple[type, tuple[str, ...]]] = {
    "register_formats": (OutputFormat, FORMATS),
    "register_dialects": (Dialect, (NO_DIALECT,)),
    "register_commands": (Command, BUILTIN_COMMANDS),
}


@dataclass(frozen=True)
class MeasureEntry:
    """A registered measure class and the plugin that provides it."""

    cls: type[Measure]
    plugin: str


def _check_declaration(cls: type[Measure]) -> None:
    """Refuse the two silent mistakes of a measure declaration: a class that is not itself a
    frozen dataclass (its own annotated parameters would be ignored), and a class variable
    annotated without ``ClassVar`` (it would become a parameter).

    Raises:
        TypeError: naming the class and the fix (``collect`` reports it as a broken plugin).
    """
    params = cls.__dict__.get("__dataclass_params__")
    if params is None or not params.frozen:
        raise TypeError(
            f"measure class {cls.__name__} must be decorated with @dataclass(frozen=True) itself "
            "(its parameters are dataclass fields)"
        )
    # the base class's public attributes: class variables (name, at, ...) and methods
    class_vars = {name for name in vars(Measure) if not name.startswith("_")}
    common = {f.name for f in dataclasses.fields(Measure)}  # every measure's (judged_only)
    for f in dataclasses.fields(cls):
        if f.name in class_vars - common:
            raise TypeError(
                f"measure class {cls.__name__}: {f.name!r} became a parameter; annotate it "
                f"ClassVar (e.g. {f.name}: ClassVar[str] = ...)"
            )


class Registry:
    """Measure classes by name, filled by plugins through ``register_measures``.

    Build one with :func:`rankeval.measures.plugins.load_registry`.

    Attributes:
        measures: registered measure classes by name.
        plugins: loaded plugins by name, each with where it came from (``built-in``,
            ``entry point``, ``--plugin``).
        failures: plugins that failed to load or register, each with the reason.
        autoload: whether plugins of the ``rankeval`` entry-point group were loaded (off with
            ``RANKEVAL_DISABLE_PLUGIN_AUTOLOAD=1``).
    """

    def __init__(self, pm: pluggy.PluginManager | None = None) -> None:
        self.pm = pm
        self.measures: dict[str, MeasureEntry] = {}
        self.aliases: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.prefixes: dict[str, str] = {}
        # every name, alias and prefix case-folded → (class name, the spelling registered)
        self._folded: dict[str, tuple[str, str]] = {}
        self.plugins: dict[str, str] = {}
        self.failures: dict[str, str] = {}
        self.autoload = True
        # measure classes returned by resolve_measure hooks, with the plugin that returned them
        self._resolved: dict[type[Measure], str] = {}
        # what register_formats, register_dialects and register_commands gave, by name, each
        # with its plugin (or the error of a hook that failed, raised where it is used)
        self._items: dict[str, dict[str, tuple[str, Any]] | RankevalError] = {}
        # the random_model hook's answer for each measure asked about
        self._random: dict[Measure, tuple[str | None, RandomModel | None]] = {}

    # -- the other register_* hooks: called once, in load_registry -------------------
    def collect_items(self, hook: str, impls: list[tuple[str, Callable[..., Any]]]) -> None:
        """Run every plugin's *hook* (``register_formats``, ``register_dialects`` or
        ``register_commands``; *impls*: ``(plugin, function)``, built-in plugins first) and
        keep what they register. A name registered twice, or taken by rankeval itself, or a
        hook that fails or registers something else, is a :class:`PluginError` naming the
        plugin, raised where the items are used (:meth:`items`)."""
        kind, taken = _KINDS[hook]
        found: dict[str, tuple[str, Any]] = {}
        owner = dict.fromkeys(taken, "rankeval")
        try:
            for plugin, function in impls:

                def register(item: Any, plugin: str = plugin) -> None:
                    if not isinstance(item, kind):
                        raise TypeError(f"registered {item!r}, which is not a {kind.__name__}")
                    item = cast(Any, item)
                    key = item.name if item.name is not None else f"<{plugin}>"
                    if key in owner:
                        raise PluginError(
                            f"{kind.__name__} {item.name!r} is registered by both {owner[key]} and plugin {plugin!r}"
                        )
                    owner[key] = f"plugin {plugin!r}"
                    found[key] = (plugin, item)

                with plugin_guard(plugin, hook):
                    function(register=register)
        except RankevalError as exc:  # a PluginError, or the plugin's own usage error
            self._items[hook] = exc
            return
        self._items[hook] = found

    def items(self, hook: str) -> dict[str, tuple[str, Any]]:
        """``{name: (plugin, item)}`` of what *hook* registered (:meth:`collect_items`)."""
        got = self._items.get(hook, {})
        if isinstance(got, RankevalError):
            raise got
        return got

    @property
    def formats(self) -> dict[str, tuple[str, OutputFormat]]:
        """``{name: (plugin, format)}`` of every output format plugins add."""
        return self.items("register_formats")

    @property
    def dialects(self) -> dict[str, tuple[str, Dialect]]:
        """``{name: (plugin, dialect)}`` of every dialect plugins add (one that only names
        measures is keyed ``<plugin>``)."""
        return self.items("register_dialects")

    @property
    def commands(self) -> dict[str, tuple[str, Command]]:
        """``{name: (plugin, command)}`` of every sub-command plugins add."""
        return self.items("register_commands")

    def output_formats(self) -> list[str]:
        """The names of every output format: the built-in :data:`~rankeval.options.FORMATS`,
        then those plugins add."""
        return [*FORMATS, *self.formats]

    def compat_names(self) -> list[str]:
        """The values of ``--compat``: ``none``, then the dialects plugins add."""
        return [NO_DIALECT, *(name for name, (_, d) in self.dialects.items() if d.name is not None)]

    def dialect(self, name: str | None) -> tuple[str, Dialect] | None:
        """``(plugin, dialect)`` of ``--compat`` *name*, or ``None`` for ``None`` and
        ``"none"``; an unknown name is a :class:`~rankeval.errors.UsageError` listing them."""
        if name is None or name == NO_DIALECT:
            return None
        found = self.dialects.get(name)
        if found is None or found[1].name is None:
            raise UsageError(f"unknown compat {name!r}; expected one of {', '.join(self.compat_names())}")
        return found

    def random_model(self, measure: Measure) -> tuple[str | None, RandomModel | None]:
        """``(plugin, model)``: the first :class:`~rankeval.extension.RandomModel` a
        ``random_model`` hook returns for *measure* (``--plugin`` plugins are asked first), or
        ``(None, None)``; asked once per measure. Only measures of nesting level 1 have one:
        the candidates are the run's top-level items."""
        if measure in self._random:
            return self._random[measure]
        with measure_guard(measure, "failed", self.plugin_of(measure)):
            level = measure.view_level()
        found: tuple[str | None, RandomModel | None] = (None, None)
        impls = self.pm.hook.random_model.get_hookimpls() if self.pm is not None and level == 1 else []
        for impl in reversed(impls):
            with plugin_guard(impl.plugin_name, f"giving the random model of {measure}"):
                model = impl.function(measure=measure)
            if model is None:
                continue
            if not isinstance(model, RandomModel):
                raise PluginError(
                    f"plugin {impl.plugin_name} returned {type(model).__name__} as the random model of "
                    f"{measure}, not a rankeval.RandomModel"
                )
            found = (impl.plugin_name, model)
            break
        self._random[measure] = found
        return found

    def namings(self) -> list[str]:
        """The values of ``--names``: ``rankeval`` (the specs), then each dialect's naming."""
        return [SPEC_NAMING, *(d.naming for _, d in self.dialects.values() if d.naming is not None)]

    def measure_names(self, measures: list[Measure], naming: str) -> dict[str, str]:
        """``{str(measure): name}``: each measure's name in the dialect whose naming is
        *naming* (``--names``), or its spec when the dialect does not name it."""
        out = {str(m): str(m) for m in measures}
        for plugin, dialect in self.dialects.values():
            if dialect.naming != naming or dialect.name_of is None:
                continue
            for m in measures:
                with plugin_guard(plugin, f"naming measure {m} in {naming!r}"):
                    found = dialect.name_of(m)
                if found is not None:
                    out[str(m)] = str(found)
        return out

    # -- filling ---------------------------------------------------------------------
    def collect(self, plugin: str, hook: Callable[..., Any]) -> None:
        """Run one plugin's ``register_measures`` hook, isolating its failures."""
        added: list[str] = []

        def register(cls: type[Measure]) -> None:
            self.add(cls, plugin)
            added.append(cls.name)

        try:
            hook(register=register)
        except PluginError:
            raise
        except PLUGIN_FAULTS as exc:
            for name in added:
                self.remove(name)
            self.plugins.pop(plugin, None)
            self.failures[plugin] = f"register_measures failed: {fault(exc)}"

    def add(self, cls: type[Measure], plugin: str) -> None:
        """Register *cls* as provided by *plugin*.

        Raises:
            PluginError: if the name, an alias or a prefix is already taken by another class,
                also when they differ only by case, naming both plugins.
        """
        if not (isinstance(cls, type) and issubclass(cls, Measure)) or not cls.name:
            # a broken plugin, not a conflict: collect() records it and carries on
            raise TypeError(f"registered {cls!r}, which is not a named Measure subclass")
        _check_declaration(cls)
        names = (cls.name, *cls.aliases, *cls.cut_prefixes)
        for name in names:
            taken = self._folded.get(name.casefold())
            if taken is not None:
                owner = self.measures[taken[0]].plugin
                spelled = "" if taken[1] == name else f" (as {taken[1]!r}: names are case-insensitive)"
                raise PluginError(
                    f"measure name {name!r} is registered by both plugin {owner!r}{spelled} and plugin {plugin!r}"
                )
        self.measures[cls.name] = MeasureEntry(cls, plugin)
        for alias, fixed in cls.aliases.items():
            self.aliases[alias] = (cls.name, fixed)
        for prefix in cls.cut_prefixes:
            self.prefixes[prefix] = cls.name
        for name in names:  # the class's own names may differ by case (AP, map, MAP)
            self._folded.setdefault(name.casefold(), (cls.name, name))

    def remove(self, name: str) -> None:
        """Forget measure *name* and its aliases."""
        self.measures.pop(name, None)
        self.aliases = {a: v for a, v in self.aliases.items() if v[0] != name}
        self.prefixes = {p: v for p, v in self.prefixes.items() if v != name}
        self._folded = {k: v for k, v in self._folded.items() if v[0] != name}

    # -- lookup ----------------------------------------------------------------------
    def plugin_of(self, measure: Measure) -> str:
        """Name of the plugin that provides *measure* (as ``rankeval plugins`` lists it): the
        plugin that registered its class or whose ``resolve_measure`` hook returned it; for a
        class this registry does not know, the top-level package that defines it."""
        cls = type(measure)
        entry = self.measures.get(getattr(cls, "name", ""))
        if entry is not None and entry.cls is cls:
            return entry.plugin
        return self._resolved.get(cls) or module_plugin(measure)

    def __iter__(self) -> Iterator[MeasureEntry]:
        return iter(sorted(self.measures.values(), key=lambda e: e.cls.name.lower()))

    def parse(self, text: str, *, aliases: Mapping[str, str] | None = None) -> Measure:
        """Parse one spec into a measure (``"nDCG@10"``, ``"AP(rel=2)"``, ``"P.5"``); *aliases*
        as for :meth:`parse_many`."""
        if not isinstance(text, str):
            raise SpecError(f"a measure spec is a string, not {type(text).__name__}", source="measure spec")
        measures = self.parse_many(text, aliases=aliases)
        if len(measures) != 1:
            raise SpecError(
                f"expected one measure spec, found {len(measures)}", source="measure spec", text=text
            )
        return measures[0]

    def parse_many(
        self,
        text: str,
        defaults: Mapping[str, Any] | None = None,
        *,
        aliases: Mapping[str, str] | None = None,
    ) -> list[Measure]:
        """Parse whitespace-separated specs (``"AP nDCG@10 P@5"``), or one spelling that an
        ``expand_measures`` hook turns into several measures (trec_eval's ``P.5,10``,
        ``ndcg_cut``, ``official``: :meth:`expand`). *defaults* replace the class defaults of
        the parameters a spec does not set (``{"rel": 2}`` for trec_eval's ``-l 2``).
        *aliases* are the names of a compat mode (:attr:`CompatMode.aliases
        <rankeval.report.formats.CompatMode.aliases>`, ``{"ap": "tar_ap"}``): spelled exactly
        so, they mean the measure they map to, before any other name."""
        expanded = self.expand(text, aliases)
        if expanded is not None:
            return [_with_defaults(m, defaults) for m in expanded]
        return [self.resolve(spec, defaults, aliases) for spec in parse_specs(text)]

    def expand(self, text: str, aliases: Mapping[str, str] | None = None) -> list[Measure] | None:
        """The measures an ``expand_measures`` hook gives for *text*, if *text* is one token in
        trec_eval's form (``name[.params]``, no ``@`` or parentheses) that is not a registered
        name here (spelled exactly so) or one of *aliases*, or that has a parameter list
        (``P.5,10``); else ``None``."""
        token = text.strip()
        m = _DOTTED.match(token)
        if m is None:
            return None
        name = m.group("name")
        if "," not in token and (name in self.measures or name in self.aliases or name in (aliases or {})):
            return None
        for plugin, dialect in reversed(list(self.dialects.values())):
            if dialect.expand is None:
                continue
            with plugin_guard(plugin, f"expanding measure spec {token!r}"):
                found = dialect.expand(token)
            if found is not None:
                measures = [self._spelled(f, plugin, token) for f in found] if isinstance(found, (list, tuple)) else [None]
                if not measures:  # a name for no measure: the user's spec, not a plugin fault
                    raise SpecError(f"{token!r} names no measure that can be computed here", source="measure spec")
                if None in measures:
                    raise PluginError(f"plugin {plugin} expanded {token!r} to {clip(repr(found))}, not a list of measures")
                return [m for m in measures if m is not None]
        return None

    def resolve(
        self,
        spec: MeasureSpec,
        defaults: Mapping[str, Any] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> Measure:
        """Turn a parsed spec into a measure: the compat mode's *aliases*, then names and
        aliases (exactly, then case-insensitively), then trec_eval ``name.N`` forms, then the
        ``resolve_measure`` hooks (ir_measures). An unknown name is an error suggesting the
        close names, each as the spec written with that name, if that spec works."""
        found = self._find(spec, defaults, aliases)
        if found is not None:
            return found
        name = (aliases or {}).get(spec.name, spec.name)
        close = difflib.get_close_matches(name.casefold(), list(self._folded), n=3, cutoff=0.6)
        names = [self._folded[c][1] for c in close]
        start = spec.column - 1
        written = [spec.text[:start] + n + spec.text[start + len(spec.name) :] for n in names]
        # the spec as written with a close name; else the close names alone; only those that work
        working = [t for t in written if self._works(t, defaults, aliases)]
        working = working or [n for n in names if self._works(n, defaults, aliases)]
        hint = f"; did you mean {', '.join(working)}?" if working else "; `rankeval measures` lists them"
        raise spec.error(f"unknown measure {name!r}{hint}")

    def _works(
        self, text: str, defaults: Mapping[str, Any] | None, aliases: Mapping[str, str] | None
    ) -> bool:
        """Whether spec *text* names a measure (a suggestion is printed only if it does)."""
        try:
            return all(self._find(s, defaults, aliases) is not None for s in parse_specs(text))
        except RankevalError:
            return False

    def _find(
        self,
        spec: MeasureSpec,
        defaults: Mapping[str, Any] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> Measure | None:
        """:meth:`resolve`, but ``None`` for a name nothing knows."""
        name = (aliases or {}).get(spec.name, spec.name)
        meant = self._meaning(name, spec)
        if meant is not None:
            return self._build(meant[0], spec, meant[1], defaults)
        m = _CUT_NAME.match(name)
        prefix = self._prefix(m.group("base")) if m else None
        if m and prefix is not None:
            if spec.at is not None:
                raise spec.error(f"{name!r} already has a cutoff; drop the '@' part")
            entry = self.measures[prefix]
            cut = Value("number", m.group("k"), spec.column + m.start("k"), float(m.group("k")))
            return self._build(
                entry, MeasureSpec(entry.cls.name, spec.text, spec.column, (None, cut), spec.params), None, defaults
            )
        return self._ask_resolvers(spec.text)

    def _meaning(self, name: str, spec: MeasureSpec) -> tuple[MeasureEntry, Mapping[str, Any] | None] | None:
        """The class *name* means and the parameters its alias fixes: an exact name or alias,
        else the ones equal to *name* case-insensitively (``ap``, ``Ndcg``); ``None`` if none.
        Raises a spec error if those are aliases of one class fixing different parameters."""
        if name in self.measures:
            return self.measures[name], None
        if name in self.aliases:
            target, fixed = self.aliases[name]
            return self.measures[target], fixed
        folded = name.casefold()
        if folded not in self._folded:
            return None
        meanings: dict[tuple[str, str], str] = {}
        for known in (*self.measures, *self.aliases):
            if known.casefold() == folded:
                target, fixed = self.aliases.get(known, (known, {}))
                meanings.setdefault((target, repr(sorted(fixed.items()))), known)
        if len(meanings) > 1:
            raise spec.error(f"measure name {name!r} is ambiguous: {', '.join(meanings.values())}; write one of them")
        return self._meaning(next(iter(meanings.values())), spec) if meanings else None

    def _prefix(self, base: str) -> str | None:
        """The class whose trec_eval prefix is *base*, exactly or case-insensitively."""
        if base in self.prefixes:
            return self.prefixes[base]
        folded = base.casefold()
        return next((cls for p, cls in self.prefixes.items() if p.casefold() == folded), None)

    def _build(
        self,
        entry: MeasureEntry,
        spec: MeasureSpec,
        fixed: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> Measure:
        """``from_spec`` of a registered class: the parameter checks are the core's, but the
        class's own ``__post_init__`` (or a broken annotation) is the plugin's code."""
        with plugin_guard(entry.plugin, f"building measure spec {spec.text!r}"):
            return entry.cls.from_spec(spec, fixed, defaults)

    def _ask_resolvers(self, text: str) -> Measure | None:
        """The first measure a ``resolve_measure`` hook returns for *text* (hooks are asked in
        pluggy's order: the last registered plugin first, so ``--plugin`` plugins come before the
        built-in ir_measures bridge). A hook that raises is a :class:`PluginError` naming its
        plugin (its own :class:`~rankeval.errors.SpecError` passes through)."""
        if self.pm is None:
            return None
        impls = self.pm.hook.resolve_measure.get_hookimpls()
        if any(impl.hookwrapper or impl.wrapper for impl in impls):  # pragma: no cover - exotic
            found = self.pm.hook.resolve_measure(spec=text)
            return self._accept(found, "a resolve_measure hook", text)
        for impl in reversed(impls):
            with plugin_guard(impl.plugin_name, f"resolving measure spec {text!r}"):
                found = impl.function(spec=text)
            if found is not None:
                return self._accept(found, impl.plugin_name, text)
        return None

    def _spelled(self, found: object, plugin: str, text: str) -> Measure | None:
        """One item of a dialect's expansion of *text*: a measure, or a spec parsed here."""
        return self.parse(found) if isinstance(found, str) else self._accept(found, plugin, text)

    def _accept(self, found: object, plugin: str, text: str) -> Measure | None:
        if found is None:
            return None
        if not isinstance(found, Measure):
            raise PluginError(
                f"plugin {plugin} resolved measure spec {text!r} to {clip(repr(found))}, "
                "which is not a rankeval Measure"
            )
        self._resolved.setdefault(type(found), plugin)
        return found


def _with_defaults(measure: Measure, defaults: Mapping[str, Any] | None) -> Measure:
    """*measure* with *defaults* for the parameters it has (an expanded measure sets none)."""
    fields = {f.name for f in dataclasses.fields(measure)}
    chosen = {k: v for k, v in (defaults or {}).items() if k in fields}
    return dataclasses.replace(measure, **chosen) if chosen else measure
