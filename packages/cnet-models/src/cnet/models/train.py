"""The training app: one loop for CPU, one GPU and ``accelerate launch`` on several (DESIGN.md section 5).

Command line (``cnet train --help`` for all options)::

    cnet train born-lm --dataset tiny_shakespeare --output runs/born-lm --steps 3000 --set embed_dim=64
    accelerate launch -m cnet.core.cli train born-lm --dataset tiny_shakespeare --output runs/born-lm
    cnet train pct --dataset copy_memory --data-option delay=1000 --output runs/copy --steps 2000
    cnet train pct --dataset listops --set cell=complex_sigmoid_nol2 --output runs/listops-nol2
    cnet train pcr-pathx --dataset pathfinder --data-option resolution=128 --output runs/pathx --set lr=4.5e-4

What it does, top to bottom: seed; load the data; build the model; AdamW (complex parameters update their real
and imaginary parts as independent reals, as CNet's true Adam does; a model with a ``param_groups(lr,
weight_decay)`` method, such as ``pcr-pathx``, sets its own groups); linear warm-up then cosine decay to
``min_lr_ratio * lr``; global gradient-norm clipping; every ``eval_every`` steps the loss on a fixed held-out set;
the best model by that loss is saved to the output folder; every evaluation is a JSON line in ``metrics.jsonl``
there, and the state for an exact resume goes to ``.resume/`` (``cnet train ... --resume``); a summary
(``summary.json``) at the end.

Two kinds of dataset (:mod:`cnet.models.tasks`):

- text or bytes (tiny-shakespeare, PG-19): next-token language models on random windows of the stream; losses
  in nats per token (nats/char or nats/byte);
- tasks (Copy Memory, Needle, ListOps, LRA, FFT-MNIST, Pathfinder): sequence classification or per-position
  prediction; losses in nats per sequence or per answer position, and accuracy over the same items
  (:mod:`cnet.models.task_data` for the batches). PCT paper section 2.2 and D.1-D.4.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm

from cnet.core.checkpoint import atomic_write
from cnet.data import ByteVocab
from cnet.models.base import LanguageModel
from cnet.models.corpus import Corpus, check_window, load_corpus
from cnet.models.registry import create, save
from cnet.models.resume import load_resume, save_resume, settings_differences
from cnet.models.task_data import TrainBatches, data_options, load_held_out
from cnet.models.tasks import TaskSpec, batch_accuracy, build_task_model, task_spec, task_sums

__all__ = ["TrainConfig", "train", "build_language_model", "lr_factor", "evaluate_windows", "score_stream",
           "random_windows", "build_task_model"]


@dataclass
class TrainConfig:
    """Optimisation settings of :func:`train` (``--set key=value`` on the command line).

    ``eval_windows`` is the size of the fixed held-out set: windows for language models, rows (sequences) for
    tasks. Raises ``ValueError`` on a value out of range (named in the message).
    """

    steps: int = 2000             # optimiser steps
    batch_size: int = 32          # windows per step (per process)
    lr: float = 3e-3              # peak learning rate
    min_lr_ratio: float = 0.1     # cosine decays to this fraction of lr
    warmup_steps: int = 100       # linear warm-up
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0        # global gradient-norm clip (0 disables)
    eval_every: int = 250         # steps between held-out evaluations
    eval_windows: int = 256       # fixed held-out windows per evaluation
    seed: int = 0
    max_minutes: float = 0.0      # wall-time budget of the training loop (0: none); see `train`
    matmul_precision: str = "highest"  # torch.set_float32_matmul_precision during the run ("high" allows TF32)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "eval_windows"):
            if getattr(self, name) < 1:
                raise ValueError(f"train: '{name}' must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"train: 'lr' must be > 0, got {self.lr}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"train: 'min_lr_ratio' must be in [0, 1], got {self.min_lr_ratio}")
        for name, note in (("warmup_steps", ""), ("weight_decay", ""), ("grad_clip", " (0 turns clipping off)"),
                           ("max_minutes", " (0: no time cap)")):
            if not getattr(self, name) >= 0:
                raise ValueError(f"train: '{name}' must be >= 0{note}, got {getattr(self, name)}")
        if self.matmul_precision not in ("highest", "high", "medium"):
            raise ValueError(f"train: 'matmul_precision' must be highest, high or medium, "
                             f"got {self.matmul_precision!r}")


def lr_factor(cfg: TrainConfig, step: int, time_fraction: float = 0.0) -> float:
    """Learning-rate multiplier: linear warm-up over ``warmup_steps``, then cosine decay to ``min_lr_ratio``.

    The decay's progress is the larger of the step fraction and ``time_fraction`` (the share of the wall-time
    budget ``max_minutes`` used so far), so a time-budgeted run still ends its schedule at the low rate.
    """
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    progress = max((step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps), time_fraction)
    progress = min(1.0, progress)
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def random_windows(stream: torch.Tensor, context: int, batch: int, generator: torch.Generator):
    """Draw ``batch`` random windows from ``stream`` (``i[N]``): inputs and next-token targets, ``i[batch, context]``.

    Raises:
        ValueError: the stream holds fewer than ``context + 1`` tokens.
    """
    if stream.numel() <= context:
        raise ValueError(f"corpus has {stream.numel()} tokens, fewer than one window of context {context} + 1")
    starts = torch.randint(0, stream.numel() - context, (batch,), generator=generator)
    idx = starts[:, None] + torch.arange(context + 1)
    w = stream[idx]
    return w[:, :-1], w[:, 1:]


def evaluate_windows(stream: torch.Tensor, context: int, count: int) -> torch.Tensor:
    """A fixed held-out set: ``count`` windows of ``context + 1`` tokens spread evenly over ``stream``.

    Returns ``i[count, context + 1]`` (fewer rows if the stream is short).
    """
    if stream.numel() <= context:
        raise ValueError(f"held-out split has {stream.numel()} tokens, fewer than one window of context {context} + 1")
    starts = torch.linspace(0, stream.numel() - context - 1, count).long().unique()
    return stream[starts[:, None] + torch.arange(context + 1)]


@torch.no_grad()
def _held_out_loss(model, windows: torch.Tensor, batch: int, accelerator: Accelerator) -> float:
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=accelerator.device)
    count = torch.zeros((), dtype=torch.float64, device=accelerator.device)
    shard = windows[accelerator.process_index::accelerator.num_processes]
    for i in range(0, shard.shape[0], batch):
        w = shard[i:i + batch].to(accelerator.device)
        out = model(w[:, :-1], w[:, 1:])
        total += out.loss.double() * w[:, 1:].numel()
        count += w[:, 1:].numel()
    total, count = accelerator.reduce(total, "sum"), accelerator.reduce(count, "sum")
    model.train()
    return float(total / count)


@torch.no_grad()
def score_stream(model, stream: torch.Tensor, *, batch: int = 64, device: str | torch.device = "cpu") -> dict:
    """Mean next-token loss over a whole token stream, every token after the first scored exactly once.

    The stream is cut into consecutive windows of ``context + 1`` tokens that overlap by one token, so each
    window predicts ``context`` new tokens from its own prefix (the last window may be shorter).

    Returns:
        ``{"nats_per_token": float, "bits_per_token": float, "tokens": int}``.

    Raises:
        ValueError: ``batch`` < 1, or the stream has fewer than two tokens (nothing to score).
    """
    if batch < 1:
        raise ValueError(f"score_stream: 'batch' must be >= 1, got {batch}")
    if stream.numel() < 2:
        raise ValueError(f"score_stream: the stream has {stream.numel()} token(s); at least 2 are needed to score one")
    model.eval()
    ctx = model.config.context
    total, count = 0.0, 0
    starts = list(range(0, stream.numel() - 1, ctx))
    full = [s for s in starts if s + ctx + 1 <= stream.numel()]
    for i in range(0, len(full), batch):
        idx = torch.tensor(full[i:i + batch])[:, None] + torch.arange(ctx + 1)
        w = stream[idx].to(device)
        total += float(model(w[:, :-1], w[:, 1:]).loss) * w[:, 1:].numel()
        count += w[:, 1:].numel()
    for s in starts[len(full):]:
        w = stream[s:][None].to(device)
        total += float(model(w[:, :-1], w[:, 1:]).loss) * (w.shape[1] - 1)
        count += w.shape[1] - 1
    nats = total / count
    return {"nats_per_token": nats, "bits_per_token": nats / math.log(2), "tokens": count}


def build_language_model(name: str, overrides: dict):
    """Create ``name`` for next-token training; a ``num_classes`` field, if any, defaults to the vocabulary size.

    Raises:
        ValueError: the model is not a causal next-token language model as configured (e.g. a classifier, or a
        bidirectional attention model, which would see the tokens it is asked to predict).
    """
    from cnet.core.plugins import registries

    entry = registries().models.get(name)
    if not (isinstance(entry["obj"], type) and issubclass(entry["obj"], LanguageModel)):
        raise ValueError(f"train: {name!r} is not a language model; the training app trains next-token models only")
    fields = {f.name for f in dataclasses.fields(entry["config"])}
    if "num_classes" in fields and "num_classes" not in overrides:
        overrides = {**overrides, "num_classes": overrides["vocab_size"]}
    model = create(name, **overrides)
    problem = model.next_token_problem()
    if problem:
        raise ValueError(f"train: {name!r} as configured is not a causal next-token model: {problem}")
    return model


def _require_finite(what: str, value: float, step: int) -> None:
    if not math.isfinite(value):
        raise ValueError(f"train: the {what} loss became {value} at step {step}; the folder keeps the last good "
                         "checkpoint (try a lower lr, a probability floor, or gradient clipping)")


class _LanguageRun:
    """Next-token training on a text or byte corpus: random windows, held-out loss in nats per token."""

    def __init__(self, model_name: str, dataset: str, overrides: dict, cfg: TrainConfig, data_path: str | None,
                 corpus: Corpus | None) -> None:
        corpus = corpus or load_corpus(dataset, path=data_path)
        if "vocab_size" in overrides and overrides["vocab_size"] != len(corpus.vocab):
            raise ValueError(f"train: vocab_size={overrides['vocab_size']} disagrees with the corpus vocabulary "
                             f"({len(corpus.vocab)} symbols); leave it unset")
        self.corpus, self.cfg = corpus, cfg
        self.model = build_language_model(model_name, {**overrides, "vocab_size": len(corpus.vocab)})
        for split, stream in (("train", corpus.train), ("validation", corpus.validation)):
            check_window(stream, self.model.config.context, dataset=dataset, split=split)
        self.val_windows = evaluate_windows(corpus.validation, self.model.config.context, cfg.eval_windows)
        self.sidecars = {"vocab.json": corpus.vocab.to_json(),
                         "training.json": {"dataset": dataset, "train_config": dataclasses.asdict(cfg)}}

    def batches(self, step: int, rank: int, processes: int):
        context = self.model.config.context
        return lambda gen: random_windows(self.corpus.train, context, self.cfg.batch_size, gen)

    def train_metrics(self, out, targets) -> dict:
        return {}

    def evaluate(self, model, accelerator: Accelerator) -> dict:
        return {"val_loss": _held_out_loss(model, self.val_windows, self.cfg.batch_size, accelerator)}

    def summary(self, best: float, history: list) -> dict:
        return {"best_val_bits_per_token": best / math.log(2),
                "unit": "nats/byte" if isinstance(self.corpus.vocab, ByteVocab) else "nats/char"}


class _TaskRun:
    """Classification or per-position training on a task dataset: held-out loss and accuracy."""

    def __init__(self, model_name: str, spec: TaskSpec, overrides: dict, cfg: TrainConfig, data_path: str | None,
                 options: dict | None) -> None:
        self.spec, self.cfg = spec, cfg
        self.options = data_options(spec, options, seed=cfg.seed, path=data_path)
        self.val_x, self.val_y = load_held_out(spec, spec.eval_split, self.options, cfg.eval_windows)
        self.length = int(self.val_x.shape[1])
        self.model = build_task_model(model_name, overrides, spec, self.length)
        saved_options = {k: v for k, v in self.options.items() if k != "path"}
        self.sidecars = {"training.json": {"dataset": spec.name, "data_options": saved_options,
                                           "task": dataclasses.asdict(spec), "train_config": dataclasses.asdict(cfg)}}

    def batches(self, step: int, rank: int, processes: int):
        source = TrainBatches(self.spec, self.options, batch_size=self.cfg.batch_size, rank=rank,
                              processes=processes, start_step=step)
        return source.next

    def train_metrics(self, out, targets) -> dict:
        return {"train_accuracy": batch_accuracy(out.logits, targets)}

    def evaluate(self, model, accelerator: Accelerator) -> dict:
        rank, procs = accelerator.process_index, accelerator.num_processes
        sums = task_sums(model, self.val_x[rank::procs], self.val_y[rank::procs], batch=self.cfg.batch_size,
                         device=accelerator.device)
        loss, correct, items = (float(v) for v in accelerator.reduce(sums, "sum"))
        return {"val_loss": loss / max(items, 1), "val_accuracy": correct / max(items, 1)}

    def summary(self, best: float, history: list) -> dict:
        at_best = next(r for r in history if r["val_loss"] == best)
        return {"task": self.spec.kind, "num_classes": self.spec.num_classes, "sequence_length": self.length,
                "chance": self.spec.chance, "best_val_accuracy": at_best["val_accuracy"],
                "final_val_loss": history[-1]["val_loss"], "final_val_accuracy": history[-1]["val_accuracy"],
                "eval_split": self.spec.eval_split, "eval_examples": int(self.val_x.shape[0]),
                "unit": self.spec.unit}


def _parameters(model, cfg: TrainConfig):
    """AdamW parameter groups: the model's own (``param_groups(lr, weight_decay)``) or one group of all."""
    if hasattr(model, "param_groups"):
        return model.param_groups(cfg.lr, cfg.weight_decay)
    return model.parameters()


