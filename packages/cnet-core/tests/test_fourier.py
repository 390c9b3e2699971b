"""Tests of the Fourier ops (dft, idft, causal_dft) and the Fourier mixing layers.

Every value is compared with an independent computation: explicit DFT matrices built here from
``exp(-2 pi i j k / N)`` (no modular reduction, no FFT), and explicit masked sums evaluated in row blocks.
"""

from __future__ import annotations

import cmath
import math

import pytest
import torch

from cnet.core.nn.fourier import CausalFourierMix, FourierMix, RealCausalFourierMix, TriangFourier
from cnet.core.ops.reference import causal_dft, dft, idft
from cnet.core.ops.reference.fourier import EXAMPLES
from cnet.core.testing import gradcheck

METHODS = ("bluestein", "direct")


def _randc(*shape, seed=0, dtype=torch.complex128):
    gen = torch.Generator().manual_seed(seed)
    re = torch.randn(shape, generator=gen, dtype=torch.float64)
    im = torch.randn(shape, generator=gen, dtype=torch.float64)
    return torch.complex(re, im).to(dtype)


def _roots_block(rows, n):
    """``N^-1/2 exp(-2 pi i r c / N)`` for the given rows and every column c, straight from the float product."""
    angle = torch.outer(rows.to(torch.float64), torch.arange(n, dtype=torch.float64)) * (-2 * math.pi / n)
    return torch.polar(torch.full_like(angle, 1 / math.sqrt(n)), angle)


def _dft_matrix(n):
    return _roots_block(torch.arange(n), n)


def _explicit_causal(x, adjoint=False, block=512):
    """Causal DFT (or its upper-triangular adjoint) of ``x`` along the last dim, as masked sums per row block."""
    n = x.shape[-1]
    cols = torch.arange(n)
    out = []
    for start in range(0, n, block):
        rows = torch.arange(start, min(start + block, n))
        mat = _roots_block(rows, n)
        if adjoint:
            mat = mat.conj() * (cols[None, :] >= rows[:, None])
        else:
            mat = mat * (cols[None, :] <= rows[:, None])
        out.append(x @ mat.T)
    return torch.cat(out, dim=-1)


def _causal_matrix_python(n):
    """The masked DFT matrix from plain Python complex arithmetic (row k, column j)."""
    return torch.tensor([[cmath.exp(-2j * cmath.pi * j * k / n) / math.sqrt(n) if j <= k else 0
                          for j in range(n)] for k in range(n)], dtype=torch.complex128)


def _adjoint_by_autograd(fn, x, g):
    """``A^H g`` for a holomorphic linear op ``fn``: PyTorch's backward maps grad_out to A^H grad_out."""
    x = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(fn(x), x, g)
    return grad


# ---------------------------------------------------------------------------------------------------------- dft


@pytest.mark.parametrize("n", [1, 7, 16])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_dft_and_idft_match_explicit_matrix(n, dim):
    shape = [3, 4, 5]
    shape[dim] = n
    x = _randc(*shape, seed=n)
    f = _dft_matrix(n)
    xl = x.movedim(dim, -1)
    torch.testing.assert_close(dft(x, dim=dim), (xl @ f.T).movedim(-1, dim), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(idft(x, dim=dim), (xl @ f.conj().T).movedim(-1, dim), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(torch.complex64, 1e-5), (torch.complex128, 1e-12)])
def test_dft_round_trip_and_unitarity(dtype, tol):
    x = _randc(4, 63, 3, seed=1, dtype=dtype)
    y = dft(x, dim=1)
    assert y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(idft(y, dim=1), x, atol=tol, rtol=tol)
    torch.testing.assert_close(dft(idft(x, dim=-1), dim=-1), x, atol=tol, rtol=tol)
    torch.testing.assert_close(y.abs().pow(2).sum(1), x.abs().pow(2).sum(1), atol=tol * 100, rtol=tol)


