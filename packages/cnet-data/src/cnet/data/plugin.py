"""cnet-data's plugin (entry point ``data`` in group ``cnet``): registers its datasets with cnet-core."""

from __future__ import annotations

import os

from datasets import Dataset

from cnet.core.hookspecs import hookimpl
from cnet.data.fft_mnist import fft_mnist
from cnet.data.listops import listops, lra_listops
from cnet.data.lra import lra_image, lra_text
from cnet.data.pathfinder import pathfinder, pathfinder_synthetic
from cnet.data.pg19 import pg19
from cnet.data.synthetic import copy_memory, needle
from cnet.data.text import tiny_shakespeare
from cnet.data.text_bytes import text_bytes

__all__ = ["cnet_register_datasets"]


def _load_text_bytes(split: str | None, *, path: str | os.PathLike | None = None) -> Dataset:
    if path is None:
        raise ValueError("dataset 'text_bytes': option 'path' is required, got none; pass path=FILE_OR_FOLDER in "
                         "Python (the CLI's --data-path FILE_OR_FOLDER): a text file, or a folder of text files "
                         "(with train/ and validation/ sub-folders for training)")
    return text_bytes(path, split)


@hookimpl
def cnet_register_datasets(datasets):
    """Register cnet-data's datasets; ``cnet.data.load(name, split, **options)`` calls ``loader(split, **options)``.

    Files and Hub: ``tiny_shakespeare``, ``text_bytes``, ``pg19``, ``fft_mnist``, ``lra_text``, ``lra_image``;
    local only: ``lra_listops``, ``pathfinder``; seeded generators: ``copy_memory``, ``needle``, ``listops``,
    ``pathfinder_synthetic``. The README's table lists splits, columns and options.
    """
    datasets.add("tiny_shakespeare", tiny_shakespeare,
                 description="character-level tiny-shakespeare, CNet's 90/10 split by position (train, validation)")
    datasets.add("text_bytes", _load_text_bytes,
                 description="raw bytes of a file or of every file below a folder (split: sub-folder or None)")
    datasets.add("pg19", pg19,
                 description="PG-19 books as bytes, Gutenberg licence header/footer removed (train, validation, test)")
    datasets.add("copy_memory", copy_memory,
                 description="seeded Copy Memory: 10 tokens of a 16-id vocabulary reproduced after a delay")
    datasets.add("needle", needle,
                 description="seeded positional needle: which of 64 ids sits at the midpoint of the sequence")
    datasets.add("listops", listops,
                 description="seeded ListOps generator ([MIN [MAX [MED [SM over digits), value 0..9")
    datasets.add("lra_listops", lra_listops,
                 description="LRA ListOps TSV files (basic_train/val/test.tsv), same columns as listops")
    datasets.add("fft_mnist", fft_mnist,
                 description="MNIST down-sampled to 16x16, 2-D orthonormal FFT, 256 complex tokens (train, test)")
    datasets.add("lra_text", lra_text,
                 description="LRA Text: IMDB reviews as 4,096 byte tokens, binary sentiment (train, test)")
    datasets.add("lra_image", lra_image,
                 description="LRA Image: CIFAR-10 grey levels, 1,024 pixel tokens, 10 classes (train, test)")
    datasets.add("pathfinder", pathfinder,
                 description="LRA Pathfinder / Path-X folder format, pixel tokens, connected or not")
    datasets.add("pathfinder_synthetic", pathfinder_synthetic,
                 description="seeded Pathfinder-like images: two dots on one dashed curve or on two")
