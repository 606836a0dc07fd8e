"""Plugin manager factory and the measure registry it fills.

Built-in measure families (the packages in ``plugins/``) are registered exactly like
third-party plugins: by module, through the ``register_measures`` hook. Then come plugins
advertised under the ``rankeval`` entry-point group, then modules named with ``-p``.
There is no module-global state: each call of :func:`load_registry` builds a fresh manager.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

import pluggy

from rankeval import hookspecs
from rankeval.registry import Registry

__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "load_registry", "make_plugin_manager"]

DEFAULT_PLUGINS = ("rankeval_trec", "rankeval_tbg", "rankeval_csdcg", "rankeval_tar", "rankeval_irmeasures")
ENTRY_POINT_GROUP = "rankeval"


def make_plugin_manager() -> pluggy.PluginManager:
    """A new plugin manager with rankeval's hook specs and nothing registered."""
    pm = pluggy.PluginManager("rankeval")
    pm.add_hookspecs(hookspecs)
    return pm


def _entry_points() -> list[tuple[str, str]]:
    from importlib.metadata import entry_points

    return [(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)]


def load_registry(
    plugins: Iterable[str | ModuleType] = (),
    *,
    blocked: Iterable[str] = (),
    entry_points: bool = True,
) -> Registry:
    """Load built-in, entry-point and extra plugins and return the filled registry.

    Args:
        plugins: extra plugin modules (objects or importable names, as ``-p module``).
        blocked: plugin names not to load (``-p no:name``).
        entry_points: also load plugins of the ``rankeval`` entry-point group.

    A plugin that fails to import or to register is recorded in ``registry.failures`` and
    does not stop the others. Two plugins registering the same measure name is an error
    (:class:`~rankeval.errors.PluginError`) naming both.
    """
    pm = make_plugin_manager()
    registry = Registry(pm)
    blocked = set(blocked)
    sources: list[tuple[str, str | ModuleType, str]] = [(n, n, "built-in") for n in DEFAULT_PLUGINS]
    if entry_points:
        sources += [(name, value, "entry point") for name, value in _entry_points()]
    for p in plugins:
        name = p if isinstance(p, str) else p.__name__
        sources.append((name, p, "-p"))
    for name, target, origin in sources:
        if name in blocked or name in registry.plugins:
            continue
        try:
            module = importlib.import_module(target) if isinstance(target, str) else target
            pm.register(module, name=name)
            pm.check_pending()  # a misspelled hook fails loudly, but only this plugin
        except Exception as exc:
            if pm.has_plugin(name):
                pm.unregister(name=name)
            registry.failures[name] = f"cannot load ({origin}): {type(exc).__name__}: {exc}"
            continue
        registry.plugins[name] = origin
    for impl in pm.hook.register_measures.get_hookimpls():
        registry.collect(impl.plugin_name, impl.function)
    return registry
