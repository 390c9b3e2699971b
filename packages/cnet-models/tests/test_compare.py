"""`cnet compare`: two models under one protocol, steps-to-target ratios, JSON record and PNG plot."""

import argparse
import json
import math

import pytest

from cnet.core.cli import main
from cnet.models.compare import (
    compare,
    configure_compare,
    crossing_step,
    fraction_targets,
    run_compare,
    steps_to_target,
    target_rows,
)
from cnet.models.train import TrainConfig

TINY = ["--set", "embed_dim=8", "--set", "num_layers=1", "--set", "context=16", "--set", "eval_every=2",
        "--set", "eval_windows=4", "--set", "batch_size=2", "--set", "warmup_steps=1", "--quiet"]


def _new_cli(argv: list[str]) -> int:
    """Run the compare command of cnet.models.compare (its parser and runner) as `cnet compare` would."""
    parser = argparse.ArgumentParser(prog="cnet compare")
    configure_compare(parser)
    return run_compare(parser.parse_args(argv))


@pytest.fixture
def byte_corpus(shakespeare_path, tmp_path):
    """A text_bytes folder with train/ and validation/ (bytes of tiny-shakespeare)."""
    text = shakespeare_path.read_bytes()
    for split, part in (("train", text[:30_000]), ("validation", text[30_000:36_000])):
        (tmp_path / "bytes" / split).mkdir(parents=True)
        (tmp_path / "bytes" / split / "part.txt").write_bytes(part)
    return tmp_path / "bytes"


def test_steps_crossings_and_ratios():
    curve = [(10, 3.0), (20, 2.5), (30, 2.6), (40, 2.0)]
    assert steps_to_target(curve, 2.5) == 20 and steps_to_target(curve, 2.55) == 20
    assert steps_to_target(curve, 1.0) is None and crossing_step(curve, 1.0) is None
    assert crossing_step(curve, 2.75) == pytest.approx(15.0)   # half-way between (10, 3.0) and (20, 2.5)
    assert crossing_step(curve, 2.2) == pytest.approx(110 / 3)  # from the last point above, (30, 2.6)
    assert crossing_step(curve, 3.5) == 10.0                    # already below at the first evaluation
    other = [(10, 2.8), (20, 2.4), (30, 2.2)]
    rows = target_rows(curve, other, [2.85, 2.6, 1.0])
    assert rows[0]["crossing_a"] == pytest.approx(13.0) and rows[0]["crossing_b"] == 10.0
    assert rows[0]["ratio"] == pytest.approx(1.3) and rows[0]["steps_a"] == 20 and rows[0]["steps_b"] == 10
    assert rows[1]["crossing_b"] == pytest.approx(15.0) and rows[1]["target_bits"] == pytest.approx(2.6 / math.log(2))
    assert rows[2]["ratio"] is None and rows[2]["steps_a"] is None


def test_fraction_targets_follow_the_baseline_curve():
    curve = [(10, 4.0), (20, 3.0), (30, 3.2), (40, 2.5), (50, 2.6), (60, 2.4), (70, 2.3), (80, 2.2)]
    # fractions of the last step 80: first evaluation at >= 20, >= 40, >= 80; the best loss up to there
    assert fraction_targets(curve, (0.25, 0.5, 1.0)) == [3.0, 2.5, 2.2]
    assert fraction_targets(curve, [0.45]) == [2.5]            # 36 -> the evaluation at 40
    for t, f in zip(fraction_targets(curve, (0.25, 0.5, 1.0)), (0.25, 0.5, 1.0), strict=True):
        assert steps_to_target(curve, t) <= f * 80                # the baseline gets there by that fraction
    for bad in ([], [0.0], [1.5], [float("nan")], [True]):
        with pytest.raises(ValueError, match=r"target_fractions' must be numbers in \(0, 1\]"):
            fraction_targets(curve, bad)
    with pytest.raises(ValueError, match="empty validation curve"):
        fraction_targets([], (0.5,))


