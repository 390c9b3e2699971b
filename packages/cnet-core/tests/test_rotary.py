"""Rotary position embedding: op against a per-element loop, gradients, relative-position property, layer."""

import cmath
import itertools

import pytest
import torch

from cnet.core import ops
from cnet.core.nn.rotary import RotaryEmbed, RotaryEmbedding
from cnet.core.ops.reference import EXAMPLES, rotary
from cnet.core.testing import gradcheck


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _rotary_loop(x, base, offset):
    """y[..., t, k] = x[..., t, k] exp(i (t + offset) base^(-k/D)), one element at a time."""
    y = torch.full_like(x, complex("nan"))
    t_len, dim = x.shape[-2:]
    for idx in itertools.product(*[range(s) for s in x.shape[:-2]]):
        for t in range(t_len):
            for k in range(dim):
                y[(*idx, t, k)] = x[(*idx, t, k)].item() * cmath.exp(1j * (t + offset) * base ** (-k / dim))
    return y


@pytest.mark.parametrize("base, offset", [(10000.0, 0), (100.0, 3), (2.5, 11)])
def test_rotary_matches_loop(base, offset):
    x = _randc(2, 3, 5, 6, seed=1)
    torch.testing.assert_close(rotary(x, base=base, offset=offset), _rotary_loop(x, base, offset),
                               rtol=1e-12, atol=1e-12)


def test_rotary_rank2_and_complex64():
    x = _randc(7, 3, seed=2)
    y64 = rotary(x.to(torch.complex64), base=50.0, offset=4)
    assert y64.dtype == torch.complex64
    torch.testing.assert_close(y64, _rotary_loop(x, 50.0, 4).to(torch.complex64), rtol=1e-5, atol=1e-6)


def test_rotary_keeps_modulus_and_offset_shifts_positions():
    x = _randc(2, 9, 5, seed=3)
    full = rotary(x, base=30.0)
    torch.testing.assert_close(full.abs(), x.abs(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(rotary(x[:, 4:], base=30.0, offset=4), full[:, 4:], rtol=1e-12, atol=1e-12)


def test_rotary_relative_phase():
    """<rot(q)_t, rot(k)_s> depends only on t - s: shifting both positions by 5 leaves it unchanged."""
    q, k = _randc(1, 4, seed=4), _randc(1, 4, seed=5)

    def score(t, s):
        return (rotary(q, offset=t) * rotary(k, offset=s).conj()).sum()

    torch.testing.assert_close(score(7, 2), score(12, 7), rtol=1e-12, atol=1e-12)
    assert not torch.allclose(score(7, 2), score(7, 3))


@pytest.mark.parametrize("offset", [0, 2])
def test_rotary_gradcheck(offset):
    gradcheck(rotary, [_randc(1, 3, 5, seed=6)], {"base": 10.0, "offset": offset}).raise_if_failed()


def test_rotary_example_gradcheck():
    args, kwargs = EXAMPLES["rotary"](torch.complex128, torch.device("cpu"), 0)
    gradcheck(rotary, args, kwargs).raise_if_failed()


def test_rotary_backward_is_conjugate_rotation():
    x = _randc(3, 5, seed=7).requires_grad_(True)
    g = _randc(3, 5, seed=8)
    rotary(x, base=20.0, offset=1).backward(g)
    phase = _rotary_loop(torch.ones(3, 5, dtype=torch.complex128), 20.0, 1)
    torch.testing.assert_close(x.grad, g * phase.conj(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs, exc, words", [
    ({"x": torch.randn(4, 3)}, TypeError, "'x' must be a complex"),
    ({"x": _randc(5)}, ValueError, "at least 2 dims"),
    ({"x": _randc(4, 3), "base": 0.0}, ValueError, "'base' must be a positive"),
    ({"x": _randc(4, 3), "base": float("inf")}, ValueError, "'base' must be a positive"),
    ({"x": _randc(4, 3), "offset": 1.5}, TypeError, "'offset' must be an int"),
    ({"x": _randc(4, 3), "offset": -1}, ValueError, "'offset' must be >= 0"),
])
def test_rotary_bad_input(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        rotary(**kwargs)


def test_rotary_layer():
    layer = RotaryEmbedding(base=40.0)
    assert RotaryEmbed is RotaryEmbedding
    assert list(layer.parameters()) == []
    x = _randc(2, 2, 7, 4, seed=9)
    assert torch.equal(layer(x, offset=3), rotary(x, base=40.0, offset=3))
    assert torch.equal(layer(x), ops.rotary(x, base=40.0))
