"""CharVocab: stable order, encode/decode, errors, vocab.json round trip (cnet.data.vocab)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from cnet.data import VOCAB_FILE, CharVocab


def test_from_text_sorts_by_code_point_and_ignores_text_order():
    a = CharVocab.from_text("hello, world\n")
    b = CharVocab.from_text("\ndlrow ,olleh")
    assert a == b and hash(a) == hash(b)
    assert a.chars == ("\n", " ", ",", "d", "e", "h", "l", "o", "r", "w")
    assert len(a) == 10


def test_encode_decode_round_trip():
    vocab = CharVocab.from_text("ROMEO: a rose SEEN\n")
    ids = vocab.encode("ROSE: a\n")
    assert ids == [vocab.chars.index(c) for c in "ROSE: a\n"]
    assert ids[0] == vocab.chars.index("R") and ids[-1] == 0  # "\n" sorts first
    assert vocab.decode(ids) == "ROSE: a\n"
    assert vocab.decode(torch.tensor(ids)) == "ROSE: a\n"
    assert vocab.encode("") == [] and vocab.decode([]) == ""


def test_prompt_with_unknown_characters_lists_them():
    vocab = CharVocab.from_text("abc ")
    with pytest.raises(ValueError, match=r"not in the vocabulary \(4 characters\): 'Z', 'é'$"):
        vocab.encode("a Zébc Z")


@pytest.mark.parametrize("ids", [[0, 4], [-1], [1.0], [True], torch.tensor([[0, 1]])])
def test_decode_rejects_bad_ids(ids):
    with pytest.raises(ValueError, match=r"integers in \[0, 4\)"):
        CharVocab.from_text("abcd").decode(ids)


@pytest.mark.parametrize(
    ("chars", "match"),
    [(["a", "bc"], "single characters"), (["a", "b", "a"], r"repeats \['a'\]"), ([], "empty"), ([1], "single")],
)
def test_constructor_errors(chars, match):
    with pytest.raises(ValueError, match=match):
        CharVocab(chars)


def test_from_text_errors():
    with pytest.raises(ValueError, match="empty"):
        CharVocab.from_text("")
    with pytest.raises(TypeError, match="must be str"):
        CharVocab.from_text(b"abc")
    with pytest.raises(TypeError, match="must be str"):
        CharVocab.from_text("abc").encode(["a"])


def test_json_and_file_round_trip(tmp_path):
    vocab = CharVocab.from_text("To be, or not to be:\n\t'tis é\u2014")
    assert vocab.to_json() == {"type": "char", "chars": list(vocab.chars)}
    assert CharVocab.from_json(json.loads(json.dumps(vocab.to_json()))) == vocab
    written = vocab.save(tmp_path)  # a folder receives vocab.json
    assert written == tmp_path / VOCAB_FILE and [p.name for p in tmp_path.iterdir()] == [VOCAB_FILE]
    assert json.loads(written.read_text())["chars"] == list(vocab.chars)
    assert CharVocab.load(tmp_path) == vocab and CharVocab.load(written) == vocab
    other = vocab.save(tmp_path / "chars.json")
    assert CharVocab.load(other).chars == vocab.chars


def test_save_and_load_path_rule_json_is_a_file_anything_else_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    vocab = CharVocab.from_text("abc")
    assert vocab.save("runs/lm") == Path("runs/lm") / VOCAB_FILE  # missing folders are created
    assert [p.name for p in (tmp_path / "runs" / "lm").iterdir()] == [VOCAB_FILE]
    assert vocab.save("out/v1.json") == Path("out/v1.json") and (tmp_path / "out" / "v1.json").is_file()
    assert CharVocab.load("runs/lm") == vocab and CharVocab.load("out/v1.json") == vocab
    with pytest.raises(FileNotFoundError, match="no vocabulary file out/vocab.json; a path ending in .json names "
                                                "the vocabulary file, any other path a folder holding vocab.json"):
        CharVocab.load("out")
    (tmp_path / "plain").write_text("not a folder")
    with pytest.raises(FileExistsError, match="CharVocab.save: plain exists and is not a folder; a path ending in"):
        vocab.save("plain")


def test_save_replaces_an_existing_file(tmp_path):
    CharVocab.from_text("ab").save(tmp_path)
    CharVocab.from_text("xyz").save(tmp_path)
    assert CharVocab.load(tmp_path).chars == ("x", "y", "z")
    assert sorted(p.name for p in tmp_path.iterdir()) == [VOCAB_FILE]


@pytest.mark.parametrize("data", [["a"], {"chars": ["a"]}, {"type": "bpe", "chars": ["a"]}, {"type": "char"}])
def test_from_json_rejects_other_shapes(data):
    with pytest.raises(ValueError, match="expected"):
        CharVocab.from_json(data)


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no vocabulary file"):
        CharVocab.load(tmp_path)
    (tmp_path / VOCAB_FILE).write_text('{"type": "char", "chars": [')
    with pytest.raises(ValueError, match="is not valid JSON"):
        CharVocab.load(tmp_path)
