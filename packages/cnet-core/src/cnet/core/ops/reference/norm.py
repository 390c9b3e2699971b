"""Reference per-token complex RMS normalisation (CNet's TokenNorm) with its closed-form Wirtinger backward."""

from __future__ import annotations

import torch

from cnet.core.ops.reference.elementwise import _randc
from cnet.core.validation import require_complex

__all__ = ["token_norm", "EXAMPLES"]


class _TokenNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        r = torch.sqrt(x.abs().square().mean(dim=-1, keepdim=True) + eps)
        ctx.save_for_backward(x, r)
        return x / r

    @staticmethod
    def backward(ctx, grad_out):
        x, r = ctx.saved_tensors
        d = x.shape[-1]
        # Paper: dL/dconj(x) = dL/dconj(y) / r - x T / (2 d r^3), T = sum_i (dL/dy_i x_i + dL/dconj(y_i) conj(x_i))
        # = Re sum_i g_i conj(x_i) with g = grad_out = 2 dL/dconj(y); doubling both sides gives PyTorch's form.
        t = (grad_out * x.conj()).real.sum(dim=-1, keepdim=True)
        return grad_out / r - x * (t / (d * r**3)), None


def token_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Divide each token by its root-mean-power: ``y = x / r``, ``r = sqrt(mean_d |x_d|^2 + eps)``; no affine.

    Backward (CNet paper section 5): with ``T = sum_i (dL/dy_i x_i + dL/dconj(y_i) conj(x_i))`` (real),
    ``dL/dconj(x_i) = (1/r) dL/dconj(y_i) - x_i T / (2 d r^3)``; in PyTorch's convention (``g = 2 dL/dconj(y)``)
    ``grad_x = g / r - x Re(sum_i g_i conj(x_i)) / (d r^3)``.

    Args:
        x: ``c[..., d]`` complex tensor; the mean runs over the last dimension (``d >= 1``).
        eps: ``>= 0`` added to the mean power (same units as ``|x|^2``); 0 makes an all-zero token NaN.

    Returns:
        ``c[..., d]`` same shape and dtype; each token has mean power ``mean_d |y_d|^2 = p / (p + eps)``.

    Raises:
        TypeError: ``x`` is not complex. ValueError: ``x`` has no dimensions or an empty last one; ``eps < 0``.

    Source: CNet paper section 5 (TokenNorm); papers/NOTES.md "TokenNorm".
    """
    require_complex("token_norm", x=x)
    if x.dim() < 1 or x.shape[-1] == 0:
        raise ValueError(f"token_norm: argument 'x' must be c[..., d] with d >= 1, got shape {tuple(x.shape)}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"token_norm: argument 'eps' must be a number >= 0, got {eps!r}")
    return _TokenNorm.apply(x, float(eps))


def _token_norm_example(dtype, device, seed):
    return (_randc(dtype, device, seed, 2, 3, 5),), {"eps": 1e-5}


EXAMPLES = {"token_norm": _token_norm_example}
