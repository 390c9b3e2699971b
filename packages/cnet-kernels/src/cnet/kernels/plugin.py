"""cnet-kernels' plugin: registers GPU backends of cnet-core ops through the entry-point group ``cnet``.

Each op folder (``cnet.kernels.<op>``) has a ``register(ops)`` that adds its backends; this hook calls them all.
"""

from __future__ import annotations

import importlib

from cnet.core.hookspecs import hookimpl

__all__ = ["cnet_register_ops", "OP_FOLDERS"]

OP_FOLDERS = ("born_attention", "born_attention_linear", "complex_scan", "gated_linear_attention")


@hookimpl
def cnet_register_ops(ops):
    """Register every op folder's backends (see each folder's ``register``)."""
    for folder in OP_FOLDERS:
        importlib.import_module(f"cnet.kernels.{folder}").register(ops)
