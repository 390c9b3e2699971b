"""Linear (chunkwise) Born attention against the quadratic oracle; carried state, gradients, step form, errors."""

import pytest
import torch

from cnet.core import ops
from cnet.core.ops.reference import EXAMPLES, born_attention, born_attention_linear
from cnet.core.ops.reference.linear_attention import BornAttentionState, born_attention_step
from cnet.core.testing import gradcheck

_RATES = torch.tensor([0.85, 0.4, 1.0], dtype=torch.float64)  # one per head of _qkv()


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _qkv(b=2, h=3, t=12, d=3, dv=4, seed=0):
    return _randc(b, h, t, d, seed=seed), _randc(b, h, t, d, seed=seed + 1), _randc(b, h, t, dv, seed=seed + 2)


def _out_and_grads(fn, inputs, g, **kwargs):
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves, **kwargs)
    out.backward(g)
    return [out.detach()] + [t.grad for t in leaves]


def _state_by_definition(k, v, decay):
    """s[d, e, :] = sum_m gamma^(T-1-m) conj(k_md) k_me v_m and z likewise, summed directly."""
    t = k.shape[-2]
    w = decay[:, None] ** torch.arange(t - 1, -1, -1, dtype=torch.float64)
    kw = k.conj() * w[..., None]
    return torch.einsum("bhmd,bhme,bhmf->bhdef", kw, k, v), torch.einsum("bhmd,bhme->bhde", kw, k)


@pytest.mark.parametrize("t, chunk", [(12, 3), (7, 7), (5, 1), (12, 4)])
@pytest.mark.parametrize("decay", [None, 0.8, _RATES], ids=["none", "float", "per-head"])
@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_linear_matches_quadratic_with_grads(t, chunk, decay, eps):
    inputs = _qkv(t=t, seed=t + chunk)
    g = _randc(2, 3, t, 4, seed=99)
    ours = _out_and_grads(born_attention_linear, inputs, g, eps=eps, decay=decay, chunk=chunk)
    ref = _out_and_grads(born_attention, inputs, g, eps=eps, decay=decay)
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_linear_default_chunk_and_dispatch():
    q, k, v = _qkv(b=1, h=1, t=128, d=2, dv=2, seed=3)
    out = born_attention_linear(q, k, v)
    torch.testing.assert_close(out, born_attention(q, k, v), rtol=1e-10, atol=1e-12)
    assert torch.equal(ops.born_attention_linear(q, k, v), out)


