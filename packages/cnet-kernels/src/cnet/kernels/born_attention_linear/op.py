"""Causal linear Born attention on Triton (backend ``triton``, CUDA): exact, forward and backward.

Real feature map. The Born score is a Frobenius product of Hermitian matrices,
``|<q, k>|^2 = sum_{d,e} Re(q_d conj(q_e)) Re(k_d conj(k_e)) + Im(q_d conj(q_e)) Im(k_d conj(k_e))``, so it is
the dot product of two real vectors of ``D^2`` features: ``Re(k_d conj(k_e))`` for ``d <= e``, ``Im(k_d conj(k_e))``
for ``d > e``, with query weights 2 off the diagonal (the mirrored pair) and 1 on it. The per-head state
``S = sum_m gamma^(age) phi(k_m) [Re v_m, Im v_m]`` is then ``r[D^2, 2 Dv]``: half the size and half the FLOPs of
the complex state ``S[d, e, :]`` of the reference, and every product is a real GEMM (tensor cores, fp32 accumulate).
The normaliser ``Z = sum_m gamma^(age) phi(k_m)`` is a vector ``r[D^2]`` beside it.

Layout. The features are cut into ``(D / BD)^2`` tiles of ``BD x BD`` (``BD = 16``): for a pair of column blocks
``I < J`` one tile holds the real parts and one the imaginary parts; a diagonal block ``I`` holds its triangle of
each. One program per (tile, batch x head, block of ``VB <= 64`` value plane columns) keeps its slice
``S[BD^2, VB]`` (and, in value block 0, ``Z[BD^2]``) in registers and sweeps the chunks of ``C = block_t`` tokens in
order (kernels.sweep_forward): each chunk's queries read the state before the chunk (scaled by ``gamma^(p+1)``),
their partial numerators and normalisers are added atomically into fp32 accumulators over the tiles, then the
chunk's keys and values enter the state. A second kernel per chunk (kernels.intra_forward) adds the quadratic part
inside the chunk and ``eps`` and divides. The chunk states are never stored. Backward: the forward sweep again
reads the state against the output gradient for the query gradients (kernels.sweep_grad_q); the adjoint state
``R`` (gradient of the state) is swept from the last chunk to the first for the key and value gradients
(kernels.sweep_grad_kv); kernels.intra_backward adds the intra-chunk gradients. Real-plane gradients of real-plane
inputs are PyTorch's complex gradients (``dL/dx + i dL/dy``).

Cost and memory. About ``4 T D^2 Dv`` real MACs per head forward (``8 T D^2 Dv`` backward) on tensor cores, plus
``O(T D^2)`` elementwise work for the features. Memory beyond the inputs: forward the output ``c[B, H, T, Dv]``
(its buffer is the fp32 numerator accumulator) and the normaliser ``r[B, H, T]``, both saved for the backward with
``q, k, v``; backward the gradients, the scaled output gradient ``c[B, H, T, Dv]`` and ``r[B, H, T]``. Nothing grows
with ``D^2`` outside registers: ``O(B H T (D + Dv))`` in all. Per program, ``BD^2 x VB`` fp32 of state (64 KB).

Precision: ``"tf32"`` (default; ``CNET_BORN_LINEAR_PRECISION`` overrides it for dispatched calls), ``"bf16"`` (GEMM
operands rounded to bf16, fp32 accumulation: half the operand bytes, coarser results) or ``"ieee"`` (fp32 FMA,
no tensor cores: slow). The internal chunk ``block_t`` is independent of the op's ``chunk`` argument, which only
has to divide ``T`` (the result is the same operator; only rounding differs). Accumulation across tiles uses
atomics, so results may differ in the last bits from run to run.

Not implemented (the reference runs): ``initial_state``, ``return_state``, complex128, ``D > 128``, ``Dv > 64``.
Source: CNet README (linear Born attention, ``setLinear``, ``setDecay``); papers/NOTES.md "Born attention (CNet)",
exact linear form; the backward follows :mod:`cnet.core.ops.reference.linear_attention`.
"""

