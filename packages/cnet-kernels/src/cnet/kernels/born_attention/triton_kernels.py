"""Flash-style Triton kernels of quadratic Born attention on interleaved real/imaginary planes.

Every complex ``c[B, H, T, D]`` enters as its interleaved planes ``x2 = view_as_real(x)`` flattened to
``r[B*H, T, 2D]`` (columns ``re_0, im_0, re_1, im_1, ...``), together with the planes of ``i x`` (columns
``-im_0, re_0, ...``) where a product needs them. For ``c_km = sum_d q_kd conj(k_md)`` and any complex row ``x``,

    Re c = q2 . k2        Im c = q2 . (i k)2        c x = Re c x2 + Im c (i x)2

so a ``[BM, BN]`` tile of overlaps is two real ``tl.dot`` with inner size ``2D`` sharing the query operand, and
every complex product of the backward is two real ones. The ``T x T`` scores only ever live in registers. Scores
are non-negative and need no exp, hence no running maximum: the forward accumulates ``sum_m s_km v_m`` and
``sum_m s_km`` in one pass and stores the safe normaliser ``n_k`` (``sum + eps``, 0 -> 1) for the backward. The
backward is the flash pattern: one kernel per key block for ``grad_k`` and ``grad_v`` (looping over query blocks)
and one per query block for ``grad_q``, each recomputing its tiles (formulas in
:mod:`cnet.kernels.born_attention.triton_quadratic`).

Causal calls skip the key blocks past the diagonal and mask only the blocks that cross it. A per-head decay
``gamma^(i-j)`` is ``exp2((i - j) log2 gamma)`` with ``i - j >= 0`` and ``log2 gamma <= 0``: it never overflows and
underflows to 0 far in the past.

Operands are fp32 planes (``tl.dot`` with ``input_precision`` "tf32" or "ieee") or bf16 planes (tiles are cast to
bf16 for the second product); accumulation is fp32 throughout. Hopper's tensor cores take 32-bit operands only
K-major, so with fp32 planes (``KMAJOR``) every right operand whose rows are the reduction index is read from a
transposed copy ``r[B*H, W, T]`` of its planes (bf16 operands are read in either order).

On CUDA the block sizes are autotuned per (T bucket, head dims, flags, operand dtype) over configs that fit in
shared memory; under the interpreter the kernels run with 16 x 16 blocks. Source: CNet paper section 11;
papers/NOTES.md "Born attention (CNet)".
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from cnet.kernels.triton_support import interpreting

__all__ = ["attention_forward", "attention_backward"]

_INTERPRETER_BLOCKS = {"BM": 16, "BN": 16}  # BM: query rows per tile, BN: key rows per tile, in every kernel
_SHARED_MEMORY_BUDGET = 226 * 1024  # bytes per program: an H100/H200 offers 227 KiB
AUTOTUNE = os.environ.get("CNET_TRITON_AUTOTUNE", "1") != "0"  # False: run the first preferred config, no timing


@triton.jit
def _load_rows(base, rows, T, W: tl.constexpr, WP: tl.constexpr):
    """Rows ``rows`` of the row-major planes ``base`` (``[T, W]``) as ``[len(rows), WP]``, zero past T and W."""
    cols = tl.arange(0, WP)
    mask = (rows[:, None] < T) & (cols[None, :] < W)
    return tl.load(base + rows[:, None] * W + cols[None, :], mask=mask, other=0.0)


@triton.jit
def _load_t(base_t, rows, T, W: tl.constexpr, WP: tl.constexpr):
    """Rows ``rows`` of some planes as ``[len(rows), WP]``, read from their transposed copy ``base_t`` (``[W, T]``)
    so that the row index is the contiguous one (a K-major right operand for a product over ``rows``)."""
    cols = tl.arange(0, WP)
    mask = (cols[:, None] < W) & (rows[None, :] < T)
    return tl.trans(tl.load(base_t + cols[:, None] * T + rows[None, :], mask=mask, other=0.0))


@triton.jit
def _right(tile, base_t, rows, T, W: tl.constexpr, WP: tl.constexpr, KMAJOR: tl.constexpr):
    """``tile`` (rows ``rows`` of some planes) as the right operand of a product over ``rows``: with ``KMAJOR`` read
    again from the transposed copy ``base_t``."""
    if KMAJOR:
        tile = _load_t(base_t, rows, T, W, WP)
    return tile


@triton.jit
def _store_rows(base, rows, T, x, W: tl.constexpr, WP: tl.constexpr):
    """Write ``x`` (``[len(rows), WP]``) to rows ``rows`` of ``base`` (``[T, W]``), dropping the padding."""
    cols = tl.arange(0, WP)
    mask = (rows[:, None] < T) & (cols[None, :] < W)
    tl.store(base + rows[:, None] * W + cols[None, :], x, mask=mask)


@triton.jit
def _mm(a, b, acc, PREC: tl.constexpr, UPCAST: tl.constexpr):
    """``acc + a @ b`` in fp32 (``acc`` may be None). ``UPCAST`` (interpreter only): multiply bf16 operands as fp32
    (same values), because the interpreter's ``tl.dot`` multiplies the raw bits of bf16 operands."""
    if UPCAST:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=PREC)


