"""Without a CUDA device the Triton kernels run in Triton's CPU interpreter (set before anything imports Triton)."""

import math
import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture
def nan_empty(monkeypatch):
    """Every ``torch.empty_like`` / ``Tensor.new_empty`` comes back NaN-filled, so an unwritten output shows."""
    empty_like, new_empty = torch.empty_like, torch.Tensor.new_empty
    monkeypatch.setattr(torch, "empty_like", lambda *a, **kw: empty_like(*a, **kw).fill_(math.nan))
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, *a, **kw: new_empty(self, *a, **kw).fill_(math.nan))
