"""The training app on tasks: Copy Memory (per position), ListOps (classification), Pathfinder with pcr-pathx;
scores by hand, the head check, bad input, exact resume and `cnet eval`."""

import json
import math

import pytest
import torch

import cnet.data
from cnet.core.cli import main
from cnet.models.output import LMOutput
from cnet.models.task_data import TrainBatches
from cnet.models.tasks import TASKS, batch_accuracy, task_sums

pytestmark = pytest.mark.usefixtures("one_thread")


TINY = ["--set", "embed_dim=8", "--set", "num_layers=1", "--set", "num_heads=2", "--set", "batch_size=4",
        "--set", "eval_every=3", "--set", "eval_windows=12", "--set", "warmup_steps=1", "--quiet"]
COPY = ["train", "pct", "--dataset", "copy_memory", "--data-option", "delay=3", *TINY]
PATHX_TINY = ["--set", "d_model=8", "--set", "d_state=4", "--set", "num_layers=2", "--set", 'screen_after="2"',
              "--set", "screen_heads=2", "--set", "batch_size=4", "--set", "eval_every=2", "--set", "eval_windows=6",
              "--set", "weight_decay=0.05", "--quiet"]


def _lines(folder):
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]


class _Fixed(torch.nn.Module):
    """A stand-in model returning fixed logits for every batch row (``logits[i]`` for input row ``x[i, 0]``)."""

    def __init__(self, logits):
        super().__init__()
        self.table = logits

    def forward(self, x):
        return LMOutput(logits=self.table[x[:, 0]])


def test_scores_by_hand():
    # classification: 3 sequences, logits favour classes 0, 1, 1; targets 0, 1, 2 -> 2 of 3 right
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 3.0, 0.0]])
    targets = torch.tensor([0, 1, 2])
    x = torch.arange(3)[:, None]
    loss, correct, items = task_sums(_Fixed(logits), x, targets, batch=2, device="cpu").tolist()
    by_hand = sum(-torch.log_softmax(logits[i], 0)[targets[i]].item() for i in range(3))
    assert (correct, items) == (2, 3) and loss == pytest.approx(by_hand)
    assert batch_accuracy(logits, targets) == pytest.approx(2 / 3)
    # per position: -100 positions are neither scored nor counted
    logits = torch.tensor([[[5.0, 0.0], [0.0, 5.0], [5.0, 0.0]]])           # predicts 0, 1, 0
    labels = torch.tensor([[-100, 1, 1]])
    loss, correct, items = task_sums(_Fixed(logits), torch.zeros(1, 3, dtype=torch.long), labels, batch=4,
                                     device="cpu").tolist()
    assert (correct, items) == (1, 2)
    assert loss == pytest.approx(math.log1p(math.exp(-5.0)) + math.log1p(math.exp(5.0)), rel=1e-6)
    assert batch_accuracy(logits, labels) == 0.5
    assert math.isnan(batch_accuracy(logits, torch.full((1, 3), -100)))


def test_generated_stream_is_split_between_processes():
    spec = TASKS["copy_memory"]
    opts = {"delay": 2, "seed": 3}
    one = TrainBatches(spec, opts, batch_size=2)
    seq = [one.next(None)[0] for _ in range(4)]
    for rank in (0, 1):
        mine = TrainBatches(spec, opts, batch_size=2, rank=rank, processes=2)
        assert all(torch.equal(mine.next(None)[0], seq[2 * k + rank]) for k in range(2))
    later = TrainBatches(spec, opts, batch_size=2, start_step=3)
    assert torch.equal(later.next(None)[0], seq[3])


