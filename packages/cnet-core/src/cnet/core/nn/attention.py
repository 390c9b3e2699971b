"""Attention layers: the bare Born operator, multi-head Born attention and multi-head gated linear attention.

Source: CNet paper section 11 ("Closing it: Born-rule attention"); CNet README (BornAttention, RotaryEmbed);
papers/NOTES.md "Born attention (CNet)" and "RotaryEmbed".
"""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops
from cnet.core.nn.linear import Linear
from cnet.core.nn.norm import TokenNorm
from cnet.core.nn.rotary import RotaryEmbedding
from cnet.core.validation import require_complex, require_rank

__all__ = ["BornAttention", "MultiheadBornAttention", "MultiheadGatedLinearAttention"]


class BornAttention(nn.Module):
    """Born-rule attention over given queries, keys and values (CNet's ``BornAttention``), no parameters.

    ``A_km = g^(k-m) |<q_k, k_m>|^2 / (sum_{m' <= k} g^(k-m') |<q_k, k_m'>|^2 + eps)``, ``O_k = sum_m A_km v_m``
    with an optional fixed per-head decay ``g`` (CNet's ``setDecay``); see
    :func:`cnet.core.ops.reference.born_attention` for the exact rule (0/0 -> 0, non-causal mode).
    ``mode="linear"`` evaluates the same operator in its exact chunkwise linear form
    (:func:`cnet.core.ops.reference.born_attention_linear`, causal only, ``T`` a multiple of ``chunk``).

    Args:
        causal: query ``k`` sees keys ``m <= k`` only.
        eps: non-negative constant added to each row's normaliser (validated at call time by the op).
        decay: ``None``, a float in (0, 1] for every head, or a sequence of ``H`` floats (causal only).
        mode: ``"quadratic"`` or ``"linear"``.
        chunk: chunk length of the linear form.

    Shapes: ``forward(q, k, v)``: ``q``, ``k`` ``c[B, H, T, D]``, ``v`` ``c[B, H, T, Dv]`` -> ``c[B, H, T, Dv]``.

    Raises:
        ValueError: unknown ``mode``, or ``mode="linear"`` with ``causal=False``; at call time as the ops.
    """

    def __init__(self, causal: bool = True, eps: float = 0.0, decay=None, mode: str = "quadratic",
                 chunk: int = 64) -> None:
        super().__init__()
        if mode not in ("quadratic", "linear"):
            raise ValueError(f"BornAttention: argument 'mode' must be 'quadratic' or 'linear', got {mode!r}")
        if mode == "linear" and not causal:
            raise ValueError("BornAttention: mode='linear' is causal only; pass causal=True")
        self.causal, self.eps, self.mode, self.chunk = causal, eps, mode, chunk
        self.register_buffer("decay", None if decay is None else torch.as_tensor(decay, dtype=torch.float64),
                             persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Attend ``q`` to ``k`` and mix ``v``; shapes as in the class docstring."""
        decay = self.decay
        if decay is not None:
            decay = decay.item() if decay.dim() == 0 else decay.to(q.real.dtype)
        if self.mode == "linear":
            return ops.born_attention_linear(q, k, v, eps=self.eps, decay=decay, chunk=self.chunk)
        return ops.born_attention(q, k, v, causal=self.causal, eps=self.eps, decay=decay)

    def extra_repr(self) -> str:
        decay = None if self.decay is None else self.decay.tolist()
        return f"causal={self.causal}, eps={self.eps}, decay={decay}, mode={self.mode!r}, chunk={self.chunk}"


class _MultiheadMixer(nn.Module):
    """Shared frame of the multi-head mixers: size checks, complex ``E -> d`` projections of queries, keys and
    values, rotary phases on queries and keys, head split ``c[B, T, d] -> c[B, H, T, d / H]``, output projection
    ``d -> E``. Subclasses implement ``_mix(q, k, v, x) -> c[B, H, T, d / H]``."""

    def __init__(self, where: str, embed_dim: int, num_heads: int, qk_dim: int | None, rope: bool, rope_base: float,
                 bias: bool, init_std: float) -> None:
        super().__init__()
        self._where = where
        sizes = {"embed_dim": embed_dim, "num_heads": num_heads}
        if qk_dim is not None:
            sizes["qk_dim"] = qk_dim
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{where}: argument '{name}' must be a positive int, got {value!r}")
        d = qk_dim if qk_dim is not None else embed_dim // 2
        if d == 0:
            raise ValueError(f"{where}: the default attention width embed_dim // 2 is 0 for "
                             f"embed_dim={embed_dim}; pass qk_dim")
        if d % num_heads:
            raise ValueError(f"{where}: attention width {d} (qk_dim, default embed_dim // 2) must be "
                             f"divisible by num_heads={num_heads}")
        self.embed_dim, self.num_heads, self.qk_dim, self.head_dim = embed_dim, num_heads, d, d // num_heads
        self.q_proj = Linear(embed_dim, d, bias=bias, init_std=init_std)
        self.k_proj = Linear(embed_dim, d, bias=bias, init_std=init_std)
        self.v_proj = Linear(embed_dim, d, bias=bias, init_std=init_std)
        self.out_proj = Linear(d, embed_dim, bias=bias, init_std=init_std)
        self.rotary = RotaryEmbedding(rope_base) if rope else None

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def _mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Mix the tokens of ``x`` (``c[B, T, E]``); returns ``c[B, T, E]``."""
        require_complex(self._where, x=x)
        require_rank(self._where, 3, "c[B, T, E]", x=x)
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"{self._where}: argument 'x' must have last dim embed_dim={self.embed_dim}, "
                             f"got shape {tuple(x.shape)}")
        q, k, v = (self._heads(proj(x)) for proj in (self.q_proj, self.k_proj, self.v_proj))
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        o = self._mix(q, k, v, x)
        b, _, n, _ = o.shape
        return self.out_proj(o.transpose(1, 2).reshape(b, n, self.qk_dim))

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, qk_dim={self.qk_dim}"


