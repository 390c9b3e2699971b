"""Gated linear attention: parallel form against the recurrence loop, gradients, gate limits, step form, errors."""

import pytest
import torch

from cnet.core import ops
from cnet.core.ops.reference import EXAMPLES, gated_linear_attention
from cnet.core.ops.reference.gla import gated_linear_attention_step
from cnet.core.testing import gradcheck


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _inputs(b=2, h=3, t=9, d=3, dv=4, seed=0):
    q, k, v = _randc(b, h, t, d, seed=seed), _randc(b, h, t, d, seed=seed + 1), _randc(b, h, t, dv, seed=seed + 2)
    g = 2 * _randc(b, h, t, seed=seed + 3).real
    return q, k, v, g


def _gla_loop(q, k, v, g, s0=None):
    """S_t = sigmoid(g_t) S_{t-1} + conj(k_t) (x) v_t, o_t = sum_d q_td S_t[d, :], one token at a time."""
    b, h, t, d = q.shape
    s = q.new_zeros(b, h, d, v.shape[-1]) if s0 is None else s0
    out = []
    for i in range(t):
        s = torch.sigmoid(g[:, :, i])[..., None, None] * s + k[:, :, i].conj()[..., :, None] * v[:, :, i, None, :]
        out.append(torch.einsum("bhd,bhdf->bhf", q[:, :, i], s))
    return torch.stack(out, dim=2), s


@pytest.mark.parametrize("t", [1, 6, 13])
@pytest.mark.parametrize("with_s0", [False, True])
def test_gla_matches_loop(t, with_s0):
    q, k, v, g = _inputs(t=t, seed=t)
    s0 = _randc(2, 3, 3, 4, seed=50) if with_s0 else None
    out, state = gated_linear_attention(q, k, v, g, initial_state=s0, return_state=True)
    ref, ref_state = _gla_loop(q, k, v, g, s0)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(state, ref_state, rtol=1e-10, atol=1e-12)
    assert torch.equal(ops.gated_linear_attention(q, k, v, g, initial_state=s0), out)


def test_gla_long_sequence_with_strong_forgetting_stays_exact():
    q, k, v, g = _inputs(b=1, h=2, t=200, seed=60)
    g = g - 6.0  # log-gates near -6 per token: discounts span hundreds of orders of magnitude
    torch.testing.assert_close(gated_linear_attention(q, k, v, g), _gla_loop(q, k, v, g)[0], rtol=1e-10, atol=1e-12)


