"""The output type shared by every language model in cnet-models."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["LMOutput"]


@dataclass
class LMOutput:
    """What a language model's ``forward`` returns.

    Exactly one of ``amplitudes`` (Born-rule models) and ``logits`` (real models) is set.

    Attributes:
        loss: ``r[]`` mean next-token loss in nats per token when targets were given, else ``None``.
        amplitudes: ``c[B, T, V]`` Born-rule amplitudes; ``p = |z|^2 / ||z||^2`` (CNet paper section 9).
        logits: ``r[B, T, V]`` real logits; ``p = softmax(logits)``.
    """

    loss: torch.Tensor | None = None
    amplitudes: torch.Tensor | None = None
    logits: torch.Tensor | None = None

    def log_probs(self) -> torch.Tensor:
        """``r[B, T, V]`` next-token log-probabilities (natural log), from whichever head produced the output."""
        if self.amplitudes is not None:
            power = self.amplitudes.real.square() + self.amplitudes.imag.square()
            return power.clamp_min(torch.finfo(power.dtype).tiny).log() - power.sum(-1, keepdim=True).log()
        if self.logits is not None:
            return torch.log_softmax(self.logits.float(), dim=-1)
        raise ValueError("LMOutput has neither amplitudes nor logits")
