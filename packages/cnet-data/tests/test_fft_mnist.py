"""FFT-MNIST: idx parsing, the DFT convention by hand, the real test set, sources (cnet.data.fft_mnist)."""

from __future__ import annotations

import gzip
import math
import os
import struct
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch

from cnet.data import complex_tokens, fft_mnist, load, read_idx
from cnet.data.fft_mnist import downsample, fft_tokens

MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _idx_bytes(array: np.ndarray, code: int) -> bytes:
    dtype = {0x08: ">u1", 0x0B: ">i2", 0x0D: ">f4"}[code]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(dtype).tobytes()


def _write_mnist(folder: Path, prefix: str, images: np.ndarray, labels: np.ndarray, compress: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in ((f"{prefix}-images-idx3-ubyte", _idx_bytes(images, 0x08)),
                       (f"{prefix}-labels-idx1-ubyte", _idx_bytes(labels, 0x08))):
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)


@pytest.fixture
def no_hub(monkeypatch):
    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise ConnectionError("Couldn't reach 'ylecun/mnist' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    return calls


@pytest.fixture(scope="module")
def mnist_dir() -> Path:
    root = os.environ.get("CNET_DATA_DIR")
    if not root:
        pytest.skip("CNET_DATA_DIR is not set: point it at the folder holding mnist/ (CI sets it)")
    if not (Path(root) / "mnist" / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"CNET_DATA_DIR={root} holds no mnist/t10k-images-idx3-ubyte.gz")
    return Path(root) / "mnist"


@pytest.fixture(scope="module")
def real_test(mnist_dir) -> datasets.Dataset:
    return fft_mnist("test", path=mnist_dir)


# --- idx files -------------------------------------------------------------------------------------------------------

def test_read_idx_types_shapes_and_compression(tmp_path):
    a = np.array([[0, 7, 255], [1, 2, 3]], dtype=np.uint8)
    (tmp_path / "u8").write_bytes(_idx_bytes(a, 0x08))
    (tmp_path / "u8.gz").write_bytes(gzip.compress(_idx_bytes(a, 0x08)))
    (tmp_path / "gz-named-plain.gz").write_bytes(_idx_bytes(a, 0x08))  # content decides, not the name
    for name in ("u8", "u8.gz", "gz-named-plain.gz"):
        got = read_idx(tmp_path / name)
        assert got.dtype == np.uint8 and got.tolist() == a.tolist()
    (tmp_path / "i16").write_bytes(bytes([0, 0, 0x0B, 1, 0, 0, 0, 2]) + b"\xff\xfe\x01\x2c")  # -2, 300 big-endian
    assert read_idx(tmp_path / "i16").tolist() == [-2, 300]
    f32 = np.array([1.5, -0.25], dtype=np.float32)
    (tmp_path / "f32").write_bytes(_idx_bytes(f32, 0x0D))
    assert read_idx(tmp_path / "f32").tolist() == [1.5, -0.25]


def test_read_idx_errors(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x01\x00")
    with pytest.raises(ValueError, match="bad is not an idx file"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5]) + b"abc")
    with pytest.raises(ValueError, match=r"shape \(5,\) \(5 data bytes\) but the file holds 3"):
        read_idx(tmp_path / "short")
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "missing")


# --- the transform ---------------------------------------------------------------------------------------------------

def test_dft_sign_and_scale_by_hand():
    n = torch.arange(16, dtype=torch.float32)
    sine = torch.sin(2 * math.pi * n / 16).expand(16, 16).unsqueeze(0)  # x[m, n] = sin(2 pi n / 16)
    tokens = fft_tokens(sine)[0]
    assert tokens.shape == (256,) and tokens.dtype == torch.complex64
    expected = torch.zeros(256, dtype=torch.complex64)
    expected[1], expected[15] = -8j, 8j  # exp(-2 pi i ...) forward sign, 1/16 = 1/sqrt(256) scale
    assert torch.allclose(tokens, expected, atol=1e-5)
    column = torch.cos(2 * math.pi * 2 * n / 16).unsqueeze(1).expand(16, 16).unsqueeze(0)  # varies along rows
    tokens = fft_tokens(column)[0]
    expected = torch.zeros(256, dtype=torch.complex64)
    expected[2 * 16], expected[14 * 16] = 8.0, 8.0  # (1/16) * 16 columns * 16/2 from the cosine's two halves
    assert torch.allclose(tokens, expected, atol=1e-5)


def test_downsample_constant_and_range():
    white = np.full((2, 28, 28), 255, dtype=np.uint8)
    for antialias in (True, False):
        small = downsample(white, antialias=antialias)
        assert small.shape == (2, 16, 16) and torch.allclose(small, torch.ones(2, 16, 16))
    tokens = fft_tokens(downsample(white))
    assert tokens[0, 0] == pytest.approx(16.0) and tokens[:, 1:].abs().max() < 1e-5
    with pytest.raises(ValueError, match=r"'images' must be \[N, H, W\]"):
        downsample(white[0])
    with pytest.raises(ValueError, match=r"'small' must be \[N, 16, 16\]"):
        fft_tokens(torch.zeros(1, 28, 28))


# --- the real MNIST test set -----------------------------------------------------------------------------------------

