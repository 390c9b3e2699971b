"""Parity of the chunked Triton gated linear attention with the reference (outputs, gradients of q, k, v, g, the
initial state and through the returned state), its refusals and registration. CPU tests run the kernels in
Triton's interpreter at small odd sizes; ``gpu`` tests at real sizes."""

import math
import re

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import gated_linear_attention, gated_linear_attention_step
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


_REJECTED = [  # (change of (q, k, v, g, initial_state, return_state), the error the reference raises, its message)
    (lambda q, k, v, g, s, r: (q.to(torch.complex128), k, v, g, s, r), TypeError,
     "'q', 'k' and 'v' must share one dtype, got torch.complex128, torch.complex64, torch.complex64"),
    (lambda q, k, v, g, s, r: (q, k.real, v, g, s, r), TypeError, "argument 'k' must be a complex tensor"),
    (lambda q, k, v, g, s, r: (q, k, v[:, :, :2], g, s, r), ValueError,
     "argument 'v' must match 'q' in [B, H, T] (only D may differ), got q=(1, 2, 5, 3), v=(1, 2, 2, 2)"),
    (lambda q, k, v, g, s, r: (q, k[..., :1], v, g, s, r), ValueError,
     "arguments must have the same shape, got q=(1, 2, 5, 3), k=(1, 2, 5, 1)"),
    (lambda q, k, v, g, s, r: (q[0], k[0], v[0], g[0], s, r), ValueError,
     "argument 'q' must be c[B, H, T, D] (4 dims), got shape (2, 5, 3)"),
    (lambda q, k, v, g, s, r: (q, k, v, g.double(), s, r), TypeError,
     "argument 'g' must have dtype torch.float32 to match torch.complex64, got torch.float64"),
    (lambda q, k, v, g, s, r: (q, k, v, g.double(), None, r), TypeError,
     "argument 'g' must have dtype torch.float32 to match torch.complex64, got torch.float64"),
    (lambda q, k, v, g, s, r: (q, k, v, g[..., :2], s, r), ValueError,
     "argument 'g' must be r[1, 2, 5] (q's shape without D), got (1, 2, 2)"),
    (lambda q, k, v, g, s, r: (q, k, v, g[..., :2], None, r), ValueError,
     "argument 'g' must be r[1, 2, 5] (q's shape without D), got (1, 2, 2)"),
    (lambda q, k, v, g, s, r: (q, k, v, g.tolist(), None, r), TypeError,
     "argument 'g' must be a real floating tensor of gate logits, got list"),
    (lambda q, k, v, g, s, r: (q, k, v, g.to(torch.int32), None, r), TypeError,
     "argument 'g' must be a real floating tensor of gate logits, got torch.int32"),
    (lambda q, k, v, g, s, r: (q, k, v, g, s[..., :1], r), ValueError,
     "argument 'initial_state' must be c[B, H, D, Dv]=(1, 2, 3, 2), got (1, 2, 3, 1)"),
    (lambda q, k, v, g, s, r: (q, k, v, g, s.real, r), TypeError, "argument 'initial_state' must be a complex tensor"),
    (lambda q, k, v, g, s, r: (q, k, v, g, s.to(torch.complex128), r), TypeError,
     "argument 'initial_state' must have dtype torch.complex64, got torch.complex128"),
    (lambda q, k, v, g, s, r: (q, k, v, g, s, "yes"), TypeError, "argument 'return_state' must be a bool, got str"),
    (lambda q, k, v, g, s, r: (q[:, :, :0], k[:, :, :0], v[:, :, :0], g[:, :, :0], s, r), ValueError,
     "the inputs have no tokens (T=0), q=(1, 2, 0, 3)"),
]


@pytest.mark.parametrize("change, error, reason", _REJECTED)
def test_supports_refuses_what_the_reference_rejects_with_its_error(change, error, reason):
    # dispatch hands the call to the reference, which raises; called directly the backend raises the same type,
    # dtype problems as TypeError and shape problems as ValueError, naming the argument, layout and shape received
    args = change(*_inputs(1, 2, 5, 3, 2), False)
    with pytest.raises(error) as exc:
        gated_linear_attention(*args)
    assert str(exc.value).startswith(f"gated_linear_attention: {reason}"), str(exc.value)
    assert supports_triton(*args) == (False, str(exc.value))
    with pytest.raises(error, match=f"^gated_linear_attention_triton: {re.escape(reason)}"):
        gated_linear_attention_triton(*args)