def test_copy_memory_end_to_end_and_eval(tmp_path, capsys):
    out = tmp_path / "copy"
    assert main([*COPY, "--output", str(out), "--steps", "6"]) == 0
    summary = json.loads(capsys.readouterr().out)
    for name in ("config.json", "model.safetensors", "training.json", "metrics.json", "metrics.jsonl", "summary.json"):
        assert (out / name).is_file(), name
    lines = _lines(out)
    assert [r["step"] for r in lines] == [3, 6]
    assert summary["task"] == "tokens" and summary["unit"] == "nats/answer token" and summary["chance"] == 0.1
    assert summary["sequence_length"] == 23 and summary["eval_examples"] == 12
    assert summary["best_val_loss"] == min(r["val_loss"] for r in lines)
    assert summary["final_val_accuracy"] == lines[-1]["val_accuracy"]
    for r in lines:  # accuracy over 12 sequences x 10 answer positions
        assert r["val_accuracy"] * 120 == pytest.approx(round(r["val_accuracy"] * 120))
        assert 0 <= r["train_accuracy"] <= 1
    config = json.loads((out / "config.json").read_text())["config"]
    assert (config["task"], config["num_classes"], config["context"], config["vocab_size"]) == ("tokens", 16, 23, 16)
    assert json.loads((out / "training.json").read_text())["data_options"] == {"delay": 3, "seed": 0}
    # `cnet eval` with the training options scores the same held-out rows as the saved evaluation
    best = json.loads((out / "metrics.json").read_text())
    assert main(["eval", "--model", str(out), "--dataset", "copy_memory", "--num-examples", "12"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["scored"] == 120 and res["split"] == "validation"
    assert res["nats_per_answer_token"] == pytest.approx(best["val_loss"], rel=1e-5)
    assert res["accuracy"] == pytest.approx(best["val_accuracy"])


def test_listops_classification(tmp_path, capsys):
    out = tmp_path / "listops"
    args = ["train", "pct", "--dataset", "listops", "--data-option", "max_depth=2", "--data-option", "max_args=3",
            "--data-option", "length=20", "--set", "cell=complex_sigmoid_nol2", *TINY]
    assert main([*args, "--output", str(out), "--steps", "3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["task"] == "classify" and summary["unit"] == "nats/sequence" and summary["num_classes"] == 10
    assert summary["best_val_loss"] < 2 * math.log(10)
    acc = _lines(out)[-1]["val_accuracy"]
    assert acc * 12 == pytest.approx(round(acc * 12))
    config = json.loads((out / "config.json").read_text())["config"]
    assert (config["cell"], config["task"], config["context"]) == ("complex_sigmoid_nol2", "classify", 20)
    # a context longer than the data is fine, and the gate bias follows it
    assert main([*args, "--output", str(tmp_path / "long"), "--steps", "1", "--set", "context=32"]) == 0


def test_head_and_input_errors(tmp_path, capsys):
    def fails(args, message):
        assert main([*args, "--output", str(tmp_path / "x"), "--steps", "1"]) == 2
        err = capsys.readouterr().err
        assert message in err, err
        assert not (tmp_path / "x" / "config.json").exists()

    fails([*COPY, "--set", "task=classify"], "needs per-position prediction")
    fails([*COPY, "--set", "num_classes=10"], "predicts 10 classes but dataset 'copy_memory' has 16")
    fails([*COPY, "--set", "context=16"], "sequences of 23 positions, longer than the model's configured length 16")
    fails([*COPY, "--set", "vocab_size=8"], "embeds 8 ids but dataset 'copy_memory' uses 16")
    fails([*COPY, "--set", "input_kind=complex"], "takes 'complex' inputs")
    fails([*COPY, "--set", "cell=complex_tanh"], "unknown cell 'complex_tanh'")
    fails([*COPY, "--data-option", "num_examples=5"], "'num_examples' is set by the training app")
    fails([*COPY, "--data-option", "dealy=5"],
          "dataset 'copy_memory' has no option(s) 'dealy' (did you mean 'delay'?)")
    fails(["train", "pct", "--dataset", "listops", *TINY, "--data-option", "depth=3", "--data-option", "length=64"],
          "dataset 'listops' has no option(s) 'depth'")
    fails(["train", "pct", "--dataset", "fft_mnist", *TINY, "--data-option", "antialiasing=0"],
          "(did you mean 'antialias'?)")
    fails(["train", "born-lm", "--dataset", "listops"], "model 'born-lm' has no classification or per-position head")
    fails(["train", "pcr-pathx", "--dataset", "copy_memory"], "pcr-pathx classifies square images")
    fails(["train", "pct", "--dataset", "tiny_shakespeare", "--data-option", "delay=3"], "data options")


def test_resume_continues_a_streamed_task_exactly(tmp_path, monkeypatch, capsys):
    from safetensors.torch import load_file

    import cnet.models.train as train_module

    args = [*COPY, "--steps", "6"]
    assert main([*args, "--output", str(tmp_path / "straight")]) == 0
    real_save = train_module.save_resume

    def stop_after_step_3(output, **kw):
        real_save(output, **kw)
        if kw["loop"]["step"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_resume", stop_after_step_3)
    assert main([*args, "--output", str(tmp_path / "cut")]) == 130
    monkeypatch.setattr(train_module, "save_resume", real_save)
    capsys.readouterr()
    assert main([*args, "--output", str(tmp_path / "cut"), "--resume", "--data-option", "seed=1"]) == 2
    assert "(data option seed: saved 0, given 1)" in capsys.readouterr().err
    assert main([*args, "--output", str(tmp_path / "cut"), "--resume"]) == 0
    a = load_file(tmp_path / "straight" / ".resume" / "model.safetensors")
    b = load_file(tmp_path / "cut" / ".resume" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    straight, cut = _lines(tmp_path / "straight"), _lines(tmp_path / "cut")
    assert straight == [{**r, "elapsed_s": s["elapsed_s"]} for r, s in zip(cut, straight, strict=True)]


def test_pcr_pathx_on_an_lra_pathfinder_folder(tmp_path, capsys):
    rows = cnet.data.load("pathfinder_synthetic", "train", resolution=16, num_examples=30, seed=0)
    folder = cnet.data.write_pathfinder_lra(tmp_path / "data", rows, per_folder=16)
    out = tmp_path / "px"
    args = ["train", "pcr-pathx", "--dataset", "pathfinder", "--data-path", str(folder), "--data-option",
            "resolution=16", *PATHX_TINY]
    assert main([*args, "--output", str(out), "--steps", "2", "--set", "lr=3e-3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["task"] == "classify" and summary["chance"] == 0.5 and summary["sequence_length"] == 256
    assert summary["eval_examples"] == 3            # the validation split: 10% of 30 images
    assert json.loads((out / "config.json").read_text())["config"]["image_size"] == 16
    # the paper's parameter groups: recurrence at lr/3 without weight decay, the rest at lr with weight decay
    groups = json.loads((out / ".resume" / "config.json").read_text())["param_groups"]
    assert [(g["base_lr"], g["weight_decay"]) for g in groups] == [(pytest.approx(1e-3), 0.0), (3e-3, 0.05)]
    # a Pathfinder folder without its metadata is refused with the layout spelled out
    (folder / "curv_contour_length_14" / "metadata" / "0.npy").unlink()
    (folder / "curv_contour_length_14" / "metadata" / "1.npy").unlink()
    (folder / "curv_contour_length_14" / "metadata").rmdir()
    assert main([*args, "--output", str(tmp_path / "px2"), "--steps", "1"]) == 2
    assert "no metadata folder" in capsys.readouterr().err


def test_pcr_pathx_smoke_on_generated_images_and_matmul_precision_is_restored(tmp_path, capsys):
    before = torch.get_float32_matmul_precision()
    out = tmp_path / "pxs"
    assert main(["train", "pcr-pathx", "--dataset", "pathfinder_synthetic", "--data-option", "resolution=16",
                 *PATHX_TINY, "--set", "matmul_precision=high", "--output", str(out), "--steps", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 2 and 0 <= summary["final_val_accuracy"] <= 1
    assert torch.get_float32_matmul_precision() == before
    assert main(["eval", "--model", str(out), "--dataset", "pathfinder_synthetic", "--num-examples", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["scored"] == 4
    assert main(["eval", "--model", str(out), "--dataset", "copy_memory", "--num-examples", "2"]) == 2
    assert "does not fit dataset 'copy_memory'" in capsys.readouterr().err
