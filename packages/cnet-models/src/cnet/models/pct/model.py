"""``pct``: the phase-coherent transformer family and its baselines on one skeleton (PCT paper sections 2-3, D).

Every cell of :mod:`cnet.models.pct.cells` runs in the same pre-norm residual stack::

    h = Embed(x)                                  ids -> table; complex values -> Linear(F -> E)
    for each block:  h = h + Attn_cell(Norm(h))
                     h = h + W_2 act(W_1 Norm(h))   E -> 4E -> E
    z = Norm(h)
    classify: logits = Head(pool_t z)              pool = mean over positions (or the last position)
    tokens:   logits = Head(z)                     one prediction per position (Copy Memory, next token)

Complex cells: complex ``c[B, T, E]`` stream, :class:`~cnet.core.nn.phase.ComplexRMSNorm` with a complex gain,
complex Glorot projections, ``act`` = modReLU^2 (one scalar bias per layer), the head a real ``Linear(2E -> C)``
on ``[Re; Im]``. Real cells: the same skeleton on a real ``r[B, T, E]`` stream (real RMS norm with the same gain
convention, Glorot-normal projections, ``act`` = ReLU^2, a real head), at width 184 against 128 (``sqrt 2``: equal
stored scalars). With ``embed_dim=256, num_layers=6, num_heads=8`` and 16 ids / 16 classes per position, the
paper's counts come out exactly: 9,475,612 real scalars for ``complex_sigmoid`` and 4,737,808 for
``real_softmax`` (PCT paper D.3).

Choices where the paper is silent (each a config field): mean pooling over all positions (``pooling``); the
complex embedding's real and imaginary parts ~ N(0, 1/2) (unit power per feature, like the real embedding's
N(0, 1)); the unnormalised ``complex_sigmoid_nol2`` keeps the PCT scale ``sqrt(D)`` (only the normalisation is
toggled); the squared and cubed gates are rectified powers.

The norm's output scale (``norm_gain``) departs from papers/NOTES.md on purpose. NOTES reads the public code as
``x / ||x|| * gamma * sqrt(E)`` (unit RMS per feature, ``norm_gain="sqrt_dim"``). The default,
``"inv_sqrt_dim"``, puts out ``x / ||x|| * gamma / sqrt(E)``. That is the ``ComplexRMSNorm`` of the complex-transformer
code whose attention the paper's ``complex_softmax`` ports (scale ``dim ** -0.5``), and it is the only one of the
two that reproduces the paper's own measurements. On embedded ListOps inputs at initialisation the unnormalised
``complex_softmax`` score has a within-row spread of about 2.5e-5 here with ``inv_sqrt_dim`` (paper: 6.5e-5;
"constant within each row to within 1e-4") and 0.43 with ``sqrt_dim``. Section 2.7 says rescaling that score by a
temperature of 0.25 to 4 leaves the training loss equal to five decimals, and only a row-flat score does that.
The scaled-cosine cells (PCT and its family) do not depend on the choice: their scores are 0.58 with either
gain (paper: 0.61). Source: PCT paper sections 2-3 and D.1-D.4; papers/NOTES.md "Phase-coherent transformers".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cnet.core import nn as cnn
from cnet.core.nn.phase import NORM_GAINS, ComplexRMSNorm, ModReLU, complex_glorot_
from cnet.models.base import TASK_KINDS, LanguageModel, TaskHead
from cnet.models.config import require_positive
from cnet.models.output import LMOutput
from cnet.models.pct.cells import CELLS, COMPLEX_CELLS, ComplexAttention, RealAttention

__all__ = ["PCTConfig", "PCT", "RealRMSNorm", "POOLINGS", "INPUT_KINDS", "COMPLEX_WIDTH", "REAL_WIDTH"]

POOLINGS = ("mean", "last")
INPUT_KINDS = ("tokens", "complex")
COMPLEX_WIDTH, REAL_WIDTH = 128, 184
IGNORE_INDEX = -100


@dataclass
class PCTConfig:
    """Configuration of :class:`PCT` (defaults: the paper's small-scale suite on ListOps, PCT paper D.1-D.3)."""

    cell: str = "complex_sigmoid"   # one of cnet.models.pct.CELLS
    vocab_size: int = 16            # token ids 0 .. V-1 (input_kind "tokens")
    context: int = 1024             # N: the longest sequence; the gate bias starts at -ln N
    num_classes: int = 10           # C: labels per sequence ("classify") or per position ("tokens")
    task: str = "classify"          # "classify" (pooled, one label) or "tokens" (a label per position, -100 ignored)
    pooling: str = "mean"           # "mean" over positions or the "last" position (classify only)
    causal: bool = False            # mask keys after the query
    input_kind: str = "tokens"      # "tokens": i[B, T] ids; "complex": c[B, T] or c[B, T, in_features] values
    in_features: int = 1            # complex features per position (input_kind "complex")
    embed_dim: int | None = None    # E; None -> 128 for complex cells, 184 for real cells
    num_layers: int = 4
    num_heads: int = 4
    ffn_mult: int = 4
    rope: bool = True
    rope_base: float = 10000.0
    gate_bias: float | None = None  # initial b of the gated cells; None -> -ln(context) (0 revives the flat gates)
    screen_init: float = -3.0       # initial per-head s_r of the screening cells
    norm_gain: str = "inv_sqrt_dim"  # norm output x/||x|| * gamma * dim^-1/2, or dim^+1/2 ("sqrt_dim", NOTES.md)

    def __post_init__(self) -> None:
        if self.cell not in CELLS:
            raise ValueError(f"pct: unknown cell {self.cell!r}; choose one of {', '.join(CELLS)}")
        for name, allowed in (("task", TASK_KINDS), ("pooling", POOLINGS), ("input_kind", INPUT_KINDS),
                              ("norm_gain", NORM_GAINS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"pct: {name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.embed_dim is None:
            self.embed_dim = COMPLEX_WIDTH if self.is_complex else REAL_WIDTH
        require_positive("pct", vocab_size=self.vocab_size, context=self.context, num_classes=self.num_classes,
                         in_features=self.in_features, embed_dim=self.embed_dim, num_layers=self.num_layers,
                         num_heads=self.num_heads, ffn_mult=self.ffn_mult, rope_base=self.rope_base)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"pct: num_heads={self.num_heads} must divide embed_dim={self.embed_dim}")
        if self.rope and not self.is_complex and (self.embed_dim // self.num_heads) % 2:
            raise ValueError(f"pct: real cells with rope need an even head dim, got "
                             f"{self.embed_dim}/{self.num_heads} = {self.embed_dim // self.num_heads}")

    @property
    def is_complex(self) -> bool:
        """True for the complex cells (complex stream), False for the real baselines."""
        return self.cell in COMPLEX_CELLS


class RealRMSNorm(nn.Module):
    """Real RMS norm with the complex norm's gain convention: ``y = gamma * x / ||x|| * dim^(-+1/2)``.

    Shapes ``r[..., dim] -> r[..., dim]``; ``gamma`` ``r[dim]`` init 1. Source: PCT paper D.4 (real variant of the
    pre-norm RMSNorm matching the cell substrate).
    """

    def __init__(self, dim: int, gain: str = "inv_sqrt_dim", eps: float = 1e-8) -> None:
        super().__init__()
        if gain not in NORM_GAINS:
            raise ValueError(f"RealRMSNorm: gain must be one of {', '.join(NORM_GAINS)}, got {gain!r}")
        self.scale = dim**-0.5 if gain == "inv_sqrt_dim" else dim**0.5
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``r[..., dim] -> r[..., dim]``."""
        return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + self.eps) * self.weight * self.scale


def _relu_squared(x: torch.Tensor) -> torch.Tensor:
    return F.relu(x).square()


class _Block(nn.Module):
    def __init__(self, c: PCTConfig) -> None:
        super().__init__()
        e, hidden = c.embed_dim, c.ffn_mult * c.embed_dim
        kw = dict(context=c.context, causal=c.causal, rope=c.rope, rope_base=c.rope_base, gate_bias=c.gate_bias,
                  screen_init=c.screen_init)
        if c.is_complex:
            self.norm1, self.norm2 = ComplexRMSNorm(e, c.norm_gain), ComplexRMSNorm(e, c.norm_gain)
            self.attn = ComplexAttention(e, c.num_heads, c.cell, **kw)
            self.fc1, self.fc2 = cnn.Linear(e, hidden), cnn.Linear(hidden, e)
            complex_glorot_(self.fc1.weight.data)
            complex_glorot_(self.fc2.weight.data)
            self.act = ModReLU(power=2)
        else:
            self.norm1, self.norm2 = RealRMSNorm(e, c.norm_gain), RealRMSNorm(e, c.norm_gain)
            self.attn = RealAttention(e, c.num_heads, c.cell, **kw)
            self.fc1, self.fc2 = nn.Linear(e, hidden), nn.Linear(hidden, e)
            for fc in (self.fc1, self.fc2):
                nn.init.xavier_normal_(fc.weight)
                nn.init.zeros_(fc.bias)
            self.act = _relu_squared

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.norm1(h))
        return h + self.fc2(self.act(self.fc1(self.norm2(h))))


class PCT(LanguageModel):
    """A phase-coherent transformer (or a baseline cell on the same skeleton) for classification or per-position
    prediction.

    ``forward(x, targets=None)`` takes ``i[B, T]`` token ids (``input_kind="tokens"``) or complex values ``c[B, T]`` /
    ``c[B, T, F]`` (``input_kind="complex"``, e.g. FFT-MNIST tokens) with ``T <= context``, and returns
    :class:`~cnet.models.output.LMOutput` with real ``logits`` ``r[B, C]`` (``task="classify"``) or ``r[B, T, C]``
    (``task="tokens"``) and, given targets (``i[B]`` class ids, or ``i[B, T]`` with -100 on unscored positions),
    the mean cross-entropy ``loss`` in nats.

    Raises:
        ValueError: a sequence longer than ``context``, ids or labels out of range, wrong ranks.
        TypeError: ids that are not integers; values that are not complex for ``input_kind="complex"``.

    Source: PCT paper sections 2-3, D.1-D.4 (see the module docstring for the skeleton and the choices).
    """

    def __init__(self, config: PCTConfig) -> None:
        super().__init__()
        self.config = c = config
        e = c.embed_dim
        if c.input_kind == "tokens":
            if c.is_complex:
                self.embed = cnn.Embedding(c.vocab_size, e, init_std=math.sqrt(0.5))
            else:
                self.embed = nn.Embedding(c.vocab_size, e)
        elif c.is_complex:
            self.embed = cnn.Linear(c.in_features, e)
            complex_glorot_(self.embed.weight.data)
        else:
            self.embed = nn.Linear(2 * c.in_features, e)
        self.blocks = nn.ModuleList(_Block(c) for _ in range(c.num_layers))
        self.norm = ComplexRMSNorm(e, c.norm_gain) if c.is_complex else RealRMSNorm(e, c.norm_gain)
        self.head = nn.Linear(2 * e if c.is_complex else e, c.num_classes)

    # ------------------------------------------------------------------------------------------------------ inputs
    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.input_kind == "tokens":
            self.check_ids(x, "x")
            return self.embed(x)
        if not isinstance(x, torch.Tensor) or not x.is_complex():
            raise TypeError(f"PCT: input_kind='complex' takes complex values c[B, T] or c[B, T, {c.in_features}], "
                            f"got {getattr(x, 'dtype', type(x).__name__)}")
        if x.dim() == 2 and c.in_features == 1:
            x = x[..., None]
        if x.dim() != 3 or x.shape[-1] != c.in_features:
            raise ValueError(f"PCT: complex input must be c[B, T, {c.in_features}] (or c[B, T] for one feature), "
                             f"got shape {tuple(x.shape)}")
        if x.shape[1] > c.context:
            raise ValueError(f"PCT: sequence length {x.shape[1]} exceeds the model's context {c.context}")
        x = x.to(torch.complex64)
        if c.is_complex:
            return self.embed(x)
        return self.embed(torch.cat([x.real, x.imag], dim=-1))

    def _check_targets(self, targets: torch.Tensor, batch: int, length: int) -> None:
        c = self.config
        want = (batch,) if c.task == "classify" else (batch, length)
        layout = "i[B]" if c.task == "classify" else "i[B, T]"
        if not isinstance(targets, torch.Tensor) or targets.dtype.is_floating_point or targets.is_complex() \
                or targets.dtype == torch.bool:
            raise TypeError(f"PCT: 'targets' must be an integer tensor {layout}, got "
                            f"{getattr(targets, 'dtype', type(targets).__name__)}")
        if tuple(targets.shape) != want:
            raise ValueError(f"PCT: task={c.task!r} needs 'targets' {layout} = {want}, got {tuple(targets.shape)}")
        valid = targets[targets != IGNORE_INDEX]
        if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= c.num_classes):
            raise ValueError(f"PCT: 'targets' holds labels outside [0, {c.num_classes}) (-100 marks unscored "
                             "positions)")

    # ------------------------------------------------------------------------------------------------------- tasks
    @classmethod
    def task_config(cls, kind: str, num_classes: int, length: int, input_kind: str,
                    vocab_size: int | None) -> dict:
        """The config fields a task decides (used by :func:`cnet.models.tasks.build_task_model`): ``task``,
        ``num_classes``, ``context`` = the sequence length ``N`` (so the gate bias starts at ``-ln N``, PCT paper
        D.2), ``input_kind`` and, for ids, ``vocab_size``."""
        fields = {"task": kind, "num_classes": num_classes, "context": length, "input_kind": input_kind}
        if vocab_size is not None:
            fields["vocab_size"] = vocab_size
        return fields

    def task_head(self) -> TaskHead:
        """What this model predicts (see :class:`~cnet.models.base.TaskHead`)."""
        c = self.config
        return TaskHead(c.task, c.num_classes, c.context, c.input_kind,
                        c.vocab_size if c.input_kind == "tokens" else None)

    # ----------------------------------------------------------------------------------------------------- forward
    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The final normalised stream: ``c[B, T, E]`` (complex cells) or ``r[B, T, E]`` (real cells)."""
        h = self._embed(x)
        for block in self.blocks:
            h = block(h)
        return self.norm(h)

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None) -> LMOutput:
        """See the class docstring."""
        c = self.config
        z = self.features(x)
        if c.task == "classify":
            z = z.mean(dim=1) if c.pooling == "mean" else z[:, -1]
        if c.is_complex:
            z = torch.cat([z.real, z.imag], dim=-1)
        logits = self.head(z)
        loss = None
        if targets is not None:
            self._check_targets(targets, x.shape[0], x.shape[1])
            loss = F.cross_entropy(logits.reshape(-1, c.num_classes), targets.reshape(-1).long(),
                                   ignore_index=IGNORE_INDEX)
        return LMOutput(loss=loss, logits=logits)

    def generate(self, ids: torch.Tensor, max_new_tokens: int, **kwargs) -> torch.Tensor:
        """Sample continuations; only for a causal next-token model (``task="tokens"``, ``causal=True``, token
        input, ``num_classes == vocab_size``), else ``ValueError``. See :meth:`LanguageModel.generate`."""
        problem = self.next_token_problem()
        if problem:
            raise ValueError(f"PCT.generate: {problem}")
        return super().generate(ids, max_new_tokens, **kwargs)

    def next_token_problem(self) -> str | None:
        """``None`` for a causal next-token model, else why not (see :meth:`LanguageModel.next_token_problem`)."""
        c = self.config
        if c.task == "tokens" and c.causal and c.input_kind == "tokens" and c.num_classes == c.vocab_size:
            return None
        return ("a next-token model needs task='tokens', causal=True, input_kind='tokens' and num_classes == "
                f"vocab_size; this one has task={c.task!r}, causal={c.causal}, input_kind={c.input_kind!r}, "
                f"num_classes={c.num_classes}, vocab_size={c.vocab_size}")
