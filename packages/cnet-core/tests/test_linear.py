"""linear / embedding reference ops, Linear / Embedding layers and complex_normal_, against direct computations."""

import pytest
import torch

from cnet.core import ops
from cnet.core.nn import CEmbedding, Embedding, Linear, TokenwiseLinear, complex_normal_
from cnet.core.ops import reference as ref
from cnet.core.testing import gradcheck

C128 = torch.complex128


def _randc(seed, *shape, dtype=C128):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- linear op

def _linear_by_loops(x, w, b):
    out = torch.zeros(*x.shape[:-1], w.shape[0], dtype=x.dtype)
    flat_x, flat_o = x.reshape(-1, x.shape[-1]), out.view(-1, w.shape[0])
    for t in range(flat_x.shape[0]):
        for j in range(w.shape[0]):
            flat_o[t, j] = sum(flat_x[t, i] * w[j, i] for i in range(w.shape[1])) + (b[j] if b is not None else 0)
    return out


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_forward_matches_loops(with_bias):
    x, w, b = _randc(0, 2, 3, 5), _randc(1, 7, 5), _randc(2, 7)
    b = b if with_bias else None
    torch.testing.assert_close(ref.linear(x, w, b), _linear_by_loops(x, w, b), rtol=1e-12, atol=1e-12)


def test_linear_backward_closed_forms():
    x, w, b, g = _randc(3, 2, 3, 5), _randc(4, 7, 5), _randc(5, 7), _randc(6, 2, 3, 7)
    leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
    ref.linear(*leaves).backward(g)  # g = 2 dL/dconj(y) for L = Re sum(conj(g) y)
    torch.testing.assert_close(leaves[0].grad, torch.einsum("bto,oi->bti", g, w.conj()))
    torch.testing.assert_close(leaves[1].grad, torch.einsum("bto,bti->oi", g, x.conj()))
    torch.testing.assert_close(leaves[2].grad, g.sum((0, 1)))


@pytest.mark.parametrize("shape, with_bias", [((2, 3, 5), True), ((5,), True), ((3, 5), False)])
def test_linear_gradcheck(shape, with_bias):
    args = [_randc(7, *shape), _randc(8, 3, 5)] + ([_randc(9, 3)] if with_bias else [])
    gradcheck(ref.linear, args).raise_if_failed()


def test_linear_rejects_bad_input():
    x, w = _randc(0, 2, 5), _randc(1, 3, 5)
    with pytest.raises(TypeError, match="linear: argument 'weight' must be a complex tensor"):
        ref.linear(x, w.real)
    with pytest.raises(ValueError, match="linear: argument 'weight' must be c\\[out, in\\]"):
        ref.linear(x, w[None])
    with pytest.raises(ValueError, match="linear: argument .x. must be c.*in = weight.shape.1. = 5"):
        ref.linear(_randc(0, 2, 4), w)
    with pytest.raises(ValueError, match="linear: argument 'bias' must be c\\[out\\]"):
        ref.linear(x, w, _randc(2, 4))
    with pytest.raises(TypeError, match="linear: argument 'bias' must be a complex tensor"):
        ref.linear(x, w, torch.zeros(3))
    with pytest.raises(TypeError, match="linear: arguments must share one complex dtype"):
        ref.linear(x.to(torch.complex64), w)


# ---------------------------------------------------------------- embedding op

def test_embedding_forward_and_backward_against_one_hot():
    ids = torch.tensor([[0, 3, 3, 6], [4, 1, 0, 3]])
    w, g = _randc(0, 7, 5), _randc(1, 2, 4, 5)
    one_hot = torch.nn.functional.one_hot(ids, 7).to(C128)  # y = onehot @ W, grad_W = onehot^T g
    leaf = w.clone().requires_grad_(True)
    y = ref.embedding(ids, leaf)
    torch.testing.assert_close(y, one_hot @ w, rtol=0, atol=0)
    y.backward(g)
    torch.testing.assert_close(leaf.grad, torch.einsum("btv,bte->ve", one_hot, g))
    assert torch.all(leaf.grad[[2, 5]] == 0)  # rows never read get no gradient
    torch.testing.assert_close(leaf.grad[3], g[0, 1] + g[0, 2] + g[1, 3])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_embedding_accepts_integer_dtypes(dtype):
    w = _randc(2, 5, 3)
    torch.testing.assert_close(ref.embedding(torch.tensor([4, 0], dtype=dtype), w), w[[4, 0]])


