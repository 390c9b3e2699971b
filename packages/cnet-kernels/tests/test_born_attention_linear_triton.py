"""The triton backend of born_attention_linear: parity with the reference (outputs and every input gradient), its
registration and its refusals. On CPU the kernels run in Triton's interpreter (see conftest.py) at small sizes."""

import re

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import born_attention, born_attention_linear
from cnet.core.ops.reference.linear_attention import BornAttentionState
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.born_attention_linear import born_attention_linear_triton, supports_triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _inputs(b, h, t, d, dv, dtype=torch.complex64, device=DEVICE, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, d, dtype=dtype, generator=g) for _ in range(2))
    v = torch.randn(b, h, t, dv, dtype=dtype, generator=g)
    return [x.to(device) for x in (q, k, v)]


def _triton(precision, block_t):
    def fn(q, k, v, **kwargs):
        return born_attention_linear_triton(q, k, v, **kwargs, precision=precision, block_t=block_t)
    return fn


# (B, H, T, D, Dv, reference kwargs, block_t): odd sizes, T one kernel chunk / several / not a multiple of it,
# decay as a number and per head, eps; D = 17 gives 2 x 2 feature tiles (off-diagonal Re and Im tiles), Dv = 40
# two value blocks.
_CASES = [
    (1, 2, 16, 5, 3, {"chunk": 16}, 16),
    (2, 1, 40, 5, 3, {"eps": 0.1, "decay": 0.9, "chunk": 8}, 16),
    (1, 2, 48, 7, 6, {"decay": torch.tensor([0.8, 1.0]), "chunk": 16}, 16),
    (1, 1, 37, 6, 40, {"eps": 0.5, "decay": 0.7, "chunk": 37}, 16),
    (1, 1, 24, 17, 2, {"eps": 0.2, "chunk": 12}, 16),
]


@pytest.mark.parametrize("b, h, t, d, dv, kwargs, block_t", _CASES)
def test_matches_reference_outputs_and_gradients(b, h, t, d, dv, kwargs, block_t):
    args = _inputs(b, h, t, d, dv)
    kwargs = {k: (x.to(DEVICE) if isinstance(x, torch.Tensor) else x) for k, x in kwargs.items()}
    rep = check_parity(_triton("ieee", block_t), born_attention_linear, args, kwargs, atol=2e-5, rtol=1e-4)
    rep.raise_if_failed()


def test_matches_the_quadratic_form_with_zero_rows():
    q, k, v = _inputs(1, 1, 20, 4, 3)
    q[:, :, 3] = 0  # orthogonal to everything: 0/0 -> 0 (eps = 0)
    out = born_attention_linear_triton(q, k, v, chunk=20, precision="ieee", block_t=16)
    torch.testing.assert_close(out, born_attention(q, k, v, causal=True), atol=2e-5, rtol=1e-4)
    assert torch.equal(out[:, :, 3], torch.zeros_like(out[:, :, 3]))


def test_tf32_runs_and_stays_close():
    q, k, v = _inputs(1, 1, 32, 5, 3)
    ref = born_attention_linear(q, k, v, decay=0.95, chunk=8)
    out = born_attention_linear_triton(q, k, v, decay=0.95, chunk=8, precision="tf32", block_t=16)
    assert (out - ref).abs().max() <= 5e-3 * ref.abs().max()


def _exact(q, k, v, **kwargs):
    """The reference in complex128, returned as complex64: the parity error is then the kernels' alone."""
    return born_attention_linear(*(x.to(torch.complex128) for x in (q, k, v)), **kwargs).to(torch.complex64)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's bf16 path (the GPU test covers CUDA)")
def test_bf16_compute_is_close_and_really_rounds():
    # the interpreter's tl.dot multiplies the raw bits of bf16 operands; the kernels round to bf16 and multiply as
    # fp32 there (the same values), so bf16 has a CPU parity check at a bf16 tolerance
    args, kwargs = _inputs(1, 2, 48, 17, 6, seed=3), {"eps": 0.1, "decay": 0.9, "chunk": 16}
    rep = check_parity(_triton("bf16", 16), _exact, args, kwargs)
    assert rep.max_error < 3e-2, rep.failures
    ieee = born_attention_linear_triton(*args, **kwargs, precision="ieee", block_t=16)
    bf16 = born_attention_linear_triton(*args, **kwargs, precision="bf16", block_t=16)
    assert 1e-4 < ((bf16 - ieee).abs().max() / ieee.abs().max()).item() < 2e-2


def _views(fn):
    """``fn`` on lazy conjugate and negative views of its inputs, its output conjugated (so the backward receives a
    conjugated gradient)."""

    def run(q, k, v, **kwargs):
        return fn(q.conj(), k._neg_view(), v.conj()._neg_view(), **kwargs).conj()

    return run


