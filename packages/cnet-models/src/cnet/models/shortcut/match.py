"""Parameter matching of a complex quantum-shortcut model and its real twin (paper section 5.7).

The real twin absorbs the difference in its feed-forward width: the SwiGLU branch of the real Mamba
(``MambaConfig.ffn_dim``) or the FFN of the Transformer (``TransformerConfig.ffn_dim``). Every other dimension must
agree. Totals are counted in real scalars (a complex parameter counts twice) by
:func:`cnet.models.count_parameters` on a model built on the ``meta`` device (no memory, no initialisation cost),
so the 253M paper configuration is counted in milliseconds.
"""

from __future__ import annotations

import dataclasses

import torch

from cnet.models.base import count_parameters
from cnet.models.shortcut.hmamba import HMamba, HMambaConfig, Mamba, MambaConfig
from cnet.models.shortcut.htransformer import HTransformer, HTransformerConfig, Transformer, TransformerConfig

__all__ = ["match", "parameter_count", "pair_report", "TOLERANCE"]

TOLERANCE = 2e-4  # 0.02% (paper section 5.7)

_MODELS = {HMambaConfig: HMamba, MambaConfig: Mamba, HTransformerConfig: HTransformer, TransformerConfig: Transformer}
_TWIN = {HMambaConfig: MambaConfig, HTransformerConfig: TransformerConfig}
# fields of the real twin that must equal the complex model's, and the twin's smallest feed-forward width
_SHARED = {MambaConfig: ("vocab_size", "d_model", "d_inner", "num_layers", "d_state", "d_conv"),
           TransformerConfig: ("vocab_size", "d_model", "num_layers")}
_MIN_WIDTH = {MambaConfig: 0, TransformerConfig: 1}


def parameter_count(config) -> dict:
    """:func:`cnet.models.count_parameters` of the model a shortcut config describes, built on the meta device.

    Args:
        config: an ``HMambaConfig``, ``MambaConfig``, ``HTransformerConfig`` or ``TransformerConfig``.

    Returns:
        ``{"real_scalars", "complex_parameters", "complex_share"}`` (see ``count_parameters``).

    Raises:
        TypeError: ``config`` is not one of the four config types.
    """
    cls = _MODELS.get(type(config))
    if cls is None:
        names = ", ".join(c.__name__ for c in _MODELS)
        raise TypeError(f"parameter_count: expected a quantum-shortcut config ({names}), got {type(config).__name__}")
    with torch.device("meta"):
        model = cls(config)
    return count_parameters(model)


def _order(a_config, b_config):
    """``(complex config, real config)`` from a pair given in either order; ``ValueError`` for a wrong pair."""
    for c, r in ((a_config, b_config), (b_config, a_config)):
        if type(c) in _TWIN and type(r) is _TWIN[type(c)]:
            return c, r
    pairs = "; ".join(f"{c.__name__} with {r.__name__}" for c, r in _TWIN.items())
    raise ValueError(f"match: cannot pair {type(a_config).__name__} with {type(b_config).__name__}; the matchable "
                     f"pairs are {pairs}")


def match(a_config, b_config, *, tolerance: float = TOLERANCE):
    """Widen (or narrow) the real twin's feed-forward until both totals agree within ``tolerance``.

    The real twin's count is affine in its feed-forward width ``w`` (``n(w) = n0 + w s`` with ``s = 3 d_model L`` for
    the SwiGLU branch, ``2 d_model L`` for the plain SiLU FFN, ``3 d_model L`` for a gated one); the width nearest
    to the complex total is taken and checked.

    Args:
        a_config, b_config: a complex config and its real twin's, in either order (``HMambaConfig`` with
            ``MambaConfig``, ``HTransformerConfig`` with ``TransformerConfig``).
        tolerance: largest accepted ``|n_real - n_complex| / n_complex`` (default 0.02%).

    Returns:
        The real twin's config with the matched ``ffn_dim`` (a new object; the inputs are not changed).

    Raises:
        ValueError: not a matchable pair; a shared dimension differs (the message lists them); the twin is larger
            than the complex model even at its narrowest feed-forward; or one width step is too coarse for the
            tolerance at these sizes (the message gives the two nearest widths and their gaps).
    """
    cplx, real = _order(a_config, b_config)
    diff = [f"{f} ({getattr(cplx, f)} vs {getattr(real, f)})" for f in _SHARED[type(real)]
            if getattr(cplx, f) != getattr(real, f)]
    if diff:
        raise ValueError(f"match: the pair differs in {', '.join(diff)}; only the real twin's ffn_dim may differ")
    if not 0 < tolerance < 1:
        raise ValueError(f"match: 'tolerance' must be in (0, 1), got {tolerance}")
    target = parameter_count(cplx)["real_scalars"]
    lo = _MIN_WIDTH[type(real)]

    def count(w: int) -> int:
        return parameter_count(dataclasses.replace(real, ffn_dim=w))["real_scalars"]

    n0, step = count(lo), count(lo + 1) - count(lo)
    if n0 > target:
        raise ValueError(f"match: the real twin has {n0:,} real parameters at its narrowest feed-forward (ffn_dim={lo})"
                         f", more than the complex model's {target:,}; it cannot be matched by widening")
    w = lo + (target - n0) // step
    best = min((w, w + 1), key=lambda x: abs(n0 + (x - lo) * step - target))
    got = count(best)
    gap = abs(got - target) / target
    if gap > tolerance:
        gaps = ", ".join(f"ffn_dim={x}: {abs(n0 + (x - lo) * step - target) / target:.4%}" for x in (w, w + 1))
        raise ValueError(f"match: no feed-forward width matches {target:,} real parameters within {tolerance:.4%} "
                         f"(one unit of width is {step:,} = {step / target:.4%}); nearest {gaps}; change a size "
                         "(d_model, num_layers, d_inner) or the tolerance")
    return dataclasses.replace(real, ffn_dim=best)


def pair_report(a_config, b_config) -> dict:
    """Parameter counts of a pair: ``{"complex": {...}, "real": {...}, "relative_gap": float}``.

    ``complex``/``real`` are :func:`parameter_count` of each member plus its ``"name"``; ``relative_gap`` is
    ``(n_real - n_complex) / n_complex``. Raises ``ValueError`` for a pair :func:`match` would refuse to pair.
    """
    cplx, real = _order(a_config, b_config)
    out = {}
    for key, cfg in (("complex", cplx), ("real", real)):
        out[key] = {"name": type(cfg).__name__.removesuffix("Config"), **parameter_count(cfg)}
    n_real, n_complex = out["real"]["real_scalars"], out["complex"]["real_scalars"]
    out["relative_gap"] = (n_real - n_complex) / n_complex
    return out
