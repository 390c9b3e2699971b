"""The flash-style Triton Born attention (backend ``triton``): parity with the reference (outputs and every input
gradient), registration and refusals. CPU tests run the kernels in Triton's interpreter (tests/conftest.py sets
TRITON_INTERPRET=1 without CUDA); GPU tests are marked ``gpu``."""

import pytest
import torch

import cnet.core.ops
from cnet.core.ops.reference import born_attention
from cnet.core.plugins import registries
from cnet.core.testing import check_parity, rel_error
from cnet.kernels.born_attention import born_attention_triton, supports_triton, triton_kernels, triton_quadratic
from cnet.kernels.triton_support import interpreting

interpreter = pytest.mark.skipif(not interpreting(), reason="runs the kernels on CPU in Triton's interpreter")


def _inputs(b, h, t, d, dv, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, d, dtype=torch.complex64, generator=g) for _ in range(2))
    v = torch.randn(b, h, t, dv, dtype=torch.complex64, generator=g)
    return [x.to(device) for x in (q, k, v)]


def _exact(q, k, v, **kwargs):
    """The reference in complex128, returned as complex64: the parity error is then the kernels' alone."""
    return born_attention(*(x.to(torch.complex128) for x in (q, k, v)), **kwargs).to(torch.complex64)


def _with(precision):
    return lambda *args, **kwargs: born_attention_triton(*args, precision=precision, **kwargs)


def _parity(args, kwargs, precision="tf32", atol=5e-5, rtol=1e-4):
    # the interpreter computes tf32 and ieee products alike in fp32, hence one tight tolerance on CPU
    check_parity(_with(precision), _exact, args, kwargs, atol=atol, rtol=rtol).raise_if_failed()


@interpreter
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("t", [1, 7, 33])
def test_matches_reference_outputs_and_gradients(t, causal):
    _parity(_inputs(2, 2, t, 5, 3), {"causal": causal})


@interpreter
@pytest.mark.parametrize("kwargs", [
    {"causal": False, "eps": 0.5},
    {"causal": True, "eps": 2.0},
    {"causal": True, "decay": 0.8},
    {"causal": True, "eps": 0.1, "decay": torch.tensor([0.95, 0.5, 1.0])},
])
def test_eps_and_decay_match_reference(kwargs):
    _parity(_inputs(1, 3, 33, 4, 6, seed=1), kwargs)


@interpreter
@pytest.mark.parametrize("causal", [True, False])
def test_zero_rows_follow_the_zero_over_zero_rule(causal):
    q, k, v = _inputs(1, 2, 20, 3, 5, seed=2)
    q[:, :, 4] = 0  # orthogonal to every key: 0/0 -> 0
    k[:, 1] = 0  # head 1 sees only zero keys: every row is 0/0
    _parity([q, k, v], {"causal": causal})
    out = born_attention_triton(q, k, v, causal=causal)
    assert torch.equal(out[:, :, 4], torch.zeros_like(out[:, :, 4]))
    assert torch.equal(out[:, 1], torch.zeros_like(out[:, 1]))


@interpreter
def test_tiny_decay_underflows_to_zero_without_nan():
    q, k, v = _inputs(1, 2, 24, 3, 3, seed=3)
    _parity([q, k, v], {"causal": True, "decay": torch.tensor([1e-30, 0.3])})
    assert torch.isfinite(born_attention_triton(q, k, v, decay=1e-30)).all()


@interpreter
@pytest.mark.parametrize("blocks", [{"BM": 32, "BN": 16}, {"BM": 16, "BN": 32}])
@pytest.mark.parametrize("kwargs", [{"causal": True, "decay": 0.9}, {"causal": False, "eps": 0.2}])
def test_unequal_query_and_key_blocks(monkeypatch, blocks, kwargs):
    # the causal split into unmasked and diagonal blocks must hold for BM != BN (as the GPU configs have)
    monkeypatch.setattr(triton_kernels, "_INTERPRETER_BLOCKS", blocks)
    _parity(_inputs(1, 2, 50, 5, 4, seed=4), kwargs)


@interpreter
def test_every_output_element_is_written(monkeypatch):
    empty, empty_like = torch.empty, torch.empty_like
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: empty(*a, **kw).fill_(float("nan")))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **kw: empty_like(*a, **kw).fill_(float("nan")))
    _parity(_inputs(2, 1, 19, 7, 9, seed=5), {"causal": True})


@interpreter
def test_conjugated_and_strided_inputs():
    q, k, v = _inputs(1, 2, 18, 6, 4, seed=6)
    args = [q.conj()[..., ::2], k[..., 1::2], v.transpose(2, 3).contiguous().transpose(2, 3)]
    assert args[0].is_conj() and not any(x.is_contiguous() for x in args)
    _parity(args, {"causal": True})  # check_parity's leaves are clones: the conjugate bit is resolved there


