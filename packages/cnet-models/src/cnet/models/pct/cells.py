"""Attention cells of the PCT family and of its baselines (PCT paper sections 2-3, D.2).

A cell is a multi-head attention layer ``[B, T, E] -> [B, T, E]``: projections, rotary phases on the queries and
keys, a score, a gate, and the mixture of values. Complex cells (``c[B, T, E]``, complex-linear projections with
complex Glorot init, complex RoPE) differ only in score and gate:

=============================  ==========================================================  =========================
cell                           score ``s_ij`` (``<a, b> = sum_d conj(a_d) b_d``)           weights
=============================  ==========================================================  =========================
complex_sigmoid (PCT)          ``sqrt(D) Re<q_hat_i, k_hat_j>``                            ``sigmoid(s + b)``
complex_softmax_l2             as PCT                                                      row softmax of ``s``
complex_screen                 ``Re<q_hat_i, k_hat_j>``                                    ``max(1 - r(1 - s), 0)^2``
complex_softmax                ``Re<q_i, k_j> / sqrt(2 D)`` (unnormalised)                 row softmax of ``s``
complex_sigmoid_nol2           ``sqrt(D) Re<q_i, k_j>`` (unnormalised)                     ``sigmoid(s + b)``
complex_relu                   as PCT                                                      ``max(s + b, 0)``
complex_clamped_relu           as PCT                                                      ``min(max(s + b, 0), 1)``
complex_square                 as PCT                                                      ``max(s + b, 0)^2``
complex_cubic                  as PCT                                                      ``max(s + b, 0)^3``
complex_holographic_matched    as PCT, times ``exp(-alpha |arg<q_hat_i, k_hat_j>|)``       softmax, value rotated by
                                                                                           ``e^{i arg<q_i, k_j>}``
=============================  ==========================================================  =========================

``b`` is one learnable scalar per layer, initialised to ``-ln N`` (``N`` the configured sequence length) or to a
given value. At ``-ln N`` the gates that are flat on the negative axis (``complex_relu``, ``complex_clamped_relu``,
``complex_square``, ``complex_cubic``) start closed whenever ``sqrt(D) < ln N`` (the cosine score is at most
``sqrt(D)``; e.g. ``D = 32``, ``N = 1024``): every gate is 0 with zero gradient and the layer never learns. That is
the PCT paper's point (section 2.7, appendix B: the condition is on the initial operating point); pass
``gate_bias=0`` to start them open. Screening keeps a per-head ``s_r`` (init -3, ``r = e^{s_r} + 1``), applies
TanhNorm to each head's aggregate and multiplies by ``modReLU(W_g x)`` before the output projection. Real cells
(``r[B, T, E]``, real projections with Glorot init, real RoPE on pairs of features) are the standard forms:
``real_softmax`` (``q.k / sqrt(D)``, row softmax), ``real_sigmoid`` (same score, ``sigmoid(s + b)``),
``real_screen`` (unit-normalised ``q``, ``k``, ``v``, cosine score, screening weights, TanhNorm).

The complex score, gate and mixing steps run through the reference ops of :mod:`cnet.core.ops.reference.pct`,
which have explicit Wirtinger backwards. Sources: PCT paper sections 2.1-2.6 and D.2; papers/NOTES.md
"Phase-coherent transformers".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core import nn as cnn
from cnet.core import ops
from cnet.core.nn.phase import ModReLU, complex_glorot_
from cnet.core.ops.reference.pct import (
    complex_dot_score,
    cosine_overlap,
    cosine_score,
    mix_values,
    score_gate,
    screening_gate,
    tanh_norm,
)

__all__ = ["CELLS", "COMPLEX_CELLS", "REAL_CELLS", "GATED_CELLS", "ComplexAttention", "RealAttention", "real_rotary"]

COMPLEX_CELLS = ("complex_sigmoid", "complex_softmax_l2", "complex_screen", "complex_softmax", "complex_sigmoid_nol2",
                 "complex_relu", "complex_clamped_relu", "complex_square", "complex_cubic",
                 "complex_holographic_matched")
REAL_CELLS = ("real_softmax", "real_sigmoid", "real_screen")
CELLS = COMPLEX_CELLS + REAL_CELLS
"""Every cell name accepted by the ``pct`` model."""

GATED_CELLS = {"complex_sigmoid": "sigmoid", "complex_sigmoid_nol2": "sigmoid", "complex_relu": "relu",
               "complex_clamped_relu": "clamped_relu", "complex_square": "square", "complex_cubic": "cubic",
               "real_sigmoid": "sigmoid"}
"""Cells with an elementwise gate ``f(s + b)`` and a learnable bias ``b``, mapped to the gate kind."""


def _initial_bias(context: int, gate_bias: float | None) -> float:
    return -math.log(context) if gate_bias is None else float(gate_bias)


def _split(x: torch.Tensor, heads: int) -> torch.Tensor:
    """``[B, T, H*D] -> [B, H, T, D]``."""
    b, t, e = x.shape
    return x.reshape(b, t, heads, e // heads).transpose(1, 2)


def _merge(x: torch.Tensor) -> torch.Tensor:
    """``[B, H, T, D] -> [B, T, H*D]``."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


