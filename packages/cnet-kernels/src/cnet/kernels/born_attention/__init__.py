"""Born attention backends (reference: :func:`cnet.core.ops.reference.born_attention`)."""

from cnet.kernels.born_attention.planar import born_attention_planar, supports_planar

__all__ = ["born_attention_planar", "supports_planar", "register"]


def register(ops) -> None:
    """``planar`` on CUDA (priority 10)."""
    ops.add_backend("born_attention", "planar", born_attention_planar, device="cuda", priority=10,
                    supports=supports_planar)
