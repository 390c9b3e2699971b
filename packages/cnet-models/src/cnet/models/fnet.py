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
from cnet.models.config import require_positive
from cnet.models.output import LMOutput

__all__ = ["ComplexFNetConfig", "ComplexFNet", "RealFNetConfig", "RealFNet", "matched_ffn_dim"]


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

    def __post_init__(self) -> None:
        require_positive("complex-fnet", vocab_size=self.vocab_size - 1, context=self.context,
                         embed_dim=self.embed_dim, num_layers=self.num_layers, ffn_mult=self.ffn_mult,
                         init_std=self.init_std)
        if not 0 <= self.floor < 1:
            raise ValueError(f"complex-fnet: need 0 <= floor < 1, got {self.floor}")


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


class _FNet(LanguageModel):
    """Shared trunk of the two FNets: embedding plus positions over the full window, then the blocks."""

    fixed_window = True

    def _trunk(self, ids: torch.Tensor) -> torch.Tensor:
        self.check_ids(ids)
        h = self.embed(self.pad_to_context(ids)) + self.pos
        for block in self.blocks:
            h = block(h)
        return h[:, : ids.shape[1]]


class ComplexFNet(_FNet):
    """Complex causal FNet: ``i[B, T]`` -> ``c[B, T, V]`` Born amplitudes; loss in nats per token.

    The causal DFT's roots of unity depend on the stream length, so an input shorter than ``context`` is padded
    on the right to the full window and the outputs of its own positions are returned (exact, by causality).
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
        z = self.head(self._trunk(ids))
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            loss = self.loss_fn(z, targets)
        return LMOutput(loss=loss, amplitudes=z)


@dataclass
class RealFNetConfig:
    """Configuration of :class:`RealFNet`; by default its FFN width matches the parameter count of a complex-fnet
    with the same vocabulary, context, width and depth (``ffn_mult=4``): 1041 at the defaults, 0.03% apart."""

    vocab_size: int = 65
    context: int = 64
    embed_dim: int = 128
    num_layers: int = 6
    ffn_dim: int | None = None    # hidden width of the token-wise FFN; None: parameter-matched (see above)
    init_std: float = 0.02

    def __post_init__(self) -> None:
        require_positive("real-fnet", vocab_size=self.vocab_size - 1, context=self.context,
                         embed_dim=self.embed_dim, num_layers=self.num_layers, init_std=self.init_std)
        if self.ffn_dim is None:
            self.ffn_dim = matched_ffn_dim(self)
        require_positive("real-fnet", ffn_dim=self.ffn_dim)


def matched_ffn_dim(c: RealFNetConfig, ffn_mult: int = 4) -> int:
    """The FFN width at which real-fnet has as many real parameters as complex-fnet with the same sizes.

    Per block complex-fnet holds ``2 (2 E m E + m E + E)`` real scalars (``m = ffn_mult``) and real-fnet
    ``2 E F + F + E``; the complex embedding, position table and head hold ``V E + T E + E V + V`` more.
    """
    e, v, t, n = c.embed_dim, c.vocab_size, c.context, c.num_layers
    complex_block = 2 * (2 * e * ffn_mult * e + ffn_mult * e + e)
    extra = v * e + t * e + e * v + v
    return max(1, round((n * (complex_block - e) + extra) / (n * (2 * e + 1))))


class _RealBlock(nn.Module):
    def __init__(self, c: RealFNetConfig) -> None:
        super().__init__()
        self.mix = cnn.RealCausalFourierMix()
        self.fc1 = nn.Linear(c.embed_dim, c.ffn_dim)
        self.fc2 = nn.Linear(c.ffn_dim, c.embed_dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = F.gelu(h + self.mix(h), approximate="tanh")
        return F.gelu(h + self.fc2(F.gelu(self.fc1(h), approximate="tanh")), approximate="tanh")


class RealFNet(_FNet):
    """Real causal FNet twin: ``i[B, T]`` -> ``r[B, T, V]`` logits; softmax cross-entropy in nats per token.

    Shorter inputs are padded to the full window like :class:`ComplexFNet`'s.
    """

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
        logits = self.head(self._trunk(ids))
        loss = None
        if targets is not None:
            self.check_ids(targets, "targets")
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return LMOutput(loss=loss, logits=logits)
