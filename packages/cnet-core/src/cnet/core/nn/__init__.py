"""Complex-valued ``torch.nn`` layers over :mod:`cnet.core.ops`.

Parameters are complex tensors; fresh weights are drawn with independent N(0, 0.02^2) real and imaginary
parts (:func:`complex_normal_`) unless a layer says otherwise. CNet's layer names are kept as aliases
(``TokenwiseLinear``, ``CEmbedding``, ``CGelu``, ``TriangFourier``, ``RotaryEmbed``).
"""

from cnet.core.nn.activation import CGELU, CGelu
from cnet.core.nn.attention import BornAttention, MultiheadBornAttention, MultiheadGatedLinearAttention
from cnet.core.nn.dropout import ComplexDropout
from cnet.core.nn.fourier import CausalFourierMix, FourierMix, RealCausalFourierMix, TriangFourier
from cnet.core.nn.init import complex_normal_
from cnet.core.nn.linear import CEmbedding, Embedding, Linear, TokenwiseLinear
from cnet.core.nn.loss import BornCrossEntropy, born_probabilities
from cnet.core.nn.norm import TokenNorm
from cnet.core.nn.phase import PCR, ComplexRMSNorm, ModReLU, PhaseCoherentRecurrence, TanhNorm, complex_glorot_
from cnet.core.nn.rotary import RotaryEmbed, RotaryEmbedding

__all__ = [
    "CGELU", "CGelu",
    "BornAttention", "MultiheadBornAttention", "MultiheadGatedLinearAttention",
    "ComplexDropout",
    "FourierMix", "CausalFourierMix", "TriangFourier", "RealCausalFourierMix",
    "complex_normal_",
    "Linear", "TokenwiseLinear", "Embedding", "CEmbedding",
    "BornCrossEntropy", "born_probabilities",
    "TokenNorm",
    "ComplexRMSNorm", "ModReLU", "TanhNorm", "PhaseCoherentRecurrence", "PCR", "complex_glorot_",
    "RotaryEmbedding", "RotaryEmbed",
]
