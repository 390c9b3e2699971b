"""PG-19 as bytes: Project Gutenberg books for byte-level language models, scored in bits per byte.

Sources, in order (DESIGN.md section 5): an explicit ``path=`` folder holding ``train/``, ``validation/`` and
``test/`` folders of book files; ``$CNET_DATA_DIR/pg19/`` (the layout of DeepMind's release) or
``$CNET_DATA_DIR/pg19-mini/`` (the project's small sample, one real book per file plus ``MANIFEST.tsv``); the Hub
dataset ``deepmind/pg19`` (columns ``short_book_title``, ``publication_date``, ``url``, ``text``; 28,602 / 50 / 100
books; papers/NOTES.md, "Data formats").

Files read locally keep only the book: the Project Gutenberg licence header and footer are cut at the
``*** START OF ...`` and ``*** END OF ...`` marker lines (see :func:`strip_gutenberg`), which is what PG-19's texts
hold. Text from the Hub is already cut; the same function leaves it unchanged.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import datasets

from cnet.data._common import check_int, check_split, hub_load, local_dir
from cnet.data.sources import DATA_DIR_ENV
from cnet.data.text_bytes import text_bytes

__all__ = ["PG19_DIRS", "PG19_HUB_ID", "PG19_SPLITS", "bits_per_byte", "gutenberg_title", "pg19",
           "require_length", "strip_gutenberg"]

PG19_HUB_ID = "deepmind/pg19"
PG19_DIRS = ("pg19", "pg19-mini")
PG19_SPLITS = ("train", "validation", "test")

_FEATURES = datasets.Features({"path": datasets.Value("string"), "title": datasets.Value("string"),
                               "bytes": datasets.Value("binary")})
_BOM = b"\xef\xbb\xbf"
# A marker line: optional blanks, three asterisks, optional blanks, START OF / END OF (any case, one or more blanks
# between the words), rest of the line.
_START = re.compile(rb"^[ \t]*\*\*\*[ \t]*START[ \t]+OF\b[^\n]*(?:\n|\Z)", re.IGNORECASE | re.MULTILINE)
_END = re.compile(rb"^[ \t]*\*\*\*[ \t]*END[ \t]+OF\b", re.IGNORECASE | re.MULTILINE)
_TITLE = re.compile(rb"^Title:[ \t]*([^\r\n]*?)[ \t]*\r?$", re.MULTILINE)


def strip_gutenberg(data: bytes) -> bytes:
    """The book inside a Project Gutenberg file: the bytes between the START and END marker lines.

    The START marker is the first line that begins (after optional spaces or tabs) with three asterisks, optional
    blanks and ``START OF`` in any case, with any run of spaces or tabs between the words:
    ``*** START OF THE PROJECT GUTENBERG EBOOK X ***``, ``*** START OF THIS PROJECT GUTENBERG EBOOK X ***``,
    ``***START OF THE PROJECT GUTENBERG EBOOK X***`` and ``***  START  OF ...`` all match;
    ``*** START: FULL LICENSE ***`` does not. The END marker is the first later line beginning with
    ``***``, blanks and ``END OF``. The result runs from the byte after the START line's newline to the first byte
    of the END line, so the blank lines around the book are kept as they are; so is the "End of the Project
    Gutenberg EBook of X" line some files put just before the END marker (it is not a marker line).

    A missing marker leaves that side uncut: text without markers (e.g. the Hub's PG-19, already cut) comes back
    unchanged apart from a leading UTF-8 byte-order mark, which is always dropped.

    Args:
        data: the file's bytes.

    Returns:
        The book's bytes (a new ``bytes`` object; possibly empty).

    Raises:
        TypeError: ``data`` is not ``bytes``/``bytearray``.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"strip_gutenberg: argument 'data' must be bytes, got {type(data).__name__}")
    data = bytes(data).removeprefix(_BOM)
    start = _START.search(data)
    begin = start.end() if start else 0
    end = _END.search(data, begin)
    return data[begin:end.start() if end else len(data)]


