"""Born-rule measurement: class probabilities ``|z|^2 / ||z||^2`` and the matching cross-entropy loss."""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops
from cnet.core.validation import require_complex

__all__ = ["BornCrossEntropy", "born_probabilities"]


def born_probabilities(z: torch.Tensor) -> torch.Tensor:
    """Born-rule class probabilities of amplitude vectors: ``p[..., k] = |z_k|^2 / sum_j |z_j|^2``.

    Each row is non-negative and sums to 1; an all-zero row has no defined distribution and gives NaN.
    Gradients flow through plain PyTorch autograd (this is a read-out, not a registered op).

    Args:
        z: ``c[..., C]`` amplitudes, complex64 or complex128.

    Returns:
        ``r[..., C]`` of ``z``'s real dtype.

    Raises:
        TypeError: ``z`` is not complex. ValueError: ``z`` is 0-dim.

    Source: CNet paper section 3 (Born-rule measurement); papers/NOTES.md "Born cross-entropy".
    """
    require_complex("born_probabilities", z=z)
    if z.dim() < 1:
        raise ValueError("born_probabilities: argument 'z' must be c[..., C] (at least 1 dim), got a 0-dim tensor")
    power = z.real.square() + z.imag.square()
    return power / power.sum(-1, keepdim=True)


class BornCrossEntropy(nn.Module):
    """Born-rule cross-entropy ``mean(-log(|z_y|^2 / ||z||^2))`` in nats, CNet's Born ``CrossEntropy`` head.

    Calls :func:`cnet.core.ops.born_cross_entropy`. ``floor`` is the probability floor of CNet's ``-ce_eps``:
    it bounds the gradient on examples with a vanishing target amplitude and leaves the loss value exact.

    Args:
        floor: probability floor in ``[0, 1)`` (validated at call time by the op); 0 gives the exact gradient.

    Shapes: ``forward(z, target)``: ``z`` ``c[..., C]``, ``target`` ``i[...]`` (``z.shape[:-1]``) -> ``r[]``.

    Raises:
        As :func:`cnet.core.ops.reference.born_cross_entropy`.

    Source: CNet paper sections 3 and 9; papers/NOTES.md "Born cross-entropy".
    """

    def __init__(self, floor: float = 0.0) -> None:
        super().__init__()
        self.floor = floor

    def forward(self, z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss over all positions of ``z`` (``c[..., C]``) against ``target`` (``i[...]``), ``r[]`` nats."""
        return ops.born_cross_entropy(z, target, floor=self.floor)

    def extra_repr(self) -> str:
        return f"floor={self.floor}"
