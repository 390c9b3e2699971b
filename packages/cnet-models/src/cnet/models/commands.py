"""The ``cnet train``, ``cnet generate`` and ``cnet eval`` commands (registered by cnet-models' plugin)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import torch

__all__ = ["configure_train", "run_train", "configure_generate", "run_generate", "configure_eval", "run_eval",
           "parse_sets", "split_overrides"]


def parse_sets(pairs: list[str], flag: str = "--set") -> dict:
    """Parse ``key=value`` strings; values are read as JSON when they parse (``3``, ``1e-3``, ``true``), else text.

    Raises:
        ValueError: an item without ``=`` (the message names ``flag``).
    """
    out = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} expects key=value, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def configure_train(p) -> None:
    """Arguments of ``cnet train``."""
    p.add_argument("model", help="registered model name, e.g. born-lm (see `cnet plugins`)")
    p.add_argument("--dataset", required=True, help="registered dataset name, e.g. tiny_shakespeare")
    p.add_argument("--output", required=True, help="folder for the best checkpoint, metrics.jsonl and summary.json")
    p.add_argument("--steps", type=int, help="optimiser steps (default 2000)")
    p.add_argument("--data-path", help="explicit data file (first source; then $CNET_DATA_DIR, then the Hub)")
    p.add_argument("--data-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a loader option of a task dataset, e.g. delay=1000 (copy_memory) or max_depth=6 (listops); "
                        "repeatable")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model config field (e.g. embed_dim=64) or a training field (e.g. lr=2e-3); repeatable")
    p.add_argument("--overwrite", action="store_true", help="replace a checkpoint already in --output")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved in --output exactly where it stopped (same settings)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def split_overrides(model: str, sets: dict):
    """Split ``--set`` values into ``(model fields, training fields)`` for registered ``model``, coercing each to
    its field's type. Raises ``ValueError`` for a key that is neither (naming both field lists)."""
    from cnet.core.plugins import registries
    from cnet.models.config import coerce_fields
    from cnet.models.train import TrainConfig

    model_fields = {f.name for f in dataclasses.fields(registries().models.get(model)["config"])}
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(sets) - model_fields - train_fields)
    if unknown:
        raise ValueError(f"--set {', '.join(unknown)}: not a field of {model!r} ({', '.join(sorted(model_fields))}) "
                         f"nor of training ({', '.join(sorted(train_fields))})")
    model_over = {k: v for k, v in sets.items() if k in model_fields and k not in train_fields}
    train_over = coerce_fields(TrainConfig, {k: v for k, v in sets.items() if k in train_fields}, "training")
    return model_over, train_over


def run_train(args) -> int:
    """Run ``cnet train``; the main process prints the summary as JSON."""
    from accelerate import PartialState

    from cnet.models.train import TrainConfig, train

    model_over, train_over = split_overrides(args.model, parse_sets(args.set))
    if args.steps is not None:
        if train_over.get("steps", args.steps) != args.steps:
            raise ValueError(f"--steps {args.steps} and --set steps={train_over['steps']} disagree; give one")
        train_over["steps"] = args.steps
    summary = train(args.model, args.dataset, args.output, model_overrides=model_over,
                    train_config=TrainConfig(**train_over), data_path=args.data_path,
                    data_options=parse_sets(args.data_option, "--data-option"), progress=not args.quiet,
                    overwrite=args.overwrite, resume=args.resume)
    if PartialState().is_main_process:
        print(json.dumps(summary, indent=2))
    return 0


def _load_with_vocab(folder: str):
    from cnet.core.checkpoint import read_sidecar
    from cnet.data import vocab_from_json
    from cnet.models.base import LanguageModel
    from cnet.models.registry import load

    model = load(folder)
    problem = model.next_token_problem() if isinstance(model, LanguageModel) else "it is not a language model"
    if problem:
        raise ValueError(f"{folder} is not a causal next-token model: {problem}")
    try:
        vocab = vocab_from_json(read_sidecar(folder, "vocab.json"))
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"corrupt checkpoint {folder}: vocab.json: {exc}") from None
    if len(vocab) != model.config.vocab_size:
        raise ValueError(f"corrupt checkpoint {folder}: vocab.json has {len(vocab)} symbols, the model "
                         f"{model.config.vocab_size}")
    return model, vocab


def configure_generate(p) -> None:
    """Arguments of ``cnet generate``."""
    p.add_argument("--model", required=True, help="checkpoint folder written by `cnet train`")
    p.add_argument("--prompt", required=True, help="text to continue (characters must be in the vocabulary)")
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)


def run_generate(args) -> int:
    """Run ``cnet generate``: prints the prompt followed by the sampled continuation."""
    model, vocab = _load_with_vocab(args.model)
    if not args.prompt:
        raise ValueError("--prompt must not be empty")
    ids = torch.tensor([vocab.encode(args.prompt)], dtype=torch.int64)
    gen = torch.Generator().manual_seed(args.seed)
    out = model.generate(ids, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k, generator=gen)
    print(vocab.decode(out[0].tolist()))
    return 0


def configure_eval(p) -> None:
    """Arguments of ``cnet eval``."""
    p.add_argument("--model", required=True, help="checkpoint folder written by `cnet train`")
    p.add_argument("--dataset", required=True, help="registered dataset name")
    p.add_argument("--split", default=None, help="default: validation (a task's held-out split for tasks)")
    p.add_argument("--data-path", help="explicit data file")
    p.add_argument("--data-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a loader option of a task dataset (default: the options the model was trained with)")
    p.add_argument("--num-examples", type=int, default=2048,
                   help="rows scored from a generated task dataset (PCT paper: 2,048); file splits are scored whole")
    p.add_argument("--batch-size", type=int, default=64)


def run_eval(args) -> int:
    """Run ``cnet eval``: nats and bits per character (or per byte) over the whole split, each scored once; for a
    task dataset, nats per sequence (or per answer position) and accuracy."""
    from cnet.data import ByteVocab, load
    from cnet.models.corpus import encode_split, split_text
    from cnet.models.task_eval import evaluate_task
    from cnet.models.tasks import task_spec
    from cnet.models.train import score_stream

    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {args.batch_size}")
    spec = task_spec(args.dataset)
    if spec is not None:
        res = evaluate_task(args.model, spec, split=args.split, data_path=args.data_path,
                            options=parse_sets(args.data_option, "--data-option"), num_examples=args.num_examples,
                            batch=args.batch_size)
        print(json.dumps(res, indent=2))
        return 0
    args.split = args.split or "validation"
    model, vocab = _load_with_vocab(args.model)
    options = {"path": args.data_path} if args.data_path else {}
    stream = encode_split(vocab, split_text(load(args.dataset, args.split, **options), args.dataset, args.split))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    res = score_stream(model.to(device), stream, batch=args.batch_size, device=device)
    unit = "byte" if isinstance(vocab, ByteVocab) else "char"
    res = {"model": str(Path(args.model)), "dataset": args.dataset, "split": args.split,
           f"nats_per_{unit}": res["nats_per_token"], f"bits_per_{unit}": res["nats_per_token"] / math.log(2),
           f"{unit}s_scored": res["tokens"]}
    print(json.dumps(res, indent=2))
    return 0