@triton.jit
def _weigh(x, lag, log2g, MASK: tl.constexpr, DECAY: tl.constexpr):
    """``x gamma^lag`` (with ``DECAY``), zeroed where ``lag < 0`` (with ``MASK``); ``lag = query - key index``."""
    if DECAY:
        x = x * tl.exp2(tl.maximum(lag, 0).to(tl.float32) * log2g)
    if MASK:
        x = tl.where(lag >= 0, x, 0.0)
    return x


@triton.jit
def _head_rate(LOG2G, bh, H, DECAY: tl.constexpr):
    """``log2 gamma`` of the head of program row ``bh`` (0 without decay)."""
    log2g = 0.0
    if DECAY:
        log2g = tl.load(LOG2G + bh % H)
    return log2g


@triton.jit
def _fwd_blocks(acc, l, q, K, KI, V, rows, log2g, lo, hi, T, D2: tl.constexpr, DV2: tl.constexpr,
                D2P: tl.constexpr, DV2P: tl.constexpr, MASK: tl.constexpr, DECAY: tl.constexpr,
                KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr, BN: tl.constexpr):
    """Add key blocks ``[lo, hi)`` to the numerator ``acc`` (``[BM, DV2P]``) and the row sums ``l``."""
    for n0 in range(lo, hi, BN):
        cols = n0 + tl.arange(0, BN)
        k = _load_rows(K, cols, T, D2, D2P)
        ki = _load_rows(KI, cols, T, D2, D2P)
        if KMAJOR:
            v = _load_t(V, cols, T, DV2, DV2P)
        else:
            v = _load_rows(V, cols, T, DV2, DV2P)
        re = _mm(q, tl.trans(k), None, PREC, UPCAST)
        im = _mm(q, tl.trans(ki), None, PREC, UPCAST)
        s = _weigh(re * re + im * im, rows[:, None] - cols[None, :], log2g, MASK, DECAY)
        l += tl.sum(s, 1)
        acc = _mm(s.to(v.dtype), v, acc, PREC, UPCAST)
    return acc, l


