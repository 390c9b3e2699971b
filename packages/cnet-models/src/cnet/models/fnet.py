"""``complex-fnet`` and its parameter-matched real twin ``real-fnet`` (CNet paper section 11.2).

complex-fnet, a fully complex causal FNet over a window of T tokens::

    h = Embedding(ids) + P                       P: learned c[T, E] position table
    for each block:  h = CGELU(h + CausalFourierMix(h))          parameter-free, whole token-major stream
                     h = CGELU(h + W_2 CGELU(W_1 h))             token-wise E -> 4E -> E
                     [h = h / rms(h) over (T, E)]                block_norm (optional)
    z = W_head h                                 Born-rule amplitudes c[B, T, V]

The paper's 6-block model has 1.62M real degrees of freedom; E=128 gives 1.61M here. real-fnet keeps
everything controllable equal (window, depth, schedule, objective) but is real: a real-part causal Fourier mix
along the token axis, GELU, and a softmax head; its FFN width defaults to the value that matches
complex-fnet's default parameter count to within 1%.

Choices where the paper is silent (config fields): the FFN's hidden activation (CGELU / GELU); block_norm
rescales each sample's block output to unit RMS over all T*E features (a scalar per sample, so it commutes
with the DFT, as the paper requires).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core import nn as cnn
from cnet.models.base import LanguageModel
from cnet.models.output import LMOutput

__all__ = ["ComplexFNetConfig", "ComplexFNet", "RealFNetConfig", "RealFNet"]


@dataclass
class ComplexFNetConfig:
    """Configuration of :class:`ComplexFNet` (defaults: the paper's 6-block, ~1.6M-real-parameter model)."""

    vocab_size: int = 65
    context: int = 64             # window length T
    embed_dim: int = 128          # E
    num_layers: int = 6
    ffn_mult: int = 4
    block_norm: bool = False      # unit-RMS normalisation of every block output
    mixer_method: str = "bluestein"  # causal DFT algorithm: "bluestein" (O(N log N)) or "direct"
    init_std: float = 0.02
    floor: float = 0.0            # Born-loss probability floor (gradient only)


class _ComplexBlock(nn.Module):
    def __init__(self, c: ComplexFNetConfig) -> None:
        super().__init__()
        self.mix = cnn.CausalFourierMix(method=c.mixer_method, flatten=True)
        self.fc1 = cnn.Linear(c.embed_dim, c.ffn_mult * c.embed_dim, init_std=c.init_std)
        self.fc2 = cnn.Linear(c.ffn_mult * c.embed_dim, c.embed_dim, init_std=c.init_std)
        self.act = cnn.CGELU()
        self.block_norm = c.block_norm

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.act(h + self.mix(h))
        h = self.act(h + self.fc2(self.act(self.fc1(h))))
        if self.block_norm:
            power = (h.real.square() + h.imag.square()).mean(dim=(-2, -1), keepdim=True)
            h = h * torch.rsqrt(power + 1e-12)
        return h


class ComplexFNet(LanguageModel):
    """Complex causal FNet: ``i[B, T]`` -> ``c[B, T, V]`` Born amplitudes; loss in nats per token.

    The mixer acts on the whole window, so inputs shorter than ``context`` are allowed (the causal DFT of a
    shorter stream), but its output depends on the window length: train and score at the full context.
    """

    def __init__(self, config: ComplexFNetConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = cnn.Embedding(c.vocab_size, c.embed_dim, init_std=c.init_std)
        self.pos = nn.Parameter(cnn.complex_normal_(torch.zeros(c.context, c.embed_dim, dtype=torch.complex64),
                                                    c.init_std))
        self.blocks = nn.ModuleList(_ComplexBlock(c) for _ in range(c.num_layers))
        self.head = cnn.Linear(c.embed_dim, c.vocab_size, init_std=c.init_std)
        self.loss_fn = cnn.BornCrossEntropy(floor=c.floor)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring; raises ``ValueError``/``TypeError`` on malformed ids or targets."""
        self.check_ids(ids)
        h = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            h = block(h)
        z = self.head(h)
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            loss = self.loss_fn(z, targets)
        return LMOutput(loss=loss, amplitudes=z)


@dataclass
class RealFNetConfig:
    """Configuration of :class:`RealFNet`; the default FFN width 1041 matches complex-fnet's default count."""

    vocab_size: int = 65
    context: int = 64
    embed_dim: int = 128
    num_layers: int = 6
    ffn_dim: int = 1041           # hidden width of the token-wise FFN (matches complex-fnet to 0.1%)
    init_std: float = 0.02


class _RealBlock(nn.Module):
    def __init__(self, c: RealFNetConfig) -> None:
        super().__init__()
        self.mix = cnn.RealCausalFourierMix()
        self.fc1 = nn.Linear(c.embed_dim, c.ffn_dim)
        self.fc2 = nn.Linear(c.ffn_dim, c.embed_dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = F.gelu(h + self.mix(h), approximate="tanh")
        return F.gelu(h + self.fc2(F.gelu(self.fc1(h), approximate="tanh")), approximate="tanh")


class RealFNet(LanguageModel):
    """Real causal FNet twin: ``i[B, T]`` -> ``r[B, T, V]`` logits; softmax cross-entropy in nats per token."""

    def __init__(self, config: RealFNetConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim)
        self.pos = nn.Parameter(torch.zeros(c.context, c.embed_dim))
        self.blocks = nn.ModuleList(_RealBlock(c) for _ in range(c.num_layers))
        self.head = nn.Linear(c.embed_dim, c.vocab_size)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, std=c.init_std)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring; raises ``ValueError``/``TypeError`` on malformed ids or targets."""
        self.check_ids(ids)
        h = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            h = block(h)
        logits = self.head(h)
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return LMOutput(loss=loss, logits=logits)