class MultiheadBornAttention(_MultiheadMixer):
    """Multi-head Born-rule self-attention with complex query, key, value and output projections.

    Per token, ``Q, K, V = x W_q^T + b_q, ...`` map ``E -> d`` (``d = qk_dim``, default ``E // 2`` as in CNet's
    language model); the ``d`` features are split into ``num_heads`` heads of width ``d / num_heads``; with
    ``rope`` the queries and keys of each head get a rotary embedding over the head dim (the frequency ladder
    restarts in every head); :func:`cnet.core.ops.born_attention` mixes each head; the heads are concatenated
    and projected back ``d -> E``.

    Args:
        embed_dim: token width ``E`` (> 0).
        num_heads: number of heads ``H`` (> 0); must divide ``d``.
        qk_dim: total attention width ``d`` (shared by queries, keys and values); ``None`` means ``E // 2``.
        rope: apply :class:`~cnet.core.nn.RotaryEmbedding` to queries and keys.
        rope_base: its frequency base.
        eps: normaliser constant of the Born weights (>= 0).
        causal: causal (decoder) mask.
        bias: learnable complex biases in the four projections.
        init_std: std of the real and of the imaginary part of fresh projection weights.
        decay, mode, chunk: as :class:`BornAttention` (fixed per-head decay; quadratic or exact linear form).

    Attributes:
        q_proj, k_proj, v_proj: :class:`~cnet.core.nn.Linear` ``E -> d``.
        out_proj: :class:`~cnet.core.nn.Linear` ``d -> E``.
        rotary: :class:`~cnet.core.nn.RotaryEmbedding` or ``None``.
        attention: :class:`BornAttention`.

    Shapes: ``c[B, T, E] -> c[B, T, E]`` (complex64 parameters).

    Raises:
        ValueError: a size is not a positive int, ``d`` is 0 or not divisible by ``num_heads``; at call time,
            ``x`` is not ``c[B, T, E]``. TypeError: at call time, ``x`` is not complex.

    Source: CNet paper section 11; CNet README (BornAttention with ``heads``, RotaryEmbed);
    papers/NOTES.md "Born attention (CNet)" (head dim E/2, heads split the features).
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, qk_dim: int | None = None, rope: bool = True,
                 rope_base: float = 10000.0, eps: float = 0.0, causal: bool = True, bias: bool = True,
                 init_std: float = 0.02, decay=None, mode: str = "quadratic", chunk: int = 64) -> None:
        super().__init__("MultiheadBornAttention", embed_dim, num_heads, qk_dim, rope, rope_base, bias, init_std)
        self.attention = BornAttention(causal=causal, eps=eps, decay=decay, mode=mode, chunk=chunk)

    def _mix(self, q, k, v, x):
        return self.attention(q, k, v)


class MultiheadGatedLinearAttention(_MultiheadMixer):
    """Multi-head complex gated linear attention (CNet's ``GatedLinearAttention`` block) with its projections.

    Per token, ``Q, K, V`` map ``E -> d`` (complex, ``d = qk_dim``, default ``E // 2``), split into ``num_heads``
    heads, RoPE on queries and keys (optional); per-head gate logits ``g = Re(x W_g^T + b_g)`` (``E -> H``);
    :func:`cnet.core.ops.gated_linear_attention` mixes each head (``S_t = sigma(g_t) S_{t-1} + conj(k_t) (x) v_t``,
    ``o_t = q_t S_t``, no normaliser); a parameter-free :class:`~cnet.core.nn.TokenNorm` over the ``d`` features of
    each token follows the mix (as in CNet), then ``d -> E``.

    Choices the README leaves open: the gate logit is the real part of a complex token-wise projection; its bias
    starts at ``logit(1 - 2^-(3 + 5 h / max(H - 1, 1)))`` for head ``h``, so the heads start with retentions from
    0.875 to 0.997 (short to long memory) and the weights at ``init_std``.

    Args:
        embed_dim, num_heads, qk_dim, rope, rope_base, bias, init_std: as :class:`MultiheadBornAttention`.

    Shapes: ``c[B, T, E] -> c[B, T, E]`` (complex64 parameters).

    Raises:
        ValueError: as :class:`MultiheadBornAttention`. TypeError: at call time, ``x`` is not complex.

    Source: CNet README (GatedLinearAttention, ``-gla true``: token-wise gate projection, TokenNorm after the mix).
    """

    def __init__(self, embed_dim: int, num_heads: int = 1, qk_dim: int | None = None, rope: bool = True,
                 rope_base: float = 10000.0, bias: bool = True, init_std: float = 0.02) -> None:
        super().__init__("MultiheadGatedLinearAttention", embed_dim, num_heads, qk_dim, rope, rope_base, bias,
                         init_std)
        self.gate_proj = Linear(embed_dim, num_heads, bias=True, init_std=init_std)
        keep = 1 - 2.0 ** -(3 + 5 * torch.arange(num_heads, dtype=torch.float64) / max(num_heads - 1, 1))
        with torch.no_grad():
            self.gate_proj.bias.copy_(torch.logit(keep).to(torch.complex64))
        self.norm = TokenNorm()

    def _mix(self, q, k, v, x):
        g = self.gate_proj(x).real.transpose(1, 2)
        o = ops.gated_linear_attention(q, k, v, g.contiguous())
        b, h, n, dh = o.shape
        return self.norm(o.transpose(1, 2).reshape(b, n, h * dh)).view(b, n, h, dh).transpose(1, 2)
