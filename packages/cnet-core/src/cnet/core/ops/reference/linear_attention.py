"""Causal Born attention in its exact chunkwise linear form, and its one-token step for decoding.

The Born score is a squared inner product, so it factors through outer products:
``|<q, k>|^2 = sum_{d,e} q_d conj(q_e) conj(k_d) k_e``. A per-head state therefore carries the causal sums

    S[d, e, :] = sum_m w_m conj(k_md) k_me v_m      (c[D, D, Dv])
    Z[d, e]    = sum_m w_m conj(k_md) k_me          (c[D, D], Hermitian)

(``w_m = gamma^(age of token m)`` with a decay, else 1), and a query reads
``num = sum_{d,e} q_d conj(q_e) S[d, e, :]``, ``n = Re sum_{d,e} q_d conj(q_e) Z[d, e] + eps``, ``o = num / n``.
Tokens are processed in chunks: a chunk mixes with itself through the quadratic form and with everything before
it through the state carried across chunks. Source: CNet README (linear Born attention, ``setLinear``,
``setDecay``, step mode); papers/NOTES.md "Born attention (CNet)", exact linear form.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from cnet.core.ops.reference.attention import _decay_matrix, check_attention_inputs, decay_rates

__all__ = ["born_attention_linear", "born_attention_step", "BornAttentionState", "EXAMPLES"]


class BornAttentionState(NamedTuple):
    """The carried state of causal Born attention after token ``t`` (decay ``gamma``, 1 without decay).

    Attributes:
        s: ``c[B, H, D, D, Dv]``, ``s[b, h, d, e, :] = sum_{m <= t} gamma_h^(t-m) conj(k_md) k_me v_m``.
        z: ``c[B, H, D, D]``, ``z[b, h, d, e] = sum_{m <= t} gamma_h^(t-m) conj(k_md) k_me`` (the normaliser).

    A zero state (both tensors 0) is the state before the first token. A state to continue from should come from
    this module (``z`` is then Hermitian positive semi-definite, so every normaliser is >= 0).
    """

    s: torch.Tensor
    z: torch.Tensor


def _readout(q: torch.Tensor, s: torch.Tensor, z: torch.Tensor):
    """Queries ``c[..., C, D]`` against a state: ``sum q_d conj(q_e) s[d, e, :]`` ``c[..., C, Dv]`` and the real
    ``Re sum q_d conj(q_e) z[d, e]`` ``r[..., C]``."""
    x = torch.einsum("...cd,...ce,...def->...cf", q, q.conj(), s)
    y = torch.einsum("...cd,...ce,...de->...c", q, q.conj(), z).real
    return x, y


def _absorb(k: torch.Tensor, v: torch.Tensor, w):
    """State increments of keys ``c[..., C, D]`` and values ``c[..., C, Dv]`` with real weights ``w`` (broadcast
    like ``k``): ``sum_l w_l conj(k_ld) k_le v_l`` ``c[..., D, D, Dv]`` and ``sum_l w_l conj(k_ld) k_le``."""
    kw = k.conj() * w
    return torch.einsum("...ld,...le,...lf->...def", kw, k, v), torch.einsum("...ld,...le->...de", kw, k)


def _safe(n: torch.Tensor) -> torch.Tensor:
    """Normalisers with 0 replaced by 1: a zero normaliser has every score 0, so this is born_attention's 0/0 -> 0.

    The test is ``!= 0`` rather than ``> 0``: a state from this module keeps ``n >= 0``, and for any other state the
    division stays smooth, so the closed-form gradient holds wherever ``n`` is not 0.
    """
    return torch.where(n != 0, n, torch.ones_like(n))


def _sweep(start: torch.Tensor, adds: torch.Tensor, factor: torch.Tensor, reverse: bool = False):
    """Run ``x <- factor * x + adds[:, :, j]`` over the chunk axis (dim 2) from ``x = start``.

    ``factor`` is ``r[H]``. Returns ``x`` as seen before each step (stacked on dim 2, like ``adds``) and the final
    ``x``; ``reverse`` walks the chunks from last to first (the adjoint sweep).
    """
    f = factor.view(-1, *([1] * (start.dim() - 2)))
    seen = torch.empty_like(adds)
    x = start
    steps = range(adds.shape[2])
    for j in reversed(steps) if reverse else steps:
        seen[:, :, j] = x
        x = f * x + adds[:, :, j]
    return seen, x


def _chunk_factors(gamma: torch.Tensor, chunk: int):
    """Decay factors of one chunk of length ``C`` for rates ``r[H]``, shaped to broadcast against ``[B, H, N, C, .]``.

    Returns ``intra`` ``r[H, 1, C, C]`` (``gamma^(i-l)``, 0 for ``l > i``), ``read`` ``r[H, 1, C]``
    (``gamma^(i+1)``: age of the carried state at query ``i``), ``write`` ``r[H, 1, C, 1]`` (``gamma^(C-1-l)``: age
    of token ``l`` at the chunk's end) and ``carry`` ``r[H]`` (``gamma^C``).
    """
    pos = torch.arange(chunk, device=gamma.device)
    g = gamma[:, None]
    intra = _decay_matrix(gamma, chunk)[:, None]
    return intra, (g ** (pos + 1))[:, None], (g ** (chunk - 1 - pos))[:, None, :, None], gamma ** chunk


def _forward(q, k, v, s0, z0, eps, gamma, chunk):
    """Chunked forward on ``[B, H, N, C, .]`` views: every intermediate the backward needs, as a dict."""
    intra, read, write, carry = _chunk_factors(gamma, chunk)
    add_s, add_z = _absorb(k, v, write)
    s_in, s_out = _sweep(s0, add_s, carry)
    z_in, z_out = _sweep(z0, add_z, carry)
    c = q @ k.conj().transpose(-1, -2)
    sc = (c.real.square() + c.imag.square()) * intra
    x, y = _readout(q, s_in, z_in)
    n = sc.sum(-1) + read * y + eps
    n = _safe(n)
    o = (sc.to(v.dtype) @ v + read[..., None] * x) / n[..., None]
    return dict(o=o, n=n, c=c, sc=sc, s_in=s_in, z_in=z_in, s_out=s_out, z_out=z_out,
                intra=intra, read=read, write=write, carry=carry)


class _BornAttentionLinear(torch.autograd.Function):
    # Derivation (G = 2 dL/dconj(o) per query i of a chunk; PyTorch convention, see cnet.core.wirtinger).
    # o_i = num_i / n_i with real n_i, num_i = sum_l s'_il v_l + r_i X_i, n_i = sum_l s'_il + r_i Re Y_i + eps,
    # s'_il = w_il |c_il|^2 (intra-chunk, decay w), X_i = sum_de P_i[d,e] S[d,e,:], Y_i = sum_de P_i[d,e] Z[d,e],
    # P_i = q_i (x) conj(q_i), r_i = gamma^(i+1), (S, Z) the state before the chunk.
    #   grad_num = G / n; the real dL/dn_i = -Re<G_i, o_i> / n_i.
    #   Intra: exactly born_attention's adjoint (grad_v = s'^T grad_num, dL/ds' = Re(grad_num v^H) + dL/dn, then
    #   grad_c = 2 w dL/ds' c, grad_q = grad_c k, grad_k = grad_c^H q).
    #   Readout (bilinear, holomorphic in P and S; Re Y gives the real gradient r dL/dn): with gX = r grad_num and
    #   gY = r dL/dn, grad_P = gX conj(S) + gY conj(Z), grad_S += conj(P) (x) gX, grad_Z += conj(P) gY.
    #   P = q (x) conj(q): grad_q = (grad_P + grad_P^H) q.
    #   Carry: S_next = gamma^C S + sum_l u_l K_l (x) v_l, K_l = conj(k_l) (x) k_l, u_l = gamma^(C-1-l). The suffix
    #   gradient gS of S_next sweeps backwards (gS_before = gamma^C gS_after + readout part), and
    #   grad_v_l = u_l sum_de conj(K_l[d,e]) gS[d,e,:], grad_K_l = u_l (gS conj(v_l) + gZ),
    #   grad_k = conj(grad_K) k + grad_K^T k (K depends on k and conj(k)).
    # The states before each chunk are recomputed in the backward from the saved inputs.
    @staticmethod
    def forward(ctx, q, k, v, s0, z0, eps, gamma, chunk):
        b, h, t = q.shape[:3]
        parts = (x.reshape(b, h, t // chunk, chunk, x.shape[-1]) for x in (q, k, v))
        f = _forward(*parts, s0, z0, eps, gamma, chunk)
        ctx.save_for_backward(q, k, v, s0, z0, gamma)
        ctx.eps, ctx.chunk = eps, chunk
        return f["o"].reshape(b, h, t, v.shape[-1]), f["s_out"], f["z_out"]

    @staticmethod
    def backward(ctx, grad_o, grad_s, grad_z):
        q, k, v, s0, z0, gamma = ctx.saved_tensors
        b, h, t = q.shape[:3]
        q, k, v, grad_o = (x.reshape(b, h, t // ctx.chunk, ctx.chunk, x.shape[-1]) for x in (q, k, v, grad_o))
        f = _forward(q, k, v, s0, z0, ctx.eps, gamma, ctx.chunk)
        n, read, write = f["n"], f["read"], f["write"]
        s_in, z_in = f["s_in"], f["z_in"]
        g_num = grad_o / n[..., None]
        g_n = -(grad_o.conj() * f["o"]).real.sum(-1) / n
        # intra-chunk quadratic part
        grad_v = f["sc"].transpose(-1, -2).to(v.dtype) @ g_num
        g_sc = ((g_num @ v.conj().transpose(-1, -2)).real + g_n[..., None]) * f["intra"]
        g_c = 2 * g_sc * f["c"]
        grad_q = g_c @ k
        grad_k = g_c.conj().transpose(-1, -2) @ q
        # readout of the carried state
        g_x, g_y = read[..., None] * g_num, read * g_n
        grad_q = grad_q + (torch.einsum("...cf,...def,...ce->...cd", g_x, s_in.conj(), q)
                           + torch.einsum("...cf,...def,...cd->...ce", g_x.conj(), s_in, q)
                           + g_y[..., None] * (q @ z_in.conj().transpose(-1, -2) + q @ z_in))
        r_s = torch.einsum("...cd,...ce,...cf->...def", q.conj(), q, g_x)
        r_z = torch.einsum("...cd,...ce,...c->...de", q.conj(), q, g_y.to(q.dtype))
        # reverse sweep: gradient of the state after each chunk
        gs_out, grad_s0 = _sweep(grad_s, r_s, f["carry"], reverse=True)
        gz_out, grad_z0 = _sweep(grad_z, r_z, f["carry"], reverse=True)
        # state increments of each chunk's keys and values
        grad_v = grad_v + write * torch.einsum("...ld,...le,...def->...lf", k, k.conj(), gs_out)
        grad_k = grad_k + write * (torch.einsum("...def,...lf,...le->...ld", gs_out.conj(), v, k)
                                   + torch.einsum("...def,...lf,...ld->...le", gs_out, v.conj(), k)
                                   + k @ gz_out.conj().transpose(-1, -2) + k @ gz_out)
        grads = (x.reshape(b, h, t, x.shape[-1]) for x in (grad_q, grad_k, grad_v))
        return *grads, grad_s0, grad_z0, None, None, None


def _check_state(where: str, name: str, state, q: torch.Tensor, v: torch.Tensor) -> BornAttentionState:
    """Validate a Born state for queries ``q`` (``[B, H, ..., D]``) and values ``v`` (``[..., Dv]``)."""
    b, h, d, dv = q.shape[0], q.shape[1], q.shape[-1], v.shape[-1]
    if not (isinstance(state, tuple) and len(state) == 2 and all(isinstance(x, torch.Tensor) for x in state)):
        raise TypeError(f"{where}: argument '{name}' must be a BornAttentionState (s, z) of two tensors, "
                        f"got {type(state).__name__}")
    s, z = state
    if (tuple(s.shape), tuple(z.shape)) != ((b, h, d, d, dv), (b, h, d, d)):
        raise ValueError(f"{where}: argument '{name}' must hold s c[B, H, D, D, Dv]={(b, h, d, d, dv)} and "
                         f"z c[B, H, D, D]={(b, h, d, d)}, got s={tuple(s.shape)}, z={tuple(z.shape)}")
    if s.dtype != q.dtype or z.dtype != q.dtype:
        raise TypeError(f"{where}: argument '{name}' must have the inputs' dtype {q.dtype}, got {s.dtype}, {z.dtype}")
    return BornAttentionState(s, z)


def _zero_state(q: torch.Tensor, v: torch.Tensor) -> BornAttentionState:
    b, h, d, dv = q.shape[0], q.shape[1], q.shape[-1], v.shape[-1]
    return BornAttentionState(q.new_zeros(b, h, d, d, dv), q.new_zeros(b, h, d, d))


def born_attention_linear(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, eps: float = 0.0,
                          decay: float | torch.Tensor | None = None, chunk: int = 64,
                          initial_state: BornAttentionState | None = None, return_state: bool = False):
    """Causal Born attention in the exact chunkwise linear form (CNet's ``setLinear(true, chunk)``).

    The same operator as :func:`cnet.core.ops.reference.born_attention` with ``causal=True``:
    ``o_k = sum_{m <= k} w_km |c_km|^2 v_m / (sum_{m <= k} w_km |c_km|^2 + eps)``, ``c_km = sum_d q_kd conj(k_md)``,
    ``w_km = gamma_h^(k-m)`` with ``decay`` (else 1), 0/0 -> 0. Within a chunk of ``chunk`` tokens the quadratic
    form runs; earlier tokens enter through the carried :class:`BornAttentionState` ``(s, z)``, which advances by
    ``s <- gamma^chunk s + sum_l gamma^(chunk-1-l) conj(k_l) (x) k_l (x) v_l`` per chunk (``z`` likewise without
    ``v_l``). Cost ``O(T (chunk + D^2) D)`` per head, state ``D^2 Dv``. With ``initial_state`` the tokens before
    this call count as the past of token 0 (decayed by ``gamma^(t+1)`` at token ``t``), so splitting a sequence
    and passing the returned state on gives the same outputs (and gradients) as one call on the whole.

    Args:
        q: ``c[B, H, T, D]`` queries, complex64 or complex128.
        k: ``c[B, H, T, D]`` keys, same shape and dtype.
        v: ``c[B, H, T, Dv]`` values, same dtype.
        eps: non-negative constant added to each row's normaliser.
        decay: ``None``, a number, or ``r[H]``, each rate in (0, 1]; a fixed constant (no gradient).
        chunk: positive int dividing ``T``.
        initial_state: :class:`BornAttentionState` ``(s c[B, H, D, D, Dv], z c[B, H, D, D])`` of the inputs' dtype,
            or ``None`` for an empty past. Differentiable.
        return_state: also return the state after the last token.

    Returns:
        ``c[B, H, T, Dv]``, or ``(out, BornAttentionState)`` when ``return_state``.

    Raises:
        TypeError: non-complex or mixed-dtype inputs or state, ``chunk`` not an int, ``return_state`` not a
            bool, ``decay`` of the wrong type, ``initial_state`` not a pair of tensors.
        ValueError: shapes as in ``born_attention``; ``eps`` < 0; ``decay`` outside (0, 1], not ``[H]`` or requiring
            grad; ``chunk`` < 1; ``T`` not a multiple of ``chunk`` (the message names both); state shapes wrong.

    Numerics: the carried part of the normaliser is ``Re q^H Z q``, a sum of terms that cancel when a query is
    (nearly) orthogonal to every earlier key; there it is rounding noise (possibly negative), and the output can be
    far from the quadratic form's, which sums non-negative scores. With ``eps = 0`` such rows are ill-conditioned
    in both forms; a small ``eps`` (or ``chunk = T``) avoids the difference. On generic inputs the two forms agree to
    ~1e-15 in complex128.

    Backward: closed form (see ``_BornAttentionLinear``): intra-chunk terms as in ``born_attention``, query
    gradients read the recomputed per-chunk states, key and value gradients a suffix state swept in reverse.

    Source: CNet README (linear Born attention: ``setLinear``, ``-born_chunk``; ``setDecay``; ``setCarry``);
    papers/NOTES.md "Born attention (CNet)".
    """
    where = "born_attention_linear"
    check_attention_inputs(where, q, k, v, eps)
    if isinstance(chunk, bool) or not isinstance(chunk, int):
        raise TypeError(f"{where}: argument 'chunk' must be an int, got {type(chunk).__name__}")
    if chunk < 1:
        raise ValueError(f"{where}: argument 'chunk' must be >= 1, got {chunk}")
    t = q.shape[-2]
    if t % chunk:
        raise ValueError(f"{where}: T={t} is not a multiple of chunk={chunk}; pad the sequence or pick a divisor")
    if not isinstance(return_state, bool):
        raise TypeError(f"{where}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    gamma = decay_rates(where, decay, q.shape[1], q)
    if gamma is None:
        gamma = q.real.new_ones(q.shape[1])
    state = _zero_state(q, v) if initial_state is None else _check_state(where, "initial_state", initial_state, q, v)
    out, s, z = _BornAttentionLinear.apply(q, k, v, state.s, state.z, float(eps), gamma, chunk)
    return (out, BornAttentionState(s, z)) if return_state else out


@torch.no_grad()
def born_attention_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, state: BornAttentionState | None = None,
                        eps: float = 0.0, decay: float | torch.Tensor | None = None):
    """One token of causal Born attention from the carried state (CNet's step mode, ``forwardStep``).

    ``s <- gamma s + conj(k) (x) k (x) v``, ``z <- gamma z + conj(k) (x) k`` (``gamma = 1`` without decay), then
    ``o = sum_de q_d conj(q_e) s[d, e, :] / (Re sum_de q_d conj(q_e) z[d, e] + eps)`` (0/0 -> 0). Fed a sequence
    token by token from a zero state it reproduces :func:`born_attention_linear` (and ``born_attention`` with
    ``causal=True``) with the same ``eps`` and ``decay``. Decoding only: runs without autograd.

    Args:
        q, k: ``c[B, H, D]`` the current token's query and key.
        v: ``c[B, H, Dv]`` its value.
        state: :class:`BornAttentionState` after the previous token (layout as documented there), or ``None`` at
            the start of a sequence.
        eps, decay: as in :func:`born_attention_linear`.

    Returns:
        ``(o c[B, H, Dv], BornAttentionState)``: the output and the state including this token (new tensors;
        ``state`` is not modified).

    Raises:
        TypeError, ValueError: as :func:`born_attention_linear`, for the one-token layout ``c[B, H, D]``.

    Source: CNet README (streaming decoder, ``impl/stepnet.h``, ``setStepMode``).
    """
    where = "born_attention_step"
    check_attention_inputs(where, q, k, v, eps, layout="c[B, H, D]")
    gamma = decay_rates(where, decay, q.shape[1], q)
    s, z = _zero_state(q, v) if state is None else _check_state(where, "state", state, q, v)
    add_s, add_z = _absorb(k[:, :, None], v[:, :, None], 1.0)
    if gamma is not None:
        s, z = gamma.view(-1, 1, 1, 1) * s, gamma.view(-1, 1, 1) * z
    s, z = s + add_s, z + add_z
    x, y = _readout(q[:, :, None], s, z)
    n = y + eps
    o = x / _safe(n)[..., None]
    return o[:, :, 0], BornAttentionState(s, z)


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 2, 6, 3, dtype=torch.complex128, generator=gen) for _ in range(2))
    v = torch.randn(1, 2, 6, 2, dtype=torch.complex128, generator=gen)
    decay = torch.tensor([0.9, 0.6], dtype=torch.float64, device=device)
    args = tuple(t.to(dtype=dtype, device=device) for t in (q, k, v))
    return args, {"eps": 0.1, "decay": decay, "chunk": 3}


EXAMPLES = {"born_attention_linear": _example}
