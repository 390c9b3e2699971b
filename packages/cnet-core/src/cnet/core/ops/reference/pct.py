"""Reference ops of the phase-coherent transformer family (PCT) and of its phase-coherent recurrence (PCR).

Scores (``r[B, H, T, S]`` from ``c[B, H, T, D]`` queries and ``c[B, H, S, D]`` keys; ``<a, b> = sum_d conj(a_d) b_d``):

* :func:`cosine_score` ``s_ij = scale * Re<q_hat_i, k_hat_j>`` with ``x_hat = x / sqrt(sum_d |x_d|^2 + eps)``; the PCT
  score uses ``scale = sqrt(D)``, the screening score ``scale = 1``.
* :func:`cosine_overlap` the complex overlap ``<q_hat_i, k_hat_j>`` itself (its phase drives the holographic cell).
* :func:`complex_dot_score` the unnormalised ``scale * Re<q_i, k_j>`` (the standard complex form uses
  ``scale = 1 / sqrt(2 D)``).

Gates and aggregation: :func:`score_gate` (sigmoid with a learnable bias and the isolation gates, or a row softmax),
:func:`screening_gate` (``max(1 - r (1 - s), 0)^2``, ``r = exp(s_r) + 1``), :func:`mix_values` (real weights on
complex values), :func:`tanh_norm` (``tanh(||h||) h / ||h||``) and :func:`modrelu` (``ReLU(|z| + b)^p e^{i arg z}``).
Recurrence: :func:`lru_kernel` (``gamma lambda^t`` in the LRU parameterisation) and :func:`causal_conv` (causal
convolution by zero-padded FFT of length ``2L``).

Every op is a ``torch.autograd.Function`` whose backward is written out in PyTorch's convention
(``grad_in = conj(grad_out) df/dconj(z) + grad_out conj(df/dz)``, DESIGN.md section 2); for a real input ``p`` the
gradient is ``Re(sum conj(grad_out) df/dp)``. Sources: PCT paper sections 2-4 and appendix D.2;
papers/NOTES.md "Phase-coherent transformers" and "LRU".
"""

from __future__ import annotations

import math

import torch

from cnet.core.ops.reference.elementwise import _sum_to
from cnet.core.validation import require_broadcasts_to, require_complex, require_rank

__all__ = ["cosine_score", "cosine_overlap", "complex_dot_score", "score_gate", "screening_gate", "mix_values",
           "tanh_norm", "modrelu", "lru_kernel", "causal_conv", "GATE_KINDS", "EXAMPLES"]

GATE_KINDS = ("sigmoid", "relu", "clamped_relu", "square", "cubic", "softmax")
"""The gates :func:`score_gate` knows: the PCT sigmoid, the isolation gates of PCT paper section 2.4, a row softmax."""

_REAL_DTYPES = (torch.float32, torch.float64)


# ----------------------------------------------------------------------------------------------------------- helpers
def _require_real(where: str, **tensors: torch.Tensor) -> None:
    """Raise ``TypeError`` unless every named argument is a float32 or float64 tensor."""
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}: argument '{name}' must be a real torch.Tensor, got {type(t).__name__}")
        if t.dtype not in _REAL_DTYPES:
            raise TypeError(f"{where}: argument '{name}' must be a real tensor (torch.float32 or torch.float64), "
                            f"got {t.dtype}")


def _check_qk(where: str, q: torch.Tensor, k: torch.Tensor) -> None:
    require_complex(where, q=q, k=k)
    require_rank(where, 4, "c[B, H, T, D]", q=q, k=k)
    if q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{where}: 'q' c[B, H, T, D] and 'k' c[B, H, S, D] must agree in B, H and D, got "
                         f"q={tuple(q.shape)}, k={tuple(k.shape)}")
    if q.dtype != k.dtype:
        raise TypeError(f"{where}: 'q' and 'k' must share one dtype, got {q.dtype}, {k.dtype}")
    if q.shape[-1] == 0:
        raise ValueError(f"{where}: the head dim D must be >= 1, got q={tuple(q.shape)}")


