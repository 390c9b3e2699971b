"""text_bytes: files and folders as raw bytes, splits as sub-folders, errors (cnet.data.text_bytes)."""

from __future__ import annotations

import pytest

from cnet.data import load, text_bytes


@pytest.fixture
def corpus(tmp_path):
    files = {
        "train/b.txt": b"second book\n",
        "train/a/z.txt": "caf\u00e9\r\n".encode(),
        "train/a-c.bin": bytes(range(256)),
        "train/empty.txt": b"",
        "validation/v.txt": b"held out",
        "README": b"top-level file",
    }
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return tmp_path, files


def test_folder_split_in_sorted_order(corpus):
    root, files = corpus
    ds = text_bytes(root, "train")
    assert ds.column_names == ["path", "bytes"]
    rel = ["train/a/z.txt", "train/a-c.bin", "train/b.txt", "train/empty.txt"]  # folder "a" before "a-c.bin"
    assert ds["path"] == [str(root / r) for r in rel]
    assert ds["bytes"] == [files[r] for r in rel]


def test_whole_folder_and_single_file(corpus):
    root, files = corpus
    ds = text_bytes(root)
    assert ds.num_rows == len(files) and ds["path"][0] == str(root / "README")
    assert sum(len(b) for b in ds["bytes"]) == sum(len(b) for b in files.values())
    one = text_bytes(root / "validation" / "v.txt")
    assert one.num_rows == 1 and one[0]["bytes"] == b"held out"


def test_registered_loader(corpus):
    root, _ = corpus
    assert load("text_bytes", "validation", path=root)["bytes"] == [b"held out"]
    assert load("text_bytes", None, path=str(root)).num_rows == 6
    with pytest.raises(ValueError, match=r"dataset 'text_bytes': option 'path' is required, got none; pass "
                       r"path=FILE_OR_FOLDER in Python \(the CLI's --data-path FILE_OR_FOLDER\)"):
        load("text_bytes", "train")


def test_errors(corpus, tmp_path_factory):
    root, _ = corpus
    with pytest.raises(FileNotFoundError, match="does not exist"):
        text_bytes(root / "nope")
    with pytest.raises(FileNotFoundError, match=r"no folder .*test for split='test'; a split is a sub-folder of "
                       r"path \(training needs train/ and validation/\); sub-folders of .*: \['train', 'validation'\]"):
        text_bytes(root, "test")
    with pytest.raises(ValueError, match="is a file; training .* needs a folder holding train/ and validation/"):
        text_bytes(root / "README", "train")
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(ValueError, match="empty corpus: .* holds no files"):
        text_bytes(empty)
    (empty / "sub").mkdir()
    (empty / "sub" / "x.txt").write_bytes(b"")
    with pytest.raises(ValueError, match="empty corpus: .* holds only empty files"):
        text_bytes(empty)
    with pytest.raises(ValueError, match="empty corpus"):
        text_bytes(empty / "sub" / "x.txt")
