"""Seeded synthetic tasks of the PCT paper: Copy Memory and Needle-in-a-Haystack (PCT paper, section 2 and D.1).

Both generators are deterministic: row ``i`` of split ``s`` is drawn from its own PCG64 stream seeded with
``(seed, code of s, i)`` (train 0, validation 1, test 2), so equal seeds give identical rows, different seeds or
splits give different rows, and ``num_examples=None`` streams the same rows without end
(:class:`datasets.IterableDataset`), as the paper's "on the fly" training does.
"""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np

from cnet.data._common import check_count, check_int, check_seed, check_split, generate

__all__ = ["COPY_BLANK", "COPY_FIRST_SYMBOL", "COPY_LENGTH", "COPY_MARKER", "COPY_NUM_SYMBOLS", "COPY_VOCAB_SIZE",
           "IGNORE_INDEX", "NEEDLE_VOCAB_SIZE", "SPLITS", "copy_memory", "needle", "needle_position"]

SPLITS = ("train", "validation", "test")
IGNORE_INDEX = -100  # label of positions that are not scored (PyTorch's cross-entropy default ignore_index)

COPY_VOCAB_SIZE = 16
COPY_BLANK = 0
COPY_MARKER = 1
COPY_FIRST_SYMBOL = 2
COPY_NUM_SYMBOLS = 10
COPY_LENGTH = 10  # K, the number of tokens to copy

NEEDLE_VOCAB_SIZE = 64


def copy_memory(split: str = "train", *, delay: int = 1000, num_examples: int | None = 2048,
                seed: int = 0) -> datasets.Dataset | datasets.IterableDataset:
    """Copy Memory: remember ``K = 10`` tokens across ``delay`` steps and reproduce them (PCT paper D.1).

    Vocabulary (16 ids, fixed): ``0`` blank, ``1`` recall marker, ``2..11`` the ten data symbols, ``12..15``
    reserved (never emitted; the paper's model has a 16-entry vocabulary and chance 0.10, i.e. ten symbols).

    Layout of one sequence of length ``2K + delay`` (the classic copying task with the marker ending the delay):

    - positions ``0 .. K-1``: the source, ``K`` symbols drawn independently and uniformly from ids ``2..11``;
    - positions ``K .. K+delay-2``: blank (``delay - 1`` of them);
    - position ``K+delay-1``: the recall marker;
    - positions ``K+delay .. 2K+delay-1``: blank; the model must output the source here, in order.

    Example (``delay=3``, K = 10): ``[s0 .. s9, 0, 0, 1, 0 x 10]`` with labels ``[-100 x 13, s0 .. s9]``.
    Accuracy is measured on the ``K`` answer positions (chance 1/10).

    Args:
        split: ``"train"``, ``"validation"`` or ``"test"`` (independent streams of the same task).
        delay: number of positions between the end of the source and the first answer position, >= 1 (the paper
            uses 1,000 and 2,000).
        num_examples: number of rows (>= 1), or ``None`` for an unbounded stream.
        seed: non-negative int; same seed -> identical rows.

    Returns:
        Rows with ``"input_ids"`` (int64, length ``2K + delay``), ``"labels"`` (int64, same length: ``-100``
        everywhere except the last ``K`` positions, which hold the source) and ``"target_ids"`` (int64, length
        ``K``: the source itself).

    Raises:
        TypeError / ValueError: an argument of the wrong type or out of range (named in the message).
    """
    check_split("copy_memory", split, SPLITS)
    delay = check_int("copy_memory", "delay", delay, minimum=1)
    num_examples = check_count("copy_memory", num_examples)
    seed = check_seed("copy_memory", seed)
    k = COPY_LENGTH
    length = 2 * k + delay
    features = datasets.Features({
        "input_ids": datasets.Sequence(datasets.Value("int64"), length=length),
        "labels": datasets.Sequence(datasets.Value("int64"), length=length),
        "target_ids": datasets.Sequence(datasets.Value("int64"), length=k),
    })

    def make_row(rng: np.random.Generator) -> dict[str, Any]:
        source = rng.integers(COPY_FIRST_SYMBOL, COPY_FIRST_SYMBOL + COPY_NUM_SYMBOLS, size=k, dtype=np.int64)
        inputs = np.full(length, COPY_BLANK, dtype=np.int64)
        inputs[:k] = source
        inputs[k + delay - 1] = COPY_MARKER
        labels = np.full(length, IGNORE_INDEX, dtype=np.int64)
        labels[k + delay:] = source
        return {"input_ids": inputs, "labels": labels, "target_ids": source}

    return generate("copy_memory", make_row, features, split, num_examples, seed)


def needle_position(length: int) -> int:
    """The needle's index in a Needle-in-a-Haystack sequence of ``length`` tokens: the midpoint ``length // 2``."""
    return check_int("needle_position", "length", length, minimum=2) // 2


def needle(split: str = "train", *, length: int = 2048, num_examples: int | None = 1024,
           seed: int = 0) -> datasets.Dataset | datasets.IterableDataset:
    """Needle-in-a-Haystack with a positional needle (PCT paper D.1).

    Vocabulary: 64 ids ``0..63``, all of them data (no special tokens). Every one of the ``length`` tokens is
    drawn independently and uniformly from the 64 ids. The needle is the token at the fixed index
    ``p = length // 2`` (1,024 for the paper's length 2,048); it comes from the same vocabulary as the
    distractors, so nothing marks it but its position.

    The question, implicit and the same in every row: "which token sits at index ``p``?"; the answer, ``"target"``,
    is ``input_ids[p]``, one of 64 classes (chance 1/64). The task measures positional recall, not content search.

    Args:
        split: ``"train"``, ``"validation"`` or ``"test"`` (independent streams).
        length: sequence length, >= 2 (paper: 2,048).
        num_examples: number of rows (>= 1; the paper evaluates on 1,024), or ``None`` for an unbounded stream.
        seed: non-negative int; same seed -> identical rows.

    Returns:
        Rows with ``"input_ids"`` (int64, ``length`` ids in ``0..63``), ``"target"`` (int64, ``input_ids[p]``) and
        ``"needle_position"`` (int64, ``p``, the same in every row).

    Raises:
        TypeError / ValueError: an argument of the wrong type or out of range (named in the message).
    """
    check_split("needle", split, SPLITS)
    length = check_int("needle", "length", length, minimum=2)
    num_examples = check_count("needle", num_examples)
    seed = check_seed("needle", seed)
    position = length // 2
    features = datasets.Features({
        "input_ids": datasets.Sequence(datasets.Value("int64"), length=length),
        "target": datasets.Value("int64"),
        "needle_position": datasets.Value("int64"),
    })

    def make_row(rng: np.random.Generator) -> dict[str, Any]:
        ids = rng.integers(0, NEEDLE_VOCAB_SIZE, size=length, dtype=np.int64)
        return {"input_ids": ids, "target": int(ids[position]), "needle_position": position}

    return generate("needle", make_row, features, split, num_examples, seed)
