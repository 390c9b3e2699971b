"""Public functional API: ``cnet.core.ops.<name>(...)`` dispatches to the best backend for the inputs.

Each function here has the signature and docstring of its reference in :mod:`cnet.core.ops.reference`;
the registry (:mod:`cnet.core.registry`) picks a backend per call, else runs the reference. Ops added by
third-party plugins are reachable the same way (``cnet.core.ops.my_op``) once their plugin is installed.
"""

from __future__ import annotations

import functools

from cnet.core.ops import reference

__all__ = list(reference.__all__) + ["reference", "call"]


def call(name: str, *args, **kwargs):
    """Run the registered op ``name`` through the registry (raises ``KeyError`` for an unknown op)."""
    from cnet.core.plugins import registries

    return registries().ops.call(name, *args, **kwargs)


def _dispatcher(name: str):
    ref = getattr(reference, name)

    @functools.wraps(ref)
    def dispatch(*args, **kwargs):
        return call(name, *args, **kwargs)

    return dispatch


for _name in reference.__all__:
    globals()[_name] = _dispatcher(_name)
del _name


def __getattr__(name: str):
    from cnet.core.plugins import registries

    if not name.startswith("_") and name in registries().ops.names():
        return functools.partial(call, name)
    raise AttributeError(f"module 'cnet.core.ops' has no op {name!r}")
