"""Build, save and load registered models by name (DESIGN.md section 4).

A model is registered through ``cnet_register_models`` as ``models.add(name, ModelClass, config=ConfigClass,
description=...)``. A saved model is a folder: ``config.json`` (registry name, config, cnet version),
``model.safetensors`` and sidecars such as ``vocab.json``; loading never unpickles.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from torch import nn

from cnet.core.checkpoint import load_folder, save_folder
from cnet.core.plugins import registries
from cnet.models.config import coerce_fields

__all__ = ["create", "list_models", "save", "load", "model_name"]


def list_models() -> list[str]:
    """Sorted names of every registered model architecture."""
    return registries().models.names()


def _build_config(name: str, overrides: dict):
    entry = registries().models.get(name)
    cfg_cls = entry["config"]
    return entry, cfg_cls(**coerce_fields(cfg_cls, overrides, f"model {name!r}"))


def create(name: str, **overrides) -> nn.Module:
    """Build a fresh model: ``create("born-lm", embed_dim=64, num_layers=2)``.

    Args:
        name: a name from :func:`list_models`.
        **overrides: config fields to change from the architecture's defaults.

    Raises:
        KeyError: unknown model name (the message lists the known ones).
        ValueError: an override that is not a config field, a value of the wrong type, or a config the model
            rejects.
    """
    entry, cfg = _build_config(name, overrides)
    model = entry["obj"](cfg)
    model.registry_name = name
    return model


def model_name(model: nn.Module) -> str:
    """The registry name a model was created or loaded under.

    Raises:
        ValueError: the model was not built by :func:`create` or :func:`load`.
    """
    name = getattr(model, "registry_name", None)
    if name is None:
        raise ValueError("model was not built with cnet.models.create/load, so its registry name is unknown")
    return name


def save(model: nn.Module, folder: str | Path, *, sidecars: dict | None = None) -> Path:
    """Save ``model`` to a checkpoint folder (atomic per file; an existing folder is only replaced file by file).

    Args:
        model: a model built by :func:`create` or :func:`load`.
        folder: destination folder (created if missing).
        sidecars: extra files, e.g. ``{"vocab.json": {...}}``.

    Returns:
        The folder path.
    """
    config = {"model": model_name(model), "config": dataclasses.asdict(model.config)}
    return save_folder(folder, config=config, state_dict=model.state_dict(), sidecars=sidecars)


def load(folder: str | Path, *, map_location: str = "cpu") -> nn.Module:
    """Load a model saved by :func:`save`.

    Raises:
        FileNotFoundError: missing folder or files. ValueError: corrupt files, an invalid config, or a tensor
        whose name, shape or dtype does not fit the config. KeyError: the folder names a model that is not installed.
    """
    ckpt = load_folder(folder, map_location=map_location)
    name = ckpt.config.get("model")
    if not isinstance(name, str) or not isinstance(ckpt.config.get("config"), dict):
        raise ValueError(f"corrupt checkpoint {folder}: config.json lacks 'model' and 'config'")
    try:
        model = create(name, **ckpt.config["config"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"corrupt checkpoint {folder}: config.json does not describe a valid {name!r}: "
                         f"{exc}") from None
    _check_state(folder, name, model.state_dict(), ckpt.state_dict)
    model.load_state_dict(ckpt.state_dict)
    return model


def _check_state(folder, name: str, expected: dict[str, torch.Tensor], found: dict[str, torch.Tensor]) -> None:
    missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or unexpected:
        raise ValueError(f"corrupt checkpoint {folder}: state dict does not fit {name!r} "
                         f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
    for key, ref in expected.items():
        t = found[key]
        if t.shape != ref.shape or t.dtype != ref.dtype:
            raise ValueError(f"corrupt checkpoint {folder}: tensor {key!r} is {t.dtype}{list(t.shape)}, the config "
                             f"of {name!r} needs {ref.dtype}{list(ref.shape)}")
