"""The quantum-shortcut models: ``h-mamba``, ``mamba``, ``h-transformer``, ``transformer`` (two matched pairs).

Complex phase-state substrate in a Mamba block (H-Mamba) and Born-score attention in the same block
(H-Transformer), each with a parameter-matched real twin; byte-level, tied softmax head, logits ``r[B, T, 256]``.
:func:`match` sets a twin's feed-forward width so both totals agree within 0.02%. Source: quantum-shortcut paper
section 5; papers/NOTES.md "Quantum-shortcut models". :func:`register` adds the four names to a model registry.
"""

from cnet.models.shortcut.hmamba import HMamba, HMambaConfig, Mamba, MambaConfig, PhaseStateRecurrence, SelectiveScan
from cnet.models.shortcut.htransformer import (
    BornScoreAttention,
    HTransformer,
    HTransformerConfig,
    Transformer,
    TransformerConfig,
)
from cnet.models.shortcut.match import match, pair_report, parameter_count
from cnet.models.shortcut.scan import cayley_phase, chunked_scan, real_scan

__all__ = [
    "register",
    "HMamba", "HMambaConfig", "Mamba", "MambaConfig", "PhaseStateRecurrence", "SelectiveScan",
    "HTransformer", "HTransformerConfig", "Transformer", "TransformerConfig", "BornScoreAttention",
    "match", "pair_report", "parameter_count",
    "cayley_phase", "chunked_scan", "real_scan",
]

MODELS = {
    "h-mamba": (HMamba, HMambaConfig,
                "complex phase-state recurrence (Cayley phase x sigmoid gate) in the Mamba block "
                "(quantum-shortcut paper section 5)"),
    "mamba": (Mamba, MambaConfig,
              "real Mamba twin of h-mamba with a parameter-matching SwiGLU branch (quantum-shortcut paper 5.7)"),
    "h-transformer": (HTransformer, HTransformerConfig,
                      "Born-score linear attention in the shared Mamba-style block (quantum-shortcut paper 5.5, 5.7)"),
    "transformer": (Transformer, TransformerConfig,
                    "real pre-norm RoPE Transformer twin of h-transformer, SiLU FFN (quantum-shortcut paper 5.7)"),
}


def register(models) -> None:
    """Add ``h-mamba``, ``mamba``, ``h-transformer`` and ``transformer`` to a model registry.

    Args:
        models: a :class:`cnet.core.registry.NameRegistry` (what ``cnet_register_models`` receives).

    Raises:
        ValueError: a name is already registered (from ``models.add``).
    """
    for name, (cls, cfg, description) in MODELS.items():
        models.add(name, cls, config=cfg, description=description)
