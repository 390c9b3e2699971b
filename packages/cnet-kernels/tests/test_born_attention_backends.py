"""Backend parity of cnet-kernels' Born attention with the reference, and its registration."""

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import born_attention
from cnet.core.plugins import registries
from cnet.core.testing import check_parity
from cnet.kernels.born_attention import born_attention_planar, supports_planar


def _inputs(b, h, t, d, dv, dtype, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, d, dtype=dtype, generator=g) for _ in range(2))
    v = torch.randn(b, h, t, dv, dtype=dtype, generator=g)
    return [x.to(device) for x in (q, k, v)]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("t", [1, 7, 63])
def test_planar_matches_reference_outputs_and_gradients(t, causal):
    args = _inputs(2, 3, t, 5, 4, torch.complex128)
    rep = check_parity(born_attention_planar, born_attention, args, {"causal": causal, "eps": 0.0},
                       atol=1e-10, rtol=1e-9)
    rep.raise_if_failed()


def test_planar_zero_rows_and_eps():
    q, k, v = _inputs(1, 1, 6, 3, 3, torch.complex128)
    q[:, :, 2] = 0  # a query orthogonal to everything: its row is 0/0 -> 0
    for eps in (0.0, 0.5):
        out = born_attention_planar(q, k, v, causal=True, eps=eps)
        torch.testing.assert_close(out, born_attention(q, k, v, causal=True, eps=eps), atol=1e-12, rtol=1e-10)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))


def test_registered_for_cuda_only_and_refuses_cpu():
    op = registries().ops.get("born_attention")
    assert [(b.name, b.device) for b in op.backends] == [("triton", "cuda"), ("planar", "cuda")]
    ok, reason = supports_planar(*_inputs(1, 1, 4, 2, 2, torch.complex64))
    assert not ok and "CUDA" in reason
    # on CPU the dispatcher must fall back to the reference
    name, _ = registries().ops.select("born_attention", tuple(_inputs(1, 1, 4, 2, 2, torch.complex64)), {})
    assert name == "reference"


_BAD_ARGUMENTS = [  # (positional args after q, k, v; keyword args; the reason supports_planar gives)
    ((), {"eps": -1.0}, "argument 'eps' is not a finite number >= 0 (got -1.0)"),
    ((), {"eps": float("nan")}, "argument 'eps' is not a finite number >= 0 (got nan)"),
    ((), {"eps": float("inf")}, "argument 'eps' is not a finite number >= 0 (got inf)"),
    ((), {"eps": True}, "argument 'eps' is not a finite number >= 0 (got True)"),
    ((), {"eps": torch.tensor(0.0)}, "argument 'eps' is not a finite number >= 0 (got tensor(0.))"),
    ((True, -0.5), {}, "argument 'eps' is not a finite number >= 0 (got -0.5)"),
    ((), {"causal": 1}, "argument 'causal' is not a bool (got int)"),
    ((), {"causal": "no"}, "argument 'causal' is not a bool (got str)"),
    ((), {"decay": 0.9}, "planar backend has no decay"),
]


@pytest.mark.parametrize("args, kwargs, reason", _BAD_ARGUMENTS)
def test_supports_refuses_arguments_the_reference_rejects_before_looking_at_the_device(args, kwargs, reason):
    q, k, v = _inputs(1, 2, 4, 3, 3, torch.complex64)
    assert supports_planar(q, k, v, *args, **kwargs) == (False, reason)
    if "decay" not in kwargs:  # the reference raises for every one of them
        with pytest.raises((TypeError, ValueError), match="argument '(eps|causal)'"):
            born_attention(q, k, v, *args, **kwargs)


@pytest.mark.parametrize("change, reason", [
    (lambda q, k, v: (q, k, v.to(torch.complex128)), "argument 'v' is not a complex64 tensor (got torch.complex128)"),
    (lambda q, k, v: (q, k.real, v), "argument 'k' is not a complex64 tensor (got torch.float32)"),
    (lambda q, k, v: (q.tolist(), k, v), "argument 'q' is not a complex64 tensor (got list)"),
    (lambda q, k, v: (q, k[:, :, :3], v), "shapes are not q, k c[B, H, T, D] and v c[B, H, T, Dv]"),
    (lambda q, k, v: (q, k, v[:, :, :3]), "shapes are not q, k c[B, H, T, D] and v c[B, H, T, Dv]"),
    (lambda q, k, v: (q, k, v[0]), "shapes are not q, k c[B, H, T, D] and v c[B, H, T, Dv]"),
    (lambda q, k, v: (q[0], k[0], v[0]), "shapes are not q, k c[B, H, T, D] and v c[B, H, T, Dv]"),
])
def test_supports_refuses_mismatched_dtypes_and_shapes(change, reason):
    ok, why = supports_planar(*change(*_inputs(1, 2, 4, 3, 3, torch.complex64)))
    assert not ok and why.startswith(reason)


def test_planar_refuses_decay_when_called_directly():
    with pytest.raises(ValueError, match="born_attention_planar: argument 'decay' is not supported by the planar"):
        born_attention_planar(*_inputs(1, 1, 3, 2, 2, torch.complex64), decay=0.5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("args, kwargs, reason", _BAD_ARGUMENTS)
def test_dispatch_on_gpu_leaves_bad_arguments_to_the_reference(args, kwargs, reason):
    q, k, v = _inputs(1, 2, 4, 3, 3, torch.complex64, device="cuda")
    chosen = registries().ops.select("born_attention", (q, k, v, *args), kwargs)[0]
    assert chosen == ("triton" if "decay" in kwargs else "reference")  # triton implements decay, planar does not
    assert registries().ops.select("born_attention", (q, k, v), {})[0] == "triton"
    with cnet.core.use_backend("planar"):
        assert registries().ops.select("born_attention", (q, k, v), {})[0] == "planar"
    if "decay" in kwargs:
        torch.testing.assert_close(cnet.core.ops.born_attention(q, k, v, *args, **kwargs),
                                   born_attention(q, k, v, *args, **kwargs), atol=2e-3, rtol=2e-3)  # tf32
    else:
        with pytest.raises((TypeError, ValueError), match="^born_attention: argument '(eps|causal)'"):
            cnet.core.ops.born_attention(q, k, v, *args, **kwargs)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("t", [64, 1000, 4096])
def test_planar_parity_on_gpu(t):
    args = _inputs(2, 4, t, 32, 32, torch.complex64, device="cuda")
    rep = check_parity(born_attention_planar, born_attention, args, {"causal": True}, atol=2e-4, rtol=2e-3)
    rep.raise_if_failed()
