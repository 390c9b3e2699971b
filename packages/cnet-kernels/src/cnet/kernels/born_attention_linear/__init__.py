"""born_attention_linear backends (reference: :func:`cnet.core.ops.reference.born_attention_linear`)."""

__all__ = ["register"]


def register(ops) -> None:
    """No backend yet: the reference runs everywhere."""
