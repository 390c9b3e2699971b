"""ListOps: exact evaluation, the generator's drawing rule, LRA's TSV format (cnet.data.listops)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cnet.data import evaluate_listops, listops, load, lra_listops, write_listops_tsv
from cnet.data.listops import LISTOPS_VOCAB, listops_ids, lra_listops_string

ID_TO_TOKEN = {i: t for t, i in LISTOPS_VOCAB.items()}


@pytest.mark.parametrize(("expr", "value"), [
    ("7", 7),
    ("[MIN 5 3 8 ]", 3),
    ("[MAX 2 9 [MIN 4 7 ] 0 ]", 9),
    ("[SM 9 9 9 ]", 7),  # 27 mod 10
    ("[MIN 5 [SM 4 8 ] ]", 2),  # min(5, 12 mod 10)
    ("[MED 4 1 7 ]", 4),
    ("[MED 1 2 ]", 1),  # even count: mean of the middle two, rounded down
    ("[MED 3 8 1 6 ]", 4),  # sorted 1 3 6 8 -> (3 + 6) // 2
    ("[MED 9 9 ]", 9),
    ("[SM [MAX 1 2 ] [MED 0 9 5 5 ] [MIN 9 8 ] ]", 5),  # 2 + 5 + 8 = 15
    ("( ( ( [MAX 2 ) 9 ) ] )", 9),  # LRA's parentheses are ignored
])
def test_evaluate_by_hand(expr, value):
    assert evaluate_listops(expr) == value


@pytest.mark.parametrize(("expr", "match"), [
    ("[MAX 2 9", "incomplete"), ("[MAX ]", "without arguments"), ("3 ]", "after the end"),
    ("]", "without an operator"), ("[MAX 12 ]", "unknown token '12'"), ("[FIRST 1 2 ]", "unknown token"),
    ("", "incomplete"),
])
def test_evaluate_rejects_malformed_expressions(expr, match):
    with pytest.raises(ValueError, match=match):
        evaluate_listops(expr)


def test_vocabulary_and_ids():
    assert LISTOPS_VOCAB == {"0": 1, "1": 2, "2": 3, "3": 4, "4": 5, "5": 6, "6": 7, "7": 8, "8": 9, "9": 10,
                             "[MIN": 11, "[MAX": 12, "[MED": 13, "[SM": 14, "]": 15}
    ids, n = listops_ids("[MAX 2 9 ]", 6)
    assert ids.tolist() == [12, 3, 10, 15, 0, 0] and n == 4
    with pytest.raises(ValueError, match="4 tokens does not fit argument 'length'=3"):
        listops_ids("[MAX 2 9 ]", 3)


def test_lra_string_form():
    assert lra_listops_string("[MAX 2 9 ]") == "( ( ( [MAX 2 ) 9 ) ] )"
    assert lra_listops_string("[MAX 2 9 [MIN 4 7 ] 0 ]") == \
        "( ( ( ( ( [MAX 2 ) 9 ) ( ( ( [MIN 4 ) 7 ) ] ) ) 0 ) ] )"
    assert lra_listops_string("5") == "5"


def _depth(tokens: list[str]) -> int:
    depth = deepest = 0
    for t in tokens:
        depth += t.startswith("[")
        depth -= t == "]"
        deepest = max(deepest, depth)
    return deepest


def test_generator_rows_are_consistent():
    ds = listops("train", max_depth=6, max_args=5, length=1024, num_examples=500, seed=0)
    assert ds.column_names == ["source", "input_ids", "length", "target"]
    for row in ds:
        toks = row["source"].split()
        assert row["target"] == evaluate_listops(toks)
        assert row["length"] == len(toks) <= 1024
        assert [ID_TO_TOKEN[i] for i in row["input_ids"][:row["length"]]] == toks
        assert set(row["input_ids"][row["length"]:]) <= {0}
        assert toks[0] in ("[MIN", "[MAX", "[MED", "[SM") and 1 <= _depth(toks) <= 6
    assert len(set(ds["target"])) == 10


def test_generator_depth_and_size_bounds():
    ds = listops("test", max_depth=2, max_args=3, length=64, num_examples=400, seed=1)
    assert max(ds["length"]) <= 17  # 1 + 3 * (1 + 3 + 1) + 1: two nested levels of at most 3 arguments
    assert max(_depth(s.split()) for s in ds["source"]) == 2
    one = listops("test", max_depth=1, max_args=4, length=8, num_examples=100, seed=1)
    assert all(_depth(s.split()) == 1 and 4 <= len(s.split()) <= 6 for s in one["source"])


def test_generator_leaf_probability_and_argument_counts():
    """Children of the root are leaves with probability 0.75; argument counts are uniform on 2..max_args."""
    ds = listops("train", max_depth=6, max_args=5, length=1024, num_examples=2048, seed=2)
    ops = leaves = 0
    n_args = []
    for src in ds["source"]:
        toks, depth, count = src.split(), 0, 0
        for t in toks:
            if depth == 1:
                count += t != "]"
                ops += t.startswith("[")
                leaves += t.isdigit()
            depth += t.startswith("[")
            depth -= t == "]"
        n_args.append(count)
    assert abs(leaves / (ops + leaves) - 0.75) < 0.015  # about 7,000 children
    assert np.bincount(n_args, minlength=6)[:2].sum() == 0 and set(n_args) == {2, 3, 4, 5}
    assert abs(np.mean(n_args) - 3.5) < 0.06


def test_generator_seeding_stream_and_errors():
    a = listops("train", num_examples=30, seed=11)
    assert a["source"] == listops("train", num_examples=30, seed=11)["source"]
    assert a["source"] != listops("train", num_examples=30, seed=12)["source"]
    assert a["source"] != listops("validation", num_examples=30, seed=11)["source"]
    stream = load("listops", "train", num_examples=None, seed=11)
    assert [r["source"] for r in itertools.islice(stream, 30)] == a["source"]
    with pytest.raises(ValueError, match="'max_args' must be >= 2"):
        listops("train", max_args=1)
    with pytest.raises(ValueError, match="'max_depth' must be >= 1"):
        listops("train", max_depth=0)
    with pytest.raises(ValueError, match="'length' must be >= 5"):
        listops("train", length=4)


def test_tsv_round_trip_through_lra_format(tmp_path, monkeypatch):
    ds = listops("train", max_depth=3, max_args=4, length=128, num_examples=40, seed=3)
    folder = tmp_path / "listops-1000"
    folder.mkdir()
    write_listops_tsv(folder / "basic_val.tsv", ds["source"], ds["target"])
    first = (folder / "basic_val.tsv").read_text().splitlines()
    assert first[0] == "Source\tTarget"
    assert first[1] == f"{lra_listops_string(ds[0]['source'])}\t{ds[0]['target']}" and first[1].startswith("( ")
    back = lra_listops("validation", path=folder, length=128)
    assert back["source"] == ds["source"] and back["target"] == ds["target"]
    assert back["input_ids"] == ds["input_ids"] and back["length"] == ds["length"]
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path))
    assert load("lra_listops", "validation", length=128)["target"] == ds["target"]
    with pytest.raises(FileNotFoundError, match="no basic_train.tsv in .*listops-1000 for split='train'"):
        lra_listops("train")


def test_lra_file_read_by_hand(tmp_path):
    f = tmp_path / "mine.tsv"
    nested = "( ( ( [SM 4 ) ( ( ( [MIN 8 ) 3 ) ] ) ) ] )"
    assert lra_listops_string("[SM 4 [MIN 8 3 ] ]") == nested
    f.write_text(f"Source\tTarget\n( ( ( [MAX 2 ) 9 ) ] )\t9\n{nested}\t7\n")
    ds = lra_listops("test", path=f, length=10)  # a file is read whatever the split
    assert ds["source"] == ["[MAX 2 9 ]", "[SM 4 [MIN 8 3 ] ]"]
    assert ds["target"] == [9, 7] and ds["length"] == [4, 7]
    assert ds[1]["input_ids"] == [14, 5, 11, 9, 4, 15, 15, 0, 0, 0]


@pytest.mark.parametrize(("text", "match"), [
    ("Source\tLabel\n", "expected the header"),
    ("Source\tTarget\n[MAX 2 9 ]\t12\n", "line 2: target 12 is not a digit"),
    ("Source\tTarget\n[MAX 2 X ]\t2\n", r"line 2: listops: unknown token\(s\) \['X'\]"),
    ("Source\tTarget\n[MAX 2 9 9 9 9 9 9 9 9 9 ]\t9\n", "line 2: .* 12 tokens does not fit argument 'length'=10"),
    ("Source\tTarget\n", "holds no examples"),
])
def test_lra_file_errors(tmp_path, text, match):
    f = tmp_path / "bad.tsv"
    f.write_text(text)
    with pytest.raises(ValueError, match=match):
        lra_listops("train", path=f, length=10)


def test_lra_not_found_names_the_sources(monkeypatch, tmp_path):
    monkeypatch.setenv("CNET_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        lra_listops("train")
    msg = str(info.value)
    assert "(1) an explicit path= option: none given" in msg
    assert f"(2) $CNET_DATA_DIR/listops-1000/basic_train.tsv: {tmp_path}/listops-1000/basic_train.tsv does not " \
           "exist" in msg
    assert "(3) the Hugging Face Hub: not used" in msg


def test_write_listops_tsv_creates_missing_folders(tmp_path):
    target = tmp_path / "new" / "listops-1000" / "basic_test.tsv"
    assert write_listops_tsv(target, ["[MAX 2 9 ]"], [9]) == target
    back = lra_listops("test", path=target.parent, length=8)
    assert back["source"] == ["[MAX 2 9 ]"] and back["target"] == [9]
