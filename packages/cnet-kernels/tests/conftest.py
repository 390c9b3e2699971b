"""Without a CUDA device the Triton kernels run in Triton's CPU interpreter (set before anything imports Triton)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
