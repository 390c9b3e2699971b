"""Pathfinder: the synthetic drawing rule, LRA's folder format written and read back, errors (cnet.data.pathfinder)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

from cnet.data import load, pathfinder, pathfinder_synthetic, write_pathfinder_lra
from cnet.data._common import row_rng
from cnet.data.pathfinder import _draw_example

SUBSET = "curv_contour_length_14"


def _pixels(ds) -> np.ndarray:
    return np.asarray(ds.with_format("numpy")[:]["input_ids"])


def test_drawing_rule():
    ds = pathfinder_synthetic("train", resolution=32, num_examples=60, seed=4)
    images = _pixels(ds).reshape(60, 32, 32)
    for i in range(60):
        image, label, curves, ends = _draw_example(row_rng(4, "train", i), 32, 1)
        assert np.array_equal(image, images[i]) and label == ds[i]["label"]  # the row is this drawing
        assert set(np.unique(image)) <= {0, 255}
        assert 2 <= len(curves) <= 3 and all(len(c) == round(0.8 * 32) + 1 for c in curves)
        for c in curves:
            assert c.min() >= 2 and c.max() <= 29  # the 2-pixel margin
        for a, b in itertools.combinations(curves, 2):  # curves never come within 2 pixels of each other
            gap = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
            assert gap.min() > 2
        expected_ends = (curves[0][0], curves[0][-1]) if label == 1 else (curves[0][0], curves[1][-1])
        assert all(np.array_equal(e, x) for e, x in zip(ends, expected_ends, strict=True))
        for r, c in ends:
            assert (image[r - 1:r + 2, c - 1:c + 2] == 255).all()  # a 3x3 dot
        for c in curves:  # dashes: points 0, 1, 2 of every 5 are ink
            assert (image[c[::5, 0], c[::5, 1]] == 255).all()


def test_synthetic_labels_seeds_and_stream():
    ds = pathfinder_synthetic("train", num_examples=200, seed=0)
    assert ds.column_names == ["input_ids", "label"] and ds.features["input_ids"].length == 1024
    assert 80 <= sum(ds[:]["label"]) <= 120
    again = pathfinder_synthetic("train", num_examples=200, seed=0)
    assert np.array_equal(_pixels(ds), _pixels(again))
    assert not np.array_equal(_pixels(ds)[:10], _pixels(pathfinder_synthetic("train", num_examples=10, seed=1)))
    assert not np.array_equal(_pixels(ds)[:10], _pixels(pathfinder_synthetic("test", num_examples=10, seed=0)))
    stream = load("pathfinder_synthetic", "train", num_examples=None, seed=0)
    assert [r["label"] for r in itertools.islice(stream, 20)] == ds[:20]["label"]
    big = pathfinder_synthetic("validation", resolution=128, num_examples=3, seed=0, distractors=4)
    assert big.features["input_ids"].length == 16_384  # Path-X size
    with pytest.raises(ValueError, match="'resolution' must be >= 16"):
        pathfinder_synthetic("train", resolution=8)
    with pytest.raises(ValueError, match="'distractors' must be <= 8"):
        pathfinder_synthetic("train", distractors=9)


@pytest.fixture
def lra_tree(tmp_path):
    ds = pathfinder_synthetic("train", resolution=32, num_examples=50, seed=2)
    base = write_pathfinder_lra(tmp_path, ds, per_folder=4)  # 13 folders: 0..12, so "10" must sort after "9"
    return ds, base


def test_written_layout(lra_tree, tmp_path):
    ds, base = lra_tree
    assert base == tmp_path / "pathfinder32"
    assert (base / SUBSET / "imgs" / "12" / "sample_1.png").is_file()
    assert sorted(p.name for p in (base / SUBSET / "metadata").iterdir())[:3] == ["0.npy", "1.npy", "10.npy"]
    lines = (base / SUBSET / "metadata" / "3.npy").read_text().splitlines()
    assert lines[0] == f"imgs/3 sample_0.png 0 {ds[12]['label']}" and len(lines) == 4
    with Image.open(base / SUBSET / "imgs" / "3" / "sample_2.png") as img:
        assert img.mode == "L" and img.size == (32, 32)
        assert np.array_equal(np.asarray(img).reshape(-1), _pixels(ds)[14])


def test_read_back_with_the_80_10_10_split(lra_tree, monkeypatch):
    ds, base = lra_tree
    pixels, labels = _pixels(ds), ds[:]["label"]
    everything = pathfinder(None, path=base)
    assert np.array_equal(_pixels(everything), pixels) and everything[:]["label"] == labels
    parts = {s: pathfinder(s, path=base) for s in ("train", "validation", "test")}
    assert [parts[s].num_rows for s in parts] == [40, 5, 5]
    assert np.array_equal(_pixels(parts["validation"]), pixels[40:45])
    assert parts["test"][:]["label"] == labels[45:]
    monkeypatch.setenv("CNET_DATA_DIR", str(base.parent))
    assert load("pathfinder", "test", resolution=32)[:]["label"] == labels[45:]


def test_hand_written_lra_folder(tmp_path):
    sub = tmp_path / "pathfinder16" / SUBSET
    (sub / "imgs" / "0").mkdir(parents=True)
    (sub / "metadata").mkdir()
    dot = np.zeros((16, 16), dtype=np.uint8)
    dot[3, 4] = 200
    Image.fromarray(dot).save(sub / "imgs" / "0" / "sample_0.png")
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(sub / "imgs" / "0" / "sample_1.png")  # RGB file
    (sub / "metadata" / "0.npy").write_text("imgs/0 sample_0.png 0 1 14 2.5 1\n\nimgs/0 sample_1.png 1 0 14 2.5 1\n")
    ds = pathfinder(None, path=tmp_path / "pathfinder16", resolution=16)
    assert ds[:]["label"] == [1, 0]
    assert ds[0]["input_ids"][3 * 16 + 4] == 200 and sum(ds[0]["input_ids"]) == 200
    assert sum(ds[1]["input_ids"]) == 0


def test_errors(lra_tree, tmp_path, monkeypatch):
    _, base = lra_tree
    with pytest.raises(ValueError, match=r"sample_0.png is 32x32, expected 64x64 \(argument 'resolution'\)"):
        pathfinder("train", path=base, resolution=64)
    with pytest.raises(FileNotFoundError, match=f"^pathfinder: no subset folder {base}/curv_baseline for "
                       f"subset='curv_baseline'; subsets present in {base}: {SUBSET}$"):
        pathfinder("train", path=base, subset="curv_baseline")
    (base / "curv_baseline").mkdir()  # the subset folder exists but has no metadata
    with pytest.raises(FileNotFoundError, match=f"no metadata folder {base}/curv_baseline/metadata"):
        pathfinder("train", path=base, subset="curv_baseline")
    with pytest.raises(ValueError, match="argument 'subset' must be a folder name"):
        pathfinder("train", path=base, subset="a/b")
    with pytest.raises(ValueError, match="'split' must be one of 'train', 'validation', 'test', None"):
        pathfinder("dev", path=base)
    (base / SUBSET / "imgs" / "0" / "sample_0.png").unlink()
    with pytest.raises(FileNotFoundError, match="sample_0.png is listed in the metadata but missing"):
        pathfinder("train", path=base)
    (base / SUBSET / "metadata" / "5.npy").write_text("imgs/5 sample_0.png 0\n")
    with pytest.raises(ValueError, match="5.npy, line 1: expected 'folder file index label"):
        pathfinder("train", path=base)
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError) as info:
        pathfinder("train", resolution=128)
    msg = str(info.value)
    assert "(1) an explicit path= option: none given" in msg
    assert f"(2) $CNET_DATA_DIR/pathfinder128/{SUBSET}/metadata: {tmp_path}/elsewhere/pathfinder128" in msg
    assert "(3) the Hugging Face Hub: not used" in msg


def test_path_may_be_the_root_given_to_the_writer(lra_tree, tmp_path):
    ds, base = lra_tree
    labels = ds[:]["label"]
    assert load("pathfinder", "test", path=tmp_path)[:]["label"] == labels[45:]  # root holds only pathfinder32
    assert pathfinder(None, path=tmp_path, resolution=32)[:]["label"] == labels
    small = pathfinder_synthetic("train", resolution=16, num_examples=10, seed=1)
    assert write_pathfinder_lra(tmp_path, small) == tmp_path / "pathfinder16"
    with pytest.raises(ValueError, match=f"^pathfinder: path={str(tmp_path)!r} holds several resolution folders "
                       r"\(pathfinder16, pathfinder32\); pick one with resolution=N or give path= that "
                       "pathfinder<N> folder$"):
        pathfinder("train", path=tmp_path)
    assert pathfinder(None, path=tmp_path, resolution=16)[:]["label"] == small[:]["label"]
    assert pathfinder(None, path=tmp_path / "pathfinder16")[:]["label"] == small[:]["label"]  # N from the name
    with pytest.raises(FileNotFoundError, match=f"^pathfinder: path={str(tmp_path)!r} holds pathfinder16, "
                       "pathfinder32 but no pathfinder64 for resolution=64"):
        pathfinder("train", path=tmp_path, resolution=64)
