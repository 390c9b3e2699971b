"""Born attention: op against loops and plain autograd, gradients, causality, eps and 0/0, layers."""

import itertools

import pytest
import torch

from cnet.core import ops
from cnet.core.nn.attention import BornAttention, MultiheadBornAttention
from cnet.core.ops.reference import EXAMPLES, born_attention, rotary
from cnet.core.testing import gradcheck


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _qkv(b=2, h=2, t=7, d=3, dv=4, seed=0):
    return _randc(b, h, t, d, seed=seed), _randc(b, h, t, d, seed=seed + 1), _randc(b, h, t, dv, seed=seed + 2)


def _born_loop(q, k, v, causal=True, eps=0.0, decay=None):
    """Direct form: one query row at a time, scores from explicit inner products (decay: list of per-head rates)."""
    b_n, h_n, t_n, _ = q.shape
    out = torch.full((b_n, h_n, t_n, v.shape[-1]), complex("nan"), dtype=v.dtype)
    for b, h, i in itertools.product(range(b_n), range(h_n), range(t_n)):
        keys = range(i + 1) if causal else range(t_n)
        scores = [abs(torch.vdot(k[b, h, m], q[b, h, i]).item()) ** 2 for m in keys]
        if decay is not None:
            scores = [s * decay[h] ** (i - m) for m, s in zip(keys, scores, strict=True)]
        norm = sum(scores) + eps
        row = torch.zeros(v.shape[-1], dtype=v.dtype)
        if norm > 0:
            for m, s in zip(keys, scores, strict=True):
                row += (s / norm) * v[b, h, m]
        out[b, h, i] = row
    return out


def _born_autograd(q, k, v, causal=True, eps=0.0, decay=None):
    """The same rule through plain complex autograd (safe denominators give the 0/0 -> 0 rule; decay r[H])."""
    s = (q @ k.conj().transpose(-1, -2)).abs() ** 2
    if causal:
        s = s.tril()
    if decay is not None:
        lag = torch.arange(q.shape[-2])
        s = s * decay[:, None, None] ** (lag[:, None] - lag).clamp(min=0)
    n = s.sum(-1, keepdim=True) + eps
    return (s / torch.where(n > 0, n, torch.ones_like(n))).to(v.dtype) @ v


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("eps", [0.0, 0.7])
def test_born_attention_matches_loop(causal, eps):
    q, k, v = _qkv()
    torch.testing.assert_close(born_attention(q, k, v, causal=causal, eps=eps), _born_loop(q, k, v, causal, eps),
                               rtol=1e-10, atol=1e-12)


