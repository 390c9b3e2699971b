"""Born cross-entropy: value against a loop, gradients, the probability floor, errors, layer and probabilities."""

import itertools
import math

import pytest
import torch

from cnet.core import ops
from cnet.core.nn.loss import BornCrossEntropy, born_probabilities
from cnet.core.ops.reference import EXAMPLES, born_cross_entropy
from cnet.core.testing import gradcheck


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _targets(shape, n_classes, seed=0):
    return torch.randint(0, n_classes, shape, generator=torch.Generator().manual_seed(seed))


def _loss_loop(z, target):
    """mean over positions of -log(|z_y|^2 / sum_k |z_k|^2), one position at a time in Python floats."""
    terms = []
    for idx in itertools.product(*[range(s) for s in target.shape]):
        row = [complex(c) for c in z[idx].tolist()]
        y = int(target[idx])
        terms.append(-math.log(abs(row[y]) ** 2 / sum(abs(c) ** 2 for c in row)))
    return sum(terms) / len(terms)


def _grad(z, target, floor=0.0, fn=born_cross_entropy):
    leaf = z.clone().requires_grad_(True)
    fn(leaf, target, floor=floor).backward()
    return leaf.grad


def _floored_grad(z, target, floor):
    """Closed form with the floor, written independently: (2 z / S - 2 onehot z_y / max(P, floor S)) / N."""
    power = z.abs() ** 2
    total = power.sum(-1, keepdim=True)
    onehot = torch.nn.functional.one_hot(target, z.shape[-1]).to(torch.float64)
    picked = (power * onehot).sum(-1, keepdim=True)
    grad = 2 * z / total - 2 * onehot * z / torch.maximum(picked, floor * total)
    return grad / target.numel()


@pytest.mark.parametrize("shape", [(5,), (7, 5), (2, 3, 5)])
def test_born_cross_entropy_matches_loop(shape):
    z = _randc(*shape, seed=1)
    target = _targets(shape[:-1], shape[-1], seed=2)
    loss = born_cross_entropy(z, target)
    assert loss.shape == () and loss.dtype == torch.float64
    assert loss.item() == pytest.approx(_loss_loop(z, target), rel=1e-12)


def test_born_cross_entropy_complex64_and_uniform_amplitudes():
    z = _randc(4, 6, seed=3)
    target = _targets((4,), 6, seed=4)
    loss32 = born_cross_entropy(z.to(torch.complex64), target.to(torch.int32))
    assert loss32.dtype == torch.float32
    assert loss32.item() == pytest.approx(born_cross_entropy(z, target).item(), rel=1e-5)
    uniform = torch.full((3, 6), 0.3 - 0.4j, dtype=torch.complex128)
    assert born_cross_entropy(uniform, _targets((3,), 6)).item() == pytest.approx(math.log(6), rel=1e-14)


def test_born_cross_entropy_gradcheck():
    z = _randc(3, 5, seed=5)
    gradcheck(born_cross_entropy, [z, _targets((3,), 5, seed=6)], {"floor": 0.0}).raise_if_failed()


def test_born_cross_entropy_example_gradcheck():
    args, kwargs = EXAMPLES["born_cross_entropy"](torch.complex128, torch.device("cpu"), 0)
    assert not args[1].is_floating_point()
    gradcheck(born_cross_entropy, args, kwargs).raise_if_failed()


