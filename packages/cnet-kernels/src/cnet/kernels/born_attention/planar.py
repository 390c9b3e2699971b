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

import torch

__all__ = ["born_attention_planar", "supports_planar"]

MAX_T = 8192  # beyond this the T x T planes stop fitting comfortably; the reference takes over


def supports_planar(q, k, v, causal=True, eps=0.0) -> tuple[bool, str]:
    """Accept complex64 CUDA inputs of the reference's layout with ``T <= MAX_T``; else say why not."""
    ts = (q, k, v)
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in ts):
        return False, "inputs are not CUDA tensors"
    if not all(t.dtype == torch.complex64 for t in ts):
        return False, "planar backend takes complex64 only"
    if q.dim() != 4 or q.shape != k.shape or v.shape[:-1] != q.shape[:-1]:
        return False, "shapes are not c[B, H, T, D] (validated by the reference)"
    if q.shape[-2] > MAX_T:
        return False, f"T={q.shape[-2]} > {MAX_T}"
    return True, ""


def born_attention_planar(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                          eps: float = 0.0) -> torch.Tensor:
    """Born attention with the reference's contract: q, k ``c[B, H, T, D]``, v ``c[B, H, T, Dv]`` -> ``c[B, H, T, Dv]``.

    ``s_km = |sum_d q_kd conj(k_md)|^2``, ``A_km = s_km / (sum_{m' <= k} s_km' + eps)`` (0/0 -> 0), ``O = A V``.
    Call through ``cnet.core.ops.born_attention`` (which validates arguments) rather than directly.
    """
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
