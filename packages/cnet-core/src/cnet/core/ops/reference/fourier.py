"""Reference Fourier ops: the unitary DFT, its inverse, and the causal (lower-triangular) DFT.

Convention (papers/NOTES.md, "Conventions resolved", DFT sign): along a dimension of length ``N``,

    dft(x)_p        = N^-1/2 sum_q        x_q w^{pq},        w = exp(-2 pi i / N)
    idft(x)_p       = N^-1/2 sum_q        x_q w^{-pq}
    causal_dft(x)_k = N^-1/2 sum_{j <= k} x_j w^{jk}          (CNet paper section 6, Eq. (6): TriangFourier)

All three are holomorphic linear maps ``y = A x``, so each backward is the adjoint ``grad_in = A^H grad_out``
(wirtinger.py): ``idft`` for ``dft``, ``dft`` for ``idft``, and the upper-triangular sum
``g_j = N^-1/2 sum_{k >= j} conj(w^{jk}) grad_k`` for ``causal_dft``. Every backward is itself built from these
autograd functions, so higher derivatives use the same closed forms.

The causal DFT runs in O(N log N) by Bluestein's factorisation (CNet paper section 6, Eqs. (7)-(8)):
``jk = (j^2 + k^2 - (k - j)^2) / 2`` turns the masked sum into a chirp pre-multiply, a causal linear
convolution with the conjugate chirp (zero-padded FFTs of a power-of-two length >= 2N - 1) and a chirp
post-multiply. The chirp ``exp(-i pi k^2 / N)`` is formed from ``k^2 mod 2N`` in float64 so its angle stays
small for long sequences. The adjoint is the same pipeline run on the reversed sequence with the conjugate
chirp. ``method="direct"`` evaluates the masked O(N^2) sum in row blocks of bounded size instead; it is the
oracle the fast form is tested against.
"""

from __future__ import annotations

import math

import torch

from cnet.core.validation import require_complex

__all__ = ["dft", "idft", "causal_dft", "CAUSAL_DFT_METHODS", "EXAMPLES"]

CAUSAL_DFT_METHODS = ("bluestein", "direct")

# Largest number of matrix entries the direct method materialises at once (16 MiB in complex128).
_DIRECT_BLOCK_ENTRIES = 1 << 20


def _check_dim(where: str, x: torch.Tensor, dim) -> int:
    """Validate ``dim`` for a transform of ``x`` and return it as a non-negative index.

    Raises:
        TypeError: ``dim`` is not an int.
        IndexError: ``dim`` is outside ``[-x.dim(), x.dim())``.
        ValueError: the transformed dimension has length 0.
    """
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{where}: argument 'dim' must be an int, got {type(dim).__name__}")
    if not -x.dim() <= dim < x.dim():
        raise IndexError(f"{where}: argument 'dim' = {dim} is out of range for 'x' of shape {tuple(x.shape)} "
                         f"(expected {-x.dim()} <= dim < {x.dim()})")
    dim %= x.dim()
    if x.shape[dim] == 0:
        raise ValueError(f"{where}: dimension {dim} of 'x' (shape {tuple(x.shape)}) is empty; nothing to transform")
    return dim


def _require_method(where: str, method) -> None:
    """Raise ``ValueError`` unless ``method`` names a causal-DFT evaluation method (shared with the layers)."""
    if method not in CAUSAL_DFT_METHODS:
        raise ValueError(f"{where}: argument 'method' must be one of {CAUSAL_DFT_METHODS}, got {method!r}")


def _roots(m: torch.Tensor, period: int) -> torch.Tensor:
    """``exp(-2 pi i m / period)`` for an integer tensor ``m`` already reduced mod ``period``; complex128 on CPU."""
    angle = m.to(torch.float64) * (-2.0 * math.pi / period)
    return torch.polar(torch.ones_like(angle), angle)


