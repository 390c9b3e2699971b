"""Quadratic Born attention as flash-style Triton kernels (backend ``triton``, CUDA, priority 20).

Same operator as :func:`cnet.core.ops.reference.born_attention`: ``c_km = sum_d q_kd conj(k_md)``,
``s_km = |c_km|^2`` (times ``gamma_h^(k-m)`` with a decay), ``A = s / (rowsum(s) + eps)`` with 0/0 -> 0, ``O = A V``,
causal or not. The ``T x T`` scores are never written to device memory, forward or backward: memory is
``O(B H T (D + Dv))``, and each ``T x T`` tile costs 3 (forward) + 11 (backward) real products with 2D-wide planes
(``D = Dv``), the tiles past the diagonal skipped when causal. Kernels and launch details:
:mod:`cnet.kernels.born_attention.triton_kernels`.

Backward (the flash pattern; ``G = grad_out`` in PyTorch's convention, the reference's closed form tile by tile):
``delta_k = Re <G_k, O_k>``, ``dL/dA_km = Re(G_k . conj v_m)``, ``grad_s = w (dL/dA - delta) / n`` (0 on masked
entries, ``w`` the decay), ``grad_c = 2 grad_s c``, ``grad_q = grad_c K``, ``grad_k = grad_c^H Q``,
``grad_v = A^T G``; ``n`` is the per-row normaliser the forward stored.

Compute precision of the ``tl.dot`` inputs (accumulation is always fp32; inputs and outputs are complex64):

* ``"tf32"`` (the default): fp32 planes, TF32 tensor cores (operands rounded to a 10-bit mantissa). A CPU emulation
  of that rounding (T = 1024 and 2048, D = 64) puts output and gradient errors at 3e-4 to 4e-3 of their largest
  entry. The default because full fp32 runs on CUDA cores at about an eighth of the TF32 rate (DESIGN.md
  section 7) and training tolerates such errors.
* ``"ieee"``: fp32 products, the accuracy of the planar backend, slowest.
* ``"bf16"``: the planes (and the score tiles of the second products) rounded to bf16: fastest, half the operand
  bytes; errors of 3e-3 to 1e-2 of the largest entry in the same emulation.

Dispatched calls (``cnet.core.ops.born_attention``) use the module-level :data:`PRECISION`; set
``cnet.kernels.born_attention.triton_quadratic.PRECISION = "bf16"`` to switch them, or pass ``precision=`` when
calling :func:`born_attention_triton` directly. Source: CNet paper section 11; papers/NOTES.md "Born attention
(CNet)".
"""

from __future__ import annotations

import torch

from cnet.core.ops.reference.attention import check_attention_inputs, decay_rates
from cnet.kernels.triton_support import triton_problem

__all__ = ["born_attention_triton", "supports_triton", "PRECISION", "PRECISIONS", "MAX_HEAD_DIM"]

PRECISIONS = ("tf32", "ieee", "bf16")
PRECISION = "tf32"  # the compute precision of dispatched calls; one of PRECISIONS (see the module docstring)
MAX_HEAD_DIM = 128  # complex head dims above this leave too few registers for a row block; planar/reference run
# log2 of the decay is clamped to >= this: a rate that is 0 in float32 (1e-50, 5e-324) has log2 = -inf, and the
# kernels' lag-0 weight exp2(0 * -inf) would be NaN. Every positive float32 has log2 >= -149, so only such rates
# change, and with the floor lag 0 weighs exactly 1 and every lag >= 1 underflows to 0, as the reference's 0^lag.
LOG2_DECAY_FLOOR = -256.0


def _validate(where: str, q, k, v, causal, eps, decay) -> torch.Tensor | None:
    """Raise what the reference raises for these arguments, then what only this backend refuses; return the
    decay rates ``r[H]`` (float32 on the inputs' device) or ``None``."""
    check_attention_inputs(where, q, k, v, eps)
    if not isinstance(causal, bool):
        raise TypeError(f"{where}: argument 'causal' must be a bool, got {type(causal).__name__}")
    if decay is not None and not causal:
        raise ValueError(f"{where}: argument 'decay' needs causal=True (the decay runs over past tokens)")
    gamma = decay_rates(where, decay, q.shape[1], q)
    if q.dtype != torch.complex64:
        raise TypeError(f"{where}: the triton backend takes complex64 inputs only, got {q.dtype}")
    if 0 in q.shape or 0 in v.shape:
        raise ValueError(f"{where}: the triton backend takes non-empty inputs only, got q={tuple(q.shape)}, "
                         f"v={tuple(v.shape)}")
    if max(q.shape[-1], v.shape[-1]) > MAX_HEAD_DIM:
        raise ValueError(f"{where}: the triton backend takes head dims up to {MAX_HEAD_DIM}, got D={q.shape[-1]}, "
                         f"Dv={v.shape[-1]}")
    problem = triton_problem(q=q, k=k, v=v)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return gamma


