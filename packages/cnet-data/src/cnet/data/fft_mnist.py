"""FFT-MNIST: MNIST digits as 256 complex Fourier tokens (PCT paper D.1).

Pipeline, per image: pixels / 255 (float32 in [0, 1]); 28x28 -> 16x16 by bilinear resampling with an anti-alias
filter (``torch.nn.functional.interpolate(mode="bilinear", align_corners=False, antialias=True)``, the same as
torchvision's default ``Resize(16)`` on tensors; ``antialias=False`` gives plain bilinear sampling); the 2-D DFT
``torch.fft.fft2(x, norm="ortho")``, i.e. ``X[u, v] = (1/16) sum_{m,n} x[m, n] exp(-2 pi i (u m + v n) / 16)``
(the project's sign convention, papers/NOTES.md); flattened row-major, token ``16 u + v``.

Sources, in order (DESIGN.md section 5): ``path=`` (a folder of idx files), ``$CNET_DATA_DIR/mnist/``, the Hub
dataset ``ylecun/mnist`` (columns ``image``, ``label``). The idx files are parsed here with numpy (gzip or not);
nothing is unpickled.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from cnet.data._common import check_split, hub_load, image_array, local_dir, to_dataset

__all__ = ["FFT_SIDE", "FFT_TOKENS", "MNIST_DIR", "MNIST_HUB_ID", "complex_tokens", "downsample", "fft_mnist",
           "fft_tokens", "mnist_arrays", "read_idx"]

MNIST_DIR = "mnist"
MNIST_HUB_ID = "ylecun/mnist"
FFT_SIDE = 16
FFT_TOKENS = FFT_SIDE * FFT_SIDE
_PREFIX = {"train": "train", "test": "t10k"}
# idx type codes -> big-endian numpy dtypes (LeCun's format description)
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an idx file (MNIST's format), gzip-compressed or not (detected from the content, not the name).

    Format: two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
    0x0E float64), the number of dimensions ``n``, ``n`` big-endian uint32 sizes, then the data, big-endian,
    row-major.

    Returns:
        An array of the stored shape, in native byte order (uint8 for MNIST: images ``[N, 28, 28]``, labels ``[N]``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a bad magic number, an unknown type code, or a data size that does not match the header
            (the file is named).
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: broken gzip stream ({exc})") from exc
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path} is not an idx file (magic bytes {raw[:4].hex()!r}; expected 0000 <type> <ndim>)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated idx header ({len(raw)} bytes, {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{path}: idx header says shape {shape} ({expected} data bytes) but the file holds "
                         f"{len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def _idx_file(folder: Path, name: str) -> Path | None:
    for candidate in (folder / f"{name}.gz", folder / name):
        if candidate.is_file():
            return candidate
    return None


def _local_arrays(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray] | None:
    prefix = _PREFIX[split]
    images = _idx_file(folder, f"{prefix}-images-idx3-ubyte")
    labels = _idx_file(folder, f"{prefix}-labels-idx1-ubyte")
    if images is None or labels is None:
        return None
    x, y = read_idx(images), read_idx(labels)
    if x.ndim != 3 or x.shape[1:] != (28, 28) or x.dtype != np.uint8:
        raise ValueError(f"{images}: expected uint8 images [N, 28, 28], got {x.dtype} {list(x.shape)}")
    if y.shape != (x.shape[0],):
        raise ValueError(f"{labels}: expected {x.shape[0]} labels, got shape {list(y.shape)}")
    return x, y.astype(np.int64)


def mnist_arrays(split: str, *, path: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MNIST images and labels of ``split`` from the first source that has them.

    Sources: ``path=`` then ``$CNET_DATA_DIR/mnist/`` (files ``train-*`` / ``t10k-*`` ``-images-idx3-ubyte`` and
    ``-labels-idx1-ubyte``, ``.gz`` or not), then the Hub ``ylecun/mnist``. A ``$CNET_DATA_DIR/mnist/`` without the
    split's files (e.g. the shared data, which holds only the test files) falls through to the Hub; an explicit
    ``path=`` is used alone: without the split's files it is an error.

    Returns:
        ``(images, labels)``: uint8 ``[N, 28, 28]`` and int64 ``[N]`` (test: N = 10,000; train: 60,000).

    Raises:
        ValueError: unknown split; malformed files.
        FileNotFoundError: ``path`` is not a folder or lacks the split's files (path and expected files named);
            or no source has the split (the message names the three).
    """
    check_split("fft_mnist", split, tuple(_PREFIX))
    folder = local_dir(MNIST_DIR, path)
    if folder is not None:
        found = _local_arrays(folder, split)
        if found is not None:
            return found
        if path is not None:
            prefix = _PREFIX[split]
            wanted = [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]
            missing = [f"{w}[.gz]" for w in wanted if _idx_file(folder, w) is None]
            present = sorted(p.name for p in folder.iterdir())
            shown = ", ".join(present[:10]) + (f", ... ({len(present)} entries)" if len(present) > 10 else "")
            raise FileNotFoundError(f"fft_mnist: path={str(folder)!r} lacks the MNIST idx file(s) "
                                    f"{' and '.join(missing)} of split={split!r} (gzipped or not); it holds: "
                                    f"{shown or 'nothing'}")
    relname = f"{MNIST_DIR}/{_PREFIX[split]}-images-idx3-ubyte.gz"
    try:
        loaded = hub_load("fft_mnist", relname, MNIST_HUB_ID, split)
    except FileNotFoundError as exc:
        if folder is not None:
            raise FileNotFoundError(f"{exc} (the local folder {folder} was found but lacks the {split!r} files "
                                    f"{_PREFIX[split]}-images-idx3-ubyte[.gz] and {_PREFIX[split]}-labels-idx1-ubyte"
                                    "[.gz])") from exc
        raise
    images = np.stack([image_array(v, "L") for v in loaded["image"]])
    labels = np.asarray(loaded["label"], dtype=np.int64)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(f"Hub dataset {MNIST_HUB_ID!r}: expected 28x28 images, got {list(images.shape[1:])}")
    return images, labels