def test_born_attention_complex64_close_to_complex128():
    q, k, v = _qkv(seed=3)
    out = born_attention(*(t.to(torch.complex64) for t in (q, k, v)))
    assert out.dtype == torch.complex64
    torch.testing.assert_close(out, born_attention(q, k, v).to(torch.complex64), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal, eps", [(False, 0.0), (True, 0.3)])  # causal, eps = 0: the EXAMPLES test
def test_born_attention_gradcheck(causal, eps):
    q, k, v = _qkv(b=1, h=2, t=5, d=3, dv=2, seed=4)
    gradcheck(born_attention, [q, k, v], {"causal": causal, "eps": eps}).raise_if_failed()


def test_born_attention_example_gradcheck():
    args, kwargs = EXAMPLES["born_attention"](torch.complex128, torch.device("cpu"), 0)
    assert args[0].shape[-2] % 2 == 1
    gradcheck(born_attention, args, kwargs).raise_if_failed()


@pytest.mark.parametrize("causal", [True, False])
def test_born_attention_grads_match_plain_autograd(causal):
    inputs = _qkv(b=2, h=3, t=9, d=5, dv=3, seed=5)
    g = _randc(2, 3, 9, 3, seed=8)
    grads = []
    for fn in (born_attention, _born_autograd):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        fn(*leaves, causal=causal, eps=0.1).backward(g)
        grads.append([t.grad for t in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)


def test_born_attention_is_causal():
    q, k, v = _qkv(seed=9)
    out = born_attention(q, k, v)
    k2, v2 = k.clone(), v.clone()
    k2[..., 4:, :] = _randc(2, 2, 3, 3, seed=10)
    v2[..., 4:, :] = _randc(2, 2, 3, 4, seed=11)
    out2 = born_attention(q, k2, v2)
    assert torch.equal(out[..., :4, :], out2[..., :4, :])
    assert not torch.allclose(out[..., 4:, :], out2[..., 4:, :])
    # the gradient of an early output reaches no later key or value
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    born_attention(*leaves)[..., 3, :].abs().sum().backward()
    for t in leaves:
        assert torch.all(t.grad[..., 4:, :] == 0)
        assert torch.any(t.grad[..., :4, :] != 0)


def test_born_attention_non_causal_sees_the_future():
    q, k, v = _qkv(seed=12)
    v2 = v.clone()
    v2[..., -1, :] += 1.0
    assert not torch.allclose(born_attention(q, k, v, causal=False)[..., 0, :],
                              born_attention(q, k, v2, causal=False)[..., 0, :])


def test_born_attention_weights_sum_to_one_or_shrink_with_eps():
    q, k, _ = _qkv(seed=13)
    ones = torch.ones(2, 2, 7, 1, dtype=torch.complex128)
    torch.testing.assert_close(born_attention(q, k, ones).real, torch.ones(2, 2, 7, 1, dtype=torch.float64))
    eps = 2.0
    total = ((q @ k.conj().transpose(-1, -2)).abs() ** 2).tril().sum(-1, keepdim=True)
    torch.testing.assert_close(born_attention(q, k, ones, eps=eps).real, total / (total + eps))
    assert torch.all(born_attention(q, k, ones, eps=eps).real < 1)


def test_born_attention_zero_row_gives_zero_and_finite_grads():
    q, k, v = _qkv(seed=14)
    q[0, 1, 3] = 0
    q[1, 0, 0] = 0
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = born_attention(*leaves)
    assert torch.equal(out[0, 1, 3], torch.zeros(4, dtype=torch.complex128))
    assert torch.equal(out[1, 0, 0], torch.zeros(4, dtype=torch.complex128))
    assert torch.isfinite(torch.view_as_real(out)).all()
    g = _randc(*out.shape, seed=15)
    out.backward(g)
    ref_leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    _born_autograd(*ref_leaves).backward(g)
    for ours, ref in zip(leaves, ref_leaves, strict=True):
        assert torch.isfinite(torch.view_as_real(ours.grad)).all()
        torch.testing.assert_close(ours.grad, ref.grad, rtol=1e-10, atol=1e-12)


def test_born_attention_zero_query_with_eps_gives_zero():
    q, k, v = _qkv(seed=16)
    q[..., 2, :] = 0
    assert torch.equal(born_attention(q, k, v, eps=1e-3)[..., 2, :], torch.zeros(2, 2, 4, dtype=torch.complex128))


_GOOD = _qkv(b=1, h=1, t=3, d=2, dv=2)


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((_GOOD[0].real, _GOOD[1], _GOOD[2]), {}, TypeError, "'q' must be a complex"),
    ((_GOOD[0], _GOOD[1], _GOOD[2].real), {}, TypeError, "'v' must be a complex"),
    ((_GOOD[0][0], _GOOD[1][0], _GOOD[2][0]), {}, ValueError, "'q' must be c\\[B, H, T, D\\]"),
    ((_GOOD[0], _randc(1, 1, 3, 5), _GOOD[2]), {}, ValueError, "same shape"),
    ((_GOOD[0], _GOOD[1], _randc(1, 1, 4, 2)), {}, ValueError, "'v' must match 'q'"),
    ((_GOOD[0], _GOOD[1], _GOOD[2].to(torch.complex64)), {}, TypeError, "share one dtype"),
    (_GOOD, {"eps": -1e-3}, ValueError, "'eps' must be a finite number >= 0"),
    (_GOOD, {"causal": 1}, TypeError, "'causal' must be a bool"),
])
def test_born_attention_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        born_attention(*args, **kwargs)


_RATES = [0.9, 0.35]  # one per head of _qkv()


@pytest.mark.parametrize("decay", [0.6, torch.tensor(_RATES, dtype=torch.float64)], ids=["float", "per-head"])
@pytest.mark.parametrize("eps", [0.0, 0.4])
def test_born_attention_decay_matches_loop(decay, eps):
    q, k, v = _qkv(seed=21)
    rates = [decay] * 2 if isinstance(decay, float) else decay.tolist()
    torch.testing.assert_close(born_attention(q, k, v, eps=eps, decay=decay), _born_loop(q, k, v, True, eps, rates),
                               rtol=1e-10, atol=1e-12)


