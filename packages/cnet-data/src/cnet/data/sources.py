"""Where dataset files come from, in order (DESIGN.md section 5).

1. an explicit ``path=`` option given by the caller;
2. ``$CNET_DATA_DIR/<file name>`` (the environment variable names a folder holding the data files);
3. the Hugging Face Hub, through :func:`datasets.load_dataset` (works offline only from the local cache).

Loaders call :func:`local_file` for the first two and build their "not found" error with :func:`not_found_error`,
so every dataset names the same three places in the same words.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_DIR_ENV", "local_file", "not_found_error"]

DATA_DIR_ENV = "CNET_DATA_DIR"


def local_file(filename: str, path: str | os.PathLike | None = None) -> Path | None:
    """The local copy of a dataset file: ``path`` when given, else ``$CNET_DATA_DIR/filename`` when it exists.

    Args:
        filename: the file's name inside ``$CNET_DATA_DIR``, e.g. ``"tinyshakespeare.txt"``.
        path: an explicit file given by the caller; it wins over ``$CNET_DATA_DIR`` and must exist.

    Returns:
        The file's path, or ``None`` when no ``path`` was given and ``$CNET_DATA_DIR`` is unset, empty or lacks
        ``filename`` (the caller then tries the Hub).

    Raises:
        FileNotFoundError: ``path`` was given but is not an existing file.
    """
    if path is not None:
        explicit = Path(path)
        if not explicit.is_file():
            what = "a folder" if explicit.is_dir() else "missing"
            raise FileNotFoundError(f"path={str(explicit)!r} is {what}; expected the file {filename}")
        return explicit
    root = os.environ.get(DATA_DIR_ENV)
    if root:
        candidate = Path(root) / filename
        if candidate.is_file():
            return candidate
    return None


def not_found_error(dataset: str, filename: str, hub_id: str | None, hub_reason: str) -> FileNotFoundError:
    """The error raised when none of the three sources has ``dataset``.

    Args:
        dataset: the registered dataset name, e.g. ``"tiny_shakespeare"``.
        filename: the file or folder looked for in ``$CNET_DATA_DIR``.
        hub_id: the Hub dataset that was tried, or ``None`` for a dataset with no Hub copy.
        hub_reason: why the Hub load failed (e.g. offline mode, no network), or why there is none.

    Returns:
        A :class:`FileNotFoundError` naming the three sources and how to fix the problem.
    """
    root = os.environ.get(DATA_DIR_ENV)
    env_state = f"{Path(root) / filename} does not exist" if root else "the variable is not set"
    hub = f"the Hugging Face Hub dataset {hub_id!r}: {hub_reason}" if hub_id else f"the Hugging Face Hub: not used " \
        f"({hub_reason})"
    return FileNotFoundError(
        f"dataset {dataset!r} not found. Sources tried, in order: (1) an explicit path= option: none given; "
        f"(2) ${DATA_DIR_ENV}/{filename}: {env_state}; (3) {hub}. "
        f"Point {DATA_DIR_ENV} at a folder holding {filename}, or give its location: path=... in Python, "
        f"--data-path on the command line (cnet train, cnet eval)."
    )
