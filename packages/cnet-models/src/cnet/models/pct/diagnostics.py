"""Measurements on PCT models: the within-row spread of the attention scores (PCT paper sections 2.2 and 2.7)."""

from __future__ import annotations

import torch

from cnet.models.pct.cells import _Attention

__all__ = ["score_spread"]


def _row_std(s: torch.Tensor, causal: bool) -> torch.Tensor:
    """Mean over rows of the population standard deviation of ``r[B, H, T, S]`` along keys.

    Causal rows use the keys ``j <= i`` only, and rows with a single visible key (no spread defined) are skipped.
    """
    s = s.double()
    if not causal:
        return s.std(dim=-1, unbiased=False).mean()
    t = s.shape[-1]
    visible = torch.ones(t, t, dtype=torch.bool, device=s.device).tril()
    n = visible.sum(-1).to(s.dtype)                                  # keys per row
    x = s.masked_fill(~visible, 0.0)
    mean = x.sum(-1) / n
    var = (x.square().sum(-1) / n - mean.square()).clamp_min(0)
    return var.sqrt()[..., n > 1].mean()


@torch.no_grad()
def score_spread(model: torch.nn.Module, batch: torch.Tensor, *, per_layer: bool = False) -> float | list[float]:
    """Within-row standard deviation of the attention scores of ``model`` on ``batch``.

    For each attention layer, the score that enters the gate (before the gate's bias) is recorded on one forward
    pass in eval mode; its standard deviation over keys is taken per row (query), then averaged over rows, heads
    and the batch. Which score that is depends on the cell: ``sqrt(D) Re<q_hat, k_hat>`` for the scaled-cosine cells,
    ``Re<q, k> / sqrt(2 D)`` for ``complex_softmax``, the plain cosine for the screening cells, ``q.k / sqrt(D)``
    for the real softmax and sigmoid. At initialisation the paper reads 6.5e-5 for the unnormalised complex score
    (attention starts uniform) against 0.61 for the normalised one, on embedded ListOps inputs.

    Args:
        model: a ``pct`` model (:class:`cnet.models.pct.PCT`) or any module holding PCT attention cells.
        batch: the model's input, e.g. ``i[B, T]`` token ids.
        per_layer: return one value per attention layer instead of their mean.

    Returns:
        A float (mean over layers) or a list of floats (one per layer, in module order).

    Raises:
        ValueError: ``model`` holds no PCT attention layer. Input errors are the model's own.

    Source: PCT paper section 2.2 ("row standard deviation 6.5e-5 ... 0.61") and 2.7.
    """
    layers = [m for m in model.modules() if isinstance(m, _Attention)]
    if not layers:
        raise ValueError(f"score_spread: {type(model).__name__} has no PCT attention layer")
    was_training = model.training
    model.eval()
    for m in layers:
        m.recorded = []
    try:
        model(batch)
        spreads = []
        for m in layers:
            vals = [_row_std(s, causal) for s, causal in m.recorded]
            spreads.append(float(torch.stack(vals).mean()))
    finally:
        for m in layers:
            m.recorded = None
        model.train(was_training)
    return spreads if per_layer else sum(spreads) / len(spreads)
