"""Parity of the chunked Triton gated linear attention with the reference (outputs, gradients of q, k, v, g, the
initial state and through the returned state), its refusals and registration. CPU tests run the kernels in
Triton's interpreter at small odd sizes; ``gpu`` tests at real sizes."""

import math

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import gated_linear_attention
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.gated_linear_attention import (
    CUDA_MAX_D,
    MAX_D,
    chunked,
    gated_linear_attention_triton,
    supports_triton,
)

_TOL = {"atol": 1e-4, "rtol": 1e-3}


@pytest.fixture
def nan_empty(monkeypatch):
    """Every ``torch.empty_like`` / ``Tensor.new_empty`` comes back NaN-filled, so an unwritten output shows."""
    empty_like, new_empty = torch.empty_like, torch.Tensor.new_empty
    monkeypatch.setattr(torch, "empty_like", lambda *a, **kw: empty_like(*a, **kw).fill_(math.nan))
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, *a, **kw: new_empty(self, *a, **kw).fill_(math.nan))


def _inputs(b, h, t, d, dv, device="cpu", seed=0, gate_scale=1.0, gate_shift=1.0):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, d, dtype=torch.complex64, generator=gen) / math.sqrt(d) for _ in range(2))
    v = torch.randn(b, h, t, dv, dtype=torch.complex64, generator=gen)
    g = gate_scale * torch.randn(b, h, t, generator=gen) + gate_shift
    s0 = torch.randn(b, h, d, dv, dtype=torch.complex64, generator=gen)
    return [x.to(device) for x in (q, k, v, g, s0)]


@pytest.mark.parametrize("size", [(1, 2, 5, 3, 2), (2, 1, 37, 5, 20), (1, 2, 33, 16, 3), (1, 1, 32, 4, 17)])
@pytest.mark.parametrize("with_s0, return_state", [(False, False), (True, True), (False, True), (True, False)])
def test_matches_reference_outputs_and_gradients(nan_empty, size, with_s0, return_state):
    q, k, v, g, s0 = _inputs(*size)
    args = [q, k, v, g, s0] if with_s0 else [q, k, v, g]
    rep = check_parity(gated_linear_attention_triton, gated_linear_attention, args, {"return_state": return_state},
                       **_TOL)
    rep.raise_if_failed()


def test_extreme_gates_match_reference(nan_empty):
    # logits from -40 to +40: discounts from ~e^-40 per token (the state is wiped) to exactly 1
    q, k, v, g, s0 = _inputs(1, 2, 40, 4, 4, seed=3, gate_scale=20.0, gate_shift=0.0)
    g[0, 0, ::3] = -40.0
    g[0, 1, 1::2] = 40.0
    rep = check_parity(gated_linear_attention_triton, gated_linear_attention, [q, k, v, g, s0],
                       {"return_state": True}, **_TOL)
    rep.raise_if_failed()


def test_registered_for_cuda_and_reference_runs_on_cpu():
    op = registries().ops.get("gated_linear_attention")
    assert [(b.name, b.device, b.priority) for b in op.backends] == [("triton", "cuda", 20)]
    q, k, v, g, _ = _inputs(1, 1, 4, 2, 2)
    assert registries().ops.select("gated_linear_attention", (q, k, v, g), {})[0] == "reference"


_BAD = [  # (change of (q, k, v, g, initial_state, return_state), start of the reason, reference raises)
    (lambda q, k, v, g, s, r: (q.to(torch.complex128), k, v, g, s, r),
     "argument 'q' is not a complex64 tensor (got torch.complex128)", True),
    (lambda q, k, v, g, s, r: (q, k.real, v, g, s, r), "argument 'k' is not a complex64 tensor (got torch.float32)",
     True),
    (lambda q, k, v, g, s, r: (q, k, v[:, :, :2], g, s, r), "shapes are not q, k c[B, H, T, D]", True),
    (lambda q, k, v, g, s, r: (q, k[..., :1], v, g, s, r), "shapes are not q, k c[B, H, T, D]", True),
    (lambda q, k, v, g, s, r: (q[0], k[0], v[0], g[0], s, r), "shapes are not q, k c[B, H, T, D]", True),
    (lambda q, k, v, g, s, r: (q, k, v, g.double(), s, r), "argument 'g' is not a float32 r[B, H, T] tensor", True),
    (lambda q, k, v, g, s, r: (q, k, v, g[..., :2], s, r), "argument 'g' is not a float32 r[B, H, T] tensor", True),
    (lambda q, k, v, g, s, r: (q, k, v, g.tolist(), s, r), "argument 'g' is not a float32 r[B, H, T] tensor", True),
    (lambda q, k, v, g, s, r: (q, k, v, g, s[..., :1], r), "argument 'initial_state' is not a complex64", True),
    (lambda q, k, v, g, s, r: (q, k, v, g, s.real, r), "argument 'initial_state' is not a complex64", True),
    (lambda q, k, v, g, s, r: (q, k, v, g, s, "yes"), "argument 'return_state' is not a bool (got str)", True),
    (lambda q, k, v, g, s, r: (q[:, :, :0], k[:, :, :0], v[:, :, :0], g[:, :, :0], s, r), "empty input", True),
]


@pytest.mark.parametrize("change, reason, reference_raises", _BAD)
def test_supports_refuses_what_the_reference_rejects(change, reason, reference_raises):
    args = change(*_inputs(1, 2, 5, 3, 2), False)
    ok, why = supports_triton(*args)
    assert not ok and why.startswith(reason), why
    if reference_raises:
        with pytest.raises((TypeError, ValueError)):
            gated_linear_attention(*args)
    with pytest.raises(ValueError, match="^gated_linear_attention_triton: "):
        gated_linear_attention_triton(*args)


