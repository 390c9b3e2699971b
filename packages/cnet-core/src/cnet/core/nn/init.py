"""Initialisers for complex parameters.

Source: papers/NOTES.md, "Default init": fresh weights have independent N(0, 0.02^2) real and imaginary parts
(CNet's ``-init_std 0.02``).
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex

__all__ = ["complex_normal_"]


def complex_normal_(tensor: torch.Tensor, std: float = 0.02, generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill a complex tensor in place with independent N(0, std^2) real and imaginary parts.

    Each part has standard deviation ``std``, so ``E|z|^2 = 2 std^2``.

    Args:
        tensor: ``c[...]`` complex tensor (a parameter is fine; no gradient is recorded).
        std: standard deviation of each of the real and imaginary parts, ``>= 0``.
        generator: optional :class:`torch.Generator` on ``tensor``'s device, for reproducible draws.

    Returns:
        ``tensor`` itself.

    Raises:
        TypeError: ``tensor`` is not complex. ValueError: ``std`` is negative.

    Source: papers/NOTES.md, "Default init".
    """
    require_complex("complex_normal_", tensor=tensor)
    if not std >= 0:
        raise ValueError(f"complex_normal_: argument 'std' must be >= 0, got {std}")
    with torch.no_grad():
        torch.view_as_real(tensor).normal_(0.0, std, generator=generator)
    return tensor
