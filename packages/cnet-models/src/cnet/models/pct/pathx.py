"""``pcr-pathx``: complex screening with a phase-coherent recurrence on Path-X (PCT paper section 4, D.5).

The residual stream is real; complex arithmetic carries the transport path (the recurrence) and the matching
path (the screening attention)::

    h = Linear(1 -> 128)(pixel / 255)                         r[B, L, 128], L = image_size^2 (16,384 for Path-X)
    for block i = 1 .. 6:
        h = h + GLU(GELU(PCR(BatchNorm(h))))                   GLU(u) = u * sigmoid(Linear(u)), PCR state 256
        if i in (3, 5):  h = h + Screen(BatchNorm(h))          complex screening, 4 heads of 32, chunk 1,024
    logits = Linear(128 -> 2)(mean_t h)

PCR (:class:`~cnet.core.nn.phase.PhaseCoherentRecurrence`): bidirectional, each direction with its own
``lambda = exp(-exp(nu) + i theta)`` (ring ``|lambda|`` in [0.999, 0.9999], ``theta`` in [0, pi/10]),
``gamma = sqrt(1 - |lambda|^2)``, ``B``, ``C``; ``y = Re(C_f h_f) + Re(C_b h_b) + D x`` by FFT convolution.
Screen (:class:`~cnet.models.pct.cells.ComplexAttention`, ``complex_screen``, ``real_io``): complex ``W_q``,
``W_k``, ``W_v``, ``W_g`` on the real input, cosine score, screening weights within chunks, TanhNorm per head,
``u * modReLU(W_g x)``, then a real ``Linear(256 -> 128)`` on ``[Re; Im]``.

At the published configuration this has 2,009,356 trainable real scalars, 91.63% of them in complex tensors
(the eigenvalue's polar parameters ``nu + i theta`` are stored as one complex tensor), against the paper's 2.01M
and 91.6%. Choices where the paper is silent (config fields where they matter): the screening blocks are pre-norm
residual with their own BatchNorm; no RoPE inside the screening blocks (the recurrence supplies position;
``screen_rope``); ``D`` is shared by the two directions; ``gamma`` follows ``lambda`` (not a free parameter);
pooling is the mean over positions. Training recipe (NOTES.md): AdamW lr 4.5e-4, weight decay 0.05, recurrence
parameters at lr/3 without weight decay (:meth:`PCRPathX.param_groups`), warm-up 2,500, 250k steps at batch 32,
clip 1.0.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core.nn.phase import PhaseCoherentRecurrence
from cnet.models.base import TaskHead, count_parameters
from cnet.models.config import require_positive
from cnet.models.output import LMOutput
from cnet.models.pct.cells import ComplexAttention

__all__ = ["PCRPathXConfig", "PCRPathX"]


@dataclass
class PCRPathXConfig:
    """Configuration of :class:`PCRPathX` (defaults: the released Path-X model, PCT paper section 4 and D.5)."""

    image_size: int = 128           # side of the square image; sequence length image_size^2 (Path-X: 16,384)
    num_classes: int = 2
    d_model: int = 128
    num_layers: int = 6             # PCR blocks
    d_state: int = 256              # complex state per direction
    screen_after: str = "3,5"       # 1-based PCR blocks followed by a screening block ("" for none)
    screen_heads: int = 4
    screen_chunk: int = 1024        # screening attends within blocks of this many positions
    screen_rope: bool = False
    screen_init: float = -3.0       # initial per-head s_r
    r_min: float = 0.999
    r_max: float = 0.9999
    max_phase: float = math.pi / 10  # theta ~ U[0, max_phase]; 0 would make the eigenvalues real
    bidirectional: bool = True

    def __post_init__(self) -> None:
        require_positive("pcr-pathx", image_size=self.image_size, num_classes=self.num_classes,
                         d_model=self.d_model, num_layers=self.num_layers, d_state=self.d_state,
                         screen_heads=self.screen_heads, screen_chunk=self.screen_chunk, max_phase=self.max_phase)
        if not 0 < self.r_min <= self.r_max < 1:
            raise ValueError(f"pcr-pathx: need 0 < r_min <= r_max < 1, got {self.r_min}, {self.r_max}")
        if self.d_model % self.screen_heads:
            raise ValueError(f"pcr-pathx: screen_heads={self.screen_heads} must divide d_model={self.d_model}")
        self.screen_blocks()  # validates screen_after

    def screen_blocks(self) -> tuple[int, ...]:
        """The 1-based PCR block numbers followed by a screening block, parsed from ``screen_after``."""
        try:
            blocks = tuple(sorted({int(s) for s in self.screen_after.replace(" ", "").split(",") if s}))
        except ValueError:
            raise ValueError(f"pcr-pathx: screen_after must be comma-separated block numbers like '3,5', got "
                             f"{self.screen_after!r}") from None
        if any(not 1 <= b <= self.num_layers for b in blocks):
            raise ValueError(f"pcr-pathx: screen_after {self.screen_after!r} names a block outside "
                             f"1..{self.num_layers}")
        return blocks

    @property
    def length(self) -> int:
        """The configured sequence length ``image_size^2``."""
        return self.image_size**2


def _batch_norm(norm: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the features of ``r[B, L, H]`` (statistics over batch and positions)."""
    return norm(x.transpose(1, 2)).transpose(1, 2)


