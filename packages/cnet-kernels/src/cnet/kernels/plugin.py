"""cnet-kernels' plugin: registers GPU backends of cnet-core ops through the entry-point group ``cnet``."""

from __future__ import annotations

from cnet.core.hookspecs import hookimpl

__all__ = ["cnet_register_ops"]


@hookimpl
def cnet_register_ops(ops):
    """Register ``born_attention`` backend ``planar`` on CUDA (priority 10)."""
    from cnet.kernels.born_attention import born_attention_planar, supports_planar

    ops.add_backend("born_attention", "planar", born_attention_planar, device="cuda", priority=10,
                    supports=supports_planar)