def test_real_test_set_rows_and_labels(real_test):
    assert real_test.num_rows == 10_000 and real_test.column_names == ["real", "imag", "label"]
    assert np.bincount(real_test[:]["label"]).tolist() == MNIST_TEST_COUNTS
    assert real_test[0]["label"] == 7 and real_test[1]["label"] == 2
    assert real_test.features["real"].length == 256 and real_test.features["real"].feature.dtype == "float32"


def test_real_tokens_match_an_independent_recomputation(mnist_dir, real_test):
    raw = gzip.decompress((mnist_dir / "t10k-images-idx3-ubyte.gz").read_bytes())
    assert raw[:4] == b"\x00\x00\x08\x03"
    images = np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(10_000, 28, 28)[:50]
    small = torch.nn.functional.interpolate(torch.from_numpy(images.astype(np.float32) / 255).unsqueeze(1),
                                            size=(16, 16), mode="bilinear", antialias=True).squeeze(1).numpy()
    expected = np.fft.fft2(small, norm="ortho").reshape(50, 256)  # numpy's forward DFT uses exp(-2 pi i ...) too
    got = complex_tokens(real_test[:50]).numpy()
    assert np.allclose(got, expected, atol=1e-5)
    assert np.allclose((np.abs(got) ** 2).sum(axis=1), (small ** 2).sum(axis=(1, 2)), rtol=1e-5)  # Parseval
    assert np.allclose(got[:, 0].real, small.sum(axis=(1, 2)) / 16, rtol=1e-5) and np.allclose(got[:, 0].imag, 0)
    spectrum = got.reshape(50, 16, 16)  # real images: X[-u, -v] = conj X[u, v]
    assert np.allclose(spectrum[:, 3, 5], np.conj(spectrum[:, 13, 11]), atol=1e-5)


def test_train_split_offline_says_what_is_missing(mnist_dir, monkeypatch, no_hub):
    monkeypatch.setenv("CNET_DATA_DIR", str(mnist_dir.parent))
    with pytest.raises(FileNotFoundError) as info:
        load("fft_mnist", "train")
    msg = str(info.value)
    assert "(3) the Hugging Face Hub dataset 'ylecun/mnist': ConnectionError" in msg
    assert f"the local folder {mnist_dir} was found but lacks the 'train' files train-images-idx3-ubyte" in msg
    assert no_hub == [(("ylecun/mnist",), {"split": "train"})]
    assert load("fft_mnist", "test").num_rows == 10_000  # the local test files never touch the Hub
    assert len(no_hub) == 1
    with pytest.raises(ValueError, match="'split' must be one of 'train', 'test'"):
        fft_mnist("validation")


# --- sources with hand-made files ------------------------------------------------------------------------------------

def _images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8), rng.integers(0, 10, size=n).astype(np.uint8)


def test_explicit_folder_and_the_hub_give_the_same_rows(tmp_path, monkeypatch):
    from PIL import Image

    images, labels = _images(4, seed=0)
    _write_mnist(tmp_path / "mine", "train", images, labels, compress=False)
    local = fft_mnist("train", path=tmp_path / "mine")
    assert local[:]["label"] == labels.tolist()
    monkeypatch.delenv("CNET_DATA_DIR", raising=False)
    hub = datasets.Dataset.from_dict(
        {"image": [Image.fromarray(im) for im in images], "label": labels.tolist()},
        features=datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")}))
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or hub)
    online = fft_mnist("train")
    assert calls == [(("ylecun/mnist",), {"split": "train"})]
    assert online[:]["label"] == labels.tolist()
    assert np.array_equal(np.asarray(online[:]["real"]), np.asarray(local[:]["real"]))
    assert np.array_equal(np.asarray(online[:]["imag"]), np.asarray(local[:]["imag"]))
    plain = fft_mnist("train", path=tmp_path / "mine", antialias=False)
    assert not np.allclose(np.asarray(plain[:]["real"]), np.asarray(local[:]["real"]))


def test_malformed_local_files(tmp_path):
    images, labels = _images(3, seed=1)
    _write_mnist(tmp_path, "t10k", images, labels[:2])
    with pytest.raises(ValueError, match="expected 3 labels"):
        fft_mnist("test", path=tmp_path)
    _write_mnist(tmp_path, "t10k", images[:, :27, :], labels)
    with pytest.raises(ValueError, match=r"expected uint8 images \[N, 28, 28\]"):
        fft_mnist("test", path=tmp_path)
    with pytest.raises(FileNotFoundError, match="is missing"):
        fft_mnist("test", path=tmp_path / "nope")


def test_explicit_folder_without_the_split_names_it(tmp_path, monkeypatch):
    images, labels = _images(2, seed=3)
    _write_mnist(tmp_path, "t10k", images, labels)  # test files only
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append(a))
    with pytest.raises(FileNotFoundError) as info:
        fft_mnist("train", path=tmp_path)
    msg = str(info.value)
    assert msg == (f"fft_mnist: path={str(tmp_path)!r} lacks the MNIST idx file(s) train-images-idx3-ubyte[.gz] and "
                   "train-labels-idx1-ubyte[.gz] of split='train' (gzipped or not); it holds: "
                   "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz")
    assert "\n" not in msg and calls == []  # an explicit folder is used alone: no Hub fallback
    assert fft_mnist("test", path=tmp_path)[:]["label"] == labels.tolist()
