"""gated_linear_attention backends (reference: :func:`cnet.core.ops.reference.gated_linear_attention`)."""

from cnet.kernels.gated_linear_attention.chunked import (
    CUDA_MAX_D,
    MAX_D,
    gated_linear_attention_triton,
    supports_triton,
)

__all__ = ["gated_linear_attention_triton", "supports_triton", "MAX_D", "CUDA_MAX_D", "register"]


def register(ops) -> None:
    """``triton`` (chunked, forward and reverse sweeps) on CUDA, priority 20."""
    ops.add_backend("gated_linear_attention", "triton", gated_linear_attention_triton, device="cuda", priority=20,
                    supports=supports_triton)
