"""The chunked Triton complex scan (backend ``triton``): autograd wiring, launch configuration, ``supports``.

Forward and backward are each one pass over memory (see :mod:`cnet.kernels.complex_scan.kernels`): the forward
reads ``a, b`` and writes ``h``; the backward reads ``a, h, grad_h`` and writes ``grad_a, grad_b``. On CUDA the
block shape is autotuned per channel count ``C`` (the first config, untimed, with ``CNET_TRITON_AUTOTUNE=0``); under
the Triton interpreter a small fixed block is used.
Source: quantum-shortcut paper section 5 (chunked scan); papers/NOTES.md "Quantum-shortcut models", "LRU".
"""

from __future__ import annotations

import math

import torch
import triton

from cnet.core.ops.reference.scan import _check_scan
from cnet.core.validation import require_complex, require_same_shape
from cnet.kernels.born_attention import triton_kernels as _born_kernels  # its AUTOTUNE: CNET_TRITON_AUTOTUNE
from cnet.kernels.complex_scan.kernels import scan_bwd_kernel, scan_fwd_kernel
from cnet.kernels.triton_support import interpreting, resolved, triton_problem

__all__ = ["complex_scan_triton", "supports_triton"]

_INTERPRETER_BLOCK = {"BLOCK_T": 8, "BLOCK_C": 16, "PREFETCH": True}
# Few warps per program: the whole problem has only B * C channels, so programs are few and each must keep many rows
# in flight to cover memory latency. BLOCK_C < 32 spreads a block's rows over 32 / BLOCK_C lanes (more programs,
# shuffles in the scan); the 2- and 4-warp shapes put more rows or channels in flight per program. Elements per
# thread and tile stay <= 8 with prefetch and <= 16 without: the one-warp shapes compile without spills for sm_90
# (cuobjdump resource usage; the multi-warp ones, added later, hold as many per thread but are not yet checked). The
# autotuner measures which shape is fastest on the device; the first (fastest measured on an H200 at C = 2048,
# 0.52 of copy bandwidth forward + backward) is the one run with CNET_TRITON_AUTOTUNE=0.
_CONFIGS = [triton.Config({"BLOCK_T": bt, "BLOCK_C": bc, "PREFETCH": prefetch}, num_warps=warps)
            for prefetch, shapes in ((True, ((8, 32, 1), (16, 16, 1), (32, 8, 1), (16, 8, 1), (32, 4, 1), (64, 4, 1),
                                             (16, 32, 2), (8, 64, 2), (32, 32, 4), (16, 64, 4))),
                                     (False, ((32, 8, 1), (64, 8, 1))))
            for bt, bc, warps in shapes]
# Tuned once per channel count (and dtype) on the first call: varying sequence lengths do not trigger a re-tune.
_fwd_tuned = triton.autotune(_CONFIGS, key=["C"])(scan_fwd_kernel)
_bwd_tuned = triton.autotune(_CONFIGS, key=["C"])(scan_bwd_kernel)


def _launch(tuned, plain, batch: int, channels: int, *args, **constexprs) -> None:
    """Run a scan kernel over ``batch * cdiv(channels, BLOCK_C)`` programs: autotuned, or with the first config when
    ``CNET_TRITON_AUTOTUNE=0`` (read by :mod:`cnet.kernels.born_attention.triton_kernels`), or with
    ``_INTERPRETER_BLOCK`` when interpreting."""
    if interpreting():
        block = _INTERPRETER_BLOCK
        plain[(batch * triton.cdiv(channels, block["BLOCK_C"]),)](*args, **constexprs, **block)
    elif not _born_kernels.AUTOTUNE:
        first = _CONFIGS[0]
        plain[(batch * triton.cdiv(channels, first.kwargs["BLOCK_C"]),)](
            *args, **constexprs, **first.kwargs, num_warps=first.num_warps, num_stages=first.num_stages)
    else:
        tuned[lambda meta: (batch * triton.cdiv(channels, meta["BLOCK_C"]),)](*args, **constexprs)


class _TritonScan(torch.autograd.Function):
    # Same contract and adjoint as cnet.core.ops.reference.scan._ComplexScan, on c[B, T, C] contiguous tensors:
    # g_t = grad_h_t + conj(a_{t+1}) g_{t+1} (g_{T-1} also receives grad_last), grad_b = g,
    # grad_a_t = g_t conj(h_{t-1}), grad_h0 = conj(a_0) g_0.
    @staticmethod
    def forward(ctx, a, b, h0):
        batch, steps, channels = a.shape
        h = torch.empty_like(a)
        last = a.new_empty(batch, channels)
        _launch(_fwd_tuned, scan_fwd_kernel, batch, channels,
                torch.view_as_real(a), torch.view_as_real(b), None if h0 is None else torch.view_as_real(h0),
                torch.view_as_real(h), torch.view_as_real(last), steps, channels, HAS_H0=h0 is not None)
        ctx.save_for_backward(a, h, h0)
        return h, last

    @staticmethod
    def backward(ctx, grad_h, grad_last):
        a, h, h0 = ctx.saved_tensors
        batch, steps, channels = a.shape
        grad_h, grad_last = resolved(grad_h).contiguous(), resolved(grad_last).contiguous()
        grad_a, grad_b = torch.empty_like(a), torch.empty_like(a)
        grad_h0 = None if h0 is None else torch.empty_like(h0)
        real = torch.view_as_real
        _launch(_bwd_tuned, scan_bwd_kernel, batch, channels,
                real(a), real(h), None if h0 is None else real(h0), real(grad_h), real(grad_last), real(grad_a),
                real(grad_b), None if h0 is None else real(grad_h0), steps, channels, HAS_H0=h0 is not None)
        return grad_a, grad_b, grad_h0


