"""The plugin manager: finds plugins, builds registries, notifies observers.

Order: built-in plugins (an explicit tuple), then entry points of group
``geak``, then any objects passed in (tests, embedding applications).
``GEAK_LOAD_PLUGINS`` restricts entry points: unset loads all, an empty value
loads none, ``a,b`` loads only the entry points named ``a`` and ``b``. A
plugin that fails to import is recorded with its error and skipped; the rest
keep working.

The rest of the code goes through ``PluginManager``'s typed methods and never
calls pluggy directly.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from geak_core.api import components, hookspecs
from geak_core.api.components import ComponentSpec
from geak_core.api.errors import PluginError, UnknownComponentError, suggest

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "geak"


@functools.cache
def package_folders() -> tuple[str, ...]:
    """The folders of ``geak_core`` and of every installed plugin's top-level package, wherever
    the install put them. An editable install maps a package to its source folder through an
    import hook that no ``sys.path`` entry names, so a sandboxed child, which may not read the
    temporary folder or the home directory, has to be shown them by name when a checkout lives
    there."""
    names = {"geak_core"}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        names.add(ep.module.partition(".")[0])
    folders: list[str] = []
    for name in sorted(names):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        places = list(spec.submodule_search_locations or [])
        if not places and spec.origin and os.path.isfile(spec.origin):
            places = [os.path.dirname(spec.origin)]
        folders += [os.path.realpath(place) for place in places]
    return tuple(dict.fromkeys(folders))
LOAD_ENV = "GEAK_LOAD_PLUGINS"
BUILTIN_PLUGINS: tuple[str, ...] = ("geak_core.engine.builtin",)


@dataclass
class PluginInfo:
    name: str
    module: str
    version: str = ""
    distribution: str = ""
    builtin: bool = False
    error: str | None = None  # import or registration failure
    components: list[ComponentSpec] = field(default_factory=list)


class PluginManager:
    def __init__(
        self,
        *,
        load_entry_points: bool = True,
        extra_plugins: Iterable[tuple[str, object]] = (),
    ) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self._registry: dict[str, dict[str, ComponentSpec]] = {k.name: {} for k in components.COMPONENT_KINDS}
        for module_name in BUILTIN_PLUGINS:
            module = importlib.import_module(module_name)
            self._add(module_name, module, PluginInfo(module_name, module_name, builtin=True))
        if load_entry_points:
            self._load_entry_points()
        for name, obj in extra_plugins:
            self._add(name, obj, PluginInfo(name, getattr(obj, "__name__", repr(obj))))
        self._pm.check_pending()
        self._build_registries()

    # -- loading -----------------------------------------------------------

    def _load_entry_points(self) -> None:
        wanted_raw = os.environ.get(LOAD_ENV)
        wanted = None
        if wanted_raw is not None:
            wanted = {w.strip() for w in wanted_raw.split(",") if w.strip()}
        seen: set[str] = set()
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in seen or (wanted is not None and ep.name not in wanted):
                continue
            seen.add(ep.name)
            dist = getattr(ep, "dist", None)
            info = PluginInfo(
                name=ep.name,
                module=ep.value,
                version=getattr(dist, "version", "") or "",
                distribution=getattr(dist, "name", "") or "",
            )
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not take the CLI down
                info.error = f"{type(exc).__name__}: {exc}"
                log.debug("plugin %s failed to load:\n%s", ep.name, traceback.format_exc())
                self.plugins[ep.name] = info
                continue
            self._add(ep.name, obj, info)
        if wanted:
            for missing in sorted(wanted - seen):
                self.plugins[missing] = PluginInfo(
                    missing, "", error=f"{LOAD_ENV} names {missing!r} but no such plugin is installed"
                )

    def _add(self, name: str, obj: object, info: PluginInfo) -> None:
        try:
            self._pm.register(obj, name=name)
        except Exception as exc:
            info.error = f"{type(exc).__name__}: {exc}"
        self.plugins[name] = info

    def _build_registries(self) -> None:
        for entry in components.COMPONENT_KINDS:  # one registry per kind, filled by its hook
            kind = entry.name
            hook = getattr(self._pm.hook, entry.hook)
            for impl in hook.get_hookimpls():
                plugin_name = self._pm.get_name(impl.plugin) or "?"
                register = self._make_register(kind, plugin_name)
                try:
                    impl.function(register=register)
                except PluginError:
                    raise
                except Exception as exc:
                    info = self.plugins.get(plugin_name)
                    if info is not None:
                        info.error = f"registering {kind}: {type(exc).__name__}: {exc}"

    def _make_register(self, kind: str, plugin_name: str) -> Callable[..., None]:
        def register(
            name: str,
            factory: Callable[[Any], Any],
            *,
            options: type | None = None,
            description: str = "",
        ) -> None:
            if not isinstance(name, str) or not name:
                raise PluginError(f"plugin {plugin_name!r} registered a {kind} without a name")
            existing = self._registry[kind].get(name)
            if existing is not None:
                raise PluginError(
                    f"{kind} {name!r} is registered by two plugins: "
                    f"{existing.plugin!r} and {plugin_name!r}; uninstall one or restrict "
                    f"{LOAD_ENV}"
                )
            if isinstance(factory, type):  # a class: its misspelt abilities are known now
                components.check_abilities(components.KIND_BY_NAME[kind], dir(factory),
                                           f"{kind} {name!r} of plugin {plugin_name!r}")
            spec = ComponentSpec(kind, name, factory, options, description, plugin_name)
            self._registry[kind][name] = spec
            info = self.plugins.get(plugin_name)
            if info is not None:
                info.components.append(spec)

        return register

    # -- registries --------------------------------------------------------

    def components(self, kind: str) -> dict[str, ComponentSpec]:
        if kind not in self._registry:
            raise KeyError(f"unknown component kind {kind!r}")
        return dict(self._registry[kind])

    def spec(self, kind: str, name: str) -> ComponentSpec:
        registry = self._registry[kind]
        if name not in registry:
            raise UnknownComponentError(
                f"no {kind.replace('_', ' ')} named {name!r} ({suggest(name, registry)})"
            )
        return registry[name]

    def build(self, kind: str, name: str, options: Any = None) -> Any:
        return self.spec(kind, name).build(options)

    # -- other hooks -------------------------------------------------------

    def add_commands(self, cli: Any) -> None:
        for impl in self._pm.hook.geak_register_commands.get_hookimpls():
            try:
                impl.function(cli=cli)
            except Exception as exc:
                name = self._pm.get_name(impl.plugin) or "?"
                info = self.plugins.get(name)
                if info is not None:
                    info.error = f"registering commands: {type(exc).__name__}: {exc}"

    def notify(self, event: str, **kwargs: Any) -> None:
        """Call an observer hook on every plugin; a failing observer is logged, not fatal."""
        hook = getattr(self._pm.hook, event)
        for impl in hook.get_hookimpls():
            try:
                impl.function(**{k: kwargs[k] for k in impl.argnames})
            except Exception:
                log.warning(
                    "observer %s of plugin %s failed:\n%s",
                    event,
                    self._pm.get_name(impl.plugin),
                    traceback.format_exc(),
                )


_default: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide manager (built on first use)."""
    global _default
    if _default is None:
        _default = PluginManager()
    return _default


def reset_plugin_manager(manager: PluginManager | None = None) -> None:
    global _default
    _default = manager
