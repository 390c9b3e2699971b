"""PLACEHOLDER: being written by a helper."""

RotaryEmbed = None

RotaryEmbedding = None
