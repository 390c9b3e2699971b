"""Argument checks shared by every op, layer and model: one wording for one kind of mistake."""

from __future__ import annotations

import torch

__all__ = ["require_complex", "require_same_shape", "require_rank", "require_broadcasts_to"]

_COMPLEX_DTYPES = (torch.complex64, torch.complex128)


def require_complex(where: str, **tensors: torch.Tensor) -> None:
    """Raise ``TypeError`` unless every named argument is a complex64 or complex128 tensor.

    Args:
        where: the op or layer name, used as the message prefix.
        **tensors: argument name -> tensor.

    Raises:
        TypeError: an argument is not a tensor, or its dtype is not complex64 or complex128 (a real dtype, or
            complex32, which PyTorch's CPU kernels and FFTs mostly lack).
    """
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}: argument '{name}' must be a complex torch.Tensor, got {type(t).__name__}")
        if not t.is_complex():
            raise TypeError(
                f"{where}: argument '{name}' must be a complex tensor (torch.complex64 or torch.complex128), "
                f"got {t.dtype}; convert real data with torch.complex(x, torch.zeros_like(x)) or x.to(torch.complex64)"
            )
        if t.dtype not in _COMPLEX_DTYPES:
            raise TypeError(f"{where}: argument '{name}' must be torch.complex64 or torch.complex128, got {t.dtype}; "
                            "convert it with x.to(torch.complex64)")


def require_same_shape(where: str, **tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` unless every named tensor has the same shape.

    Raises:
        ValueError: naming each argument with its shape.
    """
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        desc = ", ".join(f"{n}={s}" for n, s in shapes.items())
        raise ValueError(f"{where}: arguments must have the same shape, got {desc}")


def require_rank(where: str, rank: int, layout: str, **tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` unless every named tensor has ``rank`` dimensions.

    Args:
        where: op or layer name.
        rank: expected number of dimensions.
        layout: the expected layout for the message, e.g. ``"c[B, H, T, D]"``.

    Raises:
        ValueError: an argument has another number of dimensions.
    """
    for name, t in tensors.items():
        if t.dim() != rank:
            raise ValueError(f"{where}: argument '{name}' must be {layout} ({rank} dims), got shape {tuple(t.shape)}")


def require_broadcasts_to(where: str, name: str, t: torch.Tensor, target_name: str, target: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``t`` broadcasts to ``target``'s shape without enlarging it (e.g. a bias).

    Raises:
        ValueError: naming both arguments and their shapes.
    """
    try:
        ok = torch.broadcast_shapes(t.shape, target.shape) == target.shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{where}: '{name}' of shape {tuple(t.shape)} does not broadcast to '{target_name}' "
                         f"{tuple(target.shape)}")