def test_conjugate_and_negative_views():
    q, k, v = _inputs(1, 2, 32, 5, 3, seed=4)
    kwargs = {"eps": 0.1, "decay": 0.9, "chunk": 8}
    assert supports_triton(q.conj(), k._neg_view(), v.conj()._neg_view(), **kwargs) == (True, "")
    rep = check_parity(_views(_triton("ieee", 16)), _views(born_attention_linear), [q, k, v], kwargs, atol=2e-5,
                       rtol=1e-4)
    rep.raise_if_failed()


@pytest.mark.parametrize("decay", [1e-50, 5e-324, torch.tensor([1e-50, 0.5], dtype=torch.float64)])
def test_decay_zero_in_float32_keeps_only_the_current_token(decay):
    # rates that are 0 in float32: log2 = -inf, clamped so that lag 0 weighs 1 and older tokens 0 (the reference's
    # gamma^0 = 1), without 0 * -inf = NaN in outputs or gradients
    q, k, v = _inputs(1, 2, 40, 5, 3, seed=5)
    kwargs = {"decay": decay.to(DEVICE) if isinstance(decay, torch.Tensor) else decay, "chunk": 8}
    rep = check_parity(_triton("ieee", 16), born_attention_linear, [q, k, v], kwargs, atol=2e-5, rtol=1e-4)
    rep.raise_if_failed()
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = born_attention_linear_triton(*leaves, **kwargs, precision="ieee", block_t=16)
    grads = torch.autograd.grad(out.abs().square().sum(), leaves)
    assert all(torch.isfinite(torch.view_as_real(x)).all() for x in (out, *grads))
    torch.testing.assert_close(out[:, 0].detach(), v[:, 0])  # head 0: gamma = 0, each token sees itself only