def test_embedding_gradcheck():
    gradcheck(ref.embedding, [torch.tensor([[0, 3, 3], [4, 1, 0]]), _randc(3, 5, 3)]).raise_if_failed()


def test_embedding_rejects_bad_input():
    w = _randc(4, 5, 3)
    for bad in (torch.tensor([0.0, 1.0]), torch.tensor([True]), [0, 1]):
        with pytest.raises(TypeError, match="embedding: argument 'ids' must be an integer tensor"):
            ref.embedding(bad, w)
    for bad_id in (5, -1):
        with pytest.raises(ValueError, match=f"embedding: argument 'ids' must lie in \\[0, 5\\).*got id {bad_id}"):
            ref.embedding(torch.tensor([0, bad_id]), w)
    with pytest.raises(TypeError, match="embedding: argument 'weight' must be a complex tensor"):
        ref.embedding(torch.tensor([0]), w.real)
    with pytest.raises(ValueError, match="embedding: argument 'weight' must be c\\[V, E\\]"):
        ref.embedding(torch.tensor([0]), w[0])


# ---------------------------------------------------------------- init and layers

def _assert_complex_normal(t, std):
    re, im = t.real.flatten().double(), t.imag.flatten().double()
    n = re.numel()
    for part in (re, im):
        assert abs(part.mean().item()) < 5 * std / n**0.5
        assert abs(part.std().item() / std - 1) < 5 / (2 * n) ** 0.5  # sd of a sample std is std / sqrt(2n)
    assert abs(torch.corrcoef(torch.stack([re, im]))[0, 1].item()) < 5 / n**0.5


def test_complex_normal_statistics_and_reproducibility():
    t = torch.empty(300, 301, dtype=C128)
    assert complex_normal_(t, std=0.5, generator=torch.Generator().manual_seed(0)) is t
    _assert_complex_normal(t, 0.5)
    again = complex_normal_(torch.empty_like(t), std=0.5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(t, again)
    with pytest.raises(TypeError, match="complex_normal_: argument 'tensor' must be a complex tensor"):
        complex_normal_(torch.empty(3))
    with pytest.raises(ValueError, match="complex_normal_: argument 'std' must be >= 0"):
        complex_normal_(t, std=-1.0)


def test_linear_layer_init_and_forward():
    torch.manual_seed(0)
    layer = Linear(513, 1001)
    assert TokenwiseLinear is Linear
    assert layer.weight.shape == (1001, 513) and layer.weight.dtype == torch.complex64
    _assert_complex_normal(layer.weight.detach(), 0.02)
    assert layer.bias.dtype == torch.complex64 and torch.all(layer.bias == 0)
    x = _randc(1, 2, 3, 513, dtype=torch.complex64)
    torch.testing.assert_close(layer(x), ref.linear(x, layer.weight, layer.bias))
    layer(x).abs().square().sum().backward()
    assert layer.weight.grad.shape == (1001, 513) and layer.bias.grad.shape == (1001,)
    assert "in_features=513, out_features=1001, bias=True" in repr(layer)


def test_linear_layer_options_and_errors():
    layer = Linear(4, 3, bias=False, init_std=0.0)
    assert layer.bias is None and torch.all(layer.weight == 0)
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    x = _randc(2, 5, 4, dtype=torch.complex64)
    torch.testing.assert_close(ops.linear(x, layer.weight), torch.zeros(5, 3, dtype=torch.complex64))
    for kwargs, name in (({"in_features": 0, "out_features": 3}, "in_features"),
                         ({"in_features": 2, "out_features": 2.0}, "out_features")):
        with pytest.raises(ValueError, match=f"Linear: argument '{name}' must be a positive int"):
            Linear(**kwargs)
    with pytest.raises(ValueError, match="Linear: argument 'init_std' must be >= 0"):
        Linear(2, 2, init_std=-0.1)


def test_embedding_layer_init_and_forward():
    torch.manual_seed(1)
    layer = Embedding(2001, 257)
    assert CEmbedding is Embedding
    assert layer.weight.shape == (2001, 257) and layer.weight.dtype == torch.complex64
    _assert_complex_normal(layer.weight.detach(), 0.02)
    ids = torch.tensor([[5, 2000, 5]])
    torch.testing.assert_close(layer(ids), layer.weight[ids].detach())
    with pytest.raises(ValueError, match="embedding: argument 'ids' must lie in \\[0, 2001\\)"):
        layer(torch.tensor([2001]))
    with pytest.raises(ValueError, match="Embedding: argument 'embedding_dim' must be a positive int"):
        Embedding(3, -1)