class _PCRBlock(nn.Module):
    def __init__(self, c: PCRPathXConfig) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(c.d_model)
        self.pcr = PhaseCoherentRecurrence(c.d_model, c.d_state, bidirectional=c.bidirectional, r_min=c.r_min,
                                           r_max=c.r_max, max_phase=c.max_phase)
        self.glu = nn.Linear(c.d_model, c.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.pcr(_batch_norm(self.norm, x)))
        return x + h * torch.sigmoid(self.glu(h))


class _ScreenBlock(nn.Module):
    def __init__(self, c: PCRPathXConfig) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(c.d_model)
        self.attn = ComplexAttention(c.d_model, c.screen_heads, "complex_screen", context=c.length, causal=False,
                                     rope=c.screen_rope, screen_init=c.screen_init, chunk=c.screen_chunk,
                                     real_io=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(_batch_norm(self.norm, x))


class PCRPathX(nn.Module):
    """PCR + complex screening classifier over pixel sequences: ``i[B, L]`` grey levels -> ``r[B, C]`` logits.

    ``forward(pixels, targets=None)`` takes integer grey levels 0..255 (``pathfinder`` / ``pathfinder_synthetic``
    ``input_ids``) with ``L <= image_size^2``; ``L`` must be at most ``screen_chunk`` or a multiple of it. Returns
    :class:`~cnet.models.output.LMOutput` with ``logits`` ``r[B, C]`` and, given ``targets`` ``i[B]``, the mean
    cross-entropy ``loss``.

    Raises:
        TypeError: pixels or targets that are not integer tensors.
        ValueError: wrong ranks, a sequence longer than ``image_size^2``, a length that does not fit the chunk,
        grey levels outside 0..255, labels outside ``[0, C)``.

    Source: PCT paper section 4, D.5; papers/NOTES.md "Phase-coherent transformers" (PCR (Path-X)).
    """

    def __init__(self, config: PCRPathXConfig) -> None:
        super().__init__()
        self.config = c = config
        self.encoder = nn.Linear(1, c.d_model)
        screens = set(c.screen_blocks())
        blocks: list[nn.Module] = []
        for i in range(1, c.num_layers + 1):
            blocks.append(_PCRBlock(c))
            if i in screens:
                blocks.append(_ScreenBlock(c))
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(c.d_model, c.num_classes)

    def _check_pixels(self, pixels: torch.Tensor) -> None:
        c = self.config
        if not isinstance(pixels, torch.Tensor) or pixels.dtype.is_floating_point or pixels.is_complex() \
                or pixels.dtype == torch.bool:
            raise TypeError(f"PCRPathX: 'pixels' must be an integer tensor i[B, L] of grey levels 0..255, got "
                            f"{getattr(pixels, 'dtype', type(pixels).__name__)}")
        if pixels.dim() != 2 or pixels.shape[1] == 0:
            raise ValueError(f"PCRPathX: 'pixels' must be i[B, L] with L >= 1, got shape {tuple(pixels.shape)}")
        length = pixels.shape[1]
        if length > c.length:
            raise ValueError(f"PCRPathX: sequence length {length} exceeds the configured image_size^2 = {c.length} "
                             f"(image_size={c.image_size})")
        if c.screen_blocks() and length > c.screen_chunk and length % c.screen_chunk:
            raise ValueError(f"PCRPathX: sequence length {length} must be <= screen_chunk={c.screen_chunk} or a "
                             "multiple of it")
        if int(pixels.min()) < 0 or int(pixels.max()) > 255:
            raise ValueError("PCRPathX: 'pixels' must hold grey levels in 0..255")

    def forward(self, pixels: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring."""
        self._check_pixels(pixels)
        h = self.encoder((pixels.float() / 255.0)[..., None])
        for block in self.blocks:
            h = block(h)
        logits = self.head(h.mean(dim=1))
        loss = None
        if targets is not None:
            if not isinstance(targets, torch.Tensor) or targets.dtype.is_floating_point or targets.is_complex():
                raise TypeError("PCRPathX: 'targets' must be an integer tensor i[B]")
            if tuple(targets.shape) != (pixels.shape[0],):
                raise ValueError(f"PCRPathX: 'targets' must be i[B] = ({pixels.shape[0]},), got "
                                 f"{tuple(targets.shape)}")
            if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= self.config.num_classes):
                raise ValueError(f"PCRPathX: 'targets' holds labels outside [0, {self.config.num_classes})")
            loss = F.cross_entropy(logits, targets.long())
        return LMOutput(loss=loss, logits=logits)

    @classmethod
    def task_config(cls, kind: str, num_classes: int, length: int, input_kind: str,
                    vocab_size: int | None) -> dict:
        """The config fields a task decides: ``num_classes`` and ``image_size`` = ``sqrt(length)``.

        Raises:
            ValueError: not a classification task over pixel ids (0..255) of a square image.
        """
        side = math.isqrt(length)
        if kind != "classify" or input_kind != "tokens" or (vocab_size or 0) > 256 or side * side != length:
            raise ValueError(f"pcr-pathx classifies square images of grey levels 0..255; the task is kind={kind!r}, "
                             f"input_kind={input_kind!r}, {vocab_size} ids, length {length}")
        return {"num_classes": num_classes, "image_size": side}

    def task_head(self) -> TaskHead:
        """What this model predicts: one of ``num_classes`` per image of ``image_size^2`` grey levels."""
        return TaskHead("classify", self.config.num_classes, self.config.length, "tokens", 256)

    def config_dict(self) -> dict:
        """The configuration as a JSON-able dict."""
        return dataclasses.asdict(self.config)

    def num_parameters(self) -> dict[str, int]:
        """See :func:`cnet.models.count_parameters` (real scalars, complex entries, complex share)."""
        return count_parameters(self)

    def param_groups(self, lr: float, weight_decay: float = 0.05, recurrence_lr_factor: float = 1 / 3) -> list[dict]:
        """AdamW parameter groups of the paper's recipe: the recurrence parameters (every ``nu_theta_*`` and
        ``B_*`` of the PCR layers) at ``lr * recurrence_lr_factor`` without weight decay, the rest at ``lr`` with
        ``weight_decay``."""
        rec, rest = [], []
        for name, p in self.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            (rec if ".pcr." in name and leaf.startswith(("nu_theta_", "B_")) else rest).append(p)
        return [{"params": rec, "lr": lr * recurrence_lr_factor, "weight_decay": 0.0},
                {"params": rest, "lr": lr, "weight_decay": weight_decay}]
