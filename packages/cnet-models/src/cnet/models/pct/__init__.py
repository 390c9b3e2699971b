"""The phase-coherent transformer family (``pct``) and the Path-X recurrence model (``pcr-pathx``).

``cnet.models.create("pct", cell=...)`` builds any cell of :data:`CELLS` on the shared pre-norm skeleton;
``cnet.models.create("pcr-pathx")`` the released Path-X model. :func:`score_spread` measures the within-row spread
of the attention scores (the paper's mechanism measurement). :func:`register` adds both models to a model
registry (called from cnet-models' plugin). Source: PCT paper sections 2-4 and appendix D.
"""

from cnet.models.pct.cells import CELLS, COMPLEX_CELLS, REAL_CELLS, ComplexAttention, RealAttention
from cnet.models.pct.diagnostics import score_spread
from cnet.models.pct.model import PCT, PCTConfig
from cnet.models.pct.pathx import PCRPathX, PCRPathXConfig

__all__ = ["CELLS", "COMPLEX_CELLS", "REAL_CELLS", "ComplexAttention", "RealAttention", "PCT", "PCTConfig",
           "PCRPathX", "PCRPathXConfig", "score_spread", "register"]


def register(models) -> None:
    """Register ``pct`` and ``pcr-pathx`` with a model registry (the ``models`` object of ``cnet_register_models``)."""
    models.add("pct", PCT, config=PCTConfig,
               description="phase-coherent transformer family: scaled cosine score, sigmoid/softmax/screening and "
                           "isolation cells, real baselines (PCT paper sections 2-3)")
    models.add("pcr-pathx", PCRPathX, config=PCRPathXConfig,
               description="bidirectional phase-coherent recurrence with complex screening for Path-X "
                           "(PCT paper section 4)")