def test_born_cross_entropy_grad_matches_plain_autograd():
    z = _randc(4, 3, 7, seed=7)
    target = _targets((4, 3), 7, seed=8)

    def plain(z, target, floor):
        p = z.abs() ** 2 / (z.abs() ** 2).sum(-1, keepdim=True)
        return -p.gather(-1, target[..., None]).log().mean()

    torch.testing.assert_close(_grad(z, target), _grad(z, target, fn=plain), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(_grad(z, target), _floored_grad(z, target, 0.0), rtol=1e-12, atol=1e-14)


def test_floor_zero_is_bit_identical_to_exact_gradient():
    """With every target probability above the floor the max() is inactive, so the gradient must not move a bit."""
    z = _randc(6, 9, seed=9)
    target = _targets((6,), 9, seed=10)
    p_min = born_probabilities(z).gather(-1, target[:, None]).min().item()
    exact = _grad(z, target, floor=0.0)
    assert torch.equal(exact, _grad(z, target, floor=0.5 * p_min))
    assert torch.equal(exact, _grad(z.clone(), target.clone()))


def test_floor_bounds_gradient_and_keeps_loss():
    z = _randc(4, 5, seed=11)
    target = _targets((4,), 5, seed=12)
    z[1, target[1]] = 1e-7  # a near-zero target amplitude: the exact gradient there is ~ 2 / 1e-7 / N
    floor = 1e-3
    exact_loss = born_cross_entropy(z, target)
    assert torch.equal(born_cross_entropy(z, target, floor=floor), exact_loss)

    exact, floored = _grad(z, target), _grad(z, target, floor=floor)
    assert exact[1].abs().max() > 1e6
    total = (z.abs() ** 2).sum(-1)
    bound = 2 / total.sqrt() * (1 + 1 / math.sqrt(floor)) / target.numel()
    assert torch.all(torch.linalg.vector_norm(floored, dim=-1) <= bound)
    torch.testing.assert_close(floored, _floored_grad(z, target, floor), rtol=1e-12, atol=1e-14)
    p = born_probabilities(z).gather(-1, target[:, None])[:, 0]
    assert torch.equal(floored[p >= floor], exact[p >= floor])


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((torch.randn(3, 5), _targets((3,), 5)), {}, TypeError, "'z' must be a complex"),
    ((_randc(3, 5), _targets((3,), 5).double()), {}, TypeError, "'target' must be an integer tensor"),
    ((_randc(3, 5), [0, 1, 2]), {}, TypeError, "'target' must be an integer tensor"),
    ((_randc(3, 5), _targets((4,), 5)), {}, ValueError, "'target' must have shape"),
    ((_randc(3, 5), torch.tensor([0, 5, 1])), {}, ValueError, "ids in \\[0, 5\\)"),
    ((_randc(3, 5), torch.tensor([0, -1, 1])), {}, ValueError, "ids in \\[0, 5\\)"),
    ((_randc(3, 5), _targets((3,), 5)), {"floor": 1.0}, ValueError, "'floor' must be a number in \\[0, 1\\)"),
    ((_randc(3, 5), _targets((3,), 5)), {"floor": -0.1}, ValueError, "'floor' must be a number in \\[0, 1\\)"),
    ((torch.tensor(1 + 1j), torch.tensor(0)), {}, ValueError, "C >= 1"),
    ((_randc(0, 5), _targets((0,), 5)), {}, ValueError, r"argument 'z' holds no positions \(shape \(0, 5\)\)"),
    ((_randc(2, 0, 5), _targets((2, 0), 5)), {}, ValueError, r"'z' holds no positions \(shape \(2, 0, 5\)\)"),
])
def test_born_cross_entropy_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        born_cross_entropy(*args, **kwargs)


def test_layer_and_probabilities():
    z = _randc(2, 3, 5, seed=13)
    target = _targets((2, 3), 5, seed=14)
    layer = BornCrossEntropy(floor=1e-3)
    assert list(layer.parameters()) == []
    assert torch.equal(layer(z, target), ops.born_cross_entropy(z, target, floor=1e-3))
    assert torch.equal(_grad(z, target, 1e-3, fn=lambda z, t, floor: layer(z, t)), _grad(z, target, 1e-3))

    p = born_probabilities(z)
    assert p.shape == z.shape and p.dtype == torch.float64
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 3, dtype=torch.float64))
    torch.testing.assert_close(p, z.abs() ** 2 / (z.abs() ** 2).sum(-1, keepdim=True))
    nll = -p.gather(-1, target[..., None]).log().mean()
    torch.testing.assert_close(nll, born_cross_entropy(z, target))
    with pytest.raises(TypeError, match="'z' must be a complex"):
        born_probabilities(z.real)
