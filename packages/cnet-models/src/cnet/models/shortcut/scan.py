"""Recurrence helpers of the quantum-shortcut models: the Cayley phase, the chunked complex scan, a real scan.

* :func:`cayley_phase` turns a real angle parameter ``phi`` into the unit-modulus transition phase
  ``lambda = (1 + i phi) / (1 - i phi)`` of H-Mamba (paper section 5.2, eq. 3).
* :func:`chunked_scan` evaluates ``h_t = a_t h_{t-1} + b_t`` in chunks of ``chunk`` steps (paper section 5.3, chunk
  64) from three calls of :func:`cnet.core.ops.complex_scan`, which carries the explicit Wirtinger backward. It is
  exact: no division by running products (the paper's closed form ``P_m (psi_s + sum_r P_r^-1 b_{s+r})`` divides,
  which fails when a gate underflows to 0); chunking only changes the evaluation order.
* :func:`real_scan` is the same recurrence on real tensors, for the real Mamba twin's selective scan
  (``a_t = exp(-dt_t A)``), with its adjoint written out.

Source: quantum-shortcut paper sections 5.2-5.3; papers/NOTES.md "Quantum-shortcut models".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cnet.core import ops

__all__ = ["cayley_phase", "chunked_scan", "real_scan"]


def cayley_phase(phi: torch.Tensor) -> torch.Tensor:
    """The Cayley map of a real angle parameter: ``lambda = (1 + i phi) / (1 - i phi)``, ``|lambda| = 1``.

    Evaluated as ``exp(2 i arctan(phi))``, the same number (``arg lambda = 2 arctan phi``): the rational form
    overflows for ``|phi| > ~1e19`` in float32 (``phi^2`` becomes inf and the quotient NaN), the polar form holds
    ``|lambda| = 1`` to rounding for every finite or infinite ``phi`` (``phi -> +-inf`` gives ``lambda -> -1``).

    Args:
        phi: ``r[...]`` float32 or float64 (other real dtypes are computed in float32).

    Returns:
        ``c[...]`` complex64 (complex128 for float64 input) with modulus 1.

    Raises:
        TypeError: ``phi`` is not a real floating tensor.

    Source: quantum-shortcut paper section 5.2 (eq. 3, the diagonal Cayley / Crank-Nicolson phase); NOTES.md.
    """
    if not isinstance(phi, torch.Tensor) or not phi.is_floating_point():
        raise TypeError(f"cayley_phase: 'phi' must be a real floating tensor r[...], got "
                        f"{getattr(phi, 'dtype', type(phi).__name__)}")
    if phi.dtype not in (torch.float32, torch.float64):
        phi = phi.float()
    angle = 2 * torch.atan(phi)
    return torch.polar(torch.ones_like(angle), angle)


def chunked_scan(a: torch.Tensor, b: torch.Tensor, initial_state: torch.Tensor | None = None,
                 chunk: int = 64) -> torch.Tensor:
    """``h_t = a_t h_{t-1} + b_t`` along dim 1, evaluated chunk by chunk (``h_{-1}`` = ``initial_state`` or 0).

    Two levels, all through :func:`cnet.core.ops.complex_scan` (explicit Wirtinger backward): inside every chunk
    of ``L = chunk`` steps, in parallel over chunks, the local states ``u`` (zero start) and the running products
    ``P_m = a_{s+1} ... a_{s+m}``; across chunks the entering states ``H_c = P_L^(c) H_{c-1} + u_L^(c)``; then
    ``h = u + P * H_(c-1)``. A tail shorter than ``L`` is padded with ``a = 1, b = 0`` (it cannot touch earlier
    steps). ``T <= chunk`` is a single scan.

    Args:
        a: ``c[B, T, ...]`` transition coefficients, complex64 or complex128.
        b: ``c[B, T, ...]`` inputs, same shape and dtype.
        initial_state: ``c[B, ...]`` state before the first step, or ``None`` (zeros). Differentiable.
        chunk: chunk length ``L`` (>= 1).

    Returns:
        ``c[B, T, ...]`` the states ``h_0 .. h_{T-1}``.

    Raises:
        ValueError: ``chunk`` < 1; TypeError / ValueError: as :func:`cnet.core.ops.complex_scan` for bad tensors.

    Source: quantum-shortcut paper section 5.3 (chunked scan, chunk 64); NOTES.md.
    """
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunked_scan: 'chunk' must be an int >= 1, got {chunk!r}")
    if not isinstance(a, torch.Tensor) or a.dim() < 2 or a.shape[1] <= chunk:
        return ops.complex_scan(a, b, initial_state)
    bsz, t = a.shape[:2]
    rest = tuple(a.shape[2:])
    pad = -t % chunk
    if pad:
        widths = (0, 0) * len(rest) + (0, pad)
        a = F.pad(a, widths, value=1.0)
        b = F.pad(b, widths)
    nc = a.shape[1] // chunk
    a_c = a.reshape(bsz * nc, chunk, *rest)
    b_c = b.reshape(bsz * nc, chunk, *rest)
    local = ops.complex_scan(a_c, b_c)                                        # zero state entering each chunk
    prods = ops.complex_scan(a_c, torch.zeros_like(b_c), a_c.new_ones((bsz * nc, *rest)))  # P_m
    ends = ops.complex_scan(prods[:, -1].reshape(bsz, nc, *rest), local[:, -1].reshape(bsz, nc, *rest),
                            initial_state)                                    # true state after each chunk
    h0 = a.new_zeros((bsz, 1, *rest)) if initial_state is None else initial_state[:, None]
    entering = torch.cat([h0, ends[:, :-1]], dim=1).reshape(bsz * nc, 1, *rest)
    h = local + prods * entering
    return h.reshape(bsz, nc * chunk, *rest)[:, :t]


def _doubling(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``h_t = a_t h_{t-1} + b_t`` along dim 1 from 0 by recursive doubling (``ceil(log2 T)`` rounds)."""
    t, step = a.shape[1], 1
    while step < t:
        b = torch.cat([b[:, :step], a[:, step:] * b[:, :-step] + b[:, step:]], dim=1)
        a = torch.cat([a[:, :step], a[:, step:] * a[:, :-step]], dim=1)
        step *= 2
    return b