@pytest.mark.parametrize("targets", [[float("nan")], [float("inf")], [2.0, -1.0], [], ["2"]])
def test_bad_targets_are_refused_before_training(excerpt, tmp_path, targets):
    with pytest.raises(ValueError, match="'targets' must be finite validation losses >= 0"):
        compare("complex-fnet", "real-fnet", "tiny_shakespeare", tmp_path / "x", train_config=TrainConfig(steps=2),
                data_path=str(excerpt), targets=targets, progress=False)
    assert not (tmp_path / "x").exists()


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
    assert rec["protocol"]["steps"] == 20 and rec["protocol"]["batch_size"] == 4 and rec["target_rule"] == "given"
    assert [s for s, _ in rec["curves"]["a"]] == [5, 10, 15, 20] == [s for s, _ in rec["curves"]["b"]]
    curves = [[tuple(x) for x in rec["curves"][k]] for k in ("a", "b")]
    assert rec["targets"] == target_rows(*curves, [4.0, 3.5, 0.01])
    assert rec["targets"][-1]["steps_a"] is None   # 0.01 nats is out of reach
    # both trained with the same data and schedule; the twins are parameter-matched
    pa, pb = rec["parameters"]["a"]["real_scalars"], rec["parameters"]["b"]["real_scalars"]
    assert abs(pa - pb) / pa < 0.01
    assert rec["train_ms_per_step"]["a"] > 0 and rec["wall_s"]["b"] > 0
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "a" / "model.safetensors").is_file() and (out / "b" / "model.safetensors").is_file()


def test_compare_argument_errors(excerpt, tmp_path, capsys):
    base = ["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
            "--output", str(tmp_path / "x"), "--steps", "2"]
    assert main([*base, "--targets", "two"]) == 2
    assert "--targets" in capsys.readouterr().err
    assert main([*base, "--targets", "3,nan"]) == 2
    assert "finite validation losses" in capsys.readouterr().err
    assert main([*base, "--set-a", "lr=1"]) == 2
    assert "model fields only" in capsys.readouterr().err
    assert main([*base, "--set", "ffn_dim=8"]) == 2   # a real-fnet field that complex-fnet lacks
    assert "not a field of 'complex-fnet'" in capsys.readouterr().err
    assert main([*base, "--set", "context=100000"]) == 2   # the corpus is shorter than one window
    err = capsys.readouterr().err
    assert "compare: the train split of 'tiny_shakespeare' holds" in err
    assert "fewer than one window of complex-fnet's context 100000 + 1" in err
    assert "use a shorter context (--set context=...)" in err
    assert not (tmp_path / "x").exists()


def test_compare_checks_both_models_before_training_and_warns_on_unmatched_sizes(excerpt, tmp_path, capsys):
    base = ["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
            "--steps", "4", *TINY]
    assert main([*base, "--output", str(tmp_path / "bad"), "--set-b", "ffn_dim=-3"]) == 2
    assert "ffn_dim" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()          # nothing was trained for A
    assert main([*base, "--output", str(tmp_path / "wide"), "--set-b", "ffn_dim=512"]) == 0
    printed = capsys.readouterr().out
    assert "warning: the two models' parameter counts differ" in printed and "protocols diverged" not in printed
    rec = json.loads((tmp_path / "wide" / "compare.json").read_text())
    assert rec["parameter_gap"] > 0.01 and rec["steps_run"] == {"a": 4, "b": 4}
    assert len(rec["warnings"]) == 1 and "parameter counts differ" in rec["warnings"][0]


def test_default_targets_come_from_fractions_of_the_baseline_run(excerpt, tmp_path, capsys):
    out = tmp_path / "frac"
    assert _new_cli(["complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
                     "--output", str(out), "--steps", "8", "--target-fractions", "0.5,1", *TINY]) == 0
    rec = json.loads((out / "compare.json").read_text())
    curve_b = [tuple(x) for x in rec["curves"]["b"]]
    assert [r["target"] for r in rec["targets"]] == fraction_targets(curve_b, (0.5, 1.0))
    assert rec["targets"][1]["target"] == min(v for _, v in curve_b)
    assert all(r["steps_b"] is not None for r in rec["targets"])  # the baseline reaches its own targets
    assert "fractions (0.5, 1.0)" in rec["target_rule"] and "ratio A/B" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"must be numbers in \(0, 1\]"):
        _new_cli(["complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
                  "--output", str(tmp_path / "y"), "--steps", "2", "--target-fractions", "0,1", *TINY])
    with pytest.raises(ValueError, match="--target-fractions expects comma-separated numbers"):
        _new_cli(["complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
                  "--output", str(tmp_path / "y"), "--steps", "2", "--target-fractions", "half", *TINY])
    assert not (tmp_path / "y").exists()


