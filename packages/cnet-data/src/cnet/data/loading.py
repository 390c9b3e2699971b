"""``cnet.data.load``: one entry point for every registered dataset (DESIGN.md sections 3 and 5)."""

from __future__ import annotations

from typing import Any

import datasets

from cnet.core.plugins import registries

__all__ = ["load"]


def load(name: str, split: str | None, **options: Any) -> datasets.Dataset:
    """Load the registered dataset ``name``: calls its loader as ``loader(split, **options)``.

    Datasets are registered by plugins through the ``cnet_register_datasets`` hook (cnet-data's own are listed
    in its README); ``cnet plugins`` lists every installed one.

    Args:
        name: registered dataset name, e.g. ``"tiny_shakespeare"``.
        split: the split the loader understands, e.g. ``"train"`` / ``"validation"`` (``None`` where the loader
            allows it, e.g. ``text_bytes`` over a whole folder).
        **options: loader options, e.g. ``path=...``.

    Returns:
        What the loader returns: a :class:`datasets.Dataset` (or ``IterableDataset``).

    Raises:
        TypeError: ``name`` is not a str.
        KeyError: unknown ``name``; the message lists the registered datasets.
        Anything the loader raises (ValueError for a bad split, FileNotFoundError when the data is missing).
    """
    if not isinstance(name, str):
        raise TypeError(f"cnet.data.load: argument 'name' must be a dataset name (str), got {type(name).__name__}")
    return registries().datasets.get(name)["obj"](split, **options)
