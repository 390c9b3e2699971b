"""``h-transformer`` (Born-score attention in the shared block) and its real twin ``transformer``.

H-Transformer's substrate, per head ``h`` (``H`` heads of complex width ``D``; quantum-shortcut paper section 5.5,
eq. 5, and 5.7; NOTES.md "Quantum-shortcut models")::

    p_t = W_p u_t + b_p                        u: r[B, T, d_inner]; p: r[B, T, H, 6D+1]
    (q 2D | k 2D | v 2D | tau logit 1) = p_t   complex q, k, v = re + i im
    q~, k~ = RoPE(q), RoPE(k)                  "phase-rotated": q~_{t,d} = q_{t,d} e^{i t base^(-d/D)}
    tau_i = softplus(tau logit_i) + tau_min
    s_ij  = |<q~_i|k~_j>|^2 / (D tau_i)        j <= i                                           (eq. 5)
    psi_i = sum_{j<=i} s_ij v_j / (sum_{j<=i} s_ij + eps)          causal running-sum normalisation
    r_i   = e * conj(q_i) * psi_i              bilinear read-out against the query, e: c[H, D] measurement vector
    y_i   = W_back [Re r_i, Im r_i] + b_back   r[B, T, d_inner]

The score is quadratic in the query, so ``s_ij`` is exactly the plain Born score of the scaled query
``q~_i / sqrt(D tau_i)``: the attention runs through :func:`cnet.core.ops.born_attention_linear` (chunked, exact;
``attn_mode="linear"``) or :func:`cnet.core.ops.born_attention` (``"quadratic"``); no new op is needed.

Choices where the paper is silent (config fields):

* The per-head projection emits ``6D + 1`` reals (q, k, v, temperature), the same count as H-Mamba's, with
  ``D = head_dim = 16``; one dense ``d_inner -> H (6D+1)`` map with bias, and the back projection from ``2D`` reals
  per head, as in H-Mamba.
* ``tau_i`` and the ``1/D`` cancel between numerator and denominator of eq. 5: with ``attn_eps = 0`` (the default,
  eq. 5 as printed and CNet's Born attention) the output does not depend on the temperature, whose projection row
  then gets zero gradient. With ``attn_eps > 0`` the temperature sets how much weight an empty "null" key takes
  (``psi = sum s v / (sum s + eps D tau)`` in the unscaled score). ``tau_min = 1e-4`` keeps the scale finite.
* Read-out ``r = e * conj(q) * psi`` uses the query before rotation and scaling (so no absolute position phase
  enters the output); ``e`` is drawn circularly symmetric and normalised to unit modulus per coordinate
  (section 5.6) and then learned freely (``measurement``; ``readout="state"`` reads ``psi`` itself).
* RoPE base 1e4, one frequency per complex feature (NOTES.md "RotaryEmbed").

The real twin ``transformer`` is the pre-norm RoPE Transformer: ``x += W_o SDPA_causal(RoPE(W_q n), RoPE(W_k n),
W_v n)``, ``x += W_2 SiLU(W_1 RMSNorm(x))`` (no biases; ``ffn_gated=True`` gives SwiGLU). The paper's 3096-wide
FFN at d_model 1024 is what a plain two-matrix SiLU MLP needs to reach 253M, hence the default. The default
``ffn_dim`` matches the default ``h-transformer`` (:func:`cnet.models.shortcut.match.match`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core import nn as cnn
from cnet.core import ops
from cnet.models.config import require_positive
from cnet.models.shortcut.blocks import MambaBlock, TiedByteLM, check_choice, check_sizes

__all__ = ["HTransformerConfig", "HTransformer", "BornScoreAttention", "TransformerConfig", "Transformer",
           "rope_real"]


def _upcast(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


@dataclass
class HTransformerConfig:
    """Configuration of :class:`HTransformer` (defaults: 14,960,352 real parameters, the shapes of the default
    :class:`~cnet.models.shortcut.hmamba.HMambaConfig`)."""

    vocab_size: int = 256
    context: int = 1024
    d_model: int = 384
    d_inner: int = 768
    num_layers: int = 6
    num_heads: int = 16           # H
    head_dim: int = 16            # D, complex width of q, k, v per head (the paper's N)
    d_conv: int = 4
    rope: bool = True             # phase-rotate queries and keys
    rope_base: float = 10000.0
    attn_mode: str = "linear"     # "linear" (exact chunked form) or "quadratic"
    attn_chunk: int = 64          # chunk of the linear form (inputs padded on the right to whole chunks)
    attn_eps: float = 0.0         # added to the running-sum normaliser (see the module docstring)
    tau_min: float = 1e-4         # temperature floor: tau = softplus(logit) + tau_min
    readout: str = "bilinear"     # "bilinear": e * conj(q) * psi; "state": psi
    measurement: bool = True      # learned measurement vector e in the bilinear read-out
    proj_bias: bool = True
    init_std: float = 0.02
    embed_init_std: float = 1e-3  # N(0, std^2) embedding (tied head; see blocks.py)
    proj_init_std: float = 0.02
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        where = "h-transformer"
        check_sizes(where, 2, vocab_size=self.vocab_size)
        check_sizes(where, context=self.context, d_model=self.d_model, d_inner=self.d_inner,
                    num_layers=self.num_layers, num_heads=self.num_heads, head_dim=self.head_dim,
                    d_conv=self.d_conv, attn_chunk=self.attn_chunk)
        require_positive(where, rope_base=self.rope_base, tau_min=self.tau_min, init_std=self.init_std,
                         embed_init_std=self.embed_init_std,
                         proj_init_std=self.proj_init_std, norm_eps=self.norm_eps)
        check_choice(where, "attn_mode", self.attn_mode, ("linear", "quadratic"))
        check_choice(where, "readout", self.readout, ("bilinear", "state"))
        if not 0 <= self.attn_eps < float("inf"):
            raise ValueError(f"{where}: 'attn_eps' must be a finite number >= 0, got {self.attn_eps}")


class BornScoreAttention(nn.Module):
    """H-Transformer's Born-score attention substrate (module docstring): ``r[B, T, d_inner] -> r[B, T, d_inner]``.

    Args:
        d_inner: input and output width.
        num_heads, head_dim: ``H`` heads of complex width ``D``.
        rope, rope_base: rotary phases on queries and keys.
        mode, chunk: ``"linear"`` (chunked exact form) or ``"quadratic"``; the chunk length.
        eps: normaliser constant (>= 0). tau_min: temperature floor (> 0).
        readout: ``"bilinear"`` or ``"state"``. measurement: use the learned ``e``.
        bias: biases in the projections. proj_init_std: std of the per-head projection.

    Attributes:
        proj: ``nn.Linear(d_inner, H (6D+1))``, per head ``(q_re D, q_im D, k_re, k_im, v_re, v_im, tau 1)``.
        measure: ``c[H, D]`` complex64 parameter, or ``None``.
        back: ``nn.Linear(2 H D, d_inner)``.

    Source: quantum-shortcut paper sections 5.5 (eq. 5), 5.6, 5.7; NOTES.md "Quantum-shortcut models".
    """

    def __init__(self, d_inner: int, num_heads: int, head_dim: int, *, rope: bool = True,
                 rope_base: float = 10000.0, mode: str = "linear", chunk: int = 64, eps: float = 0.0,
                 tau_min: float = 1e-4, readout: str = "bilinear", measurement: bool = True, bias: bool = True,
                 proj_init_std: float = 0.02) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.rotary = cnn.RotaryEmbedding(rope_base) if rope else None
        self.mode, self.chunk, self.eps, self.tau_min = mode, chunk, eps, tau_min
        self.readout, self.proj_init_std = readout, proj_init_std
        self.proj = nn.Linear(d_inner, num_heads * (6 * head_dim + 1), bias=bias)
        self.measure = nn.Parameter(torch.empty(num_heads, head_dim, dtype=torch.complex64)) \
            if measurement and readout == "bilinear" else None
        self.back = nn.Linear(2 * num_heads * head_dim, d_inner, bias=bias)
        self.init_substrate()

    @torch.no_grad()
    def init_substrate(self) -> None:
        """Per-head projection N(0, proj_init_std^2), zero bias; unit-modulus random-phase measurement vectors."""
        nn.init.normal_(self.proj.weight, std=self.proj_init_std)
        if self.proj.bias is not None:
            nn.init.zeros_(self.proj.bias)
        if self.measure is not None:
            cnn.complex_normal_(self.measure, 1.0)
            self.measure.div_(self.measure.abs().clamp_min(1e-12))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """``psi`` of eq. 5: ``q, k, v`` ``c[B, H, T, D]`` (unrotated), ``tau`` ``r[B, H, T, 1]``; ``c[B, H, T, D]``."""
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        q = q * torch.rsqrt(self.head_dim * tau)
        t = q.shape[-2]
        if self.mode == "quadratic":
            return ops.born_attention(q, k, v, causal=True, eps=self.eps)
        pad = -t % self.chunk
        if pad:  # right padding with zero tokens leaves every earlier position unchanged (causal)
            q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        return ops.born_attention_linear(q, k, v, eps=self.eps, chunk=self.chunk)[..., :t, :]

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """Attend over ``u`` (``r[B, T, d_inner]``); returns ``r[B, T, d_inner]``."""
        bsz, t, _ = u.shape
        d = self.head_dim
        p = _upcast(self.proj(u)).view(bsz, t, self.num_heads, 6 * d + 1).transpose(1, 2)  # r[B, H, T, 6D+1]
        q_re, q_im, k_re, k_im, v_re, v_im, tau = p.split([d, d, d, d, d, d, 1], dim=-1)
        q = torch.complex(q_re, q_im)
        psi = self.attend(q, torch.complex(k_re, k_im), torch.complex(v_re, v_im), F.softplus(tau) + self.tau_min)
        if self.readout == "bilinear":
            psi = q.conj() * psi
            if self.measure is not None:
                psi = self.measure.to(psi.dtype)[:, None, :] * psi
        feats = torch.cat([psi.real, psi.imag], dim=-1).transpose(1, 2)  # r[B, T, H, 2D]
        return self.back(feats.reshape(bsz, t, -1))


class HTransformer(TiedByteLM):
    """H-Transformer: ``i[B, T]`` bytes -> ``r[B, T, V]`` logits; the shared block skeleton hosting
    :class:`BornScoreAttention`, tied softmax head. ``forward(ids, targets=None)`` returns
    :class:`~cnet.models.output.LMOutput` (``logits``; ``loss`` in nats per token with ``targets``).

    Source: quantum-shortcut paper sections 5.5 and 5.7; NOTES.md "Quantum-shortcut models".
    """

    def __init__(self, config: HTransformerConfig) -> None:
        super().__init__()
        self.config = c = config
        self._build_trunk(c.vocab_size, c.d_model, c.norm_eps)
        self.blocks = nn.ModuleList(
            MambaBlock(c.d_model, c.d_inner, c.d_conv, BornScoreAttention(
                c.d_inner, c.num_heads, c.head_dim, rope=c.rope, rope_base=c.rope_base, mode=c.attn_mode,
                chunk=c.attn_chunk, eps=c.attn_eps, tau_min=c.tau_min, readout=c.readout, measurement=c.measurement,
                bias=c.proj_bias, proj_init_std=c.proj_init_std), norm_eps=c.norm_eps)
            for _ in range(c.num_layers))
        self._init_weights(c.init_std, c.embed_init_std)


@dataclass
class TransformerConfig:
    """Configuration of :class:`Transformer`, the real twin; ``ffn_dim`` defaults to the width that matches the
    default :class:`HTransformerConfig` (2456: 14,959,488 against 14,960,352 real scalars, 0.006% apart; see
    :func:`cnet.models.shortcut.match.match`)."""

    vocab_size: int = 256
    context: int = 1024
    d_model: int = 384
    num_layers: int = 6
    num_heads: int = 16           # must divide d_model; the head width must be even (RoPE pairs)
    ffn_dim: int = 2456           # SiLU feed-forward hidden width (parameter-matched)
    ffn_gated: bool = False       # SwiGLU instead of the plain SiLU MLP
    rope_base: float = 10000.0
    init_std: float = 0.02
    embed_init_std: float = 1e-3  # N(0, std^2) embedding (tied head; see blocks.py)
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        where = "transformer"
        check_sizes(where, 2, vocab_size=self.vocab_size)
        check_sizes(where, context=self.context, d_model=self.d_model, num_layers=self.num_layers,
                    num_heads=self.num_heads, ffn_dim=self.ffn_dim)
        require_positive(where, rope_base=self.rope_base, init_std=self.init_std,
                         embed_init_std=self.embed_init_std, norm_eps=self.norm_eps)
        if self.d_model % self.num_heads:
            raise ValueError(f"{where}: num_heads={self.num_heads} must divide d_model={self.d_model}")
        if (self.d_model // self.num_heads) % 2:
            raise ValueError(f"{where}: the head width d_model / num_heads = {self.d_model // self.num_heads} must "
                             "be even (RoPE turns pairs of features)")


def rope_real(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Real rotary embedding (rotate-half pairing): features ``(x_k, x_{k+D/2})`` turn by ``t base^(-2k/D)``.

    The same rotation as :func:`cnet.core.ops.rotary` on the complex numbers ``x_k + i x_{k+D/2}``.

    Args:
        x: ``r[B, H, T, D]`` with ``D`` even (positions on dim -2).
        base: frequency base.

    Returns:
        ``r[B, H, T, D]`` of ``x``'s dtype.

    Source: RoFormer (Su et al.), the real Transformer baseline of quantum-shortcut paper section 5.7.
    """
    t, d = x.shape[-2], x.shape[-1]
    work = torch.float64 if x.dtype == torch.float64 else torch.float32  # angles in at least float32
    inv = base ** (-torch.arange(0, d // 2, device=x.device, dtype=work) / (d // 2))
    ang = torch.arange(t, device=x.device, dtype=work)[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class _TransformerBlock(nn.Module):
    def __init__(self, c: TransformerConfig) -> None:
        super().__init__()
        self.num_heads, self.rope_base, self.gated = c.num_heads, c.rope_base, c.ffn_gated
        self.norm1 = nn.RMSNorm(c.d_model, eps=c.norm_eps)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model, bias=False)
        self.proj = nn.Linear(c.d_model, c.d_model, bias=False)
        self.norm2 = nn.RMSNorm(c.d_model, eps=c.norm_eps)
        self.fc1 = nn.Linear(c.d_model, (2 if c.ffn_gated else 1) * c.ffn_dim, bias=False)
        self.fc2 = nn.Linear(c.ffn_dim, c.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(bsz, t, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k = rope_real(q, self.rope_base), rope_real(k, self.rope_base)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(bsz, t, d))
        h = self.fc1(self.norm2(x))
        if self.gated:
            g, h = h.chunk(2, dim=-1)
            h = F.silu(g) * h
        else:
            h = F.silu(h)
        return x + self.fc2(h)


class Transformer(TiedByteLM):
    """The real pre-norm RoPE Transformer twin (module docstring): ``i[B, T]`` -> ``r[B, T, V]`` logits; causal
    ``torch.nn.functional.scaled_dot_product_attention``, tied softmax head. ``forward`` as :class:`HTransformer`.

    Source: quantum-shortcut paper section 5.7 (rotary dot-product attention, SiLU feed-forward).
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = c = config
        self._build_trunk(c.vocab_size, c.d_model, c.norm_eps)
        self.blocks = nn.ModuleList(_TransformerBlock(c) for _ in range(c.num_layers))
        self._init_weights(c.init_std, c.embed_init_std)