def _views(fn):
    """``fn`` on lazy negative and conjugate views of its inputs (made from check_parity's leaves, whose clones drop
    the bits), its output conjugated (so the backward receives a conjugated gradient)."""

    def run(q, k, v, **kwargs):
        return fn(q._neg_view(), k.conj()._neg_view(), v.conj(), **kwargs).conj()

    return run


@interpreter
@pytest.mark.parametrize("kwargs", [{"causal": True, "decay": 0.9}, {"causal": False}])
def test_negative_and_conjugate_views(kwargs):
    q, k, v = _inputs(1, 2, 18, 5, 4, seed=6)
    assert supports_triton(q._neg_view(), k.conj()._neg_view(), v.conj(), **kwargs) == (True, "")
    check_parity(_views(_with("ieee")), _views(_exact), [q, k, v], kwargs, atol=5e-5, rtol=1e-4).raise_if_failed()


@interpreter
@pytest.mark.parametrize("decay", [1e-50, 5e-324, torch.tensor([0.5, 1e-50], dtype=torch.float64)])
def test_decay_zero_in_float32_keeps_only_the_current_token(decay):
    # rates that are 0 in float32: log2 = -inf, clamped so that lag 0 weighs 1 and older keys 0 (the reference's
    # gamma^0 = 1), without 0 * -inf = NaN in outputs or gradients
    q, k, v = _inputs(1, 2, 20, 3, 3, seed=3)
    check_parity(_with("ieee"), born_attention, [q, k, v], {"decay": decay}, atol=5e-5,
                 rtol=1e-4).raise_if_failed()
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = born_attention_triton(*leaves, decay=decay, precision="ieee")
    grads = torch.autograd.grad(out.abs().square().sum(), leaves)
    assert all(torch.isfinite(torch.view_as_real(x)).all() for x in (out, *grads))
    torch.testing.assert_close(out[:, 1].detach(), v[:, 1])  # head 1: gamma = 0, each query sees its own key only


@interpreter
def test_bf16_compute_is_close_and_really_rounds():
    args, kwargs = _inputs(1, 2, 40, 8, 8, seed=7), {"causal": True}
    rep = check_parity(_with("bf16"), _exact, args, kwargs)
    assert rep.max_error < 3e-2, rep.failures
    assert rel_error(born_attention_triton(*args, precision="bf16"), born_attention_triton(*args)) > 1e-5


@interpreter
def test_module_precision_switch(monkeypatch):
    args = _inputs(1, 1, 16, 4, 4, seed=8)
    monkeypatch.setattr(triton_quadratic, "PRECISION", "bf16")
    assert torch.equal(born_attention_triton(*args), born_attention_triton(*args, precision="bf16"))
    monkeypatch.setattr(triton_quadratic, "PRECISION", "fp64")
    with pytest.raises(ValueError, match="born_attention_triton: argument 'precision' .* got 'fp64'"):
        born_attention_triton(*args)


def test_registered_for_cuda_above_planar_and_cpu_uses_the_reference():
    op = registries().ops.get("born_attention")
    assert [(b.name, b.device, b.priority) for b in op.backends] == [("triton", "cuda", 20), ("planar", "cuda", 10)]
    name, _ = registries().ops.select("born_attention", tuple(_inputs(1, 1, 4, 2, 2)), {})
    assert name == "reference"


_REJECTED = [  # (change of (q, k, v), positional args after q, k, v, keyword args): the reference raises
    (None, (), {"eps": -1.0}),
    (None, (), {"eps": float("nan")}),
    (None, (), {"eps": float("inf")}),
    (None, (), {"eps": True}),
    (None, (), {"eps": torch.tensor(0.0)}),
    (None, (True, -0.5), {}),
    (None, (), {"causal": 1}),
    (None, (), {"causal": "no"}),
    (None, (False,), {"decay": 0.9}),
    (None, (), {"decay": 0.0}),
    (None, (), {"decay": 1.5}),
    (None, (), {"decay": float("nan")}),
    (None, (), {"decay": True}),
    (None, (), {"decay": torch.tensor([0.9, 0.9, 0.9])}),
    (None, (), {"decay": torch.tensor([1, 1])}),
    (None, (), {"decay": torch.tensor([0.9, 0.9], requires_grad=True)}),
    (lambda q, k, v: (q, k, v.to(torch.complex128)), (), {}),
    (lambda q, k, v: (q, k.real, v), (), {}),
    (lambda q, k, v: (q.tolist(), k, v), (), {}),
    (lambda q, k, v: (q, k[:, :, :3], v), (), {}),
    (lambda q, k, v: (q, k, v[:, :, :3]), (), {}),
    (lambda q, k, v: (q[0], k[0], v[0]), (), {}),
]


@pytest.mark.parametrize("change, args, kwargs", _REJECTED)
def test_supports_refuses_what_the_reference_rejects_with_its_message(change, args, kwargs):
    q, k, v = _inputs(1, 2, 4, 3, 3)
    if change is not None:
        q, k, v = change(q, k, v)
    with pytest.raises((TypeError, ValueError)) as exc:
        born_attention(q, k, v, *args, **kwargs)
    assert supports_triton(q, k, v, *args, **kwargs) == (False, str(exc.value))