from __future__ import annotations

import functools
import os

import torch
import triton

from cnet.core.ops.reference.attention import check_attention_inputs, decay_rates
from cnet.kernels.born_attention_linear import kernels
from cnet.kernels.triton_support import interpreting, resolved, triton_problem

__all__ = ["born_attention_linear_triton", "supports_triton", "PRECISIONS", "MAX_D", "MAX_DV", "LOG2_DECAY_FLOOR"]

WHERE = "born_attention_linear_triton"
PRECISIONS = ("tf32", "bf16", "ieee")
MAX_D = 128  # head dim of q and k
MAX_DV = 64  # head dim of v: the state slice 16 x 16 x 2 Dv fp32 stays in registers
# log2 gamma is clamped to >= this: a rate that is 0 in float32 (1e-50, 5e-324) has log2 = -inf and the kernels'
# lag-0 weight exp2(0 * -inf) would be NaN. Every positive float32 has log2 >= -149, so only such rates change; with
# the floor lag 0 weighs exactly 1 and every lag >= 1 (and the chunk carry) underflows to 0, as the reference's 0^lag.
LOG2_DECAY_FLOOR = -256.0
_TILE = 16  # BD, the side of a feature tile
_VALUE_BLOCK = 64  # VB, most value plane columns per sweep program (state slice BD^2 x VB fp32 in registers)


def _block(n: int, least: int = 16) -> int:
    return max(least, triton.next_power_of_2(n))


@functools.cache
def _tiles(d: int, bd: int, device: torch.device) -> torch.Tensor:
    """``int32[(D / BD)^2, 3]``: per feature tile its column blocks ``(I, J)`` and kind (0 Re, 1 Im, 2 diagonal)."""
    nb = triton.cdiv(d, bd)
    rows = [(i, j, kind) for i in range(nb) for j in range(i + 1, nb) for kind in (0, 1)]
    rows += [(i, i, 2) for i in range(nb)]
    return torch.tensor(rows, dtype=torch.int32, device=device)


