"""Complex gated linear attention (CNet's ``GatedLinearAttention``), parallel reference form and one-token step.

The degree-one counterpart of Born attention: where Born attention weights value ``m`` by the probability
``|<q_t, k_m>|^2`` and normalises, this layer weights it by the amplitude ``<q_t, k_m> = sum_d q_td conj(k_md)``
(same inner-product convention), discounted by the per-head gates of the tokens in between, with no normaliser
(CNet puts a ``TokenNorm`` after it). As a recurrence per head, with ``sigma`` the logistic sigmoid,

    S_t = sigma(g_t) S_{t-1} + conj(k_t) (x) v_t        (c[D, Dv]; S_{-1} = initial state or 0)
    o_t = sum_d q_td S_t[d, :]

so the gate only discounts the past: the current token enters ungated ("the current token is never gated").
Source: CNet README (GatedLinearAttention, ``-gla``, step mode); the README's formula is garbled, and this is the
reading its text gives (gate logits per head from a token-wise projection, amplitude routing, ungated current token).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cnet.core.ops.reference.attention import check_attention_inputs
from cnet.core.validation import require_complex

__all__ = ["gated_linear_attention", "gated_linear_attention_step", "check_gate_logits", "check_gate_and_state",
           "EXAMPLES"]


def _segment_sums(x: torch.Tensor) -> torch.Tensor:
    """``r[..., L, L]`` with ``sum_{j < l <= i} x_l`` at ``[i, j]`` for ``i >= j`` and ``-inf`` above the diagonal.

    Each entry is summed directly (masked cumulative sum), not as a difference of prefix sums, so long sequences
    with very negative log-gates lose no precision.
    """
    n = x.shape[-1]
    ones = torch.ones(n, n, dtype=torch.bool, device=x.device)
    rep = x[..., :, None].expand(*x.shape, n).masked_fill(~ones.tril(-1), 0.0)
    return rep.cumsum(-2).masked_fill(~ones.tril(), float("-inf"))


def _gate_weights(g: torch.Tensor):
    """Discounts from gate logits ``r[B, H, T]``: ``w`` ``r[B, H, T, T]`` (``w_tm = prod_{m < j <= t} sigma(g_j)``,
    0 for ``m > t``), ``w0`` ``r[B, H, T]`` (``prod_{j <= t} sigma(g_j)``, the discount of the initial state) and
    ``u`` ``r[B, H, T + 1]`` (the last row ``[w0_{T-1}, w_{T-1, 0..T-1}]``, the discounts into the final state)."""
    logs = F.logsigmoid(g)
    full = _segment_sums(torch.cat([torch.zeros_like(logs[..., :1]), logs], dim=-1))[..., 1:, :].exp()
    return full[..., 1:], full[..., 0], full[..., -1, :]


class _GatedLinearAttention(torch.autograd.Function):
    # Parallel form: o = A V + w0 (Q S0) with A = w * c, c = Q K^H; final state S_T = K^H (u v) + u_{-1} S0.
    # G = 2 dL/dconj(o), GS = 2 dL/dconj(S_T) (PyTorch convention, see cnet.core.wirtinger).
    #   Everything is holomorphic in Q, K^* , V, S0 given the real discounts, so
    #   grad_V = A^H G + u K GS,  grad_c = w * (G V^H),  grad_Q = grad_c K + w0 G S0^H,
    #   grad_K = grad_c^H Q + u V GS^H,  grad_S0 = Q^H (w0 G) + u_{-1} GS.
    #   Discounts: w_tm = exp(sum_{m < j <= t} l_j), l = log sigma(g). With E_tm = w_tm dL/dw_tm (the initial state
    #   as column m = -1, the final state as extra terms in row T-1), dL/dl_j = sum_{t >= j} sum_{m < j} E_tm, a
    #   prefix sum over m and a suffix sum over t; dl/dg = sigma(-g). Real dL/dw_tm = Re(conj(grad_A_tm) c_tm).
    @staticmethod
    def forward(ctx, q, k, v, g, s0):
        w, w0, u = _gate_weights(g)
        c = q @ k.conj().transpose(-1, -2)
        o = (w * c) @ v + w0[..., None] * (q @ s0)
        s_t = k.conj().transpose(-1, -2) @ (u[..., 1:, None] * v) + u[..., :1, None] * s0
        ctx.save_for_backward(q, k, v, g, s0)
        return o, s_t

    @staticmethod
    def backward(ctx, grad_o, grad_s):
        q, k, v, g, s0 = ctx.saved_tensors
        w, w0, u = _gate_weights(g)
        c = q @ k.conj().transpose(-1, -2)
        qs0 = q @ s0
        vgs = v @ grad_s.conj().transpose(-1, -2)
        grad_a = grad_o @ v.conj().transpose(-1, -2)
        grad_c = w * grad_a
        grad_q = grad_c @ k + w0[..., None] * (grad_o @ s0.conj().transpose(-1, -2))
        grad_k = grad_c.conj().transpose(-1, -2) @ q + u[..., 1:, None] * vgs
        grad_v = (w * c).conj().transpose(-1, -2) @ grad_o + u[..., 1:, None] * (k @ grad_s)
        grad_s0 = q.conj().transpose(-1, -2) @ (w0[..., None] * grad_o) + u[..., :1, None] * grad_s
        # E[t, 1 + m] = w_tm dL/dw_tm, column 0 for the initial state (m = -1)
        e = torch.cat([(w0 * (grad_o.conj() * qs0).real.sum(-1))[..., None], w * (grad_a.conj() * c).real], dim=-1)
        last = torch.cat([(grad_s.conj() * s0).real.sum((-2, -1))[..., None], (k.conj() * vgs).real.sum(-1)], dim=-1)
        e[..., -1, :] += u * last
        suffix = e.cumsum(-1).flip(-2).cumsum(-2).flip(-2)
        grad_g = suffix.diagonal(dim1=-2, dim2=-1) * torch.sigmoid(-g)
        return grad_q, grad_k, grad_v, grad_g, grad_s0


def check_gate_logits(where: str, g, q: torch.Tensor) -> None:
    """Validate gate logits against queries ``q`` ``c[B, H, T, D]`` (or ``c[B, H, D]`` for one token): ``g`` must be
    a real floating tensor of ``q``'s shape without ``D``, in ``q``'s real dtype.

    Raises:
        TypeError: ``g`` is not a real floating tensor, or its dtype is not ``q``'s real dtype.
        ValueError: ``g`` has the wrong shape (the message gives the expected one).
    """
    real = q.real.dtype
    if not isinstance(g, torch.Tensor) or not g.is_floating_point():
        got = g.dtype if isinstance(g, torch.Tensor) else type(g).__name__
        raise TypeError(f"{where}: argument 'g' must be a real floating tensor of gate logits, got {got}")
    if g.shape != q.shape[:-1]:
        raise ValueError(f"{where}: argument 'g' must be r{list(q.shape[:-1])} (q's shape without D), "
                         f"got {tuple(g.shape)}")
    if g.dtype != real:
        raise TypeError(f"{where}: argument 'g' must have dtype {real} to match {q.dtype}, got {g.dtype}")


def check_gate_and_state(where: str, g, state, name: str, q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Validate the gate logits (:func:`check_gate_logits`) and the state ``c[B, H, D, Dv]`` named ``name``; return
    the state (zeros when ``None``). Raises TypeError / ValueError naming the argument."""
    check_gate_logits(where, g, q)
    shape = (q.shape[0], q.shape[1], q.shape[-1], v.shape[-1])
    if state is None:
        return q.new_zeros(shape)
    require_complex(where, **{name: state})
    if tuple(state.shape) != shape:
        raise ValueError(f"{where}: argument '{name}' must be c[B, H, D, Dv]={shape}, got {tuple(state.shape)}")
    if state.dtype != q.dtype:
        raise TypeError(f"{where}: argument '{name}' must have dtype {q.dtype}, got {state.dtype}")
    return state


