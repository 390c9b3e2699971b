"""Token streams for language-model training: a dataset's train and held-out splits, encoded by one vocabulary.

Text datasets (a ``text`` column, e.g. tiny-shakespeare) use a :class:`~cnet.data.CharVocab` of their
characters; byte datasets (a ``bytes`` column, e.g. ``pg19`` or ``text_bytes``) use the 256-symbol
:class:`~cnet.data.ByteVocab`, so losses are nats per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cnet.data import ByteVocab, CharVocab, Vocab, load

__all__ = ["Corpus", "load_corpus", "encode_split", "split_text", "check_window"]


@dataclass
class Corpus:
    """Encoded train and validation streams (``i[N]`` int64) with the vocabulary that produced them."""

    train: torch.Tensor
    validation: torch.Tensor
    vocab: Vocab


def split_text(dataset, name: str, split: str) -> str | bytes:
    """The contents of one split: the rows of its ``text`` column joined, or of its ``bytes`` column.

    Raises:
        ValueError: neither column exists, or the split is empty.
    """
    if "text" in dataset.column_names:
        data = "".join(dataset["text"])
    elif "bytes" in dataset.column_names:
        data = b"".join(dataset["bytes"])
    else:
        raise ValueError(f"dataset {name!r} split {split!r} has neither a 'text' nor a 'bytes' column "
                         f"(columns: {dataset.column_names}); next-token language models (cnet train, cnet compare, "
                         "cnet eval) need a text or byte dataset")
    if not data:
        raise ValueError(f"dataset {name!r} split {split!r} is empty")
    return data


def check_window(stream: torch.Tensor, context: int, *, dataset: str, split: str, model: str | None = None,
                 where: str = "train") -> None:
    """Refuse a split too short for one training window of ``context + 1`` tokens.

    Raises:
        ValueError: ``stream`` holds ``context`` tokens or fewer; the message names the split, the dataset, the
            model (when given) and the fix (``--set context=...``).
    """
    if stream.numel() <= context:
        whose = f"{model}'s " if model else "the model's "
        raise ValueError(f"{where}: the {split} split of {dataset!r} holds {stream.numel()} tokens, fewer than one "
                         f"window of {whose}context {context} + 1; use a shorter context (--set context=...) or a "
                         "larger corpus")


def encode_split(vocab: Vocab, data: str | bytes) -> torch.Tensor:
    """Encode a split's contents into ``i[N]`` int64.

    Raises:
        ValueError: characters outside a character vocabulary (named in the message), or bytes given to a
            character vocabulary.
    """
    if isinstance(data, bytes):
        if not isinstance(vocab, ByteVocab):
            raise ValueError("the dataset holds bytes but the model's vocabulary is a character vocabulary")
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    return torch.tensor(vocab.encode(data), dtype=torch.int64)


def load_corpus(name: str, *, path: str | None = None, vocab: Vocab | None = None) -> Corpus:
    """Load ``name``'s train and validation splits through :func:`cnet.data.load` and encode them.

    Args:
        name: registered dataset name, e.g. ``"tiny_shakespeare"`` or ``"pg19"``.
        path: explicit data location, the first source of DESIGN.md section 5.
        vocab: reuse a saved vocabulary; default: bytes for byte datasets, else the sorted characters of both
            splits.

    Raises:
        KeyError: unknown dataset. FileNotFoundError: no source holds the data. ValueError: empty split, or a
        character outside a given ``vocab``.
    """
    options = {"path": path} if path else {}
    train = split_text(load(name, "train", **options), name, "train")
    val = split_text(load(name, "validation", **options), name, "validation")
    if vocab is None:
        vocab = ByteVocab() if isinstance(train, bytes) else CharVocab.from_text(train + val)
    return Corpus(encode_split(vocab, train), encode_split(vocab, val), vocab)
