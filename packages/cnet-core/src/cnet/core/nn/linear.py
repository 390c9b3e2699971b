"""Complex linear (token-wise) projection and token embedding layers.

``Linear`` applies one complex weight to the last dimension of every token, which is CNet's ``TokenwiseLinear``
(CNet paper section 5; a plain ``Linear`` on a single token). ``Embedding`` (CNet's ``CEmbedding``) maps each
token id to a learned complex vector. Both compute through the dispatching ops :func:`cnet.core.ops.linear` and
:func:`cnet.core.ops.embedding`.
"""

from __future__ import annotations

import torch
from torch import nn

from cnet.core import ops
from cnet.core.nn.init import complex_normal_

__all__ = ["Linear", "TokenwiseLinear", "Embedding", "CEmbedding"]


class Linear(nn.Module):
    """Complex affine map of the last dimension: ``y = x W^T + b`` (no conjugation).

    Shapes: input ``c[..., in_features]`` -> output ``c[..., out_features]``; the same weight acts on every
    token, so ``c[B, T, E_in] -> c[B, T, E_out]`` is CNet's ``TokenwiseLinear`` (alias below).

    Args:
        in_features: input width ``E_in`` (> 0).
        out_features: output width ``E_out`` (> 0).
        bias: add a learnable complex bias ``c[out_features]`` (initialised to zero).
        init_std: standard deviation of the real and of the imaginary part of each fresh weight entry.

    Attributes:
        weight: ``c[out_features, in_features]`` complex64 parameter, N(0, init_std^2) parts.
        bias: ``c[out_features]`` complex64 parameter, or ``None``.

    Raises:
        ValueError: a width is not a positive integer, or ``init_std`` is negative.

    Source: CNet paper section 5 (TokenwiseLinear); papers/NOTES.md "Default init".
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, init_std: float = 0.02) -> None:
        super().__init__()
        _check_sizes("Linear", init_std, in_features=in_features, out_features=out_features)
        self.in_features, self.out_features, self.init_std = in_features, out_features, init_std
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=torch.complex64))
        self.bias = nn.Parameter(torch.empty(out_features, dtype=torch.complex64)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw the weight (N(0, init_std^2) real and imaginary parts) and zero the bias."""
        complex_normal_(self.weight, self.init_std)
        if self.bias is not None:
            with torch.no_grad():
                self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``c[..., in_features] -> c[..., out_features]``; see :func:`cnet.core.ops.reference.linear`."""
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


TokenwiseLinear = Linear


class Embedding(nn.Module):
    """Lookup table of complex token vectors: ``i[...] -> c[..., embedding_dim]``.

    Args:
        num_embeddings: vocabulary size ``V`` (> 0); valid ids are ``0 .. V-1``.
        embedding_dim: vector width ``E`` (> 0).
        init_std: standard deviation of the real and of the imaginary part of each fresh entry.

    Attributes:
        weight: ``c[V, E]`` complex64 parameter, N(0, init_std^2) parts.

    Raises:
        ValueError: a size is not a positive integer, or ``init_std`` is negative; at call time, an id outside
        ``[0, V)``. TypeError: at call time, ids that are not an integer tensor.

    Source: CNet README (CEmbedding); papers/NOTES.md "Default init".
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, init_std: float = 0.02) -> None:
        super().__init__()
        _check_sizes("Embedding", init_std, num_embeddings=num_embeddings, embedding_dim=embedding_dim)
        self.num_embeddings, self.embedding_dim, self.init_std = num_embeddings, embedding_dim, init_std
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim, dtype=torch.complex64))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw the table with N(0, init_std^2) real and imaginary parts."""
        complex_normal_(self.weight, self.init_std)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``i[...] -> c[..., embedding_dim]``; see :func:`cnet.core.ops.reference.embedding`."""
        return ops.embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"


CEmbedding = Embedding


def _check_sizes(where: str, init_std: float, **sizes: int) -> None:
    for name, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{where}: argument '{name}' must be a positive int, got {v!r}")
    if not init_std >= 0:
        raise ValueError(f"{where}: argument 'init_std' must be >= 0, got {init_std}")