@pytest.mark.parametrize("change, error, reason", [
    (lambda q, k, v: [x.to(torch.complex128) for x in (q, k, v)], TypeError, "complex64 inputs only"),
    (lambda q, k, v: (q[:, :, :0], k[:, :, :0], v[:, :, :0]), ValueError, "non-empty inputs only"),
    (lambda q, k, v: (q, k, torch.zeros(1, 2, 4, 129, dtype=torch.complex64)), ValueError,
     "head dims up to 128, got D=3, Dv=129"),
])
def test_refuses_what_only_the_kernels_cannot_take(change, error, reason):
    args = change(*_inputs(1, 2, 4, 3, 3))
    born_attention(*args)  # the reference takes them
    ok, why = supports_triton(*args)
    assert not ok and reason in why
    with pytest.raises(error, match=f"^born_attention_triton: .*{reason}"):
        born_attention_triton(*args)


def test_refuses_cpu_tensors_outside_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert supports_triton(*_inputs(1, 1, 4, 2, 2)) == (False, "born_attention: inputs are on cpu, not CUDA")


@pytest.mark.parametrize("tuned, shared", [
    (triton_kernels._fwd_tuned, triton_kernels._shared_fwd),
    (triton_kernels._dq_tuned, triton_kernels._shared_dq),
    (triton_kernels._dkdv_tuned, triton_kernels._shared_dkdv),
])
def test_autotune_configs_fit_shared_memory_and_follow_the_switch(monkeypatch, tuned, shared):
    for dtype, prec in ((torch.bfloat16, "tf32"), (torch.float32, "tf32"), (torch.float32, "ieee")):
        for width in (16, 128, 256):  # D2P = DV2P: D = 8, 64 and MAX_HEAD_DIM
            args = {"Q": torch.empty(1, dtype=dtype), "D2P": width, "DV2P": width, "KMAJOR": dtype == torch.float32,
                    "PREC": prec}
            monkeypatch.setattr(triton_kernels, "AUTOTUNE", True)
            chosen = tuned.early_config_prune(tuned.configs, {}, **args)
            sizes = [shared(c.kwargs["BM"], c.kwargs["BN"], c.num_stages, args) for c in chosen]
            assert chosen and max(sizes) <= triton_kernels._SHARED_MEMORY_BUDGET, (dtype, prec, width, sizes)
            monkeypatch.setattr(triton_kernels, "AUTOTUNE", False)
            assert tuned.early_config_prune(tuned.configs, {}, **args) == chosen[:1]


# GPU (the lead's H200): real sizes against the reference; errors are max-normalised (cnet.core.testing.rel_error).
_TOLERANCE = {"ieee": 1e-4, "tf32": 2e-2, "bf16": 6e-2}  # about 5x the errors of a tf32/bf16 rounding emulation


def _gpu_parity(args, kwargs, precision):
    rep = check_parity(_with(precision), _exact, args, kwargs)
    assert rep.max_error < _TOLERANCE[precision], rep.failures


@pytest.mark.parametrize("t, causal, d, dv, precision", [
    (1000, True, 33, 17, "ieee"),
    (4096, True, 64, 64, "tf32"),
    (4096, False, 64, 64, "tf32"),
    (4096, True, 64, 64, "bf16"),
])
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_parity(t, causal, d, dv, precision):
    _gpu_parity(_inputs(2, 4, t, d, dv, device="cuda"), {"causal": causal, "eps": 1e-3}, precision)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_per_head_decay():
    decay = torch.tensor([0.999, 0.99, 0.9, 0.5], device="cuda")
    _gpu_parity(_inputs(1, 4, 4096, 64, 64, device="cuda"), {"causal": True, "decay": decay}, "tf32")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_16k_single_head_without_quadratic_memory():
    args = _inputs(1, 1, 16384, 64, 64, device="cuda", seed=1)
    _gpu_parity(args, {"causal": True}, "tf32")  # the reference's T x T planes fit for one head
    leaves = [x.clone().requires_grad_() for x in args]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    born_attention_triton(*leaves).abs().square().sum().backward()
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - base < 64 * 16384 * 64 * 8  # O(T D); one T x T fp32 plane is 1 GiB


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_dispatch_picks_triton_and_leaves_the_rest():
    q, k, v = _inputs(1, 2, 64, 64, 64, device="cuda")  # D = 64: the kernels compiled for the tests above
    select = registries().ops.select
    assert select("born_attention", (q, k, v), {"decay": 0.9})[0] == "triton"
    assert select("born_attention", (q, k, v, True, -1.0), {})[0] == "reference"
    assert select("born_attention", tuple(x.to(torch.complex128) for x in (q, k, v)), {})[0] == "reference"
    torch.testing.assert_close(cnet.core.ops.born_attention(q, k, v), born_attention(q, k, v), atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="^born_attention: argument 'eps'"):
        cnet.core.ops.born_attention(q, k, v, eps=-1.0)
