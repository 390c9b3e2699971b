"""Model card text and metrics lookup (cnet.hub.card)."""

from __future__ import annotations

import pytest
import torch
from huggingface_hub import ModelCard

from cnet.core.checkpoint import save_folder
from cnet.hub import model_card, read_metrics
from cnet.hub.card import GENERATED_MARKER

CONFIG = {"model": "born_lm", "d_model": 160, "optim": {"lr": 3e-4, "betas": [0.9, 0.95]}, "note": "a|b\nc",
          "cnet_version": "0.1.0"}
STATE = {"embed": torch.zeros(65, 160, dtype=torch.complex64), "scale": torch.zeros(3)}


def test_front_matter_is_valid_hub_metadata():
    card = ModelCard(model_card("me/born-lm", CONFIG, STATE))
    meta = card.data.to_dict()
    assert meta["library_name"] == "cnet"
    assert meta["model_name"] == "born-lm"
    assert meta["tags"] == ["cnet", "complex-valued", "pytorch", "born_lm"]


def test_body_has_config_table_usage_and_sizes():
    text = model_card("me/born-lm", CONFIG, STATE)
    assert GENERATED_MARKER in text
    assert "# born-lm\n" in text and "A `born_lm` model built with cnet" in text
    assert "10,400 complex64, 3 float32 values in 2 tensors" in text
    assert "| d_model | 160 |" in text
    assert "| optim.lr | 0.0003 |" in text and "| optim.betas | [0.9, 0.95] |" in text
    assert "| note | a\\|b c |" in text  # pipes escaped, newlines flattened: the table stays one row per key
    assert 'cnet.hub.pull("me/born-lm")' in text and "cnet.models.load(folder)" in text
    assert "cnet pull me/born-lm --to born-lm" in text
    assert "No metrics were saved" in text


def test_metrics_table():
    text = model_card("me/m", {}, {}, ({"val_loss": 1.523456789, "step": 20000, "best": True}, "metrics.json"))
    assert "From metrics.json." in text
    assert "| val_loss | 1.52346 |" in text and "| step | 20000 |" in text and "| best | true |" in text
    assert "A model built with cnet" in text  # no architecture name in the config
    assert ModelCard(text).data.tags == ["cnet", "complex-valued", "pytorch"]


def _folder(tmp_path, **sidecars):
    return save_folder(tmp_path / "ckpt", config={}, state_dict={}, sidecars=sidecars)


def test_read_metrics_prefers_metrics_json(tmp_path):
    folder = _folder(tmp_path, **{"metrics.json": {"val_loss": 1.5},
                                  "metrics.jsonl": [{"step": 1, "val_loss": 3.0}, {"step": 2, "val_loss": 2.0}]})
    assert read_metrics(folder) == ({"val_loss": 1.5}, "metrics.json")
    (folder / "metrics.json").unlink()
    assert read_metrics(folder) == ({"step": 2, "val_loss": 2.0}, "the last record of metrics.jsonl")


def test_read_metrics_absent_empty_and_bad(tmp_path):
    folder = _folder(tmp_path)
    assert read_metrics(folder) is None
    (folder / "metrics.jsonl").write_text("\n")
    assert read_metrics(folder) is None
    (folder / "metrics.jsonl").write_text('{"step": 1}\n[1, 2]\n')
    with pytest.raises(ValueError, match="metrics must be a JSON object, found list"):
        read_metrics(folder)
    (folder / "metrics.jsonl").write_text('{"step": 1}\n{"step": ')
    with pytest.raises(ValueError, match="corrupt checkpoint .*metrics.jsonl is not valid JSON"):
        read_metrics(folder)
