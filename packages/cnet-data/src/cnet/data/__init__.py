"""cnet-data: datasets for cnet, returned as Hugging Face ``datasets`` objects (DESIGN.md section 5).

``cnet.data.load(name, split, **options)`` dispatches to the loaders registered through ``cnet_register_datasets``.
Data is found, in order, at an explicit ``path=``, under ``$CNET_DATA_DIR``, or on the Hugging Face Hub.
"""

from cnet.data.loading import load
from cnet.data.sources import DATA_DIR_ENV
from cnet.data.text import split_by_position, tiny_shakespeare
from cnet.data.text_bytes import text_bytes
from cnet.data.vocab import VOCAB_FILE, CharVocab

__all__ = ["load", "tiny_shakespeare", "split_by_position", "text_bytes", "CharVocab", "VOCAB_FILE",
           "DATA_DIR_ENV"]
