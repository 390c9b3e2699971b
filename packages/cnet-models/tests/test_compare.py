"""`cnet compare`: two models under one protocol, steps-to-target ratios, JSON record and PNG plot."""

import json

import pytest

from cnet.core.cli import main
from cnet.models.compare import default_targets, steps_to_target


def test_steps_to_target_and_default_targets():
    curve = [(10, 3.0), (20, 2.5), (30, 2.6), (40, 2.0)]
    assert steps_to_target(curve, 2.5) == 20
    assert steps_to_target(curve, 2.55) == 20
    assert steps_to_target(curve, 1.0) is None
    other = [(10, 2.8), (20, 2.4), (30, 2.2)]
    # between the best first loss (2.8) and the loss both reached (max of bests: 2.2)
    assert default_targets(curve, other) == pytest.approx([2.6, 2.4, 2.2])
    assert steps_to_target(other, default_targets(curve, other)[-1]) == 30


def test_compare_cli_writes_record_plot_and_table(excerpt, tmp_path, capsys):
    out = tmp_path / "cmp"
    rc = main(["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
               "--output", str(out), "--steps", "20", "--set", "embed_dim=8", "--set", "num_layers=1",
               "--set", "context=16", "--set", "eval_every=5", "--set", "eval_windows=8", "--set", "batch_size=4",
               "--set", "warmup_steps=2", "--targets", "4.0,3.5,0.01", "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "not reached" in text and "ratio A/B" in text and "warning" not in text
    rec = json.loads((out / "compare.json").read_text())
    assert rec["protocol"]["steps"] == 20 and rec["protocol"]["batch_size"] == 4
    assert [s for s, _ in rec["curves"]["a"]] == [5, 10, 15, 20] == [s for s, _ in rec["curves"]["b"]]
    for row in rec["targets"]:
        sa = steps_to_target([tuple(x) for x in rec["curves"]["a"]], row["target"])
        sb = steps_to_target([tuple(x) for x in rec["curves"]["b"]], row["target"])
        assert (row["steps_a"], row["steps_b"]) == (sa, sb)
        assert row["ratio"] == (sa / sb if sa and sb else None)
    assert rec["targets"][-1]["steps_a"] is None   # 0.01 nats is out of reach
    # both trained with the same data and schedule; the twins are parameter-matched
    pa, pb = rec["parameters"]["a"]["real_scalars"], rec["parameters"]["b"]["real_scalars"]
    assert abs(pa - pb) / pa < 0.01
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "a" / "model.safetensors").is_file() and (out / "b" / "model.safetensors").is_file()


def test_compare_argument_errors(excerpt, tmp_path, capsys):
    base = ["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
            "--output", str(tmp_path / "x"), "--steps", "2"]
    assert main([*base, "--targets", "two"]) == 2
    assert "--targets" in capsys.readouterr().err
    assert main([*base, "--set-a", "lr=1"]) == 2
    assert "model fields only" in capsys.readouterr().err
    assert main([*base, "--set", "ffn_dim=8"]) == 2   # a real-fnet field that complex-fnet lacks
    assert "not a field of 'complex-fnet'" in capsys.readouterr().err


def test_compare_checks_both_models_before_training_and_warns_on_unmatched_sizes(excerpt, tmp_path, capsys):
    base = ["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
            "--steps", "4", "--set", "embed_dim=8", "--set", "num_layers=1", "--set", "context=16",
            "--set", "eval_every=2", "--set", "eval_windows=4", "--set", "batch_size=2", "--set", "warmup_steps=1",
            "--quiet"]
    assert main([*base, "--output", str(tmp_path / "bad"), "--set-b", "ffn_dim=-3"]) == 2
    assert "ffn_dim" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()          # nothing was trained for A
    assert main([*base, "--output", str(tmp_path / "wide"), "--set-b", "ffn_dim=512"]) == 0
    assert "warning: the two models' parameter counts differ" in capsys.readouterr().out
    rec = json.loads((tmp_path / "wide" / "compare.json").read_text())
    assert rec["parameter_gap"] > 0.01
