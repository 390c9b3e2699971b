"""Born-rule attention (CNet's ``BornAttention``), quadratic reference form.

The score of query ``k`` against key ``m`` is the squared modulus of their complex inner product,
``s_km = |sum_d q_kd conj(k_md)|^2``; a row is normalised by its (causal) sum plus ``eps``, and the output is the
weighted sum of the values. Source: CNet paper section 11 ("Closing it: Born-rule attention");
papers/NOTES.md "Born attention (CNet)".
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex, require_rank, require_same_shape

__all__ = ["born_attention", "EXAMPLES"]


def _future(t: int, device) -> torch.Tensor:
    """``b[T, T]`` mask of the entries a causal query may not see (key index > query index)."""
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)


def _weights(q: torch.Tensor, k: torch.Tensor, causal: bool, eps: float):
    """Overlaps ``c[B, H, T, T]``, weights ``r[B, H, T, T]`` and safe normaliser ``r[B, H, T, 1]`` (0 -> 1)."""
    c = q @ k.conj().transpose(-1, -2)
    s = c.real.square() + c.imag.square()
    if causal:
        s = s.masked_fill(_future(q.shape[-2], q.device), 0.0)
    n = s.sum(-1, keepdim=True) + eps
    # A row whose normaliser is 0 has every score 0 (s >= 0, eps >= 0); dividing it by 1 gives the 0/0 -> 0 rule.
    n = torch.where(n > 0, n, torch.ones_like(n))
    return c, s / n, n


class _BornAttention(torch.autograd.Function):
    # Derivation (G = grad_out = 2 dL/dconj(O); PyTorch convention, see cnet.core.wirtinger):
    #   O = A V with real A: holomorphic in V, so grad_V = A^T G; the real derivative dL/dA = Re(G V^H).
    #   A_km = s_km / n_k, n_k = sum_m' s_km' + eps: dL/ds_km = (dL/dA_km - sum_m' dL/dA_km' A_km') / n_k on the
    #   kept entries (0 on the causally masked ones).
    #   s = c conj(c) is real: grad_c = 2 (dL/ds) c. (In a 0/0 row c = 0 on the kept entries, so its gradient is 0.)
    #   c = Q K^H: holomorphic in Q and in conj(K), so grad_Q = grad_c K and grad_K = grad_c^H Q.
    # c, A and n are recomputed from the saved inputs rather than stored.
    @staticmethod
    def forward(ctx, q, k, v, causal, eps):
        _, a, _ = _weights(q, k, causal, eps)
        ctx.save_for_backward(q, k, v)
        ctx.causal, ctx.eps = causal, eps
        return a.to(v.dtype) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        c, a, n = _weights(q, k, ctx.causal, ctx.eps)
        grad_v = a.transpose(-1, -2).to(grad_out.dtype) @ grad_out
        grad_a = (grad_out @ v.conj().transpose(-1, -2)).real
        grad_s = (grad_a - (grad_a * a).sum(-1, keepdim=True)) / n
        if ctx.causal:
            grad_s = grad_s.masked_fill(_future(q.shape[-2], q.device), 0.0)
        grad_c = 2 * grad_s * c
        grad_q = grad_c @ k
        grad_k = grad_c.conj().transpose(-1, -2) @ q
        return grad_q, grad_k, grad_v, None, None


def born_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                   eps: float = 0.0) -> torch.Tensor:
    """Born-rule attention: scores are squared moduli of complex overlaps, normalised by their row sum.

    With ``c_km = sum_d q_kd conj(k_md)`` and ``s_km = |c_km|^2`` (no ``1/sqrt(D)`` scale),
    ``A_km = s_km / (sum_{m' <= k} s_km' + eps)`` (the sum runs over every ``m'`` when ``causal=False``, and
    ``A_km = 0`` for ``m > k`` when causal) and ``O_k = sum_m A_km v_m``. A row whose normaliser is 0 (every score
    0 and ``eps = 0``) gets weights 0, so its output is 0 (the 0/0 -> 0 rule). With ``eps = 0`` every other row's
    weights sum to 1; ``eps > 0`` shrinks rows whose total score is small.

    Args:
        q: ``c[B, H, T, D]`` queries, complex64 or complex128.
        k: ``c[B, H, T, D]`` keys, same shape and dtype as ``q``.
        v: ``c[B, H, T, Dv]`` values, same dtype; may differ from ``q`` only in the last dim.
        causal: when true, query ``k`` sees keys ``m <= k`` only.
        eps: non-negative constant added to each row's normaliser.

    Returns:
        ``c[B, H, T, Dv]`` of the inputs' dtype.

    Raises:
        TypeError: an input is not complex, the three dtypes differ, or ``causal`` is not a bool.
        ValueError: an input is not 4-D, ``q`` and ``k`` shapes differ, ``v`` differs from ``q`` in a dim other
            than the last, or ``eps`` is negative or not finite.

    Backward: closed form for ``q``, ``k`` and ``v`` (see the comment on ``_BornAttention``); ``O(T^2)`` memory.

    Source: CNet paper section 11 and Figure 2; papers/NOTES.md "Born attention (CNet)".
    """
    require_complex("born_attention", q=q, k=k, v=v)
    require_rank("born_attention", 4, "c[B, H, T, D]", q=q, k=k, v=v)
    require_same_shape("born_attention", q=q, k=k)
    if v.shape[:-1] != q.shape[:-1]:
        raise ValueError(f"born_attention: argument 'v' must match 'q' in [B, H, T] (only D may differ), got "
                         f"q={tuple(q.shape)}, v={tuple(v.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"born_attention: 'q', 'k' and 'v' must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not isinstance(causal, bool):
        raise TypeError(f"born_attention: argument 'causal' must be a bool, got {type(causal).__name__}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < float("inf"):
        raise ValueError(f"born_attention: argument 'eps' must be a finite number >= 0, got {eps!r}")
    return _BornAttention.apply(q, k, v, causal, float(eps))


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 1, 7, 3, dtype=torch.complex128, generator=gen) for _ in range(2))
    v = torch.randn(1, 1, 7, 4, dtype=torch.complex128, generator=gen)
    return tuple(t.to(dtype=dtype, device=device) for t in (q, k, v)), {"causal": True, "eps": 0.0}


EXAMPLES = {"born_attention": _example}
