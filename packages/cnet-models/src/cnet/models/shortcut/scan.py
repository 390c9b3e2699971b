"""Recurrence helpers of the quantum-shortcut models: the Cayley phase, the chunked complex scan, a real scan.

* :func:`cayley_phase` turns a real angle parameter ``phi`` into the unit-modulus transition phase
  ``lambda = (1 + i phi) / (1 - i phi)`` of H-Mamba (paper section 5.2, eq. 3).
* :func:`chunked_scan` evaluates ``h_t = a_t h_{t-1} + b_t`` in chunks of ``chunk`` steps (paper section 5.3, chunk
  64) from three calls of :func:`cnet.core.ops.complex_scan`, which carries the explicit Wirtinger backward. It is
  exact: no division by running products (the paper's closed form ``P_m (psi_s + sum_r P_r^-1 b_{s+r})`` divides,
  which fails when a gate underflows to 0); chunking only changes the evaluation order.
* :func:`real_scan` is the same recurrence on real tensors, for the real Mamba twin's selective scan
  (``a_t = exp(-dt_t A)``), evaluated by a two-level sequential loop (chunks in parallel, then chunk
  boundaries), with its adjoint written out.

Source: quantum-shortcut paper sections 5.2-5.3; papers/NOTES.md "Quantum-shortcut models".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cnet.core import ops
from cnet.core.plugins import registries

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
    steps). ``T <= chunk`` is a single scan, and so is any call that the op registry hands to a backend other
    than the reference (e.g. a Triton kernel on CUDA, which scans the whole sequence in one pass): the chunking
    exists to shorten the reference's log-depth doubling scan (on 2 CPU cores at ``c[8, 1024, 16, 16]``, forward
    and backward: 1.78 s unchunked, 0.61 s at chunk 64, 0.40 s at chunk 32).

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
    if (not isinstance(a, torch.Tensor) or a.dim() < 2 or a.shape[1] <= chunk
            or registries().ops.select("complex_scan", (a, b, initial_state), {})[0] != "reference"):
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


def _two_level(a: torch.Tensor, b: torch.Tensor, chunk: int, reverse: bool = False) -> torch.Tensor:
    """``h_t = a_t h_{t-1} + b_t`` along dim 1 from 0 (``h_t = a_t h_{t+1} + b_t`` from the end with ``reverse``), on
    real tensors without autograd, by two sequential loops over the ``chunk`` positions of a chunk, each vectorised
    over all chunks: the first finds every chunk's local end state (zero start), which with the chunk's product of
    ``a`` gives the state entering each chunk (a loop over the chunks); the second runs every chunk from its
    entering state and writes ``h``. About ``2 chunk + T / chunk`` elementwise kernels, each over ``1 / chunk`` of
    the data; no division and no copy of the inputs (unless ``T`` needs padding to whole chunks)."""
    bsz, t = a.shape[:2]
    rest = tuple(a.shape[2:])
    pad = -t % chunk
    if pad:  # a = 1, b = 0 on the far side of the scan cannot touch the real steps
        widths = (0, 0) * len(rest) + ((pad, 0) if reverse else (0, pad))
        a, b = F.pad(a, widths, value=1.0), F.pad(b, widths)
    nc = a.shape[1] // chunk
    a, b = a.reshape(bsz, nc, chunk, *rest), b.reshape(bsz, nc, chunk, *rest)
    order = list(range(chunk))[::-1] if reverse else list(range(chunk))
    chunks = list(range(nc))[::-1] if reverse else list(range(nc))
    h = torch.empty_like(b)
    h[:, :, order[0]] = b[:, :, order[0]]
    if nc > 1:
        local = b[:, :, order[0]].clone()
        for i in order[1:]:
            torch.addcmul(b[:, :, i], a[:, :, i], local, out=local)
        total = torch.prod(a, dim=2)
        entering = torch.zeros_like(local)
        for prev, c in zip(chunks[:-1], chunks[1:], strict=True):
            torch.addcmul(local[:, prev], total[:, prev], entering[:, prev], out=entering[:, c])
        h[:, :, order[0]].addcmul_(a[:, :, order[0]], entering)
    for prev, i in zip(order[:-1], order[1:], strict=True):
        torch.addcmul(b[:, :, i], a[:, :, i], h[:, :, prev], out=h[:, :, i])
    h = h.reshape(bsz, nc * chunk, *rest)
    return h[:, pad:] if reverse else h[:, :t]


class _RealScan(torch.autograd.Function):
    # Adjoint of h_t = a_t h_{t-1} + b_t: g_t = dL/dh_t + a_{t+1} g_{t+1} (backwards), dL/db_t = g_t,
    # dL/da_t = g_t h_{t-1} with h_{-1} = 0; the backward recurrence is the same scan run from the end.
    @staticmethod
    def forward(ctx, a, b, chunk):
        h = _two_level(a, b, chunk)
        ctx.save_for_backward(a, h)
        ctx.chunk = chunk
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h = ctx.saved_tensors
        coef = torch.cat([a[:, 1:], torch.zeros_like(a[:, :1])], dim=1)
        g = _two_level(coef, grad_h.contiguous(), ctx.chunk, reverse=True)
        grad_a = torch.empty_like(g)
        grad_a[:, 0] = 0
        torch.mul(g[:, 1:], h[:, :-1], out=grad_a[:, 1:])
        return grad_a, g, None


def real_scan(a: torch.Tensor, b: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    """Real elementwise linear recurrence ``h_t = a_t h_{t-1} + b_t`` along dim 1 from ``h_{-1} = 0``.

    The selective scan of the real Mamba twin (``a = exp(dt A)``, ``b = dt B x``, ``r[B, T, d_inner, N]``).
    Evaluated in two levels: loops over the ``chunk`` positions of a chunk, every chunk at once, and a loop over the
    chunks carrying the entering states (only products and sums, so zeros and underflow in ``a`` behave as in the
    sequential loop). About ``2 chunk + T / chunk`` elementwise kernels per call, each over ``1 / chunk`` of the
    data, instead of the ``O(log T)`` full passes of a doubling scan; ``chunk ~ sqrt(T)`` is best (32 at
    T = 1024). The backward is the
    adjoint recurrence run by the same scan from the end. Real coefficients have no use for the complex
    :func:`cnet.core.ops.complex_scan` (it would double every byte moved), so this stays real.

    Args:
        a: ``r[B, T, ...]`` coefficients, float32 or float64.
        b: ``r[B, T, ...]`` inputs, same shape and dtype.
        chunk: positions per chunk (>= 1); an evaluation detail, exact for any value.

    Returns:
        ``r[B, T, ...]`` states.

    Raises:
        TypeError: not real floating tensors of one dtype. ValueError: shapes differ or fewer than 2 dims / T = 0;
        ``chunk`` < 1.

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
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"real_scan: 'chunk' must be an int >= 1, got {chunk!r}")
    return _RealScan.apply(a, b, chunk)