@pytest.mark.parametrize("decay", [None, _RATES], ids=["none", "per-head"])
def test_linear_state_continues_a_split_sequence(decay):
    q, k, v = _qkv(t=12, seed=4)
    g = _randc(2, 3, 12, 4, seed=5)
    full = _out_and_grads(born_attention_linear, (q, k, v), g, eps=0.1, decay=decay, chunk=3)
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    first, state = born_attention_linear(*(x[..., :4, :] for x in leaves), eps=0.1, decay=decay, chunk=2,
                                         return_state=True)
    assert isinstance(state, BornAttentionState)
    second, last = born_attention_linear(*(x[..., 4:, :] for x in leaves), eps=0.1, decay=decay, chunk=4,
                                         initial_state=state, return_state=True)
    out = torch.cat([first, second], dim=-2)
    out.backward(g)  # the gradient of the first part also flows through the carried state
    for a, b in zip([out.detach()] + [x.grad for x in leaves], full, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    rates = torch.ones(3, dtype=torch.float64) if decay is None else decay
    for a, b in zip(last, _state_by_definition(k, v, rates), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_linear_gradcheck_through_initial_and_returned_state():
    q, k, v = _qkv(b=1, h=2, t=4, d=2, dv=3, seed=6)
    s0, z0 = _state_by_definition(_randc(1, 2, 3, 2, seed=7), _randc(1, 2, 3, 3, seed=8), _RATES[:2])

    def fn(q, k, v, s0, z0):
        out, state = born_attention_linear(q, k, v, eps=0.2, decay=_RATES[:2], chunk=2,
                                           initial_state=BornAttentionState(s0, z0), return_state=True)
        return out, state.s, state.z

    gradcheck(fn, [q, k, v, s0, z0]).raise_if_failed()


def test_linear_example_gradcheck():
    args, kwargs = EXAMPLES["born_attention_linear"](torch.complex128, torch.device("cpu"), 0)
    assert args[0].shape[-2] % kwargs["chunk"] == 0 and kwargs["chunk"] % 2 == 1
    gradcheck(born_attention_linear, args, kwargs).raise_if_failed()


def test_linear_zero_query_gives_zero_and_matches_quadratic_grads():
    q, k, v = _qkv(t=9, seed=9)
    q[0, 1, 4] = 0
    q[1, 2, 0] = 0
    g = _randc(2, 3, 9, 4, seed=10)
    ours = _out_and_grads(born_attention_linear, (q, k, v), g, chunk=3, decay=0.9)
    ref = _out_and_grads(born_attention, (q, k, v), g, decay=0.9)
    assert torch.equal(ours[0][0, 1, 4], torch.zeros(4, dtype=torch.complex128))
    for a, b in zip(ours, ref, strict=True):
        assert torch.isfinite(torch.view_as_real(a)).all()
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_linear_complex64_close_to_complex128():
    q, k, v = _qkv(t=16, seed=11)
    out = born_attention_linear(*(x.to(torch.complex64) for x in (q, k, v)), chunk=4, decay=_RATES)
    assert out.dtype == torch.complex64
    torch.testing.assert_close(out, born_attention(q, k, v, decay=_RATES).to(torch.complex64), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("decay, eps", [(None, 0.0), (_RATES, 0.05)])
def test_step_reproduces_the_full_window_in_complex64(decay, eps):
    q, k, v = (x.to(torch.complex64) for x in _qkv(t=20, seed=12))
    full, last = born_attention_linear(q, k, v, eps=eps, decay=decay, chunk=5, return_state=True)
    state, outs = None, []
    for t in range(q.shape[-2]):
        o, state = born_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state, eps=eps, decay=decay)
        outs.append(o)
    steps = torch.stack(outs, dim=-2)
    assert steps.dtype == torch.complex64 and not steps.requires_grad
    torch.testing.assert_close(steps, full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(steps, born_attention(q, k, v, eps=eps, decay=decay), rtol=1e-5, atol=1e-5)
    for a, b in zip(state, last, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_step_continues_from_a_chunked_prefix_and_leaves_the_state_alone():
    q, k, v = _qkv(t=8, seed=13)
    _, state = born_attention_linear(q[..., :6, :], k[..., :6, :], v[..., :6, :], chunk=3, decay=0.7,
                                     return_state=True)
    before = [x.clone() for x in state]
    o, _ = born_attention_step(q[:, :, 6], k[:, :, 6], v[:, :, 6], state, decay=0.7)
    torch.testing.assert_close(o, born_attention(q, k, v, decay=0.7)[:, :, 6], rtol=1e-10, atol=1e-12)
    assert all(torch.equal(a, b) for a, b in zip(state, before, strict=True))


_GOOD = _qkv(b=1, h=2, t=4, d=2, dv=2)
_STATE = BornAttentionState(_randc(1, 2, 2, 2, 2), _randc(1, 2, 2, 2))


@pytest.mark.parametrize("args, kwargs, exc, words", [
    (_GOOD, {"chunk": 3}, ValueError, "T=4 is not a multiple of chunk=3"),
    (_GOOD, {"chunk": 0}, ValueError, "'chunk' must be >= 1"),
    (_GOOD, {"chunk": 2.0}, TypeError, "'chunk' must be an int"),
    (_GOOD, {"chunk": True}, TypeError, "'chunk' must be an int"),
    (_GOOD, {"chunk": 2, "decay": 1.01}, ValueError, "'decay' must lie in \\(0, 1\\]"),
    (_GOOD, {"chunk": 2, "decay": torch.ones(3)}, ValueError, "H=2"),
    (_GOOD, {"eps": -1.0}, ValueError, "'eps' must be a finite number >= 0"),
    (_GOOD, {"chunk": 2, "return_state": 1}, TypeError, "'return_state' must be a bool"),
    ((_GOOD[0].real, *_GOOD[1:]), {}, TypeError, "'q' must be a complex"),
    ((_GOOD[0], _GOOD[1], _randc(1, 2, 3, 2)), {}, ValueError, "'v' must match 'q'"),
    (_GOOD, {"chunk": 2, "initial_state": _STATE.s}, TypeError, "'initial_state' must be a BornAttentionState"),
    (_GOOD, {"chunk": 2, "initial_state": (_STATE.s, _STATE.z[..., :1])}, ValueError, "z c\\[B, H, D, D\\]"),
    (_GOOD, {"chunk": 2, "initial_state": (_STATE.s, _STATE.z.to(torch.complex64))}, TypeError, "inputs' dtype"),
])
def test_linear_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        born_attention_linear(*args, **kwargs)


@pytest.mark.parametrize("args, kwargs, exc, words", [
    (_GOOD, {}, ValueError, "'q' must be c\\[B, H, D\\]"),
    (tuple(x[:, :, 0] for x in _GOOD), {"state": (_STATE.s[..., :1], _STATE.z)}, ValueError, "Dv"),
    (tuple(x[:, :, 0] for x in _GOOD), {"decay": 0.0}, ValueError, "'decay' must lie in"),
])
def test_step_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        born_attention_step(*args, **kwargs)


def test_step_forms_are_importable_from_the_reference_package_but_are_not_ops():
    import cnet.core.ops.reference as ref
    from cnet.core.plugins import registries

    for name in ("born_attention_step", "gated_linear_attention_step", "complex_scan_step"):
        assert callable(getattr(ref, name))
        assert name not in registries().ops.names()
    assert ref.BornAttentionState._fields == ("s", "z")
