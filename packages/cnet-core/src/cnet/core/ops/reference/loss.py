"""Born-rule cross-entropy: the output is an amplitude vector, class probabilities are ``|z_k|^2 / ||z||^2``.

An optional probability floor tames the ``1/|z_y|`` growth of the gradient on examples whose target amplitude is
nearly zero; it changes the gradient only, never the reported loss. Source: CNet paper section 9 ("A probability
floor for the Born-rule loss"); papers/NOTES.md "Born cross-entropy".
"""

from __future__ import annotations

import torch

from cnet.core.validation import require_complex

__all__ = ["born_cross_entropy", "EXAMPLES"]


class _BornCrossEntropy(torch.autograd.Function):
    # Per position, with P = |z_y|^2 and S = ||z||^2: L = log S - log P, a real function of z, so
    #   dL/dconj(z_j) = z_j / S - [j = y] z_y / P   and   grad_z = 2 dL/dconj(z) (PyTorch convention),
    # scaled by the upstream real scalar and by 1/N for the mean over N positions.
    # The floor replaces P by max(P, floor * S) here only; with floor = 0 that max returns P itself (P >= 0),
    # so the exact gradient comes out bit for bit.
    @staticmethod
    def forward(ctx, z, target, floor):
        power = z.real.square() + z.imag.square()
        total = power.sum(-1)
        picked = power.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        ctx.save_for_backward(z, target, total, picked)
        ctx.floor = floor
        return (total.log() - picked.log()).mean()

    @staticmethod
    def backward(ctx, grad_out):
        z, target, total, picked = ctx.saved_tensors
        scale = 2 * grad_out / target.numel()
        picked = torch.maximum(picked, ctx.floor * total)
        grad = z * (scale / total).unsqueeze(-1)
        idx = target.unsqueeze(-1)
        grad = grad.scatter_add(-1, idx, -z.gather(-1, idx) * (scale / picked).unsqueeze(-1))
        return grad, None, None


def born_cross_entropy(z: torch.Tensor, target: torch.Tensor, floor: float = 0.0) -> torch.Tensor:
    """Mean Born-rule negative log-likelihood of integer targets under amplitude vectors, in nats.

    ``loss = mean over positions of -log(|z_y|^2 / sum_k |z_k|^2)``. With ``floor > 0`` the backward uses
    ``max(|z_y|^2, floor * ||z||^2)`` in place of ``|z_y|^2``, which bounds each position's gradient norm by
    ``(2 / sqrt(||z||^2)) (1 + 1 / sqrt(floor)) / N``; the returned value is always the exact loss. ``floor = 0``
    gives the exact gradient bit for bit. A zero target amplitude gives an infinite loss (and, without a floor,
    a non-finite gradient).

    Args:
        z: ``c[..., C]`` amplitudes (complex64 or complex128), ``C`` classes on the last dim.
        target: ``i[...]`` class ids in ``[0, C)``, shape ``z.shape[:-1]`` (any integer dtype).
        floor: probability floor in ``[0, 1)`` acting on the gradient only.

    Returns:
        ``r[]`` in nats, of ``z``'s real dtype.

    Raises:
        TypeError: ``z`` is not complex; ``target`` is not an integer tensor.
        ValueError: ``z`` is 0-dim, has ``C = 0`` or has no positions (a 0 in ``...``); ``target`` has the wrong
            shape or an id outside ``[0, C)``; ``floor`` is not in ``[0, 1)``.

    Backward: closed form (see ``_BornCrossEntropy``).

    Source: CNet paper sections 3 and 9; papers/NOTES.md "Born cross-entropy".
    """
    require_complex("born_cross_entropy", z=z)
    if z.dim() < 1 or z.shape[-1] == 0:
        raise ValueError(f"born_cross_entropy: argument 'z' must be c[..., C] with C >= 1, got shape {tuple(z.shape)}")
    if z.numel() == 0:
        raise ValueError(f"born_cross_entropy: argument 'z' holds no positions (shape {tuple(z.shape)}); the mean "
                         "loss over zero positions is undefined")
    if not isinstance(target, torch.Tensor) or target.is_floating_point() or target.is_complex() \
            or target.dtype == torch.bool:
        got = target.dtype if isinstance(target, torch.Tensor) else type(target).__name__
        raise TypeError(f"born_cross_entropy: argument 'target' must be an integer tensor of class ids, got {got}")
    if target.shape != z.shape[:-1]:
        raise ValueError(f"born_cross_entropy: argument 'target' must have shape z.shape[:-1] = {tuple(z.shape[:-1])}, "
                         f"got {tuple(target.shape)}")
    n_classes = z.shape[-1]
    if int(target.min()) < 0 or int(target.max()) >= n_classes:
        raise ValueError(f"born_cross_entropy: argument 'target' must hold ids in [0, {n_classes}), got values in "
                         f"[{int(target.min())}, {int(target.max())}]")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor < 1:
        raise ValueError(f"born_cross_entropy: argument 'floor' must be a number in [0, 1), got {floor!r}")
    return _BornCrossEntropy.apply(z, target.long(), float(floor))


def _example(dtype: torch.dtype, device, seed: int):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(3, 5, 7, dtype=torch.complex128, generator=gen)
    target = torch.randint(0, 7, (3, 5), generator=gen)
    return (z.to(dtype=dtype, device=device), target.to(device)), {"floor": 0.0}


EXAMPLES = {"born_cross_entropy": _example}
