"""PLACEHOLDER: being written by a helper."""

complex_normal_ = None
