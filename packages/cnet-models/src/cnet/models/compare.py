"""Two models under one training protocol, and how many steps each needs to reach a list of validation losses.

This is the measurement of the "quantum shortcut" paper (section 6): a complex model and its parameter-matched
real twin trained with the same data order, batch, schedule and seed; for each target loss the ratio of the
steps each needed (a ratio below 1 means model A got there sooner). ``cnet compare`` runs it::

    cnet compare h-mamba mamba --dataset pg19 --output runs/cmp --steps 4000 --set context=1024

and writes ``compare.json`` (the protocol, both curves, parameter counts, the ratios) and ``compare.png``
(both validation curves against the step) into the output folder, with each model's checkpoint folder in
``a/`` and ``b/``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cnet.core.checkpoint import atomic_write
from cnet.models.corpus import load_corpus
from cnet.models.train import TrainConfig, build_language_model, train

__all__ = ["compare", "steps_to_target", "default_targets", "format_table"]


def steps_to_target(curve: list[tuple[int, float]], target: float) -> int | None:
    """The first step whose validation loss is at or below ``target`` (``None`` when never reached)."""
    return next((step for step, loss in curve if loss <= target), None)


def default_targets(curve_a: list[tuple[int, float]], curve_b: list[tuple[int, float]], count: int = 3) -> list[float]:
    """``count`` targets evenly spread between the first evaluation's loss and the loss both models reached."""
    start = min(curve_a[0][1], curve_b[0][1])
    both = max(min(v for _, v in curve_a), min(v for _, v in curve_b))
    if both >= start:
        return [both]
    step = (start - both) / count
    return [start - step * (i + 1) for i in range(count)]


def _curve(folder: Path) -> list[tuple[int, float]]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [(r["step"], r["val_loss"]) for r in map(json.loads, lines)]


def _plot(path: Path, names: tuple[str, str], curves, unit: str, targets: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for name, curve in zip(names, curves, strict=True):
        ax.plot([s for s, _ in curve], [v for _, v in curve], marker="o", markersize=2.5, label=name)
    for t in targets:
        ax.axhline(t, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel(f"validation loss ({unit})")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def compare(model_a: str, model_b: str, dataset: str, output: str | Path, *, train_config: TrainConfig,
            overrides: dict | None = None, overrides_a: dict | None = None, overrides_b: dict | None = None,
            targets: list[float] | None = None, data_path: str | None = None, progress: bool = True,
            overwrite: bool = False) -> dict:
    """Train ``model_a`` and ``model_b`` under one protocol and compare their steps to each target loss.

    Both runs share the loaded corpus, the :class:`TrainConfig` (so data order, batch, schedule and seed), and
    ``overrides``; ``overrides_a`` / ``overrides_b`` apply to one model only (e.g. a width).

    Args:
        model_a, model_b: registered model names.
        dataset: registered dataset with train and validation splits (text or bytes).
        output: folder receiving ``a/``, ``b/``, ``compare.json`` and ``compare.png``.
        train_config: the shared protocol.
        targets: validation losses (nats per token); default :func:`default_targets`.
        data_path, progress, overwrite: as :func:`cnet.models.train.train`.

    Returns:
        The record written to ``compare.json``; ``targets`` holds, per target, ``steps_a``, ``steps_b`` (``None``
        when not reached) and ``ratio`` = ``steps_a / steps_b`` (``None`` unless both reached it).

    Raises:
        As :func:`cnet.models.train.train`; ValueError for an empty ``targets`` list.
    """
    if targets is not None and not targets:
        raise ValueError("compare: 'targets' is empty; give at least one loss or leave it unset")
    output = Path(output)
    corpus = load_corpus(dataset, path=data_path)
    # Check both set-ups before spending any training time on the first.
    counts = []
    for tag, name, own in (("a", model_a, overrides_a), ("b", model_b, overrides_b)):
        if (output / tag / "config.json").exists() and not overwrite:
            raise ValueError(f"compare: {output / tag} already holds a checkpoint; choose another --output or pass "
                             "--overwrite")
        model = build_language_model(name, {**(overrides or {}), **(own or {}), "vocab_size": len(corpus.vocab)})
        counts.append(model.num_parameters()["real_scalars"])
        del model
    gap = abs(counts[0] - counts[1]) / max(counts)
    summaries, curves = [], []
    for tag, name, own in (("a", model_a, overrides_a), ("b", model_b, overrides_b)):
        summaries.append(train(name, dataset, output / tag, model_overrides={**(overrides or {}), **(own or {})},
                               train_config=train_config, corpus=corpus, progress=progress, overwrite=overwrite))
        curves.append(_curve(output / tag))
    targets = list(targets) if targets is not None else default_targets(*curves)
    rows = []
    for t in targets:
        sa, sb = steps_to_target(curves[0], t), steps_to_target(curves[1], t)
        rows.append({"target": t, "steps_a": sa, "steps_b": sb,
                     "ratio": sa / sb if sa is not None and sb is not None else None})
    unit = summaries[0]["unit"]
    record = {"model_a": model_a, "model_b": model_b, "dataset": dataset, "unit": unit,
              "protocol": dataclasses.asdict(train_config), "overrides": overrides or {},
              "overrides_a": overrides_a or {}, "overrides_b": overrides_b or {},
              "parameters": {"a": summaries[0]["parameters"], "b": summaries[1]["parameters"]},
              "parameter_gap": gap,
              "best_val_loss": {"a": summaries[0]["best_val_loss"], "b": summaries[1]["best_val_loss"]},
              "curves": {"a": curves[0], "b": curves[1]}, "targets": rows}
    atomic_write(output / "compare.json", json.dumps(record, indent=2) + "\n")
    _plot(output / "compare.png", (model_a, model_b), curves, unit, targets)
    return record


def format_table(record: dict) -> str:
    """A plain-text table of a :func:`compare` record's targets (``not reached`` where a model never got there)."""
    a, b = record["model_a"], record["model_b"]
    lines = []
    if record["parameter_gap"] > 0.01:
        lines.append(f"warning: the two models' parameter counts differ by {100 * record['parameter_gap']:.1f}%; "
                     "match them (cnet.models.match, or --set-a / --set-b widths) for a like-for-like comparison")
    lines.append(f"{'target':>8}  {'A: ' + a:>16}  {'B: ' + b:>16}  {'ratio A/B':>9}")
    for r in record["targets"]:
        fmt = [str(r[k]) if r[k] is not None else "not reached" for k in ("steps_a", "steps_b")]
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        lines.append(f"{r['target']:>8.4f}  {fmt[0]:>16}  {fmt[1]:>16}  {ratio:>9}")
    return "\n".join(lines)