def _along(v: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """View the 1-D tensor ``v`` so that it broadcasts along dimension ``dim`` of an ``ndim``-dimensional tensor."""
    return v.view([-1 if d == dim else 1 for d in range(ndim)])


def _bluestein(x: torch.Tensor, dim: int, adjoint: bool) -> torch.Tensor:
    """The causal DFT (or, with ``adjoint``, its upper-triangular adjoint) of ``x`` along ``dim`` in O(N log N).

    With the chirp ``c_k = exp(-i pi k^2 / N)`` (so ``w^{jk} = c_j c_k conj(c_{k-j})``) the forward map is
    ``y = N^-1/2 c * (causal convolution of x c with conj(c))``. The adjoint has the same form with ``c`` replaced
    by ``conj(c)`` and the convolution run on the reversed sequence (a causal sum over ``k >= j``).
    """
    n = x.shape[dim]
    k = torch.arange(n, dtype=torch.int64)
    chirp = _roots(k * k % (2 * n), 2 * n).to(device=x.device, dtype=x.dtype)
    if adjoint:
        chirp = chirp.conj()
    size = 1 << (2 * n - 2).bit_length()  # smallest power of two >= 2n - 1: no wrap-around into outputs 0..n-1
    kernel = torch.fft.fft(chirp.conj(), n=size)
    scaled = _along(chirp * (1.0 / math.sqrt(n)), dim, x.dim())
    a = x * _along(chirp, dim, x.dim())
    if adjoint:
        a = a.flip(dim)
    conv = torch.fft.ifft(torch.fft.fft(a, n=size, dim=dim) * _along(kernel, dim, x.dim()), dim=dim)
    conv = conv.narrow(dim, 0, n)
    if adjoint:
        conv = conv.flip(dim)
    return conv * scaled


def _direct(x: torch.Tensor, dim: int, adjoint: bool) -> torch.Tensor:
    """The causal DFT (or its adjoint) of ``x`` along ``dim`` as an explicit masked matrix product, O(N^2).

    Output positions are produced in blocks of rows so at most ``_DIRECT_BLOCK_ENTRIES`` matrix entries exist at
    a time. Row ``r``, column ``c`` of the matrix is ``N^-1/2 w^{rc}`` masked to ``c <= r`` (forward), or
    ``N^-1/2 conj(w^{rc})`` masked to ``c >= r`` (adjoint).
    """
    n = x.shape[dim]
    x_last = x.movedim(dim, -1)
    cols = torch.arange(n, dtype=torch.int64)
    table = _roots(cols, n) * (1.0 / math.sqrt(n))  # N^-1/2 w^m for m = 0 .. N-1
    rows_per_block = max(1, _DIRECT_BLOCK_ENTRIES // n)
    blocks = []
    for start in range(0, n, rows_per_block):
        rows = torch.arange(start, min(start + rows_per_block, n), dtype=torch.int64)[:, None]
        mat = table[rows * cols % n]
        if adjoint:
            mat = mat.conj() * (cols >= rows)
        else:
            mat = mat * (cols <= rows)
        mat = mat.to(device=x.device, dtype=x.dtype)
        blocks.append((x_last @ mat.transpose(0, 1)).movedim(-1, dim))
    return torch.cat(blocks, dim=dim)


class _DFT(torch.autograd.Function):
    """Unitary DFT (``inverse=False``) or inverse DFT along ``dim``; the backward of each is the other."""

    @staticmethod
    def forward(ctx, x, dim, inverse):
        ctx.dim, ctx.inverse = dim, inverse
        transform = torch.fft.ifft if inverse else torch.fft.fft
        return transform(x, dim=dim, norm="ortho")

    @staticmethod
    def backward(ctx, grad_out):
        return _DFT.apply(grad_out, ctx.dim, not ctx.inverse), None, None


class _CausalDFT(torch.autograd.Function):
    """Causal DFT (``adjoint=False``) or its upper-triangular adjoint along ``dim``; each is the other's backward."""

    @staticmethod
    def forward(ctx, x, dim, method, adjoint):
        ctx.dim, ctx.method, ctx.adjoint = dim, method, adjoint
        evaluate = _bluestein if method == "bluestein" else _direct
        return evaluate(x, dim, adjoint)

    @staticmethod
    def backward(ctx, grad_out):
        return _CausalDFT.apply(grad_out, ctx.dim, ctx.method, not ctx.adjoint), None, None, None


def dft(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Unitary discrete Fourier transform along one dimension.

    ``y_p = N^-1/2 sum_q x_q exp(-2 pi i p q / N)`` with ``N = x.shape[dim]`` (papers/NOTES.md, DFT sign; CNet
    paper section 5, FourierTrans). Equal to ``torch.fft.fft(x, dim=dim, norm="ortho")``; the backward is the
    adjoint, :func:`idft` of the incoming gradient.

    Args:
        x: ``c[..., N, ...]`` complex64 or complex128, any batch shape.
        dim: the dimension transformed (negative counts from the end).

    Returns:
        ``c[..., N, ...]`` same shape, dtype and device as ``x``.

    Raises:
        TypeError: ``x`` is not a complex tensor, or ``dim`` is not an int.
        IndexError: ``dim`` is out of range for ``x``.
        ValueError: ``x`` has length 0 along ``dim``.
    """
    require_complex("dft", x=x)
    return _DFT.apply(x, _check_dim("dft", x, dim), False)


def idft(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Unitary inverse discrete Fourier transform along one dimension.

    ``y_p = N^-1/2 sum_q x_q exp(+2 pi i p q / N)`` with ``N = x.shape[dim]`` (papers/NOTES.md, DFT sign; CNet
    paper section 5, InverseFourierTrans). Equal to ``torch.fft.ifft(x, dim=dim, norm="ortho")``; the backward is
    the adjoint, :func:`dft` of the incoming gradient.

    Args:
        x: ``c[..., N, ...]`` complex64 or complex128, any batch shape.
        dim: the dimension transformed (negative counts from the end).

    Returns:
        ``c[..., N, ...]`` same shape, dtype and device as ``x``.

    Raises:
        TypeError: ``x`` is not a complex tensor, or ``dim`` is not an int.
        IndexError: ``dim`` is out of range for ``x``.
        ValueError: ``x`` has length 0 along ``dim``.
    """
    require_complex("idft", x=x)
    return _DFT.apply(x, _check_dim("idft", x, dim), True)


def causal_dft(x: torch.Tensor, dim: int = -1, method: str = "bluestein") -> torch.Tensor:
    """Causal (lower-triangular) DFT along one dimension: CNet's TriangFourier mixer.

    ``y_k = N^-1/2 sum_{j <= k} x_j w^{jk}``, ``w = exp(-2 pi i / N)``, ``N = x.shape[dim]`` (CNet paper section 6,
    Eq. (6); papers/NOTES.md, "Causal Fourier mixer"). Output ``k`` depends only on inputs ``j <= k``. The backward
    is the upper-triangular adjoint ``g_j = N^-1/2 sum_{k >= j} conj(w^{jk}) grad_k``, evaluated by the same method.

    Args:
        x: ``c[..., N, ...]`` complex64 or complex128, any batch shape.
        dim: the dimension transformed (negative counts from the end).
        method: ``"bluestein"`` (O(N log N): chirp, causal convolution by zero-padded FFTs of a power-of-two length
            >= 2N - 1, chirp; section 6, Eqs. (7)-(8)) or ``"direct"`` (the masked O(N^2) sum, evaluated in row
            blocks of bounded memory).

    Returns:
        ``c[..., N, ...]`` same shape, dtype and device as ``x``.

    Raises:
        TypeError: ``x`` is not a complex tensor, or ``dim`` is not an int.
        IndexError: ``dim`` is out of range for ``x``.
        ValueError: ``method`` is not one of :data:`CAUSAL_DFT_METHODS`, or ``x`` has length 0 along ``dim``.
    """
    require_complex("causal_dft", x=x)
    _require_method("causal_dft", method)
    return _CausalDFT.apply(x, _check_dim("causal_dft", x, dim), method, False)


def _example_input(shape, dtype, device, seed) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) + 1j * torch.randn(shape, generator=gen,
                                                                                   dtype=torch.float64)
    return x.to(device=device, dtype=dtype)


EXAMPLES = {
    "dft": lambda dtype, device, seed: ((_example_input((2, 7), dtype, device, seed),), {"dim": -1}),
    "idft": lambda dtype, device, seed: ((_example_input((5, 3), dtype, device, seed),), {"dim": 0}),
    "causal_dft": lambda dtype, device, seed: ((_example_input((2, 9, 2), dtype, device, seed),),
                                               {"dim": 1, "method": "bluestein"}),
}