def supports_triton(q, k, v, causal=True, eps=0.0, decay=None) -> tuple[bool, str]:
    """Accept what the reference accepts as non-empty complex64 tensors on one CUDA device (CPU under the
    interpreter) with head dims up to :data:`MAX_HEAD_DIM`; else ``(False, reason)``. Arguments the reference
    rejects are refused with the reference's own message, so that dispatch hands them to it and it raises."""
    try:
        _validate("born_attention", q, k, v, causal, eps, decay)
    except (TypeError, ValueError) as exc:
        return False, str(exc)
    return True, ""


class _BornAttentionTriton(torch.autograd.Function):
    # Saves the inputs, the output and the per-row normaliser n; the backward recomputes the tiles (see the module
    # docstring for the formulas and cnet.kernels.born_attention.triton_kernels for the kernels, imported here
    # because Triton may be missing, which supports_triton reports).
    @staticmethod
    def forward(ctx, q, k, v, causal, eps, log2g, precision):
        from cnet.kernels.born_attention.triton_kernels import attention_forward

        o, n = attention_forward(q, k, v, log2g, causal, eps, precision)
        ctx.save_for_backward(q, k, v, o, n, log2g)
        ctx.causal, ctx.precision = causal, precision
        return o

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        from cnet.kernels.born_attention.triton_kernels import attention_backward

        q, k, v, o, n, log2g = ctx.saved_tensors
        grads = attention_backward(q, k, v, o, n, grad_out, log2g, ctx.causal, ctx.precision)
        return (*grads, None, None, None, None)


def born_attention_triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True, eps: float = 0.0,
                          decay: float | torch.Tensor | None = None, *, precision: str | None = None) -> torch.Tensor:
    """Born attention with the reference's contract, as flash-style Triton kernels (forward and backward).

    ``c_km = sum_d q_kd conj(k_md)``, ``s_km = gamma_h^(k-m) |c_km|^2`` (``gamma = 1`` without decay),
    ``A_km = s_km / (sum_{m' <= k} s_km' + eps)`` (every ``m'`` when not causal; 0/0 -> 0), ``O = A V``. Call through
    ``cnet.core.ops.born_attention`` (which hands what :func:`supports_triton` refuses to the reference) unless you
    want the ``precision`` keyword.

    Args:
        q: ``c[B, H, T, D]`` queries, complex64, ``D <= MAX_HEAD_DIM``.
        k: ``c[B, H, T, D]`` keys, complex64.
        v: ``c[B, H, T, Dv]`` values, complex64, ``Dv <= MAX_HEAD_DIM``.
        causal: query ``k`` sees keys ``m <= k`` only.
        eps: non-negative constant added to each row's normaliser.
        decay: ``None``, a number or ``r[H]`` with rates in (0, 1] (causal only); a constant without gradient.
        precision: ``"tf32"``, ``"ieee"`` or ``"bf16"`` compute for the ``tl.dot`` inputs; ``None`` reads
            :data:`PRECISION` (default ``"tf32"``).

    Returns:
        ``c[B, H, T, Dv]`` complex64; differentiable in ``q``, ``k`` and ``v`` (once).

    Raises:
        TypeError: what the reference raises (non-complex or mixed dtypes, ``causal`` not a bool, ``decay`` of a
            wrong type); inputs that are not complex64.
        ValueError: what the reference raises (shapes, ``eps``, ``decay`` values or ``decay`` without ``causal``);
            empty inputs, head dims above :data:`MAX_HEAD_DIM`, inputs not on one CUDA device (CPU is accepted
            under ``TRITON_INTERPRET=1``), or an unknown ``precision``.

    Source: CNet paper section 11; papers/NOTES.md "Born attention (CNet)".
    """
    where = "born_attention_triton"
    gamma = _validate(where, q, k, v, causal, eps, decay)
    precision = PRECISION if precision is None else precision
    if precision not in PRECISIONS:
        raise ValueError(f"{where}: argument 'precision' (or triton_quadratic.PRECISION) must be one of "
                         f"{', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    log2g = None if gamma is None else torch.log2(gamma.double()).clamp(min=LOG2_DECAY_FLOOR).float()
    return _BornAttentionTriton.apply(q, k, v, causal, float(eps), log2g, precision)