def test_born_attention_decay_one_is_bit_identical_to_none():
    inputs = _qkv(seed=22)
    g = _randc(2, 2, 7, 4, seed=23)
    results = []
    for decay in (None, 1.0, torch.ones(2)):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        out = born_attention(*leaves, eps=0.2, decay=decay)
        out.backward(g)
        results.append([out.detach()] + [t.grad for t in leaves])
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other, strict=True))


def test_born_attention_decay_gradcheck():
    q, k, v = _qkv(b=1, h=2, t=5, d=3, dv=2, seed=24)
    gradcheck(born_attention, [q, k, v], {"eps": 0.2, "decay": torch.tensor([0.7, 0.95])}).raise_if_failed()


def test_born_attention_decay_grads_match_plain_autograd():
    inputs = _qkv(b=2, h=2, t=9, d=5, dv=3, seed=25)
    g = _randc(2, 2, 9, 3, seed=26)
    grads = []
    for fn in (born_attention, _born_autograd):
        leaves = [t.clone().requires_grad_(True) for t in inputs]
        fn(*leaves, eps=0.1, decay=torch.tensor(_RATES, dtype=torch.float64)).backward(g)
        grads.append([t.grad for t in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)


def test_born_attention_tiny_decay_attends_to_the_current_token_only():
    q, k, v = _qkv(seed=27)
    torch.testing.assert_close(born_attention(q, k, v, decay=1e-9), v, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs, exc, words", [
    ({"decay": 0.9, "causal": False}, ValueError, "'decay' needs causal=True"),
    ({"decay": 0.0}, ValueError, "'decay' must lie in \\(0, 1\\]"),
    ({"decay": 1.5}, ValueError, "'decay' must lie in \\(0, 1\\]"),
    ({"decay": float("nan")}, ValueError, "'decay' must lie in \\(0, 1\\]"),
    ({"decay": torch.tensor([0.5, -0.1])}, ValueError, "'decay' must lie in \\(0, 1\\]"),
    ({"decay": torch.tensor([0.5, 0.5, 0.5])}, ValueError, "'decay' must be r\\[H\\] with H=2"),
    ({"decay": torch.tensor([0.5, 0.5], requires_grad=True)}, ValueError, "fixed constant"),
    ({"decay": torch.tensor([1, 1])}, TypeError, "real floating tensor"),
    ({"decay": torch.tensor([0.5, 0.5], dtype=torch.complex64)}, TypeError, "real floating tensor"),
    ({"decay": True}, TypeError, "'decay' must be None, a number"),
    ({"decay": "0.9"}, TypeError, "'decay' must be None, a number"),
])
def test_born_attention_bad_decay(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        born_attention(*_qkv(), **kwargs)


def test_born_attention_layer_matches_op():
    q, k, v = _qkv(seed=17)
    layer = BornAttention(causal=False, eps=0.5)
    assert list(layer.parameters()) == []
    assert torch.equal(layer(q, k, v), ops.born_attention(q, k, v, causal=False, eps=0.5))
    assert torch.equal(layer(q, k, v), born_attention(q, k, v, causal=False, eps=0.5))


def _head_slicing_oracle(layer, x):
    """Each head on its own feature slice, through the op's single-head form, then concatenated."""
    q, k, v = layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)
    heads = []
    for h in range(layer.num_heads):
        cols = slice(h * layer.head_dim, (h + 1) * layer.head_dim)
        qh, kh, vh = (t[:, None, :, cols] for t in (q, k, v))
        if layer.rotary is not None:
            qh, kh = rotary(qh, base=layer.rotary.base), rotary(kh, base=layer.rotary.base)
        heads.append(_born_loop(qh, kh, vh)[:, 0])
    return layer.out_proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("rope", [True, False])
def test_multihead_matches_head_slicing(rope):
    torch.manual_seed(0)
    layer = MultiheadBornAttention(10, num_heads=3, qk_dim=6, rope=rope, rope_base=50.0, init_std=0.3)
    x = _randc(2, 7, 10, seed=18, dtype=torch.complex64)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), _head_slicing_oracle(layer, x), rtol=1e-4, atol=1e-5)


