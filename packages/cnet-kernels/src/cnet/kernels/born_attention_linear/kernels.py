"""Triton kernels of causal linear Born attention: state sweeps over the chunks, and the intra-chunk part.

Every tensor is read and written as interleaved real planes (``torch.view_as_real`` of a contiguous complex64
tensor: ``[..., T, D, 2]`` seen as ``[..., T, 2D]``), one ``(batch, head)`` slab per program along grid axis 1.
See :mod:`cnet.kernels.born_attention_linear.op` for the algorithm, the real feature map the sweeps use and
the memory they need.

* ``sweep_forward``: per feature tile, carry the state slice ``S[F, VB]`` (values) and ``Z[F]`` (normaliser) over
  the chunks in order; atomically add each chunk's readout ``r_i phi_w(q_i) . S`` into the numerator and
  normaliser accumulators.
* ``intra_forward``: per chunk, the quadratic part inside the chunk, added to the accumulators; writes
  ``o = num / n`` over the numerator (in place) and the safe normaliser ``n``.
* ``sweep_grad_q``: the forward sweep again, reading ``S`` against the output gradient: query gradients.
* ``sweep_grad_kv``: the adjoint state ``R`` swept from the last chunk to the first: key and value gradients.
* ``intra_backward``: the intra-chunk gradients, added to the accumulated ones (in place).
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["sweep_forward", "intra_forward", "sweep_grad_q", "sweep_grad_kv", "intra_backward"]


@triton.jit
def _mm(a, b, PREC: tl.constexpr):
    """``a @ b`` with fp32 accumulation; operands in bf16 (``PREC == "bf16"``) or fp32 at ``input_precision``.
    ``"bf16-upcast"`` (interpreter only): operands rounded to bf16 and multiplied as fp32 (the same values, exact
    products), because the interpreter's ``tl.dot`` multiplies the raw bits of bf16 operands."""
    if PREC == "bf16":
        return tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))
    elif PREC == "bf16-upcast":
        return tl.dot(a.to(tl.bfloat16).to(tl.float32), b.to(tl.bfloat16).to(tl.float32), input_precision="ieee")
    else:
        return tl.dot(a, b, input_precision=PREC)


@triton.jit
def _planes_t(ptr, t0, T, col0, ncols, BD: tl.constexpr, C: tl.constexpr):
    """Real and imaginary planes ``[BD, C]`` of complex columns ``col0 + [0, BD)`` of rows ``t0 + [0, C)`` of a
    ``[T, ncols]`` complex slab (zeros outside)."""
    d = col0 + tl.arange(0, BD)
    t = t0 + tl.arange(0, C)
    off = t[None, :] * (2 * ncols) + 2 * d[:, None]
    m = (d[:, None] < ncols) & (t[None, :] < T)
    return tl.load(ptr + off, mask=m, other=0.0), tl.load(ptr + off + 1, mask=m, other=0.0)


@triton.jit
def _add_planes_t(ptr, gr, gi, t0, T, col0, ncols, BD: tl.constexpr, C: tl.constexpr):
    """Atomically add planes ``[BD, C]`` into the slab that :func:`_planes_t` reads."""
    d = col0 + tl.arange(0, BD)
    t = t0 + tl.arange(0, C)
    off = t[None, :] * (2 * ncols) + 2 * d[:, None]
    m = (d[:, None] < ncols) & (t[None, :] < T)
    tl.atomic_add(ptr + off, gr, mask=m, sem="relaxed")
    tl.atomic_add(ptr + off + 1, gi, mask=m, sem="relaxed")


@triton.jit
def _tile(ptr, t0, T, stride, width, C: tl.constexpr, W: tl.constexpr):
    """Columns ``[0, W)`` of rows ``t0 + [0, C)`` of a real slab with row ``stride``: ``[C, W]`` (zeros past ``T``
    and past ``width`` columns)."""
    t = t0 + tl.arange(0, C)
    c = tl.arange(0, W)
    return tl.load(ptr + t[:, None] * stride + c[None, :], mask=(t[:, None] < T) & (c[None, :] < width), other=0.0)


