"""Rows of a task dataset as tensors: the fixed held-out set and the training batches (DESIGN.md section 5).

Generated datasets (Copy Memory, Needle, ListOps, Pathfinder-like images) are drawn on the fly, as in the PCT paper:
training reads the unbounded seeded stream of the train split in order, process ``r`` of ``P`` taking every
``P``-th batch, so step ``t`` always sees the same rows and a resumed run skips to them. File datasets (LRA,
Pathfinder folders, FFT-MNIST) are held in memory and sampled uniformly with the run's seeded generator. The
held-out set is the first ``count`` rows of a generated held-out split, or ``count`` rows spread evenly over a
file split.
"""

from __future__ import annotations

import numpy as np
import torch

from cnet.data import load
from cnet.models.tasks import TaskSpec

__all__ = ["data_options", "rows_to_tensors", "load_held_out", "TrainBatches"]


def data_options(spec: TaskSpec, options: dict | None, *, seed: int, path: str | None) -> dict:
    """The loader options of ``spec``'s dataset: ``options`` plus ``seed`` (generated) or ``path`` (files).

    Raises:
        ValueError: ``num_examples`` given for a generated dataset (the app sets it), or a ``path`` for one.
            (An option the loader does not take is refused by :func:`cnet.data.load`, naming the valid ones.)
    """
    out = dict(options or {})
    if spec.generated:
        if "num_examples" in out:
            raise ValueError(f"dataset {spec.name!r}: 'num_examples' is set by the training app (training streams "
                             "rows; the held-out set has eval_windows rows); leave it out")
        if path:
            raise ValueError(f"dataset {spec.name!r} is generated; a data path does not apply")
        out.setdefault("seed", seed)
    elif path:
        out["path"] = path
    return out


def rows_to_tensors(spec: TaskSpec, rows: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Columns of ``rows`` (numpy arrays) -> ``(inputs, targets)``.

    Returns:
        inputs ``i[N, T]`` int64 (ids, grey levels) or ``c[N, T]`` complex64; targets ``i[N]`` or ``i[N, T]`` int64.

    Raises:
        ValueError: a column of the task is missing.
    """
    missing = [c for c in (*spec.inputs, spec.target) if c not in rows]
    if missing:
        raise ValueError(f"dataset {spec.name!r} lacks the column(s) {missing} its task reads "
                         f"(columns: {sorted(rows)})")
    if spec.input_kind == "complex":
        real, imag = (torch.from_numpy(np.asarray(rows[c], dtype=np.float32)) for c in spec.inputs)
        inputs = torch.complex(real, imag)
    else:
        inputs = torch.from_numpy(np.asarray(rows[spec.inputs[0]]).astype(np.int64))
    return inputs, torch.from_numpy(np.asarray(rows[spec.target]).astype(np.int64))


def load_held_out(spec: TaskSpec, split: str, options: dict, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed held-out set of ``count`` rows of ``split`` (fewer if a file split is shorter).

    Raises:
        Whatever :func:`cnet.data.load` raises (unknown option, missing files, ...); ValueError: an empty split.
    """
    if spec.generated:
        ds = load(spec.name, split, **options, num_examples=count)
    else:
        ds = load(spec.name, split, **options)
        if ds.num_rows == 0:
            raise ValueError(f"dataset {spec.name!r} split {split!r} is empty")
        idx = np.unique(np.linspace(0, ds.num_rows - 1, min(count, ds.num_rows)).round().astype(np.int64))
        ds = ds.select(idx)
    return rows_to_tensors(spec, ds.with_format("numpy")[:])


class TrainBatches:
    """Training batches of one process: ``next(generator) -> (inputs, targets)`` with ``batch_size`` rows.

    Args:
        spec: the task. options: loader options (:func:`data_options`). batch_size: rows per batch.
        rank, processes: this process and the number of processes.
        start_step: steps already taken (a resumed run continues the stream there).

    Raises:
        Whatever :func:`cnet.data.load` raises; ValueError: an empty train split.
    """

    def __init__(self, spec: TaskSpec, options: dict, *, batch_size: int, rank: int = 0, processes: int = 1,
                 start_step: int = 0) -> None:
        self.spec, self.batch_size, self.rank, self.processes = spec, batch_size, rank, processes
        if spec.generated:
            stream = load(spec.name, spec.train_split, **options, num_examples=None).with_format("numpy")
            self._stream = iter(stream.skip(start_step * processes * batch_size).iter(batch_size=batch_size))
        else:
            self._inputs, self._targets = rows_to_tensors(
                spec, load(spec.name, spec.train_split, **options).with_format("numpy")[:])
            if self._inputs.shape[0] == 0:
                raise ValueError(f"dataset {spec.name!r} split {spec.train_split!r} is empty")

    def next(self, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch: ``i[B, T]`` / ``c[B, T]`` inputs and ``i[B]`` / ``i[B, T]`` targets."""
        if self.spec.generated:
            for p in range(self.processes):
                rows = next(self._stream)
                if p == self.rank:
                    mine = rows
            return rows_to_tensors(self.spec, mine)
        idx = torch.randint(0, self._inputs.shape[0], (self.batch_size,), generator=generator)
        return self._inputs[idx], self._targets[idx]
