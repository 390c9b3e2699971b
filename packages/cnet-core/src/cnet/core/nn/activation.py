"""PLACEHOLDER: being written by a helper."""

CGELU = None

CGelu = None