@triton.jit
def _add_tile(ptr, x, t0, T, stride, width, C: tl.constexpr, W: tl.constexpr):
    """Atomically add ``x`` ``[C, W]`` into the slab that :func:`_tile` reads."""
    t = t0 + tl.arange(0, C)
    c = tl.arange(0, W)
    tl.atomic_add(ptr + t[:, None] * stride + c[None, :], x, mask=(t[:, None] < T) & (c[None, :] < width),
                  sem="relaxed")


@triton.jit
def _rows(ptr, t0, T, C: tl.constexpr):
    """Entries ``t0 + [0, C)`` of a real ``[T]`` slab (zeros past ``T``)."""
    t = t0 + tl.arange(0, C)
    return tl.load(ptr + t, mask=t < T, other=0.0)


@triton.jit
def _tile_meta(tiles_ptr, lg_ptr, H, BD: tl.constexpr, C: tl.constexpr):
    """This program's feature tile: first columns ``i0, j0`` of its blocks ``I, J``, selector ``sel`` and query
    weights ``w`` ``[BD, BD, 1]`` (see :func:`_features`); and the decay factors of its head from ``lg = log2 gamma``:
    ``read = gamma^(p+1)`` and ``write = gamma^(C-1-p)`` over chunk positions ``p`` ``[C]``, ``carry = gamma^C``."""
    f = tl.program_id(0)
    ti = tl.load(tiles_ptr + 3 * f)
    tj = tl.load(tiles_ptr + 3 * f + 1)
    kind = tl.load(tiles_ptr + 3 * f + 2)  # 0: Re part of an off-diagonal block, 1: its Im part, 2: diagonal block
    dl = tl.arange(0, BD)
    sel = (kind == 0) | ((kind == 2) & (dl[:, None] <= dl[None, :]))
    w = tl.where((kind == 2) & (dl[:, None] == dl[None, :]), 1.0, 2.0)
    lg = tl.load(lg_ptr + tl.program_id(1) % H)
    p = tl.arange(0, C).to(tl.float32)
    read = tl.exp2(lg * (p + 1.0))
    write = tl.exp2(lg * (C - 1.0 - p))
    carry = tl.exp2(lg * C)
    return ti * BD, tj * BD, sel[:, :, None], w[:, :, None], read, write, carry


@triton.jit
def _features(xr, xi, yr, yi, sel):
    """Real features ``[BD, BD, C]`` of one tile from planes ``x`` (block ``I``) and ``y`` (block ``J``), ``[BD, C]``:
    ``Re(x_d conj(y_e))`` where ``sel``, else ``Im(x_d conj(y_e))``."""
    xr3 = xr[:, None, :]
    xi3 = xi[:, None, :]
    return tl.where(sel, xr3, xi3) * yr[None, :, :] + tl.where(sel, xi3, -xr3) * yi[None, :, :]


@triton.jit
def _feature_grads(g, xr, xi, yr, yi, sel):
    """Adjoint of :func:`_features`: from ``g = dL/dfeatures`` ``[BD, BD, C]`` the real gradients ``[BD, C]`` of
    ``xr, xi`` (block ``I``) and ``yr, yi`` (block ``J``)."""
    xr3 = xr[:, None, :]
    xi3 = xi[:, None, :]
    gyr = tl.sum(g * tl.where(sel, xr3, xi3), axis=0)
    gyi = tl.sum(g * tl.where(sel, xi3, -xr3), axis=0)
    g1 = g * yr[None, :, :]
    g2 = g * yi[None, :, :]
    gxr = tl.sum(tl.where(sel, g1, -g2), axis=1)
    gxi = tl.sum(tl.where(sel, g2, g1), axis=1)
    return gxr, gxi, gyr, gyi