def train(model_name: str, dataset: str, output: str | Path, *, model_overrides: dict | None = None,
          train_config: TrainConfig | None = None, data_path: str | None = None, corpus: Corpus | None = None,
          data_options: dict | None = None, progress: bool = True, overwrite: bool = False,
          resume: bool = False) -> dict:
    """Train ``model_name`` on ``dataset`` and keep the best checkpoint in ``output``.

    Args:
        model_name: registered model (``cnet.models.list_models()``).
        dataset: registered dataset: a text/byte corpus (train and validation splits) for a language model, or a
            task of :data:`cnet.models.tasks.TASKS` (``copy_memory``, ``listops``, ``pathfinder``, ...) for a
            model with a classification or per-position head (``pct``, ``pcr-pathx``).
        output: checkpoint folder; receives ``config.json``, ``model.safetensors``, ``training.json`` (dataset, data
            options, training settings), ``vocab.json`` (language models), ``metrics.json`` (the evaluation of the
            saved weights), ``metrics.jsonl`` (one JSON line per evaluation) and ``summary.json``.
        model_overrides: config fields of the model. The data fixes ``vocab_size`` of a language model, and the
            head fields of a task model (``pct``: ``task``, ``num_classes``, ``context``, ``input_kind``,
            ``vocab_size``; ``pcr-pathx``: ``num_classes``, ``image_size``); an override that disagrees is an error.
        train_config: :class:`TrainConfig`.
        data_path: explicit data file or folder for the dataset loader.
        corpus: an already loaded :class:`Corpus` (language models; skips loading).
        data_options: loader options of a task dataset, e.g. ``{"delay": 1000}`` for ``copy_memory`` or
            ``{"max_depth": 6, "max_args": 5, "length": 1024}`` for ``listops``. A generated dataset's ``seed``
            defaults to the run's seed; its ``num_examples`` is the app's (streamed training rows, ``eval_windows``
            held-out rows).
        progress: show a progress bar.
        overwrite: allow ``output`` to hold an earlier checkpoint, which the new run replaces.
        resume: continue the run saved in ``output/.resume`` (written at every evaluation) exactly where it stopped:
            same remaining batches, schedule and optimiser state. The model and training settings must be the
            saved run's.

    Returns:
        The summary dict (also written to ``summary.json``): best validation loss (nats per token for language
        models; nats per sequence or per answer position for tasks, with ``best_val_accuracy`` and the final
        evaluation's ``final_val_loss`` / ``final_val_accuracy``), steps, wall time, training ms per step
        (evaluations excluded), parameter counts.

    Raises:
        KeyError: unknown model or dataset. FileNotFoundError: data not found. ValueError: bad config, a corpus
        shorter than one window, a model whose head does not fit the task (or a language model on a task, a task
        model on text), ``data_options`` for a text corpus, ``output`` is a file, it holds a checkpoint and
        ``overwrite`` is false, or the loss became NaN or infinite (the folder then keeps the last good
        checkpoint), or ``resume`` with other settings than the saved run's. FileNotFoundError: ``resume`` without
        a saved state.
    """
    cfg = train_config or TrainConfig()
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise ValueError(f"train: 'output' {output} exists and is not a folder")
    if resume and overwrite:
        raise ValueError("train: 'resume' and 'overwrite' exclude each other: --resume continues the run saved in "
                         f"{output}, --overwrite replaces it with a new run; give one")
    if (output / "config.json").exists() and not (overwrite or resume):
        raise ValueError(f"train: 'output' {output} already holds a checkpoint; choose another folder or pass "
                         "--overwrite to replace it")
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    try:
        return _train(model_name, dataset, output, dict(model_overrides or {}), cfg, data_path, corpus,
                      data_options, progress, resume)
    finally:
        torch.set_float32_matmul_precision(precision)


