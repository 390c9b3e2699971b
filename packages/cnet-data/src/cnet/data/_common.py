"""Helpers shared by the dataset modules: argument checks, local folders, Hub loads, seeded row generators.

Private to cnet-data. The public source rules live in :mod:`cnet.data.sources` (DESIGN.md section 5); this module
adds the folder-shaped counterpart of :func:`cnet.data.sources.local_file`, a not-found error for datasets that
have no Hub copy, and the deterministic row generator every synthetic task uses.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa

from cnet.data.sources import DATA_DIR_ENV, not_found_error

SPLIT_CODES = {"train": 0, "validation": 1, "test": 2}


def check_split(dataset: str, split: Any, allowed: Sequence[str | None]) -> None:
    """Raise ``ValueError`` naming ``split`` and the accepted values when ``split`` is not one of ``allowed``."""
    if split not in allowed:
        names = ", ".join(repr(s) for s in allowed)
        raise ValueError(f"{dataset}: argument 'split' must be one of {names}, got {split!r}")


def check_int(dataset: str, name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """``value`` as an int in ``[minimum, maximum]``.

    Raises:
        TypeError: ``value`` is not an int (bools are refused too).
        ValueError: ``value`` lies outside the bounds; the message names the argument.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{dataset}: argument {name!r} must be an int, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{dataset}: argument {name!r} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{dataset}: argument {name!r} must be <= {maximum}, got {value}")
    return value


def check_count(dataset: str, num_examples: Any) -> int | None:
    """``num_examples`` checked: ``None`` (an unbounded stream) or an int >= 1."""
    return None if num_examples is None else check_int(dataset, "num_examples", num_examples, minimum=1)


def local_dir(dirnames: str | Sequence[str], path: str | os.PathLike | None) -> Path | None:
    """The local copy of a dataset held as a folder: ``path`` when given, else ``$CNET_DATA_DIR/<dirname>``.

    Args:
        dirnames: the folder's name inside ``$CNET_DATA_DIR``, or several names tried in order.
        path: an explicit folder given by the caller; it wins over ``$CNET_DATA_DIR`` and must exist.

    Returns:
        The folder, or ``None`` when no ``path`` was given and ``$CNET_DATA_DIR`` is unset or lacks every name.

    Raises:
        FileNotFoundError: ``path`` was given but is not an existing folder.
    """
    names = [dirnames] if isinstance(dirnames, str) else list(dirnames)
    if path is not None:
        explicit = Path(path)
        if not explicit.is_dir():
            what = "a file" if explicit.is_file() else "missing"
            raise FileNotFoundError(f"path={str(explicit)!r} is {what}; expected a folder laid out like "
                                    f"$CNET_DATA_DIR/{names[0]}")
        return explicit
    root = os.environ.get(DATA_DIR_ENV)
    if root:
        for name in names:
            candidate = Path(root) / name
            if candidate.is_dir():
                return candidate
    return None


def hub_load(dataset: str, relname: str, hub_id: str, split: str, **kwargs: Any) -> Any:
    """``datasets.load_dataset(hub_id, split=split, **kwargs)``; any failure becomes the three-source error."""
    try:
        return datasets.load_dataset(hub_id, split=split, **kwargs)
    except Exception as exc:  # offline, no network, missing repo or split: "not found on the Hub"
        raise not_found_error(dataset, relname, hub_id, f"{type(exc).__name__}: {exc}") from exc


def to_dataset(columns: dict[str, Any], features: datasets.Features) -> datasets.Dataset:
    """A :class:`datasets.Dataset` from columns; 2-D numpy arrays become fixed-length list columns quickly.

    ``Dataset.from_dict`` converts a 2-D array row by row (about 30 s for 100M entries); building the Arrow
    fixed-size list directly takes well under a second.
    """
    converted = {}
    for name, values in columns.items():
        if isinstance(values, np.ndarray) and values.ndim == 2:
            converted[name] = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
        else:
            converted[name] = values
    return datasets.Dataset.from_dict(converted, features=features)


def row_rng(seed: int, split: str, index: int) -> np.random.Generator:
    """The generator of row ``index`` of ``split``: PCG64 seeded from ``SeedSequence([seed, split code, index])``.

    Each row has its own stream, so row ``i`` is the same in a finite dataset, in an unbounded stream, and for
    any ``num_examples`` larger than ``i``; the three splits use disjoint seed sequences.
    """
    return np.random.default_rng([seed, SPLIT_CODES[split], index])


def generate(dataset: str, make_row: Callable[[np.random.Generator], dict[str, Any]], features: datasets.Features,
             split: str, num_examples: int | None, seed: int) -> datasets.Dataset | datasets.IterableDataset:
    """Rows ``make_row(row_rng(seed, split, i))`` for ``i = 0, 1, ...``.

    Returns:
        A :class:`datasets.Dataset` of ``num_examples`` rows, or, for ``num_examples=None``, an unbounded
        :class:`datasets.IterableDataset` whose first rows equal those of the finite dataset.
    """
    if num_examples is None:
        def stream() -> Iterator[dict[str, Any]]:
            index = 0
            while True:
                yield make_row(row_rng(seed, split, index))
                index += 1

        return datasets.IterableDataset.from_generator(stream, features=features)
    rows = [make_row(row_rng(seed, split, i)) for i in range(num_examples)]
    columns: dict[str, Any] = {}
    for name in features:
        values = [r[name] for r in rows]
        if values and isinstance(values[0], np.ndarray) and len({v.shape for v in values}) == 1:
            columns[name] = np.stack(values)
        else:
            columns[name] = values
    return to_dataset(columns, features)


def check_seed(dataset: str, seed: Any) -> int:
    """``seed`` as a non-negative int (what :class:`numpy.random.SeedSequence` accepts)."""
    return check_int(dataset, "seed", seed, minimum=0)


def image_array(value: Any, mode: str) -> np.ndarray:
    """An image cell as a uint8 array in PIL ``mode`` (``"L"``: ``[H, W]``; ``"RGB"``: ``[H, W, 3]``).

    ``value`` is what a Hub image column holds: a PIL image (decoded column), a ``{"bytes": ..., "path": ...}`` dict
    (undecoded column), or already an array (returned as uint8 unchanged).
    """
    if isinstance(value, dict):
        from PIL import Image

        value = Image.open(io.BytesIO(value["bytes"])) if value.get("bytes") is not None else Image.open(value["path"])
    if hasattr(value, "convert") and hasattr(value, "mode"):
        value = value.convert(mode)
    return np.asarray(value, dtype=np.uint8)