def test_dft_backward_is_idft():
    x, g = _randc(2, 9, seed=2), _randc(2, 9, seed=3)
    f = _dft_matrix(9)
    torch.testing.assert_close(_adjoint_by_autograd(dft, x, g), g @ f.conj(), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(_adjoint_by_autograd(idft, x, g), g @ f, atol=1e-12, rtol=1e-12)


# --------------------------------------------------------------------------------------------------- causal_dft


@pytest.mark.parametrize("n", [1, 7, 64, 1000, 4096])
def test_causal_methods_agree_with_explicit_sum(n):
    x, g = _randc(2, n, seed=n), _randc(2, n, seed=n + 1)
    want_fwd = _explicit_causal(x)
    want_adj = _explicit_causal(g, adjoint=True)
    results = {}
    for method in METHODS:
        fn = lambda z, m=method: causal_dft(z, method=m)  # noqa: E731
        results[method] = (fn(x), _adjoint_by_autograd(fn, x, g))
        torch.testing.assert_close(results[method][0], want_fwd, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(results[method][1], want_adj, atol=1e-10, rtol=1e-10)
    for a, b in zip(results["bluestein"], results["direct"], strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_causal_dft_matches_masked_matrix_on_any_dim(method, dim):
    shape = [5, 6, 4]
    shape[dim] = 7
    x = _randc(*shape, seed=4)
    m = _causal_matrix_python(7)
    want = (x.movedim(dim, -1) @ m.T).movedim(-1, dim)
    torch.testing.assert_close(causal_dft(x, dim=dim, method=method), want, atol=1e-12, rtol=1e-12)


def test_causal_dft_complex64_close_to_complex128():
    x = _randc(3, 1000, seed=5)
    want = causal_dft(x, method="direct")
    for method in METHODS:
        got = causal_dft(x.to(torch.complex64), method=method)
        assert got.dtype == torch.complex64
        torch.testing.assert_close(got, want.to(torch.complex64), atol=1e-4, rtol=1e-4)


def test_causal_dft_last_row_is_full_dft():
    # Output N-1 sums over every input, so it equals the last entry of the unmasked DFT.
    x = _randc(3, 11, seed=6)
    torch.testing.assert_close(causal_dft(x)[:, -1], dft(x)[:, -1], atol=1e-12, rtol=1e-12)


# ------------------------------------------------------------------------------------------------------ gradcheck


@pytest.mark.parametrize("shape,dim", [((2, 7), -1), ((9, 3), 0), ((2, 9, 3), 1)])
@pytest.mark.parametrize("op", ["dft", "idft", "bluestein", "direct"])
def test_gradcheck(op, shape, dim):
    fn, kwargs = {"dft": (dft, {}), "idft": (idft, {}), "bluestein": (causal_dft, {"method": "bluestein"}),
                  "direct": (causal_dft, {"method": "direct"})}[op]
    gradcheck(fn, (_randc(*shape, seed=7),), {"dim": dim, **kwargs}).raise_if_failed()


@pytest.mark.parametrize("method", METHODS)
def test_second_derivative(method):
    x = _randc(2, 7, seed=8).requires_grad_(True)
    assert torch.autograd.gradgradcheck(lambda z: causal_dft(z, dim=-1, method=method), (x,))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_pass_gradcheck(name):
    args, kwargs = EXAMPLES[name](torch.complex128, torch.device("cpu"), 0)
    gradcheck({"dft": dft, "idft": idft, "causal_dft": causal_dft}[name], args, kwargs).raise_if_failed()


# --------------------------------------------------------------------------------------------------------- layers


def test_fourier_mix_is_dft_without_parameters():
    layer = FourierMix(dim=1)
    x = _randc(2, 5, 3, seed=9)
    assert not list(layer.parameters())
    torch.testing.assert_close(layer(x), (x.movedim(1, -1) @ _dft_matrix(5).T).movedim(-1, 1))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("flatten", [True, False])
def test_causal_fourier_mix_values(method, flatten):
    b, t, e = 2, 5, 3
    x = _randc(b, t, e, seed=10)
    y = CausalFourierMix(method=method, flatten=flatten)(x)
    if flatten:
        want = (x.reshape(b, t * e) @ _causal_matrix_python(t * e).T).reshape(b, t, e)
    else:
        want = _causal_matrix_python(t) @ x
    torch.testing.assert_close(y, want, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("flatten", [True, False])
def test_causal_fourier_mix_is_causal_at_token_level(flatten):
    layer = TriangFourier(flatten=flatten)
    assert TriangFourier is CausalFourierMix
    x = _randc(2, 9, 4, seed=11)
    base = layer(x)
    for t in (0, 4, 8):
        bumped = x.clone()
        bumped[:, t] += _randc(2, 4, seed=12 + t)
        y = layer(bumped)
        torch.testing.assert_close(y[:, :t], base[:, :t], atol=1e-12, rtol=0)
        assert (y[:, t] - base[:, t]).abs().max() > 1e-3


def test_real_causal_fourier_mix_matches_explicit_and_backpropagates():
    b, t, e = 2, 7, 3
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(b, t, e, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(b, t, e, generator=gen, dtype=torch.float64)
    y = RealCausalFourierMix()(x)
    assert y.dtype == torch.float64 and y.shape == (b, t, e)
    m = _causal_matrix_python(t).real  # y = Re(M x) = Re(M) x for real x
    torch.testing.assert_close(y, m @ x.detach(), atol=1e-12, rtol=1e-12)
    (y * w).sum().backward()
    torch.testing.assert_close(x.grad, m.T @ w, atol=1e-12, rtol=1e-12)
    assert RealCausalFourierMix()(x.detach().float()).dtype == torch.float32


# ------------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("fn", [dft, idft, causal_dft])
def test_real_input_rejected(fn):
    with pytest.raises(TypeError, match="'x' must be a complex tensor"):
        fn(torch.randn(4, 5))


@pytest.mark.parametrize("fn", [dft, idft, causal_dft])
@pytest.mark.parametrize("dim", [2, -3])
def test_dim_out_of_range_rejected(fn, dim):
    with pytest.raises(IndexError, match="'dim' = .* out of range"):
        fn(_randc(4, 5), dim=dim)


def test_bad_dim_type_and_empty_dim_rejected():
    with pytest.raises(TypeError, match="'dim' must be an int"):
        causal_dft(_randc(4, 5), dim=1.0)
    with pytest.raises(ValueError, match="empty"):
        dft(torch.zeros(3, 0, dtype=torch.complex64), dim=1)


def test_bad_method_rejected():
    with pytest.raises(ValueError, match="'method' must be one of"):
        causal_dft(_randc(4, 5), method="fft")
    with pytest.raises(ValueError, match="'method' must be one of"):
        CausalFourierMix(method="fft")
    with pytest.raises(ValueError, match="'method' must be one of"):
        RealCausalFourierMix(method="chirp")


def test_layers_reject_bad_inputs():
    with pytest.raises(ValueError, match=r"c\[B, T, E\]"):
        CausalFourierMix()(_randc(4, 5))
    with pytest.raises(TypeError, match="complex tensor"):
        CausalFourierMix()(torch.randn(2, 4, 5))
    with pytest.raises(TypeError, match="real floating-point"):
        RealCausalFourierMix()(_randc(2, 4, 5))
    with pytest.raises(ValueError, match=r"r\[B, T, E\]"):
        RealCausalFourierMix()(torch.randn(4, 5))
