"""What every Triton backend checks before it takes a call: Triton importable, inputs on one CUDA device.

Under ``TRITON_INTERPRET=1`` (the CPU interpreter, used by the CI parity tests) the kernels run on CPU tensors when
called directly; dispatch still registers them for CUDA only, so CPU calls through ``cnet.core.ops`` use the
reference.
"""

from __future__ import annotations

import functools
import os

import torch

__all__ = ["TF32_TOLERANCE", "interpreting", "resolved", "triton_problem"]


# (atol, rtol) that `cnet check-op` allows a backend computing its products in tf32 by default (10-bit mantissa:
# about 1e-3 relative error per product, compounded through the score, its square and the normaliser)
TF32_TOLERANCE = (1e-2, 1e-2)


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def resolved(x: torch.Tensor | None) -> torch.Tensor | None:
    """``x`` with its conjugate and negative bits applied (a copy when either is set, ``x`` itself otherwise;
    differentiable). A kernel reads a tensor's raw memory, which a lazy ``x.conj()`` or ``x._neg_view()`` leaves
    unchanged, and ``torch.view_as_real`` refuses conjugated views: every tensor bound for a kernel passes here."""
    return None if x is None else x.resolve_conj().resolve_neg()


@functools.cache
def _import_problem() -> str:
    try:
        import triton  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the machine
        return f"triton is not importable ({exc})"
    return ""


def triton_problem(**tensors: torch.Tensor) -> str:
    """Why a Triton kernel cannot run on these tensors ("" when it can): Triton missing, or the tensors are not on
    one CUDA device (CPU tensors are accepted under the interpreter)."""
    problem = _import_problem()
    if problem:
        return problem
    devices = {t.device for t in tensors.values()}
    if len(devices) != 1:
        return f"inputs {', '.join(tensors)} are on different devices {sorted(map(str, devices))}"
    device = devices.pop()
    if device.type != "cuda" and not (interpreting() and device.type == "cpu"):
        return f"inputs are on {device}, not CUDA"
    return ""
