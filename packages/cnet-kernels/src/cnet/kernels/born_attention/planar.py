"""Born attention on real/imaginary planes with real GEMMs (backend ``planar``, CUDA).

The overlap ``c = Q K^H`` is formed as two real matrix products on concatenated planes,

    Re c = [Qr, Qi] [Kr, Ki]^T        Im c = [Qr, Qi] [-Ki, Kr]^T

so the GPU runs real (TF32/bf16-eligible) GEMMs instead of complex64 ones, and ``O = A V`` is one real GEMM on
``[Vr, Vi]``. Gradients come from autograd through these real ops, which is exact for a real-composed map;
parity with the reference's closed-form Wirtinger backward is checked by ``cnet check-op born_attention
--device cuda`` and the package tests. Memory is still ``O(T^2)`` per head: this is the quadratic form.
Source: CNet paper section 11; papers/NOTES.md "Born attention (CNet)".
"""

from __future__ import annotations

import math

import torch

__all__ = ["born_attention_planar", "supports_planar"]

MAX_T = 8192  # beyond this the T x T planes stop fitting comfortably; the reference takes over


def _argument_problem(q, k, v, causal, eps, decay) -> str:
    """Why the planar backend cannot take these arguments, whatever their device ("" when it can).

    Everything the reference rejects is refused here, so dispatch hands such a call to the reference, which
    raises the proper error; ``decay`` (which the planar form does not implement) is refused too.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.complex64:
            got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
            return f"argument {name!r} is not a complex64 tensor (got {got}); planar takes complex64 only"
    if q.dim() != 4 or q.shape != k.shape or v.dim() != 4 or v.shape[:-1] != q.shape[:-1]:
        return "shapes are not q, k c[B, H, T, D] and v c[B, H, T, Dv] (validated by the reference)"
    if not isinstance(causal, bool):
        return f"argument 'causal' is not a bool (got {type(causal).__name__})"
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
        return f"argument 'eps' is not a finite number >= 0 (got {eps!r})"
    if decay is not None:
        return "planar backend has no decay"
    if q.shape[-2] > MAX_T:
        return f"T={q.shape[-2]} > {MAX_T}"
    return ""


def supports_planar(q, k, v, causal=True, eps=0.0, decay=None) -> tuple[bool, str]:
    """Accept the reference's valid arguments as complex64 tensors on one CUDA device with ``T <= MAX_T``, no
    ``decay``; else say why not (arguments the reference rejects are refused so that it raises the error)."""
    problem = _argument_problem(q, k, v, causal, eps, decay)
    if problem:
        return False, problem
    if not (q.is_cuda and q.device == k.device == v.device):
        return False, "inputs are not CUDA tensors on one device"
    return True, ""


def born_attention_planar(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                          eps: float = 0.0, decay: None = None) -> torch.Tensor:
    """Born attention with the reference's contract: q, k ``c[B, H, T, D]``, v ``c[B, H, T, Dv]`` -> ``c[B, H, T, Dv]``.

    ``s_km = |sum_d q_kd conj(k_md)|^2``, ``A_km = s_km / (sum_{m' <= k} s_km' + eps)`` (0/0 -> 0), ``O = A V``.
    Call through ``cnet.core.ops.born_attention`` (which validates arguments, and uses the reference for what
    :func:`supports_planar` refuses) rather than directly.

    Raises:
        ValueError: ``decay`` is not None (the planar form has no decay; the reference implements it).
    """
    if decay is not None:
        raise ValueError("born_attention_planar: argument 'decay' is not supported by the planar backend; call "
                         "cnet.core.ops.born_attention, which runs the reference for it")
    qp = torch.cat([q.real, q.imag], dim=-1)
    re = qp @ torch.cat([k.real, k.imag], dim=-1).transpose(-1, -2)
    im = qp @ torch.cat([-k.imag, k.real], dim=-1).transpose(-1, -2)
    s = re.square() + im.square()
    if causal:
        t = q.shape[-2]
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), 0.0)
    n = s.sum(-1, keepdim=True) + eps
    a = s / torch.where(n > 0, n, torch.ones_like(n))
    dv = v.shape[-1]
    o = a @ torch.cat([v.real, v.imag], dim=-1)
    return torch.complex(o[..., :dv], o[..., dv:])
