"""Chunked complex gated linear attention in Triton (backend ``triton``): autograd wiring, blocks, ``supports``.

The forward sweeps the chunks of each batch-head once, carrying the ``D x Dv`` state in registers and storing the
state at every chunk boundary, then computes every chunk's outputs in parallel; the backward sweeps in reverse for
the state gradients at the boundaries, then computes every chunk's input gradients in parallel (see
:mod:`cnet.kernels.gated_linear_attention.kernels`). Cost ``O(T L D)`` per head for chunk length ``L`` instead of
the reference's ``O(T^2 D)``; extra memory is the ``(T / L + 1)`` stored states and state gradients.
Source: CNet README (GatedLinearAttention); papers/NOTES.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from cnet.core.ops.reference.attention import check_attention_inputs
from cnet.core.ops.reference.gla import check_gate_and_state, check_gate_logits
from cnet.kernels.gated_linear_attention.kernels import (
    gla_bwd_dkv_kernel,
    gla_bwd_dq_kernel,
    gla_bwd_states_kernel,
    gla_fwd_out_kernel,
    gla_fwd_states_kernel,
)
from cnet.kernels.triton_support import interpreting, resolved, triton_problem

__all__ = ["gated_linear_attention_triton", "supports_triton", "MAX_D", "CUDA_MAX_D", "GATE_LOGIT_FLOOR"]

MAX_D = 64  # key/query width held in registers per program; wider heads run on the reference
# Widest head taken on CUDA. The D = 64 launches (sm_90, Triton 3.6.0: the first D = 64 backward raised "an illegal
# memory access was encountered") are refused until they pass on the GPU; every offset of every kernel stays inside
# its buffer at the D = 64 chunk/blocks in the interpreter (tests/test_gla_triton.py), so the fault is not in the
# index arithmetic found so far. The interpreter keeps running D <= MAX_D.
CUDA_MAX_D = 32
_PRECISIONS = ("tf32x3", "tf32", "ieee")
# Gate logits are clamped to >= this before the kernels. sigma(-110) = e^-110 < 2^-150 rounds to 0 in float32, so a
# clamped gate (-inf included: a full reset) discounts the past to exactly 0 as the reference does, and its
# gradient is 0 as the reference's (sigma(g) times discounts that are 0); the kernels' within-chunk cumulative
# log-discounts stay finite (-inf ones give NaN differences) and small enough to keep their float32 resolution.
GATE_LOGIT_FLOOR = -110.0


# (precision, padded D <= 32) -> (chunk length, warps of the per-chunk kernels): the shapes whose kernels compile
# for sm_90 with the fewest register spills (ptxas resource usage; larger tiles spill kilobytes per thread).
_CHUNK_SHAPES = {("tf32x3", True): (32, 8), ("tf32x3", False): (16, 4), ("tf32", True): (32, 4),
                 ("tf32", False): (64, 8), ("ieee", True): (32, 8), ("ieee", False): (16, 4)}


@dataclass(frozen=True)
class _Blocks:
    """The backend's own launch choices for one head shape and precision: chunk length ``chunk``, padded key width
    ``d``, value columns per program (16: narrow blocks give the sequential sweeps more programs and keep the
    per-chunk tiles in registers) and warps of the sweeps and of the per-chunk kernels."""

    chunk: int
    d: int
    dv: int
    sweep_warps: int
    chunk_warps: int

    @classmethod
    def choose(cls, d: int, precision: str) -> _Blocks:
        block_d = max(16, triton.next_power_of_2(d))
        if interpreting():
            return cls(16, block_d, 16, 4, 4)
        chunk, warps = _CHUNK_SHAPES[precision, block_d <= 32]
        return cls(chunk, block_d, 16, 4, warps)

    def sweep(self, precision: str) -> dict:
        return {"CHUNK": self.chunk, "BLOCK_D": self.d, "BLOCK_DV": self.dv, "PRECISION": precision,
                "num_warps": self.sweep_warps}

    def per_chunk(self, precision: str) -> dict:
        return {"CHUNK": self.chunk, "BLOCK_D": self.d, "BLOCK_DV": self.dv, "PRECISION": precision,
                "num_warps": self.chunk_warps}


class _TritonGLA(torch.autograd.Function):
    # Same contract and closed-form adjoint as cnet.core.ops.reference.gla._GatedLinearAttention, evaluated chunk by
    # chunk (derivation in the kernels' docstrings). Inputs: q, k c[B, H, T, D], v c[B, H, T, Dv] contiguous
    # complex64, g r[B, H, T] float32, s0 c[B, H, D, Dv] or None.
    @staticmethod
    def forward(ctx, q, k, v, g, s0, precision):
        batch, heads, steps, d = q.shape
        dv = v.shape[-1]
        bh = batch * heads
        blocks = _Blocks.choose(d, precision)
        n_chunks = triton.cdiv(steps, blocks.chunk)
        real = torch.view_as_real
        states = q.new_empty(bh, n_chunks + 1, d, dv, 2, dtype=torch.float32)
        gla_fwd_states_kernel[(bh, triton.cdiv(dv, blocks.dv))](
            real(k), real(v), g, None if s0 is None else real(s0), states, steps, d, dv, n_chunks,
            HAS_S0=s0 is not None, **blocks.sweep(precision))
        o = torch.empty_like(v)
        gla_fwd_out_kernel[(bh * n_chunks, triton.cdiv(dv, blocks.dv))](
            real(q), real(k), real(v), g, states, real(o), steps, d, dv, n_chunks, **blocks.per_chunk(precision))
        ctx.save_for_backward(q, k, v, g, states)
        ctx.has_s0, ctx.precision = s0 is not None, precision
        final = torch.view_as_complex(states[:, -1]).reshape(batch, heads, d, dv).clone()
        return o, final

    @staticmethod
    def backward(ctx, grad_o, grad_s):
        q, k, v, g, states = ctx.saved_tensors
        batch, heads, steps, d = q.shape
        dv = v.shape[-1]
        bh = batch * heads
        blocks = _Blocks.choose(d, ctx.precision)
        n_chunks = states.shape[1] - 1
        real = torch.view_as_real
        grad_o = real(resolved(grad_o).contiguous())
        dstates = torch.empty_like(states)
        gla_bwd_states_kernel[(bh, triton.cdiv(dv, blocks.dv))](
            real(q), g, grad_o, real(resolved(grad_s).contiguous()), dstates, steps, d, dv, n_chunks,
            **blocks.sweep(ctx.precision))
        n_vblocks = triton.cdiv(dv, blocks.dv)
        part_q = q.new_empty(n_vblocks, bh, steps, d, 2, dtype=torch.float32)
        part_k = torch.empty_like(part_q)
        part_l = g.new_empty(n_vblocks, bh, steps)
        grad_v = torch.empty_like(v)
        grid = (bh * n_chunks, n_vblocks)
        gla_bwd_dq_kernel[grid](real(q), real(k), real(v), g, states, dstates, grad_o, part_q, part_l,
                                steps, d, dv, n_chunks, bh, **blocks.per_chunk(ctx.precision))
        gla_bwd_dkv_kernel[grid](real(q), real(k), real(v), g, dstates, grad_o, part_k, real(grad_v),
                                 steps, d, dv, n_chunks, bh, **blocks.per_chunk(ctx.precision))
        grad_q = torch.view_as_complex(part_q.sum(0)).reshape(q.shape)
        grad_k = torch.view_as_complex(part_k.sum(0)).reshape(k.shape)
        grad_g = part_l.sum(0).reshape(g.shape) * torch.sigmoid(-g)
        grad_s0 = torch.view_as_complex(dstates[:, 0]).reshape(grad_s.shape) if ctx.has_s0 else None
        return grad_q, grad_k, grad_v, grad_g, grad_s0, None


def _validate(where: str, q, k, v, g, initial_state, return_state) -> None:
    """Raise what the reference raises for these arguments (its checks and messages), then what only this backend
    refuses: dtype problems as ``TypeError``, shape, size and device problems as ``ValueError``; only the head-width
    limit depends on the device (``CUDA_MAX_D`` on CUDA)."""
    check_attention_inputs(where, q, k, v)
    if q.shape[-2] == 0:
        raise ValueError(f"{where}: the inputs have no tokens (T=0), q={tuple(q.shape)}")
    if not isinstance(return_state, bool):
        raise TypeError(f"{where}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    if initial_state is not None:  # the reference's own checks (it allocates a zero state when there is none)
        check_gate_and_state(where, g, initial_state, "initial_state", q, v)
    else:
        check_gate_logits(where, g, q)
    if q.dtype != torch.complex64:
        raise TypeError(f"{where}: the triton backend takes complex64 q, k, v (and float32 g) only, got {q.dtype}")
    if q.numel() == 0 or v.numel() == 0:
        raise ValueError(f"{where}: the triton backend takes non-empty inputs only: q, k c[B, H, T, D] and "
                         f"v c[B, H, T, Dv] with no zero dim, got q={tuple(q.shape)}, v={tuple(v.shape)}")
    if q.shape[-1] > MAX_D:
        raise ValueError(f"{where}: the triton backend takes head widths D <= {MAX_D} (q, k c[B, H, T, D]), got "
                         f"D={q.shape[-1]} in q={tuple(q.shape)}")
    if q.is_cuda and q.shape[-1] > CUDA_MAX_D:
        raise ValueError(f"{where}: the triton backend takes head widths D <= {CUDA_MAX_D} on CUDA (q, k "
                         f"c[B, H, T, D]), got D={q.shape[-1]} in q={tuple(q.shape)}: the D > {CUDA_MAX_D} kernels "
                         "hit an illegal memory access on sm_90 (Triton 3.6.0) whose cause is not found yet, so the "
                         "reference runs")
    tensors = {"q": q, "k": k, "v": v, "g": g}
    if initial_state is not None:
        tensors["initial_state"] = initial_state
    problem = triton_problem(**tensors)
    if problem:
        raise ValueError(f"{where}: {problem}")


def supports_triton(q, k, v, g, initial_state=None, return_state=False) -> tuple[bool, str]:
    """Whether :func:`gated_linear_attention_triton` takes these arguments: ``(True, "")`` or ``(False, reason)``.

    Accepts what the reference accepts in complex64 (``g`` float32), minus empty tensors and ``D > MAX_D`` (``D >
    CUDA_MAX_D`` on CUDA), on one CUDA device (CPU tensors too under ``TRITON_INTERPRET=1``). Arguments the
    reference rejects are refused with the reference's own message, so that dispatch hands them to it and it raises.
    """
    try:
        _validate("gated_linear_attention", q, k, v, g, initial_state, return_state)
    except (TypeError, ValueError) as exc:
        return False, str(exc)
    return True, ""


def gated_linear_attention_triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                                  initial_state: torch.Tensor | None = None, return_state: bool = False, *,
                                  precision: str = "tf32x3"):
    """Complex gated linear attention by chunks in Triton, with the reference's contract.

    ``S_t = sigma(g_t) S_{t-1} + conj(k_t) (x) v_t``, ``o_t = sum_d q_td S_t[d, :]`` (``S_{-1}`` = ``initial_state``
    or 0). Call through ``cnet.core.ops.gated_linear_attention``, which validates the arguments and runs the
    reference for whatever :func:`supports_triton` refuses.

    Args:
        q, k: ``c[B, H, T, D]`` complex64, ``D <= MAX_D`` (``D <= CUDA_MAX_D`` on CUDA).
        v: ``c[B, H, T, Dv]`` complex64.
        g: ``r[B, H, T]`` float32 gate logits; ``-inf`` (a full reset) is allowed (see ``GATE_LOGIT_FLOOR``).
        initial_state: ``c[B, H, D, Dv]`` complex64 state before the first token, or ``None``. Differentiable.
        return_state: also return ``S_{T-1}`` ``c[B, H, D, Dv]``.
        precision: how ``tl.dot`` multiplies the fp32 planes: ``"tf32x3"`` (default: three TF32 tensor-core
            products, close to fp32), ``"tf32"`` (one, ~1e-3 relative) or ``"ieee"`` (fp32 FMA, slow on GPU).

    Returns:
        ``c[B, H, T, Dv]``, or ``(out, state)`` when ``return_state``.

    Raises:
        TypeError: what the reference raises as TypeError (dtypes, ``return_state`` not a bool); inputs that are
            not complex64 (``g`` float32).
        ValueError: what the reference raises as ValueError (shapes, ``T = 0``); empty inputs, ``D > MAX_D`` (``D >
            CUDA_MAX_D`` on CUDA), inputs not on one CUDA device (CPU under ``TRITON_INTERPRET=1``), or an unknown
            ``precision``.

    Backward: closed form for ``q, k, v, g`` and ``initial_state`` by a reverse sweep over the chunks.

    Source: CNet README (GatedLinearAttention); papers/NOTES.md.
    """
    where = "gated_linear_attention_triton"
    _validate(where, q, k, v, g, initial_state, return_state)
    if precision not in _PRECISIONS:
        raise ValueError(f"{where}: argument 'precision' must be one of {_PRECISIONS}, got {precision!r}")
    # Kernels read raw memory: apply conjugate/negative bits. A logit of -inf (a full reset) would make the kernels'
    # log-discount differences -inf - (-inf) = NaN; at GATE_LOGIT_FLOOR every discount through the gate is already
    # 0 in float32, as in the reference, and clamp's zero gradient below the floor is the reference's limit too.
    q, k, v, g, s0 = (None if x is None else resolved(x).contiguous() for x in (q, k, v, g, initial_state))
    out, state = _TritonGLA.apply(q, k, v, g.clamp(min=GATE_LOGIT_FLOOR), s0, precision)
    return (out, state) if return_state else out