@triton.jit
def _tile_features(ptr, t0, T, D, i0, j0, sel, w, BD: tl.constexpr, C: tl.constexpr):
    """Features times ``w`` ``[BD, BD, 1]``, flattened to ``[BD * BD, C]``, of rows ``t0 + [0, C)`` of a ``[T, D]``
    complex slab for the tile at columns ``(i0, j0)``."""
    xr, xi = _planes_t(ptr, t0, T, i0, D, BD, C)
    yr, yi = _planes_t(ptr, t0, T, j0, D, BD, C)
    return tl.reshape(_features(xr, xi, yr, yi, sel) * w, (BD * BD, C))


@triton.jit
def _scatter_feature_grads(g, src_ptr, dst_ptr, t0, T, D, i0, j0, sel, BD: tl.constexpr, C: tl.constexpr):
    """Chain ``g = dL/dfeatures`` ``[BD * BD, C]`` of one tile through :func:`_features` (``x`` = block at ``i0``,
    ``y`` = block at ``j0`` of ``src``) and add the result into ``dst`` (same layout), atomically."""
    xr, xi = _planes_t(src_ptr, t0, T, i0, D, BD, C)
    yr, yi = _planes_t(src_ptr, t0, T, j0, D, BD, C)
    gxr, gxi, gyr, gyi = _feature_grads(tl.reshape(g, (BD, BD, C)), xr, xi, yr, yi, sel)
    _add_planes_t(dst_ptr, gxr, gxi, t0, T, i0, D, BD, C)
    _add_planes_t(dst_ptr, gyr, gyi, t0, T, j0, D, BD, C)  # a diagonal tile adds both halves to one block


@triton.jit
def sweep_forward(q_ptr, k_ptr, v_ptr, tiles_ptr, lg_ptr, num_ptr, den_ptr, T, H, D, DV2,
                  BD: tl.constexpr, C: tl.constexpr, VB: tl.constexpr, PREC: tl.constexpr):
    """Inter-chunk forward. Grid ``(tiles, B * H, value blocks)``. ``q, k`` ``c[B, H, T, D]``, ``v``
    ``c[B, H, T, DV2 / 2]`` as planes; adds into ``num`` ``r[B, H, T, DV2]`` and ``den`` ``r[B, H, T]`` (fp32, zero
    before the first tile). Value block ``j`` holds plane columns ``[j VB, (j + 1) VB)``; block 0 the normaliser."""
    bh = tl.program_id(1).to(tl.int64)
    v0 = tl.program_id(2) * VB
    den_rows = tl.where(tl.program_id(2) == 0, T, 0)  # the normaliser is added by value block 0 only
    q_ptr += bh * T * 2 * D
    k_ptr += bh * T * 2 * D
    v_ptr += bh * T * DV2 + v0
    num_ptr += bh * T * DV2 + v0
    den_ptr += bh * T
    i0, j0, sel, w, read, write, carry = _tile_meta(tiles_ptr, lg_ptr, H, BD, C)
    s = tl.zeros((BD * BD, VB), dtype=tl.float32)
    z = tl.zeros((BD * BD,), dtype=tl.float32)
    for t0 in range(0, T, C):
        t = t0 + tl.arange(0, C)
        fq = _tile_features(q_ptr, t0, T, D, i0, j0, sel, w, BD, C) * read[None, :]
        _add_tile(num_ptr, tl.trans(_mm(tl.trans(s), fq, PREC)), t0, T, DV2, DV2 - v0, C, VB)
        tl.atomic_add(den_ptr + t, tl.sum(fq * z[:, None], axis=0), mask=t < den_rows, sem="relaxed")
        fk = _tile_features(k_ptr, t0, T, D, i0, j0, sel, 1.0, BD, C) * write[None, :]
        s = s * carry + _mm(fk, _tile(v_ptr, t0, T, DV2, DV2 - v0, C, VB), PREC)
        z = z * carry + tl.sum(fk, axis=1)