def test_help_documents_the_target_rules(capsys):
    parser = argparse.ArgumentParser(prog="cnet compare")
    configure_compare(parser)
    text = " ".join(parser.format_help().split())
    assert "--target-fractions" in text and "B's best validation loss by these fractions of its run" in text
    assert "default 0.25,0.5,1.0" in text and "--match" in text and "within 0.02%" in text


def test_match_widens_the_real_twin_of_a_shortcut_pair(byte_corpus, tmp_path, capsys):
    shared = ["--dataset", "text_bytes", "--data-path", str(byte_corpus), "--steps", "4", "--match",
              "--set", "d_model=32", "--set", "d_inner=64", "--set", "num_layers=2", "--set", "d_state=8",
              "--set", "context=16", "--set", "eval_every=2", "--set", "eval_windows=4", "--set", "batch_size=2",
              "--set", "warmup_steps=1", "--quiet"]
    out = tmp_path / "ssm"
    assert _new_cli(["h-mamba", "mamba", "--output", str(out), "--set-a", "num_heads=4", *shared]) == 0
    rec = json.loads((out / "compare.json").read_text())
    assert rec["overrides_b"]["ffn_dim"] == 157 and rec["parameter_gap"] <= 2e-4   # test_shortcut_match's width
    assert rec["unit"] == "nats/byte" and rec["parameters"]["a"]["complex_parameters"] == 2 * 4 * 8
    printed = capsys.readouterr().out
    assert "h-mamba: " in printed and "complex" in printed and "ms/step" in printed
    no = ["--output", str(tmp_path / "no"), *shared]
    with pytest.raises(ValueError, match="do not also give it"):
        _new_cli(["h-mamba", "mamba", "--set-a", "num_heads=4", "--set-b", "ffn_dim=3", *no])
    with pytest.raises(ValueError, match="real twin, which must be model B"):
        _new_cli(["mamba", "h-mamba", "--set-b", "num_heads=4", *no])
    with pytest.raises(ValueError, match="--match: match: cannot pair"):
        _new_cli(["complex-fnet", "real-fnet", "--dataset", "text_bytes", "--data-path", str(byte_corpus),
                  "--output", str(tmp_path / "no"), "--steps", "2", "--match", *TINY])
    assert not (tmp_path / "no").exists()


def test_text_bytes_file_instead_of_folder_says_what_training_needs(byte_corpus, tmp_path, capsys):
    assert main(["compare", "complex-fnet", "real-fnet", "--dataset", "text_bytes", "--data-path",
                 str(byte_corpus / "train" / "part.txt"), "--output", str(tmp_path / "x"), "--steps", "2"]) == 2
    assert "needs a folder holding train/ and validation/" in capsys.readouterr().err


SMALL_MAMBA = ["--dataset", "tiny_shakespeare", "--steps", "2", "--set", "d_model=8", "--set", "d_inner=16",
               "--set", "num_layers=1", "--set", "d_state=4", "--set-a", "num_heads=2", "--set", "context=16",
               "--set", "eval_every=2", "--set", "eval_windows=4", "--set", "batch_size=2", "--set", "warmup_steps=1",
               "--quiet"]


