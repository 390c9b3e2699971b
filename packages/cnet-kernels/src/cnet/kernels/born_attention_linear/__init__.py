"""born_attention_linear backends (reference: :func:`cnet.core.ops.reference.born_attention_linear`)."""

from cnet.kernels.born_attention_linear.op import (
    MAX_D,
    MAX_DV,
    PRECISIONS,
    born_attention_linear_triton,
    supports_triton,
)
from cnet.kernels.triton_support import TF32_TOLERANCE

__all__ = ["born_attention_linear_triton", "supports_triton", "PRECISIONS", "MAX_D", "MAX_DV", "register"]


def register(ops) -> None:
    """``triton`` on CUDA (priority 20)."""
    ops.add_backend("born_attention_linear", "triton", born_attention_linear_triton, device="cuda", priority=20,
                    supports=supports_triton, tolerance=TF32_TOLERANCE)