def test_registered_for_cuda_with_priority_20():
    op = registries().ops.get("born_attention_linear")
    assert [(b.name, b.device, b.priority) for b in op.backends] == [("triton", "cuda", 20)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU dispatch")
def test_cpu_dispatch_uses_the_reference():
    args = tuple(_inputs(1, 1, 4, 2, 2, device="cpu"))
    assert registries().ops.select("born_attention_linear", args, {"chunk": 2})[0] == "reference"


_REJECTED = [  # arguments the reference rejects: supports refuses them, so dispatch lets the reference raise
    ({"eps": -1.0}, "argument 'eps' must be a finite number >= 0"),
    ({"eps": float("nan")}, "argument 'eps' must be a finite number >= 0"),
    ({"decay": 1.5}, "argument 'decay' must lie in (0, 1]"),
    ({"decay": torch.tensor([0.5])}, "argument 'decay' must be r[H] with H=2"),
    ({"decay": True}, "argument 'decay' must be None, a number or a real tensor"),
    ({"chunk": 3}, "T=4 is not a multiple of chunk=3"),
    ({"chunk": 0}, "argument 'chunk' must be >= 1"),
    ({"chunk": 2.0}, "argument 'chunk' must be an int"),
    ({"return_state": 1}, "argument 'return_state' must be a bool"),
]
_UNIMPLEMENTED = [  # valid for the reference, not implemented here: the reference runs them
    ({"return_state": True}, "argument 'return_state=True' is not implemented by the triton backend"),
    ({"initial_state": "state"}, "argument 'initial_state' is not implemented by the triton backend"),
]


@pytest.mark.parametrize("kwargs, reason, rejected",
                         [(*c, True) for c in _REJECTED] + [(*c, False) for c in _UNIMPLEMENTED])
def test_supports_refuses_with_a_reason(kwargs, reason, rejected):
    q, k, v = _inputs(1, 2, 4, 3, 3)
    if kwargs.get("initial_state") == "state":
        kwargs = {"initial_state": BornAttentionState(q.new_zeros(1, 2, 3, 3, 3), q.new_zeros(1, 2, 3, 3))}
    kwargs = {"chunk": 2, **kwargs}
    ok, why = supports_triton(q, k, v, **kwargs)
    assert not ok and reason in why
    if rejected:
        with pytest.raises((TypeError, ValueError)):
            born_attention_linear(q, k, v, **kwargs)
    else:
        born_attention_linear(q, k, v, **kwargs)
    with pytest.raises((TypeError, ValueError), match="^born_attention_linear_triton: "):
        born_attention_linear_triton(q, k, v, **kwargs)


@pytest.mark.parametrize("change, error, reason", [
    (lambda q, k, v: (q.to(torch.complex128), k.to(torch.complex128), v.to(torch.complex128)), TypeError,
     "dtype torch.complex128 is not implemented by the triton backend"),
    (lambda q, k, v: (q, k, v.to(torch.complex128)), TypeError, "must share one dtype"),
    (lambda q, k, v: (q, k.real, v), TypeError, "argument 'k' must be a complex tensor"),
    (lambda q, k, v: (q, k[:, :, :2], v), ValueError, "arguments must have the same shape, got q=(1, 2, 4, 3), "
     "k=(1, 2, 2, 3)"),
    (lambda q, k, v: (q, k, v[0]), ValueError, "argument 'v' must be c[B, H, T, D] (4 dims), got shape (2, 4, 3)"),
    (lambda q, k, v: (q, k, torch.cat([v] * 22, dim=-1)), ValueError,
     "head dims D=3, Dv=66 beyond D <= 128, Dv <= 64 is not implemented"),
    (lambda q, k, v: (q[:, :, :0], k[:, :, :0], v[:, :, :0]), ValueError, "empty inputs"),
])
def test_supports_refuses_dtypes_shapes_and_sizes(change, error, reason):
    # dtype problems raise TypeError, shape and size problems ValueError (as the other Triton backends)
    args = change(*_inputs(1, 2, 4, 3, 3))
    ok, why = supports_triton(*args, chunk=2)
    assert not ok and reason in why
    with pytest.raises(error, match=f"^born_attention_linear_triton: .*{re.escape(reason)}"):
        born_attention_linear_triton(*args, chunk=2)


@pytest.mark.parametrize("kwargs, match", [
    ({"precision": "fp16"}, "argument 'precision' must be one of"),
    ({"block_t": 24}, "argument 'block_t' must be a power of two >= 16"),
    ({"block_t": 8}, "argument 'block_t' must be a power of two >= 16"),
])
def test_bad_kernel_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        born_attention_linear_triton(*_inputs(1, 1, 4, 2, 2), chunk=2, **kwargs)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kwargs, reason", _REJECTED)
def test_dispatch_on_gpu_leaves_refused_calls_to_the_reference(kwargs, reason):
    q, k, v = _inputs(1, 2, 4, 3, 3, device="cuda")
    kwargs = {"chunk": 2, **{k: (x.cuda() if isinstance(x, torch.Tensor) else x) for k, x in kwargs.items()}}
    assert registries().ops.select("born_attention_linear", (q, k, v), {"chunk": 2})[0] == "triton"
    assert registries().ops.select("born_attention_linear", (q, k, v), kwargs)[0] == "reference"
    with pytest.raises((TypeError, ValueError), match="^born_attention_linear: "):
        cnet.core.ops.born_attention_linear(q, k, v, **kwargs)


def _gpu_parity(t, d, dv, kwargs, precision, tol, b=2, h=2):
    """Output within ``tol`` (relative to its largest entry) of the complex128 reference; outputs and gradients
    within ``10 tol`` of the complex64 reference's (``rel_error``)."""
    q, k, v = _inputs(b, h, t, d, dv, device="cuda", seed=t)
    kwargs = {k: (x.cuda() if isinstance(x, torch.Tensor) else x) for k, x in kwargs.items()}
    with torch.no_grad():
        ref = born_attention_linear(*(x.to(torch.complex128) for x in (q, k, v)), **kwargs)
    out = born_attention_linear_triton(q, k, v, **kwargs, precision=precision)
    err = ((out.to(torch.complex128) - ref).abs().max() / ref.abs().max()).item()
    assert err < tol, f"{precision}: relative output error {err:.3g}"
    rep = check_parity(lambda *a, **kw: born_attention_linear_triton(*a, **kw, precision=precision),
                       born_attention_linear, [q, k, v], kwargs, atol=tol, rtol=tol)
    assert rep.max_error < 10 * tol, f"{precision}: worst relative error {rep.max_error:.3g}"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("t, d, dv, chunk", [(64, 32, 32, 64), (777, 20, 12, 7), (1000, 64, 64, 8), (4096, 32, 32, 64),
                                             (16384, 64, 64, 64)])
def test_gpu_parity_ieee_and_tf32(t, d, dv, chunk):
    kwargs = {"eps": 1e-3, "decay": torch.tensor([0.999, 1.0]), "chunk": chunk}
    b = 1 if t > 4096 else 2
    _gpu_parity(t, d, dv, kwargs, "ieee", 1e-4, b=b)
    _gpu_parity(t, d, dv, kwargs, "tf32", 5e-3, b=b)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_dispatch_picks_triton_and_bf16_stays_close():
    q, k, v = _inputs(2, 4, 512, 32, 32, device="cuda")
    out = cnet.core.ops.born_attention_linear(q, k, v, chunk=64)
    ref = born_attention_linear(q, k, v, chunk=64)
    assert registries().ops.select("born_attention_linear", (q, k, v), {"chunk": 64})[0] == "triton"
    assert ((out - ref).abs().max() / ref.abs().max()).item() < 1e-2
    low = born_attention_linear_triton(q, k, v, chunk=64, precision="bf16")
    assert ((low - ref).abs().max() / ref.abs().max()).item() < 5e-2
