"""Reference implementations of cnet's ops: pure PyTorch, each with an explicit Wirtinger backward.

These are the oracles every backend is compared with (``cnet.core.testing``). Call them directly to bypass
dispatch; ``cnet.core.ops.<name>`` dispatches to the best backend. ``EXAMPLES`` maps op names to small
example-input factories ``(dtype, device, seed) -> (args, kwargs)`` used by ``cnet check-op``.

The one-token step forms for decoding (``born_attention_step``, ``gated_linear_attention_step``,
``complex_scan_step``, and the ``BornAttentionState`` they carry) are importable from here too; they are not
registered ops (no backends, no autograd).
"""

import importlib

from cnet.core.ops.reference.attention import born_attention
from cnet.core.ops.reference.elementwise import cgelu, complex_dropout, hadamard
from cnet.core.ops.reference.fourier import causal_dft, dft, idft
from cnet.core.ops.reference.gla import gated_linear_attention
from cnet.core.ops.reference.gla import gated_linear_attention_step as gated_linear_attention_step
from cnet.core.ops.reference.linear import embedding, linear
from cnet.core.ops.reference.linear_attention import BornAttentionState as BornAttentionState
from cnet.core.ops.reference.linear_attention import born_attention_linear
from cnet.core.ops.reference.linear_attention import born_attention_step as born_attention_step
from cnet.core.ops.reference.loss import born_cross_entropy
from cnet.core.ops.reference.norm import token_norm
from cnet.core.ops.reference.pct import (
    causal_conv,
    complex_dot_score,
    cosine_overlap,
    cosine_score,
    lru_kernel,
    mix_values,
    modrelu,
    score_gate,
    screening_gate,
    tanh_norm,
)
from cnet.core.ops.reference.rotary import rotary
from cnet.core.ops.reference.scan import complex_scan
from cnet.core.ops.reference.scan import complex_scan_step as complex_scan_step

__all__ = [
    "dft", "idft", "causal_dft",
    "hadamard", "cgelu", "complex_dropout",
    "token_norm",
    "rotary",
    "born_attention", "born_attention_linear", "gated_linear_attention",
    "complex_scan",
    "born_cross_entropy",
    "linear", "embedding",
    "cosine_score", "cosine_overlap", "complex_dot_score", "score_gate", "screening_gate", "mix_values",
    "tanh_norm", "modrelu", "lru_kernel", "causal_conv",
]

EXAMPLES = {}
for _mod in ("attention", "elementwise", "fourier", "gla", "linear", "linear_attention", "loss", "norm", "pct",
             "rotary", "scan"):
    EXAMPLES.update(importlib.import_module(f"cnet.core.ops.reference.{_mod}").EXAMPLES)
del _mod