@triton.jit
def sweep_grad_q(q_ptr, k_ptr, v_ptr, gu_ptr, gn_ptr, tiles_ptr, lg_ptr, gq_ptr, T, H, D, DV2,
                 BD: tl.constexpr, C: tl.constexpr, VB: tl.constexpr, PREC: tl.constexpr):
    """Inter-chunk query gradients. Grid ``(tiles, B * H, value blocks)``. ``gu`` ``r[B, H, T, DV2]`` and ``gn``
    ``r[B, H, T]`` are the gradients of the numerator planes and of the normaliser; adds into ``gq`` (planes like
    ``q``, fp32). Value blocks as in :func:`sweep_forward`."""
    bh = tl.program_id(1).to(tl.int64)
    v0 = tl.program_id(2) * VB
    first = tl.where(tl.program_id(2) == 0, 1.0, 0.0)  # the normaliser is carried by value block 0 only
    q_ptr += bh * T * 2 * D
    k_ptr += bh * T * 2 * D
    gq_ptr += bh * T * 2 * D
    v_ptr += bh * T * DV2 + v0
    gu_ptr += bh * T * DV2 + v0
    gn_ptr += bh * T
    i0, j0, sel, w, read, write, carry = _tile_meta(tiles_ptr, lg_ptr, H, BD, C)
    s = tl.zeros((BD * BD, VB), dtype=tl.float32)
    z = tl.zeros((BD * BD,), dtype=tl.float32)
    wf = tl.reshape(tl.broadcast_to(w, (BD, BD, 1)), (BD * BD, 1))
    for t0 in range(0, T, C):
        gu = _tile(gu_ptr, t0, T, DV2, DV2 - v0, C, VB)
        gn = _rows(gn_ptr, t0, T, C)
        g = (_mm(s, tl.trans(gu), PREC) + z[:, None] * gn[None, :]) * read[None, :] * wf  # [F, C]
        _scatter_feature_grads(g, q_ptr, gq_ptr, t0, T, D, i0, j0, sel, BD, C)
        fk = _tile_features(k_ptr, t0, T, D, i0, j0, sel, 1.0, BD, C) * write[None, :]
        s = s * carry + _mm(fk, _tile(v_ptr, t0, T, DV2, DV2 - v0, C, VB), PREC)
        z = z * carry + tl.sum(fk, axis=1) * first


@triton.jit
def sweep_grad_kv(q_ptr, k_ptr, v_ptr, gu_ptr, gn_ptr, tiles_ptr, lg_ptr, gk_ptr, gv_ptr, T, H, D, DV2,
                  BD: tl.constexpr, C: tl.constexpr, VB: tl.constexpr, PREC: tl.constexpr):
    """Inter-chunk key and value gradients: the adjoint state swept from the last chunk to the first. Grid
    ``(tiles, B * H, value blocks)``; arguments as :func:`sweep_grad_q`; adds into ``gk`` (like ``k``) and ``gv``
    (like ``v``)."""
    bh = tl.program_id(1).to(tl.int64)
    v0 = tl.program_id(2) * VB
    first = tl.where(tl.program_id(2) == 0, 1.0, 0.0)  # the normaliser is carried by value block 0 only
    q_ptr += bh * T * 2 * D
    k_ptr += bh * T * 2 * D
    gk_ptr += bh * T * 2 * D
    v_ptr += bh * T * DV2 + v0
    gv_ptr += bh * T * DV2 + v0
    gu_ptr += bh * T * DV2 + v0
    gn_ptr += bh * T
    i0, j0, sel, w, read, write, carry = _tile_meta(tiles_ptr, lg_ptr, H, BD, C)
    r = tl.zeros((BD * BD, VB), dtype=tl.float32)
    rn = tl.zeros((BD * BD,), dtype=tl.float32)
    n_chunks = tl.cdiv(T, C)
    for j in range(0, n_chunks):
        t0 = (n_chunks - 1 - j) * C
        fk = _tile_features(k_ptr, t0, T, D, i0, j0, sel, 1.0, BD, C) * write[None, :]
        _add_tile(gv_ptr, tl.trans(_mm(tl.trans(r), fk, PREC)), t0, T, DV2, DV2 - v0, C, VB)
        v = _tile(v_ptr, t0, T, DV2, DV2 - v0, C, VB)
        g = (_mm(r, tl.trans(v), PREC) + rn[:, None]) * write[None, :]  # [F, C]
        _scatter_feature_grads(g, k_ptr, gk_ptr, t0, T, D, i0, j0, sel, BD, C)
        fq = _tile_features(q_ptr, t0, T, D, i0, j0, sel, w, BD, C) * read[None, :]
        gn = _rows(gn_ptr, t0, T, C)
        r = r * carry + _mm(fq, _tile(gu_ptr, t0, T, DV2, DV2 - v0, C, VB), PREC)
        rn = rn * carry + tl.sum(fq * gn[None, :], axis=1) * first


