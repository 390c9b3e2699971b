"""Parity of the Triton complex scan with the reference (outputs, every input gradient), its refusals and
registration. CPU tests run the kernels in Triton's interpreter at small odd sizes; ``gpu`` tests at real sizes."""

import re

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import complex_scan
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.born_attention import triton_kernels as born_kernels
from cnet.kernels.complex_scan import chunked, complex_scan_triton, supports_triton

_TOL = {torch.complex128: {"atol": 1e-10, "rtol": 1e-9}, torch.complex64: {"atol": 2e-5, "rtol": 2e-4}}


def _inputs(shape, dtype, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = 0.9 * torch.randn(shape, dtype=torch.complex128, generator=gen)
    b = torch.randn(shape, dtype=torch.complex128, generator=gen)
    h0 = torch.randn(shape[:1] + shape[2:], dtype=torch.complex128, generator=gen)
    a = a / a.abs().clamp_min(1.0)  # |a| <= 1: a stable recurrence however long
    return [x.to(dtype=dtype, device=device) for x in (a, b, h0)]


_STATE_CASES = [  # (pass initial_state, return_state)
    (False, False), (True, True), (False, True), (True, False),
]


@pytest.mark.parametrize("shape", [(2, 13, 3, 5), (1, 1, 7), (2, 19, 17)])
@pytest.mark.parametrize("with_h0, return_state", _STATE_CASES)
def test_matches_reference_outputs_and_gradients(nan_empty, shape, with_h0, return_state):
    a, b, h0 = _inputs(shape, torch.complex128)
    args = [a, b, h0] if with_h0 else [a, b]
    rep = check_parity(complex_scan_triton, complex_scan, args, {"return_state": return_state},
                       **_TOL[torch.complex128])
    rep.raise_if_failed()


@pytest.mark.parametrize("prefetch", [True, False])
def test_both_loop_forms_match_reference(nan_empty, monkeypatch, prefetch):
    monkeypatch.setitem(chunked._INTERPRETER_BLOCK, "PREFETCH", prefetch)
    a, b, h0 = _inputs((1, 19, 17), torch.complex128, seed=4)
    rep = check_parity(complex_scan_triton, complex_scan, [a, b, h0], {"return_state": True},
                       **_TOL[torch.complex128])
    rep.raise_if_failed()


_BLOCK_SHAPES = sorted({tuple(c.kwargs[n] for n in ("BLOCK_T", "BLOCK_C", "PREFETCH")) for c in chunked._CONFIGS})


@pytest.mark.parametrize("block_t, block_c, prefetch", _BLOCK_SHAPES)
def test_every_gpu_block_shape_matches_reference(nan_empty, monkeypatch, block_t, block_c, prefetch):
    # the interpreter ignores num_warps: this checks every autotuned (BLOCK_T, BLOCK_C, PREFETCH) once, with a
    # partial last time block and a partial channel block
    monkeypatch.setattr(chunked, "_INTERPRETER_BLOCK", {"BLOCK_T": block_t, "BLOCK_C": block_c, "PREFETCH": prefetch})
    a, b, h0 = (x.requires_grad_(True) for x in _inputs((1, block_t + 5, block_c + 3), torch.complex128, seed=6))
    probe = torch.randn_like(a)
    outs = [fn(a, b, h0, return_state=True) for fn in (complex_scan_triton, complex_scan)]
    grads = [torch.autograd.grad((out * probe.conj()).real.sum() + last.abs().sum(), (a, b, h0))
             for out, last in outs]
    for got, want in zip([*outs[0], *grads[0]], [*outs[1], *grads[1]], strict=True):
        torch.testing.assert_close(got, want, **_TOL[torch.complex128])


def test_autotune_off_launches_the_first_config(nan_empty, monkeypatch):
    # the CUDA launch path with CNET_TRITON_AUTOTUNE=0 (born_attention's flag): the plain kernel, first config
    monkeypatch.setattr(chunked, "interpreting", lambda: False)
    monkeypatch.setattr(born_kernels, "AUTOTUNE", False)
    monkeypatch.setattr(chunked, "_fwd_tuned", None)  # not reached
    monkeypatch.setattr(chunked, "_bwd_tuned", None)
    a, b, h0 = _inputs((2, 21, 35), torch.complex128, seed=7)
    rep = check_parity(complex_scan_triton, complex_scan, [a, b, h0], {"return_state": True},
                       **_TOL[torch.complex128])
    rep.raise_if_failed()


@pytest.mark.parametrize("shape", [(2, 19, 3, 5), (3, 8, 16)])
def test_complex64_matches_reference(nan_empty, shape):
    a, b, h0 = _inputs(shape, torch.complex64, seed=1)
    rep = check_parity(complex_scan_triton, complex_scan, [a, b, h0], {"return_state": True},
                       **_TOL[torch.complex64])
    rep.raise_if_failed()


def test_zero_coefficients_and_noncontiguous_inputs(nan_empty):
    a, b, h0 = _inputs((2, 21, 6), torch.complex128, seed=2)
    a[:, 5] = 0  # the state restarts at t = 5: h_5 = b_5 exactly
    at, bt = a.transpose(1, 2).contiguous().transpose(1, 2), b[..., :5]  # strided views
    for x, y in ((a, b), (at, b), (a[..., :5], bt)):
        h, last = complex_scan_triton(x, y, h0[..., :x.shape[-1]], return_state=True)
        ref, ref_last = complex_scan(x, y, h0[..., :x.shape[-1]], return_state=True)
        torch.testing.assert_close(h, ref, atol=1e-12, rtol=1e-10)
        torch.testing.assert_close(last, ref_last, atol=1e-12, rtol=1e-10)
        assert torch.equal(h[:, 5], y[:, 5])


def test_registered_for_cuda_and_reference_runs_on_cpu():
    op = registries().ops.get("complex_scan")
    assert [(b.name, b.device, b.priority) for b in op.backends] == [("triton", "cuda", 20)]
    a, b, _ = _inputs((1, 4, 2), torch.complex64)
    name, _ = registries().ops.select("complex_scan", (a, b), {})
    assert name == "reference"


_BAD = [  # (change of (a, b, initial_state, return_state), the error the reference raises, start of its message)
    (lambda a, b, h, r: (a.real, b, h, r), TypeError, "argument 'a' must be a complex tensor"),
    (lambda a, b, h, r: (a, b.tolist(), h, r), TypeError, "argument 'b' must be a complex torch.Tensor, got list"),
    (lambda a, b, h, r: (a, b.to(torch.complex64), h, r), TypeError, "'a' and 'b' must share one dtype"),
    (lambda a, b, h, r: (a, b[:, :2], h, r), ValueError, "arguments must have the same shape, got a=(2, 5, 3), "
     "b=(2, 2, 3)"),
    (lambda a, b, h, r: (a[0, 0], b[0, 0], h, r), ValueError, "argument 'a' must be c[B, T, ...], got shape (3,)"),
    (lambda a, b, h, r: (a[:, :0], b[:, :0], h, r), ValueError, "argument 'a' has no time steps (T=0)"),
    (lambda a, b, h, r: (a, b, h.to(torch.complex64), r), TypeError, "argument 'initial_state' must have dtype "
     "torch.complex128"),
    (lambda a, b, h, r: (a, b, h.real, r), TypeError, "argument 'initial_state' must be a complex tensor"),
    (lambda a, b, h, r: (a, b, h[:, :1], r), ValueError, "argument 'initial_state' must be c[B, ...] of shape (2, 3), "
     "got (2, 1)"),
    (lambda a, b, h, r: (a, b, h, 1), TypeError, "argument 'return_state' must be a bool, got int"),
]


@pytest.mark.parametrize("change, error, reason", _BAD)
def test_supports_refuses_what_the_reference_rejects_with_its_error(change, error, reason):
    # dispatch hands the call to the reference, which raises; called directly the backend raises the same type
    args = change(*_inputs((2, 5, 3), torch.complex128), False)
    with pytest.raises(error) as exc:
        complex_scan(*args)
    assert str(exc.value).startswith(f"complex_scan: {reason}")
    assert supports_triton(*args) == (False, str(exc.value))
    with pytest.raises(error, match=f"^complex_scan_triton: {re.escape(reason)}"):
        complex_scan_triton(*args)


def test_supports_refuses_empty_inputs_and_accepts_good_ones():
    a, b, h0 = _inputs((2, 5, 3), torch.complex64)
    reason = ("the triton backend takes non-empty inputs only: argument 'a' must be c[B, T, ...] with no zero dim, "
              "got shape (2, 5, 0)")
    assert supports_triton(a[:, :, :0], b[:, :, :0]) == (False, f"complex_scan: {reason}")
    with pytest.raises(ValueError, match=f"^complex_scan_triton: {re.escape(reason)}"):
        complex_scan_triton(a[:, :, :0], b[:, :, :0])
    assert supports_triton(a, b, h0, True) == (True, "")  # CPU accepted under the interpreter (conftest)


def _views(fn):
    """``fn`` on lazy negative and conjugate views of its inputs (a kernel reading raw memory would see the
    unnegated, unconjugated data), its outputs conjugated (so the backward receives conjugated gradients)."""

    def run(a, b, h0, **kwargs):
        out = fn(a._neg_view(), b.conj(), h0.conj()._neg_view(), **kwargs)
        return tuple(x.conj() for x in out)

    return run


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_negative_and_conjugate_views(nan_empty, dtype):
    a, b, h0 = _inputs((2, 11, 3), dtype, seed=8)
    views = (a._neg_view(), b.conj(), h0.conj()._neg_view())
    assert views[0].is_neg() and views[1].is_conj() and views[2].is_conj() and views[2].is_neg()
    assert supports_triton(*views) == (True, "")
    rep = check_parity(_views(complex_scan_triton), _views(complex_scan), [a, b, h0], {"return_state": True},
                       **_TOL[dtype])
    rep.raise_if_failed()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_parity_on_gpu_at_benchmark_size():
    a, b, h0 = _inputs((8, 4096, 2048), torch.complex64, device="cuda")
    assert registries().ops.select("complex_scan", (a, b, h0), {"return_state": True})[0] == "triton"
    rep = check_parity(cnet.core.ops.complex_scan, complex_scan, [a, b, h0], {"return_state": True},
                       atol=1e-4, rtol=1e-3)
    rep.raise_if_failed()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_parity_on_gpu_odd_sizes():
    # odd T, C and a partial channel block, in complex128 (the benchmark's test covers complex64)
    a, b, h0 = _inputs((2, 333, 3, 43), torch.complex128, device="cuda")
    rep = check_parity(complex_scan_triton, complex_scan, [a, b, h0], {"return_state": True},
                       **_TOL[torch.complex128])
    rep.raise_if_failed()
