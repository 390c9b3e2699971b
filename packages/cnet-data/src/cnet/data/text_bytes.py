"""Byte-level corpora from any text file or folder of files (e.g. PG-19 books, LRA text), one row per file."""

from __future__ import annotations

import os
from pathlib import Path

import datasets

__all__ = ["text_bytes"]

_FEATURES = datasets.Features({"path": datasets.Value("string"), "bytes": datasets.Value("binary")})


def text_bytes(path: str | os.PathLike, split: str | None = None) -> datasets.Dataset:
    """Read a file, or every regular file below a folder, as raw bytes.

    Files below a folder are taken recursively (hidden files included, symlinked files followed) in sorted order
    of their path components relative to the folder. Everything is read into memory.

    Args:
        path: a file, or a folder of files.
        split: for a folder, read ``path/split`` instead (e.g. ``"train"``); ``None`` reads all of ``path``.

    Returns:
        A :class:`datasets.Dataset` with columns ``"path"`` (str, the file's path as found under ``path``) and
        ``"bytes"`` (binary, the file's contents), one row per file.

    Raises:
        FileNotFoundError: ``path`` or ``path/split`` does not exist.
        ValueError: ``split`` given for a single file (the message says that training needs a folder with
            ``train/`` and ``validation/``); an empty corpus (no files, or only empty files).
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"text_bytes: path={str(root)!r} does not exist; expected a file or a folder of files")
    if root.is_file():
        if split is not None:
            raise ValueError(f"text_bytes: split={split!r} reads the sub-folder {split}/ of a folder, but "
                             f"path={str(root)!r} is a file; training (cnet train, cnet compare) needs a folder "
                             "holding train/ and validation/ sub-folders of text files")
        base, files = root, [root]
    else:
        base = root if split is None else root / split
        if not base.is_dir():
            present = sorted(p.name for p in root.iterdir() if p.is_dir())
            raise FileNotFoundError(f"text_bytes: no folder {base} for split={split!r}; a split is a sub-folder of "
                                    "path (training needs train/ and validation/); sub-folders of "
                                    f"{root}: {present or 'none'}")
        files = sorted((p for p in base.rglob("*") if p.is_file()), key=lambda p: p.relative_to(base).parts)
    contents = [f.read_bytes() for f in files]
    if not any(contents):
        raise ValueError(f"empty corpus: {base} holds " + ("only empty files" if files else "no files"))
    return datasets.Dataset.from_dict({"path": [str(f) for f in files], "bytes": contents}, features=_FEATURES)