@triton.jit
def _fwd_kernel(Q, K, KI, V, O, N, LOG2G, T, H, eps, T_KEY, D2: tl.constexpr, DV2: tl.constexpr,
                D2P: tl.constexpr, DV2P: tl.constexpr, CAUSAL: tl.constexpr, DECAY: tl.constexpr,
                KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr):
    """One query block of one head: ``O = (sum_m s v_m) / n`` and ``N = n``. ``V`` is ``[DV2, T]`` with ``KMAJOR``;
    ``T_KEY`` only keys the autotuner."""
    m0 = (tl.num_programs(0) - 1 - tl.program_id(0)) * BM  # the longest causal rows first
    bh = tl.program_id(1)
    head = bh.to(tl.int64) * T
    rows = m0 + tl.arange(0, BM)
    q = _load_rows(Q + head * D2, rows, T, D2, D2P)
    log2g = _head_rate(LOG2G, bh, H, DECAY)
    acc = tl.zeros([BM, DV2P], tl.float32)
    l = tl.zeros([BM], tl.float32)
    K, KI, V = K + head * D2, KI + head * D2, V + head * DV2
    if CAUSAL:
        mid = (m0 // BN) * BN  # key blocks before it lie wholly at or below the diagonal
        acc, l = _fwd_blocks(acc, l, q, K, KI, V, rows, log2g, 0, mid, T, D2, DV2, D2P, DV2P, False, DECAY,
                             KMAJOR, PREC, UPCAST, BN)
        acc, l = _fwd_blocks(acc, l, q, K, KI, V, rows, log2g, mid, tl.minimum(m0 + BM, T), T, D2, DV2, D2P,
                             DV2P, True, DECAY, KMAJOR, PREC, UPCAST, BN)
    else:  # keys past T load as zeros and score 0
        acc, l = _fwd_blocks(acc, l, q, K, KI, V, rows, log2g, 0, T, T, D2, DV2, D2P, DV2P, False, DECAY,
                             KMAJOR, PREC, UPCAST, BN)
    n = l + eps
    n = tl.where(n > 0, n, 1.0)  # a 0/0 row: all its scores are 0, so its weights become 0
    _store_rows(O + head * DV2, rows, T, acc / n[:, None], DV2, DV2P)
    tl.store(N + head + rows, n, mask=rows < T)


@triton.jit
def _dq_blocks(acc, q, g, rn, delta, K, KI, KT, KIT, V, rows, log2g, lo, hi, T, D2: tl.constexpr,
               DV2: tl.constexpr, D2P: tl.constexpr, DV2P: tl.constexpr, MASK: tl.constexpr, DECAY: tl.constexpr,
               KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr, BN: tl.constexpr):
    """Add key blocks ``[lo, hi)`` to ``acc = sum_m grad_s (Re c k2 + Im c (i k)2)`` (``[BM, D2P]``)."""
    for n0 in range(lo, hi, BN):
        cols = n0 + tl.arange(0, BN)
        k = _load_rows(K, cols, T, D2, D2P)
        ki = _load_rows(KI, cols, T, D2, D2P)
        v = _load_rows(V, cols, T, DV2, DV2P)
        re = _mm(q, tl.trans(k), None, PREC, UPCAST)
        im = _mm(q, tl.trans(ki), None, PREC, UPCAST)
        da = _mm(g, tl.trans(v), None, PREC, UPCAST)  # dL/dA = Re(G conj v)
        gs = _weigh((da - delta[:, None]) * rn[:, None], rows[:, None] - cols[None, :], log2g, MASK, DECAY)
        acc = _mm((gs * re).to(k.dtype), _right(k, KT, cols, T, D2, D2P, KMAJOR), acc, PREC, UPCAST)
        acc = _mm((gs * im).to(k.dtype), _right(ki, KIT, cols, T, D2, D2P, KMAJOR), acc, PREC, UPCAST)
    return acc


@triton.jit
def _dq_kernel(Q, K, KI, KT, KIT, V, G, N, DELTA, LOG2G, DQ, T, H, T_KEY, D2: tl.constexpr, DV2: tl.constexpr,
               D2P: tl.constexpr, DV2P: tl.constexpr, CAUSAL: tl.constexpr, DECAY: tl.constexpr,
               KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr, BM: tl.constexpr,
               BN: tl.constexpr):
    """One query block of one head: ``grad_q = 2 sum_m grad_s_km c_km k_m`` as planes."""
    m0 = (tl.num_programs(0) - 1 - tl.program_id(0)) * BM
    bh = tl.program_id(1)
    head = bh.to(tl.int64) * T
    rows = m0 + tl.arange(0, BM)
    q = _load_rows(Q + head * D2, rows, T, D2, D2P)
    g = _load_rows(G + head * DV2, rows, T, DV2, DV2P)
    rn = 1.0 / tl.load(N + head + rows, mask=rows < T, other=1.0)
    delta = tl.load(DELTA + head + rows, mask=rows < T, other=0.0)
    log2g = _head_rate(LOG2G, bh, H, DECAY)
    acc = tl.zeros([BM, D2P], tl.float32)
    K, KI, KT, KIT, V = K + head * D2, KI + head * D2, KT + head * D2, KIT + head * D2, V + head * DV2
    if CAUSAL:
        mid = (m0 // BN) * BN
        acc = _dq_blocks(acc, q, g, rn, delta, K, KI, KT, KIT, V, rows, log2g, 0, mid, T, D2, DV2, D2P, DV2P,
                         False, DECAY, KMAJOR, PREC, UPCAST, BN)
        acc = _dq_blocks(acc, q, g, rn, delta, K, KI, KT, KIT, V, rows, log2g, mid, tl.minimum(m0 + BM, T), T, D2,
                         DV2, D2P, DV2P, True, DECAY, KMAJOR, PREC, UPCAST, BN)
    else:
        acc = _dq_blocks(acc, q, g, rn, delta, K, KI, KT, KIT, V, rows, log2g, 0, T, T, D2, DV2, D2P, DV2P, False,
                         DECAY, KMAJOR, PREC, UPCAST, BN)
    _store_rows(DQ + head * D2, rows, T, 2.0 * acc, D2, D2P)


@triton.jit
def _dkdv_blocks(dk, dv, k, v, Q, QI, QT, QIT, G, GT, N, DELTA, cols, log2g, lo, hi, T, D2: tl.constexpr,
                 DV2: tl.constexpr, D2P: tl.constexpr, DV2P: tl.constexpr, MASK: tl.constexpr,
                 DECAY: tl.constexpr, KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr,
                 BM: tl.constexpr):
    """Add query blocks ``[lo, hi)`` to ``dk = sum_k grad_s (Re c q2 - Im c (i q)2)`` and ``dv = sum_k A G``, with
    tiles transposed (``[BN keys, BM queries]``)."""
    for m0 in range(lo, hi, BM):
        rows = m0 + tl.arange(0, BM)
        q = _load_rows(Q, rows, T, D2, D2P)
        qi = _load_rows(QI, rows, T, D2, D2P)
        g = _load_rows(G, rows, T, DV2, DV2P)
        rn = 1.0 / tl.load(N + rows, mask=rows < T, other=1.0)
        delta = tl.load(DELTA + rows, mask=rows < T, other=0.0)
        lag = rows[None, :] - cols[:, None]
        re = _mm(k, tl.trans(q), None, PREC, UPCAST)  # Re c^T
        u = _mm(k, tl.trans(qi), None, PREC, UPCAST)  # -Im c^T
        a = _weigh((re * re + u * u) * rn[None, :], lag, log2g, MASK, DECAY)
        dv = _mm(a.to(g.dtype), _right(g, GT, rows, T, DV2, DV2P, KMAJOR), dv, PREC, UPCAST)
        da = _mm(v, tl.trans(g), None, PREC, UPCAST)
        gs = _weigh((da - delta[None, :]) * rn[None, :], lag, log2g, MASK, DECAY)
        dk = _mm((gs * re).to(q.dtype), _right(q, QT, rows, T, D2, D2P, KMAJOR), dk, PREC, UPCAST)
        dk = _mm((gs * u).to(q.dtype), _right(qi, QIT, rows, T, D2, D2P, KMAJOR), dk, PREC, UPCAST)
    return dk, dv


@triton.jit
def _dkdv_kernel(Q, QI, QT, QIT, G, GT, K, V, N, DELTA, LOG2G, DK, DV, T, H, T_KEY, D2: tl.constexpr,
                 DV2: tl.constexpr, D2P: tl.constexpr, DV2P: tl.constexpr, CAUSAL: tl.constexpr,
                 DECAY: tl.constexpr, KMAJOR: tl.constexpr, PREC: tl.constexpr, UPCAST: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr):
    """One key block of one head: ``grad_k = 2 sum_k grad_s_km conj(c_km) q_k`` and ``grad_v = A^T G`` as planes."""
    n0 = tl.program_id(0) * BN  # the longest causal columns (first keys) first
    bh = tl.program_id(1)
    head = bh.to(tl.int64) * T
    cols = n0 + tl.arange(0, BN)
    k = _load_rows(K + head * D2, cols, T, D2, D2P)
    v = _load_rows(V + head * DV2, cols, T, DV2, DV2P)
    log2g = _head_rate(LOG2G, bh, H, DECAY)
    dk = tl.zeros([BN, D2P], tl.float32)
    dv = tl.zeros([BN, DV2P], tl.float32)
    Q, QI, QT, QIT = Q + head * D2, QI + head * D2, QT + head * D2, QIT + head * D2
    G, GT, N, DELTA = G + head * DV2, GT + head * DV2, N + head, DELTA + head
    if CAUSAL:
        lo = (n0 // BM) * BM
        mid = tl.cdiv(n0 + BN, BM) * BM  # query blocks from here on lie wholly at or below the diagonal
        dk, dv = _dkdv_blocks(dk, dv, k, v, Q, QI, QT, QIT, G, GT, N, DELTA, cols, log2g, lo, mid, T, D2, DV2, D2P,
                              DV2P, True, DECAY, KMAJOR, PREC, UPCAST, BM)
        dk, dv = _dkdv_blocks(dk, dv, k, v, Q, QI, QT, QIT, G, GT, N, DELTA, cols, log2g, mid, T, T, D2, DV2, D2P,
                              DV2P, False, DECAY, KMAJOR, PREC, UPCAST, BM)
    else:
        dk, dv = _dkdv_blocks(dk, dv, k, v, Q, QI, QT, QIT, G, GT, N, DELTA, cols, log2g, 0, T, T, D2, DV2, D2P,
                              DV2P, False, DECAY, KMAJOR, PREC, UPCAST, BM)
    _store_rows(DK + head * D2, cols, T, 2.0 * dk, D2, D2P)
    _store_rows(DV + head * DV2, cols, T, dv, DV2, DV2P)


def _shared_fwd(bm, bn, stages, a):
    """Shared memory (bytes) of the forward: the query block, and per stage a block of k, i k and v."""
    return a["Q"].element_size() * (bm * a["D2P"] + stages * bn * (2 * a["D2P"] + a["DV2P"]))


def _shared_dq(bm, bn, stages, a):
    """Shared memory of the ``grad_q`` kernel: q and G blocks, per stage k, i k, v (and the K-major k, i k)."""
    per_key = 2 * a["D2P"] * (2 if a["KMAJOR"] else 1) + a["DV2P"]
    return a["Q"].element_size() * (bm * (a["D2P"] + a["DV2P"]) + stages * bn * per_key)


def _shared_dkdv(bm, bn, stages, a):
    """Shared memory of the ``grad_k, grad_v`` kernel: k and v blocks, per stage q, i q, G (and their K-major
    copies)."""
    per_query = (2 * a["D2P"] + a["DV2P"]) * (2 if a["KMAJOR"] else 1)
    return a["Q"].element_size() * (bn * (a["D2P"] + a["DV2P"]) + stages * bm * per_query)


def _tuned(kernel, shared_bytes, preferred: dict, fallback: tuple):
    """``kernel`` autotuned over the ``(BM, BN, num_warps, num_stages)`` configs ``preferred[precision]`` that fit
    in shared memory (else ``fallback``, small enough for ``D, Dv = MAX_HEAD_DIM``); only the first of them with
    ``AUTOTUNE`` off, so each list starts with one that leaves shared memory to spare. The lists come from offline
    sm_90 compilations at ``D = Dv = 64``: wgmma (tf32, bf16) or FMA (ieee), cp.async pipelining, and no register
    spills except in the tf32 ``grad_k, grad_v`` kernel, which spills 56-232 bytes in every config tried."""
    shapes = list(dict.fromkeys([*(s for lst in preferred.values() for s in lst), fallback]))
    configs = [triton.Config({"BM": bm, "BN": bn}, num_warps=w, num_stages=st) for bm, bn, w, st in shapes]

    def prune(configs, named_args, **kwargs):
        args = {**named_args, **kwargs}
        wanted = preferred["bf16" if args["Q"].dtype == torch.bfloat16 else args["PREC"]]
        chosen = [configs[shapes.index(s)] for s in wanted
                  if shared_bytes(s[0], s[1], s[3], args) <= _SHARED_MEMORY_BUDGET]
        chosen = chosen or [configs[shapes.index(fallback)]]
        return chosen if AUTOTUNE else chosen[:1]

    return triton.autotune(configs, key=_KEY, prune_configs_by={"early_config_prune": prune})(kernel)


_KEY = ["T_KEY", "D2", "DV2", "CAUSAL", "DECAY", "KMAJOR", "PREC"]  # operand dtypes are added by the autotuner
_fwd_tuned = _tuned(_fwd_kernel, _shared_fwd, {"bf16": [(128, 64, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3)],
                                               "tf32": [(128, 32, 8, 2), (128, 32, 8, 3), (128, 16, 8, 3)],
                                               "ieee": [(64, 16, 8, 2), (32, 16, 4, 2)]}, (64, 16, 4, 1))
_dq_tuned = _tuned(_dq_kernel, _shared_dq, {"bf16": [(128, 64, 8, 2), (128, 32, 8, 3), (64, 64, 4, 2)],
                                            "tf32": [(128, 16, 8, 2), (64, 16, 4, 2), (128, 16, 8, 1)],
                                            "ieee": [(64, 16, 8, 2), (32, 16, 4, 2)]}, (64, 16, 4, 1))
_dkdv_tuned = _tuned(_dkdv_kernel, _shared_dkdv, {"bf16": [(32, 128, 8, 2), (32, 128, 8, 3), (16, 128, 8, 2)],
                                                  "tf32": [(16, 128, 8, 1), (16, 128, 8, 2), (16, 64, 4, 2)],
                                                  "ieee": [(16, 32, 8, 2), (16, 16, 4, 2)]}, (16, 64, 4, 1))


# precision -> (plane dtype, tl.dot input_precision); bf16 operands ignore input_precision
_OPERANDS = {"ieee": (torch.float32, "ieee"), "tf32": (torch.float32, "tf32"), "bf16": (torch.bfloat16, "tf32")}


def _planes(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``c[B, H, T, D]`` -> interleaved planes ``r[B*H, T, 2D]`` in ``dtype`` (a view for contiguous complex64)."""
    b, h, t, d = x.shape
    return torch.view_as_real(x.resolve_conj().resolve_neg().contiguous()).reshape(b * h, t, 2 * d).to(dtype)


def _rotated(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Interleaved planes of ``i x`` (``-Im x, Re x``), ``r[B*H, T, 2D]`` in ``dtype``."""
    b, h, t, d = x.shape
    return torch.stack((-x.imag, x.real), dim=-1).reshape(b * h, t, 2 * d).to(dtype)


def _padded(width: int) -> int:
    """Power-of-two tile width >= 16 (the least block dim ``tl.dot`` takes)."""
    return max(16, triton.next_power_of_2(width))


def _common(q: torch.Tensor, v: torch.Tensor, log2g, causal: bool, precision: str, dummy: torch.Tensor) -> dict:
    """Scalar and constexpr arguments shared by the three kernels."""
    dtype, prec = _OPERANDS[precision]
    t, d, dv = q.shape[-2], q.shape[-1], v.shape[-1]
    return {"LOG2G": dummy if log2g is None else log2g, "T": t, "H": q.shape[1], "T_KEY": triton.next_power_of_2(t),
            "D2": 2 * d, "DV2": 2 * dv, "D2P": _padded(2 * d), "DV2P": _padded(2 * dv), "CAUSAL": causal,
            "DECAY": log2g is not None, "KMAJOR": dtype == torch.float32, "PREC": prec,
            "UPCAST": interpreting() and dtype == torch.bfloat16}


def _launch(kernel, tuned, blocks: str, t: int, bh: int, args: dict) -> None:
    """Run ``kernel`` on the grid (T in blocks of ``blocks``, B*H) on the device of ``args["Q"]``: autotuned on CUDA,
    16 x 16 blocks under the interpreter."""
    if interpreting():
        kernel[(triton.cdiv(t, _INTERPRETER_BLOCKS[blocks]), bh)](**args, **_INTERPRETER_BLOCKS)
        return
    with torch.cuda.device(args["Q"].device):
        tuned[lambda meta: (triton.cdiv(t, meta[blocks]), bh)](**args)


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log2g: torch.Tensor | None, causal: bool,
                      eps: float, precision: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Born attention's forward on validated inputs: ``(O c[B, H, T, Dv], n r[B*H, T])``.

    Args:
        q, k: ``c[B, H, T, D]`` complex64 with ``B*H*T > 0``; v: ``c[B, H, T, Dv]`` complex64.
        log2g: ``r[H]`` float32 ``log2 gamma_h`` (each <= 0), or ``None`` without decay (``causal`` must be true with
            a decay).
        causal, eps: as in the reference.
        precision: ``"ieee"``, ``"tf32"`` or ``"bf16"`` (see :mod:`cnet.kernels.born_attention.triton_quadratic`).

    Returns:
        The output and the safe normaliser ``n_k = sum_m s_km + eps`` (1 where that is 0), kept for the backward.
    """
    b, h, t, _ = q.shape
    dtype = _OPERANDS[precision][0]
    o = torch.empty(*v.shape, 2, dtype=torch.float32, device=q.device)
    n = torch.empty(b * h, t, dtype=torch.float32, device=q.device)
    args = _common(q, v, log2g, causal, precision, n)
    vp = _planes(v, dtype)
    args.update(Q=_planes(q, dtype), K=_planes(k, dtype), KI=_rotated(k, dtype), O=o, N=n, eps=float(eps),
                V=vp.transpose(1, 2).contiguous() if args["KMAJOR"] else vp)
    _launch(_fwd_kernel, _fwd_tuned, "BM", t, b * h, args)
    return torch.view_as_complex(o), n


def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, n: torch.Tensor,
                       grad: torch.Tensor, log2g: torch.Tensor | None, causal: bool,
                       precision: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients ``(grad_q, grad_k, grad_v)`` (complex64, PyTorch's convention) of Born attention.

    Args:
        q, k, v, log2g, causal, precision: as given to :func:`attention_forward`.
        o, n: what :func:`attention_forward` returned.
        grad: ``c[B, H, T, Dv]`` gradient of the output.
    """
    b, h, t, _ = q.shape
    dtype = _OPERANDS[precision][0]
    grad = grad.resolve_conj().resolve_neg().contiguous()
    delta = (torch.view_as_real(grad) * torch.view_as_real(o)).sum((-1, -2)).reshape(b * h, t)  # Re<G_k, O_k>
    dq = torch.empty(*q.shape, 2, dtype=torch.float32, device=q.device)
    dk = torch.empty_like(dq)
    dv = torch.empty(*v.shape, 2, dtype=torch.float32, device=q.device)
    common = _common(q, v, log2g, causal, precision, n)

    def right(p):  # the copy a right operand over T is read from (see _right)
        return p.transpose(1, 2).contiguous() if common["KMAJOR"] else p

    q2, qi, k2, g2 = _planes(q, dtype), _rotated(q, dtype), _planes(k, dtype), _planes(grad, dtype)
    shared = {"V": _planes(v, dtype), "G": g2, "N": n, "DELTA": delta, "Q": q2, "K": k2, **common}
    _launch(_dkdv_kernel, _dkdv_tuned, "BN", t, b * h,
            {**shared, "QI": qi, "QT": right(q2), "QIT": right(qi), "GT": right(g2), "DK": dk, "DV": dv})
    ki = _rotated(k, dtype)
    _launch(_dq_kernel, _dq_tuned, "BM", t, b * h, {**shared, "KI": ki, "KT": right(k2), "KIT": right(ki), "DQ": dq})
    return torch.view_as_complex(dq), torch.view_as_complex(dk), torch.view_as_complex(dv)
