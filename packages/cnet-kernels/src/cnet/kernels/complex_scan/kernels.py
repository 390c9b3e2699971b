"""Triton kernels of the chunked complex diagonal scan ``h_t = a_t h_{t-1} + b_t`` and its adjoint.

Layout: complex tensors ``c[B, T, C]`` (channel-contiguous) read as real/imaginary pairs (``torch.view_as_real``),
so element ``(b, t, c)`` has its real part at ``2 ((b T + t) C + c)`` and its imaginary part one further.
One program owns one batch row and ``BLOCK_C`` channels and walks the time axis in blocks of ``BLOCK_T`` rows: each
block is scanned in parallel with ``tl.associative_scan`` over the affine maps ``h -> a h + b`` (planar re/im),
then the carry (the state entering the block) is applied and the block's last row becomes the next carry. With
``PREFETCH`` the next block's tiles are loaded before the current one is scanned, so memory traffic overlaps the
arithmetic at the cost of registers (the autotuner chooses).
Padding rows past the sequence are the identity map ``(a, b) = (1, 0)``, which keeps the last row equal to the
final state. Source: quantum-shortcut paper section 5 (chunked scan); papers/NOTES.md.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["scan_fwd_kernel", "scan_bwd_kernel"]


@triton.jit
def _compose(ar1, ai1, br1, bi1, ar2, ai2, br2, bi2):
    """The map ``(a1, b1)`` followed by ``(a2, b2)``: ``(a2 a1, a2 b1 + b2)``, on re/im planes."""
    ar = ar2 * ar1 - ai2 * ai1
    ai = ar2 * ai1 + ai2 * ar1
    br = ar2 * br1 - ai2 * bi1 + br2
    bi = ar2 * bi1 + ai2 * br1 + bi2
    return ar, ai, br, bi


@triton.jit
def _last_row(x, rows, BLOCK_T: tl.constexpr):
    """Row ``BLOCK_T - 1`` of a ``[BLOCK_T, BLOCK_C]`` tile as a ``[BLOCK_C]`` vector."""
    return tl.sum(tl.where(rows[:, None] == BLOCK_T - 1, x, 0.0), axis=0)


@triton.jit
def _load_pair(ptr, offs, mask, other_re):
    """Real and imaginary planes at complex offsets ``offs`` (in reals: ``2 * index``); masked lanes read
    ``(other_re, 0)``."""
    re = tl.load(ptr + offs, mask=mask, other=other_re)
    im = tl.load(ptr + offs + 1, mask=mask, other=0.0)
    return re, im


@triton.jit
def _fwd_tiles(a_ptr, b_ptr, base, t, offs_c, T, C, chan_mask):
    """Load the ``(a, b)`` tiles of the time rows ``t`` (identity map past ``T``)."""
    mask = (t < T)[:, None] & chan_mask[None, :]
    offs = base + (t.to(tl.int64)[:, None] * C + offs_c[None, :]) * 2
    ar, ai = _load_pair(a_ptr, offs, mask, 1.0)
    br, bi = _load_pair(b_ptr, offs, mask, 0.0)
    return ar, ai, br, bi


@triton.jit
def scan_fwd_kernel(a_ptr, b_ptr, h0_ptr, h_ptr, last_ptr, T, C,
                    HAS_H0: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, PREFETCH: tl.constexpr):
    """``h_t = a_t h_{t-1} + b_t`` from ``h_{-1} = h0`` (0 without ``HAS_H0``); also writes ``h_{T-1}``.

    Pointers are real views of complex ``a, b, h: c[B, T, C]``, ``h0, last: c[B, C]``. Grid: ``B * cdiv(C, BLOCK_C)``.
    With ``PREFETCH`` the next block's tiles are loaded before the current block is scanned (twice the registers).
    """
    pid = tl.program_id(0)
    n_cblocks = tl.cdiv(C, BLOCK_C)
    row = pid // n_cblocks
    offs_c = (pid % n_cblocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    chan_mask = offs_c < C
    rows = tl.arange(0, BLOCK_T)
    base = row.to(tl.int64) * T * C * 2
    state_offs = (row.to(tl.int64) * C + offs_c) * 2
    if HAS_H0:
        hr, hi = _load_pair(h0_ptr, state_offs, chan_mask, 0.0)
    else:
        hr = tl.zeros([BLOCK_C], dtype=h_ptr.dtype.element_ty)
        hi = tl.zeros([BLOCK_C], dtype=h_ptr.dtype.element_ty)
    if PREFETCH:
        nar, nai, nbr, nbi = _fwd_tiles(a_ptr, b_ptr, base, rows, offs_c, T, C, chan_mask)
    for t0 in range(0, T, BLOCK_T):
        t = t0 + rows
        if PREFETCH:
            ar, ai, br, bi = nar, nai, nbr, nbi
            nar, nai, nbr, nbi = _fwd_tiles(a_ptr, b_ptr, base, t + BLOCK_T, offs_c, T, C, chan_mask)
        else:
            ar, ai, br, bi = _fwd_tiles(a_ptr, b_ptr, base, t, offs_c, T, C, chan_mask)
        ar, ai, br, bi = tl.associative_scan((ar, ai, br, bi), 0, _compose)
        out_r = ar * hr[None, :] - ai * hi[None, :] + br
        out_i = ar * hi[None, :] + ai * hr[None, :] + bi
        mask = (t < T)[:, None] & chan_mask[None, :]
        offs = base + (t.to(tl.int64)[:, None] * C + offs_c[None, :]) * 2
        tl.store(h_ptr + offs, out_r, mask=mask)
        tl.store(h_ptr + offs + 1, out_i, mask=mask)
        hr = _last_row(out_r, rows, BLOCK_T)
        hi = _last_row(out_i, rows, BLOCK_T)
    tl.store(last_ptr + state_offs, hr, mask=chan_mask)
    tl.store(last_ptr + state_offs + 1, hi, mask=chan_mask)


@triton.jit
def _bwd_tiles(a_ptr, gh_ptr, base, t, offs_c, T, C, chan_mask):
    """Load, for the (descending) time rows ``t``, ``a_{t+1}`` (1 at ``t = T-1`` and on padding rows ``t < 0``) and
    ``grad_h_t``."""
    valid = (t >= 0)[:, None] & chan_mask[None, :]
    offs = base + (t.to(tl.int64)[:, None] * C + offs_c[None, :]) * 2
    ar, ai = _load_pair(a_ptr, offs + 2 * C, valid & (t + 1 < T)[:, None], 1.0)
    gr, gi = _load_pair(gh_ptr, offs, valid, 0.0)
    return ar, ai, gr, gi


@triton.jit
def scan_bwd_kernel(a_ptr, h_ptr, h0_ptr, gh_ptr, glast_ptr, ga_ptr, gb_ptr, gh0_ptr, T, C,
                    HAS_H0: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, PREFETCH: tl.constexpr):
    """Adjoint of :func:`scan_fwd_kernel`: ``g_t = grad_h_t + conj(a_{t+1}) g_{t+1}`` run backwards from
    ``g_{T-1} = grad_h_{T-1} + grad_last``; writes ``grad_b = g``, ``grad_a_t = g_t conj(h_{t-1})`` and, with
    ``HAS_H0``, ``grad_h0 = conj(a_0) g_0``.

    Pointers are real views of complex ``a, h, grad_h, grad_a, grad_b: c[B, T, C]`` and ``h0, grad_last, grad_h0:
    c[B, C]``. Grid: ``B * cdiv(C, BLOCK_C)``. Row ``r`` of a block holds time ``t_end - r``, so the backward
    recurrence is a forward scan over the rows. ``PREFETCH`` as in :func:`scan_fwd_kernel` (for ``a`` and
    ``grad_h``; ``h_{t-1}`` is loaded before the scan and used after it).
    """
    pid = tl.program_id(0)
    n_cblocks = tl.cdiv(C, BLOCK_C)
    row = pid // n_cblocks
    offs_c = (pid % n_cblocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    chan_mask = offs_c < C
    rows = tl.arange(0, BLOCK_T)
    base = row.to(tl.int64) * T * C * 2
    state_offs = (row.to(tl.int64) * C + offs_c) * 2
    cr, ci = _load_pair(glast_ptr, state_offs, chan_mask, 0.0)
    if HAS_H0:
        h0r, h0i = _load_pair(h0_ptr, state_offs, chan_mask, 0.0)
    if PREFETCH:
        nar, nai, ngr, ngi = _bwd_tiles(a_ptr, gh_ptr, base, T - 1 - rows, offs_c, T, C, chan_mask)
    for t0 in range(0, T, BLOCK_T):
        t = T - 1 - t0 - rows
        if PREFETCH:
            ar, ai, gr, gi = nar, nai, ngr, ngi
            nar, nai, ngr, ngi = _bwd_tiles(a_ptr, gh_ptr, base, t - BLOCK_T, offs_c, T, C, chan_mask)
        else:
            ar, ai, gr, gi = _bwd_tiles(a_ptr, gh_ptr, base, t, offs_c, T, C, chan_mask)
        mask = (t >= 0)[:, None] & chan_mask[None, :]
        offs = base + (t.to(tl.int64)[:, None] * C + offs_c[None, :]) * 2
        pr, pi = _load_pair(h_ptr, offs - 2 * C, mask & (t >= 1)[:, None], 0.0)  # h_{t-1}
        # coefficient conj(a_{t+1}), input grad_h_t
        ar, ai, gr, gi = tl.associative_scan((ar, -ai, gr, gi), 0, _compose)
        g_r = ar * cr[None, :] - ai * ci[None, :] + gr
        g_i = ar * ci[None, :] + ai * cr[None, :] + gi
        if HAS_H0:
            first = (t == 0)[:, None]
            pr = tl.where(first, h0r[None, :], pr)
            pi = tl.where(first, h0i[None, :], pi)
        tl.store(gb_ptr + offs, g_r, mask=mask)
        tl.store(gb_ptr + offs + 1, g_i, mask=mask)
        tl.store(ga_ptr + offs, g_r * pr + g_i * pi, mask=mask)
        tl.store(ga_ptr + offs + 1, g_i * pr - g_r * pi, mask=mask)
        cr = _last_row(g_r, rows, BLOCK_T)
        ci = _last_row(g_i, rows, BLOCK_T)
    if HAS_H0:
        a0r, a0i = _load_pair(a_ptr, base + offs_c * 2, chan_mask, 0.0)
        tl.store(gh0_ptr + state_offs, a0r * cr + a0i * ci, mask=chan_mask)
        tl.store(gh0_ptr + state_offs + 1, a0r * ci - a0i * cr, mask=chan_mask)
