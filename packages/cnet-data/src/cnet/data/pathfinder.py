"""Pathfinder: are two marked dots joined by a dashed curve? LRA's folder format, and a small seeded generator.

LRA layout (papers/NOTES.md, "Data formats"): ``pathfinder<N>/<subset>/imgs/<k>/sample_<j>.png`` (N x N grey
PNGs) and ``pathfinder<N>/<subset>/metadata/<k>.npy``, which despite its name is a text file with one line per
image, whitespace-separated: field 0 the image folder (``imgs/<k>``), field 1 the file name, field 3 the label
(1 = connected). ``<subset>`` is ``curv_contour_length_14`` for the hardest level, used by Path-X (N = 128,
16,384 tokens; PCT paper section 4).

Sources, in order: ``path=`` (a ``pathfinder<N>`` folder, or a folder holding one, as
:func:`write_pathfinder_lra` writes), then ``$CNET_DATA_DIR/pathfinder<N>``. There is no Hub
source (LRA ships a tarball). :func:`pathfinder_synthetic` draws small images of the same kind for tests and
:func:`write_pathfinder_lra` writes them in the LRA layout.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from cnet.data._common import (
    check_count,
    check_int,
    check_seed,
    check_split,
    generate,
    local_dir,
    to_dataset,
)
from cnet.data.sources import not_found_error

__all__ = ["PATHFINDER_SUBSET", "pathfinder", "pathfinder_synthetic", "write_pathfinder_lra"]

PATHFINDER_SUBSET = "curv_contour_length_14"
_DEFAULT_RESOLUTION = 32
_RESOLUTION_DIR = re.compile(r"pathfinder(\d+)")
_SPLITS = ("train", "validation", "test", None)

# Drawing rule of pathfinder_synthetic (see its docstring).
_MARGIN = 2  # curves keep this far (in pixels) from the border
_CLEARANCE = 2  # Chebyshev distance every point of a new curve keeps from earlier curves
_MAX_TURN = math.pi / 8
_DASH_ON, _DASH_OFF = 3, 2
_TRIES = 50
_INK = 255


def _features(side: int) -> datasets.Features:
    return datasets.Features({"input_ids": datasets.Sequence(datasets.Value("uint8"), length=side * side),
                              "label": datasets.Value("int64")})


def _split_range(n: int, split: str | None) -> range:
    n_train, n_val = n * 8 // 10, n // 10
    return {None: range(n), "train": range(n_train), "validation": range(n_train, n_train + n_val),
            "test": range(n_train + n_val, n)}[split]


def _metadata_entries(subset_dir: Path) -> list[tuple[Path, int]]:
    meta = subset_dir / "metadata"
    if not meta.is_dir():
        raise FileNotFoundError(f"pathfinder: no metadata folder {meta}; the LRA layout is "
                                "pathfinder<N>/<subset>/imgs/<k>/sample_<j>.png with metadata/<k>.npy (text lines: "
                                "folder, file, index, label)")
    files = [f for f in meta.iterdir() if f.is_file() and f.suffix == ".npy"]
    files.sort(key=lambda f: (0, int(f.stem)) if f.stem.isdigit() else (1, f.stem))
    entries = []
    for file in files:
        for line_no, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 4 or fields[3] not in ("0", "1"):
                raise ValueError(f"{file}, line {line_no}: expected 'folder file index label ...' with label 0 or 1, "
                                 f"got {line!r}")
            entries.append((subset_dir / fields[0] / fields[1], int(fields[3])))
    if not entries:
        raise ValueError(f"pathfinder: the metadata files in {meta} list no images")
    return entries


def _resolution_folder(path: str | os.PathLike | None, resolution: int | None) -> tuple[Path | None, int]:
    """The ``pathfinder<N>`` folder to read and ``N``: from ``path`` (the folder itself or its parent), else env."""
    if path is None:
        n = _DEFAULT_RESOLUTION if resolution is None else resolution
        return local_dir(f"pathfinder{n}", None), n
    given = local_dir(f"pathfinder{resolution or _DEFAULT_RESOLUTION}", path)  # raises when not a folder
    named = _RESOLUTION_DIR.fullmatch(given.name)
    children = {int(m.group(1)): p for p in given.iterdir() if p.is_dir() and (m := _RESOLUTION_DIR.fullmatch(p.name))}
    if named or not children:  # the pathfinder<N> folder itself
        if resolution is None:
            resolution = int(named.group(1)) if named else _DEFAULT_RESOLUTION
        return given, resolution
    found = ", ".join(f"pathfinder{n}" for n in sorted(children))
    if resolution is not None:
        if resolution not in children:
            raise FileNotFoundError(f"pathfinder: path={str(given)!r} holds {found} but no pathfinder{resolution} "
                                    f"for resolution={resolution}; pass a resolution present, or path= that folder")
        return children[resolution], resolution
    if len(children) > 1:
        raise ValueError(f"pathfinder: path={str(given)!r} holds several resolution folders ({found}); pick one with "
                         "resolution=N or give path= that pathfinder<N> folder")
    (n, folder), = children.items()
    return folder, n


def pathfinder(split: str | None, *, path: str | os.PathLike | None = None, resolution: int | None = None,
               subset: str = PATHFINDER_SUBSET) -> datasets.Dataset:
    """LRA Pathfinder / Path-X images as pixel-token sequences with a connectivity label.

    The images listed by ``metadata/<k>.npy`` (files in increasing ``k``, lines in file order) are split by
    position: the first 80% (``n * 8 // 10``) train, the next 10% (``n // 10``) validation, the rest test
    (LRA fixes no split; this one is deterministic). ``split=None`` gives all of them. Images are decoded with
    Pillow to 8-bit grey and held in memory (``N * N`` bytes each).

    Args:
        split: ``"train"``, ``"validation"``, ``"test"`` or ``None``.
        path: a ``pathfinder<N>`` folder, holding ``<subset>/``; or its parent (e.g. the ``root`` given to
            :func:`write_pathfinder_lra`) holding exactly one ``pathfinder<N>`` folder, or one matching
            ``resolution``. Wins over ``$CNET_DATA_DIR/pathfinder<N>``.
        resolution: ``N``, the image side in pixels (LRA: 32, 64, 128 = Path-X, 256). ``None`` (default): taken
            from the ``pathfinder<N>`` folder found under ``path``, or from ``path``'s own name, else 32.
        subset: the difficulty folder: ``curv_baseline``, ``curv_contour_length_9`` or ``curv_contour_length_14``.

    Returns:
        A :class:`datasets.Dataset` with ``"input_ids"`` (uint8, ``N * N`` grey levels, row-major) and ``"label"``
        (int64: 1 when the two dots are connected, else 0).

    Raises:
        ValueError: unknown split; a malformed metadata line; an image that is not ``N x N``; ``path`` holds
            several ``pathfinder<N>`` folders and ``resolution`` is not given.
        FileNotFoundError: ``path`` not a folder; no ``pathfinder<resolution>`` below ``path``; no ``<subset>``
            folder (the message lists the subsets present); no ``<subset>/metadata`` folder (named); a listed image
            missing; or no source at all.
    """
    check_split("pathfinder", split, _SPLITS)
    if resolution is not None:
        resolution = check_int("pathfinder", "resolution", resolution, minimum=2)
    if not isinstance(subset, str) or not subset or "/" in subset or "\\" in subset:
        raise ValueError(f"pathfinder: argument 'subset' must be a folder name such as {PATHFINDER_SUBSET!r}, "
                         f"got {subset!r}")
    base, resolution = _resolution_folder(path, resolution)
    if base is None:
        raise not_found_error("pathfinder", f"pathfinder{resolution}/{subset}/metadata", None,
                              "no Hub copy of LRA's Pathfinder is used")
    if not (base / subset).is_dir():
        present = sorted(p.name for p in base.iterdir() if p.is_dir())
        raise FileNotFoundError(f"pathfinder: no subset folder {base / subset} for subset={subset!r}; subsets present "
                                f"in {base}: {', '.join(present) if present else 'none'}")
    from PIL import Image

    all_entries = _metadata_entries(base / subset)
    entries = [all_entries[i] for i in _split_range(len(all_entries), split)]
    pixels = np.empty((len(entries), resolution * resolution), dtype=np.uint8)
    for row, (file, _) in enumerate(entries):
        if not file.is_file():
            raise FileNotFoundError(f"pathfinder: {file} is listed in the metadata but missing")
        with Image.open(file) as img:
            grey = np.asarray(img.convert("L"), dtype=np.uint8)
        if grey.shape != (resolution, resolution):
            raise ValueError(f"pathfinder: {file} is {grey.shape[1]}x{grey.shape[0]}, expected "
                             f"{resolution}x{resolution} (argument 'resolution')")
        pixels[row] = grey.reshape(-1)
    labels = np.asarray([label for _, label in entries], dtype=np.int64)
    return to_dataset({"input_ids": pixels, "label": labels}, _features(resolution))


def _fold(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect coordinates into ``[lo, hi]`` (a walk that leaves the box is mirrored back off its walls)."""
    span = hi - lo
    t = np.mod(x - lo, 2.0 * span)
    return lo + np.where(t > span, 2.0 * span - t, t)


def _curve(rng: np.random.Generator, side: int, steps: int) -> np.ndarray:
    """Integer pixel positions ``[steps + 1, 2]`` (row, col) of a smooth random walk with unit steps."""
    lo, hi = float(_MARGIN), float(side - 1 - _MARGIN)
    start = rng.uniform(lo, hi, size=2)
    theta = rng.uniform(0.0, 2.0 * math.pi) + np.cumsum(rng.uniform(-_MAX_TURN, _MAX_TURN, size=steps))
    moves = np.stack([np.sin(theta), np.cos(theta)], axis=1)
    free = start + np.concatenate([np.zeros((1, 2)), np.cumsum(moves, axis=0)])
    return np.rint(_fold(free, lo, hi)).astype(np.int64)


def _clear(curve: np.ndarray, occupied: np.ndarray) -> bool:
    return not occupied[curve[:, 0], curve[:, 1]].any()


def _reserve(curve: np.ndarray, occupied: np.ndarray) -> None:
    side = occupied.shape[0]
    for r, c in curve:
        occupied[max(r - _CLEARANCE, 0):min(r + _CLEARANCE + 1, side),
                 max(c - _CLEARANCE, 0):min(c + _CLEARANCE + 1, side)] = True


def _draw_example(rng: np.random.Generator, side: int,
                  distractors: int) -> tuple[np.ndarray, int, list[np.ndarray], list[np.ndarray]]:
    """One image: ``(pixels [side, side], label, curves (pixel positions), the two dot centres)``."""
    steps = max(4, round(0.8 * side))
    label = int(rng.integers(0, 2))
    while True:  # redraw the whole image if the two marked curves do not fit
        occupied = np.zeros((side, side), dtype=bool)
        curves: list[np.ndarray] = []
        for index in range(2 + distractors):
            for _ in range(_TRIES):
                curve = _curve(rng, side, steps)
                if _clear(curve, occupied):
                    _reserve(curve, occupied)
                    curves.append(curve)
                    break
            else:
                if index < 2:
                    break
        if len(curves) >= 2:
            break
    image = np.zeros((side, side), dtype=np.uint8)
    for curve in curves:
        on = (np.arange(len(curve)) % (_DASH_ON + _DASH_OFF)) < _DASH_ON
        image[curve[on, 0], curve[on, 1]] = _INK
    ends = [curves[0][0], curves[0][-1]] if label == 1 else [curves[0][0], curves[1][-1]]
    for r, c in ends:
        image[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2] = _INK
    return image, label, curves, ends


def pathfinder_synthetic(split: str = "train", *, resolution: int = 32, num_examples: int | None = 256,
                         seed: int = 0, distractors: int = 1) -> datasets.Dataset | datasets.IterableDataset:
    """Small seeded Pathfinder-like images: are the two marked dots on the same dashed curve?

    Drawing rule, on an ``N x N`` black canvas (``N = resolution``):

    1. The label is drawn first, 0 or 1 with probability 1/2 each.
    2. ``2 + distractors`` curves are drawn one after another. A curve is a random walk of ``round(0.8 N)`` unit
       steps from a uniform start with a uniform initial heading; each step turns the heading by a uniform angle
       in ``[-pi/8, pi/8]``; where the walk would leave the canvas less a 2-pixel margin it is mirrored back off
       that edge; positions are rounded to pixels. A curve is
       redrawn (up to 50 times) until every point of it keeps a Chebyshev distance of more than 2 pixels from
       every point of the curves already placed, so curves never touch or cross; a distractor that does not fit
       is dropped, and if one of the first two does not fit the whole image is redrawn.
    3. Curves are dashed: along each curve, points ``0, 1, 2`` of every 5 are drawn (value 255), ``3, 4`` skipped.
    4. Two 3x3 dots (value 255) mark the ends: label 1, both ends of curve 0; label 0, the start of curve 0 and the
       end of curve 1. Every other curve is an unmarked distractor. So the dots are connected by a dashed curve
       exactly when the label is 1.

    Args:
        split: ``"train"``, ``"validation"`` or ``"test"`` (independent streams).
        resolution: ``N``, 16..256.
        num_examples: number of rows (>= 1), or ``None`` for an unbounded stream.
        seed: non-negative int; same seed -> identical images.
        distractors: unmarked curves beyond the two always drawn, 0..8.

    Returns:
        Rows with ``"input_ids"`` (uint8, ``N * N`` pixels, row-major, values 0 or 255) and ``"label"`` (int64),
        the columns of :func:`pathfinder`.

    Raises:
        TypeError / ValueError: an argument of the wrong type or out of range (named in the message).
    """
    check_split("pathfinder_synthetic", split, ("train", "validation", "test"))
    side = check_int("pathfinder_synthetic", "resolution", resolution, minimum=16, maximum=256)
    num_examples = check_count("pathfinder_synthetic", num_examples)
    seed = check_seed("pathfinder_synthetic", seed)
    distractors = check_int("pathfinder_synthetic", "distractors", distractors, minimum=0, maximum=8)

    def make_row(rng: np.random.Generator) -> dict[str, Any]:
        image, label, _, _ = _draw_example(rng, side, distractors)
        return {"input_ids": image.reshape(-1), "label": label}

    return generate("pathfinder_synthetic", make_row, _features(side), split, num_examples, seed)


def write_pathfinder_lra(root: str | os.PathLike, rows: datasets.Dataset, *, subset: str = PATHFINDER_SUBSET,
                         per_folder: int = 1000) -> Path:
    """Write images in LRA's Pathfinder layout, so :func:`pathfinder` can read them back.

    Row ``i`` goes to ``<root>/pathfinder<N>/<subset>/imgs/<k>/sample_<j>.png`` with ``k = i // per_folder`` and
    ``j = i % per_folder``, and gets the line ``imgs/<k> sample_<j>.png <j> <label>`` in ``metadata/<k>.npy``
    (a text file, as in LRA's release).

    Args:
        root: the folder that receives ``pathfinder<N>/`` (e.g. a ``$CNET_DATA_DIR``); created if needed.
        rows: a dataset with ``"input_ids"`` (``N * N`` pixels each) and ``"label"``, e.g. from
            :func:`pathfinder_synthetic`.
        subset: the difficulty folder name.
        per_folder: images per ``imgs/<k>`` folder, >= 1.

    Returns:
        The ``pathfinder<N>`` folder. ``pathfinder(..., path=...)`` takes it or ``root`` (which it then searches
        for ``pathfinder<N>``).

    Raises:
        ValueError: ``rows`` is empty, lacks the columns, or its rows are not square images of one size.
    """
    from PIL import Image

    per_folder = check_int("write_pathfinder_lra", "per_folder", per_folder, minimum=1)
    missing = {"input_ids", "label"} - set(rows.column_names)
    if missing or rows.num_rows == 0:
        raise ValueError(f"write_pathfinder_lra: argument 'rows' needs rows with 'input_ids' and 'label' "
                         f"(missing {sorted(missing)}, {rows.num_rows} rows)")
    pixels = np.asarray(rows.with_format("numpy")[:]["input_ids"], dtype=np.uint8)
    side = math.isqrt(pixels.shape[1]) if pixels.ndim == 2 else 0
    if pixels.ndim != 2 or side * side != pixels.shape[1]:
        raise ValueError(f"write_pathfinder_lra: rows must hold square images of one size, got {list(pixels.shape)}")
    base = Path(root) / f"pathfinder{side}"
    subset_dir = base / subset
    (subset_dir / "metadata").mkdir(parents=True, exist_ok=True)
    lines: dict[int, list[str]] = {}
    for i, (image, label) in enumerate(zip(pixels, rows["label"], strict=True)):
        k, j = divmod(i, per_folder)
        folder = subset_dir / "imgs" / str(k)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.reshape(side, side)).save(folder / f"sample_{j}.png")
        lines.setdefault(k, []).append(f"imgs/{k} sample_{j}.png {j} {int(label)}\n")
    for k, text in lines.items():
        (subset_dir / "metadata" / f"{k}.npy").write_text("".join(text), encoding="utf-8")
    return base
