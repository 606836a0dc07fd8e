"""The measure registry: names and aliases → measure classes; specs → measures."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankeval.errors import PluginError, SpecError
from rankeval.measure import Measure
from rankeval.spec import MeasureSpec, Value, parse_specs

if TYPE_CHECKING:
    import pluggy

__all__ = ["MeasureEntry", "Registry"]

_TREC_CUT = re.compile(r"^(?P<base>.+?)[._](?P<k>\d+)$")


@dataclass(frozen=True)
class MeasureEntry:
    """A registered measure class and the plugin that provides it."""

    cls: type[Measure]
    plugin: str


class Registry:
    """Measure classes by name, filled by plugins through ``register_measures``.

    Build one with :func:`rankeval.plugins.load_registry`.
    """

    def __init__(self, pm: pluggy.PluginManager | None = None) -> None:
        self.pm = pm
        self.measures: dict[str, MeasureEntry] = {}
        self.aliases: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.prefixes: dict[str, str] = {}
        self.plugins: dict[str, str] = {}
        self.failures: dict[str, str] = {}

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
        except Exception as exc:
            for name in added:
                self.remove(name)
            self.plugins.pop(plugin, None)
            self.failures[plugin] = f"register_measures failed: {type(exc).__name__}: {exc}"

    def add(self, cls: type[Measure], plugin: str) -> None:
        """Register *cls* as provided by *plugin*.

        Raises:
            PluginError: if the name or an alias is already taken, naming both plugins.
        """
        if not (isinstance(cls, type) and issubclass(cls, Measure)) or not cls.name:
            # a broken plugin, not a conflict: collect() records it and carries on
            raise TypeError(f"registered {cls!r}, which is not a named Measure subclass")
        for name in (cls.name, *cls.aliases, *cls.trec_prefixes):
            owner = self._owner(name)
            if owner is not None:
                raise PluginError(
                    f"measure name {name!r} is registered by both plugin {owner!r} and plugin {plugin!r}"
                )
        self.measures[cls.name] = MeasureEntry(cls, plugin)
        for alias, fixed in cls.aliases.items():
            self.aliases[alias] = (cls.name, fixed)
        for prefix in cls.trec_prefixes:
            self.prefixes[prefix] = cls.name

    def remove(self, name: str) -> None:
        """Forget measure *name* and its aliases."""
        self.measures.pop(name, None)
        self.aliases = {a: v for a, v in self.aliases.items() if v[0] != name}
        self.prefixes = {p: v for p, v in self.prefixes.items() if v != name}

    def _owner(self, name: str) -> str | None:
        if name in self.measures:
            return self.measures[name].plugin
        if name in self.aliases:
            return self.measures[self.aliases[name][0]].plugin
        if name in self.prefixes:
            return self.measures[self.prefixes[name]].plugin
        return None

    # -- lookup ----------------------------------------------------------------------
    def __iter__(self) -> Iterator[MeasureEntry]:
        return iter(sorted(self.measures.values(), key=lambda e: e.cls.name.lower()))

    def parse(self, text: str) -> Measure:
        """Parse one spec into a measure (``"nDCG@10"``, ``"AP(rel=2)"``, ``"P.5"``)."""
        measures = self.parse_many(text)
        if len(measures) != 1:
            raise SpecError(
                f"expected one measure spec, found {len(measures)}", source="measure spec", text=text
            )
        return measures[0]

    def parse_many(self, text: str) -> list[Measure]:
        """Parse whitespace-separated specs (``"AP nDCG@10 P@5"``)."""
        return [self.resolve(spec) for spec in parse_specs(text)]

    def resolve(self, spec: MeasureSpec) -> Measure:
        """Turn a parsed spec into a measure: names, then aliases, then trec_eval
        ``name.N`` forms, then the ``resolve_measure`` hook (ir_measures)."""
        name = spec.name
        if name in self.measures:
            return self.measures[name].cls.from_spec(spec)
        if name in self.aliases:
            target, fixed = self.aliases[name]
            return self.measures[target].cls.from_spec(spec, fixed)
        m = _TREC_CUT.match(name)
        if m and m.group("base") in self.prefixes:
            if spec.at is not None:
                raise spec.error(f"{name!r} already has a cutoff; drop the '@' part")
            cls = self.measures[self.prefixes[m.group("base")]].cls
            cut = Value("number", m.group("k"), spec.column + m.start("k"), float(m.group("k")))
            return cls.from_spec(MeasureSpec(cls.name, spec.text, spec.column, (None, cut), spec.params))
        if self.pm is not None:
            found = self.pm.hook.resolve_measure(spec=spec.text)
            if found is not None:
                return found  # type: ignore[no-any-return]
        known = sorted(set(self.measures) | set(self.aliases))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `rankeval measures` lists them"
        raise spec.error(f"unknown measure {name!r}{hint}")
