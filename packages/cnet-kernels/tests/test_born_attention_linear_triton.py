"""The triton backend of born_attention_linear: parity with the reference (outputs and every input gradient), its
registration and its refusals. On CPU the kernels run in Triton's interpreter (see conftest.py) at small sizes."""

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
    # bf16 is checked on the GPU only: Triton's interpreter does not compute bf16 dots
    q, k, v = _inputs(1, 1, 32, 5, 3)
    ref = born_attention_linear(q, k, v, decay=0.95, chunk=8)
    out = born_attention_linear_triton(q, k, v, decay=0.95, chunk=8, precision="tf32", block_t=16)
    assert (out - ref).abs().max() <= 5e-3 * ref.abs().max()


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


@pytest.mark.parametrize("change, reason", [
    (lambda q, k, v: (q.to(torch.complex128), k.to(torch.complex128), v.to(torch.complex128)),
     "dtype torch.complex128 is not implemented by the triton backend"),
    (lambda q, k, v: (q, k, v.to(torch.complex128)), "must share one dtype"),
    (lambda q, k, v: (q, k.real, v), "argument 'k' must be a complex tensor"),
    (lambda q, k, v: (q, k[:, :, :2], v), "arguments must have the same shape"),
    (lambda q, k, v: (q, k, v[0]), "argument 'v' must be c[B, H, T, D] (4 dims)"),
    (lambda q, k, v: (q, k, torch.cat([v] * 22, dim=-1)),
     "head dims D=3, Dv=66 beyond D <= 128, Dv <= 64 is not implemented"),
    (lambda q, k, v: (q[:, :, :0], k[:, :, :0], v[:, :, :0]), "empty inputs"),
])
def test_supports_refuses_dtypes_shapes_and_sizes(change, reason):
    ok, why = supports_triton(*change(*_inputs(1, 2, 4, 3, 3)), chunk=2)
    assert not ok and reason in why


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
