"""Triton kernels of chunked complex gated linear attention: forward pass and its adjoint (reverse) pass.

Per batch-head, tokens are cut into chunks of ``L``; inside a chunk, with ``l_j = log sigma(g_j)`` (fp32, stable)
and the within-chunk cumulative sum ``lam_t = sum_{j <= t} l_j``,

    o_t = sum_{m <= t} exp(lam_t - lam_m) <q_t, k_m> v_m + exp(lam_t) q_t S        (intra-chunk + carried state)
    S  <- exp(lam_L) S + sum_m exp(lam_L - lam_m) conj(k_m) (x) v_m                (state after the chunk)

with ``<q, k> = sum_d q_d conj(k_d)``. Complex products are real GEMMs on re/im planes (``tl.dot``). Tensors are
real views (``torch.view_as_real``) of ``c[BH, T, N]``: element ``(bh, t, n)`` has its real part at
``2 ((bh T + t) N + n)``. Padding tokens past ``T`` have ``q = k = v = 0`` and ``l = 0`` (no decay), so they change
nothing. Each pass starts with a sequential sweep over the chunks of one batch-head and ``BLOCK_DV`` value columns
that carries only the ``D x BLOCK_DV`` state (forward) or state gradient (backward) in registers and stores it at
every chunk boundary; then kernels parallel over (batch-head, chunk, value block) do the intra-chunk work from the
stored boundary states (the backward's in two kernels, ``dq`` with the gates and ``dk, dv``, to stay within the
registers).
Source: CNet README (GatedLinearAttention); the chunked form follows papers/NOTES.md "Quantum-shortcut models"
(chunked scan) applied to the matrix state.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["gla_fwd_states_kernel", "gla_fwd_out_kernel", "gla_bwd_states_kernel", "gla_bwd_dq_kernel",
           "gla_bwd_dkv_kernel"]


@triton.jit
def _tile(ptr, base, t, cols, T, N):
    """Real and imaginary planes of rows ``t`` and columns ``cols`` of a ``c[T, N]`` slab at real offset ``base``
    (zeros outside)."""
    mask = (t < T)[:, None] & (cols < N)[None, :]
    offs = base + (t.to(tl.int64)[:, None] * N + cols[None, :]) * 2
    return tl.load(ptr + offs, mask=mask, other=0.0), tl.load(ptr + offs + 1, mask=mask, other=0.0)


@triton.jit
def _store_tile(ptr, base, t, cols, T, N, re, im):
    """Store planes ``re, im`` into rows ``t``, columns ``cols`` of a ``c[T, N]`` slab (inside only)."""
    mask = (t < T)[:, None] & (cols < N)[None, :]
    offs = base + (t.to(tl.int64)[:, None] * N + cols[None, :]) * 2
    tl.store(ptr + offs, re, mask=mask)
    tl.store(ptr + offs + 1, im, mask=mask)


@triton.jit
def _log_discounts(g_ptr, bh, t, T, rows, CHUNK: tl.constexpr):
    """``lam`` (``r[CHUNK]``, the within-chunk cumulative log-sigmoid of the gate logits, 0-increments on padding)
    and its last entry ``lam_L`` (the log-discount across the whole chunk), in fp32."""
    inside = t < T
    x = tl.load(g_ptr + bh.to(tl.int64) * T + t, mask=inside, other=0.0).to(tl.float32)
    logsig = tl.minimum(x, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(x)))
    lam = tl.cumsum(tl.where(inside, logsig, 0.0), 0)
    return lam, tl.sum(tl.where(rows == CHUNK - 1, lam, 0.0), 0)


@triton.jit
def _overlaps(qr, qi, kr, ki, PRECISION: tl.constexpr):
    """``c = Q K^H`` (``c_tm = <q_t, k_m>``) on planes."""
    ktr = tl.trans(kr)
    kti = tl.trans(ki)
    cr = tl.dot(qr, ktr, input_precision=PRECISION) + tl.dot(qi, kti, input_precision=PRECISION)
    ci = tl.dot(qi, ktr, input_precision=PRECISION) - tl.dot(qr, kti, input_precision=PRECISION)
    return cr, ci


@triton.jit
def _cmatmul(ar, ai, br, bi, PRECISION: tl.constexpr):
    """``A B`` for complex ``A = ar + i ai``, ``B = br + i bi`` on planes."""
    re = tl.dot(ar, br, input_precision=PRECISION) - tl.dot(ai, bi, input_precision=PRECISION)
    im = tl.dot(ar, bi, input_precision=PRECISION) + tl.dot(ai, br, input_precision=PRECISION)
    return re, im


@triton.jit
def _cmatmul_ah(ar, ai, br, bi, PRECISION: tl.constexpr):
    """``A^H B`` (``A^H = conj(A)^T``) on planes."""
    atr = tl.trans(ar)
    ati = tl.trans(ai)
    re = tl.dot(atr, br, input_precision=PRECISION) + tl.dot(ati, bi, input_precision=PRECISION)
    im = tl.dot(atr, bi, input_precision=PRECISION) - tl.dot(ati, br, input_precision=PRECISION)
    return re, im


@triton.jit
def _cmatmul_bh(ar, ai, br, bi, PRECISION: tl.constexpr):
    """``A B^H`` on planes."""
    btr = tl.trans(br)
    bti = tl.trans(bi)
    re = tl.dot(ar, btr, input_precision=PRECISION) + tl.dot(ai, bti, input_precision=PRECISION)
    im = tl.dot(ai, btr, input_precision=PRECISION) - tl.dot(ar, bti, input_precision=PRECISION)
    return re, im


@triton.jit
def _state_base(bh, c, NT, D, DV):
    """Real offset of boundary ``c`` (0..NT) of batch-head ``bh`` in a ``c[BH, NT + 1, D, DV]`` state array."""
    return (bh.to(tl.int64) * (NT + 1) + c) * D * DV * 2


@triton.jit
def gla_fwd_states_kernel(k_ptr, v_ptr, g_ptr, s0_ptr, states_ptr, T, D, DV, NT,
                          HAS_S0: tl.constexpr, CHUNK: tl.constexpr, BLOCK_D: tl.constexpr,
                          BLOCK_DV: tl.constexpr, PRECISION: tl.constexpr):
    """Forward sweep: ``states[c]`` = the state entering chunk ``c`` (``s0`` or 0 for ``c = 0``), ``states[NT]`` =
    the final state; ``S <- exp(lam_L) S + K^H (u V)`` with ``u = exp(lam_L - lam)``.

    Real views of ``k: c[BH, T, D]``, ``v: c[BH, T, DV]``, ``s0: c[BH, D, DV]`` (with ``HAS_S0``), ``states:
    c[BH, NT + 1, D, DV]``; ``g: r[BH, T]``. Grid: ``(BH, cdiv(DV, BLOCK_DV))``.
    """
    bh = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dk = tl.arange(0, BLOCK_D)
    rows = tl.arange(0, CHUNK)
    qk_base = bh.to(tl.int64) * T * D * 2
    v_base = bh.to(tl.int64) * T * DV * 2
    if HAS_S0:
        sr, si = _tile(s0_ptr, bh.to(tl.int64) * D * DV * 2, dk, cols, D, DV)
    else:
        sr = tl.zeros([BLOCK_D, BLOCK_DV], dtype=tl.float32)
        si = tl.zeros([BLOCK_D, BLOCK_DV], dtype=tl.float32)
    for c in range(NT):
        _store_tile(states_ptr, _state_base(bh, c, NT, D, DV), dk, cols, D, DV, sr, si)
        t = c * CHUNK + rows
        kr, ki = _tile(k_ptr, qk_base, t, dk, T, D)
        vr, vi = _tile(v_ptr, v_base, t, cols, T, DV)
        lam, lam_last = _log_discounts(g_ptr, bh, t, T, rows, CHUNK)
        u = tl.exp(lam_last - lam)[:, None]
        ur, ui = _cmatmul_ah(kr, ki, u * vr, u * vi, PRECISION)
        decay = tl.exp(lam_last)
        sr = decay * sr + ur
        si = decay * si + ui
    _store_tile(states_ptr, _state_base(bh, NT, NT, D, DV), dk, cols, D, DV, sr, si)


@triton.jit
def gla_fwd_out_kernel(q_ptr, k_ptr, v_ptr, g_ptr, states_ptr, o_ptr, T, D, DV, NT,
                       CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, PRECISION: tl.constexpr):
    """Outputs of one chunk: ``o = (w * Q K^H) V + e (Q S)``, ``w_tm = exp(lam_t - lam_m)`` (``m <= t``),
    ``e = exp(lam)``, ``S = states[c]``.

    Real views of ``q, k: c[BH, T, D]``, ``v, o: c[BH, T, DV]``, ``states: c[BH, NT + 1, D, DV]``; ``g: r[BH, T]``.
    Grid: ``(BH * NT, cdiv(DV, BLOCK_DV))``.
    """
    bh = tl.program_id(0) // NT
    c = tl.program_id(0) % NT
    cols = tl.program_id(1) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dk = tl.arange(0, BLOCK_D)
    rows = tl.arange(0, CHUNK)
    t = c * CHUNK + rows
    qk_base = bh.to(tl.int64) * T * D * 2
    v_base = bh.to(tl.int64) * T * DV * 2
    qr, qi = _tile(q_ptr, qk_base, t, dk, T, D)
    kr, ki = _tile(k_ptr, qk_base, t, dk, T, D)
    vr, vi = _tile(v_ptr, v_base, t, cols, T, DV)
    sr, si = _tile(states_ptr, _state_base(bh, c, NT, D, DV), dk, cols, D, DV)
    lam, lam_last = _log_discounts(g_ptr, bh, t, T, rows, CHUNK)
    cr, ci = _overlaps(qr, qi, kr, ki, PRECISION)
    w = tl.exp(tl.where(rows[:, None] >= rows[None, :], lam[:, None] - lam[None, :], -float("inf")))
    or_, oi = _cmatmul(w * cr, w * ci, vr, vi, PRECISION)
    pr, pi = _cmatmul(qr, qi, sr, si, PRECISION)
    e = tl.exp(lam)[:, None]
    _store_tile(o_ptr, v_base, t, cols, T, DV, or_ + e * pr, oi + e * pi)


@triton.jit
def gla_bwd_states_kernel(q_ptr, g_ptr, go_ptr, gs_ptr, dstates_ptr, T, D, DV, NT,
                          CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                          PRECISION: tl.constexpr):
    """Reverse sweep: ``dstates[c]`` = the gradient of the state entering chunk ``c`` (``dstates[NT]`` = ``gs``, the
    final state's; ``dstates[0]`` = the initial state's); ``dS <- exp(lam_L) dS + Q^H (e G)``.

    Real views of ``q: c[BH, T, D]``, ``go: c[BH, T, DV]`` (``G = grad_o``), ``gs: c[BH, D, DV]``, ``dstates:
    c[BH, NT + 1, D, DV]``; ``g: r[BH, T]``. Grid: ``(BH, cdiv(DV, BLOCK_DV))``.
    """
    bh = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dk = tl.arange(0, BLOCK_D)
    rows = tl.arange(0, CHUNK)
    qk_base = bh.to(tl.int64) * T * D * 2
    v_base = bh.to(tl.int64) * T * DV * 2
    dsr, dsi = _tile(gs_ptr, bh.to(tl.int64) * D * DV * 2, dk, cols, D, DV)
    for step in range(NT):
        c = NT - 1 - step
        _store_tile(dstates_ptr, _state_base(bh, c + 1, NT, D, DV), dk, cols, D, DV, dsr, dsi)
        t = c * CHUNK + rows
        qr, qi = _tile(q_ptr, qk_base, t, dk, T, D)
        gr, gi = _tile(go_ptr, v_base, t, cols, T, DV)
        lam, lam_last = _log_discounts(g_ptr, bh, t, T, rows, CHUNK)
        e = tl.exp(lam)[:, None]
        xr, xi = _cmatmul_ah(qr, qi, e * gr, e * gi, PRECISION)
        decay = tl.exp(lam_last)
        dsr = decay * dsr + xr
        dsi = decay * dsi + xi
    _store_tile(dstates_ptr, _state_base(bh, 0, NT, D, DV), dk, cols, D, DV, dsr, dsi)


@triton.jit
def _chunk_inputs(q_ptr, k_ptr, v_ptr, go_ptr, g_ptr, bh, t, cols, dk, rows, T, D, DV,
                  CHUNK: tl.constexpr, PRECISION: tl.constexpr):
    """What both per-chunk gradient kernels need: the tiles of ``q, k`` (``[CHUNK, BLOCK_D]``), ``v, G``
    (``[CHUNK, BLOCK_DV]``), the overlaps ``c = Q K^H``, the discounts ``w``, ``dc = w * (G V^H)``, ``lam`` and
    ``lam_L``."""
    qk_base = bh.to(tl.int64) * T * D * 2
    v_base = bh.to(tl.int64) * T * DV * 2
    qr, qi = _tile(q_ptr, qk_base, t, dk, T, D)
    kr, ki = _tile(k_ptr, qk_base, t, dk, T, D)
    vr, vi = _tile(v_ptr, v_base, t, cols, T, DV)
    gr, gi = _tile(go_ptr, v_base, t, cols, T, DV)
    lam, lam_last = _log_discounts(g_ptr, bh, t, T, rows, CHUNK)
    cr, ci = _overlaps(qr, qi, kr, ki, PRECISION)
    w = tl.exp(tl.where(rows[:, None] >= rows[None, :], lam[:, None] - lam[None, :], -float("inf")))
    dar, dai = _cmatmul_bh(gr, gi, vr, vi, PRECISION)
    return qr, qi, kr, ki, vr, vi, gr, gi, cr, ci, w, w * dar, w * dai, lam, lam_last


@triton.jit
def gla_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, g_ptr, states_ptr, dstates_ptr, go_ptr, gq_ptr, gl_ptr,
                      T, D, DV, NT, BH,
                      CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, PRECISION: tl.constexpr):
    """Gradients of ``q`` and of the log-gates within one chunk, for one block of value columns.

    With ``G = grad_o``, ``S`` / ``S'`` the states entering / leaving the chunk, ``dS`` the gradient of ``S'``
    (``dstates[c + 1]``), ``A = w * c`` the discounted overlaps and ``dc = w * (G V^H)``:
    ``grad_q = dc K + e G S^H`` (``e = exp(lam)``). The log-discount ``lam_t`` receives ``sum_m E_tm - sum_t' E_t't``
    (``E = Re(conj(G V^H) A)``), the carried term ``e_t Re<G_t, q_t S>``, and from the state ``Re<dS, S'>`` (last
    row) and ``-u_t Re<conj(k_t), V dS^H>`` (``u = exp(lam_L - lam)``); ``grad l_j = sum_{t >= j} grad lam_t``.

    ``gq: r[NV, BH, T, D, 2]`` and ``gl: r[NV, BH, T]`` receive this column block's share (summed by the caller).
    Grid: ``(BH * NT, NV = cdiv(DV, BLOCK_DV))``.
    """
    bh = tl.program_id(0) // NT
    c = tl.program_id(0) % NT
    iv = tl.program_id(1)
    cols = iv * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dk = tl.arange(0, BLOCK_D)
    rows = tl.arange(0, CHUNK)
    t = c * CHUNK + rows
    qr, qi, kr, ki, vr, vi, gr, gi, cr, ci, w, dcr, dci, lam, lam_last = _chunk_inputs(
        q_ptr, k_ptr, v_ptr, go_ptr, g_ptr, bh, t, cols, dk, rows, T, D, DV, CHUNK, PRECISION)
    spr, spi = _tile(states_ptr, _state_base(bh, c, NT, D, DV), dk, cols, D, DV)
    snr, sni = _tile(states_ptr, _state_base(bh, c + 1, NT, D, DV), dk, cols, D, DV)
    dsr, dsi = _tile(dstates_ptr, _state_base(bh, c + 1, NT, D, DV), dk, cols, D, DV)
    e = tl.exp(lam)[:, None]
    u = tl.exp(lam_last - lam)[:, None]
    ew = dcr * cr + dci * ci
    pr, pi = _cmatmul(qr, qi, spr, spi, PRECISION)
    vgr, vgi = _cmatmul_bh(vr, vi, dsr, dsi, PRECISION)
    dlam = (tl.sum(ew, 1) - tl.sum(ew, 0) + tl.sum(e * (gr * pr + gi * pi), 1)
            - tl.sum(u * (kr * vgr + ki * vgi), 1)
            + tl.where(rows == CHUNK - 1, tl.sum(tl.sum(dsr * snr + dsi * sni, 1), 0), 0.0))
    part_base = (iv.to(tl.int64) * BH + bh) * T
    tl.store(gl_ptr + part_base + t, tl.sum(dlam, 0) - tl.cumsum(dlam, 0) + dlam, mask=t < T)
    xr, xi = _cmatmul(dcr, dci, kr, ki, PRECISION)
    yr, yi = _cmatmul_bh(gr, gi, spr, spi, PRECISION)
    _store_tile(gq_ptr, part_base * D * 2, t, dk, T, D, xr + e * yr, xi + e * yi)


@triton.jit
def gla_bwd_dkv_kernel(q_ptr, k_ptr, v_ptr, g_ptr, dstates_ptr, go_ptr, gk_ptr, gv_ptr,
                       T, D, DV, NT, BH,
                       CHUNK: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, PRECISION: tl.constexpr):
    """Gradients of ``k`` and ``v`` within one chunk, for one block of value columns: ``grad_k = dc^H Q + u V dS^H``,
    ``grad_v = A^H G + u K dS`` (notation of :func:`gla_bwd_dq_kernel`).

    ``gk: r[NV, BH, T, D, 2]`` receives this column block's share (summed by the caller), ``gv`` the full
    ``c[BH, T, DV]`` gradient. Grid: ``(BH * NT, NV = cdiv(DV, BLOCK_DV))``.
    """
    bh = tl.program_id(0) // NT
    c = tl.program_id(0) % NT
    iv = tl.program_id(1)
    cols = iv * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dk = tl.arange(0, BLOCK_D)
    rows = tl.arange(0, CHUNK)
    t = c * CHUNK + rows
    qr, qi, kr, ki, vr, vi, gr, gi, cr, ci, w, dcr, dci, lam, lam_last = _chunk_inputs(
        q_ptr, k_ptr, v_ptr, go_ptr, g_ptr, bh, t, cols, dk, rows, T, D, DV, CHUNK, PRECISION)
    dsr, dsi = _tile(dstates_ptr, _state_base(bh, c + 1, NT, D, DV), dk, cols, D, DV)
    u = tl.exp(lam_last - lam)[:, None]
    vgr, vgi = _cmatmul_bh(vr, vi, dsr, dsi, PRECISION)
    xr, xi = _cmatmul_ah(dcr, dci, qr, qi, PRECISION)
    part_base = (iv.to(tl.int64) * BH + bh) * T
    _store_tile(gk_ptr, part_base * D * 2, t, dk, T, D, xr + u * vgr, xi + u * vgi)
    xr, xi = _cmatmul_ah(w * cr, w * ci, gr, gi, PRECISION)
    yr, yi = _cmatmul(kr, ki, dsr, dsi, PRECISION)
    _store_tile(gv_ptr, bh.to(tl.int64) * T * DV * 2, t, cols, T, DV, xr + u * yr, xi + u * yi)