class _RealScan(torch.autograd.Function):
    # Adjoint of h_t = a_t h_{t-1} + b_t: g_t = dL/dh_t + a_{t+1} g_{t+1} (backwards), dL/db_t = g_t,
    # dL/da_t = g_t h_{t-1} with h_{-1} = 0; the backward recurrence is the same scan on the reversed sequence.
    @staticmethod
    def forward(ctx, a, b):
        h = _doubling(a, b)
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h = ctx.saved_tensors
        coef = torch.cat([a[:, 1:], torch.zeros_like(a[:, :1])], dim=1)
        g = _doubling(coef.flip(1), grad_h.flip(1)).flip(1)
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
        return g * h_prev, g


def real_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Real elementwise linear recurrence ``h_t = a_t h_{t-1} + b_t`` along dim 1 from ``h_{-1} = 0``.

    The selective scan of the real Mamba twin (``a = exp(-dt A)``, ``b = dt B x``). Parallel prefix scan by
    recursive doubling; the backward is the adjoint recurrence run by the same scan.

    Args:
        a: ``r[B, T, ...]`` coefficients, float32 or float64.
        b: ``r[B, T, ...]`` inputs, same shape and dtype.

    Returns:
        ``r[B, T, ...]`` states.

    Raises:
        TypeError: not real floating tensors of one dtype. ValueError: shapes differ or fewer than 2 dims / T = 0.

    Source: Mamba's selective scan (Gu and Dao 2023), the real twin of quantum-shortcut paper section 5.7.
    """
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"real_scan: '{name}' must be a real floating tensor r[B, T, ...], got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
    if a.dtype != b.dtype:
        raise TypeError(f"real_scan: 'a' and 'b' must share one dtype, got {a.dtype}, {b.dtype}")
    if a.shape != b.shape or a.dim() < 2 or a.shape[1] == 0:
        raise ValueError(f"real_scan: need equal shapes r[B, T, ...] with T >= 1, got {tuple(a.shape)}, "
                         f"{tuple(b.shape)}")
    return _RealScan.apply(a, b)
