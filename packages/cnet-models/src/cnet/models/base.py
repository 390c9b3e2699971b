"""Base class of the language models: configuration handling, parameter counts and sampling."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from cnet.models.output import LMOutput

__all__ = ["LanguageModel", "count_parameters"]


def count_parameters(module: nn.Module) -> dict[str, int]:
    """Parameter counts of ``module`` in real scalars (a complex parameter counts twice).

    Returns:
        ``{"real_scalars": total, "complex_scalars": complex parameters' real scalars, "complex_share": float}``
        where ``complex_share`` is the fraction of real scalars that belong to complex parameters.
    """
    total = cplx = 0
    for p in module.parameters():
        n = p.numel() * (2 if p.is_complex() else 1)
        total += n
        cplx += n if p.is_complex() else 0
    return {"real_scalars": total, "complex_scalars": cplx, "complex_share": cplx / total if total else 0.0}


class LanguageModel(nn.Module):
    """A causal language model over ``i[B, T]`` token ids with a fixed maximum context.

    Subclasses set ``self.config`` (a dataclass with ``vocab_size`` and ``context``) and implement
    :meth:`forward` returning :class:`LMOutput`.
    """

    config: object

    def check_ids(self, ids: torch.Tensor, name: str = "ids") -> None:
        """Validate a batch of token ids ``i[B, T]``.

        Raises:
            TypeError: not an integer tensor. ValueError: wrong rank, T above the context, id out of range.
        """
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"{type(self).__name__}: '{name}' must be an integer tensor i[B, T], got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.dim() != 2:
            raise ValueError(f"{type(self).__name__}: '{name}' must be i[B, T], got shape {tuple(ids.shape)}")
        if ids.shape[1] > self.config.context:
            raise ValueError(f"{type(self).__name__}: sequence length {ids.shape[1]} exceeds the model's context "
                             f"{self.config.context}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"{type(self).__name__}: '{name}' holds ids outside [0, {self.config.vocab_size})")

    def config_dict(self) -> dict:
        """The configuration as a JSON-able dict."""
        return dataclasses.asdict(self.config)

    def num_parameters(self) -> dict[str, int]:
        """See :func:`count_parameters`."""
        return count_parameters(self)

    @torch.no_grad()
    def generate(self, ids: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0, top_k: int | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Sample ``max_new_tokens`` tokens after the prompt ``ids`` (``i[B, T0]``), windowing to the context.

        Sampling draws from ``p^(1/temperature)`` renormalised (temperature 0 means greedy), optionally restricted
        to the ``top_k`` most likely tokens.

        Returns:
            ``i[B, T0 + max_new_tokens]`` the prompt followed by the sampled tokens.

        Raises:
            ValueError: empty prompt, negative ``max_new_tokens`` or ``temperature``, bad ``top_k``.
        """
        self.check_ids(ids[:, -self.config.context:], "ids")
        if ids.shape[1] == 0:
            raise ValueError("generate: the prompt 'ids' must hold at least one token")
        if max_new_tokens < 0 or temperature < 0:
            raise ValueError("generate: 'max_new_tokens' and 'temperature' must be >= 0")
        if top_k is not None and not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"generate: 'top_k' must be in [1, {self.config.vocab_size}], got {top_k}")
        was_training = self.training
        self.eval()
        out = ids
        for _ in range(max_new_tokens):
            logp = self(out[:, -self.config.context:]).log_probs()[:, -1]
            if temperature == 0:
                nxt = logp.argmax(-1, keepdim=True)
            else:
                logp = logp / temperature
                if top_k is not None:
                    kth = logp.topk(top_k, dim=-1).values[:, -1:]
                    logp = logp.masked_fill(logp < kth, float("-inf"))
                nxt = torch.multinomial(torch.softmax(logp, -1), 1, generator=generator)
            out = torch.cat([out, nxt], dim=1)
        self.train(was_training)
        return out

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:  # pragma: no cover
        raise NotImplementedError
