"""cnet-core: complex-valued deep learning on PyTorch.

The Wirtinger convention (:mod:`cnet.core.wirtinger`), the plugin and op registry (:mod:`cnet.core.plugins`,
:mod:`cnet.core.registry`), reference ops (:mod:`cnet.core.ops`), layers (:mod:`cnet.core.nn`), checkpoint
folders (:mod:`cnet.core.checkpoint`) and the conformance kit (:mod:`cnet.core.testing`).
"""

from cnet.core import ops, wirtinger
from cnet.core.registry import use_backend

__version__ = "0.1.0"

__all__ = ["ops", "wirtinger", "use_backend", "__version__"]
