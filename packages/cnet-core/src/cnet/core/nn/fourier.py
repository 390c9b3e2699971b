"""Parameter-free Fourier token mixers: the unitary DFT (FNet style) and the causal DFT (CNet's TriangFourier).

Each layer calls the dispatching op in :mod:`cnet.core.ops` (``dft`` / ``causal_dft``), so a registered backend
replaces the reference transparently. None of them has parameters or buffers.
"""

from __future__ import annotations

import torch

from cnet.core import ops
from cnet.core.ops.reference.fourier import _require_method
from cnet.core.validation import require_complex, require_rank

__all__ = ["FourierMix", "CausalFourierMix", "TriangFourier", "RealCausalFourierMix"]


class FourierMix(torch.nn.Module):
    """Non-causal Fourier mixing: the unitary DFT along one dimension (FNet-style encoder mixer; CNet FourierTrans).

    ``y = dft(x, dim)``, ``y_p = N^-1/2 sum_q x_q exp(-2 pi i p q / N)`` (papers/NOTES.md, DFT sign).

    Args:
        dim: the dimension mixed (default ``-1``); checked against the input at call time.

    Shapes:
        input ``c[..., N, ...]`` complex64 or complex128; output the same shape and dtype.

    Raises (on call):
        TypeError: the input is real, or ``dim`` is not an int. IndexError: ``dim`` is out of range for the input.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.dft(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class CausalFourierMix(torch.nn.Module):
    """Causal Fourier token mixer, CNet's TriangFourier (CNet paper section 6, Eq. (6); section 11.2).

    Applies :func:`cnet.core.ops.causal_dft`, ``y_k = N^-1/2 sum_{j <= k} x_j exp(-2 pi i j k / N)``.

    * ``flatten=True`` (CNet's language-model mixer, papers/NOTES.md "Causal Fourier mixer"): the input is read as
      one token-major stream of length ``N = T * E`` per batch row, transformed, and reshaped back. Stream position
      ``t * E + e`` depends only on positions ``<= t * E + e``, so output token ``t`` depends only on tokens ``<= t``.
    * ``flatten=False``: the transform runs along the token axis, ``N = T``, separately for every feature.

    Args:
        method: ``"bluestein"`` (O(N log N), default) or ``"direct"`` (O(N^2) masked sum).
        flatten: mix the flattened ``T * E`` stream (default) or along tokens per feature.

    Shapes:
        input ``c[B, T, E]`` complex64 or complex128; output ``c[B, T, E]``, same dtype.

    Raises:
        ValueError: bad ``method`` (at construction); an input that is not 3-D (on call).
        TypeError: a real input (on call).
    """

    def __init__(self, method: str = "bluestein", flatten: bool = True) -> None:
        super().__init__()
        _require_method("CausalFourierMix", method)
        self.method = method
        self.flatten = bool(flatten)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_complex("CausalFourierMix", x=x)
        require_rank("CausalFourierMix", 3, "c[B, T, E]", x=x)
        if not self.flatten:
            return ops.causal_dft(x, dim=-2, method=self.method)
        b, t, e = x.shape
        return ops.causal_dft(x.reshape(b, t * e), dim=-1, method=self.method).reshape(b, t, e)

    def extra_repr(self) -> str:
        return f"method={self.method!r}, flatten={self.flatten}"


TriangFourier = CausalFourierMix
"""CNet's name for :class:`CausalFourierMix`."""


class RealCausalFourierMix(torch.nn.Module):
    """Real-part causal Fourier mix along tokens, the mixer of CNet's real-valued twin FNet (CNet paper section 11.2).

    ``y[b, :, e] = Re(causal_dft(x[b, :, e]))``, i.e. ``y_k = N^-1/2 sum_{j <= k} x_j cos(2 pi j k / N)`` with
    ``N = T``. The input is promoted to complex (float32 -> complex64, float64 -> complex128) and the gradient flows
    through :func:`cnet.core.ops.causal_dft`'s adjoint.

    Args:
        method: ``"bluestein"`` (default) or ``"direct"``, as for :func:`cnet.core.ops.causal_dft`.

    Shapes:
        input ``r[B, T, E]`` floating point; output ``r[B, T, E]`` in the real dtype of the promoted complex type
        (float32 for float16 / bfloat16 / float32 input, float64 for float64 input).

    Raises:
        ValueError: bad ``method`` (at construction); an input that is not 3-D (on call).
        TypeError: an input that is not a real floating-point tensor (on call).
    """

    def __init__(self, method: str = "bluestein") -> None:
        super().__init__()
        _require_method("RealCausalFourierMix", method)
        self.method = method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"RealCausalFourierMix: argument 'x' must be a real floating-point tensor, got {got}")
        require_rank("RealCausalFourierMix", 3, "r[B, T, E]", x=x)
        z = x.to(torch.promote_types(x.dtype, torch.complex64))
        return ops.causal_dft(z, dim=-2, method=self.method).real

    def extra_repr(self) -> str:
        return f"method={self.method!r}"
