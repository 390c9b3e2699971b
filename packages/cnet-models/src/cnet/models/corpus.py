"""Token streams for language-model training: a dataset's train and held-out text, encoded by one vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cnet.data import CharVocab, load

__all__ = ["Corpus", "load_corpus", "encode_text", "split_text"]


@dataclass
class Corpus:
    """Encoded train and validation streams (``i[N]`` int64) with the vocabulary that produced them."""

    train: torch.Tensor
    validation: torch.Tensor
    vocab: CharVocab


def split_text(dataset, name: str, split: str) -> str:
    """The text of one split (rows of the ``text`` column joined).

    Raises:
        ValueError: no ``text`` column (e.g. a byte dataset), or the split is empty.
    """
    if "text" not in dataset.column_names:
        raise ValueError(f"dataset {name!r} split {split!r} has no 'text' column (columns: {dataset.column_names}); "
                         "character language models need text")
    text = "".join(dataset["text"])
    if not text:
        raise ValueError(f"dataset {name!r} split {split!r} is empty")
    return text


def encode_text(vocab: CharVocab, text: str) -> torch.Tensor:
    """Encode ``text`` with ``vocab`` into ``i[N]`` int64 (raises ``ValueError`` naming unknown characters)."""
    return torch.tensor(vocab.encode(text), dtype=torch.int64)


def load_corpus(name: str, *, path: str | None = None, vocab: CharVocab | None = None) -> Corpus:
    """Load ``name``'s train and validation splits through :func:`cnet.data.load` and encode them.

    Args:
        name: registered dataset name, e.g. ``"tiny_shakespeare"``.
        path: explicit data file, the first source of DESIGN.md section 5.
        vocab: reuse a saved vocabulary (e.g. for ``cnet eval``); default: the characters of both splits, sorted.

    Raises:
        KeyError: unknown dataset. FileNotFoundError: no source holds the data. ValueError: empty split, or a
        character outside a given ``vocab``.
    """
    options = {"path": path} if path else {}
    train = split_text(load(name, "train", **options), name, "train")
    val = split_text(load(name, "validation", **options), name, "validation")
    vocab = vocab or CharVocab.from_text(train + val)
    return Corpus(encode_text(vocab, train), encode_text(vocab, val), vocab)
