"""PLACEHOLDER: being written by a helper."""

BornCrossEntropy = None

born_probabilities = None