def gutenberg_title(data: bytes) -> str | None:
    """The ``Title:`` field of a Project Gutenberg header (first line of it), or ``None`` when absent.

    A leading UTF-8 byte-order mark is skipped, so ``Title:`` on the file's first line right after it is found.
    Only the part before the START marker line is searched, so a ``Title:`` line inside a book is never taken.
    Invalid UTF-8 is replaced by U+FFFD.

    Args:
        data: the file's bytes.

    Returns:
        The title text without surrounding blanks, or ``None``.

    Raises:
        TypeError: ``data`` is not ``bytes``/``bytearray``.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"gutenberg_title: argument 'data' must be bytes, got {type(data).__name__}")
    data = bytes(data).removeprefix(_BOM)
    start = _START.search(data)
    match = _TITLE.search(data, 0, start.start() if start else len(data))
    if not match or not match.group(1):
        return None
    return match.group(1).decode("utf-8", errors="replace")


def _local_rows(root: Path, split: str) -> datasets.Dataset:
    if not (root / split).is_dir():
        present = sorted(p.name for p in root.iterdir() if p.is_dir())
        raise FileNotFoundError(f"pg19: no folder {root / split} for split={split!r}; a PG-19 folder holds "
                                f"train/, validation/ and test/ folders of books; sub-folders of {root}: "
                                f"{present or 'none'}")
    files = text_bytes(root, split)
    paths, titles, books = [], [], []
    for row in files:
        raw = row["bytes"]
        paths.append(row["path"])
        titles.append(gutenberg_title(raw) or Path(row["path"]).stem)
        books.append(strip_gutenberg(raw))
    if not any(books):
        raise ValueError(f"empty corpus: the books in {root / split} hold no bytes between their START and END "
                         "marker lines")
    return datasets.Dataset.from_dict({"path": paths, "title": titles, "bytes": books}, features=_FEATURES)


def _hub_row(row: dict[str, Any]) -> dict[str, Any]:
    return {"path": row.get("url") or "", "title": row.get("short_book_title") or "",
            "bytes": strip_gutenberg(row["text"].encode("utf-8"))}


def pg19(split: str, *, path: str | os.PathLike | None = None,
         streaming: bool = False) -> datasets.Dataset | datasets.IterableDataset:
    """PG-19 books as bytes, one row per book, licence header and footer removed (:func:`strip_gutenberg`).

    Args:
        split: ``"train"``, ``"validation"`` or ``"test"``.
        path: a folder holding one sub-folder per split (``path/<split>/`` is read recursively, every regular file
            a book, in sorted path order; files elsewhere, e.g. ``MANIFEST.tsv``, are ignored). Wins over
            ``$CNET_DATA_DIR/pg19`` and ``$CNET_DATA_DIR/pg19-mini`` (tried in that order), which win over the Hub.
        streaming: Hub only: stream ``deepmind/pg19`` instead of downloading it (the train split is about 11 GB);
            returns a :class:`datasets.IterableDataset`. Ignored for local folders.

    Returns:
        A :class:`datasets.Dataset` with columns ``"path"`` (str: the file's path; for the Hub, the book's Project
        Gutenberg URL), ``"title"`` (str: the header's ``Title:`` line, else the file name without its suffix; for
        the Hub, ``short_book_title``) and ``"bytes"`` (binary: the book, UTF-8 as stored, BOM dropped).

    Raises:
        ValueError: unknown ``split``; every book of the split is empty after stripping.
        FileNotFoundError: ``path`` is not a folder, or lacks ``<split>/``; or no source has PG-19: the message
            names the three sources.
    """
    check_split("pg19", split, PG19_SPLITS)
    root = local_dir(PG19_DIRS, path)
    if root is not None:
        return _local_rows(root, split)
    relname = f"{PG19_DIRS[1]}/{split}"
    loaded = hub_load("pg19", relname, PG19_HUB_ID, split, streaming=bool(streaming))
    return loaded.map(_hub_row, remove_columns=list(loaded.column_names or []), features=_FEATURES)


def bits_per_byte(nats: Any) -> Any:
    """Convert a loss in nats per byte to bits per byte: ``bits = nats / ln 2`` (PG-19 is scored in bits per byte).

    Args:
        nats: mean negative log-likelihood per byte in nats (a float, or a tensor/array: converted elementwise).

    Returns:
        The same quantity in bits per byte, of the same type as ``nats`` (e.g. 1.0 nat -> 1.4427 bits).

    Raises:
        TypeError: ``nats`` is a str or bool (neither is a loss).
    """
    if isinstance(nats, (str, bytes, bool)):
        raise TypeError(f"bits_per_byte: argument 'nats' must be a number or a tensor, got {type(nats).__name__}")
    return nats / math.log(2.0)


def require_length(n_bytes: int, context: int) -> int:
    """Check that a corpus of ``n_bytes`` bytes holds at least one training window of ``context`` bytes.

    A window is ``context`` input bytes plus the byte after each of them as its target, so it needs
    ``context + 1`` bytes.

    Args:
        n_bytes: the corpus (or split) size in bytes, >= 0.
        context: the model's context length in bytes, >= 1.

    Returns:
        The number of distinct window start positions, ``n_bytes - context`` (>= 1).

    Raises:
        TypeError: an argument is not an int.
        ValueError: ``context`` < 1, ``n_bytes`` < 0, or ``n_bytes < context + 1``: the message gives both sizes.
    """
    n_bytes = check_int("require_length", "n_bytes", n_bytes, minimum=0)
    context = check_int("require_length", "context", context, minimum=1)
    if n_bytes < context + 1:
        raise ValueError(f"corpus too short: it holds {n_bytes} bytes, but a context of {context} bytes needs "
                         f"{context + 1} (the inputs plus one next-byte target); use a shorter context or more text "
                         f"(e.g. point {DATA_DIR_ENV} at the full PG-19)")
    return n_bytes - context
