"""Rotary position embedding as a complex phase rotation (CNet's ``RotaryEmbed``).

Each complex feature ``k`` of the token at position ``t`` is turned by the angle ``t * base^(-k/D)``, one
frequency per complex feature (papers/NOTES.md, "RotaryEmbed"). The rotation is a unit-modulus multiplier, so a
product ``q_t conj(k_s)`` of two rotated vectors depends only on ``t - s``.
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex

__all__ = ["rotary", "EXAMPLES"]


def _phasors(length: int, dim: int, base: float, offset: int, dtype: torch.dtype, device) -> torch.Tensor:
    """``c[T, D]`` unit phasors ``exp(i (t + offset) base^(-k/D))``; angles formed in float64, then cast."""
    pos = torch.arange(length, dtype=torch.float64, device=device) + offset
    freq = base ** (-torch.arange(dim, dtype=torch.float64, device=device) / dim)
    angle = pos[:, None] * freq[None, :]
    return torch.polar(torch.ones_like(angle), angle).to(dtype)


class _Rotary(torch.autograd.Function):
    # y = x * r with the constant phasor r: holomorphic, dy/dx = r, dy/dconj(x) = 0, so
    # grad_x = conj(grad_y) * 0 + grad_y * conj(r).
    @staticmethod
    def forward(ctx, x, base, offset):
        r = _phasors(x.shape[-2], x.shape[-1], base, offset, x.dtype, x.device)
        ctx.save_for_backward(r)
        return x * r

    @staticmethod
    def backward(ctx, grad_out):
        (r,) = ctx.saved_tensors
        return grad_out * r.conj(), None, None


def rotary(x: torch.Tensor, base: float = 10000.0, offset: int = 0) -> torch.Tensor:
    """Rotate every complex feature by a position-dependent phase (rotary position embedding).

    ``y[..., t, k] = x[..., t, k] * exp(i (t + offset) base^(-k/D))`` for ``t < T``, ``k < D``. Applied to the
    queries and keys of an attention head, it makes the score depend on relative position only. For
    ``c[B, H, T, D]`` the frequency ladder runs over the head dim ``D``, so it restarts in every head.

    Args:
        x: ``c[..., T, D]`` complex64 or complex128; positions on dim -2, features on dim -1.
        base: frequency base (> 0); feature ``k`` turns by ``base^(-k/D)`` radians per position.
        offset: absolute position of ``x[..., 0, :]`` (a non-negative int), for streaming.

    Returns:
        ``c[..., T, D]`` of ``x``'s dtype; ``|y| = |x|`` elementwise.

    Raises:
        TypeError: ``x`` is not a complex tensor; ``offset`` is not an int.
        ValueError: ``x`` has fewer than 2 dims; ``base`` is not a positive finite number; ``offset`` < 0.

    Backward: closed form, ``grad_x = grad_y * conj(phasor)``.

    Source: papers/NOTES.md "RotaryEmbed"; CNet README (RotaryEmbed); CNet paper section 11.
    """
    require_complex("rotary", x=x)
    if x.dim() < 2:
        raise ValueError(f"rotary: argument 'x' must be c[..., T, D] (at least 2 dims), got shape {tuple(x.shape)}")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not 0 < base < float("inf"):
        raise ValueError(f"rotary: argument 'base' must be a positive finite number, got {base!r}")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"rotary: argument 'offset' must be an int (a token position), got {type(offset).__name__}")
    if offset < 0:
        raise ValueError(f"rotary: argument 'offset' must be >= 0, got {offset}")
    return _Rotary.apply(x, float(base), offset)


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 5, 4, dtype=torch.complex128, generator=gen).to(dtype=dtype, device=device)
    return (x,), {"base": 100.0, "offset": 3}


EXAMPLES = {"rotary": _example}
