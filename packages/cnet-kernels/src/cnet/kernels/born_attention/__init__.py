"""Born attention backends (reference: :func:`cnet.core.ops.reference.born_attention`)."""

from cnet.kernels.born_attention.planar import born_attention_planar, supports_planar
from cnet.kernels.born_attention.triton_quadratic import born_attention_triton, supports_triton
from cnet.kernels.triton_support import TF32_TOLERANCE

__all__ = ["born_attention_planar", "supports_planar", "born_attention_triton", "supports_triton", "register"]


def register(ops) -> None:
    """``triton`` (flash-style kernels, priority 20) and ``planar`` (priority 10), both on CUDA."""
    ops.add_backend("born_attention", "triton", born_attention_triton, device="cuda", priority=20,
                    supports=supports_triton, tolerance=TF32_TOLERANCE)
    ops.add_backend("born_attention", "planar", born_attention_planar, device="cuda", priority=10,
                    supports=supports_planar)
