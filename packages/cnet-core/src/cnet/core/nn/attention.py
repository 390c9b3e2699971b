"""PLACEHOLDER: being written by a helper."""

BornAttention = None

MultiheadBornAttention = None