def test_overwrite_removes_the_stale_record_before_training(excerpt, tmp_path, capsys, monkeypatch):
    import cnet.models.train as train_module

    out = tmp_path / "cmp"
    base = ["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
            "--output", str(out), "--steps", "2", *TINY]
    assert main(base) == 0
    old_json, old_png = (out / "compare.json").read_bytes(), (out / "compare.png").read_bytes()
    # without --overwrite a finished comparison is refused, and nothing in it changes
    assert main(base) == 2
    assert "already holds a checkpoint" in capsys.readouterr().err
    (out / "a" / "config.json").unlink()
    (out / "b" / "config.json").unlink()
    assert main(base) == 2        # the record alone is still a finished comparison
    assert "already holds a comparison (compare.json)" in capsys.readouterr().err
    assert (out / "compare.json").read_bytes() == old_json and (out / "compare.png").read_bytes() == old_png
    # a failed check keeps the earlier record
    assert main([*base, "--overwrite", "--set", "context=100000"]) == 2
    assert (out / "compare.json").read_bytes() == old_json
    # --overwrite interrupted while training A: the earlier record and plot are gone, not left beside new a/
    real_train = train_module.train

    def interrupted(*args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "train", interrupted)
    assert main([*base, "--overwrite"]) == 130
    assert not (out / "compare.json").exists() and not (out / "compare.png").exists()
    monkeypatch.setattr(train_module, "train", real_train)
    assert main([*base, "--overwrite"]) == 0
    assert (out / "compare.json").is_file() and (out / "compare.png").is_file()


def test_match_tolerance_option(excerpt, tmp_path, capsys):
    out = tmp_path / "m"
    args = ["h-mamba", "mamba", "--data-path", str(excerpt), "--output", str(out), "--match", *SMALL_MAMBA]
    with pytest.raises(ValueError, match=r"or the tolerance \(--match-tolerance, now 0.0002\)$"):
        _new_cli(args)
    with pytest.raises(ValueError, match=r"'match_tolerance' \(--match-tolerance\) must be a number in \(0, 1\), "
                                         r"got 1.5"):
        _new_cli([*args, "--match-tolerance", "1.5"])
    no_match = [a for a in args if a != "--match"]
    with pytest.raises(ValueError, match="--match-tolerance 0.01 applies with --match only"):
        _new_cli([*no_match, "--match-tolerance", "0.01"])
    assert not out.exists()
    assert _new_cli([*args, "--match-tolerance", "0.01"]) == 0
    rec = json.loads((out / "compare.json").read_text())
    assert rec["overrides_b"]["ffn_dim"] == 37 and rec["parameter_gap"] < 0.01
    parser = argparse.ArgumentParser(prog="cnet compare")
    configure_compare(parser)
    assert "--match-tolerance" in " ".join(parser.format_help().split())


def test_task_datasets_are_refused_with_what_compare_takes(tmp_path, capsys):
    assert main(["compare", "pct", "pct", "--dataset", "copy_memory", "--output", str(tmp_path / "x"),
                 "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "dataset 'copy_memory' is a task dataset" in err and "causal next-token language models" in err
    assert "`cnet train`" in err and "\n" not in err
    assert not (tmp_path / "x").exists()


def test_runs_stopped_at_different_steps_are_warned_and_recorded(excerpt, tmp_path, capsys, monkeypatch):
    import dataclasses

    import cnet.models.train as train_module

    real_train = train_module.train

    def b_cut_short(name, dataset, output, **kw):   # as a max_minutes cap stopping B earlier than A
        if output.name == "b":
            kw["train_config"] = dataclasses.replace(kw["train_config"], steps=2)
        return real_train(name, dataset, output, **kw)

    monkeypatch.setattr(train_module, "train", b_cut_short)
    out = tmp_path / "cut"
    assert main(["compare", "complex-fnet", "real-fnet", "--dataset", "tiny_shakespeare", "--data-path",
                 str(excerpt), "--output", str(out), "--steps", "4", *TINY]) == 0
    printed = capsys.readouterr().out
    line = "warning: the protocols diverged: A (complex-fnet) ran 4 steps, B (real-fnet) ran 2"
    assert line in printed
    rec = json.loads((out / "compare.json").read_text())
    assert rec["steps_run"] == {"a": 4, "b": 2} and any(line in w for w in rec["warnings"])
