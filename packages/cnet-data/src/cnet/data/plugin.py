"""cnet-data's plugin (entry point ``data`` in group ``cnet``): registers its datasets with cnet-core."""

from __future__ import annotations

import os

from datasets import Dataset

from cnet.core.hookspecs import hookimpl
from cnet.data.text import tiny_shakespeare
from cnet.data.text_bytes import text_bytes

__all__ = ["cnet_register_datasets"]


def _load_text_bytes(split: str | None, *, path: str | os.PathLike | None = None) -> Dataset:
    if path is None:
        raise ValueError("dataset 'text_bytes' needs the option path=FILE_OR_FOLDER")
    return text_bytes(path, split)


@hookimpl
def cnet_register_datasets(datasets):
    """Register ``tiny_shakespeare`` (options: ``path``) and ``text_bytes`` (option ``path``, required)."""
    datasets.add("tiny_shakespeare", tiny_shakespeare,
                 description="character-level tiny-shakespeare, CNet's 90/10 split by position (train, validation)")
    datasets.add("text_bytes", _load_text_bytes,
                 description="raw bytes of a file or of every file below a folder (split: sub-folder or None)")
