"""``cnet eval`` for task datasets: a saved classifier or per-position model scored on a split (loss and accuracy)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from cnet.core.checkpoint import read_sidecar
from cnet.models.registry import load
from cnet.models.task_data import data_options, load_held_out
from cnet.models.tasks import TaskSpec, head_problem, task_sums

__all__ = ["evaluate_task"]


def _trained_options(folder: str | Path, dataset: str) -> dict:
    """The data options the checkpoint was trained with on ``dataset`` (``{}`` if none are recorded)."""
    try:
        info = read_sidecar(folder, "training.json")
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(info, dict) or info.get("dataset") != dataset:
        return {}
    options = info.get("data_options")
    return dict(options) if isinstance(options, dict) else {}


def evaluate_task(folder: str | Path, spec: TaskSpec, *, split: str | None = None, data_path: str | None = None,
                  options: dict | None = None, num_examples: int = 2048, batch: int = 64) -> dict:
    """Score the model saved in ``folder`` on a split of ``spec``'s dataset.

    Args:
        folder: a checkpoint folder written by ``cnet train`` (or :func:`cnet.models.save`).
        spec: the task (:data:`cnet.models.tasks.TASKS`).
        split: default: the task's held-out split (``validation`` or ``test``).
        data_path: explicit data location (file datasets).
        options: loader options; default: those recorded in the folder's ``training.json`` for this dataset
            (e.g. Copy's ``delay``), which ``options`` overrides key by key.
        num_examples: rows drawn from a generated dataset (>= 1); file splits are scored whole.
        batch: rows per forward pass.

    Returns:
        ``{"model", "dataset", "split", "task", "nats_per_sequence" | "nats_per_answer_token", "accuracy",
        "scored", "chance"}``: mean cross-entropy in nats per scored item, accuracy over the same items (sequences,
        or Copy's answer positions) and their number.

    Raises:
        FileNotFoundError / ValueError: a missing or corrupt checkpoint; ValueError: the model has no task head, its
        head does not fit the dataset, ``num_examples`` < 1; whatever the dataset loader raises.
    """
    if num_examples < 1:
        raise ValueError(f"evaluate_task: 'num_examples' must be >= 1, got {num_examples}")
    model = load(folder)
    if not hasattr(model, "task_head"):
        raise ValueError(f"{folder} holds a model without a classification or per-position head; dataset "
                         f"{spec.name!r} is a task")
    merged = {**_trained_options(folder, spec.name), **(options or {})}
    seed = merged.pop("seed", 0)
    opts = data_options(spec, merged, seed=seed, path=data_path)
    split = split or spec.eval_split
    x, y = load_held_out(spec, split, opts, num_examples if spec.generated else sys.maxsize)
    problem = head_problem(model.task_head(), spec, int(x.shape[1]))
    if problem:
        raise ValueError(f"{folder} does not fit dataset {spec.name!r}: {problem}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    loss, correct, items = (float(v) for v in task_sums(model.to(device), x, y, batch=batch, device=device))
    unit = "nats_per_sequence" if spec.kind == "classify" else "nats_per_answer_token"
    return {"model": str(Path(folder)), "dataset": spec.name, "split": split, "task": spec.kind,
            unit: loss / max(items, 1), "accuracy": correct / max(items, 1), "scored": int(items),
            "chance": spec.chance}