@triton.jit
def _chunk_overlaps(q_ptr, k_ptr, lg_ptr, t0, T, H, D, BD2: tl.constexpr, C: tl.constexpr, PREC: tl.constexpr):
    """For the chunk at ``t0``: interleaved planes ``q2, k2`` ``[C, BD2]``, ``Re c``, ``Im c`` of ``c = q k^H``
    ``[C, C]`` and the causal decay weights ``gamma^(i-m)`` (0 for ``m > i``) ``[C, C]``."""
    t = t0 + tl.arange(0, C)
    col = tl.arange(0, BD2)
    m = (t[:, None] < T) & (col[None, :] < 2 * D)
    off = t[:, None] * (2 * D) + col[None, :]
    swap = t[:, None] * (2 * D) + (col[None, :] ^ 1)  # the other plane of the same complex entry
    q2 = tl.load(q_ptr + off, mask=m, other=0.0)
    k2 = tl.load(k_ptr + off, mask=m, other=0.0)
    k2rot = tl.load(k_ptr + swap, mask=m, other=0.0) * tl.where(col % 2 == 0, -1.0, 1.0)[None, :]  # (-Im k, Re k)
    cr = _mm(q2, tl.trans(k2), PREC)
    ci = _mm(q2, tl.trans(k2rot), PREC)
    p = tl.arange(0, C)
    lag = p[:, None] - p[None, :]
    lg = tl.load(lg_ptr + tl.program_id(1) % H)
    decay = tl.where(lag >= 0, tl.exp2(lg * tl.maximum(lag, 0).to(tl.float32)), 0.0)
    return q2, k2, k2rot, cr, ci, decay


@triton.jit
def intra_forward(q_ptr, k_ptr, v_ptr, lg_ptr, num_ptr, den_ptr, T, H, D, DV2, eps,
                  BD2: tl.constexpr, BV: tl.constexpr, C: tl.constexpr, PREC: tl.constexpr):
    """Intra-chunk forward and the output. Grid ``(chunks, B * H)``. Reads the accumulated inter-chunk ``num``
    ``r[B, H, T, DV2]`` and ``den`` ``r[B, H, T]``, adds the chunk's quadratic part and ``eps``, and writes
    ``o = num / n`` over ``num`` and the safe normaliser ``n`` (0 replaced by 1) over ``den``."""
    bh = tl.program_id(1).to(tl.int64)
    q_ptr += bh * T * 2 * D
    k_ptr += bh * T * 2 * D
    v_ptr += bh * T * DV2
    num_ptr += bh * T * DV2
    den_ptr += bh * T
    t0 = tl.program_id(0) * C
    _, _, _, cr, ci, decay = _chunk_overlaps(q_ptr, k_ptr, lg_ptr, t0, T, H, D, BD2, C, PREC)
    s = (cr * cr + ci * ci) * decay
    t = t0 + tl.arange(0, C)
    cols = tl.arange(0, BV)
    off = t[:, None] * DV2 + cols[None, :]
    m = (t[:, None] < T) & (cols[None, :] < DV2)
    v2 = tl.load(v_ptr + off, mask=m, other=0.0)
    num = tl.load(num_ptr + off, mask=m, other=0.0) + _mm(s, v2, PREC)
    n = tl.load(den_ptr + t, mask=t < T, other=0.0) + tl.sum(s, axis=1) + eps
    n = tl.where(n != 0.0, n, 1.0)
    tl.store(num_ptr + off, num / n[:, None], mask=m)
    tl.store(den_ptr + t, n, mask=t < T)


