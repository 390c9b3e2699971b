"""The plugin manager: built-in plugins first, then the entry-point group ``cnet``.

``CNET_DISABLE_PLUGIN_AUTOLOAD=1`` skips the entry points (only the built-ins of cnet-core load), which gives a
bare, reproducible registry for tests. A plugin that fails to import, or that defines a ``@hookimpl`` matching no
hook of :mod:`cnet.core.hookspecs` (a misspelled hook name such as ``cnet_register_op``), is reported with a
warning and skipped.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import threading
from dataclasses import dataclass

import pluggy

from cnet.core import hookspecs
from cnet.core.registry import NameRegistry, OpRegistry

__all__ = ["DEFAULT_PLUGINS", "Registries", "plugin_manager", "registries", "reset"]

log = logging.getLogger("cnet.core.plugins")

DEFAULT_PLUGINS: tuple[str, ...] = ("cnet.core.builtin",)

_LOCK = threading.RLock()
_STATE: dict[str, object] = {}


@dataclass
class Registries:
    """Everything the plugins registered.

    Attributes:
        ops: :class:`OpRegistry`.
        models, datasets, commands: :class:`NameRegistry` objects.
        failed: ``{entry point name: error text}`` for plugins that could not be loaded (import error, unknown
            hook) or whose hook raised.
    """

    ops: OpRegistry
    models: NameRegistry
    datasets: NameRegistry
    commands: NameRegistry
    failed: dict[str, str]


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide :class:`pluggy.PluginManager` (created on first use)."""
    with _LOCK:
        if "pm" not in _STATE:
            pm = pluggy.PluginManager("cnet")
            pm.add_hookspecs(hookspecs)
            for modname in DEFAULT_PLUGINS:
                pm.register(importlib.import_module(modname), name=modname)
            _check_hooks(pm)
            failed: dict[str, str] = {}
            if os.environ.get("CNET_DISABLE_PLUGIN_AUTOLOAD", "") not in {"1", "true", "True", "yes"}:
                for ep in importlib.metadata.entry_points(group="cnet"):
                    if pm.get_plugin(ep.name) is not None:
                        continue
                    try:
                        pm.register(ep.load(), name=ep.name)
                        _check_hooks(pm)
                    except Exception as exc:  # a broken third-party plugin must not take cnet down
                        # registered, then refused by _check_hooks (or half-registered by pluggy < 1.7)
                        if pm.get_plugin(ep.name) is not None:
                            pm.unregister(name=ep.name)
                        failed[ep.name] = f"{type(exc).__name__}: {exc}"
                        log.warning("cnet: plugin %r (%s) failed to load: %s", ep.name, ep.value, exc)
            _STATE["pm"], _STATE["failed"] = pm, failed
        return _STATE["pm"]  # type: ignore[return-value]


def _check_hooks(pm: pluggy.PluginManager) -> None:
    """Raise ``pluggy.PluginValidationError`` if a registered ``@hookimpl`` matches no hookspec (e.g. a typo).

    Called after each registration, so the offending plugin is the one registered last.
    """
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        known = ", ".join(sorted(name for name, caller in vars(pm.hook).items() if caller.has_spec()))
        raise pluggy.PluginValidationError(exc.plugin, f"{exc}; cnet's hooks are {known}") from None


def registries() -> Registries:
    """Call every registration hook once and return the filled :class:`Registries` (cached)."""
    with _LOCK:
        if "reg" not in _STATE:
            pm = plugin_manager()
            reg = Registries(OpRegistry(), NameRegistry("model"), NameRegistry("dataset"), NameRegistry("command"),
                             dict(_STATE["failed"]))  # type: ignore[arg-type]
            for hook, arg in (("cnet_register_ops", {"ops": reg.ops}),
                              ("cnet_register_models", {"models": reg.models}),
                              ("cnet_register_datasets", {"datasets": reg.datasets}),
                              ("cnet_register_commands", {"commands": reg.commands})):
                _call_each(pm, hook, arg, reg.failed)
            _STATE["reg"] = reg
        return _STATE["reg"]  # type: ignore[return-value]


def _call_each(pm: pluggy.PluginManager, hook: str, kwargs: dict, failed: dict[str, str]) -> None:
    """Call every implementation of ``hook`` on its own, so one plugin's error does not stop the others."""
    for impl in getattr(pm.hook, hook).get_hookimpls():  # registration order: built-ins first
        try:
            impl.function(**kwargs)
        except Exception as exc:
            failed[impl.plugin_name] = f"{hook}: {type(exc).__name__}: {exc}"
            log.warning("cnet: plugin %r failed in %s: %s", impl.plugin_name, hook, exc)


def reset() -> None:
    """Forget the plugin manager and registries; the next use reloads them (reads the environment again)."""
    with _LOCK:
        _STATE.clear()
