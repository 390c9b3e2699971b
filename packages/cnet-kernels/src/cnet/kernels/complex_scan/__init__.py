"""complex_scan backends (reference: :func:`cnet.core.ops.reference.complex_scan`)."""

from cnet.kernels.complex_scan.chunked import complex_scan_triton, supports_triton

__all__ = ["complex_scan_triton", "supports_triton", "register"]


def register(ops) -> None:
    """``triton`` (the chunked Triton scan) on CUDA, priority 20."""
    ops.add_backend("complex_scan", "triton", complex_scan_triton, device="cuda", priority=20,
                    supports=supports_triton)
