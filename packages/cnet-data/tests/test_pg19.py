"""pg19: Gutenberg header/footer stripping, the real pg19-mini books, sources, bits per byte (cnet.data.pg19)."""

from __future__ import annotations

import csv
import hashlib
import math
import os
from pathlib import Path

import datasets
import pytest
import torch

from cnet.data import bits_per_byte, load, pg19, require_length, strip_gutenberg
from cnet.data.pg19 import gutenberg_title

BOM = b"\xef\xbb\xbf"


@pytest.fixture(scope="module")
def mini() -> Path:
    root = os.environ.get("CNET_DATA_DIR")
    if not root:
        pytest.skip("CNET_DATA_DIR is not set: point it at the folder holding pg19-mini/ (CI sets it)")
    if not (Path(root) / "pg19-mini" / "MANIFEST.tsv").is_file():
        pytest.skip(f"CNET_DATA_DIR={root} holds no pg19-mini/MANIFEST.tsv")
    return Path(root) / "pg19-mini"


@pytest.fixture(scope="module")
def books(mini) -> dict[str, datasets.Dataset]:
    return {split: pg19(split, path=mini) for split in ("train", "validation", "test")}


@pytest.fixture
def no_hub(monkeypatch):
    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise ConnectionError("Couldn't reach 'deepmind/pg19' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    return calls


def _manifest(mini: Path) -> list[dict[str, str]]:
    with (mini / "MANIFEST.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


# --- strip_gutenberg on hand-made files ---------------------------------------------------------------------------

def test_strip_keeps_only_the_lines_between_the_markers():
    raw = (BOM + b"The Project Gutenberg eBook of X\nTitle: X\n\n"
           b"*** START OF THE PROJECT GUTENBERG EBOOK X ***\n\nChapter 1\nIt began.\n\n"
           b"*** END OF THE PROJECT GUTENBERG EBOOK X ***\nSection 1. licence\n*** START: FULL LICENSE ***\nmore\n")
    assert strip_gutenberg(raw) == b"\nChapter 1\nIt began.\n\n"


@pytest.mark.parametrize(("start", "end"), [
    (b"***START OF THE PROJECT GUTENBERG EBOOK X***", b"***END OF THE PROJECT GUTENBERG EBOOK X***"),
    (b"*** START OF THIS PROJECT GUTENBERG EBOOK X ***", b"*** END OF THIS PROJECT GUTENBERG EBOOK X ***"),
    (b"  *** start of the project gutenberg ebook x ***", b"*** End of the Project Gutenberg EBook X ***"),
    (b"***  START  OF THE PROJECT GUTENBERG EBOOK X ***", b"***\tEND \t OF THE PROJECT GUTENBERG EBOOK X ***"),
])
def test_strip_accepts_the_marker_variants(start, end):
    assert strip_gutenberg(b"head\r\n" + start + b"\r\nbody\r\n" + end + b"\r\nfoot\r\n") == b"body\r\n"


def test_strip_ignores_lookalike_lines_and_keeps_unmarked_text():
    # "*** START: FULL LICENSE ***" is not a START OF marker; asterisks inside a line are not markers.
    text = b"Count*** [this senator]\n*** START: FULL LICENSE ***\n***** This file should be named 1.txt *****\n"
    assert strip_gutenberg(text) == text
    assert strip_gutenberg(BOM + b"already clean") == b"already clean"  # the BOM alone is dropped
    assert strip_gutenberg(b"a\n*** START OF X\nb\n") == b"b\n"  # no END marker: kept to the end
    assert strip_gutenberg(b"a\n*** END OF X\n") == b"a\n"  # no START marker: kept from the start
    with pytest.raises(TypeError, match="'data' must be bytes"):
        strip_gutenberg("text")


def test_title_comes_from_the_header_only():
    assert gutenberg_title(b"Title: Pride and Prejudice\r\nAuthor: A\n*** START OF X\nTitle: no\n") == \
        "Pride and Prejudice"
    assert gutenberg_title(b"*** START OF X\nTitle: inside the book\n") is None
    # a byte-order mark in front of a Title: on the first line (the ^ anchor used to miss it)
    assert gutenberg_title(BOM + b"Title: Dracula\r\n*** START OF X\nbody\n") == "Dracula"
    assert gutenberg_title(bytearray(BOM + b"Title:  Emma \n")) == "Emma"
    with pytest.raises(TypeError, match="'data' must be bytes"):
        gutenberg_title("Title: x")


# --- the real pg19-mini books ---------------------------------------------------------------------------------------

def test_splits_match_the_manifest(mini, books, no_hub):
    rows = _manifest(mini)
    for split, ds in books.items():
        listed = sorted((r for r in rows if r["split"] == split), key=lambda r: r["file"])
        assert ds["path"] == [str(mini / r["file"]) for r in listed]
        for r in listed:
            raw = (mini / r["file"]).read_bytes()
            assert len(raw) == int(r["bytes"]) and hashlib.sha256(raw).hexdigest() == r["sha256"]
    assert [books[s].num_rows for s in ("train", "validation", "test")] == [20, 2, 2]
    assert no_hub == []


def test_headers_footers_and_boms_are_gone(mini, books):
    sizes = {r["file"]: int(r["bytes"]) for r in _manifest(mini)}
    for ds in books.values():
        for row in ds:
            book = row["bytes"]
            rel = str(Path(row["path"]).relative_to(mini))
            assert 0.9 * sizes[rel] < len(book) < sizes[rel]
            assert not book.startswith(BOM)
            for marker in (b"*** START OF", b"***START OF", b"*** END OF", b"***END OF", b"FULL LICENSE",
                           b"Release date", b"Release Date", b"This file should be named", b"Project Gutenberg-tm"):
                assert marker not in book, (rel, marker)


def test_exact_cut_of_two_real_books(mini, books):
    by_title = {row["title"]: row for row in books["train"]}
    austen = by_title["Pride and Prejudice"]
    lines = (mini / "train/austen-pride-and-prejudice.txt").read_bytes().splitlines(keepends=True)
    assert lines[26].startswith(b"*** START OF THE PROJECT GUTENBERG EBOOK PRIDE AND PREJUDICE ***")
    assert lines[14564].startswith(b"*** END OF THE PROJECT GUTENBERG EBOOK PRIDE AND PREJUDICE ***")
    assert austen["bytes"] == b"".join(lines[27:14564]) and len(austen["bytes"]) == 737_950
    assert b"It is a truth universally acknowledged, that a single man in possession" in austen["bytes"]
    # Wuthering Heights: BOM at the start of the file and "***START OF ...***" without spaces.
    bronte = by_title["Wuthering Heights"]
    raw = (mini / "train/bronte-wuthering-heights.txt").read_bytes()
    assert raw.startswith(BOM + b"The Project Gutenberg eBook")
    assert len(bronte["bytes"]) == 649_875
    assert bronte["bytes"].startswith(b"\n\n\n\nTranscribed from the 1910 John Murray edition")
    assert bronte["bytes"].endswith(b"unquiet slumbers for the sleepers in that quiet earth.\n\n\n\n")


def test_titles_and_registered_loader(mini, books, monkeypatch, no_hub):
    assert books["validation"]["title"] == ["The Scarlet Letter", "Dubliners"]
    assert books["test"]["title"] == ["Autobiography of Benjamin Franklin", "The Phantom of the Opera"]
    monkeypatch.setenv("CNET_DATA_DIR", str(mini.parent))
    via_env = load("pg19", "test")
    assert via_env.column_names == ["path", "title", "bytes"]
    assert via_env["bytes"] == books["test"]["bytes"]
    assert b"Call me Ishmael." in next(r["bytes"] for r in books["train"] if r["title"].startswith("Moby Dick"))
    assert no_hub == []


# --- sources ---------------------------------------------------------------------------------------------------------

def test_explicit_folder_and_its_errors(tmp_path, no_hub):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "b.txt").write_bytes(b"Title: B\n*** START OF THE BOOK\nbee\n*** END OF THE BOOK\n")
    (tmp_path / "train" / "a.txt").write_bytes(b"plain text, no markers")
    ds = pg19("train", path=tmp_path)
    assert ds["title"] == ["a", "B"] and ds["bytes"] == [b"plain text, no markers", b"bee\n"]
    with pytest.raises(FileNotFoundError, match=r"^pg19: no folder .*test for split='test'; a PG-19 folder holds "
                       r"train/, validation/ and test/ folders of books; sub-folders of .*: \['train'\]$"):
        pg19("test", path=tmp_path)
    with pytest.raises(FileNotFoundError, match="is missing"):
        pg19("train", path=tmp_path / "nope")
    with pytest.raises(ValueError, match="argument 'split' must be one of 'train', 'validation', 'test'"):
        pg19("val", path=tmp_path)
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "x.txt").write_bytes(b"*** START OF X\n*** END OF X\n")
    with pytest.raises(ValueError, match="empty corpus"):
        pg19("validation", path=tmp_path)
    assert no_hub == []