_UNSUPPORTED = [  # (change of (q, k, v, g, initial_state), error, message): the reference runs these
    (lambda q, k, v, g, s: (q.to(torch.complex128), k.to(torch.complex128), v.to(torch.complex128), g.double(),
                            s.to(torch.complex128)), TypeError,
     "the triton backend takes complex64 q, k, v (and float32 g) only, got torch.complex128"),
    (lambda q, k, v, g, s: (q[..., :0], k[..., :0], v, g, s[:, :, :0]), ValueError,
     "the triton backend takes non-empty inputs only: q, k c[B, H, T, D] and v c[B, H, T, Dv] with no zero dim, "
     "got q=(1, 2, 5, 0), v=(1, 2, 5, 2)"),
]


@pytest.mark.parametrize("change, error, reason", _UNSUPPORTED)
def test_refuses_what_only_the_kernels_cannot_take(change, error, reason):
    args = change(*_inputs(1, 2, 5, 3, 2))
    gated_linear_attention(*args)  # the reference takes them
    assert supports_triton(*args) == (False, f"gated_linear_attention: {reason}")
    with pytest.raises(error, match=f"^gated_linear_attention_triton: {re.escape(reason)}"):
        gated_linear_attention_triton(*args)


def test_supports_refuses_wide_heads_which_the_reference_takes():
    q, k, v, g, _ = _inputs(1, 1, 3, MAX_D + 1, 2)
    assert supports_triton(q, k, v, g) == (
        False, f"gated_linear_attention: the triton backend takes head widths D <= {MAX_D} (q, k c[B, H, T, D]), "
        f"got D={MAX_D + 1} in q=(1, 1, 3, {MAX_D + 1})")
    assert gated_linear_attention(q, k, v, g).shape == v.shape
    assert supports_triton(*_inputs(1, 1, 3, MAX_D, 2)) == (True, "")


def _views(fn):
    """``fn`` on lazy conjugate and negative views of its inputs (``g`` too: its raw memory holds ``-g``), its
    outputs conjugated (so the backward receives conjugated gradients)."""

    def run(q, k, v, g, s0, **kwargs):
        out = fn(q.conj(), k._neg_view(), v.conj()._neg_view(), (-g)._neg_view(), s0.conj(), **kwargs)
        return tuple(x.conj() for x in out)

    return run


def test_conjugate_and_negative_views(nan_empty):
    q, k, v, g, s0 = _inputs(1, 2, 21, 3, 4, seed=6)
    views = (q.conj(), k._neg_view(), v.conj()._neg_view(), (-g)._neg_view(), s0.conj())
    assert supports_triton(*views) == (True, "")
    rep = check_parity(_views(gated_linear_attention_triton), _views(gated_linear_attention), [q, k, v, g, s0],
                       {"return_state": True}, **_TOL)
    rep.raise_if_failed()


def test_minus_infinity_gates_reset_the_state(nan_empty):
    # a logit of -inf (what a mask produces) wipes the state: sigma = 0 exactly, as in the reference and the step
    # form; at t = 0 (the initial state), mid-chunk, a run across a chunk boundary (chunks of 16 in the
    # interpreter) and the last token; -1e6 is as good as -inf in float32
    q, k, v, g, s0 = _inputs(1, 2, 37, 3, 4, seed=7)
    inf = float("inf")
    g[0, 0, 0], g[0, 0, 9], g[0, 0, 36] = -inf, -inf, -inf
    g[0, 1, 13:20] = -inf
    g[0, 1, 30] = -1e6
    rep = check_parity(gated_linear_attention_triton, gated_linear_attention, [q, k, v, g, s0],
                       {"return_state": True}, **_TOL)
    rep.raise_if_failed()
    leaves = [x.clone().requires_grad_() for x in (q, k, v, g, s0)]
    out, state = gated_linear_attention_triton(*leaves, return_state=True)
    grads = torch.autograd.grad(out.abs().square().sum() + state.abs().sum(), leaves)
    assert all(torch.isfinite(torch.view_as_real(x) if x.is_complex() else x).all() for x in (out, state, *grads))
    assert torch.equal(grads[3][g.isinf()], torch.zeros(int(g.isinf().sum())))  # sigma'(-inf) = 0
    state = s0
    for t in range(g.shape[-1]):
        o, state = gated_linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], g[:, :, t], state)
        torch.testing.assert_close(out[:, :, t].detach(), o, **_TOL)


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
    assert not ok and why.startswith(f"gated_linear_attention: the triton backend takes head widths D <= {CUDA_MAX_D} "
                                     "on CUDA"), why
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