def test_multihead_shapes_defaults_and_grads():
    torch.manual_seed(1)
    layer = MultiheadBornAttention(8, num_heads=2)
    assert (layer.qk_dim, layer.head_dim) == (4, 2)
    assert layer.q_proj.weight.shape == (4, 8) and layer.out_proj.weight.shape == (8, 4)
    x = _randc(3, 5, 8, seed=19, dtype=torch.complex64)
    y = layer(x)
    assert y.shape == (3, 5, 8) and y.dtype == torch.complex64
    y.abs().square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(torch.view_as_real(p.grad)).all(), name
        assert p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("causal", [True, False])
def test_multihead_causality(causal):
    torch.manual_seed(2)
    layer = MultiheadBornAttention(6, num_heads=3, qk_dim=6, causal=causal, init_std=0.3)
    x = _randc(2, 9, 6, seed=20, dtype=torch.complex64)
    x2 = x.clone()
    x2[:, 6] += 1.0
    with torch.no_grad():
        y, y2 = layer(x), layer(x2)
    assert torch.equal(y[:, :6], y2[:, :6]) == causal
    assert not torch.allclose(y[:, 6:], y2[:, 6:])


@pytest.mark.parametrize("kwargs, words", [
    ({"embed_dim": 8, "num_heads": 3}, "divisible by num_heads=3"),
    ({"embed_dim": 8, "qk_dim": 6, "num_heads": 4}, "divisible by num_heads=4"),
    ({"embed_dim": 1}, "pass qk_dim"),
    ({"embed_dim": 0}, "'embed_dim' must be a positive int"),
    ({"embed_dim": 8, "num_heads": 0}, "'num_heads' must be a positive int"),
    ({"embed_dim": 8, "qk_dim": -2}, "'qk_dim' must be a positive int"),
])
def test_multihead_bad_config(kwargs, words):
    with pytest.raises(ValueError, match=words):
        MultiheadBornAttention(**kwargs)


def test_multihead_bad_input():
    layer = MultiheadBornAttention(4)
    with pytest.raises(TypeError, match="'x' must be a complex"):
        layer(torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match="c\\[B, T, E\\]"):
        layer(_randc(3, 4, dtype=torch.complex64))
    with pytest.raises(ValueError, match="last dim embed_dim=4"):
        layer(_randc(1, 3, 5, dtype=torch.complex64))


# ---------------------------------------------------------------- layer modes

def test_layer_linear_mode_matches_quadratic_with_decay_forward_and_backward():
    torch.manual_seed(0)
    x = torch.randn(2, 96, 16, dtype=torch.complex64)
    quad = MultiheadBornAttention(16, 2, decay=[0.9, 1.0])
    lin = MultiheadBornAttention(16, 2, decay=[0.9, 1.0], mode="linear", chunk=32)
    lin.load_state_dict(quad.state_dict())
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = quad(xa), lin(xb)
    torch.testing.assert_close(yb, ya, atol=1e-5, rtol=1e-4)
    w = torch.randn_like(ya)
    (w.conj() * ya).real.sum().backward()
    (w.conj() * yb).real.sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad, atol=1e-5, rtol=1e-4)
    for (_, pa), (_, pb) in zip(quad.named_parameters(), lin.named_parameters(), strict=True):
        torch.testing.assert_close(pb.grad, pa.grad, atol=1e-5, rtol=1e-4)


def test_layer_decay_changes_the_output_and_modes_are_checked():
    torch.manual_seed(0)
    x = torch.randn(1, 9, 8, dtype=torch.complex64)
    plain = MultiheadBornAttention(8, 1)
    decayed = MultiheadBornAttention(8, 1, decay=0.5)
    decayed.load_state_dict(plain.state_dict())
    assert (plain(x) - decayed(x))[:, 1:].abs().max() > 1e-4   # position 0 sees only itself either way
    torch.testing.assert_close(plain(x)[:, 0], decayed(x)[:, 0])
    with pytest.raises(ValueError, match="'mode'"):
        MultiheadBornAttention(8, 1, mode="fast")
    with pytest.raises(ValueError, match="causal only"):
        MultiheadBornAttention(8, 1, mode="linear", causal=False)
    with pytest.raises(ValueError, match="multiple of chunk"):
        MultiheadBornAttention(8, 1, mode="linear", chunk=4)(x)
