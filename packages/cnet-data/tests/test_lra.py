"""LRA Text (IMDB bytes) and LRA Image (CIFAR-10 grey): tokens by hand, local layouts, Hub fakes (cnet.data.lra)."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from cnet.data import load, lra_image, lra_text
from cnet.data.lra import byte_ids, grey_levels


@pytest.fixture
def no_hub(monkeypatch):
    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise ConnectionError("Couldn't reach the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    return calls


# --- LRA Text --------------------------------------------------------------------------------------------------------

def test_byte_ids_by_hand():
    ids, lengths = byte_ids([b"ab", "\u00e9!".encode(), b"", b"\x00\xff" * 3], 4)
    assert ids.dtype == np.int16 and ids.tolist() == [[98, 99, 0, 0], [196, 170, 34, 0], [0, 0, 0, 0],
                                                      [1, 256, 1, 256]]
    assert lengths.tolist() == [2, 3, 0, 4]  # the last one is truncated from 6 bytes


@pytest.fixture
def imdb(tmp_path):
    reviews = {"train/neg/10_2.txt": b"Dull.", "train/neg/2_1.txt": b"Awful<br /><br />film.",
               "train/neg/0_3.txt": "Na\u00efve plot".encode(), "train/pos/1_9.txt": b"Loved it!",
               "train/pos/notes.md": b"not a review", "train/unsup/0_0.txt": b"unlabelled",
               "test/neg/0_4.txt": b"Meh", "test/pos/0_10.txt": b"Great"}
    for rel, data in reviews.items():
        (tmp_path / "aclImdb" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "aclImdb" / rel).write_bytes(data)
    return tmp_path / "aclImdb"


def test_imdb_folder_order_labels_and_tokens(imdb, no_hub):
    ds = lra_text("train", path=imdb, length=8)
    assert ds.column_names == ["input_ids", "length", "label"]
    assert ds[:]["label"] == [0, 0, 0, 1]
    assert ds[:]["length"] == [8, 8, 5, 8]  # reviews 0, 2, 10 (by id, not by name), then the positive one
    assert ds[0]["input_ids"] == [b + 1 for b in "Na\u00efve p".encode()]
    assert ds[2]["input_ids"] == [69, 118, 109, 109, 47, 0, 0, 0]  # "Dull." + 1, padded with 0
    assert no_hub == []


def test_imdb_default_length_via_data_dir(imdb, monkeypatch, no_hub):
    monkeypatch.setenv("CNET_DATA_DIR", str(imdb.parent))
    ds = load("lra_text", "test")
    assert ds.features["input_ids"].length == 4096 and ds[:]["label"] == [0, 1]
    assert ds[:]["length"] == [3, 5] and ds[1]["input_ids"][:6] == [72, 115, 102, 98, 117, 0]
    assert no_hub == []


def test_imdb_errors(imdb, tmp_path, monkeypatch, no_hub):
    (imdb / "test" / "pos" / "0_10.txt").unlink()
    (imdb / "test" / "pos").rmdir()
    with pytest.raises(FileNotFoundError, match=r"no folder .*aclImdb/test/pos"):
        lra_text("test", path=imdb)
    with pytest.raises(ValueError, match="'length' must be >= 1"):
        lra_text("train", path=imdb, length=0)
    with pytest.raises(ValueError, match="'split' must be one of 'train', 'test'"):
        lra_text("unsupervised", path=imdb)
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="Hugging Face Hub dataset 'stanfordnlp/imdb': ConnectionError"):
        lra_text("train")
    assert no_hub == [(("stanfordnlp/imdb",), {"split": "train"})]


def test_imdb_from_the_hub(monkeypatch):
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    hub = datasets.Dataset.from_dict({"text": ["Bad.", "Caf\u00e9 good"], "label": [0, 1]})
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: hub)
    ds = lra_text("test", length=6)
    assert ds[:]["label"] == [0, 1] and ds[:]["length"] == [4, 6]
    assert ds[1]["input_ids"] == [68, 98, 103, 196, 170, 33]  # "Caf", then é = C3 A9, then " " (truncated)


# --- LRA Image -------------------------------------------------------------------------------------------------------

def test_grey_levels_by_hand():
    rgb = np.array([[255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30], [0, 0, 0],
                    [1, 1, 1], [2, 1, 0]], dtype=np.uint8)
    # 0.2989 R + 0.5870 G + 0.1140 B, rounded half up: 254.97, 76.22, 149.69, 29.07, 18.15, 0, 0.9999, 1.1848
    assert grey_levels(rgb).tolist() == [255, 76, 150, 29, 18, 0, 1, 1]
    with pytest.raises(ValueError, match="must end in 3 channels"):
        grey_levels(np.zeros((2, 4)))


def _cifar_records(images: np.ndarray, labels: list[int]) -> bytes:
    planes = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)  # R plane, G plane, B plane
    return b"".join(bytes([label]) + plane.tobytes() for label, plane in zip(labels, planes, strict=True))


def test_cifar_binary_folder(tmp_path, no_hub):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8)
    images[0, 0, 1] = (255, 0, 0)  # row 0, column 1 pure red
    images[0, 1, 0] = (10, 20, 30)  # row 1, column 0
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    (folder / "test_batch.bin").write_bytes(_cifar_records(images, [3, 0, 9]))
    ds = lra_image("test", path=folder)
    assert ds.column_names == ["input_ids", "label"] and ds[:]["label"] == [3, 0, 9]
    tokens = np.asarray(ds[:]["input_ids"])
    assert tokens.shape == (3, 1024) and ds.features["input_ids"].feature.dtype == "uint8"
    assert tokens[0, 1] == 76 and tokens[0, 32] == 18  # token 32 r + c
    assert np.array_equal(tokens, grey_levels(images).reshape(3, 1024))
    with pytest.raises(FileNotFoundError, match="no .*data_batch_1.bin"):
        lra_image("train", path=folder)
    (folder / "test_batch.bin").write_bytes(b"\x00" * 3074)
    with pytest.raises(ValueError, match="not a whole number of 3,073-byte"):
        lra_image("test", path=folder)
    assert no_hub == []


def test_cifar_from_the_hub_and_offline(monkeypatch, no_hub):
    from PIL import Image

    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError) as info:
        load("lra_image", "train")
    assert "(2) $CNET_DATA_DIR/cifar-10-batches-bin/data_batch_1.bin: the variable is not set" in str(info.value)
    assert "'uoft-cs/cifar10': ConnectionError" in str(info.value)
    images = np.random.default_rng(1).integers(0, 256, size=(2, 32, 32, 3), dtype=np.uint8)
    hub = datasets.Dataset.from_dict(
        {"img": [Image.fromarray(im) for im in images], "label": [6, 1]},
        features=datasets.Features({"img": datasets.Image(), "label": datasets.Value("int64")}))
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or hub)
    ds = lra_image("train")
    assert calls == [(("uoft-cs/cifar10",), {"split": "train"})]
    assert ds[:]["label"] == [6, 1]
    assert np.array_equal(np.asarray(ds[:]["input_ids"]), grey_levels(images).reshape(2, 1024))
