"""``born-lm``: CNet's fully complex Born-rule language model (CNet paper section 11.3 and appendix A).

Every block is pre-norm with TokenNorm (a parameter-free per-token complex RMS normalisation)::

    h = Embedding(ids) [+ learned position table]
    for each block:  h = h + W_o BornAttention(RoPE(W_q n), RoPE(W_k n), W_v n),  n = TokenNorm(h)
                     h = h + W_2 CGELU(W_1 TokenNorm(h))                         (E -> ffn_mult E -> E)
    z = W_head TokenNorm(h)              amplitudes c[B, T, V];  p(y) = |z_y|^2 / ||z||^2

trained with the Born-rule cross-entropy and its gradient-only probability floor (section 9). The paper's
configuration is E=160, 8 blocks, context 64, RoPE, TokenNorm, floor 1e-3 (``cnet.models.create("born-lm")``).
Choices the paper leaves open, each a config field: the Q/K/V width is E/2 in total (NOTES.md), split into
``num_heads`` heads; the FFN hidden activation is CGELU; a final TokenNorm precedes the head; ``dropout`` (0 by
default, as CNet recommends for Born-loss models) applies complex dropout to both residual branches.
``mixer="gla"`` swaps Born attention for complex gated linear attention (CNet's ``-gla true``; the ``attn_*``
fields then do not apply). ``attn_decay`` adds CNet's fixed score decay and ``attn_mode="linear"`` evaluates the
same attention in its exact chunkwise linear form (inputs are padded on the right to whole chunks, which leaves
earlier positions unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from cnet.core import nn as cnn
from cnet.models.base import LanguageModel
from cnet.models.config import require_positive
from cnet.models.output import LMOutput

__all__ = ["BornLMConfig", "BornLM"]


@dataclass
class BornLMConfig:
    """Configuration of :class:`BornLM` (defaults: CNet paper section 11, E=160, 8 blocks, T=64)."""

    vocab_size: int = 65          # characters of tiny-shakespeare
    context: int = 64             # window length T
    embed_dim: int = 160          # E, complex features per token
    num_layers: int = 8           # blocks
    num_heads: int = 1            # Born attention heads; the Q/K/V width splits across them
    qk_dim: int | None = None     # total Q/K/V width; None -> E // 2 (CNet's choice)
    ffn_mult: int = 4             # FFN hidden width = ffn_mult * E
    rope: bool = True             # rotary phases on Q and K
    rope_base: float = 10000.0
    learned_positions: bool = False  # add a learned c[T, E] position table to the embedding
    attn_eps: float = 0.0         # Born attention normaliser epsilon
    attn_decay: float | None = None  # fixed decay of the score per token of distance (CNet's setDecay), in (0, 1]
    mixer: str = "born"           # "born" (Born attention) or "gla" (complex gated linear attention, CNet's -gla)
    attn_mode: str = "quadratic"  # "quadratic", or "linear": the exact chunkwise form (context % attn_chunk == 0)
    attn_chunk: int = 64
    floor: float = 1e-3           # probability floor of the Born loss (gradient only)
    init_std: float = 0.02        # N(0, std^2) per real and imaginary part
    dropout: float = 0.0          # complex dropout on each residual branch (CNet warns it can pin a Born LM)

    def __post_init__(self) -> None:
        require_positive("born-lm", vocab_size=self.vocab_size - 1, context=self.context, embed_dim=self.embed_dim,
                         num_layers=self.num_layers, num_heads=self.num_heads, ffn_mult=self.ffn_mult,
                         rope_base=self.rope_base, init_std=self.init_std)
        if not 0 <= self.dropout < 1:
            raise ValueError(f"born-lm: dropout must be in [0, 1), got {self.dropout}")
        if not 0 <= self.floor < 1 or self.attn_eps < 0:
            raise ValueError(f"born-lm: need 0 <= floor < 1 and attn_eps >= 0, got {self.floor}, {self.attn_eps}")
        if self.attn_decay is not None and not 0 < self.attn_decay <= 1:
            raise ValueError(f"born-lm: attn_decay must be in (0, 1], got {self.attn_decay}")
        if self.mixer not in ("born", "gla"):
            raise ValueError(f"born-lm: mixer must be 'born' or 'gla', got {self.mixer!r}")
        if self.attn_mode not in ("quadratic", "linear"):
            raise ValueError(f"born-lm: attn_mode must be 'quadratic' or 'linear', got {self.attn_mode!r}")
        if self.attn_mode == "linear" and self.context % self.attn_chunk:
            raise ValueError(f"born-lm: context={self.context} is not a multiple of attn_chunk={self.attn_chunk}")
        qk = self.qk_dim or self.embed_dim // 2
        if qk < 1 or qk % self.num_heads:
            raise ValueError(f"born-lm: num_heads={self.num_heads} must divide the Q/K/V width {qk} "
                             "(qk_dim, or embed_dim // 2)")


class _Block(nn.Module):
    def __init__(self, c: BornLMConfig) -> None:
        super().__init__()
        self.norm1 = cnn.TokenNorm()
        if c.mixer == "gla":
            self.attn = cnn.MultiheadGatedLinearAttention(c.embed_dim, c.num_heads, qk_dim=c.qk_dim, rope=c.rope,
                                                          rope_base=c.rope_base, init_std=c.init_std)
        else:
            self.attn = cnn.MultiheadBornAttention(c.embed_dim, c.num_heads, qk_dim=c.qk_dim, rope=c.rope,
                                                   rope_base=c.rope_base, eps=c.attn_eps, init_std=c.init_std,
                                                   decay=c.attn_decay, mode=c.attn_mode, chunk=c.attn_chunk)
        self.norm2 = cnn.TokenNorm()
        self.fc1 = cnn.Linear(c.embed_dim, c.ffn_mult * c.embed_dim, init_std=c.init_std)
        self.act = cnn.CGELU()
        self.fc2 = cnn.Linear(c.ffn_mult * c.embed_dim, c.embed_dim, init_std=c.init_std)
        self.drop = cnn.ComplexDropout(c.dropout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.drop(self.attn(self.norm1(h)))
        return h + self.drop(self.fc2(self.act(self.fc1(self.norm2(h)))))


class BornLM(LanguageModel):
    """Complex Born-rule attention language model: ``i[B, T]`` ids -> ``c[B, T, V]`` amplitudes.

    ``forward(ids, targets=None)`` returns :class:`LMOutput` with ``amplitudes`` and, when ``targets``
    (``i[B, T]``) are given, the Born cross-entropy ``loss`` in nats per token.
    """

    def __init__(self, config: BornLMConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = cnn.Embedding(c.vocab_size, c.embed_dim, init_std=c.init_std)
        self.pos = nn.Parameter(torch.zeros(c.context, c.embed_dim, dtype=torch.complex64)) \
            if c.learned_positions else None
        if self.pos is not None:
            cnn.complex_normal_(self.pos.data, c.init_std)
        self.blocks = nn.ModuleList(_Block(c) for _ in range(c.num_layers))
        self.norm = cnn.TokenNorm()
        self.head = cnn.Linear(c.embed_dim, c.vocab_size, init_std=c.init_std)
        self.loss_fn = cnn.BornCrossEntropy(floor=c.floor)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring; raises ``ValueError``/``TypeError`` on malformed ids or targets."""
        self.check_ids(ids)
        t = ids.shape[1]
        if self.config.mixer == "born" and self.config.attn_mode == "linear":
            # the chunked form needs whole chunks; right padding is causal-safe
            ids = torch.nn.functional.pad(ids, (0, -t % self.config.attn_chunk))
        h = self.embed(ids)
        if self.pos is not None:
            h = h + self.pos[: ids.shape[1]]
        for block in self.blocks:
            h = block(h)
        z = self.head(self.norm(h[:, :t]))
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            loss = self.loss_fn(z, targets)
        return LMOutput(loss=loss, amplitudes=z)

