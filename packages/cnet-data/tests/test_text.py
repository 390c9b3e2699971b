"""tiny_shakespeare: the CNet 90/10 split, the three sources in order, and the errors (cnet.data.text)."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import pytest

from cnet.data import CharVocab, load, split_by_position, tiny_shakespeare

N_CHARS = 1_115_394
N_TRAIN = 1_003_851  # (N // 10) * 9, CNet's dp_shakespeare.cpp


@pytest.fixture
def real_dir() -> Path:
    root = os.environ.get("CNET_DATA_DIR")
    if not root:
        pytest.skip("CNET_DATA_DIR is not set: point it at the folder holding tinyshakespeare.txt (CI sets it)")
    if not (Path(root) / "tinyshakespeare.txt").is_file():
        pytest.skip(f"CNET_DATA_DIR={root} holds no tinyshakespeare.txt")
    return Path(root)


@pytest.fixture
def no_hub(monkeypatch):
    """The Hub fails as it does offline; the calls are recorded."""
    calls = []

    def offline(*args, **kwargs):
        calls.append(args)
        raise ConnectionError("Couldn't reach 'karpathy/tiny_shakespeare' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    return calls


def _text(ds: datasets.Dataset) -> str:
    assert ds.column_names == ["text"] and ds.num_rows == 1
    return ds[0]["text"]


def test_real_file_split_sizes_and_exact_boundary(real_dir, no_hub):
    raw = (real_dir / "tinyshakespeare.txt").read_bytes().decode("utf-8")
    train, val = _text(load("tiny_shakespeare", "train")), _text(load("tiny_shakespeare", "validation"))
    assert len(raw) == N_CHARS
    assert (len(train), len(val)) == (N_TRAIN, N_CHARS - N_TRAIN) == (1_003_851, 111_543)
    assert train + val == raw
    assert train[-15:] == "But who comes h" and val[:13] == "ere?\n\nGREMIO:"
    assert no_hub == []  # a local copy never touches the Hub


def test_real_file_has_65_characters_in_sorted_order(real_dir):
    train, val = _text(tiny_shakespeare("train")), _text(tiny_shakespeare("validation"))
    vocab = CharVocab.from_text(train + val)
    assert len(vocab) == 65
    assert vocab.chars[:3] == ("\n", " ", "!") and vocab.chars[-1] == "z"
    assert vocab.decode(vocab.encode(val)) == val


def test_split_by_position_boundary():
    text = "".join(chr(65 + i % 26) for i in range(1003))
    assert split_by_position(text, "train") == text[:900]  # 1003 // 10 * 9, not round(0.9 * 1003) = 903
    assert split_by_position(text, "validation") == text[900:]


@pytest.mark.parametrize("split", ["val", "test", "Train", None])
def test_unknown_split_names_the_accepted_ones(split, tmp_path):
    with pytest.raises(ValueError, match="'train', 'validation' \\(no other names or aliases\\)"):
        tiny_shakespeare(split, path=tmp_path / "never-read.txt")


def test_explicit_path_wins_over_data_dir(tmp_path, monkeypatch, no_hub):
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "tinyshakespeare.txt").write_text("E" * 100)
    explicit = tmp_path / "mine.txt"
    explicit.write_bytes(b"0123456789" * 10)
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path / "env"))
    assert _text(tiny_shakespeare("validation", path=explicit)) == "0123456789"
    assert _text(tiny_shakespeare("validation")) == "E" * 10
    assert no_hub == []


def test_line_endings_are_kept(tmp_path):
    f = tmp_path / "t.txt"
    f.write_bytes(b"a\r\nb\r\n" * 10)
    assert _text(tiny_shakespeare("train", path=f)) == "a\r\nb\r\n" * 9


def test_missing_explicit_path_is_an_error_not_a_fallback(tmp_path, no_hub):
    with pytest.raises(FileNotFoundError, match="missing.txt.*is missing; expected the file tinyshakespeare.txt"):
        tiny_shakespeare("train", path=tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="is a folder"):
        tiny_shakespeare("train", path=tmp_path)
    assert no_hub == []


def test_offline_error_names_the_three_sources(monkeypatch, no_hub):
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError) as info:
        load("tiny_shakespeare", "train")
    msg = str(info.value)
    assert "(1) an explicit path= option: none given" in msg
    assert "(2) $CNET_DATA_DIR/tinyshakespeare.txt: the variable is not set" in msg
    assert "(3) the Hugging Face Hub dataset 'karpathy/tiny_shakespeare': ConnectionError" in msg
    assert "OfflineModeIsEnabled" in msg
    assert msg.endswith("Point CNET_DATA_DIR at a folder holding tinyshakespeare.txt, or give its location: "
                        "path=... in Python, --data-path on the command line (cnet train, cnet eval).")
    assert no_hub == [("karpathy/tiny_shakespeare",)]


def test_data_dir_without_the_file_falls_through_to_the_hub(tmp_path, monkeypatch, no_hub):
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'tinyshakespeare.txt'} does not exist"):
        tiny_shakespeare("validation")
    assert len(no_hub) == 1


def _fake_hub(monkeypatch, text: str):
    """Serve ``text`` the way the Hub dataset does: three one-row splits cut 90/5/5 by position."""
    n = len(text)
    a, b = int(n * 0.9), int(n * 0.95)
    parts = datasets.DatasetDict({name: datasets.Dataset.from_dict({"text": [chunk]}) for name, chunk in
                                  [("train", text[:a]), ("validation", text[a:b]), ("test", text[b:])]})
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kw: calls.append(args) or parts)
    return calls


def test_hub_rebuilds_the_corpus_and_splits_like_a_local_file(tmp_path, monkeypatch):
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    text = "".join(chr(33 + (i * 7) % 90) for i in range(1003))
    calls = _fake_hub(monkeypatch, text)
    local = tmp_path / "tinyshakespeare.txt"
    local.write_text(text)
    for split in ("train", "validation"):
        assert _text(tiny_shakespeare(split)) == _text(tiny_shakespeare(split, path=local))
    assert _text(tiny_shakespeare("train")) == text[:900]
    assert _text(tiny_shakespeare("validation")) == text[900:]  # crosses the Hub's own 902 / 952 cuts
    assert calls == [("karpathy/tiny_shakespeare",)] * 4


def test_empty_corpus(tmp_path, monkeypatch):
    empty = tmp_path / "tinyshakespeare.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=f"empty corpus: {empty}"):
        tiny_shakespeare("train", path=empty)
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="empty corpus"):
        tiny_shakespeare("train")
    monkeypatch.delenv("CNET_DATA_DIR")
    _fake_hub(monkeypatch, "")
    with pytest.raises(ValueError, match="empty corpus: Hub dataset 'karpathy/tiny_shakespeare'"):
        tiny_shakespeare("train")


def test_non_utf8_file(tmp_path):
    bad = tmp_path / "t.txt"
    bad.write_bytes(b"abc\xff")
    with pytest.raises(ValueError, match="t.txt is not UTF-8"):
        tiny_shakespeare("train", path=bad)


def test_load_unknown_dataset_lists_known_ones():
    with pytest.raises(KeyError, match="unknown dataset 'shakespeare'; known datasets: .*text_bytes, tiny_shakespeare"):
        load("shakespeare", "train")
    with pytest.raises(TypeError, match="'name' must be a dataset name"):
        load(None, "train")
