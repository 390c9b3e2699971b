"""copy_memory and needle: exact layouts, vocabularies, seeding, streams and errors (cnet.data.synthetic)."""

from __future__ import annotations

import itertools

import datasets
import numpy as np
import pytest

from cnet.data import copy_memory, load, needle
from cnet.data.synthetic import COPY_BLANK, COPY_MARKER, IGNORE_INDEX, needle_position


def test_copy_memory_layout_by_hand():
    ds = copy_memory("train", delay=3, num_examples=5, seed=7)
    assert ds.column_names == ["input_ids", "labels", "target_ids"] and ds.num_rows == 5
    for row in ds:
        x, y, src = row["input_ids"], row["labels"], row["target_ids"]
        assert len(x) == len(y) == 2 * 10 + 3 and len(src) == 10
        assert x[:10] == src and all(2 <= s <= 11 for s in src)  # ten data symbols, ids 2..11
        assert x[10:] == [0, 0, 1] + [0] * 10  # delay - 1 blanks, the marker, then K blank answer slots
        assert y == [-100] * 13 + src
    assert (COPY_BLANK, COPY_MARKER, IGNORE_INDEX) == (0, 1, -100)


def test_copy_memory_paper_length_and_symbol_use():
    ds = copy_memory("test", delay=1000, num_examples=300, seed=0).with_format("numpy")[:]
    x, y = ds["input_ids"], ds["labels"]
    assert x.shape == (300, 1020) and y.shape == (300, 1020)
    assert (x[:, 10:1009] == 0).all() and (x[:, 1009] == 1).all() and (x[:, 1010:] == 0).all()
    counts = np.bincount(ds["target_ids"].ravel(), minlength=16)
    assert counts[[0, 1, 12, 13, 14, 15]].sum() == 0  # blank, marker and the reserved ids never appear as symbols
    assert counts[2:12].min() > 0.8 * 300 and counts[2:12].max() < 1.2 * 300  # 3,000 symbols, ~300 each


def test_copy_memory_seeds_splits_and_stream():
    a = copy_memory("train", delay=5, num_examples=20, seed=3)
    assert a["input_ids"] == copy_memory("train", delay=5, num_examples=20, seed=3)["input_ids"]
    assert a["input_ids"] != copy_memory("train", delay=5, num_examples=20, seed=4)["input_ids"]
    assert a["input_ids"] != copy_memory("validation", delay=5, num_examples=20, seed=3)["input_ids"]
    assert a["input_ids"][:8] == copy_memory("train", delay=5, num_examples=8, seed=3)["input_ids"]  # row i fixed
    stream = copy_memory("train", delay=5, num_examples=None, seed=3)
    assert isinstance(stream, datasets.IterableDataset)
    assert [r["input_ids"] for r in itertools.islice(stream, 20)] == a["input_ids"]
    assert load("copy_memory", "train", delay=5, num_examples=20, seed=3)["labels"] == a["labels"]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"delay": 0}, ValueError, "'delay' must be >= 1"),
    ({"delay": 2.5}, TypeError, "'delay' must be an int"),
    ({"num_examples": 0}, ValueError, "'num_examples' must be >= 1"),
    ({"seed": -1}, ValueError, "'seed' must be >= 0"),
    ({"seed": True}, TypeError, "'seed' must be an int"),
])
def test_copy_memory_bad_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        copy_memory("train", **kwargs)


def test_needle_target_is_the_midpoint_token():
    ds = needle("train", length=2048, num_examples=64, seed=1).with_format("numpy")[:]
    x = ds["input_ids"]
    assert x.shape == (64, 2048) and x.min() == 0 and x.max() == 63
    assert (ds["needle_position"] == 1024).all()
    assert (ds["target"] == x[:, 1024]).all()
    assert needle_position(2048) == 1024 and needle_position(7) == 3
    small = needle("test", length=5, num_examples=3, seed=0)
    for row in small:
        assert row["target"] == row["input_ids"][2] and row["needle_position"] == 2


def test_needle_tokens_are_uniform_and_the_needle_is_unmarked():
    x = needle("train", length=512, num_examples=200, seed=0).with_format("numpy")[:]["input_ids"]
    counts = np.bincount(x.ravel(), minlength=64)
    assert counts.size == 64 and abs(counts / counts.sum() - 1 / 64).max() < 0.004  # 102,400 draws
    # the needle's value is as often repeated elsewhere as any token: nothing but its index singles it out
    same = (x == x[:, 256:257]).sum(axis=1) - 1
    assert 5 < same.mean() < 11  # expected 511 / 64 = 8.0


def test_needle_seeding_stream_and_errors():
    a = needle("train", length=64, num_examples=10, seed=5)
    assert a["input_ids"] == needle("train", length=64, num_examples=10, seed=5)["input_ids"]
    assert a["input_ids"] != needle("train", length=64, num_examples=10, seed=6)["input_ids"]
    assert a["input_ids"] != needle("test", length=64, num_examples=10, seed=5)["input_ids"]
    stream = load("needle", "train", length=64, num_examples=None, seed=5)
    assert [r["target"] for r in itertools.islice(stream, 10)] == a["target"]
    with pytest.raises(ValueError, match="'length' must be >= 2"):
        needle("train", length=1)
    with pytest.raises(ValueError, match="argument 'split' must be one of 'train', 'validation', 'test'"):
        needle("dev")
