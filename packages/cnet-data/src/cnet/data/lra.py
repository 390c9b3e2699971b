"""Long Range Arena text and image tasks: IMDB as 4,096 byte tokens, CIFAR-10 as 1,024 grey pixels.

papers/NOTES.md ("Data formats"): LRA Text is IMDB bytes at length 4,096; LRA Image is CIFAR-10 in grey, 1,024
tokens with 256 levels (PCT paper D.1; both scored on the held-out test split).

Sources, in order (DESIGN.md section 5):

- ``lra_text``: ``path=`` or ``$CNET_DATA_DIR/aclImdb`` (the folder of the original IMDB tarball:
  ``<split>/neg/<id>_<rating>.txt`` and ``<split>/pos/...``), then the Hub ``stanfordnlp/imdb`` (``text``, ``label``).
- ``lra_image``: ``path=`` or ``$CNET_DATA_DIR/cifar-10-batches-bin`` (CIFAR-10's binary release: records of one
  label byte and 3,072 pixel bytes, the red, green and blue planes of 32x32, row-major; read with numpy), then the
  Hub ``uoft-cs/cifar10`` (``img``, ``label``). CIFAR-10's "python version" is a pickle and is never read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np

from cnet.data._common import check_int, check_split, hub_load, image_array, local_dir, to_dataset

__all__ = ["CIFAR_DIR", "CIFAR_HUB_ID", "GREY_WEIGHTS", "IMDB_DIR", "IMDB_HUB_ID", "LRA_TEXT_PAD",
           "LRA_TEXT_VOCAB_SIZE", "byte_ids", "grey_levels", "lra_image", "lra_text"]

IMDB_DIR = "aclImdb"
IMDB_HUB_ID = "stanfordnlp/imdb"
CIFAR_DIR = "cifar-10-batches-bin"
CIFAR_HUB_ID = "uoft-cs/cifar10"
LRA_TEXT_PAD = 0
LRA_TEXT_VOCAB_SIZE = 257
GREY_WEIGHTS = (0.2989, 0.5870, 0.1140)  # ITU-R BT.601 luma, as rounded in tf.image.rgb_to_grayscale
_SPLITS = ("train", "test")
_CIFAR_FILES = {"train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"]}
_REVIEW = re.compile(r"^(\d+)_(\d+)\.txt$")


def byte_ids(texts: Sequence[bytes], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Byte tokens for a classifier: id = byte value + 1 (1..256), 0 = padding; truncated or padded to ``length``.

    Args:
        texts: the documents as bytes (UTF-8 for IMDB).
        length: tokens per row, >= 1.

    Returns:
        ``(ids, lengths)``: int16 ``[N, length]`` and int64 ``[N]`` (real tokens per row, ``min(len, length)``).
    """
    length = check_int("byte_ids", "length", length, minimum=1)
    ids = np.zeros((len(texts), length), dtype=np.int16)
    lengths = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        chunk = np.frombuffer(bytes(text[:length]), dtype=np.uint8)
        ids[i, :chunk.size] = chunk.astype(np.int16) + 1
        lengths[i] = chunk.size
    return ids, lengths


def _imdb_local(folder: Path, split: str) -> tuple[list[bytes], list[int]]:
    texts: list[bytes] = []
    labels: list[int] = []
    for label, name in enumerate(("neg", "pos")):
        sub = folder / split / name
        if not sub.is_dir():
            raise FileNotFoundError(f"lra_text: no folder {sub}; the IMDB layout is {folder}/<train|test>/<neg|pos>/"
                                    "<id>_<rating>.txt")
        files = []
        for f in sub.iterdir():
            match = _REVIEW.match(f.name)
            if f.is_file() and match:
                files.append((int(match.group(1)), f.name, f))
        for _, _, f in sorted(files):
            texts.append(f.read_bytes())
            labels.append(label)
    if not texts:
        raise ValueError(f"lra_text: {folder / split} holds no reviews (<id>_<rating>.txt files)")
    return texts, labels


