"""gated_linear_attention backends (reference: :func:`cnet.core.ops.reference.gated_linear_attention`)."""

__all__ = ["register"]


def register(ops) -> None:
    """No backend yet: the reference runs everywhere."""
