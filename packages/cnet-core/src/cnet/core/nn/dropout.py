"""PLACEHOLDER: being written by a helper."""

ComplexDropout = None