def downsample(images: np.ndarray | torch.Tensor, *, antialias: bool = True) -> torch.Tensor:
    """28x28 pixel images (0..255) -> float32 16x16 images in [0, 1] (bilinear, see the module docstring).

    Args:
        images: ``[N, H, W]`` (any size; MNIST 28x28) of pixel values 0..255.
        antialias: ``True`` (default) filters before sampling; ``False`` samples bilinearly without a filter.

    Returns:
        ``[N, 16, 16]`` float32 tensor.

    Raises:
        ValueError: ``images`` is not 3-D.
    """
    x = torch.as_tensor(np.asarray(images) if not isinstance(images, torch.Tensor) else images)
    if x.dim() != 3:
        raise ValueError(f"downsample: argument 'images' must be [N, H, W], got shape {list(x.shape)}")
    x = x.to(torch.float32).div(255.0).unsqueeze(1)
    out = torch.nn.functional.interpolate(x, size=(FFT_SIDE, FFT_SIDE), mode="bilinear", align_corners=False,
                                          antialias=antialias)
    return out.squeeze(1)


def fft_tokens(small: torch.Tensor) -> torch.Tensor:
    """The 2-D orthonormal DFT of ``[N, 16, 16]`` real images, flattened row-major to ``[N, 256]`` complex64.

    Token ``16 u + v`` is ``X[u, v] = (1/16) sum_{m,n} x[m, n] exp(-2 pi i (u m + v n) / 16)``
    (``torch.fft.fft2(norm="ortho")``); token 0 is the image sum / 16; energy is preserved (Parseval).

    Raises:
        ValueError: ``small`` is not ``[N, 16, 16]``.
    """
    if small.dim() != 3 or tuple(small.shape[1:]) != (FFT_SIDE, FFT_SIDE):
        raise ValueError(f"fft_tokens: argument 'small' must be [N, 16, 16], got shape {list(small.shape)}")
    return torch.fft.fft2(small.to(torch.float32), norm="ortho").reshape(small.shape[0], FFT_TOKENS)


def complex_tokens(batch: dict[str, Any]) -> torch.Tensor:
    """Rebuild the complex tokens of FFT-MNIST rows: ``real + 1j * imag``.

    Args:
        batch: a row or a batch of rows with ``"real"`` and ``"imag"`` (lists, arrays or tensors of 256 floats per
            row), e.g. ``ds[:32]``.

    Returns:
        complex64 tensor ``[256]`` or ``[B, 256]``.
    """
    real = torch.as_tensor(np.asarray(batch["real"], dtype=np.float32))
    imag = torch.as_tensor(np.asarray(batch["imag"], dtype=np.float32))
    return torch.complex(real, imag)


def fft_mnist(split: str, *, path: str | os.PathLike | None = None, antialias: bool = True) -> datasets.Dataset:
    """FFT-MNIST: each digit as 256 complex tokens, the 2-D DFT of the image down-sampled to 16x16.

    Args:
        split: ``"train"`` (60,000) or ``"test"`` (10,000). The shared data folder holds only the test files, so
            offline ``"train"`` raises the not-found error.
        path: a folder of MNIST idx files (wins over ``$CNET_DATA_DIR/mnist`` and the Hub; it must hold the
            split's files).
        antialias: the down-sampling filter (see :func:`downsample`).

    Returns:
        A :class:`datasets.Dataset` with ``"real"`` and ``"imag"`` (float32, 256 each: the tokens' real and
        imaginary parts, row-major over the 16x16 spectrum; :func:`complex_tokens` joins them) and ``"label"``
        (int64, the digit 0..9).

    Raises:
        ValueError: unknown split; malformed files.
        FileNotFoundError: ``path`` is not a folder or lacks the split's files; no source has the split (the
            message names the three sources).
    """
    images, labels = mnist_arrays(split, path=path)
    tokens = fft_tokens(downsample(images, antialias=bool(antialias))).numpy()
    features = datasets.Features({
        "real": datasets.Sequence(datasets.Value("float32"), length=FFT_TOKENS),
        "imag": datasets.Sequence(datasets.Value("float32"), length=FFT_TOKENS),
        "label": datasets.Value("int64"),
    })
    return to_dataset({"real": np.ascontiguousarray(tokens.real, dtype=np.float32),
                       "imag": np.ascontiguousarray(tokens.imag, dtype=np.float32), "label": labels}, features)