def test_offline_error_names_the_three_sources(monkeypatch, no_hub):
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError) as info:
        pg19("validation")
    msg = str(info.value)
    assert "(1) an explicit path= option: none given" in msg
    assert "(2) $CNET_DATA_DIR/pg19-mini/validation: the variable is not set" in msg
    assert "(3) the Hugging Face Hub dataset 'deepmind/pg19': ConnectionError" in msg
    assert no_hub == [(("deepmind/pg19",), {"split": "validation", "streaming": False})]


def test_hub_rows_become_the_same_columns(monkeypatch):
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    hub = datasets.Dataset.from_dict({
        "short_book_title": ["A Book", "Another"], "publication_date": [1900, 1901],
        "url": ["http://www.gutenberg.org/ebooks/1", "http://www.gutenberg.org/ebooks/2"],
        "text": ["It was caf\u00e9 time.\n", "\ufeffSecond"],
    })
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or hub)
    ds = load("pg19", "test")
    assert ds.column_names == ["path", "title", "bytes"]
    assert ds["title"] == ["A Book", "Another"]
    assert ds["path"] == ["http://www.gutenberg.org/ebooks/1", "http://www.gutenberg.org/ebooks/2"]
    assert ds["bytes"] == [b"It was caf\xc3\xa9 time.\n", b"Second"]
    assert calls == [(("deepmind/pg19",), {"split": "test", "streaming": False})]


# --- helpers for model code ------------------------------------------------------------------------------------------

def test_bits_per_byte():
    assert bits_per_byte(1.0) == pytest.approx(1.4426950408889634, rel=1e-15)
    assert bits_per_byte(math.log(256)) == pytest.approx(8.0, rel=1e-15)  # a uniform byte model: 8 bits
    assert torch.allclose(bits_per_byte(torch.tensor([0.0, math.log(2)])), torch.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="'nats'"):
        bits_per_byte("1.0")


def test_require_length():
    assert require_length(101, 100) == 1
    assert require_length(10_000, 1024) == 8_976
    with pytest.raises(ValueError, match="holds 100 bytes, but a context of 100 bytes needs 101"):
        require_length(100, 100)
    with pytest.raises(ValueError, match="'context' must be >= 1"):
        require_length(100, 0)
    with pytest.raises(TypeError, match="'n_bytes' must be an int"):
        require_length(100.0, 10)
