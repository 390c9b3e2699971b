"""Complex dropout layer."""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops

__all__ = ["ComplexDropout"]


class ComplexDropout(nn.Module):
    """Inverted dropout that keeps or zeroes whole complex elements, active only in training mode.

    In ``train()`` mode each element is zeroed with probability ``p`` and the survivors are scaled by
    ``1 / (1 - p)``; in ``eval()`` mode the input is returned unchanged. Input ``c[...]`` -> same shape.
    Computes :func:`cnet.core.ops.complex_dropout` with the global random generator (seed it with
    ``torch.manual_seed``).

    Args:
        p: drop probability in ``[0, 1)``.

    Raises:
        ValueError: ``p`` is not a number in ``[0, 1)``.

    Source: CNet README (ComplexDropout).
    """

    def __init__(self, p: float = 0.1) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
            raise ValueError(f"ComplexDropout: argument 'p' must be a number in [0, 1), got {p!r}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[...] -> c[...]``."""
        return ops.complex_dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