def test_supports_refuses_wide_heads_which_the_reference_takes():
    q, k, v, g, _ = _inputs(1, 1, 3, MAX_D + 1, 2)
    assert supports_triton(q, k, v, g) == (False, f"head width D={MAX_D + 1} > {MAX_D}")
    assert gated_linear_attention(q, k, v, g).shape == v.shape
    assert supports_triton(*_inputs(1, 1, 3, MAX_D, 2)) == (True, "")


def test_unknown_precision_is_an_error():
    with pytest.raises(ValueError, match="argument 'precision' must be one of"):
        gated_linear_attention_triton(*_inputs(1, 1, 3, 2, 2)[:4], precision="bf16")


@pytest.mark.parametrize("precision", ["tf32", "ieee"])
def test_every_precision_runs_in_the_interpreter(nan_empty, precision):
    # the interpreter multiplies in fp32 whatever the precision: this checks the option reaches every kernel
    args = _inputs(1, 1, 19, 3, 2)
    rep = check_parity(lambda *a, **kw: gated_linear_attention_triton(*a, **kw, precision=precision),
                       gated_linear_attention, args, {"return_state": True}, **_TOL)
    rep.raise_if_failed()


@pytest.mark.parametrize("precision, chunk, warps", [("tf32x3", 16, 4), ("tf32", 64, 8)])
def test_wide_heads_at_the_gpu_chunk_and_blocks(nan_empty, monkeypatch, precision, chunk, warps):
    # D = 64 with the chunk length and blocks the GPU picks (not the interpreter's): several chunks, the last one
    # partial, and two value blocks, the second partial; nan_empty shows any state or partial left unwritten
    monkeypatch.setattr(chunked, "interpreting", lambda: False)
    assert chunked._Blocks.choose(64, precision) == chunked._Blocks(chunk, 64, 16, 4, warps)
    args = _inputs(1, 2, 2 * chunk + 5, 64, 20, seed=5)
    rep = check_parity(lambda *a, **kw: gated_linear_attention_triton(*a, **kw, precision=precision),
                       gated_linear_attention, args, {"return_state": True}, **_TOL)
    rep.raise_if_failed()


def _segmented_reference(segment: int):
    """The reference run ``segment`` tokens at a time, the state carried between segments (exact by design)."""

    def run(q, k, v, g, initial_state=None, return_state=False):
        state, outs = initial_state, []
        for start in range(0, q.shape[-2], segment):
            part = slice(start, start + segment)
            out, state = gated_linear_attention(q[:, :, part], k[:, :, part], v[:, :, part], g[:, :, part],
                                                initial_state=state, return_state=True)
            outs.append(out)
        out = torch.cat(outs, dim=-2)
        return (out, state) if return_state else out

    return run


def test_segmented_reference_equals_the_reference():
    q, k, v, g, s0 = _inputs(1, 2, 11, 3, 2)
    rep = check_parity(_segmented_reference(4), gated_linear_attention, [q, k, v, g, s0], {"return_state": True},
                       atol=1e-5, rtol=1e-4)
    rep.raise_if_failed()


# GPU tests: T = 1000 and 16380 (odd multiples of 4: same integer specialisation, so one compilation per precision
# and initial-state flag), D = Dv = CUDA_MAX_D, B * H not a multiple of 16.


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_parity_on_gpu():
    q, k, v, g, s0 = _inputs(2, 4, 1000, CUDA_MAX_D, CUDA_MAX_D, device="cuda", seed=1)
    assert registries().ops.select("gated_linear_attention", (q, k, v, g, s0), {"return_state": True})[0] == "triton"
    rep = check_parity(cnet.core.ops.gated_linear_attention, gated_linear_attention, [q, k, v, g, s0],
                       {"return_state": True}, atol=2e-4, rtol=2e-3)
    rep.raise_if_failed()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_parity_on_gpu_at_16k_tokens_against_the_segmented_reference():
    q, k, v, g, s0 = _inputs(1, 2, 16380, CUDA_MAX_D, CUDA_MAX_D, device="cuda", seed=2, gate_shift=3.0)
    rep = check_parity(gated_linear_attention_triton, _segmented_reference(2048), [q, k, v, g, s0],
                       {"return_state": True}, atol=2e-4, rtol=2e-3)
    rep.raise_if_failed()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_wider_heads_run_on_the_reference_on_gpu():
    q, k, v, g, s0 = _inputs(1, 2, 40, 64, 64, device="cuda")
    ok, why = supports_triton(q, k, v, g, s0)
    assert not ok and why.startswith(f"head width D=64 > {CUDA_MAX_D} on CUDA"), why
    assert registries().ops.select("gated_linear_attention", (q, k, v, g, s0), {})[0] == "reference"
    with pytest.raises(ValueError, match="illegal memory access"):
        gated_linear_attention_triton(q, k, v, g, s0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision, tol", [("tf32", 2e-2), ("ieee", 2e-3)])
def test_other_precisions_on_gpu(precision, tol):
    q, k, v, g, s0 = _inputs(2, 4, 1000, CUDA_MAX_D, CUDA_MAX_D, device="cuda")
    rep = check_parity(lambda *a, **kw: gated_linear_attention_triton(*a, **kw, precision=precision),
                       gated_linear_attention, [q, k, v, g, s0], {"return_state": True}, atol=tol, rtol=tol)
    rep.raise_if_failed()