@triton.jit
def intra_backward(q_ptr, k_ptr, v_ptr, gu_ptr, gn_ptr, lg_ptr, gq_ptr, gk_ptr, gv_ptr, T, H, D, DV2,
                   BD2: tl.constexpr, BV: tl.constexpr, C: tl.constexpr, PREC: tl.constexpr):
    """Intra-chunk gradients added in place to the inter-chunk ones in ``gq, gk, gv`` (planes like ``q, k, v``).
    Grid ``(chunks, B * H)``; ``gu`` ``r[B, H, T, DV2]``, ``gn`` ``r[B, H, T]`` as in :func:`sweep_grad_q`."""
    bh = tl.program_id(1).to(tl.int64)
    q_ptr += bh * T * 2 * D
    k_ptr += bh * T * 2 * D
    gq_ptr += bh * T * 2 * D
    gk_ptr += bh * T * 2 * D
    v_ptr += bh * T * DV2
    gu_ptr += bh * T * DV2
    gv_ptr += bh * T * DV2
    gn_ptr += bh * T
    t0 = tl.program_id(0) * C
    q2, k2, k2rot, cr, ci, decay = _chunk_overlaps(q_ptr, k_ptr, lg_ptr, t0, T, H, D, BD2, C, PREC)
    t = t0 + tl.arange(0, C)
    cols = tl.arange(0, BV)
    off = t[:, None] * DV2 + cols[None, :]
    m = (t[:, None] < T) & (cols[None, :] < DV2)
    v2 = tl.load(v_ptr + off, mask=m, other=0.0)
    gu = tl.load(gu_ptr + off, mask=m, other=0.0)
    gn = tl.load(gn_ptr + t, mask=t < T, other=0.0)
    s = (cr * cr + ci * ci) * decay
    gv = tl.load(gv_ptr + off, mask=m, other=0.0) + _mm(tl.trans(s), gu, PREC)
    tl.store(gv_ptr + off, gv, mask=m)
    gs = (_mm(gu, tl.trans(v2), PREC) + gn[:, None]) * decay
    gcr = 2.0 * gs * cr
    gci = 2.0 * gs * ci
    col = tl.arange(0, BD2)
    mq = (t[:, None] < T) & (col[None, :] < 2 * D)
    offq = t[:, None] * (2 * D) + col[None, :]
    # q2rot = (Im q, -Re q): grad_k = conj(g_c)^T q in planes
    q2rot = tl.load(q_ptr + t[:, None] * (2 * D) + (col[None, :] ^ 1), mask=mq, other=0.0)
    q2rot = q2rot * tl.where(col % 2 == 0, 1.0, -1.0)[None, :]
    gq = tl.load(gq_ptr + offq, mask=mq, other=0.0) + _mm(gcr, k2, PREC) + _mm(gci, k2rot, PREC)
    tl.store(gq_ptr + offq, gq, mask=mq)
    gk = tl.load(gk_ptr + offq, mask=mq, other=0.0) + _mm(tl.trans(gcr), q2, PREC) + _mm(tl.trans(gci), q2rot, PREC)
    tl.store(gk_ptr + offq, gk, mask=mq)
