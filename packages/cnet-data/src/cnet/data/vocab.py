"""Character vocabularies for character-level language models, saved as ``vocab.json`` (DESIGN.md section 4)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cnet.core.checkpoint import atomic_write

__all__ = ["VOCAB_FILE", "CharVocab"]

VOCAB_FILE = "vocab.json"
_KIND = "char"


class CharVocab:
    """A character vocabulary: id ``i`` is ``chars[i]``.

    :meth:`from_text` orders the characters by code point, so the same corpus always gives the same ids
    (tiny-shakespeare: 65 characters, ``"\\n"`` is id 0 and ``" "`` id 1). Note that CNet's C++ example numbers
    characters by first appearance instead; checkpoints from it need their own mapping.

    Args:
        chars: the characters in id order; each a one-character ``str``, no repeats.

    Raises:
        ValueError: an entry is not a single character, or a character repeats, or ``chars`` is empty.
    """

    def __init__(self, chars: Iterable[str]) -> None:
        chars = tuple(chars)
        bad = [c for c in chars if not isinstance(c, str) or len(c) != 1]
        if bad:
            raise ValueError(f"CharVocab: argument 'chars' must hold single characters, got {bad[:5]!r}")
        if len(set(chars)) != len(chars):
            dup = sorted({c for c in chars if chars.count(c) > 1})
            raise ValueError(f"CharVocab: argument 'chars' repeats {dup!r}")
        if not chars:
            raise ValueError("CharVocab: argument 'chars' is empty")
        self.chars: tuple[str, ...] = chars
        self._ids = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        """The sorted distinct characters of ``text``.

        Raises:
            TypeError: ``text`` is not a str. ValueError: ``text`` is empty.
        """
        if not isinstance(text, str):
            raise TypeError(f"CharVocab.from_text: argument 'text' must be str, got {type(text).__name__}")
        if not text:
            raise ValueError("CharVocab.from_text: argument 'text' is empty")
        return cls(sorted(set(text)))

    def __len__(self) -> int:
        return len(self.chars)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharVocab) and self.chars == other.chars

    def __hash__(self) -> int:
        return hash(self.chars)

    def __repr__(self) -> str:
        return f"CharVocab({len(self)} characters: {''.join(self.chars)[:40]!r})"

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of ``text`` (e.g. a corpus or a generation prompt).

        Raises:
            TypeError: ``text`` is not a str.
            ValueError: ``text`` holds characters outside the vocabulary; the message lists them.
        """
        if not isinstance(text, str):
            raise TypeError(f"CharVocab.encode: argument 'text' must be str, got {type(text).__name__}")
        try:
            return [self._ids[c] for c in text]
        except KeyError:
            unknown = sorted(set(text) - self._ids.keys())
            raise ValueError(f"CharVocab.encode: characters not in the vocabulary ({len(self)} characters): "
                             f"{', '.join(map(repr, unknown))}") from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text of a sequence of ids: a list of ints, or a 1-D integer tensor / array (anything with ``tolist``).

        Raises:
            ValueError: an id is not an integer in ``[0, len(self))`` (the message lists the offending ids).
        """
        values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        bad = [i for i in values if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"CharVocab.decode: ids must be integers in [0, {len(self)}), got {bad[:10]!r}")
        return "".join(self.chars[i] for i in values)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict ``{"type": "char", "chars": [...]}`` (the contents of ``vocab.json``)."""
        return {"type": _KIND, "chars": list(self.chars)}

    @classmethod
    def from_json(cls, data: Any) -> CharVocab:
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: ``data`` is not a dict with ``"type": "char"`` and a ``"chars"`` list of single characters.
        """
        if not isinstance(data, dict) or data.get("type") != _KIND or not isinstance(data.get("chars"), list):
            raise ValueError(f"CharVocab.from_json: expected {{'type': 'char', 'chars': [...]}}, got {data!r:.200}")
        return cls(data["chars"])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary as JSON, atomically.

        Args:
            path: a path ending in ``.json`` names the file itself; any other path names a folder (created with
                its parents when missing) that receives ``vocab.json``. The file's folder is created as needed.

        Returns:
            The file written.

        Raises:
            FileExistsError: the folder to write into exists but is not a folder (e.g. ``path`` is an existing
                file whose name does not end in ``.json``).
        """
        file = _vocab_file(path)
        if file.parent.exists() and not file.parent.is_dir():
            raise FileExistsError(f"CharVocab.save: {file.parent} exists and is not a folder; {_PATH_RULE}")
        file.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(file, json.dumps(self.to_json()) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> CharVocab:
        """Read a vocabulary written by :meth:`save`.

        Args:
            path: as for :meth:`save`: a path ending in ``.json`` is the file, any other a folder holding
                ``vocab.json``.

        Raises:
            FileNotFoundError: the file is missing. ValueError: it is not a valid vocabulary JSON file.
        """
        file = _vocab_file(path)
        if not file.is_file():
            raise FileNotFoundError(f"CharVocab.load: no vocabulary file {file}; {_PATH_RULE}")
        try:
            data = json.loads(file.read_bytes().decode("utf-8"))
        except ValueError as exc:
            raise ValueError(f"CharVocab.load: {file} is not valid JSON ({exc})") from exc
        return cls.from_json(data)


_PATH_RULE = f"a path ending in .json names the vocabulary file, any other path a folder holding {VOCAB_FILE}"


def _vocab_file(path: str | os.PathLike) -> Path:
    """The vocabulary file that ``path`` names under the rule of :meth:`CharVocab.save` and :meth:`CharVocab.load`."""
    path = Path(path)
    return path if path.name.endswith(".json") else path / VOCAB_FILE
