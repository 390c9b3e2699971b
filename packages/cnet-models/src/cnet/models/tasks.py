"""Classification and per-position tasks: what each dataset asks of a model, the head check, and the scores.

A dataset with an entry in :data:`TASKS` is trained by :func:`cnet.models.train.train` as a task (PCT paper
section 2 and D.1), every other dataset as a next-token language model. A :class:`TaskSpec` names the input
column(s), the target column, the kind of prediction (``"classify"``: one label per sequence; ``"tokens"``: a label
per position, -100 on unscored positions, as Copy Memory's answer positions) and the number of classes. The model
declares its head as a :class:`~cnet.models.base.TaskHead`; :func:`build_task_model` fills the config fields that
the task decides and refuses a model whose head does not fit.

Scores: cross-entropy in nats per scored item (per sequence for classification, per answer position for Copy) and
accuracy over the same items (PCT paper section 2.2: "accuracy ... deterministic final evaluation over 2,048
samples").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from cnet.data.listops import LISTOPS_VOCAB
from cnet.data.lra import LRA_TEXT_VOCAB_SIZE
from cnet.data.synthetic import COPY_NUM_SYMBOLS, COPY_VOCAB_SIZE, IGNORE_INDEX, NEEDLE_VOCAB_SIZE
from cnet.models.base import TaskHead
from cnet.models.registry import create

_LISTOPS_IDS = max(LISTOPS_VOCAB.values()) + 1  # 16: padding 0 and the 15 tokens

__all__ = ["TaskSpec", "TASKS", "task_spec", "head_problem", "build_task_model", "task_sums", "batch_accuracy"]


@dataclass(frozen=True)
class TaskSpec:
    """What a dataset asks of a model.

    Attributes:
        name: the registered dataset name.
        kind: ``"classify"`` or ``"tokens"`` (see the module docstring).
        inputs: the input column(s): ``("input_ids",)`` (ids or grey levels) or ``("real", "imag")`` (complex values).
        target: the target column: ``i[N]`` class ids (classify) or ``i[N, T]`` labels with -100 (tokens).
        num_classes: ``C``.
        input_kind: ``"tokens"`` or ``"complex"``.
        vocab_size: number of input ids (``None`` for complex values).
        train_split, eval_split: the training split and the held-out split.
        generated: a seeded generator (train rows are streamed on the fly; ``seed`` and ``num_examples`` are set by
            the training app) rather than files.
        chance: accuracy of guessing (for reading results).
    """

    name: str
    kind: str
    inputs: tuple[str, ...]
    target: str
    num_classes: int
    input_kind: str
    vocab_size: int | None
    train_split: str
    eval_split: str
    generated: bool
    chance: float

    @property
    def unit(self) -> str:
        """The unit of the losses: ``nats/sequence`` or ``nats/answer token``."""
        return "nats/sequence" if self.kind == "classify" else "nats/answer token"


def _spec(name, kind, target, classes, vocab, eval_split, generated, chance, inputs=("input_ids",),
          input_kind="tokens") -> TaskSpec:
    return TaskSpec(name, kind, inputs, target, classes, input_kind, vocab, "train", eval_split, generated, chance)


TASKS: dict[str, TaskSpec] = {s.name: s for s in (
    # Copy Memory: 16 ids, the 10 answer positions after the delay scored; chance 1/10 (PCT paper D.1)
    _spec("copy_memory", "tokens", "labels", COPY_VOCAB_SIZE, COPY_VOCAB_SIZE, "validation", True,
          1 / COPY_NUM_SYMBOLS),
    _spec("needle", "classify", "target", NEEDLE_VOCAB_SIZE, NEEDLE_VOCAB_SIZE, "validation", True,
          1 / NEEDLE_VOCAB_SIZE),
    _spec("listops", "classify", "target", 10, _LISTOPS_IDS, "validation", True, 0.1),
    _spec("lra_listops", "classify", "target", 10, _LISTOPS_IDS, "validation", False, 0.1),
    _spec("lra_text", "classify", "label", 2, LRA_TEXT_VOCAB_SIZE, "test", False, 0.5),
    _spec("lra_image", "classify", "label", 10, 256, "test", False, 0.1),
    _spec("fft_mnist", "classify", "label", 10, None, "test", False, 0.1, ("real", "imag"), "complex"),
    _spec("pathfinder", "classify", "label", 2, 256, "validation", False, 0.5),
    _spec("pathfinder_synthetic", "classify", "label", 2, 256, "validation", True, 0.5),
)}
"""The datasets trained as tasks, by registered name."""


def task_spec(dataset: str) -> TaskSpec | None:
    """The task of ``dataset``, or ``None`` for a language-model dataset (text or bytes)."""
    return TASKS.get(dataset)


def _describe(kind: str) -> str:
    return ("sequence classification (one label per sequence, task='classify')" if kind == "classify"
            else "per-position prediction (a label per position, task='tokens')")


def head_problem(head: TaskHead, spec: TaskSpec, length: int) -> str | None:
    """Why a model with ``head`` cannot learn ``spec`` on sequences of ``length`` positions (``None`` if it can)."""
    if head.kind != spec.kind:
        return f"the model's head does {_describe(head.kind)} but dataset {spec.name!r} needs {_describe(spec.kind)}"
    if head.num_classes != spec.num_classes:
        return (f"the model's head predicts {head.num_classes} classes but dataset {spec.name!r} has "
                f"{spec.num_classes}")
    if head.input_kind != spec.input_kind:
        return f"the model takes {head.input_kind!r} inputs but dataset {spec.name!r} holds {spec.input_kind!r} ones"
    if head.length < length:
        return (f"dataset {spec.name!r} has sequences of {length} positions, longer than the model's configured "
                f"length {head.length}")
    if spec.vocab_size is not None and head.vocab_size is not None and head.vocab_size < spec.vocab_size:
        return f"the model embeds {head.vocab_size} ids but dataset {spec.name!r} uses {spec.vocab_size}"
    return None


def build_task_model(name: str, overrides: dict, spec: TaskSpec, length: int):
    """Create model ``name`` for ``spec``: the task fixes the head's fields unless ``overrides`` sets them.

    The model class supplies those fields through ``task_config(kind, num_classes, length, input_kind,
    vocab_size)`` (e.g. ``pct``: ``task``, ``num_classes``, ``context``, ``input_kind``, ``vocab_size``;
    ``pcr-pathx``: ``num_classes``, ``image_size``); an override that disagrees with the task is refused by the head
    check.

    Raises:
        KeyError: unknown model. ValueError: the model has no classification / per-position head, cannot be
        configured for this task, or its head (as overridden) does not fit the dataset (the message says how).
    """
    from cnet.core.plugins import registries

    registry = registries().models
    cls = registry.get(name)["obj"]
    if not (hasattr(cls, "task_head") and hasattr(cls, "task_config")):
        able = [n for n in registry.names() if hasattr(registry.get(n)["obj"], "task_head")]
        raise ValueError(f"train: model {name!r} has no classification or per-position head; dataset {spec.name!r} "
                         f"is a {_describe(spec.kind)} task (models with such heads: {', '.join(able)})")
    try:
        fitted = cls.task_config(spec.kind, spec.num_classes, length, spec.input_kind, spec.vocab_size)
    except ValueError as exc:
        raise ValueError(f"train: model {name!r} cannot learn dataset {spec.name!r}: {exc}") from None
    model = create(name, **{**fitted, **overrides})
    problem = head_problem(model.task_head(), spec, length)
    if problem:
        raise ValueError(f"train: model {name!r} as configured does not fit dataset {spec.name!r}: {problem}")
    return model


@torch.no_grad()
def task_sums(model, inputs: torch.Tensor, targets: torch.Tensor, *, batch: int,
              device: str | torch.device) -> torch.Tensor:
    """Summed cross-entropy, correct predictions and scored items of ``model`` on a held-out set (eval mode).

    Args:
        model: a model with a task head, returning logits ``r[B, C]`` or ``r[B, T, C]``.
        inputs: ``i[N, T]`` ids or ``c[N, T]`` values; targets: ``i[N]`` or ``i[N, T]`` (-100 unscored).
        batch: rows per forward pass (>= 1).
        device: where to run.

    Returns:
        ``r[3]`` float64 on ``device``: total loss in nats, number correct, number of scored items (sequences, or
        answer positions); loss / items is nats per item, correct / items the accuracy.

    Raises:
        ValueError: ``batch`` < 1.
    """
    if batch < 1:
        raise ValueError(f"task_sums: 'batch' must be >= 1, got {batch}")
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64, device=device)
    for i in range(0, inputs.shape[0], batch):
        x, y = inputs[i:i + batch].to(device), targets[i:i + batch].to(device)
        logits = model(x).logits.float()
        flat_y = y.reshape(-1).long()
        flat = logits.reshape(flat_y.shape[0], -1)
        scored = flat_y != IGNORE_INDEX
        sums[0] += F.cross_entropy(flat, flat_y, ignore_index=IGNORE_INDEX, reduction="sum").double()
        sums[1] += (flat.argmax(-1) == flat_y)[scored].sum()
        sums[2] += scored.sum()
    model.train(was_training)
    return sums


def batch_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Accuracy of ``logits`` (``r[B, C]`` or ``r[B, T, C]``) on ``targets`` (``i[B]`` or ``i[B, T]``, -100 unscored).

    Returns ``nan`` when no item is scored.
    """
    y = targets.reshape(-1)
    scored = y != IGNORE_INDEX
    hits = (logits.detach().reshape(y.shape[0], -1).argmax(-1) == y)[scored]
    return float(hits.float().mean()) if hits.numel() else float("nan")
