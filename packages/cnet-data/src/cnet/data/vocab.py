"""Character vocabularies for character-level language models, saved as ``vocab.json`` (DESIGN.md section 4)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cnet.core.checkpoint import atomic_write

__all__ = ["VOCAB_FILE", "Vocab", "CharVocab", "ByteVocab", "vocab_from_json"]

VOCAB_FILE = "vocab.json"
_KIND = "char"


class Vocab:
    """Base of the vocabularies: ``encode``, ``decode``, ``len``, and JSON round trips through ``vocab.json``.

    Subclasses implement ``to_json`` / ``from_json`` with a ``"type"`` key that :func:`vocab_from_json` reads.
    """

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
            raise FileExistsError(f"{type(self).__name__}.save: {file.parent} exists and is not a folder; {_PATH_RULE}")
        file.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(file, json.dumps(self.to_json()) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a vocabulary written by :meth:`save`.

        Args:
            path: as for :meth:`save`: a path ending in ``.json`` is the file, any other a folder holding
                ``vocab.json``.

        Raises:
            FileNotFoundError: the file is missing. ValueError: it is not a valid vocabulary JSON file.
        """
        file = _vocab_file(path)
        if not file.is_file():
            raise FileNotFoundError(f"{cls.__name__}.load: no vocabulary file {file}; {_PATH_RULE}")
        try:
            data = json.loads(file.read_bytes().decode("utf-8"))
        except ValueError as exc:
            raise ValueError(f"{cls.__name__}.load: {file} is not valid JSON ({exc})") from exc
        return cls.from_json(data)




class CharVocab(Vocab):
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

_PATH_RULE = f"a path ending in .json names the vocabulary file, any other path a folder holding {VOCAB_FILE}"


def _vocab_file(path: str | os.PathLike) -> Path:
    """The vocabulary file that ``path`` names under the rule of :meth:`Vocab.save` and :meth:`Vocab.load`."""
    path = Path(path)
    return path if path.name.endswith(".json") else path / VOCAB_FILE


class ByteVocab(Vocab):
    """The 256 byte values as a vocabulary (byte-level models: PG-19, any text file through ``text_bytes``).

    ``encode`` takes ``bytes`` or a ``str`` (encoded as UTF-8); ``decode`` returns text, with bytes that do not
    form valid UTF-8 shown as the replacement character. Losses over it are nats per byte; divide by ln 2 for
    bits per byte.
    """

    def __len__(self) -> int:
        return 256

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteVocab)

    def __hash__(self) -> int:
        return hash("bytes")

    def __repr__(self) -> str:
        return "ByteVocab(256 bytes)"

    def encode(self, text: str | bytes) -> list[int]:
        """Byte ids of ``text`` (``str`` is UTF-8 encoded).

        Raises:
            TypeError: ``text`` is neither ``str`` nor ``bytes``.
        """
        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray)):
            raise TypeError(f"ByteVocab.encode: argument 'text' must be str or bytes, got {type(text).__name__}")
        return list(text)

    def decode(self, ids: Iterable[int]) -> str:
        """UTF-8 text of a sequence of byte ids (invalid sequences become U+FFFD).

        Raises:
            ValueError: an id is not an integer in ``[0, 256)``.
        """
        values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        bad = [i for i in values if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 256]
        if bad:
            raise ValueError(f"ByteVocab.decode: ids must be integers in [0, 256), got {bad[:10]!r}")
        return bytes(values).decode("utf-8", errors="replace")

    def to_json(self) -> dict[str, Any]:
        """``{"type": "bytes"}``."""
        return {"type": "bytes"}

    @classmethod
    def from_json(cls, data: Any) -> ByteVocab:
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: ``data`` is not ``{"type": "bytes"}``.
        """
        if not isinstance(data, dict) or data.get("type") != "bytes":
            raise ValueError(f"ByteVocab.from_json: expected {{'type': 'bytes'}}, got {data!r:.200}")
        return cls()


def vocab_from_json(data: Any) -> Vocab:
    """The vocabulary a ``vocab.json`` describes, by its ``"type"`` (``"char"`` or ``"bytes"``).

    Raises:
        ValueError: an unknown or missing type, or invalid contents.
    """
    kinds = {_KIND: CharVocab, "bytes": ByteVocab}
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in kinds:
        raise ValueError(f"vocab.json: unknown vocabulary type {kind!r}; known: {', '.join(kinds)}")
    return kinds[kind].from_json(data)
