"""Complex normalisation layers."""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops

__all__ = ["TokenNorm"]


class TokenNorm(nn.Module):
    """Per-token complex RMS normalisation without affine: ``y = x / sqrt(mean_d |x_d|^2 + eps)``.

    Input ``c[..., d]`` (e.g. ``c[B, T, E]``) -> output of the same shape; the mean runs over the last dimension.
    Parameter-free: a following :class:`~cnet.core.nn.Linear` supplies gain and bias. Computes
    :func:`cnet.core.ops.token_norm`.

    Args:
        eps: ``>= 0`` added to the mean power (units of ``|x|^2``).

    Raises:
        ValueError: ``eps`` is negative (also at call time, with the op's other input checks).

    Source: CNet paper section 5 (TokenNorm); papers/NOTES.md "TokenNorm".
    """

    def __init__(self, eps: float = 1e-5) -> None:
        super().__init__()
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
            raise ValueError(f"TokenNorm: argument 'eps' must be a number >= 0, got {eps!r}")
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[..., d] -> c[..., d]``."""
        return ops.token_norm(x, eps=self.eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}"
