"""Base class of the language models (configuration handling, parameter counts, sampling) and :class:`TaskHead`,
what a sequence classifier or per-position predictor declares to the training app."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from cnet.models.output import LMOutput

__all__ = ["LanguageModel", "TaskHead", "count_parameters"]

TASK_KINDS = ("classify", "tokens")


@dataclass(frozen=True)
class TaskHead:
    """The prediction a model makes, as the training app checks it against a dataset's task.

    A model trains on classification and per-position tasks (``cnet train pct --dataset listops``) when it has a
    ``task_head() -> TaskHead`` method (and a classmethod ``task_config(kind, num_classes, length, input_kind,
    vocab_size) -> dict`` giving the config fields that fit a task).

    Attributes:
        kind: ``"classify"`` (one label per sequence, logits ``r[B, C]``) or ``"tokens"`` (a label per position,
            logits ``r[B, T, C]``, positions labelled -100 unscored).
        num_classes: ``C``.
        length: the longest input sequence the model accepts.
        input_kind: ``"tokens"`` (integer ids ``i[B, T]``) or ``"complex"`` (values ``c[B, T]``).
        vocab_size: number of input ids (``None`` when the input is not ids, or any grey level 0..255 for pixels).
    """

    kind: str
    num_classes: int
    length: int
    input_kind: str = "tokens"
    vocab_size: int | None = None


def count_parameters(module: nn.Module) -> dict[str, int]:
    """Parameter counts of ``module`` in real scalars (a complex parameter counts twice).

    Returns:
        ``{"real_scalars": total, "complex_parameters": number of complex entries, "complex_share": float}``
        where ``complex_share`` is the fraction of real scalars that belong to complex parameters (the PCT
        paper's measure).
    """
    total = cplx = 0
    for p in module.parameters():
        total += p.numel() * (2 if p.is_complex() else 1)
        cplx += p.numel() if p.is_complex() else 0
    return {"real_scalars": total, "complex_parameters": cplx, "complex_share": 2 * cplx / total if total else 0.0}


class LanguageModel(nn.Module):
    """A causal language model over ``i[B, T]`` token ids with a fixed maximum context.

    Subclasses set ``self.config`` (a dataclass with ``vocab_size`` and ``context``) and implement
    :meth:`forward` returning :class:`LMOutput`. A model whose outputs depend on the window length (a Fourier
    mixer over the whole window) sets ``fixed_window = True`` and calls :meth:`pad_to_context`, so a shorter
    input is scored exactly as the first positions of a full window.
    """

    config: object
    fixed_window: bool = False

    def check_ids(self, ids: torch.Tensor, name: str = "ids") -> None:
        """Validate a batch of token ids ``i[B, T]``.

        Raises:
            TypeError: not an integer tensor. ValueError: wrong rank, T above the context, id out of range.
        """
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.is_complex() \
                or ids.dtype == torch.bool:
            raise TypeError(f"{type(self).__name__}: '{name}' must be an integer tensor i[B, T], got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.dim() != 2:
            raise ValueError(f"{type(self).__name__}: '{name}' must be i[B, T], got shape {tuple(ids.shape)}")
        if ids.shape[1] > self.config.context:
            raise ValueError(f"{type(self).__name__}: sequence length {ids.shape[1]} exceeds the model's context "
                             f"{self.config.context}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size):
            raise ValueError(f"{type(self).__name__}: '{name}' holds ids outside [0, {self.config.vocab_size})")

    def next_token_problem(self) -> str | None:
        """Why this model, as configured, is not a causal next-token model (``None`` when it is one).

        The training app, the evaluation and generation refuse a model that reports a problem: a bidirectional
        model would see the tokens it is asked to predict.
        """
        return None

    def pad_to_context(self, ids: torch.Tensor) -> torch.Tensor:
        """Right-pad ``i[B, T]`` with id 0 to ``i[B, context]``; causality keeps positions ``< T`` unaffected."""
        pad = self.config.context - ids.shape[1]
        return torch.nn.functional.pad(ids, (0, pad)) if pad > 0 else ids

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
            ValueError: empty prompt, negative ``max_new_tokens``, ``temperature`` negative or not finite, bad
            ``top_k``. TypeError: ``ids`` is not an integer tensor ``i[B, T0]``.
        """
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise TypeError(f"generate: 'ids' must be an integer tensor i[B, T0], got {getattr(ids, 'shape', ids)}")
        self.check_ids(ids[:, -self.config.context:], "ids")
        if ids.shape[1] == 0:
            raise ValueError("generate: the prompt 'ids' must hold at least one token")
        if max_new_tokens < 0 or not 0 <= temperature < float("inf"):
            raise ValueError(f"generate: need max_new_tokens >= 0 and a finite temperature >= 0, got "
                             f"{max_new_tokens}, {temperature}")
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
