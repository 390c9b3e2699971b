"""Complex activation layers."""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops

__all__ = ["CGELU", "CGelu"]


class CGELU(nn.Module):
    """Split GELU: tanh-form GELU on the real and on the imaginary part, ``c[...] -> c[...]``.

    Parameter-free; computes :func:`cnet.core.ops.cgelu` (see its docstring for the Wirtinger derivatives).
    Raises ``TypeError`` on a real input.

    Source: papers/NOTES.md "CGelu"; CNet paper section 3 (CGelu, alias below).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[...] -> c[...]``, same shape and dtype."""
        return ops.cgelu(x)


CGelu = CGELU