def _train(model_name, dataset, output, overrides, cfg, data_path, corpus, options, progress, resume) -> dict:
    accelerator = Accelerator()
    set_seed(cfg.seed)
    spec = task_spec(dataset)
    if spec is None:
        if options:
            raise ValueError(f"train: dataset {dataset!r} is a text corpus; data options ({', '.join(options)}) "
                             "apply to task datasets only (use --data-path for its location)")
        run = _LanguageRun(model_name, dataset, overrides, cfg, data_path, corpus)
    else:
        run = _TaskRun(model_name, spec, overrides, cfg, data_path, options)
    model = run.model
    counts = model.num_parameters()
    optimizer = torch.optim.AdamW(_parameters(model, cfg), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                                  weight_decay=cfg.weight_decay)
    for group in optimizer.param_groups:
        group["base_lr"] = group["lr"]  # the schedule scales each group's own peak rate
    model, optimizer = accelerator.prepare(model, optimizer)
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + accelerator.process_index)
    settings = {"model": model_name, "dataset": dataset, "model_config": accelerator.unwrap_model(model).config_dict(),
                "train_config": dataclasses.asdict(cfg)}
    if spec is not None:
        settings["data_options"] = run.sidecars["training.json"]["data_options"]
    best, best_step, history, step, eval_time, elapsed = float("inf"), 0, [], 0, 0.0, 0.0
    if resume:
        saved = load_resume(output, accelerator.process_index)
        diffs = settings_differences({k: saved.loop.get(k) for k in settings}, settings)
        if diffs:
            raise ValueError(f"train: cannot resume {output}: the settings differ from the saved run's "
                             f"({'; '.join(diffs)}); resume with the saved settings, or start a new run in "
                             "another --output")
        accelerator.unwrap_model(model).load_state_dict(saved.model_state)
        optimizer.load_state_dict(saved.optimizer_state)
        gen.set_state(saved.generator_state)
        best, best_step, history = saved.loop["best"], saved.loop["best_step"], saved.loop["history"]
        step, eval_time, elapsed = saved.loop["step"], saved.loop["eval_time"], saved.loop["elapsed"]
    next_batch = run.batches(step, accelerator.process_index, accelerator.num_processes)
    start = time.perf_counter() - elapsed
    time_fraction = 0.0
    bar = tqdm(total=cfg.steps, initial=step, disable=not (progress and accelerator.is_local_main_process),
               desc="train")
    train_loss = float("nan")
    while step < cfg.steps and time_fraction < 1.0:
        factor = lr_factor(cfg, step, time_fraction)
        lr = cfg.lr * factor
        for group in optimizer.param_groups:
            group["lr"] = group["base_lr"] * factor
        x, y = next_batch(gen)
        y = y.to(accelerator.device)
        out = model(x.to(accelerator.device), y)
        loss = out.loss
        accelerator.backward(loss)
        if cfg.grad_clip > 0:
            accelerator.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        train_loss = float(accelerator.reduce(loss.detach(), "mean"))
        _require_finite("training", train_loss, step)
        bar.update(1)
        if cfg.max_minutes > 0:
            used = torch.tensor((time.perf_counter() - start) / (60 * cfg.max_minutes), device=accelerator.device)
            time_fraction = float(accelerator.reduce(used, "max"))  # every process stops at the same step
        if step % cfg.eval_every == 0 or step == cfg.steps or time_fraction >= 1.0:
            t0 = time.perf_counter()
            metrics = run.evaluate(model, accelerator)
            eval_time += time.perf_counter() - t0
            val = metrics["val_loss"]
            _require_finite("held-out", val, step)
            record = {"step": step, "train_loss": train_loss, **run.train_metrics(out, y), **metrics, "lr": lr,
                      "elapsed_s": round(time.perf_counter() - start, 2)}
            history.append(record)
            bar.set_postfix(train=f"{train_loss:.3f}", val=f"{val:.3f}")
            improved = val < best
            if improved:
                best, best_step = val, step
            if accelerator.is_main_process:
                # The checkpoint first, then the whole log in one atomic write: an interrupted run leaves the
                # folder's earlier files as they were until it has a checkpoint of its own.
                if improved:
                    save(accelerator.unwrap_model(model), output, sidecars={**run.sidecars, "metrics.json": record})
                    if len(history) == 1:  # an overwritten run's summary no longer describes the folder
                        (output / "summary.json").unlink(missing_ok=True)
                atomic_write(output / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in history))
            loop = {**settings, "step": step, "best": best, "best_step": best_step, "history": history,
                    "eval_time": eval_time, "elapsed": time.perf_counter() - start}
            save_resume(output, model=accelerator.unwrap_model(model), optimizer=optimizer.optimizer
                        if hasattr(optimizer, "optimizer") else optimizer, generator=gen,
                        rank=accelerator.process_index, loop=loop, is_main=accelerator.is_main_process)
    bar.close()
    wall = time.perf_counter() - start
    summary = {"model": model_name, "dataset": dataset, "best_val_loss": best, "best_step": best_step,
               "steps": step, "wall_s": round(wall, 1),
               "train_ms_per_step": round(1000 * (wall - eval_time) / max(step, 1), 2),
               "parameters": counts, "device": str(accelerator.device), "processes": accelerator.num_processes,
               **run.summary(best, history)}
    if accelerator.device.type == "cuda":
        summary["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated(accelerator.device) / 2**30, 2)
    if accelerator.is_main_process:
        atomic_write(output / "summary.json", json.dumps(summary, indent=2) + "\n")
    accelerator.wait_for_everyone()
    return summary
