"""Plugin manager factory and the measure registry it fills.

Built-in measure families (the packages in ``plugins/``) are registered exactly like
third-party plugins: by module, through the ``register_measures`` hook. Then come plugins
advertised under the ``rankeval`` entry-point group (unless ``RANKEVAL_DISABLE_PLUGIN_AUTOLOAD``
is set), then modules named with ``--plugin``: an importable name (``mypkg.measures``) or the
path of a ``.py`` file or of a package folder (:func:`_import_plugin`). There is no
module-global state: each call of :func:`load_registry` builds a fresh manager.

A plugin that fails while it is imported or registered -- any exception, and also
``SystemExit`` or ``KeyboardInterrupt`` raised by its own code -- is recorded in
``registry.failures`` and skipped; the other plugins load as usual.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from rankeval import extension
from rankeval.errors import fault
from rankeval.measures.registry import PLUGIN_FAULTS, Registry

__all__ = [
    "DEFAULT_PLUGINS",
    "DISABLE_AUTOLOAD_ENV",
    "ENTRY_POINT_GROUP",
    "ITEM_HOOKS",
    "autoload_disabled",
    "current_registry",
    "hook_impls",
    "load_registry",
    "make_plugin_manager",
    "using_registry",
]

DEFAULT_PLUGINS = ("rankeval_trec", "rankeval_tbg", "rankeval_csdcg", "rankeval_tar", "rankeval_irmeasures")
ENTRY_POINT_GROUP = "rankeval"
DISABLE_AUTOLOAD_ENV = "RANKEVAL_DISABLE_PLUGIN_AUTOLOAD"
"""Environment variable: set (to anything but ``0``, ``false``, ``no`` or nothing), no
entry-point plugin is loaded by itself, as pytest's ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``."""


def make_plugin_manager() -> pluggy.PluginManager:
    """A new plugin manager with rankeval's hook specs and nothing registered."""
    pm = pluggy.PluginManager("rankeval")
    pm.add_hookspecs(extension)
    return pm


