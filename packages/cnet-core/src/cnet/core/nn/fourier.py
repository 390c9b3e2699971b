"""PLACEHOLDER: being written by a helper."""

CausalFourierMix = None

FourierMix = None

TriangFourier = None
