"""Reference complex linear projection and embedding lookup, with closed-form Wirtinger backwards.

Both maps are holomorphic in every complex input (no conjugation in the forward), so each backward is the
adjoint ``grad_in = grad_out * conj(df/dz)`` summed over the places an input is used (DESIGN.md section 2).
"""

from __future__ import annotations

import torch

from cnet.core.ops.reference.elementwise import _randc
from cnet.core.validation import require_complex, require_rank

__all__ = ["linear", "embedding", "EXAMPLES"]


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        y = x @ weight.transpose(0, 1)
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = grad_out @ weight.conj()
        g2 = grad_out.reshape(-1, weight.shape[0])
        if ctx.needs_input_grad[1]:
            gw = g2.transpose(0, 1) @ x.reshape(-1, weight.shape[1]).conj()
        if ctx.needs_input_grad[2]:
            gb = g2.sum(0)
        return gx, gw, gb


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Complex affine map of the last dimension, ``y = x W^T + b``, with no conjugation.

    ``y[..., j] = sum_i x[..., i] W[j, i] + b[j]``: the same weight acts on every token, which is CNet's
    TokenwiseLinear (CNet paper section 5). Backward (``g = 2 dL/dconj(y)``):
    ``grad_x = g conj(W)``, ``grad_W = sum over tokens g^T conj(x)``, ``grad_b = sum over tokens g``.

    Args:
        x: ``c[..., in]`` input (at least one dimension).
        weight: ``c[out, in]`` same dtype as ``x``.
        bias: ``c[out]`` same dtype as ``x``, or ``None``.

    Returns:
        ``c[..., out]``.

    Raises:
        TypeError: an argument is not complex, or dtypes differ. ValueError: wrong ranks or widths.

    Source: CNet paper section 5 (TokenwiseLinear).
    """
    require_complex("linear", x=x, weight=weight)
    require_rank("linear", 2, "c[out, in]", weight=weight)
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: argument 'x' must be c[..., in] with in = weight.shape[1] = {weight.shape[1]}, "
                         f"got shape {tuple(x.shape)}")
    tensors = {"x": x, "weight": weight}
    if bias is not None:
        require_complex("linear", bias=bias)
        if tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"linear: argument 'bias' must be c[out] with out = weight.shape[0] = {weight.shape[0]}, "
                             f"got shape {tuple(bias.shape)}")
        tensors["bias"] = bias
    if len({t.dtype for t in tensors.values()}) > 1:
        desc = ", ".join(f"{n}={t.dtype}" for n, t in tensors.items())
        raise TypeError(f"linear: arguments must share one complex dtype, got {desc}")
    return _Linear.apply(x, weight, bias)


class _Embedding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ids, weight):
        ctx.save_for_backward(ids)
        ctx.num_rows = weight.shape[0]
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        (ids,) = ctx.saved_tensors
        rows = grad_out.new_zeros(ctx.num_rows, grad_out.shape[-1])
        return None, rows.index_add_(0, ids.reshape(-1), grad_out.reshape(-1, grad_out.shape[-1]))


def embedding(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Look up complex vectors by integer id: ``y[..., :] = W[ids[...], :]``.

    Backward: each output gradient row is added (``index_add``) into the weight row it was read from, so an id
    used twice receives the sum; rows never read get zero. ``ids`` receives no gradient.

    Args:
        ids: ``i[...]`` integer tensor (any integer dtype) with values in ``[0, V)``, on ``weight``'s device.
        weight: ``c[V, E]`` table.

    Returns:
        ``c[..., E]``, dtype of ``weight``.

    Raises:
        TypeError: ``ids`` is not an integer tensor, or ``weight`` is not complex.
        ValueError: ``weight`` is not 2-d, or an id lies outside ``[0, V)``.

    Source: CNet README (CEmbedding).
    """
    if not isinstance(ids, torch.Tensor) or ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"embedding: argument 'ids' must be an integer tensor (e.g. torch.long), got {got}")
    require_complex("embedding", weight=weight)
    require_rank("embedding", 2, "c[V, E]", weight=weight)
    vocab = weight.shape[0]
    if ids.numel():
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab:
            bad = lo if lo < 0 else hi
            raise ValueError(f"embedding: argument 'ids' must lie in [0, {vocab}) (the rows of weight), got id {bad}")
    return _Embedding.apply(ids.long(), weight)


def _linear_example(dtype, device, seed):
    return (_randc(dtype, device, seed, 2, 3, 5), _randc(dtype, device, seed + 1, 3, 5),
            _randc(dtype, device, seed + 2, 3)), {}


def _embedding_example(dtype, device, seed):
    ids = torch.tensor([[0, 3, 3], [4, 1, 0]], device=device)
    return (ids, _randc(dtype, device, seed, 5, 3)), {}


EXAMPLES = {"linear": _linear_example, "embedding": _embedding_example}
