"""Elementwise complex linear recurrence ``h_t = a_t h_{t-1} + b_t`` (a diagonal state-space scan).

This is the substrate of the complex phase-state recurrences (H-Mamba's ``a_t = alpha_t lambda_t``, LRU/PCR's
``lambda``): every channel runs its own first-order recurrence with complex coefficients. The reference evaluates
it with a parallel prefix scan over the affine maps ``h -> a_t h + b_t`` (recursive doubling), and its backward runs
the adjoint recurrence backwards through the same scan. Source: quantum-shortcut paper section 5 (chunked scan);
papers/NOTES.md "Quantum-shortcut models", "LRU".
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex, require_same_shape

__all__ = ["complex_scan", "complex_scan_step", "EXAMPLES"]


def _affine_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``h_t = a_t h_{t-1} + b_t`` along dim 1 from ``h_{-1} = 0``, by recursive doubling (Hillis-Steele).

    After the round with stride ``s``, ``(a_t, b_t)`` is the composition of the maps ``t-2s+1 .. t``
    (``(a1, b1)`` then ``(a2, b2)`` is ``(a2 a1, a2 b1 + b2)``), so ``ceil(log2 T)`` rounds leave ``b_t = h_t``.
    Only products and sums: exact zeros stay zero, small products underflow to 0 like the sequential loop.
    """
    t = a.shape[1]
    step = 1
    while step < t:
        b = torch.cat([b[:, :step], a[:, step:] * b[:, :-step] + b[:, step:]], dim=1)
        a = torch.cat([a[:, :step], a[:, step:] * a[:, :-step]], dim=1)
        step *= 2
    return b


class _ComplexScan(torch.autograd.Function):
    # h_t = a_t h_{t-1} + b_t is holomorphic in a_t, b_t and h_{t-1} (d h_t/d a_t = h_{t-1}, d/d b_t = 1,
    # d/d h_{t-1} = a_t), so with the total gradient g_t = 2 dL/dconj(h_t) (PyTorch convention) the adjoint
    # recurrence runs backwards: g_t = grad_h_t + conj(a_{t+1}) g_{t+1}, the last step also receiving the gradient
    # of the returned final state. Then grad_b_t = g_t, grad_a_t = g_t conj(h_{t-1}) (h_{-1} = h0) and
    # grad_h0 = conj(a_0) g_0. The backward recurrence is the same scan on the time-reversed sequence.
    @staticmethod
    def forward(ctx, a, b, h0):
        b = torch.cat([b[:, :1] + a[:, :1] * h0[:, None], b[:, 1:]], dim=1)
        h = _affine_scan(a, b)
        ctx.save_for_backward(a, h, h0)
        return h, h[:, -1].clone()

    @staticmethod
    def backward(ctx, grad_h, grad_last):
        a, h, h0 = ctx.saved_tensors
        grad_h = torch.cat([grad_h[:, :-1], grad_h[:, -1:] + grad_last[:, None]], dim=1)
        coef = torch.cat([a[:, 1:].conj(), torch.zeros_like(a[:, :1])], dim=1)
        g = _affine_scan(coef.flip(1), grad_h.flip(1)).flip(1)
        h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1)
        return g * h_prev.conj(), g, a[:, 0].conj() * g[:, 0]


def _check_scan(where: str, a, b, state, name: str, layout: str, time_dim: bool) -> torch.Tensor:
    """Validate ``a``, ``b`` and the state; return the state, zeros when ``None``."""
    require_complex(where, a=a, b=b)
    if a.dim() < (2 if time_dim else 1):
        raise ValueError(f"{where}: argument 'a' must be {layout}, got shape {tuple(a.shape)}")
    require_same_shape(where, a=a, b=b)
    if a.dtype != b.dtype:
        raise TypeError(f"{where}: 'a' and 'b' must share one dtype, got {a.dtype}, {b.dtype}")
    if time_dim and a.shape[1] == 0:
        raise ValueError(f"{where}: argument 'a' has no time steps (T=0), shape {tuple(a.shape)}")
    shape = a.shape[:1] + a.shape[2:] if time_dim else a.shape
    if state is None:
        return a.new_zeros(shape)
    require_complex(where, **{name: state})
    if state.shape != shape:
        raise ValueError(f"{where}: argument '{name}' must be c[B, ...] of shape {tuple(shape)}, "
                         f"got {tuple(state.shape)}")
    if state.dtype != a.dtype:
        raise TypeError(f"{where}: argument '{name}' must have dtype {a.dtype}, got {state.dtype}")
    return state


