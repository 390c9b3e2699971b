"""Two models under one training protocol, and how many steps each needs to reach a list of validation losses.

This is the measurement of the "quantum shortcut" paper (abstract, section 1): a complex model and its
parameter-matched real twin trained with the same data order, batch, schedule and seed; for each target loss the
ratio of the steps each needed (a ratio below 1 means model A got there sooner; the paper reports about 1/3 for
H-Mamba against Mamba and 1/2 for H-Transformer against the Transformer). ``cnet compare`` runs it::

    cnet compare h-mamba mamba --dataset pg19 --data-path $CNET_DATA_DIR/pg19-mini --output runs/ssm \\
        --steps 2000 --match --set context=1024 --set batch_size=8

and writes into the output folder ``compare.json`` (the protocol, both curves, parameter counts, the targets and
ratios), ``compare.png`` (both validation curves against the step, the targets as dotted lines) and each model's
checkpoint folder in ``a/`` and ``b/`` (``metrics.jsonl``: one JSON line per evaluation; ``summary.json``).

Targets: given in nats per token (``--targets``), or, by default, read off model B's curve (put the baseline
second) at fixed fractions of the run (``--target-fractions``, default 0.25, 0.5, 1): the best validation loss B
had reached by the first evaluation at or after each fraction of its steps. B then needs about that fraction of
the run by construction, and the ratio says how much sooner (or later) A gets there; no loss scale has to be
known in advance. Steps to a target are read at evaluation resolution (``steps_*``: the first evaluation at or
below it) and linearly interpolated between the two evaluations around the crossing (``crossing_*``); ``ratio`` is
``crossing_a / crossing_b``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from cnet.core.checkpoint import atomic_write
from cnet.models.shortcut.match import TOLERANCE as MATCH_TOLERANCE

if TYPE_CHECKING:
    from cnet.models.train import TrainConfig

__all__ = ["compare", "steps_to_target", "crossing_step", "fraction_targets", "target_rows", "format_table",
           "configure_compare", "run_compare", "record_warnings", "DEFAULT_FRACTIONS", "MATCH_TOLERANCE"]

DEFAULT_FRACTIONS = (0.25, 0.5, 1.0)


def steps_to_target(curve: list[tuple[int, float]], target: float) -> int | None:
    """The first evaluated step whose validation loss is at or below ``target`` (``None`` when never reached).

    ``curve``: ``[(step, loss), ...]`` in increasing step order (a ``metrics.jsonl``'s ``step`` and ``val_loss``).
    """
    return next((step for step, loss in curve if loss <= target), None)


def crossing_step(curve: list[tuple[int, float]], target: float) -> float | None:
    """The step at which the validation curve first reaches ``target``, linearly interpolated.

    Between the last evaluation above ``target`` and the first at or below it, the loss is taken as linear in
    the step. When the first evaluation is already at or below ``target`` there is no earlier point, and its step
    is returned (an upper bound). ``None`` when the curve never reaches ``target``.
    """
    for i, (step, loss) in enumerate(curve):
        if loss <= target:
            if i == 0:
                return float(step)
            s0, l0 = curve[i - 1]
            return s0 + (step - s0) * (l0 - target) / (l0 - loss)
    return None


def _check_fractions(fractions) -> list[float]:
    fractions = list(fractions)
    bad = [f for f in fractions if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1]
    if not fractions or bad:
        raise ValueError(f"compare: 'target_fractions' must be numbers in (0, 1] (fractions of the run), got "
                         f"{fractions!r}")
    return [float(f) for f in fractions]


def fraction_targets(curve: list[tuple[int, float]], fractions=DEFAULT_FRACTIONS) -> list[float]:
    """Targets read off a (baseline's) validation curve at fixed fractions of its run.

    For each fraction ``f``: the lowest validation loss of ``curve`` up to its first evaluation at a step
    ``>= f * last step`` (so the curve's own model reaches the target by about ``f`` of its run).

    Args:
        curve: ``[(step, loss), ...]``, increasing steps, losses in nats per token; not empty.
        fractions: numbers in ``(0, 1]``.

    Returns:
        One loss (nats per token) per fraction, in the order given.

    Raises:
        ValueError: an empty curve, or a fraction outside ``(0, 1]``.
    """
    fractions = _check_fractions(fractions)
    if not curve:
        raise ValueError("compare: cannot read targets off an empty validation curve")
    last = curve[-1][0]
    out = []
    for f in fractions:
        upto = next(i for i, (step, _) in enumerate(curve) if step >= f * last)
        out.append(min(loss for _, loss in curve[:upto + 1]))
    return out


def _check_targets(targets) -> list[float]:
    targets = list(targets)
    bad = [t for t in targets if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < math.inf]
    if not targets or bad:
        raise ValueError(f"compare: 'targets' must be finite validation losses >= 0 in nats per token, got "
                         f"{targets!r}")
    return [float(t) for t in targets]


def target_rows(curve_a: list[tuple[int, float]], curve_b: list[tuple[int, float]], targets) -> list[dict]:
    """Steps of two curves to each target: the ``targets`` rows of a :func:`compare` record.

    Returns one dict per target: ``target`` (nats per token), ``target_bits`` (bits per token), ``steps_a`` /
    ``steps_b`` (first evaluation at or below, :func:`steps_to_target`), ``crossing_a`` / ``crossing_b``
    (interpolated, :func:`crossing_step`) and ``ratio = crossing_a / crossing_b`` (``None`` unless both curves
    reach the target).

    Raises:
        ValueError: a target that is not a finite number >= 0, or no targets.
    """
    rows = []
    for t in _check_targets(targets):
        ca, cb = crossing_step(curve_a, t), crossing_step(curve_b, t)
        rows.append({"target": t, "target_bits": t / math.log(2),
                     "steps_a": steps_to_target(curve_a, t), "steps_b": steps_to_target(curve_b, t),
                     "crossing_a": ca, "crossing_b": cb,
                     "ratio": ca / cb if ca is not None and cb is not None else None})
    return rows


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


def _matched_overrides(model_a, model_b, own_b: dict, tolerance: float) -> dict:
    """``own_b`` plus the ``ffn_dim`` that matches B's parameter count to A's (quantum-shortcut pairs)."""
    from cnet.models.shortcut import match

    if "ffn_dim" in own_b:
        raise ValueError("compare: --match sets model B's ffn_dim; do not also give it (--set-b ffn_dim=...)")
    try:
        matched = match(model_a.config, model_b.config, tolerance=tolerance)
    except ValueError as exc:
        text = str(exc)
        if text.endswith("or the tolerance"):  # name the option that sets it here
            text += f" (--match-tolerance, now {tolerance:g})"
        raise ValueError(f"compare: --match: {text}") from None
    if type(matched) is not type(model_b.config):
        raise ValueError("compare: --match widens the real twin, which must be model B (e.g. h-mamba mamba)")
    return {**own_b, "ffn_dim": matched.ffn_dim}


def compare(model_a: str, model_b: str, dataset: str, output: str | Path, *, train_config: TrainConfig,
            overrides: dict | None = None, overrides_a: dict | None = None, overrides_b: dict | None = None,
            targets: list[float] | None = None, target_fractions=DEFAULT_FRACTIONS, match: bool = False,
            match_tolerance: float = MATCH_TOLERANCE, data_path: str | None = None, progress: bool = True,
            overwrite: bool = False) -> dict:
    """Train ``model_a`` and ``model_b`` under one protocol and compare their steps to each target loss.

    Both runs share the loaded corpus, the :class:`TrainConfig` (so data order, batch, schedule and seed), and
    ``overrides``; ``overrides_a`` / ``overrides_b`` apply to one model only (e.g. a width). Everything that can
    be checked (both configs, the parameter match, the corpus against both contexts, the targets, the output
    folder) is checked before any training starts.

    Args:
        model_a, model_b: registered model names; put the baseline (the real twin) second.
        dataset: registered dataset with train and validation splits (text or bytes).
        output: folder receiving ``a/``, ``b/``, ``compare.json`` and ``compare.png``.
        train_config: the shared protocol.
        targets: validation losses in nats per token; ``None``: :func:`fraction_targets` of B's curve.
        target_fractions: fractions of the run for the default targets (numbers in ``(0, 1]``).
        match: set B's ``ffn_dim`` so its parameter count matches A's within 0.02%
            (:func:`cnet.models.shortcut.match`; the pairs h-mamba/mamba and h-transformer/transformer).
        match_tolerance: the largest relative parameter gap ``match`` accepts, in ``(0, 1)`` (default 0.0002,
            i.e. 0.02%; ``--match-tolerance``); small models may need a larger one.
        data_path, progress: as :func:`cnet.models.train.train`.
        overwrite: allow ``output`` to hold an earlier comparison, which is replaced: once every check has passed
            and before training starts, its ``compare.json`` and ``compare.png`` are removed (they describe the
            earlier checkpoints), and ``a/`` and ``b/`` are retrained.

    Returns:
        The record written to ``compare.json``: ``model_a``, ``model_b``, ``dataset``, ``unit``, ``protocol``, the
        overrides, ``parameters`` (per model: ``real_scalars``, ``complex_parameters``, ``complex_share``),
        ``parameter_gap`` (``|n_a - n_b| / max``), ``best_val_loss``, ``train_ms_per_step``, ``wall_s``, ``curves``
        (``[[step, val_loss], ...]`` per model), ``steps_run`` (the steps each model took: fewer than
        ``protocol.steps`` when the time cap ``max_minutes`` stopped it), ``warnings`` (the lines
        :func:`format_table` prints: a parameter gap over 1%, runs stopped at different steps), ``target_rule``
        and ``targets`` (rows of :func:`target_rows`).

    Raises:
        As :func:`cnet.models.train.train`; ValueError for targets that are not finite losses >= 0, an empty list,
        fractions outside ``(0, 1]``, a pair ``match`` cannot match, a ``match_tolerance`` outside ``(0, 1)``, a
        task dataset (compare trains next-token language models only), an ``output`` holding an earlier
        comparison without ``overwrite``, or a split shorter than one window.
    """
    from cnet.models.corpus import check_window, load_corpus
    from cnet.models.tasks import task_spec
    from cnet.models.train import build_language_model, train

    if task_spec(dataset) is not None:
        raise ValueError(f"compare: dataset {dataset!r} is a task dataset; compare takes causal next-token language "
                         "models on text or byte datasets only (e.g. tiny_shakespeare, pg19, text_bytes); train task "
                         "models with `cnet train`")
    if isinstance(match_tolerance, bool) or not isinstance(match_tolerance, (int, float)) \
            or not 0 < match_tolerance < 1:
        raise ValueError(f"compare: 'match_tolerance' (--match-tolerance) must be a number in (0, 1), got "
                         f"{match_tolerance!r}")
    if targets is not None:
        targets = _check_targets(targets)
    target_fractions = _check_fractions(target_fractions)
    output = Path(output)
    overrides_a, overrides_b = dict(overrides_a or {}), dict(overrides_b or {})
    corpus = load_corpus(dataset, path=data_path)
    # Check both set-ups before spending any training time on the first.
    for tag in ("a", "b"):
        if (output / tag / "config.json").exists() and not overwrite:
            raise ValueError(f"compare: {output / tag} already holds a checkpoint; choose another --output or pass "
                             "--overwrite")
    if (output / "compare.json").exists() and not overwrite:
        raise ValueError(f"compare: {output} already holds a comparison (compare.json); choose another --output or "
                         "pass --overwrite")
    built = [build_language_model(name, {**(overrides or {}), **own, "vocab_size": len(corpus.vocab)})
             for name, own in ((model_a, overrides_a), (model_b, overrides_b))]
    if match:
        overrides_b = _matched_overrides(*built, overrides_b, match_tolerance)
        built[1] = build_language_model(model_b, {**(overrides or {}), **overrides_b, "vocab_size": len(corpus.vocab)})
    counts = [m.num_parameters()["real_scalars"] for m in built]
    for name, m in zip((model_a, model_b), built, strict=True):
        for split, stream in (("train", corpus.train), ("validation", corpus.validation)):
            check_window(stream, m.config.context, dataset=dataset, split=split, model=name, where="compare")
    del built
    # Every check passed: the record and plot of an earlier comparison (--overwrite) would describe checkpoints
    # about to be replaced, and an interrupted run must not leave them beside the new ones.
    for stale in ("compare.json", "compare.png"):
        (output / stale).unlink(missing_ok=True)
    gap = abs(counts[0] - counts[1]) / max(counts)
    summaries, curves = [], []
    for tag, name, own in (("a", model_a, overrides_a), ("b", model_b, overrides_b)):
        summaries.append(train(name, dataset, output / tag, model_overrides={**(overrides or {}), **own},
                               train_config=train_config, corpus=corpus, progress=progress, overwrite=overwrite))
        curves.append(_curve(output / tag))
    if targets is None:
        targets = fraction_targets(curves[1], target_fractions)
        rule = f"best validation loss of {model_b} by fractions {tuple(target_fractions)} of its run"
    else:
        rule = "given"
    unit = summaries[0]["unit"]
    pair = {"a": summaries[0], "b": summaries[1]}
    record = {"model_a": model_a, "model_b": model_b, "dataset": dataset, "unit": unit,
              "protocol": dataclasses.asdict(train_config), "overrides": overrides or {},
              "overrides_a": overrides_a, "overrides_b": overrides_b,
              "parameters": {k: s["parameters"] for k, s in pair.items()}, "parameter_gap": gap,
              "best_val_loss": {k: s["best_val_loss"] for k, s in pair.items()},
              "train_ms_per_step": {k: s["train_ms_per_step"] for k, s in pair.items()},
              "wall_s": {k: s["wall_s"] for k, s in pair.items()},
              "curves": {"a": curves[0], "b": curves[1]},
              "steps_run": {k: s["steps"] for k, s in pair.items()}, "target_rule": rule,
              "targets": target_rows(curves[0], curves[1], targets)}
    record["warnings"] = record_warnings(record)
    atomic_write(output / "compare.json", json.dumps(record, indent=2) + "\n")
    _plot(output / "compare.png", (model_a, model_b), curves, unit, targets)
    return record


def record_warnings(record: dict) -> list[str]:
    """Why a :func:`compare` record may not be like for like: a parameter gap over 1%, or the two runs stopped at
    different steps (the time cap ``max_minutes`` cut one short), each a ``warning: ...`` line."""
    out = []
    if record["parameter_gap"] > 0.01:
        out.append(f"warning: the two models' parameter counts differ by {100 * record['parameter_gap']:.1f}%; "
                   "match them (--match, or --set-a / --set-b widths) for a like-for-like comparison")
    ran = record.get("steps_run")
    if ran and ran["a"] != ran["b"]:
        out.append(f"warning: the protocols diverged: A ({record['model_a']}) ran {ran['a']} steps, B "
                   f"({record['model_b']}) ran {ran['b']} (the time cap max_minutes stopped them at different steps; "
                   "protocol steps {}); targets and ratios compare runs of unequal length".format(
                       record["protocol"]["steps"]))
    return out


def format_table(record: dict) -> str:
    """A plain-text table of a :func:`compare` record's targets (``not reached`` where a model never got there).

    Columns: target in the record's unit and in bits, each model's interpolated step to it (the evaluated step in
    brackets) and the ratio A/B.
    """
    a, b = record["model_a"], record["model_b"]
    lines = list(record_warnings(record))
    lines.append(f"targets: {record['target_rule']}")
    unit = record["unit"].split("/")[0]
    lines.append(f"{'target ' + unit:>12}  {'bits':>6}  {'A: ' + a:>20}  {'B: ' + b:>20}  {'ratio A/B':>9}")
    for r in record["targets"]:
        cells = [f"{r['crossing' + k]:.0f} ({r['steps' + k]})" if r["steps" + k] is not None else "not reached"
                 for k in ("_a", "_b")]
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        lines.append(f"{r['target']:>12.4f}  {r['target_bits']:>6.3f}  {cells[0]:>20}  {cells[1]:>20}  {ratio:>9}")
    return "\n".join(lines)


def _numbers(option: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} expects comma-separated numbers, got {text!r}") from None


def configure_compare(p) -> None:
    """Arguments of ``cnet compare``."""
    p.description = (
        "Train two models under one protocol (same data order, batch, schedule, seed) and report the optimiser "
        "steps each needs to reach target validation losses (quantum-shortcut paper: about 1/3 for h-mamba vs "
        "mamba, 1/2 for h-transformer vs transformer). Writes OUTPUT/compare.json, OUTPUT/compare.png and the "
        "checkpoints OUTPUT/a, OUTPUT/b.")
    p.add_argument("model_a", help="first registered model, e.g. h-mamba")
    p.add_argument("model_b", help="second registered model, the baseline, e.g. its real twin mamba")
    p.add_argument("--dataset", required=True, help="registered dataset name, e.g. pg19")
    p.add_argument("--output", required=True, help="folder for a/, b/, compare.json and compare.png")
    p.add_argument("--steps", type=int, help="optimiser steps of each run")
    p.add_argument("--data-path", help="explicit data location (pg19, text_bytes: a folder with train/ and "
                                       "validation/ sub-folders)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a training field, or a model field given to both models; repeatable")
    p.add_argument("--set-a", action="append", default=[], metavar="KEY=VALUE", help="a model field of A only")
    p.add_argument("--set-b", action="append", default=[], metavar="KEY=VALUE", help="a model field of B only")
    p.add_argument("--match", action="store_true",
                   help="set B's ffn_dim so its parameter count matches A's within 0.02%% (h-mamba mamba, "
                        "h-transformer transformer)")
    p.add_argument("--match-tolerance", type=float, default=None, metavar="FRACTION",
                   help="with --match: the largest relative parameter gap accepted, in (0, 1) (default 0.0002, "
                        "i.e. 0.02%%); small models whose one unit of ffn_dim is a coarser step need a larger one")
    p.add_argument("--targets", help="comma-separated validation losses in nats per token (the loss unit of "
                                     "metrics.jsonl); default: read off B's curve, see --target-fractions")
    p.add_argument("--target-fractions", default=",".join(str(f) for f in DEFAULT_FRACTIONS),
                   help="without --targets: the targets are B's best validation loss by these fractions of its "
                        "run (comma-separated, in (0, 1]; default %(default)s), so no loss scale has to be known; "
                        "B reaches each by about that fraction of the run and the ratio says how much sooner A does")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier comparison in the output (its compare.json and compare.png are removed "
                        "once the arguments have been checked, then a/ and b/ are retrained)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run_compare(args) -> int:
    """Run ``cnet compare``: prints the parameter counts and the steps-to-target table; the record is in
    ``OUTPUT/compare.json``. Raises ``ValueError`` for bad arguments (the CLI prints it and exits with 2)."""
    from cnet.models.commands import parse_sets, split_overrides
    from cnet.models.train import TrainConfig

    shared_a, train_over = split_overrides(args.model_a, parse_sets(args.set))
    shared_b, _ = split_overrides(args.model_b, parse_sets(args.set))
    if shared_a != shared_b:
        raise ValueError("--set model fields must exist in both models; use --set-a / --set-b for one model")
    own_a, extra_a = split_overrides(args.model_a, parse_sets(args.set_a))
    own_b, extra_b = split_overrides(args.model_b, parse_sets(args.set_b))
    if extra_a or extra_b:
        raise ValueError("--set-a / --set-b take model fields only; training fields go in --set (shared protocol)")
    if args.steps is not None:
        train_over["steps"] = args.steps
    if args.match_tolerance is not None and not args.match:
        raise ValueError(f"--match-tolerance {args.match_tolerance:g} applies with --match only; add --match or "
                         "leave it out")
    targets = _numbers("--targets", args.targets) if args.targets else None
    fractions = _numbers("--target-fractions", args.target_fractions)
    record = compare(args.model_a, args.model_b, args.dataset, args.output, train_config=TrainConfig(**train_over),
                     overrides=shared_a, overrides_a=own_a, overrides_b=own_b, targets=targets,
                     target_fractions=fractions, match=args.match,
                     match_tolerance=MATCH_TOLERANCE if args.match_tolerance is None else args.match_tolerance,
                     data_path=args.data_path,
                     progress=not args.quiet, overwrite=args.overwrite)
    for tag, name in (("a", args.model_a), ("b", args.model_b)):
        p = record["parameters"][tag]
        print(f"{name}: {p['real_scalars']:,} real parameters ({p['complex_parameters']:,} complex, "
              f"{100 * p['complex_share']:.3f}% of the real scalars), best {record['best_val_loss'][tag]:.4f} "
              f"{record['unit']}, {record['train_ms_per_step'][tag]:.1f} ms/step")
    print(format_table(record))
    return 0
