"""Born attention backends (reference: :func:`cnet.core.ops.reference.born_attention`)."""

from cnet.kernels.born_attention.planar import born_attention_planar, supports_planar

__all__ = ["born_attention_planar", "supports_planar"]
