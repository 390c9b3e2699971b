"""The complex-derivative convention of cnet, written once.

For a real loss ``L`` and a complex tensor ``z = x + i y`` the two Wirtinger derivatives are

    dL/dz      = (dL/dx - i dL/dy) / 2
    dL/dconj z = (dL/dx + i dL/dy) / 2

PyTorch stores ``z.grad = dL/dx + i dL/dy = 2 dL/dconj(z)`` for complex leaves, and the ``grad_out`` handed to a
``torch.autograd.Function.backward`` follows the same convention (``2 dL/dconj(w)`` for the output ``w``).
For ``w = f(z, conj z)`` with local derivatives ``df/dz`` and ``df/dconj z`` the chain rule then reads

    grad_in = conj(grad_out) * df/dconj(z) + grad_out * conj(df/dz)            (DESIGN.md section 2)

:func:`wirtinger_backward` is that line; :func:`elementwise` builds a whole autograd op from ``f`` and its two
derivatives; :func:`grads` returns the pair ``(dL/dz, dL/dconj z)`` of a real loss. docs/wirtinger.md derives
the rule and lists the closed-form adjoints used by the non-elementwise reference ops.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["grads", "wirtinger_backward", "elementwise", "ElementwiseOp"]


def grads(loss: torch.Tensor, z: torch.Tensor, *, retain_graph: bool = False, create_graph: bool = False):
    """Both Wirtinger derivatives of a real scalar ``loss`` with respect to a complex tensor ``z``.

    Args:
        loss: ``r[]`` real scalar that depends on ``z`` through autograd.
        z: ``c[...]`` complex tensor with ``requires_grad=True``.
        retain_graph, create_graph: passed to :func:`torch.autograd.grad`.

    Returns:
        ``(dL/dz, dL/dconj(z))``, two ``c[...]`` tensors shaped like ``z``; for a real loss they are conjugates.

    Raises:
        TypeError: ``loss`` is not a real scalar, or ``z`` is not complex.
        ValueError: ``z`` does not require grad, or ``loss`` does not depend on ``z`` through autograd.
    """
    if loss.is_complex() or loss.numel() != 1:
        raise TypeError(f"grads: 'loss' must be a real scalar tensor, got dtype {loss.dtype} shape {tuple(loss.shape)}")
    if not z.is_complex():
        raise TypeError(f"grads: 'z' must be a complex tensor, got {z.dtype}")
    if not z.requires_grad:
        raise ValueError("grads: argument 'z' must require grad (call z.requires_grad_() before computing the loss)")
    g = None
    if loss.requires_grad:  # else autograd.grad raises its own RuntimeError: no graph at all, so no dependence on z
        (g,) = torch.autograd.grad(loss, z, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    if g is None:
        raise ValueError("grads: 'loss' does not depend on argument 'z' (z is not in the loss's autograd graph)")
    d_conj = g / 2
    return d_conj.conj(), d_conj


def wirtinger_backward(grad_out: torch.Tensor, df_dz: torch.Tensor | None, df_dconj: torch.Tensor | None):
    """Chain rule for one input of an elementwise complex map, in PyTorch's gradient convention.

    Args:
        grad_out: ``c[...]`` the incoming gradient ``2 dL/dconj(w)``.
        df_dz: ``c[...]`` local derivative ``dw/dz`` (``None`` when it is zero).
        df_dconj: ``c[...]`` local derivative ``dw/dconj(z)`` (``None`` for a holomorphic map).

    Returns:
        ``c[...]`` the outgoing gradient ``2 dL/dconj(z)`` = ``conj(grad_out) df/dconj(z) + grad_out conj(df/dz)``.
    """
    out = None
    if df_dz is not None:
        out = grad_out * df_dz.conj()
    if df_dconj is not None:
        term = grad_out.conj() * df_dconj
        out = term if out is None else out + term
    if out is None:
        return torch.zeros_like(grad_out)
    return out


class ElementwiseOp:
    """A complex elementwise map declared by ``f``, ``df/dz`` and ``df/dconj(z)``.

    Calling the object applies ``f`` with a backward assembled by :func:`wirtinger_backward`.
    Built by :func:`elementwise`; input and output are ``c[...]`` of the same shape and dtype.
    """

    def __init__(self, name: str, f: Callable, df_dz: Callable | None, df_dconj: Callable | None, doc: str = ""):
        self.name = name
        self.f, self.df_dz, self.df_dconj = f, df_dz, df_dconj
        self.__doc__ = doc or f"Elementwise complex op {name!r}."
        op = self

        class _Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return op.f(z)

            @staticmethod
            def backward(ctx, grad_out):
                (z,) = ctx.saved_tensors
                a = op.df_dz(z) if op.df_dz is not None else None
                b = op.df_dconj(z) if op.df_dconj is not None else None
                return wirtinger_backward(grad_out, a, b)

        _Fn.__name__ = f"{name}_wirtinger"
        self._fn = _Fn

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        from cnet.core.validation import require_complex

        require_complex(self.name, z=z)
        return self._fn.apply(z)

    def __repr__(self) -> str:
        return f"ElementwiseOp({self.name!r})"


def elementwise(name: str, f: Callable, df_dz: Callable | None, df_dconj: Callable | None, doc: str = ""):
    """Declare an elementwise complex op from its value and its two Wirtinger derivatives.

    Args:
        name: op name, used in error messages.
        f: ``c[...] -> c[...]`` the map itself.
        df_dz: ``c[...] -> c[...]`` the derivative ``df/dz`` at each element, or ``None`` if identically zero.
        df_dconj: ``c[...] -> c[...]`` the derivative ``df/dconj(z)``, or ``None`` for a holomorphic map.
        doc: docstring of the resulting op.

    Returns:
        :class:`ElementwiseOp`, callable on a complex tensor; raises ``TypeError`` on a real one.

    Example:
        >>> square = elementwise("square", lambda z: z * z, lambda z: 2 * z, None)
    """
    return ElementwiseOp(name, f, df_dz, df_dconj, doc)
