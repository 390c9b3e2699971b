"""The Wirtinger convention helpers: grads() on functions with known derivatives, elementwise(), errors."""

import pytest
import torch

from cnet.core.testing import gradcheck
from cnet.core.wirtinger import elementwise, grads, wirtinger_backward

C128 = torch.complex128


def _z(seed=0, *shape):
    return torch.randn(*(shape or (3, 5)), dtype=C128, generator=torch.Generator().manual_seed(seed))


def test_grads_of_squared_modulus():
    # L = sum |z|^2 = sum z conj(z): dL/dz = conj(z), dL/dconj(z) = z.
    z = _z(0).requires_grad_(True)
    dz, dconj = grads(z.abs().square().sum(), z)
    torch.testing.assert_close(dz, z.detach().conj())
    torch.testing.assert_close(dconj, z.detach())


def test_grads_of_real_part_of_square():
    # L = Re sum z^2 = sum (x^2 - y^2): dL/dz = (2x + 2iy)/2 = z, dL/dconj(z) = conj(z).
    z = _z(1).requires_grad_(True)
    dz, dconj = grads((z * z).real.sum(), z)
    torch.testing.assert_close(dz, z.detach())
    torch.testing.assert_close(dconj, z.detach().conj())


def test_grads_of_imaginary_part_is_constant():
    # L = Im sum z = sum y: dL/dz = -i/2, dL/dconj(z) = i/2.
    z = _z(2).requires_grad_(True)
    dz, dconj = grads(z.imag.sum(), z, retain_graph=True)
    torch.testing.assert_close(dz, torch.full_like(z, -0.5j).detach())
    torch.testing.assert_close(dconj, torch.full_like(z, 0.5j).detach())


def test_grads_errors():
    z = _z(3).requires_grad_(True)
    with pytest.raises(TypeError, match="grads: 'loss' must be a real scalar tensor"):
        grads(z.sum(), z)
    with pytest.raises(TypeError, match="grads: 'loss' must be a real scalar tensor"):
        grads(z.abs(), z)
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="grads: 'z' must be a complex tensor"):
        grads(x.sum(), x)


def test_grads_refuses_a_z_the_loss_cannot_be_differentiated_by():
    z, other = _z(3), _z(3).requires_grad_(True)
    with pytest.raises(ValueError, match=r"^grads: argument 'z' must require grad \(call z.requires_grad_\(\)"):
        grads(z.abs().square().sum(), z)
    z.requires_grad_(True)
    unused = "^grads: 'loss' does not depend on argument 'z'"
    with pytest.raises(ValueError, match=unused):
        grads(other.abs().square().sum(), z)  # a graph, but not through z
    with pytest.raises(ValueError, match=unused):
        grads(torch.tensor(1.0, dtype=torch.float64), z)  # no graph at all


# f(z) = z^2 conj(z) = |z|^2 z: df/dz = 2 z conj(z), df/dconj(z) = z^2 (not holomorphic).
_CUBIC = elementwise("cubic", lambda z: z * z * z.conj(), lambda z: 2 * z * z.conj(), lambda z: z * z)


def test_elementwise_non_holomorphic_map_passes_gradcheck():
    gradcheck(_CUBIC, [_z(4)]).raise_if_failed()
    torch.testing.assert_close(_CUBIC(_z(4)), _z(4).abs().square() * _z(4))


def test_elementwise_backward_matches_direct_wirtinger_rule():
    z, g = _z(5), _z(6)
    leaf = z.clone().requires_grad_(True)
    _CUBIC(leaf).backward(g)
    torch.testing.assert_close(leaf.grad, g.conj() * z * z + g * (2 * z * z.conj()).conj())


def test_elementwise_with_wrong_derivative_fails_gradcheck():
    # Dropping df/dconj(z) is the classic mistake: the check must notice it.
    wrong = elementwise("cubic_wrong", lambda z: z * z * z.conj(), lambda z: 2 * z * z.conj(), None)
    report = gradcheck(wrong, [_z(7)])
    assert not report.ok and any("gradcheck: input 0" in line for line in report.failures)
    with pytest.raises(AssertionError):
        report.raise_if_failed()


def test_elementwise_holomorphic_and_antiholomorphic():
    square = elementwise("square", lambda z: z * z, lambda z: 2 * z, None)
    conj = elementwise("conj", torch.conj, None, lambda z: torch.ones_like(z))
    gradcheck(square, [_z(8)]).raise_if_failed()
    gradcheck(conj, [_z(9)]).raise_if_failed()
    assert repr(square) == "ElementwiseOp('square')"


def test_elementwise_rejects_real_input():
    square = elementwise("square", lambda z: z * z, lambda z: 2 * z, None)
    with pytest.raises(TypeError, match="square: argument 'z' must be a complex tensor"):
        square(torch.randn(3))


def test_wirtinger_backward_with_no_derivatives_is_zero():
    g = _z(10)
    assert torch.equal(wirtinger_backward(g, None, None), torch.zeros_like(g))
