"""PLACEHOLDER: being written by a helper."""

TokenNorm = None
