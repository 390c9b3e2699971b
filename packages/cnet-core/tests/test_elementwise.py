"""Elementwise reference ops (hadamard, cgelu, complex_dropout) and their layers, against direct computations."""

import pytest
import torch
import torch.nn.functional as F

from cnet.core import ops
from cnet.core.nn import CGELU, CGelu, ComplexDropout
from cnet.core.ops import reference as ref
from cnet.core.testing import gradcheck

C128 = torch.complex128


def _randc(gen, *shape, dtype=C128):
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _autograd_grads(fn, inputs, probe):
    """Gradients of L = Re sum(conj(probe) fn(*inputs)) by PyTorch's own complex autograd (the oracle)."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    (probe.conj() * fn(*leaves)).real.sum().backward()
    return [t.grad for t in leaves]


# ---------------------------------------------------------------- hadamard

@pytest.mark.parametrize("xs, ys", [((3, 5), (3, 5)), ((2, 3, 5), (3, 1)), ((3, 1, 5), (1, 7, 1)), ((5,), (2, 3, 5))])
def test_hadamard_forward_and_backward_match_direct_product(xs, ys):
    g = torch.Generator().manual_seed(0)
    x, y = _randc(g, *xs), _randc(g, *ys)
    out = ref.hadamard(x, y)
    torch.testing.assert_close(out, x * y, rtol=0, atol=0)
    probe = _randc(g, *out.shape)
    leaves = [x.clone().requires_grad_(True), y.clone().requires_grad_(True)]
    (probe.conj() * ref.hadamard(*leaves)).real.sum().backward()
    want = _autograd_grads(torch.mul, [x, y], probe)
    assert leaves[0].grad.shape == x.shape and leaves[1].grad.shape == y.shape
    torch.testing.assert_close(leaves[0].grad, want[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(leaves[1].grad, want[1], rtol=1e-12, atol=1e-12)


def test_hadamard_gradcheck_with_broadcasting():
    g = torch.Generator().manual_seed(1)
    gradcheck(ref.hadamard, [_randc(g, 3, 1, 5), _randc(g, 3, 1)]).raise_if_failed()


def test_hadamard_rejects_bad_input():
    x = torch.randn(3, 5, dtype=C128)
    with pytest.raises(TypeError, match="hadamard: argument 'y' must be a complex tensor"):
        ref.hadamard(x, torch.randn(3, 5))
    with pytest.raises(ValueError, match="hadamard: arguments 'x' \\(3, 5\\) and 'y' \\(4,\\) do not broadcast"):
        ref.hadamard(x, torch.randn(4, dtype=C128))


# ---------------------------------------------------------------- cgelu

def _gelu_tanh_by_hand(a):
    return 0.5 * a * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (a + 0.044715 * a**3)))


def test_cgelu_forward_is_tanh_gelu_on_each_part():
    g = torch.Generator().manual_seed(2)
    z = 3 * _randc(g, 4, 63)
    out = ref.cgelu(z)
    torch.testing.assert_close(out.real, _gelu_tanh_by_hand(z.real), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.imag, _gelu_tanh_by_hand(z.imag), rtol=1e-12, atol=1e-12)


def test_cgelu_backward_matches_autograd_through_real_parts():
    g = torch.Generator().manual_seed(3)
    z, probe = 2 * _randc(g, 3, 7), _randc(g, 3, 7)

    def split(zz):
        return torch.complex(F.gelu(zz.real, approximate="tanh"), F.gelu(zz.imag, approximate="tanh"))

    leaf = z.clone().requires_grad_(True)
    (probe.conj() * ref.cgelu(leaf)).real.sum().backward()
    (want,) = _autograd_grads(split, [z], probe)
    torch.testing.assert_close(leaf.grad, want, rtol=1e-10, atol=1e-12)


def test_cgelu_gradient_at_a_point_is_real_gelu_slope_per_part():
    # f(a + ib) = g(a) + i g(b): L = Re f has gradient g'(a) (real direction only), L = Im f has i g'(b).
    a, b = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.7, -1.3))
    ga, gb = torch.autograd.grad(_gelu_tanh_by_hand(a) + _gelu_tanh_by_hand(b), (a, b))
    for part, want in ((torch.real, ga + 0j), (torch.imag, 1j * gb)):
        z = torch.tensor([0.7 - 1.3j], dtype=C128, requires_grad=True)
        part(ref.cgelu(z)).sum().backward()
        torch.testing.assert_close(z.grad, want.reshape(1).to(C128), rtol=1e-12, atol=1e-12)


def test_cgelu_gradcheck():
    g = torch.Generator().manual_seed(4)
    gradcheck(ref.cgelu, [2 * _randc(g, 3, 5)]).raise_if_failed()


def test_cgelu_layer_and_alias():
    assert CGelu is CGELU
    z = torch.randn(2, 3, 5, dtype=torch.complex64, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(CGELU()(z), ref.cgelu(z))
    with pytest.raises(TypeError, match="cgelu: argument 'x' must be a complex tensor"):
        CGELU()(z.real)


# ---------------------------------------------------------------- complex_dropout

def test_complex_dropout_statistics_and_whole_element_masks():
    x = torch.full((200, 500), 1.0 + 2.0j, dtype=torch.complex64)
    y = ref.complex_dropout(x, 0.3, True, generator=torch.Generator().manual_seed(6))
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.7) < 0.005  # 100k Bernoulli draws: sd 0.0014
    torch.testing.assert_close(y[kept], x[kept] / 0.7)
    assert torch.equal(y.real != 0, y.imag != 0), "real and imaginary parts must share one mask"


def test_complex_dropout_backward_uses_the_same_mask():
    g = torch.Generator().manual_seed(7)
    x, probe = _randc(g, 5, 7), _randc(g, 5, 7)
    leaf = x.clone().requires_grad_(True)
    y = ref.complex_dropout(leaf, 0.5, True, generator=11)
    (probe.conj() * y).real.sum().backward()
    scale = (y.detach() != 0).double() / 0.5
    torch.testing.assert_close(leaf.grad, probe * scale, rtol=0, atol=0)


def test_complex_dropout_seed_and_generator_are_reproducible():
    x = torch.randn(4, 9, dtype=torch.complex64, generator=torch.Generator().manual_seed(8))
    assert torch.equal(ref.complex_dropout(x, 0.5, True, generator=3), ref.complex_dropout(x, 0.5, True, generator=3))
    a = ref.complex_dropout(x, 0.5, True, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, ref.complex_dropout(x, 0.5, True, generator=3))


def test_complex_dropout_identity_when_off():
    x = torch.randn(3, 5, dtype=torch.complex64)
    assert ref.complex_dropout(x, 0.5, False) is x
    assert ref.complex_dropout(x, 0.0, True) is x


def test_complex_dropout_gradcheck_with_fixed_seed():
    g = torch.Generator().manual_seed(9)
    gradcheck(ref.complex_dropout, [_randc(g, 3, 5), 0.4, True], {"generator": 2}).raise_if_failed()


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5, True, "0.1"])
def test_complex_dropout_rejects_bad_p(p):
    with pytest.raises(ValueError, match="complex_dropout: argument 'p' must be a number in \\[0, 1\\)"):
        ref.complex_dropout(torch.ones(3, dtype=torch.complex64), p, True)
    with pytest.raises(ValueError, match="ComplexDropout: argument 'p'"):
        ComplexDropout(p)


@pytest.mark.parametrize("training, shown", [("no", "str 'no'"), (0, "int 0"), (torch.tensor(True), "Tensor")])
def test_complex_dropout_rejects_a_training_flag_that_is_not_a_bool(training, shown):
    with pytest.raises(TypeError, match=f"^complex_dropout: argument 'training' must be a bool, got {shown}"):
        ref.complex_dropout(torch.ones(3, dtype=torch.complex64), 0.5, training)


def test_complex_dropout_rejects_real_input():
    with pytest.raises(TypeError, match="complex_dropout: argument 'x' must be a complex tensor"):
        ref.complex_dropout(torch.ones(3), 0.1, True)


def test_complex_dropout_layer_follows_training_mode():
    torch.manual_seed(10)
    layer = ComplexDropout(0.5)
    x = torch.ones(1000, dtype=torch.complex64)
    y = layer(x)
    assert 0.4 < (y == 0).float().mean().item() < 0.6
    assert set(y.real.unique().tolist()) == {0.0, 2.0}
    assert layer.eval()(x) is x


def test_dispatching_functions_equal_references():
    g = torch.Generator().manual_seed(12)
    x, y = _randc(g, 3, 5), _randc(g, 5)
    torch.testing.assert_close(ops.hadamard(x, y), ref.hadamard(x, y))
    torch.testing.assert_close(ops.cgelu(x), ref.cgelu(x))
    torch.testing.assert_close(ops.complex_dropout(x, 0.5, True, generator=1),
                               ref.complex_dropout(x, 0.5, True, generator=1))
