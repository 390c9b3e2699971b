"""complex_scan backends (reference: :func:`cnet.core.ops.reference.complex_scan`)."""

__all__ = ["register"]


def register(ops) -> None:
    """No backend yet: the reference runs everywhere."""