def complex_scan(a: torch.Tensor, b: torch.Tensor, initial_state: torch.Tensor | None = None,
                 return_state: bool = False):
    """Elementwise complex linear recurrence ``h_t = a_t * h_{t-1} + b_t`` over the time dim.

    ``h_{-1}`` is ``initial_state`` (0 when ``None``); every trailing index is an independent channel. Evaluation:
    a parallel prefix scan of the affine maps (recursive doubling, ``ceil(log2 T)`` vectorised rounds, ``O(T log T)``
    work) rather than chunked cumulative products: it needs no division by running products, so zeros in ``a`` and
    underflow behave as in the sequential loop. Its rounding differs from the loop's only by reassociation.

    Args:
        a: ``c[B, T, ...]`` coefficients, complex64 or complex128.
        b: ``c[B, T, ...]`` inputs, same shape and dtype as ``a``.
        initial_state: ``c[B, ...]`` (``a``'s shape without ``T``) state before the first step, or ``None``.
            Differentiable.
        return_state: also return the last state ``h_{T-1}`` (``c[B, ...]``) to continue the sequence later.

    Returns:
        ``h`` ``c[B, T, ...]``, or ``(h, h_last)`` when ``return_state``.

    Raises:
        TypeError: ``a``, ``b`` or ``initial_state`` is not complex, their dtypes differ, or ``return_state`` is not
            a bool.
        ValueError: ``a`` has fewer than 2 dims or no time steps, ``a`` and ``b`` shapes differ, or
            ``initial_state`` is not ``a``'s shape without the time dim.

    Backward: closed form, the adjoint recurrence ``g_t = grad_h_t + conj(a_{t+1}) g_{t+1}`` run backwards by the
    same scan; ``grad_b = g``, ``grad_a_t = g_t conj(h_{t-1})``, ``grad_initial_state = conj(a_0) g_0``.

    Source: quantum-shortcut paper section 5 (phase-state recurrence, chunked scan); papers/NOTES.md.
    """
    where = "complex_scan"
    h0 = _check_scan(where, a, b, initial_state, "initial_state", "c[B, T, ...]", time_dim=True)
    if not isinstance(return_state, bool):
        raise TypeError(f"{where}: argument 'return_state' must be a bool, got {type(return_state).__name__}")
    h, last = _ComplexScan.apply(a, b, h0)
    return (h, last) if return_state else h


@torch.no_grad()
def complex_scan_step(a: torch.Tensor, b: torch.Tensor, state: torch.Tensor | None = None):
    """One step of :func:`complex_scan`: ``h = a * state + b`` (``state = 0`` when ``None``).

    Fed ``a[:, t], b[:, t]`` for ``t = 0, 1, ...`` it reproduces ``complex_scan``. Decoding only: runs without
    autograd.

    Args:
        a, b: ``c[B, ...]`` the current step's coefficient and input, same shape and dtype.
        state: ``c[B, ...]`` the previous state, or ``None`` at the start.

    Returns:
        ``(h, h)``: the output and the new state, which are the same tensor for this recurrence.

    Raises:
        TypeError, ValueError: as :func:`complex_scan`, for the one-step layout ``c[B, ...]``.
    """
    h = a * _check_scan("complex_scan_step", a, b, state, "state", "c[B, ...]", time_dim=False) + b
    return h, h


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    a = 0.8 * torch.randn(2, 7, 3, dtype=torch.complex128, generator=gen)
    b = torch.randn(2, 7, 3, dtype=torch.complex128, generator=gen)
    h0 = torch.randn(2, 3, dtype=torch.complex128, generator=gen)
    a, b, h0 = (t.to(dtype=dtype, device=device) for t in (a, b, h0))
    return (a, b), {"initial_state": h0}


EXAMPLES = {"complex_scan": _example}
