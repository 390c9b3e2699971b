"""Complex scan: parallel form against a Python loop, adjoint gradients, carried state, step form, errors."""

import pytest
import torch

from cnet.core import ops
from cnet.core.ops.reference import EXAMPLES, complex_scan
from cnet.core.ops.reference.scan import complex_scan_step
from cnet.core.testing import gradcheck


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=gen)


def _scan_loop(a, b, h0=None):
    """h_t = a_t h_{t-1} + b_t one step at a time (differentiable through plain complex autograd)."""
    h = torch.zeros_like(b[:, 0]) if h0 is None else h0
    out = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        out.append(h)
    return torch.stack(out, dim=1)


def _ab(t, seed=0, shape=(3, 2)):
    a = 0.95 * _randc(2, t, *shape, seed=seed) / 1.4  # |a| mostly below 1, some above
    return a, _randc(2, t, *shape, seed=seed + 1)


@pytest.mark.parametrize("t", [1, 2, 7, 63, 100])
@pytest.mark.parametrize("with_h0", [False, True])
def test_scan_matches_loop(t, with_h0):
    a, b = _ab(t, seed=t)
    h0 = _randc(2, 3, 2, seed=5) if with_h0 else None
    h, last = complex_scan(a, b, initial_state=h0, return_state=True)
    ref = _scan_loop(a, b, h0)
    torch.testing.assert_close(h, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(last, ref[:, -1], rtol=1e-12, atol=1e-12)
    assert torch.equal(ops.complex_scan(a, b, initial_state=h0), h)


def test_scan_zeros_and_underflow_behave_like_the_loop():
    a, b = _ab(40, seed=6)
    a[0, 10] = 0  # a reset: h_10 = b_10
    a[1, 5:9] = 1e-120  # products underflow to 0, as in the loop
    h = complex_scan(a, b)
    assert torch.equal(h[0, 10], b[0, 10])
    torch.testing.assert_close(h, _scan_loop(a, b), rtol=1e-12, atol=1e-12)
    assert torch.isfinite(torch.view_as_real(h)).all()


@pytest.mark.parametrize("t", [1, 9, 33])
def test_scan_grads_match_loop_autograd(t):
    a, b = _ab(t, seed=7)
    h0 = _randc(2, 3, 2, seed=8)
    gh, gl = _randc(2, t, 3, 2, seed=9), _randc(2, 3, 2, seed=10)
    grads = []
    for use_op in (True, False):
        leaves = [x.clone().requires_grad_(True) for x in (a, b, h0)]
        if use_op:
            h, last = complex_scan(*leaves[:2], initial_state=leaves[2], return_state=True)
        else:
            h = _scan_loop(*leaves)
            last = h[:, -1]
        ((gh.conj() * h).real.sum() + (gl.conj() * last).real.sum()).backward()
        grads.append([x.grad for x in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)


def test_scan_gradcheck_with_state():
    a, b = _ab(5, seed=11, shape=(3,))
    h0 = _randc(2, 3, seed=12)
    gradcheck(lambda a, b, h0: complex_scan(a, b, initial_state=h0, return_state=True), [a, b, h0]).raise_if_failed()


def test_scan_example_gradcheck():
    args, kwargs = EXAMPLES["complex_scan"](torch.complex128, torch.device("cpu"), 0)
    assert args[0].shape[1] % 2 == 1
    gradcheck(complex_scan, args, kwargs).raise_if_failed()


def test_scan_split_sequence_continues():
    a, b = _ab(20, seed=13)
    h1, state = complex_scan(a[:, :7], b[:, :7], return_state=True)
    h2 = complex_scan(a[:, 7:], b[:, 7:], initial_state=state)
    torch.testing.assert_close(torch.cat([h1, h2], dim=1), complex_scan(a, b), rtol=1e-12, atol=1e-12)


def test_scan_step_reproduces_the_scan_in_complex64():
    a, b = (x.to(torch.complex64) for x in _ab(50, seed=14))
    h0 = _randc(2, 3, 2, seed=15, dtype=torch.complex64)
    full = complex_scan(a, b, initial_state=h0)
    state, outs = h0, []
    for t in range(a.shape[1]):
        out, state = complex_scan_step(a[:, t], b[:, t], state)
        outs.append(out)
    steps = torch.stack(outs, dim=1)
    assert steps.dtype == torch.complex64
    torch.testing.assert_close(steps, full, rtol=1e-5, atol=1e-5)
    out, state = complex_scan_step(a[:, 0], b[:, 0])
    assert torch.equal(out, b[:, 0]) and state is out


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((_randc(2, 3).real, _randc(2, 3)), {}, TypeError, "'a' must be a complex"),
    ((_randc(2, 3), _randc(2, 4)), {}, ValueError, "same shape"),
    ((_randc(2, 3), _randc(2, 3, dtype=torch.complex64)), {}, TypeError, "share one dtype"),
    ((_randc(3), _randc(3)), {}, ValueError, "'a' must be c\\[B, T, ...\\]"),
    ((_randc(2, 0, 3), _randc(2, 0, 3)), {}, ValueError, "no time steps"),
    ((_randc(2, 4, 3), _randc(2, 4, 3)), {"initial_state": _randc(2, 4)}, ValueError, "shape \\(2, 3\\)"),
    ((_randc(2, 4, 3), _randc(2, 4, 3)), {"initial_state": _randc(2, 3).real}, TypeError, "'initial_state' must be"),
    ((_randc(2, 4, 3), _randc(2, 4, 3)), {"initial_state": _randc(2, 3, dtype=torch.complex64)}, TypeError,
     "dtype torch.complex128"),
    ((_randc(2, 4, 3), _randc(2, 4, 3)), {"return_state": None}, TypeError, "'return_state' must be a bool"),
])
def test_scan_bad_input(args, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        complex_scan(*args, **kwargs)


def test_scan_step_bad_input():
    with pytest.raises(ValueError, match="'state' must be c\\[B, ...\\] of shape \\(2, 3\\)"):
        complex_scan_step(_randc(2, 3), _randc(2, 3), _randc(2, 4))
