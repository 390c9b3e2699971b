"""cnet.data.load: options are checked against the dataset loader's signature before it runs (cnet.data.loading)."""

from __future__ import annotations

import re

import pytest

from cnet.data import load


def test_unknown_option_names_dataset_option_and_valid_ones():
    with pytest.raises(ValueError) as info:
        load("copy_memory", "train", dealy=5)
    assert str(info.value) == (
        "cnet.data.load: dataset 'copy_memory' has no option(s) 'dealy' (did you mean 'delay'?); valid options: "
        "delay, num_examples, seed; on the command line pass them as --data-option KEY=VALUE")


def test_unknown_option_of_a_dataset_with_a_path():
    with pytest.raises(ValueError, match=re.escape(
            "cnet.data.load: dataset 'pg19' has no option(s) 'foo'; valid options: path, streaming; on the command "
            "line pass them as --data-option KEY=VALUE (path as --data-path)")):
        load("pg19", "train", foo=1)  # checked before any source is looked at
    with pytest.raises(ValueError, match=r"has no option\(s\) 'foo', 'bar'; valid options: path; "):
        load("text_bytes", None, foo=1, bar=2)
    with pytest.raises(ValueError, match=r"'paht' \(did you mean 'path'\?\)"):
        load("tiny_shakespeare", "train", paht="x.txt")


def test_known_options_still_pass_and_loader_errors_are_untouched():
    assert load("copy_memory", "train", delay=3, num_examples=2, seed=0).num_rows == 2
    with pytest.raises(ValueError, match="argument 'delay' must be >= 1"):
        load("copy_memory", "train", delay=0)


def test_loaders_taking_any_keyword_are_not_checked():
    from cnet.data.loading import _check_options

    def loose(split, **kwargs):
        return split, kwargs

    _check_options("loose", loose, {"anything": 1})  # no error: the loader decides
    with pytest.raises(ValueError, match="dataset 'strict' has no option.*'x'; valid options: none"):
        _check_options("strict", lambda split: split, {"x": 1})
