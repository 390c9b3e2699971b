"""Born-rule attention (CNet's ``BornAttention``), quadratic reference form.

The score of query ``k`` against key ``m`` is the squared modulus of their complex inner product,
``s_km = |sum_d q_kd conj(k_md)|^2``, optionally multiplied by a fixed per-head decay ``gamma_h^(k-m)``; a row is
normalised by its (causal) sum plus ``eps``, and the output is the weighted sum of the values. Source: CNet paper
section 11 ("Closing it: Born-rule attention"); CNet README (``setDecay``); papers/NOTES.md "Born attention (CNet)".
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex, require_rank, require_same_shape

__all__ = ["born_attention", "check_attention_inputs", "decay_rates", "EXAMPLES"]


def _future(t: int, device) -> torch.Tensor:
    """``b[T, T]`` mask of the entries a causal query may not see (key index > query index)."""
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)


def check_attention_inputs(where: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, eps=0.0,
                           layout: str = "c[B, H, T, D]") -> None:
    """The argument checks shared by the attention-like ops and their backends (see :func:`born_attention` for the
    errors they raise: TypeError for dtypes, ValueError for ranks, shapes and ``eps``).

    ``layout`` names the expected dims (``"c[B, H, D]"`` for one token); ``v`` may differ from ``q`` in the last.
    """
    dims = [d.strip() for d in layout[2:-1].split(",")]
    require_complex(where, q=q, k=k, v=v)
    require_rank(where, len(dims), layout, q=q, k=k, v=v)
    require_same_shape(where, q=q, k=k)
    if v.shape[:-1] != q.shape[:-1]:
        raise ValueError(f"{where}: argument 'v' must match 'q' in [{', '.join(dims[:-1])}] (only {dims[-1]} may "
                         f"differ), got q={tuple(q.shape)}, v={tuple(v.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"{where}: 'q', 'k' and 'v' must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < float("inf"):
        raise ValueError(f"{where}: argument 'eps' must be a finite number >= 0, got {eps!r}")


def decay_rates(where: str, decay, heads: int, like: torch.Tensor) -> torch.Tensor | None:
    """``decay`` (None, a number, or ``r[H]``) as ``r[H]`` in ``like``'s real dtype and device, validated.

    Raises:
        TypeError: ``decay`` is a bool, a complex or integer tensor, or another type.
        ValueError: not ``[H]`` with ``H = heads``, a value outside (0, 1] (NaN included), or a tensor that
            requires grad (the decay is a fixed constant: no gradient is computed for it).
    """
    if decay is None:
        return None
    real = like.real.dtype
    if isinstance(decay, bool) or not isinstance(decay, (int, float, torch.Tensor)):
        raise TypeError(f"{where}: argument 'decay' must be None, a number or a real tensor r[H], "
                        f"got {type(decay).__name__}")
    if isinstance(decay, torch.Tensor):
        if not decay.is_floating_point():
            raise TypeError(f"{where}: argument 'decay' must be a real floating tensor r[H], got {decay.dtype}")
        if decay.requires_grad:
            raise ValueError(f"{where}: argument 'decay' is a fixed constant and receives no gradient; "
                             f"pass decay.detach()")
        if tuple(decay.shape) != (heads,):
            raise ValueError(f"{where}: argument 'decay' must be r[H] with H={heads} (one rate per head), "
                             f"got shape {tuple(decay.shape)}")
    else:
        decay = torch.full((heads,), float(decay), dtype=torch.float64)
    if not bool(((decay > 0) & (decay <= 1)).all()):
        raise ValueError(f"{where}: argument 'decay' must lie in (0, 1], got {decay.tolist()}")
    return decay.to(dtype=real, device=like.device)


def _decay_matrix(gamma: torch.Tensor, t: int) -> torch.Tensor:
    """``r[H, T, T]`` with ``gamma_h^(k-m)`` for ``m <= k`` and 0 above the diagonal."""
    lag = torch.arange(t, device=gamma.device)
    lag = lag[:, None] - lag[None, :]
    w = gamma[:, None, None] ** lag.clamp(min=0)
    return w.masked_fill(lag < 0, 0.0)


def _weights(q: torch.Tensor, k: torch.Tensor, causal: bool, eps: float, gamma: torch.Tensor | None):
    """Overlaps ``c[B, H, T, T]``, weights ``r[B, H, T, T]`` and safe normaliser ``r[B, H, T, 1]`` (0 -> 1).

    With ``gamma`` (``r[H]``, causal only) also the decay matrix ``r[H, T, T]``, else ``None``.
    """
    c = q @ k.conj().transpose(-1, -2)
    s = c.real.square() + c.imag.square()
    if causal:
        s = s.masked_fill(_future(q.shape[-2], q.device), 0.0)
    w = None
    if gamma is not None:
        w = _decay_matrix(gamma, q.shape[-2])
        s = s * w
    n = s.sum(-1, keepdim=True) + eps
    # A row whose normaliser is 0 has every score 0 (s >= 0, eps >= 0); dividing it by 1 gives the 0/0 -> 0 rule.
    n = torch.where(n > 0, n, torch.ones_like(n))
    return c, s / n, n, w


class _BornAttention(torch.autograd.Function):
    # Derivation (G = grad_out = 2 dL/dconj(O); PyTorch convention, see cnet.core.wirtinger):
    #   O = A V with real A: holomorphic in V, so grad_V = A^T G; the real derivative dL/dA = Re(G V^H).
    #   A_km = s'_km / n_k, n_k = sum_m' s'_km' + eps: dL/ds'_km = (dL/dA_km - sum_m' dL/dA_km' A_km') / n_k on the
    #   kept entries (0 on the causally masked ones).
    #   With a decay, s'_km = w_km s_km for the constant w_km = gamma^(k-m), so dL/ds = w dL/ds'; else s' = s.
    #   s = c conj(c) is real: grad_c = 2 (dL/ds) c. (In a 0/0 row c = 0 on the kept entries, so its gradient is 0.)
    #   c = Q K^H: holomorphic in Q and in conj(K), so grad_Q = grad_c K and grad_K = grad_c^H Q.
    # c, A, n and the decay matrix are recomputed from the saved inputs rather than stored.
    @staticmethod
    def forward(ctx, q, k, v, causal, eps, gamma):
        _, a, _, _ = _weights(q, k, causal, eps, gamma)
        ctx.save_for_backward(q, k, v, gamma)
        ctx.causal, ctx.eps = causal, eps
        return a.to(v.dtype) @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, gamma = ctx.saved_tensors
        c, a, n, w = _weights(q, k, ctx.causal, ctx.eps, gamma)
        grad_v = a.transpose(-1, -2).to(grad_out.dtype) @ grad_out
        grad_a = (grad_out @ v.conj().transpose(-1, -2)).real
        grad_s = (grad_a - (grad_a * a).sum(-1, keepdim=True)) / n
        if ctx.causal:
            grad_s = grad_s.masked_fill(_future(q.shape[-2], q.device), 0.0)
        if w is not None:
            grad_s = grad_s * w
        grad_c = 2 * grad_s * c
        grad_q = grad_c @ k
        grad_k = grad_c.conj().transpose(-1, -2) @ q
        return grad_q, grad_k, grad_v, None, None, None


def born_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True,
                   eps: float = 0.0, decay: float | torch.Tensor | None = None) -> torch.Tensor:
    """Born-rule attention: scores are squared moduli of complex overlaps, normalised by their row sum.

    With ``c_km = sum_d q_kd conj(k_md)`` and ``s_km = |c_km|^2`` (no ``1/sqrt(D)`` scale),
    ``A_km = s_km / (sum_{m' <= k} s_km' + eps)`` (the sum runs over every ``m'`` when ``causal=False``, and
    ``A_km = 0`` for ``m > k`` when causal) and ``O_k = sum_m A_km v_m``. A row whose normaliser is 0 (every score
    0 and ``eps = 0``) gets weights 0, so its output is 0 (the 0/0 -> 0 rule). With ``eps = 0`` every other row's
    weights sum to 1; ``eps > 0`` shrinks rows whose total score is small.

    With ``decay`` (causal only) head ``h`` uses ``s_km = gamma_h^(k-m) |c_km|^2`` for ``m <= k``, in the
    numerator and in the normaliser alike: the current token keeps weight 1 and older ones fade geometrically
    (CNet's ``setDecay``; the README's formula is garbled, this is the reading its "multiplies the score" gives).

    Args:
        q: ``c[B, H, T, D]`` queries, complex64 or complex128.
        k: ``c[B, H, T, D]`` keys, same shape and dtype as ``q``.
        v: ``c[B, H, T, Dv]`` values, same dtype; may differ from ``q`` only in the last dim.
        causal: when true, query ``k`` sees keys ``m <= k`` only.
        eps: non-negative constant added to each row's normaliser.
        decay: ``None`` (no decay), one number for every head, or ``r[H]`` one rate per head, each in (0, 1];
            a fixed constant (cast to the inputs' real dtype) that receives no gradient. ``decay=1`` equals
            ``None``.

    Returns:
        ``c[B, H, T, Dv]`` of the inputs' dtype.

    Raises:
        TypeError: an input is not complex, the three dtypes differ, ``causal`` is not a bool, or ``decay`` is
            not None, a number or a real floating tensor.
        ValueError: an input is not 4-D, ``q`` and ``k`` shapes differ, ``v`` differs from ``q`` in a dim other
            than the last, ``eps`` is negative or not finite, ``decay`` is given with ``causal=False``, is not
            ``[H]``, has a value outside (0, 1], or requires grad.

    Backward: closed form for ``q``, ``k`` and ``v`` (see the comment on ``_BornAttention``); ``O(T^2)`` memory.

    Source: CNet paper section 11 and Figure 2; CNet README (``setDecay``, ``-born_decay``);
    papers/NOTES.md "Born attention (CNet)".
    """
    check_attention_inputs("born_attention", q, k, v, eps)
    if not isinstance(causal, bool):
        raise TypeError(f"born_attention: argument 'causal' must be a bool, got {type(causal).__name__}")
    if decay is not None and not causal:
        raise ValueError("born_attention: argument 'decay' needs causal=True (the decay runs over past tokens)")
    gamma = decay_rates("born_attention", decay, q.shape[1], q)
    return _BornAttention.apply(q, k, v, causal, float(eps), gamma)


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 1, 7, 3, dtype=torch.complex128, generator=gen) for _ in range(2))
    v = torch.randn(1, 1, 7, 4, dtype=torch.complex128, generator=gen)
    return tuple(t.to(dtype=dtype, device=device) for t in (q, k, v)), {"causal": True, "eps": 0.0}


EXAMPLES = {"born_attention": _example}
