"""Character-level text corpora: tiny-shakespeare with the CNet paper's 90/10 split by position.

Sources, in order (DESIGN.md section 5, :mod:`cnet.data.sources`): ``path=``, ``$CNET_DATA_DIR/tinyshakespeare.txt``,
the Hub dataset ``karpathy/tiny_shakespeare``. The Hub copy stores the same file cut 90/5/5 into
train/validation/test rows (papers/NOTES.md, "Data formats"); their texts are concatenated in that order to rebuild
the corpus, which is then split exactly like a local file, so every source gives the same two splits.
"""

from __future__ import annotations

import os
from pathlib import Path

import datasets

from cnet.data.sources import local_file, not_found_error

__all__ = ["SHAKESPEARE_FILE", "SHAKESPEARE_HUB_ID", "SPLITS", "split_by_position", "tiny_shakespeare"]

SHAKESPEARE_FILE = "tinyshakespeare.txt"
SHAKESPEARE_HUB_ID = "karpathy/tiny_shakespeare"
SPLITS = ("train", "validation")
_HUB_SPLITS = ("train", "validation", "test")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"argument 'split' must be one of {', '.join(map(repr, SPLITS))} (no other names or "
                         f"aliases), got {split!r}")


def split_by_position(text: str, split: str) -> str:
    """One split of a corpus cut by position: ``train`` is the first 90%, ``validation`` the remaining 10%.

    The boundary is CNet's (``examples/dp_shakespeare.cpp``, ``CharData``: ``ntrain = (n / 10) * 9`` in integer
    arithmetic), so for tiny-shakespeare's 1,115,394 characters train has 1,003,851 and validation 111,543.

    Args:
        text: the whole corpus.
        split: ``"train"`` or ``"validation"``.

    Raises:
        ValueError: ``split`` is another value (there is no ``"val"`` or ``"test"`` alias).
    """
    _check_split(split)
    n_train = len(text) // 10 * 9
    return text[:n_train] if split == "train" else text[n_train:]


def _read_text(path: Path) -> str:
    try:
        text = path.read_bytes().decode("utf-8")  # bytes, not read_text(): keep line endings exactly as stored
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text: {exc}") from exc
    if not text:
        raise ValueError(f"empty corpus: {path} holds no characters")
    return text


def _hub_text() -> str:
    """The corpus rebuilt from the Hub dataset; FileNotFoundError (three sources) when the Hub cannot be reached."""
    try:
        parts = datasets.load_dataset(SHAKESPEARE_HUB_ID)
    except Exception as exc:  # any failure (offline, no network, missing repo) means "not found on the Hub"
        raise not_found_error("tiny_shakespeare", SHAKESPEARE_FILE, SHAKESPEARE_HUB_ID,
                              f"{type(exc).__name__}: {exc}") from exc
    missing = [s for s in _HUB_SPLITS if s not in parts]
    if missing:
        raise ValueError(f"Hub dataset {SHAKESPEARE_HUB_ID!r} lacks split(s) {missing}; found {list(parts)}")
    text = "".join(t for s in _HUB_SPLITS for t in parts[s]["text"])
    if not text:
        raise ValueError(f"empty corpus: Hub dataset {SHAKESPEARE_HUB_ID!r} holds no characters")
    return text


def tiny_shakespeare(split: str, *, path: str | os.PathLike | None = None) -> datasets.Dataset:
    """Tiny-shakespeare (1,115,394 characters, 65 distinct) split 90/10 by position as in the CNet paper.

    Args:
        split: ``"train"`` (first 90% of the characters) or ``"validation"`` (the last 10%); see
            :func:`split_by_position` for the exact boundary.
        path: an explicit ``tinyshakespeare.txt`` (wins over ``$CNET_DATA_DIR`` and the Hub).

    Returns:
        A :class:`datasets.Dataset` with one row and one column ``"text"`` (str) holding the split.

    Raises:
        ValueError: unknown ``split``; an empty or non-UTF-8 corpus (naming the file).
        FileNotFoundError: ``path`` does not exist; or no source has the corpus: the message names the three
            sources and asks to point ``CNET_DATA_DIR`` at a folder holding ``tinyshakespeare.txt``.
    """
    _check_split(split)  # before touching any source
    found = local_file(SHAKESPEARE_FILE, path)
    text = _read_text(found) if found is not None else _hub_text()
    return datasets.Dataset.from_dict({"text": [split_by_position(text, split)]})
