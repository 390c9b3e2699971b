"""PLACEHOLDER: being written by a helper."""

CEmbedding = None

Embedding = None

Linear = None

TokenwiseLinear = None
