"""cnet-data: datasets for cnet, returned as Hugging Face ``datasets`` objects (DESIGN.md section 5).

``cnet.data.load(name, split, **options)`` dispatches to the loaders registered through ``cnet_register_datasets``.
Data is found, in order, at an explicit ``path=``, under ``$CNET_DATA_DIR``, or on the Hugging Face Hub.
"""

from cnet.data.fft_mnist import complex_tokens, fft_mnist, read_idx
from cnet.data.listops import evaluate_listops, listops, lra_listops, write_listops_tsv
from cnet.data.loading import load
from cnet.data.lra import lra_image, lra_text
from cnet.data.pathfinder import pathfinder, pathfinder_synthetic, write_pathfinder_lra
from cnet.data.pg19 import bits_per_byte, pg19, require_length, strip_gutenberg
from cnet.data.sources import DATA_DIR_ENV
from cnet.data.synthetic import copy_memory, needle
from cnet.data.text import split_by_position, tiny_shakespeare
from cnet.data.text_bytes import text_bytes
from cnet.data.vocab import VOCAB_FILE, ByteVocab, CharVocab, Vocab, vocab_from_json

__all__ = ["load", "tiny_shakespeare", "split_by_position", "text_bytes", "CharVocab", "ByteVocab", "Vocab",
           "vocab_from_json", "VOCAB_FILE",
           "DATA_DIR_ENV", "pg19", "strip_gutenberg", "bits_per_byte", "require_length", "copy_memory", "needle",
           "listops", "lra_listops", "evaluate_listops", "write_listops_tsv", "fft_mnist", "complex_tokens",
           "read_idx", "lra_text", "lra_image", "pathfinder", "pathfinder_synthetic", "write_pathfinder_lra"]