def gated_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                           initial_state: torch.Tensor | None = None, return_state: bool = False):
    """Complex gated linear attention: amplitude-weighted causal mixing with a per-head forget gate.

    Exactly, per batch and head (``sigma`` the logistic sigmoid, ``S_{-1}`` = ``initial_state`` or 0)::

        S_t = sigma(g_t) S_{t-1} + conj(k_t) (x) v_t,    o_t[f] = sum_d q_td S_t[d, f]

    i.e. ``o_t = sum_{m <= t} (prod_{m < j <= t} sigma(g_j)) <q_t, k_m> v_m + (prod_{j <= t} sigma(g_j)) q_t S_{-1}``
    with ``<q, k> = sum_d q_d conj(k_d)`` as in Born attention and no ``1/sqrt(D)`` scale. The gate discounts the
    past only; the current token always enters with weight 1. There is no normaliser (follow with a token norm).
    Evaluated in parallel form: discounts from log-gates summed segment by segment, ``O(T^2)`` memory per head.

    Args:
        q: ``c[B, H, T, D]`` queries, complex64 or complex128.
        k: ``c[B, H, T, D]`` keys, same shape and dtype.
        v: ``c[B, H, T, Dv]`` values, same dtype.
        g: ``r[B, H, T]`` gate logits, the real dtype matching ``q`` (float32 for complex64, float64 for complex128).
        initial_state: ``c[B, H, D, Dv]`` the state ``S_{-1}`` carried from earlier tokens, or ``None``.
        return_state: also return ``S_{T-1}`` (``c[B, H, D, Dv]``) to continue the sequence.

    Returns:
        ``c[B, H, T, Dv]``, or ``(out, state)`` when ``return_state``.

    Raises:
        TypeError: ``q``, ``k``, ``v`` or the state not complex or of different dtypes; ``g`` not a real floating
            tensor of the matching precision; ``return_state`` not a bool.
        ValueError: shapes as in ``born_attention``; ``g`` not ``[B, H, T]``; the state not ``[B, H, D, Dv]``;
            ``T = 0``.

    Backward: closed form for ``q``, ``k``, ``v``, ``g`` and ``initial_state`` (see ``_GatedLinearAttention``).

    Source: CNet README (GatedLinearAttention: "the degree-one counterpart of Born attention", per-head gate
    logits, "the current token is never gated", same inner-product convention as BornAttention).
    """
    where = "gated_linear_attention"
    check_attention_inputs(where, q, k, v)
    if q.shape[-2] == 0:
        raise ValueError(f"{where}: the inputs have no tokens (T=0), q={tuple(q.shape)}")
    if not isinstance(return_state, bool):
        raise TypeError(f"{where}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    s0 = check_gate_and_state(where, g, initial_state, "initial_state", q, v)
    out, state = _GatedLinearAttention.apply(q, k, v, g, s0)
    return (out, state) if return_state else out


@torch.no_grad()
def gated_linear_attention_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                                state: torch.Tensor | None = None):
    """One token of :func:`gated_linear_attention`: ``S = sigma(g) S + conj(k) (x) v``, ``o = sum_d q_d S[d, :]``.

    Fed a sequence token by token from ``state=None`` it reproduces ``gated_linear_attention``. Decoding only:
    runs without autograd.

    Args:
        q, k: ``c[B, H, D]`` the current token's query and key.
        v: ``c[B, H, Dv]`` its value.
        g: ``r[B, H]`` its gate logits (real dtype matching ``q``).
        state: ``c[B, H, D, Dv]`` the state after the previous token, or ``None`` at the start.

    Returns:
        ``(o c[B, H, Dv], new_state c[B, H, D, Dv])``; ``state`` is not modified.

    Raises:
        TypeError, ValueError: as :func:`gated_linear_attention`, for the one-token layout ``c[B, H, D]``.

    Source: CNet README (GatedLinearAttention step mode, streaming decoder).
    """
    where = "gated_linear_attention_step"
    check_attention_inputs(where, q, k, v, layout="c[B, H, D]")
    s = check_gate_and_state(where, g, state, "state", q, v)
    s = torch.sigmoid(g)[..., None, None] * s + k.conj()[..., :, None] * v[..., None, :]
    return (q[..., None, :] @ s)[..., 0, :], s


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 2, 5, 3, dtype=torch.complex128, generator=gen) for _ in range(2))
    v = torch.randn(1, 2, 5, 2, dtype=torch.complex128, generator=gen)
    g = torch.randn(1, 2, 5, dtype=torch.float64, generator=gen)
    return (*(t.to(dtype=dtype, device=device) for t in (q, k, v)), g.to(dtype=dtype.to_real(), device=device)), {}


EXAMPLES = {"gated_linear_attention": _example}
