"""Formula tests of the quantum-shortcut recurrence helpers: Cayley phase, chunked complex scan, real scan."""

import math

import pytest
import torch

from cnet.core import ops
from cnet.models.shortcut import cayley_phase, chunked_scan, real_scan


def _loop(a, b, h0=None):
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1)


def _complex(gen, *shape, scale=1.0):
    return scale * torch.randn(*shape, dtype=torch.complex128, generator=gen)


def test_cayley_phase_has_unit_modulus_to_float_precision():
    phi = torch.cat([torch.linspace(-50, 50, 1001), torch.tensor([0.0, 1e-30, -1e-8, 1e19, -1e25, 3e38,
                                                                   float("inf"), float("-inf")])])
    lam = cayley_phase(phi)
    assert lam.dtype == torch.complex64
    assert (lam.abs() - 1).abs().max().item() < 2e-7
    assert torch.isfinite(torch.view_as_real(lam)).all()
    torch.testing.assert_close(lam[-2:], torch.tensor([-1 + 0j, -1 + 0j]), atol=1e-6, rtol=0)


def test_cayley_phase_equals_the_rational_form_and_has_angle_two_arctan():
    phi = torch.linspace(-20, 20, 401, dtype=torch.float64)
    lam = cayley_phase(phi)
    assert lam.dtype == torch.complex128
    rational = (1 + 1j * phi) / (1 - 1j * phi)
    torch.testing.assert_close(lam, rational, atol=1e-14, rtol=0)
    torch.testing.assert_close(lam.angle(), 2 * torch.atan(phi), atol=1e-12, rtol=0)
    assert abs(cayley_phase(torch.tensor([1.0], dtype=torch.float64))[0].item() - 1j) < 1e-15  # phi = 1 -> i


@pytest.mark.parametrize("t,chunk", [(63, 8), (64, 8), (130, 64), (5, 64), (17, 1)])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunked_scan_equals_a_python_loop(t, chunk, with_state):
    gen = torch.Generator().manual_seed(t + chunk)
    a = 0.97 * torch.polar(torch.rand(2, t, 3, 4, dtype=torch.float64, generator=gen),
                           6 * torch.rand(2, t, 3, 4, dtype=torch.float64, generator=gen))
    b = _complex(gen, 2, t, 3, 4)
    h0 = _complex(gen, 2, 3, 4) if with_state else None
    torch.testing.assert_close(chunked_scan(a, b, h0, chunk=chunk), _loop(a, b, h0), atol=1e-10, rtol=1e-10)


def test_chunked_scan_survives_a_zero_gate_and_matches_the_loop():
    gen = torch.Generator().manual_seed(3)
    a = _complex(gen, 1, 40, 2, scale=0.5)
    a[:, 9] = 0  # a gate that underflowed: the paper's closed form would divide by a zero running product
    b = _complex(gen, 1, 40, 2)
    h0 = _complex(gen, 1, 2)
    torch.testing.assert_close(chunked_scan(a, b, h0, chunk=8), _loop(a, b, h0), atol=1e-12, rtol=1e-12)


def test_chunked_scan_gradients_match_the_unchunked_scan():
    gen = torch.Generator().manual_seed(4)
    a0 = 0.9 * torch.polar(torch.rand(2, 37, 3, dtype=torch.float64, generator=gen),
                           torch.rand(2, 37, 3, dtype=torch.float64, generator=gen) * 6)
    b0, h00, w = _complex(gen, 2, 37, 3), _complex(gen, 2, 3), _complex(gen, 2, 37, 3)
    grads = []
    for fn in (lambda a, b, h: chunked_scan(a, b, h, chunk=8), ops.complex_scan):
        a, b, h0 = (x.clone().requires_grad_() for x in (a0, b0, h00))
        loss = (fn(a, b, h0) * w).real.sum() + fn(a, b, h0).abs().square().sum()
        grads.append(torch.autograd.grad(loss, (a, b, h0)))
    for g1, g2 in zip(*grads, strict=True):
        torch.testing.assert_close(g1, g2, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("t,chunk", [(19, 32), (19, 4), (64, 8), (63, 8), (5, 1), (130, 16)])
def test_real_scan_equals_a_python_loop(t, chunk):
    gen = torch.Generator().manual_seed(t * chunk)
    a = torch.rand(2, t, 3, 4, dtype=torch.float64, generator=gen)
    a[:, t // 2, 0] = 0  # a gate that underflowed cuts the history, as in the loop
    b = torch.randn(2, t, 3, 4, dtype=torch.float64, generator=gen)
    torch.testing.assert_close(real_scan(a, b, chunk=chunk), _loop(a, b), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("t,chunk", [(7, 32), (8, 3), (9, 3), (10, 1)])
def test_real_scan_passes_gradcheck_across_chunks(t, chunk):
    gen = torch.Generator().manual_seed(5)
    a = torch.rand(2, t, 3, dtype=torch.float64, generator=gen).requires_grad_()
    b = torch.randn(2, t, 3, dtype=torch.float64, generator=gen).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: real_scan(a, b, chunk=chunk), (a, b))


def test_real_scan_gradients_match_autograd_through_the_loop():
    gen = torch.Generator().manual_seed(6)
    a0 = 0.5 + 0.5 * torch.rand(2, 45, 5, dtype=torch.float64, generator=gen)
    b0, w = (torch.randn(2, 45, 5, dtype=torch.float64, generator=gen) for _ in range(2))
    grads = []
    for fn in (lambda a, b: real_scan(a, b, chunk=8), _loop):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        grads.append(torch.autograd.grad((fn(a, b) * w).sum(), (a, b)))
    for g1, g2 in zip(*grads, strict=True):
        torch.testing.assert_close(g1, g2, atol=1e-11, rtol=1e-11)


def test_chunked_scan_hands_the_whole_sequence_to_a_backend(monkeypatch):
    # with a non-reference backend for the inputs, chunking (a device for the reference's doubling scan) is skipped
    from cnet.models.shortcut import scan as scan_module

    calls = []

    class Ops:
        def select(self, name, args, kwargs):
            return "fake", None

    monkeypatch.setattr(scan_module, "registries", lambda: type("R", (), {"ops": Ops()})())
    monkeypatch.setattr(scan_module.ops, "complex_scan", lambda a, b, h0=None: calls.append(a.shape) or b)
    a = torch.ones(1, 200, 2, dtype=torch.complex64)
    chunked_scan(a, a, chunk=8)
    assert calls == [a.shape]


def test_scan_helpers_reject_bad_input():
    a = torch.ones(1, 4, 2, dtype=torch.complex64)
    with pytest.raises(ValueError, match="chunk"):
        chunked_scan(a, a, chunk=0)
    with pytest.raises(TypeError, match="complex"):
        chunked_scan(a.real, a.real, chunk=2)
    with pytest.raises(TypeError, match="real floating"):
        real_scan(a, a)
    with pytest.raises(TypeError, match="one dtype"):
        real_scan(a.real, a.real.double())
    with pytest.raises(ValueError, match="equal shapes"):
        real_scan(a.real, a.real[:, :3])
    with pytest.raises(ValueError, match="'chunk' must be an int >= 1"):
        real_scan(a.real, a.real, chunk=0)
    with pytest.raises(TypeError, match="real floating"):
        cayley_phase(torch.ones(3, dtype=torch.int64))
    assert math.isclose(cayley_phase(torch.zeros(1))[0].real.item(), 1.0)