def autoload_disabled() -> bool:
    """Whether :data:`DISABLE_AUTOLOAD_ENV` turns off entry-point plugins."""
    return os.environ.get(DISABLE_AUTOLOAD_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _entry_points() -> list[tuple[str, str]]:
    from importlib.metadata import entry_points

    return [(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)]


#: the ``register_*`` hooks of items other than measures, each called once per registry
ITEM_HOOKS = ("register_formats", "register_dialects", "register_commands")


def load_registry(
    plugins: Iterable[str | ModuleType] = (),
    *,
    blocked: Iterable[str] = (),
    entry_points: bool = True,
) -> Registry:
    """Load built-in, entry-point and extra plugins and return the filled registry.

    Args:
        plugins: extra plugin modules (objects or importable names, as ``--plugin module``).
        blocked: plugin names not to load (``--plugin no:name``).
        entry_points: also load plugins of the ``rankeval`` entry-point group (unless
            the environment variable ``RANKEVAL_DISABLE_PLUGIN_AUTOLOAD`` is set; then a
            ``--plugin NAME`` naming an entry point still loads it).

    A plugin that fails to import or to register is recorded in ``registry.failures`` and
    does not stop the others. Two plugins registering the same measure name is an error
    (:class:`~rankeval.errors.PluginError`) naming both. ``registry.autoload`` tells whether
    entry-point plugins were loaded.
    """
    pm = make_plugin_manager()
    registry = Registry(pm)
    registry.autoload = entry_points and not autoload_disabled()
    blocked = set(blocked)
    sources: list[tuple[str, str | ModuleType, str]] = [(n, n, "built-in") for n in DEFAULT_PLUGINS]
    advertised = dict(_entry_points()) if entry_points else {}
    if registry.autoload:
        sources += [(name, value, "entry point") for name, value in advertised.items()]
    for p in plugins:
        if isinstance(p, ModuleType):
            name = p.__name__
        else:  # a module name, or a path: the module's own name (firstrel for a/b/firstrel.py)
            name = _path_module(p)[1] if _is_path(p) else p
        if isinstance(p, str) and not registry.autoload and p in advertised:
            sources.append((name, advertised[p], "entry point, --plugin"))  # as pytest's -p NAME
        else:
            sources.append((name, p, "--plugin"))
    for name, target, origin in sources:
        if name in blocked or name in registry.plugins:
            continue
        try:
            module = _import_plugin(target) if isinstance(target, str) else target
            pm.register(module, name=name)
            pm.check_pending()  # a misspelled hook fails loudly, but only this plugin
        except PLUGIN_FAULTS as exc:
            if hasattr(exc, "signum"):  # a stop signal the command received (rankeval.cli.signals)
                raise
            if pm.has_plugin(name):
                pm.unregister(name=name)
            registry.failures[name] = f"cannot load ({origin}): {fault(exc)}"
            continue
        if not pm.get_hookcallers(module):  # nothing registered: say why, not silence
            pm.unregister(name=name)
            registry.failures[name] = f"cannot load ({origin}): {_no_hooks(module)}"
            continue
        registry.plugins[name] = origin
    for impl in pm.hook.register_measures.get_hookimpls():
        registry.collect(impl.plugin_name, impl.function)
    for hook in ITEM_HOOKS:  # built-in plugins first: a later plugin cannot take their names
        registry.collect_items(hook, list(reversed(hook_impls(registry, hook))))
    return registry


_ACTIVE: ContextVar[Registry | None] = ContextVar("rankeval_registry", default=None)


@contextmanager
def using_registry(registry: Registry) -> Iterator[Registry]:
    """Make *registry* the one :func:`current_registry` gives inside the block (the command
    line loads its registry once and runs the command inside this)."""
    token = _ACTIVE.set(registry)
    try:
        yield registry
    finally:
        _ACTIVE.reset(token)


def current_registry(registry: Registry | None = None) -> Registry:
    """*registry*; else the registry of the running command (:func:`using_registry`); else a
    new one with every installed plugin (:func:`load_registry`)."""
    if registry is not None:
        return registry
    return _ACTIVE.get() or load_registry()


#: what ``--plugin`` takes, said when it is given something else
PLUGIN_FORMS = "--plugin takes an importable module name (mypkg.measures) or the path of a .py file or package folder"


def _is_path(target: str) -> bool:
    """Whether a ``--plugin`` value names a file or folder rather than a module."""
    return target.endswith(".py") or "/" in target or os.sep in target


def _path_module(target: str) -> tuple[Path, str]:
    """The folder to import from and the module name of the file or package folder *target*."""
    path = Path(target)
    return path.parent, path.stem if path.suffix == ".py" else path.name


def _import_plugin(target: str) -> ModuleType:
    """The plugin module *target*: an importable name (``mypkg.measures``), or the path of a
    ``.py`` file or a package folder, imported under its own name (``firstrel`` for
    ``path/to/firstrel.py``) with its folder added to ``sys.path``, so that worker processes
    import it as this one did.

    Raises:
        ImportError: a path that is not a ``.py`` file or a package folder, or whose module
            name another module already has; a module name nothing provides (the message says
            what ``--plugin`` takes); whatever the module raises while it is imported.
    """
    if not _is_path(target):
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if not exc.name or not (target == exc.name or target.startswith(f"{exc.name}.")):
                raise  # a module the plugin imports is missing: its own message says which
            raise ModuleNotFoundError(f"No module named {target!r}; {PLUGIN_FORMS}", name=exc.name) from None
    folder, name = _path_module(target)
    path = Path(target)
    if not (path.is_file() and path.suffix == ".py") and not (path / "__init__.py").is_file():
        what = "no such file or folder" if not path.exists() else "not a .py file or a folder with __init__.py"
        raise ImportError(f"{target!r}: {what}; {PLUGIN_FORMS}")
    if not name.isidentifier():
        raise ImportError(f"{target!r}: {name!r} is not a Python module name; rename it (letters, digits, _)")
    if str(folder.resolve()) not in sys.path:
        sys.path.append(str(folder.resolve()))
    module = importlib.import_module(name)
    found = getattr(module, "__file__", None)
    if found is None or Path(found).resolve() != (path / "__init__.py" if path.is_dir() else path).resolve():
        raise ImportError(f"{target!r} would be module {name!r}, which is already {found or 'built in'}; rename it")
    return module


def _no_hooks(module: ModuleType) -> str:
    """Why *module* registers nothing: a folder imported as a namespace package (the usual
    mistake with ``PYTHONPATH=.``), or a module without ``@hookimpl`` functions."""
    if getattr(module, "__file__", None) is None:
        where = ", ".join(getattr(module, "__path__", [])) or "a folder"
        return (
            f"{module.__name__!r} is a folder without __init__.py ({where}), imported as an empty "
            "namespace package: put the folder holding the module on PYTHONPATH "
            f"(PYTHONPATH={module.__name__}), or pip install the package"
        )
    return "the module defines no @hookimpl function (register_measures, ...): it adds nothing"


# ----------------------------------------------------------- calling the other hooks
def hook_impls(registry: Registry, hook: str) -> list[tuple[str, Callable[..., Any]]]:
    """``(plugin name, function)`` of every implementation of *hook* in *registry*'s plugin
    manager, in pluggy's call order (the last registered plugin first: ``--plugin`` plugins before
    entry points before the built-ins)."""
    if registry.pm is None:
        return []
    impls = getattr(registry.pm.hook, hook).get_hookimpls()
    return [(impl.plugin_name, impl.function) for impl in reversed(impls)]
