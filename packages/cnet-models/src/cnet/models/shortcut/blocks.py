"""The pieces the four quantum-shortcut models share: the Mamba-style block skeleton and the tied byte LM.

Block skeleton (paper section 5.7; H-Mamba, the real Mamba and H-Transformer all use it)::

    n = RMSNorm(x)                                         r[B, T, d_model]
    u, z = split(W_in n)                                   W_in: d_model -> 2 d_inner (no bias, Xavier normal)
    u = SiLU(CausalDepthwiseConv_k(u))                     k = d_conv = 4
    y = mixer(u)                                           the substrate: r[B, T, d_inner] -> r[B, T, d_inner]
    x = x + W_out (y * SiLU(z))                            W_out: d_inner -> d_model (no bias)
    [x = x + SwiGLU(n)]  or  [x = x + SwiGLU(RMSNorm'(x))]  the real Mamba's parameter-matching branch

and the language-model trunk (all four models)::

    h = E[ids];  h = block(h) ...;  logits = RMSNorm(h) E^T     E: r[V, d_model], the tied softmax byte head

Choices where the paper is silent, each a config field of the models: RMSNorm with a learnable gain and
``eps = 1e-5`` (``norm_eps``); a final RMSNorm before the head; projections other than the input projection drawn
from N(0, init_std^2) (``init_std = 0.02``); the embedding from N(0, embed_init_std^2) with ``embed_init_std = 1e-3``.
The small embedding is deliberate: with a tied head the logit of the current token is ``~ d_model * std`` whenever
the blocks add less than the embedding to the residual stream (``|E_x|^2 / rms(E_x)``), which at std 0.02 and
d_model 384 is 7.7 nats. H-Transformer's bilinear read-out (a product of two small terms) starts 40x quieter than
the other blocks, so at std 0.02 it alone would start near 7.5 nats instead of ln 256 = 5.55; at 1e-3 all four
models start within 0.02 nats of uniform. The SwiGLU branch parallel to the mixer on the same normalised input
(``ffn_placement="parallel"``; ``"sequential"`` adds it after the mixer with its own RMSNorm).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cnet.models.base import LanguageModel
from cnet.models.output import LMOutput

__all__ = ["CausalDepthwiseConv", "SwiGLU", "MambaBlock", "TiedByteLM", "check_choice", "check_sizes"]


def check_choice(where: str, name: str, value, options) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``options`` (the message lists them)."""
    if value not in options:
        raise ValueError(f"{where}: '{name}' must be one of {', '.join(repr(o) for o in options)}, got {value!r}")


def check_sizes(where: str, minimum: int = 1, **values) -> None:
    """Raise ``ValueError`` unless every named value is an int >= ``minimum`` (``bool`` is refused)."""
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ValueError(f"{where}: '{name}' must be an int >= {minimum}, got {v!r}")


