"""Reference elementwise complex ops: Hadamard product, split GELU (CGelu) and complex dropout.

Each has an explicit Wirtinger backward (DESIGN.md section 2); ``cgelu``'s comment shows how its two Wirtinger
derivatives reduce to a product on the real and imaginary planes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cnet.core.validation import require_complex

__all__ = ["hadamard", "cgelu", "complex_dropout", "EXAMPLES"]


def _sum_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a broadcast gradient back to ``shape``: leading extra dims, then dims that were size 1."""
    lead = grad.dim() - len(shape)
    if lead:
        grad = grad.sum(dim=tuple(range(lead)))
    ones = tuple(d for d, n in enumerate(shape) if n == 1 and grad.shape[d] != 1)
    return grad.sum(dim=ones, keepdim=True) if ones else grad


class _Hadamard(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        gx = _sum_to(grad_out * y.conj(), x.shape) if ctx.needs_input_grad[0] else None
        gy = _sum_to(grad_out * x.conj(), y.shape) if ctx.needs_input_grad[1] else None
        return gx, gy


def hadamard(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Elementwise complex product ``w = x * y`` with PyTorch broadcasting.

    Holomorphic in both inputs (``dw/dx = y``, ``dw/dy = x``), so with ``g = 2 dL/dconj(w)`` the backward is
    ``grad_x = g conj(y)`` and ``grad_y = g conj(x)``, each summed over the dimensions along which that input
    was broadcast. A Hadamard product in the frequency domain is a circular convolution (spectral filter).

    Args:
        x: ``c[...]`` complex tensor.
        y: ``c[...]`` complex tensor broadcastable with ``x``.

    Returns:
        ``c[broadcast shape]``.

    Raises:
        TypeError: an argument is not complex. ValueError: the shapes do not broadcast.

    Source: CNet paper section 3 (Hadamard layer).
    """
    require_complex("hadamard", x=x, y=y)
    try:
        torch.broadcast_shapes(x.shape, y.shape)
    except RuntimeError:
        shapes = f"'x' {tuple(x.shape)} and 'y' {tuple(y.shape)}"
        raise ValueError(f"hadamard: arguments {shapes} do not broadcast") from None
    return _Hadamard.apply(x, y)


class _SplitGelu(torch.autograd.Function):
    # f(a + ib) = g(a) + i g(b) has df/dz = (g'(a) + g'(b)) / 2 and df/dconj(z) = (g'(a) - g'(b)) / 2, both real.
    # Put into grad_in = conj(G) df/dconj(z) + G conj(df/dz) with G = Gr + i Gi, the cross terms cancel:
    # grad_in = g'(a) Gr + i g'(b) Gi. That planar product is evaluated with ATen's fused GELU derivative on the
    # interleaved (re, im) view, which is contiguous, so forward and backward run vectorised.
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.view_as_complex(F.gelu(torch.view_as_real(z.resolve_conj()), approximate="tanh"))

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        g = torch.ops.aten.gelu_backward(torch.view_as_real(grad_out.resolve_conj().contiguous()),
                                         torch.view_as_real(z.resolve_conj()), approximate="tanh")
        return torch.view_as_complex(g)


def cgelu(x: torch.Tensor) -> torch.Tensor:
    """Split GELU: the tanh-form GELU ``g`` applied to the real and imaginary parts separately.

    ``f(a + ib) = g(a) + i g(b)`` with ``g(a) = a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))``. Not holomorphic:
    ``df/dz = (g'(a) + g'(b)) / 2`` and ``df/dconj(z) = (g'(a) - g'(b)) / 2`` (both real); the backward is the
    Wirtinger chain rule with these, which reduces to ``g'(a) Re(grad) + i g'(b) Im(grad)``.

    Args:
        x: ``c[...]`` complex tensor.

    Returns:
        ``c[...]`` same shape and dtype.

    Raises:
        TypeError: ``x`` is not complex.

    Source: papers/NOTES.md "CGelu"; CNet paper section 3 (CGelu).
    """
    require_complex("cgelu", x=x)
    return _SplitGelu.apply(x)


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    def backward(ctx, grad_out):
        (scale,) = ctx.saved_tensors
        return grad_out * scale, None


def complex_dropout(x: torch.Tensor, p: float, training: bool,
                    generator: torch.Generator | int | None = None) -> torch.Tensor:
    """Inverted dropout on complex elements: each element is kept whole or zeroed whole.

    In training, one Bernoulli(1 - p) draw per complex element gives a real mask ``m``; the output is
    ``x * m / (1 - p)``, so its expectation is ``x``. The map is multiplication by a real constant, hence
    holomorphic, and the backward is ``grad_x = grad_out * m / (1 - p)``. Outside training, or with ``p == 0``,
    ``x`` is returned unchanged.

    Args:
        x: ``c[...]`` complex tensor.
        p: drop probability in ``[0, 1)``.
        training: apply dropout only when true (a module passes ``self.training``).
        generator: source of the mask: ``None`` (the global generator), a :class:`torch.Generator` on ``x``'s
            device, or an ``int`` seed that makes the mask a fixed function of ``(seed, shape, device)`` (used by
            the conformance kit, whose checks call the op many times and need the same mask each time).

    Returns:
        ``c[...]`` same shape and dtype as ``x``.

    Raises:
        TypeError: ``x`` is not complex; ``training`` is not a bool. ValueError: ``p`` is not a number in ``[0, 1)``.

    Source: CNet README (ComplexDropout).
    """
    require_complex("complex_dropout", x=x)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise ValueError(f"complex_dropout: argument 'p' must be a number in [0, 1), got {p!r}")
    if not isinstance(training, bool):
        raise TypeError(f"complex_dropout: argument 'training' must be a bool, got {type(training).__name__} "
                        f"{training!r}")
    if not training or p == 0:
        return x
    if isinstance(generator, int):
        generator = torch.Generator(device=x.device).manual_seed(generator)
    mask = torch.empty(x.shape, dtype=x.real.dtype, device=x.device).bernoulli_(1 - p, generator=generator)
    return _Dropout.apply(x, mask / (1 - p))


def _randc(dtype, device, seed, *shape):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=g).to(device)


def _hadamard_example(dtype, device, seed):
    return (_randc(dtype, device, seed, 2, 3, 5), _randc(dtype, device, seed + 1, 3, 1)), {}


def _cgelu_example(dtype, device, seed):
    return (_randc(dtype, device, seed, 3, 5),), {}


def _dropout_example(dtype, device, seed):
    return (_randc(dtype, device, seed, 3, 5), 0.4, True), {"generator": seed}


EXAMPLES = {"hadamard": _hadamard_example, "cgelu": _cgelu_example, "complex_dropout": _dropout_example}