def _validate(where: str, a, b, initial_state, return_state) -> None:
    """Raise what the reference raises for these arguments (its checks and messages), then what only this backend
    refuses: dtype problems as ``TypeError``, shape and device problems as ``ValueError``."""
    require_complex(where, a=a, b=b)
    if a.dim() < 2:
        raise ValueError(f"{where}: argument 'a' must be c[B, T, ...], got shape {tuple(a.shape)}")
    require_same_shape(where, a=a, b=b)
    if a.dtype != b.dtype:
        raise TypeError(f"{where}: 'a' and 'b' must share one dtype, got {a.dtype}, {b.dtype}")
    if a.shape[1] == 0:
        raise ValueError(f"{where}: argument 'a' has no time steps (T=0), shape {tuple(a.shape)}")
    if initial_state is not None:  # the reference's own check (it allocates zeros for a missing state)
        _check_scan(where, a, b, initial_state, "initial_state", "c[B, T, ...]", time_dim=True)
    if not isinstance(return_state, bool):
        raise TypeError(f"{where}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    if a.numel() == 0:
        raise ValueError(f"{where}: the triton backend takes non-empty inputs only: argument 'a' must be "
                         f"c[B, T, ...] with no zero dim, got shape {tuple(a.shape)}")
    tensors = {"a": a, "b": b} if initial_state is None else {"a": a, "b": b, "initial_state": initial_state}
    problem = triton_problem(**tensors)
    if problem:
        raise ValueError(f"{where}: {problem}")


def supports_triton(a, b, initial_state=None, return_state=False) -> tuple[bool, str]:
    """Whether :func:`complex_scan_triton` takes these arguments: ``(True, "")``, or ``(False, reason)``.

    Accepts what the reference accepts (``a, b`` complex64/complex128 ``c[B, T, ...]``, ``T >= 1``, an optional
    ``initial_state`` ``c[B, ...]``, a bool ``return_state``), minus empty tensors, on one CUDA device (CPU tensors
    too under ``TRITON_INTERPRET=1``). Arguments the reference rejects are refused with the reference's own message,
    so that dispatch hands them to it and it raises.
    """
    try:
        _validate("complex_scan", a, b, initial_state, return_state)
    except (TypeError, ValueError) as exc:
        return False, str(exc)
    return True, ""


def complex_scan_triton(a: torch.Tensor, b: torch.Tensor, initial_state: torch.Tensor | None = None,
                        return_state: bool = False):
    """``h_t = a_t * h_{t-1} + b_t`` over the time dim, by the chunked Triton scan (reference's contract).

    Every trailing index is an independent channel (flattened to ``C``); ``h_{-1}`` is ``initial_state`` (0 when
    ``None``). Call through ``cnet.core.ops.complex_scan``, which validates the arguments and runs the reference
    for whatever :func:`supports_triton` refuses.

    Args:
        a: ``c[B, T, ...]`` coefficients, complex64 or complex128.
        b: ``c[B, T, ...]`` inputs, same shape and dtype.
        initial_state: ``c[B, ...]`` state before the first step, or ``None``. Differentiable.
        return_state: also return the last state ``h_{T-1}`` ``c[B, ...]``.

    Returns:
        ``h`` ``c[B, T, ...]``, or ``(h, h_last)`` when ``return_state``.

    Raises:
        TypeError: what the reference raises as TypeError (``a``, ``b`` or ``initial_state`` not complex, their
            dtypes differ, ``return_state`` not a bool).
        ValueError: what the reference raises as ValueError (shapes, ``T = 0``); empty inputs; inputs not on one
            CUDA device (CPU is accepted under ``TRITON_INTERPRET=1``).

    Backward: the adjoint recurrence ``g_t = grad_h_t + conj(a_{t+1}) g_{t+1}`` by the same chunked scan in
    reverse time; ``grad_b = g``, ``grad_a_t = g_t conj(h_{t-1})``, ``grad_initial_state = conj(a_0) g_0``.

    Source: quantum-shortcut paper section 5 (chunked scan); papers/NOTES.md "Quantum-shortcut models", "LRU".
    """
    _validate("complex_scan_triton", a, b, initial_state, return_state)
    a, b, initial_state = resolved(a), resolved(b), resolved(initial_state)  # kernels read raw memory
    batch, steps = a.shape[:2]
    channels = math.prod(a.shape[2:])
    flat = (batch, steps, channels)
    h0 = None if initial_state is None else initial_state.reshape(batch, channels).contiguous()
    h, last = _TritonScan.apply(a.reshape(flat).contiguous(), b.reshape(flat).contiguous(), h0)
    h = h.reshape(a.shape)
    return (h, last.reshape(a.shape[:1] + a.shape[2:])) if return_state else h