def test_gla_grads_match_loop_autograd():
    q, k, v, g = _inputs(t=11, seed=70)
    s0 = _randc(2, 3, 3, 4, seed=71)
    go, gs = _randc(2, 3, 11, 4, seed=72), _randc(2, 3, 3, 4, seed=73)
    grads = []
    for fn in (lambda *x: gated_linear_attention(*x[:4], initial_state=x[4], return_state=True), _gla_loop):
        leaves = [x.clone().requires_grad_(True) for x in (q, k, v, g, s0)]
        out, state = fn(*leaves)
        ((go.conj() * out).real.sum() + (gs.conj() * state).real.sum()).backward()
        grads.append([x.grad for x in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)


def test_gla_gradcheck_with_state():
    q, k, v, g = _inputs(b=1, h=2, t=5, d=2, dv=3, seed=80)
    s0 = _randc(1, 2, 2, 3, seed=81)

    def fn(q, k, v, g, s0):
        return gated_linear_attention(q, k, v, g, initial_state=s0, return_state=True)

    gradcheck(fn, [q, k, v, g, s0]).raise_if_failed()


def test_gla_example_gradcheck():
    args, kwargs = EXAMPLES["gated_linear_attention"](torch.complex128, torch.device("cpu"), 0)
    assert args[0].shape[-2] % 2 == 1 and args[3].dtype == torch.float64
    gradcheck(gated_linear_attention, args, kwargs).raise_if_failed()


def test_gla_gate_limits():
    q, k, v, _ = _inputs(seed=90)
    c = q @ k.conj().transpose(-1, -2)
    open_gate = torch.full(q.shape[:-1], 60.0, dtype=torch.float64)  # sigmoid = 1: plain causal linear attention
    torch.testing.assert_close(gated_linear_attention(q, k, v, open_gate), c.tril() @ v, rtol=1e-10, atol=1e-12)
    shut = torch.full(q.shape[:-1], -800.0, dtype=torch.float64)  # sigmoid ~ 0: only the ungated current token
    torch.testing.assert_close(gated_linear_attention(q, k, v, shut), c.diagonal(dim1=-2, dim2=-1)[..., None] * v,
                               rtol=1e-10, atol=1e-12)


def test_gla_split_sequence_continues():
    q, k, v, g = _inputs(t=12, seed=100)
    out1, state = gated_linear_attention(*(x[:, :, :5] for x in (q, k, v, g)), return_state=True)
    out2 = gated_linear_attention(*(x[:, :, 5:] for x in (q, k, v, g)), initial_state=state)
    torch.testing.assert_close(torch.cat([out1, out2], dim=2), gated_linear_attention(q, k, v, g),
                               rtol=1e-10, atol=1e-12)


def test_gla_step_reproduces_the_full_window_in_complex64():
    q, k, v, g = _inputs(t=24, seed=110)
    q, k, v, g = q.to(torch.complex64), k.to(torch.complex64), v.to(torch.complex64), g.float()
    full, last = gated_linear_attention(q, k, v, g, return_state=True)
    state, outs = None, []
    for t in range(q.shape[2]):
        o, state = gated_linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], g[:, :, t], state)
        outs.append(o)
    steps = torch.stack(outs, dim=2)
    assert steps.dtype == torch.complex64 and not steps.requires_grad
    torch.testing.assert_close(steps, full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(state, last, rtol=1e-5, atol=1e-5)


_GOOD = _inputs(b=1, h=2, t=4, d=2, dv=2)


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((*_GOOD[:3], _GOOD[3].float()), {}, TypeError, "'g' must have dtype torch.float64"),
    ((*_GOOD[:3], _GOOD[3].to(torch.complex128)), {}, TypeError, "'g' must be a real floating tensor"),
    ((*_GOOD[:3], 0.5), {}, TypeError, "'g' must be a real floating tensor"),
    ((*_GOOD[:3], _GOOD[3][..., :3]), {}, ValueError, "'g' must be r\\[1, 2, 4\\]"),
    ((_GOOD[0].real, *_GOOD[1:]), {}, TypeError, "'q' must be a complex"),
    ((_GOOD[0], _GOOD[1][..., :1], *_GOOD[2:]), {}, ValueError, "same shape"),
    (_GOOD, {"initial_state": _randc(1, 2, 2, 3)}, ValueError, "'initial_state' must be c\\[B, H, D, Dv\\]"),
    (_GOOD, {"initial_state": _randc(1, 2, 2, 2, dtype=torch.complex64)}, TypeError, "dtype torch.complex128"),
    (_GOOD, {"return_state": "yes"}, TypeError, "'return_state' must be a bool"),
    (tuple(x[:, :, :0] for x in _GOOD), {}, ValueError, "no tokens"),
])
def test_gla_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        gated_linear_attention(*args, **kwargs)


def test_gla_step_bad_input():
    q, k, v, g = (x[:, :, 0] for x in _GOOD)
    with pytest.raises(ValueError, match="'g' must be r\\[1, 2\\]"):
        gated_linear_attention_step(q, k, v, g[..., None])
    with pytest.raises(ValueError, match="'q' must be c\\[B, H, D\\]"):
        gated_linear_attention_step(*_GOOD)


def test_multihead_gla_layer_is_the_token_loop_of_its_recurrence():
    from cnet.core.nn import MultiheadGatedLinearAttention

    torch.manual_seed(0)
    layer = MultiheadGatedLinearAttention(8, num_heads=2, qk_dim=6, rope=False, init_std=0.3)
    x = torch.randn(2, 9, 8, dtype=torch.complex64)
    q, k, v = (layer._heads(p(x)) for p in (layer.q_proj, layer.k_proj, layer.v_proj))
    g = layer.gate_proj(x).real.transpose(1, 2)
    o = _gla_loop(q, k, v, g)[0].transpose(1, 2).reshape(2, 9, 6)
    o = o / o.abs().square().mean(-1, keepdim=True).add(1e-5).sqrt()
    torch.testing.assert_close(layer(x), layer.out_proj(o), atol=1e-5, rtol=1e-4)


def test_multihead_gla_layer_starts_with_graded_retention_and_checks_sizes():
    from cnet.core.nn import MultiheadGatedLinearAttention

    layer = MultiheadGatedLinearAttention(16, num_heads=4)
    keep = torch.sigmoid(layer.gate_proj.bias.real)
    torch.testing.assert_close(keep, torch.tensor([1 - 2**-3, 1 - 2**-(3 + 5 / 3), 1 - 2**-(3 + 10 / 3), 1 - 2**-8]))
    with pytest.raises(ValueError, match="attention width 8 .* divisible by num_heads=3"):
        MultiheadGatedLinearAttention(16, num_heads=3)
    with pytest.raises(TypeError, match="MultiheadGatedLinearAttention"):
        layer(torch.randn(1, 4, 16))
