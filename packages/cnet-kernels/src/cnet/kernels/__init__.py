"""cnet-kernels: fast backends for cnet-core ops, one folder per op, registered as the ``kernels`` plugin.

Importing is never needed: installing the package makes ``cnet.core.ops`` pick its backends on the devices
they support; ``cnet.core.use_backend("reference")`` switches back.
"""

__all__: list[str] = []