def _check_number(where: str, name: str, value, *, positive: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise ValueError(f"{where}: argument '{name}' must be {need}, got {value!r}")
    return float(value)


def _unit(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x / n, n)`` with ``n = sqrt(sum_d |x_d|^2 + eps)`` over the last dim (``n`` keeps that dim as 1)."""
    n = torch.sqrt((x.real.square() + x.imag.square()).sum(-1, keepdim=True) + eps)
    return x / n, n


def _unit_backward(g: torch.Tensor, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Backward of ``y = x / n``: ``grad_x = g / n - x Re(sum_d g_d conj(x_d)) / n^3``.

    (``dn/dconj(x_i) = x_i / (2 n)``; the two Wirtinger terms of ``conj(y)`` and ``y`` add to twice the real part.)
    """
    return g / n - x * ((g * x.conj()).real.sum(-1, keepdim=True) / n**3)


def _re_inner(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``Re(conj(X) Y^T)`` of ``c[..., T, D]`` and ``c[..., S, D]``, as two real products (no complex ``[T, S]``)."""
    return x.real @ y.real.transpose(-1, -2) + x.imag @ y.imag.transpose(-1, -2)


def _real_times(a: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``A Z`` for real ``r[..., T, S]`` and complex ``c[..., S, D]``, as two real products."""
    return torch.complex(a @ z.real, a @ z.imag)


def _future(t: int, s: int, device) -> torch.Tensor:
    """``b[T, S]`` entries a causal query may not see (key index > query index)."""
    return torch.ones(t, s, dtype=torch.bool, device=device).triu(1)


# ------------------------------------------------------------------------------------------------------------ scores
class _CosineScore(torch.autograd.Function):
    # s = scale Re(C), C = conj(Qh) Kh^T (C_ij = <qh_i, kh_j>). s is real, so grad_C = scale G (real);
    # C is antiholomorphic in Qh and holomorphic in Kh: grad_Qh = conj(grad_C) Kh, grad_Kh = grad_C^T Qh.
    # Then each normalisation x -> x / n is undone with _unit_backward.
    @staticmethod
    def forward(ctx, q, k, scale, eps):
        qh, nq = _unit(q, eps)
        kh, nk = _unit(k, eps)
        ctx.save_for_backward(q, k, qh, kh, nq, nk)
        ctx.scale = scale
        return scale * _re_inner(qh, kh)

    @staticmethod
    def backward(ctx, grad_s):
        q, k, qh, kh, nq, nk = ctx.saved_tensors
        gc = ctx.scale * grad_s
        grad_q = _unit_backward(_real_times(gc, kh), q, nq) if ctx.needs_input_grad[0] else None
        grad_k = _unit_backward(_real_times(gc.transpose(-1, -2), qh), k, nk) if ctx.needs_input_grad[1] else None
        return grad_q, grad_k, None, None


def cosine_score(q: torch.Tensor, k: torch.Tensor, scale: float | None = None, eps: float = 1e-8) -> torch.Tensor:
    """Scaled cosine score of complex queries and keys, the defining score of the PCT family.

    ``q_hat = q / sqrt(sum_d |q_d|^2 + eps)`` (same for ``k``) and ``s_ij = scale * Re(sum_d conj(q_hat_id) k_hat_jd)``.
    With ``scale = sqrt(D)`` (the default) the score lies in ``[-sqrt(D), sqrt(D)]``; the complex screening cell uses
    ``scale = 1`` (a plain cosine in ``[-1, 1]``). Multiplying ``q`` or ``k`` by a positive real leaves ``s`` unchanged
    (up to ``eps``), and a common phase ``e^{i phi}`` on both leaves it unchanged too.

    Backward (``G = dL/ds``, real): ``grad_q_hat = scale G k_hat``, ``grad_k_hat = scale G^T q_hat``, then through each
    normalisation ``grad_x = g / n - x Re(sum_d g_d conj(x_d)) / n^3`` with ``n = sqrt(sum_d |x_d|^2 + eps)``.

    Args:
        q: ``c[B, H, T, D]`` queries, complex64 or complex128.
        k: ``c[B, H, S, D]`` keys, same dtype, same ``B``, ``H``, ``D``.
        scale: positive finite multiplier; ``None`` means ``sqrt(D)``.
        eps: ``>= 0`` added to each squared norm (1e-8 in the PCT code); keeps a zero vector's score 0.

    Returns:
        ``r[B, H, T, S]`` in the inputs' real dtype.

    Raises:
        TypeError: an input is not complex, or the dtypes differ.
        ValueError: not 4-D, mismatched ``B``/``H``/``D``, ``D = 0``, bad ``scale`` or ``eps``.

    Source: PCT paper section 2.1 / D.2 (scaled cosine score ``Re<q_hat, k_hat> sqrt(d_h)``); papers/NOTES.md
    "Phase-coherent transformers" (PCT cell).
    """
    _check_qk("cosine_score", q, k)
    scale = math.sqrt(q.shape[-1]) if scale is None else _check_number("cosine_score", "scale", scale, positive=True)
    eps = _check_number("cosine_score", "eps", eps)
    return _CosineScore.apply(q, k, scale, eps)


class _CosineOverlap(torch.autograd.Function):
    # C = conj(Qh) Kh^T with G = 2 dL/dconj(C): dC_ij/dconj(Qh_id) = Kh_jd and dC_ij/dKh_jd = conj(Qh_id), so
    # grad_Qh = conj(G) Kh and grad_Kh = G^T Qh; then _unit_backward for each normalisation.
    @staticmethod
    def forward(ctx, q, k, eps):
        qh, nq = _unit(q, eps)
        kh, nk = _unit(k, eps)
        ctx.save_for_backward(q, k, qh, kh, nq, nk)
        return qh.conj() @ kh.transpose(-1, -2)

    @staticmethod
    def backward(ctx, grad_c):
        q, k, qh, kh, nq, nk = ctx.saved_tensors
        grad_q = _unit_backward(grad_c.conj() @ kh, q, nq) if ctx.needs_input_grad[0] else None
        grad_k = _unit_backward(grad_c.transpose(-1, -2) @ qh, k, nk) if ctx.needs_input_grad[1] else None
        return grad_q, grad_k, None


def cosine_overlap(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Complex overlap of unit-normalised queries and keys, ``c_ij = sum_d conj(q_hat_id) k_hat_jd``.

    ``|c_ij| <= 1``; ``Re c_ij`` is the cosine of :func:`cosine_score` and ``arg c_ij`` the phase mismatch that the
    holographic-style cell uses (PCT paper section 2.5, table 4 note c). Not holomorphic in ``q``: the backward is
    ``grad_q_hat = conj(G) k_hat``, ``grad_k_hat = G^T q_hat`` (``G = 2 dL/dconj(c)``), then the normalisation's
    ``grad_x = g / n - x Re(sum_d g_d conj(x_d)) / n^3``.

    Args:
        q: ``c[B, H, T, D]``; k: ``c[B, H, S, D]`` same dtype and ``B``, ``H``, ``D``.
        eps: ``>= 0`` added to each squared norm.

    Returns:
        ``c[B, H, T, S]`` of the inputs' dtype.

    Raises:
        TypeError / ValueError: as :func:`cosine_score`.

    Source: PCT paper section 2.5 (holographic-style variant at the score scale of section 2.1).
    """
    _check_qk("cosine_overlap", q, k)
    return _CosineOverlap.apply(q, k, _check_number("cosine_overlap", "eps", eps))


class _DotScore(torch.autograd.Function):
    # s = scale Re(conj(Q) K^T): the cosine score's backward without the normalisation steps.
    @staticmethod
    def forward(ctx, q, k, scale):
        ctx.save_for_backward(q, k)
        ctx.scale = scale
        return scale * _re_inner(q, k)

    @staticmethod
    def backward(ctx, grad_s):
        q, k = ctx.saved_tensors
        gc = ctx.scale * grad_s
        grad_q = _real_times(gc, k) if ctx.needs_input_grad[0] else None
        grad_k = _real_times(gc.transpose(-1, -2), q) if ctx.needs_input_grad[1] else None
        return grad_q, grad_k, None


def complex_dot_score(q: torch.Tensor, k: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """Unnormalised complex score ``s_ij = scale * Re(sum_d conj(q_id) k_jd)``, the standard complex form.

    With ``scale = 1 / sqrt(2 D)`` (the default) this is the real dot product of the ``2D`` interleaved real and
    imaginary parts scaled as in real attention, i.e. the score of Eilers and Jiang's complex attention with only
    the real component kept (``complete_complex=False``). Its size follows ``|q| |k|``: at a small initialisation the
    row is nearly constant (PCT paper section 2.2). Backward (``G = dL/ds``): ``grad_q = scale G k``,
    ``grad_k = scale G^T q``.

    Args:
        q: ``c[B, H, T, D]``; k: ``c[B, H, S, D]``, same dtype and ``B``, ``H``, ``D``.
        scale: positive finite multiplier; ``None`` means ``1 / sqrt(2 D)``.

    Returns:
        ``r[B, H, T, S]``.

    Raises:
        TypeError / ValueError: as :func:`cosine_score`.

    Source: PCT paper section 2.7 and D.2 (complex_softmax: ``Re<q, k> / sqrt(2 d_h)``).
    """
    _check_qk("complex_dot_score", q, k)
    d = q.shape[-1]
    scale = 1 / math.sqrt(2 * d) if scale is None else _check_number("complex_dot_score", "scale", scale,
                                                                      positive=True)
    return _DotScore.apply(q, k, scale)


# ------------------------------------------------------------------------------------------------------------- gates
def _gate_value(kind: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(f(x), f'(x))`` for an elementwise gate kind."""
    if kind == "sigmoid":
        a = torch.sigmoid(x)
        return a, a * (1 - a)
    if kind == "relu":
        return x.clamp_min(0), (x > 0).to(x.dtype)
    if kind == "clamped_relu":
        return x.clamp(0, 1), ((x > 0) & (x < 1)).to(x.dtype)
    r = x.clamp_min(0)
    if kind == "square":
        return r * r, 2 * r
    return r * r * r, 3 * r * r  # cubic


class _ScoreGate(torch.autograd.Function):
    # Elementwise gates: a = f(s + b), grad_s = G f'(s + b) (0 where causally masked), grad_b = sum of grad_s over
    # the broadcast dims. Row softmax: grad_x = a (G - sum_j G_j a_j) on the visible entries.
    @staticmethod
    def forward(ctx, s, bias, kind, causal):
        x = s if bias is None else s + bias
        mask = _future(s.shape[-2], s.shape[-1], s.device) if causal else None
        if kind == "softmax":
            if mask is not None:
                x = x.masked_fill(mask, float("-inf"))
            a = torch.softmax(x, dim=-1)
            ctx.save_for_backward(a)
        else:
            a, da = _gate_value(kind, x)
            if mask is not None:
                a, da = a.masked_fill(mask, 0.0), da.masked_fill(mask, 0.0)
            ctx.save_for_backward(da)
        ctx.kind, ctx.bias_shape = kind, None if bias is None else bias.shape
        return a

    @staticmethod
    def backward(ctx, grad_a):
        (saved,) = ctx.saved_tensors
        if ctx.kind == "softmax":
            grad_x = saved * (grad_a - (grad_a * saved).sum(-1, keepdim=True))
        else:
            grad_x = grad_a * saved
        grad_b = _sum_to(grad_x, ctx.bias_shape) if ctx.bias_shape is not None and ctx.needs_input_grad[1] else None
        return grad_x, grad_b, None, None


def score_gate(s: torch.Tensor, bias: torch.Tensor | None = None, kind: str = "sigmoid",
               causal: bool = False) -> torch.Tensor:
    """Real attention weights from a real score: an elementwise gate of ``s + b`` or a row softmax.

    With ``x = s + b``: ``sigmoid`` ``a = 1 / (1 + e^-x)`` (PCT; the bias is learnable, initialised to ``-ln N``);
    ``relu`` ``a = max(x, 0)``; ``clamped_relu`` ``a = min(max(x, 0), 1)``; ``square`` ``a = max(x, 0)^2``;
    ``cubic`` ``a = max(x, 0)^3`` (the isolation gates; each is flat on ``x < 0``, so a score range wholly below
    ``-b`` passes exactly zero gradient); ``softmax`` ``a_ij = e^{x_ij} / sum_j' e^{x_ij'}`` (a scalar bias cancels).
    With ``causal=True`` entries with ``j > i`` get weight 0 (for softmax they are left out of the row sum).
    Rows are not normalised for the elementwise gates.

    Backward (``G = dL/da``): ``grad_s = G f'(x)`` (``f'`` as above, 0 on masked entries and on the flat parts),
    ``grad_b = grad_s`` summed over the dims ``b`` was broadcast along; softmax ``grad_x = a (G - sum_j G_j a_j)``.

    Args:
        s: ``r[B, H, T, S]`` float32 or float64 scores.
        bias: ``None`` or a real tensor of ``s``'s dtype broadcastable to ``s`` (usually a scalar ``r[]``).
        kind: one of :data:`GATE_KINDS`.
        causal: mask keys after the query (needs ``T == S``).

    Returns:
        ``r[B, H, T, S]`` weights of ``s``'s dtype.

    Raises:
        TypeError: ``s`` or ``bias`` is not a real float tensor, dtypes differ, ``causal`` not a bool.
        ValueError: ``s`` not 4-D, ``bias`` does not broadcast to ``s``, unknown ``kind``, causal with ``T != S``.

    Source: PCT paper sections 2.1 (sigmoid, bias ``-log N``), 2.3-2.4 and D.2 (isolation gates);
    papers/NOTES.md "Phase-coherent transformers".
    """
    _require_real("score_gate", s=s)
    require_rank("score_gate", 4, "r[B, H, T, S]", s=s)
    if kind not in GATE_KINDS:
        raise ValueError(f"score_gate: unknown gate kind {kind!r}; choose one of {', '.join(GATE_KINDS)}")
    if not isinstance(causal, bool):
        raise TypeError(f"score_gate: argument 'causal' must be a bool, got {type(causal).__name__}")
    if causal and s.shape[-1] != s.shape[-2]:
        raise ValueError(f"score_gate: causal=True needs a square score T == S, got shape {tuple(s.shape)}")
    if bias is not None:
        _require_real("score_gate", bias=bias)
        if bias.dtype != s.dtype:
            raise TypeError(f"score_gate: 'bias' must have the dtype of 's' ({s.dtype}), got {bias.dtype}")
        require_broadcasts_to("score_gate", "bias", bias, "s", s)
    return _ScoreGate.apply(s, bias, kind, causal)


class _ScreeningGate(torch.autograd.Function):
    # m = 1 - r (1 - s), r = e^{s_r} + 1, alpha = max(m, 0)^2. d alpha/ds = 2 max(m, 0) r and
    # d alpha/d s_r = -2 max(m, 0) (1 - s) e^{s_r}; grad_{s_r} sums the latter times G over B, T and S.
    # Only s is kept for the backward (m is recomputed): one [B, H, T, S] tensor less held between the passes.
    @staticmethod
    def _hinge(s, e, causal):
        m = (1 - (e + 1) * (1 - s)).clamp_min(0)
        return m.masked_fill(_future(s.shape[-2], s.shape[-1], s.device), 0.0) if causal else m

    @staticmethod
    def forward(ctx, s, s_r, causal):
        e = torch.exp(s_r)[:, None, None]
        m = _ScreeningGate._hinge(s, e, causal)
        ctx.save_for_backward(s, e)
        ctx.causal = causal
        return m * m

    @staticmethod
    def backward(ctx, grad_alpha):
        s, e = ctx.saved_tensors
        two_gm = 2 * grad_alpha * _ScreeningGate._hinge(s, e, ctx.causal)
        grad_s = two_gm * (e + 1) if ctx.needs_input_grad[0] else None
        grad_r = (-(two_gm * (1 - s)).sum(dim=(0, 2, 3)) * e[:, 0, 0]) if ctx.needs_input_grad[1] else None
        return grad_s, grad_r, None


def screening_gate(s: torch.Tensor, s_r: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Screening weights ``alpha = max(1 - r (1 - s), 0)^2`` with a per-head ``r = exp(s_r) + 1``.

    A key is screened out unless its cosine ``s`` exceeds the threshold ``t = 1 - 1/r``; above it the weight
    rises as ``r^2 (s - t)^2`` and reaches 1 at ``s = 1``. The weights are not normalised over keys (absolute
    relevance). With the initial ``s_r = -3``, ``r = 1.0498`` and ``t = 0.0474``. ``causal=True`` zeroes keys after
    the query.

    Backward (``G = dL/dalpha``): ``grad_s = 2 G m r``, ``grad_{s_r,h} = -sum 2 G m (1 - s) e^{s_r,h}`` over the
    batch, query and key dims of head ``h``, with ``m = max(1 - r (1 - s), 0)``.

    Args:
        s: ``r[B, H, T, S]`` cosine scores (normally in ``[-1, 1]``), float32 or float64.
        s_r: ``r[H]`` per-head screening parameter, same dtype.
        causal: mask keys after the query (needs ``T == S``).

    Returns:
        ``r[B, H, T, S]`` weights in ``[0, 1]`` for ``s`` in ``[-1, 1]``.

    Raises:
        TypeError: a real float tensor is expected, dtypes differ, ``causal`` not a bool.
        ValueError: ``s`` not 4-D, ``s_r`` not ``[H]``, causal with ``T != S``.

    Source: PCT paper D.2 (``r^2 relu(s - t)^2``); papers/NOTES.md "Phase-coherent transformers" (complex
    screening: ``alpha = max(1 - r(1 - s), 0)^2``, ``r = exp(s_r) + 1``, ``s_r`` init -3) and "Screening".
    """
    _require_real("screening_gate", s=s, s_r=s_r)
    require_rank("screening_gate", 4, "r[B, H, T, S]", s=s)
    if tuple(s_r.shape) != (s.shape[1],):
        raise ValueError(f"screening_gate: 's_r' must be r[H] with H={s.shape[1]}, got shape {tuple(s_r.shape)}")
    if s_r.dtype != s.dtype:
        raise TypeError(f"screening_gate: 's' and 's_r' must share one dtype, got {s.dtype}, {s_r.dtype}")
    if not isinstance(causal, bool):
        raise TypeError(f"screening_gate: argument 'causal' must be a bool, got {type(causal).__name__}")
    if causal and s.shape[-1] != s.shape[-2]:
        raise ValueError(f"screening_gate: causal=True needs T == S, got shape {tuple(s.shape)}")
    return _ScreeningGate.apply(s, s_r, causal)


class _MixValues(torch.autograd.Function):
    # O = A V with real A: holomorphic in V (grad_V = A^T G); dL/dA_ij = Re(sum_d G_id conj(V_jd)) = Re(G V^H).
    @staticmethod
    def forward(ctx, a, v):
        ctx.save_for_backward(a, v)
        return _real_times(a, v)

    @staticmethod
    def backward(ctx, grad_o):
        a, v = ctx.saved_tensors
        grad_a = _re_inner(grad_o, v) if ctx.needs_input_grad[0] else None  # Re(G V^H) = Re(conj(G) V)^T-free form
        grad_v = _real_times(a.transpose(-1, -2), grad_o) if ctx.needs_input_grad[1] else None
        return grad_a, grad_v


def mix_values(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Real weights on complex values: ``O_i = sum_j a_ij v_j``.

    The PCT cells keep the learned modulation real (a gate never rotates a value), so the phase of the output is a
    real-weighted mixture of the values' phases. Backward (``G = 2 dL/dconj(O)``): ``grad_v = a^T G``,
    ``grad_a = Re(G v^H)``.

    Args:
        a: ``r[B, H, T, S]`` weights, float32 or float64.
        v: ``c[B, H, S, Dv]`` values whose real dtype is ``a``'s.

    Returns:
        ``c[B, H, T, Dv]``.

    Raises:
        TypeError: ``a`` not real float, ``v`` not complex, or their precisions differ.
        ValueError: ranks, or ``B``/``H``/``S`` disagree.

    Source: PCT paper section 2.1 and D.2 ("real weights on complex values").
    """
    _require_real("mix_values", a=a)
    require_complex("mix_values", v=v)
    require_rank("mix_values", 4, "[B, H, T, S] / [B, H, S, Dv]", a=a, v=v)
    if a.shape[:2] != v.shape[:2] or a.shape[-1] != v.shape[-2]:
        raise ValueError(f"mix_values: 'a' r[B, H, T, S] and 'v' c[B, H, S, Dv] disagree: a={tuple(a.shape)}, "
                         f"v={tuple(v.shape)}")
    if a.dtype != v.real.dtype:
        raise TypeError(f"mix_values: 'a' must have v's real dtype {v.real.dtype}, got {a.dtype}")
    return _MixValues.apply(a, v)


# ------------------------------------------------------------------------------------------------- TanhNorm, modReLU
def _tanh_ratio(n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f(n) = tanh(n) / n`` and ``f'(n) / n`` with their Taylor series below ``n = 1e-2`` (both finite at 0)."""
    small = n < 1e-2
    ns = torch.where(small, torch.ones_like(n), n)
    t = torch.tanh(ns)
    f = torch.where(small, 1 - n**2 / 3 + 2 * n**4 / 15, t / ns)
    fp_n = torch.where(small, -2 / 3 + 8 * n**2 / 15 - 34 * n**4 / 105, (ns * (1 - t * t) - t) / ns**3)
    return f, fp_n


class _TanhNorm(torch.autograd.Function):
    # u = f(n) h, f(n) = tanh(n)/n, n = ||h||: du_j/dconj(h_i) = f'(n) h_j h_i / (2n) and
    # du_j/dh_i = f delta_ij + f'(n) h_j conj(h_i) / (2n), so grad_h = f g + h (f'(n)/n) Re(sum_j g_j conj(h_j)).
    @staticmethod
    def forward(ctx, h):
        n = torch.sqrt((h.real.square() + h.imag.square()).sum(-1, keepdim=True)) if h.is_complex() \
            else torch.sqrt(h.square().sum(-1, keepdim=True))
        f, fp_n = _tanh_ratio(n)
        ctx.save_for_backward(h, f, fp_n)
        return f * h

    @staticmethod
    def backward(ctx, grad_u):
        h, f, fp_n = ctx.saved_tensors
        inner = (grad_u * h.conj()).real.sum(-1, keepdim=True) if h.is_complex() else (grad_u * h).sum(-1,
                                                                                                      keepdim=True)
        return f * grad_u + h * (fp_n * inner)


def tanh_norm(h: torch.Tensor) -> torch.Tensor:
    """TanhNorm: ``u = tanh(||h||) h / ||h||`` over the last dim (``u = h`` to first order near 0, ``|u| < 1``).

    Bounds the screening aggregate (whose weights are not normalised) while keeping its direction, hence every
    component's phase. Works on complex and on real vectors. Backward (``g = grad_out``):
    ``grad_h = f g + h (f'(n)/n) Re(sum_d g_d conj(h_d))`` with ``f(n) = tanh(n)/n``, ``n = ||h||``; ``f`` and
    ``f'/n`` switch to their Taylor series below ``n = 1e-2``, so the zero vector maps to 0 with gradient ``g``.

    Args:
        h: ``c[..., D]`` or ``r[..., D]`` (complex64/128 or float32/64), at least one dim.

    Returns:
        Same shape and dtype; ``||u|| = tanh(||h||)``.

    Raises:
        TypeError: not a complex or real float tensor. ValueError: no dims.

    Source: PCT paper D.2 ("TanhNorm on the complex aggregate"); papers/NOTES.md "Phase-coherent transformers"
    (complex screening) and "Screening".
    """
    if not isinstance(h, torch.Tensor) or h.dtype not in _REAL_DTYPES + (torch.complex64, torch.complex128):
        raise TypeError(f"tanh_norm: argument 'h' must be a complex64/128 or float32/64 tensor, got "
                        f"{getattr(h, 'dtype', type(h).__name__)}")
    if h.dim() < 1:
        raise ValueError("tanh_norm: argument 'h' must have at least one dim (the vector dim is the last)")
    return _TanhNorm.apply(h)


class _ModReLU(torch.autograd.Function):
    # y = phi(r) z with r = |z|, m = max(r + b, 0), phi = m^p / r. dr/dz = conj(z)/(2r), dr/dconj(z) = z/(2r), so
    # dy/dz = phi + phi' r / 2 (real) and dy/dconj(z) = phi' z^2 / (2r), phi' = (p m^(p-1) [r + b > 0] r - m^p) / r^2.
    # grad_z = conj(g) phi' z^2 / (2r) + g (phi + phi' r / 2); grad_b = Re(conj(g) p m^(p-1) [r + b > 0] z / r).
    # At z = 0 the phase is undefined: y = 0 and both gradients are set to 0 there.
    @staticmethod
    def forward(ctx, z, bias, power):
        r = z.abs()
        zero = r == 0
        rs = torch.where(zero, torch.ones_like(r), r)
        m = (r + bias).clamp_min(0)
        y = torch.where(zero, torch.zeros_like(z), (m**power / rs) * z)
        ctx.save_for_backward(z, bias, rs, m, zero)
        ctx.power = power
        return y

    @staticmethod
    def backward(ctx, grad_y):
        z, bias, rs, m, zero = ctx.saved_tensors
        p = ctx.power
        dm = p * m ** (p - 1) * (m > 0).to(m.dtype)  # d(m^p)/dr, 0 in the dead region
        phi = m**p / rs
        dphi = (dm * rs - m**p) / rs**2
        grad_z = grad_y.conj() * (dphi / (2 * rs)) * z * z + grad_y * (phi + dphi * rs / 2)
        grad_z = torch.where(zero, torch.zeros_like(grad_z), grad_z)
        grad_b = None
        if ctx.needs_input_grad[1]:
            gb = torch.where(zero, torch.zeros_like(rs), (grad_y.conj() * z).real * dm / rs)
            grad_b = _sum_to(gb, bias.shape)
        return grad_z, grad_b, None


def modrelu(z: torch.Tensor, bias: torch.Tensor, power: int = 1) -> torch.Tensor:
    """modReLU: ``y = max(|z| + b, 0)^p e^{i arg z}`` (``p = 1``: modReLU; ``p = 2``: the PCT FFN's modReLU^2).

    The modulus is shifted by a learnable real bias and rectified; the phase passes unchanged. ``y = 0`` at
    ``z = 0`` (where the phase is undefined; the gradient there is taken as 0). Non-holomorphic: with
    ``r = |z|``, ``m = max(r + b, 0)``, ``phi = m^p / r`` and ``phi' = (p m^(p-1) [r + b > 0] r - m^p) / r^2``,
    ``dy/dz = phi + phi' r / 2`` and ``dy/dconj(z) = phi' z^2 / (2 r)``; ``grad_b = Re(conj(g) p m^(p-1) z / r)``
    summed over the dims ``b`` was broadcast along.

    Args:
        z: ``c[...]`` complex64 or complex128.
        bias: real tensor of ``z``'s real dtype broadcastable to ``z`` (a scalar ``r[]`` or ``r[F]`` per feature).
        power: exponent ``p``, an int >= 1.

    Returns:
        ``c[...]`` shaped like ``z``.

    Raises:
        TypeError: ``z`` not complex, ``bias`` not a real float tensor of ``z``'s precision, ``power`` not an int.
        ValueError: ``power < 1``; ``bias`` does not broadcast to ``z``.

    Source: papers/NOTES.md "Phase-coherent transformers" (FFN modReLU^2 ``ReLU(|z| + b)^2 e^{i arg z}``, screening
    gate modReLU); PCT paper D.2 and D.4.
    """
    require_complex("modrelu", z=z)
    _require_real("modrelu", bias=bias)
    if bias.dtype != z.real.dtype:
        raise TypeError(f"modrelu: 'bias' must have z's real dtype {z.real.dtype}, got {bias.dtype}")
    if isinstance(power, bool) or not isinstance(power, int):
        raise TypeError(f"modrelu: argument 'power' must be an int, got {type(power).__name__}")
    if power < 1:
        raise ValueError(f"modrelu: argument 'power' must be >= 1, got {power}")
    require_broadcasts_to("modrelu", "bias", bias, "z", z)
    return _ModReLU.apply(z, bias, power)


# -------------------------------------------------------------------------------------------------------- recurrence
class _LRUKernel(torch.autograd.Function):
    # K_t = gamma lambda^t, lambda = exp(-e + i theta), e = exp(nu), gamma = sqrt(1 - exp(-2e)).
    # dK_t/dtheta = i t K_t; dK_t/dnu = K_t (rho - t e) with rho = (dgamma/dnu) / gamma = e / expm1(2e).
    # p = nu + i theta is one complex parameter whose real and imaginary parts are independent reals, so
    # grad_p = Re(sum_t conj(g_t) dK_t/dnu) + i Re(sum_t conj(g_t) dK_t/dtheta).
    @staticmethod
    def forward(ctx, p, length):
        nu, theta = p.real.double(), p.imag.double()
        e = torch.exp(nu)
        t = torch.arange(length, dtype=torch.float64, device=p.device)
        gamma = torch.sqrt(-torch.expm1(-2 * e))
        k = gamma[:, None] * torch.exp(torch.complex(-e[:, None] * t, theta[:, None] * t))
        k = k.to(p.dtype)
        ctx.save_for_backward(k, e.to(p.real.dtype))
        return k

    @staticmethod
    def backward(ctx, grad_k):
        k, e = ctx.saved_tensors
        t = torch.arange(k.shape[-1], dtype=e.dtype, device=k.device)
        rho = e / torch.expm1(2 * e)
        w = grad_k.conj() * k  # conj(g_t) K_t
        grad_nu = (w.real * (rho[:, None] - t * e[:, None])).sum(-1)
        grad_theta = (-w.imag * t).sum(-1)  # Re(conj(g) i t K) = -t Im(conj(g) K)
        return torch.complex(grad_nu, grad_theta), None


def lru_kernel(nu_theta: torch.Tensor, length: int) -> torch.Tensor:
    """Convolution kernel ``K[n, t] = gamma_n lambda_n^t`` of a diagonal LRU recurrence, ``t = 0 .. L-1``.

    ``lambda = exp(-exp(nu) + i theta)`` (stable for every real ``nu``: ``|lambda| < 1``) and
    ``gamma = sqrt(1 - |lambda|^2)`` (the LRU's normalisation, so a unit-power white input gives a unit-power
    state). ``nu`` and ``theta`` travel as one complex parameter ``nu_theta = nu + i theta`` (the polar
    parameters of the eigenvalue, so parameter counts book them as complex). The exponent ``t (-e^nu + i theta)``
    is formed in float64, then the kernel is cast to the input's dtype.

    Backward (``g = 2 dL/dconj(K)``): ``dL/dnu = Re sum_t conj(g_t) K_t (rho - t e^nu)`` with
    ``rho = e^nu / expm1(2 e^nu)``, ``dL/dtheta = Re sum_t conj(g_t) i t K_t``; returned as
    ``dL/dnu + i dL/dtheta``.

    Args:
        nu_theta: ``c[N]`` complex64 or complex128.
        length: ``L``, a positive int.

    Returns:
        ``c[N, L]`` of ``nu_theta``'s dtype.

    Raises:
        TypeError: ``nu_theta`` not complex, ``length`` not an int. ValueError: not 1-D, ``length < 1``.

    Source: PCT paper section 4 (PCR in the LRU parameterisation, gamma-normalisation); papers/NOTES.md
    "Phase-coherent transformers" (PCR) and "LRU".
    """
    require_complex("lru_kernel", nu_theta=nu_theta)
    require_rank("lru_kernel", 1, "c[N]", nu_theta=nu_theta)
    if isinstance(length, bool) or not isinstance(length, int):
        raise TypeError(f"lru_kernel: argument 'length' must be an int, got {type(length).__name__}")
    if length < 1:
        raise ValueError(f"lru_kernel: argument 'length' must be >= 1, got {length}")
    return _LRUKernel.apply(nu_theta, length)


class _CausalConv(torch.autograd.Function):
    # y_t = sum_{s<=t} k_{t-s} u_s is bilinear and holomorphic in u and k, so the backward is the adjoint:
    # grad_u_s = sum_{t>=s} conj(k_{t-s}) g_t and grad_k_tau = sum_{b,t} g_t conj(u_{t-tau}), two correlations,
    # evaluated with the same zero-padded FFTs (length 2L: the wrapped lags fall on the zero padding).
    # The transforms run along the last dim of [B, N, L] views (contiguous time is faster than strided).
    @staticmethod
    def forward(ctx, u, kernel):
        length = u.shape[1]
        n = 2 * length
        uf = torch.fft.fft(u.transpose(1, 2), n=n, dim=-1)             # c[B, N, 2L]
        kf = torch.fft.fft(kernel, n=n, dim=-1)                        # c[N, 2L]
        ctx.save_for_backward(uf, kf)
        return torch.fft.ifft(uf * kf, dim=-1)[..., :length].transpose(1, 2)

    @staticmethod
    def backward(ctx, grad_y):
        uf, kf = ctx.saved_tensors
        length = grad_y.shape[1]
        gf = torch.fft.fft(grad_y.transpose(1, 2), n=2 * length, dim=-1)
        grad_u = grad_k = None
        if ctx.needs_input_grad[0]:
            grad_u = torch.fft.ifft(gf * kf.conj(), dim=-1)[..., :length].transpose(1, 2)
        if ctx.needs_input_grad[1]:
            grad_k = torch.fft.ifft((gf * uf.conj()).sum(0), dim=-1)[:, :length]
        return grad_u, grad_k


def causal_conv(u: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """Causal convolution along time, one kernel per channel: ``y[b, t, n] = sum_{s<=t} K[n, t-s] u[b, s, n]``.

    Evaluated by zero-padded FFT of length ``2L`` (``torch.fft``, unnormalised forward, ``1/n`` inverse), which
    equals the linear convolution truncated to ``L``; with ``K = lru_kernel(...)`` it is the diagonal recurrence
    ``h_t = lambda h_{t-1} + gamma u_t`` from ``h_{-1} = 0`` in ``O(L log L)``. Backward: the adjoint correlations
    ``grad_u_s = sum_{t>=s} conj(K_{t-s}) g_t`` and ``grad_K_tau = sum_{b,t} g_t conj(u_{t-tau})``, by the same FFTs.

    Args:
        u: ``c[B, L, N]`` input, complex64 or complex128.
        kernel: ``c[N, L]`` same dtype.

    Returns:
        ``c[B, L, N]``.

    Raises:
        TypeError: not complex or dtypes differ. ValueError: ranks, or ``kernel`` is not ``[N, L]``, or ``L = 0``.

    Source: PCT paper section 4 ("applied bidirectionally by FFT convolution"); papers/NOTES.md
    "Phase-coherent transformers" (PCR: kernel ``gamma lambda^t``, zero-padded FFT of length 2L).
    """
    require_complex("causal_conv", u=u, kernel=kernel)
    require_rank("causal_conv", 3, "c[B, L, N]", u=u)
    require_rank("causal_conv", 2, "c[N, L]", kernel=kernel)
    if tuple(kernel.shape) != (u.shape[2], u.shape[1]):
        raise ValueError(f"causal_conv: 'kernel' must be c[N, L] = {(u.shape[2], u.shape[1])} for 'u' "
                         f"{tuple(u.shape)}, got {tuple(kernel.shape)}")
    if u.shape[1] == 0:
        raise ValueError(f"causal_conv: 'u' has no time steps, shape {tuple(u.shape)}")
    if u.dtype != kernel.dtype:
        raise TypeError(f"causal_conv: 'u' and 'kernel' must share one dtype, got {u.dtype}, {kernel.dtype}")
    return _CausalConv.apply(u, kernel)


# ---------------------------------------------------------------------------------------------------------- examples
def _c(gen, dtype, device, *shape):
    return torch.randn(*shape, dtype=torch.complex128, generator=gen).to(dtype=dtype, device=device)


def _r(gen, dtype, device, *shape):
    real = torch.float64 if dtype in (torch.complex128, torch.float64) else torch.float32
    return torch.randn(shape, dtype=torch.float64, generator=gen).to(dtype=real, device=device)


def _qk_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (_c(gen, dtype, device, 1, 2, 3, 4), _c(gen, dtype, device, 1, 2, 5, 4)), {}


def _score_gate_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (_r(gen, dtype, device, 1, 2, 4, 4), _r(gen, dtype, device) - 0.5), {"kind": "sigmoid", "causal": True}


def _screening_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    s = torch.rand(1, 2, 4, 4, dtype=torch.float64, generator=gen) * 2 - 1
    real = _r(gen, dtype, device).dtype
    return (s.to(dtype=real, device=device), torch.tensor([-1.5, 0.3], dtype=real, device=device)), {}


def _mix_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (_r(gen, dtype, device, 1, 2, 3, 4), _c(gen, dtype, device, 1, 2, 4, 5)), {}


def _tanh_norm_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (_c(gen, dtype, device, 2, 3, 4),), {}


def _modrelu_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    z = _c(gen, dtype, device, 3, 4)
    return (z, torch.tensor([-0.5, 0.2, -2.0, 0.7], dtype=z.real.dtype, device=device)), {"power": 2}


def _lru_kernel_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    nu = torch.rand(3, dtype=torch.float64, generator=gen) - 2.0
    theta = torch.rand(3, dtype=torch.float64, generator=gen) * math.pi / 10
    return (torch.complex(nu, theta).to(dtype=dtype, device=device), 6), {}


def _causal_conv_example(dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (_c(gen, dtype, device, 2, 5, 3), _c(gen, dtype, device, 3, 5)), {}


EXAMPLES = {
    "cosine_score": _qk_example,
    "cosine_overlap": _qk_example,
    "complex_dot_score": _qk_example,
    "score_gate": _score_gate_example,
    "screening_gate": _screening_example,
    "mix_values": _mix_example,
    "tanh_norm": _tanh_norm_example,
    "modrelu": _modrelu_example,
    "lru_kernel": _lru_kernel_example,
    "causal_conv": _causal_conv_example,
}
