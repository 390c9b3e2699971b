"""PLACEHOLDER: being written by a helper."""
EXAMPLES = {}


def causal_dft(*args, **kwargs):
    raise NotImplementedError


def dft(*args, **kwargs):
    raise NotImplementedError


def idft(*args, **kwargs):
    raise NotImplementedError
