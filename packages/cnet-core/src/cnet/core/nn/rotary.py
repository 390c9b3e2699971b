"""Rotary position embedding layer (CNet's ``RotaryEmbed``), a parameter-free phase rotation."""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops

__all__ = ["RotaryEmbedding", "RotaryEmbed"]


class RotaryEmbedding(nn.Module):
    """Turn each complex feature by a position-dependent phase: ``y[..., t, k] = x[..., t, k] e^{i (t+offset) w_k}``.

    ``w_k = base^(-k/D)``, one frequency per complex feature; see :func:`cnet.core.ops.reference.rotary`.
    Put it on the queries and keys of :class:`~cnet.core.nn.BornAttention` (shape ``c[B, H, T, D]``, ladder over
    the head dim) to make the scores depend on relative position. No parameters.

    Args:
        base: frequency base (> 0; validated at call time by the op).

    Shapes: ``c[..., T, D] -> c[..., T, D]``, dtype kept.

    Source: papers/NOTES.md "RotaryEmbed"; CNet README (RotaryEmbed). Alias: ``RotaryEmbed``.
    """

    def __init__(self, base: float = 10000.0) -> None:
        super().__init__()
        self.base = base

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate ``x`` (``c[..., T, D]``) whose first position is ``offset``; errors as in the op."""
        return ops.rotary(x, base=self.base, offset=offset)

    def extra_repr(self) -> str:
        return f"base={self.base}"


RotaryEmbed = RotaryEmbedding