def lra_text(split: str, *, path: str | os.PathLike | None = None, length: int = 4096) -> datasets.Dataset:
    """LRA Text: IMDB reviews as byte tokens, truncated or padded to ``length`` (4,096), binary sentiment.

    Vocabulary: 257 ids, 0 = padding, byte ``b`` -> ``b + 1`` (:func:`byte_ids`). Local rows come in the order
    negative reviews then positive ones, each by increasing review id; Hub rows keep the Hub's order.

    Args:
        split: ``"train"`` or ``"test"`` (25,000 reviews each, half positive).
        path: an ``aclImdb`` folder (wins over ``$CNET_DATA_DIR/aclImdb`` and the Hub).
        length: tokens per row, >= 1.

    Returns:
        A :class:`datasets.Dataset` with ``"input_ids"`` (int16, ``length`` ids), ``"length"`` (int64: real tokens)
        and ``"label"`` (int64: 0 negative, 1 positive).

    Raises:
        ValueError: unknown split, bad ``length``, an empty folder.
        FileNotFoundError: ``path`` not a folder, a missing ``neg``/``pos`` folder, or no source (three named).
    """
    check_split("lra_text", split, _SPLITS)
    length = check_int("lra_text", "length", length, minimum=1)
    folder = local_dir(IMDB_DIR, path)
    if folder is not None:
        texts, labels = _imdb_local(folder, split)
    else:
        loaded = hub_load("lra_text", f"{IMDB_DIR}/{split}", IMDB_HUB_ID, split)
        texts = [t.encode("utf-8") for t in loaded["text"]]
        labels = [int(v) for v in loaded["label"]]
    ids, lengths = byte_ids(texts, length)
    features = datasets.Features({"input_ids": datasets.Sequence(datasets.Value("int16"), length=length),
                                  "length": datasets.Value("int64"), "label": datasets.Value("int64")})
    return to_dataset({"input_ids": ids, "length": lengths, "label": labels}, features)


def grey_levels(rgb: np.ndarray) -> np.ndarray:
    """RGB pixels -> grey levels 0..255: ``floor(0.2989 R + 0.5870 G + 0.1140 B + 0.5)`` (round half up).

    Args:
        rgb: uint8 array ``[..., 3]`` (channels last).

    Returns:
        uint8 array ``[...]``.

    Raises:
        ValueError: the last axis is not 3.
    """
    rgb = np.asarray(rgb)
    if rgb.ndim < 1 or rgb.shape[-1] != 3:
        raise ValueError(f"grey_levels: argument 'rgb' must end in 3 channels, got shape {list(rgb.shape)}")
    weights = np.asarray(GREY_WEIGHTS, dtype=np.float64)
    grey = np.floor(rgb.astype(np.float64) @ weights + 0.5)
    return np.clip(grey, 0, 255).astype(np.uint8)


def _cifar_local(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for name in _CIFAR_FILES[split]:
        file = folder / name
        if not file.is_file():
            raise FileNotFoundError(f"lra_image: no {file}; CIFAR-10's binary release holds "
                                    f"{', '.join(_CIFAR_FILES['train'] + _CIFAR_FILES['test'])}")
        raw = np.frombuffer(file.read_bytes(), dtype=np.uint8)
        if raw.size == 0 or raw.size % 3073:
            raise ValueError(f"{file}: {raw.size} bytes is not a whole number of 3,073-byte CIFAR-10 records")
        records = raw.reshape(-1, 3073)
        labels.append(records[:, 0].astype(np.int64))
        images.append(records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.concatenate(images), np.concatenate(labels)


def lra_image(split: str, *, path: str | os.PathLike | None = None) -> datasets.Dataset:
    """LRA Image: CIFAR-10 in grey as a sequence of 1,024 pixel tokens with 256 levels; 10 classes.

    Each 32x32 image becomes grey levels by :func:`grey_levels` (weights :data:`GREY_WEIGHTS`), flattened
    row-major: token ``32 r + c`` is the pixel of row ``r``, column ``c``. Token ids are the grey levels 0..255
    (no padding id: every row has 1,024 tokens).

    Args:
        split: ``"train"`` (50,000) or ``"test"`` (10,000).
        path: a ``cifar-10-batches-bin`` folder (wins over ``$CNET_DATA_DIR/cifar-10-batches-bin`` and the Hub).

    Returns:
        A :class:`datasets.Dataset` with ``"input_ids"`` (uint8, 1,024 grey levels) and ``"label"`` (int64, 0..9 in
        CIFAR-10's class order: airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck).

    Raises:
        ValueError: unknown split; malformed files.
        FileNotFoundError: ``path`` not a folder, a batch file missing, or no source (three named).
    """
    check_split("lra_image", split, _SPLITS)
    folder = local_dir(CIFAR_DIR, path)
    if folder is not None:
        rgb, labels = _cifar_local(folder, split)
    else:
        loaded = hub_load("lra_image", f"{CIFAR_DIR}/{_CIFAR_FILES[split][0]}", CIFAR_HUB_ID, split)
        rgb = np.stack([image_array(v, "RGB") for v in loaded["img"]])
        labels = np.asarray(loaded["label"], dtype=np.int64)
    if rgb.shape[1:] != (32, 32, 3):
        raise ValueError(f"lra_image: expected 32x32 RGB images, got shape {list(rgb.shape[1:])}")
    grey = grey_levels(rgb).reshape(len(rgb), 1024)
    features = datasets.Features({"input_ids": datasets.Sequence(datasets.Value("uint8"), length=1024),
                                  "label": datasets.Value("int64")})
    return to_dataset({"input_ids": grey, "label": labels}, features)
