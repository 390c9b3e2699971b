"""End to end: `cnet train`, `cnet generate`, `cnet eval` on a tiny-shakespeare excerpt, and their errors."""

import json

import pytest
import torch

from cnet.core.cli import main
from cnet.data import split_by_position


def _snapshot(folder):
    """Every file below ``folder`` with its bytes (the checkpoint, logs and the hidden resume state)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


TINY = ["--set", "embed_dim=16", "--set", "num_layers=1", "--set", "context=16", "--set", "batch_size=8",
        "--set", "eval_every=10", "--set", "eval_windows=16", "--set", "warmup_steps=5", "--quiet"]


@pytest.fixture
def trained(excerpt, tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
               "--output", str(out), "--steps", "30", *TINY])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    return out, summary


def test_train_writes_checkpoint_metrics_and_summary(trained):
    out, summary = trained
    for name in ("config.json", "model.safetensors", "vocab.json", "metrics.json", "metrics.jsonl", "summary.json"):
        assert (out / name).is_file(), name
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [10, 20, 30]
    assert summary["steps"] == 30 and summary["best_val_loss"] == min(r["val_loss"] for r in lines)
    best = json.loads((out / "metrics.json").read_text())
    assert best["val_loss"] == summary["best_val_loss"] and best["step"] == summary["best_step"]
    # 30 steps move a 16-wide model well below the uniform loss ln(V)
    vocab = json.loads((out / "vocab.json").read_text())
    import math
    assert summary["best_val_loss"] < math.log(len(vocab["chars"]))


def test_generate_starts_with_prompt(trained, capsys):
    out, _ = trained
    assert main(["generate", "--model", str(out), "--prompt", "ROMEO:", "--max-new-tokens", "40"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("ROMEO:") and len(text.rstrip("\n")) == len("ROMEO:") + 40


def test_eval_scores_whole_split(trained, excerpt, capsys):
    out, summary = trained
    assert main(["eval", "--model", str(out), "--dataset", "tiny_shakespeare", "--data-path", str(excerpt)]) == 0
    res = json.loads(capsys.readouterr().out)
    n_val = len(split_by_position(excerpt.read_text(), "validation"))
    assert res["chars_scored"] == n_val - 1
    assert abs(res["nats_per_char"] - summary["best_val_loss"]) < 0.3


def test_errors_are_one_line_and_nothing_saved_is_damaged(trained, tmp_path, capsys):
    out, _ = trained
    before = _snapshot(out)
    assert main(["generate", "--model", str(out), "--prompt", "ROMEO\u00e9", "--max-new-tokens", "3"]) == 2
    assert "\u00e9" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path / "missing"), "--prompt", "A"]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["train", "no-such-model", "--dataset", "tiny_shakespeare", "--output", str(tmp_path / "x")]) == 2
    assert "unknown model" in capsys.readouterr().err
    assert main(["train", "born-lm", "--dataset", "no_such_data", "--output", str(tmp_path / "x")]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--output", str(tmp_path / "x"),
                 "--set", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--output", str(out), "--steps", "1"]) == 2
    assert "already holds a checkpoint" in capsys.readouterr().err
    assert _snapshot(out) == before


def test_corrupt_checkpoint_is_reported(trained, tmp_path, capsys):
    import shutil

    out, _ = trained
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "model.safetensors").write_bytes(b"\x00garbage")
    assert main(["generate", "--model", str(bad), "--prompt", "A"]) == 2
    assert "corrupt" in capsys.readouterr().err


def test_set_values_are_typed(excerpt, tmp_path, capsys):
    out = tmp_path / "typed"
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--output",
                 str(out), "--steps", "2", *TINY, "--set", "rope=False", "--set", "learned_positions=True"]) == 0
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert cfg["rope"] is False and cfg["learned_positions"] is True
    capsys.readouterr()
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--output",
                 str(tmp_path / "y"), "--set", "lr=fast"]) == 2
    assert "field 'lr' expects float" in capsys.readouterr().err
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--output",
                 str(tmp_path / "y"), "--steps", "3", "--set", "steps=4"]) == 2
    assert "disagree" in capsys.readouterr().err


def test_divergence_is_an_error_and_keeps_the_old_checkpoint(trained, excerpt, capsys):
    out, _ = trained
    before = _snapshot(out)
    rc = main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--output",
               str(out), "--overwrite", "--steps", "30", *TINY, "--set", "lr=1e30", "--set", "grad_clip=0"])
    assert rc == 2
    assert "loss became" in capsys.readouterr().err
    assert _snapshot(out) == before


def test_eval_and_generate_errors(trained, tmp_path, capsys):
    out, _ = trained
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("ROMEO: hi!")   # 10 characters: the held-out split holds 1, nothing to score
    assert main(["eval", "--model", str(out), "--dataset", "tiny_shakespeare", "--data-path", str(tiny)]) == 2
    assert "at least 2" in capsys.readouterr().err
    assert main(["eval", "--model", str(out), "--dataset", "tiny_shakespeare", "--batch-size", "0",
                 "--data-path", str(tiny)]) == 2
    assert "batch" in capsys.readouterr().err
    vocab = json.loads((out / "vocab.json").read_text())
    vocab["chars"] = vocab["chars"][:5]
    (out / "vocab.json").write_text(json.dumps(vocab))
    assert main(["generate", "--model", str(out), "--prompt", vocab["chars"][1]]) == 2
    assert "vocab.json has 5 symbols" in capsys.readouterr().err


def test_byte_level_training_and_eval_on_pg19_mini(shakespeare_path, tmp_path, capsys):
    # shakespeare_path only guarantees CNET_DATA_DIR is set; pg19-mini lives beside it
    if not (shakespeare_path.parent / "pg19-mini").is_dir():
        pytest.skip("pg19-mini is not in CNET_DATA_DIR")
    out = tmp_path / "bytes"
    assert main(["train", "born-lm", "--dataset", "pg19", "--output", str(out), "--steps", "20", *TINY]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["unit"] == "nats/byte" and json.loads((out / "vocab.json").read_text()) == {"type": "bytes"}
    import math
    assert summary["best_val_loss"] < math.log(256)
    assert abs(summary["best_val_bits_per_token"] - summary["best_val_loss"] / math.log(2)) < 1e-12
    assert main(["generate", "--model", str(out), "--prompt", "It was", "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.startswith("It was")


def test_resume_continues_exactly(excerpt, tmp_path, monkeypatch, capsys):
    from safetensors.torch import load_file

    import cnet.models.train as train_module

    args = ["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--steps", "30",
            *TINY]
    assert main([*args, "--output", str(tmp_path / "straight")]) == 0

    # the same run, stopped by an interruption right after its evaluation at step 20
    real_save = train_module.save_resume

    def stop_after_step_20(output, **kw):
        real_save(output, **kw)
        if kw["loop"]["step"] == 20:
            raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_resume", stop_after_step_20)
    assert main([*args, "--output", str(tmp_path / "cut")]) == 130
    assert "interrupted" in capsys.readouterr().err
    monkeypatch.setattr(train_module, "save_resume", real_save)
    capsys.readouterr()
    assert main([*args, "--output", str(tmp_path / "cut"), "--steps", "30"]) == 2     # refuses without --resume
    assert "already holds a checkpoint" in capsys.readouterr().err
    before = _snapshot(tmp_path / "cut")
    assert main([*args, "--output", str(tmp_path / "cut"), "--resume", "--set", "lr=0.5", "--steps", "40",
                 "--set", "embed_dim=8"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the settings differ from the saved run's (embed_dim: saved 16, given 8; steps: saved 30, given 40; " \
           "lr: saved 0.003, given 0.5)" in err
    assert "\n" not in err and "'batch_size'" not in err and "warmup_steps" not in err   # only what differs
    assert main([*args, "--output", str(tmp_path / "cut"), "--resume", "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "'resume' and 'overwrite' exclude each other" in err and "give one" in err
    assert _snapshot(tmp_path / "cut") == before
    assert main([*args, "--output", str(tmp_path / "cut"), "--resume"]) == 0

    a = load_file(tmp_path / "straight" / ".resume" / "model.safetensors")
    b = load_file(tmp_path / "cut" / ".resume" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    la = (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()
    lb = (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["val_loss"] for x in la] == [json.loads(x)["val_loss"] for x in lb]
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
                 "--output", str(tmp_path / "none"), "--resume", *TINY]) == 2
    assert "no resume state" in capsys.readouterr().err


def test_models_that_are_not_next_token_models_are_refused(excerpt, tmp_path, capsys):
    base = ["train", "pct", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt), "--steps", "2", *TINY[:-1],
            "--set", "num_heads=2"]
    # bidirectional attention would see the characters it must predict
    assert main([*base, "--output", str(tmp_path / "p1"), "--set", "task=tokens", "--set", "causal=false"]) == 2
    assert "not a causal next-token model" in capsys.readouterr().err
    assert not (tmp_path / "p1").exists()
    # the causal token model trains; num_classes follows the vocabulary
    assert main([*base, "--output", str(tmp_path / "p2"), "--set", "task=tokens", "--set", "causal=true",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["train", "pcr-pathx", "--dataset", "tiny_shakespeare", "--data-path", str(excerpt),
                 "--output", str(tmp_path / "p3")]) == 2
    assert "not a language model" in capsys.readouterr().err


@pytest.mark.parametrize(("setting", "message"), [
    ("lr=-1", "'lr' must be > 0, got -1.0"),
    ("lr=0", "'lr' must be > 0, got 0.0"),
    ("min_lr_ratio=1.5", "'min_lr_ratio' must be in [0, 1], got 1.5"),
    ("warmup_steps=-2", "'warmup_steps' must be >= 0, got -2"),
    ("max_minutes=-1", "'max_minutes' must be >= 0 (0: no time cap), got -1.0"),
    ("grad_clip=-0.5", "'grad_clip' must be >= 0 (0 turns clipping off), got -0.5"),
    ("weight_decay=-0.1", "'weight_decay' must be >= 0, got -0.1"),
])
def test_range_errors_name_the_field_and_value(tmp_path, capsys, setting, message):
    assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--output", str(tmp_path / "x"),
                 "--set", setting]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_short_corpus_names_the_split_and_the_fix(tmp_path, capsys):
    # split 90/10 by position: 30 characters leave the train split short, 500 only the validation split
    for chars, split in ((30, "train"), (500, "validation")):
        path = tmp_path / f"{chars}.txt"
        path.write_text(("abcdefghij" * 50)[:chars])
        assert main(["train", "born-lm", "--dataset", "tiny_shakespeare", "--data-path", str(path), "--output",
                     str(tmp_path / "x"), "--set", "context=64", "--steps", "1"]) == 2
        err = capsys.readouterr().err
        assert f"train: the {split} split of 'tiny_shakespeare' holds" in err, err
        assert "fewer than one window of the model's context 64 + 1; use a shorter context (--set context=...)" in err
    assert not (tmp_path / "x").exists()
