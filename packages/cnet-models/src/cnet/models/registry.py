"""Build, save and load registered models by name (DESIGN.md section 4).

A model is registered through ``cnet_register_models`` as ``models.add(name, ModelClass, config=ConfigClass,
description=...)``. A saved model is a folder: ``config.json`` (registry name, config, cnet version),
``model.safetensors`` and sidecars such as ``vocab.json``; loading never unpickles.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from torch import nn

from cnet.core.checkpoint import load_folder, save_folder
from cnet.core.plugins import registries

__all__ = ["create", "list_models", "save", "load", "model_name"]


def list_models() -> list[str]:
    """Sorted names of every registered model architecture."""
    return registries().models.names()


def _build_config(name: str, overrides: dict):
    entry = registries().models.get(name)
    cfg_cls = entry["config"]
    fields = {f.name for f in dataclasses.fields(cfg_cls)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"model {name!r} has no config field(s) {', '.join(unknown)}; "
                         f"fields: {', '.join(sorted(fields))}")
    return entry, cfg_cls(**overrides)


def create(name: str, **overrides) -> nn.Module:
    """Build a fresh model: ``create("born-lm", embed_dim=64, num_layers=2)``.

    Args:
        name: a name from :func:`list_models`.
        **overrides: config fields to change from the architecture's defaults.

    Raises:
        KeyError: unknown model name (the message lists the known ones).
        ValueError: an override that is not a config field, or a config the model rejects.
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
        FileNotFoundError: missing folder or files. ValueError: corrupt files, or a state dict that does not
        fit the config. KeyError: the folder names a model that is not installed.
    """
    ckpt = load_folder(folder, map_location=map_location)
    name = ckpt.config.get("model")
    if not isinstance(name, str) or not isinstance(ckpt.config.get("config"), dict):
        raise ValueError(f"corrupt checkpoint {folder}: config.json lacks 'model' and 'config'")
    model = create(name, **ckpt.config["config"])
    missing, unexpected = model.load_state_dict(ckpt.state_dict, strict=False)
    if missing or unexpected:
        raise ValueError(f"corrupt checkpoint {folder}: state dict does not fit {name!r} "
                         f"(missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]})")
    return model
