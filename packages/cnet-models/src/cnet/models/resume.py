"""Exact resumption of a training run: the state beside the best checkpoint, saved without pickle.

At every evaluation :func:`cnet.models.train.train` writes ``OUTPUT/.resume/`` (hidden, so ``cnet push`` leaves
it out): the current (not the best) weights as a checkpoint folder, the optimiser's tensors in
``optimizer.safetensors``, the data-order generator of each process in ``rng-<rank>.safetensors``, and the loop's
counters (step, best loss, evaluation log, optimiser hyper-parameters, elapsed time) in ``config.json``.
``cnet train ... --resume`` continues from there and takes the same steps, on the same batches, as an
uninterrupted run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from cnet.core.checkpoint import atomic_write, load_folder, read_sidecar, save_folder

__all__ = ["RESUME_DIR", "ResumeState", "save_resume", "load_resume", "settings_differences"]

RESUME_DIR = ".resume"


@dataclass
class ResumeState:
    """What :func:`load_resume` returns: counters (``loop``), weights, optimiser state dict, generator state."""

    loop: dict
    model_state: dict[str, torch.Tensor]
    optimizer_state: dict
    generator_state: torch.Tensor


def _flatten_optimizer(state: dict) -> tuple[dict[str, torch.Tensor], list]:
    tensors = {f"{idx}/{name}": value.detach().cpu().contiguous()
               for idx, entry in state["state"].items() for name, value in entry.items()
               if isinstance(value, torch.Tensor)}
    return tensors, state["param_groups"]


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], groups: list) -> dict:
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        idx, name = key.split("/", 1)
        state.setdefault(int(idx), {})[name] = value
    return {"state": state, "param_groups": groups}


def save_resume(output: Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator,
                rank: int, loop: dict, is_main: bool) -> None:
    """Write the resume state of one process (the main process also writes weights, optimiser and counters).

    Args:
        output: the run's output folder; the state goes to ``output/.resume``.
        model: the unwrapped model; optimizer: the unwrapped optimiser.
        generator: this process's data-order generator.
        rank: this process's index.
        loop: JSON-able counters of the loop.
        is_main: whether this is the main process.
    """
    folder = Path(output) / RESUME_DIR
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / f"rng-{rank}.safetensors", st_save({"state": generator.get_state()}))
    if is_main:
        tensors, groups = _flatten_optimizer(optimizer.state_dict())
        save_folder(folder, config={**loop, "param_groups": groups}, state_dict=model.state_dict(),
                    sidecars={"optimizer.safetensors": st_save(tensors)})


def load_resume(output: Path, rank: int) -> ResumeState:
    """Read the state :func:`save_resume` wrote.

    Raises:
        FileNotFoundError: the run has no resume state (it never reached an evaluation). ValueError: the state is
        corrupt.
    """
    folder = Path(output) / RESUME_DIR
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"train: no resume state in {folder}; a run writes it at its first evaluation")
    ckpt = load_folder(folder)
    loop = dict(ckpt.config)
    groups = loop.pop("param_groups", None)
    try:
        opt_tensors = st_load(read_sidecar(folder, "optimizer.safetensors", binary=True))
        gen_state = st_load((folder / f"rng-{rank}.safetensors").read_bytes())["state"]
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        raise ValueError(f"corrupt resume state in {folder}: {exc}") from None
    if not isinstance(groups, list):
        raise ValueError(f"corrupt resume state in {folder}: config.json lacks the optimiser's param_groups")
    loop.pop("cnet_version", None)
    return ResumeState(loop, ckpt.state_dict, _unflatten_optimizer(opt_tensors, groups), gen_state)


_MISSING = object()


def settings_differences(saved: dict, given: dict) -> list[str]:
    """The settings of a run that differ from a saved run's, one ``"name: saved X, given Y"`` text each.

    ``saved`` and ``given`` map a setting (``model``, ``dataset``, ``model_config``, ``train_config``,
    ``data_options``) to its value; the fields of a dict-valued setting are compared one by one and named alone
    (``"steps: saved 120, given 200"``), the data options as ``"data option delay: ..."``. A field only one side
    has shows as ``unset`` on the other.
    """
    out = []
    for key in given:
        old, new = saved.get(key, _MISSING), given[key]
        if isinstance(old, dict) and isinstance(new, dict):
            prefix = "data option " if key == "data_options" else ""
            for field in [*old, *(f for f in new if f not in old)]:
                a, b = old.get(field, _MISSING), new.get(field, _MISSING)
                if a != b:
                    out.append(f"{prefix}{field}: saved {_show(a)}, given {_show(b)}")
        elif old != new:
            out.append(f"{key}: saved {_show(old)}, given {_show(new)}")
    return out


def _show(value) -> str:
    return "unset" if value is _MISSING else repr(value) if isinstance(value, str) else str(value)