def _validate(q, k, v, eps, decay, chunk, initial_state, return_state) -> torch.Tensor:
    """Run the reference's argument checks and this backend's limits; return ``log2 gamma`` ``r[H]`` (fp32).

    Raises:
        TypeError, ValueError: as :func:`cnet.core.ops.reference.born_attention_linear`; and for what this backend
            does not implement (the message says so): TypeError for a dtype other than complex64, ValueError else.
    """
    check_attention_inputs(WHERE, q, k, v, eps)
    if isinstance(chunk, bool) or not isinstance(chunk, int):
        raise TypeError(f"{WHERE}: argument 'chunk' must be an int, got {type(chunk).__name__}")
    if chunk < 1:
        raise ValueError(f"{WHERE}: argument 'chunk' must be >= 1, got {chunk}")
    if q.shape[-2] % chunk:
        raise ValueError(f"{WHERE}: T={q.shape[-2]} is not a multiple of chunk={chunk}")
    if not isinstance(return_state, bool):
        raise TypeError(f"{WHERE}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    gamma = decay_rates(WHERE, decay, q.shape[1], q)
    unsupported = "is not implemented by the triton backend (cnet.core.ops.born_attention_linear runs the reference)"
    if initial_state is not None:
        raise ValueError(f"{WHERE}: argument 'initial_state' {unsupported}")
    if return_state:
        raise ValueError(f"{WHERE}: argument 'return_state=True' {unsupported}")
    if q.dtype != torch.complex64:
        raise TypeError(f"{WHERE}: dtype {q.dtype} {unsupported}; it takes complex64 q, k, v")
    if q.shape[-1] > MAX_D or v.shape[-1] > MAX_DV:
        raise ValueError(f"{WHERE}: head dims D={q.shape[-1]}, Dv={v.shape[-1]} beyond D <= {MAX_D}, Dv <= {MAX_DV} "
                         f"{unsupported} (q, k c[B, H, T, D], v c[B, H, T, Dv]; got q={tuple(q.shape)}, "
                         f"v={tuple(v.shape)})")
    if q.numel() == 0 or v.numel() == 0:
        raise ValueError(f"{WHERE}: empty inputs (q {tuple(q.shape)}, v {tuple(v.shape)}) {unsupported}: it takes "
                         "q, k c[B, H, T, D] and v c[B, H, T, Dv] with no zero dim")
    problem = triton_problem(q=q, k=k, v=v)
    if problem:
        raise ValueError(f"{WHERE}: {problem}")
    if gamma is None:
        return q.real.new_zeros(q.shape[1])
    return torch.log2(gamma.float()).clamp(min=LOG2_DECAY_FLOOR)


def supports_triton(q, k, v, eps=0.0, decay=None, chunk=64, initial_state=None, return_state=False):
    """``(True, "")`` when the triton backend takes this call, else ``(False, reason)``: arguments the reference
    rejects (so that it raises the error), and what this backend does not implement (``initial_state``,
    ``return_state``, non-complex64 dtypes, ``D > MAX_D``, ``Dv > MAX_DV``, empty inputs, inputs not on one CUDA
    device)."""
    try:
        _validate(q, k, v, eps, decay, chunk, initial_state, return_state)
    except (TypeError, ValueError) as exc:
        return False, str(exc)
    return True, ""


def _planes(x: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(resolved(x).contiguous())


def _sweep_launch(d: int, dv: int, b: int, h: int, block_t: int, prec: str, device):
    """Grid, tile table and meta-parameters of the sweep kernels."""
    vb = min(_VALUE_BLOCK, _block(2 * dv))
    tiles = _tiles(d, _TILE, device)
    grid = (tiles.shape[0], b * h, triton.cdiv(2 * dv, vb))
    return grid, tiles, dict(BD=_TILE, C=block_t, VB=vb, PREC=prec, num_warps=8, num_stages=1)


def _intra_meta(d: int, dv: int, block_t: int, prec: str) -> dict:
    return dict(BD2=_block(2 * d), BV=_block(2 * dv), C=block_t, PREC=prec, num_warps=8)


class _BornLinearTriton(torch.autograd.Function):
    # Forward and backward as in the module docstring; the gradients of the real planes of q, k, v are PyTorch's
    # complex gradients. With gU = [Re G, Im G] / n and gN = -Re<G, o> / n (G = grad_out) the backward is the
    # adjoint of the real-bilinear map (numerator planes, normaliser) <- (q, k, v); see the reference's derivation.
    @staticmethod
    def forward(ctx, q, k, v, lg, eps, prec, block_t):
        b, h, t, d = q.shape
        dv = v.shape[-1]
        qp, kp, vp = _planes(q), _planes(k), _planes(v)
        num = torch.zeros(b, h, t, dv, 2, dtype=torch.float32, device=q.device)
        den = torch.zeros(b, h, t, dtype=torch.float32, device=q.device)
        grid, tiles, meta = _sweep_launch(d, dv, b, h, block_t, prec, q.device)
        kernels.sweep_forward[grid](qp, kp, vp, tiles, lg, num, den, t, h, d, 2 * dv, **meta)
        kernels.intra_forward[(triton.cdiv(t, block_t), b * h)](qp, kp, vp, lg, num, den, t, h, d, 2 * dv, float(eps),
                                                                **_intra_meta(d, dv, block_t, prec))
        out = torch.view_as_complex(num)
        ctx.save_for_backward(q, k, v, out, den, lg)
        ctx.prec, ctx.block_t = prec, block_t
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, n, lg = ctx.saved_tensors
        b, h, t, d = q.shape
        dv = v.shape[-1]
        prec, block_t = ctx.prec, ctx.block_t
        g = resolved(grad_out).to(torch.complex64)
        gu = _planes(g / n[..., None])
        gn = -(g.conj() * out).real.sum(-1) / n
        qp, kp, vp = _planes(q), _planes(k), _planes(v)
        gq, gk, gv = (torch.zeros_like(x, dtype=torch.float32) for x in (qp, kp, vp))
        grid, tiles, meta = _sweep_launch(d, dv, b, h, block_t, prec, q.device)
        kernels.sweep_grad_q[grid](qp, kp, vp, gu, gn, tiles, lg, gq, t, h, d, 2 * dv, **meta)
        kernels.sweep_grad_kv[grid](qp, kp, vp, gu, gn, tiles, lg, gk, gv, t, h, d, 2 * dv, **meta)
        kernels.intra_backward[(triton.cdiv(t, block_t), b * h)](qp, kp, vp, gu, gn, lg, gq, gk, gv, t, h, d, 2 * dv,
                                                                 **_intra_meta(d, dv, block_t, prec))
        grads = (torch.view_as_complex(x) for x in (gq, gk, gv))
        return *grads, None, None, None, None


def born_attention_linear_triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, eps: float = 0.0,
                                 decay: float | torch.Tensor | None = None, chunk: int = 64,
                                 initial_state: None = None, return_state: bool = False, *,
                                 precision: str | None = None, block_t: int = 32) -> torch.Tensor:
    """Causal Born attention, exact chunkwise linear form, on Triton (same contract as
    :func:`cnet.core.ops.reference.born_attention_linear` without a carried state).

    ``o_k = sum_{m <= k} w_km |c_km|^2 v_m / (sum_{m <= k} w_km |c_km|^2 + eps)``, ``c_km = sum_d q_kd conj(k_md)``,
    ``w_km = gamma_h^(k-m)`` with ``decay`` (else 1), 0/0 -> 0. Differentiable in ``q, k, v`` (closed-form backward
    kernels). Algorithm, memory and precision: see the module docstring.

    Args:
        q, k: ``c[B, H, T, D]`` complex64, ``D <= MAX_D``; on one CUDA device (CPU under ``TRITON_INTERPRET=1``).
        v: ``c[B, H, T, Dv]`` complex64, ``Dv <= MAX_DV``.
        eps: non-negative constant added to each normaliser.
        decay: ``None``, a number, or ``r[H]`` with rates in (0, 1] (a constant: no gradient).
        chunk: positive int dividing ``T`` (checked as the reference does; the kernels tile by ``block_t``).
        initial_state: must be ``None``. return_state: must be ``False``.
        precision: ``"tf32"``, ``"bf16"`` or ``"ieee"`` for the GEMM operands; ``None`` reads
            ``CNET_BORN_LINEAR_PRECISION`` (default ``"tf32"``).
        block_t: tokens per chunk inside the kernels, a power of two >= 16.

    Returns:
        ``c[B, H, T, Dv]`` complex64.

    Raises:
        TypeError, ValueError: what the reference raises for bad arguments; TypeError for complex128 inputs;
            ValueError for ``initial_state``, ``return_state=True``, ``D > MAX_D``, ``Dv > MAX_DV``, empty inputs,
            inputs not on one CUDA device, an unknown ``precision`` or a bad ``block_t``.
    """
    lg = _validate(q, k, v, eps, decay, chunk, initial_state, return_state)
    prec = precision if precision is not None else os.environ.get("CNET_BORN_LINEAR_PRECISION", "tf32")
    if prec not in PRECISIONS:
        raise ValueError(f"{WHERE}: argument 'precision' must be one of {PRECISIONS}, got {prec!r}")
    if isinstance(block_t, bool) or not isinstance(block_t, int) or block_t < 16 or block_t & (block_t - 1):
        raise ValueError(f"{WHERE}: argument 'block_t' must be a power of two >= 16, got {block_t!r}")
    if prec == "bf16" and interpreting():
        prec = "bf16-upcast"  # the interpreter's tl.dot multiplies the raw bits of bf16 operands (kernels._mm)
    q, k, v = resolved(q), resolved(k), resolved(v)  # the kernels read raw memory (view_as_real refuses conj views)
    return _BornLinearTriton.apply(q, k, v, lg.to(device=q.device, dtype=torch.float32).contiguous(), float(eps),
                                   prec, block_t)
