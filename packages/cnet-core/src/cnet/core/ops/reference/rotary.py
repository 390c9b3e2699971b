"""PLACEHOLDER: being written by a helper."""
EXAMPLES = {}


def rotary(*args, **kwargs):
    raise NotImplementedError