def _to_chunks(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """``[B, H, T, D] -> [B * T/c, H, c, D]`` (consecutive blocks of ``c`` positions)."""
    b, h, t, d = x.shape
    return x.reshape(b, h, t // chunk, chunk, d).transpose(1, 2).reshape(b * (t // chunk), h, chunk, d)


def _from_chunks(x: torch.Tensor, batch: int) -> torch.Tensor:
    """Inverse of :func:`_to_chunks`."""
    bn, h, c, d = x.shape
    n = bn // batch
    return x.reshape(batch, n, h, c, d).transpose(1, 2).reshape(batch, h, n * c, d)


class _Attention(nn.Module):
    """What the complex and real cells share: argument checks, chunking and score recording."""

    def _setup(self, dim: int, heads: int, cell: str, context: int, causal: bool, rope: bool, rope_base: float,
               chunk: int | None) -> None:
        if dim % heads:
            raise ValueError(f"{type(self).__name__}: num_heads={heads} must divide the width {dim}")
        if chunk is not None and chunk < 1:
            raise ValueError(f"{type(self).__name__}: chunk must be >= 1 or None, got {chunk}")
        self.dim, self.heads, self.head_dim, self.cell = dim, heads, dim // heads, cell
        self.context, self.causal, self.rope, self.rope_base, self.chunk = context, causal, rope, rope_base, chunk
        self.recorded: list | None = None  # set to a list to record the scores of the next forwards (score_spread)

    def _record(self, s: torch.Tensor) -> None:
        if self.recorded is not None:
            self.recorded.append((s.detach(), self.causal))

    def _chunked(self, q, k, v):
        """Apply ``self._attend`` to whole sequences, or independently to each block of ``chunk`` positions."""
        t = q.shape[-2]
        if self.chunk is None or t <= self.chunk:
            return self._attend(q, k, v)
        if t % self.chunk:
            raise ValueError(f"{type(self).__name__}: sequence length {t} is not a multiple of chunk={self.chunk}")
        o = self._attend(*(_to_chunks(x, self.chunk) for x in (q, k, v)))
        return _from_chunks(o, q.shape[0])

    def extra_repr(self) -> str:
        return (f"cell={self.cell!r}, dim={self.dim}, heads={self.heads}, causal={self.causal}, rope={self.rope}, "
                f"chunk={self.chunk}")


class ComplexAttention(_Attention):
    """A complex cell of the PCT family: ``c[B, T, E] -> c[B, T, E]`` (or ``r -> r`` with ``real_io``).

    ``q, k, v = W_q x, W_k x, W_v x`` (complex, no bias, complex Glorot init), split into ``heads`` heads of width
    ``D = E / heads``; complex RoPE on ``q`` and ``k``; the score and gate of ``cell`` (module docstring); values
    mixed with the (real) weights; heads merged; ``W_o``. With ``real_io=True`` (the Path-X screening block) the
    real input is taken as complex with zero imaginary part and ``W_o`` is a real ``Linear(2E -> E)`` on
    ``[Re; Im]`` of the merged heads, so the layer maps the real residual stream to itself.

    Args:
        dim: ``E``. heads: number of heads (divides ``E``). cell: one of :data:`COMPLEX_CELLS`.
        context: ``N``, the configured sequence length (sets the initial gate bias ``-ln N``).
        causal: mask keys after the query.
        rope, rope_base: rotary phases ``exp(i t base^(-k/D))`` on ``q``, ``k`` (:func:`cnet.core.ops.rotary`).
        gate_bias: initial ``b`` of the gated cells; ``None`` means ``-ln(context)``.
        screen_init: initial per-head ``s_r`` of ``complex_screen``.
        chunk: ``None``, or attend within consecutive blocks of ``chunk`` positions (``T`` must then be a multiple).
        real_io: real input and output (see above).

    Raises:
        ValueError: unknown cell, ``heads`` does not divide ``dim``, bad ``chunk``; at call time a length that is
        not a multiple of ``chunk``.

    Source: PCT paper sections 2.1, 2.4, 2.5, D.2; papers/NOTES.md "Phase-coherent transformers".
    """

    def __init__(self, dim: int, heads: int, cell: str = "complex_sigmoid", *, context: int, causal: bool = False,
                 rope: bool = True, rope_base: float = 10000.0, gate_bias: float | None = None,
                 screen_init: float = -3.0, chunk: int | None = None, real_io: bool = False) -> None:
        super().__init__()
        if cell not in COMPLEX_CELLS:
            raise ValueError(f"ComplexAttention: unknown complex cell {cell!r}; choose one of "
                             f"{', '.join(COMPLEX_CELLS)}")
        self._setup(dim, heads, cell, context, causal, rope, rope_base, chunk)
        self.real_io = real_io
        self.q_proj, self.k_proj, self.v_proj = (cnn.Linear(dim, dim, bias=False) for _ in range(3))
        projections = [self.q_proj, self.k_proj, self.v_proj]
        if cell == "complex_screen":
            self.g_proj = cnn.Linear(dim, dim, bias=False)
            projections.append(self.g_proj)
            self.gate_act = ModReLU(power=1)
            self.s_r = nn.Parameter(torch.full((heads,), float(screen_init)))
        if real_io:
            self.out_proj = nn.Linear(2 * dim, dim)
            nn.init.xavier_normal_(self.out_proj.weight)
            nn.init.zeros_(self.out_proj.bias)
        else:
            self.out_proj = cnn.Linear(dim, dim, bias=False)
            projections.append(self.out_proj)
        for p in projections:
            complex_glorot_(p.weight.data)
        if cell in GATED_CELLS:
            self.gate_bias = nn.Parameter(torch.tensor(_initial_bias(context, gate_bias)))
        if cell == "complex_holographic_matched":
            self.alpha = nn.Parameter(torch.tensor(1.0))

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        cell, d, causal = self.cell, self.head_dim, self.causal
        if cell == "complex_screen":
            s = cosine_score(q, k, scale=1.0)
            self._record(s)
            a = screening_gate(s, self.s_r.to(s.dtype), causal=causal)
            return tanh_norm(mix_values(a, v))
        if cell == "complex_holographic_matched":
            c = cosine_overlap(q, k)
            s = math.sqrt(d) * c.real
            self._record(s)
            logits = s * torch.exp(-self.alpha.to(s.dtype) * torch.angle(c).abs())
            if causal:
                logits = logits.masked_fill(torch.ones_like(logits, dtype=torch.bool).triu(1), float("-inf"))
            w = torch.softmax(logits, dim=-1) * torch.sgn(c)  # weights rotated by e^{i arg c}
            return w @ v
        if cell in ("complex_softmax", "complex_sigmoid_nol2"):
            s = complex_dot_score(q, k, scale=None if cell == "complex_softmax" else math.sqrt(d))
        else:
            s = cosine_score(q, k)
        self._record(s)
        if cell in GATED_CELLS:
            a = score_gate(s, self.gate_bias.to(s.dtype), kind=GATED_CELLS[cell], causal=causal)
        else:
            a = score_gate(s, None, kind="softmax", causal=causal)
        return mix_values(a, v)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[B, T, E] -> c[B, T, E]`` (``r -> r`` with ``real_io``)."""
        xc = x.to(self.q_proj.weight.dtype) if self.real_io else x
        q, k, v = (_split(p(xc), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        if self.rope:
            q, k = ops.rotary(q, base=self.rope_base), ops.rotary(k, base=self.rope_base)
        o = _merge(self._chunked(q, k, v))
        if self.cell == "complex_screen":
            o = ops.hadamard(o, self.gate_act(self.g_proj(xc)))
        if self.real_io:
            return self.out_proj(torch.cat([o.real, o.imag], dim=-1).to(x.dtype))
        return self.out_proj(o)


def real_rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Real rotary embedding on ``r[B, H, T, D]`` (``D`` even): feature pairs ``(x_k, x_{k+D/2})`` turn by
    ``t base^(-k/(D/2))``, the real image of the complex RoPE on ``D/2`` complex features."""
    t, d = x.shape[-2], x.shape[-1] // 2
    pos = torch.arange(t, dtype=torch.float64, device=x.device)
    ang = pos[:, None] * base ** (-torch.arange(d, dtype=torch.float64, device=x.device) / d)
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class RealAttention(_Attention):
    """A real baseline cell, ``r[B, T, E] -> r[B, T, E]``: ``real_softmax``, ``real_sigmoid`` or ``real_screen``.

    Real ``Linear`` projections without bias (Glorot-normal init), real RoPE (:func:`real_rotary`, head dim even),
    the standard unnormalised score ``q.k / sqrt(D)`` for softmax and sigmoid (bias init ``-ln N``), and for
    screening unit-normalised ``q``, ``k``, ``v``, the cosine score, :func:`~cnet.core.ops.reference.screening_gate`
    and :func:`~cnet.core.ops.reference.tanh_norm` on each head's aggregate.

    Args: as :class:`ComplexAttention` (``cell`` one of :data:`REAL_CELLS`; no ``real_io``).

    Raises:
        ValueError: unknown cell, ``heads`` does not divide ``dim``, odd head dim with ``rope``.

    Source: PCT paper D.2 (real cells), D.3 (width 184, head dim 46); papers/NOTES.md "Screening".
    """

    def __init__(self, dim: int, heads: int, cell: str = "real_softmax", *, context: int, causal: bool = False,
                 rope: bool = True, rope_base: float = 10000.0, gate_bias: float | None = None,
                 screen_init: float = -3.0, chunk: int | None = None) -> None:
        super().__init__()
        if cell not in REAL_CELLS:
            raise ValueError(f"RealAttention: unknown real cell {cell!r}; choose one of {', '.join(REAL_CELLS)}")
        self._setup(dim, heads, cell, context, causal, rope, rope_base, chunk)
        if rope and self.head_dim % 2:
            raise ValueError(f"RealAttention: rotary embeddings need an even head dim, got {self.head_dim}")
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        for p in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_normal_(p.weight)
        if cell in GATED_CELLS:
            self.gate_bias = nn.Parameter(torch.tensor(_initial_bias(context, gate_bias)))
        if cell == "real_screen":
            self.s_r = nn.Parameter(torch.full((heads,), float(screen_init)))

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.cell == "real_screen":
            q, k, v = (F.normalize(x, dim=-1) for x in (q, k, v))
            s = q @ k.transpose(-1, -2)
            self._record(s)
            return tanh_norm(screening_gate(s, self.s_r.to(s.dtype), causal=self.causal) @ v)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        self._record(s)
        if self.cell == "real_sigmoid":
            a = score_gate(s, self.gate_bias.to(s.dtype), kind="sigmoid", causal=self.causal)
        else:
            a = score_gate(s, None, kind="softmax", causal=self.causal)
        return a @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``r[B, T, E] -> r[B, T, E]``."""
        q, k, v = (_split(p(x), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        if self.rope:
            q, k = real_rotary(q, self.rope_base), real_rotary(k, self.rope_base)
        return self.out_proj(_merge(self._chunked(q, k, v)))