class CausalDepthwiseConv(nn.Module):
    """Causal depthwise 1-D convolution over time: ``y[t, c] = bias_c + sum_{j<k} w_{c,j} x[t-k+1+j, c]``.

    Positions before 0 count as zeros, so ``y[t]`` depends on ``x[t-k+1 .. t]`` only (Mamba's ``conv1d``).

    Args:
        channels: feature width ``C``.
        kernel: window ``k`` (the paper's convolution width 4).

    Shapes: ``r[B, T, C] -> r[B, T, C]``.

    Source: quantum-shortcut paper section 5.7 (depthwise causal convolution of width 4); Mamba.
    """

    def __init__(self, channels: int, kernel: int) -> None:
        super().__init__()
        self.kernel = kernel
        self.conv = nn.Conv1d(channels, channels, kernel, groups=channels, padding=kernel - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Convolve ``x`` (``r[B, T, C]``) causally; returns ``r[B, T, C]``."""
        return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)


class SwiGLU(nn.Module):
    """Gated feed-forward ``W_2 (SiLU(W_1 x) * W_3 x)``, ``d -> hidden -> d``, no biases (3 d hidden parameters).

    In the real Mamba its only job is parameter matching (paper section 5.7: a "small SwiGLU branch of hidden width
    1258" at d_model 1024).

    Shapes: ``r[B, T, d] -> r[B, T, d]``.
    """

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the gated MLP to ``r[..., d]``."""
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MambaBlock(nn.Module):
    """The shared block skeleton of the module docstring around a given substrate ``mixer``.

    Args:
        d_model: residual width.
        d_inner: inner width of the signal and gate branches.
        d_conv: causal convolution width.
        mixer: module ``r[B, T, d_inner] -> r[B, T, d_inner]`` (the substrate).
        ffn_dim: hidden width of an extra SwiGLU branch, 0 for none (only the real Mamba uses it).
        ffn_placement: ``"parallel"`` (same normalised input as the mixer) or ``"sequential"`` (own RMSNorm,
            after the mixer's residual add).
        norm_eps: RMSNorm epsilon.

    Shapes: ``r[B, T, d_model] -> r[B, T, d_model]``.

    Source: quantum-shortcut paper section 5.7 (shared block), Mamba (Gu and Dao 2023).
    """

    def __init__(self, d_model: int, d_inner: int, d_conv: int, mixer: nn.Module, *, ffn_dim: int = 0,
                 ffn_placement: str = "parallel", norm_eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(d_model, eps=norm_eps)
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv = CausalDepthwiseConv(d_inner, d_conv)
        self.mixer = mixer
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)
        self.ffn = SwiGLU(d_model, ffn_dim) if ffn_dim else None
        self.ffn_norm = nn.RMSNorm(d_model, eps=norm_eps) if ffn_dim and ffn_placement == "sequential" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One residual block on ``r[B, T, d_model]``."""
        n = self.norm(x)
        u, z = self.in_proj(n).chunk(2, dim=-1)
        y = self.mixer(F.silu(self.conv(u)))
        x = x + self.out_proj(y.to(z.dtype) * F.silu(z))
        if self.ffn is not None:
            x = x + self.ffn(n if self.ffn_norm is None else self.ffn_norm(x))
        return x


class TiedByteLM(LanguageModel):
    """Embedding, a stack of residual blocks, a final RMSNorm and the tied softmax head.

    ``forward(ids, targets=None)``: ``i[B, T]`` -> :class:`~cnet.models.output.LMOutput` with ``logits``
    ``r[B, T, V]`` (``logits = RMSNorm(h) E^T``, the embedding matrix ``E`` doubling as the head) and, given
    ``targets`` ``i[B, T]``, the mean cross-entropy ``loss`` in nats per token.

    Subclasses build ``self.blocks`` after calling :meth:`_build_trunk`. Raises ``ValueError``/``TypeError`` on
    malformed ids or targets (see :meth:`LanguageModel.check_ids`).

    Source: quantum-shortcut paper section 5.7 ("The input embedding is tied to the output head"), section 5.5
    (all four models end in an ordinary tied softmax head).
    """

    def _build_trunk(self, vocab_size: int, d_model: int, norm_eps: float) -> None:
        self.embed = nn.Embedding(vocab_size, d_model)
        self.norm = nn.RMSNorm(d_model, eps=norm_eps)

    def _init_weights(self, init_std: float, embed_init_std: float) -> None:
        """N(0, embed_init_std^2) for the embedding, N(0, init_std^2) for every ``nn.Linear`` weight, zero biases;
        then each block's
        ``in_proj`` (if any) by the Xavier normal rule (paper section 5.6: "input projections use the Xavier rule").
        Modules with their own initialisation (a method ``init_substrate()``) apply it afterwards."""
        nn.init.normal_(self.embed.weight, std=embed_init_std)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=init_std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        for block in self.blocks:
            if isinstance(block, MambaBlock):
                nn.init.xavier_normal_(block.in_proj.weight)
        for m in self.modules():
            if hasattr(type(m), "init_substrate"):
                m.init_substrate()

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring."""
        self.check_ids(ids)
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        logits = F.linear(self.norm(h), self.embed.weight)
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            if targets.shape != ids.shape:
                raise ValueError(f"{type(self).__name__}: 'targets' must have the shape of 'ids' {tuple(ids.shape)}, "
                                 f"got {tuple(targets.shape)}")
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return LMOutput(loss=loss, logits=logits)
